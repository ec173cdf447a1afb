/*
 * slot_zk.c - the record of slots in ZooKeeper (slot_internal.h):
 *
 *   /reign/slot/NAME          persistent, "reign 1 / kind=slots"
 *   /reign/slot/NAME/clock    persistent, empty: written to read the server's clock
 *   /reign/slot/NAME/s_<KEY>  persistent: the slot's record (slot_model.c has its text)
 *
 * A start or a mark is one multi: "check /reign/election/NAME/term at version T" (the term
 * node's version is the term: every claim of the election sets it), then the write of the slot
 * node at the version read (or its create, followed by a set of the same data so that the
 * answer carries the write's mtime).  If any candidate has claimed since our claim, the check
 * fails and nothing is written: the store refuses a deposed leader.  An end is a plain set at
 * the version we wrote.  Times in a record are written as "@" - the mtime of the version that
 * holds them, the server's clock - and resolved by whoever reads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "record.h"
#include "slot_internal.h"

#define NAME_RECORD       "reign 1\nkind=slots\n\n"
#define PRUNE_SLACK(keep) ((keep) / 10 + 1)

typedef struct zk_slot {
    reign__zk *zk;
    char *dir, *clock, *term;
    char node[sizeof(REIGN__SLOT_DIR) + REIGN_NAME_MAX + REIGN_SLOT_KEY_MAX + 8];
    bool parents_tried;
    /* pruning */
    struct prune_child {
        char *path;
        int64_t czxid;
    } * kids;
    size_t n_kids, pending;
    uintptr_t prune_gen;
} zk_slot;

static zk_slot *zs_of(reign_slot *s)
{
    return s->be_data;
}

static void free_kids(zk_slot *z)
{
    for (size_t i = 0; i < z->n_kids; i++)
        reign__free(z->kids[i].path);
    reign__free(z->kids);
    z->kids = NULL;
    z->n_kids = z->pending = 0;
}

static char *slot_dir(const char *name, const char *suffix)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s%s", REIGN__SLOT_DIR, name, suffix);
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

static int zs_init(reign_slot *s)
{
    zk_slot *z = reign__calloc(1, sizeof *z);
    if (!z)
        return REIGN_ENOMEM;
    z->zk = reign__client_zk(s->client);
    z->dir = slot_dir(s->name, "");
    z->clock = slot_dir(s->name, "/" REIGN__N_CLOCK);
    z->term = reign__election_path(s->name, "/" REIGN__N_TERM);
    if (!z->dir || !z->clock || !z->term) {
        reign__free(z->dir);
        reign__free(z->clock);
        reign__free(z->term);
        reign__free(z);
        return REIGN_ENOMEM;
    }
    s->be_data = z;
    return 0;
}

static void zs_release(reign_slot *s)
{
    zk_slot *z = zs_of(s);
    if (!z)
        return;
    reign__zk_forget(z->zk, s);
    free_kids(z);
    reign__free(z->dir);
    reign__free(z->clock);
    reign__free(z->term);
    reign__free(z);
    s->be_data = NULL;
}

/* The nodes above the slot's (from the root down), sent without waiting: requests of one
 * session are applied in order, so the request sent next finds them. */
static void make_parents(reign__zk *zk, const char *dir)
{
    reign__zk_create(zk, REIGN__ZK_ROOT, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(zk, REIGN__SLOT_DIR, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(zk, dir, NAME_RECORD, sizeof NAME_RECORD - 1, REIGN__ZK_RETRY, NULL, NULL,
                     NULL);
}

#define GEN(arg) ((uintptr_t)(arg))
#define ARG(gen) ((void *)(uintptr_t)(gen))

static void reply(reign_slot *s, void *arg, reign__slot_reply *r)
{
    s->reply(s, GEN(arg), r);
}

static void reply_rc(reign_slot *s, void *arg, reign__slot_op op, int rc, const char *msg)
{
    reign__slot_reply r = {.op = op, .rc = rc, .message = msg, .version = -1};
    reply(s, arg, &r);
}

/* ---- the clock ------------------------------------------------------------------------------- */

static void on_clock_set(void *owner, void *arg, const reign__zk_result *r);

static void on_clock_made(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    if (r->rc != 0 && r->rc != REIGN_EEXIST) {
        reply_rc(s, arg, REIGN__SLOT_OP_NOW, r->rc, NULL);
        return;
    }
    int rc = reign__zk_set(z->zk, z->clock, NULL, 0, -1, 0, s, on_clock_set, arg);
    if (rc < 0)
        reply_rc(s, arg, REIGN__SLOT_OP_NOW, rc, NULL);
}

static void on_clock_set(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    if (r->rc == REIGN_ENOENT && !z->parents_tried) {
        z->parents_tried = true;
        make_parents(z->zk, z->dir);
        int rc = reign__zk_create(z->zk, z->clock, NULL, 0, REIGN__ZK_RETRY, s, on_clock_made, arg);
        if (rc < 0)
            reply_rc(s, arg, REIGN__SLOT_OP_NOW, rc, NULL);
        return;
    }
    if (r->rc != 0) {
        reply_rc(s, arg, REIGN__SLOT_OP_NOW, r->rc, NULL);
        return;
    }
    reign__slot_reply rep = {.op = REIGN__SLOT_OP_NOW, .now_ms = r->stat.mtime_ms, .version = -1};
    reply(s, arg, &rep);
}

/* ---- reading --------------------------------------------------------------------------------- */

static void on_get(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    reign__slot_rec rec;
    reign__slot_rec_init(&rec, s->key);
    if (r->rc == REIGN_ENOENT) {
        reign__slot_reply rep = {.op = REIGN__SLOT_OP_READ, .rec = &rec, .version = -1};
        reply(s, arg, &rep);
        return;
    }
    if (r->rc != 0) {
        reply_rc(s, arg, REIGN__SLOT_OP_READ, r->rc, NULL);
        return;
    }
    int rc = reign__slot_rec_parse(r->value, r->value_len, r->stat.mtime_ms, &rec);
    if (rc == 0 && strcmp(rec.key, s->key) != 0)
        rc = REIGN_EFOREIGN;
    if (rc < 0) {
        char msg[sizeof z->node + 80];
        snprintf(msg, sizeof msg, "%s holds data reign did not write", z->node);
        reply_rc(s, arg, REIGN__SLOT_OP_READ, rc == REIGN_ENOMEM ? rc : REIGN_EFOREIGN,
                 rc == REIGN_ENOMEM ? NULL : msg);
        return;
    }
    rec.version = r->stat.version;
    rec.order = r->stat.czxid;
    reign__slot_reply rep = {.op = REIGN__SLOT_OP_READ, .rec = &rec, .version = -1};
    reply(s, arg, &rep);
}

/* ---- writing --------------------------------------------------------------------------------- */

static int write_fenced(reign_slot *s, reign__slot_op op, uint64_t fence, uintptr_t gen);

static void on_fenced(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    /* The op travels in the low bit of arg, below gen: START or MARK. */
    reign__slot_op op = (GEN(arg) & 1u) ? REIGN__SLOT_OP_MARK : REIGN__SLOT_OP_START;
    uintptr_t gen = GEN(arg) >> 1;
    int rc = r->rc;
    if (rc != 0) {
        if (r->failed_op == 0 && (rc == REIGN_EBADVERSION || rc == REIGN_ENOENT))
            rc = REIGN_ESTATE; /* the term moved on (or its node went): deposed */
        else if (r->failed_op == 1 && rc == REIGN_ENOENT && op == REIGN__SLOT_OP_START &&
                 !z->parents_tried) {
            /* The slots' node is missing (the first slot of NAME): make it, and try again. */
            z->parents_tried = true;
            make_parents(z->zk, z->dir);
            int e = write_fenced(s, op, s->fence, gen);
            if (e < 0)
                s->reply(s, gen, &(reign__slot_reply){.op = op, .rc = e, .version = -1});
            return;
        } else if (r->failed_op >= 1 &&
                   (rc == REIGN_EBADVERSION || rc == REIGN_EEXIST || rc == REIGN_ENOENT)) {
            rc = REIGN_EBADVERSION; /* the record changed since it was read */
        }
        s->reply(s, gen, &(reign__slot_reply){.op = op, .rc = rc, .version = -1});
        return;
    }
    reign__slot_reply rep = {
        .op = op, .now_ms = r->stat.mtime_ms, .version = r->has_stat ? r->stat.version : -1};
    s->reply(s, gen, &rep);
}

static int write_fenced(reign_slot *s, reign__slot_op op, uint64_t fence, uintptr_t gen)
{
    zk_slot *z = zs_of(s);
    if (fence > INT32_MAX)
        return REIGN_EINVAL;
    reign__buf b;
    reign__buf_init(&b);
    int rc = reign__slot_rec_build(&b, &s->next);
    if (rc < 0) {
        reign__buf_free(&b);
        return rc;
    }
    reign__zk_mop ops[4];
    size_t n = 0;
    ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCHECK, .path = z->term, .version = (int)fence};
    /* A new attempt: the slots' node names the latest slot, so that `reign status` reads two
     * nodes rather than every slot's (no request more: a part of the same multi). */
    reign__buf latest;
    reign__buf_init(&latest);
    if (op == REIGN__SLOT_OP_START) {
        const char *kv[] = {REIGN__K_KIND, REIGN__KIND_SLOTS, REIGN__K_LATEST, s->key};
        if ((rc = reign__record_build(&latest, kv, 4, NULL, 0)) < 0) {
            reign__buf_free(&b);
            return rc;
        }
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MSET,
                                   .path = z->dir,
                                   .data = latest.data,
                                   .len = latest.len,
                                   .version = -1};
    }
    if (!s->rec.exists) {
        /* Created, then set once more: the answer of a set carries the write's mtime. */
        ops[n++] = (reign__zk_mop){
            .type = REIGN__ZK_MCREATE, .path = z->node, .data = b.data, .len = b.len};
        ops[n++] = (reign__zk_mop){
            .type = REIGN__ZK_MSET, .path = z->node, .data = b.data, .len = b.len, .version = 0};
    } else {
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MSET,
                                   .path = z->node,
                                   .data = b.data,
                                   .len = b.len,
                                   .version = s->rec.version};
    }
    uintptr_t tag = (gen << 1) | (op == REIGN__SLOT_OP_MARK ? 1u : 0u);
    rc = reign__zk_multi(z->zk, ops, n, s, on_fenced, ARG(tag));
    reign__buf_free(&b);
    reign__buf_free(&latest);
    return rc;
}

static void on_end_set(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    int rc = r->rc;
    if (rc == REIGN_EBADVERSION || rc == REIGN_ENOENT)
        rc = REIGN_EBADVERSION;
    reign__slot_reply rep = {.op = REIGN__SLOT_OP_END,
                             .rc = rc,
                             .now_ms = rc == 0 ? r->stat.mtime_ms : 0,
                             .version = rc == 0 ? r->stat.version : -1};
    reply(s, arg, &rep);
}

/* ---- pruning --------------------------------------------------------------------------------- */

/* Listing the slots costs one request; reading their ages one each, so that is done only when
 * the record holds a tenth more than `keep`, and then cuts it to `keep`. */

static int by_age(const void *a, const void *b)
{
    const struct prune_child *x = a, *y = b;
    return x->czxid < y->czxid ? -1 : x->czxid > y->czxid;
}

static void prune_done(reign_slot *s)
{
    zk_slot *z = zs_of(s);
    uintptr_t gen = z->prune_gen;
    free_kids(z);
    s->reply(s, gen, &(reign__slot_reply){.op = REIGN__SLOT_OP_PRUNE, .version = -1});
}

static void on_pruned(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    if (--zs_of(s)->pending == 0)
        prune_done(s);
}

static void on_prune_stat(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    struct prune_child *kid = arg;
    if (r->rc == 0)
        kid->czxid = r->stat.czxid;
    if (--z->pending)
        return;
    /* Every age is in; those that could not be read are left alone. */
    size_t live = 0;
    for (size_t i = 0; i < z->n_kids; i++) {
        if (z->kids[i].czxid > 0)
            z->kids[live++] = z->kids[i];
        else
            reign__free(z->kids[i].path);
    }
    z->n_kids = live;
    if (live <= (size_t)s->keep) {
        prune_done(s);
        return;
    }
    qsort(z->kids, live, sizeof *z->kids, by_age);
    size_t drop = live - (size_t)s->keep;
    z->pending = drop;
    for (size_t i = 0; i < drop; i++)
        if (reign__zk_delete(z->zk, z->kids[i].path, -1, REIGN__ZK_RETRY, s, on_pruned, NULL) < 0)
            z->pending--;
    if (z->pending == 0)
        prune_done(s);
}

static void on_children(void *owner, void *arg, const reign__zk_result *r)
{
    reign_slot *s = owner;
    zk_slot *z = zs_of(s);
    size_t n = 0;
    for (size_t i = 0; r->rc == 0 && i < r->n_children; i++)
        n += !strncmp(r->children[i], REIGN__N_SLOT, 2);
    if (r->rc != 0 || n <= (size_t)s->keep + PRUNE_SLACK((size_t)s->keep)) {
        prune_done(s);
        return;
    }
    free_kids(z);
    if (!(z->kids = reign__calloc(n, sizeof *z->kids))) {
        prune_done(s);
        return;
    }
    for (size_t i = 0; i < r->n_children; i++) {
        if (strncmp(r->children[i], REIGN__N_SLOT, 2))
            continue;
        char *path = reign__path_join(z->dir, r->children[i]);
        if (path)
            z->kids[z->n_kids++] = (struct prune_child){.path = path};
    }
    reign__log(s->log, REIGN_LOG_INFO, "slot %s: %zu slots recorded, keeping the newest %d",
               s->name, z->n_kids, s->keep);
    z->pending = z->n_kids;
    for (size_t i = 0; i < z->n_kids; i++)
        if (reign__zk_exists(z->zk, z->kids[i].path, NULL, REIGN__ZK_RETRY, s, on_prune_stat,
                             &z->kids[i]) < 0)
            z->pending--;
    if (z->pending == 0)
        prune_done(s);
}

/* ---- issuing --------------------------------------------------------------------------------- */

static int zs_issue(reign_slot *s, reign__slot_op op, uint64_t fence, uintptr_t gen)
{
    zk_slot *z = zs_of(s);
    snprintf(z->node, sizeof z->node, "%s/" REIGN__N_SLOT "%s", z->dir, s->key);
    switch (op) {
    case REIGN__SLOT_OP_NOW:
        return reign__zk_set(z->zk, z->clock, NULL, 0, -1, 0, s, on_clock_set, ARG(gen));
    case REIGN__SLOT_OP_READ:
        return reign__zk_get(z->zk, z->node, NULL, REIGN__ZK_RETRY, s, on_get, ARG(gen));
    case REIGN__SLOT_OP_START:
    case REIGN__SLOT_OP_MARK:
        return write_fenced(s, op, fence, gen);
    case REIGN__SLOT_OP_END: {
        reign__buf b;
        reign__buf_init(&b);
        int rc = reign__slot_rec_build(&b, &s->next);
        if (rc == 0)
            rc = reign__zk_set(z->zk, z->node, b.data, b.len, s->rec.version, 0, s, on_end_set,
                               ARG(gen));
        reign__buf_free(&b);
        return rc;
    }
    case REIGN__SLOT_OP_PRUNE:
        z->prune_gen = gen;
        return reign__zk_children(z->zk, z->dir, NULL, REIGN__ZK_RETRY, s, on_children, NULL);
    }
    return REIGN_EINVAL;
}

/* ---- the record, for tools ------------------------------------------------------------------- */

typedef struct zk_hist {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *dir;
    unsigned last;
    reign_slot_history_cb *cb;
    void *userdata;
    reign__slot_rec *recs;
    size_t n, pending;
    bool done;
} zk_hist;

static void hist_free(zk_hist *h)
{
    reign__zk_forget(h->zk, h);
    reign__client_detach(h->client, &h->recipe);
    reign__free(h->recs);
    reign__free(h->dir);
    reign__free(h);
}

static int newest_first(const void *a, const void *b)
{
    const reign__slot_rec *x = a, *y = b;
    return x->order > y->order ? -1 : x->order < y->order;
}

static void hist_finish(zk_hist *h, int err)
{
    if (h->done)
        return;
    h->done = true;
    size_t n = 0, runs = 0;
    reign_slot_record *out = NULL;
    reign_slot_run *rbuf = NULL;
    if (err == 0) {
        /* Records that could not be read or parsed were left out (n counts those kept). */
        size_t kept = 0;
        for (size_t i = 0; i < h->n; i++)
            if (h->recs[i].exists)
                h->recs[kept++] = h->recs[i];
        if (kept > 1)
            qsort(h->recs, kept, sizeof *h->recs, newest_first);
        n = h->last && h->last < kept ? h->last : kept;
        for (size_t i = 0; i < n; i++)
            runs += h->recs[i].n;
        out = reign__calloc(n ? n : 1, sizeof *out);
        rbuf = reign__calloc(runs ? runs : 1, sizeof *rbuf);
        if (!out || !rbuf) {
            err = REIGN_ENOMEM;
            n = 0;
        }
        for (size_t i = 0, k = 0; err == 0 && i < n; k += h->recs[i].n, i++)
            reign__slot_rec_public(&h->recs[i], rbuf + k, &out[i]);
    }
    h->cb(h->client, err, err ? NULL : out, n, h->userdata);
    reign__free(out);
    reign__free(rbuf);
    hist_free(h);
}

static void on_hist_get(void *owner, void *arg, const reign__zk_result *r)
{
    zk_hist *h = owner;
    reign__slot_rec *rec = arg;
    if (r->rc == 0) {
        if (reign__slot_rec_parse(r->value, r->value_len, r->stat.mtime_ms, rec) == 0) {
            rec->order = r->stat.czxid;
        } else {
            reign__log(h->log, REIGN_LOG_WARN, "%s: a slot node holds data reign did not write",
                       h->dir);
        }
    }
    if (--h->pending == 0)
        hist_finish(h, 0);
}

static void on_hist_children(void *owner, void *arg, const reign__zk_result *r)
{
    zk_hist *h = owner;
    if (r->rc == REIGN_ENOENT) {
        hist_finish(h, 0);
        return;
    }
    if (r->rc != 0) {
        hist_finish(h, r->rc);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_children; i++)
        n += !strncmp(r->children[i], REIGN__N_SLOT, 2);
    if (n == 0) {
        hist_finish(h, 0);
        return;
    }
    if (!(h->recs = reign__calloc(n, sizeof *h->recs))) {
        hist_finish(h, REIGN_ENOMEM);
        return;
    }
    h->pending = 1; /* held while sending, so that no answer finishes early */
    for (size_t i = 0; i < r->n_children; i++) {
        if (strncmp(r->children[i], REIGN__N_SLOT, 2))
            continue;
        reign__slot_rec *rec = &h->recs[h->n++];
        reign__slot_rec_init(rec, NULL);
        char *path = reign__path_join(h->dir, r->children[i]);
        if (path && reign__zk_get(h->zk, path, NULL, REIGN__ZK_RETRY, h, on_hist_get, rec) == 0)
            h->pending++;
        reign__free(path);
    }
    if (--h->pending == 0)
        hist_finish(h, 0);
}

static void hist_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        hist_finish((zk_hist *)rp, REIGN_ECLOSED);
}

static void hist_destroy(reign__recipe *rp)
{
    hist_free((zk_hist *)rp);
}

static const reign__recipe_ops hist_ops = {.conn = hist_conn, .destroy = hist_destroy};

/* Falls back to listing every slot. */
static void list_all(zk_hist *h)
{
    reign__free(h->recs);
    h->recs = NULL;
    h->n = 0;
    if (reign__zk_children(h->zk, h->dir, NULL, REIGN__ZK_RETRY, h, on_hist_children, NULL) < 0)
        hist_finish(h, REIGN_ENOMEM);
}

/* The latest slot, as the slots' node names it (last == 1): two reads instead of one per slot.
 * Without a name there (no slot started yet, or its record unreadable), the listing of every
 * slot. */
static void on_hist_latest(void *owner, void *arg, const reign__zk_result *r)
{
    zk_hist *h = owner;
    reign__slot_rec *rec = &h->recs[0];
    if (r->rc == 0 && reign__slot_rec_parse(r->value, r->value_len, r->stat.mtime_ms, rec) == 0) {
        h->n = 1;
        hist_finish(h, 0);
        return;
    }
    list_all(h);
}

static void on_hist_dir(void *owner, void *arg, const reign__zk_result *r)
{
    zk_hist *h = owner;
    if (r->rc == REIGN_ENOENT) {
        hist_finish(h, 0);
        return;
    }
    reign__record rec;
    char *path = NULL;
    if (r->rc == 0 && reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *latest = reign__record_get(&rec, REIGN__K_LATEST);
        if (latest && reign_slot_key_check(latest) == 0) {
            reign__buf b;
            reign__buf_init(&b);
            reign__buf_printf(&b, "%s/" REIGN__N_SLOT "%s", h->dir, latest);
            path = b.oom ? (reign__buf_free(&b), NULL) : b.data;
        }
        reign__record_clear(&rec);
    }
    if (path && (h->recs = reign__calloc(1, sizeof *h->recs)) &&
        reign__zk_get(h->zk, path, NULL, REIGN__ZK_RETRY, h, on_hist_latest, NULL) == 0) {
        reign__free(path);
        return;
    }
    reign__free(path);
    list_all(h);
}

static int zs_history(reign_client *client, const char *name, unsigned last,
                      reign_slot_history_cb *cb, void *userdata)
{
    zk_hist *h = reign__calloc(1, sizeof *h);
    if (!h)
        return REIGN_ENOMEM;
    h->recipe.ops = &hist_ops;
    h->client = client;
    h->zk = reign__client_zk(client);
    h->log = reign__client_log(client);
    h->last = last;
    h->cb = cb;
    h->userdata = userdata;
    if (!(h->dir = slot_dir(name, ""))) {
        reign__free(h);
        return REIGN_ENOMEM;
    }
    int rc = last == 1 ? reign__zk_get(h->zk, h->dir, NULL, REIGN__ZK_RETRY, h, on_hist_dir, NULL)
                       : reign__zk_children(h->zk, h->dir, NULL, REIGN__ZK_RETRY, h,
                                            on_hist_children, NULL);
    if (rc < 0) {
        reign__free(h->dir);
        reign__free(h);
        return rc;
    }
    reign__client_attach(client, &h->recipe);
    return 0;
}

const reign__slot_backend reign__slot_zk = {
    .name = "zookeeper",
    .init = zs_init,
    .release = zs_release,
    .issue = zs_issue,
    .history = zs_history,
};
