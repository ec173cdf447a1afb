/*
 * election_zk_fsm.h - the ZooKeeper candidate's state machine, as a table.
 *
 * Pure: reign__zke_fsm_step() maps (state, input, facts) to a new state,
 * the events to emit, the request the new state makes and a reason, from
 * one static const table (election_zk_fsm.c; rows, actions and guards of
 * election_fsm.h).  It does no I/O and includes nothing of ZooKeeper.
 * election_zk.c turns ZooKeeper's results and events into inputs, logs each
 * step's reason at debug, carries out the actions in the order of their
 * bits, then sends the row's request.  What a state reads while it stays
 * (a predecessor's exists, the leader's candidate node, the watches) is
 * the handlers' part of turning results into inputs.  A pair the table
 * does not name is refused: the state stays and no request is made.
 *
 * The rules it encodes:
 *  - LEADER is entered only by a claim proved in this session (CLAIMED)
 *    while the session's proof is fresh; with a stale proof it checks again;
 *  - every exit from a leading state (LEADER, LEADER_CHECKING) emits one
 *    DEMOTED, at once or (from an API call) on the next loop turn; only a
 *    free ends a leadership silently, and nothing is emitted after a free;
 *  - a session's end, its expiry or the client's close leaves every state
 *    that is not terminal: a new session restarts the attempt (SETUP);
 *  - handing over and taking over are states of their own, not flags: the
 *    leader that hands its leader node to an outranking candidate is
 *    demoted (HANDING_OVER) until that one takes the node over or leaves.
 */
#ifndef REIGN_ELECTION_ZK_FSM_H
#define REIGN_ELECTION_ZK_FSM_H

#include <stddef.h>

#include "election_fsm.h"

#define REIGN__ZKE_STATES(XX)                                                                      \
    XX(NOSESSION, "nosession")             /* no session: CONNECTED starts us */                   \
    XX(SETUP, "setup")                     /* reading or making the election node */               \
    XX(CREATING, "creating")               /* making our candidate node (or the lock) */           \
    XX(CHECKING, "checking")               /* listing the candidates, finding our place */         \
    XX(WAITING, "waiting")                 /* behind a predecessor, or the lock is held */         \
    XX(OBSERVING, "observing")             /* an observer: follows the leader only */              \
    XX(CONTENDING, "contending")           /* first in line; someone holds the leader node */      \
    XX(HANDING_OVER, "handing_over")       /* demoted; our leader node names the next one */       \
    XX(CLAIMING, "claiming")               /* the claim's multi is in flight */                    \
    XX(TAKING_OVER, "taking_over")         /* handed to us: the takeover's multi is in flight */   \
    XX(LEADER, "leader")                   /* leading */                                           \
    XX(LEADER_CHECKING, "leader_checking") /* leading, looking at the candidates again */          \
    XX(DEMOTED, "demoted")                 /* demoted locally (suspended, stalled): look again */  \
    XX(PAUSED, "paused")                   /* ceded, or our node was deleted: stand later */       \
    XX(RESIGNING, "resigning")             /* deleting our node; then LEFT */                      \
    XX(LEFT, "left")                       /* resigned or closed: for good */                      \
    XX(FAILED, "failed")                   /* an error retrying cannot cure (ERROR emitted) */     \
    XX(FREED, "freed")                     /* freed by the application: nothing more happens */

typedef enum reign__zke_state {
#define REIGN__ZKE_ST_ENUM(name, str) REIGN__ZKE_##name,
    REIGN__ZKE_STATES(REIGN__ZKE_ST_ENUM)
#undef REIGN__ZKE_ST_ENUM
        REIGN__ZKE_ST__COUNT
} reign__zke_state;

#define REIGN__ZKE_INPUTS(XX)                                                                      \
    XX(START, "start")                       /* stand from the top (timer, new session, ...) */    \
    XX(NO_SESSION, "no_session")             /* a request failed: the session is gone */           \
    XX(RETRY, "retry")                       /* a transient error: again after a while */          \
    XX(ERROR, "error")                       /* an error that retrying cannot cure */              \
    XX(COLD, "cold")                         /* a new election? one multi makes and claims it */   \
    XX(CREATE, "create")                     /* the election is there (or the lock is free) */     \
    XX(CREATE_UNKNOWN, "create_unknown")     /* a create's answer was lost: look for our node */   \
    XX(CHECK, "check")                       /* look at the candidates (again) */                  \
    XX(BEHIND, "behind")                     /* our predecessor is alive: wait for it */           \
    XX(LOCK_HELD, "lock_held")               /* another session holds the lock */                  \
    XX(OBSERVE, "observe")                   /* an observer's setup is done */                     \
    XX(FIRST, "first")                       /* first in line (or the lock is ours): claim */      \
    XX(LEADER_NODE_HELD, "leader_node_held") /* the leader node is someone else's */               \
    XX(HANDED_TO_US, "handed_to_us")         /* the leader node names us next: take it over */     \
    XX(CLAIMED, "claimed")                   /* the claim (or the takeover) landed */              \
    XX(STILL_LEADING, "still_leading")       /* a look while leading found us still leading */     \
    XX(OUTRANKED, "outranked")               /* a candidate that outranks us asks for the lead */  \
    XX(HANDOVER_ENDED, "handover_ended")     /* the node we handed to took over, or left */        \
    XX(NODE_GONE, "node_gone")               /* our candidate node was deleted */                  \
    XX(ELECTION_GONE, "election_gone")       /* the election node itself was deleted */            \
    XX(SUSPENDED, "suspended")               /* connection lost, suspend policy: immediate */      \
    XX(DEADLINE, "deadline")                 /* leading past the proof's bound, connected */       \
    XX(DEADLINE_SUSPENDED, "deadline_suspended") /* ... and disconnected */                        \
    XX(SESSION_LOST, "session_lost")             /* the session expired (or its deadline) */       \
    XX(NEW_SESSION, "new_session")               /* a new session: nothing old is ours */          \
    XX(CLOSED, "closed")                         /* the client was closed */                       \
    XX(RESIGN, "resign")                         /* the application resigns */                     \
    XX(CEDE, "cede")                             /* the application cedes the lead */              \
    XX(RESIGNED, "resigned")                     /* our node's delete is answered */               \
    XX(FREE, "free")                             /* the application frees the election */

typedef enum reign__zke_input {
#define REIGN__ZKE_IN_ENUM(name, str) REIGN__ZKE_IN_##name,
    REIGN__ZKE_INPUTS(REIGN__ZKE_IN_ENUM)
#undef REIGN__ZKE_IN_ENUM
        REIGN__ZKE_IN__COUNT
} reign__zke_input;

/* What a step asks election_zk.c to send (a row's request), and where it may be made. */
#define REIGN__ZKE_REQUESTS(XX)                                                                    \
    XX(NONE, "none", 0)                                                                            \
    XX(SETUP, "setup", S(SETUP))          /* read the election node (or try COLD) */               \
    XX(COLD, "cold", S(SETUP))            /* make the election, its nodes and ours; claim */       \
    XX(CREATE, "create", S(CREATING))     /* make our candidate node (or the lock) */              \
    XX(FIND_OWN, "find_own", S(CREATING)) /* list the candidates for our guid */                   \
    XX(LIST, "list", S(CHECKING) | S(LEADER_CHECKING)) /* list them (lock: read the lock) */       \
    XX(READ_LEADER, "read_leader", S(CONTENDING) | S(HANDING_OVER)) /* read, watch it */           \
    XX(CLAIM, "claim", S(CLAIMING))                                 /* the claim's multi */        \
    XX(TAKE_OVER, "take_over", S(TAKING_OVER))  /* the takeover's multi, at the version seen */    \
    XX(HAND_OVER, "hand_over", S(HANDING_OVER)) /* rewrite the leader node to name the next */     \
    XX(RETRY, "retry", S(SETUP) | S(CHECKING) | S(LEADER_CHECKING)) /* again in a second */        \
    XX(PAUSE, "pause", S(PAUSED))                  /* stand again after the cede delay */          \
    XX(FOLLOW, "follow", S(OBSERVING) | S(PAUSED)) /* follow the leader, if asked to */            \
    XX(RENEW, "renew", S(DEMOTED))                 /* let the leader node go, look again */

typedef enum reign__zke_request {
#define REIGN__ZKE_RQ_ENUM(name, str, states) REIGN__ZKE_RQ_##name,
    REIGN__ZKE_REQUESTS(REIGN__ZKE_RQ_ENUM)
#undef REIGN__ZKE_RQ_ENUM
        REIGN__ZKE_RQ__COUNT
} reign__zke_request;

/* The table, with the rows, actions, facts and guards of election_fsm.h. */
extern const reign__efsm reign__zke_machine;

static inline reign__efsm_step reign__zke_fsm_step(reign__zke_state s, reign__zke_input in,
                                                   unsigned facts)
{
    return reign__efsm_next(&reign__zke_machine, s, in, facts);
}

/* Why a DEMOTED this input causes is reported to the application. */
reign_demote_reason reign__zke_demote_reason(reign__zke_input input);

/* 1 in LEADER and LEADER_CHECKING. */
int reign__zke_leading(reign__zke_state s);
/* 1 in CONTENDING and HANDING_OVER: the leader node is watched. */
int reign__zke_contending(reign__zke_state s);

#endif
