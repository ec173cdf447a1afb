/*
 * election_lease_query.c - one-shot requests on a SQL lease election: the snapshot of
 * reign_election_query() (`reign status`), deposing for reign_election_depose() (`reign cede`)
 * and designating for reign_election_designate() (`reign designate`, reignd's failover --to).
 * Each runs on the client's SQL worker (sql/worker.h) and calls back once; none takes part in
 * an election.  The candidate's side of a designation (the holder handing over, the designee
 * taking the row) is election_lease.c's; the row's mark is sql.h's.
 */
#include <stdio.h>
#include <string.h>

#include "election_base.h"
#include "sql/candidates.h"
#include "sql/sessions.h"

typedef struct lease_query {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    char *name;
    bool depose;
    char *designee; /* designate: the candidate id */
    reign_election_query_cb *qcb;
    reign_election_done_cb *dcb;
    void *userdata;
    bool done;
} lease_query;

static void query_free(lease_query *q)
{
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    reign__free(q->name);
    reign__free(q->designee);
    reign__free(q);
}

/* Calls back once, then frees (the callback may free the client: q is detached first). */
static void query_finish(lease_query *q, int err, const reign_election_view *view)
{
    if (q->done)
        return;
    q->done = true;
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    if (q->qcb)
        q->qcb(q->client, err, err ? NULL : view, q->userdata);
    else
        q->dcb(q->client, err, q->userdata);
    reign__free(q->name);
    reign__free(q->designee);
    reign__free(q);
}

static void on_deposed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    query_finish(q, r->rc < 0 ? r->rc : r->rc == 1 ? 0 : REIGN_ENOENT, NULL);
}

/* The row and the listed candidates, read on the worker in one go. */
typedef struct snapshot {
    char *name;
    reign__lease lease;
    int session_live; /* a lease held in a session: whether the session is, by the db clock */
    reign__candidate_rows cands;
} snapshot;

static void snapshot_free(void *p)
{
    snapshot *sn = p;
    reign__lease_clear(&sn->lease);
    reign__candidate_rows_free(&sn->cands);
    reign__free(sn->name);
    reign__free(sn);
}

static int read_snapshot(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    snapshot *sn = ctx;
    int rc = reign__sql_lease_read(conn, dc, sn->name, &sn->lease, err, errlen);
    if (rc == 0 && sn->lease.exists && sn->lease.session[0]) {
        /* Renewed by its session's beats, not in its row. */
        bool live = false;
        rc = reign__sessions_state(conn, dc, sn->lease.session, NULL, &live, err, errlen);
        if (rc < 0)
            return rc;
        sn->session_live = live;
        rc = 0;
    }
    if (rc == 0)
        rc = reign__candidates_list(conn, dc, sn->name, &sn->cands, err, errlen);
    return rc;
}

static void on_query_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    const reign__lease *l = r->lease;
    if (r->rc < 0) {
        query_finish(q, r->rc, NULL);
        return;
    }
    bool live = l->exists && !l->released;
    int rc = live ? reign__sqlw_submit(q->w, REIGN__SQLW_DEPOSE, q->name, NULL, l->term, q,
                                       on_deposed, NULL)
                  : REIGN_ENOENT;
    if (rc < 0)
        query_finish(q, rc, NULL);
}

static void on_snapshot(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    snapshot *sn = r->ctx;
    const reign__lease *l = &sn->lease;
    if (r->rc < 0) {
        query_finish(q, r->rc, NULL);
        return;
    }
    /* For people: whether it has run out is the database clock's view here (nothing is
     * decided by it; a follower counts on its own clock). */
    bool live = l->exists && !l->released && (l->session[0] ? sn->session_live : !l->db_expired);
    if ((!l->exists || reign__sql_lease_removed(l)) && !sn->cands.n) {
        query_finish(q, REIGN_ENOENT, NULL);
        return;
    }
    /* The leader first (from the lease row: it is the one that leads, listed or not), then
     * the other listed candidates in the order they joined. */
    reign_candidate *cands = reign__calloc(sn->cands.n + 1, sizeof(*cands));
    if (!cands) {
        query_finish(q, REIGN_ENOMEM, NULL);
        return;
    }
    size_t n = 0;
    if (live) {
        cands[n++] = (reign_candidate){.id = l->owner,
                                       .data = l->payload,
                                       .data_len = l->payload_len,
                                       .node = q->name,
                                       .joined_ms = 0};
        for (size_t i = 0; i < sn->cands.n; i++)
            if (!strcmp(sn->cands.v[i].guid, l->owner_guid)) {
                cands[0].node = sn->cands.v[i].guid;
                cands[0].joined_ms = sn->cands.v[i].joined_ms;
                cands[0].priority = sn->cands.v[i].priority;
            }
    }
    for (size_t i = 0; i < sn->cands.n; i++) {
        const reign__candidate_row *c = &sn->cands.v[i];
        if (live && !strcmp(c->guid, l->owner_guid))
            continue;
        cands[n++] = (reign_candidate){.id = c->owner,
                                       .data = c->payload,
                                       .data_len = c->payload_len,
                                       .node = c->guid,
                                       .joined_ms = c->joined_ms,
                                       .priority = c->priority};
    }
    reign_election_view view = {.name = q->name,
                                .strategy = REIGN_STRATEGY_DEFAULT,
                                .has_leader = live,
                                .candidates = n ? cands : NULL,
                                .n_candidates = n};
    /* The row's lease, as its holder set it; the poll period within which a follower sees its
     * last renewal; then the followers' read and take, at the statement timeout a lease that
     * long gets by default (renew/2, poll = renew = lease/5; <= 5 s). */
    if (l->exists && l->duration_ms > 0 && l->duration_ms <= 365LL * 86400000) {
        int64_t statement = l->duration_ms / 5 / 2 < 5000 ? l->duration_ms / 5 / 2 : 5000;
        /* In a session: the session reaped, then the row read and taken. */
        view.takeover_ms =
            l->duration_ms + l->duration_ms / 5 + (l->session[0] ? 3 : 2) * statement;
        view.takeover_from = REIGN_TAKEOVER_LEASE;
    }
    if (live) {
        view.leader.id = l->owner;
        view.leader.data = l->payload;
        view.leader.data_len = l->payload_len;
        view.leader.term = l->term;
        view.leader.token = l->term;
        view.leader.since_ms = 0;
    }
    query_finish(q, 0, &view);
    reign__free(cands);
}

/*
 * Designation, on the worker: the first listed candidate standing with the id (the order they
 * stood) is the designee; the row is marked for its standing's guid at the term and guid read
 * (sql.h's reign__sql_lease_designate()), read again and marked again if it moved on meanwhile.
 * A candidate that does not stand (never listed, or its row gone with it or expired) is
 * REIGN_ENOENT, and nothing changes; designating the leader itself changes nothing either.
 */
typedef struct designation {
    char *name, *id;
} designation;

static void designation_free(void *p)
{
    designation *d = p;
    reign__free(d->name);
    reign__free(d->id);
    reign__free(d);
}

#define DESIGNATE_TRIES 5

static int run_designate(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    designation *d = ctx;
    for (int i = 0; i < DESIGNATE_TRIES; i++) {
        reign__lease l = {0};
        reign__candidate_rows cands = {0};
        int rc = reign__sql_lease_read(conn, dc, d->name, &l, err, errlen);
        if (rc == 0)
            rc = reign__candidates_list(conn, dc, d->name, &cands, err, errlen);
        const char *guid = NULL;
        for (size_t k = 0; rc == 0 && !guid && k < cands.n; k++)
            if (!strcmp(cands.v[k].owner, d->id))
                guid = cands.v[k].guid;
        const char *to = reign__lease_designee(&l);
        if (rc == 0 && (!guid || !l.exists || reign__sql_lease_removed(&l))) {
            snprintf(err, errlen, "no candidate %s stands in election %s", d->id, d->name);
            rc = REIGN_ENOENT;
        } else if (rc == 0 &&
                   ((!l.released && !strcmp(l.owner_guid, guid)) || (to && !strcmp(to, guid))))
            rc = 1; /* it leads, or is designated already */
        else if (rc == 0)
            rc = reign__sql_lease_designate(conn, dc, d->name, l.term, l.owner_guid, guid, err,
                                            errlen);
        reign__candidate_rows_free(&cands);
        reign__lease_clear(&l);
        if (rc != 0)
            return rc;
    }
    snprintf(err, errlen, "election %s changed under %d designations in a row", d->name,
             DESIGNATE_TRIES);
    return REIGN_EBUSY;
}

static void on_designated(void *owner, void *arg, const reign__sqlw_result *r)
{
    query_finish(owner, r->rc < 0 ? r->rc : 0, NULL);
}

static void on_query_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        query_finish((lease_query *)rp, REIGN_ECLOSED, NULL);
}

static void on_query_destroy(reign__recipe *rp)
{
    query_free((lease_query *)rp);
}

static const reign__recipe_ops lease_query_ops = {.conn = on_query_conn,
                                                  .destroy = on_query_destroy};

int reign__lease_query(reign_client *client, const char *name, bool depose, const char *designee,
                       reign_election_query_cb *qcb, reign_election_done_cb *dcb, void *userdata)
{
    lease_query *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &lease_query_ops;
    q->client = client;
    q->w = reign__client_sql(client);
    q->depose = depose;
    q->qcb = qcb;
    q->dcb = dcb;
    q->userdata = userdata;
    if (!(q->name = reign__strdup(name))) {
        reign__free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    int rc;
    if (designee) {
        designation *d = reign__calloc(1, sizeof(*d));
        rc = d && (d->name = reign__strdup(name)) && (d->id = reign__strdup(designee))
                 ? 0
                 : REIGN_ENOMEM;
        if (rc == 0)
            rc = reign__sqlw_call(q->w, name, run_designate, d, designation_free, q, on_designated,
                                  NULL);
        if (rc < 0 && d)
            designation_free(d);
    } else if (depose) {
        rc = reign__sqlw_submit(q->w, REIGN__SQLW_READ, name, NULL, 0, q, on_query_read, NULL);
    } else {
        snapshot *sn = reign__calloc(1, sizeof(*sn));
        rc = sn && (sn->name = reign__strdup(name)) ? 0 : REIGN_ENOMEM;
        if (rc == 0)
            rc = reign__sqlw_call(q->w, name, read_snapshot, sn, snapshot_free, q, on_snapshot,
                                  NULL);
        if (rc < 0 && sn)
            snapshot_free(sn);
    }
    if (rc < 0) {
        query_free(q);
        return rc;
    }
    return 0;
}
