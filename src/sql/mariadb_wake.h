/*
 * mariadb_wake.h - MariaDB's followers woken when a leader lets go of its lease.
 *
 * MariaDB has no LISTEN/NOTIFY.  What it has is the named lock of a session, GET_LOCK(): held
 * until its session releases it or ends.  So a leader holds a lock named after its lease
 * (reign__sql_channel()) for as long as it leads (taken once its claim's answer is back, or
 * at a renewal if it could not be then; let go after its release, a refused renewal, or a read
 * that shows another term), and a follower waits for that lock on a connection of its own.  When
 * the leader releases the row, or its process dies and the server ends its session, the waiter gets
 * the lock, gives it back in the same statement, and the follower reads the row at once instead of
 * at its next poll.
 *
 * A wake-up only: the lease row decides who leads, followers still poll every period, and a
 * lock that nobody holds, that a stopped process holds for ever, or that the server refuses
 * (Galera refuses GET_LOCK) costs speed, never safety.
 *
 * One statement waits, and sleeps on the server when there is nothing to wait for:
 *
 *   SELECT CASE WHEN IS_FREE_LOCK(l) THEN SLEEP(s) + 2      2: no holder (slept s)
 *               WHEN GET_LOCK(l, t) THEN RELEASE_LOCK(l)     1: the holder let go
 *               ELSE 0 END                                   0: still held after t
 *
 * After a holder let go, the next few waits that find no holder tell as well, at 2, 4, 8 ...
 * 64 ms: a leader killed with SIGKILL frees the lock when the server sees its connection end,
 * a moment before its guardian releases the row, and the followers must read again after
 * that.  Then the sleeps grow to a second and tell nothing: a lock nobody holds (a leader of
 * an older reign, or another program on the same table) costs one statement a second.
 *
 * Each waiter has a connection of its own, driven without blocking (Connector/C's
 * non-blocking calls) from the SQL worker's loop through one epoll descriptor.
 */
#ifndef REIGN_SQL_MARIADB_WAKE_H
#define REIGN_SQL_MARIADB_WAKE_H

#include <mysql.h>
#include <stdint.h>

#include "core.h"

/* Leases one connection waits on at once; a follower of more polls for the rest. */
#define REIGN__MYWAKE_MAX 8
/* Leases one connection holds the lock of at once; a leader of more leads the rest without
 * one, and their followers find them at their polls. */
#define REIGN__MYWAKE_HELD_MAX 64

/* What the locks and waits call: Connector/C's functions (mariadb.c loads the library), and a
 * way to open a connection for waits, with MYSQL_OPT_NONBLOCK set. */
typedef struct reign__mywake_io {
    __typeof__(mysql_real_query) *query;
    __typeof__(mysql_store_result) *store;
    __typeof__(mysql_real_query_start) *query_start;
    __typeof__(mysql_real_query_cont) *query_cont;
    __typeof__(mysql_store_result_start) *store_start;
    __typeof__(mysql_store_result_cont) *store_cont;
    __typeof__(mysql_fetch_row) *fetch_row;
    __typeof__(mysql_free_result) *free_result;
    __typeof__(mysql_get_socket) *get_socket;
    __typeof__(mysql_close) *close;
    __typeof__(mysql_error) *error;
    __typeof__(mysql_errno) *errnum;
    /* A new connection for waiting, or NULL with err set. */
    MYSQL *(*open)(void *ctx, char *err, size_t errlen);
    void *ctx;
} reign__mywake_io;

typedef struct reign__mywake reign__mywake;

/* Whether a URI's parameters ("key=value" lines, NULL: none) say wakeup=poll. */
bool reign__mywake_off(const char *params);

/* "GET_LOCK", the function a leader holds its lock with and a follower waits with.  The
 * tests' REIGN_TEST_MARIADB_WAKE_REFUSE=1 names one the server does not have, so that it
 * refuses them both, as Galera refuses GET_LOCK. */
const char *reign__mywake_get_lock(void);

/* Whether error e of a statement that takes or waits for a lock is the server refusing the
 * lock (then it always will: Galera's "not supported", a function it lacks), rather than the
 * connection's or the statement's trouble (lost, killed, interrupted, a deadlock). */
bool reign__mywake_refusal(unsigned e);

/*
 * The locks of the leases claimed on connection `my` (blocking; its table's name, its count
 * of statements), and the waits of its followers.  NULL: out of memory.  Every function below
 * takes NULL as "nothing to do".
 */
reign__mywake *reign__mywake_new(const reign__mywake_io *io, MYSQL *my, const char *table,
                                 uint64_t *statements, const reign__logger *log, const char *store);
void reign__mywake_free(reign__mywake *w);

/* The leader's side, on `my`.  won(): a claim of (dc, name) won `term`; settle() takes its
 * lock, once the claim's answer is back with its caller (taking it may wait a moment for the
 * followers' waits to give it back).  hold(): the lease is ours at `term`: its lock, waiting
 * `wait` seconds (text) for it.  let_go(): the lease is no longer ours (any: whatever the
 * term; else unless it still is at `term`): its lock goes.  None fails: without a lock the
 * followers poll. */
void reign__mywake_won(reign__mywake *w, const char *dc, const char *name, uint64_t term);
void reign__mywake_settle(reign__mywake *w);
void reign__mywake_hold(reign__mywake *w, const char *dc, const char *name, uint64_t term,
                        const char *wait);
void reign__mywake_let_go(reign__mywake *w, const char *dc, const char *name, bool any,
                          uint64_t term);

/* The followers' side: waits for the lock of (dc, name) from now on.  0, or REIGN_EBUSY
 * (REIGN__MYWAKE_MAX waits already), REIGN_EBACKEND (the server refused the lock: nothing
 * waits any more), or a connection's error (err says it). */
int reign__mywake_listen(reign__mywake *w, const char *dc, const char *name, char *err,
                         size_t errlen);

/* Readable when a wait has news; -1 while nothing waits. */
int reign__mywake_fd(const reign__mywake *w);

/* Moves every wait on: > 0 if a holder let go (followers should read), else 0.  Never an
 * error: a wait whose connection failed is opened again a second later, and a lock the server
 * refuses ends every wait (logged once), so followers poll. */
int reign__mywake_drain(reign__mywake *w);

#endif
