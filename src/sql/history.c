/*
 * history.c - the leaderships of SQL lease elections (history.h), written once for the three
 * dialects through reign__sql_query().  Nothing here decides who leads: the lease row alone
 * does; a row only says who led when, and how it ended.
 */
#include "history.h"

#include <string.h>

#include "dialect.h"
#include "layout.h"
#include "side.h"

static const char *const required[] = {REIGN__HISTORY_REQUIRED_COLUMNS};

static int ensure(reign__sqlconn *c, bool create, char *err, size_t errlen)
{
    return reign__sql_side_ensure(c, REIGN__SQL_HISTORY_SUFFIX, "history", required,
                                  sizeof required / sizeof required[0],
                                  create ? "CREATE TABLE IF NOT EXISTS {H} ("
                                           "data_center varchar(128) NOT NULL, "
                                           "lock_name varchar(200) NOT NULL, "
                                           "term bigint NOT NULL, "
                                           "owner varchar(512) NOT NULL, "
                                           "owner_guid varchar(64) NOT NULL, "
                                           "payload {BLOB}, "
                                           "data_len bigint NOT NULL, "
                                           "started_ms bigint NOT NULL, "
                                           "ended_ms bigint, "
                                           "end_reason varchar(16), "
                                           "ended_estimated int NOT NULL DEFAULT 0, "
                                           "PRIMARY KEY (data_center, lock_name, term))"
                                           "{TABLE_OPTIONS}"
                                         : NULL,
                                  &c->history_ready, err, errlen);
}

/* The writes after the first (an end, a word, the guardian's): only into a table seen to be
 * reign's on this connection (none: nothing to write, and no error for the server's log). */
static int usable(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = ensure(c, false, err, errlen);
    return rc < 0 ? rc : c->history_ready;
}

void reign__history_rows_free(reign__history_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        reign__free(r->v[i].payload);
    reign__free(r->v);
    memset(r, 0, sizeof *r);
}

int reign__history_begin(reign__sqlconn *c, const char *dc, const reign__history_claim *h,
                         char *err, size_t errlen)
{
    int rc = ensure(c, true, err, errlen);
    if (rc < 0)
        return rc;
    size_t kept = h->payload_len < REIGN_HISTORY_DATA_MAX ? h->payload_len : REIGN_HISTORY_DATA_MAX;
    reign__sqlv args[10] = {REIGN__SQLV_S(dc),
                            REIGN__SQLV_S(h->name),
                            REIGN__SQLV_I((int64_t)h->term),
                            REIGN__SQLV_S(h->owner),
                            REIGN__SQLV_S(h->guid),
                            REIGN__SQLV_B(h->payload, kept),
                            REIGN__SQLV_I((int64_t)h->payload_len),
                            REIGN__SQLV_S(REIGN__SQL_DEPOSED),
                            REIGN__SQLV_I(h->estimate_ms),
                            REIGN__SQLV_I((int64_t)h->term - h->keep)};
    /* Fenced by the lease row: at this term, won by this standing (its guid, or a mark put
     * over it since; no other standing ever holds the term). */
    rc = reign__sql_query(c, "recording a leadership",
                          "INSERT INTO {H} (data_center, lock_name, term, owner, owner_guid, "
                          "payload, data_len, started_ms, ended_ms, end_reason, ended_estimated) "
                          "SELECT {1}, {2}, {3}, {4}, {5}, {6}, {7}, {NOW}, NULL, NULL, 0 FROM {T} "
                          "WHERE data_center = {1} AND lock_name = {2} AND term = {3} AND owner = "
                          "{4} AND (owner_guid = {5} OR owner_guid = {8} OR owner_guid LIKE '>%')"
                          "{ON_CONFLICT}",
                          args, 8, NULL, err, errlen);
    if (rc <= 0)
        return rc;
    /* The one before, if nobody said how it ended: its lease ran out unheard (or its holder
     * let go without a word), at the latest a lease before our take. */
    if (h->term > 1) {
        reign__sqlv prev[4] = {args[0], args[1], REIGN__SQLV_I((int64_t)h->term - 1), args[8]};
        int r2 = reign__sql_query(c, "closing the leadership before",
                                  "UPDATE {H} SET end_reason = 'expired', ended_estimated = 1, "
                                  "ended_ms = CASE WHEN started_ms > {NOW} - {4} THEN started_ms "
                                  "ELSE {NOW} - {4} END WHERE data_center = {1} AND lock_name = "
                                  "{2} AND term = {3} AND ended_ms IS NULL",
                                  prev, 4, NULL, err, errlen);
        if (r2 < 0)
            return r2;
    }
    uint64_t every = (uint64_t)h->keep / 10 + 1;
    if (h->keep > 0 && h->term % every == 0 && h->term > (uint64_t)h->keep) {
        reign__sqlv old[3] = {args[0], args[1], args[9]};
        int r3 = reign__sql_query(c, "dropping old leaderships",
                                  "DELETE FROM {H} WHERE data_center = {1} AND lock_name = {2} "
                                  "AND term <= {3}",
                                  old, 3, NULL, err, errlen);
        if (r3 < 0)
            return r3;
    }
    return 1;
}

int reign__history_end(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                       const char *guid, const char *word, char *err, size_t errlen)
{
    int ok = usable(c, err, errlen);
    if (ok <= 0)
        return ok;
    reign__sqlv args[5] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_I((int64_t)term),
                           REIGN__SQLV_S(guid), REIGN__SQLV_S(word)};
    int rc = reign__sql_query(c, "ending a leadership",
                              "UPDATE {H} SET end_reason = CASE WHEN {5} = 'designated' AND "
                              "end_reason = 'preempted' THEN end_reason ELSE {5} END, ended_ms = "
                              "{NOW}, ended_estimated = 0 WHERE data_center = {1} AND lock_name = "
                              "{2} AND term = {3} AND owner_guid = {4} AND ended_ms IS NULL AND "
                              "EXISTS (SELECT 1 FROM {T} WHERE data_center = {1} AND lock_name = "
                              "{2} AND term = {3})",
                              args, 5, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__history_hint(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                        const char *word, char *err, size_t errlen)
{
    int ok = usable(c, err, errlen);
    if (ok <= 0)
        return ok;
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_I((int64_t)term),
                           word ? REIGN__SQLV_S(word) : (reign__sqlv){.kind = REIGN__SQLV_NULL}};
    int rc = reign__sql_query(c, "a word on a leadership",
                              "UPDATE {H} SET end_reason = {4} WHERE data_center = {1} AND "
                              "lock_name = {2} AND term = {3} AND ended_ms IS NULL",
                              args, 4, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__history_guardian(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                            char *err, size_t errlen)
{
    int ok = usable(c, err, errlen);
    if (ok <= 0)
        return ok;
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(guid)};
    int rc = reign__sql_query(c, "ending a dead leader's leadership",
                              "UPDATE {H} SET end_reason = 'guardian', ended_ms = {NOW}, "
                              "ended_estimated = 0 WHERE data_center = {1} AND lock_name = {2} "
                              "AND owner_guid = {3} AND ended_ms IS NULL",
                              args, 3, NULL, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__history_remove(reign__sqlconn *c, const char *dc, const char *name, char *err,
                          size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    int rc = reign__sql_query(c, "removing the history",
                              "DELETE FROM {H} WHERE data_center = {1} AND lock_name = {2}", args,
                              2, NULL, err, errlen);
    return rc == REIGN_ENOENT || rc >= 0 ? 0 : rc; /* no table: nothing to delete */
}

/* A word reign writes (history.h), or none. */
static bool known_end(const char *s)
{
    static const char *const words[] = {"resigned",  "ceded",    "deposed", "designated",
                                        "preempted", "guardian", "expired", "lost"};
    for (size_t i = 0; s && i < sizeof words / sizeof words[0]; i++)
        if (!strcmp(s, words[i]))
            return true;
    return false;
}

/* Row i of rs into *row: false if reign could not have written it. */
static bool parse_row(const reign__sql_rows *rs, size_t i, reign__history_row *row)
{
    int64_t term = 0, full = 0, est = 0;
    const char *owner = reign__sql_cell(rs, i, 1), *ended = reign__sql_cell(rs, i, 5),
               *end = reign__sql_cell(rs, i, 6);
    size_t plen = reign__sql_cell_len(rs, i, 2);
    if (!reign__sql_parse_i64(reign__sql_cell(rs, i, 0), &term) || term <= 0 || !owner || !*owner ||
        strlen(owner) > REIGN_ID_MAX || plen > REIGN_HISTORY_DATA_MAX ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 3), &full) || full < (int64_t)plen ||
        full > REIGN_DATA_MAX ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 4), &row->started_ms) ||
        row->started_ms <= 0 || !reign__sql_parse_i64(reign__sql_cell(rs, i, 7), &est) ||
        (est != 0 && est != 1))
        return false;
    if (ended && (!reign__sql_parse_i64(ended, &row->ended_ms) || row->ended_ms < row->started_ms ||
                  !known_end(end)))
        return false;
    if (!ended && end && strcmp(end, "preempted"))
        return false; /* open: only a preemptor's word */
    row->term = (uint64_t)term;
    reign__strlcpy(row->owner, owner, sizeof row->owner);
    reign__strlcpy(row->end, ended ? end : "", sizeof row->end);
    if (!ended)
        row->ended_ms = 0;
    row->payload_len = plen;
    row->full_len = (size_t)full;
    row->ended_estimated = ended && est;
    return true;
}

int reign__history_list(reign__sqlconn *c, const char *dc, const char *name,
                        reign__history_rows *out, size_t *skipped, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    *skipped = 0;
    int rc = ensure(c, false, err, errlen);
    if (rc < 0 || !c->history_ready)
        return rc; /* no table yet: no history */
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    reign__sql_rows rs;
    rc = reign__sql_query(c, "reading the history",
                          "SELECT term, owner, payload, data_len, started_ms, ended_ms, "
                          "end_reason, ended_estimated FROM {H} WHERE data_center = {1} AND "
                          "lock_name = {2} ORDER BY term",
                          args, 2, &rs, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* dropped meanwhile */
    if (rc < 0)
        return rc;
    if (rs.n_rows && !(out->v = reign__calloc(rs.n_rows, sizeof *out->v)))
        rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < rs.n_rows; i++) {
        reign__history_row *row = &out->v[out->n];
        memset(row, 0, sizeof *row);
        if (!parse_row(&rs, i, row)) {
            (*skipped)++;
            continue;
        }
        if (row->payload_len &&
            !(row->payload = reign__memdup(reign__sql_cell(&rs, i, 2), row->payload_len))) {
            rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            break;
        }
        out->n++;
    }
    reign__sql_rows_free(&rs);
    if (rc < 0)
        reign__history_rows_free(out);
    return rc;
}
