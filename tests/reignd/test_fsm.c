/*
 * test_fsm.c - reignd's service state machine (src/reignd/fsm.c): the table
 * is well formed, every (state, event, health) combination obeys the safety
 * rules of fsm.h, the ZKFC scenarios walk as they should, and every state is
 * reachable.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fsm.h"

#define ST(x) REIGND_ST_##x
#define EV(x) REIGND_EV_##x

/* Runs a step that must be a real transition (not refused, not moot). */
static reignd_state must(reignd_state s, reignd_event e, int healthy, reignd_state want_to,
                         unsigned want_actions)
{
    reignd_step r = reignd_fsm_step(s, e, healthy);
    if (r.refused || r.moot || r.to != want_to || r.actions != want_actions) {
        char got[160], want[160];
        reignd_actions_format(r.actions, got, sizeof(got));
        reignd_actions_format(want_actions, want, sizeof(want));
        fail_msg("%s + %s (healthy=%d): got %s%s -> %s [%s], want %s [%s]", reignd_state_name(s),
                 reignd_event_name(e), healthy, r.refused ? "refused " : "", r.moot ? "moot " : "",
                 reignd_state_name(r.to), got, reignd_state_name(want_to), want);
    }
    assert_non_null(r.reason);
    return r.to;
}

static void table_is_well_formed(void **state)
{
    size_t n;
    const reignd_transition *t = reignd_fsm_table(&n);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        assert_true((unsigned)t[i].from < REIGND_ST__COUNT);
        assert_true((unsigned)t[i].to < REIGND_ST__COUNT);
        assert_true((unsigned)t[i].event < REIGND_EV__COUNT);
        assert_non_null(t[i].reason);
        assert_true(strlen(t[i].reason) > 3);
        assert_true(t[i].actions < (1u << REIGND_A__COUNT));
        for (size_t j = 0; j < i; j++) {
            if (t[j].from != t[i].from || t[j].event != t[i].event)
                continue;
            /* No duplicate, and no ANY row hiding a guarded one (or the reverse). */
            if (t[i].guard == t[j].guard || t[i].guard == REIGND_G_ANY ||
                t[j].guard == REIGND_G_ANY)
                fail_msg("rows %zu and %zu overlap: %s + %s", j, i, reignd_state_name(t[i].from),
                         reignd_event_name(t[i].event));
        }
    }
}

static int operator_event(reignd_event e)
{
    return e == EV(CEDE) || e == EV(PAUSE) || e == EV(RESUME);
}

/* Not standing in the election: leaving for good needs no RESIGN. */
static int not_standing(reignd_state s)
{
    return s == ST(STARTING) || s == ST(PROBING) || s == ST(PAUSED_UNKNOWN) ||
           s == ST(INITIALIZING) || s == ST(UNHEALTHY) || s == ST(PAUSED) || s == ST(CONFLICT) ||
           s == ST(CEDED);
}

/* Every combination, against the rules of fsm.h. */
static void every_combination_is_safe(void **state)
{
    for (unsigned s = 0; s < REIGND_ST__COUNT; s++) {
        for (unsigned e = 0; e < REIGND_EV__COUNT; e++) {
            for (int healthy = 0; healthy <= 1; healthy++) {
                reignd_state from = (reignd_state)s;
                reignd_event ev = (reignd_event)e;
                reignd_step r = reignd_fsm_step(from, ev, healthy);
                const char *sn = reignd_state_name(from), *en = reignd_event_name(ev);
                assert_non_null(r.reason);
                if (r.refused || r.moot) {
                    /* Nothing changes, nothing is done. */
                    assert_int_equal(r.to, from);
                    assert_int_equal(r.actions, 0);
                    assert_false(r.refused && r.moot);
                }
                if (r.refused && !operator_event(ev) && ev != EV(ELECTED))
                    fail_msg("%s + %s refused: only operator commands and an impossible "
                             "ELECTED may be",
                             sn, en);
                unsigned a = r.actions;
                int was = reignd_state_is_active(from), is = reignd_state_is_active(r.to);
                /* The service is made active only by become-active, only after the
                 * breadcrumb is ours. */
                if (a & REIGND_A_BECOME_ACTIVE)
                    assert_true(from == ST(CLAIMING) && ev == EV(BREADCRUMB_OK) &&
                                r.to == ST(ACTIVE));
                if (!was && is)
                    assert_true(a & REIGND_A_BECOME_ACTIVE);
                /* Leaving an active state runs become-standby (CEDING and STOPPING
                 * already queued it when they were entered), but for a shutdown while
                 * paused: that leaves the service as it is, its breadcrumb kept. */
                int paused_stop = from == ST(PAUSED_ACTIVE) && ev == EV(SHUTDOWN);
                if (paused_stop)
                    assert_false(a & (REIGND_A_BECOME_STANDBY | REIGND_A_DELETE_BREADCRUMB));
                else if (was && !is && from != ST(CEDING) && from != ST(STOPPING))
                    if (!(a & REIGND_A_BECOME_STANDBY))
                        fail_msg("%s + %s leaves active without become-standby", sn, en);
                if ((is || r.to == ST(CEDING)) && (a & REIGND_A_BECOME_STANDBY))
                    assert_true(r.to == ST(CEDING) || r.to == ST(STOPPING));
                /* Fencing only when elected; our breadcrumb only after the fence;
                 * deleting it only once the service is standby. */
                if (a & REIGND_A_FENCE)
                    assert_int_equal(ev, EV(ELECTED));
                if (a & REIGND_A_WRITE_BREADCRUMB)
                    assert_true(from == ST(FENCING) && ev == EV(FENCE_OK));
                if (a & REIGND_A_DELETE_BREADCRUMB)
                    assert_int_equal(ev, EV(STANDBY_HOOK_OK));
                /* Unhealthy never stands; standing needs a healthy check. */
                if (a & REIGND_A_JOIN)
                    assert_true(ev == EV(HEALTHY) || (ev == EV(RESUME) && healthy));
                if (ev == EV(UNHEALTHY))
                    assert_false(a & REIGND_A_JOIN);
                assert_false((a & REIGND_A_JOIN) && (a & (REIGND_A_RESIGN | REIGND_A_CEDE)));
                /* An unhealthy active keeps its breadcrumb: it is to be fenced. */
                if (ev == EV(UNHEALTHY))
                    assert_false(a & REIGND_A_DELETE_BREADCRUMB);
                /* Neutral: no decision on health, nothing started. */
                if ((from == ST(NEUTRAL) || from == ST(NEUTRAL_ACTIVE)) &&
                    (ev == EV(HEALTHY) || ev == EV(UNHEALTHY)))
                    assert_true(a == 0 && r.to == from);
                /* Paused: health changes nothing. */
                if ((from == ST(PAUSED) || from == ST(PAUSED_ACTIVE)) &&
                    (ev == EV(HEALTHY) || ev == EV(UNHEALTHY)))
                    assert_true(a == 0 && r.to == from);
                /* A paused node never stands by itself. */
                if (r.to == ST(PAUSED))
                    assert_false(a & REIGND_A_JOIN);
                /* Stopped is final; exit exactly when it is entered. */
                if (from == ST(STOPPED))
                    assert_true(r.to == ST(STOPPED) && a == 0);
                if (a & REIGND_A_EXIT)
                    assert_true(r.to == ST(STOPPED) && from != ST(STOPPED));
                if (r.to == ST(STOPPED) && from != ST(STOPPED))
                    assert_true(a & REIGND_A_EXIT);
                /* Leaving the election for good goes with RESIGN, unless not standing. */
                if ((a & REIGND_A_EXIT) && !not_standing(from))
                    assert_true(a & REIGND_A_RESIGN);
                /* Start-up: nothing stands, nothing is made active, until the start-up
                 * become-standby ran (its result, either way, ends PROBING). */
                if (from == ST(STARTING) || from == ST(PROBING) || from == ST(PAUSED_UNKNOWN))
                    assert_false(a & (REIGND_A_JOIN | REIGND_A_FENCE | REIGND_A_BECOME_ACTIVE));
                if (from == ST(STARTING) && r.to != from && !r.moot && !r.refused)
                    assert_true(
                        (ev == EV(START) && r.to == ST(PROBING) && a == REIGND_A_BECOME_STANDBY) ||
                        (ev == EV(START_PAUSED) && r.to == ST(PAUSED_UNKNOWN) && a == 0) ||
                        (ev == EV(SHUTDOWN) && r.to == ST(STOPPED)));
                if (r.to == ST(PROBING) && from != ST(PROBING))
                    assert_true(a & REIGND_A_BECOME_STANDBY);
                if (from == ST(PROBING) && r.to != ST(PROBING) && r.to != ST(STOPPED) &&
                    r.to != ST(PAUSED))
                    assert_true(ev == EV(STANDBY_HOOK_OK) || ev == EV(STANDBY_HOOK_FAILED));
                /* An id conflict never stands, and leaves the election. */
                if (ev == EV(ID_CONFLICT))
                    assert_false(a & REIGND_A_JOIN);
                if (r.to == ST(CONFLICT) && from != ST(CONFLICT))
                    assert_true(ev == EV(ID_CONFLICT) && (a & REIGND_A_RESIGN));
                if (from == ST(CONFLICT) && r.to != ST(CONFLICT))
                    assert_true(ev == EV(ID_CLEAR) || ev == EV(PAUSE) || ev == EV(SHUTDOWN));
                /* Ceded: entered by stepping down (a cede, or a failed takeover that
                 * retries later), left by REJOIN (or pause, shutdown). */
                if (r.to == ST(CEDED) && from != ST(CEDED))
                    assert_true((from == ST(CEDING) && (a & REIGND_A_CEDE)) ||
                                (a & REIGND_A_RETRY_LATER));
                if (from == ST(CEDED) && r.to != ST(CEDED))
                    assert_true(ev == EV(REJOIN) || ev == EV(PAUSE) || ev == EV(SHUTDOWN));
                if (a & (REIGND_A_CEDE | REIGND_A_RETRY_LATER))
                    assert_true(r.to == ST(CEDED));
                /* Health is taken again only where it was noted without being acted on. */
                if (a & REIGND_A_TAKE_HEALTH)
                    assert_true(r.to == ST(INITIALIZING) &&
                                (from == ST(PROBING) || from == ST(CONFLICT) || from == ST(CEDED)));
                /* A pause (from the store) is obeyed wherever it can be at once. */
                if (ev == EV(PAUSE) && !r.refused && !r.moot)
                    assert_true(reignd_state_is_paused(r.to) || r.to == from);
                if (ev == EV(PAUSE) && r.refused)
                    assert_true(from == ST(STARTING) || from == ST(FENCING) ||
                                from == ST(CLAIMING) || from == ST(CEDING) ||
                                from == ST(STOPPING) || from == ST(STOPPED));
            }
        }
    }
}

static void first_healthy_check_stands(void **state)
{
    reignd_state s = ST(INITIALIZING);
    /* Nothing stands before the first check: no connection event makes it join. */
    for (unsigned e = 0; e < REIGND_EV__COUNT; e++) {
        reignd_step r = reignd_fsm_step(s, (reignd_event)e, 1);
        if (e != EV(HEALTHY))
            assert_false(r.actions & REIGND_A_JOIN);
    }
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
}

static void failover_on_health(void **state)
{
    reignd_state s = must(ST(INITIALIZING), EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    s = must(s, EV(ELECTED), 1, ST(FENCING), REIGND_A_FENCE);
    s = must(s, EV(FENCE_OK), 1, ST(CLAIMING), REIGND_A_WRITE_BREADCRUMB);
    s = must(s, EV(BREADCRUMB_OK), 1, ST(ACTIVE), REIGND_A_BECOME_ACTIVE);
    s = must(s, EV(ACTIVE_HOOK_OK), 1, ST(ACTIVE), 0);
    /* Unhealthy: quit, become standby, keep the breadcrumb (to be fenced). */
    s = must(s, EV(UNHEALTHY), 0, ST(UNHEALTHY), REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN);
    reignd_step late = reignd_fsm_step(s, EV(STANDBY_HOOK_OK), 0);
    assert_true(late.moot);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
}

static void fence_failure_blocks_activation(void **state)
{
    reignd_state s = must(ST(STANDBY), EV(ELECTED), 1, ST(FENCING), REIGND_A_FENCE);
    s = must(s, EV(FENCE_FAILED), 1, ST(CEDED), REIGND_A_RETRY_LATER);
    s = must(s, EV(REJOIN), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    /* Retried: elected again, fenced this time. */
    s = must(s, EV(ELECTED), 1, ST(FENCING), REIGND_A_FENCE);
    s = must(s, EV(FENCE_OK), 1, ST(CLAIMING), REIGND_A_WRITE_BREADCRUMB);
    s = must(s, EV(BREADCRUMB_FAILED), 1, ST(CEDED), REIGND_A_RETRY_LATER);
    s = must(s, EV(REJOIN), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    /* A fence result after a demotion is moot. */
    s = must(s, EV(ELECTED), 1, ST(FENCING), REIGND_A_FENCE);
    s = must(s, EV(DEMOTED), 1, ST(STANDBY), 0);
    assert_true(reignd_fsm_step(s, EV(FENCE_OK), 1).moot);
}

static void cede_and_shutdown_remove_the_breadcrumb(void **state)
{
    reignd_state s = must(ST(ACTIVE), EV(CEDE), 1, ST(CEDING), REIGND_A_BECOME_STANDBY);
    s = must(s, EV(DEMOTED), 1, ST(CEDING), 0);
    s = must(s, EV(STANDBY_HOOK_OK), 1, ST(CEDED), REIGND_A_DELETE_BREADCRUMB | REIGND_A_CEDE);
    /* Ceded: out of the election until the cede ends; health is noted meanwhile. */
    s = must(s, EV(HEALTHY), 1, ST(CEDED), 0);
    assert_true(reignd_fsm_step(s, EV(ELECTED), 1).refused ||
                reignd_fsm_step(s, EV(DEMOTED), 1).moot);
    s = must(s, EV(REJOIN), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    assert_true(reignd_fsm_step(s, EV(REJOIN), 1).moot); /* a late timer */
    must(ST(CEDED), EV(PAUSE), 1, ST(PAUSED), 0);
    must(ST(CEDED), EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_EXIT);
    assert_true(reignd_fsm_step(ST(CEDED), EV(CEDE), 1).refused);
    /* become-standby failed: step down, but the next active must fence us. */
    s = must(ST(CEDING), EV(STANDBY_HOOK_FAILED), 1, ST(CEDED), REIGND_A_CEDE);

    s = must(ST(ACTIVE), EV(SHUTDOWN), 1, ST(STOPPING), REIGND_A_BECOME_STANDBY);
    assert_true(reignd_fsm_step(s, EV(UNHEALTHY), 0).moot);
    s = must(s, EV(STANDBY_HOOK_OK), 0, ST(STOPPED),
             REIGND_A_DELETE_BREADCRUMB | REIGND_A_RESIGN | REIGND_A_EXIT);
    must(ST(STOPPING), EV(STANDBY_HOOK_FAILED), 0, ST(STOPPED), REIGND_A_RESIGN | REIGND_A_EXIT);
    must(ST(STANDBY), EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_RESIGN | REIGND_A_EXIT);
    must(ST(CEDING), EV(SHUTDOWN), 1, ST(STOPPING), 0);
}

static void cede_is_refused_unless_active(void **state)
{
    reignd_state not_active[] = {ST(INITIALIZING), ST(UNHEALTHY), ST(STANDBY), ST(FENCING),
                                 ST(CLAIMING),     ST(NEUTRAL),   ST(PAUSED)};
    for (size_t i = 0; i < sizeof(not_active) / sizeof(not_active[0]); i++) {
        reignd_step r = reignd_fsm_step(not_active[i], EV(CEDE), 1);
        assert_true(r.refused);
        assert_non_null(strstr(r.reason, "not active"));
    }
    reignd_step r = reignd_fsm_step(ST(PAUSED_ACTIVE), EV(CEDE), 1);
    assert_true(r.refused);
    assert_non_null(strstr(r.reason, "paused"));
}

static void graceful_fence_request(void **state)
{
    must(ST(ACTIVE), EV(FENCE_REQUEST), 1, ST(STANDBY), REIGND_A_BECOME_STANDBY);
    must(ST(NEUTRAL_ACTIVE), EV(FENCE_REQUEST), 1, ST(NEUTRAL), REIGND_A_BECOME_STANDBY);
    must(ST(PAUSED_ACTIVE), EV(FENCE_REQUEST), 1, ST(PAUSED),
         REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN);
    /* Maybe active since before this run: become-standby first. */
    must(ST(PAUSED_UNKNOWN), EV(FENCE_REQUEST), 1, ST(PAUSED), REIGND_A_BECOME_STANDBY);
    /* Starting: answered once the start-up become-standby ran (ops.c waits). */
    must(ST(STARTING), EV(FENCE_REQUEST), 1, ST(STARTING), 0);
    must(ST(PROBING), EV(FENCE_REQUEST), 1, ST(PROBING), 0);
    /* Not active: nothing to do (the peer is answered at once). */
    reignd_state idle[] = {ST(INITIALIZING), ST(UNHEALTHY), ST(STANDBY),  ST(NEUTRAL),
                           ST(PAUSED),       ST(STOPPED),   ST(CONFLICT), ST(CEDED)};
    for (size_t i = 0; i < sizeof(idle) / sizeof(idle[0]); i++) {
        reignd_step r = reignd_fsm_step(idle[i], EV(FENCE_REQUEST), 1);
        assert_false(r.refused);
        assert_int_equal(r.actions, 0);
        assert_int_equal(r.to, idle[i]);
    }
}

static void neutral_and_session_expiry(void **state)
{
    /* Standby: neutral, health noted, decided on reconnection. */
    reignd_state s = must(ST(STANDBY), EV(SUSPENDED), 1, ST(NEUTRAL), 0);
    s = must(s, EV(UNHEALTHY), 0, ST(NEUTRAL), 0);
    must(s, EV(RECONNECTED), 0, ST(UNHEALTHY), REIGND_A_RESIGN);
    must(s, EV(RECONNECTED), 1, ST(STANDBY), 0);
    /* Session lost: the election stands again by itself on the new session. */
    s = must(s, EV(SESSION_LOST), 1, ST(NEUTRAL), 0);
    must(s, EV(CONNECTED), 1, ST(STANDBY), 0);
    must(s, EV(CONNECTED), 0, ST(UNHEALTHY), REIGND_A_RESIGN);

    /* Active: neutral; a demotion while suspended still makes it standby. */
    s = must(ST(ACTIVE), EV(SUSPENDED), 1, ST(NEUTRAL_ACTIVE), 0);
    s = must(s, EV(UNHEALTHY), 0, ST(NEUTRAL_ACTIVE), 0);
    must(s, EV(RECONNECTED), 1, ST(ACTIVE), 0);
    must(s, EV(RECONNECTED), 0, ST(UNHEALTHY), REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN);
    s = must(s, EV(DEMOTED), 1, ST(NEUTRAL), REIGND_A_BECOME_STANDBY);
    s = must(s, EV(SESSION_LOST), 1, ST(NEUTRAL), 0);
    must(s, EV(CONNECTED), 1, ST(STANDBY), 0);
    must(ST(ACTIVE), EV(SESSION_LOST), 1, ST(NEUTRAL), REIGND_A_BECOME_STANDBY);
}

static void pause_and_resume(void **state)
{
    reignd_state s = must(ST(STANDBY), EV(PAUSE), 1, ST(PAUSED), REIGND_A_RESIGN);
    s = must(s, EV(HEALTHY), 1, ST(PAUSED), 0);
    must(s, EV(RESUME), 1, ST(STANDBY), REIGND_A_JOIN);
    must(s, EV(RESUME), 0, ST(UNHEALTHY), 0);

    s = must(ST(ACTIVE), EV(PAUSE), 1, ST(PAUSED_ACTIVE), 0);
    s = must(s, EV(UNHEALTHY), 0, ST(PAUSED_ACTIVE), 0); /* no automatic failover */
    must(s, EV(RESUME), 1, ST(ACTIVE), 0);
    must(s, EV(RESUME), 0, ST(UNHEALTHY), REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN);
    must(s, EV(DEMOTED), 0, ST(PAUSED), REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN);
    /* Stopped while paused (Patroni's pause): the service is left running, untouched; the
     * election is left, the breadcrumb kept for whoever takes over after the resume. */
    must(s, EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_RESIGN | REIGND_A_EXIT);
    must(s, EV(SHUTDOWN), 0, ST(STOPPED), REIGND_A_RESIGN | REIGND_A_EXIT);

    assert_true(reignd_fsm_step(ST(STANDBY), EV(RESUME), 1).refused);
    assert_true(reignd_fsm_step(ST(FENCING), EV(PAUSE), 1).refused);
}

static void active_hook_failure_steps_down(void **state)
{
    must(ST(ACTIVE), EV(ACTIVE_HOOK_FAILED), 1, ST(CEDED),
         REIGND_A_BECOME_STANDBY | REIGND_A_RETRY_LATER);
    must(ST(NEUTRAL_ACTIVE), EV(ACTIVE_HOOK_FAILED), 1, ST(CEDED),
         REIGND_A_BECOME_STANDBY | REIGND_A_RETRY_LATER);
    assert_true(reignd_fsm_step(ST(CEDED), EV(ACTIVE_HOOK_OK), 1).moot);
}

static void start_up_probes_the_service(void **state)
{
    /* Not paused: become-standby first, whatever the health says meanwhile. */
    reignd_state s = must(ST(STARTING), EV(START), 1, ST(PROBING), REIGND_A_BECOME_STANDBY);
    s = must(s, EV(HEALTHY), 1, ST(PROBING), 0);
    assert_true(reignd_fsm_step(s, EV(CONNECTED), 1).moot);
    assert_true(reignd_fsm_step(s, EV(CEDE), 1).refused);
    /* Done (or failed: then a graceful fence of this node fails): act on the health. */
    must(s, EV(STANDBY_HOOK_FAILED), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(STANDBY_HOOK_OK), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    /* A pause that comes meanwhile waits for nothing; the hook still runs. */
    must(ST(PROBING), EV(PAUSE), 1, ST(PAUSED), 0);
    must(ST(PROBING), EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_EXIT);

    /* Paused at start: touch nothing until resumed, then probe. */
    s = must(ST(STARTING), EV(START_PAUSED), 1, ST(PAUSED_UNKNOWN), 0);
    s = must(s, EV(UNHEALTHY), 0, ST(PAUSED_UNKNOWN), 0);
    assert_true(reignd_fsm_step(s, EV(CEDE), 1).refused);
    must(s, EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_EXIT);
    s = must(s, EV(RESUME), 1, ST(PROBING), REIGND_A_BECOME_STANDBY);
    must(ST(STARTING), EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_EXIT);
    /* A pause while starting waits for START_PAUSED. */
    assert_true(reignd_fsm_step(ST(STARTING), EV(PAUSE), 1).refused);
}

/* Every path from STARTING queues become-standby before it first stands. */
static void nothing_stands_before_the_probe(void **state)
{
    int seen[REIGND_ST__COUNT][2] = {{0}};
    reignd_state queue[2 * REIGND_ST__COUNT];
    int probed[2 * REIGND_ST__COUNT];
    size_t head = 0, tail = 0;
    seen[ST(STARTING)][0] = 1;
    queue[tail] = ST(STARTING);
    probed[tail++] = 0;
    while (head < tail) {
        reignd_state s = queue[head];
        int p = probed[head++];
        for (unsigned e = 0; e < REIGND_EV__COUNT; e++)
            for (int h = 0; h <= 1; h++) {
                reignd_step r = reignd_fsm_step(s, (reignd_event)e, h);
                if (!p && (r.actions & (REIGND_A_JOIN | REIGND_A_BECOME_ACTIVE)))
                    fail_msg("%s + %s stands before the start-up become-standby",
                             reignd_state_name(s), reignd_event_name((reignd_event)e));
                int q = p || (r.actions & REIGND_A_BECOME_STANDBY) != 0;
                if (!seen[r.to][q]) {
                    seen[r.to][q] = 1;
                    queue[tail] = r.to;
                    probed[tail++] = q;
                }
            }
    }
    /* Without the probe only the start-up states (and the end) are reached. */
    for (unsigned s = 0; s < REIGND_ST__COUNT; s++)
        if (seen[s][0])
            assert_true(s == ST(STARTING) || s == ST(PAUSED_UNKNOWN) || s == ST(STOPPED));
}

static void id_conflict_does_not_stand(void **state)
{
    reignd_state s = must(ST(STANDBY), EV(ID_CONFLICT), 1, ST(CONFLICT), REIGND_A_RESIGN);
    must(ST(NEUTRAL), EV(ID_CONFLICT), 1, ST(CONFLICT), REIGND_A_RESIGN);
    assert_true(reignd_fsm_step(s, EV(ID_CONFLICT), 1).moot); /* looked at again */
    s = must(s, EV(HEALTHY), 1, ST(CONFLICT), 0);
    assert_true(reignd_fsm_step(s, EV(ELECTED), 1).refused);
    s = must(s, EV(ID_CLEAR), 1, ST(INITIALIZING), REIGND_A_TAKE_HEALTH);
    s = must(s, EV(HEALTHY), 1, ST(STANDBY), REIGND_A_JOIN);
    /* Found while leading: the other one must not stand, this one goes on. */
    reignd_state leading[] = {ST(FENCING), ST(CLAIMING), ST(ACTIVE), ST(NEUTRAL_ACTIVE),
                              ST(PAUSED_ACTIVE)};
    for (size_t i = 0; i < sizeof(leading) / sizeof(leading[0]); i++)
        assert_true(reignd_fsm_step(leading[i], EV(ID_CONFLICT), 1).moot);
    must(ST(CONFLICT), EV(PAUSE), 1, ST(PAUSED), 0);
    must(ST(CONFLICT), EV(SHUTDOWN), 1, ST(STOPPED), REIGND_A_EXIT);
}

/* Breadth-first search from STARTING over every event and health. */
static void every_state_is_reachable(void **state)
{
    int seen[REIGND_ST__COUNT] = {0};
    reignd_state queue[REIGND_ST__COUNT];
    size_t head = 0, tail = 0;
    seen[ST(STARTING)] = 1;
    queue[tail++] = ST(STARTING);
    while (head < tail) {
        reignd_state s = queue[head++];
        for (unsigned e = 0; e < REIGND_EV__COUNT; e++)
            for (int h = 0; h <= 1; h++) {
                reignd_step r = reignd_fsm_step(s, (reignd_event)e, h);
                if (!seen[r.to]) {
                    seen[r.to] = 1;
                    queue[tail++] = r.to;
                }
            }
    }
    for (unsigned s = 0; s < REIGND_ST__COUNT; s++)
        if (!seen[s])
            fail_msg("state %s is unreachable", reignd_state_name((reignd_state)s));
}

static void names_and_dot(void **state)
{
    assert_string_equal(reignd_state_name(ST(NEUTRAL_ACTIVE)), "neutral_active");
    assert_string_equal(reignd_event_name(EV(FENCE_REQUEST)), "fence_request");
    assert_string_equal(reignd_state_name((reignd_state)99), "?");
    assert_string_equal(reignd_action_name(REIGND_A_WRITE_BREADCRUMB), "write_breadcrumb");
    assert_string_equal(reignd_action_name(3), "?");
    char buf[64];
    reignd_actions_format(REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN, buf, sizeof(buf));
    assert_string_equal(buf, "become_standby+resign");
    reignd_actions_format(0, buf, sizeof(buf));
    assert_string_equal(buf, "");
    reignd_actions_format(REIGND_A_BECOME_STANDBY | REIGND_A_RESIGN, buf, 8);
    assert_true(strlen(buf) < 8);
    assert_true(reignd_fsm_step((reignd_state)99, EV(HEALTHY), 1).refused);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    reignd_fsm_print_dot(f);
    fclose(f);
    assert_non_null(strstr(text, "digraph reignd {"));
    assert_non_null(strstr(text, "claiming -> active [label=\"breadcrumb_ok / become_active\"]"));
    assert_non_null(strstr(text, "[healthy]"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_well_formed),
        cmocka_unit_test(every_combination_is_safe),
        cmocka_unit_test(first_healthy_check_stands),
        cmocka_unit_test(failover_on_health),
        cmocka_unit_test(fence_failure_blocks_activation),
        cmocka_unit_test(cede_and_shutdown_remove_the_breadcrumb),
        cmocka_unit_test(cede_is_refused_unless_active),
        cmocka_unit_test(graceful_fence_request),
        cmocka_unit_test(neutral_and_session_expiry),
        cmocka_unit_test(pause_and_resume),
        cmocka_unit_test(active_hook_failure_steps_down),
        cmocka_unit_test(start_up_probes_the_service),
        cmocka_unit_test(nothing_stands_before_the_probe),
        cmocka_unit_test(id_conflict_does_not_stand),
        cmocka_unit_test(every_state_is_reachable),
        cmocka_unit_test(names_and_dot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
