/*
 * fsm.c - the transition table of a reignd service (see fsm.h for the rules).
 *
 * One row per (state, event[, guard]); the first row that matches wins.  A
 * row that keeps the state and does nothing still says why: events that can
 * legitimately arrive late (a fence result after a demotion, our own resign's
 * DEMOTED) are expected, not illegal.  Pairs with no row are refused.
 */
#include <string.h>

#include "fsm.h"
#include "fsm_dot.h"

#define ST(x) REIGND_ST_##x
#define EV(x) REIGND_EV_##x
#define G(x)  REIGND_G_##x

#define STANDBY_HOOK REIGND_A_BECOME_STANDBY
#define DELETE_CRUMB REIGND_A_DELETE_BREADCRUMB
#define RESIGN       REIGND_A_RESIGN
#define CEDE         REIGND_A_CEDE
#define RETRY_LATER  REIGND_A_RETRY_LATER
#define JOIN         REIGND_A_JOIN
#define FENCE        REIGND_A_FENCE
#define WRITE_CRUMB  REIGND_A_WRITE_BREADCRUMB
#define ACTIVE_HOOK  REIGND_A_BECOME_ACTIVE
#define EXIT         REIGND_A_EXIT
#define TAKE_HEALTH  REIGND_A_TAKE_HEALTH

/* clang-format off */
static const reignd_transition table[] = {
    /* ---- start-up: the service may have been left active by an earlier run ---- */
    {ST(STARTING), EV(START), G(ANY), ST(PROBING), STANDBY_HOOK,
     "started: make the service standby before anything else (an earlier run of this daemon "
     "may have left it active)"},
    {ST(STARTING), EV(START_PAUSED), G(ANY), ST(PAUSED_UNKNOWN), 0,
     "started while the election is paused: touch nothing (the service may be active)"},
    {ST(STARTING), EV(HEALTHY), G(ANY), ST(STARTING), 0, "healthy (noted; starting)"},
    {ST(STARTING), EV(UNHEALTHY), G(ANY), ST(STARTING), 0, "unhealthy (noted; starting)"},
    {ST(STARTING), EV(FENCE_REQUEST), G(ANY), ST(STARTING), 0,
     "asked to go standby: answered once the start-up become-standby has run"},
    {ST(STARTING), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown before the start"},

    {ST(PROBING), EV(STANDBY_HOOK_OK), G(ANY), ST(INITIALIZING), TAKE_HEALTH,
     "the service is standby: stand once it is healthy"},
    {ST(PROBING), EV(STANDBY_HOOK_FAILED), G(ANY), ST(INITIALIZING), TAKE_HEALTH,
     "become-standby failed at start: the service may still be active, so a graceful fence "
     "of this node fails and the next active fences it otherwise"},
    {ST(PROBING), EV(HEALTHY), G(ANY), ST(PROBING), 0,
     "healthy (noted; taken once the service is standby)"},
    {ST(PROBING), EV(UNHEALTHY), G(ANY), ST(PROBING), 0,
     "unhealthy (noted; taken once the service is standby)"},
    {ST(PROBING), EV(FENCE_REQUEST), G(ANY), ST(PROBING), 0,
     "asked to go standby: the start-up become-standby is under way"},
    {ST(PROBING), EV(PAUSE), G(ANY), ST(PAUSED), 0,
     "paused: do not stand (the start-up become-standby still runs)"},
    {ST(PROBING), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT,
     "shutdown: the start-up become-standby still runs before the daemon exits"},

    {ST(PAUSED_UNKNOWN), EV(RESUME), G(ANY), ST(PROBING), STANDBY_HOOK,
     "resumed: make the service standby before standing (its role is unknown since start)"},
    {ST(PAUSED_UNKNOWN), EV(PAUSE), G(ANY), ST(PAUSED_UNKNOWN), 0, "already paused"},
    {ST(PAUSED_UNKNOWN), EV(HEALTHY), G(ANY), ST(PAUSED_UNKNOWN), 0, "healthy (paused: noted)"},
    {ST(PAUSED_UNKNOWN), EV(UNHEALTHY), G(ANY), ST(PAUSED_UNKNOWN), 0,
     "unhealthy (paused: noted)"},
    {ST(PAUSED_UNKNOWN), EV(FENCE_REQUEST), G(ANY), ST(PAUSED), STANDBY_HOOK,
     "a new active asks us to go standby: the service may be active, make it standby"},
    {ST(PAUSED_UNKNOWN), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT,
     "shutdown while paused: touch nothing (this run never knew the service's role)"},

    /* ---- not standing yet ---- */
    {ST(INITIALIZING), EV(HEALTHY), G(ANY), ST(STANDBY), JOIN,
     "healthy: stand in the election"},
    {ST(INITIALIZING), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), 0,
     "first check unhealthy: do not stand"},
    {ST(UNHEALTHY), EV(HEALTHY), G(ANY), ST(STANDBY), JOIN,
     "healthy again: stand in the election"},
    {ST(UNHEALTHY), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), 0,
     "still unhealthy"},

    /* ---- standby ---- */
    {ST(STANDBY), EV(HEALTHY), G(ANY), ST(STANDBY), 0,
     "healthy: already standing"},
    {ST(STANDBY), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), RESIGN,
     "unhealthy: quit the election"},
    {ST(STANDBY), EV(ELECTED), G(ANY), ST(FENCING), FENCE,
     "elected: fence the old active named by the breadcrumb before anything else"},
    {ST(STANDBY), EV(DEMOTED), G(ANY), ST(STANDBY), 0,
     "demoted while not active (our own step-down): nothing to undo"},
    {ST(STANDBY), EV(SUSPENDED), G(ANY), ST(NEUTRAL), 0,
     "connection suspended: neutral, no decisions until it is back"},
    {ST(STANDBY), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), 0,
     "session lost: neutral until a new session stands again"},
    {ST(STANDBY), EV(CONNECTED), G(ANY), ST(STANDBY), 0,
     "connected: the election stands by itself"},
    {ST(STANDBY), EV(RECONNECTED), G(ANY), ST(STANDBY), 0,
     "reconnected"},
    {ST(STANDBY), EV(FENCE_REQUEST), G(ANY), ST(STANDBY), 0,
     "asked to go standby: the service is not active"},
    {ST(STANDBY), EV(ID_CONFLICT), G(ANY), ST(CONFLICT), RESIGN,
     "another live reignd stands with this node's id: quit the election (a node id must name "
     "one daemon: the breadcrumb names the old active by it)"},

    /* ---- another daemon uses our node id ---- */
    {ST(CONFLICT), EV(ID_CLEAR), G(ANY), ST(INITIALIZING), TAKE_HEALTH,
     "no other live reignd with this node's id: stand once healthy"},
    {ST(CONFLICT), EV(HEALTHY), G(ANY), ST(CONFLICT), 0, "healthy (noted; not standing)"},
    {ST(CONFLICT), EV(UNHEALTHY), G(ANY), ST(CONFLICT), 0, "unhealthy (noted; not standing)"},
    {ST(CONFLICT), EV(PAUSE), G(ANY), ST(PAUSED), 0, "paused: do not stand"},
    {ST(CONFLICT), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown"},

    /* ---- elected: fence, then claim ---- */
    {ST(FENCING), EV(FENCE_OK), G(ANY), ST(CLAIMING), WRITE_CRUMB,
     "no old active left to fence: write our breadcrumb"},
    {ST(FENCING), EV(FENCE_FAILED), G(ANY), ST(CEDED), RETRY_LATER,
     "could not fence the old active: do not become active, step down and retry later"},
    {ST(FENCING), EV(DEMOTED), G(ANY), ST(STANDBY), 0,
     "demoted while fencing: the service never became active"},
    {ST(FENCING), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), RESIGN,
     "unhealthy while fencing: quit the election"},
    {ST(FENCING), EV(HEALTHY), G(ANY), ST(FENCING), 0,
     "healthy"},
    {ST(FENCING), EV(SUSPENDED), G(ANY), ST(FENCING), 0,
     "suspended while fencing: the fence goes on, the election demotes us if it must"},
    {ST(FENCING), EV(RECONNECTED), G(ANY), ST(FENCING), 0,
     "reconnected while fencing"},
    {ST(FENCING), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), 0,
     "session lost while fencing: give the win up"},
    {ST(FENCING), EV(CONNECTED), G(ANY), ST(STANDBY), 0,
     "new session: the win went with the old one; the election stands again"},
    {ST(FENCING), EV(FENCE_REQUEST), G(ANY), ST(FENCING), 0,
     "asked to go standby: the service is not active yet"},

    {ST(CLAIMING), EV(BREADCRUMB_OK), G(ANY), ST(ACTIVE), ACTIVE_HOOK,
     "breadcrumb written: make the service active"},
    {ST(CLAIMING), EV(BREADCRUMB_FAILED), G(ANY), ST(CEDED), RETRY_LATER,
     "could not write our breadcrumb: step down and retry later"},
    {ST(CLAIMING), EV(DEMOTED), G(ANY), ST(STANDBY), 0,
     "demoted while claiming: the service never became active"},
    {ST(CLAIMING), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), RESIGN,
     "unhealthy while claiming: quit the election"},
    {ST(CLAIMING), EV(HEALTHY), G(ANY), ST(CLAIMING), 0,
     "healthy"},
    {ST(CLAIMING), EV(SUSPENDED), G(ANY), ST(CLAIMING), 0,
     "suspended while claiming: the write goes on, the election demotes us if it must"},
    {ST(CLAIMING), EV(RECONNECTED), G(ANY), ST(CLAIMING), 0,
     "reconnected while claiming"},
    {ST(CLAIMING), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), 0,
     "session lost while claiming: give the win up"},
    {ST(CLAIMING), EV(CONNECTED), G(ANY), ST(STANDBY), 0,
     "new session: the win went with the old one; the election stands again"},
    {ST(CLAIMING), EV(FENCE_REQUEST), G(ANY), ST(CLAIMING), 0,
     "asked to go standby: the service is not active yet"},

    /* ---- active ---- */
    {ST(ACTIVE), EV(ACTIVE_HOOK_OK), G(ANY), ST(ACTIVE), 0,
     "become-active succeeded"},
    {ST(ACTIVE), EV(ACTIVE_HOOK_FAILED), G(ANY), ST(CEDED), STANDBY_HOOK | RETRY_LATER,
     "become-active failed: make it standby, step down (the breadcrumb stays) and retry later"},
    {ST(ACTIVE), EV(HEALTHY), G(ANY), ST(ACTIVE), 0,
     "healthy"},
    {ST(ACTIVE), EV(UNHEALTHY), G(ANY), ST(UNHEALTHY), STANDBY_HOOK | RESIGN,
     "unhealthy while active: quit the election and keep the breadcrumb, to be fenced"},
    {ST(ACTIVE), EV(DEMOTED), G(ANY), ST(STANDBY), STANDBY_HOOK,
     "leadership lost: make the service standby"},
    {ST(ACTIVE), EV(SUSPENDED), G(ANY), ST(NEUTRAL_ACTIVE), 0,
     "connection suspended while active: neutral, the election demotes us at its deadline"},
    {ST(ACTIVE), EV(RECONNECTED), G(ANY), ST(ACTIVE), 0,
     "reconnected"},
    {ST(ACTIVE), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), STANDBY_HOOK,
     "session lost while active: make the service standby"},
    {ST(ACTIVE), EV(CONNECTED), G(ANY), ST(STANDBY), STANDBY_HOOK,
     "new session: the leadership went with the old one; make the service standby"},
    {ST(ACTIVE), EV(CEDE), G(ANY), ST(CEDING), STANDBY_HOOK,
     "cede: make the service standby before stepping down"},
    {ST(ACTIVE), EV(FENCE_REQUEST), G(ANY), ST(STANDBY), STANDBY_HOOK,
     "a new active asks us to go standby (graceful fence)"},
    {ST(ACTIVE), EV(PAUSE), G(ANY), ST(PAUSED_ACTIVE), 0,
     "paused: stay active whatever the health says"},
    {ST(ACTIVE), EV(SHUTDOWN), G(ANY), ST(STOPPING), STANDBY_HOOK,
     "shutdown: make the service standby before leaving"},

    /* ---- neutral: the connection is suspended ---- */
    {ST(NEUTRAL), EV(HEALTHY), G(ANY), ST(NEUTRAL), 0,
     "healthy (noted; neutral)"},
    {ST(NEUTRAL), EV(UNHEALTHY), G(ANY), ST(NEUTRAL), 0,
     "unhealthy (noted; decided when the connection is back)"},
    {ST(NEUTRAL), EV(RECONNECTED), G(HEALTHY), ST(STANDBY), 0,
     "reconnected: standing again"},
    {ST(NEUTRAL), EV(RECONNECTED), G(UNHEALTHY), ST(UNHEALTHY), RESIGN,
     "reconnected while unhealthy: quit the election"},
    {ST(NEUTRAL), EV(CONNECTED), G(HEALTHY), ST(STANDBY), 0,
     "new session after expiry: the election stands again"},
    {ST(NEUTRAL), EV(CONNECTED), G(UNHEALTHY), ST(UNHEALTHY), RESIGN,
     "new session while unhealthy: quit the election"},
    {ST(NEUTRAL), EV(SUSPENDED), G(ANY), ST(NEUTRAL), 0,
     "still suspended"},
    {ST(NEUTRAL), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), 0,
     "session lost: waiting for a new one"},
    {ST(NEUTRAL), EV(DEMOTED), G(ANY), ST(NEUTRAL), 0,
     "demoted while neutral and not active: nothing to undo"},
    {ST(NEUTRAL), EV(ELECTED), G(ANY), ST(FENCING), FENCE,
     "elected (the connection works again): fence the old active first"},
    {ST(NEUTRAL), EV(FENCE_REQUEST), G(ANY), ST(NEUTRAL), 0,
     "asked to go standby: the service is not active"},
    {ST(NEUTRAL), EV(ID_CONFLICT), G(ANY), ST(CONFLICT), RESIGN,
     "another live reignd stands with this node's id: quit the election"},

    {ST(NEUTRAL_ACTIVE), EV(HEALTHY), G(ANY), ST(NEUTRAL_ACTIVE), 0,
     "healthy (noted; neutral)"},
    {ST(NEUTRAL_ACTIVE), EV(UNHEALTHY), G(ANY), ST(NEUTRAL_ACTIVE), 0,
     "unhealthy (noted; decided when the connection is back)"},
    {ST(NEUTRAL_ACTIVE), EV(RECONNECTED), G(HEALTHY), ST(ACTIVE), 0,
     "reconnected, still leading: active"},
    {ST(NEUTRAL_ACTIVE), EV(RECONNECTED), G(UNHEALTHY), ST(UNHEALTHY), STANDBY_HOOK | RESIGN,
     "reconnected while unhealthy: quit the election and keep the breadcrumb, to be fenced"},
    {ST(NEUTRAL_ACTIVE), EV(SUSPENDED), G(ANY), ST(NEUTRAL_ACTIVE), 0,
     "still suspended"},
    {ST(NEUTRAL_ACTIVE), EV(DEMOTED), G(ANY), ST(NEUTRAL), STANDBY_HOOK,
     "leadership ended while suspended: make the service standby"},
    {ST(NEUTRAL_ACTIVE), EV(SESSION_LOST), G(ANY), ST(NEUTRAL), STANDBY_HOOK,
     "session lost while active: make the service standby"},
    {ST(NEUTRAL_ACTIVE), EV(CONNECTED), G(HEALTHY), ST(STANDBY), STANDBY_HOOK,
     "new session: the leadership went with the old one; make the service standby"},
    {ST(NEUTRAL_ACTIVE), EV(CONNECTED), G(UNHEALTHY), ST(UNHEALTHY), STANDBY_HOOK | RESIGN,
     "new session while unhealthy: make the service standby and quit the election"},
    {ST(NEUTRAL_ACTIVE), EV(ACTIVE_HOOK_OK), G(ANY), ST(NEUTRAL_ACTIVE), 0,
     "become-active succeeded"},
    {ST(NEUTRAL_ACTIVE), EV(ACTIVE_HOOK_FAILED), G(ANY), ST(CEDED), STANDBY_HOOK | RETRY_LATER,
     "become-active failed: make it standby, step down and retry later"},
    {ST(NEUTRAL_ACTIVE), EV(FENCE_REQUEST), G(ANY), ST(NEUTRAL), STANDBY_HOOK,
     "a new active asks us to go standby (graceful fence)"},
    {ST(NEUTRAL_ACTIVE), EV(PAUSE), G(ANY), ST(PAUSED_ACTIVE), 0,
     "paused: stay active whatever the health says"},
    {ST(NEUTRAL_ACTIVE), EV(SHUTDOWN), G(ANY), ST(STOPPING), STANDBY_HOOK,
     "shutdown: make the service standby before leaving"},

    /* ---- cede: become-standby first, then step down ---- */
    {ST(CEDING), EV(STANDBY_HOOK_OK), G(ANY), ST(CEDED), DELETE_CRUMB | CEDE,
     "standby: remove our breadcrumb (no one needs to fence us) and step down until the new "
     "active is up or the cede delay ends"},
    {ST(CEDING), EV(STANDBY_HOOK_FAILED), G(ANY), ST(CEDED), CEDE,
     "become-standby failed: step down, keeping the breadcrumb so the next active fences us"},
    {ST(CEDING), EV(HEALTHY), G(ANY), ST(CEDING), 0, "healthy"},
    {ST(CEDING), EV(UNHEALTHY), G(ANY), ST(CEDING), 0, "unhealthy (noted; ceding)"},
    {ST(CEDING), EV(DEMOTED), G(ANY), ST(CEDING), 0,
     "demoted while ceding: become-standby is already under way"},
    {ST(CEDING), EV(SUSPENDED), G(ANY), ST(CEDING), 0, "suspended while ceding"},
    {ST(CEDING), EV(RECONNECTED), G(ANY), ST(CEDING), 0, "reconnected while ceding"},
    {ST(CEDING), EV(SESSION_LOST), G(ANY), ST(CEDING), 0, "session lost while ceding"},
    {ST(CEDING), EV(CONNECTED), G(ANY), ST(CEDING), 0, "new session while ceding"},
    {ST(CEDING), EV(ACTIVE_HOOK_OK), G(ANY), ST(CEDING), 0, "become-active finished"},
    {ST(CEDING), EV(ACTIVE_HOOK_FAILED), G(ANY), ST(CEDING), 0, "become-active failed"},
    {ST(CEDING), EV(FENCE_REQUEST), G(ANY), ST(CEDING), 0,
     "asked to go standby: become-standby is already under way"},
    {ST(CEDING), EV(SHUTDOWN), G(ANY), ST(STOPPING), 0,
     "shutdown while ceding: leave once become-standby is done"},

    {ST(CEDED), EV(REJOIN), G(ANY), ST(INITIALIZING), TAKE_HEALTH,
     "the cede ends (the new active is up, or the delay passed): stand again once healthy"},
    {ST(CEDED), EV(HEALTHY), G(ANY), ST(CEDED), 0, "healthy (noted; ceded)"},
    {ST(CEDED), EV(UNHEALTHY), G(ANY), ST(CEDED), 0, "unhealthy (noted; ceded)"},
    {ST(CEDED), EV(PAUSE), G(ANY), ST(PAUSED), 0, "paused: do not stand again"},
    {ST(CEDED), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown"},

    /* ---- paused (maintenance: no automatic failover) ---- */
    {ST(INITIALIZING), EV(PAUSE), G(ANY), ST(PAUSED), 0, "paused: do not stand"},
    {ST(UNHEALTHY), EV(PAUSE), G(ANY), ST(PAUSED), 0, "paused: do not stand"},
    {ST(STANDBY), EV(PAUSE), G(ANY), ST(PAUSED), RESIGN,
     "paused: quit the election so this node cannot be made active"},
    {ST(NEUTRAL), EV(PAUSE), G(ANY), ST(PAUSED), RESIGN,
     "paused: quit the election so this node cannot be made active"},
    {ST(PAUSED), EV(RESUME), G(HEALTHY), ST(STANDBY), JOIN,
     "resumed and healthy: stand in the election"},
    {ST(PAUSED), EV(RESUME), G(UNHEALTHY), ST(UNHEALTHY), 0,
     "resumed, not healthy: wait for a healthy check"},
    {ST(PAUSED), EV(PAUSE), G(ANY), ST(PAUSED), 0, "already paused"},
    {ST(PAUSED), EV(HEALTHY), G(ANY), ST(PAUSED), 0, "healthy (paused: noted)"},
    {ST(PAUSED), EV(UNHEALTHY), G(ANY), ST(PAUSED), 0, "unhealthy (paused: noted)"},
    {ST(PAUSED), EV(DEMOTED), G(ANY), ST(PAUSED), 0, "demoted: not standing"},
    {ST(PAUSED), EV(FENCE_REQUEST), G(ANY), ST(PAUSED), 0,
     "asked to go standby: the service is not active"},

    {ST(PAUSED_ACTIVE), EV(RESUME), G(HEALTHY), ST(ACTIVE), 0, "resumed: active"},
    {ST(PAUSED_ACTIVE), EV(RESUME), G(UNHEALTHY), ST(UNHEALTHY), STANDBY_HOOK | RESIGN,
     "resumed while unhealthy: quit the election and keep the breadcrumb, to be fenced"},
    {ST(PAUSED_ACTIVE), EV(PAUSE), G(ANY), ST(PAUSED_ACTIVE), 0, "already paused"},
    {ST(PAUSED_ACTIVE), EV(HEALTHY), G(ANY), ST(PAUSED_ACTIVE), 0, "healthy (paused: noted)"},
    {ST(PAUSED_ACTIVE), EV(UNHEALTHY), G(ANY), ST(PAUSED_ACTIVE), 0,
     "unhealthy (paused: no automatic failover)"},
    {ST(PAUSED_ACTIVE), EV(ACTIVE_HOOK_OK), G(ANY), ST(PAUSED_ACTIVE), 0,
     "become-active succeeded"},
    {ST(PAUSED_ACTIVE), EV(ACTIVE_HOOK_FAILED), G(ANY), ST(PAUSED), STANDBY_HOOK | RESIGN,
     "become-active failed while paused: make it standby and quit the election"},
    {ST(PAUSED_ACTIVE), EV(DEMOTED), G(ANY), ST(PAUSED), STANDBY_HOOK | RESIGN,
     "leadership lost while paused: make the service standby, do not stand again"},
    {ST(PAUSED_ACTIVE), EV(SESSION_LOST), G(ANY), ST(PAUSED), STANDBY_HOOK | RESIGN,
     "session lost while paused: make the service standby, do not stand again"},
    {ST(PAUSED_ACTIVE), EV(CONNECTED), G(ANY), ST(PAUSED), STANDBY_HOOK | RESIGN,
     "new session while paused: the leadership went with the old one; make it standby"},
    {ST(PAUSED_ACTIVE), EV(SUSPENDED), G(ANY), ST(PAUSED_ACTIVE), 0,
     "suspended while paused: the election demotes us at its deadline"},
    {ST(PAUSED_ACTIVE), EV(RECONNECTED), G(ANY), ST(PAUSED_ACTIVE), 0, "reconnected"},
    {ST(PAUSED_ACTIVE), EV(FENCE_REQUEST), G(ANY), ST(PAUSED), STANDBY_HOOK | RESIGN,
     "a new active asks us to go standby (graceful fence)"},
    {ST(PAUSED_ACTIVE), EV(SHUTDOWN), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "shutdown while paused: the service is left running as it is (the pause keeps reignd "
     "out of its way); quit the election, keep the breadcrumb so that whoever takes over "
     "after the resume fences it"},

    /* ---- shutdown ---- */
    {ST(INITIALIZING), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown"},
    {ST(UNHEALTHY), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown"},
    {ST(PAUSED), EV(SHUTDOWN), G(ANY), ST(STOPPED), EXIT, "shutdown"},
    {ST(STANDBY), EV(SHUTDOWN), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "shutdown: quit the election"},
    {ST(NEUTRAL), EV(SHUTDOWN), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "shutdown: quit the election"},
    {ST(FENCING), EV(SHUTDOWN), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "shutdown while fencing: the service never became active"},
    {ST(CLAIMING), EV(SHUTDOWN), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "shutdown while claiming: the service never became active"},
    {ST(STOPPING), EV(STANDBY_HOOK_OK), G(ANY), ST(STOPPED), DELETE_CRUMB | RESIGN | EXIT,
     "standby: remove our breadcrumb (no one needs to fence us) and leave"},
    {ST(STOPPING), EV(STANDBY_HOOK_FAILED), G(ANY), ST(STOPPED), RESIGN | EXIT,
     "become-standby failed: leave, keeping the breadcrumb so the next active fences us"},
    {ST(STOPPING), EV(FENCE_REQUEST), G(ANY), ST(STOPPING), 0,
     "asked to go standby: become-standby is already under way"},
    {ST(STOPPING), EV(SHUTDOWN), G(ANY), ST(STOPPING), 0, "already stopping"},
    {ST(STOPPED), EV(SHUTDOWN), G(ANY), ST(STOPPED), 0, "already stopped"},
};
/* clang-format on */

/*
 * Events that may arrive after the transition that made them moot: the
 * results of work started in an earlier state (a hook, a fence, a breadcrumb
 * write), and connection or election news in states that do not stand.  Kept
 * out of the table so that each row there is a decision.
 */
static int moot(reignd_state s, reignd_event e)
{
    int standing = !(s == REIGND_ST_STARTING || s == REIGND_ST_PROBING ||
                     s == REIGND_ST_PAUSED_UNKNOWN || s == REIGND_ST_INITIALIZING ||
                     s == REIGND_ST_UNHEALTHY || s == REIGND_ST_CONFLICT || s == REIGND_ST_CEDED ||
                     s == REIGND_ST_PAUSED || s == REIGND_ST_STOPPING || s == REIGND_ST_STOPPED);
    switch (e) {
    case REIGND_EV_START:
    case REIGND_EV_START_PAUSED: /* once, in STARTING */
    case REIGND_EV_ID_CONFLICT:  /* a check's result, acted on while standby only */
    case REIGND_EV_ID_CLEAR:
    case REIGND_EV_REJOIN: /* a cede's end, after something else ended it */
        return 1;
    case REIGND_EV_ACTIVE_HOOK_OK:
    case REIGND_EV_ACTIVE_HOOK_FAILED:
    case REIGND_EV_STANDBY_HOOK_OK:
    case REIGND_EV_STANDBY_HOOK_FAILED:
    case REIGND_EV_FENCE_OK:
    case REIGND_EV_FENCE_FAILED:
    case REIGND_EV_BREADCRUMB_OK:
    case REIGND_EV_BREADCRUMB_FAILED:
        return 1;
    case REIGND_EV_SUSPENDED:
    case REIGND_EV_RECONNECTED:
    case REIGND_EV_SESSION_LOST:
    case REIGND_EV_CONNECTED:
    case REIGND_EV_DEMOTED:
        return !standing;
    case REIGND_EV_HEALTHY:
    case REIGND_EV_UNHEALTHY:
        return s == REIGND_ST_STOPPING || s == REIGND_ST_STOPPED;
    case REIGND_EV_FENCE_REQUEST:
        /* not active: a graceful fence has nothing to do */
        return !reignd_state_is_active(s);
    default:
        return 0;
    }
}

static int guard_holds(reignd_guard g, int healthy)
{
    return g == REIGND_G_ANY || (g == REIGND_G_HEALTHY) == !!healthy;
}

/* Why an operator's event is refused, in words for `reign ctl`. */
static const char *refusal(reignd_state state, reignd_event event)
{
    switch (event) {
    case REIGND_EV_CEDE:
        if (state == REIGND_ST_NEUTRAL_ACTIVE)
            return "the connection to the store is suspended; try again when it is back";
        if (state == REIGND_ST_PAUSED_ACTIVE)
            return "the service is paused; resume it first";
        if (state == REIGND_ST_CEDING || state == REIGND_ST_STOPPING)
            return "the service is already stepping down";
        return "this node is not active for the service";
    case REIGND_EV_PAUSE:
        return "the service is changing state (starting, fencing, claiming, ceding or "
               "stopping); the pause is taken once it is done";
    case REIGND_EV_RESUME:
        return "the service is not paused";
    default:
        return "not allowed in this state";
    }
}

reignd_step reignd_fsm_step(reignd_state state, reignd_event event, int healthy)
{
    reignd_step r = {state, 0, NULL, 0, 0};
    if ((unsigned)state >= REIGND_ST__COUNT || (unsigned)event >= REIGND_EV__COUNT) {
        r.refused = 1;
        r.reason = "unknown state or event";
        return r;
    }
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        const reignd_transition *t = &table[i];
        if (t->from == state && t->event == event && guard_holds(t->guard, healthy)) {
            r.to = t->to;
            r.actions = t->actions;
            r.reason = t->reason;
            return r;
        }
    }
    if (moot(state, event)) {
        r.moot = 1;
        r.reason = "moot: the state it was meant for is already left";
        return r;
    }
    r.refused = 1;
    r.reason = refusal(state, event);
    return r;
}

const reignd_transition *reignd_fsm_table(size_t *n)
{
    *n = sizeof(table) / sizeof(table[0]);
    return table;
}

static const char *const state_names[] = {
#define REIGND__ST_NAME(name, str) str,
    REIGND_STATES(REIGND__ST_NAME)
#undef REIGND__ST_NAME
};

static const char *const event_names[] = {
#define REIGND__EV_NAME(name, str) str,
    REIGND_EVENTS(REIGND__EV_NAME)
#undef REIGND__EV_NAME
};

static const char *const action_names[REIGND_A__COUNT] = {
    "become_standby", "delete_breadcrumb", "resign",        "cede", "retry_later", "join",
    "fence",          "write_breadcrumb",  "become_active", "exit", "take_health",
};

const char *reignd_state_name(reignd_state s)
{
    return (unsigned)s < REIGND_ST__COUNT ? state_names[s] : "?";
}

const char *reignd_event_name(reignd_event e)
{
    return (unsigned)e < REIGND_EV__COUNT ? event_names[e] : "?";
}

const char *reignd_action_name(unsigned action)
{
    for (unsigned i = 0; i < REIGND_A__COUNT; i++)
        if (action == 1u << i)
            return action_names[i];
    return "?";
}

void reignd_actions_format(unsigned actions, char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; i < REIGND_A__COUNT; i++) {
        if (!(actions & (1u << i)))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", action_names[i]);
        if (n < 0 || (size_t)n >= len - used)
            return; /* truncated, still terminated */
        used += (size_t)n;
    }
}

int reignd_state_is_active(reignd_state s)
{
    return s == REIGND_ST_ACTIVE || s == REIGND_ST_NEUTRAL_ACTIVE || s == REIGND_ST_PAUSED_ACTIVE ||
           s == REIGND_ST_CEDING || s == REIGND_ST_STOPPING;
}

int reignd_state_is_paused(reignd_state s)
{
    return s == REIGND_ST_PAUSED || s == REIGND_ST_PAUSED_ACTIVE || s == REIGND_ST_PAUSED_UNKNOWN;
}

static const char *guard_label(reignd_guard g)
{
    return g == REIGND_G_HEALTHY ? " [healthy]" : g == REIGND_G_UNHEALTHY ? " [unhealthy]" : "";
}

static void dot_row(const void *ctx, size_t i, fsm_dot_edge *out)
{
    static char acts[160];
    const reignd_transition *t = &table[i];
    (void)ctx;
    reignd_actions_format(t->actions, acts, sizeof(acts));
    *out = (fsm_dot_edge){t->from, t->to, event_names[t->event], guard_label(t->guard), acts};
}

static int dot_bold(unsigned s)
{
    return reignd_state_is_active((reignd_state)s);
}

void reignd_fsm_print_dot(FILE *f)
{
    fsm_dot_graph g = {
        "reignd", state_names, REIGND_ST__COUNT, dot_bold, sizeof(table) / sizeof(table[0]),
        dot_row,  NULL};
    fsm_dot_print(f, &g);
}
