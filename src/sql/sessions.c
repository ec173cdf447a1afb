/*
 * sessions.c - client sessions in a SQL store (sessions.h), written once for the three
 * dialects through reign__sql_query().
 */
#include "sessions.h"

#include <stdlib.h>

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

/* The condition on session_guid of a look: the `named` watched sessions, parameters {3}...;
 * none named (too many to name), any session. */
static void put_watched(reign__buf *b, size_t named)
{
    if (!named) {
        reign__buf_puts(b, "session_guid <> ''");
        return;
    }
    for (size_t i = 0; i < named; i++)
        reign__buf_printf(b, "%s{%zu}", i ? ", " : "session_guid IN (", i + 3);
    reign__buf_puts(b, ")");
}

int reign__sessions_look(reign__sqlconn *c, const char *dc, const char *own,
                         const char *const *watched, size_t n, bool rows, reign__sql_rows *out,
                         char *err, size_t errlen)
{
    int rc = reign__sessions_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[2 + REIGN__SESSIONS_LOOK_MAX];
    args[0] = REIGN__SQLV_S(dc);
    args[1] = REIGN__SQLV_S(own ? own : "");
    size_t named = n <= REIGN__SESSIONS_LOOK_MAX ? n : 0;
    for (size_t i = 0; i < named; i++)
        args[2 + i] = REIGN__SQLV_S(watched[i]);
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "SELECT 'b', guid, beat, lease_ms, NULL FROM {S} WHERE data_center = {1}");
    if (rows && n) {
        /* Released under a watched session: the take that follows writes its own session, so
         * a row comes back only until someone takes it. */
        reign__buf_puts(&b,
                        " UNION ALL SELECT 'r', session_guid, term, 0, lock_name FROM {T} WHERE "
                        "data_center = {1} AND duration <= 0 AND ");
        put_watched(&b, named);
        /* How many rows each still has: a take away from it (of a row released between two
         * looks, or by an operator) changes the count, and its followers read again. */
        reign__buf_puts(&b, " UNION ALL SELECT 'c', session_guid, COUNT(*), 0, NULL FROM {T} WHERE "
                            "data_center = {1} AND ");
        put_watched(&b, named);
        reign__buf_puts(&b, " GROUP BY session_guid");
    }
    if (rows && own && *own)
        reign__buf_puts(&b, " UNION ALL SELECT 'm', session_guid, 0, 0, lock_name FROM {T} WHERE "
                            "data_center = {1} AND session_guid = {2} AND duration > 0 AND "
                            "(owner_guid LIKE '>%' OR owner_guid = '" REIGN__SQL_DEPOSED "')");
    if (b.oom) {
        reign__buf_free(&b);
        return REIGN_ENOMEM;
    }
    rc = reign__sql_query(c, "looking at the sessions", b.data, args, 2 + named, out, err, errlen);
    reign__buf_free(&b);
    return rc < 0 ? rc : 0;
}

int reign__sessions_state(reign__sqlconn *c, const char *dc, const char *guid, int64_t *beat,
                          bool *live, char *err, size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(guid)};
    reign__sql_rows rows;
    int rc = reign__sql_query(c, "reading a session",
                              "SELECT beat, CASE WHEN {NOW} < modified_ms + lease_ms THEN 1 ELSE 0 "
                              "END FROM {S} WHERE data_center = {1} AND guid = {2}",
                              args, 2, &rows, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* no sessions table: no session */
    if (rc < 0)
        return rc;
    const char *b = reign__sql_cell(&rows, 0, 0), *l = reign__sql_cell(&rows, 0, 1);
    if (b && beat)
        *beat = strtoll(b, NULL, 10);
    if (live)
        *live = l && l[0] == '1';
    reign__sql_rows_free(&rows);
    return b != NULL;
}
