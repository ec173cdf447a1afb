/*
 * it_one_leader.c - one leader among N candidates with the lock strategy (ZooKeeper).
 *
 *     it_one_leader lock
 *
 * Five candidates (each its own client and session) join one election with the lock strategy
 * (one node, every candidate racing for it).  Exactly one is elected; a snapshot
 * (reign_election_query) names the same leader, term and token, says the strategy is lock and
 * shows the holder alone (the others have no node to show).  Then the leaders resign one after
 * the other: each time exactly one of the remaining candidates takes over, and the last one
 * leads alone.  h_finish() proves that no two leaderships overlapped and that terms and tokens
 * grew.  The same with the default strategy, queue, is part of the election contract that runs
 * on every store (tests/contract/contract_election.c).
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define N 5

static h_cand *cand[N];

static int all_ready_one_leader(void *unused)
{
    (void)unused;
    for (int i = 0; i < N; i++)
        if (!h_pred_ready(cand[i]))
            return 0;
    return h_leader() != NULL;
}

static size_t total_elected(void)
{
    size_t n = 0;
    for (int i = 0; i < N; i++)
        n += h_count(cand[i], REIGN_ELECTION_ELECTED);
    return n;
}

typedef struct handoff {
    h_cand *old;
    size_t elected_before;
} handoff;

static int next_leader(void *arg)
{
    handoff *h = arg;
    h_cand *l = h_leader();
    return h_pred_left(h->old) && l && l != h->old && total_elected() > h->elected_before;
}

int main(int argc, char **argv)
{
    const char *strategy = argc > 1 ? argv[1] : "lock";
    char test[64];
    snprintf(test, sizeof(test), "it_one_leader_%s", strategy);
    h_init(test);
    int s = reign_strategy_parse(strategy);
    H_CHECKF(s == REIGN_STRATEGY_LOCK, "strategy '%s': this test is for lock", strategy);

    char name[128];
    h_unique_name(name, sizeof(name), "one-leader");
    const char *uri = h_uri("session_timeout_ms=4000");
    for (int i = 0; i < N; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        reign_election_options eo;
        memset(&eo, 0, sizeof(eo));
        eo.strategy = (reign_strategy)s;
        cand[i] = h_cand_new(id, uri, NULL, name, &eo);
    }
    H_WAIT(all_ready_one_leader, NULL, "every candidate ready and one leader");

    h_cand *leader = h_leader();
    H_CHECKF(total_elected() == 1, "%zu ELECTED events for one leadership", total_elected());
    const h_event *el = h_last(leader, REIGN_ELECTION_ELECTED);
    H_CHECK(el != NULL);
    H_CHECK(el->term >= 1 && el->token > 0);
    H_CHECK(reign_election_term(leader->election) == el->term);
    H_CHECK(reign_election_token(leader->election) == el->token);

    h_view v;
    h_query(cand[0], name, &v);
    H_CHECKF(v.err == 0, "query: %s", reign_err_name(v.err));
    H_CHECK(v.strategy == (reign_strategy)s);
    H_CHECKF(v.has_leader, "the snapshot shows no leader");
    H_CHECKF(!strcmp(v.leader_id, leader->id), "snapshot leader '%s', elected '%s'", v.leader_id,
             leader->id);
    H_CHECK(v.term == el->term && v.token == el->token);
    H_CHECKF(v.n == 1, "%zu candidates in a lock election's snapshot, want 1", v.n);
    H_CHECK(!strcmp(v.ids[0], leader->id));

    /* Hand over until one candidate is left: each time exactly one more leadership. */
    for (int round = 1; round < N; round++) {
        handoff h = {leader, total_elected()};
        H_OK(reign_election_resign(leader->election));
        H_CHECK(!reign_election_is_leader(leader->election));
        H_WAIT(next_leader, &h, "the next leader after a resignation");
        H_CHECKF(total_elected() == h.elected_before + 1, "%zu new leaderships, want 1",
                 total_elected() - h.elected_before);
        const h_event *d = h_last(leader, REIGN_ELECTION_DEMOTED);
        H_CHECK(d != NULL && d->reason == REIGN_DEMOTE_RESIGNED);
        h_cand_close(leader);
        leader = h_leader();
        h_query(leader, name, &v);
        H_CHECK(v.err == 0 && v.has_leader && !strcmp(v.leader_id, leader->id));
        H_CHECK(v.n == 1 && !strcmp(v.ids[0], leader->id));
    }
    return h_finish();
}
