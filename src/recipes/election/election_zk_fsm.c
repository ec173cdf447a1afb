/*
 * election_zk_fsm.c - the transition table of a ZooKeeper candidate (see
 * election_zk_fsm.h for the rules).
 *
 * One row per (state, input[, guard]); the first row that matches wins.  A
 * row that keeps the state and does nothing still says why, and lets the
 * caller go on with its request (a leader re-arming its watches, a
 * contender reading the leader node again).  Pairs with no row are refused.
 */
#include "election_zk_fsm.h"

#define ST(x) REIGN__ZKE_##x
#define IN(x) REIGN__ZKE_IN_##x
#define G(x)  REIGN__EFSM_G_##x

#define DEMOTE      REIGN__EFSM_A_DEMOTE
#define DEMOTE_LATE REIGN__EFSM_A_DEMOTE_LATER
#define DROP_LEAD   REIGN__EFSM_A_DROP_LEAD
#define ELECT       REIGN__EFSM_A_ELECT
#define EMIT_LEFT   REIGN__EFSM_A_EMIT_LEFT

/* clang-format off */
/* Rows that several states share, written once per state below. */
#define R(from, in, g, to, a, why) {ST(from), IN(in), G(g), ST(to), (a), 0, (why)}
/* ... and a row that makes a request in its new state */
#define RQ(from, in, g, to, a, q, why)                                                             \
    {ST(from), IN(in), G(g), ST(to), (a), REIGN__ZKE_RQ_##q, (why)}

/* The states that stand (or try to) without leading. */
#define STANDING(XX)                                                                               \
    XX(NOSESSION) XX(SETUP) XX(CREATING) XX(CHECKING) XX(WAITING) XX(OBSERVING) XX(CONTENDING)     \
    XX(HANDING_OVER) XX(CLAIMING) XX(TAKING_OVER) XX(DEMOTED) XX(PAUSED)

/* ... and those a new session sends back to the start (PAUSED waits for its timer). */
#define RESTARTED(XX)                                                                              \
    XX(NOSESSION) XX(SETUP) XX(CREATING) XX(CHECKING) XX(WAITING) XX(OBSERVING) XX(CONTENDING)     \
    XX(HANDING_OVER) XX(CLAIMING) XX(TAKING_OVER) XX(DEMOTED)

#define ROWS_RESTARTED(s)                                                                          \
    RQ(s, NEW_SESSION, ANY, SETUP, 0, SETUP, "a new session: nothing of the old one is ours"),

#define LEADING(XX) XX(LEADER) XX(LEADER_CHECKING)

/* How every leadership ends, whichever leading state it is in. */
#define ROWS_LEADING(s)                                                                            \
    RQ(s, START, ANY, SETUP, DEMOTE, SETUP, "standing from the top ends the leadership"),          \
    R(s, NO_SESSION, ANY, NOSESSION, DEMOTE, "the session is gone: demoted"),                      \
    R(s, ERROR, ANY, FAILED, DEMOTE, "an error retrying cannot cure: demoted"),                    \
    RQ(s, NODE_GONE, ANY, PAUSED, DEMOTE, PAUSE,                                                   \
       "our node was deleted (reign cede, an operator): demoted; stand again after the delay"),     \
    RQ(s, NEW_SESSION, ANY, SETUP, DEMOTE, SETUP,                                                  \
       "a new session: the leadership went with the old one"),                                     \
    R(s, CLOSED, ANY, LEFT, DEMOTE, "the client was closed: demoted"),                             \
    R(s, RESIGN, ANY, RESIGNING, DEMOTE_LATE,                                                      \
      "resigned: demoted (announced on the next turn), delete our node"),                          \
    R(s, CEDE, ANY, PAUSED, DEMOTE_LATE,                                                           \
      "ceded: demoted (announced on the next turn), stand again after the caller's delay"),        \
    R(s, FREE, ANY, FREED, DROP_LEAD, "freed while leading: no callback follows"),

#define ROWS_STANDING(s)                                                                           \
    RQ(s, START, ANY, SETUP, 0, SETUP, "stand from the top"),                                      \
    R(s, NO_SESSION, ANY, NOSESSION, 0, "the session is gone: wait for a new one"),                \
    RQ(s, RETRY, NODE, CHECKING, 0, RETRY, "transient error: look at the candidates again later"), \
    RQ(s, RETRY, NO_NODE, SETUP, 0, RETRY, "transient error: stand from the top later"),           \
    R(s, ERROR, ANY, FAILED, 0, "an error retrying cannot cure"),                                  \
    RQ(s, NODE_GONE, ANY, PAUSED, 0, PAUSE,                                                        \
       "our node was deleted: stand again after the cede delay"),                                  \
    R(s, SESSION_LOST, ANY, s, 0, "not leading: a new session restarts us"),                       \
    R(s, CLOSED, ANY, LEFT, 0, "the client was closed"),                                           \
    R(s, RESIGN, ANY, RESIGNING, 0, "resigned: delete our node"),                                  \
    R(s, FREE, ANY, FREED, 0, "freed"),

static const reign__efsm_row table[] = {
    /* ---- every state that stands without leading ---- */
    STANDING(ROWS_STANDING)
    RESTARTED(ROWS_RESTARTED)
    RQ(PAUSED, NEW_SESSION, ANY, PAUSED, 0, FOLLOW,
       "paused: the timer stands us again, in the new session; the leader is followed in it now"),

    /* ---- setting up ---- */
    RQ(SETUP, COLD, ANY, SETUP, 0, COLD, "a new election? one multi makes and claims it"),
    RQ(SETUP, CREATE, ANY, CREATING, 0, CREATE, "the election is there: make our node"),
    RQ(SETUP, CREATE_UNKNOWN, ANY, CREATING, 0, FIND_OWN,
       "the new election's multi lost its answer: look for our node"),
    RQ(SETUP, OBSERVE, ANY, OBSERVING, 0, FOLLOW, "an observer: follow the leader, stand not"),
    RQ(SETUP, CHECK, ANY, CHECKING, 0, LIST, "our node is known: look at the candidates"),
    R(SETUP, CLAIMED, FRESH, LEADER, ELECT,
      "the new election's multi made and claimed it, with a fresh proof"),
    RQ(SETUP, CLAIMED, STALE, CHECKING, 0, LIST,
       "won, but the session's proof is stale: look again"),
    RQ(SETUP, ELECTION_GONE, ANY, SETUP, 0, SETUP, "the election node went: set it up again"),

    /* ---- our node ---- */
    RQ(CREATING, CREATE, ANY, CREATING, 0, CREATE, "make our node (again)"),
    RQ(CREATING, CREATE_UNKNOWN, ANY, CREATING, 0, FIND_OWN,
       "the create lost its answer: look for our node"),
    RQ(CREATING, CHECK, ANY, CHECKING, 0, LIST, "our node is there: look at the candidates"),

    /* ---- our place ---- */
    RQ(CHECKING, CHECK, ANY, CHECKING, 0, LIST, "look at the candidates again"),
    RQ(CHECKING, CREATE, ANY, CREATING, 0, CREATE, "the lock is free: take it"),
    R(CHECKING, BEHIND, ANY, WAITING, 0, "our predecessor is alive: watch it"),
    R(CHECKING, LOCK_HELD, ANY, WAITING, 0, "another session holds the lock: watch it"),
    RQ(CHECKING, FIRST, ANY, CLAIMING, 0, CLAIM, "first in line: claim"),
    RQ(CHECKING, LEADER_NODE_HELD, HANDING, HANDING_OVER, 0, READ_LEADER,
       "the leader node we handed over is still there: wait for it to be taken"),
    RQ(CHECKING, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER,
       "the leader node is held and we are designated: contend"),
    RQ(CHECKING, ELECTION_GONE, ANY, SETUP, 0, SETUP, "the election node went: set it up again"),

    RQ(WAITING, CHECK, ANY, CHECKING, 0, LIST, "our predecessor changed: look again"),
    RQ(WAITING, CREATE, ANY, CREATING, 0, CREATE, "the lock is free: race for it"),
    RQ(WAITING, FIRST, ANY, CLAIMING, 0, CLAIM,
       "the first in line went and we were next: claim at once (the claim proves the rest)"),
    RQ(WAITING, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER,
       "designated: contend for the leader node"),

    RQ(OBSERVING, OBSERVE, ANY, OBSERVING, 0, FOLLOW, "observing"),

    /* ---- the leader node ---- */
    RQ(CONTENDING, LEADER_NODE_HELD, HANDING, HANDING_OVER, 0, READ_LEADER,
       "our leader node is handed over: watch it until it is taken"),
    RQ(CONTENDING, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER, "read the leader node again"),
    R(CONTENDING, HANDOVER_ENDED, ANY, CONTENDING, 0, "no handover of ours is under way"),
    RQ(CONTENDING, CHECK, ANY, CHECKING, 0, LIST, "the leader node went: claim if first"),
    RQ(CONTENDING, FIRST, ANY, CLAIMING, 0, CLAIM,
       "the leader node went and we are designated: first by construction, claim"),
    RQ(CONTENDING, HANDED_TO_US, ANY, TAKING_OVER, 0, TAKE_OVER,
       "the leader node names us next: take it over with our claim"),

    RQ(HANDING_OVER, LEADER_NODE_HELD, ANY, HANDING_OVER, 0, READ_LEADER,
       "handed over: watch the leader node until the next one takes it"),
    R(HANDING_OVER, HANDOVER_ENDED, ANY, CONTENDING, 0,
      "the handover is over (taken, or let go): an ordinary contender again"),
    RQ(HANDING_OVER, CHECK, ANY, CHECKING, 0, LIST,
       "the handover is over or abandoned: look at the candidates again"),
    RQ(HANDING_OVER, FIRST, ANY, CLAIMING, 0, CLAIM, "the leader node went: claim"),

    /* ---- claims ---- */
    RQ(CLAIMING, FIRST, ANY, CLAIMING, 0, CLAIM, "claim again (the term node was made again)"),
    R(CLAIMING, CLAIMED, FRESH, LEADER, ELECT, "the claim landed with a fresh session proof"),
    RQ(CLAIMING, CLAIMED, STALE, CHECKING, 0, LIST,
       "the claim landed but the session's proof is stale: announcing could overlap a "
      "successor; look again"),
    RQ(CLAIMING, CHECK, ANY, CHECKING, 0, LIST, "the claim failed: look again"),
    RQ(CLAIMING, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER,
       "someone holds the leader node: contend"),

    R(TAKING_OVER, CLAIMED, FRESH, LEADER, ELECT,
      "the takeover landed with a fresh session proof"),
    RQ(TAKING_OVER, CLAIMED, STALE, CHECKING, 0, LIST,
       "the takeover landed but the session's proof is stale: look again"),
    RQ(TAKING_OVER, CHECK, ANY, CHECKING, 0, LIST, "the takeover failed: look again"),
    RQ(TAKING_OVER, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER,
       "the leader node changed meanwhile: look at it again"),

    RQ(DEMOTED, CHECK, ANY, CHECKING, 0, LIST,
       "demoted: look at the candidates (a new claim renews)"),
    RQ(DEMOTED, LEADER_NODE_HELD, ANY, CONTENDING, 0, READ_LEADER, "designated: contend"),

    /* ---- leading ---- */
    RQ(LEADER, CHECK, ANY, LEADER_CHECKING, 0, LIST, "leading: look at the candidates again"),
    R(LEADER, STILL_LEADING, ANY, LEADER, 0, "still leading"),
    RQ(LEADER, RETRY, ANY, LEADER_CHECKING, 0, RETRY,
       "transient error while leading: look again later"),
    RQ(LEADER, OUTRANKED, ANY, HANDING_OVER, DEMOTE, HAND_OVER,
       "a candidate that outranks us asks for the lead: step down, hand the leader node over"),
    RQ(LEADER_CHECKING, CHECK, ANY, LEADER_CHECKING, 0, LIST, "leading: look again"),
    R(LEADER_CHECKING, STILL_LEADING, ANY, LEADER, 0, "still leading"),
    RQ(LEADER_CHECKING, RETRY, NODE, LEADER_CHECKING, 0, RETRY,
       "transient error while leading: look again later"),
    RQ(LEADER_CHECKING, RETRY, NO_NODE, SETUP, DEMOTE, RETRY,
       "our node is unknown: demoted, stand again"),
    RQ(LEADER_CHECKING, CREATE, ANY, CREATING, DEMOTE, CREATE,
       "the lock went from under us: demoted, race for it again"),
    R(LEADER_CHECKING, LOCK_HELD, ANY, WAITING, DEMOTE,
      "another session holds the lock: demoted"),
    RQ(LEADER_CHECKING, ELECTION_GONE, ANY, SETUP, DEMOTE, SETUP,
       "the election node went: demoted, set it up again"),

    R(LEADER, SUSPENDED, ANY, DEMOTED, DEMOTE,
      "connection lost, suspend policy immediate: demoted until reconnected"),
    R(LEADER_CHECKING, SUSPENDED, ANY, CHECKING, DEMOTE,
      "connection lost, suspend policy immediate: demoted"),
    RQ(LEADER, DEADLINE, ANY, DEMOTED, DEMOTE, RENEW,
       "past the proof's bound while connected (a stall): demoted before the server could "
      "expire us; a new claim renews"),
    R(LEADER_CHECKING, DEADLINE, ANY, CHECKING, DEMOTE, "past the proof's bound: demoted"),
    R(LEADER, SESSION_LOST, ANY, DEMOTED, DEMOTE, "the session is lost: demoted"),
    R(LEADER_CHECKING, SESSION_LOST, ANY, CHECKING, DEMOTE, "the session is lost: demoted"),
    R(LEADER, DEADLINE_SUSPENDED, ANY, CHECKING, DEMOTE,
      "suspended past the proof's bound: demoted before the server could expire us"),
    R(LEADER_CHECKING, DEADLINE_SUSPENDED, ANY, CHECKING, DEMOTE,
      "suspended past the proof's bound: demoted"),
    LEADING(ROWS_LEADING)

    /* ---- leaving ---- */
    R(RESIGNING, RESIGNED, ANY, LEFT, EMIT_LEFT, "our node is deleted: left"),
    R(RESIGNING, NEW_SESSION, ANY, LEFT, EMIT_LEFT, "the session ended, and our node with it"),
    R(RESIGNING, CLOSED, ANY, LEFT, EMIT_LEFT, "the client was closed while resigning"),
    R(RESIGNING, NO_SESSION, ANY, RESIGNING, 0, "resigning: the node's delete settles it"),
    R(RESIGNING, RETRY, ANY, RESIGNING, 0, "resigning: the node's delete settles it"),
    R(RESIGNING, SESSION_LOST, ANY, RESIGNING, 0, "resigning: the delete settles it"),
    R(RESIGNING, ERROR, ANY, FAILED, 0, "an error while resigning"),
    R(RESIGNING, FREE, ANY, FREED, 0, "freed while resigning"),

    R(FAILED, RESIGN, ANY, RESIGNING, 0, "resigned after an error: delete our node if any"),
    R(FAILED, NEW_SESSION, ANY, FAILED, 0, "failed: a new session changes nothing"),
    R(FAILED, SESSION_LOST, ANY, FAILED, 0, "failed"),
    R(FAILED, CLOSED, ANY, FAILED, 0, "failed"),
    R(FAILED, ERROR, ANY, FAILED, 0, "failed already"),
    R(FAILED, FREE, ANY, FREED, 0, "freed"),

    R(LEFT, FREE, ANY, FREED, 0, "freed"),
};
/* clang-format on */

/*
 * News that may arrive after the state it was for: the results of requests
 * of an earlier attempt, and connection news in states that no longer care.
 * Kept out of the table so that each row there is a decision.
 */
static int moot(unsigned s, unsigned in)
{
    if (s == REIGN__ZKE_FREED)
        return 1; /* nothing after a free */
    if (s == REIGN__ZKE_LEFT)
        return in != REIGN__ZKE_IN_RESIGN && in != REIGN__ZKE_IN_CEDE;
    switch (in) {
    case REIGN__ZKE_IN_RESIGNED: /* the delete of an attempt given up */
    case REIGN__ZKE_IN_SUSPENDED:
    case REIGN__ZKE_IN_DEADLINE:
    case REIGN__ZKE_IN_DEADLINE_SUSPENDED: /* leaders only */
        return !reign__zke_leading(s) && s != REIGN__ZKE_RESIGNING;
    case REIGN__ZKE_IN_NODE_GONE: /* we stand no more */
        return s == REIGN__ZKE_FAILED || s == REIGN__ZKE_RESIGNING;
    default:
        return 0;
    }
}

static reign_demote_reason demote_reason(unsigned input)
{
    switch (input) {
    case REIGN__ZKE_IN_OUTRANKED:
        return REIGN_DEMOTE_HANDOFF;
    case REIGN__ZKE_IN_SUSPENDED:
    case REIGN__ZKE_IN_DEADLINE_SUSPENDED:
        return REIGN_DEMOTE_SUSPENDED;
    case REIGN__ZKE_IN_DEADLINE:
        return REIGN_DEMOTE_STALLED;
    case REIGN__ZKE_IN_SESSION_LOST:
    case REIGN__ZKE_IN_NEW_SESSION:
    case REIGN__ZKE_IN_NO_SESSION:
        return REIGN_DEMOTE_SESSION_LOST;
    case REIGN__ZKE_IN_ERROR:
        return REIGN_DEMOTE_ERROR;
    case REIGN__ZKE_IN_CEDE:
        return REIGN_DEMOTE_CEDED;
    case REIGN__ZKE_IN_RESIGN:
    case REIGN__ZKE_IN_CLOSED:
    case REIGN__ZKE_IN_FREE:
        return REIGN_DEMOTE_RESIGNED;
    default: /* our node, the lock or the election node went */
        return REIGN_DEMOTE_NODE_DELETED;
    }
}

int reign__zke_leading(reign__zke_state s)
{
    return s == REIGN__ZKE_LEADER || s == REIGN__ZKE_LEADER_CHECKING;
}

reign_demote_reason reign__zke_demote_reason(reign__zke_input input)
{
    return demote_reason(input);
}

int reign__zke_contending(reign__zke_state s)
{
    return s == REIGN__ZKE_CONTENDING || s == REIGN__ZKE_HANDING_OVER;
}

static int leading(unsigned s)
{
    return reign__zke_leading((reign__zke_state)s);
}

static int terminal(unsigned s)
{
    return s == REIGN__ZKE_LEFT || s == REIGN__ZKE_FAILED || s == REIGN__ZKE_FREED;
}

static const char *const state_names[] = {REIGN__ZKE_STATES(REIGN__EFSM_NAME)};
static const char *const input_names[] = {REIGN__ZKE_INPUTS(REIGN__EFSM_NAME)};
static const char *const request_names[] = {REIGN__ZKE_REQUESTS(REIGN__EFSM_RQ_NAME)};
#define S(x) (1ull << REIGN__ZKE_##x)
static const unsigned long long request_states[] = {REIGN__ZKE_REQUESTS(REIGN__EFSM_RQ_STATES)};
#undef S

REIGN__EFSM_INDEX_ARRAYS(reign__zke_machine, REIGN__ZKE_ST__COUNT, REIGN__ZKE_IN__COUNT)

const reign__efsm reign__zke_machine = {
    .name = "election_zk",
    .rows = table,
    .n_rows = sizeof(table) / sizeof(table[0]),
    .index = REIGN__EFSM_INDEX,
    .n_states = REIGN__ZKE_ST__COUNT,
    .n_inputs = REIGN__ZKE_IN__COUNT,
    .state_names = state_names,
    .input_names = input_names,
    .n_requests = REIGN__ZKE_RQ__COUNT,
    .request_names = request_names,
    .request_states = request_states,
    .moot = moot,
    .leading = leading,
    .terminal = terminal,
    .demote_reason = demote_reason,
    .initial = REIGN__ZKE_NOSESSION,
    .st_left = REIGN__ZKE_LEFT,
    .st_freed = REIGN__ZKE_FREED,
    .st_resigning = REIGN__ZKE_RESIGNING,
    .in_claimed = REIGN__ZKE_IN_CLAIMED,
    .in_free = REIGN__ZKE_IN_FREE,
    .in_closed = REIGN__ZKE_IN_CLOSED,
    .in_lost = REIGN__ZKE_IN_NEW_SESSION,
};
