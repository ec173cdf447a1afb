/*
 * sql_session.c - a SQL client's session keeper (sql_session.h): a recipe of the client, one
 * per client, whose requests are CALLs on the client's worker running src/sql/sessions.c.
 */
#include "sql_session.h"

#include <string.h>

#include "sql/members.h"
#include "sql/sessions.h"

#define RETRY_NS (1000 * REIGN__NS_PER_MS)

typedef enum kstate { K_NONE = 0, K_OPENING, K_LIVE } kstate;

typedef struct keeper {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__sqlw *w;
    const reign__logger *log;
    reign__sql_session_user *users;
    unsigned mark; /* tell_all()'s */
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
} keeper;

/* What travels to the worker and back. */
typedef struct kcall {
    char guid[2 * REIGN__GUID_BYTES + 1];
    char *owner; /* open */
    int64_t lease_ms;
    int kind; /* 'o'pen, 'b'eat, 'e'nd */
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
        return reign__sessions_end(c, dc, k->guid, -1, err, errlen);
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

/* Calls each user once (on_session with guid, or on_rows with rows), each time from the head
 * of the list: a user's callback may free other users, so no pointer is kept across it. */
static void tell_all(keeper *k, const char *guid, const reign__sql_rows *rows,
                     const reign__sqlw_result *failed)
{
    unsigned mark = ++k->mark;
    for (reign__sql_session_user *u = k->users; u;) {
        if (u->told == mark) {
            u = u->next;
            continue;
        }
        u->told = mark;
        if (failed)
            u->on_fail(u, failed->rc, failed->err);
        else if (!rows)
            u->on_session(u, guid);
        else if (u->on_rows)
            u->on_rows(u, rows);
        u = k->users;
    }
}

static void tell(keeper *k, const char *guid)
{
    tell_all(k, guid, NULL, NULL);
}

/* Sends a kcall; 0 or a negative code (then freed). */
static int send_call(keeper *k, int kind, reign__sqlw_cb *cb)
{
    kcall *c = reign__calloc(1, sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    c->kind = kind;
    memcpy(c->guid, k->guid, sizeof c->guid);
    c->lease_ms = settings(k)->lease_ms;
    if (kind == 'b' && k->check) {
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
    (void)send_call(k, 'e', NULL);
    reign__client_guard_session(k->client, NULL);
    k->state = K_NONE;
    k->epoch++;
    k->out = false;
    reign__timer_stop(timers(k), &k->beat);
    reign__timer_stop(timers(k), &k->bound);
    tell(k, NULL);
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
        if (!reign__sqlw_notifies(k->w) && ++k->beats_unchecked * s->renew_ms >= s->lease_ms)
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

static void k_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    ((keeper *)rp)->check = true;
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
    reign__sqlw_forget(k->w, k);
    reign__client_detach(k->client, &k->recipe);
    reign__free(k->owner);
    reign__free(k);
}

static const reign__recipe_ops keeper_ops = {
    .conn = k_conn, .destroy = k_destroy, .changed = k_changed};

int reign__sql_session_join(reign_client *c, reign__sql_session_user *u)
{
    keeper *k = (keeper *)reign__client_find(c, &keeper_ops);
    if (!k) {
        if (!(k = reign__calloc(1, sizeof(*k))))
            return REIGN_ENOMEM;
        if (reign__default_id(&k->owner) < 0) {
            reign__free(k);
            return REIGN_ENOMEM;
        }
        k->recipe.ops = &keeper_ops;
        k->client = c;
        k->w = reign__client_sql(c);
        k->log = reign__client_log(c);
        reign__timer_init(&k->beat, beat_cb, k);
        reign__timer_init(&k->bound, bound_cb, k);
        reign__client_attach(c, &k->recipe);
    }
    u->next = k->users;
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
    keeper *k = u ? (keeper *)reign__client_find(c, &keeper_ops) : NULL;
    for (reign__sql_session_user **p = k ? &k->users : NULL; p && *p; p = &(*p)->next)
        if (*p == u) {
            *p = u->next;
            break;
        }
}

int64_t reign__sql_session_valid_until(reign_client *c)
{
    keeper *k = (keeper *)reign__client_find(c, &keeper_ops);
    return k && k->state == K_LIVE ? k->valid_until : 0;
}
