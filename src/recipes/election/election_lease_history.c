/*
 * election_lease_history.c - an election's history on the SQL stores (docs/sql-leases.md,
 * "History"): what a leader queues on its worker when it wins a term and when it lets go
 * (sql/history.h writes it), and reign_election_history()'s read, one call on the worker.
 */
#include <string.h>

#include "election_base.h"
#include "election_lease_rank.h"
#include "sql/history.h"
#include "sql/worker.h"

/* ---- the leader's writes ------------------------------------------------------------------ */

typedef struct hwrite {
    char *name, *owner, *payload;
    char guid[REIGN__RANK_GUID];
    const char *word; /* NULL: the beginning */
    reign__history_claim claim;
} hwrite;

static void hwrite_free(void *p)
{
    hwrite *h = p;
    reign__free(h->name);
    reign__free(h->owner);
    reign__free(h->payload);
    reign__free(h);
}

static int run_write(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    hwrite *h = ctx;
    int rc = h->word
                 ? reign__history_end(c, dc, h->name, h->claim.term, h->guid, h->word, err, errlen)
                 : reign__history_begin(c, dc, &h->claim, err, errlen);
    /* Nobody waits for it: the history never holds an election up, and the reader tells what
     * a failed write left out from what came after it. */
    return rc;
}

static void queue(const reign_election *e, const char *guid, const char *word, int lease_ms)
{
    reign__sqlw *w = reign__client_sql(e->client);
    hwrite *h = reign__calloc(1, sizeof(*h));
    size_t len = e->data_len < REIGN_HISTORY_DATA_MAX ? e->data_len : REIGN_HISTORY_DATA_MAX;
    if (!w || !h || !(h->name = reign__strdup(e->name)) || !(h->owner = reign__strdup(e->id)) ||
        (len && !(h->payload = reign__memdup(e->data, len)))) {
        if (h)
            hwrite_free(h);
        return;
    }
    reign__strlcpy(h->guid, guid, sizeof(h->guid));
    h->word = word;
    h->claim = (reign__history_claim){.name = h->name,
                                      .owner = h->owner,
                                      .guid = h->guid,
                                      .payload = h->payload,
                                      .payload_len = e->data_len,
                                      .term = e->term,
                                      .estimate_ms = lease_ms,
                                      .keep = reign__client_history_max(e->client)};
    if (reign__sqlw_call(w, e->name, run_write, h, hwrite_free, NULL, NULL, NULL) < 0)
        hwrite_free(h);
}

void reign__lease_history_begin(const reign_election *e, const char *guid, int lease_ms)
{
    queue(e, guid, NULL, lease_ms);
}

/* As the node tree's history words it (election_zk_history.c); a handoff is "designated"
 * unless the preemptor said "preempted" on the row (sql/history.h). */
void reign__lease_history_end(const reign_election *e, const char *guid, reign_demote_reason reason)
{
    const char *word = reason == REIGN_DEMOTE_RESIGNED       ? "resigned"
                       : reason == REIGN_DEMOTE_CEDED        ? "ceded"
                       : reason == REIGN_DEMOTE_NODE_DELETED ? "deposed"
                       : reason == REIGN_DEMOTE_HANDOFF      ? "designated"
                                                             : "lost";
    queue(e, guid, word, 0);
}

/* ---- the read ------------------------------------------------------------------------------ */

typedef struct hread {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    char *name;
    int64_t since_ms, lease_ms;
    reign_election_history_cb *cb;
    void *userdata;
    bool done;
} hread;

typedef struct hread_ctx {
    char *name;
    reign__lease lease;
    reign__history_rows rows;
    size_t skipped;
} hread_ctx;

static void hread_ctx_free(void *p)
{
    hread_ctx *x = p;
    reign__free(x->name);
    reign__lease_clear(&x->lease);
    reign__history_rows_free(&x->rows);
    reign__free(x);
}

static int run_read(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    hread_ctx *x = ctx;
    int rc = reign__sql_lease_read(c, dc, x->name, &x->lease, err, errlen);
    if (rc == 0)
        rc = reign__history_list(c, dc, x->name, &x->rows, &x->skipped, err, errlen);
    return rc;
}

static void hread_free(hread *q)
{
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    reign__free(q->name);
    reign__free(q);
}

/* Calls back once, then frees (the callback may free the client: q is detached first). */
static void finish(hread *q, int err, const reign_term *t, size_t n)
{
    if (q->done)
        return;
    q->done = true;
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    q->cb(q->client, err, err ? NULL : t, err ? 0 : n, q->userdata);
    reign__free(q->name);
    reign__free(q);
}

static void on_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    hread *q = owner;
    hread_ctx *x = r->ctx;
    (void)arg;
    if (r->rc < 0) {
        finish(q, r->rc, NULL, 0);
        return;
    }
    const reign__lease *l = &x->lease;
    size_t n = x->rows.n;
    if ((!l->exists || reign__sql_lease_removed(l)) && !n && !x->skipped) {
        finish(q, REIGN_ENOENT, NULL, 0);
        return;
    }
    if (x->skipped)
        reign__log(reign__client_log(q->client), REIGN_LOG_WARN,
                   "election %s: %zu rows of its history hold what reign did not write: left out",
                   q->name, x->skipped);
    reign_term *t = n ? reign__calloc(n, sizeof(*t)) : NULL;
    if (n && !t) {
        finish(q, REIGN_ENOMEM, NULL, 0);
        return;
    }
    /* Whether the last row's leader holds on: the lease row at its term, not released. */
    bool holds = l->exists && !l->released && n && l->term == x->rows.v[n - 1].term;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        const reign__history_row *h = &x->rows.v[i];
        reign_term v = {.term = h->term,
                        .token = h->term,
                        .id = h->owner,
                        .data = h->payload,
                        .data_len = h->payload_len,
                        .data_full_len = h->full_len,
                        .started_ms = h->started_ms,
                        .ended_ms = h->ended_ms,
                        .ended_estimated = h->ended_estimated,
                        .end = h->ended_ms ? reign__term_end_parse(h->end, REIGN_TERM_LOST)
                                           : REIGN_TERM_LEADING};
        if (!h->ended_ms && (i + 1 < n || !holds)) {
            /* Ended unheard (its successor's close did not land, or none came yet): at the
             * latest a lease before the next one began. */
            v.end = REIGN_TERM_EXPIRED;
            v.ended_estimated = 1;
            if (i + 1 < n) {
                int64_t at = x->rows.v[i + 1].started_ms - q->lease_ms;
                v.ended_ms = at > v.started_ms ? at : v.started_ms;
            }
        }
        if (q->since_ms && v.ended_ms && v.ended_ms < q->since_ms)
            continue;
        t[out++] = v;
    }
    finish(q, 0, t, out);
    reign__free(t);
}

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        finish((hread *)rp, REIGN_ECLOSED, NULL, 0);
}

static void on_destroy(reign__recipe *rp)
{
    hread_free((hread *)rp);
}

static const reign__recipe_ops hread_ops = {.conn = on_conn, .destroy = on_destroy};

int reign__lease_history(reign_client *client, const char *name, int64_t since_ms,
                         reign_election_history_cb *cb, void *userdata)
{
    hread *q = reign__calloc(1, sizeof(*q));
    hread_ctx *x = reign__calloc(1, sizeof(*x));
    if (!q || !x || !(q->name = reign__strdup(name)) || !(x->name = reign__strdup(name))) {
        reign__free(q ? q->name : NULL);
        reign__free(q);
        if (x)
            hread_ctx_free(x);
        return REIGN_ENOMEM;
    }
    q->recipe.ops = &hread_ops;
    q->client = client;
    q->w = reign__client_sql(client);
    q->since_ms = since_ms;
    q->lease_ms = reign__client_lease(client)->lease_ms;
    q->cb = cb;
    q->userdata = userdata;
    reign__client_attach(client, &q->recipe);
    int rc = reign__sqlw_call(q->w, name, run_read, x, hread_ctx_free, q, on_read, NULL);
    if (rc < 0) {
        hread_ctx_free(x);
        hread_free(q);
    }
    return rc;
}
