/*
 * values.h - reign's values (<reign/value.h>) in a SQL store: the table "<lease table>_values",
 * one row per value, beside the lease table whose rows are the elections.
 *
 *   data_center   as in the lease table
 *   value_key     the value's key (<reign/value.h>: at most 512 bytes of [A-Za-z0-9._:/-]);
 *                 the row whose value_key is '' (never a key) is the data center's counter
 *   version       0 when the value is made, +1 per write: compare-and-set on this
 *   data          the payload (NULL: none)
 *   czxid, mzxid  the counter when the value was made and when it was last written
 *   created_ms, modified_ms   the database's clock, Unix ms
 *   PRIMARY KEY (data_center, value_key)
 *
 * The counter plays ZooKeeper's zxid: every write of a value of the data center (a delete too)
 * first adds one to it, in the write's transaction, so that the numbers of writes grow in the
 * order in which they were made, across keys.  That also orders the writes: each one locks the
 * counter's row first (SQLite: BEGIN IMMEDIATE, which serialises every writer of the file), so
 * a compare-and-set reads the version with no other write between its read and its write.  A
 * value deleted and made again has a new czxid, which is how a watcher tells "made again"
 * from "changed".
 *
 * The table is made on the first write and upgraded like the lease table; one whose layout is
 * foreign is refused (REIGN_EFOREIGN), never changed.  Before it exists every value reads as
 * absent.  A row reign could not have written (a negative version, a zxid out of order, a
 * payload over REIGN_VALUE_DATA_MAX) reads as REIGN_EFOREIGN.
 *
 * PostgreSQL: each write sends, in its transaction (so, on commit), a NOTIFY on the channel of
 * REIGN__VALUES_LISTEN, one per data center, which the watchers LISTEN on.  SQLite: the file's
 * change is the notice.  MariaDB: the watchers poll.
 *
 * Everything here blocks; it runs on the SQL client's worker thread (worker.h's CALL).
 * Private to the library.
 */
#ifndef REIGN_SQL_VALUES_H
#define REIGN_SQL_VALUES_H

#include <reign/limits.h>

#include "sql.h"

/* The name watchers listen on (reign__sql_listen()), for every value of a data center: never
 * an election's name, which has no '/'. */
#define REIGN__VALUES_LISTEN "reign/values"

typedef struct reign__value_row {
    bool exists;
    int64_t version;
    int64_t czxid, mzxid;
    int64_t created_ms, modified_ms;
    void *data; /* allocated (reign__free), NULL when data_len is 0 */
    size_t data_len;
} reign__value_row;

void reign__value_row_clear(reign__value_row *r);

/* Reads the value `key` into *out (exists false if there is none).  0 or a negative code. */
int reign__values_read(reign__sqlconn *c, const char *dc, const char *key, reign__value_row *out,
                       char *err, size_t errlen);

/*
 * Writes `key` as reign_value_set() does, `version` being REIGN_VALUE_ANY, REIGN_VALUE_ABSENT
 * or the version to compare with.  0 and *out (what was written, without the data), or
 * REIGN_EEXIST, REIGN_EBADVERSION, REIGN_ENOENT (the compare-and-set failed; nothing was
 * written), or another negative code.
 */
int reign__values_set(reign__sqlconn *c, const char *dc, const char *key, const void *data,
                      size_t len, int64_t version, reign__value_row *out, char *err, size_t errlen);

/*
 * Deletes `key` at any version (REIGN_VALUE_ANY) or at `version`.  0 and *version_out (the
 * version deleted), or REIGN_ENOENT, REIGN_EBADVERSION, or another negative code.
 */
int reign__values_delete(reign__sqlconn *c, const char *dc, const char *key, int64_t version,
                         int64_t *version_out, char *err, size_t errlen);

/* The keys of the values of data center dc, sorted, one a row (no table yet: none), for
 * `reign ls`.  0 or a negative code. */
int reign__values_keys(reign__sqlconn *c, const char *dc, reign__sql_rows *keys, char *err,
                       size_t errlen);

#endif
