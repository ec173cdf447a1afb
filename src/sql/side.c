/*
 * side.c - the side tables' shared steps (side.h), written once for the three dialects through
 * reign__sql_query().
 */
#include "side.h"

#include <string.h>

#include "dialect.h"

int reign__sql_side_ensure(reign__sqlconn *c, const char *suffix, const char *what,
                           const char *const *required, size_t n_required, const char *create,
                           bool *ready, char *err, size_t errlen)
{
    if (*ready)
        return 0;
    for (int attempt = 0;; attempt++) {
        reign__sql_rows cols;
        int rc = reign__sql_side_columns(c, suffix, &cols, err, errlen);
        if (rc < 0)
            return rc;
        bool missing = cols.n_rows == 0;
        const char *lacks = NULL;
        for (size_t i = 0; !missing && !lacks && i < n_required; i++)
            if (!reign__sql_has_column(&cols, required[i]))
                lacks = required[i];
        reign__sql_rows_free(&cols);
        if (lacks) {
            char name[REIGN__SQL_TABLE_MAX + 16];
            reign__sql_side_table(c, suffix, name, sizeof name, NULL, 0);
            return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                  "table %s has no column %s: not a %s table reign can use", name,
                                  lacks, what);
        }
        if (!missing)
            break;
        if (!create)
            return 0;
        rc = reign__sql_query(c, "creating a side table", create, NULL, 0, NULL, err, errlen);
        /* Failed: another process may have made it at the same moment; look again, once. */
        if (rc < 0 && attempt > 0)
            return rc;
        if (rc >= 0)
            reign__log(c->log, REIGN_LOG_INFO, "%s: made the %s table of %s", c->store, what,
                       c->table);
    }
    *ready = true;
    return 0;
}

int reign__sql_side_commit(reign__sqlconn *c, const char *dc, const char *listen, char *err,
                           size_t errlen)
{
    int rc = listen ? reign__sql_notify(c, dc, listen, err, errlen) : 0;
    if (rc >= 0)
        rc = reign__sql_query(c, "commit", "COMMIT", NULL, 0, NULL, err, errlen);
    if (rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    return 0;
}

int reign__sql_side_write(reign__sqlconn *c, const char *dc, const char *listen, const char *what,
                          const char *tmpl, const reign__sqlv *args, size_t n_args, char *err,
                          size_t errlen)
{
    int rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen);
    if (rc < 0)
        return rc;
    int n = reign__sql_query(c, what, tmpl, args, n_args, NULL, err, errlen);
    if (n < 0) {
        reign__sql_rollback(c);
        return n;
    }
    rc = reign__sql_side_commit(c, dc, listen, err, errlen);
    return rc < 0 ? rc : n;
}

int reign__sql_side_read(reign__sqlconn *c, const char *what, const char *tmpl,
                         const reign__sqlv *args, size_t n_args, reign__sql_rows *rows, bool ready,
                         int (*check)(reign__sqlconn *c, char *err, size_t errlen), char *err,
                         size_t errlen)
{
    int rc = reign__sql_query(c, what, tmpl, args, n_args, rows, err, errlen);
    if (rc < 0 && !ready && !c->broken && rc != REIGN_ECONNLOSS && rc != REIGN_ETIMEDOUT) {
        char why[512];
        if (check(c, why, sizeof why) == REIGN_EFOREIGN) {
            reign__strlcpy(err, why, errlen); /* names the store already */
            return REIGN_EFOREIGN;
        }
    }
    return rc;
}

int reign__sql_side_list(reign__sqlconn *c, const char *dc, const char *what, const char *tmpl,
                         reign__sql_rows *rows, char *err, size_t errlen)
{
    memset(rows, 0, sizeof *rows);
    reign__sqlv arg = REIGN__SQLV_S(dc);
    int rc = reign__sql_query(c, what, tmpl, &arg, 1, rows, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* no table yet: nothing in it */
    return rc < 0 ? rc : 0;
}
