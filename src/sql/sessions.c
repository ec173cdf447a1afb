/*
 * sessions.c - client sessions in a SQL store (sessions.h), written once for the three
 * dialects through reign__sql_query().
 */
#include "sessions.h"

#include "dialect.h"
#include "layout.h"
#include "members.h"
#include "side.h"

static const char *const required[] = {REIGN__SESSIONS_REQUIRED_COLUMNS};

int reign__sessions_ensure(reign__sqlconn *c, char *err, size_t errlen)
{
    /* The members table first: one of a foreign layout is refused before anything is made. */
    int rc = reign__members_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    rc = reign__sql_side_ensure(c, REIGN__SQL_SESSIONS_SUFFIX, "sessions", required,
                                sizeof required / sizeof required[0],
                                "CREATE TABLE IF NOT EXISTS {S} ("
                                "data_center varchar(128) NOT NULL, "
                                "guid varchar(64) NOT NULL, "
                                "owner varchar(512) NOT NULL, "
                                "lease_ms bigint NOT NULL, "
                                "beat bigint NOT NULL, "
                                "created_ms bigint NOT NULL, "
                                "modified_ms bigint NOT NULL, "
                                "PRIMARY KEY (data_center, guid))"
                                "{TABLE_OPTIONS}",
                                &c->sessions_ready, err, errlen);
    return rc < 0 ? rc : 0;
}

int reign__sessions_open(reign__sqlconn *c, const char *dc, const char *guid, const char *owner,
                         int64_t lease_ms, char *err, size_t errlen)
{
    int rc = reign__sessions_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(guid), REIGN__SQLV_S(owner),
                           REIGN__SQLV_I(lease_ms)};
    rc = reign__sql_query(c, "opening a session",
                          "INSERT INTO {S} (data_center, guid, owner, lease_ms, beat, created_ms, "
                          "modified_ms) VALUES ({1}, {2}, {3}, {4}, 0, {NOW}, {NOW})",
                          args, 4, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

int reign__sessions_beat(reign__sqlconn *c, const char *dc, const char *guid, char *err,
                         size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(guid)};
    int rc = reign__sql_query(c, "renewing a session",
                              "UPDATE {S} SET beat = beat + 1, modified_ms = {NOW} WHERE "
                              "data_center = {1} AND guid = {2}",
                              args, 2, NULL, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* the table was dropped: so was the session */
    return rc < 0 ? rc : rc > 0;
}

int reign__sessions_end(reign__sqlconn *c, const char *dc, const char *guid, int64_t beat,
                        char *err, size_t errlen)
{
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(guid), REIGN__SQLV_I(beat)};
    int rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen);
    if (rc < 0)
        return rc;
    /* The session first: a registration under way locks its row (it beats it), so either it
     * commits first and the beat moved (a reaper deletes nothing), or it finds no session. */
    int n = reign__sql_query(c, "ending a session",
                             beat < 0 ? "DELETE FROM {S} WHERE data_center = {1} AND guid = {2}"
                                      : "DELETE FROM {S} WHERE data_center = {1} AND guid = {2} "
                                        "AND beat = {3}",
                             args, beat < 0 ? 2 : 3, NULL, err, errlen);
    rc = n;
    if (rc >= 0 && (n > 0 || beat < 0))
        rc = reign__sql_query(c, "deleting a session's members",
                              "DELETE FROM {M} WHERE data_center = {1} AND session_guid = {2}",
                              args, 2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_side_commit(c, dc, REIGN__MEMBERS_LISTEN, err, errlen);
    else
        reign__sql_rollback(c);
    if (rc < 0)
        return rc == REIGN_ENOENT ? 0 : rc; /* no tables: no session */
    return n > 0;
}

int reign__sessions_warm(reign__sqlconn *c, const char *dc, const char *guid, char *err,
                         size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(guid)};
    int rc = reign__sql_query(c, "reading a session",
                              "SELECT beat FROM {S} WHERE data_center = {1} AND guid = {2}", args,
                              2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_query(c, "reading a session's members",
                              "SELECT seq FROM {M} WHERE data_center = {1} AND session_guid = {2}",
                              args, 2, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}
