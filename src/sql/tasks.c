/*
 * tasks.c - reign's task queues in a SQL store (tasks.h): the table and the statements,
 * written once for the three dialects through reign__sql_query().
 *
 * Every write is one transaction.  A state change is an UPDATE that names, in its WHERE
 * clause, the state it moves from (and for a result, the worker's registration), so that of
 * two racing writers exactly one changes the row.  The master's writes first lock the lease
 * row of its election and check its guid, term and duration under that lock, as runs.c fences
 * slot records: the lock holds to COMMIT, so no take can come between the check and the write.
 */
#include "tasks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dialect.h"
#include "layout.h"
#include "members.h"
#include "side.h"

void reign__task_row_clear(reign__task_row *r)
{
    if (!r)
        return;
    reign__free(r->data);
    reign__free(r->output);
    memset(r, 0, sizeof *r);
}

void reign__task_rows_free(reign__task_rows *rows)
{
    if (!rows)
        return;
    for (size_t i = 0; i < rows->n; i++)
        reign__task_row_clear(&rows->v[i]);
    reign__free(rows->v);
    memset(rows, 0, sizeof *rows);
}

bool reign__tasks_sql_name_parse(const char *name, char guid[17], int64_t *id)
{
    char g[17];
    uint64_t seq;
    if (!reign__task_name_parse(name, g, &seq) || seq == 0 || seq > INT64_MAX)
        return false;
    if (guid)
        memcpy(guid, g, sizeof g);
    if (id)
        *id = (int64_t)seq;
    return true;
}

/* ---- the table ------------------------------------------------------------------------------- */

static const char *const required[] = {REIGN__TASKS_REQUIRED_COLUMNS};

#define CREATE                                                                                     \
    "CREATE TABLE IF NOT EXISTS {K} ("                                                             \
    "{ID}, "                                                                                       \
    "data_center varchar(128) NOT NULL, "                                                          \
    "queue_name varchar(180) NOT NULL, "                                                           \
    "guid varchar(16) NOT NULL, "                                                                  \
    "state int NOT NULL, "                                                                         \
    "worker varchar(200), "                                                                        \
    "worker_guid varchar(64), "                                                                    \
    "term bigint, "                                                                                \
    "requeued int NOT NULL DEFAULT 0, "                                                            \
    "data {BLOB}, "                                                                                \
    "exit_code int, "                                                                              \
    "exit_signal int, "                                                                            \
    "output {BLOB}, "                                                                              \
    "submitted_ms bigint NOT NULL, "                                                               \
    "assigned_ms bigint, "                                                                         \
    "done_ms bigint, "                                                                             \
    "UNIQUE (guid, data_center, queue_name), "                                                     \
    "UNIQUE (data_center, queue_name, state, id))"                                                 \
    "{TABLE_OPTIONS}"

/* Makes or checks the table (once per connection).  *absent (may be NULL): there is none, and
 * make was false. */
static int ensure(reign__sqlconn *c, bool make, bool *absent, char *err, size_t errlen)
{
    int rc = reign__sql_side_ensure(c, REIGN__SQL_TASKS_SUFFIX, "tasks", required,
                                    sizeof required / sizeof required[0], make ? CREATE : NULL,
                                    &c->tasks_ready, err, errlen);
    if (absent)
        *absent = rc == 0 && !c->tasks_ready;
    return rc;
}

/* ---- rows ------------------------------------------------------------------------------------ */

/*
 * The columns a task is read with, in this order; the payload last (not selected when it is not
 * wanted).  The queue's own columns come back too, for the reads by key.
 *
 * Which index a statement uses must not depend on the planner's statistics: a table made a
 * minute ago has none, and PostgreSQL then picks among the indexes that match the statement's
 * equalities by chance.  So a statement names the queue's columns only together with the state
 * (the index on data_center, queue_name, state, id serves it; the guid's index leads with the
 * guid), and a read or write of known rows names them by id alone (the primary key) and checks
 * the queue here.  Either way no statement reads the queue's other tasks.
 */
#define ROW_COLUMNS                                                                                \
    "id, guid, state, worker, worker_guid, term, requeued, exit_code, exit_signal, submitted_ms, " \
    "assigned_ms, done_ms, output, data_center, queue_name"
#define COL_DC    13
#define COL_QUEUE 14
#define COL_DATA  15

static bool hex16(const char *s)
{
    if (!s || strlen(s) != 16)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return false;
    return true;
}

static bool num(const reign__sql_rows *rs, size_t i, size_t col, int64_t *out)
{
    const char *s = reign__sql_cell(rs, i, col);
    *out = 0;
    return !s || reign__sql_parse_i64(s, out);
}

static bool copy_text(char *out, size_t n, const char *s)
{
    if (!s) {
        out[0] = '\0';
        return true;
    }
    size_t len = strlen(s);
    if (len >= n)
        return false;
    memcpy(out, s, len + 1);
    return true;
}

static int copy_blob(const reign__sql_rows *rs, size_t i, size_t col, size_t max, void **out,
                     size_t *len)
{
    *len = reign__sql_cell_len(rs, i, col);
    if (*len > max)
        return REIGN_EFOREIGN;
    if (*len && !(*out = reign__memdup(reign__sql_cell(rs, i, col), *len)))
        return REIGN_ENOMEM;
    return 0;
}

/* Row i of a result of ROW_COLUMNS (and the payload, if selected): 0, REIGN_EFOREIGN (a row
 * reign could not have written; out names the reason in `why`), or REIGN_ENOMEM. */
static int parse_row(const reign__sql_rows *rs, size_t i, reign__task_row *out, const char **why)
{
    memset(out, 0, sizeof *out);
    int64_t v[12];
    for (size_t k = 0; k < 12; k++) {
        if (k == 1 || k == 3 || k == 4)
            continue;
        if (!num(rs, i, k, &v[k]))
            return *why = "a number that is not one", REIGN_EFOREIGN;
    }
    const char *guid = reign__sql_cell(rs, i, 1);
    if (v[0] <= 0 || v[0] > 9999999999 || !hex16(guid))
        return *why = "an id or a guid", REIGN_EFOREIGN;
    if (v[2] < REIGN_TASK_PENDING || v[2] > REIGN_TASK_DONE)
        return *why = "a state", REIGN_EFOREIGN;
    out->id = v[0];
    memcpy(out->guid, guid, 17);
    snprintf(out->name, sizeof out->name, REIGN__N_TASK "%s_%010lld", guid, (long long)v[0]);
    out->state = (reign_task_state)v[2];
    if (!copy_text(out->worker, sizeof out->worker, reign__sql_cell(rs, i, 3)) ||
        !copy_text(out->worker_guid, sizeof out->worker_guid, reign__sql_cell(rs, i, 4)))
        return *why = "a worker", REIGN_EFOREIGN;
    if (out->state != REIGN_TASK_PENDING && (!out->worker[0] || !out->worker_guid[0]))
        return *why = "an assigned task without its worker", REIGN_EFOREIGN;
    if (v[7] < -1 || v[7] > 255 || v[8] < 0 || v[8] > 255 || v[6] < 0 || v[6] > INT32_MAX ||
        v[5] < 0)
        return *why = "a result or a term", REIGN_EFOREIGN;
    out->term = (uint64_t)v[5];
    out->requeued = (int)v[6];
    out->exit_code = (int)v[7];
    out->exit_signal = (int)v[8];
    out->submitted_ms = v[9];
    out->assigned_ms = v[10];
    out->done_ms = v[11];
    int rc = copy_blob(rs, i, 12, REIGN_TASK_OUTPUT_MAX, &out->output, &out->output_len);
    if (rc == 0 && rs->n_cols > COL_DATA)
        rc = copy_blob(rs, i, COL_DATA, REIGN_TASK_DATA_MAX, &out->data, &out->data_len);
    if (rc == REIGN_EFOREIGN)
        *why = "a payload or an output larger than reign writes";
    if (rc < 0)
        reign__task_row_clear(out);
    return rc;
}

/* Whether row i of a result of ROW_COLUMNS is a task of (dc, queue). */
static bool in_queue(const reign__sql_rows *rs, size_t i, const char *dc, const char *queue)
{
    const char *row_dc = reign__sql_cell(rs, i, COL_DC);
    const char *row_queue = reign__sql_cell(rs, i, COL_QUEUE);
    return row_dc && row_queue && !strcmp(row_dc, dc) && !strcmp(row_queue, queue);
}

/* Every row of rs into out; a foreign row is skipped when skip_foreign, else refused. */
static int parse_rows(reign__sqlconn *c, const char *queue, const reign__sql_rows *rs,
                      bool skip_foreign, reign__task_rows *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!rs->n_rows)
        return 0;
    if (!(out->v = reign__calloc(rs->n_rows, sizeof *out->v)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; i < rs->n_rows; i++) {
        const char *why = NULL;
        int rc = parse_row(rs, i, &out->v[out->n], &why);
        if (rc == REIGN_EFOREIGN && skip_foreign)
            continue;
        if (rc < 0) {
            reign__task_rows_free(out);
            if (rc == REIGN_ENOMEM)
                return reign__sql_err(c, err, errlen, rc, "out of memory");
            return reign__sql_err(c, err, errlen, rc,
                                  "a row of queue %s in the tasks table of %s holds %s reign did "
                                  "not write",
                                  queue, c->table, why);
        }
        out->n++;
    }
    return 0;
}

/* The rows of a SELECT of ROW_COLUMNS, parsed as parse_rows() does. */
static int query_rows(reign__sqlconn *c, const char *queue, const char *what, const char *sql,
                      const reign__sqlv *args, size_t n, bool skip_foreign, reign__task_rows *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sql_rows rs;
    int rc = reign__sql_query(c, what, sql, args, n, &rs, err, errlen);
    if (rc < 0)
        return rc;
    rc = parse_rows(c, queue, &rs, skip_foreign, out, err, errlen);
    reign__sql_rows_free(&rs);
    return rc;
}

/* ---- transactions ---------------------------------------------------------------------------- */

static int begin(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen);
    return rc < 0 ? rc : 0;
}

/* Who a change concerns (tasks.h): the queue's master and waiters, its workers. */
#define TOLD_QUEUE   1
#define TOLD_WORKERS 2
#define TOLD_MASTER  4 /* alone: submits */

/* The watchers a change concerns are told (PostgreSQL: on commit). */
static int notify_queue(reign__sqlconn *c, const char *dc, const char *queue, int told, char *err,
                        size_t errlen)
{
    char name[REIGN__TASKS_LISTEN_MAX];
    int rc = 0;
    if (told & TOLD_QUEUE) {
        snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s", queue);
        rc = reign__sql_notify(c, dc, name, err, errlen);
    }
    if (rc >= 0 && (told & TOLD_WORKERS)) {
        snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s" REIGN__TASKS_WORKERS, queue);
        rc = reign__sql_notify(c, dc, name, err, errlen);
    }
    if (rc >= 0 && (told & TOLD_MASTER)) {
        snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s" REIGN__TASKS_SUBMITTED, queue);
        rc = reign__sql_notify(c, dc, name, err, errlen);
    }
    return rc;
}

/* The workers a round gave tasks to are told, each on its own name, so that the others do not
 * read their rows for nothing: with many workers, a round often serves only the few whose
 * results freed room.  Beyond a few, all are told at once (most of them were given tasks). */
static int tell_workers(reign__sqlconn *c, const char *dc, const char *queue,
                        const reign__tasks_give *g, size_t n, char *err, size_t errlen)
{
    size_t given = 0;
    for (size_t i = 0; i < n; i++)
        given += g[i].rows.n > 0;
    if (given > REIGN__TASKS_TELL_EACH_MAX)
        return notify_queue(c, dc, queue, TOLD_WORKERS, err, errlen);
    int rc = 0;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        char name[REIGN__TASKS_LISTEN_MAX];
        if (!g[i].rows.n)
            continue;
        snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s" REIGN__TASKS_WORKER_OWN, queue,
                 g[i].worker);
        rc = reign__sql_notify(c, dc, name, err, errlen);
    }
    return rc;
}

/* Those the transaction's change concerns are told (`told`, TOLD_*; 0: nothing changed), then
 * COMMIT; rolled back on failure.  Only a change is told: the master listens to the queue too,
 * and a round that changed nothing would otherwise wake it for another, without end. */
static int commit(reign__sqlconn *c, const char *dc, const char *queue, int told, char *err,
                  size_t errlen)
{
    int rc = told ? notify_queue(c, dc, queue, told, err, errlen) : 0;
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    return reign__sql_side_commit(c, dc, NULL, err, errlen);
}

/*
 * Inside a writing transaction: locks the lease row of the master's election and says whether
 * it still names the master (1: its owner and term, neither released nor deposed) or not (0:
 * another leadership began, or this one ended).  The lock holds until the transaction ends.
 */
static int fence_holds(reign__sqlconn *c, const char *dc, const reign__tasks_fence *f, char *err,
                       size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(f->name)};
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "locking the master's lease",
                              "SELECT owner, owner_guid, term, duration FROM {T} WHERE "
                              "data_center = {1} AND lock_name = {2}{FOR_UPDATE}",
                              args, 2, &rs, err, errlen);
    if (rc < 0)
        return rc;
    const char *owner = reign__sql_cell(&rs, 0, 0), *guid = reign__sql_cell(&rs, 0, 1);
    int64_t term, duration;
    bool ok = rs.n_rows == 1 && owner && !strcmp(owner, f->owner) && guid &&
              strcmp(guid, REIGN__SQL_DEPOSED) &&
              reign__sql_parse_i64(reign__sql_cell(&rs, 0, 2), &term) &&
              (uint64_t)term == f->term &&
              reign__sql_parse_i64(reign__sql_cell(&rs, 0, 3), &duration) && duration > 0;
    reign__sql_rows_free(&rs);
    return ok;
}

/* BEGIN, then the fence: 0 with the transaction open, REIGN__TASKS_DEPOSED or a negative code
 * with it rolled back. */
static int begin_fenced(reign__sqlconn *c, const char *dc, const reign__tasks_fence *f, char *err,
                        size_t errlen)
{
    int rc = ensure(c, true, NULL, err, errlen);
    if (rc == 0)
        rc = begin(c, err, errlen);
    if (rc < 0)
        return rc;
    if ((rc = fence_holds(c, dc, f, err, errlen)) == 1)
        return 0;
    reign__sql_rollback(c);
    return rc < 0 ? rc : REIGN__TASKS_DEPOSED;
}

/*
 * The rows of a SELECT of ROW_COLUMNS (foreign ones skipped); none before the table exists.
 * Readers are woken by change notices, and on SQLite a notice comes before the write is
 * visible: there the read waits for the writer's lock (and writes nothing).
 */
static int read_rows(reign__sqlconn *c, const char *queue, const char *what, const char *sql,
                     const reign__sqlv *args, size_t n, reign__task_rows *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    bool absent;
    int rc = ensure(c, false, &absent, err, errlen);
    if (rc < 0 || absent)
        return rc;
    return query_rows(c, queue, what, sql, args, n, true, out, err, errlen);
}

/* ---- submitting and reading ------------------------------------------------------------------ */

/* The row of (dc, queue, id, guid), with the payload if with_data: 0 (out->id 0: none).  Looked
 * up by id, or by guid when the id is 0 (see ROW_COLUMNS). */
static int select_one(reign__sqlconn *c, const char *dc, const char *queue, const char *guid,
                      int64_t id, bool with_data, reign__task_row *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[2] = {REIGN__SQLV_S(guid), REIGN__SQLV_I(id)};
    reign__sql_rows rs;
    int rc = reign__sql_query(c, "reading a task",
                              id ? (with_data ? "SELECT " ROW_COLUMNS ", data FROM {K} WHERE id = "
                                                "{2} AND guid = {1}"
                                              : "SELECT " ROW_COLUMNS " FROM {K} WHERE id = {2} "
                                                "AND guid = {1}")
                                 : (with_data ? "SELECT " ROW_COLUMNS ", data FROM {K} WHERE guid "
                                                "= {1}"
                                              : "SELECT " ROW_COLUMNS " FROM {K} WHERE guid = {1}"),
                              args, id ? 2 : 1, &rs, err, errlen);
    if (rc < 0)
        return rc;
    for (size_t i = 0; rc >= 0 && i < rs.n_rows && !out->id; i++) {
        const char *why = NULL;
        if (!in_queue(&rs, i, dc, queue))
            continue;
        rc = parse_row(&rs, i, out, &why);
        if (rc == REIGN_ENOMEM)
            rc = reign__sql_err(c, err, errlen, rc, "out of memory");
        else if (rc < 0)
            rc = reign__sql_err(c, err, errlen, rc,
                                "a row of queue %s in the tasks table of %s holds %s reign did "
                                "not write",
                                queue, c->table, why);
    }
    reign__sql_rows_free(&rs);
    return rc < 0 ? rc : 0;
}

#define INSERT_TASK                                                                                \
    "INSERT INTO {K} (data_center, queue_name, guid, state, data, submitted_ms) VALUES "

/* Rows per INSERT of many rows, at most (three parameters each), and their payloads' bytes
 * (one larger payload goes alone): well under MariaDB's max_allowed_packet. */
#define INSERT_ROWS_MAX  64
#define INSERT_BYTES_MAX (1 << 20)
_Static_assert(1 + 3 * INSERT_ROWS_MAX <= REIGN__SQL_ARGS_MAX, "an INSERT's parameters");

/*
 * Submissions v[0..n) (valid ones) inserted by one INSERT of many rows: those it made are
 * made, with the row it hands back (RETURNING); the others are left as they were.  A duplicate
 * guid is no error: PostgreSQL and SQLite skip that row (ON CONFLICT DO NOTHING), MariaDB the
 * whole statement (a duplicate key is 0 rows).  0, or the error of the statement (the
 * transaction is lost).
 */
static int insert_rows(reign__sqlconn *c, const char *dc, reign__tasks_submission *const *v,
                       size_t n, char *err, size_t errlen)
{
    reign__sqlv args[1 + 3 * INSERT_ROWS_MAX];
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, INSERT_TASK);
    args[0] = (reign__sqlv)REIGN__SQLV_S(dc);
    /* Where a duplicate guid is skipped, the rows are as many as n rounded up to a power of two,
     * the smallest one repeated (skipped as a duplicate): the statement's text then depends only
     * on that bucket, so the few texts repeat, and PostgreSQL prepares and plans each once
     * (reign__sql_plan_once(): an INSERT of values has one plan). */
    size_t places = n, small = 0;
    while (c->d->on_conflict[0] && (places & (places - 1)))
        places++;
    for (size_t i = 1; i < n; i++)
        if (v[i]->len < v[small]->len)
            small = i;
    for (size_t i = 0; i < places; i++) {
        size_t k = 1 + 3 * i, j = i < n ? i : small;
        args[k] = (reign__sqlv)REIGN__SQLV_S(v[j]->queue);
        args[k + 1] = (reign__sqlv)REIGN__SQLV_S(v[j]->guid);
        args[k + 2] = (reign__sqlv)REIGN__SQLV_B(v[j]->data, v[j]->len);
        reign__buf_printf(&b, "%s({1}, {%zu}, {%zu}, 1, {%zu}, {NOW})", i ? ", " : "", k + 1, k + 2,
                          k + 3);
    }
    /* Only the guid's key can clash (the id is drawn, and the state index holds it): named,
     * PostgreSQL checks that index alone before each row, not every unique one. */
    reign__buf_puts(&b, c->d->on_conflict[0] ? " ON CONFLICT (guid, data_center, queue_name) DO "
                                               "NOTHING RETURNING " ROW_COLUMNS
                                             : " RETURNING " ROW_COLUMNS);
    reign__sql_rows rs;
    int rc = b.oom ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory")
                   : (reign__sql_plan_once(c), reign__sql_query(c, "submitting tasks", b.data, args,
                                                                1 + 3 * places, &rs, err, errlen));
    reign__buf_free(&b);
    for (size_t r = 0; rc >= 0 && r < rs.n_rows; r++) {
        reign__task_row row;
        const char *why = NULL;
        int one = parse_row(&rs, r, &row, &why);
        if (one == REIGN_ENOMEM)
            rc = reign__sql_err(c, err, errlen, one, "out of memory");
        else if (one < 0) /* a default or a trigger of someone else's */
            rc =
                reign__sql_err(c, err, errlen, one,
                               "a task submitted to the tasks table of %s holds %s", c->table, why);
        for (size_t i = 0; one == 0 && i < n; i++) {
            if (!v[i]->made && !strcmp(v[i]->guid, row.guid) && in_queue(&rs, r, dc, v[i]->queue)) {
                v[i]->row = row;
                v[i]->made = true;
                one = 1;
            }
        }
        if (one == 0)
            reign__task_row_clear(&row); /* not asked for: cannot be */
    }
    reign__sql_rows_free(&rs);
    return rc < 0 ? rc : 0;
}

/*
 * Submissions v[0..n) not made by insert_rows(): the row of the guid found (a former submit's),
 * or inserted alone (MariaDB, where a duplicate in the batch's INSERT made none of its rows).
 * 0, or the error of a statement (the transaction is lost); rcs[i] REIGN_EFOREIGN when the
 * task can be neither found nor made.
 */
static int find_or_insert(reign__sqlconn *c, const char *dc, reign__tasks_submission *const *v,
                          int *rcs, size_t n, char *err, size_t errlen)
{
    int rc = 0;
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (v[i]->made || rcs[i] < 0)
            continue;
        rc = select_one(c, dc, v[i]->queue, v[i]->guid, 0, false, &v[i]->row, err, errlen);
        if (rc >= 0 && !v[i]->row.id)
            rc = insert_rows(c, dc, &v[i], 1, err, errlen);
        if (rc >= 0 && !v[i]->made && !v[i]->row.id)
            rc = select_one(c, dc, v[i]->queue, v[i]->guid, 0, false, &v[i]->row, err, errlen);
        if (rc >= 0 && !v[i]->row.id)
            rcs[i] = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                    "the task of guid %s in queue %s cannot be made", v[i]->guid,
                                    v[i]->queue);
    }
    return rc;
}

int reign__tasks_submit_batch(reign__sqlconn *c, const char *dc, reign__tasks_submission *const *v,
                              int *rcs, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        memset(&v[i]->row, 0, sizeof v[i]->row);
        v[i]->made = false;
        rcs[i] = !hex16(v[i]->guid) || v[i]->len > REIGN_TASK_DATA_MAX
                     ? reign__sql_err(c, err, errlen, REIGN_EINVAL,
                                      "a task guid or payload out of range")
                     : 0;
    }
    int rc = ensure(c, true, NULL, err, errlen);
    if (rc < 0 || (rc = begin(c, err, errlen)) < 0)
        return rc;
    /* The valid ones in INSERTs of many rows, as many as the payloads' bytes allow each. */
    reign__tasks_submission *rows[INSERT_ROWS_MAX];
    size_t m = 0, bytes = 0;
    for (size_t i = 0; rc >= 0 && i <= n; i++) {
        bool full = i == n || m == INSERT_ROWS_MAX || (m && bytes + v[i]->len > INSERT_BYTES_MAX);
        if (full && m) {
            rc = insert_rows(c, dc, rows, m, err, errlen);
            m = bytes = 0;
        }
        if (i < n && rcs[i] == 0) {
            rows[m++] = v[i];
            bytes += v[i]->len;
        }
    }
    if (rc >= 0)
        rc = find_or_insert(c, dc, v, rcs, n, err, errlen);
    /* Each queue that gained a task is told once, at the commit. */
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        bool told = !v[i]->made;
        for (size_t j = 0; !told && j < i; j++)
            told = v[j]->made && !strcmp(v[j]->queue, v[i]->queue);
        if (!told)
            rc = notify_queue(c, dc, v[i]->queue, TOLD_MASTER, err, errlen);
    }
    if (rc >= 0)
        rc = commit(c, dc, NULL, 0, err, errlen);
    else
        reign__sql_rollback(c);
    for (size_t i = 0; i < n; i++) {
        if (rc < 0 || rcs[i] < 0) {
            reign__task_row_clear(&v[i]->row);
            v[i]->made = false;
        }
    }
    return rc < 0 ? rc : 0;
}

int reign__tasks_submit(reign__sqlconn *c, const char *dc, const char *queue, const char *guid,
                        const void *data, size_t len, reign__task_row *out, bool *made, char *err,
                        size_t errlen)
{
    reign__tasks_submission v = {.queue = queue, .guid = guid, .data = data, .len = len};
    reign__tasks_submission *one = &v;
    int rc1 = 0;
    int rc = reign__tasks_submit_batch(c, dc, &one, &rc1, 1, err, errlen);
    *out = v.row;
    *made = v.made;
    return rc < 0 ? rc : rc1;
}

/* The guid and id of task `name`, in a table that exists: 0, REIGN_ENOENT (not a task name, or
 * no table yet), or a negative code. */
static int find(reign__sqlconn *c, const char *name, char guid[17], int64_t *id, char *err,
                size_t errlen)
{
    if (!reign__tasks_sql_name_parse(name, guid, id))
        return REIGN_ENOENT;
    bool absent;
    int rc = ensure(c, false, &absent, err, errlen);
    return rc < 0 ? rc : absent ? REIGN_ENOENT : 0;
}

int reign__tasks_read(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                      bool with_data, reign__task_row *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char guid[17];
    int64_t id;
    int rc = find(c, name, guid, &id, err, errlen);
    if (rc < 0)
        return rc;
    rc = select_one(c, dc, queue, guid, id, with_data, out, err, errlen);
    if (rc < 0)
        return rc;
    return out->id ? 0 : REIGN_ENOENT;
}

typedef struct waited {
    int64_t id;
    char guid[17];
} waited;

static int by_id(const void *a, const void *b)
{
    const waited *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/*
 * Lists of ids go into statements as parameters, as many places as n rounded up to a power of
 * two, the last id repeated in the rest (a repeat changes nothing: IN matches a row once, and
 * of two WHENs of one id the first decides).  A statement's text then depends only on that
 * bucket, not on the ids or their number, so the few texts repeat and PostgreSQL prepares them
 * (postgres.c).  Writes "{first}, {first + 1}, ..." into b and the ids into args[first - 1 ..]:
 * returns the number of places.
 */
static size_t id_list(reign__buf *b, reign__sqlv *args, size_t first, const int64_t *ids, size_t n)
{
    size_t places = 1;
    while (places < n)
        places <<= 1;
    for (size_t i = 0; i < places; i++) {
        args[first - 1 + i] = (reign__sqlv)REIGN__SQLV_I(ids[i < n ? i : n - 1]);
        reign__buf_printf(b, "%s{%zu}", i ? ", " : "", first + i);
    }
    return places;
}

/* Appends to out the done rows among w[0..n) (ids ascending, distinct; n at most
 * REIGN__TASKS_DONE_CHUNK): one SELECT by id (see ROW_COLUMNS and id_list()). */
static int read_done(reign__sqlconn *c, const char *dc, const char *queue, const waited *w,
                     size_t n, reign__task_rows *out, char *err, size_t errlen)
{
    int64_t ids[REIGN__TASKS_DONE_CHUNK];
    reign__sqlv args[REIGN__TASKS_DONE_CHUNK];
    for (size_t i = 0; i < n; i++)
        ids[i] = w[i].id;
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "SELECT " ROW_COLUMNS " FROM {K} WHERE state = 3 AND id IN (");
    size_t places = id_list(&b, args, 1, ids, n);
    reign__buf_puts(&b, ")");
    if (b.oom) {
        reign__buf_free(&b);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    reign__sql_rows rs;
    int rc =
        reign__sql_query(c, "reading which tasks are done", b.data, args, places, &rs, err, errlen);
    reign__buf_free(&b);
    if (rc < 0)
        return rc;
    reign__task_row *v =
        rs.n_rows ? reign__realloc(out->v, (out->n + rs.n_rows) * sizeof *v) : out->v;
    if (rs.n_rows && !v) {
        reign__sql_rows_free(&rs);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    out->v = v;
    for (size_t i = 0; rc >= 0 && i < rs.n_rows; i++) {
        reign__task_row r;
        const char *why = NULL;
        if (!in_queue(&rs, i, dc, queue))
            continue; /* a task of another queue: not the one waited for */
        int one = parse_row(&rs, i, &r, &why);
        if (one == REIGN_ENOMEM)
            rc = reign__sql_err(c, err, errlen, one, "out of memory");
        if (one < 0)
            continue; /* a foreign row: skipped, as every reader of many rows does */
        waited key = {.id = r.id};
        const waited *at = bsearch(&key, w, n, sizeof *w, by_id);
        if (at && !strcmp(at->guid, r.guid))
            out->v[out->n++] = r;
        else
            reign__task_row_clear(&r);
    }
    reign__sql_rows_free(&rs);
    return rc;
}

int reign__tasks_done(reign__sqlconn *c, const char *dc, const char *queue, char *const *names,
                      size_t n, reign__task_rows *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    waited *w = n ? reign__calloc(n, sizeof *w) : NULL;
    if (n && !w)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (reign__tasks_sql_name_parse(names[i], w[m].guid, &w[m].id))
            m++;
    qsort(w, m, sizeof *w, by_id);
    /* One id waited for twice (the same name, or one whose guid is wrong) is asked once. */
    size_t k = 0;
    for (size_t i = 0; i < m; i++)
        if (!k || w[k - 1].id != w[i].id)
            w[k++] = w[i];
    bool absent = true;
    int rc = k ? ensure(c, false, &absent, err, errlen) : 0;
    for (size_t lo = 0; rc >= 0 && !absent && lo < k; lo += REIGN__TASKS_DONE_CHUNK) {
        size_t len = k - lo < REIGN__TASKS_DONE_CHUNK ? k - lo : REIGN__TASKS_DONE_CHUNK;
        rc = read_done(c, dc, queue, w + lo, len, out, err, errlen);
    }
    reign__free(w);
    if (rc < 0)
        reign__task_rows_free(out);
    return rc < 0 ? rc : 0;
}

int reign__tasks_list(reign__sqlconn *c, const char *dc, const char *queue, reign__task_rows *out,
                      char *err, size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue)};
    return read_rows(c, queue, "listing the tasks",
                     "SELECT " ROW_COLUMNS " FROM {K} WHERE data_center = {1} AND queue_name = {2} "
                     "ORDER BY state, id",
                     args, 2, out, err, errlen);
}

int reign__tasks_delete(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                        char *err, size_t errlen)
{
    char guid[17];
    int64_t id;
    int rc = find(c, name, guid, &id, err, errlen);
    if (rc < 0 || (rc = begin(c, err, errlen)) < 0)
        return rc;
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue), REIGN__SQLV_S(guid),
                           REIGN__SQLV_I(id)};
    rc = reign__sql_query(c, "deleting a result",
                          "DELETE FROM {K} WHERE data_center = {1} AND queue_name = {2} AND "
                          "guid = {3} AND id = {4} AND state = 3",
                          args, 4, NULL, err, errlen);
    if (rc <= 0) {
        reign__sql_rollback(c);
        return rc < 0 ? rc : REIGN_ENOENT;
    }
    return commit(c, dc, queue, TOLD_QUEUE, err, errlen);
}

/* ---- the master ------------------------------------------------------------------------------ */

/* The oldest pending rows.  PostgreSQL and MariaDB skip the rows another transaction holds
 * (SKIP LOCKED), so that two pickers never wait for each other; SQLite's writers take turns
 * (BEGIN IMMEDIATE) and hold no row locks. */
#define PICK                                                                                       \
    "SELECT id, guid FROM {K} WHERE data_center = {1} AND queue_name = {2} AND state = 1 ORDER "   \
    "BY id LIMIT {3}"

/* Ids per UPDATE of give(), at most (a power of two: see id_list()). */
#define GIVE_IDS_MAX 128
_Static_assert(3 + GIVE_IDS_MAX <= REIGN__SQL_ARGS_MAX, "an assignment's parameters");

/*
 * Gives g the rows ids[0..n) of a pick (n at most GIVE_IDS_MAX; those reign wrote, ids checked
 * by the caller), in the master's open transaction: one UPDATE by id (see ROW_COLUMNS).  They
 * are locked (SKIP LOCKED's FOR UPDATE; SQLite's one writer), so each is still pending and all
 * change; a count short of that would mean a row changed meanwhile, and then only the rows that
 * now name the worker are its own.  Appends them to g->rows; 0, or a statement's negative code.
 */
static int give_some(reign__sqlconn *c, const reign__tasks_fence *f, reign__tasks_give *g,
                     const int64_t *ids, const char (*guids)[17], size_t n, char *err,
                     size_t errlen)
{
    reign__sqlv args[3 + GIVE_IDS_MAX] = {REIGN__SQLV_S(g->worker), REIGN__SQLV_S(g->worker_guid),
                                          REIGN__SQLV_I((int64_t)f->term)};
    reign__buf in, b;
    reign__buf_init(&in);
    reign__buf_init(&b);
    size_t places = id_list(&in, args, 4, ids, n);
    reign__buf_printf(&b,
                      "UPDATE {K} SET state = 2, worker = {1}, worker_guid = {2}, term = {3}, "
                      "assigned_ms = {NOW} WHERE state = 1 AND id IN (%s)",
                      in.data);
    int rc = b.oom || in.oom ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory")
                             : reign__sql_query(c, "assigning tasks", b.data, args, 3 + places,
                                                NULL, err, errlen);
    bool all = rc >= 0 && (size_t)rc == n;
    bool *mine = rc >= 0 ? reign__calloc(n, sizeof *mine) : NULL;
    if (rc >= 0 && !mine)
        rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; rc >= 0 && all && i < n; i++)
        mine[i] = true;
    if (rc >= 0 && !all) {
        /* Those of the rows asked for that name the worker now (a row of its own from an earlier
         * round is no concern of this one's). */
        reign__sql_rows rs;
        reign__buf_reset(&b);
        reign__buf_printf(&b,
                          "SELECT id FROM {K} WHERE state = 2 AND worker_guid = {2} AND term = "
                          "{3} AND id IN (%s)",
                          in.data);
        rc = b.oom ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory")
                   : reign__sql_query(c, "reading the tasks assigned", b.data, args, 3 + places,
                                      &rs, err, errlen);
        for (size_t r = 0; rc >= 0 && r < rs.n_rows; r++) {
            int64_t id;
            for (size_t i = 0; reign__sql_parse_i64(reign__sql_cell(&rs, r, 0), &id) && i < n; i++)
                mine[i] = mine[i] || ids[i] == id;
        }
        reign__sql_rows_free(&rs);
    }
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (!mine[i])
            continue;
        reign__task_row *r = &g->rows.v[g->rows.n++];
        r->id = ids[i];
        memcpy(r->guid, guids[i], 17);
        snprintf(r->name, sizeof r->name, REIGN__N_TASK "%s_%010lld", guids[i], (long long)r->id);
        r->state = REIGN_TASK_ASSIGNED;
        snprintf(r->worker, sizeof r->worker, "%s", g->worker);
        snprintf(r->worker_guid, sizeof r->worker_guid, "%s", g->worker_guid);
        r->term = f->term;
    }
    reign__free(mine);
    reign__buf_free(&in);
    reign__buf_free(&b);
    return rc < 0 ? rc : 0;
}

/* Gives g the rows ids[0..n) of a pick, GIVE_IDS_MAX at a time (give_some()): 0 (g->rows
 * set), or a statement's negative code. */
static int give(reign__sqlconn *c, const reign__tasks_fence *f, reign__tasks_give *g,
                const int64_t *ids, const char (*guids)[17], size_t n, char *err, size_t errlen)
{
    if (!n)
        return 0;
    if (!(g->rows.v = reign__calloc(n, sizeof *g->rows.v)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    int rc = 0;
    for (size_t lo = 0; rc >= 0 && lo < n; lo += GIVE_IDS_MAX)
        rc = give_some(c, f, g, ids + lo, guids + lo, n - lo < GIVE_IDS_MAX ? n - lo : GIVE_IDS_MAX,
                       err, errlen);
    return rc;
}

int reign__tasks_assign_many(reign__sqlconn *c, const char *dc, const char *queue,
                             const reign__tasks_fence *f, reign__tasks_give *g, size_t n, char *err,
                             size_t errlen)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        memset(&g[i].rows, 0, sizeof g[i].rows);
        total += g[i].max;
    }
    if (!total)
        return 0;
    int rc = begin_fenced(c, dc, f, err, errlen);
    if (rc)
        return rc;
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue), REIGN__SQLV_I((int64_t)total)};
    reign__sql_rows rs = {0};
    rc = reign__sql_query(c, "picking pending tasks",
                          c->d->for_update[0] ? PICK " FOR UPDATE SKIP LOCKED" : PICK, args, 3, &rs,
                          err, errlen);
    /* The oldest rows picked, in order, those reign wrote (any other is never acted on). */
    int64_t *ids = rc >= 0 && rs.n_rows ? reign__calloc(rs.n_rows, sizeof *ids) : NULL;
    char(*guids)[17] = ids ? reign__calloc(rs.n_rows, sizeof *guids) : NULL;
    if (rc >= 0 && rs.n_rows && !guids)
        rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    size_t kept = 0;
    for (size_t r = 0; rc >= 0 && r < rs.n_rows; r++) {
        const char *guid = reign__sql_cell(&rs, r, 1);
        if (reign__sql_parse_i64(reign__sql_cell(&rs, r, 0), &ids[kept]) && ids[kept] > 0 &&
            hex16(guid))
            memcpy(guids[kept++], guid, 17);
    }
    reign__sql_rows_free(&rs);
    /* Each worker its share, in the order given: the first the oldest. */
    bool any = false;
    for (size_t i = 0, from = 0; rc >= 0 && i < n && from < kept; i++) {
        size_t k = kept - from < g[i].max ? kept - from : g[i].max;
        rc = give(c, f, &g[i], ids + from, guids + from, k, err, errlen);
        any = any || g[i].rows.n;
        from += k;
    }
    reign__free(ids);
    reign__free(guids);
    if (rc >= 0 && any)
        rc = tell_workers(c, dc, queue, g, n, err, errlen);
    if (rc >= 0)
        rc = commit(c, dc, queue, 0, err, errlen);
    else
        reign__sql_rollback(c);
    for (size_t i = 0; rc < 0 && i < n; i++)
        reign__task_rows_free(&g[i].rows);
    return rc;
}

int reign__tasks_assign(reign__sqlconn *c, const char *dc, const char *queue,
                        const reign__tasks_fence *f, const char *worker, const char *worker_guid,
                        size_t max, reign__task_rows *out, char *err, size_t errlen)
{
    reign__tasks_give g = {.worker = worker, .worker_guid = worker_guid, .max = max};
    int rc = reign__tasks_assign_many(c, dc, queue, f, &g, 1, err, errlen);
    *out = g.rows;
    return rc;
}

/* One statement fenced by the master's lease (begin_fenced), on the queue's rows: {1} data
 * center, {2} queue, {3} arg; `told` as commit()'s.  The rows changed, or a negative code;
 * *deposed set when the fence refused (nothing changed). */
static int fenced_write(reign__sqlconn *c, const char *dc, const char *queue,
                        const reign__tasks_fence *f, const char *what, const char *sql,
                        reign__sqlv arg, int told, bool *deposed, char *err, size_t errlen)
{
    *deposed = false;
    int rc = begin_fenced(c, dc, f, err, errlen);
    if (rc == REIGN__TASKS_DEPOSED)
        *deposed = true;
    if (rc)
        return rc < 0 ? rc : 0;
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue), arg};
    int n = reign__sql_query(c, what, sql, args, 3, NULL, err, errlen);
    if (n < 0) {
        reign__sql_rollback(c);
        return n;
    }
    rc = commit(c, dc, queue, n > 0 ? told : 0, err, errlen);
    return rc < 0 ? rc : n;
}

int reign__tasks_requeue(reign__sqlconn *c, const char *dc, const char *queue,
                         const reign__tasks_fence *f, const char *worker_guid, bool *deposed,
                         char *err, size_t errlen)
{
    /* Only rows still assigned to that registration: taken back once, and never a task its
     * worker finished meanwhile. */
    return fenced_write(c, dc, queue, f, "taking back the tasks of a worker gone",
                        "UPDATE {K} SET state = 1, worker = NULL, worker_guid = NULL, term = NULL, "
                        "assigned_ms = NULL, requeued = requeued + 1 WHERE data_center = {1} AND "
                        "queue_name = {2} AND state = 2 AND worker_guid = {3}",
                        REIGN__SQLV_S(worker_guid), TOLD_QUEUE | TOLD_WORKERS, deposed, err,
                        errlen);
}

int reign__tasks_sweep(reign__sqlconn *c, const char *dc, const char *queue,
                       const reign__tasks_fence *f, int64_t retention_ms, bool *deposed, char *err,
                       size_t errlen)
{
    return fenced_write(c, dc, queue, f, "deleting old results",
                        "DELETE FROM {K} WHERE data_center = {1} AND queue_name = {2} AND state = "
                        "3 AND done_ms < {NOW} - {3}",
                        REIGN__SQLV_I(retention_ms), TOLD_QUEUE, deposed, err, errlen);
}

int reign__tasks_load(reign__sqlconn *c, const char *dc, const char *queue, reign__sql_rows *out,
                      char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    bool absent;
    int rc = ensure(c, false, &absent, err, errlen);
    if (rc < 0 || absent)
        return rc;
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue)};
    rc = reign__sql_query(c, "counting the tasks assigned",
                          "SELECT worker_guid, COUNT(*) FROM {K} WHERE data_center = {1} AND "
                          "queue_name = {2} AND state = 2 GROUP BY worker_guid ORDER BY "
                          "worker_guid",
                          args, 2, out, err, errlen);
    return rc < 0 ? rc : 0;
}

/* ---- the worker ------------------------------------------------------------------------------ */

int reign__tasks_assigned(reign__sqlconn *c, const char *dc, const char *queue,
                          const char *worker_guid, reign__task_rows *out, char *err, size_t errlen)
{
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue), REIGN__SQLV_S(worker_guid)};
    return read_rows(c, queue, "reading the tasks assigned to a worker",
                     "SELECT " ROW_COLUMNS ", data FROM {K} WHERE data_center = {1} AND "
                     "queue_name = {2} AND state = 2 AND worker_guid = {3} ORDER BY id",
                     args, 3, out, err, errlen);
}

/* Results per UPDATE, at most (a power of two: see id_list(); five parameters each, the id in
 * five places), and their outputs' bytes (one larger output goes alone), as for submits. */
#define FINISH_ROWS_MAX 64
_Static_assert(3 + 5 * FINISH_ROWS_MAX <= REIGN__SQL_ARGS_MAX, "an UPDATE's parameters");
_Static_assert(3 + 9 * FINISH_ROWS_MAX <= REIGN__SQL_PLACES_MAX, "an UPDATE's places");

/*
 * Results v[0..n) of one queue and one registration, inside the batch's transaction, in one
 * UPDATE: each row changes only while it is still assigned to that registration (a task taken
 * back from a worker taken for dead, or done already, is not changed).  rcs[i]: 0 (recorded
 * now), 1 (recorded, by this registration: when not all changed, an earlier call whose answer
 * was lost may have written it), REIGN_ENOENT (not ours).  *changed: some row changed.  0, or
 * a statement's negative code (the transaction is lost).
 */
static int finish_rows(reign__sqlconn *c, const char *dc, const reign__tasks_result *const *v,
                       int *rcs, size_t n, bool *changed, char *err, size_t errlen)
{
    char guids[FINISH_ROWS_MAX][17];
    int64_t ids[FINISH_ROWS_MAX];
    bool named[FINISH_ROWS_MAX];
    /* {1}: the registration; then the ids (id_list()), then each row's exit code, signal, guid
     * and output; a row repeated to fill the places has its own parameters, which no WHEN
     * reaches.  The rows are found by id alone (see the top of tasks.h): named with the queue's
     * columns and the state, the UPDATE was planned as a scan of every task assigned in the
     * queue, all workers', filtered, which cost more than the rows' changes themselves. */
    reign__sqlv args[3 + 5 * FINISH_ROWS_MAX] = {REIGN__SQLV_S(v[0]->worker_guid)};
    const reign__tasks_result *row[FINISH_ROWS_MAX];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        rcs[i] = REIGN_ENOENT; /* a name that is no task's is not ours */
        if ((named[i] = reign__tasks_sql_name_parse(v[i]->name, guids[i], &ids[i]))) {
            ids[m] = ids[i];
            memcpy(guids[m], guids[i], sizeof guids[m]);
            row[m++] = v[i];
        }
    }
    *changed = false;
    if (!m)
        return 0;
    reign__buf in, code, signal, output, guid;
    reign__buf_init(&in);
    reign__buf_init(&code);
    reign__buf_init(&signal);
    reign__buf_init(&output);
    reign__buf_init(&guid);
    size_t places = id_list(&in, args, 2, ids, m), k = 2 + places;
    for (size_t i = 0; i < places; i++, k += 4) {
        const reign__tasks_result *r = i < m ? row[i] : NULL;
        size_t output_len = !r                                      ? 0
                            : r->output_len > REIGN_TASK_OUTPUT_MAX ? REIGN_TASK_OUTPUT_MAX
                                                                    : r->output_len;
        args[k - 1] = (reign__sqlv)REIGN__SQLV_I(r ? r->exit_code : 0);
        args[k] = (reign__sqlv)REIGN__SQLV_I(r ? r->exit_signal : 0);
        args[k + 1] = (reign__sqlv)REIGN__SQLV_S(r ? guids[i] : "");
        args[k + 2] = (reign__sqlv)REIGN__SQLV_B(r ? r->output : NULL, output_len);
        reign__buf_printf(&code, " WHEN {%zu} THEN {%zu}", 2 + i, k);
        reign__buf_printf(&signal, " WHEN {%zu} THEN {%zu}", 2 + i, k + 1);
        reign__buf_printf(&guid, " WHEN {%zu} THEN {%zu}", 2 + i, k + 2);
        reign__buf_printf(&output, " WHEN {%zu} THEN {%zu}", 2 + i, k + 3);
    }
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b,
                      "UPDATE {K} SET state = 3, exit_code = CASE id%s END, exit_signal = CASE "
                      "id%s END, output = CASE id%s END, data = NULL, done_ms = {NOW} WHERE "
                      "state = 2 AND worker_guid = {1} AND id IN (%s) AND guid = CASE id%s END",
                      code.data, signal.data, output.data, in.data, guid.data);
    bool oom = b.oom || in.oom || code.oom || signal.oom || output.oom || guid.oom;
    int rc = oom ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory")
                 : reign__sql_query(c, "recording results", b.data, args, k - 1, NULL, err, errlen);
    *changed = rc > 0;
    if (rc >= 0 && (size_t)rc == m) {
        for (size_t i = 0; i < n; i++)
            if (named[i])
                rcs[i] = 0;
    } else if (rc >= 0) {
        /* Not all changed: a row done by this registration is ours (now, or by an earlier
         * call whose answer was lost); any other is not ours. */
        reign__sql_rows rs;
        reign__buf_reset(&b);
        reign__buf_reset(&in);
        places = id_list(&in, args, 1, ids, m);
        reign__buf_printf(&b, "SELECT " ROW_COLUMNS " FROM {K} WHERE id IN (%s)", in.data);
        rc = b.oom || in.oom
                 ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory")
                 : reign__sql_query(c, "reading results", b.data, args, places, &rs, err, errlen);
        for (size_t r = 0; rc >= 0 && r < rs.n_rows; r++) {
            const char *state = reign__sql_cell(&rs, r, 2), *row_guid = reign__sql_cell(&rs, r, 1);
            const char *worker_guid = reign__sql_cell(&rs, r, 4);
            int64_t id;
            if (!in_queue(&rs, r, dc, v[0]->queue) || !state || strcmp(state, "3") || !row_guid ||
                !worker_guid || strcmp(worker_guid, v[0]->worker_guid) ||
                !reign__sql_parse_i64(reign__sql_cell(&rs, r, 0), &id))
                continue;
            for (size_t i = 0; i < n; i++) {
                char g[17];
                int64_t vid;
                if (named[i] && reign__tasks_sql_name_parse(v[i]->name, g, &vid) && vid == id &&
                    !strcmp(g, row_guid))
                    rcs[i] = 1;
            }
        }
        reign__sql_rows_free(&rs);
    }
    reign__buf_free(&b);
    reign__buf_free(&in);
    reign__buf_free(&code);
    reign__buf_free(&signal);
    reign__buf_free(&output);
    reign__buf_free(&guid);
    return rc < 0 ? rc : 0;
}

/* The queue told of the results of one UPDATE (got[k] >= 0: recorded), with their ids as
 * the hint ("12,15,16"). */
static int tell_done(reign__sqlconn *c, const char *dc, const char *queue,
                     const reign__tasks_result *const *v, const int *got, size_t n, char *err,
                     size_t errlen)
{
    char name[REIGN__TASKS_LISTEN_MAX], hint[FINISH_ROWS_MAX * 21 + 1];
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        char guid[17];
        int64_t id;
        if (got[k] >= 0 && reign__tasks_sql_name_parse(v[k]->name, guid, &id))
            len +=
                (size_t)snprintf(hint + len, sizeof hint - len, "%s%" PRId64, len ? "," : "", id);
    }
    snprintf(name, sizeof name, REIGN__TASKS_LISTEN "%s", queue);
    return reign__sql_notify_hint(c, dc, name, len ? hint : NULL, err, errlen);
}

int reign__tasks_finish_batch(reign__sqlconn *c, const char *dc,
                              const reign__tasks_result *const *v, int *rcs, size_t n, char *err,
                              size_t errlen)
{
    int rc = ensure(c, true, NULL, err, errlen);
    if (rc < 0 || (rc = begin(c, err, errlen)) < 0)
        return rc;
    /* One UPDATE per queue and registration (a worker's results: usually one for the batch),
     * as many results as the outputs' bytes allow each; each UPDATE that recorded a result
     * tells its queue at the commit, naming the tasks it recorded (a hint: a waiter reads
     * those of its tasks alone, not all it waits for).  taken[i]: result i is in an UPDATE. */
    bool *taken = reign__calloc(n + 1, sizeof *taken);
    bool any = false;
    if (!taken)
        rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; rc >= 0 && i < n; i++) {
        if (taken[i])
            continue;
        const reign__tasks_result *group[FINISH_ROWS_MAX] = {v[i]};
        size_t at[FINISH_ROWS_MAX], m = 0, bytes = 0;
        int got[FINISH_ROWS_MAX];
        for (size_t j = i; j < n && m < FINISH_ROWS_MAX; j++) {
            if (taken[j] || strcmp(v[j]->queue, v[i]->queue) ||
                strcmp(v[j]->worker_guid, v[i]->worker_guid) ||
                (m && bytes + v[j]->output_len > INSERT_BYTES_MAX))
                continue;
            taken[j] = true;
            bytes += v[j]->output_len;
            at[m] = j;
            group[m++] = v[j];
        }
        bool changed;
        rc = finish_rows(c, dc, group, got, m, &changed, err, errlen);
        for (size_t k = 0; rc >= 0 && k < m; k++)
            rcs[at[k]] = got[k];
        if (rc >= 0 && changed)
            rc = tell_done(c, dc, v[i]->queue, group, got, m, err, errlen);
        any = any || changed;
    }
    reign__free(taken);
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    if (!any) {
        reign__sql_rollback(c); /* nothing written */
        return 0;
    }
    return commit(c, dc, NULL, 0, err, errlen);
}

int reign__tasks_finish(reign__sqlconn *c, const char *dc, const char *queue, const char *name,
                        const char *worker_guid, int exit_code, int exit_signal, const void *output,
                        size_t output_len, char *err, size_t errlen)
{
    const reign__tasks_result v = {.queue = queue,
                                   .name = name,
                                   .worker_guid = worker_guid,
                                   .exit_code = exit_code,
                                   .exit_signal = exit_signal,
                                   .output = output,
                                   .output_len = output_len};
    const reign__tasks_result *one = &v;
    int rc1 = 0;
    int rc = reign__tasks_finish_batch(c, dc, &one, &rc1, 1, err, errlen);
    return rc < 0 ? rc : rc1;
}

/* ---- `reign ls` and `reign rm` --------------------------------------------------------------- */

int reign__tasks_queues(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                        size_t errlen)
{
    memset(names, 0, sizeof *names);
    bool absent;
    int rc = ensure(c, false, &absent, err, errlen);
    if (rc < 0 || absent)
        return rc;
    reign__sqlv arg = REIGN__SQLV_S(dc);
    rc = reign__sql_query(c, "listing the queues",
                          "SELECT DISTINCT queue_name FROM {K} WHERE data_center = {1} ORDER BY "
                          "queue_name",
                          &arg, 1, names, err, errlen);
    return rc < 0 ? rc : 0;
}

/* In the removal's transaction: locks the queue's rows and refuses (REIGN_EFOREIGN) if one of
 * them is not reign's, then deletes them.  The rows deleted, or a negative code. */
static int drop_tasks(reign__sqlconn *c, const char *queue, const reign__sqlv *args, char *err,
                      size_t errlen)
{
    reign__task_rows rows;
    int rc = query_rows(c, queue, "locking the tasks of a queue",
                        "SELECT " ROW_COLUMNS " FROM {K} WHERE data_center = {1} AND queue_name = "
                        "{2}{FOR_UPDATE}",
                        args, 2, false, &rows, err, errlen);
    reign__task_rows_free(&rows);
    if (rc < 0)
        return rc;
    return reign__sql_query(c, "removing a queue",
                            "DELETE FROM {K} WHERE data_center = {1} AND queue_name = {2}", args, 2,
                            NULL, err, errlen);
}

int reign__tasks_remove_queue(reign__sqlconn *c, const char *dc, const char *queue,
                              const reign__lease *master, char *err, size_t errlen)
{
    char group[sizeof REIGN__TASKS_PREFIX + REIGN_TASKS_QUEUE_MAX];
    if (strlen(queue) > REIGN_TASKS_QUEUE_MAX)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "a queue name over the limit");
    snprintf(group, sizeof group, REIGN__TASKS_PREFIX "%s", queue);
    bool absent;
    int rc = ensure(c, false, &absent, err, errlen);
    if (rc == 0) /* whether there is a members table: a statement that fails aborts the whole
                  * transaction on PostgreSQL, so none is sent to a table that is not there */
        rc = reign__members_check(c, err, errlen);
    if (rc == 0)
        rc = begin(c, err, errlen);
    if (rc < 0)
        return rc;
    /* The group's row first, as a registration locks it, then the lease row, then the tasks,
     * as the master's fenced writes lock its lease before the tasks: an order no writer takes
     * the other way round. */
    int found = c->members_ready ? reign__members_drop_group(c, dc, group, err, errlen) : 0;
    rc = found;
    if (rc >= 0 && master) {
        /* At the version read: a master that took or renewed it since makes this change
         * nothing, and the removal is refused. */
        rc = reign__sql_catalog_clear(c, dc, master, group, err, errlen);
        rc = rc == 0 ? REIGN_EBUSY : rc;
        found = 1;
    }
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(queue)};
    if (rc >= 0 && !absent && (rc = drop_tasks(c, queue, args, err, errlen)) > 0)
        found = 1;
    if (rc < 0 || !found) {
        reign__sql_rollback(c);
        return rc < 0 ? rc : 0;
    }
    rc = commit(c, dc, queue, TOLD_QUEUE | TOLD_WORKERS, err, errlen);
    return rc < 0 ? rc : 1;
}
