/*
 * sql.h - the SQL lease backend's bottom layer: one blocking connection to
 * SQLite, MariaDB or PostgreSQL, the lease table, and the statements of
 * the lease protocol (SOFARegistry's distribute_lock), each in the
 * dialect of its store.
 *
 * Everything here blocks, bounded by the connect and statement timeouts: it
 * runs on the SQL client's worker thread, never on the loop thread (the
 * worker and the hand-off to the loop sit on top of this layer).
 *
 * The table (name configurable, default distribute_lock) has the seed's
 * columns, so a SOFARegistry table can be read, plus reign's own, added by
 * reign__sql_ensure_schema() when missing:
 *
 *   id             auto-increment primary key            (seed)
 *   data_center    varchar(128), part of the unique key  (seed)
 *   lock_name      varchar(1024), part of the unique key (seed)
 *   owner          varchar(512): the candidate id        (seed)
 *   duration       bigint: lease length in ms            (seed)
 *   term           bigint unsigned: +1 per takeover = the fencing token (seed)
 *   term_duration  bigint unsigned: renewals in this term (seed)
 *   gmt_create, gmt_modified  timestamp(3), the database's clock (seed)
 *   owner_guid     varchar(64): a random id per join; a lease is ours only if
 *                  owner AND owner_guid match, so a process restarted with
 *                  the same id never mistakes its predecessor's lease for its
 *                  own (reign)
 *   payload        blob/bytea: the leader's payload (reign)
 *
 * No clock decides who leads, neither the database's nor a host's wall clock
 * (Kubernetes' client-go judges its leases the same way).  A lease has a
 * version, (term, term_duration): every renewal adds one to term_duration,
 * every takeover one to term.  A follower takes a lease over only when it
 * has seen it released (duration = 0, written by the holder or its
 * guardian), or has seen the same version for a whole duration on its own
 * monotonic clock, counted from the moment its read returned; the take is a
 * compare-and-set on that version.  The holder counts its guarantee from
 * the moment it SENT its last successful renewal, which is before the row
 * changed, which is before any follower could see the change: so the
 * follower's duration ends after the holder's guarantee, whatever the
 * clocks on the walls say.  gmt_modified and gmt_create stay for people
 * and for the seed's readers (expired <=> db_now >= gmt_modified +
 * duration, which a released lease always is); reign reads them for
 * display only.
 *
 * Private to the library.
 */
#ifndef REIGN_SQL_H
#define REIGN_SQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reign/limits.h>

#include "core.h"

typedef enum reign__sql_kind {
    REIGN__SQL_SQLITE = 1,
    REIGN__SQL_MARIADB,
    REIGN__SQL_POSTGRES
} reign__sql_kind;

typedef struct reign__sql_target {
    reign__sql_kind kind;
    const char *path; /* SQLite: the database file (created if missing) */
    const char *host; /* MariaDB, PostgreSQL */
    int port;         /* 0: the default port */
    const char *user;
    const char *password; /* never logged */
    const char *database;
    /* MariaDB, PostgreSQL: more connection parameters for the client library, as "key=value"
     * lines (keys checked by reign__sql_conn_param()); NULL: none.  May name files, never hold
     * a secret. */
    const char *params;
    const char *table;        /* NULL: "distribute_lock"; [A-Za-z_][A-Za-z0-9_]{0,63} */
    int connect_timeout_ms;   /* 0: 5000 */
    int statement_timeout_ms; /* 0: 5000; SQLite: the busy timeout */
    const reign__logger *log;
} reign__sql_target;

typedef struct reign__sqlconn reign__sqlconn;

/*
 * Loads the client library of a kind of store (dl.h: libsqlite3.so.0, libmariadb.so.3 or
 * libpq.so.5), once per process; reign__sql_connect() does it too.  0, or REIGN_ENOTSUP with
 * err saying which library and Debian package the store needs and why it did not load (the
 * same outcome on every later call).
 */
int reign__sql_load(reign__sql_kind kind, char *err, size_t errlen);

/* The client libraries, defined by sqlite.c, mariadb.c and postgres.c (core/dl.h). */
struct reign__dl_library;
extern const struct reign__dl_library reign__sql_sqlite_lib;
extern const struct reign__dl_library reign__sql_mariadb_lib;
extern const struct reign__dl_library reign__sql_postgres_lib;

/*
 * Connects.  Errors (err gets one line naming the store, never the
 * password): REIGN_ECONNECT (unreachable, within the connect timeout),
 * REIGN_EAUTH (wrong user or password), REIGN_ENOENT (no such database),
 * REIGN_EACCES (no permission), REIGN_EINVAL (bad table name), REIGN_ENOTSUP (the
 * store's client library is missing: reign__sql_load()).
 */
int reign__sql_connect(reign__sqlconn **ret, const reign__sql_target *t, char *err, size_t errlen);

/*
 * Whether `key` is a connection parameter that a store of `kind` hands to its client library
 * (libpq's keywords, Connector/C's TLS and option-file options): 1 if so, 0 if it knows no
 * such parameter, or REIGN_EURI with err saying why it is refused (one reign sets itself, one
 * that would carry a secret, a malformed value).  May load the client library (reign__sql_load()).
 */
int reign__sql_conn_param(reign__sql_kind kind, const char *key, const char *value, char *err,
                          size_t errlen);
/* Splits params (a copy: changed in place) into at most max keys and values; the count. */
size_t reign__sql_split_params(char *params, const char **keys, const char **vals, size_t max);
void reign__sql_close(reign__sqlconn *c);
reign__sql_kind reign__sql_kind_of(const reign__sqlconn *c);

/*
 * Creates the table if missing and adds reign's columns if missing
 * (idempotent; safe when several processes do it at once).  A table whose
 * layout is foreign (a seed column missing or of an unusable type) is
 * refused with REIGN_EFOREIGN, naming the column; nothing is changed then.
 */
int reign__sql_ensure_schema(reign__sqlconn *c, char *err, size_t errlen);

typedef struct reign__lease {
    bool exists;
    char owner[REIGN_ID_MAX + 1];
    char owner_guid[65];
    void *payload; /* allocated (reign__free), may be NULL */
    size_t payload_len;
    uint64_t term; /* the fencing token */
    uint64_t term_duration;
    int64_t duration_ms;
    int64_t created_ms;  /* Unix ms, database clock */
    int64_t modified_ms; /* Unix ms, database clock */
    int64_t db_now_ms;   /* the database's clock at the read */
    bool db_expired;     /* the database clock's view: for display only, never a decision */
    bool released;       /* duration <= 0: given back, anyone may take it at once */
    char session[65];    /* the holder's session (sessions.h), "" for a lease of its own */
} reign__lease;

void reign__lease_clear(reign__lease *l);

/*
 * What a follower has seen of a lease: its version and the moment (CLOCK_MONOTONIC) it first
 * saw it, which is the moment the read that showed it returned.  Zeroed: nothing seen.
 */
typedef struct reign__lease_seen {
    bool known;
    uint64_t term, renewals;
    int64_t since_ns;
} reign__lease_seen;

/*
 * Counts a read of `l` that returned at `read_ns` into `seen` (a new version restarts the
 * count) and returns the moment `l` may be taken over: `read_ns` if it is released, else its
 * duration after this version was first seen.  INT64_MAX if there is no row (nothing to take
 * over: insert), or if its duration is beyond any lease (a foreign row: year-long at most).
 * Pure: the follower's side of the lease's safety (the top of this file).
 */
int64_t reign__lease_free_at(reign__lease_seen *seen, const reign__lease *l, int64_t read_ns);

/*
 * Designation.  A designation is a mark in the row's owner_guid: REIGN__SQL_DESIGNATED followed
 * by the designee's guid (a candidate's guid is hex, so never a mark).  Written at the holder's
 * term over the holder's guid, it makes the holder's next renewal fail: the holder reads the
 * row, demotes itself (reason handoff) and releases it under the mark.  A released row that
 * carries a mark is free for the designee alone: another follower may take it only once its
 * version has stood still for a whole lease on its own clock (the designee died), the rule for
 * any lease, and the take of a follower woken by a notification (take_released) refuses a
 * marked row in its statement.  The leader's compare-and-set remains the only thing that
 * decides who leads.
 */
#define REIGN__SQL_DESIGNATED '>'

/* The guid a row is designated to (a pointer into l), or NULL. */
const char *reign__lease_designee(const reign__lease *l);

/* reign__lease_free_at() for the candidate `guid`: a released row designated to another is
 * free for it only `wait_ns` (its lease) after its version was first seen. */
int64_t reign__lease_free_for(reign__lease_seen *seen, const reign__lease *l, int64_t read_ns,
                              const char *guid, int64_t wait_ns);

/*
 * designate: if the row of (dc, name) is at `term` and carries `holder_guid` (the leader's
 * guid, the mark of an earlier designation, or REIGN__SQL_DEPOSED, as read), marks it
 * designated to `designee` and adds one to term_duration (a new version: followers count a
 * whole lease from there).  Released or held, the mark applies; the holder and followers are
 * notified where the store notifies.  1, 0 (the row moved on), or a negative code.
 */
int reign__sql_lease_designate(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                               const char *holder_guid, const char *designee, char *err,
                               size_t errlen);

/* Reads the lease of (data_center, name).  0 (exists false if no row). */
int reign__sql_lease_read(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                          char *err, size_t errlen);

/* The identity and payload a candidate writes. */
typedef struct reign__lease_claim {
    const char *dc;
    const char *name;
    const char *owner; /* candidate id */
    const char *owner_guid;
    const void *payload;
    size_t payload_len;
    int64_t duration_ms;
    uint64_t expect_renewals; /* take: the term_duration of the version it takes over */
    bool take_released;       /* take: only if released (at any term_duration) */
    const char *session;      /* insert, take: the claimant's session, NULL or "" for none */
} reign__lease_claim;

/*
 * The statements.  Each returns 1 if it changed the row as asked, 0 if the
 * compare-and-set did not match (someone else holds it, the term moved, not
 * expired...), or a negative code.  They are single statements (SQLite:
 * in BEGIN IMMEDIATE ... COMMIT), retried internally on SQLite's
 * SQLITE_BUSY until the statement timeout, so "database is locked" never
 * surfaces as an error.
 *
 * insert:  creates the row with term 1 held by the claimant, if there is no
 *          row (1), else changes nothing (0).
 * take:    takes over the lease at the version the caller saw, (expected_term,
 *          cl->expect_renewals): owner, guid, payload, duration := the
 *          claimant's, term := term + 1, term_duration := 0, gmt_modified :=
 *          db now.  The caller takes only a lease it saw released, or saw at
 *          that version for a whole duration (see the top of this file): the
 *          statement itself looks at no clock.  With cl->take_released, it
 *          takes the lease at expected_term only if it is released, whatever
 *          its term_duration (a follower woken by a notification that may be
 *          a release).  *new_term gets the term on success.
 * renew:   gmt_modified := db now, term_duration := term_duration + 1, if
 *          owner, guid and term match and the lease is not released.
 * release: duration := 0 (released: anyone may take it at once), if owner,
 *          guid and term match.  A deposed holder releases with owner_guid =
 *          REIGN__SQL_DEPOSED (see depose below).
 *
 * insert, take and renew refuse (REIGN_EINVAL) a claim whose owner_guid is
 * REIGN__SQL_DEPOSED: a candidate must never look like a deposed lease.
 */
int reign__sql_lease_insert(reign__sqlconn *c, const reign__lease_claim *cl, char *err,
                            size_t errlen);
int reign__sql_lease_take(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term,
                          uint64_t *new_term, char *err, size_t errlen);
int reign__sql_lease_renew(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term,
                           char *err, size_t errlen);
int reign__sql_lease_release(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term,
                             char *err, size_t errlen);

/*
 * release_ours: reads the lease of (cl->dc, cl->name) and, if it is not released
 * and carries cl->owner and cl->owner_guid, releases it at the term read (and
 * notifies, where the store needs it).  For the guardian, which knows a dead
 * client's joins but not the terms it held.  1 (released; *term set), 0 (not
 * ours, or released already), or a negative code.
 */
int reign__sql_lease_release_ours(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t *term,
                                  char *err, size_t errlen);

/* The owner_guid a deposed lease carries; never a candidate's (see above). */
#define REIGN__SQL_DEPOSED "-deposed-"

/*
 * depose: marks the lease of (dc, name) at `term`, if not released, as
 * deposed: owner_guid := REIGN__SQL_DEPOSED, and nothing else changes -
 * owner, term, term_duration, duration, payload and gmt_modified stay, so
 * the version followers count from does not move.  Returns 1 if the row is
 * held at that term and now deposed (also when it already was: deposing
 * twice is harmless), 0 if there is no held lease at that term (no row,
 * released, the term moved on), or a negative code.
 *
 * Used by `reign cede`: the holder's next renew fails on the guid, so it
 * demotes itself, then releases the row with claim.owner = its id and
 * claim.owner_guid = REIGN__SQL_DEPOSED, and followers take over.  A
 * follower can never take a deposed lease before it runs out or is released
 * (take still wants the version unchanged for a whole duration).  The release must come from the
 * deposed holder only after it has demoted itself: the row no longer names its guid, so the
 * statement cannot tell it from another process with the same id.
 */
int reign__sql_lease_depose(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                            char *err, size_t errlen);

/*
 * Change notification, where the store can give it (PostgreSQL
 * LISTEN/NOTIFY; SQLite: its notice file, sqlite_notices.h; MariaDB: a
 * lease's followers only, woken when its leader lets go of it,
 * mariadb_wake.h, and -1 while none waits).  reign__sql_notify() is sent by
 * a writer after a change others wait for (PostgreSQL: NOTIFY on a channel
 * derived from the table and name; SQLite: a line in the notice file on
 * that channel; MariaDB: nothing, the lock is the signal).
 * reign__sql_listen_fd() is a descriptor that becomes readable on a change;
 * reign__sql_drain_notify() consumes what is pending and says whether
 * anything concerned the names listened to.
 */
int reign__sql_listen(reign__sqlconn *c, const char *dc, const char *name, char *err,
                      size_t errlen);
/* The same for n names at once (PostgreSQL: one statement for them all); no limit on how many
 * a connection listens to. */
int reign__sql_listen_many(reign__sqlconn *c, const char *dc, const char *const *names, size_t n,
                           char *err, size_t errlen);
int reign__sql_listen_fd(const reign__sqlconn *c);
int reign__sql_drain_notify(reign__sqlconn *c);
/* Whether a lease's followers on t are woken when it is let go (PostgreSQL and SQLite: always;
 * MariaDB: unless its URI says wakeup=poll).  Its other watchers are woken only where
 * reign__sqlw_notifies() says so. */
bool reign__sql_wakes_followers(const reign__sql_target *t);
/* What a connection defers until a statement's answer has gone back to its caller (MariaDB: the
 * wake-up lock of a lease just won, which may wait a moment).  The worker calls it after each
 * answer; any caller may. */
void reign__sql_settle(reign__sqlconn *c);
/*
 * What the drains heard since the last take, for readers that can narrow what they read by it:
 * the names notified on this connection's channels without a hint, once each however often
 * (`names`); those told of as a lease won (the hint REIGN__SQL_HEARD_WON, sent by the worker
 * after a take or an insert: `won`, so that the winner need not read its row again); and the
 * notices that carry another hint, as their writer sent them, "name\nhint"
 * (reign__sql_notify_hint(): a result's task ids; at most REIGN__SQL_HEARD_MAX).  `all` says a
 * change came that the names do not tell (MariaDB's wake-up, a notice without a name, more than
 * REIGN__SQL_HEARD_NAMES names): then every reader reads all it follows.  reign__sql_heard_take()
 * moves them to *out (the connection's starts again empty); reign__sql_heard_free() frees a taken
 * one.
 */
typedef struct reign__sql_heard {
    char **v;
    size_t n;
    reign__strset names, won;
    bool all;
} reign__sql_heard;
#define REIGN__SQL_HEARD_MAX   256
#define REIGN__SQL_HEARD_NAMES 65536
#define REIGN__SQL_HEARD_WON   "won"
/* Whether h may concern `name`: all, or the name told of (a win included). */
bool reign__sql_heard_has(const reign__sql_heard *h, const char *name);
void reign__sql_heard_take(reign__sqlconn *c, reign__sql_heard *out);
void reign__sql_heard_free(reign__sql_heard *h);
int reign__sql_notify(reign__sqlconn *c, const char *dc, const char *name, char *err,
                      size_t errlen);
/* The same, telling what changed besides (`hint`: no '\n', at most REIGN__SQL_HINT_MAX bytes),
 * where the store carries it (PostgreSQL: the notice's payload, "name\nhint"); the others
 * tell that something changed, as reign__sql_notify(). */
#define REIGN__SQL_HINT_MAX 4000
int reign__sql_notify_hint(reign__sqlconn *c, const char *dc, const char *name, const char *hint,
                           char *err, size_t errlen);

/* ---- other statements: the runs table of slots (runs.c), values (values.c) -------------- */

/* A parameter of a statement. */
typedef enum reign__sqlv_kind {
    REIGN__SQLV_NULL = 0,
    REIGN__SQLV_INT,
    REIGN__SQLV_TEXT,
    REIGN__SQLV_BLOB /* bytes: s and len (len 0 binds NULL, as an empty payload is stored) */
} reign__sqlv_kind;
typedef struct reign__sqlv {
    reign__sqlv_kind kind;
    int64_t i;
    const char *s;
    size_t len;
} reign__sqlv;

#define REIGN__SQLV_I(v)    ((reign__sqlv){.kind = REIGN__SQLV_INT, .i = (v)})
#define REIGN__SQLV_S(v)    ((reign__sqlv){.kind = REIGN__SQLV_TEXT, .s = (v)})
#define REIGN__SQLV_B(p, n) ((reign__sqlv){.kind = REIGN__SQLV_BLOB, .s = (p), .len = (n)})

/* The rows of a SELECT, every cell as text or, for a byte-string column, as its bytes (NULL:
 * SQL NULL).  Each cell is followed by a NUL that its length does not count. */
typedef struct reign__sql_rows {
    size_t n_rows, n_cols;
    char **cells; /* n_rows * n_cols */
    size_t *lens; /* n_rows * n_cols */
} reign__sql_rows;

void reign__sql_rows_free(reign__sql_rows *r);
/* The cell (row, col), or NULL (SQL NULL, or out of range). */
const char *reign__sql_cell(const reign__sql_rows *r, size_t row, size_t col);
/* Its length in bytes (0 for NULL). */
size_t reign__sql_cell_len(const reign__sql_rows *r, size_t row, size_t col);
/* Appends a row of n_cols cells (copied, lens[i] bytes each, or up to a NUL when lens is NULL;
 * NULL stays NULL); 0 or REIGN_ENOMEM. */
int reign__sql_rows_add(reign__sql_rows *r, const char *const *cells, const size_t *lens);

/*
 * Runs one statement written once for every dialect.  In `tmpl`:
 *   {T}  the lease table          {R}  the runs table, "<lease table>_runs"
 *   {V}  the values table, "<lease table>_values"
 *   {C}  the candidates table, "<lease table>_candidates"
 *   {S}  the sessions table, "<lease table>_sessions"
 *   {M}  the members table, "<lease table>_members"
 *   {K}  the tasks table, "<lease table>_tasks"
 *   {H}  the history table, "<lease table>_history" (all quoted)
 *   {1}, {2}, ...  parameter N of args (up to REIGN__SQL_ARGS_MAX, each as often as needed)
 *   {NOW}  the database's clock as Unix ms (a bigint)
 *   {BEGIN}  the start of a writing transaction   {FOR_UPDATE}  a row lock, where needed
 *   {ON_CONFLICT}  ", skip a duplicate key" (at the end of an INSERT), where needed
 *   {ID}  an auto-increment primary key column's definition
 *   {TABLE_OPTIONS}  what follows CREATE TABLE (...) (MariaDB: InnoDB, utf8mb4_bin)
 *   {BLOB}  the type of a column of up to REIGN_VALUE_DATA_MAX bytes
 * Returns what the dialect's query() does (rows changed, or 0 and `rows`).  Data never goes
 * into the text: parameters only.
 */
int reign__sql_query(reign__sqlconn *c, const char *what, const char *tmpl, const reign__sqlv *args,
                     size_t n_args, reign__sql_rows *rows, char *err, size_t errlen);
/*
 * The next reign__sql_query() of the current transaction may keep one plan for every value of
 * its parameters: a statement whose plan cannot depend on the table's contents (an INSERT of
 * values), so that PostgreSQL plans it once per connection, not at every call (its sessions
 * plan every other statement for its values: postgres.c).  Outside a transaction, or on the
 * other stores, nothing changes.
 */
void reign__sql_plan_once(reign__sqlconn *c);
/* The most parameters a statement may have, and the most places they may take in it (a
 * dialect with bare '?' placeholders, MariaDB, binds a parameter once per place): enough for a
 * statement that writes a batch's results (REIGN__SQLW_BATCH_MAX) with five parameters each,
 * each row's id in five places. */
#define REIGN__SQL_ARGS_MAX   512
#define REIGN__SQL_PLACES_MAX 1024

/* A side table's name, "<table>_<suffix>" (runs, values, candidates); REIGN_EINVAL (err says
 * why) if that is too long for the store. */
int reign__sql_side_table(const reign__sqlconn *c, const char *suffix, char *out, size_t outlen,
                          char *err, size_t errlen);
/* A cell as a whole decimal number (false: NULL, empty, or not one). */
bool reign__sql_parse_i64(const char *s, int64_t *out);
/* Ends the open transaction of `c` without its changes (nothing if the connection broke). */
void reign__sql_rollback(reign__sqlconn *c);
/* The columns of the side table "<table>_<suffix>", one a row (none: no such table). */
int reign__sql_side_columns(reign__sqlconn *c, const char *suffix, reign__sql_rows *out, char *err,
                            size_t errlen);
/* Whether `cols` (as above) has column `name` (case-insensitively). */
bool reign__sql_has_column(const reign__sql_rows *cols, const char *name);
/* The runs table's name, "<table>_runs" (as above). */
int reign__sql_runs_table(const reign__sqlconn *c, char *out, size_t outlen, char *err,
                          size_t errlen);
/* The lease table's name. */
const char *reign__sql_table(const reign__sqlconn *c);

/* The names of the elections of data center dc, sorted (catalog.c). */
int reign__sql_catalog_list(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                            size_t errlen);
/*
 * `reign rm` of election `name`, whose lease `l` was read released or run out (its version
 * unchanged for a whole duration on the caller's clock: reign__sql_lease_still()): releases and
 * clears it in one compare-and-set on that version - duration 0, owner '', owner_guid
 * REIGN__SQL_REMOVED, no payload - keeping its term, so that the election's next leader takes
 * term + 1 as after any release (a deleted row would be made again at term 1: tokens would go
 * back).  1 if cleared, 0 if the row moved on since the read (taken, renewed or released by
 * another), or a negative code.
 */
int reign__sql_catalog_clear(reign__sqlconn *c, const char *dc, const reign__lease *l,
                             const char *name, char *err, size_t errlen);
/* The owner_guid of a row cleared by `reign rm` (with owner ''): never a candidate's guid, nor
 * REIGN__SQL_DEPOSED.  Such a row is no election to list, remove or query. */
#define REIGN__SQL_REMOVED "-removed-"
/* Whether `l` (as read) is a row cleared by `reign rm`. */
bool reign__sql_lease_removed(const reign__lease *l);
/*
 * Whether the held lease `l` (just read) has run out, judged as a follower judges it (no wall
 * clock, the database's included): reads it again a whole duration after this read, and it has
 * if the version is unchanged then.  Blocks for that duration (`reign rm`, on its own client's
 * worker); a duration beyond max_wait_ms is not waited for (0).  1 (run out: `l` is the second
 * read), 0 (in use: renewed, taken or released meanwhile, or too long to wait; `l` is the
 * second read when there was one), or a negative code.
 */
int reign__sql_lease_still(reign__sqlconn *c, const char *dc, const char *name, reign__lease *l,
                           int64_t max_wait_ms, char *err, size_t errlen);

/*
 * Whether what `c` was made to is gone (SQLite: its file was deleted or replaced under it), so
 * that every lease held through it is lost, not just out of reach: the reason (a phrase
 * without the store's name), or NULL.  Such a connection is broken: close it and connect again,
 * which opens the path anew.
 */
const char *reign__sql_gone(const reign__sqlconn *c);

/* Counts the statements sent on this connection (for the benchmark). */
uint64_t reign__sql_statements(const reign__sqlconn *c);

#endif
