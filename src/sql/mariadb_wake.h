/*
 * mariadb_wake.h - MariaDB's followers woken when a leader lets go of its lease.
 *
 * MariaDB has no LISTEN/NOTIFY.  What it has is the named lock of a session, GET_LOCK(): held
 * until its session releases it or ends.  So a leader holds a lock named after its lease for as
 * long as it leads (mariadb.c: taken after a claim, let go after a release, a lost renewal, or
 * a read that shows the row is no longer its own), and a follower waits for that lock on a
 * connection of its own.  When the leader releases the row, or its process dies and the
 * server ends its session, the waiter gets the lock, gives it back in the same statement, and
 * the follower reads the row at once instead of at its next poll.
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

/* What the waiters call: Connector/C's functions (mariadb.c loads the library), and a way to
 * open a connection with MYSQL_OPT_NONBLOCK set. */
typedef struct reign__mywake_io {
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

/* NULL: out of memory (or no epoll descriptor). */
reign__mywake *reign__mywake_new(const reign__mywake_io *io, const reign__logger *log,
                                 const char *store);
void reign__mywake_free(reign__mywake *w);

/* Waits for `lock` (a name of [A-Za-z0-9_], under 64 characters) from now on.  0, or
 * REIGN_EBUSY (REIGN__MYWAKE_MAX waits already), REIGN_EBACKEND (the server refused the lock
 * before: nothing waits any more), or a connection's error (err says it). */
int reign__mywake_arm(reign__mywake *w, const char *lock, char *err, size_t errlen);

/* Whether the server refused the lock to a wait (then nothing waits any more). */
bool reign__mywake_refused(const reign__mywake *w);

/* Readable when a wait has news; -1 while nothing waits. */
int reign__mywake_fd(const reign__mywake *w);

/* Moves every wait on: > 0 if a holder let go (followers should read), else 0.  Never an
 * error: a wait whose connection failed is opened again a second later, and a lock the server
 * refuses ends every wait (logged once), so followers poll. */
int reign__mywake_drain(reign__mywake *w);

#endif
