/*
 * client.c - a reign_client: the backend session, the loop interface (fd,
 * timeout, process), connection states as the application sees them, and
 * the safety deadline shared by every leadership held on the session.  What
 * the URI and the options say is read by config.c, which reign_uri_check()
 * shares; recipes attach to a client through client_internal.h.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"
#include "config.h"
#include "guardian/guardian.h"

struct reign_client {
    reign_client_options opts;
    reign__logger log;
    char *uri_redacted;
    int wake_fd;
    int epoll_fd; /* with a guardian: the descriptor the loop polls (wake_fd and its socket) */
    reign__guardian *guardian;
    char *zk_hosts;           /* for the guardian */
    char guarded_session[65]; /* the SQL session the guardian was told of (sql_session.h) */
    reign__timers timers;
    reign__zk *zk;    /* zk:// */
    reign__sqlw *sql; /* sqlite://, mysql://, postgres:// */
    reign__lease_settings lease;
    reign_conn_state state;
    reign_suspend_policy policy;
    int session_timeout_ms; /* requested */
    int history_max;        /* history= */
    int connect_timeout_ms;
    int64_t suspended_at_ns;
    int validity_holders;
    reign__timer connect_timer;
    reign__timer heartbeat_timer;
    reign__timer deadline_timer;
    reign__recipe *recipes;
    /* The last recipes found by kind (reign__client_find()): a client in 10,000 elections
     * asks for its one session keeper at every turn, and must not walk them all. */
    reign__recipe *found[4];
    unsigned visit; /* marks recipes already called in one sweep */
    /* Every recipe by its notice_name ("" for none): chains through same_next, nbuckets a power
     * of two (0: no index, every notice goes to every recipe). */
    reign__recipe **buckets;
    size_t nbuckets, indexed;
    bool recipes_changed;
    int depth; /* nesting of process() */
    bool stop;
    bool close_requested;
    bool free_requested;
    bool connect_timed_out;
    int fatal_err; /* why the client closed by itself */
    char errmsg[512];
};

const char *reign_conn_state_name(reign_conn_state s)
{
    switch (s) {
    case REIGN_CONN_CONNECTING:
        return "connecting";
    case REIGN_CONN_CONNECTED:
        return "connected";
    case REIGN_CONN_SUSPENDED:
        return "suspended";
    case REIGN_CONN_RECONNECTED:
        return "reconnected";
    case REIGN_CONN_LOST:
        return "lost";
    case REIGN_CONN_CLOSED:
        return "closed";
    }
    return "?";
}

/* ---- internal interface for recipes ------------------------------------- */

reign__zk *reign__client_zk(reign_client *c)
{
    return c->zk;
}

reign__sqlw *reign__client_sql(reign_client *c)
{
    return c->sql;
}

const reign__lease_settings *reign__client_lease(const reign_client *c)
{
    return &c->lease;
}

reign__timers *reign__client_timers(reign_client *c)
{
    return &c->timers;
}

const reign__logger *reign__client_log(const reign_client *c)
{
    return &c->log;
}

/* ---- the index of recipes by the name their notices carry ------------------------------------ */

static size_t bucket_of(const reign_client *c, const char *name)
{
    return (size_t)reign__hash_str(name ? name : "") & (c->nbuckets - 1);
}

static void index_add(reign_client *c, reign__recipe *r)
{
    if (c->indexed + 1 > c->nbuckets) {
        /* Twice the buckets, every recipe placed again (all are indexed: the list has them).
         * Out of memory, chains grow longer, or (no index yet) notices go to every recipe. */
        size_t n = c->nbuckets ? c->nbuckets * 2 : 64;
        reign__recipe **b = reign__calloc(n, sizeof(*b));
        if (b || !c->buckets) {
            reign__free(c->buckets);
            c->buckets = b;
            c->nbuckets = b ? n : 0;
            c->indexed = 0;
            for (reign__recipe *x = c->recipes; b && x; x = x->next)
                if (x != r) {
                    size_t i = bucket_of(c, x->notice_name);
                    x->same_next = c->buckets[i];
                    c->buckets[i] = x;
                    c->indexed++;
                }
        }
    }
    if (!c->buckets)
        return;
    size_t i = bucket_of(c, r->notice_name);
    r->same_next = c->buckets[i];
    c->buckets[i] = r;
    c->indexed++;
}

static void index_remove(reign_client *c, reign__recipe *r)
{
    if (!c->buckets)
        return;
    for (reign__recipe **p = &c->buckets[bucket_of(c, r->notice_name)]; *p; p = &(*p)->same_next)
        if (*p == r) {
            *p = r->same_next;
            c->indexed--;
            break;
        }
    r->same_next = NULL;
}

void reign__client_attach(reign_client *c, reign__recipe *r)
{
    c->recipes_changed = true;
    r->visit = c->visit;
    r->prev = NULL;
    r->next = c->recipes;
    if (r->next)
        r->next->prev = r;
    c->recipes = r;
    r->notice_name = NULL;
    index_add(c, r);
}

void reign__client_name_recipe(reign_client *c, reign__recipe *r, const char *name)
{
    index_remove(c, r);
    r->notice_name = name;
    index_add(c, r);
}

reign__recipe *reign__client_find(reign_client *c, const reign__recipe_ops *ops)
{
    size_t n = sizeof c->found / sizeof c->found[0];
    for (size_t i = 0; i < n; i++)
        if (c->found[i] && c->found[i]->ops == ops)
            return c->found[i];
    for (reign__recipe *r = c->recipes; r; r = r->next)
        if (r->ops == ops) {
            memmove(c->found + 1, c->found, (n - 1) * sizeof c->found[0]);
            c->found[0] = r;
            return r;
        }
    return NULL;
}

void reign__client_detach(reign_client *c, reign__recipe *r)
{
    c->recipes_changed = true;
    index_remove(c, r);
    for (size_t i = 0; i < sizeof c->found / sizeof c->found[0]; i++)
        if (c->found[i] == r)
            c->found[i] = NULL;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->recipes == r)
        c->recipes = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

static int64_t session_ns(const reign_client *c)
{
    int t = c->zk ? reign__zk_session_timeout_ms(c->zk) : 0;
    return (int64_t)(t > 0 ? t : c->session_timeout_ms) * REIGN__NS_PER_MS;
}

int reign__client_history_max(const reign_client *c)
{
    return c->history_max;
}

int reign__client_session_timeout_ms(const reign_client *c)
{
    return (int)(session_ns(c) / REIGN__NS_PER_MS);
}

int64_t reign__client_valid_until(const reign_client *c)
{
    int64_t ack = c->zk ? reign__zk_last_ack_ns(c->zk) : 0;
    if (!ack)
        return 0;
    /* The server cannot expire the session before ack + timeout; the last
     * quarter is our margin (client.h explains it). */
    return ack + session_ns(c) * 3 / 4;
}

static int64_t lost_at(const reign_client *c)
{
    /* A leader's session may be gone when its validity ends; for others,
     * LOST is advisory and counted from the moment of the suspension. */
    return c->validity_holders > 0 ? reign__client_valid_until(c)
                                   : c->suspended_at_ns + session_ns(c) * 3 / 4;
}

/* Arms the deadline timer at the earliest of LOST and the validity bound. */
static void arm_deadline(reign_client *c)
{
    int64_t next = -1;
    if (c->state == REIGN_CONN_SUSPENDED && c->zk) /* a SQL store has no session to lose */
        next = lost_at(c);
    if (c->validity_holders > 0) {
        int64_t until = reign__client_valid_until(c);
        if (next < 0 || until < next)
            next = until;
    }
    if (next < 0) {
        reign__timer_stop(&c->timers, &c->deadline_timer);
        return;
    }
    /* Never in the past: a deadline already handled must not spin the loop. */
    int64_t soon = reign__now_ns() + REIGN__NS_PER_MS;
    reign__timer_start(&c->timers, &c->deadline_timer, next > soon ? next : soon);
}

static void heartbeat_cb(reign__timer *t, void *arg)
{
    reign_client *c = arg;
    if (c->validity_holders <= 0)
        return;
    if (reign__zk_connected(c->zk))
        reign__zk_heartbeat(c->zk);
    /* Five proofs per session timeout: the bound then stays at least
     * 3/4 - 1/5 - (round trip) of a timeout ahead of now. */
    reign__timer_start(&c->timers, &c->heartbeat_timer, reign__now_ns() + session_ns(c) / 5);
}

void reign__client_hold_validity(reign_client *c, int delta)
{
    int before = c->validity_holders;
    c->validity_holders += delta;
    if (before <= 0 && c->validity_holders > 0)
        /* The claim that made a leader was a write, itself a fresh proof:
         * the first heartbeat can wait its turn. */
        reign__timer_start(&c->timers, &c->heartbeat_timer, reign__now_ns() + session_ns(c) / 5);
    else if (c->validity_holders <= 0)
        reign__timer_stop(&c->timers, &c->heartbeat_timer);
    arm_deadline(c);
}

reign_suspend_policy reign__client_suspend_policy(const reign_client *c)
{
    return c->policy;
}

bool reign__client_closing(const reign_client *c)
{
    return c->close_requested || c->state == REIGN_CONN_CLOSED;
}

bool reign__client_processing(const reign_client *c)
{
    return c->depth > 0;
}

void reign__client_wake(reign_client *c)
{
    uint64_t one = 1;
    ssize_t w = write(c->wake_fd, &one, sizeof(one));
    (void)w;
}

/* ---- states ------------------------------------------------------------- */

/*
 * Calls `fn` on every recipe once.  A hook may free recipes (its own or
 * others); then the sweep starts over from the head, skipping those done.
 */
static void for_each_recipe(reign_client *c, void (*fn)(reign__recipe *, void *), void *arg)
{
    unsigned mark = ++c->visit;
again:
    c->recipes_changed = false;
    for (reign__recipe *r = c->recipes; r; r = r->next) {
        if (r->visit == mark)
            continue;
        r->visit = mark;
        fn(r, arg);
        if (c->recipes_changed)
            goto again;
    }
}

static void call_conn(reign__recipe *r, void *arg)
{
    if (r->ops->conn)
        r->ops->conn(r, *(reign_conn_state *)arg);
}

static void call_deadline(reign__recipe *r, void *arg)
{
    if (r->ops->deadline)
        r->ops->deadline(r, *(int64_t *)arg);
}

static void set_state(reign_client *c, reign_conn_state st)
{
    if (c->state == st)
        return;
    c->state = st;
    reign__log(&c->log, REIGN_LOG_INFO, "client: %s", reign_conn_state_name(st));
    for_each_recipe(c, call_conn, &st);
    if (c->opts.on_state)
        c->opts.on_state(c, st, c->opts.userdata);
}

static void run_deadlines(reign_client *c, int64_t now)
{
    /* Leaders first: a leader whose bound passed is demoted for that
     * (suspended or stalled) before anyone hears the session may be lost. */
    bool suspended_past = c->state == REIGN_CONN_SUSPENDED && c->zk && now >= lost_at(c);
    /* On SQL each lease election keeps its own bound: every one looks. */
    if (c->sql || (c->validity_holders > 0 && now >= reign__client_valid_until(c)))
        for_each_recipe(c, call_deadline, &now);
    if (suspended_past)
        set_state(c, REIGN_CONN_LOST);
    arm_deadline(c);
}

static void deadline_cb(reign__timer *t, void *arg)
{
    reign_client *c = arg;
    run_deadlines(c, reign__now_ns());
}

/* "no ZooKeeper server answered at URI within N ms", or the SQL store's last error. */
static void no_answer(reign_client *c)
{
    if (c->zk) {
        bool etcd = !strncmp(c->uri_redacted, "etcd", 4);
        const char *why = etcd ? reign__zk_errmsg(c->zk) : "";
        snprintf(c->errmsg, sizeof(c->errmsg), "no %s server answered at %s within %d ms%s%s",
                 etcd ? "etcd" : "ZooKeeper", c->uri_redacted, c->connect_timeout_ms,
                 *why ? ": " : "", why);
    } else if (!c->errmsg[0])
        snprintf(c->errmsg, sizeof(c->errmsg), "%s did not answer within %d ms",
                 reign__sqlw_store(c->sql), c->connect_timeout_ms);
}

static void connect_timeout_cb(reign__timer *t, void *arg)
{
    reign_client *c = arg;
    if (c->state != REIGN_CONN_CONNECTING)
        return;
    c->connect_timed_out = true;
    no_answer(c);
    reign__log(&c->log, REIGN_LOG_WARN, "%s; still trying", c->errmsg);
}

/* The guardian closes the session the client has now (none after an expiry).  Told before the
 * recipes hear of a new session, so before any ephemeral node of it exists. */
static void tell_guardian_session(reign_client *c)
{
    if (!c->guardian)
        return;
    unsigned char passwd[16] = {0};
    int64_t sid = reign__zk_session_credentials(c->zk, passwd);
    int t = reign__zk_session_timeout_ms(c->zk);
    reign__guardian_zk(c->guardian, c->zk_hosts, sid, passwd, t > 0 ? t : c->session_timeout_ms);
    explicit_bzero(passwd, sizeof(passwd));
}

/* The session is about to hold an ephemeral node: from now on a dead process must give it up. */
static void on_zk_ephemeral(void *arg)
{
    reign_client *c = arg;
    if (c->guardian)
        reign__guardian_need(c->guardian);
}

static void on_zk_state(void *arg, reign__zk_state st)
{
    reign_client *c = arg;
    switch (st) {
    case REIGN__ZK_CONNECTED:
        tell_guardian_session(c);
        reign__timer_stop(&c->timers, &c->connect_timer);
        c->connect_timed_out = false;
        set_state(c, REIGN_CONN_CONNECTED);
        break;
    case REIGN__ZK_SUSPENDED:
        c->suspended_at_ns = reign__now_ns();
        set_state(c, REIGN_CONN_SUSPENDED);
        run_deadlines(c, c->suspended_at_ns);
        break;
    case REIGN__ZK_RECONNECTED:
        set_state(c, REIGN_CONN_RECONNECTED);
        if (c->validity_holders > 0)
            reign__zk_heartbeat(c->zk); /* renew the proof at once */
        break;
    case REIGN__ZK_EXPIRED:
        tell_guardian_session(c);
        set_state(c, REIGN_CONN_LOST);
        c->state = REIGN_CONN_CONNECTING; /* a new session is on its way */
        break;
    case REIGN__ZK_FATAL:
        snprintf(c->errmsg, sizeof(c->errmsg), "%s", reign__zk_errmsg(c->zk));
        set_state(c, REIGN_CONN_CLOSED);
        break;
    }
}

static void call_changed(reign__recipe *r, void *heard)
{
    if (r->ops->changed)
        r->ops->changed(r, heard);
}

/* The recipes of `key` ("": those that hear every notice) not called yet in this sweep: true
 * if the recipes changed meanwhile (the sweep starts again; those called are marked). */
static bool changed_by_name(reign_client *c, const char *key, unsigned mark,
                            const reign__sql_heard *heard)
{
    for (reign__recipe *r = c->buckets[bucket_of(c, key)]; r; r = r->same_next) {
        if (r->visit == mark || strcmp(r->notice_name ? r->notice_name : "", key))
            continue;
        r->visit = mark;
        call_changed(r, (void *)heard);
        if (c->recipes_changed)
            return true;
    }
    return false;
}

/* A change: to the recipes it may concern - all, where it names nothing; else those that hear
 * every notice and those of the names it tells (10,000 elections of one client, each won with
 * a notice, would otherwise make 10,000 x 10,000 calls). */
static void on_sql_change(void *arg, const reign__sql_heard *heard)
{
    reign_client *c = arg;
    if (!heard || heard->all || !c->buckets) {
        for_each_recipe(c, call_changed, (void *)heard);
        return;
    }
    unsigned mark = ++c->visit;
again:
    c->recipes_changed = false;
    if (changed_by_name(c, "", mark, heard))
        goto again;
    for (size_t i = 0; i < heard->names.n; i++)
        if (changed_by_name(c, heard->names.v[i], mark, heard))
            goto again;
    for (size_t i = 0; i < heard->won.n; i++)
        if (changed_by_name(c, heard->won.v[i], mark, heard))
            goto again;
    for (size_t i = 0; i < heard->n; i++) {
        char name[REIGN_NAME_MAX + 64];
        const char *nl = strchr(heard->v[i], '\n');
        size_t len = nl ? (size_t)(nl - heard->v[i]) : strlen(heard->v[i]);
        if (len >= sizeof name)
            continue;
        memcpy(name, heard->v[i], len);
        name[len] = '\0';
        if (changed_by_name(c, name, mark, heard))
            goto again;
    }
}

static void on_sql_state(void *arg, reign__sqlw_state st, int err, const char *msg)
{
    reign_client *c = arg;
    switch (st) {
    case REIGN__SQLW_CONNECTED:
    case REIGN__SQLW_RECONNECTED:
        reign__timer_stop(&c->timers, &c->connect_timer);
        c->connect_timed_out = false;
        c->errmsg[0] = '\0';
        set_state(c, st == REIGN__SQLW_CONNECTED ? REIGN_CONN_CONNECTED : REIGN_CONN_RECONNECTED);
        break;
    case REIGN__SQLW_SUSPENDED:
        /* Logged once per outage; the message stays for wait_connected(). */
        if (c->state != REIGN_CONN_SUSPENDED &&
            !(c->state == REIGN_CONN_CONNECTING && c->errmsg[0]))
            reign__log(&c->log, REIGN_LOG_WARN, "%s; retrying", msg);
        snprintf(c->errmsg, sizeof(c->errmsg), "%s", msg);
        if (c->state != REIGN_CONN_CONNECTING) {
            c->suspended_at_ns = reign__now_ns();
            set_state(c, REIGN_CONN_SUSPENDED);
        }
        break;
    case REIGN__SQLW_LOST:
        /* The store file was deleted or replaced: what we held in it is gone, as with an
         * expired ZooKeeper session.  LOST now; the worker opens the path anew and that comes
         * as CONNECTED, a new session, where the recipes stand again. */
        reign__log(&c->log, REIGN_LOG_WARN, "%s; opening the path anew", msg);
        snprintf(c->errmsg, sizeof(c->errmsg), "%s", msg);
        set_state(c, REIGN_CONN_LOST);
        c->state = REIGN_CONN_CONNECTING;
        break;
    case REIGN__SQLW_FATAL:
        c->fatal_err = err;
        snprintf(c->errmsg, sizeof(c->errmsg), "%s", msg);
        /* The application hears it (CLOSED, reign_client_errmsg()) and decides what to say. */
        reign__log(&c->log, REIGN_LOG_INFO, "client: stopped: %s", msg);
        set_state(c, REIGN_CONN_CLOSED);
        break;
    }
}

/* ---- construction ------------------------------------------------------- */

/* The client's descriptor becomes an epoll set of the wake-up eventfd and, as they come, the
 * guardian's socket and the etcd backend's own epoll set. */
static int start_epoll(reign_client *c, char *err, size_t errlen)
{
    if (c->epoll_fd >= 0)
        return 0;
    c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = NULL}};
    if (c->epoll_fd < 0 || epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->wake_fd, &ev) < 0) {
        reign__errf(err, errlen, "epoll: %s", strerror(errno));
        return -errno;
    }
    return 0;
}

static int start_guardian(reign_client *c, char *err, size_t errlen)
{
    int r = start_epoll(c, err, errlen);
    return r < 0 ? r : reign__guardian_new(&c->guardian, c->epoll_fd, &c->log, &c->timers);
}

/* Once the configuration is read: the guardian, then the backend. */
static int start_zk(reign_client *c, reign__client_config *cfg, char *err, size_t errlen)
{
    reign__zk_config *zc = &cfg->zk;
    if (!(c->zk_hosts = reign__strdup(cfg->hosts)))
        return REIGN_ENOMEM;
    zc->log = &c->log;
    zc->timers = &c->timers;
    zc->on_state = on_zk_state;
    zc->on_ephemeral = on_zk_ephemeral;
    zc->state_arg = c;
    zc->wake_fd = c->wake_fd;
    int r;
    if (zc->etcd_members) {
        if ((r = start_epoll(c, err, errlen)) < 0)
            return r;
        zc->epoll_fd = c->epoll_fd;
        if (cfg->guarded) {
            /* The guardian revokes the lease: "etcd:http://h:p,http://h:p" (https:// over TLS),
             * logged in as the client's user if it has one. */
            const char *scheme = zc->tls ? "https://" : "http://";
            reign__free(c->zk_hosts);
            reign__buf b;
            reign__buf_init(&b);
            reign__buf_puts(&b, "etcd:");
            for (const char *m = zc->etcd_members; *m;) {
                size_t l = strcspn(m, ",");
                reign__buf_printf(&b, "%s%s%.*s", b.len > 5 ? "," : "", scheme, (int)l, m);
                m += l + (m[l] == ',');
            }
            c->zk_hosts = b.oom ? NULL : b.data;
            if (!c->zk_hosts)
                return REIGN_ENOMEM;
            if ((r = start_guardian(c, err, errlen)) < 0 ||
                (r = reign__guardian_etcd_tree(c->guardian, zc->etcd_prefix, zc->user, zc->password,
                                               &zc->tls_files, zc->etcd_gateway)) < 0)
                return r;
        }
    } else if (cfg->guarded) {
        /* The history records' paths are under the chroot; nodes made with credentials need
         * them for a write. */
        const char *chroot = cfg->hosts + strcspn(cfg->hosts, "/");
        if ((r = start_guardian(c, err, errlen)) < 0 ||
            (r = reign__guardian_zk_tree(c->guardian, chroot, zc->user, zc->password)) < 0)
            return r;
    }
    return reign__zk_new(&c->zk, zc, err, errlen);
}

static int start_sql(reign_client *c, reign__client_config *cfg, char *err, size_t errlen)
{
    reign__sqlw_config *sc = &cfg->sql;
    sc->target.log = &c->log;
    sc->log = &c->log;
    sc->wake_fd = c->wake_fd;
    sc->on_state = on_sql_state;
    sc->on_change = on_sql_change;
    sc->arg = c;
    int r = 0;
    if (cfg->guarded && (r = start_guardian(c, err, errlen)) == 0)
        reign__guardian_sql(c->guardian, &sc->target, sc->dc, c->lease.lease_ms);
    if (r == 0)
        r = reign__sqlw_new(&c->sql, sc, err, errlen);
    return r;
}

int reign_client_new(reign_client **ret, const char *uri, const reign_client_options *opts,
                     char *errbuf, size_t errlen)
{
    char scratch[512];
    reign__client_errbuf(&errbuf, &errlen, scratch, sizeof(scratch));
    if (!ret) {
        reign__errf(errbuf, errlen, "no client to fill");
        return REIGN_EINVAL;
    }
    *ret = NULL;
    /* Everything the URI and the options say, checked before anything is started: the same
     * reading as reign_uri_check()'s. */
    reign__client_config cfg;
    int r = reign__client_config_read(&cfg, uri, opts, errbuf, errlen);
    if (r < 0)
        return r;

    reign_client *c = reign__calloc(1, sizeof(*c));
    if (!c) {
        reign__client_config_clear(&cfg);
        return REIGN_ENOMEM;
    }
    c->opts = cfg.opts;
    c->policy = cfg.policy;
    c->session_timeout_ms = cfg.session_timeout_ms;
    c->history_max = cfg.history_max;
    c->connect_timeout_ms = cfg.connect_timeout_ms;
    c->lease = cfg.lease;
    c->log.fn = c->opts.log_fn;
    c->log.userdata = c->opts.userdata;
    c->log.level = c->opts.log_level;
    c->wake_fd = -1;
    c->epoll_fd = -1;
    c->state = REIGN_CONN_CONNECTING;
    reign__timer_init(&c->connect_timer, connect_timeout_cb, c);
    reign__timer_init(&c->heartbeat_timer, heartbeat_cb, c);
    reign__timer_init(&c->deadline_timer, deadline_cb, c);

    size_t need = reign_uri_redact(uri, NULL, 0) + 1;
    c->uri_redacted = reign__malloc(need);
    if (!c->uri_redacted) {
        r = REIGN_ENOMEM;
        goto fail;
    }
    reign_uri_redact(uri, c->uri_redacted, need);
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->wake_fd < 0) {
        r = -errno;
        reign__errf(errbuf, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    r = cfg.is_zk ? start_zk(c, &cfg, errbuf, errlen) : start_sql(c, &cfg, errbuf, errlen);
    if (r < 0)
        goto fail;
    reign__timer_start(&c->timers, &c->connect_timer,
                       reign__now_ns() + (int64_t)c->connect_timeout_ms * REIGN__NS_PER_MS);
    if (c->zk)
        reign__log(&c->log, REIGN_LOG_INFO, "client: connecting to %s (session timeout %d ms)",
                   c->uri_redacted, c->session_timeout_ms);
    else
        reign__log(&c->log, REIGN_LOG_INFO,
                   "client: connecting to %s (lease %d ms, renew every %d ms, poll every %d ms, "
                   "worst-case takeover after a crash %lld ms)",
                   c->uri_redacted, c->lease.lease_ms, c->lease.renew_ms, c->lease.poll_ms,
                   (long long)reign_client_takeover_ms(c));
    reign__client_config_clear(&cfg);
    *ret = c;
    return 0;

fail:
    reign__client_config_clear(&cfg);
    reign__guardian_free(c->guardian);
    if (c->epoll_fd >= 0)
        close(c->epoll_fd);
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    reign__free(c->zk_hosts);
    reign__free(c->uri_redacted);
    reign__timers_free(&c->timers);
    reign__free(c);
    return r;
}

/* ---- the loop ----------------------------------------------------------- */

int reign_client_get_fd(const reign_client *c)
{
    return c->epoll_fd >= 0 ? c->epoll_fd : c->wake_fd;
}

int64_t reign_client_get_timeout_ms(const reign_client *c)
{
    if (c->close_requested)
        return 0;
    int64_t due = reign__timers_next(&c->timers);
    if (due < 0)
        return -1;
    int64_t now = reign__now_ns();
    if (due <= now)
        return 0;
    /* Round up, so that a wake-up is never early. */
    return (due - now + REIGN__NS_PER_MS - 1) / REIGN__NS_PER_MS;
}

static void really_free(reign_client *c);

static void do_close(reign_client *c)
{
    c->close_requested = false;
    if (c->state == REIGN_CONN_CLOSED)
        return;
    reign__timer_stop(&c->timers, &c->connect_timer);
    reign__timer_stop(&c->timers, &c->heartbeat_timer);
    reign__timer_stop(&c->timers, &c->deadline_timer);
    /* Recipes hear CLOSED first (leaders demote), then the session goes,
     * which removes every ephemeral node at once. */
    c->state = REIGN_CONN_CLOSED;
    reign_conn_state st = REIGN_CONN_CLOSED;
    for_each_recipe(c, call_conn, &st);
    if (c->zk) {
        reign__zk_close(c->zk);
        reign__zk_dispatch(c->zk);
    } else {
        /* The releases the recipes just queued still go out. */
        reign__sqlw_close(c->sql);
        reign__sqlw_dispatch(c->sql);
    }
    if (c->opts.on_state)
        c->opts.on_state(c, REIGN_CONN_CLOSED, c->opts.userdata);
}

int reign_client_process(reign_client *c)
{
    if (!c)
        return REIGN_EINVAL;
    if (c->free_requested)
        return REIGN_ECLOSED;
    c->depth++;
    uint64_t v;
    ssize_t n = read(c->wake_fd, &v, sizeof(v)); /* an eventfd's read takes its whole count */
    (void)n;
    reign__sqlw_hold(c->sql); /* what this turn asks for: one wake-up, at its end (a nested
                                 turn's end wakes for what came before it too) */
    if (c->guardian)
        reign__guardian_check(c->guardian); /* its hello, its end, or its socket closed by others */
    int64_t now = reign__now_ns();
    /* Deadlines first: after a stall, a leader must demote before it acts
     * on anything that was queued meanwhile. */
    run_deadlines(c, now);
    if (c->zk)
        reign__zk_dispatch(c->zk);
    else
        reign__sqlw_dispatch(c->sql);
    reign__timers_run(&c->timers, reign__now_ns());
    if (c->close_requested)
        do_close(c);
    run_deadlines(c, reign__now_ns());
    if (c->zk)
        reign__zk_flush(c->zk); /* what this turn batched: one request */
    else
        reign__sqlw_flush(c->sql);
    c->depth--;
    if (c->depth == 0 && c->free_requested) {
        really_free(c);
        return REIGN_ECLOSED;
    }
    return c->state == REIGN_CONN_CLOSED ? REIGN_ECLOSED : 0;
}

static int poll_once(reign_client *c, int64_t max_ms)
{
    int64_t t = reign_client_get_timeout_ms(c);
    if (t < 0 || (max_ms >= 0 && t > max_ms))
        t = max_ms;
    struct pollfd pfd = {.fd = reign_client_get_fd(c), .events = POLLIN};
    int n = poll(&pfd, 1, t < 0 ? -1 : (int)(t > 60000 ? 60000 : t));
    if (n < 0 && errno != EINTR)
        return -errno;
    return 0;
}

int reign_client_run(reign_client *c)
{
    c->stop = false;
    while (!c->stop) {
        int r = poll_once(c, -1);
        if (r < 0)
            return r;
        if (reign_client_process(c) == REIGN_ECLOSED)
            return REIGN_ECLOSED;
    }
    c->stop = false;
    return 0;
}

void reign_client_stop(reign_client *c)
{
    if (c)
        c->stop = true;
}

int reign_client_wait_connected(reign_client *c)
{
    int64_t deadline = reign__now_ns() + (int64_t)c->connect_timeout_ms * REIGN__NS_PER_MS;
    for (;;) {
        if (c->state == REIGN_CONN_CONNECTED || c->state == REIGN_CONN_RECONNECTED)
            return 0;
        if (c->state == REIGN_CONN_CLOSED) {
            if (c->fatal_err)
                return c->fatal_err;
            return strstr(c->errmsg, "credentials") ? REIGN_EAUTH : REIGN_ECLOSED;
        }
        int64_t now = reign__now_ns();
        if (now >= deadline) {
            no_answer(c);
            return REIGN_ETIMEDOUT;
        }
        int r = poll_once(c, (deadline - now + REIGN__NS_PER_MS - 1) / REIGN__NS_PER_MS);
        if (r < 0)
            return r;
        if (reign_client_process(c) == REIGN_ECLOSED && c->state != REIGN_CONN_CONNECTED)
            return c->fatal_err ? c->fatal_err : REIGN_ECLOSED;
    }
}

void reign_client_close(reign_client *c)
{
    if (!c || c->state == REIGN_CONN_CLOSED)
        return;
    c->close_requested = true;
    reign__client_wake(c);
}

static void really_free(reign_client *c)
{
    /* A clean end: the guardian leaves without acting. */
    reign__guardian_free(c->guardian);
    c->guardian = NULL;
    while (c->recipes) {
        reign__recipe *r = c->recipes;
        reign__client_detach(c, r);
        if (r->ops->destroy)
            r->ops->destroy(r);
    }
    reign__zk_free(c->zk);
    reign__sqlw_free(c->sql);
    reign__free(c->buckets);
    reign__timers_free(&c->timers);
    if (c->epoll_fd >= 0)
        close(c->epoll_fd);
    close(c->wake_fd);
    reign__free(c->zk_hosts);
    reign__free(c->uri_redacted);
    reign__free(c);
}

reign_client *reign_client_free(reign_client *c)
{
    if (!c)
        return NULL;
    if (c->depth > 0) { /* inside a callback: finish when process() unwinds */
        c->free_requested = true;
        return NULL;
    }
    really_free(c);
    return NULL;
}

reign_conn_state reign_client_state(const reign_client *c)
{
    return c->state;
}

int reign_client_session_timeout_ms(const reign_client *c)
{
    if (c->sql)
        return c->lease.lease_ms;
    return reign__zk_session_timeout_ms(c->zk);
}

int64_t reign_client_session_id(const reign_client *c)
{
    return c->zk ? reign__zk_session_id(c->zk) : 0;
}

const char *reign_client_errmsg(const reign_client *c)
{
    return c->errmsg;
}

const char *reign_client_backend(const reign_client *c)
{
    if (c->zk)
        return reign__zk_is_etcd(c->zk) ? "etcd" : "zookeeper";
    const char *store = reign__sqlw_store(c->sql);
    return !strncmp(store, "sqlite", 6)    ? "sqlite"
           : !strncmp(store, "mariadb", 7) ? "mariadb"
                                           : "postgres";
}

int64_t reign_client_takeover_ms(const reign_client *c)
{
    if (c->zk) {
        int t = reign__zk_session_timeout_ms(c->zk);
        return t > 0 ? t : c->session_timeout_ms;
    }
    /* A follower sees the dead leader's last beat (or, leases=row, version) within a poll
     * period, counts a whole lease from then on its own clock, then reaps the session, reads
     * the row again and takes it: three statements (leases=row: no reaping, two). */
    int statements = c->lease.own_rows ? 2 : 3;
    return (int64_t)c->lease.lease_ms + c->lease.poll_ms +
           statements * (int64_t)c->lease.statement_timeout_ms;
}

pid_t reign_client_guardian_pid(const reign_client *c)
{
    return c ? reign__guardian_pid(c->guardian) : 0;
}

int reign_client_guard_pgid(reign_client *c, pid_t pgid)
{
    if (!c || pgid <= 1)
        return REIGN_EINVAL;
    if (!c->guardian)
        return REIGN_ENOTSUP;
    return reign__guardian_pgid(c->guardian, true, pgid);
}

int reign_client_unguard_pgid(reign_client *c, pid_t pgid)
{
    if (!c || pgid <= 1)
        return REIGN_EINVAL;
    return c->guardian ? reign__guardian_pgid(c->guardian, false, pgid) : 0;
}

void reign__client_guard_lease(reign_client *c, bool add, const char *name, const char *owner,
                               const char *guid)
{
    if (c->guardian)
        reign__guardian_lease(c->guardian, add, name, owner, guid);
}

void reign__client_guard_session(reign_client *c, const char *guid)
{
    if (c->guarded_session[0])
        reign__client_guard_lease(c, false, REIGN__GUARDIAN_SESSION, "-", c->guarded_session);
    reign__strlcpy(c->guarded_session, guid ? guid : "", sizeof c->guarded_session);
    if (guid)
        reign__client_guard_lease(c, true, REIGN__GUARDIAN_SESSION, "-", guid);
}

void *reign_client_userdata(const reign_client *c)
{
    return c->opts.userdata;
}

void reign__client_guard_term(reign_client *c, bool add, const char *path, const void *rec,
                              size_t len)
{
    if (c->guardian && c->zk)
        reign__guardian_term(c->guardian, add, path, rec, len);
}
