/*
 * values.c - reign's values in a SQL store (values.h): the table and the statements, written
 * once for the three dialects through reign__sql_query().
 *
 * A write is one transaction: the data center's counter is bumped first (its row lock, or
 * SQLite's write lock, is held from then to COMMIT, so every write of a value waits for the
 * one before to end), then the value's row is read, the compare-and-set decided here, and the
 * row written with the version read in its WHERE clause too.  Since every writer takes the
 * counter's lock before it reads, the read sees every write committed before it, and nothing
 * can be written between the read and the write.
 */
#include "values.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dialect.h"
#include "layout.h"
#include "side.h"

void reign__value_row_clear(reign__value_row *r)
{
    if (!r)
        return;
    reign__free(r->data);
    memset(r, 0, sizeof *r);
}

/* ---- the table ------------------------------------------------------------------------------- */

static const char *const required[] = {REIGN__VALUES_REQUIRED_COLUMNS};

static int create_table(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = reign__sql_query(c, "creating the values table",
                              "CREATE TABLE IF NOT EXISTS {V} ("
                              "data_center varchar(128) NOT NULL, "
                              "value_key varchar(512) NOT NULL, "
                              "version bigint NOT NULL, "
                              "data {BLOB}, "
                              "czxid bigint NOT NULL, "
                              "mzxid bigint NOT NULL, "
                              "created_ms bigint NOT NULL, "
                              "modified_ms bigint NOT NULL, "
                              "PRIMARY KEY (data_center, value_key))"
                              "{TABLE_OPTIONS}",
                              NULL, 0, NULL, err, errlen);
    if (rc >= 0)
        reign__log(c->log, REIGN_LOG_INFO, "%s: made the values table of %s", c->store, c->table);
    return rc < 0 ? rc : 0;
}

/* The counter of the data center, made if missing (a duplicate is no error: 0 rows), from the
 * largest write number of its values, should it have been removed by hand. */
static int make_counter(reign__sqlconn *c, const char *dc, char *err, size_t errlen)
{
    reign__sqlv arg = REIGN__SQLV_S(dc);
    int rc = reign__sql_query(c, "making the values counter",
                              "INSERT INTO {V} (data_center, value_key, version, data, czxid, "
                              "mzxid, created_ms, modified_ms) SELECT {1}, '', "
                              "COALESCE(MAX(mzxid), 0), NULL, 0, 0, {NOW}, {NOW} FROM {V} WHERE "
                              "data_center = {1}{ON_CONFLICT}",
                              &arg, 1, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

/* Checks an existing table's layout: 0 (usable, or *missing: no table), or REIGN_EFOREIGN. */
static int check_layout(reign__sqlconn *c, bool *missing, char *err, size_t errlen)
{
    reign__sql_rows cols;
    int rc = reign__sql_side_columns(c, REIGN__SQL_VALUES_SUFFIX, &cols, err, errlen);
    if (rc < 0)
        return rc;
    *missing = cols.n_rows == 0;
    for (size_t i = 0; !*missing && i < sizeof required / sizeof required[0]; i++) {
        if (!reign__sql_has_column(&cols, required[i])) {
            char values[REIGN__SQL_TABLE_MAX + 16];
            reign__sql_side_table(c, REIGN__SQL_VALUES_SUFFIX, values, sizeof values, NULL, 0);
            rc = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                "table %s has no column %s: not a values table reign can use",
                                values, required[i]);
            break;
        }
    }
    reign__sql_rows_free(&cols);
    return rc;
}

/* check_layout() for a read (side.h): only a foreign table's REIGN_EFOREIGN matters there. */
static int check_table(reign__sqlconn *c, char *err, size_t errlen)
{
    bool missing;
    return check_layout(c, &missing, err, errlen);
}

/* Makes, checks or upgrades the table, and the data center's counter (once per connection). */
static int ensure(reign__sqlconn *c, const char *dc, char *err, size_t errlen)
{
    if (c->values_ready)
        return 0;
    bool missing;
    int rc = check_layout(c, &missing, err, errlen);
    if (rc < 0)
        return rc;
    if (missing && (rc = create_table(c, err, errlen)) < 0) {
        /* Another process may have made it at the same moment: look again. */
        char ignored[256];
        if (check_layout(c, &missing, ignored, sizeof ignored) < 0 || missing)
            return rc;
    }
    if ((rc = make_counter(c, dc, err, errlen)) < 0)
        return rc;
    c->values_ready = true;
    return 0;
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int foreign_row(reign__sqlconn *c, const char *key, const char *what, char *err,
                       size_t errlen)
{
    return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                          "the row of value '%s' in the values table of %s holds %s reign did not "
                          "write",
                          key, c->table, what);
}

/* The columns a value is read with, in this order. */
#define ROW_COLUMNS   "version, czxid, mzxid, created_ms, modified_ms, data"
#define N_ROW_COLUMNS 6

/* Row `i` of a result whose columns start at `col` as ROW_COLUMNS, the data only if with_data
 * (a NULL version: no row, as a LEFT JOIN's empty side). */
static int parse_row(reign__sqlconn *c, const char *key, const reign__sql_rows *rs, size_t i,
                     size_t col, bool with_data, reign__value_row *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!reign__sql_cell(rs, i, col))
        return 0;
    int64_t v[5];
    for (size_t k = 0; k < 5; k++)
        if (!reign__sql_parse_i64(reign__sql_cell(rs, i, col + k), &v[k]))
            return foreign_row(c, key, "numbers", err, errlen);
    if (v[0] < 0 || v[0] > INT32_MAX || v[1] <= 0 || v[2] < v[1])
        return foreign_row(c, key, "a version or write numbers", err, errlen);
    out->exists = true;
    out->version = v[0];
    out->czxid = v[1];
    out->mzxid = v[2];
    out->created_ms = v[3];
    out->modified_ms = v[4];
    if (!with_data)
        return 0;
    size_t len = reign__sql_cell_len(rs, i, col + 5);
    if (len > REIGN_VALUE_DATA_MAX) {
        out->exists = false;
        return foreign_row(c, key, "a payload larger than reign writes", err, errlen);
    }
    if (len) {
        if (!(out->data = reign__memdup(reign__sql_cell(rs, i, col + 5), len))) {
            out->exists = false;
            return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
        }
        out->data_len = len;
    }
    return 0;
}

int reign__values_read(reign__sqlconn *c, const char *dc, const char *key, reign__value_row *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(key)};
    reign__sql_rows rs;
    /* A watch reads when the store says something changed. */
    int rc = reign__sql_side_read(c, "reading a value",
                                  "SELECT " ROW_COLUMNS " FROM {V} WHERE data_center = {1} AND "
                                  "value_key = {2}",
                                  args, 2, &rs, c->values_ready, check_table, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* no table yet: no value */
    if (rc < 0)
        return rc;
    rc = rs.n_rows ? parse_row(c, key, &rs, 0, 0, true, out, err, errlen) : 0;
    reign__sql_rows_free(&rs);
    return rc;
}

/* ---- writes ---------------------------------------------------------------------------------- */

/* What a write's transaction read after it took the counter. */
typedef struct current {
    int64_t zxid;   /* this write's number */
    int64_t now_ms; /* the database's clock, for the times written */
    reign__value_row row;
} current;

/*
 * BEGIN, the counter bumped (its lock held from here on), then the counter, the clock and the
 * row of `key` read in one statement.  0 with the transaction open, or a negative code with it
 * rolled back.
 */
static int tx_open(reign__sqlconn *c, const char *dc, const char *key, current *cur, char *err,
                   size_t errlen)
{
    int rc = ensure(c, dc, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(key)};
    for (int attempt = 0;; attempt++) {
        if ((rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen)) < 0)
            return rc;
        rc = reign__sql_query(c, "counting a write",
                              "UPDATE {V} SET version = version + 1, modified_ms = {NOW} WHERE "
                              "data_center = {1} AND value_key = ''",
                              args, 1, NULL, err, errlen);
        if (rc != 0 || attempt > 0)
            break;
        /* The counter's row is gone (deleted by hand): make it again, outside the transaction,
         * and start over. */
        reign__sql_rollback(c);
        if ((rc = make_counter(c, dc, err, errlen)) < 0)
            return rc;
    }
    if (rc == 0)
        rc = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                            "the values counter of data center %s cannot be made", dc);
    reign__sql_rows rs = {0};
    if (rc > 0)
        rc = reign__sql_query(c, "reading a value to write it",
                              "SELECT n.version, {NOW}, v.version, v.czxid, v.mzxid, "
                              "v.created_ms, v.modified_ms FROM {V} n LEFT JOIN {V} v ON "
                              "v.data_center = n.data_center AND v.value_key = {2} WHERE "
                              "n.data_center = {1} AND n.value_key = ''",
                              args, 2, &rs, err, errlen);
    if (rc >= 0 &&
        (rs.n_rows != 1 || !reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &cur->zxid) ||
         !reign__sql_parse_i64(reign__sql_cell(&rs, 0, 1), &cur->now_ms) || cur->zxid <= 0))
        rc = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                            "the values counter of data center %s holds no number", dc);
    if (rc >= 0)
        rc = parse_row(c, key, &rs, 0, 2, false, &cur->row, err, errlen);
    reign__sql_rows_free(&rs);
    if (rc >= 0 && cur->row.exists && cur->row.mzxid >= cur->zxid)
        rc = foreign_row(c, key, "a write number ahead of its counter", err, errlen);
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    return 0;
}

int reign__values_set(reign__sqlconn *c, const char *dc, const char *key, const void *data,
                      size_t len, int64_t version, reign__value_row *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    current cur;
    int rc = tx_open(c, dc, key, &cur, err, errlen);
    if (rc < 0)
        return rc;
    const reign__value_row *r = &cur.row;
    if (version == REIGN_VALUE_ABSENT && r->exists)
        rc = REIGN_EEXIST;
    else if (version >= 0 && !r->exists)
        rc = REIGN_ENOENT;
    else if (version >= 0 && r->version != version)
        rc = REIGN_EBADVERSION;
    else if (r->exists && r->version >= INT32_MAX)
        rc = reign__sql_err(c, err, errlen, REIGN_E2BIG, "value '%s' is at its last version", key);
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    reign__sqlv args[6] = {
        REIGN__SQLV_S(dc),       REIGN__SQLV_S(key),        REIGN__SQLV_B(data, len),
        REIGN__SQLV_I(cur.zxid), REIGN__SQLV_I(cur.now_ms), REIGN__SQLV_I(r->version),
    };
    if (r->exists)
        rc = reign__sql_query(c, "writing a value",
                              "UPDATE {V} SET version = version + 1, data = {3}, mzxid = {4}, "
                              "modified_ms = {5} WHERE data_center = {1} AND value_key = {2} AND "
                              "version = {6}",
                              args, 6, NULL, err, errlen);
    else
        rc = reign__sql_query(c, "making a value",
                              "INSERT INTO {V} (data_center, value_key, version, data, czxid, "
                              "mzxid, created_ms, modified_ms) VALUES ({1}, {2}, 0, {3}, {4}, "
                              "{4}, {5}, {5})",
                              args, 5, NULL, err, errlen);
    if (rc == 0) /* no row changed: cannot be, with the counter held; say what it means */
        rc = r->exists ? REIGN_EBADVERSION : REIGN_EEXIST;
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    if ((rc = reign__sql_side_commit(c, dc, REIGN__VALUES_LISTEN, err, errlen)) < 0)
        return rc;
    out->exists = true;
    out->version = r->exists ? r->version + 1 : 0;
    out->czxid = r->exists ? r->czxid : cur.zxid;
    out->mzxid = cur.zxid;
    out->created_ms = r->exists ? r->created_ms : cur.now_ms;
    out->modified_ms = cur.now_ms;
    return 0;
}

int reign__values_delete(reign__sqlconn *c, const char *dc, const char *key, int64_t version,
                         int64_t *version_out, char *err, size_t errlen)
{
    current cur;
    int rc = tx_open(c, dc, key, &cur, err, errlen);
    if (rc < 0)
        return rc;
    if (!cur.row.exists)
        rc = REIGN_ENOENT;
    else if (version >= 0 && cur.row.version != version)
        rc = REIGN_EBADVERSION;
    if (rc == 0) {
        reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(key),
                               REIGN__SQLV_I(cur.row.version)};
        rc = reign__sql_query(c, "deleting a value",
                              "DELETE FROM {V} WHERE data_center = {1} AND value_key = {2} AND "
                              "version = {3}",
                              args, 3, NULL, err, errlen);
        if (rc == 0)
            rc = REIGN_EBADVERSION; /* cannot be, with the counter held */
    }
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    if ((rc = reign__sql_side_commit(c, dc, REIGN__VALUES_LISTEN, err, errlen)) < 0)
        return rc;
    *version_out = cur.row.version;
    return 0;
}

int reign__values_keys(reign__sqlconn *c, const char *dc, reign__sql_rows *keys, char *err,
                       size_t errlen)
{
    /* The counter's row has the empty key: it is no value. */
    return reign__sql_side_list(c, dc, "listing the values",
                                "SELECT value_key FROM {V} WHERE data_center = {1} AND value_key "
                                "<> '' ORDER BY value_key",
                                keys, err, errlen);
}
