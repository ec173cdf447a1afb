/*
 * members.h - the members of reign's groups (<reign/group.h>) in a SQL store: the table
 * "<lease table>_members", one row per registration, each living as long as the session it
 * names (sessions.h).
 *
 *   data_center   as in the lease table
 *   group_name    the group (<reign/group.h>'s names)
 *   guid          the registration's random id: a register retried after its answer was lost
 *                 finds its own row instead of standing twice.  The row whose guid is '' is
 *                 the group's own: it says the group exists and counts its registrations
 *   seq           registration order in the group (the group's row: the last one given)
 *   member_id     the member's id
 *   session_guid  the session the registration lives in
 *   payload       the member's payload (NULL: none)
 *   version       0 when registered, +1 per new payload
 *   joined_ms     the database's clock, Unix ms, for display only
 *   PRIMARY KEY (data_center, group_name, guid)
 *
 * A registration is one transaction: the session's beat goes up first (which proves it lives
 * and locks its row, so a reaper's compare-and-set on the beat cannot delete the session
 * under it), then the group's row is made if missing and its seq goes up (its lock orders the
 * registrations of a group), then the member's row is written.  Only a member whose session
 * row exists is a member; `reign rm` of a group deletes its rows, the group's with them, so
 * that its sequence starts again, as a ZooKeeper group node deleted and made again.
 *
 * Every write tells the watchers: PostgreSQL, a NOTIFY of REIGN__MEMBERS_LISTEN in the write's
 * transaction; SQLite, the file's change; MariaDB, nothing (watchers poll).
 *
 * Everything here blocks (the worker's CALL); private to the library.
 */
#ifndef REIGN_SQL_MEMBERS_H
#define REIGN_SQL_MEMBERS_H

#include <reign/limits.h>

#include "sql.h"

/* The name watchers listen on (reign__sql_listen()) for every group of a data center. */
#define REIGN__MEMBERS_LISTEN "reign/members"

typedef struct reign__member_row {
    char guid[65];
    uint64_t seq;
    char *id;   /* allocated */
    void *data; /* allocated; NULL when data_len is 0 */
    size_t data_len;
    int64_t version, joined_ms;
    char session[65];
    int64_t beat, lease_ms; /* the session's, as read with the member */
} reign__member_row;

typedef struct reign__member_rows {
    bool group_exists;
    reign__member_row *v; /* by seq */
    size_t n;
    /* The rows skipped as no registration reign could have written, and ("" when none) a line
     * naming the store, the table and what the first of them holds, never its payload. */
    size_t n_foreign;
    char foreign[448];
} reign__member_rows;

void reign__member_rows_free(reign__member_rows *r);

/* Makes or checks the members table (once per connection).  0 or a negative code. */
int reign__members_ensure(reign__sqlconn *c, char *err, size_t errlen);
/* Checks it only, if there is one: 0 (none, or usable) or REIGN_EFOREIGN, naming it. */
int reign__members_check(reign__sqlconn *c, char *err, size_t errlen);

/*
 * Registers member `id` with a payload in `group`, in session `session`, as registration
 * `guid` (found as it is if it was written already).  1 and *seq, 0 (no such session: it was
 * reaped), or a negative code.
 */
int reign__members_register(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                            const char *id, const char *session, const void *data, size_t len,
                            uint64_t *seq, char *err, size_t errlen);

/* A new payload for registration guid: 1, 0 (no such registration), or a negative code. */
int reign__members_set_data(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                            const void *data, size_t len, char *err, size_t errlen);

/* Deletes registration guid (none is no error).  0 or a negative code. */
int reign__members_leave(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                         char *err, size_t errlen);

/*
 * The registrations of `group` by seq, each with its session's beat (a registration whose
 * session row is gone is none), and whether the group exists.  A row reign could not have
 * written (an id that is no member id, numbers out of range, an oversized payload) is no
 * registration: skipped and counted in out->n_foreign, as a ZooKeeper group's child that is no
 * member's node, so that it never hides the members beside it.  0 or a negative code
 * (REIGN_EFOREIGN for a members table of a foreign layout, naming it).
 */
int reign__members_read(reign__sqlconn *c, const char *dc, const char *group,
                        reign__member_rows *out, char *err, size_t errlen);

/* The guids of the registrations of session `session`, one a row (a foreign row's among them:
 * each caller looks for its own guid, so one more is harmless).  0 or a negative code. */
int reign__members_of_session(reign__sqlconn *c, const char *dc, const char *session,
                              reign__sql_rows *guids, char *err, size_t errlen);

/* The groups of data center dc, sorted, one a row (no table: none), for `reign ls`. */
int reign__members_groups(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                          size_t errlen);

/* Deletes group `name`, for `reign rm`, if no member of a live session stands in it (the rows
 * of dead sessions go with it): 1, 0 (no such group), REIGN_EBUSY, or a negative code. */
int reign__members_remove_group(reign__sqlconn *c, const char *dc, const char *name, char *err,
                                size_t errlen);
/* The same inside a transaction the caller opened (and commits, or rolls back on anything but
 * 1), with the others of that transaction: `reign rm` of a task queue drops its workers' group
 * "tasks.Q" with its tasks.  The group's row stays locked to the end of the transaction. */
int reign__members_drop_group(reign__sqlconn *c, const char *dc, const char *name, char *err,
                              size_t errlen);

#endif
