/*
 * it_lease.c - SQL lease elections through the library's API, on a SQLite file (no server):
 * several clients in one process, each with its own connection and worker thread, as separate
 * processes would have.
 *
 *  1. five candidates: exactly one leads; a snapshot names it; an observer follows it.
 *  2. the leader resigns: DEMOTED (resigned) before the successor's ELECTED, LEFT follows,
 *     and the term grows.
 *  3. reign_election_cede(): the leader steps down, another leads, the ceder stands again.
 *  4. reign_election_depose() from a client outside the election: the leader is demoted
 *     (node_deleted) when its next renewal fails, then another leads.
 *  5. reign_election_free() of the leader: its release lets the next one in at once.
 *  6. reign_client_close() of the leader's client: the same, through the orderly close.
 * The observer saw the leaders in order and ends on the last one.  h_finish() proves that no two
 * leaderships overlapped and that terms (the fencing tokens) strictly grew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define N 5

static h_cand *cands[N];
static h_cand *watcher;

typedef struct change {
    h_cand *old;
    size_t elected_before[N];
} change;

/* Someone other than `old` was elected since the snapshot. */
static int someone_new(void *arg)
{
    change *c = arg;
    for (int i = 0; i < N; i++)
        if (cands[i] != c->old && !cands[i]->closed &&
            h_count(cands[i], REIGN_ELECTION_ELECTED) > c->elected_before[i] &&
            h_is_leader(cands[i]))
            return 1;
    return 0;
}

static change snapshot(h_cand *old)
{
    change c = {.old = old};
    for (int i = 0; i < N; i++)
        c.elected_before[i] = h_count(cands[i], REIGN_ELECTION_ELECTED);
    return c;
}

/* The new leader was elected after the old one was demoted, with a greater term. */
static h_cand *check_successor(h_cand *old, reign_demote_reason reason)
{
    h_cand *now = h_leader();
    H_CHECK(now && now != old);
    const h_event *d = h_last(old, REIGN_ELECTION_DEMOTED);
    const h_event *e = h_last(now, REIGN_ELECTION_ELECTED);
    H_CHECKF(d && d->reason == reason, "%s demoted with %s, want %s", old->id,
             d ? reign_demote_reason_name(d->reason) : "nothing", reign_demote_reason_name(reason));
    H_CHECKF(d->at_ns < e->at_ns, "%s elected before %s was demoted", now->id, old->id);
    H_CHECK(e->term > d->term && e->token == e->term);
    h_log("%s leads, term %llu, after %s (%s)", now->id, (unsigned long long)e->term, old->id,
          reign_demote_reason_name(reason));
    return now;
}

static void on_deposed(reign_client *client, int err, void *userdata)
{
    *(int *)userdata = err;
}

static int deposed(void *rc)
{
    return *(int *)rc != 1;
}

static int watcher_follows(void *lead)
{
    h_cand *l = lead;
    const h_event *e = h_last(watcher, REIGN_ELECTION_LEADER_CHANGED);
    return e && e->has_leader && !strcmp(e->leader_id, l->id);
}

static int pred_ready_all(void *unused)
{
    for (int i = 0; i < N; i++)
        if (!cands[i]->closed && !h_count(cands[i], REIGN_ELECTION_READY))
            return 0;
    return 1;
}

int main(void)
{
    h_init("it_lease");
    char dir[] = "/tmp/reign-it-lease-XXXXXX";
    H_CHECK(mkdtemp(dir) != NULL);
    char uri[256];
    /* A short lease keeps the depose step (up to one renewal) quick. */
    snprintf(uri, sizeof(uri), "sqlite://%s/lease.db?lease_ms=3000&renew_ms=300", dir);
    const char *name = "it-lease";

    reign_election_options obs = {.size = sizeof(obs), .observer = 1};
    watcher = h_cand_new("watcher", uri, NULL, name, &obs);
    char id[16];
    for (int i = 0; i < N; i++) {
        snprintf(id, sizeof(id), "c%d", i);
        cands[i] = h_cand_new(id, uri, NULL, name, NULL);
    }
    H_WAIT(h_pred_any_leader, NULL, "a leader");
    H_WAIT(pred_ready_all, NULL, "every candidate's first view");
    h_cand *lead = h_leader();
    h_view v;
    h_query(watcher, name, &v);
    H_CHECK(v.err == 0 && v.has_leader && !strcmp(v.leader_id, lead->id));
    H_CHECK(reign_election_cede(cands[lead == cands[0] ? 1 : 0]->election, 0) == REIGN_ESTATE);

    /* 2. resign */
    change c = snapshot(lead);
    H_OK(reign_election_resign(lead->election));
    H_CHECK(!reign_election_is_leader(lead->election));
    H_WAIT(someone_new, &c, "a successor after resign");
    H_WAIT(h_pred_left, lead, "LEFT after resign");
    h_cand *old = lead;
    lead = check_successor(old, REIGN_DEMOTE_RESIGNED);
    h_cand_close(old);

    /* 3. cede */
    c = snapshot(lead);
    H_OK(reign_election_cede(lead->election, 500));
    H_WAIT(someone_new, &c, "a successor after cede");
    old = lead;
    lead = check_successor(old, REIGN_DEMOTE_CEDED);

    /* 4. depose from outside */
    h_cand *op = h_cand_new("operator", uri, NULL, NULL, NULL);
    c = snapshot(lead);
    H_CHECK(reign_election_depose(op->client, name, NULL, NULL) == REIGN_EINVAL);
    old = lead;
    int depose_rc = 1;
    H_OK(reign_election_depose(op->client, name, on_deposed, &depose_rc));
    H_WAIT(deposed, &depose_rc, "the depose to be done");
    H_OK(depose_rc);
    H_WAIT(someone_new, &c, "a successor after depose");
    lead = check_successor(old, REIGN_DEMOTE_NODE_DELETED);

    /* 5. free */
    c = snapshot(lead);
    old = lead;
    h_cand_close(old);
    H_WAIT(someone_new, &c, "a successor after free");
    lead = h_leader();

    /* 6. close */
    c = snapshot(lead);
    reign_client_close(lead->client);
    H_WAIT(someone_new, &c, "a successor after close");
    lead = h_leader();

    /* The observer follows the leader: terms in order, and it ends on the current one.  It
     * reads the row when notified (or polls), so a leadership shorter than that can pass
     * unseen: SQL observers see leaders in order, not necessarily every one. */
    H_WAIT(watcher_follows, lead, "the observer to see the last leader");
    uint64_t last = 0;
    size_t seen = 0;
    for (size_t i = 0; i < watcher->n_ev; i++) {
        const h_event *e = &watcher->ev[i];
        if (e->type != REIGN_ELECTION_LEADER_CHANGED || !e->has_leader)
            continue;
        H_CHECKF(e->leader_term > last, "observer: term %llu after %llu",
                 (unsigned long long)e->leader_term, (unsigned long long)last);
        last = e->leader_term;
        seen++;
    }
    h_log("observer saw %zu leaderships, the last at term %llu", seen, (unsigned long long)last);
    H_CHECK(seen >= 2);
    int rc = h_finish();
    char path[300];
    for (const char *const *f = (const char *const[]){"", "-wal", "-shm", NULL}; *f; f++) {
        snprintf(path, sizeof(path), "%s/lease.db%s", dir, *f);
        unlink(path);
    }
    rmdir(dir);
    return rc;
}
