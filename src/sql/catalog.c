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

int reign__sql_catalog_clear(reign__sqlconn *c, const char *dc, const reign__lease *l,
                             const char *name, char *err, size_t errlen)
{
    /* Released first, by the lease protocol's own statement, so that the next candidate takes
     * the row at once, as it would have made a deleted one. */
    reign__lease_claim cl = {.dc = dc,
                             .name = name,
                             .owner = l->owner,
                             .owner_guid = l->owner_guid,
                             .duration_ms = l->duration_ms};
    /* (A row no candidate wrote - no owner, guid or duration - is expired as it is.) */
    bool claimable = l->owner[0] && l->owner_guid[0] && l->duration_ms > 0;
    int rc = claimable ? reign__sql_lease_release(c, &cl, l->term, err, errlen) : 0;
    if (rc < 0)
        return rc;
    /* Then the holder goes, at the term and with the holder read: a take since then moved the
     * term, and nothing is cleared.  gmt_modified is assigned to itself, so that a table whose
     * column refreshes itself on update (MariaDB's ON UPDATE CURRENT_TIMESTAMP) keeps the
     * time the release wrote. */
    reign__sqlv args[6] = {
        REIGN__SQLV_S(dc),       REIGN__SQLV_S(name),          REIGN__SQLV_I((int64_t)l->term),
        REIGN__SQLV_S(l->owner), REIGN__SQLV_S(l->owner_guid), REIGN__SQLV_S(REIGN__SQL_REMOVED)};
    return reign__sql_query(c, "removing the election",
                            "UPDATE {T} SET owner = '', owner_guid = {6}, payload = NULL, "
                            "gmt_modified = gmt_modified WHERE data_center = {1} AND lock_name = "
                            "{2} AND term = {3} AND owner = {4} AND COALESCE(owner_guid, '') = {5}",
                            args, 6, NULL, err, errlen);
}
