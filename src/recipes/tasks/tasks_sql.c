/*
 * tasks_sql.c - the task queue's one-shot requests on a SQL store (submit, status, wait, list,
 * delete): each is a CALL on the client's worker thread running one function of
 * src/sql/tasks.c, which has the table and the statements; here rows become task infos and
 * callbacks.  The public entry points (tasks_zk.c) hand a SQL client's requests here.
 *
 * Submit: the guid is drawn before the statement is sent, and the INSERT finds the row of an
 * earlier submit of the same guid rather than make a second; so an answer lost with the
 * connection is settled by sending the same statement again once connected, never by a
 * search.  Wait: the task's row is read again whenever the store may have changed it, as the
 * master and the worker read theirs (reign__tasks_sql_listen() and _idle_ms(), here too).  It
 * subscribes before its first read, on the same worker, so that a result written after that
 * read is always told of.
 */
#include <stdio.h>
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
        return reign__tasks_submit(conn, dc, c->queue, c->guid, c->data, c->len, &c->row, &c->made,
                                   err, errlen);
    case REIGN__TASKS_SQL_STATUS:
    case REIGN__TASKS_SQL_WAIT:
        return reign__tasks_read(conn, dc, c->queue, c->task, false, &c->row, err, errlen);
    case REIGN__TASKS_SQL_LIST:
        return reign__tasks_list(conn, dc, c->queue, &c->rows, err, errlen);
    case REIGN__TASKS_SQL_DELETE:
        return reign__tasks_delete(conn, dc, c->queue, c->task, err, errlen);
    }
    return REIGN_EINVAL;
}

bool reign__tasks_sql_listen(reign__sqlw *sw, const char *queue)
{
    if (!reign__sqlw_notifies(sw))
        return false;
    char name[sizeof REIGN__TASKS_LISTEN + REIGN_TASKS_QUEUE_MAX];
    snprintf(name, sizeof(name), REIGN__TASKS_LISTEN "%s", queue);
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
    bool reading;   /* a call is out */
    bool again;     /* WAIT: told of a change meanwhile: read once more after it */
    bool listening; /* WAIT: subscribed to the queue's notices */
    int tries;      /* SUBMIT: sends whose answer was lost */
    reign__timer timer;
} req;

static int send_call(req *q);
static void resend(req *q);

static reign__timers *timers(req *q)
{
    return reign__client_timers(q->client);
}

/* Stops whatever may still call q back, and detaches it from the client. */
static void stop(req *q)
{
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
    if (q->r.kind != REIGN__TASKS_SQL_WAIT) {
        finish(q, rc, &c->row, &c->rows);
        return;
    }
    if (rc == 0 && c->row.state == REIGN_TASK_DONE) {
        finish(q, 0, &c->row, NULL);
        return;
    }
    /* Not done yet (or not there yet, or the store out of reach): read again when told, and at
     * the latest after a poll period or REIGN__TASKS_SQL_CHECK_MS. */
    if (q->again) {
        q->again = false;
        resend(q);
        return;
    }
    later(q, rc < 0 && !lost(rc) ? RETRY_MS : reign__tasks_sql_idle_ms(q->client));
}

/* Sends the request's call: 0 (or a call already out, to be followed by another), or the
 * error of a call that could not be sent. */
static int send_call(req *q)
{
    if (q->reading) {
        q->again = true;
        return 0;
    }
    reign__timer_stop(timers(q), &q->timer);
    if (q->r.kind == REIGN__TASKS_SQL_WAIT && !q->listening)
        q->listening = reign__tasks_sql_listen(q->w, q->r.queue);
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
    int rc = reign__sqlw_call(q->w, "tasks", run_call, c, call_free, q, on_call, NULL);
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
             (q->r.kind == REIGN__TASKS_SQL_WAIT || q->r.kind == REIGN__TASKS_SQL_SUBMIT))
        resend(q); /* connected (again): a lost answer is settled, a wait reads */
}

static void req_changed(reign__recipe *rp)
{
    req *q = (req *)rp;
    if (q->r.kind == REIGN__TASKS_SQL_WAIT)
        resend(q);
}

static void req_destroy(reign__recipe *rp)
{
    req_free((req *)rp);
}

static const reign__recipe_ops req_ops = {
    .conn = req_conn, .destroy = req_destroy, .changed = req_changed};

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
        rc = send_call(q);
    if (rc < 0)
        req_free(q); /* a call that fails never calls back */
    return rc;
}
