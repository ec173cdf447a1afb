/*
 * zk.c - the ZooKeeper backend (see zk.h for the contract).
 *
 * Threads: the C client (libzookeeper_mt) runs an I/O thread and a
 * completion thread.  Our completion functions and watchers run on the
 * latter; they touch only the operation they were handed (which the C client
 * owns until it calls back), a watch record allocated for that one event, or
 * the handle's state ring, then push onto the queue under `mu` and write the
 * eventfd.  Everything else here runs on the loop thread.
 *
 * Ordering: ZooKeeper delivers, per session, results and watch events in the
 * order the server produced them; the completion thread preserves it and the
 * queue is FIFO, so a recipe sees e.g. "node deleted" before the result of a
 * later request that depends on it.
 *
 * Chroot: when the host list names one ("h:p/app/x"), the first session is
 * opened without it and makes each missing component with the client's ACL
 * (as Curator does with its namespace), then closes; only then is the real,
 * chrooted session opened.  Requests made meanwhile wait, parked, and go
 * out on the real session.  It costs one more session at start; a chroot
 * that exists costs one read on it.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include "zk.h"

/* An operation of the chroot's preparation (beside the REIGN__ZK_* flags). */
#define PREP_OP 0x100

/* How often the C client may resolve the server names again. */
#define RESOLUTION_DELAY_MS 60000

enum item_kind { ITEM_OP = 1, ITEM_WATCH, ITEM_STATE };

typedef struct item {
    struct item *next;
    enum item_kind kind;
} item;

enum op_type { OP_CREATE, OP_DELETE, OP_EXISTS, OP_GET, OP_CHILDREN, OP_SET, OP_MULTI, OP_SYNC };

typedef struct zk_watch zk_watch;

typedef struct zk_op {
    item it; /* must be first */
    reign__zk *zk;
    enum op_type type;
    int flags;
    char *path;
    char *data;
    size_t len;
    int version;
    void *owner;
    reign__zk_cb *cb; /* NULL once forgotten */
    void *arg;
    reign__zk_watch_cb *wcb;
    uint64_t gen; /* generation of the attempt in flight */
    int attempts;
    int64_t deadline_ns;
    int64_t sent_ns;
    bool in_flight; /* the C client owns it until it calls back */
    bool parked;    /* waiting for a retry */
    reign__timer retry_timer;
    struct zk_op *prev, *next; /* zk->ops: every op not yet delivered */
    zk_watch *watch;           /* the watch this attempt registers */
    /* result, written by the completion thread */
    int zrc;
    int failed_op;
    bool oom;
    bool has_stat;
    struct Stat stat;
    char *value;
    size_t value_len;
    char **children;
    size_t n_children;
    struct zk_multi *multi; /* OP_MULTI */
    bool batched;           /* a batched multi: waits in zk->batch until the flush */
    bool carried;           /* ... sent inside a carrier, which owns the attempt */
    struct zk_op *bnext;    /* zk->batch */
} zk_op;

/*
 * A multi's parts, owned copies (allocated apart: most requests are not
 * multis), in one block sized to them.  A carrier (see "batched multis")
 * owns no parts: its zops point into its members' copies, and it keeps the
 * members in order.
 */
typedef struct zk_multi {
    size_t n;
    reign__zk_mop *ops;
    zoo_op_t *zops;
    zoo_op_result_t *zres;
    struct Stat *stats;
    char **created; /* creates: the path made (path + sequence) */
    size_t *created_len;
    struct zk_op **members; /* a carrier's batched multis */
    size_t n_members;
} zk_multi;

struct zk_watch {
    item it; /* queued when it fires (it fires at most once) */
    reign__zk *zk;
    uint64_t gen;
    void *owner;
    reign__zk_watch_cb *cb; /* NULL once forgotten */
    void *arg;
    char *path;
    int ev_type;     /* set by the completion thread */
    bool registered; /* the server may fire it */
    bool op_pending; /* still referenced by the request that registers it */
    zk_watch *prev, *next;
};

/* One per ZooKeeper handle: the global watcher's context. */
#define STATE_RING 16
typedef struct handle_ctx {
    item it;
    reign__zk *zk;
    uint64_t gen;
    bool queued;          /* under zk->mu */
    int ring[STATE_RING]; /* states not yet seen by the loop, under zk->mu */
    unsigned head, count;
} handle_ctx;

struct reign__zk {
    reign__zk_config cfg;
    char *hosts;
    char *auth; /* "user:password" or NULL */
    const reign__logger *log;
    zhandle_t *zh;
    handle_ctx *hctx;
    uint64_t gen;
    bool connected;
    bool had_session; /* this generation has been connected once */
    bool closed;
    bool ephemeral_told; /* cfg.on_ephemeral was called */
    bool sweep;         /* watches of a closed handle may await freeing (see the end of dispatch) */
    bool auth_added;    /* credentials handed to this handle */
    char *root_hosts;   /* hosts without the chroot, NULL if there is none */
    const char *chroot; /* inside hosts: "/app/x", or NULL */
    bool preparing;     /* the handle is the root one, making the chroot */
    size_t prep_len;    /* the prefix of chroot being made, 0: check it whole */
    bool prep_busy;     /* a request of the preparation is out */
    reign__timer prep_timer;
    int64_t session_id;
    int timeout_ms;
    int64_t last_ack_ns;
    pthread_mutex_t mu;
    item *q_head, *q_tail;
    zk_op *ops;
    zk_op *batch, **batch_tail; /* batched multis not sent yet, in order */
    zk_watch *watches;
    handle_ctx *dead_ctx; /* closed handle whose context awaits the drain */
    reign__timer reinit_timer;
    struct ACL acl_entries[2];
    struct ACL_vector acl;
    char errmsg[256];
};

/* ---- hand-off (any thread) ---------------------------------------------- */

/* The loop is woken only when the queue was empty: reign__zk_dispatch() drains it to the end,
 * so an item queued behind others is taken in the same drain (a system call per completion
 * cost more than the rest of the hand-off). */
static void push(reign__zk *zk, item *it)
{
    it->next = NULL;
    pthread_mutex_lock(&zk->mu);
    bool was_empty = !zk->q_head;
    if (zk->q_tail)
        zk->q_tail->next = it;
    else
        zk->q_head = it;
    zk->q_tail = it;
    pthread_mutex_unlock(&zk->mu);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t w = write(zk->cfg.wake_fd, &one, sizeof(one));
        (void)w; /* EAGAIN: the counter is already non-zero, the loop will wake */
    }
}

static item *pop(reign__zk *zk)
{
    pthread_mutex_lock(&zk->mu);
    item *it = zk->q_head;
    if (it) {
        zk->q_head = it->next;
        if (!zk->q_head)
            zk->q_tail = NULL;
    }
    pthread_mutex_unlock(&zk->mu);
    return it;
}

/* ---- completion thread -------------------------------------------------- */

static const char *const op_names[] = {
    [OP_CREATE] = "create",     [OP_DELETE] = "delete", [OP_EXISTS] = "exists", [OP_GET] = "get",
    [OP_CHILDREN] = "children", [OP_SET] = "set",       [OP_MULTI] = "multi",   [OP_SYNC] = "sync",
};

static const char *op_name(const zk_op *op)
{
    return (size_t)op->type < sizeof(op_names) / sizeof(op_names[0]) && op_names[op->type]
               ? op_names[op->type]
               : "op";
}

static void done(const void *data, int rc)
{
    zk_op *op = (zk_op *)data;
    op->zrc = rc;
    reign_trace("zk.answer", "%s %s %d", op_name(op), op->path, rc);
    push(op->zk, &op->it);
}

static void on_void(int rc, const void *data)
{
    done(data, rc);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    done(data, rc);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        op->value = reign__memdup(value ? value : "", len > 0 ? (size_t)len : 0);
        op->value_len = len > 0 ? (size_t)len : 0;
        if (!op->value)
            op->oom = true;
    }
    done(data, rc);
}

static void on_string_stat(int rc, const char *value, const struct Stat *stat, const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        if (value) {
            op->value = reign__strdup(value);
            op->value_len = strlen(value);
            if (!op->value)
                op->oom = true;
        }
    }
    done(data, rc);
}

static void on_string(int rc, const char *value, const void *data)
{
    on_string_stat(rc, value, NULL, data);
}

static void on_children(int rc, const struct String_vector *sv, const struct Stat *stat,
                        const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        size_t n = sv ? (size_t)sv->count : 0, bytes = 0;
        for (size_t i = 0; i < n; i++)
            bytes += strlen(sv->data[i]) + 1;
        /* One block: the pointer array, then the strings. */
        char **v = reign__malloc(n * sizeof(char *) + bytes);
        if (!v) {
            op->oom = true;
        } else {
            char *p = (char *)(v + n);
            for (size_t i = 0; i < n; i++) {
                size_t l = strlen(sv->data[i]) + 1;
                memcpy(p, sv->data[i], l);
                v[i] = p;
                p += l;
            }
            op->children = v;
            op->n_children = n;
        }
    }
    done(data, rc);
}

static void on_node_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    /* The C client also hands session events to every node watcher; the
     * global watcher deals with those, and they do not consume the watch. */
    if (type == ZOO_SESSION_EVENT || type == ZOO_NOTWATCHING_EVENT)
        return;
    zk_watch *w = ctx;
    w->ev_type = type;
    reign_trace("zk.event", "%d %s", type, path ? path : "");
    push(w->zk, &w->it);
}

static void on_session_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    if (type != ZOO_SESSION_EVENT)
        return;
    handle_ctx *h = ctx;
    reign__zk *zk = h->zk;
    bool need_push = false;
    pthread_mutex_lock(&zk->mu);
    if (h->count == STATE_RING) { /* keep the newest states; the oldest are history */
        h->head = (h->head + 1) % STATE_RING;
        h->count--;
    }
    h->ring[(h->head + h->count++) % STATE_RING] = state;
    if (!h->queued) {
        h->queued = true;
        need_push = true;
    }
    pthread_mutex_unlock(&zk->mu);
    if (need_push)
        push(zk, &h->it);
}

static void zk_log_cb(const char *msg)
{
    /* The C client's own messages: useful only when debugging. */
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        n--;
    reign__log(NULL, REIGN_LOG_DEBUG, "zookeeper: %.*s", (int)n, msg);
}

/* ---- errors ------------------------------------------------------------- */

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

/* ---- handles ------------------------------------------------------------ */

static void seterr(reign__zk *zk, const char *fmt, ...) REIGN__PRINTF(2, 3);
static void seterr(reign__zk *zk, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(zk->errmsg, sizeof(zk->errmsg), fmt, ap);
    va_end(ap);
}

static int add_auth(reign__zk *zk)
{
    if (!zk->auth || zk->auth_added || !zk->zh)
        return 0;
    int rc = zoo_add_auth(zk->zh, "digest", zk->auth, (int)strlen(zk->auth), NULL, NULL);
    if (rc == ZOK) {
        zk->auth_added = true;
        return 0;
    }
    if (rc == ZINVALIDSTATE)
        return 0;
    seterr(zk, "cannot add digest credentials: %s", zerror(rc));
    return REIGN_EAUTH;
}

/*
 * Why the C client would not start on `hosts` ("h1:p1,h2:p2[/chroot]"): it
 * resolves every host at once and reports a name that does not resolve
 * with a bare errno (ENOENT, EINVAL), which reads as "No such file or
 * directory".  So resolve each host again to name the one at fault and
 * getaddrinfo's reason; NULL if they all resolve.
 */
static const char *unresolved_host(const char *hosts, char *out, size_t outlen)
{
    size_t end = strcspn(hosts, "/");
    for (size_t i = 0; i < end;) {
        size_t n = strcspn(hosts + i, ",/");
        char hp[300], *host = hp, *port;
        snprintf(hp, sizeof(hp), "%.*s", (int)(n < sizeof(hp) ? n : sizeof(hp) - 1), hosts + i);
        i += n + 1;
        if (hp[0] == '[') { /* [v6]:port */
            char *close = strchr(hp, ']');
            if (!close)
                continue;
            *close = '\0';
            host = hp + 1;
            port = close[1] == ':' ? close + 2 : NULL;
        } else {
            port = strrchr(hp, ':');
            if (port)
                *port++ = '\0';
        }
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof(hints));
        hints.ai_socktype = SOCK_STREAM;
        int g = getaddrinfo(host, port && *port ? port : "2181", &hints, &res);
        if (g == 0) {
            freeaddrinfo(res);
            continue;
        }
        snprintf(out, outlen, "host '%s' does not resolve: %s", host,
                 g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        return out;
    }
    return NULL;
}

static int open_handle(reign__zk *zk)
{
    handle_ctx *h = reign__calloc(1, sizeof(*h));
    if (!h)
        return REIGN_ENOMEM;
    h->it.kind = ITEM_STATE;
    h->zk = zk;
    h->gen = ++zk->gen;
    zk->sweep = true;
    zk->connected = false;
    zk->had_session = false;
    zk->session_id = 0;
    zk->last_ack_ns = 0;
    errno = 0;
    zhandle_t *zh = zookeeper_init2(zk->preparing ? zk->root_hosts : zk->hosts, on_session_event,
                                    zk->cfg.session_timeout_ms, NULL, h, 0, zk_log_cb);
    if (!zh) {
        int e = errno;
        char why[400];
        reign__free(h);
        const char *bad = unresolved_host(zk->hosts, why, sizeof(why));
        seterr(zk, "cannot start a ZooKeeper client for '%s': %s", zk->hosts,
               bad           ? bad
               : e == EINVAL ? "the host list is malformed"
                             : strerror(e ? e : EIO));
        return REIGN_ECONNECT;
    }
    zk->zh = zh;
    zk->hctx = h;
    zk->auth_added = false;
    /* Without a delay the C client resolves the host list again on every turn of its I/O
     * loop (getaddrinfo was 18% of a busy client's CPU); once a minute follows DNS changes. */
    zoo_set_servers_resolution_delay(zh, RESOLUTION_DELAY_MS);
    /* The C client refuses credentials while its I/O thread is between
     * two connection attempts (ZINVALIDSTATE); then they are added when the
     * session is established, before any recipe can write. */
    return add_auth(zk);
}

static void free_op(reign__zk *zk, zk_op *op);
static void deliver(reign__zk *zk, zk_op *op, int rc);

/*
 * Closes the current handle.  Afterwards the C client's threads are gone:
 * everything it will ever hand over is in our queue (pending requests come
 * back with ZCLOSING).  Watches of the old generation are dropped when the
 * queue is next drained.
 */
static void close_handle(reign__zk *zk)
{
    if (!zk->zh)
        return;
    zhandle_t *zh = zk->zh;
    zk->zh = NULL;
    zk->connected = false;
    zookeeper_close(zh);
    /* The context may still sit in the queue: free it after the drain. */
    if (zk->dead_ctx && !zk->dead_ctx->queued)
        reign__free(zk->dead_ctx);
    zk->dead_ctx = zk->hctx;
    zk->hctx = NULL;
}

static void reinit_cb(reign__timer *t, void *arg)
{
    reign__zk *zk = arg;
    if (zk->closed || zk->zh)
        return;
    int rc = open_handle(zk);
    if (rc < 0) {
        reign__log(zk->log, REIGN_LOG_WARN, "%s; retrying", zk->errmsg);
        reign__timer_start(zk->cfg.timers, &zk->reinit_timer,
                           reign__now_ns() + (int64_t)zk->cfg.retry_period_ms * REIGN__NS_PER_MS);
    }
}

static void prep_timer_cb(reign__timer *t, void *arg);

int reign__zk_new(reign__zk **ret, const reign__zk_config *cfg, char *err, size_t errlen)
{
    *ret = NULL;
    reign__zk *zk = reign__calloc(1, sizeof(*zk));
    if (!zk)
        return REIGN_ENOMEM;
    zk->cfg = *cfg;
    zk->log = cfg->log;
    pthread_mutex_init(&zk->mu, NULL);
    reign__timer_init(&zk->reinit_timer, reinit_cb, zk);
    zk->hosts = reign__strdup(cfg->hosts);
    reign__timer_init(&zk->prep_timer, prep_timer_cb, zk);
    size_t cut = zk->hosts ? strcspn(zk->hosts, "/") : 0;
    if (zk->hosts && zk->hosts[cut] && zk->hosts[cut + 1]) {
        zk->chroot = zk->hosts + cut;
        zk->preparing = true;
        if (!(zk->root_hosts = reign__malloc(cut + 1))) {
            reign__zk_free(zk);
            return REIGN_ENOMEM;
        }
        memcpy(zk->root_hosts, zk->hosts, cut);
        zk->root_hosts[cut] = '\0';
    }
    if (cfg->user) {
        size_t n = strlen(cfg->user) + strlen(cfg->password ? cfg->password : "") + 2;
        zk->auth = reign__malloc(n);
        if (zk->auth)
            snprintf(zk->auth, n, "%s:%s", cfg->user, cfg->password ? cfg->password : "");
    }
    if (!zk->hosts || (cfg->user && !zk->auth)) {
        reign__zk_free(zk);
        return REIGN_ENOMEM;
    }
    if (cfg->user) {
        /* Holders of the credentials may do anything, everyone else may read. */
        zk->acl_entries[0] = (struct ACL){.perms = ZOO_PERM_ALL, .id = ZOO_AUTH_IDS};
        zk->acl_entries[1] = (struct ACL){.perms = ZOO_PERM_READ, .id = ZOO_ANYONE_ID_UNSAFE};
        zk->acl = (struct ACL_vector){.count = 2, .data = zk->acl_entries};
    } else {
        zk->acl = ZOO_OPEN_ACL_UNSAFE;
    }
    zoo_set_debug_level(reign__log_enabled(NULL, REIGN_LOG_DEBUG) ? ZOO_LOG_LEVEL_INFO
                                                                  : ZOO_LOG_LEVEL_ERROR);
    int rc = open_handle(zk);
    if (rc < 0) {
        close_handle(zk);
        reign__strlcpy(err, zk->errmsg, errlen);
        reign__zk_free(zk);
        return rc;
    }
    *ret = zk;
    return 0;
}

/* ---- operations (loop thread) ------------------------------------------- */

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
    w->owner = op->owner;
    w->cb = op->wcb;
    w->arg = op->arg;
    w->op_pending = true;
    w->next = zk->watches;
    if (w->next)
        w->next->prev = w;
    zk->watches = w;
    return w;
}

static void free_watch(reign__zk *zk, zk_watch *w)
{
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
    return rc != ZOK ? rc : zoo_amulti(zk->zh, (int)m->n, m->zops, m->zres, on_void, op);
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
        wfn = on_node_event;
    }
    const struct ACL_vector *acl = &zk->acl;
    int mode = mode_of(op->flags);
    switch (op->type) {
    case OP_CREATE:
        rc = zoo_acreate2(zk->zh, op->path, op->data, (int)op->len, acl, mode, on_string_stat, op);
        break;
    case OP_DELETE:
        rc = zoo_adelete(zk->zh, op->path, op->version, on_void, op);
        break;
    case OP_EXISTS:
        rc = zoo_awexists(zk->zh, op->path, wfn, op->watch, on_stat, op);
        break;
    case OP_GET:
        rc = zoo_awget(zk->zh, op->path, wfn, op->watch, on_data, op);
        break;
    case OP_CHILDREN:
        rc = zoo_awget_children2(zk->zh, op->path, wfn, op->watch, on_children, op);
        break;
    case OP_SET:
        rc = zoo_aset(zk->zh, op->path, op->data, (int)op->len, op->version, on_stat, op);
        break;
    case OP_MULTI:
        rc = issue_multi(zk, op->multi, acl, op);
        break;
    case OP_SYNC:
        rc = zoo_async(zk->zh, op->path, on_string, op);
        break;
    default:
        rc = ZBADARGUMENTS;
    }
    reign_trace("zk.send", "%s %s", op_name(op), op->path);
    if (rc == ZOK)
        return;
failed:
    if (op->watch) {
        free_watch(zk, op->watch);
        op->watch = NULL;
    }
    op->zrc = rc;
    push(zk, &op->it);
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
    op->owner = owner;
    op->cb = cb;
    op->arg = arg;
    op->failed_op = -1;
    reign__timer_init(&op->retry_timer, retry_cb, op);
    return op;
}

/* Into zk->ops, the operations not yet delivered (what forget() and close look at). */
static void link_op(reign__zk *zk, zk_op *op)
{
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
    return start_op(zk, OP_CREATE, path, NULL, data ? data : "", len, -1, flags, NULL, owner, cb,
                    arg);
}

int reign__zk_delete(reign__zk *zk, const char *path, int version, int flags, void *owner,
                     reign__zk_cb *cb, void *arg)
{
    return start_op(zk, OP_DELETE, path, NULL, NULL, 0, version, flags, NULL, owner, cb, arg);
}

int reign__zk_exists(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                     void *owner, reign__zk_cb *cb, void *arg)
{
    return start_op(zk, OP_EXISTS, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_get(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags, void *owner,
                  reign__zk_cb *cb, void *arg)
{
    return start_op(zk, OP_GET, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_children(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                       void *owner, reign__zk_cb *cb, void *arg)
{
    return start_op(zk, OP_CHILDREN, path, NULL, NULL, 0, -1, flags, wcb, owner, cb, arg);
}

int reign__zk_set(reign__zk *zk, const char *path, const void *data, size_t len, int version,
                  int flags, void *owner, reign__zk_cb *cb, void *arg)
{
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
    if (n == 0 || n > REIGN__ZK_MULTI_MAX)
        return REIGN_EINVAL;
    zk_multi *m = copy_multi(ops, n);
    int rc = !m ? REIGN_ENOMEM
                : start_op(zk, OP_MULTI, ops[0].path, m, NULL, 0, -1, 0, NULL, owner, cb, arg);
    if (rc < 0)
        free_multi(m);
    return rc;
}

/* ---- batched multis ------------------------------------------------------
 *
 * A carrier is an internal operation that sends the batched multis of a
 * loop turn as one multi: one request instead of many, which is what a
 * ZooKeeper server spends most of its time on (a part of a multi costs it a
 * fraction of a request).  Bounded well below the server's default
 * jute.maxbuffer (1 MiB).
 */
#define CARRIER_MAX_OPS   512
#define CARRIER_MAX_BYTES (256 * 1024)

static size_t multi_bytes(const zk_multi *m)
{
    size_t b = 0;
    for (size_t i = 0; i < m->n; i++)
        b += strlen(m->ops[i].path) + m->ops[i].len + 64; /* + header, ACL, version */
    return b;
}

int reign__zk_multi_batched(reign__zk *zk, const reign__zk_mop *ops, size_t n, void *owner,
                            reign__zk_cb *cb, void *arg)
{
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
        /* Called outside the loop, maybe: make sure a turn comes to flush it. */
        uint64_t one = 1;
        ssize_t w = write(zk->cfg.wake_fd, &one, sizeof(one));
        (void)w;
    }
    *zk->batch_tail = op;
    zk->batch_tail = &op->bnext;
    return 0;
}

static zk_op *batch_pop(reign__zk *zk)
{
    zk_op *op = zk->batch;
    if (op) {
        zk->batch = op->bnext;
        op->bnext = NULL;
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
}

void reign__zk_flush(reign__zk *zk)
{
    while (zk->batch) {
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
                free_op(zk, op);
            } else if (cm) {
                op->carried = true;
                op->in_flight = true;
                cm->members[j++] = op;
            } else {
                op->batched = false;
                issue(zk, op);
            }
            if (end || !last)
                break;
        }
        if (!cm)
            continue;
        c->multi = cm;
        link_op(zk, c);
        issue(zk, c);
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
static void finish_op(reign__zk *zk, zk_op *op);

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
            finish_op(zk, m);
        } else if (!m->cb) {
            free_op(zk, m);
        } else if (before) {
            batch_push(zk, m);
        } else {
            m->batched = false;
            deliver(zk, m, REIGN_ECANCELED);
        }
    }
    free_op(zk, c);
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
    /* "/" exists under any chroot the server accepted. */
    start_op(zk, OP_SYNC, "/", NULL, NULL, 0, -1, 0, NULL, zk, NULL, NULL);
}

void reign__zk_forget(reign__zk *zk, void *owner)
{
    for (zk_op *op = zk->ops, *next; op; op = next) {
        next = op->next;
        if (op->owner != owner)
            continue;
        op->cb = NULL;
        op->wcb = NULL;
        if (op->parked) { /* not in the C client's hands: free it now */
            reign__timer_stop(zk->cfg.timers, &op->retry_timer);
            free_op(zk, op);
        }
    }
    for (zk_watch *w = zk->watches; w; w = w->next)
        if (w->owner == owner)
            w->cb = NULL;
}

static void free_op(reign__zk *zk, zk_op *op)
{
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

/* ---- the loop side ------------------------------------------------------ */

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
    void *owner = op->owner, *arg = op->arg;
    /* Unlink before calling back: the callback may forget its owner. */
    op->cb = NULL;
    if (cb)
        cb(owner, arg, &r);
    free_op(zk, op);
}

static void finish_op(reign__zk *zk, zk_op *op)
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
            free_watch(zk, op->watch); /* never registered, so it cannot fire */
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

static void resend_parked(reign__zk *zk)
{
    int64_t now = reign__now_ns();
    for (zk_op *op = zk->ops; op; op = op->next)
        if (op->parked)
            reign__timer_start(zk->cfg.timers, &op->retry_timer, now);
}

static void fail_parked(reign__zk *zk)
{
    /* Batched ones not sent yet belong to the session that ends: never let
     * them make (ephemeral) nodes in the next one. */
    for (zk_op *op; (op = batch_pop(zk));) {
        op->batched = false;
        deliver(zk, op, zk->closed ? REIGN_ECLOSED : REIGN_ESESSION);
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

static void tell(reign__zk *zk, reign__zk_state st)
{
    if (zk->cfg.on_state)
        zk->cfg.on_state(zk->cfg.state_arg, st);
}

/* ---- the chroot's preparation (see the top of the file) ---------------- */

static void prep_step(reign__zk *zk, bool recheck);

/* The end of the component of the chroot after `len` characters. */
static size_t next_component(const char *chroot, size_t len)
{
    return len + 1 + strcspn(chroot + len + 1, "/");
}

/* The chroot exists: close the root handle and open the real one. */
static void prep_finish(reign__zk *zk)
{
    zk->preparing = false;
    zk->prep_len = 0;
    close_handle(zk);
    if (!zk->closed)
        reinit_cb(&zk->reinit_timer, zk);
}

/* The client reports errmsg (a fatal state is not logged here too). */
static void prep_fail(reign__zk *zk)
{
    zk->preparing = false;
    close_handle(zk);
    fail_parked(zk);
    tell(zk, REIGN__ZK_FATAL);
}

static void prep_done(void *owner, void *arg, const reign__zk_result *r)
{
    reign__zk *zk = owner;
    bool recheck = arg != NULL; /* an exists after a create was refused */
    zk->prep_busy = false;
    if (zk->closed || !zk->preparing)
        return;
    size_t n = strlen(zk->chroot);
    const char *what = zk->chroot;
    int len = (int)zk->prep_len;
    if (zk->prep_len == 0) { /* the whole chroot checked */
        if (r->rc == 0) {
            prep_finish(zk);
            return;
        }
        if (r->rc == REIGN_ENOENT) {
            reign__log(zk->log, REIGN_LOG_INFO, "zk: the chroot %s does not exist: creating it",
                       what);
            zk->prep_len = next_component(zk->chroot, 0);
            prep_step(zk, false);
            return;
        }
    } else if (r->rc == 0 || r->rc == REIGN_EEXIST) {
        if (r->rc == 0 && !recheck)
            reign__log(zk->log, REIGN_LOG_NOTICE, "zk: created %.*s", len, what);
        if (zk->prep_len == n) {
            prep_finish(zk);
            return;
        }
        zk->prep_len = next_component(zk->chroot, zk->prep_len);
        prep_step(zk, false);
        return;
    } else if (r->rc == REIGN_EACCES && !recheck) {
        /* ZooKeeper checks the parent's ACL before the node's existence: the node may be
         * there already, made by someone allowed to. */
        prep_step(zk, true);
        return;
    } else if (recheck && r->rc == REIGN_ENOENT) {
        int plen = len - 1;
        while (plen > 0 && what[plen] != '/')
            plen--;
        plen = plen ? plen : 1; /* the parent of "/app" is "/" */
        seterr(zk,
               "the chroot %s does not exist and ZooKeeper does not let these credentials "
               "create %.*s under %.*s: create it once with credentials that may",
               what, len, what, plen, what);
        prep_fail(zk);
        return;
    }
    /* A lost answer, a session that ended, a parent deleted meanwhile: check again. */
    reign__log(zk->log, REIGN_LOG_WARN, "zk: preparing the chroot %s: %s; trying again", what,
               reign_strerror(r->rc));
    zk->prep_len = 0;
    reign__timer_start(zk->cfg.timers, &zk->prep_timer,
                       reign__now_ns() + (int64_t)zk->cfg.retry_period_ms * REIGN__NS_PER_MS);
}

/* Checks the whole chroot (prep_len 0), or creates its first prep_len characters, or (recheck)
 * asks whether they exist. */
static void prep_step(reign__zk *zk, bool recheck)
{
    if (zk->prep_busy || !zk->zh || !zk->preparing)
        return;
    char path[1024];
    size_t n = zk->prep_len ? zk->prep_len : strlen(zk->chroot);
    snprintf(path, sizeof(path), "%.*s", (int)n, zk->chroot);
    int flags = REIGN__ZK_RETRY | PREP_OP;
    int rc = zk->prep_len && !recheck
                 ? reign__zk_create(zk, path, "", 0, flags, zk, prep_done, NULL)
                 : reign__zk_exists(zk, path, NULL, flags, zk, prep_done, recheck ? zk : NULL);
    zk->prep_busy = rc == 0;
    if (rc < 0) /* out of memory: later */
        reign__timer_start(zk->cfg.timers, &zk->prep_timer,
                           reign__now_ns() + (int64_t)zk->cfg.retry_period_ms * REIGN__NS_PER_MS);
}

static void prep_timer_cb(reign__timer *t, void *arg)
{
    prep_step(arg, false);
}

static void prep_state(reign__zk *zk, int state)
{
    if (state == ZOO_CONNECTED_STATE) {
        if (add_auth(zk) < 0) {
            prep_fail(zk);
            return;
        }
        resend_parked(zk); /* its own, after a connection loss; the others park again */
        prep_step(zk, false);
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        close_handle(zk); /* its request comes back with ESESSION and is tried again */
        if (!zk->closed)
            reinit_cb(&zk->reinit_timer, zk);
    }
}

static void handle_state(reign__zk *zk, int state)
{
    if (zk->preparing && state != ZOO_AUTH_FAILED_STATE) {
        prep_state(zk, state);
        return;
    }
    if (state == ZOO_CONNECTED_STATE) {
        bool was_connected = zk->connected;
        zk->connected = true;
        zk->timeout_ms = zoo_recv_timeout(zk->zh);
        const clientid_t *cid = zoo_client_id(zk->zh);
        int64_t sid = cid ? cid->client_id : 0;
        if (add_auth(zk) < 0) {
            reign__log(zk->log, REIGN_LOG_ERROR, "zk: %s", zk->errmsg);
            close_handle(zk);
            fail_parked(zk);
            tell(zk, REIGN__ZK_FATAL);
            return;
        }
        if (!zk->had_session) {
            zk->had_session = true;
            zk->session_id = sid;
            reign__log(zk->log, REIGN_LOG_INFO, "zk: session 0x%llx established, timeout %d ms",
                       (unsigned long long)sid, zk->timeout_ms);
            tell(zk, REIGN__ZK_CONNECTED);
        } else if (!was_connected) {
            reign__log(zk->log, REIGN_LOG_INFO, "zk: session 0x%llx reconnected",
                       (unsigned long long)sid);
            tell(zk, REIGN__ZK_RECONNECTED);
        }
        resend_parked(zk);
    } else if (state == ZOO_CONNECTING_STATE || state == ZOO_ASSOCIATING_STATE) {
        if (zk->connected) {
            zk->connected = false;
            reign__log(zk->log, REIGN_LOG_NOTICE, "zk: connection lost, session 0x%llx suspended",
                       (unsigned long long)zk->session_id);
            tell(zk, REIGN__ZK_SUSPENDED);
        }
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        reign__log(zk->log, REIGN_LOG_WARN, "zk: session 0x%llx expired; starting a new one",
                   (unsigned long long)zk->session_id);
        close_handle(zk);
        fail_parked(zk);
        tell(zk, REIGN__ZK_EXPIRED);
        if (!zk->closed)
            reinit_cb(&zk->reinit_timer, zk);
    } else if (state == ZOO_AUTH_FAILED_STATE) {
        seterr(zk, "ZooKeeper refused the credentials");
        close_handle(zk);
        fail_parked(zk);
        tell(zk, REIGN__ZK_FATAL);
    }
}

void reign__zk_dispatch(reign__zk *zk)
{
    item *it;
    while ((it = pop(zk))) {
        switch (it->kind) {
        case ITEM_OP:
            reign_trace("zk.take", "%s %s", op_name((zk_op *)it), ((zk_op *)it)->path);
            finish_op(zk, (zk_op *)it);
            break;
        case ITEM_WATCH: {
            zk_watch *w = (zk_watch *)it;
            reign_trace("zk.take_event", "%d %s", w->ev_type, w->path);
            if (w->gen == zk->gen && !zk->closed && w->cb) {
                reign__zk_event ev = w->ev_type == ZOO_CREATED_EVENT   ? REIGN__ZK_CREATED
                                     : w->ev_type == ZOO_DELETED_EVENT ? REIGN__ZK_DELETED
                                     : w->ev_type == ZOO_CHANGED_EVENT ? REIGN__ZK_CHANGED
                                                                       : REIGN__ZK_CHILD;
                reign__zk_watch_cb *cb = w->cb;
                w->cb = NULL;
                cb(w->owner, w->arg, ev, w->path);
            }
            free_watch(zk, w);
            break;
        }
        case ITEM_STATE: {
            handle_ctx *h = (handle_ctx *)it;
            for (;;) {
                int state = 0;
                bool have = false;
                pthread_mutex_lock(&zk->mu);
                if (h->count) {
                    state = h->ring[h->head];
                    h->head = (h->head + 1) % STATE_RING;
                    h->count--;
                    have = true;
                } else {
                    h->queued = false;
                }
                pthread_mutex_unlock(&zk->mu);
                if (!have)
                    break;
                if (h != zk->hctx) /* an old handle's news */
                    continue;
                handle_state(zk, state);
                if (h != zk->hctx)
                    continue; /* closed while handling: drain its ring, then free it */
            }
            if (h == zk->dead_ctx) {
                reign__free(h);
                zk->dead_ctx = NULL;
            }
            break;
        }
        }
    }
    /* Nothing of a closed handle can still be queued: drop its watches.  Only after a handle
     * was closed (a walk over every watch on every turn was O(watches) per process()). */
    if (zk->sweep) {
        zk->sweep = false;
        for (zk_watch *w = zk->watches, *next; w; w = next) {
            next = w->next;
            if (w->gen == zk->gen && !zk->closed)
                continue;
            if (w->op_pending)
                zk->sweep = true; /* again once its request is answered */
            else
                free_watch(zk, w);
        }
    }
    if (zk->dead_ctx && !zk->dead_ctx->queued) {
        reign__free(zk->dead_ctx);
        zk->dead_ctx = NULL;
    }
}

void reign__zk_close(reign__zk *zk)
{
    if (zk->closed)
        return;
    zk->closed = true;
    zk->sweep = true;
    reign__timer_stop(zk->cfg.timers, &zk->reinit_timer);
    reign__timer_stop(zk->cfg.timers, &zk->prep_timer);
    close_handle(zk);
    fail_parked(zk);
}

void reign__zk_free(reign__zk *zk)
{
    if (!zk)
        return;
    if (zk->zh || !zk->closed) {
        zk->closed = true;
        zk->sweep = true;
        close_handle(zk);
    }
    reign__timer_stop(zk->cfg.timers, &zk->reinit_timer);
    reign__timer_stop(zk->cfg.timers, &zk->prep_timer);
    /* No callbacks from here on: forget every owner, then drain. */
    for (zk_op *op = zk->ops; op; op = op->next)
        op->cb = NULL;
    for (zk_watch *w = zk->watches; w; w = w->next)
        w->cb = NULL;
    zk->cfg.on_state = NULL;
    reign__zk_dispatch(zk);
    zk->batch = NULL; /* freed with the rest below */
    while (zk->ops) { /* parked and batched ones */
        reign__timer_stop(zk->cfg.timers, &zk->ops->retry_timer);
        free_op(zk, zk->ops);
    }
    while (zk->watches)
        free_watch(zk, zk->watches);
    reign__free(zk->dead_ctx);
    reign__free(zk->hctx);
    pthread_mutex_destroy(&zk->mu);
    if (zk->auth) {
        /* Do not leave the password in freed memory. */
        explicit_bzero(zk->auth, strlen(zk->auth));
        reign__free(zk->auth);
    }
    reign__free(zk->hosts);
    reign__free(zk->root_hosts);
    reign__free(zk);
}

int64_t reign__zk_session_id(const reign__zk *zk)
{
    return zk->connected || zk->had_session ? zk->session_id : 0;
}

int64_t reign__zk_session_credentials(const reign__zk *zk, unsigned char passwd[16])
{
    /* The C client's I/O thread writes the id and password before it reports the session, and
     * neither changes while the session lives. */
    const clientid_t *cid = zk->zh ? zoo_client_id(zk->zh) : NULL;
    if (!cid || !reign__zk_session_id(zk))
        return 0;
    memcpy(passwd, cid->passwd, 16);
    return cid->client_id;
}

int reign__zk_session_timeout_ms(const reign__zk *zk)
{
    return zk->timeout_ms;
}

bool reign__zk_connected(const reign__zk *zk)
{
    return zk->connected;
}

const char *reign__zk_errmsg(const reign__zk *zk)
{
    return zk->errmsg;
}

int64_t reign__zk_last_ack_ns(const reign__zk *zk)
{
    return zk->last_ack_ns;
}
