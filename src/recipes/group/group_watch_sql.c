/*
 * group_watch_sql.c - watching a group's members on a SQL store (reign_group_watch and
 * reign_group_list(), see <reign/group.h>; the table is src/sql/members.h).
 *
 * A watch reads the whole group whenever it may have changed: where the store tells of
 * changes (PostgreSQL's NOTIFY, sent by every write of a member in its transaction; SQLite's
 * file changes), when told, and otherwise every poll period (MariaDB).  It subscribes before
 * its first read, on the same worker, so a write that commits after a read is always told of;
 * a notice while a read is out makes it read once more after it; a reconnect makes it read.
 * Each read is reported against the view before with group.c's difference, as on ZooKeeper.
 *
 * A watch is also a reaper of dead hosts' sessions (src/sql/sessions.h): it keeps, for each
 * session its members live in, the beat it saw and the moment (CLOCK_MONOTONIC) its read
 * first showed it.  A session whose beat stood still for its whole lease on our clock is
 * deleted, its members with it, in one compare-and-set on that beat, and the group read
 * again.  A one-shot listing reaps nothing: it shows what the table holds.
 *
 * A row reign could not have written is no member (members.h): the read skips it, as a
 * ZooKeeper watch skips a child that is no member's node, and the watch says so once, at WARN.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"
#include "recipes/life.h"
#include "sql/members.h"
#include "sql/sessions.h"

#define RETRY_MS 1000

static void w_free(reign_group_watch *base);

typedef struct swatch {
    struct reign_group_watch head; /* first: name, userdata, the view */
    reign_client *client;
    reign__sqlw *w;
    const reign__logger *log;
    bool newest_per_id;
    reign_group_watch_cb *cb;
    reign_group_list_cb *list_cb; /* a one-shot listing */

    reign__life life;
    bool reading, again, listening, ready_sent, group_known, failed;
    bool foreign;              /* the last read failed on a foreign table (reported once) */
    bool foreign_rows_told;    /* rows reign did not write were skipped, and logged (once) */
    reign__member_rows rows;   /* what the view points into */
    char **nodes;              /* the view's node names, by row */
    reign__seen_session *seen; /* the sessions of the members read, and since when */
    size_t n_seen;
    reign__timer timer;
} swatch;

/* What travels to the worker and back. */
typedef struct wcall {
    char *group;
    char session[65]; /* a reap: the session, at beat */
    int64_t beat;
    reign__member_rows rows;
} wcall;

static void wcall_free(void *p)
{
    wcall *c = p;
    reign__member_rows_free(&c->rows);
    reign__free(c->group);
    reign__free(c);
}

static int run(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    wcall *w = ctx;
    if (w->session[0])
        return reign__sessions_end(c, dc, w->session, w->beat, err, errlen);
    return reign__members_read(c, dc, w->group, &w->rows, err, errlen);
}

static void wread(swatch *w);

static reign__timers *timers(swatch *w)
{
    return reign__client_timers(w->client);
}

static void w_leave(swatch *w)
{
    if (reign__life_leave(&w->life))
        w_free(&w->head);
}

static void w_emit(swatch *w, reign_group_watch_event *ev)
{
    reign__group_watch_emit(&w->head, &w->life, w->cb, ev);
}

static void free_nodes(char **nodes, size_t n)
{
    for (size_t i = 0; nodes && i < n; i++)
        reign__free(nodes[i]);
    reign__free(nodes);
}

/* Counts the sessions of a read that returned at done_ns (a new beat restarts the count). */
static int count_sessions(swatch *w, const reign__member_rows *rows, int64_t done_ns)
{
    reign__session_read *read = reign__calloc(rows->n ? rows->n : 1, sizeof(*read));
    if (!read)
        return REIGN_ENOMEM;
    for (size_t i = 0; i < rows->n; i++)
        read[i] = (reign__session_read){
            .guid = rows->v[i].session, .beat = rows->v[i].beat, .lease_ms = rows->v[i].lease_ms};
    int rc = reign__seen_sessions_update(&w->seen, &w->n_seen, read, rows->n, done_ns);
    reign__free(read);
    return rc;
}

/* When to read next, if nothing tells us before: a reap due, a retry, or the next poll. */
static void rearm(swatch *w)
{
    if (!reign__life_live(&w->life) || w->list_cb)
        return;
    int64_t now = reign__now_ns();
    int ms = w->failed                    ? RETRY_MS
             : reign__sqlw_notifies(w->w) ? 0
                                          : reign__client_lease(w->client)->poll_ms;
    int64_t at = ms > 0 ? now + (int64_t)ms * REIGN__NS_PER_MS : INT64_MAX;
    int64_t reap = reign__seen_sessions_next(w->seen, w->n_seen);
    at = reap < at ? reap : at;
    if (at != INT64_MAX)
        reign__timer_start(timers(w), &w->timer, at > now ? at : now);
}

/* A read's outcome: the new view replaces the old, and the difference is reported. */
static void apply(swatch *w, reign__member_rows *rows)
{
    char **nodes = reign__calloc(rows->n ? rows->n : 1, sizeof(*nodes));
    reign_member *view = reign__calloc(rows->n ? rows->n : 1, sizeof(*view));
    bool oom = !nodes || !view;
    for (size_t i = 0; !oom && i < rows->n; i++) {
        const reign__member_row *r = &rows->v[i];
        char node[96];
        snprintf(node, sizeof node, REIGN__N_MEMBER "%s_%010llu", r->guid,
                 (unsigned long long)r->seq);
        oom = !(nodes[i] = reign__strdup(node));
        view[i] = (reign_member){.id = r->id,
                                 .data = r->data ? r->data : "",
                                 .data_len = r->data_len,
                                 .node = nodes[i],
                                 .seq = r->seq,
                                 .joined_ms = r->joined_ms,
                                 .version = r->version};
    }
    if (oom) {
        free_nodes(nodes, rows->n);
        reign__free(view);
        w->failed = true;
        return;
    }
    size_t nv = rows->n;
    if (w->newest_per_id)
        nv = reign__members_newest_per_id(view, nv);
    /* The old view stays alive until the report is over: REMOVED and CHANGED point into it. */
    reign__member_rows old_rows = w->rows;
    char **old_nodes = w->nodes;
    reign_member *old_view = w->head.view;
    size_t n_old_view = w->head.n_view;
    w->rows = *rows;
    memset(rows, 0, sizeof *rows);
    w->nodes = nodes;
    w->head.view = view;
    w->head.n_view = nv;
    bool was_known = w->group_known;
    w->group_known = w->rows.group_exists;
    if (w->list_cb) {
        reign_group_list_cb *cb = w->list_cb;
        w->list_cb = NULL;
        int err = w->group_known ? 0 : REIGN_ENOENT;
        reign__life_enter(&w->life);
        cb(w->client, err, err ? NULL : view, err ? 0 : nv, w->head.userdata);
        (void)reign__life_leave(&w->life);
        (void)reign__life_request_free(&w->life);
    } else {
        reign__group_watch_report(&w->head, &w->life, w->cb, old_view, n_old_view, was_known,
                                  w->group_known, &w->ready_sent);
    }
    free_nodes(old_nodes, old_rows.n);
    reign__member_rows_free(&old_rows);
    reign__free(old_view);
}

static void reap_due(swatch *w);

static void on_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    swatch *w = owner;
    wcall *c = r->ctx;
    (void)arg;
    reign__life_enter(&w->life);
    w->reading = false;
    if (!reign__life_live(&w->life))
        goto out;
    w->failed = r->rc < 0;
    if (r->rc < 0 && w->list_cb) {
        /* The callback has no room for the detail (a foreign table named): logged. */
        if (r->rc != REIGN_ECLOSED)
            reign__log(w->log, REIGN_LOG_WARN, "group '%s': %s", w->head.name, r->err);
        reign_group_list_cb *cb = w->list_cb;
        w->list_cb = NULL;
        cb(w->client, r->rc, NULL, 0, w->head.userdata);
        (void)reign__life_request_free(&w->life);
        goto out;
    }
    if (r->rc < 0) {
        bool lost = r->rc == REIGN_ECONNLOSS || r->rc == REIGN_ETIMEDOUT;
        bool told = r->rc == REIGN_EFOREIGN && w->foreign; /* reported already */
        w->foreign = r->rc == REIGN_EFOREIGN;
        if (told)
            rearm(w);
        else if (r->rc != REIGN_ECLOSED) {
            char msg[640];
            snprintf(msg, sizeof(msg), "group '%s': reading members: %s; %s", w->head.name, r->err,
                     lost ? "reading again once connected" : "retrying");
            reign__log(w->log, REIGN_LOG_WARN, "%s", msg);
            reign_group_watch_event ev = {
                .type = REIGN_MEMBERS_ERROR, .error = r->rc, .message = msg};
            w_emit(w, &ev);
            if (!lost)
                rearm(w);
        }
        goto out;
    }
    w->foreign = false;
    /* Skipped, never reported as members (members.h); said once a watch, not at every read. */
    if (c->rows.n_foreign && !w->foreign_rows_told) {
        w->foreign_rows_told = true;
        reign__log(w->log, REIGN_LOG_WARN, "group '%s': %s", w->head.name, c->rows.foreign);
    }
    if (!w->list_cb && count_sessions(w, &c->rows, r->done_ns) < 0)
        w->failed = true;
    apply(w, &c->rows);
    if (!reign__life_live(&w->life))
        goto out;
    /* Reaping does not wait for the group to be quiet: a watch kept reading by a stream of
     * notices must still reap a dead host's session once its lease has run out. */
    reap_due(w);
    if (w->again) {
        w->again = false;
        wread(w);
    } else {
        rearm(w);
    }
out:
    w_leave(w);
}

static void on_reaped(void *owner, void *arg, const reign__sqlw_result *r)
{
    swatch *w = owner;
    wcall *c = r->ctx;
    (void)arg;
    reign__life_enter(&w->life);
    if (r->rc > 0)
        reign__log(w->log, REIGN_LOG_NOTICE,
                   "group %s: reaped session %s (its beat stood at %lld for a whole lease)",
                   w->head.name, c->session, (long long)c->beat);
    else if (r->rc < 0)
        reign__log(w->log, REIGN_LOG_WARN, "group %s: reaping session %s: %s", w->head.name,
                   c->session, r->err);
    /* Whatever came of it, every session is counted again from the next read, which is never
     * too early: a session the reap did not delete (it beat meanwhile, or the statement failed)
     * must not keep the "once" mark of reap_due(), or it would never be reaped. */
    if (r->rc <= 0)
        w->n_seen = 0;
    if (reign__life_live(&w->life))
        wread(w); /* what is left, or what moved meanwhile */
    w_leave(w);
}

/* Reaps every session whose beat stood still for its whole lease since we first saw it. */
static void reap_due(swatch *w)
{
    int64_t now = reign__now_ns();
    for (size_t i = 0; i < w->n_seen; i++) {
        reign__seen_session *s = &w->seen[i];
        if (!reign__seen_session_due(s, now))
            continue;
        wcall *c = reign__calloc(1, sizeof(*c));
        if (!c)
            return;
        reign__strlcpy(c->session, s->guid, sizeof c->session);
        c->beat = s->beat;
        s->since_ns = INT64_MAX / 2; /* once: the read that follows counts again */
        if (reign__sqlw_call(w->w, "group watch", run, c, wcall_free, w, on_reaped, NULL) < 0)
            wcall_free(c);
    }
}

static void wread(swatch *w)
{
    if (w->reading) {
        w->again = true;
        return;
    }
    reign__timer_stop(timers(w), &w->timer);
    if (!w->listening && !w->list_cb && reign__sqlw_notifies(w->w))
        /* Before the read, on the same worker: a write after the read is told of. */
        w->listening = reign__sqlw_submit(w->w, REIGN__SQLW_LISTEN, REIGN__MEMBERS_LISTEN, NULL, 0,
                                          NULL, NULL, NULL) == 0;
    wcall *c = reign__calloc(1, sizeof(*c));
    int rc = REIGN_ENOMEM;
    if (c && (c->group = reign__strdup(w->head.name)))
        rc = reign__sqlw_call(w->w, "group watch", run, c, wcall_free, w, on_read, NULL);
    if (rc < 0) {
        if (c)
            wcall_free(c);
        w->failed = true;
        if (rc != REIGN_ECLOSED)
            rearm(w);
        return;
    }
    w->reading = true;
}

static void timer_cb(reign__timer *t, void *arg)
{
    swatch *w = arg;
    (void)t;
    reign__life_enter(&w->life);
    if (!w->reading)
        reap_due(w);
    wread(w);
    w_leave(w);
}

static void w_conn(reign__recipe *rp, reign_conn_state st)
{
    swatch *w = (swatch *)rp;
    reign__life_enter(&w->life);
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED) {
        if (st == REIGN_CONN_CONNECTED)
            w->listening = false;
        wread(w);
    } else if (st == REIGN_CONN_CLOSED) {
        reign__timer_stop(timers(w), &w->timer);
        if (w->list_cb) {
            reign_group_list_cb *cb = w->list_cb;
            w->list_cb = NULL;
            cb(w->client, REIGN_ECLOSED, NULL, 0, w->head.userdata);
            (void)reign__life_request_free(&w->life);
        }
    }
    w_leave(w);
}

static void w_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    swatch *w = (swatch *)rp;
    reign__life_enter(&w->life);
    if (!w->list_cb)
        wread(w);
    w_leave(w);
}

static void w_destroy(swatch *w)
{
    reign__timer_stop(timers(w), &w->timer);
    reign__sqlw_forget(w->w, w);
    reign__client_detach(w->client, &w->head.recipe);
    free_nodes(w->nodes, w->rows.n);
    reign__member_rows_free(&w->rows);
    reign__free(w->head.view);
    reign__free(w->head.name);
    reign__free(w->seen);
    reign__free(w);
}

static void w_on_destroy(reign__recipe *rp)
{
    w_destroy((swatch *)rp);
}

static void w_free(reign_group_watch *base)
{
    swatch *w = (swatch *)base;
    (void)reign__life_request_free(&w->life);
    reign__sqlw_forget(w->w, w);
    reign__timer_stop(timers(w), &w->timer);
    if (reign__life_busy(&w->life))
        return; /* inside one of our callbacks: freed when it returns */
    w_destroy(w);
}

static const reign__recipe_ops recipe_ops = {
    .conn = w_conn, .destroy = w_on_destroy, .changed = w_changed};

int reign__group_watch_sql(reign_group_watch **ret, reign_client *client, const char *name,
                           const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                           void *userdata)
{
    swatch *w = reign__calloc(1, sizeof(*w));
    if (!w || !(w->head.name = reign__strdup(name))) {
        reign__free(w);
        return REIGN_ENOMEM;
    }
    w->head.recipe.ops = &recipe_ops;
    w->head.free = w_free;
    w->head.userdata = o ? o->userdata : userdata;
    w->client = client;
    w->w = reign__client_sql(client);
    w->log = reign__client_log(client);
    w->newest_per_id = o && o->newest_per_id;
    w->cb = o ? o->cb : NULL;
    w->list_cb = list_cb;
    reign__timer_init(&w->timer, timer_cb, w);
    reign__client_attach(client, &w->head.recipe);
    reign_conn_state st = reign_client_state(client);
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED || st == REIGN_CONN_SUSPENDED)
        wread(w);
    *ret = &w->head;
    return 0;
}
