/*
 * candidates.c - the listed candidates of SQL lease elections (candidates.h), written once for
 * the three dialects through reign__sql_query().  No statement here decides who leads: the
 * lease row alone does.  A row only says "this one stands", for those who ask.
 */
#include "candidates.h"

#include <string.h>

#include "dialect.h"
#include "layout.h"
#include "sessions.h"

/* Whether a row counts: its time to live not over, or its standing's session alive - beating,
 * by the database's clock, within its lease (a row made in a session is not refreshed: the
 * session's beat keeps it, as a ZooKeeper session keeps its ephemeral nodes). */
#define LISTED                                                                                     \
    "({C}.expires_ms > {NOW} OR ({C}.session_guid <> '' AND EXISTS (SELECT 1 FROM {S} s WHERE "    \
    "s.data_center = {C}.data_center AND s.guid = {C}.session_guid AND s.modified_ms + "           \
    "s.lease_ms > {NOW})))"

void reign__candidate_rows_free(reign__candidate_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        reign__free(r->v[i].payload);
    reign__free(r->v);
    memset(r, 0, sizeof *r);
}

static const char *const required[] = {REIGN__CANDIDATES_REQUIRED_COLUMNS};

/* Columns a table made by an older reign lacks: added when missing, as the lease table's. */
static const char *const added[][2] = {
    {"priority", "ALTER TABLE {C} ADD COLUMN priority int NOT NULL DEFAULT 0"},
    {"designated", "ALTER TABLE {C} ADD COLUMN designated bigint NOT NULL DEFAULT 0"},
    {"session_guid", "ALTER TABLE {C} ADD COLUMN session_guid varchar(64) NOT NULL DEFAULT ''"},
};

/* Makes or checks the table (once per connection), and the sessions table its rows name. */
static int ensure(reign__sqlconn *c, char *err, size_t errlen)
{
    if (c->candidates_ready)
        return 0;
    int sr = reign__sessions_ensure(c, err, errlen);
    if (sr < 0)
        return sr;
    for (int attempt = 0;; attempt++) {
        reign__sql_rows cols;
        int rc = reign__sql_side_columns(c, REIGN__SQL_CANDIDATES_SUFFIX, &cols, err, errlen);
        if (rc < 0)
            return rc;
        bool missing = cols.n_rows == 0;
        const char *lacks = NULL;
        for (size_t i = 0; !missing && !lacks && i < sizeof required / sizeof required[0]; i++)
            if (!reign__sql_has_column(&cols, required[i]))
                lacks = required[i];
        const char *const *add = NULL;
        for (size_t i = 0; !missing && !add && i < sizeof added / sizeof added[0]; i++)
            if (!reign__sql_has_column(&cols, added[i][0]))
                add = added[i];
        reign__sql_rows_free(&cols);
        if (lacks) {
            char name[REIGN__SQL_TABLE_MAX + 16];
            reign__sql_side_table(c, REIGN__SQL_CANDIDATES_SUFFIX, name, sizeof name, NULL, 0);
            return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                  "table %s has no column %s: not a candidates table reign can "
                                  "use",
                                  name, lacks);
        }
        if (add) {
            /* Another process may add it at the same moment: look again, a few times. */
            rc = reign__sql_query(c, "adding a column to the candidates table", add[1], NULL, 0,
                                  NULL, err, errlen);
            if (rc < 0 && attempt > 4)
                return rc;
            if (rc >= 0)
                reign__log(c->log, REIGN_LOG_INFO, "%s: added column %s to the candidates table",
                           c->store, add[0]);
            continue;
        }
        if (!missing)
            break;
        rc = reign__sql_query(c, "creating the candidates table",
                              "CREATE TABLE IF NOT EXISTS {C} ("
                              "data_center varchar(128) NOT NULL, "
                              "lock_name varchar(200) NOT NULL, "
                              "guid varchar(64) NOT NULL, "
                              "owner varchar(512) NOT NULL, "
                              "payload {BLOB}, "
                              "joined_ms bigint NOT NULL, "
                              "expires_ms bigint NOT NULL, "
                              "priority int NOT NULL DEFAULT 0, "
                              "designated bigint NOT NULL DEFAULT 0, "
                              "session_guid varchar(64) NOT NULL DEFAULT '', "
                              "PRIMARY KEY (data_center, lock_name, guid))"
                              "{TABLE_OPTIONS}",
                              NULL, 0, NULL, err, errlen);
        /* Failed: another process may have made it at the same moment; look again, once. */
        if (rc < 0 && attempt > 4)
            return rc;
        if (rc >= 0)
            reign__log(c->log, REIGN_LOG_INFO, "%s: made the candidates table of %s", c->store,
                       c->table);
    }
    c->candidates_ready = true;
    return 0;
}

int reign__candidates_join(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                           const char *owner, const void *payload, size_t len, int priority,
                           int64_t ttl_ms, const char *session, char *err, size_t errlen)
{
    int rc = ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[8] = {REIGN__SQLV_S(dc),           REIGN__SQLV_S(name),
                           REIGN__SQLV_S(guid),         REIGN__SQLV_S(owner),
                           REIGN__SQLV_B(payload, len), REIGN__SQLV_I(ttl_ms),
                           REIGN__SQLV_I(priority),     REIGN__SQLV_S(session ? session : "")};
    rc = reign__sql_query(c, "forgetting expired candidates",
                          "DELETE FROM {C} WHERE data_center = {1} AND lock_name = {2} AND "
                          "NOT " LISTED,
                          args, 2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_query(c, "listing a candidate",
                              "INSERT INTO {C} (data_center, lock_name, guid, owner, payload, "
                              "joined_ms, expires_ms, priority, session_guid) VALUES ({1}, {2}, "
                              "{3}, {4}, {5}, {NOW}, {NOW} + {6}, {7}, {8}){ON_CONFLICT}",
                              args, 8, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

int reign__candidates_refresh(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                              int64_t ttl_ms, char *err, size_t errlen)
{
    int rc = ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(guid),
                           REIGN__SQLV_I(ttl_ms)};
    rc = reign__sql_query(c, "refreshing a candidate",
                          "UPDATE {C} SET expires_ms = {NOW} + {4} WHERE data_center = {1} AND "
                          "lock_name = {2} AND guid = {3}",
                          args, 4, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__candidates_rename(reign__sqlconn *c, const char *dc, const char *name, const char *from,
                             const char *to, int64_t ttl_ms, const char *session, char *err,
                             size_t errlen)
{
    int rc = ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[6] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name),   REIGN__SQLV_S(from),
                           REIGN__SQLV_S(to), REIGN__SQLV_I(ttl_ms), REIGN__SQLV_S(session)};
    rc = reign__sql_query(c, "renaming a candidate",
                          "UPDATE {C} SET guid = {4}, designated = 0, expires_ms = {NOW} + {5}, "
                          "session_guid = {6} WHERE data_center = {1} AND lock_name = {2} AND "
                          "guid = {3}",
                          args, 6, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__candidates_designated(reign__sqlconn *c, const char *dc, const char *name,
                                 const char *guid, uint64_t term, char *err, size_t errlen)
{
    int rc = ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(guid),
                           REIGN__SQLV_I((int64_t)term)};
    rc = reign__sql_query(c, "marking a candidate designated",
                          "UPDATE {C} SET designated = {4} WHERE data_center = {1} AND lock_name "
                          "= {2} AND guid = {3}",
                          args, 4, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__candidates_leave(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                            char *err, size_t errlen)
{
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(guid)};
    int rc = reign__sql_query(c, "unlisting a candidate",
                              "DELETE FROM {C} WHERE data_center = {1} AND lock_name = {2} AND "
                              "guid = {3}",
                              args, 3, NULL, err, errlen);
    return rc == REIGN_ENOENT || rc >= 0 ? 0 : rc; /* no table: nothing to delete */
}

int reign__candidates_remove(reign__sqlconn *c, const char *dc, const char *name, char *err,
                             size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    int rc = reign__sql_query(c, "removing the candidates",
                              "DELETE FROM {C} WHERE data_center = {1} AND lock_name = {2}", args,
                              2, NULL, err, errlen);
    return rc == REIGN_ENOENT || rc >= 0 ? 0 : rc; /* no table: nothing to delete */
}

int reign__candidates_list(reign__sqlconn *c, const char *dc, const char *name,
                           reign__candidate_rows *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "listing the candidates",
                              "SELECT owner, guid, joined_ms, payload, priority, designated "
                              "FROM {C} WHERE data_center = {1} AND lock_name = {2} AND " LISTED
                              " ORDER BY joined_ms, guid",
                              args, 2, &rs, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* no table yet: nobody listed */
    if (rc < 0)
        return rc;
    if (rs.n_rows && !(out->v = reign__calloc(rs.n_rows, sizeof *out->v)))
        rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < rs.n_rows; i++) {
        reign__candidate_row *row = &out->v[i];
        const char *owner = reign__sql_cell(&rs, i, 0), *guid = reign__sql_cell(&rs, i, 1);
        size_t plen = reign__sql_cell_len(&rs, i, 3);
        int64_t prio = 0, designated = 0;
        if (!owner || !*owner || strlen(owner) > REIGN_ID_MAX || !guid ||
            strlen(guid) >= sizeof row->guid ||
            !reign__sql_parse_i64(reign__sql_cell(&rs, i, 2), &row->joined_ms) ||
            !reign__sql_parse_i64(reign__sql_cell(&rs, i, 4), &prio) || prio < 0 ||
            prio > REIGN_PRIORITY_MAX ||
            !reign__sql_parse_i64(reign__sql_cell(&rs, i, 5), &designated) || designated < 0 ||
            plen > REIGN_DATA_MAX) {
            rc = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                "a row of the candidates table of %s holds what reign did not "
                                "write",
                                c->table);
            break;
        }
        reign__strlcpy(row->owner, owner, sizeof row->owner);
        reign__strlcpy(row->guid, guid, sizeof row->guid);
        if (plen && !(row->payload = reign__memdup(reign__sql_cell(&rs, i, 3), plen))) {
            rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            break;
        }
        row->payload_len = plen;
        row->priority = (int)prio;
        row->designated = (uint64_t)designated;
        out->n++;
    }
    reign__sql_rows_free(&rs);
    if (rc < 0)
        reign__candidate_rows_free(out);
    return rc;
}
