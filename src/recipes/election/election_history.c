/*
 * election_history.c - reading an election's history (reign_election_history(), docs/history.md):
 * on the node tree, the history node's records (election_zk_history.c writes them), the term node
 * and whether a leader holds on now, read in one round, then the records read; what a record
 * does not say (a leadership that ended without a word from its holder) is told by what came
 * after it.  A request chain attached to the client as a recipe, like election_query.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_base.h"

typedef struct rec {
    char *name;
    bool read;
    char *id;
    void *data;
    size_t len, full;
    int64_t ctime_ms, mtime_ms;
    uint64_t czxid, term, token;
    int64_t session_ms;
    reign_term_end end;
} rec;

typedef struct hquery {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    char *dir;
    int64_t since_ms;
    reign_election_history_cb *cb;
    void *userdata;
    rec *r;
    size_t n;
    size_t pending;
    int err;
    bool dir_missing, listed_none, holder, have_term, done;
    uint64_t term, term_mzxid;
} hquery;

static void hq_free(hquery *q)
{
    reign__zk_forget(q->zk, q);
    reign__client_detach(q->client, &q->recipe);
    for (size_t i = 0; i < q->n; i++) {
        reign__free(q->r[i].name);
        reign__free(q->r[i].id);
        reign__free(q->r[i].data);
    }
    reign__free(q->r);
    reign__free(q->dir);
    reign__free(q);
}

static int by_czxid(const void *a, const void *b)
{
    const rec *x = a, *y = b;
    if (x->read != y->read)
        return x->read ? -1 : 1; /* those gone meanwhile last */
    return x->czxid < y->czxid ? -1 : x->czxid > y->czxid;
}

/*
 * What the records leave out.  A term: the record's own (its holder wrote it with the end), the
 * term node's for the record its last write made, else counted from a neighbour's (every claim
 * makes one record).  An end: a record without one that has a successor ended unheard - its
 * session or lease expired, some session timeout before its successor's start at the latest.
 */
static void derive(hquery *q, size_t n)
{
    rec *r = q->r;
    for (size_t i = 0; i < n; i++)
        if (!r[i].term && q->have_term && r[i].czxid == q->term_mzxid)
            r[i].term = q->term;
    for (size_t i = n; i-- > 1;)
        if (!r[i - 1].term && r[i].term > 1)
            r[i - 1].term = r[i].term - 1;
    for (size_t i = 1; i < n; i++)
        if (!r[i].term && r[i - 1].term)
            r[i].term = r[i - 1].term + 1;
}

static void finish(hquery *q, int err)
{
    if (q->done)
        return;
    q->done = true;
    size_t n = 0;
    reign_term *t = NULL;
    if (err == 0 && q->dir_missing)
        err = REIGN_ENOENT;
    if (err == 0 && q->n) {
        qsort(q->r, q->n, sizeof(*q->r), by_czxid);
        while (n < q->n && q->r[n].read)
            n++;
        derive(q, n);
        if (!(t = reign__calloc(n, sizeof(*t))))
            err = REIGN_ENOMEM;
    }
    size_t out = 0;
    for (size_t i = 0; err == 0 && i < n; i++) {
        const rec *r = &q->r[i];
        reign_term v = {.term = r->term,
                        .token = r->token ? r->token : r->czxid,
                        .id = r->id ? r->id : "",
                        .data = r->data,
                        .data_len = r->len,
                        .data_full_len = r->full > r->len ? r->full : r->len,
                        .started_ms = r->ctime_ms,
                        .end = r->end};
        if (r->end != REIGN_TERM_LEADING) {
            v.ended_ms = r->mtime_ms;
        } else if (i + 1 < n || !q->holder) {
            /* Ended unheard; with a successor, at the latest a session before it began. */
            v.end = REIGN_TERM_EXPIRED;
            v.ended_estimated = 1;
            if (i + 1 < n) {
                int64_t at = q->r[i + 1].ctime_ms - r->session_ms;
                v.ended_ms = at > v.started_ms ? at : v.started_ms;
            }
        }
        if (q->since_ms && v.ended_ms && v.ended_ms < q->since_ms)
            continue;
        t[out++] = v;
    }
    if (q->cb)
        q->cb(q->client, err, err == 0 ? t : NULL, err == 0 ? out : 0, q->userdata);
    reign__free(t);
    hq_free(q);
}

static void settle(hquery *q)
{
    if (--q->pending == 0)
        finish(q, q->err);
}

static void on_record(void *owner, void *arg, const reign__zk_result *res)
{
    hquery *q = owner;
    rec *r = &q->r[(uintptr_t)arg];
    reign__record rr;
    if (res->rc == 0 && reign__record_parse(res->value, res->value_len, &rr) == 0) {
        uint64_t v = 0;
        r->read = true;
        r->id = reign__strdup(
            reign__record_get(&rr, REIGN__K_ID) ? reign__record_get(&rr, REIGN__K_ID) : "");
        if (rr.payload_len && (r->data = reign__malloc(rr.payload_len)))
            memcpy(r->data, rr.payload, r->len = rr.payload_len);
        r->full = reign__record_get_u64(&rr, REIGN__K_DATA_LEN, &v) == 0 ? (size_t)v : r->len;
        if (reign__record_get_u64(&rr, REIGN__K_TERM, &v) == 0)
            r->term = v;
        if (reign__record_get_u64(&rr, REIGN__K_TOKEN, &v) == 0)
            r->token = v;
        if (reign__record_get_u64(&rr, REIGN__K_SESSION_MS, &v) == 0 && v < 86400000u)
            r->session_ms = (int64_t)v;
        r->end = reign__term_end_parse(reign__record_get(&rr, REIGN__K_END), REIGN_TERM_LEADING);
        /* ZooKeeper's times are the store's; etcd's keys carry none: the writers' clocks. */
        bool etcd = reign__zk_is_etcd(q->zk);
        r->ctime_ms = res->stat.ctime_ms;
        r->mtime_ms = res->stat.mtime_ms;
        if (etcd && reign__record_get_u64(&rr, REIGN__K_STARTED_MS, &v) == 0)
            r->ctime_ms = (int64_t)v;
        /* An end written after a reconnection carries its own time (the demotion's). */
        bool late = reign__record_get(&rr, REIGN__K_LATE) != NULL;
        if ((etcd || late) && reign__record_get_u64(&rr, REIGN__K_ENDED_MS, &v) == 0)
            r->mtime_ms = (int64_t)v;
        r->czxid = (uint64_t)res->stat.czxid;
        reign__record_clear(&rr);
    } else if (res->rc != 0 && res->rc != REIGN_ENOENT && !q->err) {
        q->err = res->rc; /* gone meanwhile (pruned): left out; foreign: left out */
    }
    settle(q);
}

static void on_listed(void *owner, void *arg, const reign__zk_result *res)
{
    hquery *q = owner;
    if (res->rc == REIGN_ENOENT) {
        q->listed_none = true;
    } else if (res->rc != 0) {
        q->err = q->err ? q->err : res->rc;
    } else if (res->n_children && (q->r = reign__calloc(res->n_children, sizeof(*q->r)))) {
        for (size_t i = 0; i < res->n_children; i++) {
            const char *c = res->children[i];
            if (strncmp(c, REIGN__N_TERM_REC, strlen(REIGN__N_TERM_REC)))
                continue; /* not a record of ours */
            char *path = reign__path_join(q->dir, c);
            rec *r = &q->r[q->n];
            r->name = reign__strdup(c);
            int rc = path && r->name ? reign__zk_get(q->zk, path, NULL, REIGN__ZK_RETRY, q,
                                                     on_record, (void *)(uintptr_t)q->n)
                                     : REIGN_ENOMEM;
            reign__free(path);
            q->n++;
            if (rc < 0) {
                q->err = q->err ? q->err : rc;
                break;
            }
            q->pending++;
        }
    } else if (res->n_children) {
        q->err = q->err ? q->err : REIGN_ENOMEM;
    }
    settle(q);
}

static void on_term(void *owner, void *arg, const reign__zk_result *res)
{
    hquery *q = owner;
    if (res->rc == 0) {
        q->have_term = true;
        q->term = (uint64_t)res->stat.version;
        q->term_mzxid = (uint64_t)res->stat.mzxid;
    }
    settle(q);
}

static void on_holder(void *owner, void *arg, const reign__zk_result *res)
{
    hquery *q = owner;
    if (res->rc == 0)
        q->holder = true;
    settle(q);
}

static void on_dir(void *owner, void *arg, const reign__zk_result *res)
{
    hquery *q = owner;
    if (res->rc == REIGN_ENOENT)
        q->dir_missing = true;
    else if (res->rc != 0)
        q->err = q->err ? q->err : res->rc;
    settle(q);
}

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    hquery *q = (hquery *)rp;
    if (st == REIGN_CONN_CLOSED)
        finish(q, REIGN_ECLOSED);
    else if (st == REIGN_CONN_LOST && reign_client_session_id(q->client) == 0)
        finish(q, REIGN_ESESSION);
}

static void on_destroy(reign__recipe *rp)
{
    hq_free((hquery *)rp);
}

static const reign__recipe_ops hq_ops = {.conn = on_conn, .destroy = on_destroy};

/* One round: the election node, the term, the leader and lock nodes, the history's listing. */
static int issue(hquery *q, const char *name)
{
    static const char *const leaves[] = {"", "/" REIGN__N_TERM, "/" REIGN__N_LEADER,
                                         "/" REIGN__N_LOCK};
    reign__zk_cb *cbs[] = {on_dir, on_term, on_holder, on_holder};
    int rc = 0;
    for (size_t i = 0; i < 4 && rc == 0; i++) {
        char *path = reign__election_path(name, leaves[i]);
        rc = path ? reign__zk_exists(q->zk, path, NULL, REIGN__ZK_RETRY, q, cbs[i], NULL)
                  : REIGN_ENOMEM;
        reign__free(path);
        q->pending += rc == 0;
    }
    if (rc == 0)
        rc = reign__zk_children(q->zk, q->dir, NULL, REIGN__ZK_RETRY, q, on_listed, NULL);
    q->pending += rc == 0;
    return rc;
}

int reign_election_history(reign_client *client, const char *name, int64_t since_ms,
                           reign_election_history_cb *cb, void *userdata)
{
    if (!client || !cb || since_ms < 0)
        return REIGN_EINVAL;
    int rc = reign__name_check(name);
    if (rc < 0)
        return rc;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    if (!reign__client_zk(client)) /* SQL stores: docs/sql-leases.md, "History" */
        return reign__client_sql(client)
                   ? reign__lease_history(client, name, since_ms, cb, userdata)
                   : REIGN_ENOTSUP;
    hquery *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &hq_ops;
    q->client = client;
    q->zk = reign__client_zk(client);
    q->since_ms = since_ms;
    q->cb = cb;
    q->userdata = userdata;
    q->dir = reign__election_path(name, "/" REIGN__N_HISTORY);
    if (!q->dir) {
        reign__free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    q->pending = 1; /* until every request is out */
    rc = issue(q, name);
    if (rc < 0) {
        hq_free(q);
        return rc;
    }
    settle(q);
    return 0;
}
