/*
 * tasks_worker_sql.c - a worker of the queue on a SQL store (see <reign/tasks.h>, docs/tasks.md;
 * the table and its statements: src/sql/tasks.h).  tasks_api.c hands a SQL client's worker here.
 *
 * The worker registers in the group "tasks.Q" (<reign/group.h>: on SQL, a row that lives in the
 * client's session) with its concurrency and prefetch as payload, as on ZooKeeper.  Its
 * registration's node ("m_<guid>_<seq>") is its token: the master assigns a task by naming the
 * token in the task's row, takes the task back (the token cleared) once the registration is
 * gone, and the worker records a result with one UPDATE that changes the row only while it
 * still names the token.  So a worker whose registration was lost can never record a result
 * for a task another worker now holds, and a task gets one result.
 *
 * The worker reads the rows assigned to its token whenever the store may have changed them (a
 * NOTIFY on the queue's channel on PostgreSQL, the file's change on SQLite, every poll period
 * on MariaDB, and every REIGN__TASKS_SQL_CHECK_MS anyway), keeps up to `concurrency` running (RUN)
 * and the rest ready.  A running task no longer assigned to the token was taken back: CANCEL.  When
 * the registration goes (UNREGISTERED: the session was lost or the row deleted) the tasks of the
 * old token are no longer ours: running ones get CANCEL, the rest are forgotten, and the new
 * registration's token is read afresh.  A result being written keeps the token it ran under.
 *
 * reign_tasks_worker_valid_until_ns() is the session's bound while registered: the master takes
 * a registration's tasks back only once its row is gone, and a row outlives its session's
 * bound (a reaper waits a whole lease from the last beat it saw; src/client/sql_session.h).
 */
#include <stdio.h>
#include <string.h>

#include <reign/group.h>

#include "client/sql_session.h"
#include "recipes/life.h"
#include "sql/tasks.h"
#include "sql/worker.h"
#include "tasks_internal.h"

#define T_READY     1 /* read, waiting for a slot (in the ready list) */
#define T_RUNNING   2 /* RUN given */
#define T_RECORDING 4 /* the result is being written */

#define RETRY_MS 1000 /* a failed read or write is tried again after this long */

#define TOKEN_MAX 96

typedef struct ritem {
    struct ritem *next;
    char *task;
    void *data;
    size_t len;
} ritem;

/* A result being recorded (T_RECORDING): sent again until it is settled. */
typedef struct pend {
    struct pend *prev, *next;
    struct sworker *w;
    char task[REIGN_TASKS_TASK_MAX + 1];
    char token[TOKEN_MAX];
    int exit_code, signal;
    void *output;
    size_t output_len;
    reign__timer timer;
} pend;

typedef struct sworker {
    reign_tasks_worker head; /* first: the client calls us through it; tasks_api.c too */
    reign__sqlw *sw;
    char token[TOKEN_MAX]; /* our registration's node; "" while not registered */
    reign__tmap tasks;     /* every task we hold: T_* flags */
    ritem *ready;          /* T_READY tasks, oldest first */
    size_t slots;          /* T_RUNNING tasks */
    bool reading, again, listening;
    pend *pends;
    reign__timer poll, kick;
} sworker;

/* What a read travels with, to the worker thread and back. */
typedef struct rcall {
    char *queue;
    char token[TOKEN_MAX];
    reign__task_rows rows;
} rcall;

/* What a result travels with. */
typedef struct fcall {
    char *queue;
    char task[REIGN_TASKS_TASK_MAX + 1];
    char token[TOKEN_MAX];
    int exit_code, signal;
    void *output;
    size_t output_len;
} fcall;

static void read_mine(sworker *w);
static void start_more(sworker *w);

static reign__timers *timers(sworker *w)
{
    return reign__client_timers(w->head.base.client);
}

static bool lost(int rc)
{
    return rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT;
}

static void ritem_free(ritem *r)
{
    reign__free(r->task);
    reign__free(r->data);
    reign__free(r);
}

/* Drops task from the ready list (if there). */
static void unready(sworker *w, const char *task)
{
    for (ritem **p = &w->ready; *p; p = &(*p)->next)
        if (!strcmp((*p)->task, task)) {
            ritem *r = *p;
            *p = r->next;
            ritem_free(r);
            return;
        }
}

/* Forgets every task of the token we held, but results being written: running ones get
 * CANCEL (the master gives them to others). */
static void drop_all(sworker *w)
{
    while (w->ready) {
        ritem *r = w->ready;
        w->ready = r->next;
        ritem_free(r);
    }
    for (size_t i = 0; i < w->tasks.cap && reign__life_live(&w->head.base.life); i++) {
        if (!reign__tmap_live(&w->tasks, i) || (w->tasks.v[i].flags & T_RECORDING))
            continue;
        char *t = reign__strdup(w->tasks.v[i].key);
        bool running = w->tasks.v[i].flags & T_RUNNING;
        reign__tmap_del(&w->tasks, &w->tasks.v[i]);
        if (running && w->slots)
            w->slots--;
        reign_tasks_event ev = {.type = REIGN_TASKS_CANCEL, .task = t};
        if (t && running)
            reign__tasks_worker_emit(&w->head, &ev);
        reign__free(t);
    }
}

/* ---- reading the tasks assigned to us ------------------------------------------------------ */

static void rcall_free(void *p)
{
    rcall *c = p;
    reign__task_rows_free(&c->rows);
    reign__free(c->queue);
    reign__free(c);
}

static int run_read(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    rcall *c = ctx;
    return reign__tasks_assigned(conn, dc, c->queue, c->token, &c->rows, err, errlen);
}

static void later(sworker *w, int ms)
{
    reign__timer_start(timers(w), &w->poll, reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

/* The rows assigned to our token, as read: new ones are ready; running ones that are missing
 * were taken back. */
static void reconcile(sworker *w, reign__task_rows *rows)
{
    reign__tmap seen = {0};
    ritem **tail = &w->ready;
    while (*tail)
        tail = &(*tail)->next;
    for (size_t i = 0; i < rows->n; i++) {
        reign__task_row *r = &rows->v[i];
        if (!reign__tmap_put(&seen, r->name))
            goto out; /* out of memory: the next read does it */
        if (reign__tmap_get(&w->tasks, r->name))
            continue;
        ritem *it = reign__calloc(1, sizeof(*it));
        reign__tmap_entry *e = it ? reign__tmap_put(&w->tasks, r->name) : NULL;
        if (!e || !(it->task = reign__strdup(r->name))) {
            if (e)
                reign__tmap_del(&w->tasks, e);
            if (it)
                ritem_free(it);
            goto out;
        }
        e->flags = T_READY;
        it->data = r->data;
        it->len = r->data_len;
        r->data = NULL;
        *tail = it;
        tail = &it->next;
    }
    for (size_t i = 0; i < w->tasks.cap && reign__life_live(&w->head.base.life); i++) {
        if (!reign__tmap_live(&w->tasks, i) || (w->tasks.v[i].flags & T_RECORDING) ||
            reign__tmap_get(&seen, w->tasks.v[i].key))
            continue;
        char *t = reign__strdup(w->tasks.v[i].key);
        int flags = w->tasks.v[i].flags;
        reign__tmap_del(&w->tasks, &w->tasks.v[i]);
        if (!t)
            continue;
        if (flags & T_READY)
            unready(w, t);
        if (flags & T_RUNNING) {
            if (w->slots)
                w->slots--;
            reign_tasks_event ev = {.type = REIGN_TASKS_CANCEL, .task = t};
            reign__tasks_worker_emit(&w->head, &ev);
        }
        reign__free(t);
    }
out:
    reign__tmap_clear(&seen);
}

static void on_read(void *owner, void *arg, const reign__sqlw_result *res)
{
    sworker *w = owner;
    rcall *c = res->ctx;
    reign__life_enter(&w->head.base.life);
    if (reign__life_stale(&w->head.base.life, arg, 0))
        goto out;
    w->reading = false;
    if (strcmp(c->token, w->token) != 0) {
        w->again = false;
        read_mine(w); /* about a registration of ours that is gone */
        goto out;
    }
    if (res->rc == REIGN_ECLOSED)
        goto out; /* the client is closing: nothing more to read */
    if (res->rc < 0) {
        if (!lost(res->rc))
            reign__tasks_worker_report(&w->head, res->rc, "reading our tasks");
        later(w, RETRY_MS);
        goto out;
    }
    reconcile(w, &c->rows);
    if (reign__life_live(&w->head.base.life))
        start_more(w);
    if (!reign__life_live(&w->head.base.life))
        goto out;
    if (w->again) {
        w->again = false;
        read_mine(w);
    } else {
        later(w, reign__tasks_sql_idle_ms(w->head.base.client));
    }
out:
    reign__tasks_worker_leave(&w->head);
}

static void read_mine(sworker *w)
{
    if (!w->token[0])
        return;
    if (w->reading) {
        w->again = true;
        return;
    }
    reign__timer_stop(timers(w), &w->poll);
    /* Before the read, on the same worker: an assignment after it is told of. */
    if (!w->listening) {
        /* Our own assignments, and those of rounds that tell every worker. */
        char own[sizeof REIGN__TASKS_WORKERS + REIGN_TASKS_WORKER_MAX + 1];
        snprintf(own, sizeof own, REIGN__TASKS_WORKER_OWN, w->head.base.id);
        w->listening = reign__tasks_sql_listen(w->sw, w->head.base.queue, REIGN__TASKS_WORKERS) &&
                       reign__tasks_sql_listen(w->sw, w->head.base.queue, own);
    }
    rcall *c = reign__calloc(1, sizeof(*c));
    if (!c || !(c->queue = reign__strdup(w->head.base.queue))) {
        reign__free(c);
        later(w, RETRY_MS);
        return;
    }
    memcpy(c->token, w->token, sizeof c->token);
    if (reign__sqlw_call(w->sw, "tasks", run_read, c, rcall_free, w, on_read,
                         REIGN__LIFE_ARG(&w->head.base.life, 0, 0)) < 0) {
        rcall_free(c);
        later(w, RETRY_MS);
        return;
    }
    w->reading = true;
}

/* Gives RUN to ready tasks while a slot is free. */
static void start_more(sworker *w)
{
    while (w->slots < (size_t)w->head.concurrency && w->ready &&
           reign__life_live(&w->head.base.life)) {
        ritem *it = w->ready;
        w->ready = it->next;
        reign__tmap_entry *e = reign__tmap_get(&w->tasks, it->task);
        if (e) {
            e->flags = T_RUNNING;
            w->slots++;
            reign_tasks_event ev = {
                .type = REIGN_TASKS_RUN, .task = it->task, .data = it->data, .data_len = it->len};
            reign__tasks_worker_emit(&w->head, &ev);
        }
        ritem_free(it);
    }
}

static void on_kick(reign__timer *t, void *arg)
{
    sworker *w = arg;
    (void)t;
    reign__life_enter(&w->head.base.life);
    if (reign__life_live(&w->head.base.life))
        start_more(w);
    reign__tasks_worker_leave(&w->head);
}

static void on_poll(reign__timer *t, void *arg)
{
    sworker *w = arg;
    (void)t;
    reign__life_enter(&w->head.base.life);
    if (reign__life_live(&w->head.base.life))
        read_mine(w);
    reign__tasks_worker_leave(&w->head);
}

/* ---- recording results ------------------------------------------------------------------- */

static void fcall_free(void *p)
{
    fcall *c = p;
    reign__free(c->output);
    reign__free(c->queue);
    reign__free(c);
}

/* The results queued together on the worker, in one transaction (a worker that finishes many
 * tasks at once pays one commit for them). */
static int run_finishes(reign__sqlconn *conn, const char *dc, void *const *ctxs, int *rcs, size_t n,
                        char *err, size_t errlen)
{
    reign__tasks_result r[REIGN__SQLW_BATCH_MAX];
    const reign__tasks_result *v[REIGN__SQLW_BATCH_MAX];
    for (size_t i = 0; i < n; i++) {
        const fcall *c = ctxs[i];
        r[i] = (reign__tasks_result){.queue = c->queue,
                                     .name = c->task,
                                     .worker_guid = c->token,
                                     .exit_code = c->exit_code,
                                     .exit_signal = c->signal,
                                     .output = c->output,
                                     .output_len = c->output_len};
        v[i] = &r[i];
    }
    return reign__tasks_finish_batch(conn, dc, v, rcs, n, err, errlen);
}

static void pend_free(sworker *w, pend *p)
{
    reign__timer_stop(timers(w), &p->timer);
    if (p->prev)
        p->prev->next = p->next;
    else
        w->pends = p->next;
    if (p->next)
        p->next->prev = p->prev;
    reign__free(p->output);
    reign__free(p);
}

static void send_result(sworker *w, pend *p);

static void on_finished(void *owner, void *arg, const reign__sqlw_result *res)
{
    sworker *w = owner;
    pend *p = arg;
    reign__life_enter(&w->head.base.life);
    if (!reign__life_live(&w->head.base.life))
        goto out;
    int rc = res->rc;
    if (rc >= 0 || rc == REIGN_ENOENT) {
        /* Recorded (now, or by an earlier send whose answer was lost), or not ours any more. */
        reign__tmap_entry *e = reign__tmap_get(&w->tasks, p->task);
        if (e && (e->flags & T_RECORDING))
            reign__tmap_del(&w->tasks, e);
        char task[sizeof p->task];
        memcpy(task, p->task, sizeof task);
        pend_free(w, p);
        if (rc == REIGN_ENOENT) {
            reign__log(w->head.base.log, REIGN_LOG_INFO,
                       "tasks %s: worker %s: %s was taken back; its result is dropped",
                       w->head.base.queue, w->head.base.id, task);
        } else {
            reign_tasks_event ev = {.type = REIGN_TASKS_RECORDED, .task = task};
            reign__tasks_worker_emit(&w->head, &ev);
        }
        goto out;
    }
    if (rc == REIGN_ECLOSED)
        goto out; /* the client is closing: the master gives the task to another worker */
    /* Landed or not: the same statement, sent again, finds the result if it did. */
    if (!lost(rc))
        reign__tasks_worker_report(&w->head, rc, "recording a result");
    reign__timer_start(timers(w), &p->timer, reign__now_ns() + RETRY_MS * REIGN__NS_PER_MS);
out:
    reign__tasks_worker_leave(&w->head);
}

static void send_result(sworker *w, pend *p)
{
    fcall *c = reign__calloc(1, sizeof(*c));
    if (c && (c->queue = reign__strdup(w->head.base.queue)) &&
        (!p->output_len || (c->output = reign__memdup(p->output, p->output_len)))) {
        memcpy(c->task, p->task, sizeof c->task);
        memcpy(c->token, p->token, sizeof c->token);
        c->exit_code = p->exit_code;
        c->signal = p->signal;
        c->output_len = p->output_len;
        if (reign__sqlw_call_batch(w->sw, "tasks result", run_finishes, c, fcall_free, w,
                                   on_finished, p) == 0)
            return;
    }
    if (c)
        fcall_free(c);
    reign__timer_start(timers(w), &p->timer, reign__now_ns() + RETRY_MS * REIGN__NS_PER_MS);
}

static void on_pend_timer(reign__timer *t, void *arg)
{
    pend *p = arg;
    sworker *w = p->w;
    (void)t;
    reign__life_enter(&w->head.base.life);
    if (reign__life_live(&w->head.base.life))
        send_result(w, p);
    reign__tasks_worker_leave(&w->head);
}

static int worker_done(reign_tasks_worker *base, const char *task, int exit_code, int signal,
                       const void *output, size_t output_len)
{
    sworker *w = (sworker *)base;
    reign__tmap_entry *e = reign__tmap_get(&w->tasks, task);
    if (!e || !(e->flags & T_RUNNING) || !w->token[0])
        return REIGN_ENOENT;
    if (output_len > REIGN_TASK_OUTPUT_MAX)
        output_len = REIGN_TASK_OUTPUT_MAX;
    pend *p = reign__calloc(1, sizeof(*p));
    if (!p || (output_len && !(p->output = reign__memdup(output, output_len)))) {
        reign__free(p);
        return REIGN_ENOMEM;
    }
    p->w = w;
    snprintf(p->task, sizeof p->task, "%s", task);
    memcpy(p->token, w->token, sizeof p->token);
    p->exit_code = exit_code;
    p->signal = signal;
    p->output_len = output_len;
    reign__timer_init(&p->timer, on_pend_timer, p);
    p->next = w->pends;
    if (w->pends)
        w->pends->prev = p;
    w->pends = p;
    /* Done running: its slot goes to the next task now, from the loop (never a RUN from inside
     * this call). */
    e->flags = T_RECORDING;
    if (w->slots)
        w->slots--;
    send_result(w, p);
    if (reign__timer_start(timers(w), &w->kick, 0) == 0 &&
        !reign__client_processing(w->head.base.client))
        reign__client_wake(w->head.base.client);
    return 0;
}

static size_t worker_running(const reign_tasks_worker *base)
{
    return ((const sworker *)base)->slots;
}

static int64_t worker_valid_until(const reign_tasks_worker *base)
{
    const sworker *w = (const sworker *)base;
    return w->token[0] ? reign__sql_session_valid_until(w->head.base.client) : 0;
}

/* ---- the registration and the object ----------------------------------------------------- */

static void on_group(reign_group *g, const reign_group_event *ev, void *ud)
{
    sworker *w = ud;
    (void)g;
    reign__life_enter(&w->head.base.life);
    if (ev->type == REIGN_GROUP_REGISTERED && ev->node && strcmp(ev->node, w->token) != 0) {
        /* A new token: whatever the old one held is the master's to take back. */
        drop_all(w);
        snprintf(w->token, sizeof w->token, "%s", ev->node);
        reign_tasks_event te = {.type = REIGN_TASKS_REGISTERED};
        reign__tasks_worker_emit(&w->head, &te);
        if (reign__life_live(&w->head.base.life))
            read_mine(w);
    } else if (ev->type == REIGN_GROUP_UNREGISTERED) {
        w->token[0] = '\0';
        drop_all(w);
    } else if (ev->type == REIGN_GROUP_ERROR) {
        reign__tasks_worker_report(&w->head, ev->error, ev->message ? ev->message : "registering");
    }
    reign__tasks_worker_leave(&w->head);
}

static void worker_conn(reign__recipe *rp, reign_conn_state st)
{
    sworker *w = (sworker *)rp;
    reign__life_enter(&w->head.base.life);
    if (st == REIGN_CONN_CONNECTED) {
        w->listening = false;
        w->reading = false; /* a read of the old connection answers no more */
        reign__life_bump(&w->head.base.life);
    }
    if ((st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED) &&
        reign__life_live(&w->head.base.life))
        read_mine(w);
    reign__tasks_worker_leave(&w->head);
}

static void worker_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    sworker *w = (sworker *)rp;
    reign__life_enter(&w->head.base.life);
    if (reign__life_live(&w->head.base.life))
        read_mine(w);
    reign__tasks_worker_leave(&w->head);
}

static void worker_free_fields(sworker *w)
{
    reign__timer_stop(timers(w), &w->kick);
    reign__timer_stop(timers(w), &w->poll);
    while (w->pends)
        pend_free(w, w->pends);
    while (w->ready) {
        ritem *r = w->ready;
        w->ready = r->next;
        ritem_free(r);
    }
    reign__tmap_clear(&w->tasks);
    reign__tasks_base_clear(&w->head.base);
    reign__free(w);
}

/* The whole of a free (tasks_api.c), or of a failed start. */
static void worker_destroy(reign_tasks_worker *head)
{
    sworker *w = (sworker *)head;
    reign__sqlw_forget(w->sw, w);
    reign__tasks_worker_detach(&w->head);
    worker_free_fields(w);
}

static void worker_on_destroy(reign__recipe *rp)
{
    sworker *w = (sworker *)rp;
    reign__sqlw_forget(w->sw, w);
    worker_free_fields(w); /* the client frees the group itself */
}

static const reign__recipe_ops worker_ops = {
    .conn = worker_conn, .destroy = worker_on_destroy, .changed = worker_changed};

static const reign__tasks_worker_ops sql_ops = {.done = worker_done,
                                                .running = worker_running,
                                                .valid_until = worker_valid_until,
                                                .destroy = worker_destroy};

int reign__tasks_worker_sql(reign_tasks_worker **ret, reign_client *client, const char *queue,
                            const reign_tasks_worker_options *o)
{
    sworker *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    reign__timer_init(&w->kick, on_kick, w);
    reign__timer_init(&w->poll, on_poll, w);
    w->sw = reign__client_sql(client);
    int rc = reign__tasks_worker_init(&w->head, &sql_ops, &worker_ops, client, queue, o);
    if (rc < 0) {
        worker_free_fields(w);
        return rc;
    }
    reign__client_attach(client, &w->head.base.recipe);
    return reign__tasks_worker_register(&w->head, on_group, w, ret);
}
