/*
 * election_query.c - one-shot operations on an election from any process
 * (ZooKeeper; SQL leases have theirs in election_lease.c):
 * a snapshot (leader and ordered candidates) for `reign status`, deposing
 * the leader for `reign cede`, and designating one for `reign designate`.
 * Each is a small request chain
 * attached to the client as a recipe, so that closing the client completes
 * it (with REIGN_ECLOSED) and freeing the client frees it.
 */
#include <stdio.h>
#include <string.h>

#include "election_internal.h"

typedef struct cand {
    char *name;
    char *id;
    void *data;
    size_t data_len;
    int64_t ctime_ms;
    bool read;
    unsigned prio;
    int32_t version; /* designate: the node's, for the compare-and-set */
    char *raw;       /* designate: the record as read */
    size_t raw_len;
} cand;

enum query_kind { Q_VIEW, Q_DEPOSE, Q_DESIGNATE };

typedef struct query {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    char *name;
    char *dir;
    enum query_kind kind;
    char *target; /* designate: the id */
    int tries;
    reign_election_query_cb *qcb;
    reign_election_done_cb *dcb;
    void *userdata;
    reign_strategy strategy;
    /* term */
    bool have_term;
    char *leader_node;
    char *leader_id;
    void *leader_data;
    size_t leader_len;
    uint64_t term, token;
    int64_t since_ms;
    /* candidates */
    cand *c;
    size_t n;
    size_t pending;
    bool done;
} query;

static void on_dir(void *owner, void *arg, const reign__zk_result *r);
static void designate(query *q);

static void query_free(query *q)
{
    reign__zk_forget(q->zk, q);
    reign__client_detach(q->client, &q->recipe);
    for (size_t i = 0; i < q->n; i++) {
        reign__free(q->c[i].name);
        reign__free(q->c[i].id);
        reign__free(q->c[i].data);
        reign__free(q->c[i].raw);
    }
    reign__free(q->c);
    reign__free(q->target);
    reign__free(q->leader_node);
    reign__free(q->leader_id);
    reign__free(q->leader_data);
    reign__free(q->name);
    reign__free(q->dir);
    reign__free(q);
}

static void finish(query *q, int err)
{
    if (q->done)
        return;
    q->done = true;
    if (q->kind != Q_VIEW) {
        if (q->dcb)
            q->dcb(q->client, err, q->userdata);
        query_free(q);
        return;
    }
    if (err < 0) {
        if (q->qcb)
            q->qcb(q->client, err, NULL, q->userdata);
        query_free(q);
        return;
    }
    reign_candidate *v = reign__calloc(q->n ? q->n : 1, sizeof(*v));
    if (!v) {
        if (q->qcb)
            q->qcb(q->client, REIGN_ENOMEM, NULL, q->userdata);
        query_free(q);
        return;
    }
    reign_election_view view = {.name = q->name, .strategy = q->strategy, .candidates = v};
    for (size_t i = 0; i < q->n; i++) {
        if (!q->c[i].read)
            continue; /* left between the listing and the read */
        v[view.n_candidates++] = (reign_candidate){.id = q->c[i].id ? q->c[i].id : "",
                                                   .data = q->c[i].data,
                                                   .data_len = q->c[i].data_len,
                                                   .node = q->c[i].name,
                                                   .joined_ms = q->c[i].ctime_ms,
                                                   .priority = (int)q->c[i].prio};
        if (q->have_term && q->leader_node && !strcmp(q->leader_node, q->c[i].name))
            view.has_leader = 1;
    }
    if (view.has_leader)
        view.leader = (reign_leader){.id = q->leader_id ? q->leader_id : "",
                                     .data = q->leader_data,
                                     .data_len = q->leader_len,
                                     .term = q->term,
                                     .token = q->token,
                                     .since_ms = q->since_ms};
    if (q->qcb)
        q->qcb(q->client, 0, &view, q->userdata);
    reign__free(v);
    query_free(q);
}

static void on_candidate(void *owner, void *arg, const reign__zk_result *r)
{
    query *q = owner;
    cand *c = &q->c[(size_t)arg];
    if (r->rc == 0 && r->stat.ephemeral_owner == 0) {
        /* persistent: named like a candidate, but no session stands behind it */
    } else if (r->rc == 0) {
        c->read = true;
        c->ctime_ms = r->stat.ctime_ms;
        c->version = r->stat.version;
        if (q->kind == Q_DESIGNATE && !(c->raw = reign__memdup(r->value, r->value_len))) {
            finish(q, REIGN_ENOMEM);
            return;
        }
        c->raw_len = r->value_len;
        reign__record rec;
        if (reign__record_parse(r->value, r->value_len, &rec) == 0) {
            const char *id = reign__record_get(&rec, "id");
            c->id = reign__strdup(id ? id : "");
            c->data = reign__memdup(rec.payload, rec.payload_len);
            c->data_len = rec.payload_len;
            reign__record_clear(&rec);
        } else {
            /* Foreign data: show the candidate, trust nothing in it. */
            c->id = reign__strdup("");
        }
    } else if (r->rc != REIGN_ENOENT) {
        finish(q, r->rc);
        return;
    }
    if (--q->pending == 0)
        q->kind == Q_DESIGNATE ? designate(q) : finish(q, 0);
}

static void on_children(void *owner, void *arg, const reign__zk_result *r)
{
    query *q = owner;
    if (r->rc != 0) {
        finish(q, r->rc);
        return;
    }
    reign__qnode *v = reign__calloc(r->n_children ? r->n_children : 1, sizeof(*v));
    if (!v) {
        finish(q, REIGN_ENOMEM);
        return;
    }
    size_t n = 0;
    if (q->strategy == REIGN_STRATEGY_LOCK) {
        for (size_t i = 0; i < r->n_children; i++)
            if (!strcmp(r->children[i], "lock"))
                v[n++].name = r->children[i];
    } else {
        for (size_t i = 0; i < r->n_children; i++)
            if (reign__qnode_parse(r->children[i], &v[n]))
                n++;
        reign__qnode_sort(v, n);
    }
    q->c = reign__calloc(n ? n : 1, sizeof(*q->c));
    if (!q->c) {
        reign__free(v);
        finish(q, REIGN_ENOMEM);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        q->c[i].prio = v[i].prio;
        q->c[i].name = reign__strdup(v[i].name);
        if (!q->c[i].name) {
            q->n = i;
            reign__free(v);
            finish(q, REIGN_ENOMEM);
            return;
        }
    }
    q->n = n;
    reign__free(v);
    if (n == 0) {
        finish(q, q->kind == Q_DESIGNATE ? REIGN_ENOENT : 0);
        return;
    }
    q->pending = n;
    for (size_t i = 0; i < n; i++) {
        char *path = reign__path_join(q->dir, q->c[i].name);
        int rc =
            !path ? REIGN_ENOMEM
                  : reign__zk_get(q->zk, path, NULL, REIGN__ZK_RETRY, q, on_candidate, (void *)i);
        reign__free(path);
        if (rc < 0) {
            finish(q, rc);
            return;
        }
    }
}

static void on_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    finish((query *)owner, r->rc);
}

static void restart(query *q);

static void on_designated(void *owner, void *arg, const reign__zk_result *r)
{
    query *q = owner;
    if (r->rc == REIGN_EBADVERSION && ++q->tries < 5) {
        restart(q); /* the node changed meanwhile: read again */
        return;
    }
    finish(q, r->rc == REIGN_ENOENT ? REIGN_ENOENT : r->rc);
}

/*
 * The candidates are read: ask the one standing with the id to stand again
 * above everyone (a priority over any configured one), by adding
 * designate=<priority> to its node.  It watches its
 * node, so it hears at once, and does the rest itself (election_zk.c).
 */
static void designate(query *q)
{
    cand *t = NULL;
    for (size_t i = 0; i < q->n; i++) {
        if (!q->c[i].read)
            continue;
        if (!t && q->c[i].id && !strcmp(q->c[i].id, q->target))
            t = &q->c[i];
    }
    if (!t) {
        finish(q, REIGN_ENOENT);
        return;
    }
    if (q->have_term && q->leader_node && !strcmp(q->leader_node, t->name) && t == &q->c[0]) {
        finish(q, 0); /* leads already, and first in line */
        return;
    }
    /* One priority for every designation: the one designated takes over
     * from an equal (designated) leader, which then stands again at its own
     * priority, so at most one candidate holds it for long. */
    unsigned prio = REIGN__DESIGNATED_MIN;
    reign__record rec;
    if (reign__record_parse(t->raw, t->raw_len, &rec) < 0) {
        finish(q, REIGN_EFOREIGN);
        return;
    }
    char want[12];
    snprintf(want, sizeof(want), "%u", prio);
    reign__buf b;
    reign__buf_init(&b);
    int rc = reign__record_build_with(&b, &rec, "designate", want);
    reign__record_clear(&rec);
    char *path = rc == 0 ? reign__path_join(q->dir, t->name) : NULL;
    if (rc == 0)
        rc = !path
                 ? REIGN_ENOMEM
                 : reign__zk_set(q->zk, path, b.data, b.len, t->version, 0, q, on_designated, NULL);
    reign__free(path);
    reign__buf_free(&b);
    if (rc < 0)
        finish(q, rc);
}

static void on_term(void *owner, void *arg, const reign__zk_result *r)
{
    query *q = owner;
    if (r->rc != 0 && r->rc != REIGN_ENOENT) {
        finish(q, r->rc);
        return;
    }
    reign__record rec;
    if (r->rc == 0 && r->stat.version > 0 &&
        reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *node = reign__record_get(&rec, "node");
        const char *id = reign__record_get(&rec, "id");
        if (node && reign__election_node_ok(node)) {
            q->have_term = true;
            q->leader_node = reign__strdup(node);
            q->leader_id = reign__strdup(id ? id : "");
            q->leader_data = reign__memdup(rec.payload, rec.payload_len);
            q->leader_len = rec.payload_len;
            q->term = (uint64_t)r->stat.version;
            q->token = (uint64_t)r->stat.mzxid;
            q->since_ms = r->stat.mtime_ms;
        }
        reign__record_clear(&rec);
    }
    if (q->kind != Q_DEPOSE)
        return; /* the listing was sent with the reads (issue_reads) */
    int rc;
    {
        if (!q->have_term || !q->leader_node) {
            finish(q, REIGN_ENOENT);
            return;
        }
        /* Deleting the leader's node is the request: the leader sees it,
         * demotes, and stands again after its cede delay. */
        char *path = reign__path_join(q->dir, q->leader_node);
        rc = !path ? REIGN_ENOMEM
                   : reign__zk_delete(q->zk, path, -1, REIGN__ZK_RETRY, q, on_deleted, NULL);
        reign__free(path);
    }
    if (rc < 0)
        finish(q, rc);
}

static void on_dir(void *owner, void *arg, const reign__zk_result *r)
{
    query *q = owner;
    if (r->rc != 0) {
        finish(q, r->rc);
        return;
    }
    q->strategy = REIGN_STRATEGY_QUEUE;
    reign__record rec;
    if (r->value_len && reign__record_parse(r->value, r->value_len, &rec) == 0) {
        int s = reign_strategy_parse(reign__record_get(&rec, "strategy"));
        if (s > 0)
            q->strategy = (reign_strategy)s;
        reign__record_clear(&rec);
    }
    if (q->kind == Q_DESIGNATE && q->strategy == REIGN_STRATEGY_LOCK)
        finish(q, REIGN_ENOTSUP); /* no order to put the candidate first in */
    /* The term (and the listing) were sent with this read: their answers
     * follow, in order, unless finish() forgot them. */
}

/*
 * The election node, its term node and (but to depose) the listing, sent
 * together: one round trip.  Answers come back in this order, so the
 * listing's handler sees the strategy and the leader.  Deposing lists
 * nothing: it deletes the leader's node once the term names it.
 */
static int issue_reads(query *q)
{
    char *term = reign__path_join(q->dir, "term");
    int rc =
        !term ? REIGN_ENOMEM : reign__zk_get(q->zk, q->dir, NULL, REIGN__ZK_RETRY, q, on_dir, NULL);
    if (rc == 0)
        rc = reign__zk_get(q->zk, term, NULL, REIGN__ZK_RETRY, q, on_term, NULL);
    if (rc == 0 && q->kind != Q_DEPOSE)
        rc = reign__zk_children(q->zk, q->dir, NULL, REIGN__ZK_RETRY, q, on_children, NULL);
    reign__free(term);
    return rc;
}

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    query *q = (query *)rp;
    if (st == REIGN_CONN_CLOSED)
        finish(q, REIGN_ECLOSED);
    else if (st == REIGN_CONN_LOST && reign_client_session_id(q->client) == 0)
        finish(q, REIGN_ESESSION);
}

static void on_destroy(reign__recipe *rp)
{
    query_free((query *)rp);
}

static const reign__recipe_ops query_ops = {.conn = on_conn, .destroy = on_destroy};

static void restart(query *q)
{
    for (size_t i = 0; i < q->n; i++) {
        reign__free(q->c[i].name);
        reign__free(q->c[i].id);
        reign__free(q->c[i].data);
        reign__free(q->c[i].raw);
    }
    reign__free(q->c);
    q->c = NULL;
    q->n = 0;
    reign__free(q->leader_node);
    reign__free(q->leader_id);
    reign__free(q->leader_data);
    q->leader_node = q->leader_id = NULL;
    q->leader_data = NULL;
    q->have_term = false;
    int rc = issue_reads(q);
    if (rc < 0)
        finish(q, rc);
}

static int start(reign_client *client, const char *name, enum query_kind kind, const char *target,
                 reign_election_query_cb *qcb, reign_election_done_cb *dcb, void *userdata)
{
    if (!client || (!qcb && !dcb))
        return REIGN_EINVAL;
    int rc = reign__election_name_check(name);
    if (rc < 0)
        return rc;
    if (kind == Q_DESIGNATE && (!target || !reign__id_ok(target, REIGN_ID_MAX)))
        return REIGN_EINVAL;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    if (!reign__client_zk(client) && kind == Q_DESIGNATE)
        return REIGN_ENOTSUP;
    if (!reign__client_zk(client))
        return reign__lease_query(client, name, kind == Q_DEPOSE, qcb, dcb, userdata);
    query *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &query_ops;
    q->client = client;
    q->zk = reign__client_zk(client);
    q->kind = kind;
    q->target = target ? reign__strdup(target) : NULL;
    q->qcb = qcb;
    q->dcb = dcb;
    q->userdata = userdata;
    q->name = reign__strdup(name);
    q->dir = reign__election_path(name, NULL);
    if (!q->name || !q->dir || (target && !q->target)) {
        reign__free(q->name);
        reign__free(q->dir);
        reign__free(q->target);
        reign__free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    rc = issue_reads(q);
    if (rc < 0) {
        query_free(q);
        return rc;
    }
    return 0;
}

int reign_election_query(reign_client *client, const char *name, reign_election_query_cb *cb,
                         void *userdata)
{
    return start(client, name, Q_VIEW, NULL, cb, NULL, userdata);
}

int reign_election_depose(reign_client *client, const char *name, reign_election_done_cb *cb,
                          void *userdata)
{
    return start(client, name, Q_DEPOSE, NULL, NULL, cb, userdata);
}

int reign_election_designate(reign_client *client, const char *name, const char *id,
                             reign_election_done_cb *cb, void *userdata)
{
    return start(client, name, Q_DESIGNATE, id, NULL, cb, userdata);
}
