/*
 * zk_ops.c - the ZooKeeper backend's operations, on the loop thread
 * (zk_internal.h; zk.h for the contract): an operation is issued to the C
 * client with a completion of zk_thread.c, retried after a connection loss
 * when its caller allowed it, parked while there is no session, and its
 * result delivered to its owner's callback, once.  Batched multis of one
 * loop turn go out as one request.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zk_internal.h"

static void deliver(reign__zk *zk, zk_op *op, int rc);

int reign__zk_error(int zrc)
{
    switch (zrc) {
    case ZOK:
        return 0;
    case ZNONODE:
        return REIGN_ENOENT;
    case ZNODEEXISTS:
        return REIGN_EEXIST;
    case ZBADVERSION:
        return REIGN_EBADVERSION;
    case ZNOTEMPTY:
        return REIGN_ENOTEMPTY;
    case ZNOAUTH:
        return REIGN_EACCES;
    case ZAUTHFAILED:
        return REIGN_EAUTH;
    case ZCONNECTIONLOSS:
        return REIGN_ECONNLOSS;
    case ZOPERATIONTIMEOUT:
        return REIGN_ETIMEDOUT;
    case ZSESSIONEXPIRED:
    case ZSESSIONMOVED:
    case ZINVALIDSTATE:
        return REIGN_ESESSION;
    case ZCLOSING:
        return REIGN_ECLOSED;
    case ZBADARGUMENTS:
    case ZNOCHILDRENFOREPHEMERALS:
    case ZINVALIDACL:
        return REIGN_EINVAL;
    case ZMARSHALLINGERROR:
        return REIGN_E2BIG;
    default:
        return REIGN_EBACKEND;
    }
}

/* Did the server itself answer (so the request reached it)? */
static bool server_answered(int zrc)
{
    switch (zrc) {
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZSESSIONMOVED:
    case ZINVALIDSTATE:
    case ZCLOSING:
    case ZBADARGUMENTS:
    case ZMARSHALLINGERROR:
    case ZSYSTEMERROR:
    case ZRUNTIMEINCONSISTENCY:
        return false;
    default:
        return true;
    }
}

static bool retryable(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT;
}

static zk_watch *new_watch(reign__zk *zk, zk_op *op)
{
    zk_watch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    w->path = reign__strdup(op->path);
    if (!w->path) {
        reign__free(w);
        return NULL;
    }
    w->it.kind = ITEM_WATCH;
    w->zk = zk;
    w->gen = zk->gen;
    w->cb = op->wcb;
    w->arg = op->arg;
    w->op_pending = true;
    reign__zki_own(zk, &w->own, op->own.owner, ITEM_WATCH);
    w->next = zk->watches;
    if (w->next)
        w->next->prev = w;
    zk->watches = w;
    return w;
}

void reign__zki_free_watch(reign__zk *zk, zk_watch *w)
{
    reign__zki_disown(zk, &w->own);
    if (w->prev)
        w->prev->next = w->next;
    else
        zk->watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    reign__free(w->path);
    reign__free(w);
}

static void reset_result(zk_op *op)
{
    reign__free(op->value);
    reign__free(op->children);
    op->value = NULL;
    op->children = NULL;
    op->value_len = op->n_children = 0;
    op->has_stat = false;
    op->oom = false;
    op->zrc = ZOK;
    op->failed_op = -1;
}

static int mode_of(int flags)
{
    if (flags & REIGN__ZK_CONTAINER)
        return ZOO_CONTAINER; /* a mode of its own, not a bit */
    return ((flags & REIGN__ZK_EPHEMERAL) ? ZOO_EPHEMERAL : 0) |
           ((flags & REIGN__ZK_SEQUENCE) ? ZOO_SEQUENCE : 0);
}

/* Fills out[0..m->n) from m's own parts (a carrier passes a slice of its array). */
static int init_zops(zoo_op_t *out, zk_multi *m, const struct ACL_vector *acl)
{
    for (size_t i = 0; i < m->n; i++) {
        const reign__zk_mop *p = &m->ops[i];
        if (m->created[i])
            m->created[i][0] = '\0';
        switch (p->type) {
        case REIGN__ZK_MCHECK:
            zoo_check_op_init(&out[i], p->path, p->version);
            break;
        case REIGN__ZK_MCREATE:
            zoo_create_op_init(&out[i], p->path, p->data, (int)p->len, acl, mode_of(p->flags),
                               m->created[i], (int)m->created_len[i]);
            break;
        case REIGN__ZK_MSET:
            zoo_set_op_init(&out[i], p->path, p->data, (int)p->len, p->version, &m->stats[i]);
            break;
        case REIGN__ZK_MDELETE:
            zoo_delete_op_init(&out[i], p->path, p->version);
            break;
        default:
            return ZBADARGUMENTS;
        }
    }
    return ZOK;
}

static int issue_multi(reign__zk *zk, zk_multi *m, const struct ACL_vector *acl, zk_op *op)
{
    memset(m->zres, 0, m->n * sizeof(*m->zres));
    int rc = ZOK;
    if (m->members) {
        size_t k = 0;
        for (size_t j = 0; j < m->n_members && rc == ZOK; j++) {
            zk_multi *part = m->members[j]->multi;
            memset(part->stats, 0, part->n * sizeof(*part->stats));
            rc = init_zops(m->zops + k, part, acl);
            k += part->n;
        }
    } else {
        memset(m->stats, 0, m->n * sizeof(*m->stats));
        rc = init_zops(m->zops, m, acl);
    }
    if (rc != ZOK)
        return rc;
    /* A handle past recovery (its session expired, its auth failed: a negative state) must
     * never get a multi: libzookeeper_mt's zoo_amulti (3.8) then frees each chrooted path
     * twice - Request_path_init frees it on ZINVALIDSTATE, and the multi frees it again - and
     * the process aborts.  Its single-node calls do not.  The one window left is an expiry
     * the library's thread records between this look and the call. */
    if (zoo_state(zk->zh) < 0)
        return ZINVALIDSTATE;
    return zoo_amulti(zk->zh, (int)m->n, m->zops, m->zres, reign__zki_on_void, op);
}

/* Sends one attempt.  Failures to even send complete through the queue too,
 * so a callback never runs from inside the call that issued the request. */
static void issue(reign__zk *zk, zk_op *op)
{
    if (zk->preparing && !(op->flags & PREP_OP)) {
        /* On the root handle its path would name the wrong node: it waits for the chrooted
         * session, which resends what is parked once it is connected. */
        op->in_flight = false;
        op->parked = true;
        return;
    }
    reset_result(op);
    op->gen = zk->gen;
    op->sent_ns = reign__now_ns();
    op->in_flight = true;
    op->parked = false;
    op->attempts++;
    int rc;
    if (!zk->zh) {
        rc = zk->closed ? ZCLOSING : ZINVALIDSTATE;
        goto failed;
    }
    watcher_fn wfn = NULL;
    op->watch = NULL;
    if (op->wcb) {
        op->watch = new_watch(zk, op);
        if (!op->watch) {
            rc = ZSYSTEMERROR;
            op->oom = true;
            goto failed;
        }
        wfn = reign__zki_on_node_event;
    }
    const struct ACL_vector *acl = &zk->acl;
    int mode = mode_of(op->flags);
    switch (op->type) {
    case OP_CREATE:
        rc = zoo_acreate2(zk->zh, op->path, op->data, (int)op->len, acl, mode,
                          reign__zki_on_string_stat, op);
        break;
    case OP_DELETE:
        rc = zoo_adelete(zk->zh, op->path, op->version, reign__zki_on_void, op);
        break;
    case OP_EXISTS:
        rc = zoo_awexists(zk->zh, op->path, wfn, op->watch, reign__zki_on_stat, op);
        break;
    case OP_GET:
        rc = zoo_awget(zk->zh, op->path, wfn, op->watch, reign__zki_on_data, op);
        break;
    case OP_CHILDREN:
        rc = zoo_awget_children2(zk->zh, op->path, wfn, op->watch, reign__zki_on_children, op);
        break;
    case OP_SET:
        rc =
            zoo_aset(zk->zh, op->path, op->data, (int)op->len, op->version, reign__zki_on_stat, op);
        break;
    case OP_MULTI:
        rc = issue_multi(zk, op->multi, acl, op);
        break;
    case OP_SYNC:
        rc = zoo_async(zk->zh, op->path, reign__zki_on_string, op);
        break;
    default:
        rc = ZBADARGUMENTS;
    }
    reign_trace("zk.send", "%s %s", reign__zki_op_name(op), op->path);
    if (rc == ZOK) {
        pthread_mutex_lock(&zk->mu); /* its answer may already have come: out goes below 0 */
        zk->out++;
        pthread_mutex_unlock(&zk->mu);
        return;
    }
failed:
    if (op->watch) {
        reign__zki_free_watch(zk, op->watch);
        op->watch = NULL;
    }
    op->zrc = rc;
    reign__zki_push(zk, &op->it);
}

static void retry_cb(reign__timer *t, void *arg)
{
    zk_op *op = arg;
    issue(op->zk, op);
}

/* A new operation, neither linked nor sent; NULL without memory. */
static zk_op *new_op(reign__zk *zk, enum op_type type, const char *path, void *owner,
                     reign__zk_cb *cb, void *arg)
{
    zk_op *op = reign__calloc(1, sizeof(*op));
    if (op && !(op->path = reign__strdup(path))) {
        reign__free(op);
        op = NULL;
    }
    if (!op)
        return NULL;
    op->it.kind = ITEM_OP;
    op->zk = zk;
    op->type = type;
    op->version = -1;
    op->own.owner = owner;
    op->cb = cb;
    op->arg = arg;
    op->failed_op = -1;
    reign__timer_init(&op->retry_timer, retry_cb, op);
    return op;
}

/* Into zk->ops, the operations not yet delivered (what forget() and close look at). */
static void link_op(reign__zk *zk, zk_op *op)
{
    reign__zki_own(zk, &op->own, op->own.owner, ITEM_OP);
    op->next = zk->ops;
    if (op->next)
        op->next->prev = op;
    zk->ops = op;
}

/* Tells the client, once, that the session is about to hold an ephemeral node. */
static void note_ephemeral(reign__zk *zk, int flags, const zk_multi *m)
{
    if (zk->ephemeral_told || !zk->cfg.on_ephemeral)
        return;
    bool eph = flags & REIGN__ZK_EPHEMERAL;
    for (size_t i = 0; m && i < m->n && !eph; i++)
        eph = m->ops[i].type == REIGN__ZK_MCREATE && (m->ops[i].flags & REIGN__ZK_EPHEMERAL);
    if (!eph)
        return;
    zk->ephemeral_told = true;
    zk->cfg.on_ephemeral(zk->cfg.state_arg);
}

static int start_op(reign__zk *zk, enum op_type type, const char *path, zk_multi *multi,
                    const void *data, size_t len, int version, int flags, reign__zk_watch_cb *wcb,
                    void *owner, reign__zk_cb *cb, void *arg)
{
    if (zk->closed)
        return REIGN_ECLOSED;
    zk_op *op = new_op(zk, type, path, owner, cb, arg);
    if (!op)
        return REIGN_ENOMEM;
    op->flags = flags;
    op->version = version;
    op->wcb = wcb;
    op->multi = multi;
    op->data = data ? reign__memdup(data, len) : NULL;
    op->len = len;
    if (data && !op->data) {
        reign__free(op->path);
        reign__free(op);
        return REIGN_ENOMEM;
    }
    op->deadline_ns = reign__now_ns() + (int64_t)zk->cfg.op_timeout_ms * REIGN__NS_PER_MS;
    note_ephemeral(zk, type == OP_CREATE ? flags : 0, multi);
    link_op(zk, op);
    issue(zk, op);
    return 0;
}

int reign__zk_create(reign__zk *zk, const char *path, const void *data, size_t len, int flags,
                     void *owner, reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_create(zk->etcd, path, data, len, flags, owner, cb, arg);
    return start_op(zk, OP_CREATE, path, NULL, data ? data : "", len, -1, flags, NULL, owner, cb,
                    arg);
}

int reign__zk_delete(reign__zk *zk, const char *path, int version, int flags, void *owner,
                     reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_delete(zk->etcd, path, version, flags, owner, cb, arg);
    return start_op(zk, OP_DELETE, path, NULL, NULL, 0, version, flags, NULL, owner, cb, arg);
}

int reign__zk_exists(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                     void *owner, reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_exists(zk->etcd, path, wcb, flags, owner, cb, arg);
    return start_op(zk, OP_EXISTS, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_get(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags, void *owner,
                  reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_get(zk->etcd, path, wcb, flags, owner, cb, arg);
    return start_op(zk, OP_GET, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_children(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                       void *owner, reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_children(zk->etcd, path, wcb, flags, owner, cb, arg);
    return start_op(zk, OP_CHILDREN, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_set(reign__zk *zk, const char *path, const void *data, size_t len, int version,
                  int flags, void *owner, reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_set(zk->etcd, path, data, len, version, flags, owner, cb, arg);
    return start_op(zk, OP_SET, path, NULL, data ? data : "", len, version, flags, NULL, owner, cb,
                    arg);
}

static void free_multi(zk_multi *m)
{
    if (!m)
        return;
    for (size_t i = 0; !m->members && i < m->n; i++) {
        reign__free((char *)m->ops[i].path);
        reign__free((void *)m->ops[i].data);
        reign__free(m->created[i]);
    }
    reign__free(m);
}

/* One block: the struct, then its arrays (each a multiple of 8 bytes). */
static zk_multi *alloc_multi(size_t n, size_t n_members)
{
    size_t own = n_members ? 0 : n;
    size_t size =
        sizeof(zk_multi) + n * (sizeof(zoo_op_t) + sizeof(zoo_op_result_t)) +
        own * (sizeof(reign__zk_mop) + sizeof(struct Stat) + sizeof(char *) + sizeof(size_t)) +
        n_members * sizeof(zk_op *);
    zk_multi *m = reign__calloc(1, size);
    if (!m)
        return NULL;
    char *p = (char *)(m + 1);
#define CARVE(field, count)                                                                        \
    do {                                                                                           \
        m->field = (void *)p;                                                                      \
        p += (count) * sizeof(*m->field);                                                          \
    } while (0)
    CARVE(zops, n);
    CARVE(zres, n);
    if (own) {
        CARVE(ops, own);
        CARVE(stats, own);
        CARVE(created, own);
        CARVE(created_len, own);
    } else {
        CARVE(members, n_members);
    }
#undef CARVE
    m->n = n;
    m->n_members = n_members;
    return m;
}

static zk_multi *copy_multi(const reign__zk_mop *ops, size_t n)
{
    zk_multi *m = alloc_multi(n, 0);
    if (!m)
        return NULL;
    bool oom = false;
    for (size_t i = 0; i < n; i++) {
        m->ops[i] = ops[i];
        m->ops[i].path = reign__strdup(ops[i].path);
        m->ops[i].data = ops[i].data ? reign__memdup(ops[i].data, ops[i].len) : NULL;
        oom |= !m->ops[i].path || (ops[i].data && !m->ops[i].data);
        if (ops[i].type == REIGN__ZK_MCREATE) {
            /* Sized to the path: a multi in flight per election adds up
             * (10,000 claims at once), and a sequence adds 10 digits. */
            m->created_len[i] = strlen(ops[i].path) + 16;
            m->created[i] = reign__malloc(m->created_len[i]);
            oom |= !m->created[i];
        }
    }
    if (oom) {
        free_multi(m);
        return NULL;
    }
    return m;
}

int reign__zk_multi(reign__zk *zk, const reign__zk_mop *ops, size_t n, void *owner,
                    reign__zk_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_multi(zk->etcd, ops, n, owner, cb, arg);
    if (n == 0 || n > REIGN__ZK_MULTI_MAX)
        return REIGN_EINVAL;
    zk_multi *m = copy_multi(ops, n);
    int rc = !m ? REIGN_ENOMEM
                : start_op(zk, OP_MULTI, ops[0].path, m, NULL, 0, -1, 0, NULL, owner, cb, arg);
    if (rc < 0)
        free_multi(m);
    return rc;
}

/*
 * Batched multis: a carrier is an internal operation that sends the batched multis of a
 * loop turn as one multi: one request instead of many, which is what a
 * ZooKeeper server spends most of its time on (a part of a multi costs it a
 * fraction of a request).  Bounded well below the server's default
 * jute.maxbuffer (1 MiB).
 */
#define CARRIER_MAX_OPS   512
#define CARRIER_MAX_BYTES (256 * 1024)
/* Flushed requests out at once (each up to 512 writes): the server always has the next ones
 * read while it applies one, and neither side holds more than about 1,600 new elections'
 * multis.  All at once, 100,000 joins held 500 MB here and more than the server's heap. */
#define BATCH_OUT_MAX 16

static size_t multi_bytes(const zk_multi *m)
{
    size_t b = 0;
    for (size_t i = 0; i < m->n; i++)
        b += strlen(m->ops[i].path) + m->ops[i].len + 64; /* + header, ACL, version */
    return b;
}

/* Wakes the loop for the flush (a call from outside it, maybe: make sure a turn comes). */
static void wake(reign__zk *zk)
{
    uint64_t one = 1;
    ssize_t w = write(zk->cfg.wake_fd, &one, sizeof(one));
    (void)w;
}

int reign__zk_multi_batched(reign__zk *zk, const reign__zk_mop *ops, size_t n, void *owner,
                            reign__zk_cb *cb, void *arg)
{
    if (zk->etcd) /* a txn each: etcd would judge a batch of them as one */
        return reign__etcd_multi(zk->etcd, ops, n, owner, cb, arg);
    if (n == 0 || n > REIGN__ZK_MULTI_MAX)
        return REIGN_EINVAL;
    if (zk->closed)
        return REIGN_ECLOSED;
    zk_multi *m = copy_multi(ops, n);
    zk_op *op = m ? new_op(zk, OP_MULTI, ops[0].path, owner, cb, arg) : NULL;
    if (!op) {
        free_multi(m);
        return REIGN_ENOMEM;
    }
    op->multi = m;
    op->batched = true;
    op->gen = zk->gen;
    note_ephemeral(zk, 0, m);
    link_op(zk, op);
    if (!zk->batch) {
        zk->batch_tail = &zk->batch;
        wake(zk);
    }
    *zk->batch_tail = op;
    zk->batch_tail = &op->bnext;
    zk->batch_parts += n;
    return 0;
}

int reign__zk_batch_wait(reign__zk *zk, void *owner, reign__zk_ready_cb *cb, void *arg)
{
    if (zk->etcd)
        return reign__etcd_batch_wait(zk->etcd, owner, cb, arg);
    if (zk->closed)
        return REIGN_ECLOSED;
    zk_waiter *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->cb = cb;
    w->arg = arg;
    reign__zki_own(zk, &w->own, owner, ITEM_WAITER);
    if (!zk->waiters) {
        zk->waiters_tail = &zk->waiters;
        wake(zk);
    }
    *zk->waiters_tail = w;
    zk->waiters_tail = &w->next;
    return 0;
}

static zk_waiter *waiter_pop(reign__zk *zk)
{
    zk_waiter *w = zk->waiters;
    if (w) {
        zk->waiters = w->next;
        reign__zki_disown(zk, &w->own);
    }
    return w;
}

/* Lets waiters add their multis until one carrier is full (forgotten ones are dropped). */
static void admit_waiters(reign__zk *zk)
{
    zk_waiter *w;
    while (zk->batch_parts < CARRIER_MAX_OPS && !zk->closed && (w = waiter_pop(zk))) {
        if (w->cb)
            w->cb(w->own.owner, w->arg, 0);
        reign__free(w);
    }
}

void reign__zki_free_waiters(reign__zk *zk)
{
    for (zk_waiter *w; (w = waiter_pop(zk));)
        reign__free(w);
}

static zk_op *batch_pop(reign__zk *zk)
{
    zk_op *op = zk->batch;
    if (op) {
        zk->batch = op->bnext;
        op->bnext = NULL;
        zk->batch_parts -= op->multi->n;
    }
    return op;
}

/* Back into the batch, for the next flush (these answered nothing yet). */
static void batch_push(reign__zk *zk, zk_op *op)
{
    op->batched = true;
    op->carried = false;
    if (!zk->batch)
        zk->batch_tail = &zk->batch;
    *zk->batch_tail = op;
    zk->batch_tail = &op->bnext;
    zk->batch_parts += op->multi->n;
}

/* Sends what flush() takes out: counted until it is freed (answered or failed). */
static void issue_flow(reign__zk *zk, zk_op *op)
{
    op->flow = true;
    zk->batch_out++;
    issue(zk, op);
}

void reign__zk_flush(reign__zk *zk)
{
    if (zk->etcd) {
        reign__etcd_flush(zk->etcd);
        return;
    }
    while (zk->batch_out < BATCH_OUT_MAX) {
        admit_waiters(zk);
        if (!zk->batch)
            return;
        /* Who goes in this carrier: forgotten ones are dropped here. */
        size_t members = 0, parts = 0, bytes = 0;
        zk_op *last = NULL;
        for (zk_op *op = zk->batch; op; op = op->bnext) {
            if (!op->cb)
                continue;
            size_t b = multi_bytes(op->multi);
            if (members &&
                (parts + op->multi->n > CARRIER_MAX_OPS || bytes + b > CARRIER_MAX_BYTES))
                break;
            members++;
            parts += op->multi->n;
            bytes += b;
            last = op;
        }
        zk_multi *cm = members > 1 ? alloc_multi(parts, members) : NULL;
        zk_op *c = cm ? new_op(zk, OP_MULTI, zk->batch->path, zk, NULL, NULL) : NULL;
        if (cm && !c) { /* no memory for a carrier: send them one by one */
            reign__free(cm);
            cm = NULL;
        }
        size_t j = 0;
        for (zk_op *op; (op = batch_pop(zk));) {
            bool end = op == last;
            if (!op->cb) {
                reign__zki_free_op(zk, op);
            } else if (cm) {
                op->carried = true;
                op->in_flight = true;
                cm->members[j++] = op;
            } else {
                op->batched = false;
                issue_flow(zk, op);
            }
            if (end || !last)
                break;
        }
        if (!cm)
            continue;
        c->multi = cm;
        link_op(zk, c);
        issue_flow(zk, c);
    }
}

/*
 * A carrier's answer, handed to its members.  When the server refused it,
 * one member's part failed: that member gets the error; the others' parts
 * were undone with it.  Those before it passed, and are sent again
 * together; those after it were never judged, and come back to their
 * callers with REIGN_ECANCELED (not applied): a caller that batches
 * optimistically (a multi that fails when its guess is wrong) would more
 * likely than not fail again, and knows best what to do instead.
 */
static void finish_carrier(reign__zk *zk, zk_op *c)
{
    zk_multi *cm = c->multi;
    bool current = c->gen == zk->gen && !zk->closed;
    size_t bad = SIZE_MAX;
    if (current && c->zrc != ZOK && !retryable(c->zrc))
        for (size_t i = 0; i < cm->n; i++)
            if (cm->zres[i].err != ZOK && cm->zres[i].err != ZRUNTIMEINCONSISTENCY) {
                bad = i;
                break;
            }
    if (bad != SIZE_MAX)
        reign__log(zk->log, REIGN_LOG_DEBUG,
                   "zk: a batch of %zu multis failed at part %zu (%s): sending those before it "
                   "again, canceling those after it",
                   cm->n_members, bad, zerror(cm->zres[bad].err));
    size_t k = 0;
    for (size_t j = 0; j < cm->n_members; j++) {
        zk_op *m = cm->members[j];
        size_t n = m->multi->n;
        bool before = bad != SIZE_MAX && k + n <= bad, after = bad != SIZE_MAX && k > bad;
        memcpy(m->multi->zres, cm->zres + k, n * sizeof(*cm->zres));
        k += n;
        m->carried = m->in_flight = false;
        m->gen = c->gen;
        m->sent_ns = c->sent_ns;
        m->attempts++;
        if (!before && !after) {
            m->batched = false;
            m->zrc = c->zrc;
            reign__zki_finish_op(zk, m);
        } else if (!m->cb) {
            reign__zki_free_op(zk, m);
        } else if (before) {
            batch_push(zk, m);
        } else {
            m->batched = false;
            deliver(zk, m, REIGN_ECANCELED);
        }
    }
    reign__zki_free_op(zk, c);
}

int reign__zk_check_and_set(reign__zk *zk, const char *check_path, const char *path,
                            const void *data, size_t len, int version, void *owner,
                            reign__zk_cb *cb, void *arg)
{
    reign__zk_mop ops[2] = {
        {.type = REIGN__ZK_MCHECK, .path = check_path, .version = -1},
        {.type = version == -2 ? REIGN__ZK_MCREATE : REIGN__ZK_MSET,
         .path = path,
         .data = data ? data : "",
         .len = len,
         .version = version == -2 ? -1 : version},
    };
    return reign__zk_multi(zk, ops, 2, owner, cb, arg);
}

void reign__zk_heartbeat(reign__zk *zk)
{
    if (zk->etcd) {
        reign__etcd_heartbeat(zk->etcd);
        return;
    }
    /* "/" exists under any chroot the server accepted. */
    start_op(zk, OP_SYNC, "/", NULL, NULL, 0, -1, 0, NULL, zk, NULL, NULL);
}

/* ---- owners: what each has, for forget() ---- */

static size_t owner_bucket(const reign__zk *zk, const void *owner)
{
    return (size_t)(((uint64_t)(uintptr_t)owner * 0x9E3779B97F4A7C15u) >> (64 - zk->owners_bits));
}

static void bucket_link(reign__zk *zk, owned *o)
{
    owned **head = &zk->owners[owner_bucket(zk, o->owner)];
    o->prev = NULL;
    o->next = *head;
    if (o->next)
        o->next->prev = o;
    *head = o;
}

/* Doubles the buckets; without memory the chains just grow longer. */
static void owners_grow(reign__zk *zk)
{
    owned **old = zk->owners;
    size_t n = (size_t)1 << zk->owners_bits;
    owned **b = reign__calloc(2 * n, sizeof(*b));
    if (!b)
        return;
    zk->owners = b;
    zk->owners_bits++;
    for (size_t i = 0; i < n; i++)
        for (owned *o = old[i], *next; o; o = next) {
            next = o->next;
            bucket_link(zk, o);
        }
    reign__free(old);
}

void reign__zki_own(reign__zk *zk, owned *o, void *owner, enum item_kind kind)
{
    o->owner = owner;
    o->kind = kind;
    if (zk->n_owned >= (size_t)1 << zk->owners_bits)
        owners_grow(zk);
    zk->n_owned++;
    bucket_link(zk, o);
}

void reign__zki_disown(reign__zk *zk, owned *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        zk->owners[owner_bucket(zk, o->owner)] = o->next;
    if (o->next)
        o->next->prev = o->prev;
    zk->n_owned--;
}

#define OWNER_OF(o, type) ((type *)(void *)((char *)(o)-offsetof(type, own)))

void reign__zk_seq_hint(reign__zk *zk, const char *dir)
{
    if (zk->etcd)
        reign__etcd_seq_hint(zk->etcd, dir);
}

void reign__zk_forget(reign__zk *zk, void *owner)
{
    if (zk->etcd) {
        reign__etcd_forget(zk->etcd, owner);
        return;
    }
    for (owned *o = zk->owners[owner_bucket(zk, owner)], *next; o; o = next) {
        next = o->next;
        if (o->owner != owner)
            continue;
        if (o->kind == ITEM_WATCH) {
            OWNER_OF(o, zk_watch)->cb = NULL;
        } else if (o->kind == ITEM_WAITER) {
            OWNER_OF(o, zk_waiter)->cb = NULL;
        } else {
            zk_op *op = OWNER_OF(o, zk_op);
            op->cb = NULL;
            op->wcb = NULL;
            if (op->parked) { /* not in the C client's hands: free it now */
                reign__timer_stop(zk->cfg.timers, &op->retry_timer);
                reign__zki_free_op(zk, op);
            }
        }
    }
}

void reign__zki_free_op(reign__zk *zk, zk_op *op)
{
    reign__zki_disown(zk, &op->own);
    if (op->flow && op->gen == zk->gen)
        zk->batch_out--; /* room for the next flush */
    if (op->prev)
        op->prev->next = op->next;
    else
        zk->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    reset_result(op);
    reign__free(op->path);
    free_multi(op->multi);
    reign__free(op->data);
    reign__free(op);
}

static void deliver(reign__zk *zk, zk_op *op, int rc)
{
    reign__zk_result r = {0};
    r.rc = rc;
    r.zrc = op->zrc;
    r.sent_ns = op->sent_ns;
    r.failed_op = op->failed_op;
    const struct Stat *st = op->has_stat ? &op->stat : NULL;
    if (op->type == OP_MULTI && rc == 0) {
        /* The stat of the last set, the names of the first and the last
         * create (a create inside a multi reports no stat: the caller
         * re-reads if it needs one). */
        const zk_multi *m = op->multi;
        for (size_t i = 0; i < m->n; i++) {
            if (m->ops[i].type == REIGN__ZK_MSET)
                st = &m->stats[i];
            if (m->ops[i].type == REIGN__ZK_MCREATE) {
                if (!r.value) {
                    r.value = m->created[i];
                    r.value_len = strlen(m->created[i]);
                }
                r.last_created = m->created[i];
            }
        }
    }
    if (st && rc == 0) {
        r.has_stat = true;
        r.stat = (reign__zk_stat){.czxid = st->czxid,
                                  .mzxid = st->mzxid,
                                  .ctime_ms = st->ctime,
                                  .mtime_ms = st->mtime,
                                  .version = st->version,
                                  .cversion = st->cversion,
                                  .ephemeral_owner = st->ephemeralOwner,
                                  .data_length = st->dataLength,
                                  .num_children = st->numChildren};
    }
    if (!r.value) {
        r.value = op->value;
        r.value_len = op->value_len;
    }
    r.children = op->children;
    r.n_children = op->n_children;
    reign__zk_cb *cb = op->cb;
    void *owner = op->own.owner, *arg = op->arg;
    /* Unlink before calling back: the callback may forget its owner. */
    op->cb = NULL;
    if (cb)
        cb(owner, arg, &r);
    reign__zki_free_op(zk, op);
}

void reign__zki_finish_op(reign__zk *zk, zk_op *op)
{
    if (op->type == OP_MULTI && op->multi->members) {
        finish_carrier(zk, op);
        return;
    }
    op->in_flight = false;
    int zrc = op->zrc;
    if (op->type == OP_MULTI && zrc != ZOK && !retryable(zrc)) {
        /* The first failing sub-operation says why. */
        for (size_t i = 0; i < op->multi->n; i++)
            if (op->multi->zres[i].err != ZOK && op->multi->zres[i].err != ZRUNTIMEINCONSISTENCY) {
                zrc = op->multi->zres[i].err;
                op->failed_op = (int)i;
                break;
            }
        op->zrc = zrc;
    }
    bool current = op->gen == zk->gen && !zk->closed;
    /* Registered watch bookkeeping: exists registers on OK and NONODE, the
     * others only on OK; a failed request registers nothing. */
    if (op->watch) {
        bool reg = zrc == ZOK || (op->type == OP_EXISTS && zrc == ZNONODE);
        op->watch->op_pending = false;
        if (!current)
            zk->sweep = true; /* its handle is closed: it may have fired and be queued
                                 behind us; the sweep at the end of the drain frees it if not */
        else if (reg)
            op->watch->registered = true;
        else
            reign__zki_free_watch(zk, op->watch); /* never registered, so it cannot fire */
        op->watch = NULL;
    }
    /* Liveness proof: writes and syncs go through the ensemble's leader. */
    bool proves = op->type != OP_GET && op->type != OP_EXISTS && op->type != OP_CHILDREN;
    if (current && proves && server_answered(zrc) && op->sent_ns > zk->last_ack_ns)
        zk->last_ack_ns = op->sent_ns;

    int rc = reign__zk_error(zrc);
    if (op->oom)
        rc = REIGN_ENOMEM;
    if (!current) {
        rc = zk->closed ? REIGN_ECLOSED : REIGN_ESESSION;
    } else if (retryable(zrc) && (op->flags & REIGN__ZK_RETRY) && op->cb) {
        int64_t now = reign__now_ns();
        int max = zk->cfg.retry_max < 0 ? 0 : zk->cfg.retry_max;
        if (op->attempts <= max && now < op->deadline_ns) {
            int64_t at = now + (int64_t)zk->cfg.retry_period_ms * REIGN__NS_PER_MS;
            if (at > op->deadline_ns)
                at = op->deadline_ns;
            op->parked = true;
            reign__log(zk->log, REIGN_LOG_DEBUG, "zk: %s on %s, retry %d/%d", zerror(zrc), op->path,
                       op->attempts, max);
            /* Re-sent at once when the connection comes back, else at `at`. */
            reign__timer_start(zk->cfg.timers, &op->retry_timer, zk->connected ? now : at);
            return;
        }
        if (now >= op->deadline_ns)
            rc = REIGN_ETIMEDOUT;
    }
    deliver(zk, op, rc);
}

void reign__zki_resend_parked(reign__zk *zk)
{
    int64_t now = reign__now_ns();
    for (zk_op *op = zk->ops; op; op = op->next)
        if (op->parked)
            reign__timer_start(zk->cfg.timers, &op->retry_timer, now);
}

void reign__zki_fail_parked(reign__zk *zk)
{
    /* Batched ones not sent yet belong to the session that ends: never let
     * them make (ephemeral) nodes in the next one. */
    int rc = zk->closed ? REIGN_ECLOSED : REIGN_ESESSION;
    for (zk_op *op; (op = batch_pop(zk));) {
        op->batched = false;
        deliver(zk, op, rc);
    }
    /* Those waiting now: one that waits again from its callback waits for the next session. */
    size_t n = 0;
    for (zk_waiter *w = zk->waiters; w; w = w->next)
        n++;
    for (zk_waiter *w; n-- && (w = waiter_pop(zk));) {
        if (w->cb)
            w->cb(w->own.owner, w->arg, rc);
        reign__free(w);
    }
    for (zk_op *op = zk->ops, *next; op; op = next) {
        next = op->next;
        if (op->parked) {
            reign__timer_stop(zk->cfg.timers, &op->retry_timer);
            op->parked = false;
            deliver(zk, op, zk->closed ? REIGN_ECLOSED : REIGN_ESESSION);
        }
    }
}
