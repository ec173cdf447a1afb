/*
 * tasks_worker_zk.c - a worker of the queue (see <reign/tasks.h>, docs/tasks.md).
 *
 * A worker makes its directory assign/W, registers in the group "tasks.Q"
 * (<reign/group.h>) with its concurrency and prefetch as payload (the master
 * gives it at most `prefetch` tasks at once), and watches assign/W.  Each task
 * found there is read and handed to the application (RUN); its result is
 * recorded by one multi: "assign/W/T exists" + "create status/T" + "delete
 * assign/W/T".  The check makes a worker that lost its task (the master gave
 * it to another after our session died) unable to record a result; the
 * create makes a second result impossible; the multi means a task is never
 * both assigned and done.
 *
 * Payloads are read ahead: up to `concurrency` tasks beyond those running are
 * read (or being read) and wait for a slot (T_READY), so a slot that frees
 * runs the next task at once instead of a round trip later.
 *
 * The worker holds the client's validity (as a leader does) from its first
 * write on a session until the session may be lost: the client proves the
 * session five times per timeout, and reign_tasks_worker_valid_until_ns()
 * says until when no task of ours can be given to another worker.  Its own
 * LOST comes at that moment too, rather than a while after the suspension.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/group.h>

#include "recipes/life.h"
#include "tasks_internal.h"

#define T_READING   1 /* being read */
#define T_RUNNING   2 /* RUN given */
#define T_RECORDING 4 /* the result is being written */
#define T_READY     8 /* read, waiting for a slot: its pend (entry's ptr) holds the payload */

typedef struct pend {
    struct pend *prev, *next;
    struct zworker *w;
    uintptr_t epoch;
    char *task;
    reign__buf rec;     /* T_READY: the payload; T_RECORDING: the status record */
    struct pend *rnext; /* T_READY: the next read task, in the order they were read */
    bool no_payload;    /* T_RECORDING: its payload node is gone, the result goes without */
    bool lost;          /* T_RECORDING: an answer was lost (the multi may have landed) */
    bool checked;       /* ... and a later send found the assignment gone */
} pend;

typedef struct zworker {
    /* First: the client calls us through it; tasks_api.c too.  Its life's epoch is bumped per
     * session: answers of an older one are dropped. */
    reign_tasks_worker head;
    reign__zk *zk;
    char *dir;
    reign__tmap tasks;
    size_t slots; /* tasks running: RUN given, done not yet called */
    size_t ahead; /* tasks read ahead: being read (T_READING) or waiting for a slot (T_READY) */
    pend *ready, **ready_tail; /* the T_READY tasks, oldest first */
    char **listed;             /* the last listing of assign/W, NULL where started */
    size_t n_listed;
    bool listing, dirty;
    pend *pends;       /* arguments of requests in flight (freed on forget) */
    reign__timer kick; /* start_more() on the loop, after reign_tasks_worker_done() */
    bool holding;      /* holds the client's validity (reign__client_hold_validity) */
} zworker;

static void list_mine(zworker *w);
static void start_more(zworker *w);

static pend *pend_new(zworker *w, const char *task)
{
    pend *p = reign__calloc(1, sizeof(*p));
    if (!p || !(p->task = reign__strdup(task))) {
        reign__free(p);
        return NULL;
    }
    p->w = w;
    p->epoch = w->head.base.life.epoch;
    reign__buf_init(&p->rec);
    p->next = w->pends;
    if (p->next)
        p->next->prev = p;
    w->pends = p;
    return p;
}

static void pend_free(zworker *w, pend *p)
{
    if (p->prev)
        p->prev->next = p->next;
    else
        w->pends = p->next;
    if (p->next)
        p->next->prev = p->prev;
    reign__buf_free(&p->rec);
    reign__free(p->task);
    reign__free(p);
}

static void unready(zworker *w, pend *p)
{
    pend **pp = &w->ready;
    while (*pp && *pp != p)
        pp = &(*pp)->rnext;
    if (*pp)
        *pp = p->rnext;
    if (w->ready_tail == &p->rnext)
        w->ready_tail = pp;
    p->rnext = NULL;
}

static void forget_task(zworker *w, const char *task)
{
    reign__tmap_entry *e = reign__tmap_get(&w->tasks, task);
    if (!e)
        return;
    if ((e->flags & T_RUNNING) && w->slots)
        w->slots--;
    if ((e->flags & (T_READING | T_READY)) && w->ahead)
        w->ahead--;
    pend *p = e->flags & T_READY ? e->ptr : NULL;
    reign__tmap_del(&w->tasks, e);
    if (p) {
        unready(w, p);
        pend_free(w, p);
    }
}

/* Gives the task RUN: a slot is free. */
static void run_task(zworker *w, reign__tmap_entry *e, const char *task, const void *data,
                     size_t len)
{
    if ((e->flags & (T_READING | T_READY)) && w->ahead)
        w->ahead--;
    e->flags = T_RUNNING;
    e->ptr = NULL;
    w->slots++;
    reign_tasks_event ev = {.type = REIGN_TASKS_RUN, .task = task, .data = data, .data_len = len};
    reign__tasks_worker_emit(&w->head, &ev);
}

static char *task_path(zworker *w, const char *dir, const char *task)
{
    return dir ? reign__tasks_path(w->head.base.queue, dir, task, NULL)
               : reign__tasks_path(w->head.base.queue, REIGN__N_ASSIGN, w->head.base.id, task);
}

static void on_task_read(void *owner, void *arg, const reign__zk_result *r);

/* Reads a task's payload from data/<tag>/<guid>, where it stays from submit until our
 * result. */
static int read_task(zworker *w, pend *p)
{
    char *path = reign__tasks_payload_path(w->head.base.queue, p->task);
    int rc =
        path ? reign__zk_get(w->zk, path, NULL, REIGN__ZK_RETRY, w, on_task_read, p) : REIGN_ENOMEM;
    reign__free(path);
    return rc;
}

/* ---- running a task -------------------------------------------------------- */

static void on_task_read(void *owner, void *arg, const reign__zk_result *r)
{
    zworker *w = owner;
    pend *p = arg;
    reign__life_enter(&w->head.base.life);
    if (!reign__life_current(&w->head.base.life, p->epoch))
        goto out;
    reign__tmap_entry *e = reign__tmap_get(&w->tasks, p->task);
    if (!e || !(e->flags & T_READING))
        goto out;
    reign__record rec;
    if (r->rc == 0 && reign__record_parse(r->value, r->value_len, &rec) == 0) {
        int rc = reign__buf_append(&p->rec, rec.payload, rec.payload_len);
        reign__record_clear(&rec);
        if (rc == 0) {
            /* In line for a slot, after those read before it: run now if one is free. */
            e->flags = T_READY;
            e->ptr = p;
            p->rnext = NULL;
            *w->ready_tail = p;
            w->ready_tail = &p->rnext;
            start_more(w);
            reign__tasks_worker_leave(&w->head);
            return;
        }
        reign__tasks_worker_report(&w->head, rc, "keeping a task's payload until a slot is free");
        forget_task(w, p->task);
        start_more(w);
    } else {
        /* ENOENT: moved away or finished elsewhere meanwhile; foreign data: never run */
        if (r->rc == 0)
            reign__tasks_worker_report(&w->head, REIGN_EFOREIGN,
                                       "a task's node holds foreign data; not run");
        else if (r->rc != REIGN_ENOENT)
            reign__tasks_worker_report(&w->head, r->rc, "reading a task");
        forget_task(w, p->task);
        if (reign__life_live(&w->head.base.life))
            start_more(w);
    }
out:
    pend_free(w, p);
    reign__tasks_worker_leave(&w->head);
}

static void start_task(zworker *w, const char *task)
{
    reign__tmap_entry *e = reign__tmap_put(&w->tasks, task);
    pend *p = e ? pend_new(w, task) : NULL;
    if (!p) {
        if (e)
            reign__tmap_del(&w->tasks, e);
        return;
    }
    e->flags = T_READING;
    w->ahead++;
    if (read_task(w, p) < 0) {
        forget_task(w, task);
        pend_free(w, p);
    }
}

/* Whether a new listing could give us something to do: there is room to read ahead and every
 * name of the last listing has been taken up. */
static bool want_listing(const zworker *w)
{
    if (w->ahead >= (size_t)w->head.concurrency)
        return false;
    for (size_t i = 0; i < w->n_listed; i++)
        if (w->listed[i])
            return false;
    return true;
}

/* Runs the tasks read while slots are free, then reads ahead as many as may run at once. */
static void start_more(zworker *w)
{
    while (w->ready && w->slots < (size_t)w->head.concurrency &&
           reign__life_live(&w->head.base.life)) {
        pend *p = w->ready;
        unready(w, p);
        reign__tmap_entry *e = reign__tmap_get(&w->tasks, p->task);
        if (e && (e->flags & T_READY))
            run_task(w, e, p->task, p->rec.data, p->rec.len);
        pend_free(w, p);
    }
    if (!reign__life_live(&w->head.base.life))
        return;
    for (size_t i = 0; i < w->n_listed && w->ahead < (size_t)w->head.concurrency; i++) {
        char *t = w->listed[i];
        if (!t)
            continue;
        w->listed[i] = NULL;
        if (!reign__tmap_get(&w->tasks, t))
            start_task(w, t);
        reign__free(t);
    }
    if (w->dirty && !w->listing && want_listing(w))
        list_mine(w);
}

/* ---- the assignments --------------------------------------------------------- */

static void on_mine_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zworker *w = owner;
    (void)ev;
    (void)path;
    if (reign__life_stale(&w->head.base.life, arg, 0))
        return;
    reign__life_enter(&w->head.base.life);
    /* Listed again when that could give us work (see want_listing). */
    w->dirty = true;
    if (want_listing(w))
        list_mine(w);
    reign__tasks_worker_leave(&w->head);
}

static void on_mine_listed(void *owner, void *arg, const reign__zk_result *r)
{
    zworker *w = owner;
    reign__life_enter(&w->head.base.life);
    if (reign__life_stale(&w->head.base.life, arg, 0))
        goto out;
    w->listing = false;
    if (r->rc == 0) {
        for (size_t i = 0; i < w->n_listed; i++)
            reign__free(w->listed[i]);
        reign__free(w->listed);
        w->listed = r->n_children ? reign__calloc(r->n_children, sizeof(char *)) : NULL;
        w->n_listed = 0;
        for (size_t i = 0; w->listed && i < r->n_children; i++)
            if (reign__task_name_parse(r->children[i], NULL, NULL) &&
                (w->listed[w->n_listed] = reign__strdup(r->children[i])))
                w->n_listed++;
        reign__tasks_sort_names(w->listed, w->n_listed);
        /* Tasks no longer assigned to us went to another worker (the master thought us
         * dead): stop those running, drop those read ahead. */
        for (size_t i = 0; i < w->tasks.cap; i++) {
            if (!reign__tmap_live(&w->tasks, i) || !(w->tasks.v[i].flags & (T_RUNNING | T_READY)))
                continue;
            bool there = false;
            for (size_t j = 0; j < w->n_listed && !there; j++)
                there = !strcmp(w->listed[j], w->tasks.v[i].key);
            if (there)
                continue;
            if (w->tasks.v[i].flags & T_READY) {
                forget_task(w, w->tasks.v[i].key);
                continue;
            }
            char *t = reign__strdup(w->tasks.v[i].key);
            forget_task(w, t ? t : "");
            reign_tasks_event ev = {.type = REIGN_TASKS_CANCEL, .task = t};
            if (t)
                reign__tasks_worker_emit(&w->head, &ev);
            reign__free(t);
            if (!reign__life_live(&w->head.base.life))
                goto out;
        }
        start_more(w);
    } else if (r->rc == REIGN_ENOENT) {
        /* Our directory is gone (an operator?): make it again. */
        char *dir = reign__tasks_path(w->head.base.queue, REIGN__N_ASSIGN, w->head.base.id, NULL);
        if (dir)
            reign__zk_create(w->zk, dir, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
        reign__free(dir);
        w->dirty = true;
    } else if (r->rc != REIGN_ESESSION) {
        reign__tasks_worker_report(&w->head, r->rc, "listing our tasks");
        w->dirty = true;
    }
    if (w->dirty && want_listing(w))
        list_mine(w);
out:
    reign__tasks_worker_leave(&w->head);
}

static void list_mine(zworker *w)
{
    if (w->listing)
        return; /* dirty: again after this one, if wanted */
    w->dirty = false;
    if (reign__zk_children(w->zk, w->dir, on_mine_event, REIGN__ZK_RETRY, w, on_mine_listed,
                           REIGN__LIFE_ARG(&w->head.base.life, 0, 0)) == 0)
        w->listing = true;
}

/* ---- recording a result -------------------------------------------------------- */

static void send_result(zworker *w, pend *p);

static void recorded(zworker *w, pend *p)
{
    forget_task(w, p->task);
    reign_tasks_event ev = {.type = REIGN_TASKS_RECORDED, .task = p->task};
    reign__tasks_worker_emit(&w->head, &ev);
    pend_free(w, p);
    if (reign__life_live(&w->head.base.life))
        start_more(w);
}

/* The task is not ours any more (the master gave it to another worker): no result of ours. */
static void taken_away(zworker *w, pend *p)
{
    reign__log(w->head.base.log, REIGN_LOG_NOTICE,
               "tasks %s: worker %s: %s was taken away; its result is dropped", w->head.base.queue,
               w->head.base.id, p->task);
    forget_task(w, p->task);
    pend_free(w, p);
    start_more(w);
}

/*
 * After a lost answer: is there a result, and whose?  Ours means our multi landed (and
 * deleted the assignment with it); another worker's means the task was taken from us and
 * done there.  None: not landed, sent again - unless the assignment is already known to be
 * gone (p->checked: a second send failed its check), which then means taken away.
 */
static void on_status_read(void *owner, void *arg, const reign__zk_result *r)
{
    zworker *w = owner;
    pend *p = arg;
    reign__life_enter(&w->head.base.life);
    if (r->rc == 0) {
        reign__record rec;
        reign_task_info info = {0};
        bool ours =
            reign__tasks_status_parse(r->value, r->value_len, r->stat.ctime_ms, &rec, &info) == 0;
        ours = ours && !strcmp(info.worker, w->head.base.id);
        if (info.worker)
            reign__record_clear(&rec);
        if (ours)
            recorded(w, p);
        else
            taken_away(w, p);
    } else if (p->checked) {
        taken_away(w, p); /* the assignment is gone and no result of ours exists */
    } else {
        if (r->rc != REIGN_ENOENT)
            reign__tasks_worker_report(
                &w->head, r->rc, "checking a result after a connection loss; sending it again");
        send_result(w, p);
    }
    reign__tasks_worker_leave(&w->head);
}

static void read_status(zworker *w, pend *p)
{
    char *path = task_path(w, REIGN__N_STATUS, p->task);
    if (!path || reign__zk_get(w->zk, path, NULL, REIGN__ZK_RETRY, w, on_status_read, p) < 0) {
        forget_task(w, p->task);
        pend_free(w, p);
    }
    reign__free(path);
}

static void on_result_written(void *owner, void *arg, const reign__zk_result *r)
{
    zworker *w = owner;
    pend *p = arg;
    reign__life_enter(&w->head.base.life);
    /* The parts: 0 check the assignment, 1 create the status, 2 delete the assignment,
     * [3 delete the payload]. */
    if (r->rc == 0) {
        recorded(w, p);
    } else if (r->rc == REIGN_ENOENT && r->failed_op == 3) {
        /* The assignment is ours but its payload node is gone: not a state this version
         * makes.  The result is recorded without it. */
        p->no_payload = true;
        send_result(w, p);
    } else if (r->rc == REIGN_ENOENT && r->failed_op == 0) {
        if (p->lost) {
            /* Gone: taken away, or removed by our own earlier send whose answer was lost.
             * The status says which; read now, it reflects that send (this failed multi
             * went through the same server after it). */
            p->checked = true;
            read_status(w, p);
        } else {
            taken_away(w, p);
        }
    } else if (r->rc == REIGN_ECONNLOSS || r->rc == REIGN_ETIMEDOUT || r->rc == REIGN_ESESSION) {
        /* Unknown outcome: look before writing again (the read waits for a connection; a
         * landed multi cannot land twice anyway, its check would fail). */
        p->lost = true;
        read_status(w, p);
    } else {
        reign__tasks_worker_report(&w->head, r->rc, "recording a result");
        forget_task(w, p->task);
        pend_free(w, p);
        start_more(w);
    }
    reign__tasks_worker_leave(&w->head);
}

/*
 * One multi: the assignment is still ours (rule 3 of docs/tasks.md), the status is created,
 * the assignment deleted, and the payload with it (unless it is gone already).  All
 * or nothing: the task is never both assigned and done, and its payload goes exactly when
 * it is done.
 */
static void send_result(zworker *w, pend *p)
{
    char *assignment = task_path(w, NULL, p->task),
         *status = task_path(w, REIGN__N_STATUS, p->task);
    char *payload = p->no_payload ? NULL : reign__tasks_payload_path(w->head.base.queue, p->task);
    int rc = REIGN_ENOMEM;
    if (assignment && status && (p->no_payload || payload)) {
        const reign__zk_mop ops[4] = {
            {.type = REIGN__ZK_MCHECK, .path = assignment, .version = -1},
            {.type = REIGN__ZK_MCREATE,
             .path = status,
             .data = p->rec.len ? p->rec.data : "",
             .len = p->rec.len,
             .version = -1},
            {.type = REIGN__ZK_MDELETE, .path = assignment, .version = -1},
            {.type = REIGN__ZK_MDELETE, .path = payload, .version = -1},
        };
        rc = reign__zk_multi(w->zk, ops, p->no_payload ? 3 : 4, w, on_result_written, p);
    }
    reign__free(assignment);
    reign__free(status);
    reign__free(payload);
    if (rc < 0) {
        reign__tasks_worker_report(&w->head, rc, "recording a result");
        forget_task(w, p->task);
        pend_free(w, p);
    }
}

static int worker_done(reign_tasks_worker *base, const char *task, int exit_code, int signal,
                       const void *output, size_t output_len)
{
    zworker *w = (zworker *)base;
    reign__tmap_entry *e = reign__tmap_get(&w->tasks, task);
    if (!e || !(e->flags & T_RUNNING))
        return REIGN_ENOENT;
    pend *p = pend_new(w, task);
    if (!p)
        return REIGN_ENOMEM;
    int rc =
        reign__tasks_status_build(&p->rec, w->head.base.id, exit_code, signal, output, output_len);
    if (rc < 0) {
        pend_free(w, p);
        return rc;
    }
    /* Done running: its slot goes to the next task now, not once the result is written (a
     * round trip later).  What a worker holds stays bounded by the master (its prefetch). */
    e->flags = T_RECORDING;
    if (w->slots)
        w->slots--;
    /* send_result may report an error, whose callback may free us */
    reign__life_enter(&w->head.base.life);
    send_result(w, p);
    /* The next task's RUN comes from the loop, not from inside this call: a caller that
     * answers RUN at once (or fails to start it) would otherwise nest a RUN per task read
     * ahead.  Due at 0, it runs in this turn when we are called from a callback. */
    if (reign__life_live(&w->head.base.life)) {
        if (reign__timer_start(reign__client_timers(w->head.base.client), &w->kick, 0) < 0)
            start_more(w);
        else if (!reign__client_processing(w->head.base.client))
            reign__client_wake(w->head.base.client);
    }
    reign__tasks_worker_leave(&w->head);
    return 0;
}

static void on_kick(reign__timer *t, void *arg)
{
    zworker *w = arg;
    (void)t;
    reign__life_enter(&w->head.base.life);
    if (reign__life_live(&w->head.base.life))
        start_more(w);
    reign__tasks_worker_leave(&w->head);
}

static size_t worker_running(const reign_tasks_worker *base)
{
    return ((const zworker *)base)->slots;
}

static int64_t worker_valid_until(const reign_tasks_worker *base)
{
    const zworker *w = (const zworker *)base;
    return w->holding ? reign__client_valid_until(w->head.base.client) : 0;
}

/* ---- sessions and the object ----------------------------------------------------- */

static void on_group(reign_group *g, const reign_group_event *ev, void *ud)
{
    zworker *w = ud;
    (void)g;
    reign__life_enter(&w->head.base.life);
    if (ev->type == REIGN_GROUP_REGISTERED) {
        reign_tasks_event te = {.type = REIGN_TASKS_REGISTERED};
        reign__tasks_worker_emit(&w->head, &te);
    } else if (ev->type == REIGN_GROUP_ERROR) {
        reign__tasks_worker_report(&w->head, ev->error, ev->message ? ev->message : "registering");
    }
    reign__tasks_worker_leave(&w->head);
}

/* Holds the client's validity, or lets it go. */
static void hold(zworker *w, bool on)
{
    if (w->holding == on)
        return;
    w->holding = on;
    reign__client_hold_validity(w->head.base.client, on ? +1 : -1);
}

/* Our directory is made on this session: its answer is the first proof the validity counts
 * from, and it comes before the listing that can give a RUN (one session's answers come in
 * order).  Held on a later answer, the bound would be unknown (0) meanwhile. */
static void on_dir_made(void *owner, void *arg, const reign__zk_result *r)
{
    zworker *w = owner;
    (void)r;
    if (!reign__life_stale(&w->head.base.life, arg, 0))
        hold(w, true);
}

/* A new session: start over. */
static void new_session(zworker *w)
{
    reign__life_bump(&w->head.base.life);
    hold(w, false);
    w->listing = false;
    /* Read ahead on the old session: read again on this one. */
    for (size_t i = 0; i < w->tasks.cap; i++)
        if (reign__tmap_live(&w->tasks, i) && (w->tasks.v[i].flags & T_READY))
            forget_task(w, w->tasks.v[i].key);
    /* Results being recorded stay: their writes fail with the old session
     * and are looked for, then sent again, on this one. */
    reign__tasks_make_dirs(w->zk, w->head.base.queue);
    reign__zk_create(w->zk, w->dir, NULL, 0, REIGN__ZK_RETRY, w, on_dir_made,
                     REIGN__LIFE_ARG(&w->head.base.life, 0, 0));
    list_mine(w);
}

static void worker_conn(reign__recipe *rp, reign_conn_state st)
{
    zworker *w = (zworker *)rp;
    reign__life_enter(&w->head.base.life);
    if (st == REIGN_CONN_LOST || st == REIGN_CONN_CLOSED)
        hold(w, false); /* no proof to come, until a reconnection */
    else if (st == REIGN_CONN_RECONNECTED)
        hold(w, true); /* the same session: the client proves it again at once */
    if (st == REIGN_CONN_LOST) {
        /* The master may give our tasks to others: stop them. */
        for (size_t i = 0; i < w->tasks.cap && reign__life_live(&w->head.base.life); i++) {
            if (!reign__tmap_live(&w->tasks, i) || (w->tasks.v[i].flags & T_RECORDING))
                continue;
            char *t = reign__strdup(w->tasks.v[i].key);
            bool running = w->tasks.v[i].flags & T_RUNNING;
            forget_task(w, t ? t : "");
            reign_tasks_event ev = {.type = REIGN_TASKS_CANCEL, .task = t};
            if (t && running)
                reign__tasks_worker_emit(&w->head, &ev);
            reign__free(t);
        }
    } else if (st == REIGN_CONN_CONNECTED && reign__life_live(&w->head.base.life)) {
        new_session(w);
    }
    reign__tasks_worker_leave(&w->head);
}

static void worker_free_fields(zworker *w)
{
    reign__timer_stop(reign__client_timers(w->head.base.client), &w->kick);
    while (w->pends)
        pend_free(w, w->pends);
    reign__tmap_clear(&w->tasks);
    for (size_t i = 0; i < w->n_listed; i++)
        reign__free(w->listed[i]);
    reign__free(w->listed);
    reign__tasks_base_clear(&w->head.base);
    reign__free(w->dir);
    reign__free(w);
}

/* The whole of a free (tasks_api.c), or of a failed start. */
static void worker_destroy(reign_tasks_worker *head)
{
    zworker *w = (zworker *)head;
    hold(w, false);
    reign__zk_forget(w->zk, w);
    reign__tasks_worker_detach(&w->head);
    worker_free_fields(w);
}

static void worker_on_destroy(reign__recipe *rp)
{
    zworker *w = (zworker *)rp;
    reign__zk_forget(w->zk, w);
    worker_free_fields(w); /* the client frees the group itself */
}

static const reign__recipe_ops worker_ops = {.conn = worker_conn, .destroy = worker_on_destroy};

static const reign__tasks_worker_ops zk_ops = {.done = worker_done,
                                               .running = worker_running,
                                               .valid_until = worker_valid_until,
                                               .destroy = worker_destroy};

int reign__tasks_worker_zk(reign_tasks_worker **ret, reign_client *client, const char *queue,
                           const reign_tasks_worker_options *opts)
{
    const reign_tasks_worker_options o = *opts;
    zworker *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    reign__timer_init(&w->kick, on_kick, w);
    w->zk = reign__client_zk(client);
    w->ready_tail = &w->ready;
    int rc = reign__tasks_worker_init(&w->head, &zk_ops, &worker_ops, client, queue, &o);
    if (rc == 0 && !(w->dir = reign__tasks_path(queue, REIGN__N_ASSIGN, o.id, NULL)))
        rc = REIGN_ENOMEM;
    if (rc < 0) {
        worker_free_fields(w);
        return rc;
    }
    reign__client_attach(client, &w->head.base.recipe);
    /* The directory before the registration (the book's order), so the
     * master never sees a worker it cannot assign to. */
    if (reign__zk_connected(w->zk))
        new_session(w);
    return reign__tasks_worker_register(&w->head, on_group, w, ret);
}
