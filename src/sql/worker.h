/*
 * worker.h - a SQL client's worker thread: the blocking lease layer (sql.h)
 * made asynchronous, the way libzookeeper_mt's threads make ZooKeeper
 * asynchronous for zk.h.
 *
 * One thread per client owns one connection.  The loop thread submits
 * requests (a lease statement for one election name); the thread runs them
 * in order, each bounded by the statement timeout, and hands results back
 * through a mutex-protected queue and the client's eventfd.
 * reign__sqlw_dispatch(), on the loop thread, runs the callbacks: no user
 * code and no recipe state ever runs on the worker.
 *
 * The worker also keeps the connection: it connects (and creates or checks
 * the table) at start, reports the connection's state changes, and after a
 * statement that lost the connection or timed out it drops the connection and
 * connects again every retry period; requests meanwhile fail at once with
 * REIGN_ECONNLOSS, so nothing waits on a dead store.  A connection whose
 * store is gone (sql.h's reign__sql_gone(): a SQLite file deleted or
 * replaced, seen by a statement or by the change notice) is a lost session:
 * LOST, then, after the retry period, a new connection to whatever the path
 * names by then, reported as CONNECTED.  Errors that retrying
 * cannot fix (credentials, a missing database, a foreign table) are fatal.
 *
 * While idle it waits on the store's notification descriptor too (sql.h's
 * listen): a change there is handed to the loop as a CHANGED event, so
 * followers read at once instead of at their next poll.
 *
 * Private to the library.
 */
#ifndef REIGN_SQL_WORKER_H
#define REIGN_SQL_WORKER_H

#include "sql.h"

typedef struct reign__sqlw reign__sqlw;

typedef enum reign__sqlw_op {
    REIGN__SQLW_READ = 1,
    REIGN__SQLW_INSERT,
    REIGN__SQLW_TAKE,
    REIGN__SQLW_RENEW,
    REIGN__SQLW_RELEASE, /* and, where the store needs it, NOTIFY */
    REIGN__SQLW_DEPOSE,
    REIGN__SQLW_LISTEN, /* subscribe to changes of the name (kept across reconnects) */
    REIGN__SQLW_CALL    /* a function of the caller's (reign__sqlw_call) */
} reign__sqlw_op;

typedef enum reign__sqlw_state {
    REIGN__SQLW_CONNECTED = 1, /* the first connection (table ready) */
    REIGN__SQLW_SUSPENDED,     /* the connection was lost; reconnecting */
    REIGN__SQLW_RECONNECTED,   /* connected again */
    REIGN__SQLW_LOST,          /* the store is gone (SQLite: the file deleted or replaced):
                                * every lease held is lost; the next connection (to what
                                * the path names then) comes as CONNECTED */
    REIGN__SQLW_FATAL          /* cannot go on (see the message) */
} reign__sqlw_state;

typedef struct reign__sqlw_config {
    reign__sql_target target; /* copied */
    const char *dc;           /* data_center of every row; copied */
    int retry_period_ms;      /* between connection attempts */
    int wake_fd;              /* eventfd the loop polls */
    const reign__logger *log;
    /* Called from dispatch, on the loop thread.  err and msg for SUSPENDED, LOST and FATAL. */
    void (*on_state)(void *arg, reign__sqlw_state st, int err, const char *msg);
    /* A notification may concern some election of this client: `heard` says which (sql.h's
     * reign__sql_heard; borrowed for the call). */
    void (*on_change)(void *arg, const reign__sql_heard *heard);
    void *arg;
} reign__sqlw_config;

typedef struct reign__sqlw_result {
    reign__sqlw_op op;
    int rc;              /* 1 (done) or 0 (compare-and-set did not match), or a negative code */
    uint64_t term;       /* TAKE: the new term */
    reign__lease *lease; /* READ: the row (borrowed for the callback); NULL if rc < 0 */
    int64_t sent_ns;     /* CLOCK_MONOTONIC just before the statement was sent */
    int64_t done_ns;     /* ... just after its answer came: READ's row was so at or before it */
    const char *err;     /* rc < 0: one line, never a password */
    void *ctx;           /* CALL: the context given (freed after the callback) */
} reign__sqlw_result;

typedef void reign__sqlw_cb(void *owner, void *arg, const reign__sqlw_result *r);

int reign__sqlw_new(reign__sqlw **ret, const reign__sqlw_config *cfg, char *err, size_t errlen);

/*
 * Queues a statement on election `name`.  `cl` gives the claimant (owner,
 * owner_guid, payload, duration; dc and name are filled in) for INSERT,
 * TAKE, RENEW, RELEASE; NULL otherwise.  `term`: expected term for TAKE (with
 * cl->expect_renewals), held term for RENEW, RELEASE, DEPOSE.  Everything is copied.  cb (may be
 * NULL) runs from dispatch with `owner` and `arg`.  0, REIGN_ENOMEM, or
 * REIGN_ECLOSED once closing.
 */
int reign__sqlw_submit(reign__sqlw *w, reign__sqlw_op op, const char *name,
                       const reign__lease_claim *cl, uint64_t term, void *owner, reign__sqlw_cb *cb,
                       void *arg);

/*
 * A CALL: fn runs on the worker thread with the connection and the client's data_center, its
 * return value (1, 0 or a negative code, as the lease statements) becomes the result's rc; it
 * writes what it read into ctx, which the callback finds as r->ctx.  ctx_free (may be NULL)
 * frees ctx after the callback, or when the request is dropped.  fn gets no connection-state
 * handling of its own: a connection lost in it is handled as for any statement.  0,
 * REIGN_ENOMEM or REIGN_ECLOSED (then ctx is not freed: it is still the caller's).
 */
typedef int reign__sqlw_fn(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen);
int reign__sqlw_call(reign__sqlw *w, const char *what, reign__sqlw_fn *fn, void *ctx,
                     void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg);
/* A CALL that may win the lease of `name` (fn returns 1 then): a win is notified on `name`
 * once the answer is back, as a TAKE's, so that observers learn of the new leader. */
int reign__sqlw_call_claim(reign__sqlw *w, const char *name, reign__sqlw_fn *fn, void *ctx,
                           void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg);

/*
 * A call that may run together with others of its kind: the worker takes, with it, the calls
 * of the same `fn` queued right behind it (at most REIGN__SQLW_BATCH_MAX, none from behind
 * another request, so that the order of requests holds) and runs fn once on all their ctxs,
 * say in one transaction.  fn sets rcs[i], the result of call i (1, 0 or a negative code, as
 * reign__sqlw_call()'s fn returns), and returns 0; or a negative code (with err), which
 * becomes the result of every call of the batch.  Each call's callback runs as for
 * reign__sqlw_call(), in the order of the calls.
 */
#define REIGN__SQLW_BATCH_MAX 64
typedef int reign__sqlw_batch_fn(reign__sqlconn *c, const char *dc, void *const *ctxs, int *rcs,
                                 size_t n, char *err, size_t errlen);
int reign__sqlw_call_batch(reign__sqlw *w, const char *what, reign__sqlw_batch_fn *fn, void *ctx,
                           void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg);

/* No callback of `owner` runs after this (queued requests still execute). */
void reign__sqlw_forget(reign__sqlw *w, void *owner);

/* Runs the callbacks and state changes handed back so far (loop thread). */
void reign__sqlw_dispatch(reign__sqlw *w);

/*
 * Between hold and flush (one turn of the client's loop), requests wait in the queue without
 * waking the worker, and flush wakes it once: what the turn asked for goes as one batch where
 * it can (reign__sqlw_call_batch), as ZooKeeper's multis do (zk.h's flush).  Without it, a
 * worker woken by the turn's first request would often take that one alone.  Loop thread.
 */
void reign__sqlw_hold(reign__sqlw *w);
void reign__sqlw_flush(reign__sqlw *w);

/*
 * Lets the worker finish what is queued (a release must still reach the
 * store), without reconnecting, then stops and joins it: at most about one
 * statement timeout per queued request when the store is slow, immediately
 * when it is gone.  Results are still dispatched afterwards.  Idempotent.
 */
void reign__sqlw_close(reign__sqlw *w);

/* Closes if needed and frees; pending callbacks never run.  NULL-safe. */
void reign__sqlw_free(reign__sqlw *w);

/* "sqlite /path", "postgres user@host:port/db": for messages. */
const char *reign__sqlw_store(const reign__sqlw *w);

/* Statements sent so far (for the benchmark's statements per second). */
uint64_t reign__sqlw_statements(const reign__sqlw *w);

/* Whether the store notifies followers of changes: PostgreSQL (NOTIFY) and SQLite (its notice
 * file, sqlite_notices.h) tell of releases, takes and inserts, not of renewals. */
bool reign__sqlw_notifies(const reign__sqlw *w);
/* Whether a notice names the row that changed (a channel per name), so that only its readers
 * need to read. */
bool reign__sqlw_names_changes(const reign__sqlw *w);
/* Whether a lease's followers are woken when its leader lets go (reign__sql_wakes_followers():
 * MariaDB's too, through its leader's lock). */
bool reign__sqlw_wakes_followers(const reign__sqlw *w);

#endif
