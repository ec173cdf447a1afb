/*
 * side.h - making or checking a side table of the lease table ("<table>_<suffix>") on first
 * use: the part that sessions.c and members.c share.  A table that exists but lacks one of
 * the required columns is refused (REIGN_EFOREIGN, naming it), never changed; one made at the
 * same moment by another process is looked at again.  Blocks (the worker's CALL).
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

/* BEGIN, the statement, a notice of `listen` to watchers (PostgreSQL: sent on commit), COMMIT:
 * a write that watchers hear of.  Rows changed, or a negative code (rolled back). */
int reign__sql_side_write(reign__sqlconn *c, const char *dc, const char *listen, const char *what,
                          const char *tmpl, const reign__sqlv *args, size_t n_args, char *err,
                          size_t errlen);

#endif
