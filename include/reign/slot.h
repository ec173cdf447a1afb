/*
 * reign/slot.h - scheduled work that runs to success at most once per slot,
 * whichever of many copies gets to it.
 *
 * A slot is one occurrence of a periodic job: a key the caller names
 * ("2024-05-01") or a period of the store's clock (every hour).  Every copy
 * of a program (on every host, from cron or a systemd timer) starts a
 * reign_slot for the same name and slot; one of them is told to run the
 * work (REIGN_SLOT_START), reports how it ended (reign_slot_finish()), and
 * the others learn the outcome (REIGN_SLOT_DONE): it ran here, it had run
 * already, it failed for good, it was too late...  docs/slots.md has the
 * model, the safety argument and a table of what happens when.
 *
 * It is a recipe over an election named like the slot's NAME (the same
 * election `reign run NAME` uses): a copy reads the slot's record first and
 * needs no election when the slot is already decided; otherwise it stands,
 * and only the leader may start an attempt.  The record keeps every
 * attempt of the last `keep` slots (owner, host, term, token, start and end
 * by the store's clock, result, verdict) in the election's store
 * (ZooKeeper: /reign/slot/NAME/s_<KEY>; SQL: the table <lease table>_runs).
 * Writes that start or take over an attempt are fenced by the leadership's
 * term in the store itself, so a deposed leader's write is refused.
 *
 * The work must stop when told (REIGN_SLOT_STOP), before the moment given,
 * or two attempts could overlap: a program that runs a child process should
 * kill it then (and tie it to itself the way `reign run` does: see
 * reign_client_guard_pgid()).
 *
 * All callbacks run inside reign_client_process() on the loop thread (see
 * <reign/client.h>).  From a callback you may call any function here,
 * including reign_slot_free() on the slot calling back.  A call that fails
 * never calls back.
 */
#ifndef REIGN_SLOT_H
#define REIGN_SLOT_H

#include <stdint.h>

#include <reign/client.h>
#include <reign/common.h>
#include <reign/election.h>
#include <reign/limits.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct reign_slot reign_slot;

/* REIGN_SLOT_KEY_MAX, REIGN_SLOT_RETRIES_MAX, REIGN_SLOT_KEEP_MAX, REIGN_SLOT_DURATION_MAX_MS:
 * <reign/limits.h>.  The slots a record keeps when reign_slot_options.keep is 0: */
#define REIGN_SLOT_KEEP_DEFAULT 100

/* How one attempt ended (or not yet). */
typedef enum reign_slot_result {
    REIGN_SLOT_RUNNING = 1, /* started, no end recorded */
    REIGN_SLOT_EXITED,      /* the work ended with status `code` (0: success) */
    REIGN_SLOT_KILLED,      /* the work was killed by signal `code` */
    REIGN_SLOT_STOPPED,     /* stopped because the leadership ended (code: the signal, or 0) */
    REIGN_SLOT_LOST         /* its runner vanished; marked by a later leader */
} reign_slot_result;

/* The state of a slot, after its latest attempt. */
typedef enum reign_slot_verdict {
    REIGN_SLOT_OPEN = 0,  /* no attempt yet */
    REIGN_SLOT_BUSY,      /* an attempt is running (or its runner died unnoticed) */
    REIGN_SLOT_SUCCEEDED, /* an attempt exited 0 */
    REIGN_SLOT_RETRY,     /* the latest attempt did not succeed; another may run */
    REIGN_SLOT_FAILED,    /* no more attempts */
    REIGN_SLOT_ABANDONED  /* at most once: started, and not known to have succeeded */
} reign_slot_verdict;

/* "running", "exited", "killed", "stopped", "lost" / "open", "running", "succeeded", "retry",
 * "failed", "abandoned"; "?" for other values. */
REIGN_EXPORT const char *reign_slot_result_name(reign_slot_result r);
REIGN_EXPORT const char *reign_slot_verdict_name(reign_slot_verdict v);

/* One attempt, as recorded.  Strings are borrowed for the callback only. */
typedef struct reign_slot_run {
    unsigned attempt;  /* 1, 2, ... */
    const char *owner; /* the runner's candidate id */
    const char *host;  /* the runner's host name */
    uint64_t term;     /* the leadership it ran under */
    uint64_t token;    /* its fencing token */
    int64_t start_ms;  /* Unix ms, by the store's clock */
    int64_t end_ms;    /* Unix ms, by the store's clock; 0 while running */
    reign_slot_result result;
    int code; /* exit status (EXITED) or signal (KILLED, STOPPED) */
} reign_slot_run;

/* One slot's record. */
typedef struct reign_slot_record {
    const char *key;
    reign_slot_verdict verdict;
    const reign_slot_run *runs; /* by attempt */
    size_t n_runs;
} reign_slot_record;

/* What a copy learnt or did, in its REIGN_SLOT_DONE event. */
typedef enum reign_slot_outcome {
    REIGN_SLOT_RAN_OK = 1,    /* this copy ran the work and it succeeded (recorded) */
    REIGN_SLOT_RAN_FAILED,    /* this copy ran it and it did not succeed (recorded; see verdict) */
    REIGN_SLOT_UNRECORDED,    /* this copy ran it, but a later leader had declared the attempt
                                 lost before its result could be written: the slot may run again */
    REIGN_SLOT_ALREADY_DONE,  /* it had succeeded: `run` says where, when, with which token */
    REIGN_SLOT_GAVE_UP,       /* it failed for good (no attempts left) */
    REIGN_SLOT_WAS_ABANDONED, /* at most once: it started before and did not succeed */
    REIGN_SLOT_LATE,          /* too late: more than `deadline_ms` after the slot began */
    REIGN_SLOT_SKIPPED        /* no_wait: another copy is running it */
} reign_slot_outcome;

/* "ran", "ran_failed", "unrecorded", "already_done", "gave_up", "abandoned", "late",
 * "skipped". */
REIGN_EXPORT const char *reign_slot_outcome_name(reign_slot_outcome o);

typedef enum reign_slot_event_type {
    REIGN_SLOT_RESOLVED = 1, /* the slot is known: key (and slot_start_ms with every_ms) */
    REIGN_SLOT_START,        /* start the work now: attempt, term, token, valid_until_ns */
    REIGN_SLOT_STOP,         /* the leadership ended while the work runs: stop it before
                                stop_by_ns (0: at once), then call reign_slot_finish() */
    REIGN_SLOT_DONE,         /* the end: outcome, verdict, run; nothing follows */
    REIGN_SLOT_ERROR         /* cannot go on (error, message); nothing follows */
} reign_slot_event_type;

typedef struct reign_slot_event {
    reign_slot_event_type type;
    const char *key;        /* every event but ERROR before RESOLVED */
    int64_t slot_start_ms;  /* RESOLVED with every_ms: the start of the period (store clock) */
    unsigned attempt;       /* START, STOP */
    uint64_t term;          /* START, STOP */
    uint64_t token;         /* START, STOP */
    int64_t valid_until_ns; /* START: until when the leadership is guaranteed (CLOCK_MONOTONIC) */
    int64_t stop_by_ns;     /* STOP: the work must be gone by then (0: now) */
    reign_demote_reason reason; /* STOP: why the leadership ended */
    reign_slot_outcome outcome; /* DONE */
    reign_slot_verdict verdict; /* DONE: the slot's state as last known */
    const reign_slot_run *run;  /* DONE: the attempt that decided it (ours for RAN_*, the
                                   successful one for ALREADY_DONE, the latest otherwise), or
                                   NULL if there is none */
    int error;                  /* ERROR */
    const char *message;        /* ERROR: one line */
} reign_slot_event;

/* Event data is borrowed for the duration of the call only. */
typedef void reign_slot_cb(reign_slot *slot, const reign_slot_event *event, void *userdata);

typedef struct reign_slot_options {
    size_t size; /* sizeof(reign_slot_options) */
    /* The slot: a key, or a period (exactly one of the two). */
    const char *key;  /* [A-Za-z0-9._:+-]{1,128}: reign_slot_key_check() */
    int64_t every_ms; /* the store's clock (Unix ms) / every_ms is the slot; at least the
                         client's session timeout (lease) */
    /* With every_ms: do not start an attempt more than deadline_ms after the slot began (0: no
     * deadline). */
    int64_t deadline_ms;
    int retries;      /* attempts after the first that failed or died, 0..20; default 0 */
    int at_most_once; /* never start a slot again once an attempt started (retries must be 0) */
    int no_wait;      /* while another copy runs the slot, end at once (REIGN_SLOT_SKIPPED) */
    int keep;         /* slots kept in the record, 1..100000; 0: 100 */
    /* The election (id, payload, priority...; its cb and userdata, if set, get every event of
     * the election too, after the slot has handled it).  NULL: defaults. */
    const reign_election_options *election;
    reign_slot_cb *cb;
    void *userdata;
} reign_slot_options;

/* Checks a slot key; 0 or REIGN_ENAME. */
REIGN_EXPORT int reign_slot_key_check(const char *key);

/*
 * Parses a duration: a number followed by a unit, ms, s, m, h or d, possibly several
 * ("1h30m"); a bare number is seconds.  At least 1 ms, at most REIGN_SLOT_DURATION_MAX_MS.
 * 0 and *ms, or REIGN_EINVAL (nothing written).
 */
REIGN_EXPORT int reign_slot_duration_parse(const char *s, int64_t *ms);

/*
 * Starts deciding slot `opts->key` (or the current period of `opts->every_ms`) of `name` on
 * `client`; the outcome comes through the callback: RESOLVED, then either DONE at once (the
 * slot was decided), or, once elected, START ... reign_slot_finish() ... DONE, possibly with
 * STOP and a later START in between (the leadership was lost and regained).  The election is
 * resigned before DONE is delivered, so a program may exit when it gets DONE.
 *
 * Fails with REIGN_ENAME (name or key), REIGN_EINVAL (options: no slot or both, a period
 * shorter than the client's session timeout or lease once it is known, deadline without
 * period, retries out of range or with at_most_once, keep out of range), REIGN_ECLOSED.  A call
 * that fails never calls back.
 */
REIGN_EXPORT int reign_slot_start(reign_slot **ret, reign_client *client, const char *name,
                                  const reign_slot_options *opts);

/*
 * The work of the current attempt has ended: `exit_status` (0 success) or, if `term_signal`
 * is not 0, killed by that signal.  Call it once per START, also after a STOP.  REIGN_ESTATE
 * if no work is running.
 */
REIGN_EXPORT int reign_slot_finish(reign_slot *slot, int exit_status, int term_signal);

/*
 * The same, for work the caller stopped because its leadership was ending - at a STOP, or on
 * its own when the guarantee (START's valid_until_ns) was about to run out before a STOP came.
 * Recorded as stopped (unless it exited 0: a success is one), and the copy stands on for the
 * slot instead of concluding that it ran it and failed.
 */
REIGN_EXPORT int reign_slot_finish_stopped(reign_slot *slot, int exit_status, int term_signal);

/*
 * This copy stops taking part once the work in progress has ended and its end is recorded (a
 * program told to stop, by SIGTERM say): DONE follows then - RAN_OK, RAN_FAILED or UNRECORDED
 * - even if the leadership ended meanwhile, instead of standing on for another attempt.
 * REIGN_ESTATE if no work is in progress (free the slot instead: nothing ran).
 */
REIGN_EXPORT int reign_slot_stand_down(reign_slot *slot);

/* The slot's key ("" until RESOLVED). */
REIGN_EXPORT const char *reign_slot_key(const reign_slot *slot);
/* The start of the slot's period (Unix ms, store clock), 0 without every_ms or before RESOLVED. */
REIGN_EXPORT int64_t reign_slot_start_ms(const reign_slot *slot);
/* The election the slot stands in, or NULL while it does not stand. */
REIGN_EXPORT reign_election *reign_slot_election(const reign_slot *slot);
REIGN_EXPORT void *reign_slot_userdata(const reign_slot *slot);

/*
 * Frees the slot.  If work is running, its attempt is left as it is in the record (a later
 * leader marks it lost): stop the work first.  If it stands, it resigns without waiting.
 * NULL-safe; returns NULL.  Safe from inside the slot's own callback.  reign_client_free()
 * frees the client's slots with it (without callbacks): do not free them after it.
 */
REIGN_EXPORT reign_slot *reign_slot_free(reign_slot *slot);

/* ---- the record, for tools ------------------------------------------------- */

/* err is 0 or a negative code; slots newest first, borrowed for the call. */
typedef void reign_slot_history_cb(reign_client *client, int err, const reign_slot_record *slots,
                                   size_t n_slots, void *userdata);

/*
 * Reads the record of the `last` most recent slots of `name` (0: all kept), newest first.  No
 * record is not an error (n_slots 0).  Pending reads complete with REIGN_ECLOSED when the client
 * closes.
 */
REIGN_EXPORT int reign_slot_history(reign_client *client, const char *name, unsigned last,
                                    reign_slot_history_cb *cb, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
