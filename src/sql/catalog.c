/*
 * catalog.c - the elections a SQL store holds, for `reign ls` and `reign rm`
 * (<reign/store.h>): the statements, written once for the three dialects
 * through reign__sql_query().  Run on the SQL client's worker thread.
 */
#include "sql.h"

int reign__sql_catalog_list(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                            size_t errlen)
{
    reign__sqlv arg = REIGN__SQLV_S(dc);
    return reign__sql_query(c, "listing the elections",
                            "SELECT lock_name FROM {T} WHERE data_center = {1} ORDER BY lock_name",
                            &arg, 1, names, err, errlen);
}

int reign__sql_catalog_remove(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                              char *err, size_t errlen)
{
    /* At the term read expired: a takeover since moved it, and then nothing is deleted. */
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_I((int64_t)term)};
    return reign__sql_query(c, "removing the election",
                            "DELETE FROM {T} WHERE data_center = {1} AND lock_name = {2} AND "
                            "term = {3}",
                            args, 3, NULL, err, errlen);
}
