/*
 * contract_history.c - what <reign/election.h> promises of an election's history
 * (reign_election_history()) on every store.
 *
 * One program, run once per store (contract_history_zk, _etcd, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake).  Every candidate is listed (options.listed: a SQL store can only
 * designate a candidate it can see).
 *
 *   reasons  a leads and resigns (b or c elected); that one is designated away to the other;
 *            that one is deposed; d, of a higher priority, preempts the leader; d cedes: the
 * history holds exactly those leaderships, oldest first, with strictly growing terms, each term and
 * token those of its ELECTED, the leaders' ids, the ends resigned, designated, deposed, preempted,
 * ceded and leading for the last, and started <= ended <= the next one's start; since_ms leaves out
 * those that ended before it, never the leading one; an election that does not exist is
 * REIGN_ENOENT bound    with history=20, 200 leaderships one after another (the leader cedes and
 * takes again; 10,000 on ZooKeeper, SQLite and PostgreSQL where no sanitizer runs: the node
 * tree's and the SQL code's bound, as tests.cmake asks) leave at most 20 + 20/10 + 1 records,
 * the newest 20 of them
 *
 * The history is written by the leaders on their own connections, so a reader on another
 * client waits (for a condition, bounded by H_WAIT_MS) until it holds the leadership it looks
 * for; nothing is timed.  h_finish() proves, in every election, that no two leaderships
 * overlapped and that terms and tokens strictly grew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_TERMS 64

/* A history as read: its records, copied out of the callback. */
typedef struct hist {
    int called, err;
    size_t n;
    reign_term t[MAX_TERMS];
    char ids[MAX_TERMS][H_ID_MAX];
} hist;

static void on_history(reign_client *client, int err, const reign_term *terms, size_t n, void *ud)
{
    hist *h = ud;
    (void)client;
    h->called = 1;
    h->err = err;
    h->n = 0;
    for (size_t i = 0; err == 0 && i < n && i < MAX_TERMS; i++) {
        h->t[i] = terms[i];
        snprintf(h->ids[i], H_ID_MAX, "%s", terms[i].id ? terms[i].id : "");
        h->t[i].id = h->ids[i];
        h->t[i].data = NULL; /* borrowed for the call only */
        h->n++;
    }
    H_CHECKF(err != 0 || n <= MAX_TERMS, "%zu records", n);
}

static int pred_called(void *h)
{
    return ((hist *)h)->called;
}

static void read_history(h_cand *c, const char *name, int64_t since_ms, hist *h)
{
    memset(h, 0, sizeof(*h));
    H_OK(reign_election_history(c->client, name, since_ms, on_history, h));
    H_WAIT(pred_called, h, "the history's answer");
}

/* The history holds the leadership of `term` (written by its leader on its own connection). */
typedef struct recorded {
    h_cand *reader;
    const char *name;
    uint64_t term;
    int ended; /* ... and its end */
} recorded;

static int pred_recorded(void *arg)
{
    recorded *r = arg;
    hist h;
    read_history(r->reader, r->name, 0, &h);
    for (size_t i = 0; h.err == 0 && i < h.n; i++)
        if (h.t[i].term == r->term)
            return !r->ended || h.t[i].end != REIGN_TERM_LEADING;
    return 0;
}

static void wait_recorded(h_cand *reader, const char *name, uint64_t term)
{
    recorded r = {reader, name, term, 0};
    H_WAIT(pred_recorded, &r, "the leadership to be in the history");
}

static h_cand *stand(const char *id, const char *uri, const char *name, int priority)
{
    reign_election_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.listed = 1;
    o.priority = priority;
    return h_cand_new(id, uri, NULL, name, &o);
}

static void on_done(reign_client *client, int err, void *userdata)
{
    (void)client;
    *(int *)userdata = err;
}

static int pred_done(void *rc)
{
    return *(int *)rc != 1;
}

/* The one that leads, once it is another than `not` (NULL: anyone); its ELECTED's term then
 * in the history. */
typedef struct next_leader {
    const h_cand *not_;
} next_leader;

static int pred_other_leads(void *arg)
{
    next_leader *x = arg;
    h_cand *l = h_leader();
    return l && l != x->not_;
}

static h_cand *wait_leader_other_than(h_cand *op, const char *name, const h_cand *not_)
{
    next_leader x = {not_};
    H_WAIT(pred_other_leads, &x, "a new leader");
    h_cand *l = h_leader();
    wait_recorded(op, name, h_last(l, REIGN_ELECTION_ELECTED)->term);
    return l;
}

/* Every ELECTED of the candidates, in term order. */
static size_t elected(h_cand *const *cs, size_t n, h_event *out, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < cs[i]->n_ev; j++)
            if (cs[i]->ev[j].type == REIGN_ELECTION_ELECTED && k < max) {
                out[k] = cs[i]->ev[j];
                snprintf(out[k].leader_id, sizeof(out[k].leader_id), "%s", cs[i]->id);
                k++;
            }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && out[j - 1].term > out[j].term; j--) {
            h_event t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return k;
}

static void case_reasons(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "history");
    h_log("---- reasons (%s)", name);
    h_cand *op = h_cand_new("operator", h_uri(NULL), NULL, NULL, NULL);
    hist h;
    read_history(op, name, 0, &h);
    H_CHECKF(h.err == REIGN_ENOENT, "the history of no election: %s", reign_err_name(h.err));

    h_cand *a = stand("a", h_uri(NULL), name, 0);
    H_WAIT(h_pred_leader, a, "a to lead");
    wait_recorded(op, name, h_last(a, REIGN_ELECTION_ELECTED)->term);
    h_cand *b = stand("b", h_uri(NULL), name, 0);
    h_cand *c = stand("c", h_uri(NULL), name, 0);
    h_wait_listed(op, name, "b");
    h_wait_listed(op, name, "c");

    /* Without priorities a store may elect either of b and c (SQL: the first take wins). */
    h_log("a resigns");
    H_OK(reign_election_resign(a->election));
    h_cand *x1 = wait_leader_other_than(op, name, a);
    H_CHECK(x1 == b || x1 == c);
    h_cand *y1 = x1 == b ? c : b;

    h_log("%s is designated away to %s", x1->id, y1->id);
    H_OK(h_designate(op, name, y1->id));
    H_CHECK(wait_leader_other_than(op, name, x1) == y1);

    h_log("%s is deposed", y1->id);
    int rc = 1;
    H_OK(reign_election_depose(op->client, name, on_done, &rc));
    H_WAIT(pred_done, &rc, "the depose's answer");
    H_OK(rc);
    h_cand *x = wait_leader_other_than(op, name, y1);

    h_log("d, of a higher priority, preempts %s", x->id);
    h_cand *d = stand("d", h_uri(NULL), name, 10);
    H_CHECK(wait_leader_other_than(op, name, x) == d);

    h_log("d cedes");
    H_OK(reign_election_cede(d->election, -1));
    h_cand *y = wait_leader_other_than(op, name, d);

    h_cand *all[] = {a, b, c, d};
    h_event ev[MAX_TERMS];
    size_t n_ev = elected(all, 4, ev, MAX_TERMS);
    H_CHECKF(n_ev == 6, "%zu leaderships elected", n_ev);
    read_history(op, name, 0, &h);
    H_OK(h.err);
    H_CHECKF(h.n == n_ev, "%zu records for %zu leaderships", h.n, n_ev);
    static const reign_term_end ends[] = {REIGN_TERM_RESIGNED, REIGN_TERM_DESIGNATED,
                                          REIGN_TERM_DEPOSED,  REIGN_TERM_PREEMPTED,
                                          REIGN_TERM_CEDED,    REIGN_TERM_LEADING};
    const char *ids[] = {"a", x1->id, y1->id, x->id, "d", y->id};
    for (size_t i = 0; i < h.n; i++) {
        const reign_term *t = &h.t[i];
        h_log("term %llu token %llu %s %s started %lld ended %lld%s", (unsigned long long)t->term,
              (unsigned long long)t->token, t->id, reign_term_end_name(t->end),
              (long long)t->started_ms, (long long)t->ended_ms,
              t->ended_estimated ? " (estimated)" : "");
        H_CHECKF(t->term == ev[i].term && t->token == ev[i].token,
                 "record %zu: term %llu token %llu, elected at %llu/%llu", i,
                 (unsigned long long)t->term, (unsigned long long)t->token,
                 (unsigned long long)ev[i].term, (unsigned long long)ev[i].token);
        H_CHECKF(i == 0 || t->term > h.t[i - 1].term, "terms do not grow at %zu", i);
        H_CHECKF(!strcmp(t->id, ids[i]) && !strcmp(t->id, ev[i].leader_id),
                 "record %zu names %s, want %s", i, t->id, ids[i]);
        H_CHECKF(t->end == ends[i], "record %zu ended %s, want %s", i, reign_term_end_name(t->end),
                 reign_term_end_name(ends[i]));
        H_CHECK(!t->ended_estimated);
        H_CHECK(t->started_ms > 0);
        if (t->end == REIGN_TERM_LEADING) {
            H_CHECK(t->ended_ms == 0);
            continue;
        }
        H_CHECKF(t->started_ms <= t->ended_ms, "record %zu ended before it started", i);
        H_CHECKF(i + 1 == h.n || t->ended_ms <= h.t[i + 1].started_ms,
                 "record %zu ended after the next began", i);
    }

    h_log("since_ms");
    int64_t since = h.t[3].ended_ms;
    hist later;
    read_history(op, name, since, &later);
    H_OK(later.err);
    size_t want = 0;
    for (size_t i = 0; i < h.n; i++)
        want += h.t[i].ended_ms == 0 || h.t[i].ended_ms >= since;
    H_CHECKF(later.n == want && want >= 2, "%zu records since %lld, want %zu", later.n,
             (long long)since, want);
    for (size_t i = 0; i < later.n; i++)
        H_CHECK(later.t[i].term == h.t[h.n - later.n + i].term);
    H_CHECK(later.t[later.n - 1].end == REIGN_TERM_LEADING);

    h_cand_close(a);
    h_cand_close(b);
    h_cand_close(c);
    h_cand_close(d);
    h_cand_close(op);
}

static int pred_elected_more(void *arg)
{
    void **v = arg;
    return h_count(v[0], REIGN_ELECTION_ELECTED) > *(size_t *)v[1];
}

static void case_bound(void)
{
    char name[128];
    h_unique_name(name, sizeof(name), "bound");
    h_log("---- bound (%s)", name);
    enum { KEEP = 20 };
    /* $REIGN_TEST_HISTORY_TERMS: more leaderships (tests.cmake asks 10,000 where no sanitizer
     * slows the run). */
    const char *terms = getenv("REIGN_TEST_HISTORY_TERMS");
    int CYCLES = terms && atoi(terms) > 0 ? atoi(terms) : 200;
    char uri[1024];
    snprintf(uri, sizeof(uri), "%s", h_uri("history=20"));
    h_cand *op = h_cand_new("operator", uri, NULL, NULL, NULL);
    h_cand *l = stand("l", uri, name, 0);
    H_WAIT(h_pred_leader, l, "l to lead");
    for (int i = 0; i < CYCLES; i++) {
        size_t before = h_count(l, REIGN_ELECTION_ELECTED);
        H_OK(reign_election_cede(l->election, 0));
        void *arg[2] = {l, &before};
        H_WAIT(pred_elected_more, arg, "l to lead again");
    }
    uint64_t last = h_last(l, REIGN_ELECTION_ELECTED)->term;
    wait_recorded(op, name, last);
    hist h;
    read_history(op, name, 0, &h);
    H_OK(h.err);
    h_log("%zu records, terms %llu..%llu", h.n, (unsigned long long)(h.n ? h.t[0].term : 0),
          (unsigned long long)(h.n ? h.t[h.n - 1].term : 0));
    H_CHECKF(h.n >= KEEP && h.n <= KEEP + KEEP / 10 + 1, "%zu records kept of %d", h.n, CYCLES + 1);
    H_CHECK(h.t[h.n - 1].term == last && h.t[h.n - 1].end == REIGN_TERM_LEADING);
    for (size_t i = h.n - KEEP + 1; i < h.n; i++)
        H_CHECKF(h.t[i].term == h.t[i - 1].term + 1, "a newer term is missing before %llu",
                 (unsigned long long)h.t[i].term);
    for (size_t i = 0; i + 1 < h.n; i++)
        H_CHECK(h.t[i].end == REIGN_TERM_CEDED);
    h_cand_close(l);
    h_cand_close(op);
}

int main(void)
{
    h_contract_init("contract_history", NULL);
    case_reasons();
    case_bound();
    return h_finish();
}
