/*
 * election_lease_rank.c - ranks in a SQL lease election (election_lease_rank.h): the listed
 * candidates (sql/candidates.h) read on the worker right before a take or a preemption, and
 * compared with us and with the lease row as the candidate last read it.
 */
#include "election_lease_rank.h"

#include <string.h>

#include "election_base.h"
#include "sql/candidates.h"
#include "sql/history.h"

void reign__rank_call_free(void *p)
{
    reign__rank_call *k = p;
    reign__free(k->name);
    reign__free(k->owner);
    reign__free(k->payload);
    reign__free(k);
}

/* Whether row c is the holder's own standing (it gives the row back, or leads it). */
static bool is_holder(const reign__rank_call *k, const reign__candidate_row *c)
{
    if (!strcmp(c->guid, k->holder_guid))
        return true;
    /* Deposed or designated, the row no longer names the holder's guid: know it by its id. */
    size_t n = strlen(k->holder_guid);
    bool plain = n && strspn(k->holder_guid, "0123456789abcdef") == n;
    return !plain && !strcmp(c->owner, k->holder_owner);
}

/*
 * Whether a live listed candidate other than us and the holder should take the row before us:
 * the row's designee; or, in an election that uses priorities (one of us has one), a higher
 * priority, or the same priority stood earlier (first come, as ZooKeeper's queue).  Without
 * priorities nobody defers: the first to take leads.
 */
static bool outranked(const reign__rank_call *k, const reign__candidate_rows *cs)
{
    const char *designee = k->holder_guid[0] == REIGN__SQL_DESIGNATED ? k->holder_guid + 1 : NULL;
    bool uses = k->priority > 0;
    int64_t joined = INT64_MAX;
    for (size_t i = 0; i < cs->n; i++) {
        uses = uses || cs->v[i].priority > 0;
        if (!strcmp(cs->v[i].guid, k->guid))
            joined = cs->v[i].joined_ms;
    }
    for (size_t i = 0; i < cs->n; i++) {
        const reign__candidate_row *c = &cs->v[i];
        if (!strcmp(c->guid, k->guid))
            continue;
        if (designee && !strcmp(c->guid, designee))
            return true;
        if (!uses || is_holder(k, c))
            continue;
        if (c->priority > k->priority ||
            (c->priority == k->priority &&
             (c->joined_ms < joined || (c->joined_ms == joined && strcmp(c->guid, k->guid) < 0))))
            return true;
    }
    return false;
}

/* A take, unless a live candidate ranks above us (then REIGN__OUTRANKED: it will take it). */
/* A take on a notice: the row as it is now, for the ranks and the take to act on.  1: take it
 * (k updated), 0: not ours to take (it moved on, or is not released), or a negative code. */
static int reread(reign__sqlconn *conn, const char *dc, reign__rank_call *k, char *err,
                  size_t errlen)
{
    reign__lease l = {0};
    int rc = reign__sql_lease_read(conn, dc, k->name, &l, err, errlen);
    if (rc < 0)
        return rc;
    const char *to = reign__lease_designee(&l);
    rc = l.exists && l.released && l.term == k->from;
    if (rc) {
        reign__strlcpy(k->holder_owner, l.owner, sizeof(k->holder_owner));
        reign__strlcpy(k->holder_guid, l.owner_guid, sizeof(k->holder_guid));
    }
    if (rc && to && (!strcmp(to, k->guid) || (k->prev_guid[0] && !strcmp(to, k->prev_guid)))) {
        /* Handed to us: taken as the read would have it, at the version seen. */
        k->designee = true;
        k->chosen = k->self_designated != l.term;
        k->released = false;
        k->renewals = l.term_duration;
    }
    reign__lease_clear(&l);
    return rc;
}

int reign__rank_take(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    reign__rank_call *k = ctx;
    if (k->released && !k->designee) {
        int rc = reread(conn, dc, k, err, errlen);
        if (rc <= 0)
            return rc;
    }
    if (!k->designee) {
        reign__candidate_rows cs;
        int rc = reign__candidates_list(conn, dc, k->name, &cs, err, errlen);
        if (rc < 0)
            return rc;
        bool below = outranked(k, &cs);
        reign__candidate_rows_free(&cs);
        if (below)
            return REIGN__OUTRANKED;
    }
    /* Before the take: a follower that sees us lead at from + 1 must find the record, or it
     * would preempt an operator's choice.  A record for a term someone else wins names a
     * leadership we never have: harmless. */
    if (k->chosen)
        (void)reign__candidates_designated(conn, dc, k->name, k->guid, k->from + 1, err, errlen);
    reign__lease_claim cl = {.dc = dc,
                             .name = k->name,
                             .owner = k->owner,
                             .owner_guid = k->guid,
                             .payload = k->payload,
                             .payload_len = k->payload_len,
                             .duration_ms = k->duration_ms,
                             .expect_renewals = k->renewals,
                             .take_released = k->released,
                             .session = k->session};
    return reign__sql_lease_take(conn, &cl, k->from, &k->new_term, err, errlen);
}

/*
 * Preemption: if the leader (the holder, at term k->from) ranks below us - its priority, or
 * above every priority while it leads by a designation - and no other candidate ranks above
 * us, designate ourselves (once the delay is over: else REIGN__OUTRANKED, look again then).  1:
 * done, 0: nothing to do (or the row moved on).
 */
int reign__rank_preempt(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    reign__rank_call *k = ctx;
    /* A deposed holder is stepping down already: a mark of ours would replace the deposition,
     * and it would hand over (reason handoff) where it was deposed (node_deleted). */
    if (!strcmp(k->holder_guid, REIGN__SQL_DEPOSED))
        return 0;
    reign__candidate_rows cs;
    int rc = reign__candidates_list(conn, dc, k->name, &cs, err, errlen);
    if (rc < 0)
        return rc;
    int leader = 0;
    for (size_t i = 0; i < cs.n; i++)
        if (is_holder(k, &cs.v[i]))
            leader = cs.v[i].designated == k->from ? REIGN__DESIGNATED_MIN : cs.v[i].priority;
    bool above = leader < k->priority && !outranked(k, &cs);
    if (above && k->now) {
        /* The holder's history is to say "preempted", not "designated" (sql/history.h): the
         * word goes on its row first, there when the holder hears of the mark; taken back if
         * the mark did not land. */
        char herr[256];
        (void)reign__history_hint(conn, dc, k->name, k->from, "preempted", herr, sizeof(herr));
        rc = reign__sql_lease_designate(conn, dc, k->name, k->from, k->holder_guid, k->guid, err,
                                        errlen);
        if (rc != 1)
            (void)reign__history_hint(conn, dc, k->name, k->from, NULL, herr, sizeof(herr));
    } else if (above) {
        rc = REIGN__OUTRANKED;
    }
    reign__candidate_rows_free(&cs);
    return rc;
}

void reign__list_call_free(void *p)
{
    reign__list_call *c = p;
    reign__free(c->name);
    reign__free(c->owner);
    reign__free(c->payload);
    reign__free(c);
}

int reign__list_run(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    reign__list_call *c = ctx;
    switch (c->op) {
    case REIGN__LIST_JOIN:
        return reign__candidates_join(conn, dc, c->name, c->guid, c->owner, c->payload,
                                      c->payload_len, c->priority, c->ttl_ms, c->session, err,
                                      errlen);
    case REIGN__LIST_RENAME:
        return reign__candidates_rename(conn, dc, c->name, c->from, c->guid, c->ttl_ms, c->session,
                                        err, errlen);
    case REIGN__LIST_REFRESH:
        return reign__candidates_refresh(conn, dc, c->name, c->guid, c->ttl_ms, err, errlen);
    case REIGN__LIST_LEAVE:
        return reign__candidates_leave(conn, dc, c->name, c->guid, err, errlen);
    }
    return REIGN_EINVAL;
}
