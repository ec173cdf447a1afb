/*
 * tasks_sql.c - the task queue's one-shot requests on a SQL store (submit, status, wait, list,
 * delete): each is a CALL on the client's worker thread running one function of
 * src/sql/tasks.c, which has the table and the statements; here rows become task infos and
 * callbacks.  The public entry points (tasks_zk.c) hand a SQL client's requests here.
 *
 * Submit: the guid is drawn before the statement is sent, and the INSERT finds the row of an
 * earlier submit of the same guid rather than make a second; so an answer lost with the
 * connection is settled by sending the same statement again once connected, never by a
 * search.  Wait: a wait joins its client's other waits on that queue (one `hub` per client,
 * one `wqueue` per queue waited on), which read together at once (a task done already is
 * answered then), whenever the store may have changed (a NOTIFY on the queue's channel, sent
 * by every write in its transaction, on PostgreSQL; a change of the file on SQLite; every poll
 * period on MariaDB) and, whatever the store, every REIGN__TASKS_SQL_CHECK_MS in case a notice
 * was lost: one call per queue and change, which asks which of the waited tasks are done and
 * reads those (sql/tasks.h's reign__tasks_done()), however many wait.  The client subscribes
 * before the first read, on the same worker, so that a result written after a read is always
 * told of.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/tasks.h"
#include "sql/worker.h"
#include "tasks_internal.h"

#define RETRY_MS     1000 /* a submit whose answer was lost is sent again this often */
#define SUBMIT_TRIES 10   /* ... this many times, then its error is the answer */

/* What travels to the worker and back. */
typedef struct call {
    reign__tasks_sql_kind kind;
    char *queue;
    char task[REIGN_TASKS_TASK_MAX + 1];
    char guid[17];
    void *data; /* SUBMIT: a copy of its own (the request may go first: the worker still runs
                   a call whose owner has forgotten it) */
    size_t len;
    reign__task_row row;   /* SUBMIT, STATUS, WAIT */
    reign__task_rows rows; /* LIST */
    bool made;
} call;

static void call_free(void *p)
{
    call *c = p;
    reign__task_row_clear(&c->row);
    reign__task_rows_free(&c->rows);
    reign__free(c->data);
    reign__free(c->queue);
    reign__free(c);
}

static int run_call(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    call *c = ctx;
    switch (c->kind) {
    case REIGN__TASKS_SQL_SUBMIT:
        break; /* run_submits() */
    case REIGN__TASKS_SQL_WAIT:
        break; /* run_waits() */
    case REIGN__TASKS_SQL_STATUS:
        return reign__tasks_read(conn, dc, c->queue, c->task, false, &c->row, err, errlen);
    case REIGN__TASKS_SQL_LIST:
        return reign__tasks_list(conn, dc, c->queue, &c->rows, err, errlen);
    case REIGN__TASKS_SQL_DELETE:
        return reign__tasks_delete(conn, dc, c->queue, c->task, err, errlen);
    }
    return REIGN_EINVAL;
}

/* The submits queued together on the worker, in one transaction (a client that submits many
 * at once pays one commit for them). */
static int run_submits(reign__sqlconn *conn, const char *dc, void *const *ctxs, int *rcs, size_t n,
                       char *err, size_t errlen)
{
    reign__tasks_submission *s = reign__calloc(n, sizeof(*s));
    reign__tasks_submission **v = reign__calloc(n, sizeof(*v));
    int rc = REIGN_ENOMEM;
    if (s && v) {
        for (size_t i = 0; i < n; i++) {
            const call *c = ctxs[i];
            s[i] = (reign__tasks_submission){
                .queue = c->queue, .guid = c->guid, .data = c->data, .len = c->len};
            v[i] = &s[i];
        }
        rc = reign__tasks_submit_batch(conn, dc, v, rcs, n, err, errlen);
        for (size_t i = 0; i < n; i++) {
            call *c = ctxs[i];
            c->row = s[i].row;
            c->made = s[i].made;
        }
    }
    reign__free(v);
    reign__free(s);
    return rc;
}

bool reign__tasks_sql_listen(reign__sqlw *sw, const char *queue, const char *suffix)
{
    if (!reign__sqlw_notifies(sw))
        return false;
    char name[REIGN__TASKS_LISTEN_MAX];
    snprintf(name, sizeof(name), REIGN__TASKS_LISTEN "%s%s", queue, suffix);
    return reign__sqlw_submit(sw, REIGN__SQLW_LISTEN, name, NULL, 0, NULL, NULL, NULL) == 0;
}

int reign__tasks_sql_idle_ms(reign_client *client)
{
    return reign__sqlw_notifies(reign__client_sql(client)) ? REIGN__TASKS_SQL_CHECK_MS
                                                           : reign__client_lease(client)->poll_ms;
}

void reign__tasks_sql_info(const reign__task_row *r, reign_task_info *info)
{
    memset(info, 0, sizeof(*info));
    info->task = r->name;
    info->state = r->state;
    info->worker = r->state == REIGN_TASK_PENDING ? NULL : r->worker;
    info->submitted_ms = r->submitted_ms;
    if (r->state != REIGN_TASK_DONE)
        return;
    info->exit_code = r->exit_code;
    info->signal = r->exit_signal;
    info->output = r->output ? r->output : "";
    info->output_len = r->output_len;
    info->done_ms = r->done_ms;
}

/* ---- a request ------------------------------------------------------------------------------- */

typedef struct req {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    reign__tasks_sql_req r; /* its strings and payload our own copies */
    char guid[17];
    bool done;
    bool reading; /* a call is out */
    int tries;    /* SUBMIT: sends whose answer was lost */
    reign__timer timer;
    struct wqueue *wq;          /* WAIT: the shared reads it is in */
    struct req *wprev, *wnext;  /* ... among wq's waits, or in a list of waits ended */
    int64_t id;                 /* WAIT: its task's id (0: a name of no id) */
    bool due;                   /* WAIT: to be named by the queue's next read */
    const reign__task_row *row; /* WAIT: its row, while an ended wait is called back */
} req;

static void wq_leave(req *q);
static int wq_join(req *q);

static int send_call(req *q);
static void resend(req *q);

static reign__timers *timers(req *q)
{
    return reign__client_timers(q->client);
}

/* Stops whatever may still call q back, and detaches it from the client. */
static void stop(req *q)
{
    wq_leave(q);
    reign__timer_stop(timers(q), &q->timer);
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
}

static void release(req *q)
{
    reign__free((char *)q->r.queue);
    reign__free((char *)q->r.task);
    reign__free((void *)q->r.data);
    reign__free(q);
}

static void req_free(req *q)
{
    stop(q);
    release(q);
}

/* Calls back once, then frees (the callback may free the client: q is detached first). */
static void finish(req *q, int err, const reign__task_row *row, const reign__task_rows *rows)
{
    if (q->done)
        return;
    q->done = true;
    stop(q);
    reign_client *client = q->client;
    const reign__tasks_sql_req *r = &q->r;
    switch (r->kind) {
    case REIGN__TASKS_SQL_SUBMIT:
        if (r->submit_cb)
            r->submit_cb(client, err, err == 0 ? row->name : NULL, r->userdata);
        break;
    case REIGN__TASKS_SQL_STATUS:
    case REIGN__TASKS_SQL_WAIT: {
        reign_task_info info;
        if (err == 0)
            reign__tasks_sql_info(row, &info);
        if (r->info_cb)
            r->info_cb(client, err, err == 0 ? &info : NULL, r->userdata);
        break;
    }
    case REIGN__TASKS_SQL_LIST: {
        reign_task_info *v = NULL;
        size_t n = err == 0 ? rows->n : 0;
        if (n && !(v = reign__calloc(n, sizeof(*v)))) {
            err = REIGN_ENOMEM;
            n = 0;
        }
        for (size_t i = 0; i < n; i++)
            reign__tasks_sql_info(&rows->v[i], &v[i]);
        if (r->list_cb)
            r->list_cb(client, err, v, n, r->userdata);
        reign__free(v);
        break;
    }
    case REIGN__TASKS_SQL_DELETE:
        if (r->done_cb)
            r->done_cb(client, err, r->userdata);
        break;
    }
    release(q);
}

static void later(req *q, int ms)
{
    reign__timer_start(timers(q), &q->timer, reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

static bool lost(int rc)
{
    return rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT;
}

static void on_call(void *owner, void *arg, const reign__sqlw_result *res)
{
    req *q = owner;
    call *c = res->ctx;
    int rc = res->rc < 0 ? res->rc : 0;
    (void)arg;
    q->reading = false;
    if (rc < 0 && rc != REIGN_ENOENT)
        reign__log(reign__client_log(q->client), REIGN_LOG_DEBUG, "tasks of queue %s: %s",
                   q->r.queue, res->err);
    if (q->r.kind == REIGN__TASKS_SQL_SUBMIT && lost(rc) && ++q->tries <= SUBMIT_TRIES) {
        /* Landed or not: the same statement, sent again, finds the row if it did. */
        reign__log(reign__client_log(q->client), REIGN_LOG_INFO,
                   "tasks %s: submit's answer lost (%s); sending guid %s again", q->r.queue,
                   reign_strerror(rc), q->guid);
        later(q, RETRY_MS);
        return;
    }
    finish(q, rc, &c->row, &c->rows);
}

/* Sends the request's call (not a wait's: the shared reads do those): 0 (or a call already
 * out), or the error of a call that could not be sent. */
static int send_call(req *q)
{
    if (q->reading)
        return 0;
    reign__timer_stop(timers(q), &q->timer);
    call *c = reign__calloc(1, sizeof(*c));
    if (!c || !(c->queue = reign__strdup(q->r.queue)) ||
        (q->r.len && !(c->data = reign__memdup(q->r.data, q->r.len)))) {
        if (c)
            call_free(c);
        return REIGN_ENOMEM;
    }
    c->kind = q->r.kind;
    snprintf(c->task, sizeof(c->task), "%s", q->r.task ? q->r.task : "");
    memcpy(c->guid, q->guid, sizeof(c->guid));
    c->len = q->r.len;
    int rc = c->kind == REIGN__TASKS_SQL_SUBMIT
                 ? reign__sqlw_call_batch(q->w, "tasks submit", run_submits, c, call_free, q,
                                          on_call, NULL)
                 : reign__sqlw_call(q->w, "tasks", run_call, c, call_free, q, on_call, NULL);
    if (rc < 0) {
        call_free(c);
        return rc;
    }
    q->reading = true;
    return 0;
}

/* Sends again from the loop (a timer, a notice, a reconnection): a closing client ends the
 * request; anything else is tried again later. */
static void resend(req *q)
{
    int rc = send_call(q);
    if (rc == REIGN_ECLOSED)
        finish(q, rc, NULL, NULL);
    else if (rc < 0)
        later(q, RETRY_MS);
}

static void timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    resend(arg);
}

static void req_conn(reign__recipe *rp, reign_conn_state st)
{
    req *q = (req *)rp;
    if (st == REIGN_CONN_CLOSED)
        finish(q, REIGN_ECLOSED, NULL, NULL);
    else if ((st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED) && !q->reading &&
             q->r.kind == REIGN__TASKS_SQL_SUBMIT)
        resend(q); /* connected (again): a lost answer is settled */
}

static void req_destroy(reign__recipe *rp)
{
    req_free((req *)rp);
}

static const reign__recipe_ops req_ops = {.conn = req_conn, .destroy = req_destroy};

/* ---- waits: one read per queue and change ---------------------------------------------------- */

typedef struct hub hub;

typedef struct wqueue {
    struct wqueue *next;
    hub *hub;
    char *queue;
    req *waits;   /* not answered yet */
    bool reading; /* a read of them is out */
    bool again;   /* some were marked due meanwhile: read once more after it */
} wqueue;

struct hub {
    reign__recipe recipe; /* first: one per client, found by its ops */
    reign_client *client;
    reign__sqlw *w;
    wqueue *queues;
    reign__timer timer; /* every queue is read at least this often */
};

typedef struct wcall {
    char *queue;
    char **names;
    size_t n;
    reign__task_rows rows; /* the done ones */
} wcall;

static void wcall_free(void *p)
{
    wcall *c = p;
    for (size_t i = 0; i < c->n; i++)
        reign__free(c->names[i]);
    reign__free(c->names);
    reign__free(c->queue);
    reign__task_rows_free(&c->rows);
    reign__free(c);
}

static int run_waits(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    wcall *c = ctx;
    return reign__tasks_done(conn, dc, c->queue, c->names, c->n, &c->rows, err, errlen);
}

static void on_waits(void *owner, void *arg, const reign__sqlw_result *res);

static void wq_all_due(wqueue *wq)
{
    for (req *q = wq->waits; q; q = q->wnext)
        q->due = true;
}

/* Reads which of wq's waits marked due are over: one call, naming those (or, one out, one more
 * after it).  A wait is due when it begins, when a change tells of its task, and when a change
 * tells of the queue without saying which tasks (or at the hub's timer, or a reconnection). */
static void wq_read(wqueue *wq)
{
    if (wq->reading) {
        wq->again = true;
        return;
    }
    wq->again = false;
    size_t n = 0;
    for (req *q = wq->waits; q; q = q->wnext)
        n += q->due;
    if (!n)
        return;
    wcall *c = reign__calloc(1, sizeof(*c));
    if (!c || !(c->queue = reign__strdup(wq->queue)) ||
        !(c->names = reign__calloc(n, sizeof(*c->names)))) {
        if (c)
            wcall_free(c);
        return; /* the hub's timer tries again */
    }
    for (req *q = wq->waits; q; q = q->wnext) {
        if (q->due && (c->names[c->n] = reign__strdup(q->r.task))) {
            c->n++;
            q->due = false;
        }
    }
    if (reign__sqlw_call(wq->hub->w, "tasks wait", run_waits, c, wcall_free, wq, on_waits, NULL) <
        0) {
        wq_all_due(wq); /* at the hub's timer */
        wcall_free(c);
        return;
    }
    wq->reading = true;
}

static void wq_free(wqueue *wq)
{
    hub *h = wq->hub;
    for (wqueue **p = &h->queues; *p; p = &(*p)->next) {
        if (*p == wq) {
            *p = wq->next;
            break;
        }
    }
    reign__sqlw_forget(h->w, wq);
    reign__free(wq->queue);
    reign__free(wq);
}

static void on_waits(void *owner, void *arg, const reign__sqlw_result *res)
{
    wqueue *wq = owner;
    wcall *c = res->ctx;
    (void)arg;
    if (res->rc < 0) {
        reign__log(reign__client_log(wq->hub->client), REIGN_LOG_DEBUG,
                   "tasks of queue %s: reading the waits: %s", wq->queue, res->err);
        wq_all_due(wq); /* read again at the next change, or the hub's timer */
    }
    /* The waits this read ends leave the queue's list, and their client, before any is
     * called back: a callback may close the client, which ends the others.  (The queue stays
     * while `reading`, however many leave.) */
    req *ended = NULL;
    for (size_t i = 0; i < c->rows.n; i++) {
        for (req *q = wq->waits, *next; q; q = next) {
            next = q->wnext;
            if (strcmp(q->r.task, c->rows.v[i].name))
                continue;
            stop(q);
            q->row = &c->rows.v[i];
            q->wnext = ended;
            ended = q;
        }
    }
    wq->reading = false;
    if (wq->again && wq->waits)
        wq_read(wq);
    if (!wq->waits && !wq->reading)
        wq_free(wq);
    while (ended) {
        req *q = ended;
        ended = q->wnext;
        finish(q, 0, q->row, NULL);
    }
}

static void hub_read_all(hub *h)
{
    for (wqueue *wq = h->queues; wq; wq = wq->next) {
        wq_all_due(wq);
        wq_read(wq);
    }
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Marks due the waits of wq that a change tells of: `hint` the ids of the tasks it finished
 * ("12,15,16", tasks.h), or NULL (it does not say: all of them). */
static void wq_mark(wqueue *wq, const char *hint)
{
    size_t n = 1;
    for (const char *p = hint; p && *p; p++)
        n += *p == ',';
    int64_t *ids = hint ? reign__calloc(n, sizeof *ids) : NULL;
    size_t m = 0;
    for (const char *p = hint; ids && *p; p++) {
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            reign__free(ids); /* not ours to read: as if it said nothing */
            ids = NULL;
            break;
        }
        ids[m++] = id;
        if (!*(p = end))
            break;
    }
    if (!ids || !m) {
        reign__free(ids);
        wq_all_due(wq);
        return;
    }
    qsort(ids, m, sizeof *ids, cmp_id);
    for (req *q = wq->waits; q; q = q->wnext)
        if (q->id && bsearch(&q->id, ids, m, sizeof *ids, cmp_id))
            q->due = true;
    reign__free(ids);
}

/* The next read of every queue, at the latest: a poll period where nothing is notified. */
static void hub_arm(hub *h)
{
    int ms = reign__tasks_sql_idle_ms(h->client);
    reign__timer_start(reign__client_timers(h->client), &h->timer,
                       reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

static void hub_timer(reign__timer *t, void *arg)
{
    hub *h = arg;
    (void)t;
    if (!h->queues)
        return;
    hub_read_all(h);
    hub_arm(h);
}

static void hub_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED)
        hub_read_all((hub *)rp);
}

/* A change read by the waits it tells of alone, where it says (PostgreSQL's notices: a
 * result's names the tasks it finished); one that says nothing, by all. */
static void hub_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    hub *h = (hub *)rp;
    if (heard->all) {
        hub_read_all(h);
        return;
    }
    const size_t pre = sizeof REIGN__TASKS_LISTEN - 1;
    /* Told of without a hint: everything of that queue. */
    for (wqueue *wq = h->queues; wq; wq = wq->next) {
        char name[REIGN__TASKS_LISTEN_MAX];
        snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s", wq->queue);
        if (reign__strset_has(&heard->names, name))
            wq_mark(wq, NULL);
    }
    for (size_t i = 0; i < heard->n; i++) {
        const char *note = heard->v[i], *nl = strchr(note, '\n');
        size_t len = nl ? (size_t)(nl - note) : strlen(note);
        if (len <= pre || strncmp(note, REIGN__TASKS_LISTEN, pre))
            continue;
        for (wqueue *wq = h->queues; wq; wq = wq->next)
            if (strlen(wq->queue) == len - pre && !strncmp(note + pre, wq->queue, len - pre))
                wq_mark(wq, nl ? nl + 1 : NULL);
    }
    for (wqueue *wq = h->queues; wq; wq = wq->next)
        wq_read(wq);
}

/* With the client: the waits still in its lists are freed as recipes of their own. */
static void hub_destroy(reign__recipe *rp)
{
    hub *h = (hub *)rp;
    reign__timer_stop(reign__client_timers(h->client), &h->timer);
    while (h->queues) {
        for (req *q = h->queues->waits; q; q = q->wnext)
            q->wq = NULL;
        wq_free(h->queues);
    }
    reign__client_detach(h->client, &h->recipe);
    reign__free(h);
}

static const reign__recipe_ops hub_ops = {
    .conn = hub_conn, .destroy = hub_destroy, .changed = hub_changed};

/* Puts wait q in its client's shared reads of its queue and has them read: 0, or
 * REIGN_ENOMEM. */
static int wq_join(req *q)
{
    hub *h = (hub *)reign__client_find(q->client, &hub_ops);
    if (!h) {
        if (!(h = reign__calloc(1, sizeof(*h))))
            return REIGN_ENOMEM;
        h->recipe.ops = &hub_ops;
        h->client = q->client;
        h->w = q->w;
        reign__timer_init(&h->timer, hub_timer, h);
        reign__client_attach(q->client, &h->recipe);
    }
    wqueue *wq = h->queues;
    while (wq && strcmp(wq->queue, q->r.queue))
        wq = wq->next;
    if (!wq) {
        if (!(wq = reign__calloc(1, sizeof(*wq))) || !(wq->queue = reign__strdup(q->r.queue))) {
            reign__free(wq);
            return REIGN_ENOMEM;
        }
        wq->hub = h;
        wq->next = h->queues;
        h->queues = wq;
        /* Before its first read, on the same worker: a result written after it is told. */
        (void)reign__tasks_sql_listen(h->w, wq->queue, "");
    }
    if (!reign__timer_armed(&h->timer))
        hub_arm(h);
    char guid[17];
    if (!reign__tasks_sql_name_parse(q->r.task, guid, &q->id))
        q->id = 0; /* no task of this store: never done (tasks.h) */
    q->wq = wq;
    q->wprev = NULL;
    q->wnext = wq->waits;
    if (wq->waits)
        wq->waits->wprev = q;
    wq->waits = q;
    q->due = true;
    wq_read(wq); /* done already, maybe: or after the read out now, which may predate q */
    return 0;
}

static void wq_leave(req *q)
{
    wqueue *wq = q->wq;
    if (!wq)
        return;
    if (q->wprev)
        q->wprev->wnext = q->wnext;
    else
        wq->waits = q->wnext;
    if (q->wnext)
        q->wnext->wprev = q->wprev;
    q->wq = NULL;
    q->wprev = q->wnext = NULL;
    if (!wq->waits && !wq->reading)
        wq_free(wq);
}

int reign__tasks_sql_request(reign_client *client, const reign__tasks_sql_req *r)
{
    int rc = reign__tasks_queue_check(r->queue);
    if (rc < 0)
        return rc;
    if (r->task && !reign__task_name_parse(r->task, NULL, NULL))
        return REIGN_ENAME;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    req *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->r = *r;
    q->r.queue = reign__strdup(r->queue);
    q->r.task = r->task ? reign__strdup(r->task) : NULL;
    q->r.data = r->len ? reign__memdup(r->data, r->len) : NULL;
    q->recipe.ops = &req_ops;
    q->client = client;
    q->w = reign__client_sql(client);
    reign__timer_init(&q->timer, timer_cb, q);
    rc = !q->r.queue || (r->len && !q->r.data) || (r->task && !q->r.task) ? REIGN_ENOMEM : 0;
    if (rc == 0 && r->kind == REIGN__TASKS_SQL_SUBMIT)
        rc = reign__random_hex(q->guid, REIGN__TASKS_GUID_BYTES);
    reign__client_attach(client, &q->recipe);
    if (rc == 0)
        rc = r->kind == REIGN__TASKS_SQL_WAIT ? wq_join(q) : send_call(q);
    if (rc < 0)
        req_free(q); /* a call that fails never calls back */
    return rc;
}
