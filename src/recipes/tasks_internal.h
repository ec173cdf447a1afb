/*
 * tasks_internal.h - what the task queue's files share (tasks.c: names,
 * paths, records and the one-shot requests; tasks_master.c; tasks_worker.c).
 *
 *   /reign/tasks/Q                      persistent; record kind=tasks
 *   /reign/tasks/Q/tasks/t_<guid>_<seq> persistent sequential; record guid=,
 *                                       submitted_ms=
 *   /reign/tasks/Q/data/<tag>           container: the payloads of one client's submits
 *                                       (tag: the first 4 hex digits of their guids)
 *   /reign/tasks/Q/data/<tag>/<guid>    the task's record with its payload, made with
 *                                       tasks/T, deleted with assign/W/T
 *   /reign/tasks/Q/assign/W             persistent, made by worker W (or the master)
 *   /reign/tasks/Q/assign/W/<task>      empty
 *   /reign/tasks/Q/status/<task>        record worker=, exit=, signal= + output
 *   group "tasks.Q", election "tasks.Q" the workers and the masters
 */
#ifndef REIGN_TASKS_INTERNAL_H
#define REIGN_TASKS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <reign/tasks.h>

#include "client_internal.h"
#include "record.h"

#define REIGN__TASKS_DIR        REIGN__ZK_ROOT "/tasks"
#define REIGN__TASKS_GUID_BYTES 8 /* 16 hex digits */
#define REIGN__TASKS_TAG_DIGITS 4 /* a guid's first digits: its payload's bucket */
#define REIGN__TASKS_PREFIX     "tasks."

/* 0 or REIGN_ENAME: a queue name, or a worker id (one path segment each). */
int reign__tasks_queue_check(const char *queue);
int reign__tasks_worker_check(const char *id);

/* Parses a task name "t_<16 hex>_<10 digits>"; false for anything else.
 * guid (17 bytes) may be NULL. */
bool reign__task_name_parse(const char *name, char *guid, uint64_t *seq);

/* printf into a new string, or NULL on OOM. */
char *reign__tasks_strf(const char *fmt, ...) REIGN__PRINTF(1, 2);

/* "/reign/tasks/Q[/a[/b[/c]]]" (NULL parts end it), or NULL on OOM. */
char *reign__tasks_path(const char *queue, const char *a, const char *b, const char *c);

/* "/reign/tasks/Q/data/<tag>/<guid>": where the payload of task `task` is kept while the task
 * is pending or assigned; NULL if `task` is not a task name, or on OOM. */
char *reign__tasks_payload_path(const char *queue, const char *task);
/* The same from a guid (a task not named yet: its submit). */
char *reign__tasks_guid_payload_path(const char *queue, const char *guid);

/* "/reign/tasks/Q/data/<tag>": the bucket of the payloads whose guids start with the tag (a
 * container node: the server deletes it some time after its last child went), or NULL. */
char *reign__tasks_bucket_path(const char *queue, const char *guid);

/*
 * A new task guid for client c (17 bytes): the client's tag (random, drawn again every 1024
 * guids), then random digits.  The tasks a client submits thus share a bucket (or a few), so
 * that its waits share a watch (tasks_bucket.c).  0, or REIGN_ENOMEM / a random source's error.
 */
int reign__tasks_new_guid(reign_client *c, char *guid);

/*
 * Making the bucket of a guid (the client's current tag) in a queue, data/<tag>
 * (tasks_bucket.c).  _prepare, before each submit's multi: the first time for this queue and
 * tag, sends the bucket's create (a container, no callback) ahead of the multi; returns what
 * the multi is to hand to _missing.  _missing, when the multi failed with ENOENT (a new queue,
 * or the bucket deleted by the server once empty): makes the queue's directories and the
 * bucket again, unless another submit already did since that multi was sent; the multi sent
 * next finds them.
 */
unsigned reign__tasks_bucket_prepare(reign_client *c, const char *queue, const char *guid);
void reign__tasks_bucket_missing(reign_client *c, const char *queue, const char *guid,
                                 unsigned made);

/*
 * Waiting for results, by payload bucket (tasks_bucket.c).  A task's payload node goes in the
 * same transaction that records its result; the waits of one client on one bucket share one
 * child watch on it and one listing per change, instead of an exists each.  `gone` is called
 * (on the loop, once, the wait already stopped) when a listing of the bucket sent after
 * reign__tasks_wait_start() no longer shows the task's payload: its result should be there
 * (the caller reads it, and falls back to watching status/T if not: a task submitted on
 * another session and not yet seen, or a result deleted meanwhile).
 */
typedef struct reign__tasks_wait reign__tasks_wait;
typedef void reign__tasks_gone_cb(reign__tasks_wait *w);
struct reign__tasks_wait {
    reign__tasks_wait *prev, *next;
    void *bucket; /* NULL: not waiting */
    char guid[2 * REIGN__TASKS_GUID_BYTES + 1];
    uint64_t after; /* the bucket's listings sent when the wait began */
    bool ended;     /* its payload is gone: in the bucket's list of waits to call back */
    reign__tasks_gone_cb *gone;
};
/* 0, REIGN_ENAME (task is not a task name) or REIGN_ENOMEM. */
int reign__tasks_wait_start(reign_client *c, const char *queue, const char *task,
                            reign__tasks_wait *w, reign__tasks_gone_cb *gone);
/* Stops a wait (nothing if it is not waiting). */
void reign__tasks_wait_stop(reign__tasks_wait *w);

/*
 * A worker's group payload, "concurrency=N\nprefetch=M": what it runs at once and the most
 * tasks the master may give it.  _build writes it (buf: at least REIGN__TASKS_LIMITS_MAX
 * bytes; returns its length).  _parse reads what any worker registered, foreign data
 * included, and never fails: a missing or malformed concurrency is 1; a missing or malformed
 * prefetch is 2 x concurrency; one below concurrency or above 400000 (however many digits)
 * is concurrency.
 */
#define REIGN__TASKS_LIMITS_MAX 48
size_t reign__tasks_limits_build(char *buf, int concurrency, int prefetch);
void reign__tasks_limits_parse(const void *data, size_t len, size_t *concurrency, size_t *prefetch);

/* "tasks.Q": the queue's group and election, or NULL on OOM. */
char *reign__tasks_group_name(const char *queue);

/* Creates the queue's directories if they are missing (no callback; the
 * requests that follow on the same session find them). */
void reign__tasks_make_dirs(reign__zk *zk, const char *queue);

/* The status record of a result. */
int reign__tasks_status_build(reign__buf *out, const char *worker, int exit_code, int signal,
                              const void *output, size_t len);

/*
 * Fills info (state DONE) from a status node's data and stat; strings point
 * into rec, which the caller clears.  REIGN_EFOREIGN for data that is not a
 * status record.
 */
int reign__tasks_status_parse(const char *value, size_t len, const reign__zk_stat *st,
                              reign__record *rec, reign_task_info *info);

/* Sorts task names by their sequence number (submission order). */
void reign__tasks_sort_names(char **names, size_t n);

/* ---- a small map from task names, for the master and the worker -------- */

typedef struct reign__tmap_entry {
    char *key;    /* NULL: free slot; a tombstone is key == reign__tmap_tomb */
    char *worker; /* master: the worker holding the task */
    int flags;
    uint64_t gen; /* master: the listing generation when the assignment was known to exist */
    void *ptr;    /* the user's */
} reign__tmap_entry;

typedef struct reign__tmap {
    reign__tmap_entry *v;
    size_t cap, n, used; /* used: live + tombstones */
} reign__tmap;

extern char reign__tmap_tomb[];

reign__tmap_entry *reign__tmap_get(const reign__tmap *m, const char *key);
/* The entry of key, made (all zero but key) if absent; NULL on OOM. */
reign__tmap_entry *reign__tmap_put(reign__tmap *m, const char *key);
/* Frees the entry's key and worker (not ptr). */
void reign__tmap_del(reign__tmap *m, reign__tmap_entry *e);
void reign__tmap_clear(reign__tmap *m);
/* Iteration: i from 0 while i < m->cap; slot i is live if this is true. */
static inline bool reign__tmap_live(const reign__tmap *m, size_t i)
{
    return m->v[i].key && m->v[i].key != reign__tmap_tomb;
}

#endif
