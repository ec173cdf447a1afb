/*
 * etcd_watch.c - ZooKeeper's one-shot watches on etcd (etcd_internal.h): each watch is a
 * watcher of its own node's key (or, for a children watch, of its node's key range), on a
 * watch stream it shares with the watches registered in the same turn of the loop.
 *
 * Why a watcher per watch: a change then reaches only the clients that wait for it.  One
 * stream per client over the whole key prefix (how this began) carried every change of every
 * election to every client, and on a host of fifty candidates each handoff woke fifty
 * processes and cost fifty streams' encoding in etcd: a handoff took four times as long with
 * fifty candidates as with three.  etcd's own election waits the same way: each waiter
 * watches only the key ahead of it.
 *
 * The gateway reads a stream's whole request before it answers, so a stream's watchers are
 * those its request created; a watch added later goes on a stream of its own (with the other
 * watches of its turn of the loop).  A stream closes once each of its watches has fired or
 * been forgotten, and a client with STREAMS_MAX streams open folds its smallest one into the
 * next it opens (once that one carries a quarter as many watches, or has waited 50 ms).
 *
 * A watch belongs to a read answered at revision R: its watcher starts at R + 1, so etcd sends
 * every change after what the read saw, and the watch fires on the first one of its node (or
 * of a child coming or going).  A stream that breaks starts again on the next member, each
 * watcher after the last change it was sent.  A watcher whose start etcd compacted away is
 * canceled: its watch fires, and the recipe reads again.
 */
#include <stdio.h>
#include <string.h>

#include "etcd_internal.h"
#include "layout.h"

#define STREAMS_MAX  32 /* per client; etcd_http.c keeps connections for them and the calls */
#define FOLD_RATIO   4  /* a stream folds into one that starts at least a quarter its size... */
#define FOLD_WAIT_NS (50 * REIGN__NS_PER_MS) /* ...or once the new ones waited this long */

struct estream {
    estream *prev, *next;
    reign__etcd *e;
    ereq *q;    /* its request; NULL while it waits to start again */
    ewatch **w; /* by slot (its watchers' ids: 2 slot + 1 and 2); NULL once fired or forgotten */
    size_t n, live;
    int backoff_ms;
    bool dead; /* freed once its lines are handled (etcd_watch.c's stream_done) */
    reign__timer retry;
};

static void stream_send(estream *s);

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

/* ---- streams: life -------------------------------------------------------------------------- */

static void stream_free(estream *s)
{
    reign__etcd *e = s->e;
    for (size_t i = 0; i < s->n; i++)
        if (s->w[i])
            s->w[i]->s = NULL;
    *(s->prev ? &s->prev->next : &e->streams) = s->next;
    if (s->next)
        s->next->prev = s->prev;
    e->n_streams--;
    reign__timer_stop(e->cfg.timers, &s->retry);
    reign__eh_drop(s->q);
    reign__free(s->w);
    reign__free(s);
}

/* A stream no watch needs: gone now, or (while its lines are handled) once they are. */
static void stream_release(estream *s)
{
    if (s->e->ew_busy == s)
        s->dead = true;
    else
        stream_free(s);
}

static void retry_cb(reign__timer *t, void *arg)
{
    (void)t;
    stream_send(arg);
}

static estream *stream_new(reign__etcd *e, size_t n)
{
    estream *s = reign__calloc(1, sizeof(*s));
    if (!s || !(s->w = reign__calloc(n ? n : 1, sizeof(*s->w)))) {
        reign__free(s);
        return NULL;
    }
    s->e = e;
    reign__timer_init(&s->retry, retry_cb, s);
    s->next = e->streams;
    if (e->streams)
        e->streams->prev = s;
    e->streams = s;
    e->n_streams++;
    return s;
}

/* ---- watches -------------------------------------------------------------------------------- */

/* Out of its stream (or of the line of those waiting for one). */
static void detach(reign__etcd *e, ewatch *w)
{
    if (w->pending) {
        *(w->pprev ? &w->pprev->pnext : &e->pending) = w->pnext;
        *(w->pnext ? &w->pnext->pprev : &e->pending_tail) = w->pprev;
        w->pending = false;
        w->pprev = w->pnext = NULL;
    }
    estream *s = w->s;
    if (s) {
        s->w[w->slot] = NULL;
        w->s = NULL;
        if (--s->live == 0)
            stream_release(s);
    }
}

static void unlink_watch(reign__etcd *e, ewatch *w)
{
    ewatch **pp = &e->wb[bucket_of(e, w->path)];
    while (*pp && *pp != w)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = w->hnext;
    *(w->oprev ? &w->oprev->onext : &e->wall) = w->onext;
    if (w->onext)
        w->onext->oprev = w->oprev;
    e->n_watches--;
    detach(e, w);
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
        return w->kind == EW_CHILD && type != REIGN__ZK_CHANGED;
    return w->kind != EW_CHILD || type == REIGN__ZK_DELETED;
}

/* Is `path` the parent of `child`? */
static bool parent_is(const char *child, const char *path)
{
    const char *slash = strrchr(child, '/');
    size_t pl = strlen(path);
    return slash && (size_t)(slash - child) == (pl == 1 ? 0 : pl) && !strncmp(child, path, pl);
}

/* Fires w: out of everything first, so that its callback may watch again. */
static void fire(reign__etcd *e, ewatch *w, reign__zk_event ev)
{
    unlink_watch(e, w);
    reign_trace("etcd.fire", "%d %s", (int)ev, w->path);
    w->cb(w->owner, w->arg, ev, w->path);
    free_watch(w);
}

static void flush_cb(reign__timer *t, void *arg)
{
    (void)t;
    reign__etcd *e = arg;
    if (e->closed)
        return;
    estream *s = reign__ew_batch(e);
    if (s)
        stream_send(s);
}

int reign__ew_add(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev, void *owner,
                  reign__zk_watch_cb *cb, void *arg)
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
    size_t b = bucket_of(e, path);
    w->hnext = e->wb[b];
    e->wb[b] = w;
    w->onext = e->wall;
    if (e->wall)
        e->wall->oprev = w;
    e->wall = w;
    e->n_watches++;
    w->pending = true;
    if (!e->pending)
        e->pending_ns = reign__now_ns();
    w->pprev = e->pending_tail;
    *(e->pending_tail ? &e->pending_tail->pnext : &e->pending) = w;
    e->pending_tail = w;
    if (!reign__timer_armed(&e->flush_timer))
        reign__timer_start(e->cfg.timers, &e->flush_timer, reign__now_ns());
    return 0;
}

/* The stream a client folds into its next one: the oldest of those with the fewest watches. */
static estream *smallest(reign__etcd *e)
{
    estream *min = NULL;
    for (estream *s = e->streams; s; s = s->next) /* newest first */
        if (s != e->ew_busy && !s->dead && (!min || s->live <= min->live))
            min = s;
    return min;
}

estream *reign__ew_batch(reign__etcd *e)
{
    if (!e->pending)
        return NULL;
    size_t n = 0;
    for (ewatch *w = e->pending; w; w = w->pnext)
        n++;
    estream *fold = e->n_streams >= STREAMS_MAX ? smallest(e) : NULL;
    if (fold && fold->live > FOLD_RATIO * n) {
        /* Folding a big stream for a few new watches, turn after turn, would make its watchers
         * again each time (a client in 10,000 elections kept etcd busy for minutes): the new
         * ones wait a moment for others, who fold it together.  They miss nothing meanwhile:
         * each watcher starts after its own read. */
        int64_t due = e->pending_ns + FOLD_WAIT_NS;
        if (reign__now_ns() < due) {
            reign__timer_start(e->cfg.timers, &e->flush_timer, due);
            return NULL;
        }
    }
    n += fold ? fold->live : 0;
    estream *s = stream_new(e, n);
    if (!s) { /* they wait for the next watch added, or the next stream that ends */
        reign__log(e->log, REIGN_LOG_WARN, "etcd: no memory for a watch stream");
        return NULL;
    }
    if (fold) {
        reign__log(e->log, REIGN_LOG_DEBUG, "etcd: %zu watch streams: one folded into the next",
                   e->n_streams - 1);
        for (size_t i = 0; i < fold->n; i++)
            if (fold->w[i]) {
                ewatch *w = fold->w[i];
                fold->w[i] = NULL;
                w->s = s;
                w->slot = s->n;
                s->w[s->n++] = w;
            }
        stream_free(fold);
    }
    while (e->pending) {
        ewatch *w = e->pending;
        detach(e, w);
        w->s = s;
        w->slot = s->n;
        s->w[s->n++] = w;
    }
    s->live = s->n;
    return s;
}

bool reign__ew_pending(const reign__etcd *e, const char *path, int type, int64_t rev)
{
    if (!e->wb_n)
        return false;
    for (const ewatch *w = e->wb[bucket_of(e, path)]; w; w = w->hnext)
        if (w->rev < rev && !strcmp(w->path, path) && fires(w, type, false))
            return true;
    const char *slash = strrchr(path, '/');
    if (type == REIGN__ZK_CHANGED || !slash)
        return false;
    char parent[1024];
    size_t pl = slash == path ? 1 : (size_t)(slash - path);
    if (pl >= sizeof(parent))
        return false;
    memcpy(parent, path, pl);
    parent[pl] = '\0';
    for (const ewatch *w = e->wb[bucket_of(e, parent)]; w; w = w->hnext)
        if (w->rev < rev && w->kind == EW_CHILD && !strcmp(w->path, parent))
            return true;
    return false;
}

void reign__ew_forget(reign__etcd *e, void *owner)
{
    for (ewatch *w = e->wall, *next; w; w = next) {
        next = w->onext;
        if (w->owner == owner) {
            unlink_watch(e, w);
            free_watch(w);
            next = e->wall; /* a stream released may have been any: from the top */
        }
    }
}

void reign__ew_drop_all(reign__etcd *e)
{
    while (e->wall) {
        ewatch *w = e->wall;
        unlink_watch(e, w);
        free_watch(w);
    }
}

void reign__ew_init(reign__etcd *e)
{
    reign__timer_init(&e->flush_timer, flush_cb, e);
}

void reign__ew_stop(reign__etcd *e)
{
    reign__timer_stop(e->cfg.timers, &e->flush_timer);
    for (estream *s = e->streams, *next; s; s = next) {
        next = s->next;
        if (s == e->ew_busy)
            s->dead = true;
        else
            stream_free(s);
    }
}

void reign__ew_free(reign__etcd *e)
{
    reign__ew_stop(e);
    reign__ew_drop_all(e);
    reign__free(e->wb);
    e->wb = NULL;
    e->wb_n = 0;
}

/* ---- streams: requests ---------------------------------------------------------------------- */

static void stream_done(ereq *q, void *arg);

static void stream_later(estream *s)
{
    reign__etcd *e = s->e;
    reign_trace("etcd.wlater", "%p %d", (void *)s, s->backoff_ms);
    if (e->closed)
        return;
    int ms = s->backoff_ms;
    s->backoff_ms = ms ? (ms * 2 > 1000 ? 1000 : ms * 2) : 20;
    reign__timer_start(e->cfg.timers, &s->retry, reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

/* A watch's two watchers: its node's key, or for a children watch the node's key and every key
 * under it (and, harmlessly, its siblings whose names go on with a byte below '/'+1).  The
 * first (id 2 slot + 1) starts at the revision after the last one the watch was sent: it misses
 * nothing.  But etcd serves a watcher that starts below its current revision from a loop that
 * runs every 100 ms until it has caught up, and a watch made after a read usually does (anyone's
 * write in between moves the revision): so a second one (id 2 slot + 2) starts at the current
 * revision, and delivers what happens from then on at once. */
static void create_request(const reign__etcd *e, reign__buf *b, const ewatch *w, size_t slot)
{
    char key[1100], end[1100];
    int kl = snprintf(key, sizeof(key), "%s%s", e->prefix, w->path);
    if (kl <= 0 || (size_t)kl + 2 > sizeof(key)) {
        b->oom = true; /* no path is that long: it never gets here */
        return;
    }
    size_t el = (size_t)kl;
    memcpy(end, key, el);
    if (w->kind == EW_CHILD && key[kl - 1] == '/')
        reign__ej_prefix_end(end, el); /* the root: everything under it */
    else if (w->kind == EW_CHILD)
        end[el++] = '0'; /* the byte after '/' */
    size_t at = b->len;
    reign__buf_puts(b, "{\"create_request\":{\"key\":");
    reign__ej_b64(b, key, (size_t)kl);
    if (w->kind == EW_CHILD) {
        reign__buf_puts(b, ",\"range_end\":");
        reign__ej_b64(b, end, el);
    }
    size_t common = b->len - at;
    reign__buf_printf(b, ",\"start_revision\":\"%lld\",\"watch_id\":\"%zu\"}}",
                      (long long)w->rev + 1, 2 * slot + 1);
    char *same = b->oom ? NULL : reign__memdup(b->data + at, common);
    if (!same) {
        b->oom = true;
        return;
    }
    reign__buf_append(b, same, common); /* the same range, from now on */
    reign__free(same);
    reign__buf_printf(b, ",\"watch_id\":\"%zu\"}}", 2 * slot + 2);
}

void reign__ew_request(const reign__etcd *e, const estream *s, reign__buf *b)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->w[i])
            create_request(e, b, s->w[i], i);
}

static void stream_send(estream *s)
{
    reign__etcd *e = s->e;
    if (e->closed || s->dead || s->q)
        return;
    ereq *q = reign__eh_new(e, stream_done, s);
    if (!q) {
        stream_later(s);
        return;
    }
    q->stream = true;
    reign__ew_request(e, s, &q->body);
    s->q = q;
    reign_trace("etcd.wsend", "%p %zu %p", (void *)s, s->live, (void *)q);
    if (reign__eh_send(e, q, "/v3/watch", 0) < 0) {
        s->q = NULL;
        reign__eh_drop(q);
        stream_later(s);
    }
}

void reign__ew_leave_member(reign__etcd *e, size_t m)
{
    if (e->closed || e->n_members < 2)
        return;
    bool moved = false;
    for (estream *s = e->streams; s; s = s->next) {
        if (!s->q || s->q->member != m || s == e->ew_busy)
            continue;
        if (!moved)
            reign__log(e->log, REIGN_LOG_INFO, "etcd: watch streams leave %s", e->members[m]);
        reign__eh_next_member(e, m);
        moved = true;
        reign__eh_drop(s->q);
        s->q = NULL;
        stream_send(s); /* again at once, each watcher after what it was sent */
    }
}

/* One event for the watch in `slot` (from its watcher at the current revision, or from the one
 * that misses nothing): fires it, or moves on where it would start again. */
static void stream_event(reign__etcd *e, estream *s, size_t slot, bool current, const cJSON *ev)
{
    const cJSON *kv = cJSON_GetObjectItemCaseSensitive(ev, "kv");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    bool del = cJSON_IsString(type) && !strcmp(type->valuestring, "DELETE");
    size_t klen;
    char *key = reign__ej_bytes(kv, "key", &klen);
    int64_t rev = reign__ej_i64(kv, "mod_revision");
    reign__eh_saw(e, rev);
    ewatch *w = slot < s->n ? s->w[slot] : NULL;
    if (!key || !w || rev <= w->rev || rev == INT64_MAX) {
        reign__free(key);
        return;
    }
    const char *path = key + e->prefix_len;
    const char *name = strrchr(key, '/');
    if (klen > e->prefix_len && !memcmp(key, e->prefix, e->prefix_len) && *path == '/' && name &&
        strcmp(name, "/.") != 0 && !strstr(path, "/./") && strlen(key) == klen) {
        int t = del                                 ? REIGN__ZK_DELETED
                : reign__ej_i64(kv, "version") == 1 ? REIGN__ZK_CREATED
                                                    : REIGN__ZK_CHANGED;
        bool child = parent_is(path, w->path);
        reign_trace("etcd.event", "%d %s %lld", t, path, (long long)rev);
        if ((child || !strcmp(path, w->path)) && fires(w, t, child)) {
            fire(e, w, child ? REIGN__ZK_CHILD : (reign__zk_event)t);
            reign__free(key);
            return;
        }
    }
    /* Nothing for it before this revision (a txn's other events share it): a stream started
     * again starts there.  Not from the watcher at the current revision: what came before it
     * started may still be on its way. */
    if (!current && rev - 1 > w->rev)
        w->rev = rev - 1;
    reign__free(key);
}

bool reign__ew_line(reign__etcd *e, estream *s, const char *line, size_t n)
{
    cJSON *root = cJSON_ParseWithLength(line, n);
    if (!root)
        return true;
    estream *was_busy = e->ew_busy;
    e->ew_busy = s; /* not freed under our feet when its last watch fires */
    int code = 0;
    const char *err = reign__ej_error(root, &code);
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "result");
    bool keep = true;
    if (err) {
        /* "no leader" (the member lost its cluster), an expired token: another member. */
        reign__log(e->log, REIGN_LOG_INFO, "etcd: watch stream ended: %s", err);
        if (strstr(err, "auth token") && e->reauth)
            e->reauth(e);
        else if (s->q)
            reign__eh_next_member(e, s->q->member);
        keep = false;
    } else if (cJSON_IsObject(res)) {
        int64_t id = reign__ej_i64(res, "watch_id");
        size_t slot = id >= 1 && (uint64_t)id <= 2 * s->n ? (size_t)(id - 1) / 2 : SIZE_MAX;
        bool current = id >= 1 && (id - 1) % 2 == 1;
        ewatch *w = slot != SIZE_MAX ? s->w[slot] : NULL;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "canceled"))) {
            const cJSON *why = cJSON_GetObjectItemCaseSensitive(res, "cancel_reason");
            if (reign__ej_i64(res, "compact_revision") && w) {
                /* What it waited for may be gone: it fires, and its recipe reads again. */
                reign__log(e->log, REIGN_LOG_NOTICE,
                           "etcd: a watch of %s: revisions compacted, it looks again", w->path);
                fire(e, w, w->kind == EW_CHILD ? REIGN__ZK_CHILD : REIGN__ZK_CHANGED);
            } else if (w || slot == SIZE_MAX) {
                reign__log(e->log, REIGN_LOG_INFO, "etcd: watch canceled%s%s",
                           cJSON_IsString(why) ? ": " : "",
                           cJSON_IsString(why) ? why->valuestring : "");
                /* A token the member does not know (it restarted): a new one first, or the
                 * stream would start again with the same. */
                if (cJSON_IsString(why) && strstr(why->valuestring, "auth token") && e->reauth)
                    e->reauth(e);
                keep = false; /* the stream starts again, later */
            }
        } else {
            s->backoff_ms = 0;
            const cJSON *evs = cJSON_GetObjectItemCaseSensitive(res, "events"), *ev;
            cJSON_ArrayForEach(ev, evs)
            {
                if (slot == SIZE_MAX || s->dead || !s->w[slot])
                    break;
                stream_event(e, s, slot, current, ev);
            }
        }
    }
    e->ew_busy = was_busy;
    if (!keep)
        reign_trace("etcd.wend", "%p %.*s", (void *)s, (int)(n > 200 ? 200 : n), line);
    cJSON_Delete(root);
    return keep;
}

static void stream_done(ereq *q, void *arg)
{
    estream *s = arg;
    reign__etcd *e = s->e;
    estream *was_busy = e->ew_busy;
    e->ew_busy = s;
    bool keep = true;
    while (!s->dead) {
        const char *start = q->resp.data ? q->resp.data + q->line_at : NULL;
        const char *nl = start ? memchr(start, '\n', q->resp.len - q->line_at) : NULL;
        if (!nl)
            break;
        size_t n = (size_t)(nl - start);
        q->line_at += n + 1;
        if (!reign__ew_line(e, s, start, n)) {
            keep = false;
            break;
        }
    }
    e->ew_busy = was_busy;
    if (s->dead || !s->live) {
        stream_free(s); /* every watch fired or forgotten, or the client closed */
    } else if (keep && reign__eh_out(q)) {
        if (q->line_at > 65536) { /* drop what was read */
            memmove(q->resp.data, q->resp.data + q->line_at, q->resp.len - q->line_at);
            q->resp.len -= q->line_at;
            q->line_at = 0;
        }
    } else {
        /* Done with the stream before anyone hears of the trouble: what they do may end it. */
        s->q = NULL;
        size_t m = q->member;
        bool broke = !reign__eh_out(q) && q->fail;
        if (broke)
            reign__log(e->log, REIGN_LOG_INFO, "etcd: watch stream: %s", q->why);
        reign__eh_drop(q);
        stream_later(s);
        if (broke) {
            reign__eh_next_member(e, m);
            e->trouble(e, m, "watch stream broken");
        }
    }
    if (e->n_held)
        e->caught_up(e, false);
}
