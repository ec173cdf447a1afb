/*
 * side.h - the steps the side tables of the lease table ("<table>_<suffix>") share: making or
 * checking one on first use (sessions.c, members.c), a write that watchers hear of (those and
 * values.c), and the
 * reads of rows that may be foreign (members.c, values.c).  A table that exists but lacks one
 * of the required columns is refused (REIGN_EFOREIGN, naming it), never changed; one made at
 * the same moment by another process is looked at again.  Blocks (the worker's CALL).
 */
#ifndef REIGN_SQL_SIDE_H
#define REIGN_SQL_SIDE_H

#include "sql.h"

/* Makes (with `create`, a CREATE TABLE IF NOT EXISTS) or checks table "<table>_<suffix>" of
 * the `what` kind ("sessions"), unless *ready; sets *ready.  0 or a negative code.  With
 * `create` NULL it only checks: 0 also when there is no table (*ready stays false). */
int reign__sql_side_ensure(reign__sqlconn *c, const char *suffix, const char *what,
                           const char *const *required, size_t n_required, const char *create,
                           bool *ready, char *err, size_t errlen);

/* The end of a write that watchers hear of, its transaction open: a notice of `listen` to them
 * (PostgreSQL: sent on commit; none when NULL: told already), then COMMIT.  0, or a negative
 * code (rolled back). */
int reign__sql_side_commit(reign__sqlconn *c, const char *dc, const char *listen, char *err,
                           size_t errlen);

/* BEGIN, the statement, then reign__sql_side_commit(): a write that watchers hear of.  Rows
 * changed, or a negative code (rolled back). */
int reign__sql_side_write(reign__sqlconn *c, const char *dc, const char *listen, const char *what,
                          const char *tmpl, const reign__sqlv *args, size_t n_args, char *err,
                          size_t errlen);

/*
 * The SELECT of a reader that watchers wake: on SQLite a change notice comes before the write
 * is visible, so there the read waits for the writer's lock (BEGIN ... ROLLBACK: nothing is
 * written).  If it fails on a table not yet known to be usable (`ready` false), but not for a
 * lost connection, `check` (which makes nothing) is asked: a table of another layout is then
 * said so (REIGN_EFOREIGN, its message naming the table) instead of the statement's error.
 * Even after "no such table": a read that joins another table fails so when that one is
 * missing, its own being the foreign one.  reign__sql_query()'s code otherwise (REIGN_ENOENT:
 * no table yet); *rows is the caller's to free only on success.
 */
int reign__sql_side_read(reign__sqlconn *c, const char *what, const char *tmpl,
                         const reign__sqlv *args, size_t n_args, reign__sql_rows *rows, bool ready,
                         int (*check)(reign__sqlconn *c, char *err, size_t errlen), char *err,
                         size_t errlen);

/* The rows of a SELECT whose only argument {1} is data center dc: none (an empty *rows, 0)
 * before the table exists.  0 or a negative code. */
int reign__sql_side_list(reign__sqlconn *c, const char *dc, const char *what, const char *tmpl,
                         reign__sql_rows *rows, char *err, size_t errlen);

#endif
