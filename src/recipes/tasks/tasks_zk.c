/*
 * tasks_zk.c - the task queue's one-shot requests: submit, status, wait, list, delete (see
 * <reign/tasks.h>; the master is in tasks_master_zk.c, the worker in tasks_worker_zk.c, the names,
 * paths and records in src/core/layout.c).
 *
 * Each request is attached to the client as a recipe, so that closing the
 * client completes it with REIGN_ECLOSED and freeing the client frees it.
 * Before calling back a request detaches itself, so the callback may free
 * the client.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipes/life.h"
#include "tasks_internal.h"

const char *reign_task_state_name(reign_task_state s)
{
    switch (s) {
    case REIGN_TASK_PENDING:
        return "pending";
    case REIGN_TASK_ASSIGNED:
        return "assigned";
    case REIGN_TASK_DONE:
        return "done";
    }
    return "unknown";
}

const char *reign_tasks_event_name(reign_tasks_event_type t)
{
    static const char *const names[] = {NULL,       "elected",    "recovered", "demoted",
                                        "assigned", "registered", "run",       "cancel",
                                        "recorded", "error"};
    return t >= 1 && t <= REIGN_TASKS_ERROR ? names[t] : "unknown";
}

const char *reign_tasks_strategy_name(reign_tasks_strategy s)
{
    return s == REIGN_TASKS_RANDOM ? "random" : "least_loaded";
}

int reign_tasks_strategy_parse(const char *s)
{
    if (s && !strcmp(s, "least_loaded"))
        return REIGN_TASKS_LEAST_LOADED;
    if (s && !strcmp(s, "random"))
        return REIGN_TASKS_RANDOM;
    return REIGN_EINVAL;
}

/* ---- one-shot requests --------------------------------------------------- */

typedef enum req_kind { REQ_SUBMIT, REQ_STATUS, REQ_WAIT, REQ_LIST, REQ_DELETE } req_kind;

/* One task seen by a listing. */
typedef struct seen {
    char *name;
    reign_task_state state;
    char *worker;
    char *value; /* DONE: the status node */
    size_t value_len;
    reign__zk_stat stat;
    size_t order; /* answer order: a later listing saw a later state of the queue */
} seen;

#define SUBMIT_TRIES    5
#define WAIT_RECHECK_MS 5000

typedef struct req {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    req_kind kind;
    char *queue;
    char *task;
    /* submit */
    char guid[2 * REIGN__TASKS_GUID_BYTES + 1];
    char *prefix;         /* ".../tasks/t_<guid>_" */
    char *payload;        /* ".../data/<tag>/<guid>" */
    reign__buf head, rec; /* tasks/T's record; data/<tag>/<guid>'s (with the payload) */
    int tries;
    unsigned made; /* the bucket's making when the multi was sent (tasks_bucket_zk.c) */
    /* rounds of reads */
    reign__life life; /* the epoch is the round of reads: an earlier one's answers drop */
    int pending;
    int round_err;
    bool status_listed;
    seen *seen;
    size_t n_seen, cap_seen;
    /* wait: by the payload's bucket (tasks_bucket_zk.c), or, when the payload was gone but no
     * result was there (fallback), by an exists of status/T */
    reign__tasks_wait wait;
    bool fallback;
    reign__timer timer;
    bool reading;
    reign_tasks_submit_cb *submit_cb;
    reign_tasks_info_cb *info_cb;
    reign_tasks_list_cb *list_cb;
    reign_tasks_done_cb *done_cb;
    void *userdata;
} req;

#define ROUND_ARG(q) REIGN__LIFE_ARG(&(q)->life, 0, 0)
#define STALE(q, a)  reign__life_stale(&(q)->life, (a), 0)

static void seen_clear(req *q)
{
    for (size_t i = 0; i < q->n_seen; i++) {
        reign__free(q->seen[i].name);
        reign__free(q->seen[i].worker);
        reign__free(q->seen[i].value);
    }
    q->n_seen = 0;
}

static void req_free(req *q)
{
    reign__tasks_wait_stop(&q->wait);
    reign__timer_stop(reign__client_timers(q->client), &q->timer);
    reign__zk_forget(q->zk, q);
    seen_clear(q);
    reign__free(q->seen);
    reign__buf_free(&q->head);
    reign__buf_free(&q->rec);
    reign__free(q->queue);
    reign__free(q->task);
    reign__free(q->prefix);
    reign__free(q->payload);
    reign__free(q);
}

/* Detaches, calls back once, frees. */
static void finish_submit(req *q, int err, const char *task)
{
    reign__client_detach(q->client, &q->recipe);
    reign__zk_forget(q->zk, q);
    if (q->submit_cb)
        q->submit_cb(q->client, err, err ? NULL : task, q->userdata);
    req_free(q);
}

static void finish_info(req *q, int err, const reign_task_info *info)
{
    reign__client_detach(q->client, &q->recipe);
    reign__zk_forget(q->zk, q);
    if (q->info_cb)
        q->info_cb(q->client, err, err ? NULL : info, q->userdata);
    req_free(q);
}

static void finish_done(req *q, int err)
{
    reign__client_detach(q->client, &q->recipe);
    reign__zk_forget(q->zk, q);
    if (q->done_cb)
        q->done_cb(q->client, err, q->userdata);
    req_free(q);
}

static void finish_list(req *q, int err);

static void finish(req *q, int err)
{
    switch (q->kind) {
    case REQ_SUBMIT:
        finish_submit(q, err, NULL);
        break;
    case REQ_STATUS:
    case REQ_WAIT:
        finish_info(q, err, NULL);
        break;
    case REQ_LIST:
        finish_list(q, err);
        break;
    case REQ_DELETE:
        finish_done(q, err);
        break;
    }
}

static int add_seen(req *q, const char *name, reign_task_state st, const char *worker)
{
    if (q->n_seen == q->cap_seen) {
        size_t cap = q->cap_seen ? 2 * q->cap_seen : 16;
        seen *v = reign__realloc(q->seen, cap * sizeof(*v));
        if (!v)
            return REIGN_ENOMEM;
        q->seen = v;
        q->cap_seen = cap;
    }
    seen *s = &q->seen[q->n_seen];
    memset(s, 0, sizeof(*s));
    s->name = reign__strdup(name);
    s->worker = worker ? reign__strdup(worker) : NULL;
    s->state = st;
    s->order = q->n_seen;
    if (!s->name || (worker && !s->worker)) {
        reign__free(s->name);
        reign__free(s->worker);
        return REIGN_ENOMEM;
    }
    q->n_seen++;
    return 0;
}

/* ---- reading the whole queue (list, and submit's search) ----------------- */

static void round_done(req *q);

static void note_err(req *q, int rc)
{
    if (rc < 0 && rc != REIGN_ENOENT && !q->round_err)
        q->round_err = rc;
}

static void on_listing(void *owner, void *arg, const reign__zk_result *r);

/* arg of a listing: which directory (0 tasks, 1 assign, 2 assign/W, 3 status). */
typedef struct listing {
    uintptr_t round;
    int which;
    char *worker;
} listing;

static void list_dir(req *q, int which, const char *worker)
{
    static const char *const dirs[] = {REIGN__N_TASKS, REIGN__N_ASSIGN, REIGN__N_ASSIGN,
                                       REIGN__N_STATUS};
    listing *l = reign__calloc(1, sizeof(*l));
    char *path = reign__tasks_path(q->queue, dirs[which], worker, NULL);
    int rc = REIGN_ENOMEM;
    if (l && path && (!worker || (l->worker = reign__strdup(worker)))) {
        l->round = q->life.epoch;
        l->which = which;
        rc = reign__zk_children(q->zk, path, NULL, REIGN__ZK_RETRY, q, on_listing, l);
    }
    reign__free(path);
    if (rc < 0) {
        if (l)
            reign__free(l->worker);
        reign__free(l);
        note_err(q, rc);
        return;
    }
    q->pending++;
}

static void on_status_read(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    seen *s = NULL;
    size_t i = (size_t)(uintptr_t)arg;
    q->pending--;
    if (i < q->n_seen)
        s = &q->seen[i];
    if (r->rc == 0 && s) {
        s->value = reign__memdup(r->value ? r->value : "", r->value_len + 1);
        s->value_len = r->value_len;
        s->stat = r->stat;
        if (!s->value)
            note_err(q, REIGN_ENOMEM);
    } else {
        note_err(q, r->rc); /* ENOENT: deleted meanwhile; listed without its result */
    }
    if (q->pending == 0)
        round_done(q);
}

static void on_listing(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    listing *l = arg;
    q->pending--;
    if (reign__life_current(&q->life, l->round)) {
        note_err(q, r->rc);
        for (size_t i = 0; r->rc == 0 && i < r->n_children; i++) {
            const char *c = r->children[i];
            if (l->which == 1) {
                if (reign__tasks_worker_check(c) == 0)
                    list_dir(q, 2, c);
                continue;
            }
            if (!reign__task_name_parse(c, NULL, NULL))
                continue; /* not ours: never trusted */
            if (q->kind == REQ_SUBMIT && strncmp(c + 2, q->guid, strlen(q->guid)) != 0)
                continue;
            reign_task_state st = l->which == 0   ? REIGN_TASK_PENDING
                                  : l->which == 2 ? REIGN_TASK_ASSIGNED
                                                  : REIGN_TASK_DONE;
            if (add_seen(q, c, st, l->which == 2 ? l->worker : NULL) < 0) {
                note_err(q, REIGN_ENOMEM);
                break;
            }
            if (st == REIGN_TASK_DONE && q->kind == REQ_LIST) {
                char *p = reign__tasks_path(q->queue, REIGN__N_STATUS, c, NULL);
                int rc = p ? reign__zk_get(q->zk, p, NULL, REIGN__ZK_RETRY, q, on_status_read,
                                           (void *)(uintptr_t)(q->n_seen - 1))
                           : REIGN_ENOMEM;
                reign__free(p);
                if (rc < 0)
                    note_err(q, rc);
                else
                    q->pending++;
            }
        }
    }
    reign__free(l->worker);
    reign__free(l);
    if (q->pending == 0)
        round_done(q);
}

/*
 * Reads tasks/, then assign/ and every assign/W, then status/ - in the
 * order a task moves (each move creates the new node before deleting the
 * old), so a task that moves while we read is still seen at least once.
 */
static void start_round(req *q)
{
    reign__life_bump(&q->life);
    q->round_err = 0;
    seen_clear(q);
    list_dir(q, 0, NULL);
    list_dir(q, 1, NULL);
    if (q->pending == 0)
        round_done(q);
}

static int seen_cmp(const void *a, const void *b)
{
    const seen *x = a, *y = b;
    if (x->state != y->state)
        return (int)x->state - (int)y->state;
    return reign__task_name_cmp(x->name, y->name);
}

/* Whether o is the same task as s, seen in a later state of the queue (see finish_list). */
static bool seen_later(const seen *o, const seen *s)
{
    return !strcmp(o->name, s->name) &&
           (o->state > s->state || (o->state == s->state && o->order > s->order));
}

static void finish_list(req *q, int err)
{
    reign_task_info *v = NULL;
    reign__record *recs = NULL;
    size_t n = 0;
    if (err == 0 && q->n_seen) {
        qsort(q->seen, q->n_seen, sizeof(*q->seen), seen_cmp);
        v = reign__calloc(q->n_seen, sizeof(*v));
        recs = reign__calloc(q->n_seen, sizeof(*recs));
        if (!v || !recs)
            err = REIGN_ENOMEM;
    }
    /*
     * A task seen twice (it moved while we read) is shown once, in its later state; seen twice
     * in one state (a dead worker's task moved to another worker between the reads of their
     * two directories), as the later answer saw it: one session's answers come in the order
     * the server read them.
     */
    for (size_t i = 0; err == 0 && i < q->n_seen; i++) {
        seen *s = &q->seen[i];
        bool later = false;
        for (size_t j = 0; j < q->n_seen; j++)
            if (j != i && seen_later(&q->seen[j], s))
                later = true;
        if (later)
            continue;
        reign_task_info *t = &v[n];
        t->task = s->name;
        t->state = s->state;
        t->worker = s->worker;
        if (s->state == REIGN_TASK_DONE && s->value &&
            reign__tasks_status_parse(s->value, s->value_len, s->stat.ctime_ms, &recs[n], t) < 0) {
            t->worker = NULL; /* foreign data: listed without a result */
        }
        n++;
    }
    reign__client_detach(q->client, &q->recipe);
    reign__zk_forget(q->zk, q);
    if (q->list_cb)
        q->list_cb(q->client, err, err ? NULL : v, err ? 0 : n, q->userdata);
    for (size_t i = 0; recs && i < n; i++)
        reign__record_clear(&recs[i]);
    reign__free(recs);
    reign__free(v);
    req_free(q);
}

static void submit_create(req *q);
static void where_listed(req *q);

static void round_done(req *q)
{
    if (q->kind != REQ_STATUS && !q->status_listed) {
        /* Stage two: status/ after the assignments. */
        q->status_listed = true;
        list_dir(q, 3, NULL);
        if (q->pending)
            return;
    }
    q->status_listed = false;
    if (q->kind == REQ_STATUS) {
        where_listed(q);
        return;
    }
    if (q->round_err) {
        finish(q, q->round_err);
        return;
    }
    if (q->kind == REQ_LIST) {
        finish_list(q, 0);
    } else if (q->n_seen) {
        finish_submit(q, 0, q->seen[0].name); /* our create did happen */
    } else {
        submit_create(q); /* it did not: create (again) */
    }
}

/* ---- submit --------------------------------------------------------------- */

static void on_created(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    (void)arg;
    switch (r->rc) {
    case 0: {
        const char *slash = r->value ? strrchr(r->value, '/') : NULL;
        finish_submit(q, 0, slash ? slash + 1 : "");
        break;
    }
    case REIGN_ENOENT:
        if (++q->tries > SUBMIT_TRIES) {
            finish(q, REIGN_ENOENT);
            break;
        }
        /* A queue not made yet, or without data/, or our bucket deleted by the server once
         * empty: made (once for the submits that failed alike), then sent again. */
        reign__tasks_bucket_missing(q->client, q->queue, q->guid, q->made);
        submit_create(q);
        break;
    case REIGN_EEXIST:
        if (r->failed_op != 1) {
            finish(q, r->rc);
            break;
        }
        /* data/<tag>/<guid> exists: an earlier send of ours landed (the guid is ours), and the
         * search after its lost answer missed the task (see docs/tasks.md).  Look again. */
        /* fall through */
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
    case REIGN_ESESSION:
        /* The create may have been applied: look for our guid before creating again. */
        reign__log(reign__client_log(q->client), REIGN_LOG_INFO,
                   "tasks %s: submit's answer lost (%s); looking for guid %s", q->queue,
                   reign_strerror(r->rc), q->guid);
        if (++q->tries > SUBMIT_TRIES) {
            finish(q, r->rc);
            break;
        }
        start_round(q);
        break;
    default:
        finish(q, r->rc);
    }
}

/*
 * One multi: the task's node tasks/T (named by the server) and its payload's node
 * data/<tag>/<guid>.  The payload stays there until the worker's result deletes it, so that
 * neither the master nor anyone else copies it on the way.
 */
static int submit_send(req *q)
{
    const reign__zk_mop ops[2] = {
        {.type = REIGN__ZK_MCREATE,
         .path = q->prefix,
         .data = q->head.data,
         .len = q->head.len,
         .version = -1,
         .flags = REIGN__ZK_SEQUENCE},
        {.type = REIGN__ZK_MCREATE,
         .path = q->payload,
         .data = q->rec.data,
         .len = q->rec.len,
         .version = -1},
    };
    q->made = reign__tasks_bucket_prepare(q->client, q->queue, q->guid);
    return reign__zk_multi(q->zk, ops, 2, q, on_created, NULL);
}

static void submit_create(req *q)
{
    int rc = submit_send(q);
    if (rc < 0)
        finish(q, rc);
}

/* ---- status, wait, delete ------------------------------------------------- */

static void wait_check(req *q);

static void info_from_status(req *q, const reign__zk_result *r)
{
    reign__record rec;
    reign_task_info info = {.task = q->task};
    int rc = reign__tasks_status_parse(r->value, r->value_len, r->stat.ctime_ms, &rec, &info);
    if (rc < 0) {
        finish_info(q, rc, NULL);
        return;
    }
    /* finish_info frees q: the record outlives the call back. */
    reign__client_detach(q->client, &q->recipe);
    reign__zk_forget(q->zk, q);
    if (q->info_cb)
        q->info_cb(q->client, 0, &info, q->userdata);
    reign__record_clear(&rec);
    req_free(q);
}

static void on_status_get(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    (void)arg;
    if (r->rc == 0) {
        info_from_status(q, r);
    } else if (r->rc == REIGN_ENOENT && q->kind == REQ_STATUS) {
        /* Not done: pending or assigned?  (status read first, then the
         * others: a task finishing meanwhile is caught by the re-read.) */
        start_round(q);
    } else if (r->rc == REIGN_ENOENT || r->rc == REIGN_ESESSION) {
        /* wait: no result although the payload is gone (a task submitted on another session
         * that our server has not seen yet, or a result deleted meanwhile), or a new session:
         * watched by an exists of status/T from now on. */
        q->reading = false;
        q->fallback = true;
        wait_check(q);
    } else {
        finish_info(q, r->rc, NULL);
    }
}

static void status_get(req *q)
{
    char *p = reign__tasks_path(q->queue, REIGN__N_STATUS, q->task, NULL);
    int rc =
        p ? reign__zk_get(q->zk, p, NULL, REIGN__ZK_RETRY, q, on_status_get, NULL) : REIGN_ENOMEM;
    reign__free(p);
    if (rc < 0)
        finish_info(q, rc, NULL);
}

/* REQ_STATUS: the listing of tasks/ and assign/W came back. */
static void where_listed(req *q)
{
    const seen *last = NULL;
    for (size_t i = 0; i < q->n_seen; i++)
        if (!strcmp(q->seen[i].name, q->task) && (!last || seen_later(&q->seen[i], last)))
            last = &q->seen[i];
    if (last) {
        reign_task_info info = {.task = q->task, .state = last->state, .worker = last->worker};
        finish_info(q, 0, &info);
        return;
    }
    if (q->round_err) {
        finish_info(q, q->round_err, NULL);
    } else if (++q->tries < 2) {
        status_get(q); /* it may have finished while we looked */
    } else {
        finish_info(q, REIGN_ENOENT, NULL);
    }
}

static void wait_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    req *q = owner;
    (void)arg;
    (void)path;
    if (ev == REIGN__ZK_CREATED && !q->reading) {
        q->reading = true; /* the result is there: read it at once (a get, not another exists) */
        status_get(q);
        return;
    }
    wait_check(q);
}

static void on_wait_exists(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    (void)arg;
    q->reading = false;
    if (r->rc == 0) {
        q->reading = true;
        status_get(q);
    } else if (r->rc != REIGN_ENOENT && r->rc != REIGN_ESESSION && r->rc != REIGN_ECONNLOSS &&
               r->rc != REIGN_ETIMEDOUT) {
        finish_info(q, r->rc, NULL);
    }
    /* else: the watch (or the recheck timer, or a new session) calls again */
}

/* The payload's bucket no longer shows it: the result should be there. */
static void on_payload_gone(reign__tasks_wait *w)
{
    req *q = (req *)((char *)w - offsetof(req, wait));
    q->reading = true;
    status_get(q);
}

/* The fallback wait: an exists of status/T, with a watch, and again every WAIT_RECHECK_MS. */
static void wait_check(req *q)
{
    reign__timers *ts = reign__client_timers(q->client);
    reign__timer_start(ts, &q->timer, reign__now_ns() + WAIT_RECHECK_MS * REIGN__NS_PER_MS);
    if (q->reading)
        return;
    char *p = reign__tasks_path(q->queue, REIGN__N_STATUS, q->task, NULL);
    int rc = p ? reign__zk_exists(q->zk, p, wait_event, REIGN__ZK_RETRY, q, on_wait_exists, NULL)
               : REIGN_ENOMEM;
    reign__free(p);
    if (rc == 0)
        q->reading = true;
    else if (rc != REIGN_ENOMEM)
        finish_info(q, rc, NULL);
}

static void wait_timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    wait_check(arg);
}

static void on_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    (void)arg;
    finish_done(owner, r->rc);
}

/* ---- the request object --------------------------------------------------- */

static void req_conn(reign__recipe *rp, reign_conn_state st)
{
    req *q = (req *)rp;
    if (st == REIGN_CONN_CLOSED)
        finish(q, REIGN_ECLOSED);
    else if (q->kind == REQ_WAIT && q->fallback &&
             (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED))
        wait_check(q); /* a new session has none of the old watches */
}

static void req_destroy(reign__recipe *rp)
{
    req_free((req *)rp);
}

static const reign__recipe_ops req_ops = {.conn = req_conn, .destroy = req_destroy};

static int req_new(req **ret, reign_client *client, req_kind kind, const char *queue,
                   const char *task, void *userdata)
{
    if (!client)
        return REIGN_EINVAL;
    int rc = reign__tasks_queue_check(queue);
    if (rc < 0)
        return rc;
    if (kind != REQ_SUBMIT && kind != REQ_LIST && !reign__task_name_parse(task, NULL, NULL))
        return REIGN_ENAME;
    if (!reign__client_zk(client))
        return REIGN_ENOTSUP; /* the queue lives in ZooKeeper nodes */
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    req *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &req_ops;
    q->client = client;
    q->zk = reign__client_zk(client);
    q->kind = kind;
    q->userdata = userdata;
    reign__buf_init(&q->head);
    reign__buf_init(&q->rec);
    reign__timer_init(&q->timer, wait_timer_cb, q);
    q->queue = reign__strdup(queue);
    q->task = task ? reign__strdup(task) : NULL;
    if (!q->queue || (task && !q->task)) {
        req_free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    *ret = q;
    return 0;
}

int reign_tasks_submit(reign_client *client, const char *queue, const void *data, size_t len,
                       reign_tasks_submit_cb *cb, void *userdata)
{
    if (len && !data)
        return REIGN_EINVAL;
    if (len > REIGN_TASK_DATA_MAX)
        return REIGN_E2BIG;
    if (client && reign__client_sql(client))
        return reign__tasks_sql_request(client,
                                        &(reign__tasks_sql_req){.kind = REIGN__TASKS_SQL_SUBMIT,
                                                                .queue = queue,
                                                                .data = data,
                                                                .len = len,
                                                                .submit_cb = cb,
                                                                .userdata = userdata});
    req *q;
    int rc = req_new(&q, client, REQ_SUBMIT, queue, NULL, userdata);
    if (rc < 0)
        return rc;
    q->submit_cb = cb;
    /* The guid is chosen before the create is sent, so a lost answer can be
     * told from a task submitted by someone else. */
    char now[24];
    snprintf(now, sizeof(now), "%lld", (long long)reign__wall_ms());
    rc = reign__tasks_new_guid(client, q->guid);
    const char *kv[] = {REIGN__K_GUID, q->guid, REIGN__K_SUBMITTED_MS, now};
    if (rc == 0)
        rc = reign__record_build(&q->head, kv, 4, NULL, 0);
    if (rc == 0)
        rc = reign__record_build(&q->rec, kv, 4, data, len);
    char *dir = rc == 0 ? reign__tasks_path(queue, REIGN__N_TASKS, NULL, NULL) : NULL;
    if (rc == 0 && dir) {
        q->prefix = reign__strf("%s/" REIGN__N_TASK "%s_", dir, q->guid);
        q->payload = reign__tasks_guid_payload_path(queue, q->guid);
    }
    reign__free(dir);
    if (rc == 0 && (!q->prefix || !q->payload))
        rc = REIGN_ENOMEM;
    if (rc == 0)
        rc = submit_send(q);
    if (rc < 0) {
        reign__client_detach(client, &q->recipe);
        req_free(q);
    }
    return rc;
}

static int info_start(reign_client *client, req_kind kind, const char *queue, const char *task,
                      reign_tasks_info_cb *cb, void *userdata)
{
    if (client && reign__client_sql(client))
        return reign__tasks_sql_request(
            client, &(reign__tasks_sql_req){.kind = kind == REQ_WAIT ? REIGN__TASKS_SQL_WAIT
                                                                     : REIGN__TASKS_SQL_STATUS,
                                            .queue = queue,
                                            .task = task,
                                            .info_cb = cb,
                                            .userdata = userdata});
    req *q;
    int rc = req_new(&q, client, kind, queue, task, userdata);
    if (rc < 0)
        return rc;
    q->info_cb = cb;
    if (kind == REQ_WAIT) {
        rc = reign__tasks_wait_start(client, queue, task, &q->wait, on_payload_gone);
        if (rc < 0) {
            reign__client_detach(client, &q->recipe);
            req_free(q);
        }
        return rc;
    }
    char *p = reign__tasks_path(queue, REIGN__N_STATUS, task, NULL);
    rc = p ? reign__zk_get(q->zk, p, NULL, REIGN__ZK_RETRY, q, on_status_get, NULL) : REIGN_ENOMEM;
    reign__free(p);
    if (rc < 0) {
        reign__client_detach(client, &q->recipe);
        req_free(q);
    }
    return rc;
}

int reign_tasks_status(reign_client *client, const char *queue, const char *task,
                       reign_tasks_info_cb *cb, void *userdata)
{
    return info_start(client, REQ_STATUS, queue, task, cb, userdata);
}

int reign_tasks_wait(reign_client *client, const char *queue, const char *task,
                     reign_tasks_info_cb *cb, void *userdata)
{
    return info_start(client, REQ_WAIT, queue, task, cb, userdata);
}

int reign_tasks_list(reign_client *client, const char *queue, reign_tasks_list_cb *cb,
                     void *userdata)
{
    if (client && reign__client_sql(client))
        return reign__tasks_sql_request(client,
                                        &(reign__tasks_sql_req){.kind = REIGN__TASKS_SQL_LIST,
                                                                .queue = queue,
                                                                .list_cb = cb,
                                                                .userdata = userdata});
    req *q;
    int rc = req_new(&q, client, REQ_LIST, queue, NULL, userdata);
    if (rc < 0)
        return rc;
    q->list_cb = cb;
    start_round(q);
    return 0;
}

int reign_tasks_delete(reign_client *client, const char *queue, const char *task,
                       reign_tasks_done_cb *cb, void *userdata)
{
    if (client && reign__client_sql(client))
        return reign__tasks_sql_request(client,
                                        &(reign__tasks_sql_req){.kind = REIGN__TASKS_SQL_DELETE,
                                                                .queue = queue,
                                                                .task = task,
                                                                .done_cb = cb,
                                                                .userdata = userdata});
    req *q;
    int rc = req_new(&q, client, REQ_DELETE, queue, task, userdata);
    if (rc < 0)
        return rc;
    q->done_cb = cb;
    char *p = reign__tasks_path(queue, REIGN__N_STATUS, task, NULL);
    rc = p ? reign__zk_delete(q->zk, p, -1, 0, q, on_deleted, NULL) : REIGN_ENOMEM;
    reign__free(p);
    if (rc < 0) {
        reign__client_detach(client, &q->recipe);
        req_free(q);
    }
    return rc;
}
