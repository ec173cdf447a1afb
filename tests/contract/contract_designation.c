/*
 * contract_designation.c - what <reign/election.h> promises of priorities and designation
 * (options priority, no_preempt, preempt_delay_ms; reign_election_designate()) on every store.
 *
 * One program, run once per store (contract_designation_zk, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake).  Every candidate is listed (options.listed: a SQL store can only
 * designate a candidate it can see; ZooKeeper sees them all anyway).
 *
 *   designation  a leads, b and c stand; an operator designates c: a is DEMOTED (handoff) before
 *                c is ELECTED, with a greater term and token; an id that does not stand, and
 *                one whose candidate has gone, are refused with REIGN_ENOENT and nothing
 *                changes; designating the leader itself changes nothing; when the designee
 *                leaves, another takes over (automatic failover), and designations go on
 *                working, twenty in a row
 *   preemption   a newcomer of higher priority takes over by a handoff, and is preempted in
 *                turn by a higher one (preempting is no designation); newcomers of a lower
 *                priority than the leader's do not; when it leaves, the highest of those left
 *                leads, and of equal ones the first that stood
 *   designated   a designee of low priority leads its leadership out: a higher one standing
 *                does not preempt it, but takes over once it leaves
 *   no_preempt   a higher newcomer with no_preempt waits until the leader leaves
 *   delay        with preempt_delay_ms the higher newcomer takes over by a handoff, not before
 *                its delay has passed since it stood
 *   deposed      a leader of priority 5 deposed, one of priority 3 standing: the leader is
 *                DEMOTED node_deleted (a deposition, not a handoff) and the other leads
 *
 * h_finish() proves, in every election, that no two leaderships overlapped and that terms and
 * fencing tokens strictly grew across every handover.  Waits are for events, bounded by
 * H_WAIT_MS; the windows in which nothing may happen (h_run_for) are observations, not
 * synchronisation.
 */
#include <string.h>

#include "harness.h"

static reign_election_options opts(int priority, int no_preempt, int delay_ms)
{
    reign_election_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.listed = 1;
    o.priority = priority;
    o.no_preempt = no_preempt;
    o.preempt_delay_ms = delay_ms;
    return o;
}

static h_cand *stand(const char *id, const char *name, int priority, int no_preempt, int delay)
{
    reign_election_options o = opts(priority, no_preempt, delay);
    return h_cand_new(id, h_uri(NULL), NULL, name, &o);
}

static void case_designation(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "designate");
    h_log("---- designation (%s)", name);
    h_cand *op = h_cand_new("operator", h_uri(NULL), NULL, NULL, NULL);
    h_cand *a = stand("a", name, 0, 0, 0);
    H_WAIT(h_pred_leader, a, "a to lead");
    h_cand *b = stand("b", name, 0, 0, 0);
    h_cand *c = stand("c", name, 0, 0, 0);
    h_wait_listed(op, name, "b");
    h_wait_listed(op, name, "c");

    h_log("designating c");
    H_OK(h_designate(op, name, "c"));
    H_WAIT(h_pred_leader, c, "c to take over");
    h_check_handoff(a, c);

    h_log("designating an id that does not stand");
    size_t before = h_count(c, REIGN_ELECTION_DEMOTED);
    int rc = h_designate(op, name, "nobody");
    H_CHECKF(rc == REIGN_ENOENT, "designating nobody: %s", reign_err_name(rc));
    h_log("designating a candidate that has gone");
    h_cand *gone = stand("gone", name, 0, 0, 0);
    h_wait_listed(op, name, "gone");
    h_cand_close(gone);
    rc = h_designate(op, name, "gone");
    H_CHECKF(rc == REIGN_ENOENT, "designating a candidate that has gone: %s", reign_err_name(rc));
    h_run_for(500);
    H_CHECK(h_is_leader(c) && h_count(c, REIGN_ELECTION_DEMOTED) == before);

    h_log("designating the leader itself changes nothing");
    H_OK(h_designate(op, name, "c"));
    h_run_for(500);
    H_CHECK(h_is_leader(c) && h_count(c, REIGN_ELECTION_DEMOTED) == before);

    h_log("the designated leader leaves: automatic failover");
    h_cand_close(c);
    H_WAIT(h_pred_any_leader, NULL, "someone to take over from c");
    h_cand *next = h_leader();
    H_CHECKF(next == a || next == b, "%s leads", next->id);
    h_cand *other = next == a ? b : a;

    h_log("a second designation: %s", other->id);
    h_wait_listed(op, name, other->id);
    H_OK(h_designate(op, name, other->id));
    H_WAIT(h_pred_leader, other, "the second designee to take over");
    h_check_handoff(next, other);

    h_log("twenty designations in a row");
    h_cand *pair[2] = {next, other};
    for (int i = 0; i < 20; i++) {
        h_cand *to = pair[i % 2];
        h_wait_listed(op, name, to->id);
        H_OK(h_designate(op, name, to->id));
        H_WAIT(h_pred_leader, to, "the designee to take over");
    }
    h_cand_close(a); /* h_leader() looks at every open candidate */
    h_cand_close(b);
    h_cand_close(op);
}

static void case_preemption(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "priority");
    h_log("---- preemption (%s)", name);
    h_cand *low = stand("low", name, 1, 0, 0);
    H_WAIT(h_pred_leader, low, "low to lead");
    h_log("a candidate of higher priority joins and takes over");
    h_cand *high = stand("high", name, 10, 0, 0);
    H_WAIT(h_pred_leader, high, "high to take over");
    h_check_handoff(low, high);

    h_log("one that took over by preemption is preempted in turn by a higher one");
    h_cand *top = stand("top", name, 20, 0, 0);
    H_WAIT(h_pred_leader, top, "top to take over");
    h_check_handoff(high, top);
    h_cand_close(top);
    H_WAIT(h_pred_leader, high, "high to lead again when top leaves");

    h_log("equal priorities keep first-come order, and do not preempt a higher one");
    h_cand *m1 = stand("mid1", name, 5, 0, 0);
    H_WAIT(h_pred_ready, m1, "mid1 to stand");
    h_wait_listed(high, name, "mid1");
    h_cand *m2 = stand("mid2", name, 5, 0, 0);
    H_WAIT(h_pred_ready, m2, "mid2 to stand");
    h_wait_listed(high, name, "mid2");
    h_wait_listed(high, name, "low");
    h_run_for(500);
    H_CHECK(h_is_leader(high));
    h_cand_close(high);
    H_WAIT(h_pred_any_leader, NULL, "someone to take over from high");
    H_CHECKF(h_leader() == m1, "%s leads, not mid1", h_leader()->id);
    h_run_for(500);
    H_CHECK(h_is_leader(m1) && !h_is_leader(m2) && !h_is_leader(low));

    h_log("the leader leaves: the highest left leads");
    h_cand_close(m1);
    H_WAIT(h_pred_any_leader, NULL, "someone to take over from mid1");
    H_CHECKF(h_leader() == m2, "%s leads, not mid2", h_leader()->id);
    h_cand_close(m2);
    h_cand_close(low);
}

static void case_designated(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "designated");
    h_log("---- a designee leads its leadership out (%s)", name);
    h_cand *op = h_cand_new("operator", h_uri(NULL), NULL, NULL, NULL);
    h_cand *top = stand("top", name, 9, 0, 0);
    H_WAIT(h_pred_leader, top, "top to lead");
    h_cand *small = stand("small", name, 1, 0, 0);
    h_wait_listed(op, name, "small");
    H_OK(h_designate(op, name, "small"));
    H_WAIT(h_pred_leader, small, "small to take over");
    h_check_handoff(top, small);
    h_wait_listed(op, name, "top");
    h_run_for(1500);
    H_CHECKF(h_is_leader(small), "the designee of low priority was preempted");
    h_cand_close(small);
    H_WAIT(h_pred_leader, top, "top to take over when small leaves");
    h_cand_close(top);
    h_cand_close(op);
}

static void case_no_preempt(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "no-preempt");
    h_log("---- no_preempt (%s)", name);
    h_cand *x = stand("x", name, 1, 1, 0);
    H_WAIT(h_pred_leader, x, "x to lead");
    h_cand *y = stand("y", name, 9, 1, 0);
    H_WAIT(h_pred_ready, y, "y to stand");
    h_run_for(1500);
    H_CHECKF(h_is_leader(x) && !h_is_leader(y), "y preempted x without preemption");
    h_cand_close(x);
    H_WAIT(h_pred_leader, y, "y to take over when x leaves");
    h_cand_close(y);
}

static void case_delay(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "preempt-delay");
    h_log("---- preempt_delay_ms (%s)", name);
    h_cand *p = stand("p", name, 1, 0, 1500);
    H_WAIT(h_pred_leader, p, "p to lead");
    h_cand *q = stand("q", name, 5, 0, 1500);
    H_WAIT(h_pred_ready, q, "q to stand");
    int64_t joined = h_last(q, REIGN_ELECTION_READY)->at_ns;
    H_WAIT(h_pred_leader, q, "q to take over after its delay");
    h_check_handoff(p, q);
    /* A lower bound set by a timer, not a performance figure. */
    int64_t waited_ms = (h_last(q, REIGN_ELECTION_ELECTED)->at_ns - joined) / 1000000;
    H_CHECKF(waited_ms >= 1400, "q took over %lld ms after it stood (delay 1500 ms)",
             (long long)waited_ms);
    h_cand_close(q);
    h_cand_close(p);
}

static void on_deposed(reign_client *client, int err, void *userdata)
{
    (void)client;
    *(int *)userdata = err;
}

static int pred_answered(void *rc)
{
    return *(int *)rc != 1;
}

/* A deposed leader of high priority, a lower one standing: the deposition is no handoff. */
static void case_deposed(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "deposed");
    h_log("---- deposed (%s)", name);
    h_cand *op = h_cand_new("operator", h_uri(NULL), NULL, NULL, NULL);
    h_cand *hi = stand("hi", name, 5, 0, 0);
    H_WAIT(h_pred_leader, hi, "hi to lead");
    h_cand *lo = stand("lo", name, 3, 0, 0);
    h_wait_listed(op, name, "lo");
    int rc = 1;
    H_OK(reign_election_depose(op->client, name, on_deposed, &rc));
    H_WAIT(pred_answered, &rc, "the depose's answer");
    H_OK(rc);
    H_WAIT(h_pred_leader, lo, "lo to lead after hi was deposed");
    const h_event *d = h_last(hi, REIGN_ELECTION_DEMOTED);
    H_CHECKF(d && d->reason == REIGN_DEMOTE_NODE_DELETED, "hi demoted with reason %s",
             d ? reign_demote_reason_name(d->reason) : "none");
    h_cand_close(lo);
    h_cand_close(hi);
    h_cand_close(op);
}

int main(void)
{
    h_contract_init("contract_designation", NULL);
    case_deposed();
    case_designation();
    case_preemption();
    case_designated();
    case_no_preempt();
    case_delay();
    return h_finish();
}
