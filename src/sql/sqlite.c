/*
 * sqlite.c - the SQLite dialect of the lease layer (dialect.h): one file on
 * one host, shared by every process that campaigns there.
 *
 * Concurrency: the file is in WAL mode (readers never block the writer),
 * and every write runs in BEGIN IMMEDIATE ... COMMIT, which takes the write
 * lock before reading anything: a plain UPDATE would start as a reader and
 * could fail with SQLITE_BUSY_SNAPSHOT when another process committed in
 * between, which no busy handler can wait out.  Waiting for the lock is done
 * by a busy handler bounded by the statement's deadline (the statement
 * timeout), and whatever SQLITE_BUSY still comes back is retried until that
 * deadline, so "database is locked" never reaches the caller: only
 * REIGN_ETIMEDOUT, once the lock was held by others for the whole timeout.
 *
 * Time: the database's clock is this host's, read by SQLite as 'now'
 * (milliseconds, constant within one statement).  Timestamps are stored as
 * text 'YYYY-MM-DD HH:MM:SS.SSS' in UTC, and compared as integer Unix
 * milliseconds computed from julianday(), exact for millisecond values.
 *
 * Notification: the notice file beside the database (sqlite_notices.h),
 * appended to after the commits that concern others, and watched with an
 * inotify descriptor, which also watches the database file for a move.
 *
 * The file itself: a connection holds the file it opened, not its path.
 * Deleted (rm), or replaced (mv of a copy over it, a restore from backup),
 * that file lives on for us alone, and our writes - renewals included -
 * would go on succeeding in it while the others elect a leader in the new
 * file the path now names.  So every call looks first whether the path
 * still names our file (SQLite's SQLITE_FCNTL_HAS_MOVED: one stat()), and
 * every write and read looks again once it is done, so that nothing done in
 * a dead file is ever reported done; an unlink or a rename over the file
 * also changes its link count, which wakes the inotify descriptor, so
 * listeners notice at once.  A moved file makes the connection broken and
 * gone (dialect.h): the worker reports the session lost and opens the path
 * anew.  Closing a connection to a moved file, SQLite neither checkpoints
 * nor deletes "<path>-wal" and "<path>-shm" (they may be the new file's by
 * then); a file moved in while the old -wal stays is paired with that -wal
 * by SQLite, hence docs/sql-leases.md's way to replace one.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "dialect.h"
#include "dl.h"
#include "sqlite_notices.h"

/* The functions of SQLite this dialect calls: through a table that dl.c fills
 * when the first sqlite:// client is made (dl.h). */
#define SQLITE_FUNCTIONS(X, t)                                                                     \
    X(t, sqlite3_bind_blob64)                                                                      \
    X(t, sqlite3_bind_int64)                                                                       \
    X(t, sqlite3_bind_null)                                                                        \
    X(t, sqlite3_bind_parameter_count)                                                             \
    X(t, sqlite3_bind_text)                                                                        \
    X(t, sqlite3_busy_handler)                                                                     \
    X(t, sqlite3_changes)                                                                          \
    X(t, sqlite3_clear_bindings)                                                                   \
    X(t, sqlite3_close_v2)                                                                         \
    X(t, sqlite3_column_blob)                                                                      \
    X(t, sqlite3_column_bytes)                                                                     \
    X(t, sqlite3_column_count)                                                                     \
    X(t, sqlite3_column_int)                                                                       \
    X(t, sqlite3_column_int64)                                                                     \
    X(t, sqlite3_column_text)                                                                      \
    X(t, sqlite3_column_type)                                                                      \
    X(t, sqlite3_errmsg)                                                                           \
    X(t, sqlite3_errstr)                                                                           \
    X(t, sqlite3_exec)                                                                             \
    X(t, sqlite3_extended_result_codes)                                                            \
    X(t, sqlite3_file_control)                                                                     \
    X(t, sqlite3_finalize)                                                                         \
    X(t, sqlite3_get_autocommit)                                                                   \
    X(t, sqlite3_open_v2)                                                                          \
    X(t, sqlite3_prepare_v2)                                                                       \
    X(t, sqlite3_prepare_v3)                                                                       \
    X(t, sqlite3_reset)                                                                            \
    X(t, sqlite3_step)                                                                             \
    X(t, sqlite3_system_errno)                                                                     \
    X(t, sqlite3_total_changes)

REIGN__DL_LIBRARY(lite, SQLITE_FUNCTIONS, reign__sql_sqlite_lib, "sqlite://", "libsqlite3.so.0",
                  "libsqlite3-0", "REIGN_TEST_LIBSQLITE3");

/* The database clock as integer Unix ms ('now' is cut to the millisecond, and the same
 * throughout a statement), and Unix ms of a text timestamp. */
#define NOW_MS      "CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)"
#define MS_OF(c)    "CAST(round((julianday(" c ") - 2440587.5) * 86400000.0) AS INTEGER)"
#define TEXT_OF(ms) "strftime('%Y-%m-%d %H:%M:%f', (" ms ") / 1000.0, 'unixepoch')"
/* The time a write stores: 'now' plus the millisecond it was cut from, so that a lease never
 * looks renewed before it was. */
#define NOW_TEXT TEXT_OF(NOW_MS " + 1")

enum {
    ST_BEGIN,
    ST_COMMIT,
    ST_ROLLBACK,
    ST_READ,
    ST_INSERT,
    ST_TAKE,
    ST_RENEW,
    ST_RELEASE,
    ST_DEPOSE,
    ST_COUNT
};

/*
 * Parameters, by number, the same in every statement: ?1 data_center, ?2 lock_name, ?3 owner,
 * ?4 owner_guid, ?5 payload, ?6 duration, ?7 term, ?8 term_duration, ?9
 * take_released, ?10 session_guid.  {T} is the table name.
 */
static const char *const statement_sql[ST_COUNT] = {
    [ST_BEGIN] = "BEGIN IMMEDIATE",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_READ] = "SELECT owner, owner_guid, payload, term, term_duration, duration, " MS_OF(
        "gmt_create") ", " MS_OF("gmt_modified") ", " NOW_MS ", " NOW_MS
                                                 " >= " MS_OF(
                                                     "gmt_modified") " + duration, session_guid "
                                                                     "FROM \"{T}\" "
                                                                     "WHERE data_center = ?1 AND "
                                                                     "lock_name = ?2",
    [ST_INSERT] =
        "INSERT INTO \"{T}\" (data_center, lock_name, owner, owner_guid, payload, "
        "duration, session_guid, term, term_duration, gmt_create, gmt_modified) VALUES "
        "(?1, ?2, ?3, ?4, ?5, ?6, ?10, 1, 0, " NOW_TEXT ", " NOW_TEXT ") ON CONFLICT DO NOTHING",
    /* duration too: the lease must run by the new holder's length, which its own deadline
     * (demote before the lease can lapse) is computed from.  The version, not a clock: sql.h. */
    [ST_TAKE] =
        "UPDATE \"{T}\" SET owner = ?3, owner_guid = ?4, payload = ?5, duration = ?6, "
        "session_guid = ?10, term = term + 1, term_duration = 0, gmt_modified = " NOW_TEXT
        " WHERE data_center = ?1 AND lock_name = ?2 AND term = ?7 AND ((?9 = 0 AND term_duration "
        "= ?8) OR (?9 = 1 AND duration <= 0 AND owner_guid NOT LIKE '>%'))",
    [ST_RENEW] = "UPDATE \"{T}\" SET term_duration = term_duration + 1, gmt_modified = " NOW_TEXT
                 " WHERE data_center = ?1 AND lock_name = ?2 AND owner = ?3 AND owner_guid = ?4 "
                 "AND term = ?7 AND duration > 0",
    /* duration := 0: released, anyone may take it at once (and expired to the seed's readers). */
    [ST_RELEASE] = "UPDATE \"{T}\" SET duration = 0, gmt_modified = " TEXT_OF(
        NOW_MS) " WHERE data_center = ?1 AND lock_name = ?2 AND owner = ?3 AND owner_guid = ?4 "
                "AND term = ?7",
    /* Only the guid: the version stays, so followers count on from where they were. */
    [ST_DEPOSE] = ("UPDATE \"{T}\" SET owner_guid = ?4 WHERE data_center = ?1 AND lock_name = ?2 "
                   "AND term = ?7 AND duration > 0"),
};

typedef struct sqlite_conn {
    reign__sqlconn base;
    sqlite3 *db;
    char *path;
    sqlite3_stmt *st[ST_COUNT];
    int64_t deadline_ns; /* of the call in progress: the busy handler waits until then */
    int ino_fd;          /* inotify, -1 until listen() */
    int wd_notes;        /* its watch on the notice file, -1 if none */
    bool notes_failed;   /* the notice file could not be opened (said once) */
    reign__notices notes;
} sqlite_conn;

/* ---- errors and waiting --------------------------------------------------------------------- */

static bool is_busy(int rc)
{
    return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
}

static int map_error(sqlite_conn *s, int rc, const char *what, char *err, size_t errlen)
{
    reign__sqlconn *c = &s->base;
    const char *msg = s->db ? lite.sqlite3_errmsg(s->db) : lite.sqlite3_errstr(rc);
    int code = REIGN_EBACKEND;
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        /* Only once the deadline passed: the busy handler and busy_retry() waited until then. */
        return reign__sql_err(c, err, errlen, REIGN_ETIMEDOUT,
                              "%s: timed out waiting for other processes to let go of the file",
                              what);
    case SQLITE_NOMEM:
        code = REIGN_ENOMEM;
        break;
    case SQLITE_CANTOPEN: {
        int e = s->db ? lite.sqlite3_system_errno(s->db) : 0;
        code = e == EACCES || e == EPERM || e == EROFS ? REIGN_EACCES : REIGN_ENOENT;
        if (e)
            return reign__sql_err(c, err, errlen, code, "%s: %s: %s", what, msg, strerror(e));
        break;
    }
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        code = REIGN_EACCES;
        break;
    case SQLITE_NOTADB:
        code = REIGN_EFOREIGN;
        break;
    case SQLITE_ERROR:
        if (strstr(msg, "no such table"))
            code = REIGN_ENOENT;
        break;
    }
    return reign__sql_err(c, err, errlen, code, "%s: %s", what, msg);
}

/* What a connection whose file moved reports (and the client logs, naming the path). */
static const char gone_msg[] =
    "the store file was deleted or replaced under us; its leases are gone";

/* Whether the path no longer names the file we opened (deleted, renamed, replaced). */
static bool file_moved(sqlite_conn *s)
{
    int moved = 0;
    if (!s->db ||
        lite.sqlite3_file_control(s->db, "main", SQLITE_FCNTL_HAS_MOVED, &moved) != SQLITE_OK)
        return false;
    return moved != 0;
}

/*
 * Before and after each call: 0 while the path names our file; else the connection is gone -
 * nothing more is read from or written to the dead file, and what was just done in it does
 * not count - and REIGN_ECONNLOSS.
 */
static int check_file(sqlite_conn *s, char *err, size_t errlen)
{
    if (!s->base.gone && !file_moved(s))
        return 0;
    s->base.broken = true;
    s->base.gone = gone_msg;
    return reign__sql_err(&s->base, err, errlen, REIGN_ECONNLOSS, "%s", gone_msg);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
}

/*
 * Called by SQLite while another connection holds a lock we need.  Short sleeps (the locks are
 * held for a statement, a millisecond or so), until the deadline of the call in progress.
 */
static int busy_handler(void *arg, int count)
{
    sqlite_conn *s = arg;
    int left = reign__sql_left_ms(s->deadline_ns);
    if (left <= 0)
        return 0;
    int ms = count < 4 ? 1 : count < 20 ? 2 : 5;
    sleep_ms(ms < left ? ms : left);
    return 1;
}

/* After a SQLITE_BUSY that the busy handler did not wait out: wait a little, if time is left. */
static bool busy_retry(sqlite_conn *s)
{
    if (reign__sql_left_ms(s->deadline_ns) <= 1)
        return false;
    sleep_ms(1);
    return true;
}

/* ---- statements ----------------------------------------------------------------------------- */

static int prepare(sqlite_conn *s, int which, sqlite3_stmt **out, char *err, size_t errlen)
{
    if (!s->st[which]) {
        char *sql = reign__sql_splice(statement_sql[which], s->base.table);
        if (!sql)
            return reign__sql_err(&s->base, err, errlen, REIGN_ENOMEM, "out of memory");
        int rc;
        while ((rc = lite.sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
                                             &s->st[which], NULL)) != SQLITE_OK) {
            if (!is_busy(rc) || !busy_retry(s)) {
                reign__free(sql);
                return map_error(s, rc, "prepare", err, errlen);
            }
        }
        reign__free(sql);
    }
    lite.sqlite3_reset(s->st[which]);
    lite.sqlite3_clear_bindings(s->st[which]);
    *out = s->st[which];
    return 0;
}

/* Steps a statement that returns no rows; SQLITE_DONE or the error (statement reset). */
static int step_done(sqlite3_stmt *st)
{
    int rc = lite.sqlite3_step(st);
    while (rc == SQLITE_ROW)
        rc = lite.sqlite3_step(st);
    lite.sqlite3_reset(st);
    return rc;
}

static int bind_claim(sqlite3_stmt *st, const reign__lease_claim *cl, uint64_t term)
{
    int rc = lite.sqlite3_bind_text(st, 1, cl->dc, -1, SQLITE_STATIC);
    if (!rc)
        rc = lite.sqlite3_bind_text(st, 2, cl->name, -1, SQLITE_STATIC);
    if (!rc)
        rc = lite.sqlite3_bind_text(st, 3, cl->owner, -1, SQLITE_STATIC);
    if (!rc)
        rc = lite.sqlite3_bind_text(st, 4, cl->owner_guid, -1, SQLITE_STATIC);
    /* An empty payload is stored as NULL, as in the other dialects. */
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 5)
        rc = cl->payload_len
                 ? lite.sqlite3_bind_blob64(st, 5, cl->payload, cl->payload_len, SQLITE_STATIC)
                 : lite.sqlite3_bind_null(st, 5);
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 6)
        rc = lite.sqlite3_bind_int64(st, 6, cl->duration_ms);
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 7)
        rc = lite.sqlite3_bind_int64(st, 7, (sqlite3_int64)term);
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 8)
        rc = lite.sqlite3_bind_int64(st, 8, (sqlite3_int64)cl->expect_renewals);
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 9)
        rc = lite.sqlite3_bind_int64(st, 9, cl->take_released);
    if (!rc && lite.sqlite3_bind_parameter_count(st) >= 10)
        rc = lite.sqlite3_bind_text(st, 10, cl->session ? cl->session : "", -1, SQLITE_STATIC);
    return rc;
}

/*
 * One write in BEGIN IMMEDIATE ... COMMIT, retried on SQLITE_BUSY until the deadline.  Returns
 * the number of rows it changed, or a negative code.
 */
static int write_tx(sqlite_conn *s, int which, const reign__lease_claim *cl, uint64_t term,
                    const char *what, char *err, size_t errlen)
{
    sqlite3_stmt *begin, *commit, *rollback, *st;
    int rc = prepare(s, ST_BEGIN, &begin, err, errlen);
    if (!rc)
        rc = prepare(s, ST_COMMIT, &commit, err, errlen);
    if (!rc)
        rc = prepare(s, ST_ROLLBACK, &rollback, err, errlen);
    if (!rc)
        rc = prepare(s, which, &st, err, errlen);
    if (rc)
        return rc;
    if ((rc = bind_claim(st, cl, term)) != SQLITE_OK)
        return map_error(s, rc, what, err, errlen);

    for (;;) {
        rc = step_done(begin);
        if (rc != SQLITE_DONE) {
            if (is_busy(rc) && busy_retry(s))
                continue;
            return map_error(s, rc, what, err, errlen);
        }
        rc = step_done(st);
        int changes = lite.sqlite3_changes(s->db);
        if (rc != SQLITE_DONE) {
            step_done(rollback);
            if (is_busy(rc) && busy_retry(s))
                continue;
            return map_error(s, rc, what, err, errlen);
        }
        /* In WAL mode COMMIT does not wait for readers; retry it all the same if it is busy. */
        while ((rc = step_done(commit)) != SQLITE_DONE && is_busy(rc) && busy_retry(s)) {
        }
        if (rc != SQLITE_DONE) {
            int code = map_error(s, rc, what, err, errlen);
            step_done(rollback);
            return code;
        }
        return changes;
    }
}

/* ---- connection ----------------------------------------------------------------------------- */

/* Runs one statement that may return a row; the first column of the first row into out. */
static int exec_text(sqlite_conn *s, const char *sql, char *out, size_t outlen, char *err,
                     size_t errlen)
{
    for (;;) {
        sqlite3_stmt *st = NULL;
        int rc = lite.sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK) {
            rc = lite.sqlite3_step(st);
            if (rc == SQLITE_ROW && out) {
                const unsigned char *t = lite.sqlite3_column_text(st, 0);
                reign__strlcpy(out, t ? (const char *)t : "", outlen);
            }
            while (rc == SQLITE_ROW)
                rc = lite.sqlite3_step(st);
        }
        lite.sqlite3_finalize(st);
        if (rc == SQLITE_DONE || rc == SQLITE_OK)
            return 0;
        if (is_busy(rc) && busy_retry(s))
            continue;
        return map_error(s, rc, sql, err, errlen);
    }
}

/*
 * SQLite creates the file, never its directory, and says only "unable to open database file":
 * when the directory is what is missing, name it (config.c made sure the path is absolute and
 * names a file).  0 if the directory is there.
 */
static int missing_dir(reign__sqlconn *c, const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    struct stat st;
    if (!slash || slash == path || (size_t)(slash - path) >= sizeof dir)
        return 0;
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    if (stat(dir, &st) == 0)
        return S_ISDIR(st.st_mode)
                   ? 0
                   : reign__sql_err(c, err, errlen, REIGN_ENOENT, "not a directory: %s", dir);
    if (errno == ENOENT || errno == ENOTDIR)
        return reign__sql_err(c, err, errlen, REIGN_ENOENT, "no such directory: %s", dir);
    return 0;
}

static int sq_connect(reign__sqlconn *c, const reign__sql_target *t, char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    s->ino_fd = -1;
    s->wd_notes = -1;
    s->notes.fd = -1;
    if (!(s->path = reign__strdup(t->path)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    int rc = lite.sqlite3_open_v2(
        t->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        if (!s->db)
            return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
        int e = (rc & 0xff) == SQLITE_CANTOPEN ? missing_dir(c, t->path, err, errlen) : 0;
        return e ? e : map_error(s, rc, "open", err, errlen);
    }
    lite.sqlite3_extended_result_codes(s->db, 1);
    struct stat st;
    if (reign__notices_init(&s->notes, t->path, stat(t->path, &st) == 0 ? st.st_mode : 0644) < 0)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    s->deadline_ns = reign__sql_deadline(c->connect_timeout_ms);
    lite.sqlite3_busy_handler(s->db, busy_handler, s);

    /* Switching to WAL takes an exclusive lock for a moment (busy while others read); the
     * mode stays with the file, so usually this only reads it. */
    char mode[32] = "";
    if ((rc = exec_text(s, "PRAGMA journal_mode=WAL", mode, sizeof mode, err, errlen)))
        return rc;
    if (strcmp(mode, "wal"))
        reign__log(c->log, REIGN_LOG_WARN,
                   "%s: journal mode is %s, not wal: writers will block readers, and changes "
                   "may not wake listeners",
                   c->store, mode);
    /* A committed takeover must survive a power cut: a lost one would hand out its term (the
     * fencing token) a second time. */
    return exec_text(s, "PRAGMA synchronous=FULL", NULL, 0, err, errlen);
}

static void sq_close(reign__sqlconn *c)
{
    sqlite_conn *s = (sqlite_conn *)c;
    for (int i = 0; i < ST_COUNT; i++)
        lite.sqlite3_finalize(s->st[i]);
    lite.sqlite3_close_v2(s->db);
    if (s->ino_fd >= 0)
        close(s->ino_fd);
    reign__notices_free(&s->notes);
    reign__free(s->path);
}

/* ---- schema --------------------------------------------------------------------------------- */

/* The kind of a declared type, by SQLite's affinity rules (and what the column is for). */
static reign__sql_coltype kind_of(const char *col, const char *type)
{
    char up[65];
    size_t i;
    for (i = 0; type[i] && i < sizeof up - 1; i++)
        up[i] = (char)(type[i] >= 'a' && type[i] <= 'z' ? type[i] - 32 : type[i]);
    up[i] = '\0';
    bool is_time = !strcasecmp(col, "gmt_create") || !strcasecmp(col, "gmt_modified");
    if (strstr(up, "INT"))
        return REIGN__COL_INT;
    if (strstr(up, "CHAR") || strstr(up, "CLOB") || strstr(up, "TEXT"))
        return is_time ? REIGN__COL_TIME : REIGN__COL_TEXT;
    if (!up[0] || strstr(up, "BLOB"))
        return REIGN__COL_BLOB;
    if (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB"))
        return REIGN__COL_OTHER;
    /* NUMERIC affinity (DATETIME, TIMESTAMP...): our text timestamps are kept as text. */
    return is_time ? REIGN__COL_TIME : REIGN__COL_OTHER;
}

#define MAX_COLS 64

static int read_columns(sqlite_conn *s, reign__sql_column *cols, size_t *n, char *err,
                        size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc = lite.sqlite3_prepare_v2(s->db, "SELECT name, type FROM pragma_table_info(?1)", -1, &st,
                                     NULL);
    if (rc == SQLITE_OK)
        rc = lite.sqlite3_bind_text(st, 1, s->base.table, -1, SQLITE_STATIC);
    *n = 0;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = lite.sqlite3_step(st);
        if (rc != SQLITE_ROW || *n == MAX_COLS)
            continue;
        reign__sql_column *col = &cols[(*n)++];
        const char *name = (const char *)lite.sqlite3_column_text(st, 0);
        const char *type = (const char *)lite.sqlite3_column_text(st, 1);
        reign__strlcpy(col->name, name ? name : "", sizeof col->name);
        reign__strlcpy(col->type, type && *type ? type : "(none)", sizeof col->type);
        col->kind = kind_of(col->name, type ? type : "");
    }
    lite.sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : map_error(s, rc, "reading the table's columns", err, errlen);
}

/* Whether some unique index makes (data_center, lock_name) unique. */
static int has_unique_key(sqlite_conn *s, bool *ok, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc =
        lite.sqlite3_prepare_v2(s->db,
                                "SELECT il.name, ii.name FROM pragma_index_list(?1) AS il LEFT "
                                "JOIN pragma_index_info(il.name) AS ii WHERE il.\"unique\" = 1 "
                                "AND il.partial = 0 ORDER BY il.name",
                                -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = lite.sqlite3_bind_text(st, 1, s->base.table, -1, SQLITE_STATIC);
    char index[128] = "", names[16][65];
    const char *cols[16];
    size_t n = 0;
    *ok = false;
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
        rc = lite.sqlite3_step(st);
        const char *iname = rc == SQLITE_ROW ? (const char *)lite.sqlite3_column_text(st, 0) : NULL;
        if (rc != SQLITE_ROW || !iname || strcmp(iname, index)) {
            if (index[0] && reign__sql_unique_ok(cols, n, true))
                *ok = true;
            n = 0;
            reign__strlcpy(index, iname ? iname : "", sizeof index);
        }
        if (rc == SQLITE_ROW && n < 16) {
            const char *col = (const char *)lite.sqlite3_column_text(st, 1);
            reign__strlcpy(names[n], col ? col : "", sizeof names[n]);
            cols[n] = col ? names[n] : NULL;
            n++;
        }
    }
    lite.sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : map_error(s, rc, "reading the table's indexes", err, errlen);
}

static int exec_ddl(sqlite_conn *s, const char *tmpl, char *err, size_t errlen)
{
    char *sql = reign__sql_splice(tmpl, s->base.table);
    if (!sql)
        return reign__sql_err(&s->base, err, errlen, REIGN_ENOMEM, "out of memory");
    int rc = exec_text(s, sql, NULL, 0, err, errlen);
    reign__free(sql);
    return rc;
}

/* The leases a session holds, read by its keeper (sessions.h). */
#define SESSION_INDEX                                                                              \
    "CREATE INDEX IF NOT EXISTS \"idx_{T}_session\" ON \"{T}\" (data_center, session_guid)"

static int schema_in_tx(sqlite_conn *s, char *err, size_t errlen)
{
    reign__sqlconn *c = &s->base;
    reign__sql_column cols[MAX_COLS];
    size_t n;
    int rc = read_columns(s, cols, &n, err, errlen);
    if (rc)
        return rc;
    if (!n) {
        rc = exec_ddl(s,
                      "CREATE TABLE IF NOT EXISTS \"{T}\" ("
                      "id INTEGER PRIMARY KEY, "
                      "data_center varchar(128) NOT NULL, "
                      "lock_name varchar(1024) NOT NULL, "
                      "owner varchar(512) NOT NULL, "
                      "duration bigint NOT NULL, "
                      "term bigint NOT NULL DEFAULT 0, "
                      "term_duration bigint NOT NULL DEFAULT 0, "
                      "gmt_create text NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), "
                      "gmt_modified text NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now')), "
                      "owner_guid varchar(64) NOT NULL DEFAULT '', "
                      "payload blob, "
                      "session_guid varchar(64) NOT NULL DEFAULT '', "
                      "UNIQUE (data_center, lock_name))",
                      err, errlen);
        if (!rc)
            rc = exec_ddl(s, "CREATE INDEX IF NOT EXISTS \"idx_{T}_owner\" ON \"{T}\" (owner)", err,
                          errlen);
        if (!rc)
            rc = exec_ddl(s, SESSION_INDEX, err, errlen);
        if (!rc)
            reign__log(c->log, REIGN_LOG_INFO, "%s: created table %s", c->store, c->table);
        return rc;
    }
    bool need_guid, need_payload, need_session, unique;
    if ((rc = reign__sql_check_columns(c, cols, n, true, &need_guid, &need_payload, &need_session,
                                       err, errlen)))
        return rc;
    if ((rc = has_unique_key(s, &unique, err, errlen)))
        return rc;
    if (!unique)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "table %s has no unique key on (data_center, lock_name)", c->table);
    if (need_guid &&
        (rc = exec_ddl(s,
                       "ALTER TABLE \"{T}\" ADD COLUMN owner_guid varchar(64) NOT NULL DEFAULT ''",
                       err, errlen)))
        return rc;
    if (need_payload &&
        (rc = exec_ddl(s, "ALTER TABLE \"{T}\" ADD COLUMN payload blob", err, errlen)))
        return rc;
    if (need_session &&
        ((rc = exec_ddl(s,
                        "ALTER TABLE \"{T}\" ADD COLUMN session_guid varchar(64) NOT NULL "
                        "DEFAULT ''",
                        err, errlen)) ||
         (rc = exec_ddl(s, SESSION_INDEX, err, errlen))))
        return rc;
    if (need_guid || need_payload || need_session)
        reign__log(c->log, REIGN_LOG_INFO, "%s: added reign's columns to table %s", c->store,
                   c->table);
    return 0;
}

static int sq_ensure_schema(reign__sqlconn *c, char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    s->deadline_ns = reign__sql_deadline(c->statement_timeout_ms);
    /* One transaction, write lock first: concurrent callers run one after the other, and a
     * refused table is left as it was. */
    int rc = exec_text(s, "BEGIN IMMEDIATE", NULL, 0, err, errlen);
    if (rc)
        return rc;
    rc = schema_in_tx(s, err, errlen);
    if (!rc)
        rc = exec_text(s, "COMMIT", NULL, 0, err, errlen);
    if (rc)
        lite.sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    /* Made in a file that moved meanwhile: the new one has no table yet. */
    return rc ? rc : check_file(s, err, errlen);
}

/* ---- the lease ------------------------------------------------------------------------------ */

static int read_row(sqlite_conn *s, const char *dc, const char *name, reign__lease *out, char *err,
                    size_t errlen)
{
    reign__sqlconn *c = &s->base;
    sqlite3_stmt *st;
    int rc = prepare(s, ST_READ, &st, err, errlen);
    if (rc)
        return rc;
    rc = lite.sqlite3_bind_text(st, 1, dc, -1, SQLITE_STATIC);
    if (!rc)
        rc = lite.sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    if (rc)
        return map_error(s, rc, "read", err, errlen);
    while (is_busy(rc = lite.sqlite3_step(st)) && busy_retry(s))
        lite.sqlite3_reset(st);
    if (rc == SQLITE_DONE) {
        lite.sqlite3_reset(st);
        return 0;
    }
    if (rc != SQLITE_ROW) {
        lite.sqlite3_reset(st);
        return map_error(s, rc, "read", err, errlen);
    }

    const char *owner = (const char *)lite.sqlite3_column_text(st, 0);
    const char *guid = (const char *)lite.sqlite3_column_text(st, 1);
    const char *session = (const char *)lite.sqlite3_column_text(st, 10);
    if (!owner || strlen(owner) > REIGN_ID_MAX || (guid && strlen(guid) > REIGN__SQL_GUID_MAX) ||
        (session && strlen(session) > REIGN__SQL_GUID_MAX) ||
        lite.sqlite3_column_type(st, 7) == SQLITE_NULL ||
        lite.sqlite3_column_type(st, 9) == SQLITE_NULL) {
        lite.sqlite3_reset(st);
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "the row of (%s, %s) in %s has an owner, guid or gmt_modified "
                              "reign cannot use",
                              dc, name, c->table);
    }
    out->exists = true;
    reign__strlcpy(out->owner, owner, sizeof out->owner);
    reign__strlcpy(out->owner_guid, guid ? guid : "", sizeof out->owner_guid);
    reign__strlcpy(out->session, session ? session : "", sizeof out->session);
    int plen = lite.sqlite3_column_bytes(st, 2);
    const void *p = lite.sqlite3_column_blob(st, 2);
    if (p && plen > 0) {
        if (!(out->payload = reign__memdup(p, (size_t)plen))) {
            lite.sqlite3_reset(st);
            return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
        }
        out->payload_len = (size_t)plen;
    }
    out->term = (uint64_t)lite.sqlite3_column_int64(st, 3);
    out->term_duration = (uint64_t)lite.sqlite3_column_int64(st, 4);
    out->duration_ms = lite.sqlite3_column_int64(st, 5);
    out->created_ms = lite.sqlite3_column_int64(st, 6);
    out->modified_ms = lite.sqlite3_column_int64(st, 7);
    out->db_now_ms = lite.sqlite3_column_int64(st, 8);
    out->db_expired = lite.sqlite3_column_int(st, 9) != 0;
    lite.sqlite3_reset(st);
    return 0;
}

/* A plain read: a notice is written after the commit it tells of, so a reader it wakes sees
 * the change without waiting for the write lock. */
static int sq_read(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                   char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    s->deadline_ns = reign__sql_deadline(c->statement_timeout_ms);
    int rc = check_file(s, err, errlen);
    if (!rc)
        rc = read_row(s, dc, name, out, err, errlen);
    /* A row read from a file that moved meanwhile is no one's any more. */
    return rc ? rc : check_file(s, err, errlen);
}

/* One lease statement within the statement timeout: 1 if it changed the row, 0 if not. */
static int lease_write(reign__sqlconn *c, int which, const reign__lease_claim *cl, uint64_t term,
                       const char *what, char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    s->deadline_ns = reign__sql_deadline(c->statement_timeout_ms);
    int rc = check_file(s, err, errlen);
    if (!rc)
        rc = write_tx(s, which, cl, term, what, err, errlen);
    /* Checked again once committed: a renewal that may have gone into a file replaced
     * meanwhile must not extend a leadership that the new file knows nothing of. */
    if (rc >= 0 && check_file(s, err, errlen) < 0)
        return REIGN_ECONNLOSS;
    return rc < 0 ? rc : rc > 0;
}

static int sq_insert(reign__sqlconn *c, const reign__lease_claim *cl, char *err, size_t errlen)
{
    return lease_write(c, ST_INSERT, cl, 0, "insert", err, errlen);
}

static int sq_take(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term,
                   char *err, size_t errlen)
{
    return lease_write(c, ST_TAKE, cl, expected_term, "take", err, errlen);
}

static int sq_renew(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                    size_t errlen)
{
    return lease_write(c, ST_RENEW, cl, term, "renew", err, errlen);
}

static int sq_release(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                      size_t errlen)
{
    return lease_write(c, ST_RELEASE, cl, term, "release", err, errlen);
}

static int sq_depose(reign__sqlconn *c, const char *dc, const char *name, uint64_t term, char *err,
                     size_t errlen)
{
    /* The statement's parameters are numbered as a claim's: ?4 is the guid it writes. */
    const reign__lease_claim cl = {
        .dc = dc, .name = name, .owner = "", .owner_guid = REIGN__SQL_DEPOSED};
    return lease_write(c, ST_DEPOSE, &cl, term, "depose", err, errlen);
}

/* ---- notification --------------------------------------------------------------------------- */

/* The database file: an unlink, or a rename over it, changes its link count (IN_ATTRIB).  Its
 * writes wake nobody: the notice file tells of the changes that concern listeners. */
#define FILE_MASK  (IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB)
#define NOTES_MASK (IN_MODIFY | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB)

/* Watches the notice file (opened by reign__notices_listen()); -1 if it cannot be. */
static void watch_notes(sqlite_conn *s)
{
    s->wd_notes = inotify_add_watch(s->ino_fd, s->notes.path, NOTES_MASK);
}

static int sq_listen(reign__sqlconn *c, const char *dc, const char *const *names, size_t n,
                     char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    if (s->ino_fd < 0) {
        s->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (s->ino_fd < 0)
            return reign__sql_err(c, err, errlen,
                                  -errno == REIGN_ENOMEM ? REIGN_ENOMEM : REIGN_EBACKEND,
                                  "inotify: %s", strerror(errno));
        if (inotify_add_watch(s->ino_fd, s->path, FILE_MASK) < 0) {
            int e = errno;
            close(s->ino_fd);
            s->ino_fd = -1;
            return reign__sql_err(c, err, errlen, e == ENOENT ? REIGN_ENOENT : REIGN_EBACKEND,
                                  "watching the file: %s", strerror(e));
        }
    }
    for (size_t i = 0; i < n; i++) {
        char chan[1][64];
        reign__sql_channel(chan[0], c->table, dc, names[i]);
        char why[256] = "";
        int rc = reign__notices_listen(&s->notes, (const char(*)[64])chan, 1, why, sizeof why);
        if (rc == REIGN_ENOMEM)
            return reign__sql_err(c, err, errlen, rc, "out of memory");
        if (rc < 0 && !s->notes_failed) {
            s->notes_failed = true;
            reign__log(c->log, REIGN_LOG_WARN, "%s: %s: followers here poll", c->store, why);
        }
    }
    if (s->wd_notes < 0 && s->notes.listening)
        watch_notes(s);
    return 0;
}

static int sq_listen_fd(const reign__sqlconn *c)
{
    return ((const sqlite_conn *)c)->ino_fd;
}

static void heard(void *arg, const char *payload)
{
    reign__sql_heard_add(arg, payload);
}

static int sq_drain_notify(reign__sqlconn *c)
{
    sqlite_conn *s = (sqlite_conn *)c;
    if (s->ino_fd < 0)
        return 0;
    bool file = false, notes = false, renew = false;
    for (;;) {
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n = read(s->ino_fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            return REIGN_EBACKEND;
        }
        for (char *p = buf; p < buf + n;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            if (ev->wd == s->wd_notes) {
                notes = true;
                /* An unlink while we hold the file open says IN_ATTRIB (its link count). */
                renew |= (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB)) &&
                         reign__notices_moved(&s->notes);
            } else {
                file = true;
            }
            p += sizeof *ev + ev->len;
        }
    }
    /* The database's path may name another file now. */
    if (file && check_file(s, NULL, 0) < 0)
        return REIGN_ECONNLOSS;
    int any = 0;
    if (renew) {
        /* The notice file was removed or replaced: the one the path names now, from its start;
         * whatever was told meanwhile, we missed. */
        inotify_rm_watch(s->ino_fd, s->wd_notes);
        (void)reign__notices_reopen(&s->notes); /* unreadable: the read below says so */
        watch_notes(s);
        reign__sql_heard_add(c, NULL);
        any = 1;
    }
    if (notes) {
        int r = reign__notices_read(&s->notes, heard, c);
        any |= r != 0; /* unreadable: heard as "something changed" */
    }
    return any;
}

static int sq_notify(reign__sqlconn *c, const char *dc, const char *name, const char *hint,
                     char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    char chan[64];
    reign__sql_channel(chan, c->table, dc, name);
    reign__buf pl;
    int rc = reign__sql_notice_payload(c, &pl, name, hint, err, errlen);
    /* In a transaction: appended at its COMMIT (sq_query()), when readers can see it. */
    if (!rc)
        rc = reign__notices_post(&s->notes, chan, pl.data, !lite.sqlite3_get_autocommit(s->db), err,
                                 errlen);
    reign__buf_free(&pl);
    return rc;
}

/* ---- other statements ------------------------------------------------------------------------ */

static int bind_args(sqlite3_stmt *st, const reign__sqlv *args, size_t n)
{
    int rc = SQLITE_OK;
    /* "?N" names an argument by its number: one the text does not use is not bound. */
    size_t used = (size_t)lite.sqlite3_bind_parameter_count(st);
    for (size_t i = 0; i < n && i < used && rc == SQLITE_OK; i++) {
        int at = (int)i + 1;
        switch (args[i].kind) {
        case REIGN__SQLV_INT:
            rc = lite.sqlite3_bind_int64(st, at, args[i].i);
            break;
        case REIGN__SQLV_TEXT:
            rc = lite.sqlite3_bind_text(st, at, args[i].s, -1, SQLITE_STATIC);
            break;
        case REIGN__SQLV_BLOB:
            /* No bytes: NULL (a NULL pointer binds NULL whatever the length). */
            rc = args[i].len
                     ? lite.sqlite3_bind_blob64(st, at, args[i].s, args[i].len, SQLITE_STATIC)
                     : lite.sqlite3_bind_null(st, at);
            break;
        default:
            rc = lite.sqlite3_bind_null(st, at);
        }
    }
    return rc;
}

static int run_query(sqlite_conn *s, const char *what, const char *sql, const reign__sqlv *args,
                     size_t n_args, reign__sql_rows *rows, char *err, size_t errlen);

/* One statement, retried on SQLITE_BUSY until the statement deadline (a write outside a
 * transaction can meet a busy snapshot, which no busy handler waits out). */
static int sq_query(reign__sqlconn *c, const char *what, const char *sql, const reign__sqlv *args,
                    size_t n_args, reign__sql_rows *rows, char *err, size_t errlen)
{
    sqlite_conn *s = (sqlite_conn *)c;
    int rc = run_query(s, what, sql, args, n_args, rows, err, errlen);
    /* The end of a transaction: its notices go now, or never. */
    if (s->notes.held.len && lite.sqlite3_get_autocommit(s->db)) {
        char nerr[256];
        bool committed = rc >= 0 && !strncasecmp(sql, "COMMIT", 6);
        if (reign__notices_commit(&s->notes, committed, nerr, sizeof nerr) < 0)
            reign__log(c->log, REIGN_LOG_DEBUG, "%s: %s", c->store, nerr);
    }
    return rc;
}

static int run_query(sqlite_conn *s, const char *what, const char *sql, const reign__sqlv *args,
                     size_t n_args, reign__sql_rows *rows, char *err, size_t errlen)
{
    reign__sqlconn *c = &s->base;
    s->deadline_ns = reign__sql_deadline(c->statement_timeout_ms);
    int gone = check_file(s, err, errlen);
    if (gone)
        return gone;
    for (;;) {
        sqlite3_stmt *st = NULL;
        int rc = lite.sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
        if (rc == SQLITE_OK)
            rc = bind_args(st, args, n_args);
        reign__sql_rows got = {0};
        if (rc == SQLITE_OK)
            got.n_cols = (size_t)lite.sqlite3_column_count(st);
        /* What this statement changed (sqlite3_changes() is the last write's, whatever ran
         * since: a BEGIN would return it). */
        int before = lite.sqlite3_total_changes(s->db);
        while (rc == SQLITE_OK || rc == SQLITE_ROW) {
            rc = lite.sqlite3_step(st);
            if (rc != SQLITE_ROW || !rows)
                continue;
            const char *cells[32];
            size_t lens[32];
            if (got.n_cols > 32) {
                lite.sqlite3_finalize(st);
                reign__sql_rows_free(&got);
                return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many columns", what);
            }
            for (size_t i = 0; i < got.n_cols; i++) {
                bool null = lite.sqlite3_column_type(st, (int)i) == SQLITE_NULL;
                cells[i] = null ? NULL : (const char *)lite.sqlite3_column_text(st, (int)i);
                lens[i] = null ? 0 : (size_t)lite.sqlite3_column_bytes(st, (int)i);
            }
            if (reign__sql_rows_add(&got, cells, lens) < 0) {
                lite.sqlite3_finalize(st);
                reign__sql_rows_free(&got);
                return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            }
        }
        int changes = lite.sqlite3_total_changes(s->db) - before;
        if (rc == SQLITE_DONE) {
            lite.sqlite3_finalize(st);
            /* As for the lease: what was read from or written to a dead file does not count. */
            if ((gone = check_file(s, err, errlen))) {
                reign__sql_rows_free(&got);
                return gone;
            }
            if (rows)
                *rows = got;
            return got.n_cols ? 0 : changes;
        }
        reign__sql_rows_free(&got);
        if ((rc & 0xff) == SQLITE_CONSTRAINT && strstr(lite.sqlite3_errmsg(s->db), "UNIQUE")) {
            lite.sqlite3_finalize(st);
            return 0; /* a duplicate key: nothing written */
        }
        int code = is_busy(rc) && busy_retry(s) ? 0 : map_error(s, rc, what, err, errlen);
        lite.sqlite3_finalize(st);
        if (code)
            return code;
    }
}

const reign__sql_dialect reign__sql_sqlite = {
    .name = "sqlite",
    .size = sizeof(sqlite_conn),
    .connect = sq_connect,
    .close = sq_close,
    .ensure_schema = sq_ensure_schema,
    .read = sq_read,
    .insert = sq_insert,
    .take = sq_take,
    .renew = sq_renew,
    .release = sq_release,
    .depose = sq_depose,
    .listen = sq_listen,
    .listen_fd = sq_listen_fd,
    .drain_notify = sq_drain_notify,
    .notify = sq_notify,
    .query = sq_query,
    .now_ms = NOW_MS,
    .begin = "BEGIN IMMEDIATE",
    .notices_named = true,
    .for_update = "",
    .on_conflict = " ON CONFLICT DO NOTHING",
    .id_column = "id INTEGER PRIMARY KEY",
    .placeholder = '?',
    .table_options = "",
    .blob_type = "BLOB",
    .quote = '"',
};
