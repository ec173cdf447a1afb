/*
 * sessions.h - a client's session in a SQL store: the table "<lease table>_sessions", beside
 * the lease table, one row per live session of a client, what ZooKeeper's session is to its
 * ephemeral nodes.  The rows that live only as long as a session (a group's members,
 * members.h) name it; deleting the session deletes them, in the same transaction.
 *
 *   data_center   as in the lease table
 *   guid          a random id per session (the row's identity)
 *   owner         the client's id, for people
 *   lease_ms      how long the session lives without a beat, as its client counts it
 *   beat          +1 per renewal: the session's version
 *   created_ms, modified_ms   the database's clock, Unix ms, for display only
 *   PRIMARY KEY (data_center, guid)
 *
 * As for a lease (sql.h), no clock decides whether a session lives, neither the database's nor
 * a host's wall clock.  Its client renews it with ONE statement per renewal period, whatever
 * it holds (beat := beat + 1 where guid matches); a renewal that changes no row means the
 * session was reaped.  Anyone who has seen the same beat for a whole lease_ms on its own
 * monotonic clock, counted from the moment its read returned, may reap it: delete the session
 * and its rows in one compare-and-set on that beat.  The client counts its own session lost
 * from the moment it SENT its last successful renewal + lease - margin, which ends before
 * anyone else's count, whatever the clocks say.  A process that dies has its session deleted
 * at once by its guardian (src/guardian/).
 *
 * Everything here blocks (the worker's CALL); private to the library.
 */
#ifndef REIGN_SQL_SESSIONS_H
#define REIGN_SQL_SESSIONS_H

#include "sql.h"

/* Makes or checks the sessions table and the members table (members.h), once per
 * connection.  0 or a negative code (REIGN_EFOREIGN for a table of another layout). */
int reign__sessions_ensure(reign__sqlconn *c, char *err, size_t errlen);

/* Makes session guid of `owner`, living lease_ms without a beat.  0 or a negative code. */
int reign__sessions_open(reign__sqlconn *c, const char *dc, const char *guid, const char *owner,
                         int64_t lease_ms, char *err, size_t errlen);

/* Renews it: 1, 0 (no such session: it was reaped), or a negative code. */
int reign__sessions_beat(reign__sqlconn *c, const char *dc, const char *guid, char *err,
                         size_t errlen);

/*
 * Deletes session guid and every row of it, and tells the watchers: at any beat when `beat`
 * is negative (its client ending it, or its guardian), else only at that beat (a reaper that
 * saw it unchanged for a whole lease).  1 (deleted), 0 (no such session, or it beat since), or
 * a negative code.
 */
int reign__sessions_end(reign__sqlconn *c, const char *dc, const char *guid, int64_t beat,
                        char *err, size_t errlen);

/*
 * Reads what reign__sessions_end() of session guid will write, and changes nothing: the
 * guardian's connection made ahead does this once, so that the server has its per-connection
 * caches of both tables built before a death.  0 or a negative code.
 */
int reign__sessions_warm(reign__sqlconn *c, const char *dc, const char *guid, char *err,
                         size_t errlen);

/*
 * A session keeper's look at the store, in one statement (sql_session.h).  Rows of five
 * columns (kind, session guid, beat, lease_ms, lock_name):
 *   'b'  every session of dc, with its beat and lease (lock_name NULL);
 * and with `rows` (the stores whose notices do not name the row that changed):
 *   'r'  each released lease still under one of the sessions watched[0..n) (its holder let go
 *        of it, or its guardian did), with its term in the beat's column: its followers read
 *        their row;
 *   'c'  how many leases each of the sessions watched[0..n) has, held or released (in the
 *        beat's column; none: no row);
 *   'm'  each held lease of session `own` that carries a designation or the deposed mark: its
 *        holder reads its row (and hands over or lets in).
 * At most REIGN__SESSIONS_LOOK_MAX watched sessions are named; with more, the released leases
 * of every session come back and the caller picks.  0 or a negative code.
 */
#define REIGN__SESSIONS_LOOK_MAX 200
int reign__sessions_look(reign__sqlconn *c, const char *dc, const char *own,
                         const char *const *watched, size_t n, bool rows, reign__sql_rows *out,
                         char *err, size_t errlen);

/* Session guid as it stands: its beat, and whether it is live by the database's clock (its
 * last beat + its lease: for people, reign status, never a decision).  1 (each given one set),
 * 0 (no such session), or a negative code. */
int reign__sessions_state(reign__sqlconn *c, const char *dc, const char *guid, int64_t *beat,
                          bool *live, char *err, size_t errlen);

#endif
