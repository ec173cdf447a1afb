/*
 * etcd_watch.c - ZooKeeper's one-shot watches, served by one watch stream per client over the
 * whole key prefix (etcd_internal.h).
 *
 * Why one stream: the gateway reads a stream's whole request before it answers, so a watch
 * cannot be added to an open stream, and a watch of its own per waiter would be a connection
 * per waiter (10,000 elections, 10,000 connections).  One stream over the prefix costs one
 * connection, and every change reaches every client once, as bytes; the client hands it only
 * to the watches it concerns, so one change still wakes one waiter.
 *
 * A watch belongs to a read answered at revision R: it fires on the first event of its node
 * (or, for a children watch, of a child coming or going) after R.  The stream starts after the
 * revision of a read made before any other, resumes after the last event it delivered when it
 * breaks, and may deliver an event before the answer of a read that saw it or not: events that
 * arrive while a watched read is in flight are logged, and a watch registered at R looks at the
 * log for what it missed.  When etcd compacted away what the stream must resume from, every
 * watch fires (the recipes read again), and so does every watch of a read older than the new
 * start.
 */
#include <stdio.h>
#include <string.h>

#include "etcd_internal.h"
#include "layout.h"

typedef struct elog {
    char *path;
    int64_t rev;
    int type; /* REIGN__ZK_CREATED, _DELETED, _CHANGED */
} elog;

static size_t bucket_of(const reign__etcd *e, const char *path)
{
    return (size_t)reign__hash_str(path) & (e->wb_n - 1);
}

static int grow(reign__etcd *e)
{
    size_t n = e->wb_n ? e->wb_n * 2 : 64;
    ewatch **nb = reign__calloc(n, sizeof(*nb));
    if (!nb)
        return REIGN_ENOMEM;
    for (size_t i = 0; i < e->wb_n; i++)
        for (ewatch *w = e->wb[i], *next; w; w = next) {
            next = w->hnext;
            size_t b = (size_t)reign__hash_str(w->path) & (n - 1);
            w->hnext = nb[b];
            nb[b] = w;
        }
    reign__free(e->wb);
    e->wb = nb;
    e->wb_n = n;
    return 0;
}

/* Takes w out of the list of all (its bucket's chain is the caller's). */
static void unlist_watch(reign__etcd *e, ewatch *w)
{
    if (w->oprev)
        w->oprev->onext = w->onext;
    else
        e->wall = w->onext;
    if (w->onext)
        w->onext->oprev = w->oprev;
    e->n_watches--;
}

static void unlink_watch(reign__etcd *e, ewatch *w)
{
    ewatch **pp = &e->wb[bucket_of(e, w->path)];
    while (*pp && *pp != w)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = w->hnext;
    unlist_watch(e, w);
}

static void free_watch(ewatch *w)
{
    reign__free(w->path);
    reign__free(w);
}

/* Does an event of type fire watch w (child: the event is of one of w's node's children)?  A
 * children watch hears of children coming and going, and of its node's deletion; the others of
 * any change of their node. */
static bool fires(const ewatch *w, int type, bool child)
{
    if (child)
        return w->kind == EW_CHILD;
    return w->kind != EW_CHILD || type == REIGN__ZK_DELETED;
}

/* Fires the watches of `path` (and, with child, the children watches of its parent) that an
 * event at rev concerns: unlinked first, then called, so that a callback may watch again. */
static void fire(reign__etcd *e, const char *path, int type, int64_t rev, bool child)
{
    if (!e->wb_n)
        return;
    ewatch *hit = NULL;
    for (ewatch **pp = &e->wb[bucket_of(e, path)]; *pp;) {
        ewatch *w = *pp;
        if (!strcmp(w->path, path) && w->rev < rev && w->gen == e->gen && fires(w, type, child)) {
            *pp = w->hnext;
            w->hnext = hit;
            hit = w;
            unlist_watch(e, w);
            continue;
        }
        pp = &w->hnext;
    }
    while (hit) {
        ewatch *w = hit;
        hit = w->hnext;
        reign__zk_event ev = child ? REIGN__ZK_CHILD : (reign__zk_event)type;
        reign_trace("etcd.fire", "%d %s", (int)ev, w->path);
        if (w->cb)
            w->cb(w->owner, w->arg, ev, w->path);
        free_watch(w);
    }
}

/* One event: the node's own watches, then its parent's children watches. */
static void event(reign__etcd *e, const char *path, int type, int64_t rev)
{
    fire(e, path, type, rev, false);
    if (type == REIGN__ZK_CHANGED)
        return;
    const char *slash = strrchr(path, '/');
    if (!slash)
        return;
    char parent[1024];
    size_t pl = slash == path ? 1 : (size_t)(slash - path);
    if (pl >= sizeof(parent))
        return;
    memcpy(parent, path, pl);
    parent[pl] = '\0';
    fire(e, parent, type, rev, true);
}

static void log_event(reign__etcd *e, const char *path, int type, int64_t rev)
{
    if (!e->reads_watching)
        return;
    if (e->log_n == e->log_cap) {
        size_t cap = e->log_cap ? e->log_cap * 2 : 64;
        elog *v = reign__realloc(e->log_v, cap * sizeof(*v));
        if (!v)
            return; /* a watch then misses nothing worse than a late read: see read_end */
        e->log_v = v;
        e->log_cap = cap;
    }
    elog *l = &e->log_v[e->log_n];
    if (!(l->path = reign__strdup(path)))
        return;
    l->rev = rev;
    l->type = type;
    e->log_n++;
}

static void log_clear(reign__etcd *e)
{
    for (size_t i = 0; i < e->log_n; i++)
        reign__free(e->log_v[i].path);
    e->log_base += e->log_n;
    e->log_n = 0;
}

uint64_t reign__ew_read_begin(reign__etcd *e)
{
    e->reads_watching++;
    return e->log_base + e->log_n;
}

void reign__ew_read_end(reign__etcd *e)
{
    if (e->reads_watching > 0 && --e->reads_watching == 0)
        log_clear(e);
}

int reign__ew_add(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev,
                  uint64_t log_from, void *owner, reign__zk_watch_cb *cb, void *arg)
{
    if (e->n_watches >= e->wb_n * 2 && grow(e) < 0)
        return REIGN_ENOMEM;
    ewatch *w = reign__calloc(1, sizeof(*w));
    if (!w || !(w->path = reign__strdup(path))) {
        reign__free(w);
        return REIGN_ENOMEM;
    }
    w->kind = kind;
    w->rev = rev;
    w->owner = owner;
    w->cb = cb;
    w->arg = arg;
    w->gen = e->gen;
    size_t b = bucket_of(e, path);
    w->hnext = e->wb[b];
    e->wb[b] = w;
    w->onext = e->wall;
    if (e->wall)
        e->wall->oprev = w;
    e->wall = w;
    e->n_watches++;
    (void)log_from;
    return 0;
}

/* Is `path` the parent of `child`? */
static bool parent_is(const char *child, const char *path)
{
    const char *slash = strrchr(child, '/');
    size_t pl = strlen(path);
    return slash && (size_t)(slash - child) == (pl == 1 ? 0 : pl) && !strncmp(child, path, pl);
}

void reign__ew_replay(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev,
                      uint64_t log_from)
{
    /* What arrived while the read was out, newer than what it saw, of its node (or of a child,
     * for a children watch): the events a later stream would have brought. */
    size_t from = log_from > e->log_base ? (size_t)(log_from - e->log_base) : 0;
    for (size_t i = from; i < e->log_n; i++) {
        const elog *l = &e->log_v[i];
        if (l->rev > rev &&
            (!strcmp(l->path, path) || (kind == EW_CHILD && parent_is(l->path, path))))
            event(e, l->path, l->type, l->rev);
    }
    if (rev < e->floor - 1) /* the stream restarted past it: it may have missed one */
        fire(e, path, REIGN__ZK_CHANGED, INT64_MAX, false);
}

void reign__ew_forget(reign__etcd *e, void *owner)
{
    for (ewatch *w = e->wall; w; w = w->onext)
        if (w->owner == owner)
            w->cb = NULL;
}

void reign__ew_drop_all(reign__etcd *e)
{
    while (e->wall) {
        ewatch *w = e->wall;
        unlink_watch(e, w);
        free_watch(w);
    }
}

void reign__ew_free(reign__etcd *e)
{
    reign__ew_stop(e);
    reign__ew_drop_all(e);
    log_clear(e);
    reign__free(e->log_v);
    reign__free(e->wb);
    e->wb = NULL;
    e->wb_n = 0;
}

/* ---- the stream ---------------------------------------------------------------------------- */

static void stream_send(reign__etcd *e);
static void stream_done(ereq *q, void *arg);

/* Every watch fires: what the stream may have missed, the recipes read again. */
static void fire_all(reign__etcd *e)
{
    uint64_t gen = e->gen;
    for (;;) {
        ewatch *w = e->wall;
        while (w && w->gen != gen)
            w = w->onext;
        if (!w)
            break;
        unlink_watch(e, w);
        reign__zk_event ev = w->kind == EW_CHILD ? REIGN__ZK_CHILD : REIGN__ZK_CHANGED;
        if (w->cb)
            w->cb(w->owner, w->arg, ev, w->path);
        free_watch(w);
    }
}

static void stream_later(reign__etcd *e)
{
    if (e->closed)
        return;
    int ms = e->stream_backoff_ms;
    e->stream_backoff_ms = ms ? (ms * 2 > 1000 ? 1000 : ms * 2) : 20;
    reign__timer_start(e->cfg.timers, &e->stream_timer,
                       reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

/* A start after compaction: the current revision first. */
static void on_revision(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    reign__eh_drop(q);
    if (e->stream != q) {
        cJSON_Delete(root);
        return;
    }
    e->stream = NULL;
    if (!root) {
        reign__log(e->log, REIGN_LOG_DEBUG, "etcd: revision for the watch stream: %s", msg);
        if (reign__eh_transient(rc))
            reign__eh_next_member(e, q->member);
        stream_later(e);
        return;
    }
    int64_t rev = reign__ej_i64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision");
    cJSON_Delete(root);
    if (rev < 0 || rev == INT64_MAX) { /* not a revision: read again later */
        stream_later(e);
        return;
    }
    e->stream_from = rev + 1;
    if (e->stream_compacted) {
        e->stream_compacted = false;
        e->floor = rev + 1;
        fire_all(e);
    }
    stream_send(e);
}

/* Sends the stream's request (the revision it starts after, or the watch itself). */
static void stream_go(reign__etcd *e, ereq *q, const char *path, int timeout_ms)
{
    e->stream = q;
    if (reign__eh_send(e, q, path, timeout_ms) < 0) {
        e->stream = NULL;
        reign__eh_drop(q);
        stream_later(e);
    }
}

/* The keys the stream covers: every key of reign's under the prefix, PREFIX/reign and below
 * (all the recipes' nodes are there), so that a role granted that prefix alone may watch. */
static size_t watched_key(const reign__etcd *e, char *out, size_t n)
{
    int l = snprintf(out, n, "%s%s", e->prefix, REIGN__ZK_ROOT);
    return l > 0 && (size_t)l < n ? (size_t)l : 0;
}

static void ask_revision(reign__etcd *e)
{
    ereq *q = reign__eh_new(e, on_revision, e);
    char key[1100];
    size_t kl = watched_key(e, key, sizeof(key));
    if (!q || !kl) {
        reign__eh_drop(q);
        stream_later(e);
        return;
    }
    reign__buf_puts(&q->body, "{\"key\":");
    reign__ej_b64(&q->body, key, kl);
    reign__buf_puts(&q->body, ",\"count_only\":true}");
    stream_go(e, q, "/v3/kv/range", e->cfg.op_timeout_ms);
}

static void stream_send(reign__etcd *e)
{
    ereq *q = reign__eh_new(e, stream_done, e);
    char key[1100];
    size_t kl = watched_key(e, key, sizeof(key));
    if (!q || !kl) {
        reign__eh_drop(q);
        stream_later(e);
        return;
    }
    q->stream = true;
    reign__buf_puts(&q->body, "{\"create_request\":{\"key\":");
    reign__ej_b64(&q->body, key, kl);
    reign__ej_prefix_end(key, kl);
    reign__buf_puts(&q->body, ",\"range_end\":");
    reign__ej_b64(&q->body, key, kl);
    reign__buf_printf(&q->body, ",\"start_revision\":\"%lld\"}}", (long long)e->stream_from);
    stream_go(e, q, "/v3/watch", 0);
}

static void stream_timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    reign__etcd *e = arg;
    if (e->closed || e->stream)
        return;
    if (e->stream_from <= 0 || e->stream_compacted)
        ask_revision(e);
    else
        stream_send(e);
}

void reign__ew_init(reign__etcd *e)
{
    reign__timer_init(&e->stream_timer, stream_timer_cb, e);
}

void reign__ew_start(reign__etcd *e)
{
    if (!e->stream && !reign__timer_armed(&e->stream_timer))
        stream_timer_cb(&e->stream_timer, e);
}

void reign__ew_leave_member(reign__etcd *e, size_t m)
{
    if (!e->stream || e->stream->member != m || e->closed || e->n_members < 2)
        return;
    reign__log(e->log, REIGN_LOG_INFO, "etcd: watch stream leaves %s", e->members[m]);
    reign__eh_drop(e->stream);
    e->stream = NULL;
    e->stream_live = false;
    reign__eh_next_member(e, m);
    stream_timer_cb(&e->stream_timer, e); /* again at once, after what it delivered */
}

void reign__ew_stop(reign__etcd *e)
{
    e->stream_live = false;
    reign__timer_stop(e->cfg.timers, &e->stream_timer);
    if (e->stream)
        reign__eh_drop(e->stream);
    e->stream = NULL;
}

/* One event of a watch message. */
static void stream_event(reign__etcd *e, const cJSON *ev)
{
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(ev, "kv");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    bool del = cJSON_IsString(type) && !strcmp(type->valuestring, "DELETE");
    size_t klen;
    char *key = reign__ej_bytes(kv, "key", &klen);
    int64_t rev = reign__ej_i64(kv, "mod_revision");
    if (rev >= e->stream_from && rev < INT64_MAX)
        e->stream_from = rev + 1;
    reign__eh_saw(e, rev);
    if (!key)
        return;
    const char *path = key + e->prefix_len;
    const char *name = strrchr(key, '/');
    if (klen > e->prefix_len && !memcmp(key, e->prefix, e->prefix_len) && *path == '/' && name &&
        strcmp(name, "/.") != 0 && !strstr(path, "/./") && strlen(key) == klen) {
        int t = del                                 ? REIGN__ZK_DELETED
                : reign__ej_i64(kv, "version") == 1 ? REIGN__ZK_CREATED
                                                    : REIGN__ZK_CHANGED;
        reign_trace("etcd.event", "%d %s %lld", t, path, (long long)rev);
        log_event(e, path, t, rev);
        event(e, path, t, rev);
    }
    reign__free(key);
}

/* One line of the stream. */
bool reign__ew_line(reign__etcd *e, const char *line, size_t n)
{
    cJSON *root = cJSON_ParseWithLength(line, n);
    if (!root)
        return true;
    int code = 0;
    const char *err = reign__ej_error(root, &code);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
    bool keep = true;
    if (err) {
        /* "no leader" (the member lost its cluster), an expired token: another member. */
        reign__log(e->log, REIGN_LOG_INFO, "etcd: watch stream ended: %s", err);
        if (strstr(err, "auth token") && e->reauth)
            e->reauth(e);
        else if (e->stream)
            reign__eh_next_member(e, e->stream->member);
        keep = false;
    } else if (res) {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "canceled"))) {
            int64_t compact = reign__ej_i64(res, "compact_revision");
            reign__log(e->log, REIGN_LOG_NOTICE, "etcd: watch stream canceled%s",
                       compact ? " (revisions compacted): every watch looks again" : "");
            if (compact)
                e->stream_compacted = true;
            keep = false;
        } else {
            e->stream_backoff_ms = 0;
            e->stream_live = true;
            const cJSON *evs = cJSON_GetObjectItemCaseSensitive(res, "events"), *ev;
            cJSON_ArrayForEach(ev, evs)
            {
                if (e->stream == NULL)
                    break;
                stream_event(e, ev);
            }
        }
    }
    cJSON_Delete(root);
    return keep;
}

static void stream_done(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    if (e->stream != q) {
        reign__eh_drop(q);
        return;
    }
    bool keep = true;
    for (;;) {
        const char *start = q->resp.data ? q->resp.data + q->line_at : NULL;
        const char *nl = start ? memchr(start, '\n', q->resp.len - q->line_at) : NULL;
        if (!nl)
            break;
        size_t n = (size_t)(nl - start);
        q->line_at += n + 1;
        if (!reign__ew_line(e, start, n) || e->stream != q) {
            keep = false;
            break;
        }
    }
    if (e->n_held)
        e->caught_up(e, e->stream != q || !keep);
    if (e->stream != q)
        return;               /* closed or restarted by a callback */
    if (q->line_at > 65536) { /* drop what was read */
        memmove(q->resp.data, q->resp.data + q->line_at, q->resp.len - q->line_at);
        q->resp.len -= q->line_at;
        q->line_at = 0;
    }
    if (keep && q->h)
        return; /* more to come */
    /* No longer the stream before anyone hears of the trouble: trouble() moves a stream off a
     * failing member, and must not drop this one under our feet. */
    e->stream = NULL;
    e->stream_live = false;
    if (q->h == NULL && q->cc != CURLE_OK) {
        reign__log(e->log, REIGN_LOG_INFO, "etcd: watch stream: %s",
                   q->curl_err[0] ? q->curl_err : reign__cu.curl_easy_strerror(q->cc));
        reign__eh_next_member(e, q->member);
        e->trouble(e, q->member, "watch stream broken");
    }
    reign__eh_drop(q);
    if (!e->stream)
        stream_later(e);
}
