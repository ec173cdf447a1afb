/*
 * runs.c - the record of slots in a SQL store (runs.h): the statements, written once for the
 * three dialects through reign__sql_query().
 */
#include "runs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dialect.h"
#include "layout.h"

#define ROW_COLUMNS   REIGN__RUNS_ROW_COLUMNS
#define N_ROW_COLUMNS REIGN__RUNS_N_ROW_COLUMNS

void reign__run_rows_free(reign__run_rows *r)
{
    if (!r)
        return;
    reign__free(r->v);
    memset(r, 0, sizeof *r);
}

/* ---- the table ------------------------------------------------------------------------------- */

/* Every column a row has: a table that lacks one is not a runs table reign can use. */
static const char *const required[] = {REIGN__RUNS_REQUIRED_COLUMNS};

static int create_table(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = reign__sql_query(c, "creating the runs table",
                              "CREATE TABLE IF NOT EXISTS {R} ("
                              "{ID}, "
                              "data_center varchar(128) NOT NULL, "
                              "lock_name varchar(200) NOT NULL, "
                              "slot varchar(128) NOT NULL, "
                              "attempt integer NOT NULL, "
                              "owner varchar(512) NOT NULL, "
                              "host varchar(255) NOT NULL DEFAULT '', "
                              "term bigint NOT NULL, "
                              "token bigint NOT NULL, "
                              "start_ms bigint NOT NULL, "
                              "end_ms bigint, "
                              "result varchar(16) NOT NULL, "
                              "code integer NOT NULL DEFAULT 0, "
                              "verdict varchar(16) NOT NULL, "
                              "UNIQUE (data_center, lock_name, slot, attempt))"
                              "{TABLE_OPTIONS}",
                              NULL, 0, NULL, err, errlen);
    if (rc >= 0)
        reign__log(c->log, REIGN_LOG_INFO, "%s: made the runs table of %s", c->store, c->table);
    return rc < 0 ? rc : 0;
}

int reign__runs_ensure(reign__sqlconn *c, char *err, size_t errlen)
{
    if (c->runs_ready)
        return 0;
    reign__sql_rows cols;
    int rc = reign__sql_side_columns(c, REIGN__SQL_RUNS_SUFFIX, &cols, err, errlen);
    if (rc < 0)
        return rc;
    if (cols.n_rows == 0) {
        reign__sql_rows_free(&cols);
        rc = create_table(c, err, errlen);
        if (rc < 0) {
            /* Another process may have made it at the same moment: look again. */
            char ignored[256];
            if (reign__sql_side_columns(c, REIGN__SQL_RUNS_SUFFIX, &cols, ignored, sizeof ignored) <
                0)
                return rc;
            bool made = cols.n_rows > 0;
            reign__sql_rows_free(&cols);
            if (!made)
                return rc;
        }
        c->runs_ready = true;
        return 0;
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        if (!reign__sql_has_column(&cols, required[i])) {
            reign__sql_rows_free(&cols);
            char runs[REIGN__SQL_TABLE_MAX + 8];
            reign__sql_runs_table(c, runs, sizeof runs, NULL, 0);
            return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                  "table %s has no column %s: not a runs table reign can use", runs,
                                  required[i]);
        }
    }
    reign__sql_rows_free(&cols);
    c->runs_ready = true;
    return 0;
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int foreign_row(reign__sqlconn *c, const char *what, char *err, size_t errlen)
{
    return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                          "a row of the runs table of %s holds %s reign did not write", c->table,
                          what);
}

/* Row `i` of a result whose columns start at `col` as ROW_COLUMNS. */
static int parse_row(reign__sqlconn *c, const reign__sql_rows *rs, size_t i, size_t col,
                     reign__run_row *out, char *err, size_t errlen)
{
    const char *cell[N_ROW_COLUMNS];
    for (size_t k = 0; k < N_ROW_COLUMNS; k++)
        cell[k] = reign__sql_cell(rs, i, col + k);
    memset(out, 0, sizeof *out);
    int64_t attempt, term, token, start, end = 0, code, id;
    if (!cell[0] || strlen(cell[0]) > REIGN_SLOT_KEY_MAX || !cell[2] ||
        strlen(cell[2]) > REIGN_ID_MAX || (cell[3] && strlen(cell[3]) >= sizeof out->host) ||
        !cell[8] || strlen(cell[8]) >= sizeof out->result || !cell[10] ||
        strlen(cell[10]) >= sizeof out->verdict)
        return foreign_row(c, "a slot, owner, host, result or verdict", err, errlen);
    if (!reign__sql_parse_i64(cell[1], &attempt) || attempt < 1 || attempt > 1000000 ||
        !reign__sql_parse_i64(cell[4], &term) || term < 0 ||
        !reign__sql_parse_i64(cell[5], &token) || token < 0 ||
        !reign__sql_parse_i64(cell[6], &start) ||
        (cell[7] && !reign__sql_parse_i64(cell[7], &end)) ||
        !reign__sql_parse_i64(cell[9], &code) || code < INT32_MIN || code > INT32_MAX ||
        !reign__sql_parse_i64(cell[11], &id))
        return foreign_row(c, "numbers", err, errlen);
    reign__strlcpy(out->slot, cell[0], sizeof out->slot);
    out->attempt = (unsigned)attempt;
    reign__strlcpy(out->owner, cell[2], sizeof out->owner);
    reign__strlcpy(out->host, cell[3] ? cell[3] : "", sizeof out->host);
    out->term = (uint64_t)term;
    out->token = (uint64_t)token;
    out->start_ms = start;
    out->end_ms = cell[7] ? end : 0;
    reign__strlcpy(out->result, cell[8], sizeof out->result);
    out->code = (int)code;
    reign__strlcpy(out->verdict, cell[10], sizeof out->verdict);
    out->id = id;
    return 0;
}

/* The rows of a result (those with a slot: a LEFT JOIN's empty side is skipped). */
static int collect(reign__sqlconn *c, const reign__sql_rows *rs, size_t col, reign__run_rows *out,
                   char *err, size_t errlen)
{
    if (!rs->n_rows)
        return 0;
    if (!(out->v = reign__calloc(rs->n_rows, sizeof *out->v)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; i < rs->n_rows; i++) {
        if (!reign__sql_cell(rs, i, col))
            continue;
        int rc = parse_row(c, rs, i, col, &out->v[out->n], err, errlen);
        if (rc < 0)
            return rc;
        out->n++;
    }
    return 0;
}

/* ---- reads ----------------------------------------------------------------------------------- */

int reign__runs_now(reign__sqlconn *c, int64_t *now_ms, char *err, size_t errlen)
{
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "reading the clock", "SELECT {NOW}", NULL, 0, &rs, err, errlen);
    if (rc < 0)
        return rc;
    bool ok = reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), now_ms);
    reign__sql_rows_free(&rs);
    return ok ? 0 : reign__sql_err(c, err, errlen, REIGN_EBACKEND, "the clock read as nothing");
}

/* A statement that failed on a missing table (nothing recorded yet) or on a missing column (a
 * table that is not a runs table): 1 if the table was made ready and the statement is worth
 * sending again, 0 if the table is missing, or the error. */
static int recover(reign__sqlconn *c, int rc, char *err, size_t errlen)
{
    if (rc == REIGN_ENOENT)
        return 0;
    if (c->runs_ready || c->broken || rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT)
        return rc;
    int e = reign__runs_ensure(c, err, errlen);
    return e < 0 ? e : 1;
}

int reign__runs_read(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                     reign__run_rows *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(slot)};
    reign__sql_rows rs;
    /* One statement: the clock, and the rows if any (the left side always has one row). */
    static const char read_sql[] =
        "SELECT {NOW}, " ROW_COLUMNS " FROM (SELECT 1 AS one) o LEFT JOIN {R} r ON "
        "r.data_center = {1} AND r.lock_name = {2} AND r.slot = {3} ORDER BY attempt";
    int rc = reign__sql_query(c, "reading a slot", read_sql, args, 3, &rs, err, errlen);
    if (rc < 0) {
        rc = recover(c, rc, err, errlen);
        if (rc == 0)
            return reign__runs_now(c, &out->db_now_ms, err, errlen);
        if (rc < 0)
            return rc;
        if ((rc = reign__sql_query(c, "reading a slot", read_sql, args, 3, &rs, err, errlen)) < 0)
            return rc;
    }
    if (!reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &out->db_now_ms)) {
        reign__sql_rows_free(&rs);
        return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "the clock read as nothing");
    }
    rc = collect(c, &rs, 1, out, err, errlen);
    reign__sql_rows_free(&rs);
    if (rc < 0)
        reign__run_rows_free(out);
    return rc;
}

int reign__runs_history(reign__sqlconn *c, const char *dc, const char *name, reign__run_rows *out,
                        char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    reign__sql_rows rs;
    static const char sql[] = "SELECT " ROW_COLUMNS " FROM {R} WHERE data_center = {1} AND "
                              "lock_name = {2} ORDER BY id";
    int rc = reign__sql_query(c, "reading the runs", sql, args, 2, &rs, err, errlen);
    if (rc < 0) {
        rc = recover(c, rc, err, errlen);
        if (rc <= 0)
            return rc;
        if ((rc = reign__sql_query(c, "reading the runs", sql, args, 2, &rs, err, errlen)) < 0)
            return rc;
    }
    rc = collect(c, &rs, 0, out, err, errlen);
    reign__sql_rows_free(&rs);
    if (rc < 0)
        reign__run_rows_free(out);
    return rc;
}

/* ---- writes ---------------------------------------------------------------------------------- */

static int tx_begin(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

static int tx_commit(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = reign__sql_query(c, "commit", "COMMIT", NULL, 0, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

/*
 * Inside a writing transaction: locks the lease row of `name` and says whether its term is
 * still `fence` (1) or not (0: another leadership has begun, or the row is gone).  The lock
 * holds until the transaction ends, so no take can come between this and the write.
 */
static int fence_holds(reign__sqlconn *c, const char *dc, const char *name, uint64_t fence,
                       char *err, size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "locking the lease",
                              "SELECT term FROM {T} WHERE data_center = {1} AND lock_name = {2}"
                              "{FOR_UPDATE}",
                              args, 2, &rs, err, errlen);
    if (rc < 0)
        return rc;
    int64_t term;
    bool ok = rs.n_rows == 1 && reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &term) &&
              (uint64_t)term == fence;
    reign__sql_rows_free(&rs);
    return ok;
}

/* One fenced write: BEGIN, the lease's term checked under its row lock, the statement, COMMIT.
 * 1 written, 0 refused by the statement, REIGN__RUNS_DEPOSED, or a negative code. */
static int fenced(reign__sqlconn *c, const char *what, const char *dc, const char *name,
                  uint64_t fence, const char *sql, const reign__sqlv *args, size_t n, char *err,
                  size_t errlen)
{
    int rc = reign__runs_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = tx_begin(c, err, errlen)) < 0)
        return rc;
    rc = fence_holds(c, dc, name, fence, err, errlen);
    if (rc == 1)
        rc = reign__sql_query(c, what, sql, args, n, NULL, err, errlen);
    else if (rc == 0)
        rc = REIGN__RUNS_DEPOSED;
    if (rc < 0 || rc == REIGN__RUNS_DEPOSED) {
        reign__sql_rollback(c);
        return rc;
    }
    int written = rc > 0;
    if ((rc = tx_commit(c, err, errlen)) < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    return written;
}

int reign__runs_start(reign__sqlconn *c, const char *dc, const char *name,
                      const reign__run_row *row, uint64_t fence, char *err, size_t errlen)
{
    reign__sqlv args[8] = {
        REIGN__SQLV_S(dc),
        REIGN__SQLV_S(name),
        REIGN__SQLV_S(row->slot),
        REIGN__SQLV_I((int64_t)row->attempt),
        REIGN__SQLV_S(row->owner),
        REIGN__SQLV_S(row->host),
        REIGN__SQLV_I((int64_t)row->term),
        REIGN__SQLV_I((int64_t)row->token),
    };
    /* The compare-and-set: no attempt of this number or later, none running, no final
     * verdict.  The unique key refuses a duplicate whatever happens. */
    return fenced(c, "starting an attempt", dc, name, fence,
                  "INSERT INTO {R} (data_center, lock_name, slot, attempt, owner, host, term, "
                  "token, start_ms, end_ms, result, code, verdict) SELECT {1}, {2}, {3}, {4}, "
                  "{5}, {6}, {7}, {8}, {NOW}, NULL, 'running', 0, 'running' FROM (SELECT 1 AS "
                  "one) o WHERE NOT EXISTS (SELECT 1 FROM {R} WHERE data_center = {1} AND "
                  "lock_name = {2} AND slot = {3} AND (attempt >= {4} OR end_ms IS NULL OR "
                  "verdict IN ('succeeded', 'failed', 'abandoned'))){ON_CONFLICT}",
                  args, 8, err, errlen);
}

int reign__runs_mark(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                     unsigned attempt, const char *result, int code, const char *verdict,
                     uint64_t fence, char *err, size_t errlen)
{
    reign__sqlv args[7] = {
        REIGN__SQLV_S(dc),     REIGN__SQLV_S(name), REIGN__SQLV_S(slot),    REIGN__SQLV_I(attempt),
        REIGN__SQLV_S(result), REIGN__SQLV_I(code), REIGN__SQLV_S(verdict),
    };
    return fenced(c, "marking an attempt", dc, name, fence,
                  "UPDATE {R} SET end_ms = {NOW}, result = {5}, code = {6}, verdict = {7} WHERE "
                  "data_center = {1} AND lock_name = {2} AND slot = {3} AND attempt = {4} AND "
                  "end_ms IS NULL",
                  args, 7, err, errlen);
}

static bool final_verdict(const char *v)
{
    return !strcmp(v, "succeeded") || !strcmp(v, "failed") || !strcmp(v, "abandoned");
}

int reign__runs_end(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                    unsigned attempt, uint64_t term, const char *result, int code,
                    const char *verdict, int keep, char *err, size_t errlen)
{
    int rc = reign__runs_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[8] = {
        REIGN__SQLV_S(dc),      REIGN__SQLV_S(name),          REIGN__SQLV_S(slot),
        REIGN__SQLV_I(attempt), REIGN__SQLV_S(result),        REIGN__SQLV_I(code),
        REIGN__SQLV_S(verdict), REIGN__SQLV_I((int64_t)term),
    };
    rc = reign__sql_query(c, "ending an attempt",
                          "UPDATE {R} SET end_ms = {NOW}, result = {5}, code = {6}, verdict = {7} "
                          "WHERE data_center = {1} AND lock_name = {2} AND slot = {3} AND attempt "
                          "= {4} AND term = {8} AND end_ms IS NULL",
                          args, 8, NULL, err, errlen);
    if (rc < 0)
        return rc;
    int written = rc > 0;
    if (written && keep > 0 && final_verdict(verdict)) {
        char ignored[256];
        if (reign__runs_prune(c, dc, name, keep, ignored, sizeof ignored) < 0)
            reign__log(c->log, REIGN_LOG_INFO, "%s: pruning the runs of %s: %s", c->store, name,
                       ignored);
    }
    return written;
}

int reign__runs_prune(reign__sqlconn *c, const char *dc, const char *name, int keep, char *err,
                      size_t errlen)
{
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), {.kind = REIGN__SQLV_NULL}};
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "listing the slots",
                              "SELECT slot, MIN(id) FROM {R} WHERE data_center = {1} AND "
                              "lock_name = {2} GROUP BY slot ORDER BY 2 DESC",
                              args, 2, &rs, err, errlen);
    if (rc < 0)
        return rc;
    int deleted = 0;
    for (size_t i = (size_t)keep; i < rs.n_rows; i++) {
        const char *slot = reign__sql_cell(&rs, i, 0);
        if (!slot)
            continue;
        args[2] = REIGN__SQLV_S(slot);
        rc = reign__sql_query(c, "deleting a slot",
                              "DELETE FROM {R} WHERE data_center = {1} AND lock_name = {2} AND "
                              "slot = {3}",
                              args, 3, NULL, err, errlen);
        if (rc < 0)
            break;
        deleted++;
    }
    reign__sql_rows_free(&rs);
    return rc < 0 ? rc : deleted;
}
