/*
 * slot_sql.c - the record of slots in a SQL store (slot_internal.h): each request is a CALL
 * on the client's worker thread running one function of src/sql/runs.c, which has the table,
 * the statements and the fence (the lease row locked, its term compared, in the write's
 * transaction).  Here the rows become records and back.
 */
#include <string.h>

#include "slot_internal.h"
#include "sql/runs.h"
#include "sql/worker.h"

/* What travels to the worker and back. */
typedef struct call {
    reign__slot_op op;
    char *name;
    char slot[REIGN_SLOT_KEY_MAX + 1];
    reign__run_row row; /* START: the new attempt */
    unsigned attempt;   /* MARK, END */
    uint64_t term;      /* END: the attempt's term */
    char result[17], verdict[17];
    int code;
    uint64_t fence;
    int keep;
    reign__run_rows rows; /* READ */
    int64_t now_ms;       /* NOW */
} call;

static void call_free(void *p)
{
    call *c = p;
    reign__run_rows_free(&c->rows);
    reign__free(c->name);
    reign__free(c);
}

static int run_call(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    call *c = ctx;
    switch (c->op) {
    case REIGN__SLOT_OP_NOW:
        return reign__runs_now(conn, &c->now_ms, err, errlen);
    case REIGN__SLOT_OP_READ:
        return reign__runs_read(conn, dc, c->name, c->slot, &c->rows, err, errlen);
    case REIGN__SLOT_OP_START:
        return reign__runs_start(conn, dc, c->name, &c->row, c->fence, err, errlen);
    case REIGN__SLOT_OP_MARK:
        return reign__runs_mark(conn, dc, c->name, c->slot, c->attempt, c->result, c->code,
                                c->verdict, c->fence, err, errlen);
    case REIGN__SLOT_OP_END:
        return reign__runs_end(conn, dc, c->name, c->slot, c->attempt, c->term, c->result, c->code,
                               c->verdict, c->keep, err, errlen);
    case REIGN__SLOT_OP_PRUNE:
        return reign__runs_prune(conn, dc, c->name, c->keep, err, errlen);
    }
    return REIGN_EINVAL;
}

/* Rows of one slot, by attempt, as a record; false if they are not one reign could have
 * written. */
static bool rows_to_rec(const reign__run_row *v, size_t n, const char *key, reign__slot_rec *out)
{
    reign__slot_rec_init(out, key);
    if (n > REIGN__SLOT_RUNS_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        reign__slot_run *u = &out->runs[i];
        int res = reign__slot_result_parse(v[i].result);
        if (v[i].attempt != i + 1 || res < 0)
            return false;
        u->attempt = v[i].attempt;
        reign__strlcpy(u->owner, v[i].owner, sizeof u->owner);
        reign__strlcpy(u->host, v[i].host, sizeof u->host);
        u->term = v[i].term;
        u->token = v[i].token;
        u->start_ms = v[i].start_ms;
        u->end_ms = v[i].end_ms;
        u->result = (reign_slot_result)res;
        u->code = v[i].code;
        if ((u->result == REIGN_SLOT_RUNNING) != (v[i].end_ms == 0))
            return false;
    }
    out->n = n;
    if (n) {
        int verdict = reign__slot_verdict_parse(v[n - 1].verdict);
        if (verdict < 0)
            return false;
        out->verdict = (reign_slot_verdict)verdict;
        out->order = v[0].id;
    }
    out->exists = n > 0;
    return true;
}

#define GEN(arg) ((uintptr_t)(arg))

static void on_call(void *owner, void *arg, const reign__sqlw_result *r)
{
    reign_slot *s = owner;
    call *c = r->ctx;
    reign__slot_reply rep = {.op = c->op, .version = -1, .message = r->rc < 0 ? r->err : NULL};
    reign__slot_rec rec;
    if (r->rc < 0) {
        rep.rc = r->rc;
    } else if (c->op == REIGN__SLOT_OP_NOW) {
        rep.now_ms = c->now_ms;
    } else if (c->op == REIGN__SLOT_OP_READ) {
        if (!rows_to_rec(c->rows.v, c->rows.n, c->slot, &rec)) {
            rep.rc = REIGN_EFOREIGN;
            rep.message = "the runs table holds rows of this slot reign did not write";
        }
        rep.rec = &rec;
        rep.now_ms = c->rows.db_now_ms;
    } else if (c->op == REIGN__SLOT_OP_START || c->op == REIGN__SLOT_OP_MARK) {
        rep.rc = r->rc == 1 ? 0 : r->rc == 0 ? REIGN_EBADVERSION : REIGN_ESTATE;
    } else if (c->op == REIGN__SLOT_OP_END) {
        rep.rc = r->rc == 1 ? 0 : REIGN_EBADVERSION;
    }
    s->reply(s, GEN(arg), &rep);
}

static int ss_init(reign_slot *s)
{
    (void)s;
    return 0;
}

static void ss_release(reign_slot *s)
{
    reign__sqlw *w = reign__client_sql(s->client);
    if (w)
        reign__sqlw_forget(w, s);
}

static int ss_issue(reign_slot *s, reign__slot_op op, uint64_t fence, uintptr_t gen)
{
    call *c = reign__calloc(1, sizeof *c);
    if (!c || !(c->name = reign__strdup(s->name))) {
        reign__free(c);
        return REIGN_ENOMEM;
    }
    c->op = op;
    c->fence = fence;
    c->keep = s->keep;
    reign__strlcpy(c->slot, s->key, sizeof c->slot);
    const reign__slot_run *u = NULL;
    if (op == REIGN__SLOT_OP_START || op == REIGN__SLOT_OP_MARK)
        u = &s->next.runs[s->next.n - 1];
    else if (op == REIGN__SLOT_OP_END)
        u = &s->next.runs[s->our_run];
    if (u) {
        reign__strlcpy(c->row.slot, s->key, sizeof c->row.slot);
        c->row.attempt = u->attempt;
        reign__strlcpy(c->row.owner, u->owner, sizeof c->row.owner);
        reign__strlcpy(c->row.host, u->host, sizeof c->row.host);
        c->row.term = u->term;
        c->row.token = u->token;
        c->attempt = u->attempt;
        c->term = u->term;
        c->code = u->code;
        reign__strlcpy(c->result, reign__slot_result_word(u->result), sizeof c->result);
        reign__strlcpy(c->verdict, reign__slot_verdict_word(s->next.verdict), sizeof c->verdict);
    }
    int rc = reign__sqlw_call(reign__client_sql(s->client), "slot", run_call, c, call_free, s,
                              on_call, (void *)(uintptr_t)gen);
    if (rc < 0)
        call_free(c);
    return rc;
}

/* ---- the record, for tools ------------------------------------------------------------------- */

typedef struct sql_hist {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    unsigned last;
    reign_slot_history_cb *cb;
    void *userdata;
    bool done;
} sql_hist;

static void hist_free(sql_hist *h)
{
    reign__sqlw_forget(h->w, h);
    reign__client_detach(h->client, &h->recipe);
    reign__free(h);
}

static void hist_finish(sql_hist *h, int err, const reign_slot_record *v, size_t n)
{
    if (h->done)
        return;
    h->done = true;
    h->cb(h->client, err, err ? NULL : v, err ? 0 : n, h->userdata);
    hist_free(h);
}

/* Groups the rows (oldest first by id) into records, newest slot first, `last` of them. */
static void on_hist(void *owner, void *arg, const reign__sqlw_result *r)
{
    sql_hist *h = owner;
    call *c = r->ctx;
    if (r->rc < 0) {
        hist_finish(h, r->rc, NULL, 0);
        return;
    }
    const reign__run_rows *rows = &c->rows;
    /* Slots in order of their first row. */
    size_t n_slots = 0;
    char(*keys)[REIGN_SLOT_KEY_MAX + 1] = reign__calloc(rows->n ? rows->n : 1, sizeof *keys);
    reign__slot_rec *recs = reign__calloc(rows->n ? rows->n : 1, sizeof *recs);
    reign_slot_record *out = reign__calloc(rows->n ? rows->n : 1, sizeof *out);
    reign_slot_run *rbuf = reign__calloc(rows->n ? rows->n : 1, sizeof *rbuf);
    reign__run_row *tmp = reign__calloc(rows->n ? rows->n : 1, sizeof *tmp);
    int err = keys && recs && out && rbuf && tmp ? 0 : REIGN_ENOMEM;
    for (size_t i = 0; err == 0 && i < rows->n; i++) {
        size_t k;
        for (k = 0; k < n_slots; k++)
            if (!strcmp(keys[k], rows->v[i].slot))
                break;
        if (k == n_slots)
            reign__strlcpy(keys[n_slots++], rows->v[i].slot, sizeof keys[0]);
    }
    size_t shown = h->last && h->last < n_slots ? h->last : n_slots, used = 0, n_out = 0;
    for (size_t j = 0; err == 0 && j < shown; j++) {
        const char *key = keys[n_slots - 1 - j];
        size_t m = 0;
        for (size_t i = 0; i < rows->n; i++)
            if (!strcmp(rows->v[i].slot, key))
                tmp[m++] = rows->v[i];
        /* by attempt */
        for (size_t a = 1; a < m; a++)
            for (size_t b = a; b > 0 && tmp[b - 1].attempt > tmp[b].attempt; b--) {
                reign__run_row t = tmp[b];
                tmp[b] = tmp[b - 1];
                tmp[b - 1] = t;
            }
        if (!rows_to_rec(tmp, m, key, &recs[n_out]))
            continue; /* rows reign did not write: left out */
        reign__slot_rec_public(&recs[n_out], rbuf + used, &out[n_out]);
        used += recs[n_out].n;
        n_out++;
    }
    hist_finish(h, err, out, n_out);
    reign__free(keys);
    reign__free(recs);
    reign__free(out);
    reign__free(rbuf);
    reign__free(tmp);
}

static int run_hist(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    call *c = ctx;
    return reign__runs_history(conn, dc, c->name, &c->rows, err, errlen);
}

static void hist_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        hist_finish((sql_hist *)rp, REIGN_ECLOSED, NULL, 0);
}

static void hist_destroy(reign__recipe *rp)
{
    hist_free((sql_hist *)rp);
}

static const reign__recipe_ops hist_ops = {.conn = hist_conn, .destroy = hist_destroy};

static int ss_history(reign_client *client, const char *name, unsigned last,
                      reign_slot_history_cb *cb, void *userdata)
{
    sql_hist *h = reign__calloc(1, sizeof *h);
    call *c = reign__calloc(1, sizeof *c);
    if (!h || !c || !(c->name = reign__strdup(name))) {
        reign__free(h);
        if (c)
            call_free(c);
        return REIGN_ENOMEM;
    }
    h->recipe.ops = &hist_ops;
    h->client = client;
    h->w = reign__client_sql(client);
    h->last = last;
    h->cb = cb;
    h->userdata = userdata;
    int rc = reign__sqlw_call(h->w, "slot history", run_hist, c, call_free, h, on_hist, NULL);
    if (rc < 0) {
        call_free(c);
        reign__free(h);
        return rc;
    }
    reign__client_attach(client, &h->recipe);
    return 0;
}

const reign__slot_backend reign__slot_sql = {
    .name = "sql",
    .init = ss_init,
    .release = ss_release,
    .issue = ss_issue,
    .history = ss_history,
};
