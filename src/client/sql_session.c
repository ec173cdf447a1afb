/*
 * sql_session.c - a SQL client's session keeper (sql_session.h): a recipe of the client, one
 * per client, whose requests are CALLs on the client's worker running src/sql/sessions.c.
 */
#include "sql_session.h"

#include <stdlib.h>
#include <string.h>

#include "sql/dialect.h"
#include "sql/members.h"
#include "sql/sessions.h"

#define RETRY_NS (1000 * REIGN__NS_PER_MS)

typedef enum kstate { K_NONE = 0, K_OPENING, K_LIVE } kstate;

/* A telling of the users under way: the next one to tell, moved on by a leave. */
struct iter {
    reign__sql_session_user *next;
    struct iter *up;
};

/* A session of another client that holds leases we follow. */
typedef struct watched {
    struct watched *next;
    char guid[2 * REIGN__GUID_BYTES + 1];
    reign__sql_session_watch *watches;
    unsigned from_look; /* looks numbered from here on were sent after its first watch */
    bool known;         /* a look has shown it: beat, since */
    int64_t beat, since_ns;
    bool reaping;
    int64_t leases; /* how many rows it had at the last look (looks at rows only) */
} watched;

typedef struct keeper {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__sqlw *w;
    const reign__logger *log;
    reign__sql_session_user *users;
    int row_users;      /* users with on_rows (group members): the renewal reads their rows */
    struct iter *iters; /* the tellings under way (tell_all()) */
    char *owner;
    kstate state;
    char guid[2 * REIGN__GUID_BYTES + 1];
    unsigned epoch;      /* +1 per session: answers about an older one are ignored */
    bool out;            /* an open or a renewal is out */
    bool check;          /* read the session's rows with the next renewal */
    int beats_unchecked; /* renewals since the last read of the rows */
    bool listening;
    int64_t valid_until; /* the client's own bound (CLOCK_MONOTONIC) */
    reign__timer beat, bound;

    /* Other sessions, watched for the leases they hold (sql_session.h). */
    watched *watched;
    int holders;     /* users leading on a lease in our session */
    int watches;     /* watches of other sessions, in all */
    unsigned looks;  /* looks sent */
    bool looking;    /* a look is out */
    bool look_again; /* ... and another is wanted as soon as it is back */
    reign__timer look;
} keeper;

/* What travels to the worker and back. */
typedef struct kcall {
    char guid[2 * REIGN__GUID_BYTES + 1];
    char *owner; /* open */
    int64_t lease_ms;
    int64_t beat; /* 'e': reap at this beat; -1: end at any */
    int kind;     /* 'o'pen, 'b'eat, 'e'nd */
    bool check;
    reign__sql_rows rows; /* beat with check: the session's registrations */
} kcall;

static void kcall_free(void *p)
{
    kcall *k = p;
    reign__sql_rows_free(&k->rows);
    reign__free(k->owner);
    reign__free(k);
}

static int run(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    kcall *k = ctx;
    if (k->kind == 'o')
        return reign__sessions_open(c, dc, k->guid, k->owner, k->lease_ms, err, errlen);
    if (k->kind == 'e')
        return reign__sessions_end(c, dc, k->guid, k->beat, err, errlen);
    int rc = reign__sessions_beat(c, dc, k->guid, err, errlen);
    if (rc > 0 && k->check) {
        int r = reign__members_of_session(c, dc, k->guid, &k->rows, err, errlen);
        if (r < 0)
            k->check = false; /* read again with the next renewal */
    }
    return rc;
}

static const reign__lease_settings *settings(keeper *k)
{
    return reign__client_lease(k->client);
}

static reign__timers *timers(keeper *k)
{
    return reign__client_timers(k->client);
}

static void k_open(keeper *k);

/* Calls each user once (on_session with guid, on_rows with rows, on_fail, or on_marked with
 * name), in one pass: a user's callback may leave (or free) any user, and the leave moves every
 * telling under way past it (reign__sql_session_leave()).  Users joined meanwhile are not told:
 * a join tells its user what it needs. */
static void tell_each(keeper *k, const char *guid, const reign__sql_rows *rows,
                      const reign__sqlw_result *failed, const char *name)
{
    struct iter it = {.next = k->users, .up = k->iters};
    k->iters = &it;
    while (it.next) {
        reign__sql_session_user *u = it.next;
        it.next = u->next;
        if (failed)
            u->on_fail(u, failed->rc, failed->err);
        else if (name) {
            if (u->on_marked)
                u->on_marked(u, name);
        } else if (!rows)
            u->on_session(u, guid);
        else if (u->on_rows)
            u->on_rows(u, rows);
    }
    k->iters = it.up;
}

static void tell_all(keeper *k, const char *guid, const reign__sql_rows *rows,
                     const reign__sqlw_result *failed)
{
    tell_each(k, guid, rows, failed, NULL);
}

static void tell(keeper *k, const char *guid)
{
    tell_all(k, guid, NULL, NULL);
}

static int send_call(keeper *k, int kind, reign__sqlw_cb *cb);

/* Ends session guid (ours, given up) or, with beat >= 0, reaps another's at that beat. */
static int send_end_at(keeper *k, const char *guid, int64_t beat, reign__sqlw_cb *cb, void *arg)
{
    kcall *c = reign__calloc(1, sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    c->kind = 'e';
    c->beat = beat;
    reign__strlcpy(c->guid, guid, sizeof c->guid);
    int rc = reign__sqlw_call(k->w, "session", run, c, kcall_free, cb ? k : NULL, cb, arg);
    if (rc < 0)
        kcall_free(c);
    return rc;
}

static int send_end(keeper *k, const char *guid)
{
    return send_end_at(k, guid, -1, NULL, NULL);
}

/* Sends a kcall; 0 or a negative code (then freed). */
static int send_call(keeper *k, int kind, reign__sqlw_cb *cb)
{
    kcall *c = reign__calloc(1, sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    c->kind = kind;
    c->beat = -1;
    memcpy(c->guid, k->guid, sizeof c->guid);
    c->lease_ms = settings(k)->lease_ms;
    if (kind == 'b' && k->check && k->row_users) { /* no member: no rows to read */
        c->check = true;
        k->check = false;
        k->beats_unchecked = 0;
    }
    if (kind == 'o' && !(c->owner = reign__strdup(k->owner))) {
        kcall_free(c);
        return REIGN_ENOMEM;
    }
    int rc =
        reign__sqlw_call(k->w, "session", run, c, kcall_free, k, cb, (void *)(uintptr_t)k->epoch);
    if (rc < 0)
        kcall_free(c);
    return rc;
}

/* The session is lost (reaped, or past our own bound): users first, then a new one.  The old
 * row is deleted: its members must not outlive our giving it up. */
static void k_lose(keeper *k, const char *why)
{
    if (k->state != K_LIVE)
        return;
    reign__log(k->log, REIGN_LOG_WARN, "session %s lost (%s); opening another", k->guid, why);
    char old[sizeof k->guid];
    memcpy(old, k->guid, sizeof old);
    k->state = K_NONE;
    k->epoch++;
    k->out = false;
    reign__timer_stop(timers(k), &k->beat);
    reign__timer_stop(timers(k), &k->bound);
    /* Users first: a leader on a lease in it is demoted before the row goes (the delete
     * would free its leases for others at once). */
    reign__client_guard_session(k->client, NULL);
    tell(k, NULL);
    (void)send_end(k, old);
    k_open(k);
}

static void retry_later(keeper *k)
{
    reign__timer_start(timers(k), &k->beat, reign__now_ns() + RETRY_NS);
}

static void on_beat(void *owner, void *arg, const reign__sqlw_result *r)
{
    keeper *k = owner;
    kcall *c = r->ctx;
    if ((unsigned)(uintptr_t)arg != k->epoch)
        return; /* about a session given up: its out flag went with it */
    k->out = false;
    if (k->state != K_LIVE)
        return;
    if (r->rc == 0) {
        k_lose(k, "reaped: it was not renewed for a whole lease");
        return;
    }
    if (r->rc < 0) {
        if (c->check)
            k->check = true;
        reign__log(k->log, REIGN_LOG_DEBUG, "session %s: %s", k->guid, r->err);
        return; /* the bound decides; the next renewal may do */
    }
    const reign__lease_settings *s = settings(k);
    int64_t until = r->sent_ns + (int64_t)(s->lease_ms - s->margin_ms) * REIGN__NS_PER_MS;
    if (until > k->valid_until) {
        k->valid_until = until;
        reign__timer_start(timers(k), &k->bound, until);
    }
    if (c->check)
        tell_all(k, NULL, &c->rows, NULL);
}

static void k_beat(keeper *k)
{
    if (k->state == K_LIVE && !k->out) {
        /* MariaDB tells of no change: read the rows once a lease all the same. */
        const reign__lease_settings *s = settings(k);
        if (!reign__sqlw_notifies(k->w) && k->row_users &&
            ++k->beats_unchecked * s->renew_ms >= s->lease_ms)
            k->check = true;
        k->out = send_call(k, 'b', on_beat) == 0;
    }
    if (k->state == K_LIVE)
        reign__timer_start(timers(k), &k->beat,
                           reign__now_ns() + (int64_t)settings(k)->renew_ms * REIGN__NS_PER_MS);
}

static void on_open(void *owner, void *arg, const reign__sqlw_result *r)
{
    keeper *k = owner;
    if ((unsigned)(uintptr_t)arg != k->epoch)
        return;
    k->out = false;
    if (k->state != K_OPENING)
        return;
    if (r->rc == REIGN_EFOREIGN) {
        k->state = K_NONE;
        reign__client_guard_session(k->client, NULL);
        tell_all(k, NULL, NULL, r);
        return;
    }
    if (r->rc < 0) {
        if (r->rc != REIGN_ECLOSED)
            reign__log(k->log, REIGN_LOG_WARN, "opening a session: %s; retrying", r->err);
        k->state = K_NONE;
        if (r->rc != REIGN_ECLOSED)
            retry_later(k);
        return;
    }
    const reign__lease_settings *s = settings(k);
    k->state = K_LIVE;
    k->valid_until = r->sent_ns + (int64_t)(s->lease_ms - s->margin_ms) * REIGN__NS_PER_MS;
    reign__timer_start(timers(k), &k->bound, k->valid_until);
    reign__log(k->log, REIGN_LOG_INFO, "session %s opened", k->guid);
    k_beat(k);
    tell(k, k->guid);
}

static void k_open(keeper *k)
{
    if (k->state != K_NONE || k->out || reign__client_closing(k->client))
        return;
    k->epoch++; /* the answer of whatever is still out about an older session is ignored */
    if (reign__random_hex(k->guid, REIGN__GUID_BYTES) < 0) {
        retry_later(k);
        return;
    }
    if (!k->listening && reign__sqlw_notifies(k->w))
        k->listening = reign__sqlw_submit(k->w, REIGN__SQLW_LISTEN, REIGN__MEMBERS_LISTEN, NULL, 0,
                                          NULL, NULL, NULL) == 0;
    /* Told before the row exists: a process that dies in between leaves no row behind. */
    reign__client_guard_session(k->client, k->guid);
    k->state = K_OPENING;
    k->out = send_call(k, 'o', on_open) == 0;
    if (!k->out) {
        k->state = K_NONE;
        retry_later(k);
    }
}

static void beat_cb(reign__timer *t, void *arg)
{
    keeper *k = arg;
    (void)t;
    if (k->state == K_NONE)
        k_open(k);
    else
        k_beat(k);
}

static void bound_cb(reign__timer *t, void *arg)
{
    keeper *k = arg;
    (void)t;
    if (k->state == K_LIVE && reign__now_ns() >= k->valid_until)
        k_lose(k, "not renewed within its lease");
}

static void k_conn(reign__recipe *rp, reign_conn_state st)
{
    keeper *k = (keeper *)rp;
    if (st == REIGN_CONN_CLOSED) {
        /* A clean end: our members go with the session, at once. */
        if (k->state == K_LIVE)
            (void)send_call(k, 'e', NULL);
        k->state = K_NONE;
        k->epoch++;
        k->out = false;
        reign__timer_stop(timers(k), &k->beat);
        reign__timer_stop(timers(k), &k->bound);
    } else if (st == REIGN_CONN_LOST) {
        k_lose(k, "the store is gone");
    } else if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED) {
        if (st == REIGN_CONN_CONNECTED)
            k->listening = false;
        if (k->state == K_NONE)
            k_open(k);
        else
            k_beat(k);
    }
}

/* ---- other sessions, watched for the leases they hold ------------------------------------- */

/* What a look takes to the worker and brings back. */
typedef struct lcall {
    char own[2 * REIGN__GUID_BYTES + 1];
    char **watched;
    size_t n;
    bool rows;
    reign__sql_rows out;
} lcall;

static void lcall_free(void *p)
{
    lcall *l = p;
    for (size_t i = 0; i < l->n; i++)
        reign__free(l->watched[i]);
    reign__free(l->watched);
    reign__sql_rows_free(&l->out);
    reign__free(l);
}

static int run_look(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    lcall *l = ctx;
    return reign__sessions_look(c, dc, l->own, (const char *const *)l->watched, l->n, l->rows,
                                &l->out, err, errlen);
}

/* Where the store's notices do not name rows, looks also find releases and marks. */
static bool looks_at_rows(keeper *k)
{
    return !reign__sqlw_names_changes(k->w);
}

/* Whether anything needs looking at, once a poll period. */
static bool wants_looks(keeper *k)
{
    return k->watched || (k->holders > 0 && looks_at_rows(k));
}

static void on_look(void *owner, void *arg, const reign__sqlw_result *r);

/* Sends a look now, or once the one out is back. */
static void look_now(keeper *k)
{
    if (k->looking) {
        k->look_again = true;
        return;
    }
    lcall *l = reign__calloc(1, sizeof(*l));
    size_t n = 0;
    for (watched *x = k->watched; x; x = x->next)
        n++;
    bool ok = l && (!n || (l->watched = reign__calloc(n, sizeof(char *))));
    for (watched *x = k->watched; ok && x; x = x->next)
        ok = (l->watched[l->n++] = reign__strdup(x->guid)) != NULL;
    int rc = REIGN_ENOMEM;
    if (ok) {
        if (k->state == K_LIVE)
            memcpy(l->own, k->guid, sizeof l->own);
        l->rows = looks_at_rows(k);
        rc = reign__sqlw_call(k->w, "session look", run_look, l, lcall_free, k, on_look,
                              (void *)(uintptr_t)++k->looks);
    }
    if (rc < 0) {
        if (l)
            lcall_free(l);
        reign__timer_start(timers(k), &k->look, reign__now_ns() + RETRY_NS);
        return;
    }
    k->looking = true;
    k->look_again = false;
}

static void look_cb(reign__timer *t, void *arg)
{
    keeper *k = arg;
    (void)t;
    if (wants_looks(k))
        look_now(k);
}

static void next_look(keeper *k)
{
    if (k->look_again && wants_looks(k))
        look_now(k);
    else if (wants_looks(k))
        reign__timer_start(timers(k), &k->look,
                           reign__now_ns() + (int64_t)settings(k)->poll_ms * REIGN__NS_PER_MS);
}

/* Wakes the watchers of x (all, or those of lease `name`).  A wake may unwatch its own watch,
 * no other (the next one is taken before the call). */
static void wake_watchers(watched *x, const char *name, uint64_t term)
{
    reign__sql_session_watch *w = x->watches;
    while (w) {
        reign__sql_session_watch *next = w->next;
        if (!name || (w->name && !strcmp(w->name, name))) {
            w->released = term;
            w->wake(w);
        }
        w = next;
    }
}

static void drop_watched(keeper *k, watched *x)
{
    for (watched **p = &k->watched; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            break;
        }
    for (reign__sql_session_watch *w = x->watches; w; w = w->next)
        w->entry = NULL;
    reign__free(x);
}

/* Session x is gone: its leases are free; its watchers read their rows. */
static void watched_gone(keeper *k, watched *x)
{
    reign__log(k->log, REIGN_LOG_DEBUG, "session %s is gone: its leases are free", x->guid);
    reign__sql_session_watch *ws = x->watches;
    x->watches = NULL;
    for (reign__sql_session_watch *w = ws; w; w = w->next) {
        w->entry = NULL;
        k->watches--;
    }
    drop_watched(k, x);
    while (ws) {
        reign__sql_session_watch *w = ws;
        ws = w->next;
        w->next = w->prev = NULL;
        w->released = 0;
        w->wake(w);
    }
}

/* Tells the users that lease `name` of our session carries a mark. */
static void tell_marked(keeper *k, const char *name)
{
    tell_each(k, NULL, NULL, NULL, name);
}

static watched *find_watched(keeper *k, const char *guid)
{
    for (watched *x = k->watched; x; x = x->next)
        if (!strcmp(x->guid, guid))
            return x;
    return NULL;
}

static void on_reaped(void *owner, void *arg, const reign__sqlw_result *r)
{
    keeper *k = owner;
    kcall *c = r->ctx;
    (void)arg;
    watched *x = find_watched(k, c->guid);
    if (!x)
        return;
    x->reaping = false;
    if (r->rc == 1)
        watched_gone(k, x);
    else
        look_now(k); /* it beat meanwhile, or is gone already, or the store failed: look */
}

static void on_look(void *owner, void *arg, const reign__sqlw_result *r)
{
    keeper *k = owner;
    lcall *l = r->ctx;
    unsigned seq = (unsigned)(uintptr_t)arg;
    k->looking = false;
    if (r->rc < 0) {
        reign__log(k->log, REIGN_LOG_DEBUG, "looking at the sessions: %s", r->err);
        next_look(k);
        return;
    }
    const reign__sql_rows *rows = &l->out;
    /* Beats first, then releases, then marks: each may wake users that unwatch. */
    for (watched *x = k->watched, *next; x; x = next) {
        next = x->next;
        if ((int)(seq - x->from_look) < 0 || x->reaping)
            continue;
        size_t i = 0;
        for (; i < rows->n_rows; i++) {
            const char *kind = reign__sql_cell(rows, i, 0), *g = reign__sql_cell(rows, i, 1);
            if (kind && kind[0] == 'b' && g && !strcmp(g, x->guid))
                break;
        }
        if (i == rows->n_rows) {
            watched_gone(k, x); /* our row read showed it before this look was sent */
            continue;
        }
        const char *b = reign__sql_cell(rows, i, 2), *lm = reign__sql_cell(rows, i, 3);
        int64_t beat = b ? strtoll(b, NULL, 10) : 0, lease_ms = lm ? strtoll(lm, NULL, 10) : 0;
        if (!x->known || beat != x->beat) {
            x->known = true;
            x->beat = beat;
            x->since_ns = r->done_ns;
        } else if (lease_ms > 0 && lease_ms <= REIGN__SQL_DURATION_MAX_MS &&
                   r->done_ns - x->since_ns >= lease_ms * REIGN__NS_PER_MS) {
            /* The same beat for a whole lease of its own on our clock: its client counted it
             * lost before now.  Reaped at that beat only. */
            x->reaping = send_end_at(k, x->guid, beat, on_reaped, NULL) == 0;
        }
    }
    /* A session's count of rows moved: a row left it (taken after a release we did not see,
     * or by hand) or came to it; its followers read theirs. */
    for (watched *x = k->watched, *next; l->rows && x; x = next) {
        next = x->next;
        if ((int)(seq - x->from_look) < 0)
            continue;
        int64_t n = 0;
        for (size_t i = 0; i < rows->n_rows; i++) {
            const char *kind = reign__sql_cell(rows, i, 0), *g = reign__sql_cell(rows, i, 1);
            const char *v = reign__sql_cell(rows, i, 2);
            if (kind && kind[0] == 'c' && g && v && !strcmp(g, x->guid))
                n = strtoll(v, NULL, 10);
        }
        bool moved = n != x->leases;
        x->leases = n;
        if (moved)
            wake_watchers(x, NULL, UINT64_MAX);
    }
    for (size_t i = 0; i < rows->n_rows; i++) {
        const char *kind = reign__sql_cell(rows, i, 0), *g = reign__sql_cell(rows, i, 1);
        const char *name = reign__sql_cell(rows, i, 4);
        if (!kind || !g || !name)
            continue;
        watched *x = kind[0] == 'r' ? find_watched(k, g) : NULL;
        if (x && (int)(seq - x->from_look) < 0)
            x = NULL;
        const char *term = reign__sql_cell(rows, i, 2);
        if (x && term)
            wake_watchers(x, name, strtoull(term, NULL, 10));
        else if (kind[0] == 'm' && k->state == K_LIVE && !strcmp(g, k->guid))
            tell_marked(k, name);
    }
    next_look(k);
}

static void k_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    keeper *k = (keeper *)rp;
    k->check = true;
}

static void k_destroy(reign__recipe *rp)
{
    keeper *k = (keeper *)rp;
    /* The client is freed without a close: the worker still runs what is queued before it
     * stops (worker.h), so the session and its members go now, not a lease later. */
    if (k->state == K_LIVE)
        (void)send_call(k, 'e', NULL);
    reign__timer_stop(timers(k), &k->beat);
    reign__timer_stop(timers(k), &k->bound);
    reign__timer_stop(timers(k), &k->look);
    while (k->watched) {
        watched *x = k->watched;
        k->watched = x->next;
        for (reign__sql_session_watch *w = x->watches; w; w = w->next)
            w->entry = NULL;
        reign__free(x);
    }
    reign__sqlw_forget(k->w, k);
    reign__client_detach(k->client, &k->recipe);
    reign__free(k->owner);
    reign__free(k);
}

static const reign__recipe_ops keeper_ops = {
    .conn = k_conn, .destroy = k_destroy, .changed = k_changed};

/* The client's keeper, or NULL while none was made. */
static keeper *keeper_find(reign_client *c)
{
    return (keeper *)reign__client_find(c, &keeper_ops);
}

static void look_cb(reign__timer *t, void *arg);

/* The client's keeper, made on first use; NULL: out of memory. */
static keeper *keeper_of(reign_client *c)
{
    keeper *k = keeper_find(c);
    if (k)
        return k;
    if (!(k = reign__calloc(1, sizeof(*k))))
        return NULL;
    if (reign__default_id(&k->owner) < 0) {
        reign__free(k);
        return NULL;
    }
    k->recipe.ops = &keeper_ops;
    k->client = c;
    k->w = reign__client_sql(c);
    k->log = reign__client_log(c);
    reign__timer_init(&k->beat, beat_cb, k);
    reign__timer_init(&k->bound, bound_cb, k);
    reign__timer_init(&k->look, look_cb, k);
    reign__client_attach(c, &k->recipe);
    return k;
}

int reign__sql_session_join(reign_client *c, reign__sql_session_user *u)
{
    keeper *k = keeper_of(c);
    if (!k)
        return REIGN_ENOMEM;
    k->row_users += u->on_rows != NULL;
    u->prev = NULL;
    u->next = k->users;
    if (k->users)
        k->users->prev = u;
    k->users = u;
    reign_conn_state st = reign_client_state(c);
    if (k->state == K_LIVE)
        u->on_session(u, k->guid);
    else if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED)
        k_open(k);
    return 0;
}

void reign__sql_session_leave(reign_client *c, reign__sql_session_user *u)
{
    keeper *k = u ? keeper_find(c) : NULL;
    if (!k || (!u->prev && k->users != u))
        return; /* not joined */
    k->row_users -= u->on_rows != NULL;
    for (struct iter *it = k->iters; it; it = it->up)
        if (it->next == u)
            it->next = u->next;
    if (u->prev)
        u->prev->next = u->next;
    else
        k->users = u->next;
    if (u->next)
        u->next->prev = u->prev;
    u->next = u->prev = NULL;
}

int64_t reign__sql_session_valid_until(reign_client *c)
{
    keeper *k = keeper_find(c);
    return k && k->state == K_LIVE ? k->valid_until : 0;
}

int reign__sql_session_follow(reign_client *c, reign__sql_session_watch *w, const char *guid)
{
    keeper *k = keeper_of(c);
    if (!k)
        return REIGN_ENOMEM;
    watched *x = w->entry;
    if (x && !strcmp(x->guid, guid))
        return 0;
    reign__sql_session_unfollow(c, w);
    if (!(x = find_watched(k, guid))) {
        if (!(x = reign__calloc(1, sizeof(*x))))
            return REIGN_ENOMEM;
        reign__strlcpy(x->guid, guid, sizeof x->guid);
        x->leases = 1; /* at least the row whose read showed it: none at the look, it moved */
        bool first = !wants_looks(k);
        x->next = k->watched;
        k->watched = x;
        /* Judged by looks sent from now on: the one out may have been sent before our read. */
        x->from_look = k->looks + 1;
        if (first || !k->looking)
            look_now(k);
        else
            k->look_again = true;
    }
    k->watches++;
    w->entry = x;
    w->prev = NULL;
    w->next = x->watches;
    if (x->watches)
        x->watches->prev = w;
    x->watches = w;
    return 0;
}

void reign__sql_session_unfollow(reign_client *c, reign__sql_session_watch *w)
{
    watched *x = w ? w->entry : NULL;
    if (!x)
        return;
    if (w->prev)
        w->prev->next = w->next;
    else
        x->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->next = w->prev = NULL;
    w->entry = NULL;
    keeper *k = keeper_find(c);
    if (k)
        k->watches--;
    if (k && !x->watches && !x->reaping)
        drop_watched(k, x);
}

void reign__sql_session_hold(reign_client *c, int delta)
{
    keeper *k = keeper_find(c);
    if (!k)
        return;
    bool before = wants_looks(k);
    k->holders += delta;
    if (!before && wants_looks(k) && !k->looking)
        reign__timer_start(timers(k), &k->look,
                           reign__now_ns() + (int64_t)settings(k)->poll_ms * REIGN__NS_PER_MS);
}
