/*
 * test_election_fsm.c - the candidates' tables, without a server: for each
 * (ZooKeeper's, SQL leases'), every (state, input, facts) combination, and
 * the invariants on every path from a new candidate (a search of every
 * reachable pair of table state and what the application was told):
 *  - a leading state is entered only by a claim that landed with a fresh
 *    proof (this session's, this lease's), and announced with ELECTED;
 *  - every exit from a leading state emits exactly one DEMOTED (at once or
 *    on the next turn), but for a free, which emits nothing;
 *  - ELECTED and DEMOTED alternate, starting with ELECTED;
 *  - nothing is emitted after a free; LEFT only at the end of a resign;
 *  - every state that is not terminal has a way out when what proves the
 *    leadership is lost (a ZooKeeper session, a lease), and on the client's
 *    close, and leads in none of them;
 *  - each row's request is one its new state makes, and a state that waits
 *    for its own write's answer (a claim, a takeover, a create) is entered
 *    from another state only by a row that sends it.
 *
 *   test_election_fsm          runs the tests and prints the counts
 *   test_election_fsm --dot    prints the tables' graphs (docs/design.md)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fsm_dot.h"
#include "recipes/election/election_lease_fsm.h"
#include "recipes/election/election_zk_fsm.h"

#define NF     REIGN__EFSM_FACTS
#define DEMOTE (REIGN__EFSM_A_DEMOTE | REIGN__EFSM_A_DEMOTE_LATER)

static const reign__efsm *const machines[] = {&reign__zke_machine, &reign__lease_machine};
#define N_MACHINES (sizeof(machines) / sizeof(machines[0]))

static const char *sn(const reign__efsm *m, unsigned s)
{
    return reign__efsm_state_name(m, s);
}

static const char *in_name(const reign__efsm *m, unsigned in)
{
    return reign__efsm_input_name(m, in);
}

static int bits(unsigned v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

/* The row a step must take: the first of the table that matches, found by reading it all. */
static const reign__efsm_row *first_match(const reign__efsm *m, unsigned s, unsigned in, unsigned f)
{
    for (size_t i = 0; i < m->n_rows; i++) {
        const reign__efsm_row *t = &m->rows[i];
        if (t->from == s && t->input == in && reign__efsm_guard_holds(t->guard, f))
            return t;
    }
    return NULL;
}

static void table_is_well_formed(void **state)
{
    for (size_t k = 0; k < N_MACHINES; k++) {
        const reign__efsm *m = machines[k];
        const reign__efsm_row *t = m->rows;
        assert_true(m->n_rows > 0);
        assert_true(m->n_rows < 65535); /* the index keeps row numbers in 16 bits */
        /* the index finds what reading the whole table finds, for every pair and facts */
        for (unsigned s = 0; s < m->n_states; s++)
            for (unsigned in = 0; in < m->n_inputs; in++)
                for (unsigned f = 0; f < NF; f++) {
                    const reign__efsm_row *want = first_match(m, s, in, f);
                    reign__efsm_step r = reign__efsm_next(m, s, in, f);
                    if (want ? r.reason != want->reason || r.to != want->to ||
                                   r.actions != want->actions || r.request != want->request
                             : !(r.refused || r.moot))
                        fail_msg("%s: (%s, %s, facts %u): the index found another row", m->name,
                                 sn(m, s), in_name(m, in), f);
                }
        for (size_t i = 0; i < m->n_rows; i++) {
            assert_true(t[i].from < m->n_states && t[i].to < m->n_states &&
                        t[i].input < m->n_inputs);
            assert_non_null(t[i].reason);
            assert_true(t[i].reason[0] != '\0');
            assert_true(t[i].request < m->n_requests);
            if (t[i].request && !(m->request_states[t[i].request] & (1ull << t[i].to)))
                fail_msg("%s: row %zu (%s, %s) makes %s in %s, which does not make it", m->name, i,
                         sn(m, t[i].from), in_name(m, t[i].input),
                         reign__efsm_request_name(m, t[i].request), sn(m, t[i].to));
            /* a row hidden by an earlier one of the same (state, input) whose guard holds
             * whenever its own does is dead */
            for (size_t j = 0; j < i; j++)
                if (t[j].from == t[i].from && t[j].input == t[i].input &&
                    (t[j].guard == REIGN__EFSM_G_ANY || t[j].guard == t[i].guard))
                    fail_msg("%s: row %zu (%s, %s) is never reached", m->name, i, sn(m, t[i].from),
                             in_name(m, t[i].input));
        }
    }
}

/* Each step on its own, for every state, input and facts. */
static void check_pairs(const reign__efsm *m)
{
    unsigned pairs = 0, taken = 0, refused = 0, moot = 0;
    for (unsigned s = 0; s < m->n_states; s++)
        for (unsigned in = 0; in < m->n_inputs; in++)
            for (unsigned f = 0; f < NF; f++) {
                reign__efsm_step r = reign__efsm_next(m, s, in, f);
                pairs++;
                assert_non_null(r.reason);
                assert_true(r.to < m->n_states);
                if (r.refused || r.moot) {
                    refused += r.refused;
                    moot += r.moot;
                    if (r.to != s || r.actions)
                        fail_msg("%s: %s in %s: refused yet acts", m->name, in_name(m, in),
                                 sn(m, s));
                    continue;
                }
                taken++;
                int was = m->leading(s), is = m->leading(r.to);
                unsigned a = r.actions;
                if (!was && is &&
                    !(in == m->in_claimed && (f & REIGN__EFSM_F_FRESH) &&
                      (a & REIGN__EFSM_A_ELECT)))
                    fail_msg("%s: %s -> %s on %s: leads without a fresh claim", m->name, sn(m, s),
                             sn(m, r.to), in_name(m, in));
                if ((a & REIGN__EFSM_A_ELECT) && (was || !is))
                    fail_msg("%s: %s on %s: ELECTED outside the entry to a leading state", m->name,
                             sn(m, s), in_name(m, in));
                if (was && !is) {
                    unsigned ends = a & (DEMOTE | REIGN__EFSM_A_DROP_LEAD);
                    if (bits(ends) != 1)
                        fail_msg("%s: %s -> %s on %s: %d demotions", m->name, sn(m, s), sn(m, r.to),
                                 in_name(m, in), bits(ends));
                    if ((a & REIGN__EFSM_A_DROP_LEAD) && in != m->in_free)
                        fail_msg("%s: %s on %s: a silent end that is no free", m->name, sn(m, s),
                                 in_name(m, in));
                } else if (a & (DEMOTE | REIGN__EFSM_A_DROP_LEAD)) {
                    fail_msg("%s: %s -> %s on %s: demotes without leading", m->name, sn(m, s),
                             sn(m, r.to), in_name(m, in));
                }
                if ((a & REIGN__EFSM_A_EMIT_LEFT) && (s != m->st_resigning || r.to != m->st_left))
                    fail_msg("%s: %s on %s: LEFT outside the end of a resign", m->name, sn(m, s),
                             in_name(m, in));
                if (in == m->in_free && (r.to != m->st_freed || (a & ~REIGN__EFSM_A_DROP_LEAD)))
                    fail_msg("%s: free in %s emits or does not free", m->name, sn(m, s));
                if (s == m->st_freed)
                    fail_msg("%s: %s after a free is acted on", m->name, in_name(m, in));
            }
    assert_int_equal(pairs, m->n_states * m->n_inputs * NF);
    printf("%s: %u states, %u inputs, %u facts combinations: %u pairs walked "
           "(%u taken, %u moot, %u refused)\n",
           m->name, m->n_states, m->n_inputs, NF, pairs, taken, moot, refused);
}

static void every_pair_is_safe(void **state)
{
    for (size_t k = 0; k < N_MACHINES; k++)
        check_pairs(machines[k]);
}

/* The end of what proves a leadership, and the client's close: a way out of every state that
 * is not terminal, leading in none. */
static void check_loss(const reign__efsm *m)
{
    unsigned checked = 0;
    for (unsigned s = 0; s < m->n_states; s++) {
        if (m->terminal(s))
            continue;
        for (unsigned f = 0; f < NF; f++) {
            reign__efsm_step r = reign__efsm_next(m, s, m->in_lost, f);
            if (r.refused || m->leading(r.to))
                fail_msg("%s: %s in %s: no way out (%s)", m->name, in_name(m, m->in_lost), sn(m, s),
                         r.reason);
            reign__efsm_step c = reign__efsm_next(m, s, m->in_closed, f);
            if (c.refused || c.moot || !m->terminal(c.to))
                fail_msg("%s: the client's close in %s leaves it in %s", m->name, sn(m, s),
                         sn(m, c.to));
            checked++;
        }
    }
    printf("%s: loss and close checked in %u (state, facts) pairs\n", m->name, checked);
}

static void losing_the_proof_leaves_every_state(void **state)
{
    for (size_t k = 0; k < N_MACHINES; k++)
        check_loss(machines[k]);
}

/* ZooKeeper: after a new session, the attempt starts again (PAUSED: when its timer fires). */
static void a_new_session_starts_again(void **state)
{
    const reign__efsm *m = &reign__zke_machine;
    for (unsigned s = 0; s < m->n_states; s++) {
        if (m->terminal(s))
            continue;
        for (unsigned f = 0; f < NF; f++) {
            reign__efsm_step r = reign__efsm_next(m, s, REIGN__ZKE_IN_NEW_SESSION, f);
            if (r.moot || r.to == REIGN__ZKE_SETUP || r.to == REIGN__ZKE_LEFT)
                continue;
            reign__efsm_step n = reign__efsm_next(m, r.to, REIGN__ZKE_IN_START, f);
            if (r.to != REIGN__ZKE_PAUSED || n.refused || n.to != REIGN__ZKE_SETUP)
                fail_msg("a new session in %s ends in %s, stuck", sn(m, s), sn(m, r.to));
        }
    }
}

/*
 * Every path from a new candidate: a search over (state, told leader, freed), where "told"
 * follows what the application heard.  A path's invariants depend only on that triple, so
 * visiting each once covers every path of any length.
 */
static void check_paths(const reign__efsm *m)
{
    enum { TOLD = 1, FREED = 2 };
    unsigned char seen[64][4] = {{0}};
    unsigned queue[64 * 4][2], head = 0, tail = 0;
    unsigned edges = 0, reachable[64] = {0};
    assert_true(m->n_states <= 64);
    queue[tail][0] = m->initial;
    queue[tail++][1] = 0;
    seen[m->initial][0] = 1;
    while (head < tail) {
        unsigned s = queue[head][0], mm = queue[head][1];
        head++;
        reachable[s] = 1;
        if (!!(mm & TOLD) != !!m->leading(s) && !(mm & FREED))
            fail_msg("%s: in %s the application was told %s", m->name, sn(m, s),
                     mm & TOLD ? "it leads" : "it does not lead");
        for (unsigned in = 0; in < m->n_inputs; in++)
            for (unsigned f = 0; f < NF; f++) {
                reign__efsm_step r = reign__efsm_next(m, s, in, f);
                if (r.refused || r.moot)
                    continue;
                edges++;
                unsigned nm = mm;
                if (r.actions & REIGN__EFSM_A_ELECT) {
                    if (mm & (TOLD | FREED))
                        fail_msg("%s: ELECTED twice, or after a free (%s on %s)", m->name, sn(m, s),
                                 in_name(m, in));
                    nm |= TOLD;
                }
                if (r.actions & DEMOTE) {
                    if (!(mm & TOLD) || (mm & FREED))
                        fail_msg("%s: DEMOTED without ELECTED, or after a free (%s on %s)", m->name,
                                 sn(m, s), in_name(m, in));
                    nm &= ~(unsigned)TOLD;
                }
                if ((r.actions & REIGN__EFSM_A_EMIT_LEFT) && (mm & FREED))
                    fail_msg("%s: LEFT after a free", m->name);
                if (r.to == m->st_freed)
                    nm = FREED;
                if (!seen[r.to][nm]) {
                    seen[r.to][nm] = 1;
                    queue[tail][0] = r.to;
                    queue[tail++][1] = nm;
                }
            }
    }
    for (unsigned s = 0; s < m->n_states; s++)
        if (!reachable[s])
            fail_msg("%s: state %s is unreachable", m->name, sn(m, s));
    printf("%s: %u (state, told, freed) nodes reached, %u steps walked\n", m->name, tail, edges);
}

static void every_path_keeps_the_contract(void **state)
{
    for (size_t k = 0; k < N_MACHINES; k++)
        check_paths(machines[k]);
}

/* The states that wait for the answer to their own write, by machine. */
static unsigned long long awaiting(const reign__efsm *m)
{
    if (m == &reign__zke_machine)
        return 1ull << REIGN__ZKE_CREATING | 1ull << REIGN__ZKE_CLAIMING |
               1ull << REIGN__ZKE_TAKING_OVER;
    return 1ull << REIGN__LEASE_CLAIMING;
}

/* No candidate waits for an answer to a request it never sent. */
static void every_wait_has_its_request(void **state)
{
    for (size_t k = 0; k < N_MACHINES; k++) {
        const reign__efsm *m = machines[k];
        unsigned made = 0, into = 0;
        for (size_t i = 0; i < m->n_rows; i++) {
            const reign__efsm_row *t = &m->rows[i];
            made += t->request != 0;
            if (t->from == t->to || !(awaiting(m) & (1ull << t->to)))
                continue;
            into++;
            if (!t->request)
                fail_msg("%s: (%s, %s) enters %s without sending what it waits for", m->name,
                         sn(m, t->from), in_name(m, t->input), sn(m, t->to));
        }
        assert_true(into > 0);
        printf("%s: %u requests; %u of %zu rows make one; %u enter a waiting state, each with "
               "its request\n",
               m->name, m->n_requests - 1, made, m->n_rows, into);
    }
}

#define ST(x) REIGN__ZKE_##x
#define IN(x) REIGN__ZKE_IN_##x
#define RQ(x) REIGN__ZKE_RQ_##x

static void a_handoff_and_a_takeover(void **state)
{
    /* the leader, outranked: demoted, hands over, and is a contender after */
    reign__efsm_step r = reign__zke_fsm_step(ST(LEADER), IN(OUTRANKED), 0);
    assert_int_equal(r.to, ST(HANDING_OVER));
    assert_int_equal(r.actions, REIGN__EFSM_A_DEMOTE);
    assert_int_equal(r.request, RQ(HAND_OVER)); /* after DEMOTED: never two leaders */
    assert_int_equal(reign__zke_demote_reason(IN(OUTRANKED)), REIGN_DEMOTE_HANDOFF);
    assert_int_equal(reign__zke_fsm_step(ST(HANDING_OVER), IN(HANDOVER_ENDED), 0).to,
                     ST(CONTENDING));
    /* the successor: handed to, takes over, leads only with a fresh proof */
    r = reign__zke_fsm_step(ST(CONTENDING), IN(HANDED_TO_US), 0);
    assert_int_equal(r.to, ST(TAKING_OVER));
    assert_int_equal(r.request, RQ(TAKE_OVER));
    r = reign__zke_fsm_step(ST(TAKING_OVER), IN(CLAIMED), REIGN__EFSM_F_FRESH);
    assert_int_equal(r.to, ST(LEADER));
    assert_int_equal(r.actions, REIGN__EFSM_A_ELECT);
    assert_int_equal(r.request, RQ(NONE));
    r = reign__zke_fsm_step(ST(TAKING_OVER), IN(CLAIMED), 0);
    assert_int_equal(r.to, ST(CHECKING));
    assert_int_equal(r.actions, 0);
    assert_int_equal(r.request, RQ(LIST)); /* stale: look again, the claim renews */
    /* a ceded candidate in a new session follows the leader again at once, still paused */
    r = reign__zke_fsm_step(ST(PAUSED), IN(NEW_SESSION), 0);
    assert_int_equal(r.to, ST(PAUSED));
    assert_int_equal(r.request, RQ(FOLLOW));
    /* the next in line claims the moment the first in line goes */
    r = reign__zke_fsm_step(ST(WAITING), IN(FIRST), 0);
    assert_int_equal(r.to, ST(CLAIMING));
    assert_int_equal(r.request, RQ(CLAIM));
    /* a resign announces DEMOTED on the next turn; a free announces nothing */
    assert_int_equal(reign__zke_fsm_step(ST(LEADER), IN(RESIGN), 0).actions,
                     REIGN__EFSM_A_DEMOTE_LATER);
    assert_int_equal(reign__zke_fsm_step(ST(LEADER), IN(FREE), 0).actions, REIGN__EFSM_A_DROP_LEAD);
    assert_true(reign__zke_fsm_step(ST(FREED), IN(CLAIMED), REIGN__EFSM_F_FRESH).moot);
    assert_true(reign__zke_fsm_step(ST(WAITING), IN(STILL_LEADING), 0).refused);
    assert_true(reign__zke_fsm_step((reign__zke_state)99, IN(CHECK), 0).refused);
}

static const reign__efsm *dot_machine;

static void dot_row(const void *ctx, size_t i, fsm_dot_edge *out)
{
    static char acts[128];
    const reign__efsm_row *t = (const reign__efsm_row *)ctx + i;
    reign__efsm_actions_format(t->actions, acts, sizeof(acts));
    if (t->request && (t->from != t->to || t->actions)) {
        size_t n = strlen(acts);
        snprintf(acts + n, sizeof(acts) - n, "%sthen %s", n ? ", " : "",
                 reign__efsm_request_name(dot_machine, t->request));
    }
    *out = (fsm_dot_edge){t->from, t->to, in_name(dot_machine, t->input),
                          reign__efsm_guard_name(t->guard), acts};
}

static int dot_bold(unsigned s)
{
    return dot_machine->leading(s);
}

static void print_dot(FILE *f, const reign__efsm *m)
{
    dot_machine = m;
    fsm_dot_graph g = {m->name, m->state_names, m->n_states, dot_bold, m->n_rows, dot_row, m->rows};
    fsm_dot_print(f, &g);
}

/* docs/design.md shows the graphs these tables draw, as they are now. */
static void the_docs_show_these_graphs(void **state)
{
    char *doc = NULL;
    size_t dlen = 0;
    FILE *f = fopen(REIGN_SOURCE_DIR "/docs/design.md", "r");
    assert_non_null(f);
    FILE *d = open_memstream(&doc, &dlen);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, got, d);
    fclose(f);
    fclose(d);
    for (size_t k = 0; k < N_MACHINES; k++) {
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        assert_non_null(m);
        print_dot(m, machines[k]);
        fclose(m);
        if (!strstr(doc, text))
            fail_msg("docs/design.md does not show the current graph of %s: replace its digraph "
                     "with the output of `test_election_fsm --dot`",
                     machines[k]->name);
        free(text);
    }
    free(doc);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--dot")) {
        for (size_t k = 0; k < N_MACHINES; k++)
            print_dot(stdout, machines[k]);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_well_formed),
        cmocka_unit_test(every_pair_is_safe),
        cmocka_unit_test(losing_the_proof_leaves_every_state),
        cmocka_unit_test(a_new_session_starts_again),
        cmocka_unit_test(every_path_keeps_the_contract),
        cmocka_unit_test(every_wait_has_its_request),
        cmocka_unit_test(a_handoff_and_a_takeover),
        cmocka_unit_test(the_docs_show_these_graphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
