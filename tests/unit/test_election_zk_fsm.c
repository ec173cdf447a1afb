/*
 * test_election_zk_fsm.c - the ZooKeeper candidate's table, without a
 * server: every (state, input, facts) combination, and the invariants on
 * every path from a new candidate (a search of every reachable pair of
 * table state and what the application was told):
 *  - LEADER (any leading state) is entered only by a claim proved in this
 *    session with a fresh proof, and announced with ELECTED;
 *  - every exit from a leading state emits exactly one DEMOTED (at once or
 *    on the next turn), but for a free, which emits nothing;
 *  - ELECTED and DEMOTED alternate, starting with ELECTED;
 *  - nothing is emitted after a free;
 *  - every state that is not terminal has a way out when the session is
 *    lost (a new session, the client's close), and none of them leads.
 *
 *   test_election_zk_fsm          runs the tests and prints the counts
 *   test_election_zk_fsm --dot    prints the table's graph (docs/design.md)
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
#include "recipes/election_zk_fsm.h"

#define NS     REIGN__ZKE_ST__COUNT
#define NI     REIGN__ZKE_IN__COUNT
#define NF     8u /* every combination of the three facts */
#define ST(x)  REIGN__ZKE_##x
#define IN(x)  REIGN__ZKE_IN_##x
#define DEMOTE (REIGN__ZKE_A_DEMOTE | REIGN__ZKE_A_DEMOTE_LATER)

static reign__zke_step step(unsigned s, unsigned in, unsigned facts)
{
    return reign__zke_fsm_step((reign__zke_state)s, (reign__zke_input)in, facts);
}

static const char *sn(unsigned s)
{
    return reign__zke_state_name((reign__zke_state)s);
}

static const char *in_name(unsigned in)
{
    return reign__zke_input_name((reign__zke_input)in);
}

static int bits(unsigned v)
{
    int n = 0;
    for (; v; v &= v - 1)
        n++;
    return n;
}

static void table_is_well_formed(void **state)
{
    size_t n;
    const reign__zke_transition *t = reign__zke_fsm_table(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(t[i].from < NS && t[i].to < NS && t[i].input < NI);
        assert_non_null(t[i].reason);
        assert_true(t[i].reason[0] != '\0');
        /* a row hidden by an earlier one with the same (state, input) and
         * a guard that holds whenever its own does is dead */
        for (size_t j = 0; j < i; j++)
            if (t[j].from == t[i].from && t[j].input == t[i].input &&
                (t[j].guard == REIGN__ZKE_G_ANY || t[j].guard == t[i].guard))
                fail_msg("row %zu (%s, %s) is never reached", i, sn(t[i].from),
                         in_name(t[i].input));
    }
}

/* Each step on its own, for every state, input and facts. */
static void every_pair_is_safe(void **state)
{
    unsigned pairs = 0, taken = 0, refused = 0, moot = 0;
    for (unsigned s = 0; s < NS; s++)
        for (unsigned in = 0; in < NI; in++)
            for (unsigned f = 0; f < NF; f++) {
                reign__zke_step r = step(s, in, f);
                pairs++;
                assert_non_null(r.reason);
                assert_true(r.to < NS);
                if (r.refused || r.moot) {
                    refused += r.refused;
                    moot += r.moot;
                    if (r.to != s || r.actions)
                        fail_msg("%s in %s: refused yet acts", in_name(in), sn(s));
                    continue;
                }
                taken++;
                int was = reign__zke_leading((reign__zke_state)s);
                int is = reign__zke_leading(r.to);
                unsigned a = r.actions;
                if (!was && is &&
                    !(in == IN(CLAIMED) && (f & REIGN__ZKE_F_FRESH) && (a & REIGN__ZKE_A_ELECT)))
                    fail_msg("%s -> %s on %s: leads without a fresh claim", sn(s), sn(r.to),
                             in_name(in));
                if ((a & REIGN__ZKE_A_ELECT) && (was || !is))
                    fail_msg("%s on %s: ELECTED outside the entry to LEADER", sn(s), in_name(in));
                if (was && !is) {
                    unsigned ends = a & (DEMOTE | REIGN__ZKE_A_DROP_LEAD);
                    if (bits(ends) != 1)
                        fail_msg("%s -> %s on %s: %d demotions", sn(s), sn(r.to), in_name(in),
                                 bits(ends));
                    if ((a & REIGN__ZKE_A_DROP_LEAD) && in != IN(FREE))
                        fail_msg("%s on %s: a silent end that is no free", sn(s), in_name(in));
                } else if (a & (DEMOTE | REIGN__ZKE_A_DROP_LEAD)) {
                    fail_msg("%s -> %s on %s: demotes without leading", sn(s), sn(r.to),
                             in_name(in));
                }
                if ((a & REIGN__ZKE_A_EMIT_LEFT) && (s != ST(RESIGNING) || r.to != ST(LEFT)))
                    fail_msg("%s on %s: LEFT outside the end of a resign", sn(s), in_name(in));
                if (in == IN(FREE) && (r.to != ST(FREED) || (a & ~REIGN__ZKE_A_DROP_LEAD)))
                    fail_msg("free in %s emits or does not free", sn(s));
                if (s == ST(FREED))
                    fail_msg("%s after a free is acted on", in_name(in));
            }
    assert_int_equal(pairs, NS * NI * NF);
    printf("election_zk_fsm: %u states, %u inputs, %u facts combinations: %u pairs walked "
           "(%u taken, %u moot, %u refused)\n",
           (unsigned)NS, (unsigned)NI, NF, pairs, taken, moot, refused);
}

/* Session loss: a way out of every state that is not terminal. */
static void session_loss_leaves_every_state(void **state)
{
    unsigned checked = 0;
    for (unsigned s = 0; s < NS; s++) {
        if (reign__zke_terminal((reign__zke_state)s))
            continue;
        for (unsigned f = 0; f < NF; f++) {
            reign__zke_step r = step(s, IN(NEW_SESSION), f);
            if (r.refused || r.moot || reign__zke_leading(r.to))
                fail_msg("a new session in %s: no way out (%s)", sn(s), r.reason);
            /* then the attempt starts again (PAUSED: when its timer fires) */
            if (r.to != ST(SETUP) && r.to != ST(LEFT)) {
                reign__zke_step n = step(r.to, IN(START), f);
                if (r.to != ST(PAUSED) || n.refused || n.to != ST(SETUP))
                    fail_msg("a new session in %s ends in %s, stuck", sn(s), sn(r.to));
            }
            reign__zke_step c = step(s, IN(CLOSED), f);
            if (c.refused || c.moot || (c.to != ST(LEFT) && c.to != ST(FAILED)))
                fail_msg("the client's close in %s leaves it in %s", sn(s), sn(c.to));
            reign__zke_step l = step(s, IN(SESSION_LOST), f);
            if (l.refused || reign__zke_leading(l.to))
                fail_msg("a lost session in %s: still leading or refused", sn(s));
            checked++;
        }
    }
    printf("election_zk_fsm: session loss checked in %u (state, facts) pairs\n", checked);
}

/*
 * Every path from a new candidate: a search over (state, told leader,
 * freed), where "told" follows what the application heard.  A path's
 * invariants depend only on that triple, so visiting each once covers every
 * path of any length.
 */
static void every_path_keeps_the_contract(void **state)
{
    enum { TOLD = 1, FREED = 2 };
    unsigned char seen[NS][4] = {{0}};
    unsigned queue[NS * 4][2], head = 0, tail = 0;
    unsigned edges = 0, reachable[NS] = {0};
    queue[tail][0] = ST(NOSESSION);
    queue[tail++][1] = 0;
    seen[ST(NOSESSION)][0] = 1;
    while (head < tail) {
        unsigned s = queue[head][0], m = queue[head][1];
        head++;
        reachable[s] = 1;
        if (!!(m & TOLD) != reign__zke_leading((reign__zke_state)s) && !(m & FREED))
            fail_msg("in %s the application was told %s", sn(s),
                     m & TOLD ? "it leads" : "it does not lead");
        for (unsigned in = 0; in < NI; in++)
            for (unsigned f = 0; f < NF; f++) {
                reign__zke_step r = step(s, in, f);
                if (r.refused || r.moot)
                    continue;
                edges++;
                unsigned nm = m;
                if (r.actions & REIGN__ZKE_A_ELECT) {
                    if (m & (TOLD | FREED))
                        fail_msg("ELECTED twice, or after a free (%s on %s)", sn(s), in_name(in));
                    nm |= TOLD;
                }
                if (r.actions & DEMOTE) {
                    if (!(m & TOLD) || (m & FREED))
                        fail_msg("DEMOTED without ELECTED, or after a free (%s on %s)", sn(s),
                                 in_name(in));
                    nm &= ~(unsigned)TOLD;
                }
                if ((r.actions & REIGN__ZKE_A_EMIT_LEFT) && (m & FREED))
                    fail_msg("LEFT after a free");
                if (r.to == ST(FREED))
                    nm = FREED;
                if (!seen[r.to][nm]) {
                    seen[r.to][nm] = 1;
                    queue[tail][0] = r.to;
                    queue[tail++][1] = nm;
                }
            }
    }
    for (unsigned s = 0; s < NS; s++)
        if (!reachable[s])
            fail_msg("state %s is unreachable", sn(s));
    printf("election_zk_fsm: %u (state, told, freed) nodes reached, %u steps walked\n", tail,
           edges);
}

static void a_handoff_and_a_takeover(void **state)
{
    /* the leader, outranked: demoted, hands over, and is a contender after */
    reign__zke_step r = step(ST(LEADER), IN(OUTRANKED), 0);
    assert_int_equal(r.to, ST(HANDING_OVER));
    assert_int_equal(r.actions, REIGN__ZKE_A_DEMOTE);
    assert_int_equal(reign__zke_demote_reason(IN(OUTRANKED)), REIGN_DEMOTE_HANDOFF);
    assert_int_equal(step(ST(HANDING_OVER), IN(HANDOVER_ENDED), 0).to, ST(CONTENDING));
    /* the successor: handed to, takes over, leads only with a fresh proof */
    assert_int_equal(step(ST(CONTENDING), IN(HANDED_TO_US), 0).to, ST(TAKING_OVER));
    r = step(ST(TAKING_OVER), IN(CLAIMED), REIGN__ZKE_F_FRESH);
    assert_int_equal(r.to, ST(LEADER));
    assert_int_equal(r.actions, REIGN__ZKE_A_ELECT);
    r = step(ST(TAKING_OVER), IN(CLAIMED), 0);
    assert_int_equal(r.to, ST(CHECKING));
    assert_int_equal(r.actions, 0);
    /* a resign announces DEMOTED on the next turn; a free announces nothing */
    assert_int_equal(step(ST(LEADER), IN(RESIGN), 0).actions, REIGN__ZKE_A_DEMOTE_LATER);
    assert_int_equal(step(ST(LEADER), IN(FREE), 0).actions, REIGN__ZKE_A_DROP_LEAD);
    assert_true(step(ST(FREED), IN(CLAIMED), REIGN__ZKE_F_FRESH).moot);
    assert_true(step(ST(WAITING), IN(STILL_LEADING), 0).refused);
    assert_true(step((reign__zke_state)99, IN(CHECK), 0).refused);
}

static void dot_row(const void *ctx, size_t i, fsm_dot_edge *out)
{
    static char acts[96];
    const reign__zke_transition *t = (const reign__zke_transition *)ctx + i;
    reign__zke_actions_format(t->actions, acts, sizeof(acts));
    *out = (fsm_dot_edge){t->from, t->to, in_name(t->input),
                          reign__zke_guard_name((reign__zke_guard)t->guard), acts};
}

static int dot_bold(unsigned s)
{
    return reign__zke_leading((reign__zke_state)s);
}

static void print_dot(FILE *f)
{
    static const char *names[NS];
    for (unsigned s = 0; s < NS; s++)
        names[s] = sn(s);
    size_t n;
    const reign__zke_transition *t = reign__zke_fsm_table(&n);
    fsm_dot_graph g = {"election_zk", names, NS, dot_bold, n, dot_row, t};
    fsm_dot_print(f, &g);
}

/* docs/design.md shows the graph this table draws, as it is now. */
static void the_docs_show_this_graph(void **state)
{
    char *text = NULL, *doc = NULL;
    size_t len = 0, dlen = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    print_dot(f);
    fclose(f);
    assert_non_null(strstr(text, "leader -> handing_over [label=\"outranked / demote\"]"));
    f = fopen(REIGN_SOURCE_DIR "/docs/design.md", "r");
    assert_non_null(f);
    FILE *m = open_memstream(&doc, &dlen);
    char buf[4096];
    size_t got;
    while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
        fwrite(buf, 1, got, m);
    fclose(f);
    fclose(m);
    if (!strstr(doc, text))
        fail_msg("docs/design.md does not show the current graph: replace its digraph with the "
                 "output of `test_election_zk_fsm --dot`");
    free(text);
    free(doc);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--dot")) {
        print_dot(stdout);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_well_formed),
        cmocka_unit_test(every_pair_is_safe),
        cmocka_unit_test(session_loss_leaves_every_state),
        cmocka_unit_test(every_path_keeps_the_contract),
        cmocka_unit_test(a_handoff_and_a_takeover),
        cmocka_unit_test(the_docs_show_this_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
