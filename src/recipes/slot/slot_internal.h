/*
 * slot_internal.h - what the files of the slot recipe share (<reign/slot.h>, docs/slots.md):
 *
 *   slot_model.c  the record of a slot in memory, its text form in a ZooKeeper node, and the
 *                 decision a copy takes from it (pure: no I/O, unit-tested)
 *   slot.c        the public API and the state machine of one copy, over an election
 *   slot_zk.c     the record in ZooKeeper: /reign/slot/NAME/s_<KEY>
 *   slot_sql.c    the record in a SQL store: the runs table (src/sql/runs.c)
 *
 * Private to the library.
 */
#ifndef REIGN_SLOT_INTERNAL_H
#define REIGN_SLOT_INTERNAL_H

#include <stdbool.h>

#include <reign/election.h>
#include <reign/slot.h>

#include "client/client_internal.h"
#include "core.h"
#include "recipes/life.h"

#define REIGN__SLOT_RUNS_MAX (REIGN_SLOT_RETRIES_MAX + 1)
#define REIGN__SLOT_HOST_MAX 255
/* A time in a record still to be written: the store's clock at the write (ZooKeeper writes it
 * as "@", the mtime of the version that holds it; SQL uses the database's clock). */
#define REIGN__SLOT_NOW (-1)

/* One attempt. */
typedef struct reign__slot_run {
    unsigned attempt;
    char owner[REIGN_ID_MAX + 1];
    char host[REIGN__SLOT_HOST_MAX + 1];
    uint64_t term, token;
    int64_t start_ms; /* REIGN__SLOT_NOW in a record to be written */
    int64_t end_ms;   /* 0: no end; REIGN__SLOT_NOW in a record to be written */
    reign_slot_result result;
    int code;
} reign__slot_run;

/* A slot's record as read or to be written. */
typedef struct reign__slot_rec {
    bool exists;
    char key[REIGN_SLOT_KEY_MAX + 1];
    reign_slot_verdict verdict;
    size_t n;
    reign__slot_run runs[REIGN__SLOT_RUNS_MAX];
    int32_t version; /* ZooKeeper: the node's version (-1: no node) */
    int64_t order;   /* the slot's age, for listings (ZooKeeper: czxid; SQL: first row id) */
} reign__slot_rec;

void reign__slot_rec_init(reign__slot_rec *r, const char *key);
/* The public view of a record; runs point into `r` and `buf` (n_runs entries). */
void reign__slot_rec_public(const reign__slot_rec *r, reign_slot_run *buf, reign_slot_record *out);
void reign__slot_run_public(const reign__slot_run *r, reign_slot_run *out);

/*
 * The text of a slot node:
 *
 *   reign 1 / kind=slot / slot=KEY / verdict=V / runs=N / r1=... rN=... / (blank) / nothing
 *
 * each run "ATTEMPT TERM TOKEN START END RESULT CODE OWNER HOST": times as Unix ms, END "-"
 * when there is none, either "@" for the mtime of the node's version that holds it; OWNER and
 * HOST percent-encode space, '%' and control characters.  parse resolves "@" with mtime_ms;
 * REIGN_EFOREIGN for anything reign__slot_rec_build() could not have written.
 */
int reign__slot_rec_parse(const void *data, size_t len, int64_t mtime_ms, reign__slot_rec *out);
int reign__slot_rec_build(reign__buf *out, const reign__slot_rec *r);
/* Replaces REIGN__SLOT_NOW times with now_ms (a write landed at that time; 0: unknown). */
void reign__slot_rec_resolve(reign__slot_rec *r, int64_t now_ms);

/* What a copy goes by. */
typedef struct reign__slot_policy {
    int retries;
    bool at_most_once;
    bool no_wait;
    int64_t slot_start_ms; /* with a deadline: when the slot began (store clock) */
    int64_t deadline_ms;   /* 0: none */
} reign__slot_policy;

typedef enum reign__slot_action {
    REIGN__SLOT_DO_DONE = 1, /* outcome (and run: the attempt that decided it, or -1) */
    REIGN__SLOT_DO_STAND,    /* not leading: stand in the election and wait */
    REIGN__SLOT_DO_MARK,     /* leading: the last attempt's runner is gone; end it as lost with
                                `verdict`, then decide again */
    REIGN__SLOT_DO_START     /* leading: start attempt n + 1 */
} reign__slot_action;

typedef struct reign__slot_decision {
    reign__slot_action action;
    reign_slot_outcome outcome;
    reign_slot_verdict verdict;
    int run;
    const char *why; /* for the log */
} reign__slot_decision;

/*
 * The decision of a copy on a record: before standing (leading false: decided slots end here,
 * others are stood for) or as leader of term `term`.  now_ms is the store's clock (0: not
 * known; then no deadline is judged).
 */
reign__slot_decision reign__slot_decide(const reign__slot_rec *r, const reign__slot_policy *p,
                                        bool leading, uint64_t term, int64_t now_ms);

/* The slot's verdict after attempt `attempt` ended with (result, code). */
reign_slot_verdict reign__slot_verdict_after(const reign__slot_policy *p, unsigned attempt,
                                             reign_slot_result result, int code);

/* Names as the SQL rows and the node's text keep them; parse: -1 if unknown. */
const char *reign__slot_result_word(reign_slot_result r);
const char *reign__slot_verdict_word(reign_slot_verdict v);
int reign__slot_result_parse(const char *s);
int reign__slot_verdict_parse(const char *s);

/* The key of the period of `every_ms` that holds now_ms: its start, "2024-05-01T02:00:00Z"
 * (milliseconds shown when the period is not whole seconds). */
void reign__slot_period_key(int64_t now_ms, int64_t every_ms, int64_t *start_ms,
                            char out[REIGN_SLOT_KEY_MAX + 1]);

/* ---- the stores ------------------------------------------------------------------------------ */

typedef enum reign__slot_op {
    REIGN__SLOT_OP_NOW = 1, /* the store's clock */
    REIGN__SLOT_OP_READ,    /* the slot's record */
    REIGN__SLOT_OP_START,   /* write s->next, whose last run is the new attempt (fenced) */
    REIGN__SLOT_OP_MARK,    /* write s->next, whose last run a later leader ended (fenced) */
    REIGN__SLOT_OP_END,     /* write s->next, in which run s->our_run ended (compare-and-set) */
    REIGN__SLOT_OP_PRUNE    /* cut the record to s->keep slots */
} reign__slot_op;

/*
 * A reply.  rc: 0 done; REIGN_EBADVERSION refused by the record (it changed since it was
 * read); REIGN_ESTATE refused by the fence (another leadership began); else an error (the
 * outcome of a write then unknown).
 */
typedef struct reign__slot_reply {
    reign__slot_op op;
    int rc;
    const char *message;        /* rc < 0: detail, or NULL */
    int64_t now_ms;             /* NOW; READ where the store tells it; writes: when they
                                   landed (ZooKeeper), 0 if not known */
    int32_t version;            /* writes (ZooKeeper): the node's new version */
    const reign__slot_rec *rec; /* READ */
} reign__slot_reply;

typedef struct reign__slot_backend {
    const char *name;
    int (*init)(reign_slot *s);
    void (*release)(reign_slot *s); /* forget pending requests, free what init made */
    /* Issues op; the reply comes through s->reply with `gen`.  0 or an error (then no
     * reply). */
    int (*issue)(reign_slot *s, reign__slot_op op, uint64_t fence, uintptr_t gen);
    int (*history)(reign_client *client, const char *name, unsigned last, reign_slot_history_cb *cb,
                   void *userdata);
} reign__slot_backend;

extern const reign__slot_backend reign__slot_zk;
extern const reign__slot_backend reign__slot_sql;

/* The states of a copy (slot.c has the table of transitions). */
typedef enum reign__slot_state {
    REIGN__SLOT_ST_NEW = 0,
    REIGN__SLOT_ST_CLOCK,    /* reading the store's clock: which period is the slot */
    REIGN__SLOT_ST_PEEK,     /* reading the record before standing */
    REIGN__SLOT_ST_STANDING, /* a candidate, not leading */
    REIGN__SLOT_ST_READING,  /* leading: reading the record */
    REIGN__SLOT_ST_TIMING,   /* leading: reading the store's clock for the deadline */
    REIGN__SLOT_ST_MARKING,  /* leading: ending an attempt whose runner is gone */
    REIGN__SLOT_ST_STARTING, /* leading: recording our attempt's start */
    REIGN__SLOT_ST_RUNNING,  /* leading; the work runs */
    REIGN__SLOT_ST_STOPPING, /* the leadership ended; waiting for the work to end */
    REIGN__SLOT_ST_ENDING,   /* recording our attempt's end */
    REIGN__SLOT_ST_PRUNING,  /* cutting the record to `keep` slots */
    REIGN__SLOT_ST_LEAVING,  /* resigning; DONE when it is done */
    REIGN__SLOT_ST_DONE,
    REIGN__SLOT_ST_FAILED,
    REIGN__SLOT_ST_COUNT
} reign__slot_state;

/* A copy.  The backends read name, key, keep, owner, rec, next, our_run and write be_data. */
struct reign_slot {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    const reign__logger *log;
    const reign__slot_backend *be;
    void *be_data;
    /* A store's reply to request `gen` (slot.c sets it: a backend calls the state machine
     * through it, and so never links back to slot.c). */
    void (*reply)(reign_slot *s, uintptr_t gen, const reign__slot_reply *r);
    char *name;
    char key[REIGN_SLOT_KEY_MAX + 1];
    int64_t every_ms;
    int64_t slot_start_ms;
    reign__slot_policy pol;
    int keep;
    char owner[REIGN_ID_MAX + 1];
    char host[REIGN__SLOT_HOST_MAX + 1];
    reign__slot_rec rec;  /* as last read or written */
    reign__slot_rec next; /* being written */
    int our_run;          /* our attempt's index in rec and next, or -1 */

    /* the state machine (slot.c) */
    reign__slot_state state;
    /* the epoch is the request in flight's: an older one's reply is ignored; busy and
     * free_requested: nested calls into the slot, and a free from a callback (memory goes
     * when the outermost returns) */
    reign__life life;
    reign_slot_cb *cb;
    void *userdata;
    reign_election_options eo; /* for the join; eo.id is `owner`, eo.data owned */
    reign_election_cb *ecb;    /* the caller's election callback */
    void *eud;
    reign_election *election;
    bool leading;
    uint64_t term, token;   /* of the current or last leadership */
    int64_t valid_until_ns; /* of the current or last leadership, as last read */
    uint64_t fence;         /* the term of the write in flight */
    int64_t now_ms;         /* the store's clock as last learnt, 0 if not */
    bool led_at_finish;     /* the work ended while we still led */
    bool start_unknown;     /* a start's answer was lost: the next read looks for it */
    bool standing_down;     /* reign_slot_stand_down(): done once our end is recorded */
    reign_slot_result our_result;
    int our_code;
    int failures; /* transient errors in a row */
    reign__timer retry;
    reign__timer leave_timer;
    reign__timer answer_timer;  /* the request in flight must be answered by then */
    reign_slot_outcome outcome; /* for DONE, once decided */
    reign_slot_verdict verdict;
    bool has_run;
    reign__slot_run done_run;
};

#endif
