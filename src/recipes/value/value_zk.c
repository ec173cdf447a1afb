/*
 * value_zk.c - watched values on ZooKeeper (see <reign/value.h> for what users
 * get and value_internal.h for the layout; value.c checked every argument).
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

#include "record.h"
#include "value_impl.h"

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

static reign__value_stat stat_of(const reign__zk_stat *st)
{
    return (reign__value_stat){.version = st->version,
                               .czxid = st->czxid,
                               .mzxid = st->mzxid,
                               .ctime_ms = st->ctime_ms,
                               .mtime_ms = st->mtime_ms};
}

static void fill_value(reign_value *v, const char *key, const reign__zk_stat *st,
                       const reign__record *rec)
{
    reign__value_stat vs = stat_of(st);
    reign__value_fill(v, key, &vs, rec ? rec->payload : NULL, rec ? rec->payload_len : 0);
}

/* ---- one-shot requests --------------------------------------------------- */

#define REQ_TRIES 5 /* rounds of a write that races with other writers */

typedef struct req {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    reign__value_op kind;
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
    } else if (r->rc == REIGN_ENOENT && again) {
        /* A parent is missing (never made, or pruned by a delete meanwhile): make them, then
         * create again. */
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

/* Finishes a delete that succeeded, at the version it deleted. */
static void finish_deleted(req *q)
{
    reign__zk_stat none = {.version = (int32_t)q->version};
    reign_value v;
    fill_value(&v, q->key, &none, NULL);
    finish(q, 0, &v);
}

/*
 * After a delete, the parents it leaves holding nothing go too, from the deepest up: they were
 * made only for values below them (make_parents), and would stay forever otherwise.  Each is
 * deleted at the version read while it held no data and no child, so a value written into it
 * or below it meanwhile keeps it (the delete fails, and pruning stops there).  A writer whose
 * parent goes between its make_parents and its create makes it again (on_created).
 */
static int prune_next(req *q);

static void on_pruned(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    (void)arg;
    if (r->rc < 0 || prune_next(q) < 0)
        finish_deleted(q);
}

static void on_prune_read(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    (void)arg;
    if (r->rc < 0 || r->value_len || r->stat.num_children ||
        reign__zk_delete(q->zk, q->path, r->stat.version, 0, q, on_pruned, NULL) < 0)
        finish_deleted(q);
}

/* Reads the parent of q->path (q->path becomes it); a negative code when there is none left
 * to prune (the values' directory itself stays). */
static int prune_next(req *q)
{
    char *slash = strrchr(q->path, '/');
    if (!slash || (size_t)(slash - q->path) <= strlen(REIGN__VALUE_DIR))
        return REIGN_ENOENT;
    *slash = '\0';
    return reign__zk_get(q->zk, q->path, NULL, REIGN__ZK_RETRY, q, on_prune_read, NULL);
}

static void on_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    req *q = owner;
    int expected = (int)(intptr_t)arg;
    if (r->rc == 0) {
        q->version = expected; /* what finish_deleted reports */
        if (prune_next(q) < 0)
            finish_deleted(q);
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

/* Starts q, or frees it and returns why it could not be sent. */
static int req_start(req *q)
{
    int rc = q->kind == REIGN__VALUE_SET ? start_set(q)
             : q->kind == REIGN__VALUE_DELETE
                 ? start_delete(q)
                 : reign__zk_get(q->zk, q->path, NULL, REIGN__ZK_RETRY, q, on_get, NULL);
    if (rc < 0) {
        q->done = true;
        req_free(q);
    }
    return rc;
}

int reign__value_zk_request(reign_client *client, const reign__value_req *r)
{
    req *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &req_ops;
    q->client = client;
    q->zk = reign__client_zk(client);
    q->kind = r->op;
    q->version = r->version;
    q->cb = r->cb;
    q->userdata = r->userdata;
    reign__buf_init(&q->rec);
    q->key = reign__strdup(r->key);
    q->path = reign__value_path(r->key);
    int rc = q->key && q->path ? 0 : REIGN_ENOMEM;
    if (rc == 0 && r->op == REIGN__VALUE_SET)
        rc = reign__record_build(&q->rec, NULL, 0, r->data, r->len);
    if (rc < 0) {
        reign__buf_free(&q->rec);
        reign__free(q->key);
        reign__free(q->path);
        reign__free(q);
        return rc;
    }
    reign__client_attach(client, &q->recipe);
    return req_start(q);
}

/* ---- watching ------------------------------------------------------------ */

typedef struct zk_watch {
    reign_value_watch base; /* first: value.c and the client call us through it */
    reign__zk *zk;
    char *path;

    bool armed;   /* a watch of ours is registered on the node */
    bool reading; /* a read is in flight */
    bool again;   /* something fired meanwhile: read once more after it */
    reign__timer retry;
} zk_watch;

/* A request's arg: the epoch that sent it and whether it carries a watch. */
#define WARG(w, watch) REIGN__LIFE_ARG(&(w)->base.life, 1, (watch) ? 1u : 0u)
#define HAD_WATCH(arg) reign__life_low((arg), 1)
#define STALE(w, arg)  reign__life_stale(&(w)->base.life, (arg), 1)
#define RETRY_NS       (1000 * REIGN__NS_PER_MS)

static void wread(zk_watch *w);

/* Records the new state (rec NULL: absent) and reports how it differs. */
static void apply(zk_watch *w, const reign__zk_stat *st, const reign__record *rec)
{
    reign__value_stat vs = stat_of(st);
    reign__value_watch_apply(&w->base, rec != NULL, &vs, rec ? rec->payload : NULL,
                             rec ? rec->payload_len : 0);
}

static void read_failed(zk_watch *w, int err)
{
    w->reading = false;
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED)
        return; /* a new session (CONNECTED) reads again */
    char msg[256];
    snprintf(msg, sizeof(msg), "reading value '%s': %s; retrying", w->base.key,
             reign_strerror(err));
    reign__log(w->base.log, REIGN_LOG_WARN, "value watch: %s", msg);
    reign__value_watch_error(&w->base, err, msg);
    if (reign__life_live(&w->base.life))
        reign__timer_start(reign__client_timers(w->base.client), &w->retry,
                           reign__now_ns() + RETRY_NS);
}

static void read_done(zk_watch *w)
{
    w->reading = false;
    if (w->again && reign__life_live(&w->base.life)) {
        w->again = false;
        wread(w);
    }
}

static void on_node_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_watch *w = owner;
    reign__life_enter(&w->base.life);
    w->armed = false;
    wread(w);
    reign__value_watch_leave(&w->base);
}

static void on_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_watch *w = owner;
    reign__life_enter(&w->base.life);
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
    reign__value_watch_leave(&w->base);
}

static void on_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_watch *w = owner;
    reign__life_enter(&w->base.life);
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
                     w->base.key);
            reign__value_watch_error(&w->base, rc, msg);
        }
    }
    read_done(w);
out:
    reign__value_watch_leave(&w->base);
}

/* Reads the node, arming the watch with the read itself if none is armed. */
static void wread(zk_watch *w)
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
    zk_watch *w = arg;
    reign__life_enter(&w->base.life);
    wread(w);
    reign__value_watch_leave(&w->base);
}

static void watch_conn(reign__recipe *rp, reign_conn_state st)
{
    zk_watch *w = (zk_watch *)rp;
    reign__life_enter(&w->base.life);
    if (st == REIGN_CONN_CONNECTED) {
        /* A new session: no watch of the old one survives. */
        reign__life_bump(&w->base.life);
        w->armed = false;
        w->reading = false;
        w->again = false;
        wread(w);
    } else if (st == REIGN_CONN_RECONNECTED) {
        wread(w); /* the same session: look again in case a read failed meanwhile */
    }
    reign__value_watch_leave(&w->base);
}

static void watch_stop(reign_value_watch *base)
{
    zk_watch *w = (zk_watch *)base;
    reign__timer_stop(reign__client_timers(w->base.client), &w->retry);
    reign__zk_forget(w->zk, w);
}

static void watch_destroy(reign_value_watch *base)
{
    zk_watch *w = (zk_watch *)base;
    watch_stop(base);
    reign__client_detach(w->base.client, &w->base.recipe);
    reign__value_watch_clear(&w->base);
    reign__free(w->path);
    reign__free(w);
}

static void watch_recipe_destroy(reign__recipe *rp)
{
    watch_destroy((reign_value_watch *)rp);
}

static const reign__recipe_ops watch_recipe_ops = {.conn = watch_conn,
                                                   .destroy = watch_recipe_destroy};
static const reign__value_watch_ops watch_ops = {.stop = watch_stop, .destroy = watch_destroy};

int reign__value_zk_watch(reign_value_watch **ret, reign_client *client, const char *key,
                          reign_value_watch_cb *cb, void *userdata)
{
    zk_watch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->base.recipe.ops = &watch_recipe_ops;
    w->zk = reign__client_zk(client);
    reign__timer_init(&w->retry, retry_cb, w);
    int rc = reign__value_watch_init(&w->base, &watch_ops, client, key, cb, userdata);
    if (rc == 0 && !(w->path = reign__value_path(key)))
        rc = REIGN_ENOMEM;
    if (rc < 0) {
        reign__value_watch_clear(&w->base);
        reign__free(w);
        return rc;
    }
    reign__client_attach(client, &w->base.recipe);
    if (reign__zk_connected(w->zk))
        wread(w);
    *ret = &w->base;
    return 0;
}
