/*
 * sql_history.c - the history scenario of test_sql_recipes: what reign_election_history() reads
 * on a SQL store (src/sql/history.h) when its table holds what reign did not write, and what
 * `reign rm` leaves of it.
 *
 *   rows     rows written behind reign's back into the history table (a term that is none, an
 *            end that is not one of reign's words, an empty leader id, a payload longer than its
 *            length) are left out of the answer, said once at WARN without a payload, and the
 *            real leaderships beside them read as ever
 *   rm       `reign rm` of the election deletes its history with it: its history is then
 *            REIGN_ENOENT, and no row of it is left
 *   layout   a history table of a foreign layout is refused (REIGN_EFOREIGN) by the reader, never
 *            altered, and holds no election up: a candidate still leads
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "recipes.h"
#include "sql.h"

#define FORGED "forged-history-9Kd"

typedef struct hist {
    int done, err;
    size_t n;
    char ends[256]; /* "id:end ..." */
} hist;

static size_t warnings, leaks;

static void on_log(h_cand *c, reign_log_level level, const char *msg)
{
    (void)c;
    if (strstr(msg, FORGED))
        leaks++;
    if (level == REIGN_LOG_WARN && strstr(msg, "reign did not write"))
        warnings++;
}

static void on_history(reign_client *client, int err, const reign_term *t, size_t n, void *ud)
{
    hist *h = ud;
    (void)client;
    h->done = 1;
    h->err = err;
    h->n = n;
    for (size_t i = 0; i < n; i++)
        snprintf(h->ends + strlen(h->ends), sizeof(h->ends) - strlen(h->ends), "%s%s:%s",
                 i ? " " : "", t[i].id, reign_term_end_name(t[i].end));
}

static int pred_done(void *arg)
{
    return ((hist *)arg)->done;
}

static hist read_history(h_cand *c, const char *name)
{
    hist h = {0};
    H_OK(reign_election_history(c->client, name, 0, on_history, &h));
    H_WAIT(pred_done, &h, "the history's answer");
    return h;
}

typedef struct want {
    h_cand *c;
    const char *name, *ends;
} want;

static int pred_history_is(void *arg)
{
    want *w = arg;
    hist h = read_history(w->c, w->name);
    return h.err == 0 && !strcmp(h.ends, w->ends);
}

static void wait_history(h_cand *c, const char *name, const char *ends)
{
    want w = {c, name, ends};
    if (!h_run_until(pred_history_is, &w, H_WAIT_MS)) {
        hist h = read_history(c, name);
        h_fail(__FILE__, __LINE__, "the history is \"%s\" (%s), want \"%s\"", h.ends,
               reign_err_name(h.err), ends);
    }
}

static void forge(const char *name, int64_t term, const char *owner, int64_t data_len,
                  const char *end)
{
    reign__sqlv args[5] = {REIGN__SQLV_S(name), REIGN__SQLV_I(term), REIGN__SQLV_S(owner),
                           REIGN__SQLV_I(data_len),
                           end ? REIGN__SQLV_S(end) : (reign__sqlv){.kind = REIGN__SQLV_NULL}};
    raw_query("a foreign history row",
              "INSERT INTO {H} (data_center, lock_name, term, owner, owner_guid, payload, "
              "data_len, started_ms, ended_ms, end_reason, ended_estimated) VALUES ('default', "
              "{1}, {2}, {3}, 'f00d', '" FORGED "', {4}, 1000, 2000, {5}, 0)",
              args, 5, NULL);
}

static size_t history_rows(const char *name)
{
    reign__sql_rows rows = {0};
    reign__sqlv arg = REIGN__SQLV_S(name);
    raw_query("the history rows", "SELECT term FROM {H} WHERE lock_name = {1}", &arg, 1, &rows);
    size_t n = rows.n_rows;
    reign__sql_rows_free(&rows);
    return n;
}

static const reign_client_options no_guardian = {.size = sizeof(reign_client_options),
                                                 .guardian = REIGN_GUARDIAN_OFF};

void scenario_history(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "hist");
    h_cand *op = h_cand_new("operator", h_uri(NULL), &no_guardian, NULL, NULL);
    h_cand_on_log(op, on_log);
    hist h = read_history(op, name);
    H_CHECKF(h.err == REIGN_ENOENT, "the history of no election: %s", reign_err_name(h.err));

    h_log("---- rows reign did not write");
    h_cand *a = h_cand_new("a", h_uri(NULL), &no_guardian, name, NULL);
    h_cand_on_log(a, on_log);
    H_WAIT(h_pred_leader, a, "a to lead");
    wait_history(op, name, "a:leading");
    forge(name, 0, "x", 0, "resigned");    /* no term */
    forge(name, 1000, "x", 0, "sneezed");  /* not an end of reign's */
    forge(name, 1001, "", 0, "resigned");  /* nobody led */
    forge(name, 1002, "x", 2, "resigned"); /* a payload longer than its length */
    forge(name, 1003, "x", 0, NULL);       /* open, ended_ms set */
    h = read_history(op, name);
    H_OK(h.err);
    H_CHECKF(!strcmp(h.ends, "a:leading"), "the history read \"%s\"", h.ends);
    H_CHECKF(warnings >= 1 && leaks == 0, "%zu warnings, %zu leaks", warnings, leaks);

    h_log("---- reign rm");
    H_OK(reign_election_resign(a->election));
    H_WAIT(h_pred_left, a, "a to leave");
    wait_history(op, name, "a:resigned");
    H_OK(store_rm(op, name));
    h = read_history(op, name);
    H_CHECKF(h.err == REIGN_ENOENT, "the history after reign rm: %s", reign_err_name(h.err));
    H_CHECKF(history_rows(name) == 0, "%zu history rows left", history_rows(name));
    h_cand_close(a);
    h_cand_close(op);

    h_log("---- a history table of a foreign layout");
    static char table[64];
    snprintf(table, sizeof(table), "th_foreign_%ld", (long)getpid());
    h_set_table(table);
    raw_query("a foreign history table", "CREATE TABLE {H} (data_center varchar(128), stuff int)",
              NULL, 0, NULL);
    char other[128];
    h_unique_name(other, sizeof(other), "hist-foreign");
    h_cand *b = h_cand_new("b", h_uri(NULL), &no_guardian, other, NULL);
    H_WAIT(h_pred_leader, b, "b to lead beside a foreign history table");
    h = read_history(b, other);
    H_CHECKF(h.err == REIGN_EFOREIGN, "the history with a foreign table: %s",
             reign_err_name(h.err));
    reign__sql_rows rows = {0};
    raw_query("the foreign table", "SELECT stuff FROM {H}", NULL, 0, &rows);
    reign__sql_rows_free(&rows);
    h_cand_close(b);
}
