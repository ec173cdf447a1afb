/*
 * it_cede_api.c - reign_election_cede(): the leader steps down by itself.
 *
 * a leads, b waits.  a cedes with a 3 s delay: at once a is no longer leader (DEMOTED, reason
 * ceded), b is elected - after a's demotion, since a deletes its own node only after stepping
 * down - and during the delay a is not a candidate at all; afterwards a stands again, behind
 * b.  A non-leader cannot cede (REIGN_ESTATE).  Then b cedes with the default delay and a,
 * standing again, takes over.  h_finish() proves no overlap and growing terms and tokens.
 */
#include <string.h>

#include "harness.h"

typedef struct pair {
    h_cand *old, *new_;
    size_t demoted_before, elected_before;
} pair;

static int handed_over(void *arg)
{
    pair *p = arg;
    return h_count(p->old, REIGN_ELECTION_DEMOTED) > p->demoted_before &&
           h_count(p->new_, REIGN_ELECTION_ELECTED) > p->elected_before && h_is_leader(p->new_);
}

typedef struct standing {
    h_cand *q;
    const char *name;
    const char *first, *second;
} standing;

static int stands_behind(void *arg)
{
    standing *s = arg;
    h_view v;
    h_query(s->q, s->name, &v);
    return v.err == 0 && v.n == 2 && !strcmp(v.ids[0], s->first) && !strcmp(v.ids[1], s->second);
}

static void check_handover(pair *p, reign_demote_reason reason)
{
    const h_event *d = h_last(p->old, REIGN_ELECTION_DEMOTED);
    const h_event *e = h_last(p->new_, REIGN_ELECTION_ELECTED);
    const h_event *oe = h_last(p->old, REIGN_ELECTION_ELECTED);
    H_CHECKF(d->reason == reason, "%s demoted with %s", p->old->id,
             reign_demote_reason_name(d->reason));
    H_CHECKF(d->at_ns < e->at_ns, "%s elected at %lld, before %s stepped down at %lld", p->new_->id,
             (long long)e->at_ns, p->old->id, (long long)d->at_ns);
    H_CHECK(e->term > oe->term && e->token > oe->token);
}

int main(void)
{
    h_init("it_cede_api");
    char name[128];
    h_unique_name(name, sizeof(name), "cede-api");
    const char *uri = h_uri("session_timeout_ms=4000");
    h_cand *a = h_cand_new("a", uri, NULL, name, NULL);
    H_WAIT(h_pred_leader, a, "a to lead");
    h_cand *b = h_cand_new("b", uri, NULL, name, NULL);
    H_WAIT(h_pred_ready, b, "b ready");

    H_CHECK(reign_election_cede(b->election, 0) == REIGN_ESTATE);
    pair p = {a, b, 0, 0};
    H_OK(reign_election_cede(a->election, 3000));
    H_CHECK(!reign_election_is_leader(a->election));
    H_CHECK(reign_election_term(a->election) == 0);
    H_WAIT(handed_over, &p, "b to take over from a");
    check_handover(&p, REIGN_DEMOTE_CEDED);

    /* During the delay a does not stand; afterwards it does, behind b. */
    h_view v;
    h_query(b, name, &v);
    H_CHECK(v.err == 0 && v.has_leader && !strcmp(v.leader_id, "b"));
    H_CHECKF(v.n == 1, "%zu candidates right after a ceded for 3 s, want 1 (b)", v.n);
    standing s = {b, name, "b", "a"};
    H_WAIT(stands_behind, &s, "a to stand again behind b");
    H_CHECK(h_count(a, REIGN_ELECTION_ELECTED) == 1);

    pair q = {b, a, 0, 1};
    H_OK(reign_election_cede(b->election, -1));
    H_WAIT(handed_over, &q, "a to take over from b");
    check_handover(&q, REIGN_DEMOTE_CEDED);
    standing s2 = {a, name, "a", "b"};
    H_WAIT(stands_behind, &s2, "b to stand again behind a");
    return h_finish();
}
