/*
 * election_lease_fsm.h - the SQL lease candidate's state machine, as a
 * table (election_lease_fsm.c; rows, actions and guards of election_fsm.h).
 *
 * Pure, like the ZooKeeper candidate's (election_zk_fsm.h): election_lease.c
 * turns the worker's answers, the timers and the connection's news into
 * inputs, logs each step's reason at debug and carries out the actions;
 * a pair the table does not name is refused.  The rules:
 *  - LEADER is entered only by a claim (insert, take, renewal of our own
 *    lease) whose answer came within the lease it won;
 *  - every exit from LEADER emits one DEMOTED (a free, none); past the
 *    lease's bound, deposed, or suspended with the immediate policy, the
 *    candidate stands again with a fresh guid (or, deposed, after a delay);
 *  - a lost session (the store file deleted or replaced) takes every
 *    candidate that stands back to IDLE: the new session stands it again;
 *  - the client's close leaves every state; nothing is emitted after a free.
 */
#ifndef REIGN_ELECTION_LEASE_FSM_H
#define REIGN_ELECTION_LEASE_FSM_H

#include "election_fsm.h"

#define REIGN__LEASE_STATES(XX)                                                                    \
    XX(IDLE, "idle")           /* no connection yet */                                             \
    XX(LOOKING, "looking")     /* reading the row, or waiting to read it again */                  \
    XX(CLAIMING, "claiming")   /* an insert, take or renewal of our lease is out */                \
    XX(LEADER, "leader")       /* leading: renewing, valid until the lease's bound */              \
    XX(PAUSED, "paused")       /* ceded or deposed: stand again after the delay */                 \
    XX(RESIGNING, "resigning") /* releasing the row; then LEFT */                                  \
    XX(LEFT, "left")           /* resigned or closed: for good */                                  \
    XX(FREED, "freed")         /* freed by the application: nothing more happens */

typedef enum reign__lease_state {
#define REIGN__LEASE_ST_ENUM(name, str) REIGN__LEASE_##name,
    REIGN__LEASE_STATES(REIGN__LEASE_ST_ENUM)
#undef REIGN__LEASE_ST_ENUM
        REIGN__LEASE_ST__COUNT
} reign__lease_state;

#define REIGN__LEASE_INPUTS(XX)                                                                    \
    XX(STAND, "stand")               /* stand (again) with a fresh guid */                         \
    XX(NO_GUID, "no_guid")           /* no randomness for the guid: ERROR was emitted */           \
    XX(LOOK, "look")                 /* read the row (again) */                                    \
    XX(CLAIM, "claim")               /* the row is missing, expired or ours: claim it */           \
    XX(CLAIM_FAILED, "claim_failed") /* the claim could not be sent, or failed */                  \
    XX(CLAIMED, "claimed")           /* the claim succeeded */                                     \
    XX(DEPOSED, "deposed")           /* a renewal found the row no longer ours */                  \
    XX(HANDOFF, "handoff")           /* the row is designated to another: hand it over */          \
    XX(STALLED, "stalled")           /* past the lease's bound, the store reachable */             \
    XX(LOST, "lost")                 /* past the lease's bound, the store unreachable */           \
    XX(SUSPENDED, "suspended")       /* connection lost, suspend policy: immediate */              \
    XX(SESSION_LOST, "session_lost") /* the store is gone (SQLite: file replaced): stand anew */   \
    XX(CLOSED, "closed")             /* the client was closed */                                   \
    XX(RESIGN, "resign")             /* the application resigns */                                 \
    XX(CEDE, "cede")                 /* the application cedes the lead */                          \
    XX(RELEASED, "released")         /* the resign's release is answered (or owed LEFT due) */     \
    XX(FREE, "free")                 /* the application frees the election */

typedef enum reign__lease_input {
#define REIGN__LEASE_IN_ENUM(name, str) REIGN__LEASE_IN_##name,
    REIGN__LEASE_INPUTS(REIGN__LEASE_IN_ENUM)
#undef REIGN__LEASE_IN_ENUM
        REIGN__LEASE_IN__COUNT
} reign__lease_input;

/* What a step asks election_lease.c to do (a row's request), and where it may be made. */
#define REIGN__LEASE_REQUESTS(XX)                                                                  \
    XX(NONE, "none", 0)                                                                            \
    XX(STAND, "stand", S(LOOKING))  /* a fresh guid, the guardian told, then read */               \
    XX(READ, "read", S(LOOKING))    /* read the row (unless a read is out) */                      \
    XX(CLAIM, "claim", S(CLAIMING)) /* insert, take or renew the row */                            \
    XX(POLL, "poll", S(LOOKING))    /* read again after the poll period */                         \
    XX(GIVE_BACK, "give_back", S(LOOKING) | S(CLAIMING)) /* release the term, stand again */       \
    XX(LET_IN, "let_in", S(PAUSED))       /* release as deposed, stand after the delay */          \
    XX(HAND_OVER, "hand_over", S(PAUSED)) /* release under the designation, stand again */

typedef enum reign__lease_request {
#define REIGN__LEASE_RQ_ENUM(name, str, states) REIGN__LEASE_RQ_##name,
    REIGN__LEASE_REQUESTS(REIGN__LEASE_RQ_ENUM)
#undef REIGN__LEASE_RQ_ENUM
        REIGN__LEASE_RQ__COUNT
} reign__lease_request;

extern const reign__efsm reign__lease_machine;

static inline reign__efsm_step reign__lease_fsm_step(reign__lease_state s, reign__lease_input in,
                                                     unsigned facts)
{
    return reign__efsm_next(&reign__lease_machine, s, in, facts);
}

#endif
