/*
 * etcd_ops.c - zk.h's node operations on etcd (etcd_internal.h): each one a txn of
 * etcd_txn.c, sent in its scope's order, tried again on another member when it got no answer
 * and its caller allowed it, parked while there is no lease, and its result delivered to its
 * owner's callback once.  A read that watches registers its watch with the revision it was
 * answered at (etcd_watch.c).  A write that changed what one of the client's watches waits
 * for has its answer wait until that watch fired, so that a client hears of a change before
 * the answer of what it did next, as ZooKeeper orders them; and answers keep their order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

#define SCOPE_BUCKETS 1024
#define LINE_OPS_MAX  8                        /* operations of a line in one txn */
#define BATCH_MAX     64                       /* operations in one txn (etcd allows 128) */
#define BATCH_BYTES   (256 * 1024)             /* a txn's body, at most (etcd's limit: 1.5 MiB) */
#define HOLD_MAX_NS   (500 * REIGN__NS_PER_MS) /* a watch that lags longer is not waited for */

struct eop {
    etxn t; /* first: the txn's plan (etcd_txn.c) */
    eop *prev, *next;
    int flags;
    void *owner;
    reign__zk_cb *cb;
    void *arg;
    reign__zk_watch_cb *wcb;
    ereq *q;
    uint64_t gen;
    int attempts;
    bool waiting;             /* for a session, or for its retry timer */
    bool for_login;           /* refused for its token: waits while a login is out */
    bool blocked;             /* behind an earlier operation of its scope */
    int local_rc, local_part; /* decided without the store (decide()) */
    bool wide;                /* on several scopes, or above one: waits to be the oldest of all */
    uint64_t seq;             /* the order asked in */
    struct escope *scope;
    eop *snext;  /* the next in its scope's line (or the wide line) */
    cJSON *held; /* answered at held_rev, its answer waits for the watches it fires */
    int64_t held_rev, held_since;
    eop *hprev, *hnext; /* the held ones, in e->held */
    reign__timer retry_timer;
    struct ebatch *batch; /* out in this batch, its answer not yet handed to it */
    bool ready;           /* may go: sent at the end of the loop's turn (flush) */
    eop *rprev, *rnext;   /* the ready ones, in e->ready */
    int64_t sent_ns;      /* a batch's member: when the batch was sent */
};

/* Operations of one line sent as one txn, each a txn nested in it (etcd_ops.c, "Batches"). */
typedef struct ebatch {
    eop *m[BATCH_MAX];
    size_t n;
    ereq *q; /* out: the last member freed before the answer drops it, and the batch */
} ebatch;

/* ---- operations: life ----------------------------------------------------------------------- */

static void send_op(eop *op);
static void hold_timer(reign__etcd *e);

static void unhold(reign__etcd *e, eop *op)
{
    *(op->hprev ? &op->hprev->hnext : &e->held) = op->hnext;
    *(op->hnext ? &op->hnext->hprev : &e->held_tail) = op->hprev;
    op->hprev = op->hnext = NULL;
    e->n_held--;
}

/*
 * Order.  ZooKeeper applies a session's requests in the order they were sent, and the recipes
 * count on it ("create the node, then read the line": one round trip).  Requests to etcd
 * travel on several connections at once, so an operation waits until every earlier one of its
 * scope (etcd_internal.h: /reign/election/NAME) is answered.  An operation whose paths are all
 * in one scope waits in that scope's line; a read of a directory above the scopes waits for
 * nothing (a listing); any other operation is wide: it waits until it is the oldest of all,
 * and everything after it waits for it.  Operations on different elections go out together, as
 * ZooKeeper would pipeline them, and a line costs what is in it.
 */

typedef struct escope {
    struct escope *next; /* bucket chain */
    eop *head, *tail;    /* its line, oldest first (eop.snext) */
    char key[];
} escope;

/* path's scope: its length, or 0 if the path is above the scopes. */
static size_t scope_len(const char *path)
{
    size_t n = 0, i = 0;
    for (; path[i]; i++)
        if (path[i] == '/' && ++n > REIGN__ETCD_SCOPE_NAMES)
            return i;
    return n == REIGN__ETCD_SCOPE_NAMES ? i : 0;
}

static const char *path_at(const eop *op, size_t i)
{
    return op->t.type == EO_WRITE ? op->t.parts[i].path : op->t.path;
}

static escope **scope_slot(reign__etcd *e, const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    escope **b = (escope **)e->scopes + (h & (SCOPE_BUCKETS - 1));
    while (*b && (strncmp((*b)->key, key, len) || (*b)->key[len]))
        b = &(*b)->next;
    return b;
}

/* Puts op in its line (its scope's, or the wide one): 0, or REIGN_ENOMEM. */
static int line_up(eop *op)
{
    reign__etcd *e = op->t.e;
    op->seq = ++e->op_seq;
    size_t n = op->t.type == EO_WRITE ? op->t.n : 1, len = scope_len(path_at(op, 0));
    const char *key = path_at(op, 0);
    for (size_t i = 1; i < n && len; i++)
        if (scope_len(path_at(op, i)) != len || strncmp(path_at(op, i), key, len))
            len = 0;
    if (!e->scopes && !(e->scopes = reign__calloc(SCOPE_BUCKETS, sizeof(escope *))))
        return REIGN_ENOMEM;
    if (!len && (op->t.type != EO_WRITE ||
                 (n == 1 && op->t.parts[0].type == REIGN__ZK_MCREATE && reign__et_implicit(key))))
        return 0; /* a listing above the scopes, or a create of one (it is there): in no line */
    if (!len) {
        op->wide = true;
        *(e->wide_tail ? &e->wide_tail->snext : &e->wide_head) = op;
        e->wide_tail = op;
        return 0;
    }
    escope **slot = scope_slot(e, key, len);
    if (!*slot) {
        if (!(*slot = reign__calloc(1, sizeof(escope) + len + 1)))
            return REIGN_ENOMEM;
        memcpy((*slot)->key, key, len);
    }
    op->scope = *slot;
    *(op->scope->tail ? &op->scope->tail->snext : &op->scope->head) = op;
    op->scope->tail = op;
    return 0;
}

/* Takes op out of its line (a scope whose line empties goes): the next of its scope's line if
 * op was its first, else NULL. */
static eop *line_leave(eop *op)
{
    reign__etcd *e = op->t.e;
    eop **head = op->wide ? &e->wide_head : op->scope ? &op->scope->head : NULL;
    if (!head)
        return NULL;
    eop *prev = NULL;
    for (eop *o = *head; o && o != op; o = o->snext)
        prev = o;
    *(prev ? &prev->snext : head) = op->snext;
    eop *next = !prev && !op->wide ? op->snext : NULL;
    if (op->wide && e->wide_tail == op)
        e->wide_tail = prev;
    if (op->scope && op->scope->tail == op)
        op->scope->tail = prev;
    if (op->scope && !op->scope->head) {
        escope **slot = scope_slot(e, op->scope->key, strlen(op->scope->key));
        *slot = op->scope->next;
        reign__free(op->scope);
    }
    op->scope = NULL;
    op->snext = NULL;
    return next;
}

/* May op be sent now: first in its line, and behind no wide one (a wide one: the oldest)? */
static bool may_go(const eop *op)
{
    const reign__etcd *e = op->t.e;
    if (op->wide)
        return e->ops == op;
    if (!op->scope) /* in no line */
        return !e->wide_head || e->wide_head->seq > op->seq;
    return op->scope && op->scope->head == op && (!e->wide_head || e->wide_head->seq > op->seq);
}

static void unready(reign__etcd *e, eop *op)
{
    if (!op->ready)
        return;
    *(op->rprev ? &op->rprev->rnext : &e->ready) = op->rnext;
    *(op->rnext ? &op->rnext->rprev : &e->ready_tail) = op->rprev;
    op->rprev = op->rnext = NULL;
    op->ready = false;
}

/* Sends op at the end of this turn of the loop (with what follows it in its line, then), or
 * once the earlier ones of its scope are answered. */
static void go(eop *op)
{
    reign__etcd *e = op->t.e;
    if (op->batch || op->ready)
        return; /* out already, or about to go */
    if (e->closed || !may_go(op)) {
        op->blocked = true;
        return;
    }
    op->blocked = false;
    op->ready = true;
    op->rprev = e->ready_tail;
    *(e->ready_tail ? &e->ready_tail->rnext : &e->ready) = op;
    e->ready_tail = op;
    if (op == e->ready)
        reign__eh_wake(e); /* a turn, and its flush, comes */
}

/* After an operation left its line: who may go now (next: its scope's new first). */
static void unblock(reign__etcd *e, eop *next, bool was_wide)
{
    if (e->closed) /* nothing goes out any more: what waits fails where it is */
        return;
    if (next && next->blocked && may_go(next))
        go(next);
    if (e->wide_head && e->wide_head->blocked && may_go(e->wide_head))
        go(e->wide_head);
    if (was_wide) /* the lines it held back, up to the next wide one */
        for (eop *o = e->ops, *n; o && (!e->wide_head || o->seq < e->wide_head->seq); o = n) {
            n = o->next;
            if (o->blocked && may_go(o)) {
                go(o); /* may free others: look from the top */
                n = e->ops;
            }
        }
}

/* op leaves its batch before the answer came; the batch ends with its last member. */
static void batch_leave(ebatch *b, eop *op)
{
    bool left = false;
    for (size_t i = 0; i < b->n; i++) {
        if (b->m[i] == op)
            b->m[i] = NULL;
        left = left || b->m[i];
    }
    if (!left && b->q) { /* no answer is being handed out: nobody is left to take one */
        reign__eh_drop(b->q);
        reign__free(b);
    }
}

static void free_op(eop *op)
{
    reign__etcd *e = op->t.e;
    reign__timer_stop(e->cfg.timers, &op->retry_timer);
    if (op->q)
        reign__eh_drop(op->q);
    unready(e, op);
    if (op->batch)
        batch_leave(op->batch, op);
    if (op->held) {
        cJSON_Delete(op->held);
        unhold(e, op);
    }
    if (op->prev)
        op->prev->next = op->next;
    else if (e->ops == op)
        e->ops = op->next;
    if (op->next)
        op->next->prev = op->prev;
    else if (e->ops_tail == op)
        e->ops_tail = op->prev;
    for (size_t i = 0; i < op->t.n; i++) {
        reign__free((char *)op->t.parts[i].path);
        reign__free((void *)op->t.parts[i].data);
        reign__free(op->t.made[i]);
    }
    bool wide = op->wide;
    eop *next = line_leave(op);
    reign__free(op->t.parts);
    reign__free(op->t.path);
    reign__free(op);
    if (next || wide || (e->wide_head && e->wide_head->blocked))
        unblock(e, next, wide);
}

static void deliver(eop *op, reign__zk_result *r)
{
    reign__zk_cb *cb = op->cb;
    void *owner = op->owner, *arg = op->arg;
    op->cb = NULL;
    r->sent_ns = op->q ? op->q->sent_ns : op->sent_ns;
    if (cb)
        cb(owner, arg, r);
}

static void deliver_rc(eop *op, int rc)
{
    reign__zk_result r = {.rc = rc, .failed_op = -1};
    deliver(op, &r);
    free_op(op);
}

static void retry_cb(reign__timer *t, void *arg)
{
    (void)t;
    eop *op = arg;
    reign__etcd *e = op->t.e;
    if (op->for_login && e->auth && !e->closed) {
        /* Sent now it would go without a token and be refused again, a try spent for nothing. */
        reign__timer_start(e->cfg.timers, &op->retry_timer,
                           reign__now_ns() + 50 * REIGN__NS_PER_MS);
        return;
    }
    op->for_login = false;
    op->waiting = false;
    if (op->local_rc) { /* decided without the store: told from here, never from the call */
        reign__zk_result r = {.rc = op->local_rc, .failed_op = op->local_part};
        deliver(op, &r);
        free_op(op);
        return;
    }
    send_op(op);
}

/* The operation's result is decided here: delivered at the next turn of the loop. */
static void decide(eop *op, int rc, int part)
{
    op->local_rc = rc;
    op->local_part = part;
    op->waiting = true;
    reign__timer_start(op->t.e->cfg.timers, &op->retry_timer, reign__now_ns());
}

static eop *new_op(reign__etcd *e, enum eop_type type, int flags, void *owner, reign__zk_cb *cb,
                   void *arg)
{
    eop *op = reign__calloc(1, sizeof(*op));
    if (!op)
        return NULL;
    op->t.e = e;
    op->t.type = type;
    op->flags = flags;
    op->owner = owner;
    op->cb = cb;
    op->arg = arg;
    op->gen = e->gen;
    reign__timer_init(&op->retry_timer, retry_cb, op);
    for (size_t i = 0; i < REIGN__ZK_MULTI_MAX; i++)
        op->t.put_index[i] = -1;
    op->prev = e->ops_tail;
    if (e->ops_tail)
        e->ops_tail->next = op;
    else
        e->ops = op;
    e->ops_tail = op;
    return op;
}

/* Sends now if a session is there, else when one is. */
static int start(eop *op)
{
    reign__etcd *e = op->t.e;
    if (e->closed) {
        free_op(op);
        return REIGN_ECLOSED;
    }
    if (line_up(op) < 0) {
        free_op(op);
        return REIGN_ENOMEM;
    }
    if (!e->lease) { /* before the first lease, or between an expiry and the next */
        op->waiting = true;
        return 0;
    }
    go(op);
    return 0;
}

void reign__eo_resume(reign__etcd *e)
{
    for (eop *op = e->ops; op; op = op->next)
        if (op->waiting && !op->q && !reign__timer_armed(&op->retry_timer)) {
            op->waiting = false;
            op->gen = e->gen;
            go(op);
        }
}

void reign__eo_fail_all(reign__etcd *e, int rc, bool call)
{
    /* Those that wait have not been sent: they fail; those out are answered as they come. */
    for (eop *op = e->ops, *next; op; op = next) {
        next = op->next;
        if (!call)
            op->cb = NULL;
        if (op->waiting || !call || e->closed) {
            if (op->q) {
                reign__eh_drop(op->q);
                op->q = NULL;
            }
            deliver_rc(op, rc);
        }
    }
    for (ewait *w; (w = e->waiters);) {
        e->waiters = w->next;
        if (call && w->cb)
            w->cb(w->owner, w->arg, rc);
        reign__free(w);
    }
    e->waiters_tail = &e->waiters;
}

void reign__eo_free(reign__etcd *e)
{
    reign__timer_stop(e->cfg.timers, &e->hold_timer);
    while (e->ops) {
        e->ops->cb = NULL;
        free_op(e->ops);
    }
    for (ewait *w; (w = e->waiters);) {
        e->waiters = w->next;
        reign__free(w);
    }
    e->waiters_tail = &e->waiters;
    reign__et_seq_free(e);
    reign__free(e->scopes); /* every line left with its operations */
    e->scopes = NULL;
}

/* An attempt got no answer, or one to try elsewhere: again on the next member, or the end. */
static void failed_attempt(eop *op, int rc, const char *msg, size_t m)
{
    reign__etcd *e = op->t.e;
    reign__eh_next_member(e, m);
    e->trouble(e, m, msg);
    bool again = (op->flags & REIGN__ZK_RETRY) || op->t.type != EO_WRITE;
    if (again && op->attempts <= e->cfg.retry_max && !e->closed) {
        /* At once on another member; on the only one, after the retry period. */
        int64_t wait = e->n_members > 1 && op->attempts < (int)e->n_members
                           ? 0
                           : (int64_t)e->cfg.retry_period_ms * REIGN__NS_PER_MS;
        op->waiting = true;
        reign__timer_start(e->cfg.timers, &op->retry_timer, reign__now_ns() + wait);
        return;
    }
    deliver_rc(op, rc);
}

/* ---- sending and answers -------------------------------------------------------------------- */

static void read_done(eop *op, const cJSON *root)
{
    reign__etcd *e = op->t.e;
    reign__zk_result r = {.failed_op = -1};
    bool present;
    int64_t rev = reign__et_read(&op->t, root, &r, &present);
    /* A watch: on a node that is there, or on one to come (exists). */
    enum ew_kind k = op->t.type == EO_EXISTS ? EW_EXISTS
                     : op->t.type == EO_GET  ? EW_DATA
                                             : EW_CHILD;
    bool watched = op->wcb && op->gen == e->gen && (present || op->t.type == EO_EXISTS) &&
                   (r.rc == 0 || r.rc == REIGN_ENOENT);
    if (watched && reign__ew_add(e, k, op->t.path, rev, op->owner, op->wcb, op->arg) < 0)
        r.rc = REIGN_ENOMEM;
    deliver(op, &r);
    reign__et_result_free(&op->t, &r);
}

static void write_done(eop *op, const cJSON *root)
{
    reign__zk_result r;
    reign__et_write_ok(&op->t, root, &r);
    deliver(op, &r);
    free_op(op);
}

/* Does a write answered at op->held_rev fire a watch of this client that has not fired yet? */
static bool waits(const eop *op)
{
    const reign__etcd *e = op->t.e;
    if (!e->n_watches)
        return false;
    for (size_t i = 0; i < op->t.n; i++) {
        const reign__zk_mop *p = &op->t.parts[i];
        int type = p->type == REIGN__ZK_MCREATE   ? REIGN__ZK_CREATED
                   : p->type == REIGN__ZK_MDELETE ? REIGN__ZK_DELETED
                   : p->type == REIGN__ZK_MSET    ? REIGN__ZK_CHANGED
                                                  : 0;
        const char *path = op->t.made[i] ? op->t.made[i] : p->path;
        if (type && path && reign__ew_pending(e, path, type, op->held_rev))
            return true;
    }
    return false;
}

/* An answer that is not a txn's: an error of the store, or none (member m). */
static void answer_failed(eop *op, int rc, const char *msg, size_t m)
{
    reign__etcd *e = op->t.e;
    reign__log(e->log, REIGN_LOG_DEBUG, "etcd: %s", msg);
    if (reign__eh_transient(rc)) {
        failed_attempt(op, rc, msg, m);
        return;
    }
    if (rc == REIGN_EAUTH && e->cfg.user && op->attempts <= e->cfg.retry_max) {
        /* An expired token: a new one, and this again once it is there. */
        e->reauth(e);
        op->waiting = true;
        op->for_login = true;
        reign__timer_start(e->cfg.timers, &op->retry_timer,
                           reign__now_ns() + 50 * REIGN__NS_PER_MS);
        return;
    }
    if (rc == REIGN_ESESSION)
        e->lease_doubt(e);
    if (rc == REIGN_EBACKEND || rc == REIGN_EAUTH)
        snprintf(e->errmsg, sizeof(e->errmsg), "%s", msg);
    deliver_rc(op, rc);
}

/* The txn's answer: root is op's (kept while the answer waits for its events). */
static void answered(eop *op, cJSON *root)
{
    reign__etcd *e = op->t.e;
    if (op->t.type != EO_WRITE) {
        read_done(op, root);
        free_op(op);
    } else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "succeeded"))) {
        int64_t rev = reign__ej_i64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision");
        op->held_rev = rev;
        if (e->held || waits(op)) {
            /* Its own changes' watch events first, as ZooKeeper orders them. */
            op->held = root;
            op->held_since = reign__now_ns();
            op->hprev = e->held_tail;
            *(e->held_tail ? &e->held_tail->hnext : &e->held) = op;
            e->held_tail = op;
            e->n_held++;
            hold_timer(e);
            return;
        }
        write_done(op, root);
    } else {
        reign__zk_result r;
        if (reign__et_write_failed(&op->t, root, &r)) {
            send_op(op); /* beaten to a sequence number: the next one */
        } else {
            if (r.rc == REIGN_ESESSION)
                e->lease_doubt(e); /* the keepalive says so, and a new session starts */
            deliver(op, &r);
            free_op(op);
        }
    }
    cJSON_Delete(root);
}

static void on_answer(ereq *q, void *arg)
{
    eop *op = arg;
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    if (root)
        answered(op, root);
    else
        answer_failed(op, rc, msg, q->member);
}

static void hold_timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    reign__etcd *e = arg;
    reign__eo_release(e, false);
    if (e->n_held)
        hold_timer(e);
}

static void hold_timer(reign__etcd *e)
{
    if (!reign__timer_armed(&e->hold_timer))
        reign__timer_start(e->cfg.timers, &e->hold_timer, reign__now_ns() + 100 * REIGN__NS_PER_MS);
}

void reign__eo_init(reign__etcd *e)
{
    reign__timer_init(&e->hold_timer, hold_timer_cb, e);
}

void reign__eo_release(reign__etcd *e, bool all)
{
    int64_t now = reign__now_ns();
    for (eop *op = e->held, *next; op; op = next) {
        next = op->hnext;
        if (!all && now - op->held_since < HOLD_MAX_NS && waits(op))
            break; /* and those after it, in order */
        cJSON *root = op->held;
        op->held = NULL;
        unhold(e, op);
        write_done(op, root);
        cJSON_Delete(root);
        next = e->held; /* a callback may have changed the list: from the top (few are held) */
    }
}

static void send_op(eop *op)
{
    reign__etcd *e = op->t.e;
    if (op->gen != e->gen) {
        /* Asked in a session that expired while it waited (its line, a retry): ZooKeeper
         * fails it, and so does this; sent now it would act in the new session. */
        decide(op, REIGN_ESESSION, -1);
        return;
    }
    if (!op->q && !(op->q = reign__eh_new(e, on_answer, op))) {
        decide(op, REIGN_ENOMEM, -1);
        return;
    }
    op->q->ordinary = true;
    reign__buf_reset(&op->q->body);
    size_t bad = 0;
    int rc = 0;
    rc = reign__et_build(&op->t, &op->q->body, &bad);
    if (rc == 0 && op->q->body.oom)
        rc = REIGN_ENOMEM;
    if (rc < 0) {
        decide(op, rc, op->t.type == EO_WRITE ? (int)bad : -1);
        return;
    }
    op->attempts++;
    reign_trace("etcd.op", "%d %s %s", (int)op->t.type, op->t.n ? op->t.parts[0].path : op->t.path,
                op->t.n > 1 ? op->t.parts[op->t.n - 1].path : "");
    rc = reign__eh_send(e, op->q, "/v3/kv/txn", e->cfg.op_timeout_ms);
    if (rc < 0)
        decide(op, rc, -1);
}

/* ---- batches --------------------------------------------------------------------------------
 * ZooKeeper pipelines a session's requests: a resignation's three (its history record's end,
 * the leader node, its own node) cost one round trip, and a client in ten thousand elections
 * keeps the server busy with little framing.  Over the gateway every request pays for HTTP,
 * JSON and a raft entry of its own, so what may go at the end of a turn of the loop goes out
 * as few txns as will carry it, each operation a txn nested in one (BATCH_MAX of them): the
 * first of every line that may go, and behind each what stands in its line (LINE_OPS_MAX).
 * etcd applies them in order at one revision, each succeeding or failing on its own, and each
 * gets its own answer, as if it had gone alone.  But etcd judges every nested txn's
 * comparisons before it applies any of them, and refuses a txn in which two writes touch the
 * same key; and a watching read is answered with the batch's revision, after which its watch
 * starts.  So an operation does not join a batch when it compares or writes a key an earlier
 * member writes (a create under a node made just before it, two sequence creates in one
 * directory: both move its counter), or writes a key an earlier member reads with a watch (the
 * watch would start after the write it must hear of).  One of a line that cannot join waits,
 * with the rest of its line, for the answer of the one before it.
 */

typedef struct ekey {
    char *k, *end; /* a key (end NULL), or the range [k, end) */
    size_t kl, el;
} ekey;

static int keycmp(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static bool overlaps(const ekey *a, const ekey *b)
{
    const char *ae = a->end ? a->end : a->k, *be = b->end ? b->end : b->k;
    size_t ael = a->end ? a->el : a->kl, bel = b->end ? b->el : b->kl;
    /* [a.k, ae) against [b.k, be), where a key alone is [k, k]. */
    bool a_below_b = a->end ? keycmp(ae, ael, b->k, b->kl) <= 0 : keycmp(ae, ael, b->k, b->kl) < 0;
    bool b_below_a = b->end ? keycmp(be, bel, a->k, a->kl) <= 0 : keycmp(be, bel, a->k, a->kl) < 0;
    return !a_below_b && !b_below_a;
}

typedef struct ekeys {
    ekey *v;
    size_t n, cap;
} ekeys;

static bool add_key(ekeys *ks, const cJSON *w)
{
    if (ks->n == ks->cap) {
        size_t c = ks->cap ? ks->cap * 2 : 16;
        ekey *nv = reign__realloc(ks->v, c * sizeof(*nv));
        if (!nv)
            return false;
        ks->v = nv;
        ks->cap = c;
    }
    ekey *k = &ks->v[ks->n];
    *k = (ekey){0};
    if (!(k->k = reign__ej_bytes(w, "key", &k->kl)))
        return false;
    k->end = reign__ej_bytes(w, "range_end", &k->el);
    ks->n++;
    return true;
}

/* The keys a txn's body writes (in either branch) into w, those it compares into c, and those
 * it reads into r unless r is NULL (false: they could not all be read). */
static bool keys_of(const cJSON *txn, ekeys *w, ekeys *c, ekeys *r)
{
    const cJSON *cmp, *op;
    cJSON_ArrayForEach(cmp, cJSON_GetObjectItemCaseSensitive(txn, "compare"))
    {
        if (!add_key(c, cmp))
            return false;
    }
    static const char *const branches[] = {"success", "failure"};
    for (size_t b = 0; b < 2; b++)
        cJSON_ArrayForEach(op, cJSON_GetObjectItemCaseSensitive(txn, branches[b]))
        {
            const cJSON *nested = cJSON_GetObjectItemCaseSensitive(op, "request_txn");
            const cJSON *put = cJSON_GetObjectItemCaseSensitive(op, "request_put");
            const cJSON *del = cJSON_GetObjectItemCaseSensitive(op, "request_delete_range");
            const cJSON *range = r ? cJSON_GetObjectItemCaseSensitive(op, "request_range") : NULL;
            if ((nested && !keys_of(nested, w, c, r)) || (put && !add_key(w, put)) ||
                (del && !add_key(w, del)) || (range && !add_key(r, range)))
                return false;
        }
    return true;
}

/* Drops the keys after the first n. */
static void keys_cut(ekeys *ks, size_t n)
{
    while (ks->n > n) {
        ks->n--;
        reign__free(ks->v[ks->n].k);
        reign__free(ks->v[ks->n].end);
    }
}

/* Does a key of a[from..) overlap one of b[0..upto)? */
static bool meets(const ekeys *a, size_t from, const ekeys *b, size_t upto)
{
    for (size_t i = from; i < a->n; i++)
        for (size_t j = 0; j < upto; j++)
            if (overlaps(&a->v[i], &b->v[j]))
                return true;
    return false;
}

static void on_batch_answer(ereq *q, void *arg);

/* A batch as it is put together, at the end of a turn (reign__etcd_flush()). */
typedef struct ebuild {
    ebatch *b;                  /* its members: marked, so that one freed meanwhile leaves it */
    reign__buf body[BATCH_MAX]; /* each member's own txn, as send_op() builds it */
    size_t bytes;
    ekeys w, rw; /* the keys its members write, and those its watching reads read */
} ebuild;

static bool is_first(const eop *op)
{
    return !op->scope || op->scope->head == op;
}

/* op joins the batch: false if it cannot (the batch is full, its txn meets a key written or
 * watched before it, or it cannot be built), and nothing changed. */
static bool build_add(ebuild *bb, eop *op)
{
    if (!bb->b && !(bb->b = reign__calloc(1, sizeof(*bb->b))))
        return false;
    ebatch *b = bb->b;
    if (b->n == BATCH_MAX)
        return false;
    reign__buf *body = &bb->body[b->n];
    reign__buf_init(body);
    size_t bad = 0, wfrom = bb->w.n, rfrom = bb->rw.n;
    ekeys c = {0};
    int rc = reign__et_build(&op->t, body, &bad);
    cJSON *j = rc == 0 && !body->oom ? cJSON_ParseWithLength(body->data, body->len) : NULL;
    bool ok = j && (b->n == 0 || bb->bytes + body->len <= BATCH_BYTES) &&
              keys_of(j, &bb->w, &c, op->wcb ? &bb->rw : NULL) &&
              !meets(&bb->w, wfrom, &bb->w, wfrom) && !meets(&c, 0, &bb->w, wfrom) &&
              !meets(&bb->w, wfrom, &bb->rw, rfrom);
    cJSON_Delete(j);
    keys_cut(&c, 0);
    reign__free(c.v);
    if (!ok) { /* as it was */
        keys_cut(&bb->w, wfrom);
        keys_cut(&bb->rw, rfrom);
        reign__buf_free(body);
        return false;
    }
    bb->bytes += body->len;
    op->batch = b;
    b->m[b->n++] = op;
    return true;
}

/* op, then those waiting behind it in its line (a line's operations go in one batch, in
 * order, or wait for the ones before them): false if op itself could not join. */
static bool build_line(ebuild *bb, eop *op)
{
    reign__etcd *e = op->t.e;
    if (!build_add(bb, op))
        return false;
    size_t n = 1;
    if (op->scope)
        for (eop *o = op->snext; o && n < LINE_OPS_MAX; o = o->snext, n++) {
            if (!o->blocked || o->waiting || o->q || o->batch || o->ready || o->local_rc ||
                o->gen != e->gen || !build_add(bb, o))
                break;
        }
    return true;
}

/* Its members back where they were (each first of its line sent alone, the others blocked
 * behind it), before or instead of the batch's own sending. */
static void batch_undo(ebatch *b, bool sent)
{
    for (size_t i = 0; i < b->n; i++) {
        eop *op = b->m[i];
        if (!op)
            continue; /* freed meanwhile */
        b->m[i] = NULL;
        op->batch = NULL;
        if (sent)
            op->attempts--;
        op->blocked = !is_first(op) || op->t.e->closed;
        if (!op->blocked)
            send_op(op); /* its callback may free those after it: they leave b */
    }
}

/* Sends what was put together: one member alone, two or more as one txn of nested txns. */
static void build_send(ebuild *bb)
{
    ebatch *b = bb->b;
    size_t built = b ? b->n : 0, live = 0;
    reign__etcd *e = NULL;
    for (size_t i = 0; i < built; i++)
        if (b->m[i]) {
            live++;
            e = e ? e : b->m[i]->t.e;
        }
    ereq *q = live >= 2 && !e->closed ? reign__eh_new(e, on_batch_answer, b) : NULL;
    if (q) {
        q->ordinary = true;
        reign__buf_puts(&q->body, "{\"success\":[");
        size_t k = 0;
        for (size_t i = 0; i < built; i++) {
            if (!b->m[i])
                continue;
            reign__buf_puts(&q->body, k ? ",{\"request_txn\":" : "{\"request_txn\":");
            reign__buf_append(&q->body, bb->body[i].data, bb->body[i].len);
            reign__buf_puts(&q->body, "}");
            b->m[k++] = b->m[i];
        }
        b->n = k;
        reign__buf_puts(&q->body, "]}");
    }
    for (size_t i = 0; i < built; i++)
        reign__buf_free(&bb->body[i]);
    keys_cut(&bb->w, 0);
    keys_cut(&bb->rw, 0);
    bb->bytes = 0;
    bb->b = NULL;
    if (!b)
        return;
    if (!q || q->body.oom) { /* alone, then: send_op() builds each again */
        reign__eh_drop(q);
        batch_undo(b, false);
        reign__free(b);
        return;
    }
    reign_trace("etcd.batch", "%zu %s", b->n, b->m[0]->scope ? b->m[0]->scope->key : "");
    for (size_t i = 0; i < b->n; i++) {
        b->m[i]->blocked = false;
        b->m[i]->attempts++;
    }
    if (reign__eh_send(e, q, "/v3/kv/txn", e->cfg.op_timeout_ms) == 0) {
        b->q = q;
    } else {
        reign__eh_drop(q);
        batch_undo(b, true);
        reign__free(b);
    }
}

/* Member i of a batch's answer, as the answer to its own txn: the nested txn's answer under the
 * batch's header (its revision). */
static cJSON *member_answer(cJSON *root, size_t i)
{
    cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "responses");
    cJSON *r = cJSON_GetArrayItem(rs, (int)i);
    cJSON *txn = cJSON_GetObjectItemCaseSensitive(r, "response_txn");
    const cJSON *header = cJSON_GetObjectItemCaseSensitive(root, "header");
    if (!cJSON_IsObject(txn))
        return NULL;
    cJSON *own = cJSON_CreateObject();
    cJSON *h = cJSON_Duplicate(header, true);
    cJSON *parts = cJSON_DetachItemFromObjectCaseSensitive(txn, "responses");
    if (!own || !h || !cJSON_AddItemToObject(own, "header", h)) {
        cJSON_Delete(h);
        cJSON_Delete(parts);
        cJSON_Delete(own);
        return NULL;
    }
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(txn, "succeeded")))
        cJSON_AddTrueToObject(own, "succeeded");
    if (parts)
        cJSON_AddItemToObject(own, "responses", parts);
    return own;
}

static void on_batch_answer(ereq *q, void *arg)
{
    ebatch *b = arg;
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    size_t member = q->member;
    int64_t sent = q->sent_ns;
    reign__eh_drop(q);
    b->q = NULL; /* answering: members freed meanwhile leave the batch to this */
    reign__etcd *e = NULL;
    for (size_t i = 0; i < b->n; i++)
        if (b->m[i]) {
            b->m[i]->sent_ns = sent;
            e = e ? e : b->m[i]->t.e;
        }
    if (!root && rc == REIGN_EBACKEND && e && !e->no_batch) {
        /* etcd refused the batch itself (a limit, a key twice): each alone, from now on. */
        reign__log(e->log, REIGN_LOG_NOTICE, "etcd: a batch of txns refused (%s): one by one now",
                   msg);
        e->no_batch = true;
        batch_undo(b, true);
        reign__free(b);
        return;
    }
    /* In order; each member stays in the batch (go() leaves it be) until its own turn. */
    for (size_t i = 0; i < b->n; i++) {
        eop *op = b->m[i];
        if (!op)
            continue; /* freed meanwhile */
        op->batch = NULL;
        b->m[i] = NULL;
        if (!root) {
            bool again = (op->flags & REIGN__ZK_RETRY) || op->t.type != EO_WRITE;
            if (!is_first(op) && reign__eh_transient(rc) && again)
                op->blocked = true; /* it goes again when the one before it is answered */
            else
                answer_failed(op, rc, msg, member);
            continue;
        }
        cJSON *own = member_answer(root, i);
        if (own)
            answered(op, own);
        else
            deliver_rc(op, REIGN_EBACKEND);
    }
    cJSON_Delete(root);
    reign__free(b);
}

/* ---- the calls of zk.h ------------------------------------------------------------------------
 */

static void tell_ephemeral(reign__etcd *e, int flags)
{
    if ((flags & REIGN__ZK_EPHEMERAL) && !e->ephemeral_told) {
        e->ephemeral_told = true;
        if (e->cfg.on_ephemeral)
            e->cfg.on_ephemeral(e->cfg.state_arg);
    }
}

static bool path_ok(const char *path)
{
    return path && path[0] == '/' && strlen(path) < 1000;
}

static int write_op(reign__etcd *e, const reign__zk_mop *ops, size_t n, int flags, void *owner,
                    reign__zk_cb *cb, void *arg);

int reign__etcd_multi(reign__etcd *e, const reign__zk_mop *ops, size_t n, void *owner,
                      reign__zk_cb *cb, void *arg)
{
    return write_op(e, ops, n, 0, owner, cb, arg);
}

static int write_op(reign__etcd *e, const reign__zk_mop *ops, size_t n, int flags, void *owner,
                    reign__zk_cb *cb, void *arg)
{
    if (n == 0 || n > REIGN__ZK_MULTI_MAX)
        return REIGN_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!path_ok(ops[i].path))
            return REIGN_EINVAL;
    eop *op = new_op(e, EO_WRITE, flags & REIGN__ZK_RETRY, owner, cb, arg);
    if (!op || !(op->t.parts = reign__calloc(n, sizeof(*op->t.parts)))) {
        if (op)
            free_op(op);
        return REIGN_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        op->t.parts[i] = ops[i];
        op->t.parts[i].path = reign__strdup(ops[i].path);
        op->t.parts[i].data = ops[i].len ? reign__memdup(ops[i].data, ops[i].len) : NULL;
        op->t.n = i + 1;
        if (!op->t.parts[i].path || (ops[i].len && !op->t.parts[i].data)) {
            free_op(op);
            return REIGN_ENOMEM;
        }
        if (ops[i].type == REIGN__ZK_MCREATE)
            tell_ephemeral(e, ops[i].flags);
    }
    return start(op);
}

int reign__etcd_create(reign__etcd *e, const char *path, const void *data, size_t len, int flags,
                       void *owner, reign__zk_cb *cb, void *arg)
{
    reign__zk_mop m = {.type = REIGN__ZK_MCREATE,
                       .path = path,
                       .data = data,
                       .len = len,
                       .flags = flags & (REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE)};
    return write_op(e, &m, 1, flags & REIGN__ZK_SEQUENCE ? 0 : flags, owner, cb, arg);
}

int reign__etcd_delete(reign__etcd *e, const char *path, int version, int flags, void *owner,
                       reign__zk_cb *cb, void *arg)
{
    reign__zk_mop m = {.type = REIGN__ZK_MDELETE, .path = path, .version = version};
    return write_op(e, &m, 1, flags, owner, cb, arg);
}

int reign__etcd_set(reign__etcd *e, const char *path, const void *data, size_t len, int version,
                    int flags, void *owner, reign__zk_cb *cb, void *arg)
{
    reign__zk_mop m = {
        .type = REIGN__ZK_MSET, .path = path, .data = data, .len = len, .version = version};
    return write_op(e, &m, 1, flags, owner, cb, arg);
}

static int read_op(reign__etcd *e, enum eop_type type, const char *path, reign__zk_watch_cb *wcb,
                   int flags, void *owner, reign__zk_cb *cb, void *arg)
{
    if (!path_ok(path))
        return REIGN_EINVAL;
    eop *op = new_op(e, type, flags, owner, cb, arg);
    if (!op || !(op->t.path = reign__strdup(path))) {
        if (op)
            free_op(op);
        return REIGN_ENOMEM;
    }
    op->wcb = wcb;
    return start(op);
}

int reign__etcd_exists(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                       void *owner, reign__zk_cb *cb, void *arg)
{
    return read_op(e, EO_EXISTS, path, wcb, flags, owner, cb, arg);
}

int reign__etcd_get(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                    void *owner, reign__zk_cb *cb, void *arg)
{
    return read_op(e, EO_GET, path, wcb, flags, owner, cb, arg);
}

int reign__etcd_children(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                         void *owner, reign__zk_cb *cb, void *arg)
{
    return read_op(e, EO_CHILDREN, path, wcb, flags, owner, cb, arg);
}

int reign__etcd_batch_wait(reign__etcd *e, void *owner, reign__zk_ready_cb *cb, void *arg)
{
    if (e->closed)
        return REIGN_ECLOSED;
    ewait *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->owner = owner;
    w->cb = cb;
    w->arg = arg;
    if (!e->waiters_tail)
        e->waiters_tail = &e->waiters;
    *e->waiters_tail = w;
    e->waiters_tail = &w->next;
    reign__eh_wake(e);
    return 0;
}

void reign__etcd_flush(reign__etcd *e)
{
    /* What may go now, with what waits behind it in its line: as few txns as may carry it. */
    ebuild bb = {0};
    while (e->ready) {
        eop *op = e->ready;
        unready(e, op);
        if (op->q || op->batch || op->waiting)
            continue;
        if (e->closed || !may_go(op)) {
            op->blocked = true;
            continue;
        }
        if (e->no_batch || op->wide || op->local_rc || op->gen != e->gen) {
            send_op(op); /* alone: it may fail at once, and its callback free batched ones */
            continue;
        }
        if (build_line(&bb, op))
            continue;
        build_send(&bb); /* full, or op meets it: the next one starts with op */
        if (!build_line(&bb, op))
            send_op(op); /* it cannot be built: send_op() says why */
    }
    build_send(&bb);
    reign__free(bb.w.v);
    reign__free(bb.rw.v);
    /* Each batched multi is a txn of its own: the room is always there. */
    ewait *list = e->waiters;
    e->waiters = NULL;
    e->waiters_tail = &e->waiters;
    while (list) {
        ewait *w = list;
        list = w->next;
        if (w->cb)
            w->cb(w->owner, w->arg, e->closed ? REIGN_ECLOSED : 0);
        reign__free(w);
    }
}

static void on_counter(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    reign__eh_drop(q);
    const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(root, "kvs");
    if (cJSON_GetArraySize(kvs) == 1)
        reign__et_seq_seen(e, cJSON_GetArrayItem(kvs, 0));
    cJSON_Delete(root);
}

void reign__etcd_seq_hint(reign__etcd *e, const char *dir)
{
    if (e->closed || !e->lease || !path_ok(dir))
        return;
    char *key = reign__et_counter_key(e, dir);
    ereq *q = key ? reign__eh_new(e, on_counter, e) : NULL;
    if (q) {
        q->ordinary = true;
        reign__buf_puts(&q->body, "{\"key\":");
        reign__ej_b64(&q->body, key, strlen(key));
        reign__buf_puts(&q->body, "}");
        if (reign__eh_send(e, q, "/v3/kv/range", e->cfg.op_timeout_ms) < 0)
            reign__eh_drop(q); /* a hint: the claim finds the counter out itself */
    }
    reign__free(key);
}

void reign__etcd_forget(reign__etcd *e, void *owner)
{
    for (eop *op = e->ops; op; op = op->next)
        if (op->owner == owner) {
            op->cb = NULL;
            op->wcb = NULL;
        }
    for (ewait *w = e->waiters; w; w = w->next)
        if (w->owner == owner)
            w->cb = NULL;
    reign__ew_forget(e, owner);
}
