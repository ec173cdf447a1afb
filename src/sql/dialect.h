/*
 * dialect.h - what sql.c (the common part of the SQL lease layer) shares
 * with the three dialects, sqlite.c, mariadb.c and postgres.c: the
 * connection object every dialect extends, a small table of functions per
 * dialect, and helpers for errors, deadlines and the table's layout.
 *
 * sql.c validates every argument (target, table name, claims, names) before
 * it calls a dialect, so a dialect only talks to its store.  A dialect never
 * builds SQL from data: the only thing spliced into statement text is the
 * table name, checked by sql.c against [A-Za-z_][A-Za-z0-9_]{0,63} (and
 * PostgreSQL's LISTEN channel, made of the same characters).
 *
 * What every dialect promises about time, beyond sql.h: nothing decides by
 * it.  take compares the version (term, term_duration) and looks at no
 * clock; renew and depose test that the lease is not released (duration >
 * 0); release sets duration to 0.  The times written (one instant of the
 * database's clock per statement, stored rounded up to the millisecond;
 * MariaDB's depose assigns gmt_modified to itself, so that a foreign
 * table's ON UPDATE CURRENT_TIMESTAMP leaves it) and read's db_expired are
 * for people and for the seed's readers.
 *
 * Private to src/sql/.
 */
#ifndef REIGN_SQL_DIALECT_H
#define REIGN_SQL_DIALECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sql.h"

#define REIGN__SQL_TABLE_MAX       64      /* longest table name (PostgreSQL: 63) */
#define REIGN__SQL_DC_MAX          128     /* data_center varchar(128) */
#define REIGN__SQL_NAME_MAX        1024    /* lock_name varchar(1024) */
#define REIGN__SQL_GUID_MAX        64      /* owner_guid varchar(64) */
#define REIGN__SQL_DEFAULT_MS      5000    /* connect and statement timeouts */
#define REIGN__SQL_TIMEOUT_MAX_MS  3600000 /* an hour: longer is a mistake */
#define REIGN__SQL_DURATION_MAX_MS (INT64_C(366) * 24 * 3600 * 1000)

typedef struct reign__sql_dialect reign__sql_dialect;

/* The part of a connection every dialect has; each dialect's own struct starts with it. */
struct reign__sqlconn {
    const reign__sql_dialect *d;
    char table[REIGN__SQL_TABLE_MAX + 1];
    char store[160]; /* "postgres reign@127.0.0.1:5432/reign", for messages */
    int connect_timeout_ms;
    int statement_timeout_ms;
    reign__logger log_store;
    const reign__logger *log; /* &log_store, or NULL: the process-wide sink */
    uint64_t statements;
    /* Set by a dialect when the connection can no longer be used (lost, or abandoned in the
     * middle of a statement after a timeout): every later call fails with REIGN_ECONNLOSS
     * without talking to the store, until the caller connects again. */
    bool broken;
    /* Set with broken when what the connection was made to is no more (SQLite: the file was
     * deleted or replaced under it): whatever was held through it is gone, not merely out of
     * reach.  The reason, for messages; NULL while it is not. */
    const char *gone;
    /* The runs table of slots was checked (and made or upgraded) on this connection (runs.c). */
    bool runs_ready;
    /* The values table and the data center's counter were checked or made (values.c). */
    bool values_ready;
    /* The candidates table was checked or made (candidates.c). */
    bool candidates_ready;
    /* The sessions and members tables were checked or made (sessions.c, members.c). */
    bool sessions_ready, members_ready;
    /* The tasks table was checked or made (tasks.c). */
    bool tasks_ready;
    /* The history table was checked or made (history.c). */
    bool history_ready;
    /* What the drains heard (reign__sql_heard_take()). */
    reign__sql_heard heard;
};

/*
 * One dialect.  Every function gets validated arguments; those returning int return what the
 * matching reign__sql_* function of sql.h returns, with err filled on failure (through
 * reign__sql_err(), so that the message names the store).
 */
struct reign__sql_dialect {
    const char *name; /* "sqlite", "mariadb", "postgres" */
    size_t size;      /* of the dialect's connection struct */
    /* c is zeroed but for the common part; on failure close() is called on it all the same. */
    int (*connect)(reign__sqlconn *c, const reign__sql_target *t, char *err, size_t errlen);
    /* reign__sql_conn_param() for this kind; NULL: it takes none. */
    int (*conn_param)(const char *key, const char *value, char *err, size_t errlen);
    void (*close)(reign__sqlconn *c);
    int (*ensure_schema)(reign__sqlconn *c, char *err, size_t errlen);
    int (*read)(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out, char *err,
                size_t errlen);
    int (*insert)(reign__sqlconn *c, const reign__lease_claim *cl, char *err, size_t errlen);
    int (*take)(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term, char *err,
                size_t errlen);
    int (*renew)(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                 size_t errlen);
    int (*release)(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                   size_t errlen);
    int (*depose)(reign__sqlconn *c, const char *dc, const char *name, uint64_t term, char *err,
                  size_t errlen);
    /* Optional: reign__sql_lease_release_ours() in one round trip, notification included (the
     * guardian's release, timed by a successor).  NULL: read, then release, then notify. */
    int (*release_ours)(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t *term, char *err,
                        size_t errlen);
    int (*listen)(reign__sqlconn *c, const char *dc, const char *const *names, size_t n, char *err,
                  size_t errlen);
    int (*listen_fd)(const reign__sqlconn *c);
    /* Optional: reign__sql_wakes_followers().  NULL: they are. */
    bool (*wakes_followers)(const reign__sql_target *t);
    /* Optional: reign__sql_settle(). */
    void (*settle)(reign__sqlconn *c);
    int (*drain_notify)(reign__sqlconn *c);
    /* hint: NULL, or what changed (reign__sql_notify_hint()); a dialect may ignore it. */
    int (*notify)(reign__sqlconn *c, const char *dc, const char *name, const char *hint, char *err,
                  size_t errlen);
    /*
     * Any other statement (the runs table of slots, src/sql/runs.c): `sql` is final, with the
     * dialect's placeholders (reign__sql_query() builds it), and args are in the order of the
     * placeholders.  Rows of a SELECT into `rows` (may be NULL: discarded); returns the rows
     * a write changed (matched, on MariaDB), 0 for a SELECT, or a negative code.  A duplicate
     * key is 0 rows, not an error.
     */
    int (*query)(reign__sqlconn *c, const char *what, const char *sql, const reign__sqlv *args,
                 size_t n_args, reign__sql_rows *rows, char *err, size_t errlen);
    /* Optional: reign__sql_plan_once().  NULL: every plan is as good as any. */
    void (*plan_once)(reign__sqlconn *c);
    /* Fragments of statement text that differ (see reign__sql_query()). */
    const char *now_ms;        /* the database's clock, Unix ms, one instant per statement */
    const char *begin;         /* a transaction that writes: takes the write lock first */
    const char *for_update;    /* a row lock on a SELECT, or "" where the transaction is enough */
    const char *on_conflict;   /* an INSERT that skips a duplicate key, or "" */
    const char *id_column;     /* an auto-increment primary key, for CREATE TABLE */
    const char *table_options; /* after CREATE TABLE (...): engine, character set */
    const char *blob_type;     /* a byte string of up to REIGN_VALUE_DATA_MAX bytes */
    char quote;                /* around table names: '"' or '`' */
    char placeholder;          /* '?': "?N" (SQLite), '$': "$N" (PostgreSQL), 0: bare '?' */
    /* The drain names what it heard (reign__sql_heard_add()); else every notice is `all`. */
    bool notices_named;
};

/* For a dialect's drain: one notice heard on its channels (its payload), or one that says
 * nothing of what changed (NULL): reign__sql_heard_take() hands them on. */
void reign__sql_heard_add(reign__sqlconn *c, const char *payload);

extern const reign__sql_dialect reign__sql_sqlite;
extern const reign__sql_dialect reign__sql_mariadb;
extern const reign__sql_dialect reign__sql_postgres;

/*
 * The statement template tmpl with every "{T}" replaced by the table name (the one thing
 * spliced into SQL; the template quotes it), allocated (reign__free() it); NULL: out of memory.
 * As long as it needs: a statement over many rows (ids written into it) has no length limit
 * but the server's.
 */
char *reign__sql_splice(const char *tmpl, const char *table);

/* Writes "<store>: <message>" into err and returns code. */
int reign__sql_err(const reign__sqlconn *c, char *err, size_t errlen, int code, const char *fmt,
                   ...) REIGN__PRINTF(5, 6);

/* A deadline `ms` from now on the monotonic clock, and what is left of one (0 when past). */
int64_t reign__sql_deadline(int ms);
int reign__sql_left_ms(int64_t deadline_ns);

/*
 * The table's layout, as each dialect reads it from its catalogue, checked in one place.
 * kind_of_type() of the dialect sorts a column's type into these.
 */
typedef enum reign__sql_coltype {
    REIGN__COL_OTHER = 0, /* unusable */
    REIGN__COL_INT,
    REIGN__COL_TEXT,
    REIGN__COL_TIME,        /* a timestamp with at least millisecond precision */
    REIGN__COL_TIME_COARSE, /* a timestamp with less: gmt_modified would lose the ms */
    REIGN__COL_BLOB
} reign__sql_coltype;

typedef struct reign__sql_column {
    char name[65];
    char type[65]; /* as the catalogue words it, for messages */
    reign__sql_coltype kind;
} reign__sql_column;

/*
 * Checks the columns of an existing table: every seed column present with a usable type, and
 * reign's own (owner_guid, payload) usable if present.  Names are compared case-insensitively
 * when fold is set (MariaDB, SQLite).  Returns 0 and sets *need_guid / *need_payload /
 * *need_session to say which of reign's columns are missing; or REIGN_EFOREIGN naming the column.
 */
int reign__sql_check_columns(const reign__sqlconn *c, const reign__sql_column *cols, size_t n,
                             bool fold, bool *need_guid, bool *need_payload, bool *need_session,
                             char *err, size_t errlen);

/*
 * A unique index makes the row of (data_center, lock_name) unique - the whole of mutual
 * exclusion rests on it - if its columns are all among those two.  Given the columns of one
 * unique index, says whether it does.
 */
bool reign__sql_unique_ok(const char *const *cols, size_t n, bool fold);

/*
 * The notice channel of (dc, name), PostgreSQL's and SQLite's: "reign_" + the table (at most 32
 * characters) + "_" + 16 hex digits of a 64-bit FNV-1a hash of dc NUL name - an identifier (at most
 * 55 characters of [A-Za-z0-9_]) however long or strange dc and name are.
 */
void reign__sql_channel(char out[64], const char *table, const char *dc, const char *name);

/* A notice's payload into pl (initialized here; the caller frees it): the name, and the hint
 * after a newline (names hold none).  0, or REIGN_ENOMEM with err set. */
int reign__sql_notice_payload(reign__sqlconn *c, reign__buf *pl, const char *name, const char *hint,
                              char *err, size_t errlen);

/* Replaces every occurrence of secret in s by "***" (in place); for messages of clients. */
void reign__sql_scrub(char *s, const char *secret);

/* Strips trailing newlines and turns inner ones into "; ", for one-line messages. */
void reign__sql_one_line(char *s);

#endif
