/*
 * zk.c - the ZooKeeper backend (see zk.h for the contract, zk_internal.h
 * for its files): the handle, its sessions and their states, draining the
 * queue on the loop thread, close and free.
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
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zk_internal.h"

/* How often the C client may resolve the server names again. */
#define RESOLUTION_DELAY_MS 60000

static void prep_step(reign__zk *zk, bool recheck);
static void prep_timer_cb(reign__timer *t, void *arg);

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
    zk->batch_out = 0; /* what the last handle had out never answers here */
    zk->sweep = true;
    zk->connected = false;
    zk->had_session = false;
    zk->session_id = 0;
    zk->last_ack_ns = 0;
    errno = 0;
    zhandle_t *zh =
        zookeeper_init2(zk->preparing ? zk->root_hosts : zk->hosts, reign__zki_on_session_event,
                        zk->cfg.session_timeout_ms, NULL, h, 0, reign__zki_log_cb);
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

int reign__zk_new(reign__zk **ret, const reign__zk_config *cfg, char *err, size_t errlen)
{
    if (cfg->etcd_members) {
        *ret = NULL;
        reign__zk *zk = reign__calloc(1, sizeof(*zk));
        if (!zk)
            return REIGN_ENOMEM;
        zk->cfg = *cfg;
        int r = reign__etcd_new(&zk->etcd, cfg, err, errlen);
        if (r < 0) {
            reign__free(zk);
            return r;
        }
        *ret = zk;
        return 0;
    }
    *ret = NULL;
    reign__zk *zk = reign__calloc(1, sizeof(*zk));
    if (zk) {
        zk->owners_bits = 6; /* grows with what is owned */
        zk->owners = reign__calloc((size_t)1 << zk->owners_bits, sizeof(*zk->owners));
    }
    if (!zk || !zk->owners) {
        reign__free(zk);
        return REIGN_ENOMEM;
    }
    zk->cfg = *cfg;
    zk->log = cfg->log;
    pthread_mutex_init(&zk->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&zk->out_cv, &ca);
    pthread_condattr_destroy(&ca);
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

static void tell(reign__zk *zk, reign__zk_state st)
{
    if (zk->cfg.on_state)
        zk->cfg.on_state(zk->cfg.state_arg, st);
}

/* ---- the chroot's preparation (see the top of the file) ---------------- */

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
    reign__zki_fail_parked(zk);
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
        reign__zki_resend_parked(zk); /* its own, after a connection loss; the others park again */
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
            reign__zki_fail_parked(zk);
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
        reign__zki_resend_parked(zk);
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
        reign__zki_fail_parked(zk);
        tell(zk, REIGN__ZK_EXPIRED);
        if (!zk->closed)
            reinit_cb(&zk->reinit_timer, zk);
    } else if (state == ZOO_AUTH_FAILED_STATE) {
        seterr(zk, "ZooKeeper refused the credentials");
        close_handle(zk);
        reign__zki_fail_parked(zk);
        tell(zk, REIGN__ZK_FATAL);
    }
}

void reign__zk_dispatch(reign__zk *zk)
{
    if (zk->etcd) {
        reign__etcd_dispatch(zk->etcd);
        return;
    }
    item *it;
    while ((it = reign__zki_pop(zk))) {
        switch (it->kind) {
        case ITEM_OP:
            reign_trace("zk.take", "%s %s", reign__zki_op_name((zk_op *)it), ((zk_op *)it)->path);
            reign__zki_finish_op(zk, (zk_op *)it);
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
                cb(w->own.owner, w->arg, ev, w->path);
            }
            reign__zki_free_watch(zk, w);
            break;
        }
        case ITEM_WAITER: /* never queued */
            break;
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
                reign__zki_free_watch(zk, w);
        }
    }
    if (zk->dead_ctx && !zk->dead_ctx->queued) {
        reign__free(zk->dead_ctx);
        zk->dead_ctx = NULL;
    }
}

/*
 * The end of a session that is up: its requests answered first (for at most the operation
 * timeout, and 2 s), then the C client's close, which waits a moment for the server's answer to
 * it.  That answer comes once the session's ephemeral nodes are gone; but the C client stops
 * waiting at the first bytes it can read, and an answer still on the way would be those.  So a
 * released node, or the session's, is gone from the store when the client returns: a `reign rm`
 * or a reader of another session that starts then sees it gone.
 */
static void end_session(reign__zk *zk)
{
    if (zk->zh && zk->connected && !zk->preparing) {
        int ms = zk->cfg.op_timeout_ms > 0 && zk->cfg.op_timeout_ms < 2000 ? zk->cfg.op_timeout_ms
                                                                           : 2000;
        int64_t end = reign__now_ns() + ms * REIGN__NS_PER_MS; /* out_cv's clock */
        struct timespec until = {.tv_sec = end / 1000000000, .tv_nsec = end % 1000000000};
        pthread_mutex_lock(&zk->mu);
        while (zk->out > 0 && pthread_cond_timedwait(&zk->out_cv, &zk->mu, &until) == 0)
            ;
        pthread_mutex_unlock(&zk->mu);
    }
    close_handle(zk);
}

void reign__zk_close(reign__zk *zk)
{
    if (zk->etcd) {
        reign__etcd_close(zk->etcd);
        return;
    }
    if (zk->closed)
        return;
    zk->closed = true;
    zk->sweep = true;
    reign__timer_stop(zk->cfg.timers, &zk->reinit_timer);
    reign__timer_stop(zk->cfg.timers, &zk->prep_timer);
    end_session(zk);
    reign__zki_fail_parked(zk);
}

void reign__zk_free(reign__zk *zk)
{
    if (zk && zk->etcd) {
        reign__etcd_free(zk->etcd);
        reign__free(zk);
        return;
    }
    if (!zk)
        return;
    if (zk->zh || !zk->closed) {
        zk->closed = true;
        zk->sweep = true;
        end_session(zk);
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
    zk->batch_parts = 0;
    reign__zki_free_waiters(zk);
    while (zk->ops) { /* parked and batched ones */
        reign__timer_stop(zk->cfg.timers, &zk->ops->retry_timer);
        reign__zki_free_op(zk, zk->ops);
    }
    while (zk->watches)
        reign__zki_free_watch(zk, zk->watches);
    reign__free(zk->dead_ctx);
    reign__free(zk->hctx);
    pthread_cond_destroy(&zk->out_cv);
    pthread_mutex_destroy(&zk->mu);
    if (zk->auth) {
        /* Do not leave the password in freed memory. */
        explicit_bzero(zk->auth, strlen(zk->auth));
        reign__free(zk->auth);
    }
    reign__free(zk->hosts);
    reign__free(zk->root_hosts);
    reign__free(zk->owners);
    reign__free(zk);
}

int64_t reign__zk_session_id(const reign__zk *zk)
{
    if (zk->etcd)
        return reign__etcd_session_id(zk->etcd);
    return zk->connected || zk->had_session ? zk->session_id : 0;
}

int64_t reign__zk_session_credentials(const reign__zk *zk, unsigned char passwd[16])
{
    if (zk->etcd) {
        memset(passwd, 0, 16);
        return reign__etcd_session_id(zk->etcd); /* a lease needs no password to end */
    }
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
    if (zk->etcd)
        return reign__etcd_session_timeout_ms(zk->etcd);
    return zk->timeout_ms;
}

bool reign__zk_connected(const reign__zk *zk)
{
    if (zk->etcd)
        return reign__etcd_connected(zk->etcd);
    return zk->connected;
}

const char *reign__zk_errmsg(const reign__zk *zk)
{
    if (zk->etcd)
        return reign__etcd_errmsg(zk->etcd);
    return zk->errmsg;
}

bool reign__zk_is_etcd(const reign__zk *zk)
{
    return zk->etcd != NULL;
}

int64_t reign__zk_last_ack_ns(const reign__zk *zk)
{
    if (zk->etcd)
        return reign__etcd_last_ack_ns(zk->etcd);
    return zk->last_ack_ns;
}
