/*
 * tasks.h - reign's task queues (<reign/tasks.h>) in a SQL store: the table
 * "<lease table>_tasks", one row per task, beside the lease table whose row "tasks.Q" elects
 * the queue's master.
 *
 *   id            the task's number: an auto-increment key, growing in submission order
 *   data_center   as in the lease table
 *   queue_name    the queue (<reign/tasks.h>: [A-Za-z0-9._:-]{1,180})
 *   guid          16 hex digits drawn by the submitter before it sends the submit; UNIQUE per
 *                 (data_center, queue_name): a submit sent again after a lost answer finds the
 *                 row the first one made, never makes a second
 *   state         1 pending, 2 assigned, 3 done (reign_task_state)
 *   worker, worker_guid   assigned, done: the worker's id and its registration's guid in the
 *                 group "tasks.Q" (the worker's token: its result is written only while the
 *                 row still names it)
 *   term          assigned, done: the term of the master's lease that assigned it
 *   requeued      how many times the task was taken back from a worker that was gone
 *   data          the payload, while pending or assigned (NULL once done)
 *   exit_code, exit_signal, output   done: the result
 *   submitted_ms, assigned_ms, done_ms   the database's clock, Unix ms: for people only
 *   UNIQUE (guid, data_center, queue_name), UNIQUE (data_center, queue_name, state, id) (the
 *   second is an index for the master's pick and for listings, declared as a constraint so that
 *   CREATE TABLE makes it in every dialect; id alone is unique already).  Only the second
 *   starts with the queue's columns, and statements name those only with the state: rows
 *   known by id are read and written by id alone, whatever the planner's statistics say.
 *
 * A task's name is "t_<guid>_<id, 10 digits>", as on ZooKeeper, and a row is found by both.
 *
 * Exactly once rests on one rule: every change of a row's state is one UPDATE whose WHERE
 * clause names the state (and the worker) it expects, so of two writers racing for a row one
 * changes it and the other changes nothing.  The master's writes (assign, requeue, sweep) are
 * also fenced by its lease: each runs in a transaction that first locks the lease row of
 * "tasks.Q" and checks that it still names the master and its term and is neither released
 * nor deposed (runs.c's fence), so a deposed master changes nothing, however late its statement
 * comes. The worker's result is fenced by its registration guid: a worker taken for dead had its
 * rows re-queued (worker_guid cleared) and its late result changes nothing.
 *
 * PostgreSQL and MariaDB pick pending rows with FOR UPDATE SKIP LOCKED, so that a pick never
 * waits for a row another transaction holds; SQLite has one writer at a time (BEGIN IMMEDIATE)
 * and needs no row locks.  Every write sends, in its transaction, a NOTIFY (PostgreSQL) to those
 * it concerns: results and deletions to the queue's name REIGN__TASKS_LISTEN "Q" (its master
 * and its waiters); submits to REIGN__TASKS_LISTEN "Q" REIGN__TASKS_SUBMITTED (its master
 * alone); assignments to each worker given tasks, REIGN__TASKS_LISTEN "Q" REIGN__TASKS_WORKERS
 * "/" its id, or to all of them, REIGN__TASKS_LISTEN "Q" REIGN__TASKS_WORKERS, when a round
 * gives to more than a few; a take-back to the queue's name and all the workers'.  A result's
 * notice names the tasks it finished (its hint, reign__sql_notify_hint(): "12,15,16"), so that
 * a waiter reads those of its tasks alone, not every task it waits for, at every result.  A
 * worker of a busy queue is so not woken by every submit, every other worker's result or
 * assignment, nor a waiting client by every submit.  SQLite's file change and MariaDB's poll do
 * the rest (they wake everyone, who read all they follow).
 *
 * The table is made on first use; one of a foreign layout is refused (REIGN_EFOREIGN), never
 * changed.  A row reign could not have written (a state out of range, a guid that is not 16
 * hex digits, a payload or output over the limits) reads as REIGN_EFOREIGN and is skipped by
 * listings.  Everything here blocks: it runs on the SQL client's worker thread.  Private.
 */
#ifndef REIGN_SQL_TASKS_H
#define REIGN_SQL_TASKS_H

#include <reign/limits.h>
#include <reign/tasks.h>

#include "sql.h"

/* Prefix of the name a queue's writes notify and its watchers listen on: "reign/tasks/Q" (a
 * '/', so never an election's name). */
#define REIGN__TASKS_LISTEN "reign/tasks/"
/* Appended to the queue's name for the notices its workers listen to (assignments), and for
 * those its master listens to besides the queue's own (submits). */
#define REIGN__TASKS_WORKERS   "/assigned"
#define REIGN__TASKS_SUBMITTED "/submitted"
/* Appended to the queue's name for one worker's own assignments, with its id for the %s. */
#define REIGN__TASKS_WORKER_OWN REIGN__TASKS_WORKERS "/%s"
/* The longest name a queue's notices go to, with its NUL: one worker's. */
#define REIGN__TASKS_LISTEN_MAX                                                                    \
    (sizeof REIGN__TASKS_LISTEN + REIGN_TASKS_QUEUE_MAX + sizeof REIGN__TASKS_WORKERS +            \
     REIGN_TASKS_WORKER_MAX + 1)
/* Workers given tasks in one round, at most, that are told one by one. */
#define REIGN__TASKS_TELL_EACH_MAX 8

/* A fenced write refused: the lease no longer names this master (see above). */
#define REIGN__TASKS_DEPOSED 2

/* The master's token: its lease in the lease table, by name ("tasks.Q").  A term names one
 * leadership (every take adds one); the owner is checked too, and the lease must be neither
 * released nor deposed (owner_guid REIGN__SQL_DEPOSED, by `reign cede`). */
typedef struct reign__tasks_fence {
    const char *name;  /* the lease's lock_name */
    const char *owner; /* its owner: the master's candidate id */
    uint64_t term;     /* its term */
} reign__tasks_fence;

typedef struct reign__task_row {
    int64_t id;
    char guid[17];
    char name[REIGN_TASKS_TASK_MAX + 1]; /* t_<guid>_<id> */
    reign_task_state state;
    char worker[REIGN_TASKS_WORKER_MAX + 1];
    char worker_guid[65];
    uint64_t term;
    int requeued;
    void *data; /* allocated (reign__free), NULL when data_len is 0 */
    size_t data_len;
    int exit_code, exit_signal;
    void *output; /* allocated, NULL when output_len is 0 */
    size_t output_len;
    int64_t submitted_ms, assigned_ms, done_ms;
} reign__task_row;

typedef struct reign__task_rows {
    size_t n;
    reign__task_row *v;
} reign__task_rows;

void reign__task_row_clear(reign__task_row *r);
void reign__task_rows_free(reign__task_rows *rows);

/* A task name's guid and id; false if it is not one ("t_" + 16 hex + "_" + 10 digits). */
bool reign__tasks_sql_name_parse(const char *name, char guid[17], int64_t *id);

/*
 * Submits: inserts the row of `guid` unless one exists.  0 and *out (id, name, state: the new
 * row, or the one a former submit of the same guid made), or a negative code.  *made says
 * whether this call made it.
 */
int reign__tasks_submit(reign__sqlconn *c, const char *dc, const char *queue, const char *guid,
                        const void *data, size_t len, reign__task_row *out, bool *made, char *err,
                        size_t errlen);

/* One submission of a batch: what to submit, and what it made or found (as above). */
typedef struct reign__tasks_submission {
    const char *queue, *guid;
    const void *data;
    size_t len;
    reign__task_row row; /* out */
    bool made;           /* out */
} reign__tasks_submission;

/*
 * Submits v[0..n) in one transaction, each as reign__tasks_submit() would, in INSERTs of many
 * rows (and each queue that gained a task notified once): rcs[i] is submission i's result, 0
 * or its own negative code (REIGN_EINVAL, REIGN_EFOREIGN); returns 0, or the negative code of
 * a statement that failed, after which nothing was submitted.  A reign__sqlw_batch_fn's core.
 */
int reign__tasks_submit_batch(reign__sqlconn *c, const char *dc, reign__tasks_submission *const *v,
                              int *rcs, size_t n, char *err, size_t errlen);

/*
 * The tasks among names[0..n) (task names, any order) that are done, with their results, into
 * out (allocated; reign__task_rows_free()): what a client's waits on one queue read at each
 * change.  One SELECT per REIGN__TASKS_DONE_CHUNK names, whatever their number.  A name that
 * is not a task's, or a task not there (or not reign's), is simply not done.  0 or a negative
 * code.
 */
#define REIGN__TASKS_DONE_CHUNK 256
int reign__tasks_done(reign__sqlconn *c, const char *dc, const char *queue, char *const *names,
                      size_t n, reign__task_rows *out, char *err, size_t errlen);

/* Reads the task `name` (with its result; with its payload if with_data).  0, REIGN_ENOENT
 * (no such task), REIGN_EFOREIGN or another negative code. */
int reign__tasks_read(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                      bool with_data, reign__task_row *out, char *err, size_t errlen);

/* Every task of the queue, pending then assigned then done, each in id order, without their
 * payloads (foreign rows skipped).  0 or a negative code. */
int reign__tasks_list(reign__sqlconn *c, const char *dc, const char *queue, reign__task_rows *out,
                      char *err, size_t errlen);

/* Deletes the result of a done task.  0, REIGN_ENOENT (unknown, or not done), or a negative
 * code. */
int reign__tasks_delete(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                        char *err, size_t errlen);

/* ---- the master: fenced by its lease -------------------------------------------------------- */

/*
 * Assigns up to `max` pending tasks, oldest first, to the worker (id, registration guid), in
 * one transaction fenced by `f`.  0 and *out (the rows assigned, without payloads; may be
 * none), REIGN__TASKS_DEPOSED, or a negative code.
 */
int reign__tasks_assign(reign__sqlconn *c, const char *dc, const char *queue,
                        const reign__tasks_fence *f, const char *worker, const char *worker_guid,
                        size_t max, reign__task_rows *out, char *err, size_t errlen);

/* One worker's share of a round: who (id, registration guid) and how many at most (in), the
 * rows given (out: without payloads; may be none). */
typedef struct reign__tasks_give {
    const char *worker, *worker_guid;
    size_t max;
    reign__task_rows rows;
} reign__tasks_give;

/*
 * As reign__tasks_assign() for several workers in one transaction fenced by `f`: one pick of
 * the oldest pending tasks for all of them, then each worker its share in the order given (the
 * first the oldest), one UPDATE each, and a notice to each worker given tasks (to all, when
 * more than REIGN__TASKS_TELL_EACH_MAX are).  0 (each g[i].rows set; fewer
 * than asked in all: nothing else pending), REIGN__TASKS_DEPOSED, or a negative code (no rows).
 */
int reign__tasks_assign_many(reign__sqlconn *c, const char *dc, const char *queue,
                             const reign__tasks_fence *f, reign__tasks_give *g, size_t n, char *err,
                             size_t errlen);

/* Takes back every task assigned to the registration `worker_guid` (a worker gone), fenced by
 * `f`: they are pending again.  The number taken back (0: none, or taken back already), or a
 * negative code; *deposed set (and nothing changed) when the fence refused. */
int reign__tasks_requeue(reign__sqlconn *c, const char *dc, const char *queue,
                         const reign__tasks_fence *f, const char *worker_guid, bool *deposed,
                         char *err, size_t errlen);

/* The assigned tasks per registration guid: rows of (worker_guid, count).  0 or a negative
 * code. */
int reign__tasks_load(reign__sqlconn *c, const char *dc, const char *queue, reign__sql_rows *out,
                      char *err, size_t errlen);

/* Deletes the results older than retention_ms by the database's clock, fenced by `f`.  The
 * number deleted, or a negative code; *deposed set when the fence refused. */
int reign__tasks_sweep(reign__sqlconn *c, const char *dc, const char *queue,
                       const reign__tasks_fence *f, int64_t retention_ms, bool *deposed, char *err,
                       size_t errlen);

/* ---- the worker: fenced by its registration ------------------------------------------------- */

/* The tasks assigned to the registration `worker_guid`, in id order, with their payloads.
 * 0 or a negative code. */
int reign__tasks_assigned(reign__sqlconn *c, const char *dc, const char *queue,
                          const char *worker_guid, reign__task_rows *out, char *err, size_t errlen);

/*
 * Records the result of task `name`, if it is still assigned to `worker_guid`: 0 (recorded
 * now), 1 (recorded already, by this registration: an earlier call whose answer was lost),
 * REIGN_ENOENT (not ours: taken back, or gone), or a negative code.  Output over
 * REIGN_TASK_OUTPUT_MAX is cut.
 */
int reign__tasks_finish(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                        const char *worker_guid, int exit_code, int exit_signal, const void *output,
                        size_t output_len, char *err, size_t errlen);

/* One result of a batch (as reign__tasks_finish()'s arguments). */
typedef struct reign__tasks_result {
    const char *queue, *name, *worker_guid;
    int exit_code, exit_signal;
    const void *output;
    size_t output_len;
} reign__tasks_result;

/*
 * Records v[0..n) in one transaction, each as reign__tasks_finish() would, one UPDATE for the
 * results of one queue and registration (each queue with a result recorded notified once):
 * rcs[i] is result i's answer (0, 1 or REIGN_ENOENT, as above; when not all of an UPDATE's
 * rows changed, those recorded answer 1, now or before); returns 0, or the negative code of a
 * statement that failed, after which nothing was recorded.  A reign__sqlw_batch_fn's core.
 */
int reign__tasks_finish_batch(reign__sqlconn *c, const char *dc,
                              const reign__tasks_result *const *v, int *rcs, size_t n, char *err,
                              size_t errlen);

/* ---- `reign ls` and `reign rm` (<reign/store.h>) -------------------------------------------- */

/* The queues that have rows in data center dc, sorted, one a row (no table: none).  0 or a
 * negative code. */
int reign__tasks_queues(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                        size_t errlen);

/*
 * Removes queue `queue` in one transaction: its workers' group "tasks.Q" (only if no member of
 * a live session stands in it: members.h), its master's lease row "tasks.Q" (if `master`, the
 * row as read, in which nobody stands: cleared at that version, its term kept, as
 * reign__sql_catalog_clear() clears an election) and its tasks (none of them foreign).
 * Decided in the transaction that deletes: a worker that registers, or a master that takes the
 * lease, before it commits makes it change nothing.  A task submitted meanwhile is deleted with
 * the others if its insert came first, and begins the queue anew if it came after.  1
 * (removed), 0 (no such queue: no row of any), REIGN_EBUSY (a worker stands, or the lease moved
 * since it was read), REIGN_EFOREIGN (a task row reign could not have written), or another
 * negative code; nothing is changed unless 1.
 */
int reign__tasks_remove_queue(reign__sqlconn *c, const char *dc, const char *queue,
                              const reign__lease *master, char *err, size_t errlen);

#endif
