/*
 * election_fsm.h - what the candidates' tables share (election_zk_fsm.c
 * for ZooKeeper, election_lease_fsm.c for SQL leases): the row, the
 * actions (the event contract of election_base.c: every table emits
 * through the same five), the facts its guards look at, and the lookup.
 *
 * A table is pure: a row per (state, input[, guard]) names the next state,
 * the actions, carried out in the order of their bits after the new state
 * is set, the request the new state makes (one of the machine's own, 0 for
 * none), made after the actions, and a reason, logged at debug.  The first
 * row that matches wins.
 * A pair no row names is moot (news for a state already left: ignored) or
 * refused (nothing changes, nothing follows).
 */
#ifndef REIGN_ELECTION_FSM_H
#define REIGN_ELECTION_FSM_H

#include <pthread.h>
#include <stddef.h>

#include <reign/election.h>

enum {
    REIGN__EFSM_A_DEMOTE = 1u << 0,       /* leadership ends: DEMOTED now */
    REIGN__EFSM_A_DEMOTE_LATER = 1u << 1, /* ... DEMOTED on the next loop turn (an API call) */
    REIGN__EFSM_A_DROP_LEAD = 1u << 2,    /* ... silently (freed: no callback follows) */
    REIGN__EFSM_A_ELECT = 1u << 3,        /* leadership begins: ELECTED */
    REIGN__EFSM_A_EMIT_LEFT = 1u << 4,    /* LEFT */
};
#define REIGN__EFSM_A__COUNT 5

/* Facts the guards look at, as bits. */
enum {
    REIGN__EFSM_F_FRESH = 1u << 0,   /* a claim's proof (session, lease) is within its bound */
    REIGN__EFSM_F_NODE = 1u << 1,    /* ZooKeeper: we know our candidate node */
    REIGN__EFSM_F_HANDING = 1u << 2, /* ZooKeeper: our leader node is handed to a candidate */
};
#define REIGN__EFSM_FACTS 8u /* every combination */

typedef enum reign__efsm_guard {
    REIGN__EFSM_G_ANY = 0,
    REIGN__EFSM_G_FRESH,
    REIGN__EFSM_G_STALE,
    REIGN__EFSM_G_NODE,
    REIGN__EFSM_G_NO_NODE,
    REIGN__EFSM_G_HANDING,
} reign__efsm_guard;

typedef struct reign__efsm_row {
    unsigned char from, input, guard, to;
    unsigned actions;
    unsigned char request; /* the machine's request to make in the new state; 0: none */
    const char *reason;
} reign__efsm_row;

typedef struct reign__efsm_step {
    unsigned to; /* the old state if refused or moot */
    unsigned actions;
    unsigned request;
    const char *reason;
    int refused; /* 1: no row for this pair: nothing changes, nothing follows */
    int moot;    /* 1: news for a state already left (or freed): ignored */
} reign__efsm_step;

/*
 * Where each (state, input)'s rows are, so that a step reads the one to three rows of its pair
 * and not the whole table (reading the ZooKeeper table's 229 rows on every step cost a follower's
 * join 6% more instructions).  Built once per process, on the first step, by build(), which
 * calls reign__efsm_index_build(); the arrays belong to the table's file
 * (REIGN__EFSM_INDEX_ARRAYS).  Row numbers are kept plus one: 0 ends a list.
 */
typedef struct reign__efsm_index {
    pthread_once_t *once;
    void (*build)(void);
    unsigned short *first; /* per (state, input), state * n_inputs + input: its first row */
    unsigned short *next;  /* per row: the next row of the same pair, in table order */
} reign__efsm_index;

/* A candidate's machine: its table and what the invariants (and the tests) need to know. */
typedef struct reign__efsm {
    const char *name;
    const reign__efsm_row *rows;
    size_t n_rows;
    reign__efsm_index index;
    unsigned n_states, n_inputs;
    const char *const *state_names;
    const char *const *input_names;
    unsigned n_requests; /* 0 is "none" */
    const char *const *request_names;
    /* the states a request may be made in (a bit per state): the tests hold the rows to it */
    const unsigned long long *request_states;
    int (*moot)(unsigned state, unsigned input);
    int (*leading)(unsigned state);
    int (*terminal)(unsigned state);
    reign_demote_reason (*demote_reason)(unsigned input);
    unsigned initial;                        /* a new candidate */
    unsigned st_left, st_freed;              /* where a resign ends, and a free */
    unsigned st_resigning;                   /* the only state that LEFT leaves */
    unsigned in_claimed, in_free, in_closed; /* a claim that landed, a free, the close */
    unsigned in_lost;                        /* the end of what proves the leadership */
} reign__efsm;

/*
 * A backend's state field has its table's enum type, so that a switch over it is checked
 * (-Wswitch); the engine keeps states as unsigned.  An enum without negative values has the
 * type unsigned int with GCC and clang (without -fshort-enums, which the build never sets), so
 * the field is the engine's object through this pointer; the assertion holds the sizes to it.
 */
#define REIGN__EFSM_STATE(p)                                                                       \
    (__extension__({                                                                               \
        _Static_assert(sizeof(*(p)) == sizeof(unsigned), "a state enum is an unsigned int");       \
        (unsigned *)(p);                                                                           \
    }))

/* X-macro helpers for a machine's name tables: states and inputs are XX(NAME, "name"),
 * requests XX(NAME, "name", the states it may be made in, as S(STATE) | ...). */
#define REIGN__EFSM_NAME(name, str)              str,
#define REIGN__EFSM_RQ_NAME(name, str, states)   str,
#define REIGN__EFSM_RQ_STATES(name, str, states) (states),

/*
 * A table's index, defined in the file of its rows (`table`) and machine (`machine`); the
 * machine says .index = REIGN__EFSM_INDEX.
 */
#define REIGN__EFSM_INDEX_ARRAYS(machine, n_states, n_inputs)                                      \
    static unsigned short index_first[(n_states) * (n_inputs)];                                    \
    static unsigned short index_next[sizeof(table) / sizeof(table[0])];                            \
    static pthread_once_t index_once = PTHREAD_ONCE_INIT;                                          \
    static void index_build(void)                                                                  \
    {                                                                                              \
        reign__efsm_index_build(&(machine));                                                       \
    }
#define REIGN__EFSM_INDEX                                                                          \
    {                                                                                              \
        &index_once, index_build, index_first, index_next                                          \
    }

void reign__efsm_index_build(const reign__efsm *m);

/* Whether guard `g` holds with `facts` (REIGN__EFSM_F_*). */
int reign__efsm_guard_holds(unsigned g, unsigned facts);

/* The first row of (state, input) whose guard holds with `facts`; else moot or refused. */
reign__efsm_step reign__efsm_next(const reign__efsm *m, unsigned state, unsigned input,
                                  unsigned facts);

const char *reign__efsm_state_name(const reign__efsm *m, unsigned s);
const char *reign__efsm_input_name(const reign__efsm *m, unsigned in);
const char *reign__efsm_request_name(const reign__efsm *m, unsigned rq);
const char *reign__efsm_guard_name(unsigned g);
void reign__efsm_actions_format(unsigned actions, char *buf, size_t len);

#endif
