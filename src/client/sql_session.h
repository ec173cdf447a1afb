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
    reign__sql_session_user *next, *prev; /* the keeper's */
    /* A session is up (its guid; a new one after a loss), or was lost (NULL).  May join or
     * leave users, this one included. */
    void (*on_session)(reign__sql_session_user *u, const char *guid);
    /* The guids of the session's registrations that exist, one a row (see above). */
    void (*on_rows)(reign__sql_session_user *u, const reign__sql_rows *guids);
    /* No session can be made, for a reason retrying cannot fix (a sessions or members table
     * of a foreign layout: REIGN_EFOREIGN); msg names it.  The next user to join tries again. */
    void (*on_fail)(reign__sql_session_user *u, int err, const char *msg);
    /* May be NULL.  Where the store's notices do not name rows (SQLite, MariaDB): a lease of
     * the session, `name`, carries a designation or the deposed mark (one call per look while
     * it does; the user whose lease it is reads its row). */
    void (*on_marked)(reign__sql_session_user *u, const char *name);
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

/*
 * Leases held in a session (docs/sql-leases.md, "Leases in the session").  A follower of a
 * lease that another client's session holds watches that session here rather than the lease
 * row: the keeper looks at every watched session with one statement per poll period, whatever
 * the number of leases and watchers (reign__sessions_look()), and calls wake():
 *   - when the session is gone (ended, reaped, deleted by a guardian): what it held is free;
 *   - when it has seen the same beat for a whole lease of that session on its own monotonic
 *     clock, counted from the return of the look that first showed it: it reaps the session
 *     (a compare-and-set on that beat) and then wakes its watchers;
 *   - where notices do not name rows (SQLite, MariaDB): when a lease named `name` under the
 *     session is released.
 * A session that the follower's read showed and that a later look does not is gone for good:
 * a session's guid is drawn once, and its row is made before anything is held under it.
 * Loop thread only.  The keeper keeps w until unwatched; wake may unwatch (and free) w, and no
 * other watch.
 */
typedef struct reign__sql_session_watch reign__sql_session_watch;
struct reign__sql_session_watch {
    reign__sql_session_watch *next, *prev; /* the keeper's */
    void *entry;                           /* the keeper's: the session watched, NULL: none */
    const char *name;                      /* the lease's name (kept by the caller) */
    uint64_t released;                     /* set before a wake: the term released, 0: gone */
    void (*wake)(reign__sql_session_watch *w);
};
/* Watches session guid (unwatching whatever w watched before).  0 or REIGN_ENOMEM. */
int reign__sql_session_follow(reign_client *c, reign__sql_session_watch *w, const char *guid);
/* NULL-safe; a no-op when w watches nothing. */
void reign__sql_session_unfollow(reign_client *c, reign__sql_session_watch *w);
/* A user counts itself in (+1) while it leads on a lease held in the session, and out (-1):
 * where notices do not name rows, the keeper then looks for designations and deposals. */
void reign__sql_session_hold(reign_client *c, int delta);

#endif
