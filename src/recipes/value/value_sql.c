/*
 * value_sql.c - watched values on a SQL store: each request is a CALL on the client's worker
 * thread running one function of src/sql/values.c, which has the table, the statements and
 * the compare-and-set; here the rows become values and events.
 *
 * A watch reads the value whenever it may have changed: where the store tells of changes
 * (PostgreSQL's NOTIFY, sent by every write of a value in its transaction; SQLite's file
 * changes), when told, and otherwise every poll period (MariaDB).  It subscribes before its
 * first read, on the same worker, so a write that commits after that read is always told of;
 * a notice that comes while a read is out makes it read once more after it, and a reconnect
 * makes it read: no change is missed, though several may be folded into one event.
 */
#include <stdio.h>
#include <string.h>

#include "sql/values.h"
#include "sql/worker.h"
#include "value_impl.h"

static reign__value_stat stat_of(const reign__value_row *r)
{
    return (reign__value_stat){.version = r->version,
                               .czxid = r->czxid,
                               .mzxid = r->mzxid,
                               .ctime_ms = r->created_ms,
                               .mtime_ms = r->modified_ms};
}

/* ---- one-shot requests --------------------------------------------------- */

/* What travels to the worker and back. */
typedef struct call {
    reign__value_op op;
    char *key;
    void *data;
    size_t len;
    int64_t version;
    reign__value_row row; /* GET: the row read; SET: what was written */
    int64_t deleted;      /* DELETE: the version deleted */
} call;

static void call_free(void *p)
{
    call *c = p;
    reign__value_row_clear(&c->row);
    reign__free(c->key);
    reign__free(c->data);
    reign__free(c);
}

static int run_call(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    call *c = ctx;
    switch (c->op) {
    case REIGN__VALUE_GET:
        return reign__values_read(conn, dc, c->key, &c->row, err, errlen);
    case REIGN__VALUE_SET:
        return reign__values_set(conn, dc, c->key, c->data, c->len, c->version, &c->row, err,
                                 errlen);
    case REIGN__VALUE_DELETE:
        return reign__values_delete(conn, dc, c->key, c->version, &c->deleted, err, errlen);
    }
    return REIGN_EINVAL;
}

/* One request, attached to the client so that closing it completes the request. */
typedef struct req {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    reign_value_cb *cb;
    void *userdata;
    bool done;
} req;

/* Calls back once, then frees (the callback may free the client: q is detached first). */
static void req_finish(req *q, int err, const reign_value *v)
{
    if (q->done)
        return;
    q->done = true;
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    if (q->cb)
        q->cb(q->client, err, err == 0 ? v : NULL, q->userdata);
    reign__free(q);
}

static void on_call(void *owner, void *arg, const reign__sqlw_result *r)
{
    req *q = owner;
    call *c = r->ctx;
    reign_value v;
    int rc = r->rc < 0 ? r->rc : 0;
    if (rc < 0 && rc != REIGN_ENOENT && rc != REIGN_EEXIST && rc != REIGN_EBADVERSION)
        reign__log(reign__client_log(q->client), REIGN_LOG_DEBUG, "value '%s': %s", c->key, r->err);
    if (rc == 0 && c->op == REIGN__VALUE_GET && !c->row.exists)
        rc = REIGN_ENOENT;
    if (rc == 0 && c->op == REIGN__VALUE_DELETE) {
        reign__value_stat st = {.version = c->deleted};
        reign__value_fill(&v, c->key, &st, NULL, 0);
    } else if (rc == 0) {
        reign__value_stat st = stat_of(&c->row);
        bool data = c->op == REIGN__VALUE_GET;
        reign__value_fill(&v, c->key, &st, data ? (c->row.data ? c->row.data : "") : NULL,
                          data ? c->row.data_len : 0);
    }
    req_finish(q, rc, &v);
}

static void req_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        req_finish((req *)rp, REIGN_ECLOSED, NULL);
}

static void req_destroy(reign__recipe *rp)
{
    req *q = (req *)rp;
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    reign__free(q);
}

static const reign__recipe_ops req_ops = {.conn = req_conn, .destroy = req_destroy};

int reign__value_sql_request(reign_client *client, const reign__value_req *r)
{
    req *q = reign__calloc(1, sizeof(*q));
    call *c = reign__calloc(1, sizeof(*c));
    if (!q || !c || !(c->key = reign__strdup(r->key)) ||
        (r->len && !(c->data = reign__memdup(r->data, r->len)))) {
        reign__free(q);
        if (c)
            call_free(c);
        return REIGN_ENOMEM;
    }
    c->op = r->op;
    c->len = r->len;
    c->version = r->version;
    q->recipe.ops = &req_ops;
    q->client = client;
    q->w = reign__client_sql(client);
    q->cb = r->cb;
    q->userdata = r->userdata;
    reign__client_attach(client, &q->recipe);
    /* A write is sent once: its answer lost with the connection is REIGN_ECONNLOSS (outcome
     * unknown), never a retry that would fail its own compare-and-set. */
    int rc = reign__sqlw_call(q->w, "value", run_call, c, call_free, q, on_call, NULL);
    if (rc < 0) {
        call_free(c);
        reign__client_detach(client, &q->recipe);
        reign__free(q);
    }
    return rc;
}

/* ---- watching ------------------------------------------------------------ */

#define RETRY_MS 1000

typedef struct sql_watch {
    reign_value_watch base; /* first: value.c and the client call us through it */
    reign__sqlw *w;
    bool reading;       /* a read is out */
    bool again;         /* told of a change meanwhile: read once more after it */
    bool listening;     /* subscribed to the store's notices */
    bool foreign;       /* the last read found a row reign did not write (reported once) */
    reign__timer timer; /* the next poll (MariaDB), or a retry after a failed read */
} sql_watch;

static void wread(sql_watch *w);

static reign__timers *timers(sql_watch *w)
{
    return reign__client_timers(w->base.client);
}

/* After a read: when to read next, if nothing tells us before. */
static void rearm(sql_watch *w, bool failed)
{
    int ms = failed                       ? RETRY_MS
             : reign__sqlw_notifies(w->w) ? 0
                                          : reign__client_lease(w->base.client)->poll_ms;
    if (ms > 0 && reign__life_live(&w->base.life))
        reign__timer_start(timers(w), &w->timer, reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

static void on_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    sql_watch *w = owner;
    call *c = r->ctx;
    reign__life_enter(&w->base.life);
    w->reading = false;
    if (!reign__life_live(&w->base.life))
        goto out;
    if (r->rc == REIGN_EFOREIGN) {
        /* As on ZooKeeper: no value, an ERROR once, and the next change is read as any. */
        reign__value_stat none = {0};
        reign__value_watch_apply(&w->base, false, &none, NULL, 0);
        if (!w->foreign) {
            w->foreign = true;
            char msg[640];
            snprintf(msg, sizeof(msg), "value '%s' holds data reign did not write; ignored (%s)",
                     w->base.key, r->err);
            reign__value_watch_error(&w->base, r->rc, msg);
        }
        goto done;
    }
    if (r->rc < 0) {
        /* A connection lost reads again when it is back (RECONNECTED); a closed client, never. */
        bool lost = r->rc == REIGN_ECONNLOSS || r->rc == REIGN_ETIMEDOUT;
        if (r->rc != REIGN_ECLOSED) {
            char msg[640];
            snprintf(msg, sizeof(msg), "reading value '%s': %s; %s", w->base.key, r->err,
                     lost ? "reading again once connected" : "retrying");
            reign__log(w->base.log, REIGN_LOG_WARN, "value watch: %s", msg);
            reign__value_watch_error(&w->base, r->rc, msg);
            if (!lost)
                rearm(w, true);
        }
        goto out;
    }
    reign__value_stat st = stat_of(&c->row);
    w->foreign = false;
    reign__value_watch_apply(&w->base, c->row.exists, &st, c->row.data, c->row.data_len);
done:
    if (w->again && reign__life_live(&w->base.life)) {
        w->again = false;
        wread(w);
    } else {
        rearm(w, false);
    }
out:
    reign__value_watch_leave(&w->base);
}

static void wread(sql_watch *w)
{
    if (w->reading) {
        w->again = true;
        return;
    }
    reign__timer_stop(timers(w), &w->timer);
    if (!w->listening && reign__sqlw_notifies(w->w))
        /* Before the read, on the same worker: a write after the read is told of. */
        w->listening = reign__sqlw_submit(w->w, REIGN__SQLW_LISTEN, REIGN__VALUES_LISTEN, NULL, 0,
                                          NULL, NULL, NULL) == 0;
    call *c = reign__calloc(1, sizeof(*c));
    int rc = REIGN_ENOMEM;
    if (c && (c->key = reign__strdup(w->base.key))) {
        c->op = REIGN__VALUE_GET;
        rc = reign__sqlw_call(w->w, "value watch", run_call, c, call_free, w, on_read, NULL);
    }
    if (rc < 0) {
        if (c)
            call_free(c);
        if (rc != REIGN_ECLOSED)
            rearm(w, true); /* out of memory: try again later */
        return;
    }
    w->reading = true;
}

static void timer_cb(reign__timer *t, void *arg)
{
    sql_watch *w = arg;
    reign__life_enter(&w->base.life);
    wread(w);
    reign__value_watch_leave(&w->base);
}

static void watch_conn(reign__recipe *rp, reign_conn_state st)
{
    sql_watch *w = (sql_watch *)rp;
    reign__life_enter(&w->base.life);
    /* Connected (again): whatever happened meanwhile, a read tells. */
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED)
        wread(w);
    else if (st == REIGN_CONN_CLOSED)
        reign__timer_stop(timers(w), &w->timer);
    reign__value_watch_leave(&w->base);
}

static void watch_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    sql_watch *w = (sql_watch *)rp;
    reign__life_enter(&w->base.life);
    wread(w);
    reign__value_watch_leave(&w->base);
}

static void watch_stop(reign_value_watch *base)
{
    sql_watch *w = (sql_watch *)base;
    reign__timer_stop(timers(w), &w->timer);
    reign__sqlw_forget(w->w, w);
}

static void watch_destroy(reign_value_watch *base)
{
    sql_watch *w = (sql_watch *)base;
    watch_stop(base);
    reign__client_detach(w->base.client, &w->base.recipe);
    reign__value_watch_clear(&w->base);
    reign__free(w);
}

static void watch_recipe_destroy(reign__recipe *rp)
{
    watch_destroy((reign_value_watch *)rp);
}

static const reign__recipe_ops watch_recipe_ops = {
    .conn = watch_conn, .destroy = watch_recipe_destroy, .changed = watch_changed};
static const reign__value_watch_ops watch_ops = {.stop = watch_stop, .destroy = watch_destroy};

int reign__value_sql_watch(reign_value_watch **ret, reign_client *client, const char *key,
                           reign_value_watch_cb *cb, void *userdata)
{
    sql_watch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->base.recipe.ops = &watch_recipe_ops;
    w->w = reign__client_sql(client);
    reign__timer_init(&w->timer, timer_cb, w);
    int rc = reign__value_watch_init(&w->base, &watch_ops, client, key, cb, userdata);
    if (rc < 0) {
        reign__value_watch_clear(&w->base);
        reign__free(w);
        return rc;
    }
    reign__client_attach(client, &w->base.recipe);
    reign_conn_state st = reign_client_state(client);
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED || st == REIGN_CONN_SUSPENDED)
        wread(w);
    *ret = &w->base;
    return 0;
}
