/*
 * runs.h - the record of slots (<reign/slot.h>) in a SQL store: the table
 * "<lease table>_runs", one row per attempt of a slot, beside the lease
 * table whose rows are the elections.
 *
 *   id            auto-increment primary key (orders slots by their first attempt)
 *   data_center   as in the lease table
 *   lock_name     the election (a reign name: at most 200 characters)
 *   slot          the slot's key
 *   attempt       1, 2, ...; unique with the three above
 *   owner, host   who ran it
 *   term, token   the leadership it ran under
 *   start_ms, end_ms   the database's clock, Unix ms; end_ms NULL while running
 *   result        running | exited | killed | stopped | lost, with `code`
 *   verdict       the slot's state after this attempt: running | succeeded | retry | failed
 *                 | abandoned
 *
 * The table is made on first use and upgraded (missing columns added) like the lease table;
 * one whose layout is foreign is refused (REIGN_EFOREIGN), never changed.
 *
 * Writes that start or take over an attempt are fenced by the lease: one transaction that
 * locks the election's lease row (SELECT ... FOR UPDATE; SQLite: BEGIN IMMEDIATE, which
 * serialises every writer of the file), compares its term with the writer's, and only then
 * writes.  A takeover of the lease waits for that lock and then moves the term, so a write
 * either lands before it - and the new leader, which reads after its take, sees it - or is
 * refused.  The end of an attempt is a compare-and-set on the row alone (end_ms IS NULL).
 *
 * Everything here blocks; it runs on the SQL client's worker thread (worker.h's CALL).
 * Private to the library.
 */
#ifndef REIGN_SQL_RUNS_H
#define REIGN_SQL_RUNS_H

#include <reign/limits.h>

#include "sql.h"

typedef struct reign__run_row {
    char slot[REIGN_SLOT_KEY_MAX + 1];
    unsigned attempt;
    char owner[REIGN_ID_MAX + 1];
    char host[256];
    uint64_t term, token;
    int64_t start_ms, end_ms; /* end_ms 0: no end */
    char result[17];
    int code;
    char verdict[17];
    int64_t id;
} reign__run_row;

typedef struct reign__run_rows {
    reign__run_row *v;
    size_t n;
    int64_t db_now_ms; /* read: the database's clock */
} reign__run_rows;

void reign__run_rows_free(reign__run_rows *r);

/* A write refused because the lease's term is no longer the writer's. */
#define REIGN__RUNS_DEPOSED 2

/* Makes, checks or upgrades the runs table (once per connection).  0 or a negative code. */
int reign__runs_ensure(reign__sqlconn *c, char *err, size_t errlen);

/* The database's clock. */
int reign__runs_now(reign__sqlconn *c, int64_t *now_ms, char *err, size_t errlen);

/* The attempts of one slot, by attempt, and the database's clock.  No table: no rows. */
int reign__runs_read(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                     reign__run_rows *out, char *err, size_t errlen);

/*
 * Starts attempt row->attempt (owner, host, term, token from row; start_ms := now, result and
 * verdict "running"), if the lease of `name` is at term `fence` and the slot has no attempt
 * that is at least that number, still running, or final.  1 written, 0 refused by the record,
 * REIGN__RUNS_DEPOSED refused by the lease, or a negative code.
 */
int reign__runs_start(reign__sqlconn *c, const char *dc, const char *name,
                      const reign__run_row *row, uint64_t fence, char *err, size_t errlen);

/*
 * Ends attempt `attempt` of `slot` as a later leader found it (result, code, verdict; end_ms :=
 * now), if it has no end and the lease is at term `fence`.  Returns as for start.
 */
int reign__runs_mark(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                     unsigned attempt, const char *result, int code, const char *verdict,
                     uint64_t fence, char *err, size_t errlen);

/*
 * Ends attempt `attempt` of `slot`, run under `term`, as its runner reports it, if it has no
 * end yet (compare-and-set on the row only).  With a final verdict and keep > 0 the record is
 * then cut to the newest `keep` slots.  1 written, 0 refused, or a negative code.
 */
int reign__runs_end(reign__sqlconn *c, const char *dc, const char *name, const char *slot,
                    unsigned attempt, uint64_t term, const char *result, int code,
                    const char *verdict, int keep, char *err, size_t errlen);

/* Deletes every slot of `name` but the newest `keep` (by first attempt).  The count deleted. */
int reign__runs_prune(reign__sqlconn *c, const char *dc, const char *name, int keep, char *err,
                      size_t errlen);

/* Every row of `name`, oldest first.  No table: no rows. */
int reign__runs_history(reign__sqlconn *c, const char *dc, const char *name, reign__run_rows *out,
                        char *err, size_t errlen);

#endif
