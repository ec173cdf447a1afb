/*
 * election_lease_fsm.c - the transition table of a SQL lease candidate (see
 * election_lease_fsm.h for the rules, election_fsm.h for the rows).
 */
#include "election_lease_fsm.h"

#define ST(x) REIGN__LEASE_##x
#define IN(x) REIGN__LEASE_IN_##x
#define G(x)  REIGN__EFSM_G_##x

#define DEMOTE      REIGN__EFSM_A_DEMOTE
#define DEMOTE_LATE REIGN__EFSM_A_DEMOTE_LATER
#define DROP_LEAD   REIGN__EFSM_A_DROP_LEAD
#define ELECT       REIGN__EFSM_A_ELECT
#define EMIT_LEFT   REIGN__EFSM_A_EMIT_LEFT

/* clang-format off */
#define R(from, in, g, to, a, why) {ST(from), IN(in), G(g), ST(to), (a), 0, (why)}
/* ... and a row that makes a request in its new state */
#define RQ(from, in, g, to, a, q, why)                                                             \
    {ST(from), IN(in), G(g), ST(to), (a), REIGN__LEASE_RQ_##q, (why)}

/* The states that do not lead and are not done. */
#define STANDING(XX) XX(IDLE) XX(LOOKING) XX(CLAIMING) XX(PAUSED)

#define ROWS_STANDING(s)                                                                           \
    RQ(s, STAND, ANY, LOOKING, 0, STAND, "stand with a fresh guid: read the row"),                 \
    R(s, LOST, ANY, s, 0, "not leading: no lease to lose"),                                        \
    R(s, CLOSED, ANY, LEFT, 0, "the client was closed"),                                           \
    R(s, RESIGN, ANY, RESIGNING, 0, "resigned: release what we may hold"),                         \
    R(s, FREE, ANY, FREED, 0, "freed"),

static const reign__efsm_row table[] = {
    STANDING(ROWS_STANDING)

    RQ(LOOKING, LOOK, ANY, LOOKING, 0, READ, "read the row (again)"),
    RQ(LOOKING, CLAIM, ANY, CLAIMING, 0, CLAIM, "the row is missing, expired or ours: claim it"),
    R(LOOKING, NO_GUID, ANY, LEFT, 0, "no randomness for a guid: cannot stand"),
    R(LOOKING, SESSION_LOST, ANY, IDLE, 0, "the store file was replaced: stand in the new one"),

    RQ(CLAIMING, LOOK, ANY, LOOKING, 0, READ, "someone was quicker: read the row"),
    RQ(CLAIMING, CLAIM_FAILED, ANY, LOOKING, 0, POLL,
       "the claim failed: read again at the next poll"),
    R(CLAIMING, CLAIMED, FRESH, LEADER, ELECT, "the claim succeeded within the lease it won"),
    R(CLAIMING, SESSION_LOST, ANY, IDLE, 0, "the store file was replaced: stand in the new one"),
    RQ(CLAIMING, CLAIMED, STALE, CLAIMING, 0, GIVE_BACK,
      "the answer came too late to lead on (a stall): give the lease back, stand again"),

    R(IDLE, SESSION_LOST, ANY, IDLE, 0, "not standing yet: the new session stands us"),
    R(PAUSED, SESSION_LOST, ANY, PAUSED, 0, "paused: stands again after its delay, in a new file"),

    RQ(LEADER, DEPOSED, ANY, PAUSED, DEMOTE, LET_IN,
      "the row is no longer ours (reign cede, or changed by hand): stand again after the delay"),
    RQ(LEADER, HANDOFF, ANY, PAUSED, DEMOTE, HAND_OVER,
      "designated to another (reign designate, or preempted by a higher priority): release the "
      "row to it and stand again behind it"),
    RQ(LEADER, STALLED, ANY, LOOKING, DEMOTE, GIVE_BACK,
      "past the lease's bound (a stall): demoted; give the row back and stand again"),
    RQ(LEADER, LOST, ANY, LOOKING, DEMOTE, GIVE_BACK,
      "past the lease's bound, the store unreachable: demoted; stand again"),
    RQ(LEADER, SUSPENDED, ANY, LOOKING, DEMOTE, GIVE_BACK,
      "connection lost, suspend policy immediate: demoted; give the row back, stand again"),
    R(LEADER, SESSION_LOST, ANY, IDLE, DEMOTE,
      "the store file was deleted or replaced: the lease is gone; stand in the new one"),
    R(LEADER, CLOSED, ANY, LEFT, DEMOTE, "the client was closed: demoted, the row released"),
    R(LEADER, RESIGN, ANY, RESIGNING, DEMOTE_LATE,
      "resigned: demoted (announced on the next turn), release the row"),
    R(LEADER, CEDE, ANY, PAUSED, DEMOTE_LATE,
      "ceded: demoted (announced on the next turn), release the row, stand again later"),
    R(LEADER, FREE, ANY, FREED, DROP_LEAD, "freed while leading: no callback follows"),

    R(RESIGNING, RELEASED, ANY, LEFT, EMIT_LEFT, "released (or nothing to release): left"),
    R(RESIGNING, CLOSED, ANY, LEFT, EMIT_LEFT, "the client was closed while resigning"),
    R(RESIGNING, LOST, ANY, RESIGNING, 0, "resigning: no lease to lose"),
    R(RESIGNING, SESSION_LOST, ANY, RESIGNING, 0, "resigning: no lease to lose"),
    R(RESIGNING, FREE, ANY, FREED, 0, "freed while resigning"),

    R(LEFT, FREE, ANY, FREED, 0, "freed"),
};
/* clang-format on */

static int moot(unsigned s, unsigned in)
{
    if (s == REIGN__LEASE_FREED || s == REIGN__LEASE_LEFT)
        return in != REIGN__LEASE_IN_RESIGN && in != REIGN__LEASE_IN_CEDE;
    switch (in) {
    case REIGN__LEASE_IN_CLAIMED:
    case REIGN__LEASE_IN_CLAIM_FAILED:
        return s != REIGN__LEASE_CLAIMING; /* an answer to a claim given up */
    case REIGN__LEASE_IN_DEPOSED:
    case REIGN__LEASE_IN_HANDOFF:
    case REIGN__LEASE_IN_STALLED:
    case REIGN__LEASE_IN_SUSPENDED: /* leaders only */
        return s != REIGN__LEASE_LEADER;
    case REIGN__LEASE_IN_RELEASED:
        return s != REIGN__LEASE_RESIGNING;
    default:
        return 0;
    }
}

static int leading(unsigned s)
{
    return s == REIGN__LEASE_LEADER;
}

static int terminal(unsigned s)
{
    return s == REIGN__LEASE_LEFT || s == REIGN__LEASE_FREED;
}

static reign_demote_reason demote_reason(unsigned in)
{
    switch (in) {
    case REIGN__LEASE_IN_DEPOSED:
        return REIGN_DEMOTE_NODE_DELETED;
    case REIGN__LEASE_IN_HANDOFF:
        return REIGN_DEMOTE_HANDOFF;
    case REIGN__LEASE_IN_STALLED:
        return REIGN_DEMOTE_STALLED;
    case REIGN__LEASE_IN_LOST:
    case REIGN__LEASE_IN_SUSPENDED:
        return REIGN_DEMOTE_SUSPENDED;
    case REIGN__LEASE_IN_SESSION_LOST:
        return REIGN_DEMOTE_SESSION_LOST;
    case REIGN__LEASE_IN_CEDE:
        return REIGN_DEMOTE_CEDED;
    default: /* resign, close, free */
        return REIGN_DEMOTE_RESIGNED;
    }
}

static const char *const state_names[] = {REIGN__LEASE_STATES(REIGN__EFSM_NAME)};
static const char *const input_names[] = {REIGN__LEASE_INPUTS(REIGN__EFSM_NAME)};
static const char *const request_names[] = {REIGN__LEASE_REQUESTS(REIGN__EFSM_RQ_NAME)};
#define S(x) (1ull << REIGN__LEASE_##x)
static const unsigned long long request_states[] = {REIGN__LEASE_REQUESTS(REIGN__EFSM_RQ_STATES)};
#undef S

REIGN__EFSM_INDEX_ARRAYS(reign__lease_machine, REIGN__LEASE_ST__COUNT, REIGN__LEASE_IN__COUNT)

const reign__efsm reign__lease_machine = {
    .name = "election_lease",
    .rows = table,
    .n_rows = sizeof(table) / sizeof(table[0]),
    .index = REIGN__EFSM_INDEX,
    .n_states = REIGN__LEASE_ST__COUNT,
    .n_inputs = REIGN__LEASE_IN__COUNT,
    .state_names = state_names,
    .input_names = input_names,
    .n_requests = REIGN__LEASE_RQ__COUNT,
    .request_names = request_names,
    .request_states = request_states,
    .moot = moot,
    .leading = leading,
    .terminal = terminal,
    .demote_reason = demote_reason,
    .initial = REIGN__LEASE_IDLE,
    .st_left = REIGN__LEASE_LEFT,
    .st_freed = REIGN__LEASE_FREED,
    .st_resigning = REIGN__LEASE_RESIGNING,
    .in_claimed = REIGN__LEASE_IN_CLAIMED,
    .in_free = REIGN__LEASE_IN_FREE,
    .in_closed = REIGN__LEASE_IN_CLOSED,
    .in_lost = REIGN__LEASE_IN_LOST,
};
