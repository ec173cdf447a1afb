/*
 * value.c - watched values on ZooKeeper (see <reign/value.h> for what users
 * get and value_internal.h for the layout).
 *
 * One-shot requests (get, set, delete) are small chains of backend calls,
 * each attached to the client as a recipe so that closing the client
 * completes them with REIGN_ECLOSED and freeing it frees them.  A write
 * whose outcome a retry could misreport (a compare-and-set applied before
 * the connection dropped would then fail its own version check) is sent
 * once, and a lost answer is reported as REIGN_ECONNLOSS: the caller knows
 * the outcome is unknown instead of being told a wrong one.
 *
 * A watch keeps one ZooKeeper watch registered on the node at a time (the
 * C client would fire every registration) and re-arms it with the read that
 * follows each notification, so no change can fall between the two.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "life.h"
#include "record.h"
#include "value_internal.h"

int reign_value_key_check(const char *key)
{
    if (!key)
        return REIGN_ENAME;
    size_t len = strlen(key);
    if (len == 0 || len > REIGN_KEY_MAX)
        return REIGN_ENAME;
    size_t segments = 0;
    for (const char *p = key;;) {
        size_t n = strcspn(p, "/");
        /* an empty segment: leading, trailing or doubled '/' */
        if (!reign__segment_ok(p, n) || ++segments > REIGN__KEY_SEGMENTS)
            return REIGN_ENAME;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* Creates the nodes above `path` (from the root down), tolerating those
 * that exist.  Requests on one session are applied in order, so a create of
 * `path` sent next finds them; no answer is needed. */
static void make_parents(reign__zk *zk, const char *path)
{
    char buf[sizeof(REIGN__VALUE_DIR) + REIGN_KEY_MAX + 1];
    size_t len = strlen(path);
    if (len >= sizeof(buf))
        return;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        reign__zk_create(zk, buf, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
        *p = '/';
    }
}

/* A node's data as a value: 0 (a record), REIGN_ENOENT (empty: no value),
 * REIGN_EFOREIGN.  On 0, *rec must be cleared by the caller. */
static int parse_value(const reign__zk_result *r, reign__record *rec)
{
    if (r->value_len == 0)
        return REIGN_ENOENT;
    return reign__record_parse(r->value, r->value_len, rec) < 0 ? REIGN_EFOREIGN : 0;
}

static void fill_value(reign_value *v, const char *key, const reign__zk_stat *st,
                       const reign__record *rec)
{
    memset(v, 0, sizeof(*v));
    v->key = key;
    if (rec) {
        v->data = rec->payload;
        v->data_len = rec->payload_len;
    }
    v->version = st->version;
    v->created_ms = st->ctime_ms;
    v->modified_ms = st->mtime_ms;
    v->zxid = (uint64_t)st->mzxid;
}

/* ---- one-shot requests --------------------------------------------------- */

typedef enum req_kind { REQ_GET, REQ_SET, REQ_DELETE } req_kind;

#define REQ_TRIES 5 /* rounds of a write that races with other writers */

typedef struct req {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    req_kind kind;
    char *key;
    char *path;
    reign__buf rec; /* SET: what to write */
    int64_t version;
    int tries;
    reign_value_cb *cb;
    void *userdata;
    bool done;
} req;

static void req_free(req *q)
{
    reign__zk_forget(q->zk, q);
    reign__client_detach(q->client, &q->recipe);
    reign__buf_free(&q->rec);
    reign__free(q->key);
    reign__free(q->path);
    reign__free(q);
}

/* Calls back once (value only with err 0) and frees. */
static void finish(req *q, int err, const reign_value *v)
{
    if (q->done)
        return;
    q->done = true;
    if (q->cb)
        q->cb(q->client, err, err == 0 ? v : NULL, q->userdata);
    req_free(q);
}

/* Finishes with the version a write left (a stat without data). */
static void finish_stat(req *q, const reign__zk_result *r)
{
    reign_value v;
    fill_value(&v, q->key, &r->stat, NULL);
    finish(q, 0, &v);
}

static void issue(req *q, int rc)
{
    if (rc < 0)
        finish(q, rc, NULL);
}

static void on_get(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    reign__record rec;
    int rc = r->rc ? r->rc : parse_value(r, &rec);
    if (rc < 0) {
        finish(q, rc, NULL);
        return;
    }
    reign_value v;
    fill_value(&v, q->key, &r->stat, &rec);
    finish(q, 0, &v);
    reign__record_clear(&rec);
}

static int start_set(req *q);

static void on_written(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    if (r->rc == 0)
        finish_stat(q, r);
    else
        finish(q, r->rc, NULL);
}

/* ABSENT found a node: only an empty one (a parent of other values) may
 * take the value, and only if nothing wrote it meanwhile. */
static void on_absent_check(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    if (r->rc == REIGN_ENOENT && ++q->tries < REQ_TRIES) {
        issue(q, start_set(q)); /* deleted meanwhile: create it */
        return;
    }
    if (r->rc != 0 || r->value_len != 0) {
        finish(q, r->rc ? r->rc : REIGN_EEXIST, NULL);
        return;
    }
    issue(q, reign__zk_set(q->zk, q->path, q->rec.data, q->rec.len, r->stat.version, 0, q,
                           on_written, NULL));
}

static void on_created(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    bool again = ++q->tries < REQ_TRIES;
    if (r->rc == 0) {
        finish_stat(q, r);
    } else if (r->rc == REIGN_ENOENT && again && arg == NULL) {
        /* A parent is missing: make them, then create again. */
        make_parents(q->zk, q->path);
        issue(q, reign__zk_create(q->zk, q->path, q->rec.data, q->rec.len, 0, q, on_created,
                                  (void *)1));
    } else if (r->rc == REIGN_EEXIST && q->version == REIGN_VALUE_ABSENT) {
        issue(q, reign__zk_get(q->zk, q->path, NULL, REIGN__ZK_RETRY, q, on_absent_check, NULL));
    } else if (r->rc == REIGN_EEXIST && again) {
        issue(q, start_set(q)); /* someone created it meanwhile: overwrite (ANY) */
    } else {
        finish(q, r->rc, NULL);
    }
}

static int create_value(req *q)
{
    return reign__zk_create(q->zk, q->path, q->rec.data, q->rec.len, 0, q, on_created, NULL);
}

static void on_set(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    if (r->rc == REIGN_ENOENT && q->version == REIGN_VALUE_ANY)
        issue(q, create_value(q));
    else if (r->rc == 0)
        finish_stat(q, r);
    else
        finish(q, r->rc, NULL);
}

/* Sends the first request of a write; a negative code if it could not. */
static int start_set(req *q)
{
    if (q->version == REIGN_VALUE_ABSENT)
        return create_value(q);
    /* Unconditional writes are idempotent and may be retried; a
     * compare-and-set may not (see the top of the file). */
    int flags = q->version == REIGN_VALUE_ANY ? REIGN__ZK_RETRY : 0;
    return reign__zk_set(q->zk, q->path, q->rec.data, q->rec.len, (int)q->version, flags, q, on_set,
                         NULL);
}

static int start_delete(req *q);

static void on_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    int expected = (int)(intptr_t)arg;
    if (r->rc == 0) {
        reign__zk_stat none = {.version = expected};
        reign_value v;
        fill_value(&v, q->key, &none, NULL);
        finish(q, 0, &v);
    } else if (r->rc == REIGN_ENOTEMPTY) {
        /* Values live below it: empty it instead, which readers take as
         * deleted. */
        issue(q, reign__zk_set(q->zk, q->path, NULL, 0, expected, 0, q, on_written, NULL));
    } else if ((r->rc == REIGN_EBADVERSION || r->rc == REIGN_ENOENT) &&
               q->version == REIGN_VALUE_ANY && ++q->tries < REQ_TRIES) {
        issue(q, start_delete(q)); /* written or emptied meanwhile: look again */
    } else {
        finish(q, r->rc, NULL);
    }
}

/* Delete reads first: an empty node is no value (ENOENT), and the delete
 * itself then carries the version read, so it removes exactly that. */
static void on_delete_read(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    reign__record rec;
    int rc = r->rc ? r->rc : parse_value(r, &rec);
    if (rc == 0)
        reign__record_clear(&rec);
    if (rc == REIGN_EFOREIGN)
        rc = 0; /* foreign data may be deleted: it is no value of ours either way */
    if (rc == 0 && q->version != REIGN_VALUE_ANY && q->version != r->stat.version)
        rc = REIGN_EBADVERSION;
    if (rc < 0) {
        finish(q, rc, NULL);
        return;
    }
    issue(q, reign__zk_delete(q->zk, q->path, r->stat.version, 0, q, on_deleted,
                              (void *)(intptr_t)r->stat.version));
}

static int start_delete(req *q)
{
    /* A version names exactly what we may delete: no read first, so the delete goes out at
     * once, in order with whatever the caller sends next (reignd removes its breadcrumb, then
     * resigns: the next active must not find it). */
    if (q->version >= 0 && q->version <= INT32_MAX)
        return reign__zk_delete(q->zk, q->path, (int)q->version, 0, q, on_deleted,
                                (void *)(intptr_t)q->version);
    return reign__zk_get(q->zk, q->path, NULL, REIGN__ZK_RETRY, q, on_delete_read, NULL);
}

static void req_conn(reign__recipe *rp, reign_conn_state st)
{
    req *q = (req *)rp;
    if (st == REIGN_CONN_CLOSED)
        finish(q, REIGN_ECLOSED, NULL);
}

static void req_destroy(reign__recipe *rp)
{
    req_free((req *)rp);
}

static const reign__recipe_ops req_ops = {.conn = req_conn, .destroy = req_destroy};

static int req_new(req **ret, reign_client *client, req_kind kind, const char *key, int64_t version,
                   reign_value_cb *cb, void *userdata)
{
    if (!client)
        return REIGN_EINVAL;
    int rc = reign_value_key_check(key);
    if (rc < 0)
        return rc;
    if (version < REIGN_VALUE_ABSENT || version > INT32_MAX ||
        (kind == REQ_DELETE && version == REIGN_VALUE_ABSENT))
        return REIGN_EINVAL;
    if (!reign__client_zk(client))
        return REIGN_ENOTSUP; /* values live in ZooKeeper nodes */
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    req *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &req_ops;
    q->client = client;
    q->zk = reign__client_zk(client);
    q->kind = kind;
    q->version = version;
    q->cb = cb;
    q->userdata = userdata;
    reign__buf_init(&q->rec);
    q->key = reign__strdup(key);
    q->path = reign__value_path(key);
    if (!q->key || !q->path) {
        reign__buf_free(&q->rec);
        reign__free(q->key);
        reign__free(q->path);
        reign__free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    *ret = q;
    return 0;
}

/* Starts q, or frees it and returns why it could not be sent. */
static int req_start(req *q)
{
    int rc = q->kind == REQ_SET ? start_set(q)
             : q->kind == REQ_DELETE
                 ? start_delete(q)
                 : reign__zk_get(q->zk, q->path, NULL, REIGN__ZK_RETRY, q, on_get, NULL);
    if (rc < 0) {
        q->done = true;
        req_free(q);
    }
    return rc;
}

int reign_value_get(reign_client *client, const char *key, reign_value_cb *cb, void *userdata)
{
    req *q;
    int rc = req_new(&q, client, REQ_GET, key, REIGN_VALUE_ANY, cb, userdata);
    return rc < 0 ? rc : req_start(q);
}

int reign_value_set(reign_client *client, const char *key, const void *data, size_t len,
                    int64_t version, reign_value_cb *cb, void *userdata)
{
    if (len > REIGN_VALUE_DATA_MAX)
        return REIGN_E2BIG;
    if (len && !data)
        return REIGN_EINVAL;
    req *q;
    int rc = req_new(&q, client, REQ_SET, key, version, cb, userdata);
    if (rc < 0)
        return rc;
    rc = reign__record_build(&q->rec, NULL, 0, data, len);
    if (rc < 0) {
        q->done = true;
        req_free(q);
        return rc;
    }
    return req_start(q);
}

int reign_value_delete(reign_client *client, const char *key, int64_t version, reign_value_cb *cb,
                       void *userdata)
{
    req *q;
    int rc = req_new(&q, client, REQ_DELETE, key, version, cb, userdata);
    return rc < 0 ? rc : req_start(q);
}

/* ---- watching ------------------------------------------------------------ */

struct reign_value_watch {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *key;
    char *path;
    reign_value_watch_cb *cb;
    void *userdata;

    reign__life life; /* the epoch bumped per session: older answers are ignored */
    bool armed;       /* a watch of ours is registered on the node */
    bool reading;     /* a read is in flight */
    bool again;       /* something fired meanwhile: read once more after it */
    bool ready_sent;
    reign__timer retry;

    /* the value as last reported */
    bool present;
    void *data;
    size_t data_len;
    reign__zk_stat stat;
};

/* A request's arg: the epoch that sent it and whether it carries a watch. */
#define WARG(w, watch) REIGN__LIFE_ARG(&(w)->life, 1, (watch) ? 1u : 0u)
#define HAD_WATCH(arg) reign__life_low((arg), 1)
#define STALE(w, arg)  reign__life_stale(&(w)->life, (arg), 1)
#define RETRY_NS       (1000 * REIGN__NS_PER_MS)

const char *reign_value_event_name(reign_value_event_type t)
{
    switch (t) {
    case REIGN_VALUE_READY:
        return "ready";
    case REIGN_VALUE_CREATED:
        return "created";
    case REIGN_VALUE_CHANGED:
        return "changed";
    case REIGN_VALUE_DELETED:
        return "deleted";
    case REIGN_VALUE_ERROR:
        return "error";
    }
    return "unknown";
}

static void wread(reign_value_watch *w);

static void emit(reign_value_watch *w, reign_value_event_type type, int err, const char *msg)
{
    if (!reign__life_live(&w->life) || !w->cb)
        return;
    reign_value v;
    reign_value_event ev = {.type = type, .at_ns = reign__now_ns(), .error = err, .message = msg};
    if (w->present && type != REIGN_VALUE_DELETED && type != REIGN_VALUE_ERROR) {
        reign__record none = {.payload = w->data, .payload_len = w->data_len};
        fill_value(&v, w->key, &w->stat, &none);
        ev.value = &v;
    }
    reign__life_enter(&w->life);
    w->cb(w, &ev, w->userdata);
    (void)reign__life_leave(&w->life);
}

static void leave(reign_value_watch *w)
{
    if (reign__life_leave(&w->life))
        reign_value_watch_free(w);
}

/* Records the new state (rec NULL: absent) and reports how it differs. */
static void apply(reign_value_watch *w, const reign__zk_stat *st, const reign__record *rec)
{
    bool was = w->present;
    bool same_node = was && rec && w->stat.czxid == st->czxid;
    if (was && rec && same_node && w->stat.mzxid == st->mzxid && w->ready_sent)
        return; /* nothing new (a read after a reconnect, say) */
    if (!was && !rec && w->ready_sent)
        return;
    void *copy = NULL;
    if (rec && rec->payload_len && !(copy = reign__memdup(rec->payload, rec->payload_len))) {
        emit(w, REIGN_VALUE_ERROR, REIGN_ENOMEM, "out of memory reading the value");
        return;
    }
    if (was && w->ready_sent && !same_node) {
        /* gone, or replaced by a new node between two reads */
        w->present = false;
        emit(w, REIGN_VALUE_DELETED, 0, NULL);
    }
    reign__free(w->data);
    w->data = copy;
    w->data_len = rec ? rec->payload_len : 0;
    w->present = rec != NULL;
    if (rec)
        w->stat = *st;
    if (!w->ready_sent) {
        w->ready_sent = true;
        emit(w, REIGN_VALUE_READY, 0, NULL);
    } else if (rec) {
        emit(w, same_node ? REIGN_VALUE_CHANGED : REIGN_VALUE_CREATED, 0, NULL);
    }
}

static void read_failed(reign_value_watch *w, int err)
{
    w->reading = false;
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED)
        return; /* a new session (CONNECTED) reads again */
    char msg[256];
    snprintf(msg, sizeof(msg), "reading value '%s': %s; retrying", w->key, reign_strerror(err));
    reign__log(w->log, REIGN_LOG_WARN, "value watch: %s", msg);
    emit(w, REIGN_VALUE_ERROR, err, msg);
    if (reign__life_live(&w->life))
        reign__timer_start(reign__client_timers(w->client), &w->retry, reign__now_ns() + RETRY_NS);
}

static void read_done(reign_value_watch *w)
{
    w->reading = false;
    if (w->again && reign__life_live(&w->life)) {
        w->again = false;
        wread(w);
    }
}

static void on_node_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    reign_value_watch *w = owner;
    reign__life_enter(&w->life);
    w->armed = false;
    wread(w);
    leave(w);
}

static void on_exists(void *owner, void *arg, const reign__zk_result *r)
{
    reign_value_watch *w = owner;
    reign__life_enter(&w->life);
    /* exists() registers its watch on OK and on ENOENT */
    if (HAD_WATCH(arg) && r->rc != 0 && r->rc != REIGN_ENOENT)
        w->armed = false;
    if (STALE(w, arg)) {
        /* an older session's: ignore */
    } else if (r->rc == 0) {
        w->reading = false;
        wread(w); /* created between the two reads: read its data */
    } else if (r->rc == REIGN_ENOENT) {
        apply(w, &r->stat, NULL);
        read_done(w);
    } else {
        read_failed(w, r->rc);
    }
    leave(w);
}

static void on_read(void *owner, void *arg, const reign__zk_result *r)
{
    reign_value_watch *w = owner;
    reign__life_enter(&w->life);
    if (HAD_WATCH(arg) && r->rc != 0)
        w->armed = false; /* get() registers only on success */
    if (STALE(w, arg))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        /* No node: watch for its creation (exists() watches a missing node). */
        bool watch = !w->armed;
        w->armed = true;
        int rc = reign__zk_exists(w->zk, w->path, watch ? on_node_event : NULL, REIGN__ZK_RETRY, w,
                                  on_exists, WARG(w, watch));
        if (rc < 0) {
            w->armed = w->armed && !watch;
            read_failed(w, rc);
        }
        goto out;
    }
    if (r->rc != 0) {
        read_failed(w, r->rc);
        goto out;
    }
    reign__record rec;
    int rc = parse_value(r, &rec);
    if (rc == 0) {
        apply(w, &r->stat, &rec);
        reign__record_clear(&rec);
    } else {
        apply(w, &r->stat, NULL);
        if (rc == REIGN_EFOREIGN) {
            char msg[256];
            snprintf(msg, sizeof(msg), "value '%s' holds data reign did not write; ignored",
                     w->key);
            emit(w, REIGN_VALUE_ERROR, rc, msg);
        }
    }
    read_done(w);
out:
    leave(w);
}

/* Reads the node, arming the watch with the read itself if none is armed. */
static void wread(reign_value_watch *w)
{
    if (w->reading) {
        w->again = true;
        return;
    }
    w->reading = true;
    bool watch = !w->armed;
    w->armed = true;
    int rc = reign__zk_get(w->zk, w->path, watch ? on_node_event : NULL, REIGN__ZK_RETRY, w,
                           on_read, WARG(w, watch));
    if (rc < 0) {
        w->armed = w->armed && !watch;
        read_failed(w, rc);
    }
}

static void retry_cb(reign__timer *t, void *arg)
{
    reign_value_watch *w = arg;
    reign__life_enter(&w->life);
    wread(w);
    leave(w);
}

static void watch_conn(reign__recipe *rp, reign_conn_state st)
{
    reign_value_watch *w = (reign_value_watch *)rp;
    reign__life_enter(&w->life);
    if (st == REIGN_CONN_CONNECTED) {
        /* A new session: no watch of the old one survives. */
        reign__life_bump(&w->life);
        w->armed = false;
        w->reading = false;
        w->again = false;
        wread(w);
    } else if (st == REIGN_CONN_RECONNECTED) {
        wread(w); /* the same session: look again in case a read failed meanwhile */
    }
    leave(w);
}

static void watch_destroy(reign__recipe *rp)
{
    reign_value_watch *w = (reign_value_watch *)rp;
    reign__timer_stop(reign__client_timers(w->client), &w->retry);
    reign__zk_forget(w->zk, w);
    reign__client_detach(w->client, &w->recipe);
    reign__free(w->data);
    reign__free(w->key);
    reign__free(w->path);
    reign__free(w);
}

static const reign__recipe_ops watch_ops = {.conn = watch_conn, .destroy = watch_destroy};

int reign_value_watch_start(reign_value_watch **ret, reign_client *client, const char *key,
                            reign_value_watch_cb *cb, void *userdata)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    int rc = reign_value_key_check(key);
    if (rc < 0)
        return rc;
    if (!reign__client_zk(client))
        return REIGN_ENOTSUP;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    reign_value_watch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->recipe.ops = &watch_ops;
    w->client = client;
    w->zk = reign__client_zk(client);
    w->log = reign__client_log(client);
    w->cb = cb;
    w->userdata = userdata;
    reign__timer_init(&w->retry, retry_cb, w);
    w->key = reign__strdup(key);
    w->path = reign__value_path(key);
    if (!w->key || !w->path) {
        reign__free(w->key);
        reign__free(w->path);
        reign__free(w);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &w->recipe);
    if (reign__zk_connected(w->zk))
        wread(w);
    *ret = w;
    return 0;
}

int reign_value_watch_get(const reign_value_watch *w, reign_value *out)
{
    if (!w || !out)
        return REIGN_EINVAL;
    if (!w->present)
        return REIGN_ENOENT;
    reign__record none = {.payload = w->data, .payload_len = w->data_len};
    fill_value(out, w->key, &w->stat, &none);
    return 0;
}

const char *reign_value_watch_key(const reign_value_watch *w)
{
    return w->key;
}

void *reign_value_watch_userdata(const reign_value_watch *w)
{
    return w->userdata;
}

reign_value_watch *reign_value_watch_free(reign_value_watch *w)
{
    if (!w)
        return NULL;
    (void)reign__life_request_free(&w->life);
    reign__zk_forget(w->zk, w);
    if (reign__life_busy(&w->life))
        return NULL; /* inside one of our callbacks: freed when it returns */
    watch_destroy(&w->recipe);
    return NULL;
}
