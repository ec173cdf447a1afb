/*
 * mariadb_wake.c - followers of a MariaDB lease waiting for its leader's lock (mariadb_wake.h).
 */
#include "mariadb_wake.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mysqld_error.h>

#include "dialect.h"

/* The sleeps when no one holds the lock: from the first, doubled each time, up to the last;
 * after a holder let go, those up to TELL_MS tell. */
#define SLEEP_FIRST_MS 2
#define SLEEP_LAST_MS  1000
#define TELL_MS        64
/* How long a wait for a held lock lasts before it is sent again (at rest: one statement per
 * this, per lease waited on). */
#define HOLD_WAIT_S 300
/* A wait whose connection failed is opened again after this. */
#define REOPEN_MS 1000

typedef struct waiter {
    char lock[64];
    MYSQL *my;         /* NULL: to open at reopen_ns */
    int fd;            /* its socket, in the epoll set while my is set */
    int status;        /* Connector/C's wait flags of the call out; 0: none out */
    bool storing;      /* the query is done: its result is being read */
    unsigned sleep_ms; /* the next sleep when no one holds the lock */
    bool telling;      /* a holder let go lately: a free lock tells */
    int64_t reopen_ns; /* when my is NULL */
    char sql[400];
} waiter;

struct reign__mywake {
    reign__mywake_io io;
    MYSQL *my; /* the leader's connection */
    const char *table;
    uint64_t *statements;
    const reign__logger *log;
    const char *store;
    bool refused; /* the server refused a lock (said once): no lock, no wait any more */
    struct {
        char lock[64];
        uint64_t term;
    } held[REIGN__MYWAKE_HELD_MAX]; /* the locks held, each with the term of its lease */
    size_t n_held;
    struct {
        char dc[256], name[REIGN_NAME_MAX + 1];
        uint64_t term; /* 0: none */
    } won;             /* a lease just won, whose lock settle() takes */
    int epfd;          /* of the waits' sockets; -1 until the first */
    waiter v[REIGN__MYWAKE_MAX];
    size_t n;
};

bool reign__mywake_off(const char *params)
{
    const char *keys[32], *vals[32];
    char *copy = params ? reign__strdup(params) : NULL;
    size_t n = copy ? reign__sql_split_params(copy, keys, vals, 32) : 0;
    bool off = false;
    for (size_t i = 0; i < n; i++)
        off |= !strcmp(keys[i], "wakeup") && !strcmp(vals[i], "poll");
    reign__free(copy);
    return off;
}

const char *reign__mywake_get_lock(void)
{
    const char *refuse = getenv("REIGN_TEST_MARIADB_WAKE_REFUSE");
    return refuse && !strcmp(refuse, "1") ? "REIGN_TEST_NO_GET_LOCK" : "GET_LOCK";
}

reign__mywake *reign__mywake_new(const reign__mywake_io *io, MYSQL *my, const char *table,
                                 uint64_t *statements, const reign__logger *log, const char *store)
{
    reign__mywake *w = reign__calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->io = *io;
    w->my = my;
    w->table = table;
    w->statements = statements;
    w->log = log;
    w->store = store;
    w->epfd = -1;
    return w;
}

/* Ends a waiter's connection.  A wait out is cut at the socket first: Connector/C's close
 * would otherwise wait for the answer to a statement that may wait minutes. */
static void drop(reign__mywake *w, waiter *x)
{
    if (!x->my)
        return;
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, x->fd, NULL);
    if (x->status)
        shutdown(x->fd, SHUT_RDWR);
    w->io.close(x->my);
    x->my = NULL;
    x->status = 0;
    x->storing = false;
    x->reopen_ns = reign__now_ns() + REOPEN_MS * REIGN__NS_PER_MS;
}

void reign__mywake_free(reign__mywake *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++)
        drop(w, &w->v[i]);
    if (w->epfd >= 0)
        close(w->epfd);
    reign__free(w);
}

/* The server refused a lock, error e: said once; no lock is taken and nothing waits from now
 * on. */
static void refuse(reign__mywake *w, unsigned e, const char *msg)
{
    reign__log(w->log, REIGN_LOG_WARN,
               "%s: the server refused the wake-up lock (%u: %s); followers poll instead", w->store,
               e, msg);
    w->refused = true;
    for (size_t i = 0; i < w->n; i++)
        drop(w, &w->v[i]);
    w->n = 0;
}

/* ---- the leader's locks -------------------------------------------------------------------- */

/* How long a new leader waits for its lease's lock (seconds): its followers' waits, woken by the
 * last leader, each hold it for a moment. */
#define WAIT_CLAIM "0.05"

/* One row, one integer column, of a text statement on the leader's connection: 1 or 0, or -1
 * (NULL, or an error: a refusal ends the wake-ups, a lost connection is the next statement's
 * to find). */
static int lock_query(reign__mywake *w, const char *sql)
{
    (*w->statements)++;
    if (w->io.query(w->my, sql, strlen(sql))) {
        unsigned e = w->io.errnum(w->my);
        if (reign__mywake_refusal(e))
            refuse(w, e, w->io.error(w->my));
        return -1;
    }
    MYSQL_RES *res = w->io.store(w->my);
    MYSQL_ROW row = res ? w->io.fetch_row(res) : NULL;
    int v = row && row[0] ? atoi(row[0]) : -1;
    if (res)
        w->io.free_result(res);
    return v;
}

static int held_at(const reign__mywake *w, const char *lock)
{
    for (size_t i = 0; i < w->n_held; i++)
        if (!strcmp(w->held[i].lock, lock))
            return (int)i;
    return -1;
}

void reign__mywake_hold(reign__mywake *w, const char *dc, const char *name, uint64_t term,
                        const char *wait)
{
    char lock[64], sql[160];
    if (!w)
        return;
    reign__sql_channel(lock, w->table, dc, name);
    int i = held_at(w, lock);
    if (i >= 0) {
        w->held[i].term = term;
        return;
    }
    if (w->refused || w->n_held == REIGN__MYWAKE_HELD_MAX)
        return;
    snprintf(sql, sizeof sql, "SELECT %s('%s', %s)", reign__mywake_get_lock(), lock, wait);
    int64_t t0 = reign__now_ns();
    int got = lock_query(w, sql);
    reign__log(w->log, REIGN_LOG_DEBUG, "wake-up lock %s: %s in %.1f ms", lock,
               got == 1 ? "taken" : "held elsewhere", (double)(reign__now_ns() - t0) / 1e6);
    if (got == 1) {
        memcpy(w->held[w->n_held].lock, lock, sizeof lock);
        w->held[w->n_held++].term = term;
    }
}

void reign__mywake_won(reign__mywake *w, const char *dc, const char *name, uint64_t term)
{
    if (!w || strlen(dc) >= sizeof w->won.dc || strlen(name) >= sizeof w->won.name)
        return; /* longer than any lease's: no lock, the followers poll */
    memcpy(w->won.dc, dc, strlen(dc) + 1);
    memcpy(w->won.name, name, strlen(name) + 1);
    w->won.term = term;
}

void reign__mywake_settle(reign__mywake *w)
{
    if (!w || !w->won.term)
        return;
    reign__mywake_hold(w, w->won.dc, w->won.name, w->won.term, WAIT_CLAIM);
    w->won.term = 0;
}

void reign__mywake_let_go(reign__mywake *w, const char *dc, const char *name, bool any,
                          uint64_t term)
{
    char lock[64], sql[160];
    if (!w || !w->n_held)
        return;
    reign__sql_channel(lock, w->table, dc, name);
    int i = held_at(w, lock);
    if (i < 0 || (!any && w->held[i].term == term))
        return;
    w->held[i] = w->held[--w->n_held];
    snprintf(sql, sizeof sql, "SELECT RELEASE_LOCK('%s')", lock);
    lock_query(w, sql);
}

/* ---- the followers' waits ------------------------------------------------------------------ */

static uint32_t events_of(int status)
{
    return (status & MYSQL_WAIT_READ ? EPOLLIN : 0u) | (status & MYSQL_WAIT_WRITE ? EPOLLOUT : 0u) |
           (status & MYSQL_WAIT_EXCEPT ? EPOLLPRI : 0u);
}

static int status_of(uint32_t ev)
{
    /* An error or hang-up is handed on as readable: the call then fails and says why. */
    return (ev & (EPOLLIN | EPOLLERR | EPOLLHUP) ? MYSQL_WAIT_READ : 0) |
           (ev & EPOLLOUT ? MYSQL_WAIT_WRITE : 0) | (ev & EPOLLPRI ? MYSQL_WAIT_EXCEPT : 0);
}

/* Watches the waiter's socket for what its call out waits for. */
static void watch(reign__mywake *w, waiter *x)
{
    struct epoll_event ev = {.events = events_of(x->status), .data.ptr = x};
    epoll_ctl(w->epfd, EPOLL_CTL_MOD, x->fd, &ev);
}

bool reign__mywake_refusal(unsigned e)
{
    /* The server's own errors (1000-1999; the client's are 2000 and up, and 0 is none). */
    return e >= 1000 && e < 2000 && e != ER_SERVER_SHUTDOWN && e != ER_CONNECTION_KILLED &&
           e != ER_QUERY_INTERRUPTED && e != ER_STATEMENT_TIMEOUT && e != ER_LOCK_DEADLOCK;
}

/* A statement failed: the server refusing the lock (Galera) ends every wait; anything else (a
 * lost connection, a wait killed) has the wait's connection opened again a second later. */
static void failed(reign__mywake *w, waiter *x)
{
    unsigned e = w->io.errnum(x->my);
    if (!reign__mywake_refusal(e)) {
        reign__log(w->log, REIGN_LOG_DEBUG, "%s: wake-up wait on %s lost its connection: %s",
                   w->store, x->lock, w->io.error(x->my));
        drop(w, x);
        return;
    }
    refuse(w, e, w->io.error(x->my));
}

/* Sends the waiter's statement; false if it failed at once (handled). */
static bool send_wait(reign__mywake *w, waiter *x)
{
    unsigned s = x->sleep_ms;
    snprintf(x->sql, sizeof x->sql,
             "SELECT CASE WHEN IS_FREE_LOCK('%s') THEN SLEEP(%u.%03u) + 2 WHEN %s('%s', %d) "
             "THEN RELEASE_LOCK('%s') ELSE 0 END",
             x->lock, s / 1000, s % 1000, reign__mywake_get_lock(), x->lock, HOLD_WAIT_S, x->lock);
    int ret = 0;
    x->storing = false;
    x->status = w->io.query_start(&ret, x->my, x->sql, strlen(x->sql));
    if (x->status) {
        watch(w, x);
        return true;
    }
    if (ret) {
        failed(w, x);
        return false;
    }
    x->status = 0;
    return true; /* answered already: drain() reads it */
}

static bool open_waiter(reign__mywake *w, waiter *x, char *err, size_t errlen)
{
    x->my = w->io.open(w->io.ctx, err, errlen);
    if (!x->my) {
        x->reopen_ns = reign__now_ns() + REOPEN_MS * REIGN__NS_PER_MS;
        return false;
    }
    x->fd = (int)w->io.get_socket(x->my);
    /* Connector/C's TLS reads block on a blocking socket, non-blocking calls or not. */
    int fl = fcntl(x->fd, F_GETFL);
    if (fl >= 0)
        fcntl(x->fd, F_SETFL, fl | O_NONBLOCK);
    struct epoll_event ev = {.events = 0, .data.ptr = x};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, x->fd, &ev) < 0) {
        w->io.close(x->my);
        x->my = NULL;
        snprintf(err, errlen, "epoll: %s", strerror(errno));
        return false;
    }
    x->sleep_ms = SLEEP_FIRST_MS;
    x->telling = false;
    return send_wait(w, x);
}

int reign__mywake_listen(reign__mywake *w, const char *dc, const char *name, char *err,
                         size_t errlen)
{
    char lock[64];
    if (!w)
        return 0;
    reign__sql_channel(lock, w->table, dc, name);
    if (w->epfd < 0 && (w->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0) {
        snprintf(err, errlen, "epoll: %s", strerror(errno));
        return REIGN_EBACKEND;
    }
    if (w->refused) {
        snprintf(err, errlen, "the server refused the wake-up lock");
        return REIGN_EBACKEND;
    }
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->v[i].lock, lock))
            return 0;
    if (w->n == REIGN__MYWAKE_MAX) {
        snprintf(err, errlen, "already waiting on %d locks", REIGN__MYWAKE_MAX);
        return REIGN_EBUSY;
    }
    waiter *x = &w->v[w->n++];
    memset(x, 0, sizeof *x);
    memcpy(x->lock, lock, strlen(lock) + 1);
    if (!open_waiter(w, x, err, errlen) && !w->refused)
        return x->my ? 0 : REIGN_ECONNLOSS; /* opened again later */
    return w->refused ? REIGN_EBACKEND : 0;
}

int reign__mywake_fd(const reign__mywake *w)
{
    return w && w->n ? w->epfd : -1;
}

/* The answer of a wait: > 0 if it tells the followers to read.  Sends the next wait. */
static int answered(reign__mywake *w, waiter *x, MYSQL_RES *res)
{
    MYSQL_ROW row = res ? w->io.fetch_row(res) : NULL;
    int v = row && row[0] ? atoi(row[0]) : -1;
    if (res)
        w->io.free_result(res);
    if (v < 0) {
        failed(w, x);
        return 0;
    }
    int tell = 0;
    if (v == 1) { /* the holder let go */
        tell = 1;
        x->telling = true;
        x->sleep_ms = SLEEP_FIRST_MS;
    } else if (v == 2) { /* no holder: slept */
        tell = x->telling;
        x->sleep_ms = x->sleep_ms * 2 > SLEEP_LAST_MS ? SLEEP_LAST_MS : x->sleep_ms * 2;
        if (x->sleep_ms > TELL_MS)
            x->telling = false;
    } else { /* held all along */
        x->telling = false;
        x->sleep_ms = SLEEP_FIRST_MS;
    }
    send_wait(w, x);
    return tell;
}

/* After a call that reads the answer: still out (its socket watched, 0), or the answer. */
static int stored(reign__mywake *w, waiter *x, MYSQL_RES *res)
{
    if (x->status) {
        watch(w, x);
        return 0;
    }
    x->storing = false;
    if (!res) {
        failed(w, x);
        return 0;
    }
    return answered(w, x, res);
}

/* Moves one waiter's call on as far as it goes without blocking (ready: what its socket is
 * ready for; 0 for a call answered at once). */
static int step(reign__mywake *w, waiter *x, int ready)
{
    int tell = 0;
    for (int guard = 0; x->my && guard < 4; guard++, ready = 0) {
        MYSQL_RES *res = NULL;
        if (x->storing) {
            x->status = w->io.store_cont(&res, x->my, ready);
        } else {
            if (x->status) {
                int ret = 0;
                x->status = w->io.query_cont(&ret, x->my, ready);
                if (x->status) {
                    watch(w, x);
                    break;
                }
                if (ret) {
                    failed(w, x);
                    break;
                }
            }
            x->storing = true;
            x->status = w->io.store_start(&res, x->my);
        }
        tell |= stored(w, x, res);
        if (x->status || x->storing)
            break; /* the next wait is out, or this one still is */
    }
    return tell;
}

int reign__mywake_drain(reign__mywake *w)
{
    if (!w || !w->n)
        return 0;
    int tell = 0;
    int64_t now = reign__now_ns();
    for (size_t i = 0; i < w->n; i++) {
        waiter *x = &w->v[i];
        char err[256];
        if (!x->my && now >= x->reopen_ns && !open_waiter(w, x, err, sizeof err) && !x->my &&
            !w->refused)
            reign__log(w->log, REIGN_LOG_DEBUG, "%s: wake-up wait on %s: %s", w->store, x->lock,
                       err);
        if (w->refused)
            return tell;
        if (x->my && !x->status)
            tell |= step(w, x, 0); /* answered at once */
    }
    struct epoll_event ev[REIGN__MYWAKE_MAX];
    int n = epoll_wait(w->epfd, ev, REIGN__MYWAKE_MAX, 0);
    for (int i = 0; i < n && !w->refused; i++) {
        waiter *x = ev[i].data.ptr;
        if (x->my && x->status)
            tell |= step(w, x, status_of(ev[i].events));
    }
    return tell > 0;
}
