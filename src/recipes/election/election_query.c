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

#include "election_base.h"

typedef struct cand {
    char *name;
    char *id;
    void *data;
    size_t data_len;
    int64_t ctime_ms;
    uint64_t session_ms; /* its session's timeout, from its record (0: not written) */
    bool read;
    unsigned prio;
    int32_t version; /* designate: the node's, for the compare-and-set */
    char *raw;       /* designate: the record as read */
    size_t raw_len;
} cand;

enum query_kind { Q_VIEW, Q_DEPOSE, Q_DESIGNATE };

/* A candidate's session_ms above this is not believed (a day; servers cap far lower). */
#define SESSION_MS_MAX 86400000u

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
    char *leader_guid;
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
static bool designate_by_tag(query *q, const reign__qnode *v, size_t n);

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
    reign__free(q->leader_guid);
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
    uint64_t leader_ms = 0, max_ms = 0;
    for (size_t i = 0; i < q->n; i++) {
        if (!q->c[i].read)
            continue; /* left between the listing and the read */
        if (q->c[i].session_ms > max_ms)
            max_ms = q->c[i].session_ms;
        if (q->have_term && q->leader_node && !strcmp(q->leader_node, q->c[i].name))
            leader_ms = q->c[i].session_ms;
        v[view.n_candidates++] = (reign_candidate){.id = q->c[i].id ? q->c[i].id : "",
                                                   .data = q->c[i].data,
                                                   .data_len = q->c[i].data_len,
                                                   .node = q->c[i].name,
                                                   .joined_ms = q->c[i].ctime_ms,
                                                   .priority = (int)q->c[i].prio};
        if (q->have_term && q->leader_node && !strcmp(q->leader_node, q->c[i].name))
            view.has_leader = 1;
    }
    /* A crashed leader's node goes when the server expires its session: its
     * timeout is the takeover time.  Without a leader, whoever leads next. */
    view.takeover_ms = (int64_t)(view.has_leader && leader_ms ? leader_ms : max_ms);
    view.takeover_from = view.has_leader && leader_ms ? REIGN_TAKEOVER_LEADER
                         : max_ms                     ? REIGN_TAKEOVER_CANDIDATES
                                                      : REIGN_TAKEOVER_UNKNOWN;
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
            const char *id = reign__record_get(&rec, REIGN__K_ID);
            c->id = reign__strdup(id ? id : "");
            if (reign__record_get_u64(&rec, REIGN__K_SESSION_MS, &c->session_ms) < 0 ||
                c->session_ms > SESSION_MS_MAX)
                c->session_ms = 0; /* malformed or absurd: not trusted */
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
            if (!strcmp(r->children[i], REIGN__N_LOCK))
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
    if (n == 0) {
        reign__free(v);
        finish(q, q->kind == Q_DESIGNATE ? REIGN_ENOENT : 0);
        return;
    }
    if (q->kind == Q_DESIGNATE && q->strategy != REIGN_STRATEGY_LOCK && designate_by_tag(q, v, n)) {
        reign__free(v);
        return;
    }
    reign__free(v);
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
    /* The leader's node changed or went meanwhile, or the target's changed:
     * read again.  The target's gone: it does not stand. */
    bool again = r->rc == REIGN_EBADVERSION || (r->rc == REIGN_ENOENT && r->failed_op == 1);
    if (again && ++q->tries < 5) {
        restart(q);
        return;
    }
    finish(q, r->rc);
}

static int designate_write(query *q, const char *target, const char *tdata, size_t tlen,
                           int32_t tversion, const char *leader, const char *ldata, size_t llen,
                           int32_t lversion)
{
    char *tpath = reign__path_join(q->dir, target);
    char *lpath = leader ? reign__path_join(q->dir, leader) : NULL;
    int rc = !tpath || (leader && !lpath) ? REIGN_ENOMEM : 0;
    if (rc == 0) {
        reign__zk_mop ops[] = {
            {.type = REIGN__ZK_MSET,
             .path = tpath,
             .data = tdata,
             .len = tlen,
             .version = tversion},
            {.type = REIGN__ZK_MSET,
             .path = lpath,
             .data = ldata,
             .len = llen,
             .version = lversion},
        };
        rc = reign__zk_multi(q->zk, ops, leader ? 2 : 1, q, on_designated, NULL);
    }
    reign__free(tpath);
    reign__free(lpath);
    return rc;
}

/*
 * The quick way, when the listing alone names the target: exactly one
 * candidate's guid carries the id tag of the id (reign__election_guid()),
 * and the term names the leader's node and guid, so the leader's candidate
 * record is known without reading it.  Written unconditionally (-1): the
 * leader's record is rebuilt whole, and the target's gets its id and guid
 * but not its payload, which the target puts back when it reads its node.
 * Returns false (and does nothing) when the quick way does not apply: no
 * or several tagged candidates (an id hash collision, nodes made before
 * tags, an id that stands twice), or a term without the leader's guid.
 */
static bool designate_by_tag(query *q, const reign__qnode *v, size_t n)
{
    char tag[9];
    reign__election_id_tag(tag, q->target);
    const reign__qnode *t = NULL, *l = NULL;
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strncmp(v[i].guid, tag, 8)) {
            t = &v[i];
            found++;
        }
        if (q->have_term && q->leader_node && !strcmp(q->leader_node, v[i].name))
            l = &v[i];
    }
    if (found != 1 || (l && !q->leader_guid))
        return false;
    if (l == t) {
        finish(q, 0); /* leads already */
        return true;
    }
    char prio[12], term[24];
    snprintf(prio, sizeof(prio), "%u", (unsigned)REIGN__DESIGNATED_MIN);
    snprintf(term, sizeof(term), "%llu", (unsigned long long)(q->have_term ? q->term : 0));
    const char *tkv[] = {REIGN__K_ID,
                         q->target,
                         REIGN__K_GUID,
                         t->guid,
                         REIGN__K_DESIGNATED,
                         l ? l->name : "-",
                         REIGN__K_DESIGNATED_TERM,
                         term};
    const char *lkv[] = {REIGN__K_ID,
                         q->leader_id ? q->leader_id : "",
                         REIGN__K_GUID,
                         q->leader_guid ? q->leader_guid : "",
                         REIGN__K_HANDOFF,
                         t->name,
                         REIGN__K_HANDOFF_PRIORITY,
                         prio};
    reign__buf tb, lb;
    reign__buf_init(&tb);
    reign__buf_init(&lb);
    int rc = reign__record_build(&tb, tkv, 8, NULL, 0);
    if (rc == 0 && l)
        rc = reign__record_build(&lb, lkv, 8, q->leader_data, q->leader_len);
    if (rc == 0)
        rc = designate_write(q, t->name, tb.data, tb.len, -1, l ? l->name : NULL, lb.data, lb.len,
                             -1);
    reign__buf_free(&tb);
    reign__buf_free(&lb);
    if (rc < 0)
        finish(q, rc);
    return true;
}

/* `c`'s record as read, with `set` (key, value pairs) set. */
static int with_fields(const cand *c, const char *const *set, size_t n_set, reign__buf *out)
{
    reign__record rec;
    if (reign__record_parse(c->raw, c->raw_len, &rec) < 0)
        return REIGN_EFOREIGN;
    int rc = reign__record_build_set(out, &rec, set, n_set);
    reign__record_clear(&rec);
    return rc;
}

/*
 * The candidates are read: tell the one standing with the id that it is
 * designated (designated=<the leader's node>) and ask the leader, on its
 * behalf, to hand over to it (handoff=<its node>, at the designated
 * priority, above any configured one), in one multi that also proves that
 * both nodes are as read.  Both watch their nodes: the leader demotes
 * itself and names the target next in the leader node, the target takes
 * the leader node over (election_zk.c).  With no leader, the target claims
 * when it can.
 */
static void designate(query *q)
{
    cand *t = NULL, *l = NULL;
    for (size_t i = 0; i < q->n; i++) {
        if (!q->c[i].read)
            continue;
        if (!t && q->c[i].id && !strcmp(q->c[i].id, q->target))
            t = &q->c[i];
        if (q->have_term && q->leader_node && !strcmp(q->leader_node, q->c[i].name))
            l = &q->c[i];
    }
    if (!t) {
        finish(q, REIGN_ENOENT);
        return;
    }
    if (l == t) {
        finish(q, 0); /* leads already */
        return;
    }
    char prio[12], term[24];
    snprintf(prio, sizeof(prio), "%u", (unsigned)REIGN__DESIGNATED_MIN);
    snprintf(term, sizeof(term), "%llu", (unsigned long long)(q->have_term ? q->term : 0));
    /* The term tells one designation from another under the same leader. */
    const char *tset[] = {REIGN__K_DESIGNATED, l ? l->name : "-", REIGN__K_DESIGNATED_TERM, term};
    const char *lset[] = {REIGN__K_HANDOFF, t->name, REIGN__K_HANDOFF_PRIORITY, prio};
    reign__buf tb, lb;
    reign__buf_init(&tb);
    reign__buf_init(&lb);
    int rc = with_fields(t, tset, 4, &tb);
    if (rc == 0 && l)
        rc = with_fields(l, lset, 4, &lb);
    if (rc == 0)
        rc = designate_write(q, t->name, tb.data, tb.len, t->version, l ? l->name : NULL, lb.data,
                             lb.len, l ? l->version : -1);
    reign__buf_free(&tb);
    reign__buf_free(&lb);
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
        const char *node = reign__record_get(&rec, REIGN__K_NODE);
        const char *id = reign__record_get(&rec, REIGN__K_ID);
        const char *guid = reign__record_get(&rec, REIGN__K_GUID);
        if (node && reign__election_node_ok(node)) {
            q->have_term = true;
            q->leader_node = reign__strdup(node);
            q->leader_id = reign__strdup(id ? id : "");
            q->leader_guid = guid ? reign__strdup(guid) : NULL;
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
    if (r->value_len && reign__record_parse(r->value, r->value_len, &rec) < 0) {
        finish(q, REIGN_EFOREIGN); /* not an election of reign's: as a candidate would say */
        return;
    }
    if (r->value_len) {
        int s = reign_strategy_parse(reign__record_get(&rec, REIGN__K_STRATEGY));
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
    char *term = reign__path_join(q->dir, REIGN__N_TERM);
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
    reign__free(q->leader_guid);
    reign__free(q->leader_data);
    q->leader_node = q->leader_id = q->leader_guid = NULL;
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
    int rc = reign__name_check(name);
    if (rc < 0)
        return rc;
    if (kind == Q_DESIGNATE && (!target || !reign__id_ok(target, REIGN_ID_MAX)))
        return REIGN_EINVAL;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    if (!reign__client_zk(client))
        return reign__lease_query(client, name, kind == Q_DEPOSE,
                                  kind == Q_DESIGNATE ? target : NULL, qcb, dcb, userdata);
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
