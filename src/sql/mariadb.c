/*
 * mariadb.c - the MariaDB (and MySQL) dialect of the lease layer
 * (dialect.h), through MariaDB Connector/C's prepared statements.
 *
 * Time: the session runs in UTC (time_zone '+00:00'), so NOW(6), the
 * timestamp columns and UNIX_TIMESTAMP() agree without daylight-saving
 * gaps; expiry is TIMESTAMPDIFF(MICROSECOND, gmt_modified, NOW(6)) against
 * duration * 1000 (the seed's TIMESTAMPDIFF(SECOND) would let a lease run a
 * second long or short).
 *
 * The unique key: lock_name is varchar(1024) and utf8mb4 takes up to 4
 * bytes a character, while an InnoDB index key holds at most 3072 bytes.
 * (data_center, lock_name) in full would be 4608 bytes, which MariaDB turns
 * into a hidden hash ("USING HASH") that enforces uniqueness but is never
 * used for lookups: every statement would scan, and lock, the whole table.
 * So the key is (data_center, lock_name(640)) - 512 + 2560 bytes - a prefix
 * that the lookups use.  It is unique over the first 640 characters only:
 * reign's names are at most REIGN_NAME_MAX (200) characters, so for them the
 * key is exact; two foreign names that agree on 640 characters would clash
 * (an insert refused, never two rows for one name).  The columns use
 * utf8mb4_bin, so names compare byte for byte, as everywhere else in reign.
 *
 * Timeouts: Connector/C's connect, read and write timeouts (whole seconds,
 * rounded up) bound every wait on the socket, so a dead or stopped server
 * gives an error, not a hang; the server aborts a statement itself sooner
 * (max_statement_time, innodb_lock_wait_timeout at 80% of the statement
 * timeout), which keeps the connection usable.  Affected rows are counted
 * as rows matched (CLIENT_FOUND_ROWS), so an update that writes the same
 * values still says 1.
 *
 * MariaDB has no notification.  Followers of a lease poll, and are also woken when its leader
 * lets go of it: a named lock held while leading, waited for on connections of their own
 * (mariadb_wake.h; `wakeup=poll` in the URI turns it off).  Other watchers poll.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <errmsg.h>
#include <mysql.h>
#include <mysqld_error.h>

#include "dialect.h"
#include "dl.h"
#include "layout.h"
#include "mariadb_wake.h"

/* The functions of MariaDB Connector/C this dialect calls: through a table that dl.c fills
 * when the first mysql:// client is made (dl.h). mysql_library_init() is
 * mysql_server_init() under another name (a macro of mysql.h). */
#define MARIADB_FUNCTIONS(X, t)                                                                    \
    X(t, mysql_close)                                                                              \
    X(t, mysql_errno)                                                                              \
    X(t, mysql_fetch_row)                                                                          \
    X(t, mysql_free_result)                                                                        \
    X(t, mysql_get_socket)                                                                         \
    X(t, mysql_error)                                                                              \
    X(t, mysql_init)                                                                               \
    X(t, mysql_optionsv)                                                                           \
    X(t, mysql_real_connect)                                                                       \
    X(t, mysql_real_query)                                                                         \
    X(t, mysql_real_query_cont)                                                                    \
    X(t, mysql_real_query_start)                                                                   \
    X(t, mysql_server_init)                                                                        \
    X(t, mysql_stmt_affected_rows)                                                                 \
    X(t, mysql_stmt_bind_param)                                                                    \
    X(t, mysql_stmt_bind_result)                                                                   \
    X(t, mysql_stmt_close)                                                                         \
    X(t, mysql_stmt_errno)                                                                         \
    X(t, mysql_stmt_error)                                                                         \
    X(t, mysql_stmt_execute)                                                                       \
    X(t, mysql_stmt_fetch)                                                                         \
    X(t, mysql_stmt_fetch_column)                                                                  \
    X(t, mysql_stmt_field_count)                                                                   \
    X(t, mysql_stmt_free_result)                                                                   \
    X(t, mysql_stmt_init)                                                                          \
    X(t, mysql_stmt_prepare)                                                                       \
    X(t, mysql_stmt_store_result)                                                                  \
    X(t, mysql_store_result)                                                                       \
    X(t, mysql_store_result_cont)                                                                  \
    X(t, mysql_store_result_start)

REIGN__DL_LIBRARY(maria, MARIADB_FUNCTIONS, reign__sql_mariadb_lib, "mysql://", "libmariadb.so.3",
                  "libmariadb3", "REIGN_TEST_LIBMARIADB");

/* Unix ms of a timestamp column, in a UTC session. */
#define MS_OF(c) "CAST(ROUND(UNIX_TIMESTAMP(" c ") * 1000) AS SIGNED)"
/* NOW(6) is one instant for the whole statement.  Times are written rounded to whole
 * milliseconds up (a lease never looks renewed before it was) or, for a release, down
 * (expired at once to the seed's readers, whose test is now >= gmt_modified + duration).  For
 * people and those readers only: no clock decides (sql.h). */
#define NOW_UP   "(NOW(6) + INTERVAL ((1000 - MICROSECOND(NOW(6)) % 1000) % 1000) MICROSECOND)"
#define NOW_DOWN "(NOW(6) - INTERVAL (MICROSECOND(NOW(6)) % 1000) MICROSECOND)"
#define EXPIRED  "TIMESTAMPDIFF(MICROSECOND, gmt_modified, NOW(6)) >= duration * 1000"

enum { ST_READ, ST_INSERT, ST_TAKE, ST_RENEW, ST_RELEASE, ST_DEPOSE, ST_COUNT };

/* Parameters in order of their '?': see the bind_* call of each statement below. */
static const char *const statement_sql[ST_COUNT] = {
    [ST_READ] = "SELECT owner, owner_guid, payload, term, term_duration, duration, " MS_OF(
        "gmt_create") ", " MS_OF("gmt_modified") ", CAST(FLOOR(UNIX_TIMESTAMP(NOW(6)) * 1000) AS "
                                                 "SIGNED), " EXPIRED
                                                 ", session_guid FROM `{T}` WHERE data_center = ? "
                                                 "AND lock_name = ?",
    /* A duplicate key (the row exists) is an error, read as "0 rows": ON DUPLICATE KEY UPDATE
     * would count 1 for a row it left alone, with CLIENT_FOUND_ROWS. */
    [ST_INSERT] = "INSERT INTO `{T}` (data_center, lock_name, owner, owner_guid, payload, "
                  "duration, session_guid, term, term_duration, gmt_create, gmt_modified) VALUES "
                  "(?, ?, ?, ?, ?, ?, ?, 1, 0, " NOW_UP ", " NOW_UP ")",
    /* duration too: the lease must run by the new holder's length, which its own deadline
     * (demote before the lease can lapse) is computed from.  The version, not a clock: sql.h. */
    [ST_TAKE] =
        "UPDATE `{T}` SET owner = ?, owner_guid = ?, payload = ?, duration = ?, session_guid = ?, "
        "term = term + 1, term_duration = 0, gmt_modified = " NOW_UP " WHERE data_center = ? "
        "AND lock_name = ? AND term = ? AND ((? = 0 AND term_duration = ?) OR (? = 1 AND "
        "duration <= 0 AND owner_guid NOT LIKE '>%'))",
    [ST_RENEW] = "UPDATE `{T}` SET term_duration = term_duration + 1, gmt_modified = " NOW_UP " "
                 "WHERE data_center = ? AND lock_name = ? AND owner = ? AND owner_guid = ? AND "
                 "term = ? AND duration > 0",
    /* duration := 0: released, anyone may take it at once (and expired to the seed's readers). */
    [ST_RELEASE] = "UPDATE `{T}` SET duration = 0, gmt_modified = " NOW_DOWN " WHERE data_center "
                   "= ? AND lock_name = ? AND owner = ? AND owner_guid = ? AND term = ?",
    /* Only the guid.  gmt_modified is assigned its own value because a foreign table may
     * declare it ON UPDATE CURRENT_TIMESTAMP, which would renew the lease: an explicit
     * assignment keeps it.  With CLIENT_FOUND_ROWS a row already deposed still counts 1. */
    [ST_DEPOSE] = ("UPDATE `{T}` SET owner_guid = ?, gmt_modified = gmt_modified WHERE "
                   "data_center = ? AND lock_name = ? AND term = ? AND duration > 0"),
};

typedef struct maria_conn {
    reign__sqlconn base;
    MYSQL *my;
    MYSQL_STMT *st[ST_COUNT];
    unsigned read_timeout_s;
    bool connected;
    const reign__sql_target *target; /* for the waits' connections: the worker's, lives on */
    bool wake_off;                   /* wakeup=poll */
    reign__mywake *wake;             /* the leader's locks and the followers' waits */
} maria_conn;

/* ---- errors --------------------------------------------------------------------------------- */

static bool is_conn_error(unsigned e)
{
    return e == CR_SERVER_GONE_ERROR || e == CR_SERVER_LOST || e == CR_SERVER_LOST_EXTENDED ||
           e == CR_CONNECTION_ERROR || e == CR_CONN_HOST_ERROR || e == CR_ERR_NET_READ ||
           e == CR_ERR_NET_WRITE || e == ER_SERVER_SHUTDOWN || e == ER_CONNECTION_KILLED ||
           e == CR_UNKNOWN_HOST;
}

/*
 * Maps a client or server error number.  `started` is when the statement was sent: a
 * connection that died after the read timeout timed out; one that died sooner was lost.  Both
 * leave the connection unusable, and the statement's outcome unknown.
 */
static int map_error(maria_conn *m, unsigned e, const char *msg, const char *what, int64_t started,
                     char *err, size_t errlen)
{
    reign__sqlconn *c = &m->base;
    int code = REIGN_EBACKEND;
    switch (e) {
    case ER_ACCESS_DENIED_ERROR:
    case 1698: /* ER_ACCESS_DENIED_NO_PASSWORD_ERROR */
        code = REIGN_EAUTH;
        break;
    case ER_DBACCESS_DENIED_ERROR:
    case ER_TABLEACCESS_DENIED_ERROR:
    case 1143: /* ER_COLUMNACCESS_DENIED_ERROR */
    case 1227: /* ER_SPECIFIC_ACCESS_DENIED_ERROR */
    case 1370: /* ER_PROCACCESS_DENIED_ERROR */
        code = REIGN_EACCES;
        break;
    case ER_BAD_DB_ERROR:
    case ER_NO_SUCH_TABLE:
        code = REIGN_ENOENT;
        break;
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_STATEMENT_TIMEOUT:
        code = REIGN_ETIMEDOUT;
        break;
    case ER_CON_COUNT_ERROR:
    case 1203: /* ER_TOO_MANY_USER_CONNECTIONS */
        code = REIGN_ECONNECT;
        break;
    case CR_SSL_CONNECTION_ERROR:
        /* The server's certificate refused, TLS files unreadable, TLS required and not offered:
         * trying again will not help. */
        code = m->connected ? REIGN_ECONNLOSS : REIGN_EAUTH;
        if (m->connected)
            m->base.broken = true;
        break;
    default:
        if (is_conn_error(e)) {
            if (!m->connected) {
                code = REIGN_ECONNECT;
            } else {
                m->base.broken = true;
                int64_t waited_ms = (reign__now_ns() - started) / REIGN__NS_PER_MS;
                if (waited_ms >= (int64_t)m->read_timeout_s * 1000)
                    return reign__sql_err(c, err, errlen, REIGN_ETIMEDOUT,
                                          "%s: no answer within %u s; connection given up (%u)",
                                          what, m->read_timeout_s, e);
                code = REIGN_ECONNLOSS;
            }
        } else if (e >= 2000 && e < 3000 && !m->connected) {
            code = REIGN_ECONNECT; /* other client errors while connecting (TLS, protocol) */
        }
    }
    /* The server words a missing database as a denied one, unless the user has rights that
     * would cover it: say so, rather than send someone hunting for a missing GRANT. */
    const char *hint = e == ER_DBACCESS_DENIED_ERROR && !m->connected
                           ? " (MariaDB says this of a database that does not exist, too)"
                           : "";
    return reign__sql_err(c, err, errlen, code, "%s: %s (%u)%s", what, msg, e, hint);
}

static int stmt_error(maria_conn *m, MYSQL_STMT *st, const char *what, int64_t started, char *err,
                      size_t errlen)
{
    return map_error(m, maria.mysql_stmt_errno(st), maria.mysql_stmt_error(st), what, started, err,
                     errlen);
}

/* ---- statements ----------------------------------------------------------------------------- */

static int prepare_sql(maria_conn *m, const char *tmpl, MYSQL_STMT **out, const char *what,
                       char *err, size_t errlen)
{
    char *sql = reign__sql_splice(tmpl, m->base.table);
    MYSQL_STMT *st = sql ? maria.mysql_stmt_init(m->my) : NULL;
    if (!st) {
        reign__free(sql);
        return reign__sql_err(&m->base, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    int64_t started = reign__now_ns();
    int failed = maria.mysql_stmt_prepare(st, sql, strlen(sql));
    reign__free(sql);
    if (failed) {
        int rc = stmt_error(m, st, what, started, err, errlen);
        maria.mysql_stmt_close(st);
        return rc;
    }
    *out = st;
    return 0;
}

static int prepare(maria_conn *m, int which, MYSQL_STMT **out, const char *what, char *err,
                   size_t errlen)
{
    if (!m->st[which]) {
        int rc = prepare_sql(m, statement_sql[which], &m->st[which], what, err, errlen);
        if (rc)
            return rc;
    }
    *out = m->st[which];
    return 0;
}

static void bind_text(MYSQL_BIND *b, const char *s, unsigned long *len)
{
    *len = (unsigned long)strlen(s);
    b->buffer_type = MYSQL_TYPE_STRING;
    b->buffer = (void *)s;
    b->buffer_length = *len;
    b->length = len;
}

static void bind_int(MYSQL_BIND *b, int64_t *v, bool is_unsigned)
{
    b->buffer_type = MYSQL_TYPE_LONGLONG;
    b->buffer = v;
    b->is_unsigned = is_unsigned;
}

static my_bool true_flag = 1;

static void bind_payload(MYSQL_BIND *b, const reign__lease_claim *cl, unsigned long *len)
{
    b->buffer_type = MYSQL_TYPE_BLOB;
    if (!cl->payload_len) {
        b->is_null = &true_flag; /* stored as NULL, as in the other dialects */
        return;
    }
    *len = (unsigned long)cl->payload_len;
    b->buffer = (void *)cl->payload;
    b->buffer_length = *len;
    b->length = len;
}

/*
 * Executes a write with its parameters bound; returns the rows matched, or a negative code.
 * A deadlock (InnoDB rolled the statement back, so nothing happened) is retried until the
 * statement timeout.
 */
static int exec_write(maria_conn *m, int which, MYSQL_BIND *binds, const char *what, char *err,
                      size_t errlen)
{
    MYSQL_STMT *st;
    int rc = prepare(m, which, &st, what, err, errlen);
    if (rc)
        return rc;
    if (maria.mysql_stmt_bind_param(st, binds))
        return stmt_error(m, st, what, reign__now_ns(), err, errlen);
    int64_t deadline = reign__sql_deadline(m->base.statement_timeout_ms);
    for (;;) {
        int64_t started = reign__now_ns();
        if (!maria.mysql_stmt_execute(st))
            return (int)maria.mysql_stmt_affected_rows(st);
        unsigned e = maria.mysql_stmt_errno(st);
        if (e == ER_DUP_ENTRY && which == ST_INSERT)
            return 0;
        if (e == ER_LOCK_DEADLOCK && reign__sql_left_ms(deadline) > 0)
            continue;
        return stmt_error(m, st, what, started, err, errlen);
    }
}

/* ---- connection ----------------------------------------------------------------------------- */

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;
static int lib_rc;

/* mysql_init() would do this itself, but not safely when two threads connect at once. */
static void lib_init(void)
{
    lib_rc = maria.mysql_server_init(0, NULL, NULL);
}

static unsigned seconds_up(int ms)
{
    return (unsigned)((ms + 999) / 1000);
}

/*
 * What a URI may add: Connector/C's TLS options and its option files.  Without option_file or
 * option_group, the default option files are read with group [reign] (and Connector/C's own
 * [client], [client-server], [client-mariadb]), as the mysql tool reads them.  A passphrase
 * for the key is a secret: not in a URI.
 */
typedef struct my_param {
    const char *key;
    enum mysql_option opt;
    bool boolean;
} my_param;

static const my_param my_params[] = {
    {"ssl", MYSQL_OPT_SSL_ENFORCE, true},
    {"ssl_verify_server_cert", MYSQL_OPT_SSL_VERIFY_SERVER_CERT, true},
    {"ssl_ca", MYSQL_OPT_SSL_CA, false},
    {"ssl_capath", MYSQL_OPT_SSL_CAPATH, false},
    {"ssl_cert", MYSQL_OPT_SSL_CERT, false},
    {"ssl_key", MYSQL_OPT_SSL_KEY, false},
    {"ssl_cipher", MYSQL_OPT_SSL_CIPHER, false},
    {"ssl_crl", MYSQL_OPT_SSL_CRL, false},
    {"ssl_crlpath", MYSQL_OPT_SSL_CRLPATH, false},
    {"tls_version", MARIADB_OPT_TLS_VERSION, false},
    {"tls_peer_fp", MARIADB_OPT_TLS_PEER_FP, false},
    {"option_file", MYSQL_READ_DEFAULT_FILE, false},
    {"option_group", MYSQL_READ_DEFAULT_GROUP, false},
};

static const my_param *my_param_of(const char *key)
{
    for (size_t i = 0; i < sizeof my_params / sizeof my_params[0]; i++)
        if (!strcmp(my_params[i].key, key))
            return &my_params[i];
    return NULL;
}

/* on/off, true/false, 1/0, yes/no: 1 or 0, else -1. */
static int boolean_of(const char *v)
{
    static const char *const on[] = {"on", "true", "1", "yes"}, *const off[] = {"off", "false", "0",
                                                                                "no"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, on[i]))
            return 1;
        if (!strcasecmp(v, off[i]))
            return 0;
    }
    return -1;
}

static int my_conn_param(const char *key, const char *value, char *err, size_t errlen)
{
    if (!strcmp(key, "tls_passphrase") || !strcmp(key, "password")) {
        reign__errf(err, errlen,
                    "parameter '%s' would put a secret in the URI: use REIGN_PASSWORD, "
                    "password_file or an option file",
                    key);
        return REIGN_EURI;
    }
    if (!strcmp(key, "ssl_mode") || !strcmp(key, "sslmode")) {
        /* MySQL's client has it; MariaDB Connector/C 3.3 does not: say what to write. */
        reign__errf(err, errlen,
                    "parameter '%s': MariaDB Connector/C has no TLS mode; write ssl=on for "
                    "REQUIRED, ssl_ca=FILE&ssl_verify_server_cert=on for VERIFY_IDENTITY",
                    key);
        return REIGN_EURI;
    }
    if (!strcmp(key, "wakeup")) { /* reign's own: mariadb_wake.h */
        if (strcmp(value, "lock") && strcmp(value, "poll")) {
            reign__errf(err, errlen, "parameter wakeup='%.64s': want lock or poll", value);
            return REIGN_EURI;
        }
        return 1;
    }
    const my_param *p = my_param_of(key);
    if (!p)
        return 0;
    if (p->boolean && boolean_of(value) < 0) {
        reign__errf(err, errlen, "parameter %s='%.64s': want on or off", key, value);
        return REIGN_EURI;
    }
    if (!p->boolean && !*value) {
        reign__errf(err, errlen, "parameter %s is empty", key);
        return REIGN_EURI;
    }
    return 1;
}

/* The URI's connection parameters (checked by my_conn_param()). */
static int set_params(MYSQL *my, const reign__sql_target *t)
{
    const char *keys[32], *vals[32];
    char *params = t->params ? reign__strdup(t->params) : NULL;
    if (t->params && !params)
        return REIGN_ENOMEM;
    size_t n = params ? reign__sql_split_params(params, keys, vals, 32) : 0;
    bool files = false;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const my_param *p = my_param_of(keys[i]);
        if (!p)
            continue;
        my_bool b = boolean_of(vals[i]) > 0;
        files |= p->opt == MYSQL_READ_DEFAULT_FILE || p->opt == MYSQL_READ_DEFAULT_GROUP;
        if (maria.mysql_optionsv(my, p->opt, p->boolean ? (const void *)&b : vals[i]))
            rc = REIGN_EBACKEND;
    }
    if (!rc && !files && maria.mysql_optionsv(my, MYSQL_READ_DEFAULT_GROUP, "reign"))
        rc = REIGN_EBACKEND;
    reign__free(params);
    return rc;
}

/* The options of every connection: the URI's first, reign's own after them.  0 or a code. */
static int common_options(MYSQL *my, const reign__sql_target *t, int connect_timeout_ms)
{
    int prc = set_params(my, t);
    if (prc)
        return prc;
    unsigned connect_s = seconds_up(connect_timeout_ms), tcp = MYSQL_PROTOCOL_TCP;
    my_bool off = 0;
    if (maria.mysql_optionsv(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s) ||
        maria.mysql_optionsv(my, MYSQL_SET_CHARSET_NAME, "utf8mb4") ||
        maria.mysql_optionsv(my, MYSQL_OPT_RECONNECT, &off) ||
        maria.mysql_optionsv(my, MYSQL_OPT_LOCAL_INFILE, &off) ||
        (t->host[0] != '/' && maria.mysql_optionsv(my, MYSQL_OPT_PROTOCOL, &tcp)))
        return REIGN_EBACKEND;
    return 0;
}

/* A host that is a path is the server's Unix socket, as in libpq. */
static bool real_connect(MYSQL *my, const reign__sql_target *t)
{
    bool socket = t->host[0] == '/';
    return maria.mysql_real_connect(my, socket ? "localhost" : t->host, t->user, t->password,
                                    t->database, (unsigned)t->port, socket ? t->host : NULL,
                                    CLIENT_FOUND_ROWS) != NULL;
}

static void wake_make(maria_conn *m);

static int my_connect(reign__sqlconn *c, const reign__sql_target *t, char *err, size_t errlen)
{
    maria_conn *m = (maria_conn *)c;
    pthread_once(&lib_once, lib_init);
    if (lib_rc)
        return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "cannot initialise the client");
    if (!(m->my = maria.mysql_init(NULL)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    m->target = t;
    m->wake_off = reign__mywake_off(t->params);
    m->read_timeout_s = seconds_up(c->statement_timeout_ms);
    /* The server gives up on a statement (and keeps the connection) before the client does. */
    int server_ms = c->statement_timeout_ms * 4 / 5; /* at most an hour: no overflow */
    if (server_ms < 1)
        server_ms = 1; /* 0 would mean no limit */
    /* A transaction left open by a client that stops between two of its statements is ended
     * by the server after two statement timeouts (whole seconds here), as on PostgreSQL. */
    int idle_s = (c->statement_timeout_ms * 2 + 999) / 1000;
    char init[224];
    snprintf(init, sizeof init,
             "SET time_zone = '+00:00', max_statement_time = %d.%03d, "
             "innodb_lock_wait_timeout = %d, idle_transaction_timeout = %d",
             server_ms / 1000, server_ms % 1000, server_ms >= 2000 ? server_ms / 1000 : 1, idle_s);
    int prc = common_options(m->my, t, c->connect_timeout_ms);
    if (prc)
        return reign__sql_err(c, err, errlen, prc,
                              prc == REIGN_ENOMEM ? "out of memory"
                                                  : "cannot set the URI's connection parameters");
    if (maria.mysql_optionsv(m->my, MYSQL_OPT_READ_TIMEOUT, &m->read_timeout_s) ||
        maria.mysql_optionsv(m->my, MYSQL_OPT_WRITE_TIMEOUT, &m->read_timeout_s) ||
        maria.mysql_optionsv(m->my, MYSQL_INIT_COMMAND, init))
        return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "cannot set client options");
    if (!real_connect(m->my, t)) {
        /* "Unknown database 'x'" says neither which server nor plainly what is missing. */
        if (maria.mysql_errno(m->my) == ER_BAD_DB_ERROR)
            return reign__sql_err(c, err, errlen, REIGN_ENOENT,
                                  "database \"%s\" does not exist on %s:%u", t->database, t->host,
                                  t->port ? (unsigned)t->port : 3306u);
        return map_error(m, maria.mysql_errno(m->my), maria.mysql_error(m->my), "connect",
                         reign__now_ns(), err, errlen);
    }
    m->connected = true;
    if (!m->wake_off)
        wake_make(m);
    return 0;
}

static void my_close(reign__sqlconn *c)
{
    maria_conn *m = (maria_conn *)c;
    reign__mywake_free(m->wake);
    for (int i = 0; i < ST_COUNT; i++) {
        if (m->st[i])
            maria.mysql_stmt_close(m->st[i]);
    }
    if (m->my)
        maria.mysql_close(m->my);
}

/* ---- schema --------------------------------------------------------------------------------- */

#define MAX_COLS 64
#define CELL     96

/*
 * Runs a prepared query with text parameters, calling fn for each row with every column as
 * text (NULL for SQL NULL).  For the catalogue queries and the schema lock.
 */
typedef void row_fn(char *const *row, void *arg);

static int query_rows(maria_conn *m, const char *tmpl, const char *const *params, int nparams,
                      int ncols, row_fn *fn, void *arg, const char *what, char *err, size_t errlen)
{
    MYSQL_STMT *st;
    int rc = prepare_sql(m, tmpl, &st, what, err, errlen);
    if (rc)
        return rc;
    MYSQL_BIND pb[4], rb[8];
    unsigned long plen[4], rlen[8];
    my_bool rnull[8], rerr[8];
    char cells[8][CELL];
    char *row[8];
    memset(pb, 0, sizeof pb);
    memset(rb, 0, sizeof rb);
    for (int i = 0; i < nparams; i++)
        bind_text(&pb[i], params[i], &plen[i]);
    for (int i = 0; i < ncols; i++) {
        rb[i].buffer_type = MYSQL_TYPE_STRING;
        rb[i].buffer = cells[i];
        rb[i].buffer_length = CELL - 1;
        rb[i].length = &rlen[i];
        rb[i].is_null = &rnull[i];
        rb[i].error = &rerr[i];
    }
    int64_t started = reign__now_ns();
    if ((nparams && maria.mysql_stmt_bind_param(st, pb)) || maria.mysql_stmt_execute(st) ||
        maria.mysql_stmt_bind_result(st, rb) || maria.mysql_stmt_store_result(st)) {
        rc = stmt_error(m, st, what, started, err, errlen);
        maria.mysql_stmt_close(st);
        return rc;
    }
    int f;
    while ((f = maria.mysql_stmt_fetch(st)) == 0 || f == MYSQL_DATA_TRUNCATED) {
        for (int i = 0; i < ncols; i++) {
            /* Longer cells are cut: names and types here are short. */
            cells[i][rlen[i] < CELL - 1 ? rlen[i] : CELL - 1] = '\0';
            row[i] = rnull[i] ? NULL : cells[i];
        }
        fn(row, arg);
    }
    if (f != MYSQL_NO_DATA)
        rc = stmt_error(m, st, what, started, err, errlen);
    maria.mysql_stmt_close(st);
    return rc;
}

static int exec_ddl(maria_conn *m, const char *tmpl, char *err, size_t errlen)
{
    MYSQL_STMT *st;
    int rc = prepare_sql(m, tmpl, &st, "schema", err, errlen);
    if (rc)
        return rc;
    int64_t started = reign__now_ns();
    if (maria.mysql_stmt_execute(st))
        rc = stmt_error(m, st, "schema", started, err, errlen);
    maria.mysql_stmt_close(st);
    return rc;
}

static reign__sql_coltype kind_of(const char *type, const char *precision)
{
    static const char *const ints[] = {"tinyint", "smallint", "mediumint", "int", "bigint"};
    static const char *const texts[] = {"char", "varchar",    "tinytext",
                                        "text", "mediumtext", "longtext"};
    static const char *const blobs[] = {"tinyblob", "blob",   "mediumblob",
                                        "longblob", "binary", "varbinary"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        if (!strcasecmp(type, ints[i]))
            return REIGN__COL_INT;
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        if (!strcasecmp(type, texts[i]))
            return REIGN__COL_TEXT;
    for (size_t i = 0; i < sizeof blobs / sizeof *blobs; i++)
        if (!strcasecmp(type, blobs[i]))
            return REIGN__COL_BLOB;
    if (!strcasecmp(type, "timestamp") || !strcasecmp(type, "datetime"))
        return precision && atoi(precision) >= 3 ? REIGN__COL_TIME : REIGN__COL_TIME_COARSE;
    return REIGN__COL_OTHER;
}

typedef struct columns {
    reign__sql_column col[MAX_COLS];
    size_t n;
} columns;

static void column_row(char *const *row, void *arg)
{
    columns *cs = arg;
    if (cs->n == MAX_COLS || !row[0])
        return;
    reign__sql_column *col = &cs->col[cs->n++];
    reign__strlcpy(col->name, row[0], sizeof col->name);
    reign__strlcpy(col->type, row[3] ? row[3] : "?", sizeof col->type);
    col->kind = kind_of(row[1] ? row[1] : "", row[2]);
}

typedef struct uniques {
    char index[CELL];
    char names[16][CELL];
    const char *cols[16];
    size_t n;
    bool ok;
} uniques;

static void unique_end(uniques *u)
{
    if (u->index[0] && reign__sql_unique_ok(u->cols, u->n, true))
        u->ok = true;
    u->n = 0;
}

static void unique_row(char *const *row, void *arg)
{
    uniques *u = arg;
    if (!row[0] || strcmp(row[0], u->index)) {
        unique_end(u);
        reign__strlcpy(u->index, row[0] ? row[0] : "", sizeof u->index);
    }
    if (u->n < 16) {
        reign__strlcpy(u->names[u->n], row[1] ? row[1] : "", CELL);
        u->cols[u->n] = row[1] ? u->names[u->n] : NULL;
        u->n++;
    }
}

static void lock_row(char *const *row, void *arg)
{
    *(int *)arg = row[0] ? atoi(row[0]) : -1;
}

static int schema_locked(maria_conn *m, char *err, size_t errlen)
{
    reign__sqlconn *c = &m->base;
    const char *table = c->table;
    columns cs = {.n = 0};
    int rc = query_rows(m,
                        "SELECT COLUMN_NAME, DATA_TYPE, DATETIME_PRECISION, COLUMN_TYPE FROM "
                        "information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND "
                        "TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
                        &table, 1, 4, column_row, &cs, "reading the table's columns", err, errlen);
    if (rc)
        return rc;
    if (!cs.n) {
        rc = exec_ddl(m,
                      "CREATE TABLE IF NOT EXISTS `{T}` ("
                      "id bigint(20) NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                      "data_center varchar(128) NOT NULL, "
                      "lock_name varchar(1024) NOT NULL, "
                      "owner varchar(512) NOT NULL, "
                      "duration bigint(20) NOT NULL, "
                      "term bigint(20) unsigned NOT NULL DEFAULT 0, "
                      "term_duration bigint(20) unsigned NOT NULL DEFAULT 0, "
                      "gmt_create timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
                      "gmt_modified timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), "
                      "owner_guid varchar(64) COLLATE utf8mb4_bin NOT NULL DEFAULT '', "
                      "payload mediumblob NULL, "
                      "session_guid varchar(64) COLLATE utf8mb4_bin NOT NULL DEFAULT '', "
                      "UNIQUE KEY uk_data_center_lock (data_center, lock_name(640)), "
                      "KEY idx_lock_owner (owner), "
                      "KEY idx_lock_session (data_center, session_guid)"
                      ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
                      err, errlen);
        if (!rc)
            reign__log(c->log, REIGN_LOG_INFO, "%s: created table %s", c->store, c->table);
        return rc;
    }
    bool need_guid, need_payload, need_session;
    if ((rc = reign__sql_check_columns(c, cs.col, cs.n, true, &need_guid, &need_payload,
                                       &need_session, err, errlen)))
        return rc;
    uniques u = {.n = 0, .ok = false};
    rc = query_rows(m,
                    "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE "
                    "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND NON_UNIQUE = 0 ORDER BY "
                    "INDEX_NAME, SEQ_IN_INDEX",
                    &table, 1, 2, unique_row, &u, "reading the table's indexes", err, errlen);
    if (rc)
        return rc;
    unique_end(&u);
    if (!u.ok)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "table %s has no unique key on (data_center, lock_name)", c->table);
    if (need_guid && (rc = exec_ddl(m,
                                    "ALTER TABLE `{T}` ADD COLUMN IF NOT EXISTS owner_guid "
                                    "varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
                                    "NULL DEFAULT ''",
                                    err, errlen)))
        return rc;
    if (need_payload &&
        (rc = exec_ddl(m, "ALTER TABLE `{T}` ADD COLUMN IF NOT EXISTS payload mediumblob NULL", err,
                       errlen)))
        return rc;
    if (need_session && (rc = exec_ddl(m,
                                       "ALTER TABLE `{T}` ADD COLUMN IF NOT EXISTS session_guid "
                                       "varchar(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT "
                                       "NULL DEFAULT '', ADD INDEX IF NOT EXISTS idx_lock_session "
                                       "(data_center, session_guid)",
                                       err, errlen)))
        return rc;
    if (need_guid || need_payload || need_session)
        reign__log(c->log, REIGN_LOG_INFO, "%s: added reign's columns to table %s", c->store,
                   c->table);
    return 0;
}

static int my_ensure_schema(reign__sqlconn *c, char *err, size_t errlen)
{
    maria_conn *m = (maria_conn *)c;
    /* DDL commits by itself, so a transaction cannot make the check and the change one step:
     * a named lock (per database and table) makes concurrent callers take turns instead. */
    char wait_s[16];
    snprintf(wait_s, sizeof wait_s, "%u", m->read_timeout_s > 1 ? m->read_timeout_s - 1 : 1);
    const char *params[2] = {c->table, wait_s};
    int got = -1;
    int rc = query_rows(m, "SELECT GET_LOCK(CONCAT('reign_', SHA1(CONCAT(DATABASE(), '.', ?))), ?)",
                        params, 2, 1, lock_row, &got, "schema lock", err, errlen);
    if (rc)
        return rc;
    if (got != 1)
        return reign__sql_err(c, err, errlen, REIGN_ETIMEDOUT,
                              "schema lock: another process held it for %s s", wait_s);
    rc = schema_locked(m, err, errlen);
    int ignored;
    char err2[8];
    if (!c->broken)
        query_rows(m, "SELECT RELEASE_LOCK(CONCAT('reign_', SHA1(CONCAT(DATABASE(), '.', ?))))",
                   params, 1, 1, lock_row, &ignored, "schema lock", err2, sizeof err2);
    return rc;
}

/* ---- the wake-up lock (mariadb_wake.h) ------------------------------------------------------ */

/* For the waits' connections (mariadb_wake.h): non-blocking, with no read timeout and no
 * statement time limit, since a wait lasts minutes. */
static MYSQL *open_waiter(void *ctx, char *err, size_t errlen)
{
    maria_conn *m = ctx;
    MYSQL *my = maria.mysql_init(NULL);
    if (!my) {
        reign__errf(err, errlen, "out of memory");
        return NULL;
    }
    if (common_options(my, m->target, m->base.connect_timeout_ms) ||
        maria.mysql_optionsv(my, MYSQL_INIT_COMMAND, "SET max_statement_time = 0") ||
        maria.mysql_optionsv(my, MYSQL_OPT_NONBLOCK, 0)) {
        reign__errf(err, errlen, "cannot set client options");
        maria.mysql_close(my);
        return NULL;
    }
    if (!real_connect(my, m->target)) {
        reign__errf(err, errlen, "%s (%u)", maria.mysql_error(my), maria.mysql_errno(my));
        maria.mysql_close(my);
        return NULL;
    }
    return my;
}

/* A lease's followers listen on its name: they wait for its lock.  The other names (groups,
 * values, queues) have nothing to wait for here: their watchers poll. */
static int my_listen(reign__sqlconn *c, const char *dc, const char *const *names, size_t n,
                     char *err, size_t errlen)
{
    maria_conn *m = (maria_conn *)c;
    for (size_t i = 0; m->wake && i < n; i++) {
        char why[256] = "";
        if (reign__name_check(names[i]) == 0 &&
            reign__mywake_listen(m->wake, dc, names[i], why, sizeof why) < 0)
            reign__log(c->log, REIGN_LOG_DEBUG, "%s: no wake-up for %s (%s): its followers poll",
                       c->store, names[i], why);
    }
    return 0; /* never an error: polling is the backstop */
}

static int my_listen_fd(const reign__sqlconn *c)
{
    return reign__mywake_fd(((const maria_conn *)c)->wake);
}

static int my_drain_notify(reign__sqlconn *c)
{
    return reign__mywake_drain(((maria_conn *)c)->wake);
}

static bool my_wakes_followers(const reign__sql_target *t)
{
    return !reign__mywake_off(t->params);
}

/* The leader's locks and the followers' waits of this connection; without them (out of
 * memory), followers poll. */
static void wake_make(maria_conn *m)
{
    reign__sqlconn *c = &m->base;
    reign__mywake_io io = {
        .query = maria.mysql_real_query,
        .store = maria.mysql_store_result,
        .query_start = maria.mysql_real_query_start,
        .query_cont = maria.mysql_real_query_cont,
        .store_start = maria.mysql_store_result_start,
        .store_cont = maria.mysql_store_result_cont,
        .fetch_row = maria.mysql_fetch_row,
        .free_result = maria.mysql_free_result,
        .get_socket = maria.mysql_get_socket,
        .close = maria.mysql_close,
        .error = maria.mysql_error,
        .errnum = maria.mysql_errno,
        .open = open_waiter,
        .ctx = m,
    };
    m->wake = reign__mywake_new(&io, m->my, c->table, &c->statements, c->log, c->store);
}

/* ---- the lease ------------------------------------------------------------------------------ */

static int read_row(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                    char *err, size_t errlen)
{
    maria_conn *m = (maria_conn *)c;
    MYSQL_STMT *st;
    int rc = prepare(m, ST_READ, &st, "read", err, errlen);
    if (rc)
        return rc;
    MYSQL_BIND pb[2], rb[11];
    unsigned long plen[2], rlen[11];
    my_bool rnull[11], rerr[11];
    memset(pb, 0, sizeof pb);
    memset(rb, 0, sizeof rb);
    bind_text(&pb[0], dc, &plen[0]);
    bind_text(&pb[1], name, &plen[1]);

    char owner[REIGN_ID_MAX + 1], guid[REIGN__SQL_GUID_MAX + 1], session[REIGN__SQL_GUID_MAX + 1];
    int64_t v[7];
    rb[0].buffer_type = MYSQL_TYPE_STRING;
    rb[0].buffer = owner;
    rb[0].buffer_length = sizeof owner;
    rb[1].buffer_type = MYSQL_TYPE_STRING;
    rb[1].buffer = guid;
    rb[1].buffer_length = sizeof guid;
    rb[2].buffer_type = MYSQL_TYPE_BLOB; /* no buffer: fetched by length below */
    for (int i = 0; i < 7; i++)
        bind_int(&rb[3 + i], &v[i], i < 2);
    rb[10].buffer_type = MYSQL_TYPE_STRING;
    rb[10].buffer = session;
    rb[10].buffer_length = sizeof session;
    for (int i = 0; i < 11; i++) {
        rb[i].length = &rlen[i];
        rb[i].is_null = &rnull[i];
        rb[i].error = &rerr[i];
    }

    int64_t started = reign__now_ns();
    if (maria.mysql_stmt_bind_param(st, pb) || maria.mysql_stmt_execute(st) ||
        maria.mysql_stmt_bind_result(st, rb) || maria.mysql_stmt_store_result(st))
        return stmt_error(m, st, "read", started, err, errlen);
    int f = maria.mysql_stmt_fetch(st);
    if (f == MYSQL_NO_DATA) {
        maria.mysql_stmt_free_result(st);
        return 0;
    }
    if (f != 0 && f != MYSQL_DATA_TRUNCATED) {
        rc = stmt_error(m, st, "read", started, err, errlen);
        maria.mysql_stmt_free_result(st);
        return rc;
    }
    if (rnull[0] || rlen[0] > REIGN_ID_MAX || (!rnull[1] && rlen[1] > REIGN__SQL_GUID_MAX) ||
        (!rnull[10] && rlen[10] > REIGN__SQL_GUID_MAX) || rnull[7] || rnull[9]) {
        maria.mysql_stmt_free_result(st);
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "the row of (%s, %s) in %s has an owner, guid or gmt_modified "
                              "reign cannot use",
                              dc, name, c->table);
    }
    out->exists = true;
    memcpy(out->owner, owner, rlen[0]);
    out->owner[rlen[0]] = '\0';
    if (!rnull[1]) {
        memcpy(out->owner_guid, guid, rlen[1]);
        out->owner_guid[rlen[1]] = '\0';
    }
    if (!rnull[10]) {
        memcpy(out->session, session, rlen[10]);
        out->session[rlen[10]] = '\0';
    }
    if (!rnull[2] && rlen[2] > 0) {
        MYSQL_BIND pbind;
        memset(&pbind, 0, sizeof pbind);
        out->payload = reign__malloc(rlen[2]);
        pbind.buffer_type = MYSQL_TYPE_BLOB;
        pbind.buffer = out->payload;
        pbind.buffer_length = rlen[2];
        if (!out->payload || maria.mysql_stmt_fetch_column(st, &pbind, 2, 0)) {
            rc = out->payload ? stmt_error(m, st, "read", started, err, errlen)
                              : reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            maria.mysql_stmt_free_result(st);
            return rc;
        }
        out->payload_len = rlen[2];
    }
    out->term = (uint64_t)v[0];
    out->term_duration = (uint64_t)v[1];
    out->duration_ms = v[2];
    out->created_ms = rnull[6] ? 0 : v[3];
    out->modified_ms = v[4];
    out->db_now_ms = v[5];
    out->db_expired = v[6] != 0;
    maria.mysql_stmt_free_result(st);
    return 0;
}

/* A leader that lost its lease without a statement telling it (its deadline passed) reads its
 * row again as a follower: then it lets go of the lock. */
static int my_read(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                   char *err, size_t errlen)
{
    int rc = read_row(c, dc, name, out, err, errlen);
    if (rc == 0)
        reign__mywake_let_go(((maria_conn *)c)->wake, dc, name, !out->exists, out->term);
    return rc;
}

static int my_insert(reign__sqlconn *c, const reign__lease_claim *cl, char *err, size_t errlen)
{
    MYSQL_BIND b[7];
    unsigned long len[7];
    int64_t duration = cl->duration_ms;
    memset(b, 0, sizeof b);
    bind_text(&b[0], cl->dc, &len[0]);
    bind_text(&b[1], cl->name, &len[1]);
    bind_text(&b[2], cl->owner, &len[2]);
    bind_text(&b[3], cl->owner_guid, &len[3]);
    bind_payload(&b[4], cl, &len[4]);
    bind_int(&b[5], &duration, false);
    bind_text(&b[6], cl->session ? cl->session : "", &len[6]);
    int rc = exec_write((maria_conn *)c, ST_INSERT, b, "insert", err, errlen);
    if (rc > 0)
        reign__mywake_won(((maria_conn *)c)->wake, cl->dc, cl->name, 1);
    return rc < 0 ? rc : rc > 0;
}

static int my_take(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term,
                   char *err, size_t errlen)
{
    MYSQL_BIND b[11];
    unsigned long len[11];
    int64_t duration = cl->duration_ms, term = (int64_t)expected_term;
    int64_t renewals = (int64_t)cl->expect_renewals, released = cl->take_released;
    memset(b, 0, sizeof b);
    bind_text(&b[0], cl->owner, &len[0]);
    bind_text(&b[1], cl->owner_guid, &len[1]);
    bind_payload(&b[2], cl, &len[2]);
    bind_int(&b[3], &duration, false);
    bind_text(&b[4], cl->session ? cl->session : "", &len[4]);
    bind_text(&b[5], cl->dc, &len[5]);
    bind_text(&b[6], cl->name, &len[6]);
    bind_int(&b[7], &term, true);
    bind_int(&b[8], &released, false);
    bind_int(&b[9], &renewals, true);
    bind_int(&b[10], &released, false);
    int rc = exec_write((maria_conn *)c, ST_TAKE, b, "take", err, errlen);
    if (rc > 0)
        reign__mywake_won(((maria_conn *)c)->wake, cl->dc, cl->name, expected_term + 1);
    return rc < 0 ? rc : rc > 0;
}

/* renew and release: (dc, name, owner, guid, term). */
static int owner_write(reign__sqlconn *c, int which, const reign__lease_claim *cl, uint64_t term,
                       const char *what, char *err, size_t errlen)
{
    MYSQL_BIND b[5];
    unsigned long len[5];
    int64_t t = (int64_t)term;
    memset(b, 0, sizeof b);
    bind_text(&b[0], cl->dc, &len[0]);
    bind_text(&b[1], cl->name, &len[1]);
    bind_text(&b[2], cl->owner, &len[2]);
    bind_text(&b[3], cl->owner_guid, &len[3]);
    bind_int(&b[4], &t, true);
    int rc = exec_write((maria_conn *)c, which, b, what, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

/* A renewal holds the lock if the claim could not (a follower's wait had it, or the
 * connection is new); a refused one lets it go. */
static int my_renew(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                    size_t errlen)
{
    int rc = owner_write(c, ST_RENEW, cl, term, "renew", err, errlen);
    if (rc > 0)
        reign__mywake_hold(((maria_conn *)c)->wake, cl->dc, cl->name, term, "0");
    else if (rc == 0)
        reign__mywake_let_go(((maria_conn *)c)->wake, cl->dc, cl->name, true, 0);
    return rc;
}

static int my_release(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                      size_t errlen)
{
    int rc = owner_write(c, ST_RELEASE, cl, term, "release", err, errlen);
    if (rc >= 0) /* after the row: woken, the followers find it released */
        reign__mywake_let_go(((maria_conn *)c)->wake, cl->dc, cl->name, true, 0);
    return rc;
}

static int my_depose(reign__sqlconn *c, const char *dc, const char *name, uint64_t term, char *err,
                     size_t errlen)
{
    MYSQL_BIND b[4];
    unsigned long len[4];
    int64_t t = (int64_t)term;
    memset(b, 0, sizeof b);
    bind_text(&b[0], REIGN__SQL_DEPOSED, &len[0]);
    bind_text(&b[1], dc, &len[1]);
    bind_text(&b[2], name, &len[2]);
    bind_int(&b[3], &t, true);
    int rc = exec_write((maria_conn *)c, ST_DEPOSE, b, "depose", err, errlen);
    return rc < 0 ? rc : rc > 0;
}

/* ---- notification: the lock is the signal -------------------------------------------------- */

static int my_notify(reign__sqlconn *c, const char *dc, const char *name, const char *hint,
                     char *err, size_t errlen)
{
    return 0;
}

/* Once the winner of a lease has its answer: its lock. */
static void my_settle(reign__sqlconn *c)
{
    if (!c->broken)
        reign__mywake_settle(((maria_conn *)c)->wake);
}

/* ---- other statements ------------------------------------------------------------------------ */

#define QUERY_COLS_MAX 16
#define QUERY_CELL     2048

/* Column `col` of the row just fetched, `len` bytes, into *out (allocated). */
static int fetch_long(maria_conn *m, MYSQL_STMT *st, size_t col, unsigned long len, char **out,
                      const char *what, int64_t started, char *err, size_t errlen)
{
    MYSQL_BIND b;
    memset(&b, 0, sizeof b);
    if (!(*out = reign__malloc(len)))
        return reign__sql_err(&m->base, err, errlen, REIGN_ENOMEM, "out of memory");
    b.buffer_type = MYSQL_TYPE_BLOB;
    b.buffer = *out;
    b.buffer_length = len;
    if (maria.mysql_stmt_fetch_column(st, &b, (unsigned)col, 0))
        return stmt_error(m, st, what, started, err, errlen);
    return 0;
}

static int my_query(reign__sqlconn *c, const char *what, const char *sql, const reign__sqlv *args,
                    size_t n_args, reign__sql_rows *rows, char *err, size_t errlen)
{
    maria_conn *m = (maria_conn *)c;
    /* n_args: one per place (bare '?'). */
    if (n_args > REIGN__SQL_PLACES_MAX)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many parameters", what);
    MYSQL_STMT *st;
    int rc = prepare_sql(m, sql, &st, what, err, errlen);
    if (rc)
        return rc;
    /* On the heap: a batch's statement binds up to a thousand places. */
    MYSQL_BIND *pb = reign__calloc(n_args + 1, sizeof *pb);
    unsigned long *plen = reign__calloc(n_args + 1, sizeof *plen);
    int64_t *ints = reign__calloc(n_args + 1, sizeof *ints);
    if (!pb || !plen || !ints) {
        reign__free(pb);
        reign__free(plen);
        reign__free(ints);
        maria.mysql_stmt_close(st);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_args; i++) {
        if (args[i].kind == REIGN__SQLV_INT) {
            ints[i] = args[i].i;
            bind_int(&pb[i], &ints[i], false);
        } else if (args[i].kind == REIGN__SQLV_TEXT) {
            bind_text(&pb[i], args[i].s, &plen[i]);
        } else if (args[i].kind == REIGN__SQLV_BLOB && args[i].len) {
            plen[i] = (unsigned long)args[i].len;
            pb[i].buffer_type = MYSQL_TYPE_BLOB;
            pb[i].buffer = (void *)args[i].s;
            pb[i].buffer_length = plen[i];
            pb[i].length = &plen[i];
        } else {
            pb[i].buffer_type = MYSQL_TYPE_NULL;
        }
    }
    int64_t started = reign__now_ns();
    bool failed = (n_args && maria.mysql_stmt_bind_param(st, pb)) || maria.mysql_stmt_execute(st);
    reign__free(pb); /* the parameters are sent */
    reign__free(plen);
    reign__free(ints);
    if (failed) {
        unsigned e = maria.mysql_stmt_errno(st);
        rc = e == ER_DUP_ENTRY ? 0 : stmt_error(m, st, what, started, err, errlen);
        maria.mysql_stmt_close(st);
        return rc;
    }
    size_t ncols = maria.mysql_stmt_field_count(st);
    if (!ncols) {
        rc = (int)maria.mysql_stmt_affected_rows(st);
        maria.mysql_stmt_close(st);
        return rc;
    }
    if (ncols > QUERY_COLS_MAX) {
        maria.mysql_stmt_close(st);
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many columns", what);
    }
    MYSQL_BIND rb[QUERY_COLS_MAX];
    unsigned long rlen[QUERY_COLS_MAX];
    my_bool rnull[QUERY_COLS_MAX], rerr[QUERY_COLS_MAX];
    char *cells = reign__malloc(QUERY_COLS_MAX * QUERY_CELL);
    if (!cells) {
        maria.mysql_stmt_close(st);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    memset(rb, 0, sizeof rb);
    for (size_t i = 0; i < ncols; i++) {
        rb[i].buffer_type = MYSQL_TYPE_STRING;
        rb[i].buffer = cells + i * QUERY_CELL;
        rb[i].buffer_length = QUERY_CELL - 1;
        rb[i].length = &rlen[i];
        rb[i].is_null = &rnull[i];
        rb[i].error = &rerr[i];
    }
    reign__sql_rows got = {.n_cols = ncols};
    if (maria.mysql_stmt_bind_result(st, rb) || maria.mysql_stmt_store_result(st)) {
        /* An INSERT ... RETURNING meets a duplicate key here: nothing written, no row. */
        unsigned e = maria.mysql_stmt_errno(st);
        rc = e == ER_DUP_ENTRY ? 0 : stmt_error(m, st, what, started, err, errlen);
    } else {
        int f;
        while (rc == 0 && (f = maria.mysql_stmt_fetch(st)) != MYSQL_NO_DATA) {
            if (f == 1) {
                rc = stmt_error(m, st, what, started, err, errlen);
                break;
            }
            const char *row[QUERY_COLS_MAX];
            size_t lens[QUERY_COLS_MAX];
            char *big[QUERY_COLS_MAX] = {NULL};
            for (size_t i = 0; i < ncols && rc == 0; i++) {
                row[i] = rnull[i] ? NULL : cells + i * QUERY_CELL;
                lens[i] = rnull[i] ? 0 : rlen[i];
                /* Longer than the cell (a value's bytes): fetched again, whole. */
                if (!rnull[i] && rlen[i] > QUERY_CELL - 1 && rows)
                    rc = fetch_long(m, st, i, rlen[i], &big[i], what, started, err, errlen);
                if (big[i])
                    row[i] = big[i];
            }
            if (rc == 0 && rows && reign__sql_rows_add(&got, row, lens) < 0)
                rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            for (size_t i = 0; i < ncols; i++)
                reign__free(big[i]);
        }
    }
    maria.mysql_stmt_free_result(st);
    maria.mysql_stmt_close(st);
    reign__free(cells);
    if (rc < 0 || !rows) {
        reign__sql_rows_free(&got);
        return rc;
    }
    *rows = got;
    return 0;
}

const reign__sql_dialect reign__sql_mariadb = {
    .name = "mariadb",
    .size = sizeof(maria_conn),
    .connect = my_connect,
    .conn_param = my_conn_param,
    .close = my_close,
    .ensure_schema = my_ensure_schema,
    .read = my_read,
    .insert = my_insert,
    .take = my_take,
    .renew = my_renew,
    .release = my_release,
    .depose = my_depose,
    .listen = my_listen,
    .listen_fd = my_listen_fd,
    .wakes_followers = my_wakes_followers,
    .settle = my_settle,
    .drain_notify = my_drain_notify,
    .notify = my_notify,
    .query = my_query,
    .now_ms = "CAST(FLOOR(UNIX_TIMESTAMP(NOW(3)) * 1000) AS SIGNED)",
    .begin = "START TRANSACTION",
    .for_update = " FOR UPDATE",
    .on_conflict = "",
    .id_column = "id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY",
    .placeholder = 0,
    .table_options = " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    .blob_type = "mediumblob",
    .quote = '`',
};
