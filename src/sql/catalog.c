/*
 * catalog.c - the elections a SQL store holds, for `reign ls` and `reign rm`
 * (<reign/store.h>): the statements, written once for the three dialects
 * through reign__sql_query().  Run on the SQL client's worker thread.
 *
 * `reign rm` never deletes a lease row: the row carries the election's term, which is its
 * fencing token, and a row made again would start over at term 1 - below tokens that stale
 * leaders and the records fenced by them (the runs of slots) still hold.  It clears the row
 * instead (no holder, no payload, the term kept); listings skip a cleared row, and the next
 * take moves its term on as after any release.
 */
#include <string.h>
#include <time.h>

#include "sessions.h"
#include "sql.h"

int reign__sql_catalog_list(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                            size_t errlen)
{
    reign__sqlv arg = REIGN__SQLV_S(dc);
    return reign__sql_query(c, "listing the elections",
                            "SELECT lock_name FROM {T} WHERE data_center = {1} ORDER BY lock_name",
                            &arg, 1, names, err, errlen);
}

bool reign__sql_lease_removed(const reign__lease *l)
{
    return l->exists && !l->owner[0] && !strcmp(l->owner_guid, REIGN__SQL_REMOVED);
}

int reign__sql_lease_still(reign__sqlconn *c, const char *dc, const char *name, reign__lease *l,
                           int64_t max_wait_ms, char *err, size_t errlen)
{
    if (l->duration_ms <= 0 || l->duration_ms > max_wait_ms)
        return l->duration_ms <= 0; /* released: free; too long: in use as far as we know */
    uint64_t term = l->term, renewals = l->term_duration;
    /* Held in a session: renewed by the session's beat, which must stand still too. */
    char session[sizeof l->session];
    memcpy(session, l->session, sizeof session);
    int64_t beat = 0, beat2 = 0;
    int had = session[0] ? reign__sessions_state(c, dc, session, &beat, NULL, err, errlen) : 0;
    if (had < 0)
        return had;
    /* Counted from just after the first read returned (the caller's), as a follower counts. */
    int64_t until = reign__now_ns() + l->duration_ms * REIGN__NS_PER_MS;
    for (int64_t left; (left = until - reign__now_ns()) > 0;) {
        struct timespec ts = {left / 1000000000, left % 1000000000};
        nanosleep(&ts, NULL);
    }
    reign__lease_clear(l);
    int rc = reign__sql_lease_read(c, dc, name, l, err, errlen);
    if (rc < 0)
        return rc;
    int has = had ? reign__sessions_state(c, dc, session, &beat2, NULL, err, errlen) : 0;
    if (has < 0)
        return has;
    return l->exists && !l->released && l->term == term && l->term_duration == renewals &&
           (!has || beat2 == beat);
}

int reign__sql_catalog_clear(reign__sqlconn *c, const char *dc, const reign__lease *l,
                             const char *name, char *err, size_t errlen)
{
    /* Released and cleared in one statement, at the version read: a renewal, a take or a
     * release since then moved it, and nothing is cleared.  gmt_modified is assigned to
     * itself, so that a table whose column refreshes itself on update (MariaDB's ON UPDATE
     * CURRENT_TIMESTAMP) keeps the time of the row's last write. */
    reign__sqlv args[7] = {REIGN__SQLV_S(dc),
                           REIGN__SQLV_S(name),
                           REIGN__SQLV_I((int64_t)l->term),
                           REIGN__SQLV_S(l->owner),
                           REIGN__SQLV_S(l->owner_guid),
                           REIGN__SQLV_S(REIGN__SQL_REMOVED),
                           REIGN__SQLV_I((int64_t)l->term_duration)};
    return reign__sql_query(c, "removing the election",
                            "UPDATE {T} SET duration = 0, owner = '', owner_guid = {6}, payload = "
                            "NULL, gmt_modified = gmt_modified WHERE data_center = {1} AND "
                            "lock_name = {2} AND term = {3} AND term_duration = {7} AND owner = "
                            "{4} AND COALESCE(owner_guid, '') = {5}",
                            args, 7, NULL, err, errlen);
}
