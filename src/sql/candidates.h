/*
 * candidates.h - who stands in a SQL lease election: the table "<lease table>_candidates",
 * beside the lease table, with a row per standing of a candidate that asked to be listed
 * (reign_election_options.listed), so that reign_election_query() can name the candidates
 * besides the leader - what ZooKeeper's ephemeral candidate nodes give for free, and what
 * reignd needs to know that another node stands before it cedes, or that the node it fails
 * over to is a standby.
 *
 *   data_center, lock_name   as in the lease table
 *   guid         the standing's owner_guid (a fresh one per standing): the row's identity
 *   owner        the candidate id
 *   payload      the candidate's payload (NULL: none)
 *   joined_ms    when it stood, by the database's clock
 *   expires_ms   when it stops counting, unless refreshed (database clock, Unix ms)
 *   priority     its reign_election_options.priority (added when missing)
 *   designated   the term it leads by a designation, 0 if none: for that leadership it
 *                outranks every candidate, so none preempts it (added when missing)
 *   PRIMARY KEY (data_center, lock_name, guid)
 *
 *   session_guid the client's session (sessions.h) the row was made in, '' if none
 *                (added when missing)
 *
 * A row made in a session counts for as long as that session beats (within its lease, by the
 * database's clock) or its time to live lasts, and is never refreshed: the session's one beat
 * keeps every row of its client, as a ZooKeeper session keeps its ephemeral nodes.  One made
 * outside a session (leases=row, or before the session opened) is refreshed every lease/3 with
 * a time to live of one lease.  A candidate deletes its row when it stops standing; a process
 * that dies has its rows deleted by its guardian (with its leases), or they stop counting a
 * lease later.  Whoever joins deletes the rows of its election that no longer count.
 *
 * Made on first use like the lease table's other side tables; before it exists an election has
 * no listed candidates.  Everything here blocks (the worker's CALL); private to the library.
 */
#ifndef REIGN_SQL_CANDIDATES_H
#define REIGN_SQL_CANDIDATES_H

#include "sql.h"

typedef struct reign__candidate_row {
    char owner[REIGN_ID_MAX + 1];
    char guid[65];
    void *payload; /* allocated; NULL when payload_len is 0 */
    size_t payload_len;
    int64_t joined_ms;
    int priority;
    uint64_t designated;
} reign__candidate_row;

typedef struct reign__candidate_rows {
    reign__candidate_row *v;
    size_t n;
} reign__candidate_rows;

void reign__candidate_rows_free(reign__candidate_rows *r);

/* Lists the candidate (guid) with the payload, for ttl_ms from now and, with a session (NULL or
 * "": none), for as long as that session beats; the election's rows that no longer count go.
 * 0 or a negative code. */
int reign__candidates_join(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                           const char *owner, const void *payload, size_t len, int priority,
                           int64_t ttl_ms, const char *session, char *err, size_t errlen);

/* Gives the row of standing `from` to standing `to` (a candidate that stands again keeps its
 * place: joined_ms, priority), for ttl_ms from now: 1, 0 (no such row: join), or a negative
 * code.  One statement, so the candidate is listed throughout. */
int reign__candidates_rename(reign__sqlconn *c, const char *dc, const char *name, const char *from,
                             const char *to, int64_t ttl_ms, const char *session, char *err,
                             size_t errlen);

/* Records that the standing guid leads term `term` by a designation: 1, 0 (no row), or a
 * negative code. */
int reign__candidates_designated(reign__sqlconn *c, const char *dc, const char *name,
                                 const char *guid, uint64_t term, char *err, size_t errlen);

/* Extends the row of guid to ttl_ms from now: 1, 0 (no such row: join again), or a negative
 * code. */
int reign__candidates_refresh(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                              int64_t ttl_ms, char *err, size_t errlen);

/* Deletes the row of guid (none is no error).  0 or a negative code. */
int reign__candidates_leave(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                            char *err, size_t errlen);

/* Deletes every row of the election, live or expired (none, or no table: no error), for
 * `reign rm` once the election's lease row is gone.  0 or a negative code. */
int reign__candidates_remove(reign__sqlconn *c, const char *dc, const char *name, char *err,
                             size_t errlen);

/* The live rows of the election, in the order they stood (no table: none).  0 or a negative
 * code (REIGN_EFOREIGN for a row reign could not have written). */
int reign__candidates_list(reign__sqlconn *c, const char *dc, const char *name,
                           reign__candidate_rows *out, char *err, size_t errlen);

#endif
