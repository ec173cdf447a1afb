/*
 * sql_session.h - a SQL client's session (src/sql/sessions.h): what ZooKeeper's session is to
 * its ephemeral nodes, kept by the client for whatever lives only as long as it does (a
 * group's members now; election leases may fold into it later).
 *
 * One per client, made when its first user joins.  The keeper opens a row, renews it with one
 * statement every renew_ms whatever the number of users, and counts it lost, as a lease
 * holder counts its lease, from the moment it SENT its last successful renewal + lease -
 * margin; a renewal that finds no row (it was reaped) loses it at once.  A lost session is
 * told to every user (on_session(NULL)), deleted (best effort: nobody counts on it any more)
 * and replaced by a new one, told too (on_session(guid)).  A closing client deletes its
 * session, its members with it; a dying process's guardian does the same.
 *
 * After the store told of a change (PostgreSQL's NOTIFY, SQLite's file), and once a lease on
 * MariaDB, which tells nothing, the renewal also reads which rows of the session still exist
 * (on_rows): that is how a member deleted by someone else (`reign rm`) learns it.
 *
 * Loop thread only.  Private to the library.
 */
#ifndef REIGN_CLIENT_SQL_SESSION_H
#define REIGN_CLIENT_SQL_SESSION_H

#include "client_internal.h"

typedef struct reign__sql_session_user reign__sql_session_user;
struct reign__sql_session_user {
    reign__sql_session_user *next; /* the keeper's */
    unsigned told;                 /* the keeper's */
    /* A session is up (its guid; a new one after a loss), or was lost (NULL).  May join or
     * leave users, this one included. */
    void (*on_session)(reign__sql_session_user *u, const char *guid);
    /* The guids of the session's registrations that exist, one a row (see above). */
    void (*on_rows)(reign__sql_session_user *u, const reign__sql_rows *guids);
    /* No session can be made, for a reason retrying cannot fix (a sessions or members table
     * of a foreign layout: REIGN_EFOREIGN); msg names it.  The next user to join tries again. */
    void (*on_fail)(reign__sql_session_user *u, int err, const char *msg);
};

/* Joins u (set up by the caller); if a session is up, on_session(guid) is called before this
 * returns, else once one is.  0 or REIGN_ENOMEM. */
int reign__sql_session_join(reign_client *c, reign__sql_session_user *u);
/* No call to u after this.  NULL-safe in u. */
void reign__sql_session_leave(reign_client *c, reign__sql_session_user *u);

/* Until when (CLOCK_MONOTONIC) the client's session cannot be lost on the server, nor
 * anything that lives in it deleted: the send of its last successful open or renewal + lease -
 * margin (a reaper waits a whole lease from the last beat it saw).  0 while no session is up. */
int64_t reign__sql_session_valid_until(reign_client *c);

#endif
