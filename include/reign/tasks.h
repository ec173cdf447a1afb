/*
 * reign/tasks.h - a master-worker task queue on ZooKeeper and the SQL stores
 * (the ZooKeeper book's master-worker example made a job queue; docs/tasks.md).
 *
 * Clients submit tasks (an opaque payload) to a named queue.  One master,
 * elected among any number of standby masters, assigns each task to one live
 * worker; the worker runs it and records its result (an exit status and an
 * output).  Every submitted task reaches a final status exactly once, even
 * when a master, a worker or a client loses its connection or dies at any
 * point; a task whose worker dies is assigned again; a submit retried after
 * a connection loss never creates a second task.  A task whose worker dies
 * while running it may have been started twice (the first run cut short): its
 * result is recorded once.
 *
 * Layout (ZooKeeper), for queue Q:
 *   /reign/tasks/Q/tasks/t_<guid>_<seq>    submitted, not yet assigned
 *   /reign/tasks/Q/data/<tag>/<guid>       its payload, while pending or assigned (the
 *                                          tag: the guid's first 4 digits, drawn by the
 *                                          client that submitted it, a new one every 1024)
 *   /reign/tasks/Q/assign/W/t_<guid>_<seq> assigned to worker W
 *   /reign/tasks/Q/status/t_<guid>_<seq>   the result (the final status)
 *   the group "tasks.Q" (<reign/group.h>)     the live workers, by id
 *   the election "tasks.Q" (<reign/election.h>) the masters
 * A task's name is its id.
 *
 * All callbacks run inside reign_client_process() on the loop thread (see
 * <reign/client.h>).  From a callback you may call any function here,
 * including the *_free() function of the object calling back.  A call that
 * fails never calls back.
 *
 * On a SQL store (SQLite, PostgreSQL, MariaDB) a queue is one table beside the
 * lease table, "<table>_tasks", one row per task (docs/tasks.md, "On a SQL
 * store"), with the same functions and promises: the master is the lease
 * election "tasks.Q" and each of its writes is fenced by its lease (its term);
 * a worker is a registration in the group "tasks.Q" and its result is written
 * only while the task's row names that registration.  Where this file speaks
 * of ZooKeeper's nodes and multis, the SQL store has the row and one UPDATE.
 */
#ifndef REIGN_TASKS_H
#define REIGN_TASKS_H

#include <stdint.h>

#include <reign/client.h>
#include <reign/common.h>
#include <reign/election.h>
#include <reign/limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REIGN_TASKS_QUEUE_MAX, REIGN_TASKS_WORKER_MAX, REIGN_TASKS_TASK_MAX, REIGN_TASK_DATA_MAX,
 * REIGN_TASK_OUTPUT_MAX: <reign/limits.h>. */

/* Where a task is. */
typedef enum reign_task_state {
    REIGN_TASK_PENDING = 1, /* submitted, waiting for a worker */
    REIGN_TASK_ASSIGNED,    /* assigned to a worker (running, or about to) */
    REIGN_TASK_DONE         /* its result is recorded */
} reign_task_state;

/* "pending", "assigned", "done". */
REIGN_EXPORT const char *reign_task_state_name(reign_task_state state);

/* A task as read from the queue.  Borrowed: see each place it is given. */
typedef struct reign_task_info {
    const char *task;       /* its id (a node name) */
    reign_task_state state; /* where it is */
    const char *worker;     /* ASSIGNED, DONE: the worker; else NULL */
    int exit_code;          /* DONE: the command's exit code, or 128 + signal */
    int signal;             /* DONE: the signal that ended the command, or 0 */
    const void *output;     /* DONE: the recorded output */
    size_t output_len;      /* DONE */
    int64_t submitted_ms;   /* Unix ms by the submitter's clock, 0 if unknown */
    int64_t done_ms;        /* DONE: Unix ms by the store's clock */
} reign_task_info;

/* ---- submitting and reading ---------------------------------------------- */

/* err is 0 or a negative code; task is the new task's id (borrowed for the call). */
typedef void reign_tasks_submit_cb(reign_client *client, int err, const char *task, void *userdata);

/*
 * Submits a task with payload data[0..len) to `queue` ([A-Za-z0-9._:-]{1,180},
 * not "." or "..").  The callback gets the task's id.  The payload is
 * stored with a random guid chosen before the create is sent: if the answer
 * is lost with the connection, the queue is searched for that guid (pending,
 * assigned or done) before creating again, so a task is created once.
 * REIGN_ENAME for a bad queue name, REIGN_E2BIG for a payload over
 * REIGN_TASK_DATA_MAX, REIGN_ECLOSED if the client is closing.
 */
REIGN_EXPORT int reign_tasks_submit(reign_client *client, const char *queue, const void *data,
                                    size_t len, reign_tasks_submit_cb *cb, void *userdata);

/* err is 0 or a negative code; info borrowed for the call (NULL on error). */
typedef void reign_tasks_info_cb(reign_client *client, int err, const reign_task_info *info,
                                 void *userdata);

/*
 * Reads where task `task` of `queue` is, with its result if it is done.
 * REIGN_ENOENT (through the callback) if the queue has no such task (never
 * submitted, or its result was deleted).
 */
REIGN_EXPORT int reign_tasks_status(reign_client *client, const char *queue, const char *task,
                                    reign_tasks_info_cb *cb, void *userdata);

/*
 * Waits until task `task` of `queue` is done and calls back once with its
 * result (state DONE).  Any task may be waited for, from any client.  The
 * waits of one client for the tasks one client submitted share one watch
 * (on the tasks' payload nodes, which go when the result is recorded), so a
 * burst of results costs one listing, then one read each.  Survives
 * connection losses and session expiries (re-armed on the new session, and
 * checked again every few seconds in case a notification was lost).  Calls
 * back with REIGN_ECLOSED when the client closes.  Pending waits are freed
 * with the client.
 */
REIGN_EXPORT int reign_tasks_wait(reign_client *client, const char *queue, const char *task,
                                  reign_tasks_info_cb *cb, void *userdata);

/* err is 0 or a negative code; tasks (pending, then assigned, then done,
 * each kind in submission order) borrowed for the call. */
typedef void reign_tasks_list_cb(reign_client *client, int err, const reign_task_info *tasks,
                                 size_t n, void *userdata);

/*
 * Lists every task of `queue` with its state (and, for done ones, the
 * result).  An empty list if the queue does not exist.  A task moving while
 * it is listed is shown once, in one of the states it was in.
 */
REIGN_EXPORT int reign_tasks_list(reign_client *client, const char *queue, reign_tasks_list_cb *cb,
                                  void *userdata);

typedef void reign_tasks_done_cb(reign_client *client, int err, void *userdata);

/*
 * Deletes the result of a done task.  REIGN_ENOENT if it has no result
 * (unknown, or not done yet: a pending or assigned task cannot be deleted).
 */
REIGN_EXPORT int reign_tasks_delete(reign_client *client, const char *queue, const char *task,
                                    reign_tasks_done_cb *cb, void *userdata);

/* ---- masters and workers ------------------------------------------------- */

typedef enum reign_tasks_event_type {
    REIGN_TASKS_ELECTED = 1, /* master: we lead (term); recovery follows */
    REIGN_TASKS_RECOVERED,   /* master: the state left by the last master is settled */
    REIGN_TASKS_DEMOTED,     /* master: we no longer lead; standing again */
    REIGN_TASKS_ASSIGNED,    /* master: task given to worker (from: its dead worker or NULL) */
    REIGN_TASKS_REGISTERED,  /* worker: registered; tasks will come */
    REIGN_TASKS_RUN,         /* worker: run task (data) and call reign_tasks_worker_done() */
    REIGN_TASKS_CANCEL,      /* worker: stop task now; do not report it (it goes to
                                another worker: our session was lost) */
    REIGN_TASKS_RECORDED,    /* worker: the result of task is recorded */
    REIGN_TASKS_ERROR        /* something failed; it is retried (error, message) */
} reign_tasks_event_type;

/* "elected", "recovered", "demoted", "assigned", "registered", "run", "cancel",
 * "recorded", "error". */
REIGN_EXPORT const char *reign_tasks_event_name(reign_tasks_event_type type);

typedef struct reign_tasks_event {
    reign_tasks_event_type type;
    const char *task;   /* ASSIGNED, RUN, CANCEL, RECORDED */
    const char *worker; /* ASSIGNED: the worker given the task */
    const char *from;   /* ASSIGNED: the dead worker it came from, or NULL */
    const void *data;   /* RUN: the payload */
    size_t data_len;
    uint64_t term;              /* ELECTED: the master's term */
    int error;                  /* ERROR */
    const char *message;        /* ERROR: detail, or NULL */
    reign_demote_reason reason; /* DEMOTED: why the leadership ended */
} reign_tasks_event;

typedef enum reign_tasks_strategy {
    REIGN_TASKS_LEAST_LOADED = 0, /* the live worker with the fewest assigned tasks */
    REIGN_TASKS_RANDOM            /* a live worker at random (the book's choice) */
} reign_tasks_strategy;

/* "least_loaded", "random"; and the reverse (REIGN_EINVAL for others). */
REIGN_EXPORT const char *reign_tasks_strategy_name(reign_tasks_strategy s);
REIGN_EXPORT int reign_tasks_strategy_parse(const char *s);

typedef struct reign_tasks_master reign_tasks_master;

/* Event data is borrowed for the duration of the call only. */
typedef void reign_tasks_master_cb(reign_tasks_master *master, const reign_tasks_event *event,
                                   void *userdata);

typedef struct reign_tasks_master_options {
    size_t size;    /* sizeof(reign_tasks_master_options) */
    const char *id; /* candidate id; NULL: "<hostname>-<pid>" */
    reign_tasks_strategy strategy;
    int64_t retention_ms; /* delete results older than this (by the store's
                             clock); 0: keep them until deleted */
    reign_tasks_master_cb *cb;
    void *userdata;
} reign_tasks_master_options;

/*
 * Stands in the master election of `queue`.  The leader recovers the state
 * left by the last one, then assigns every pending task to a live worker
 * (tasks wait while no worker is registered) and moves the tasks of workers
 * that are gone to live ones.  Each assignment is one multi that checks the
 * leader's own election node, creates the assignment and deletes the task's
 * old node, so a deposed master can no longer assign and a task is always in
 * exactly one place.  Each live
 * worker holds at most its prefetch (reign_tasks_worker_options) at once; the rest wait.
 * REIGN_ENAME for a bad queue name, REIGN_EINVAL for bad options.
 */
REIGN_EXPORT int reign_tasks_master_start(reign_tasks_master **ret, reign_client *client,
                                          const char *queue,
                                          const reign_tasks_master_options *opts);

/* 1 if this master leads and has finished its recovery. */
REIGN_EXPORT int reign_tasks_master_is_active(const reign_tasks_master *master);

/* Leaves the election and frees.  NULL-safe; returns NULL.  Safe from its
 * own callback (no callback follows). */
REIGN_EXPORT reign_tasks_master *reign_tasks_master_free(reign_tasks_master *master);

typedef struct reign_tasks_worker reign_tasks_worker;

typedef void reign_tasks_worker_cb(reign_tasks_worker *worker, const reign_tasks_event *event,
                                   void *userdata);

typedef struct reign_tasks_worker_options {
    size_t size;     /* sizeof(reign_tasks_worker_options) */
    const char *id;  /* worker id ([A-Za-z0-9._:-]{1,200}); unique among live workers */
    int concurrency; /* tasks run at once; default 1 */
    reign_tasks_worker_cb *cb;
    void *userdata;
    /* The most tasks the master gives this worker at once, running ones included (the rest
     * wait in the queue, for whichever worker is least loaded); default 4 x concurrency, at
     * least concurrency, at most 40000.  Above concurrency, the worker has its next tasks at
     * hand when one finishes; set it to concurrency for long tasks, so that none waits
     * behind a busy worker while another is idle. */
    int prefetch;
} reign_tasks_worker_options;

/*
 * Registers worker `id` in `queue` and starts taking its assigned tasks:
 * RUN for each (at most `concurrency` at once: a task counts from RUN until
 * reign_tasks_worker_done(), while its result is written the next one may
 * run), to be answered with reign_tasks_worker_done().  Up to `concurrency`
 * more assigned tasks are read ahead, so that the next one runs as soon as a
 * slot frees.  REIGN_EINVAL if prefetch < concurrency.  A task found assigned to us that already
 * has a result (we died after recording it) is not run again.  When the session is lost every
 * running task gets CANCEL (the master gives them to other workers).  REIGN_ENAME for a bad queue
 * name or id.
 */
REIGN_EXPORT int reign_tasks_worker_start(reign_tasks_worker **ret, reign_client *client,
                                          const char *queue,
                                          const reign_tasks_worker_options *opts);

/*
 * Records the result of a task given by RUN: exit_code (0 success; 128 + signal
 * by the tools' convention), signal (the signal that killed it, or 0) and
 * output (truncated to REIGN_TASK_OUTPUT_MAX).  The status is created in one
 * multi with a check that the assignment is still ours (so a task taken away
 * cannot get our result, and no task gets two) and the assignment's
 * deletion; RECORDED follows.  A lost answer is settled by reading the status
 * before writing again.  The slot is free at once: the next task's RUN comes
 * from reign_client_process() (later in the same call when this is called from
 * a callback), never from inside this call, so it may be called from RUN
 * itself.  REIGN_ENOENT if the task is not one we run,
 * REIGN_EINVAL for an exit code outside -1..255 or a signal outside 0..255.
 */
REIGN_EXPORT int reign_tasks_worker_done(reign_tasks_worker *worker, const char *task,
                                         int exit_code, int signal, const void *output,
                                         size_t output_len);

/* The number of tasks running: RUN given, reign_tasks_worker_done() not yet
 * called.  At most `concurrency`.  Tasks read ahead do not count, nor results
 * being written: their task is no longer running. */
REIGN_EXPORT size_t reign_tasks_worker_running(const reign_tasks_worker *worker);

/*
 * Until when (CLOCK_MONOTONIC, as reign_now_ns()) no task running here can be given to another
 * worker: the master moves a worker's tasks only once its session has expired on the server,
 * and that cannot happen before this moment (the last answer that proved the session, plus
 * three quarters of the session timeout).  A program that must never run a task beside
 * another worker's kills it before then, even when its own loop cannot turn - from a process
 * of its own, as `reign tasks worker` does with its leash: a stopped or stalled worker still
 * looks registered until its session expires.  While registered the worker proves its session
 * five times per session timeout (as a leader does), so in normal operation this stays more
 * than half a session timeout ahead; when it passes with the connection suspended, running
 * tasks get CANCEL.  0 until the worker's first write on a session has been answered, and
 * from the moment the session may be lost until it is proven again.  On a SQL store it is the
 * client's SQL session's bound (the send of its last renewal, plus the lease, minus the
 * margin), 0 while the worker is not registered: its registration's row, which the master
 * waits for to be gone, outlives that bound.  Read it again every turn
 * of the loop: it moves on by itself.
 */
REIGN_EXPORT int64_t reign_tasks_worker_valid_until_ns(const reign_tasks_worker *worker);

/* Unregisters and frees; running tasks are not reported (the master gives
 * them to other workers).  NULL-safe; returns NULL.  Safe from its own
 * callback. */
REIGN_EXPORT reign_tasks_worker *reign_tasks_worker_free(reign_tasks_worker *worker);

#ifdef __cplusplus
}
#endif
#endif
