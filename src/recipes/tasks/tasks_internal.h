/*
 * tasks_internal.h - what the task queue's files share: the one-shot requests (tasks_zk.c,
 * tasks_sql.c), the master and the worker's public functions (tasks_api.c), the head both start
 * with (tasks_head.c) and each store's (tasks_master_zk.c, tasks_worker_zk.c,
 * tasks_master_sql.c, tasks_worker_sql.c), the client's payload buckets and the queue's
 * directories (tasks_bucket_zk.c) and the map of task names (tasks_map.c).  The queue's tree,
 * names, paths and records are in src/core/layout.h, with every other recipe's; its SQL table in
 * src/sql/tasks.h.
 *
 * Who calls whom, with no circle: tasks_api.c calls the four backends; the four call
 * tasks_head.c (which calls no other file of the queue); tasks_zk.c, tasks_master_zk.c and
 * tasks_worker_zk.c call tasks_bucket_zk.c and tasks_map.c; the SQL master and worker call
 * tasks_sql.c (which calls neither), tasks_map.c and src/sql/tasks.c; tasks_bucket_zk.c and
 * tasks_map.c call only layout.c and the layers below.
 */
#ifndef REIGN_TASKS_INTERNAL_H
#define REIGN_TASKS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <reign/election.h>
#include <reign/group.h>
#include <reign/tasks.h>

#include "client/client_internal.h"
#include "recipes/life.h"
#include "record.h"

/*
 * A new task guid for client c (17 bytes): the client's tag (random, drawn again every 1024
 * guids), then random digits.  The tasks a client submits thus share a bucket (or a few), so
 * that its waits share a watch (tasks_bucket_zk.c).  0, or REIGN_ENOMEM / a random source's error.
 */
int reign__tasks_new_guid(reign_client *c, char *guid);

/*
 * Making the bucket of a guid (the client's current tag) in a queue, data/<tag>
 * (tasks_bucket_zk.c).  _prepare, before each submit's multi: the first time for this queue and
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
 * Waiting for results, by payload bucket (tasks_bucket_zk.c).  A task's payload node goes in the
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

/* Creates the queue's directories if they are missing (no callback; the
 * requests that follow on the same session find them).  In tasks_bucket_zk.c. */
void reign__tasks_make_dirs(reign__zk *zk, const char *queue);

/* ---- the public master and worker: a head that either store's object starts with ------- */

/* What a master and a worker keep alike, whichever their store (tasks_head.c): the first part
 * of both heads below. */
typedef struct reign__tasks_base {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    const reign__logger *log;
    const char *role; /* "master" or "worker", for the log */
    char *queue, *gname, *id;
    void *userdata;
    reign__life life; /* the backend's epoch (see each), and a free deferred in a callback */
} reign__tasks_base;

/* What tasks_api.c hands a worker's backend: options checked, concurrency and prefetch set. */
typedef struct reign__tasks_worker_ops {
    /* Arguments checked (task non-NULL, codes in range). */
    int (*done)(reign_tasks_worker *w, const char *task, int exit_code, int signal,
                const void *output, size_t output_len);
    size_t (*running)(const reign_tasks_worker *w);
    int64_t (*valid_until)(const reign_tasks_worker *w);
    /* Frees it all now: freed by the application, and no frame of it on the stack. */
    void (*destroy)(reign_tasks_worker *w);
} reign__tasks_worker_ops;

struct reign_tasks_worker {
    reign__tasks_base base; /* first */
    const reign__tasks_worker_ops *ops;
    reign_tasks_worker_cb *cb;
    int concurrency, prefetch;
    reign_group *group; /* our registration in the group "tasks.Q" */
};

typedef struct reign__tasks_master_ops {
    int (*is_active)(const reign_tasks_master *m);
    void (*destroy)(reign_tasks_master *m); /* as the worker's */
} reign__tasks_master_ops;

struct reign_tasks_master {
    reign__tasks_base base; /* first */
    const reign__tasks_master_ops *ops;
    reign_tasks_master_cb *cb;
    reign_election *election; /* our candidacy in the election "tasks.Q" */
};

/*
 * Filling a head from checked options (tasks_head.c): the recipe's and the object's ops, the
 * client and its log, the queue's name and its group's, the id (a master's may be NULL: the
 * default one, reign__default_id()), the callback.  0, or REIGN_ENOMEM (or the default id's
 * error); on failure, as after use, reign__tasks_base_clear() frees what was filled.
 */
int reign__tasks_worker_init(reign_tasks_worker *w, const reign__tasks_worker_ops *ops,
                             const reign__recipe_ops *rops, reign_client *client, const char *queue,
                             const reign_tasks_worker_options *o);
int reign__tasks_master_init(reign_tasks_master *m, const reign__tasks_master_ops *ops,
                             const reign__recipe_ops *rops, reign_client *client, const char *queue,
                             const reign_tasks_master_options *o);
void reign__tasks_base_clear(reign__tasks_base *b);

/*
 * Every entry from outside (a store's answer or watch, a timer, a connection change) is
 * bracketed by reign__life_enter(&x->base.life) and these: a free asked meanwhile (tasks_api.c)
 * destroys the object here, last (recipes/life.h).
 */
void reign__tasks_worker_leave(reign_tasks_worker *w);
void reign__tasks_master_leave(reign_tasks_master *m);

/* Calls the application back (not after a free was asked); inside enter and leave. */
void reign__tasks_worker_emit(reign_tasks_worker *w, const reign_tasks_event *ev);
void reign__tasks_master_emit(reign_tasks_master *m, const reign_tasks_event *ev);
/* Logs a warning ("tasks Q: worker ID: what: error") and emits it as an ERROR event. */
void reign__tasks_worker_report(reign_tasks_worker *w, int err, const char *what);
void reign__tasks_master_report(reign_tasks_master *m, int err, const char *what);

/*
 * The last step of a backend's constructor, the object attached to its client.  A worker
 * registers in the group "tasks.Q" (w->group) with its concurrency and prefetch as payload, so
 * that the master gives it at most `prefetch` tasks; a master joins the election "tasks.Q"
 * (m->election) under its id, the leader the one that assigns.  0 with *ret set, or the
 * registration's (the join's) error with the object destroyed (ops->destroy).
 */
int reign__tasks_worker_register(reign_tasks_worker *w, reign_group_cb *cb, void *userdata,
                                 reign_tasks_worker **ret);
int reign__tasks_master_join(reign_tasks_master *m, reign_election_cb *cb, void *userdata,
                             reign_tasks_master **ret);

/* A destroy's part on the client, once the backend's own requests are forgotten: the group (the
 * election) freed, the object detached. */
void reign__tasks_worker_detach(reign_tasks_worker *w);
void reign__tasks_master_detach(reign_tasks_master *m);

/* Each backend's constructor (tasks_worker_zk.c, tasks_worker_sql.c, tasks_master_zk.c,
 * tasks_master_sql.c): the queue's name and the options checked, o->concurrency and o->prefetch
 * given their defaults, the client of its store and not closing. */
int reign__tasks_worker_zk(reign_tasks_worker **ret, reign_client *client, const char *queue,
                           const reign_tasks_worker_options *o);
int reign__tasks_worker_sql(reign_tasks_worker **ret, reign_client *client, const char *queue,
                            const reign_tasks_worker_options *o);
int reign__tasks_master_zk(reign_tasks_master **ret, reign_client *client, const char *queue,
                           const reign_tasks_master_options *o);
int reign__tasks_master_sql(reign_tasks_master **ret, reign_client *client, const char *queue,
                            const reign_tasks_master_options *o);

/* ---- the one-shot requests on a SQL store (tasks_sql.c) ---------------------------------- */

typedef enum reign__tasks_sql_kind {
    REIGN__TASKS_SQL_SUBMIT = 1,
    REIGN__TASKS_SQL_STATUS,
    REIGN__TASKS_SQL_WAIT,
    REIGN__TASKS_SQL_LIST,
    REIGN__TASKS_SQL_DELETE
} reign__tasks_sql_kind;

/* A public entry point's request, its arguments checked but for the names (copied). */
typedef struct reign__tasks_sql_req {
    reign__tasks_sql_kind kind;
    const char *queue;
    const char *task; /* STATUS, WAIT, DELETE */
    const void *data; /* SUBMIT */
    size_t len;
    reign_tasks_submit_cb *submit_cb;
    reign_tasks_info_cb *info_cb; /* STATUS, WAIT */
    reign_tasks_list_cb *list_cb;
    reign_tasks_done_cb *done_cb; /* DELETE */
    void *userdata;
} reign__tasks_sql_req;

/* Starts a request on the SQL client `client`: 0 (it calls back once), or a negative code (it
 * never calls back): REIGN_ENAME, REIGN_ECLOSED, REIGN_ENOMEM. */
int reign__tasks_sql_request(reign_client *client, const reign__tasks_sql_req *r);

/*
 * What every reader of a queue on a SQL store does alike (a wait there, the master, the
 * worker): it reads again whenever the store may have changed the queue (a NOTIFY on the
 * queue's channel, sent by every write in its transaction, on PostgreSQL; a change of the file
 * on SQLite; every poll period on MariaDB) and, whatever the store, every
 * REIGN__TASKS_SQL_CHECK_MS in case a notice was lost.  _listen subscribes the client's worker
 * sw to the queue's notices ("": the queue's own, those of results; or those of a suffix of
 * src/sql/tasks.h: REIGN__TASKS_WORKERS, a task worker's; REIGN__TASKS_SUBMITTED, the master's
 * besides the queue's), where the store has them: true once sent (sent before a read on the
 * same worker, a change after that read is told of).  _idle_ms: how long until the next read
 * when nothing was told.
 */
#define REIGN__TASKS_SQL_CHECK_MS 5000
struct reign__sqlw;
bool reign__tasks_sql_listen(struct reign__sqlw *sw, const char *queue, const char *suffix);
int reign__tasks_sql_idle_ms(reign_client *client);

/* A task's row of a SQL store (src/sql/tasks.h) as <reign/tasks.h>'s info, borrowing from it. */
struct reign__task_row;
void reign__tasks_sql_info(const struct reign__task_row *r, reign_task_info *info);

/* ---- a small map from task names, for the master and the worker (tasks_map.c) ---------- */

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
