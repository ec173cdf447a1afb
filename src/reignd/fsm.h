/*
 * fsm.h - the state machine of one service managed by reignd (HDFS's ZKFC).
 *
 * Pure: reignd_fsm_step() maps (state, event, what the service knows of its
 * health) to a new state, a set of actions and a reason, from one static
 * const table (fsm.c).  It does no I/O; service_core.c steps it and logs the
 * reason, failover.c carries the actions out in the order of their bits
 * below.  A pair the table does not name is refused: the state stays and the
 * caller logs the refusal (an operator's command gets the reason back).
 *
 * The rules it encodes (HDFS's ZKFC, with Pacemaker's probe at start):
 *  - a daemon that starts knows nothing of its service: an earlier run may
 *    have left it active.  Before it stands or answers a graceful fence as
 *    done it runs become-standby once (PROBING), unless the election is
 *    paused: then it touches nothing (PAUSED_UNKNOWN) until resumed;
 *  - a service stands in the election only after its first healthy check,
 *    and not while another live daemon stands with the same node id
 *    (CONFLICT: node ids must be unique, the breadcrumb names a node by it);
 *  - unhealthy: it quits the election; an active one runs become-standby but
 *    leaves its breadcrumb, so the next winner fences it;
 *  - a clean shutdown or a cede runs become-standby first and removes the
 *    breadcrumb only once that succeeded, so no one fences it (a shutdown
 *    while paused touches nothing, below);
 *  - the winner fences the old active named by the breadcrumb (FENCING),
 *    writes its own breadcrumb (CLAIMING), and only then runs become-active;
 *    if fencing or the write fails it steps down and stands again later;
 *  - every loss of an active leadership runs become-standby, once;
 *  - neutral while the connection is suspended: health changes are not acted
 *    on until the connection is back (or the session is lost); a demotion
 *    still runs become-standby, because that leadership really ended;
 *  - after a session expiry the election stands again by itself (libreign),
 *    unless the service became unhealthy meanwhile;
 *  - a cede (or the old active of a graceful failover) stays out of the
 *    election (CEDED) until the new active is up or the delay ends; so does
 *    a node whose takeover failed (fence, breadcrumb, become-active), for
 *    the retry delay (ZKFC's sleep before it rejoins);
 *  - paused: no automatic decision (health is ignored, an active stays
 *    active, a standby leaves the election so it cannot be elected).  The
 *    pause belongs to the election, kept in the store (breadcrumb.h):
 *    PAUSE and RESUME come from watching it, on every node.  A daemon
 *    stopped while paused leaves its service running as it is (Patroni's
 *    pause: maintenance with the controller out of the way) and its
 *    breadcrumb in place, so whoever is elected after the resume fences it;
 *    one started while paused touches nothing (PAUSED_UNKNOWN).
 */
#ifndef REIGND_FSM_H
#define REIGND_FSM_H

#include <stdint.h>
#include <stdio.h>

#define REIGND_STATES(XX)                                                                          \
    XX(STARTING, "starting")             /* the daemon starts: is the election paused? */          \
    XX(PROBING, "probing")               /* start-up: become-standby runs, then we may stand */    \
    XX(PAUSED_UNKNOWN, "paused_unknown") /* started while paused: the service's role unknown */    \
    XX(INITIALIZING, "initializing")     /* no healthy check yet: not standing */                  \
    XX(UNHEALTHY, "unhealthy")           /* not standing: the service is not healthy */            \
    XX(STANDBY, "standby")               /* standing; someone else leads */                        \
    XX(FENCING, "fencing")               /* elected: fencing the old active of the breadcrumb */   \
    XX(CLAIMING, "claiming")             /* elected and fenced: writing our breadcrumb */          \
    XX(ACTIVE, "active")                 /* leading; become-active has run (or is queued) */       \
    XX(NEUTRAL, "neutral")               /* connection suspended while standing */                 \
    XX(NEUTRAL_ACTIVE, "neutral_active") /* connection suspended while active */                   \
    XX(CEDING, "ceding")                 /* cede: become-standby runs, then we step down */        \
    XX(CEDED, "ceded")                   /* stepped down: out of the election for a while */       \
    XX(CONFLICT, "conflict")             /* another live daemon stands with our node id */         \
    XX(PAUSED, "paused")                 /* maintenance, not standing */                           \
    XX(PAUSED_ACTIVE, "paused_active")   /* maintenance while active: health ignored */            \
    XX(STOPPING, "stopping")             /* clean shutdown: become-standby runs, then we leave */  \
    XX(STOPPED, "stopped")               /* left for good */

typedef enum reignd_state {
#define REIGND__ST_ENUM(name, str) REIGND_ST_##name,
    REIGND_STATES(REIGND__ST_ENUM)
#undef REIGND__ST_ENUM
        REIGND_ST__COUNT
} reignd_state;

#define REIGND_EVENTS(XX)                                                                          \
    XX(HEALTHY, "healthy")                     /* health check: healthy */                         \
    XX(UNHEALTHY, "unhealthy")                 /* unhealthy, not responding or monitor failed */   \
    XX(ELECTED, "elected")                     /* the election made us leader */                   \
    XX(DEMOTED, "demoted")                     /* the election ended our leadership */             \
    XX(FENCE_OK, "fence_ok")                   /* old active fenced, or none to fence */           \
    XX(FENCE_FAILED, "fence_failed")           /* every fence method failed (or the read did) */   \
    XX(BREADCRUMB_OK, "breadcrumb_ok")         /* our breadcrumb is written */                     \
    XX(BREADCRUMB_FAILED, "breadcrumb_failed") /* the compare-and-set or the write failed */       \
    XX(ACTIVE_HOOK_OK, "active_hook_ok")       /* become-active exited 0 */                        \
    XX(ACTIVE_HOOK_FAILED, "active_hook_failed")                                                   \
    XX(STANDBY_HOOK_OK, "standby_hook_ok") /* become-standby exited 0 */                           \
    XX(STANDBY_HOOK_FAILED, "standby_hook_failed")                                                 \
    XX(SUSPENDED, "suspended")         /* connection to the store lost; session may live */        \
    XX(RECONNECTED, "reconnected")     /* the same session is back */                              \
    XX(SESSION_LOST, "session_lost")   /* the session expired */                                   \
    XX(CONNECTED, "connected")         /* a new session (the first, or after a loss) */            \
    XX(CEDE, "cede")                   /* operator: step down (reign ctl cede, failover) */        \
    XX(FENCE_REQUEST, "fence_request") /* a peer's graceful fence: go standby */                   \
    XX(PAUSE, "pause")                 /* the election's pause appeared in the store */            \
    XX(RESUME, "resume")               /* the election's pause went from the store */              \
    XX(SHUTDOWN, "shutdown")           /* SIGTERM: leave cleanly */                                \
    XX(START, "start")                 /* the daemon started; the election is not paused */        \
    XX(START_PAUSED, "start_paused")   /* the daemon started; the election is paused */            \
    XX(ID_CONFLICT, "id_conflict")     /* a live daemon with our node id stands before us */       \
    XX(ID_CLEAR, "id_clear")           /* no other live daemon with our node id */                 \
    XX(REJOIN, "rejoin")               /* a cede ends: its delay passed, or the new active is up */

typedef enum reignd_event {
#define REIGND__EV_ENUM(name, str) REIGND_EV_##name,
    REIGND_EVENTS(REIGND__EV_ENUM)
#undef REIGND__EV_ENUM
        REIGND_EV__COUNT
} reignd_event;

/*
 * Actions, carried out by failover.c in this order (lowest bit first) when
 * several come from one transition.  become-standby is queued before the
 * election is left, the breadcrumb deleted before the election node (one
 * session: ZooKeeper applies them in that order, so the next winner never
 * reads a breadcrumb we meant to remove).
 */
enum {
    REIGND_A_BECOME_STANDBY = 1u << 0,    /* queue the become-standby hook (and notify) */
    REIGND_A_DELETE_BREADCRUMB = 1u << 1, /* delete our breadcrumb (CAS on what we wrote) */
    REIGND_A_RESIGN = 1u << 2,            /* leave the election */
    REIGND_A_CEDE = 1u << 3,              /* leave the election; REJOIN after the cede's delay */
    REIGND_A_RETRY_LATER = 1u << 4,       /* as CEDE, with the retry delay (a failed takeover) */
    REIGND_A_JOIN = 1u << 5,              /* stand, unless our node id is taken (ID_CONFLICT) */
    REIGND_A_FENCE = 1u << 6,             /* read the breadcrumb, fence an old active in it */
    REIGND_A_WRITE_BREADCRUMB = 1u << 7,  /* write ours: id, addresses, term, token */
    REIGND_A_BECOME_ACTIVE = 1u << 8,     /* queue the become-active hook (and notify) */
    REIGND_A_EXIT = 1u << 9,              /* the service is done (shutdown) */
    REIGND_A_TAKE_HEALTH = 1u << 10,      /* act on the last health verdict (post it again) */
};
#define REIGND_A__COUNT 11

/* Guards on what the service last knew of its health. */
typedef enum reignd_guard { REIGND_G_ANY = 0, REIGND_G_HEALTHY, REIGND_G_UNHEALTHY } reignd_guard;

typedef struct reignd_transition {
    reignd_state from;
    reignd_event event;
    reignd_guard guard;
    reignd_state to;
    unsigned actions;
    const char *reason; /* logged when taken */
} reignd_transition;

/* The outcome of one step. */
typedef struct reignd_step {
    reignd_state to;    /* the new state (the old one if refused or moot) */
    unsigned actions;   /* REIGND_A_* */
    const char *reason; /* why (a refusal's reason if refused) */
    int refused;        /* 1: not allowed in this state; nothing changes */
    int moot;           /* 1: a late result or news for a state already left; ignored */
} reignd_step;

/*
 * One step.  `healthy` is whether the last health check said healthy (the
 * guards of the table look at it).
 */
reignd_step reignd_fsm_step(reignd_state state, reignd_event event, int healthy);

/* The table itself, for tests and --print-fsm. */
const reignd_transition *reignd_fsm_table(size_t *n);

const char *reignd_state_name(reignd_state s);
const char *reignd_event_name(reignd_event e);
/* The name of one action bit ("become_standby"), or "?" */
const char *reignd_action_name(unsigned action);
/* Writes the names of `actions` separated by '+' into buf ("" for none). */
void reignd_actions_format(unsigned actions, char *buf, size_t len);

/* 1 if this node made its service active and it is (or may be) still so. */
int reignd_state_is_active(reignd_state s);

/* 1 in the states that obey a pause of the election (PAUSED*). */
int reignd_state_is_paused(reignd_state s);

/* Prints the table as a graphviz digraph (reignd --print-fsm). */
void reignd_fsm_print_dot(FILE *f);

#endif
