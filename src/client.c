/*
 * client.c - a reign_client: the URI, the backend session, the loop
 * interface (fd, timeout, process), connection states as the application
 * sees them, and the safety deadline shared by every leadership held on the
 * session.  Recipes attach to a client through client_internal.h.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"
#include "uri.h"

#define DEFAULT_SESSION_TIMEOUT_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_OP_TIMEOUT_MS      10000
#define DEFAULT_RETRY_PERIOD_MS    1000
#define DEFAULT_RETRY_MAX          10

struct reign_client {
    reign_client_options opts;
    reign__logger log;
    char *uri_redacted;
    int wake_fd;
    reign__timers timers;
    reign__zk *zk;
    reign_conn_state state;
    reign_suspend_policy policy;
    int session_timeout_ms; /* requested */
    int connect_timeout_ms;
    int64_t suspended_at_ns;
    int validity_holders;
    reign__timer connect_timer;
    reign__timer heartbeat_timer;
    reign__timer deadline_timer;
    reign__recipe *recipes;
    unsigned visit; /* marks recipes already called in one sweep */
    bool recipes_changed;
    int depth; /* nesting of process() */
    bool stop;
    bool close_requested;
    bool free_requested;
    bool connect_timed_out;
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

reign__timers *reign__client_timers(reign_client *c)
{
    return &c->timers;
}

const reign__logger *reign__client_log(const reign_client *c)
{
    return &c->log;
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
}

void reign__client_detach(reign_client *c, reign__recipe *r)
{
    c->recipes_changed = true;
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
    int t = reign__zk_session_timeout_ms(c->zk);
    return (int64_t)(t > 0 ? t : c->session_timeout_ms) * REIGN__NS_PER_MS;
}

int64_t reign__client_valid_until(const reign_client *c)
{
    int64_t ack = reign__zk_last_ack_ns(c->zk);
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
    if (c->state == REIGN_CONN_SUSPENDED)
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
    bool suspended_past = c->state == REIGN_CONN_SUSPENDED && now >= lost_at(c);
    if (c->validity_holders > 0 && now >= reign__client_valid_until(c))
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

static void connect_timeout_cb(reign__timer *t, void *arg)
{
    reign_client *c = arg;
    if (c->state != REIGN_CONN_CONNECTING)
        return;
    c->connect_timed_out = true;
    snprintf(c->errmsg, sizeof(c->errmsg), "no ZooKeeper server answered at %s within %d ms",
             c->uri_redacted, c->connect_timeout_ms);
    reign__log(&c->log, REIGN_LOG_WARN, "%s; still trying", c->errmsg);
}

static void on_zk_state(void *arg, reign__zk_state st)
{
    reign_client *c = arg;
    switch (st) {
    case REIGN__ZK_CONNECTED:
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
        set_state(c, REIGN_CONN_LOST);
        c->state = REIGN_CONN_CONNECTING; /* a new session is on its way */
        break;
    case REIGN__ZK_FATAL:
        snprintf(c->errmsg, sizeof(c->errmsg), "%s", reign__zk_errmsg(c->zk));
        set_state(c, REIGN_CONN_CLOSED);
        break;
    }
}

/* ---- construction ------------------------------------------------------- */

static int read_password_file(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        reign__errf(err, errlen, "cannot read password_file '%s': %s", path, strerror(errno));
        return REIGN_EAUTH;
    }
    char line[1024];
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        reign__errf(err, errlen, "password_file '%s' is empty", path);
        return REIGN_EAUTH;
    }
    fclose(f);
    line[strcspn(line, "\r\n")] = '\0';
    *out = reign__strdup(line);
    explicit_bzero(line, sizeof(line));
    return *out ? 0 : REIGN_ENOMEM;
}

static int pick(int opt, long uri_value, int have_uri, int def)
{
    if (opt)
        return opt;
    return have_uri ? (int)uri_value : def;
}

static const char *const known_params[] = {
    "session_timeout_ms", "connect_timeout_ms", "op_timeout_ms", "retry_period_ms",
    "retry_max",          "suspend_policy",     "password_file", NULL};

static int configure(reign_client *c, const reign__uri *u, reign__zk_config *zc, char **password,
                     char *err, size_t errlen)
{
    int r = reign__uri_check_params(u, known_params, err, errlen);
    if (r < 0)
        return r;
    struct {
        const char *key;
        long min, max, value;
        int have;
    } p[] = {
        {"session_timeout_ms", 100, 3600000, 0, 0},
        {"connect_timeout_ms", 1, 3600000, 0, 0},
        {"op_timeout_ms", 1, 3600000, 0, 0},
        {"retry_period_ms", 0, 3600000, 0, 0},
        {"retry_max", 0, 1000, 0, 0},
    };
    for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++) {
        r = reign__uri_param_int(u, p[i].key, p[i].min, p[i].max, &p[i].value, err, errlen);
        if (r < 0)
            return r;
        p[i].have = r;
    }
    const reign_client_options *o = &c->opts;
    c->session_timeout_ms =
        pick(o->session_timeout_ms, p[0].value, p[0].have, DEFAULT_SESSION_TIMEOUT_MS);
    c->connect_timeout_ms =
        pick(o->connect_timeout_ms, p[1].value, p[1].have, DEFAULT_CONNECT_TIMEOUT_MS);
    zc->session_timeout_ms = c->session_timeout_ms;
    zc->op_timeout_ms = pick(o->op_timeout_ms, p[2].value, p[2].have, DEFAULT_OP_TIMEOUT_MS);
    zc->retry_period_ms = pick(o->retry_period_ms, p[3].value, p[3].have, DEFAULT_RETRY_PERIOD_MS);
    zc->retry_max = o->retry_max ? (o->retry_max < 0 ? 0 : o->retry_max)
                                 : (p[4].have ? (int)p[4].value : DEFAULT_RETRY_MAX);
    if (o->session_timeout_ms < 0 || o->connect_timeout_ms < 0 || o->op_timeout_ms < 0 ||
        o->retry_period_ms < 0) {
        reign__errf(err, errlen, "negative timeout in the client options");
        return REIGN_EINVAL;
    }

    c->policy = o->suspend_policy;
    const char *sp = reign__uri_param(u, "suspend_policy");
    if (!c->policy && sp) {
        if (strcmp(sp, "deadline") == 0) {
            c->policy = REIGN_SUSPEND_DEADLINE;
        } else if (strcmp(sp, "immediate") == 0) {
            c->policy = REIGN_SUSPEND_IMMEDIATE;
        } else {
            reign__errf(err, errlen, "suspend_policy must be 'deadline' or 'immediate', not '%s'",
                        sp);
            return REIGN_EURI;
        }
    }
    if (!c->policy)
        c->policy = REIGN_SUSPEND_DEADLINE;

    /* Credentials: URI, else environment, else file; never on their own
     * only on a command line, and never logged. */
    if (u->user) {
        if (!*u->user) {
            reign__errf(err, errlen, "empty user name in the URI");
            return REIGN_EAUTH;
        }
        const char *pf = reign__uri_param(u, "password_file");
        const char *env = getenv("REIGN_PASSWORD");
        if (u->password) {
            *password = reign__strdup(u->password);
        } else if (env && *env) {
            *password = reign__strdup(env);
        } else if (pf) {
            r = read_password_file(pf, password, err, errlen);
            if (r < 0)
                return r;
        } else {
            reign__errf(err, errlen,
                        "no password for user '%s': set REIGN_PASSWORD or password_file=PATH",
                        u->user);
            return REIGN_EAUTH;
        }
        if (!*password)
            return REIGN_ENOMEM;
        zc->user = u->user;
        zc->password = *password;
    } else if (reign__uri_param(u, "password_file")) {
        reign__errf(err, errlen, "password_file given but no user in the URI ('zk://USER@...')");
        return REIGN_EAUTH;
    }
    return 0;
}

static char *zk_hosts(const reign__uri *u, char *err, size_t errlen)
{
    if (u->n_hosts == 0) {
        reign__errf(err, errlen, "a zk:// URI needs at least one host:port");
        return NULL;
    }
    const char *chroot = u->path;
    size_t cl = strlen(chroot);
    if (cl == 1)
        chroot = "", cl = 0; /* "/" is the root itself */
    if (cl && (chroot[cl - 1] == '/' || strstr(chroot, "//"))) {
        reign__errf(err, errlen, "bad chroot '%s': empty path component", chroot);
        return NULL;
    }
    char *hosts = reign__uri_hosts_string(u, 2181);
    if (!hosts)
        return NULL;
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, hosts);
    reign__buf_puts(&b, chroot);
    reign__free(hosts);
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

int reign_client_new(reign_client **ret, const char *uri, const reign_client_options *opts,
                     char *errbuf, size_t errlen)
{
    char scratch[512];
    if (!errbuf) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (errlen)
        errbuf[0] = '\0';
    if (!ret || !uri) {
        reign__errf(errbuf, errlen, "no URI");
        return REIGN_EINVAL;
    }
    *ret = NULL;
    if (opts && opts->size && opts->size < offsetof(reign_client_options, userdata)) {
        reign__errf(errbuf, errlen, "reign_client_options.size is too small");
        return REIGN_EINVAL;
    }
    reign__uri *u = NULL;
    int r = reign__uri_parse(uri, &u, errbuf, errlen);
    if (r < 0)
        return r;
    if (strcmp(u->scheme, "zk") != 0) {
        bool later = !strcmp(u->scheme, "sqlite") || !strcmp(u->scheme, "mysql") ||
                     !strcmp(u->scheme, "postgres") || !strcmp(u->scheme, "postgresql");
        reign__errf(errbuf, errlen, "%s scheme '%s' (this build speaks zk://)",
                    later ? "this build does not support the" : "unknown URI", u->scheme);
        reign__uri_free(u);
        return later ? REIGN_ENOTSUP : REIGN_EURI;
    }

    reign_client *c = reign__calloc(1, sizeof(*c));
    if (!c) {
        reign__uri_free(u);
        return REIGN_ENOMEM;
    }
    if (opts)
        memcpy(&c->opts, opts,
               opts->size && opts->size < sizeof(*opts) ? opts->size : sizeof(*opts));
    c->opts.size = sizeof(c->opts);
    c->log.fn = c->opts.log_fn;
    c->log.userdata = c->opts.userdata;
    c->log.level = c->opts.log_level;
    c->wake_fd = -1;
    c->state = REIGN_CONN_CONNECTING;
    reign__timer_init(&c->connect_timer, connect_timeout_cb, c);
    reign__timer_init(&c->heartbeat_timer, heartbeat_cb, c);
    reign__timer_init(&c->deadline_timer, deadline_cb, c);

    char *password = NULL;
    char *hosts = NULL;
    reign__zk_config zc = {0};
    size_t need = reign_uri_redact(uri, NULL, 0) + 1;
    c->uri_redacted = reign__malloc(need);
    if (!c->uri_redacted) {
        r = REIGN_ENOMEM;
        goto fail;
    }
    reign_uri_redact(uri, c->uri_redacted, need);
    r = configure(c, u, &zc, &password, errbuf, errlen);
    if (r < 0)
        goto fail;
    hosts = zk_hosts(u, errbuf, errlen);
    if (!hosts) {
        r = errbuf[0] ? REIGN_EURI : REIGN_ENOMEM;
        goto fail;
    }
    c->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->wake_fd < 0) {
        r = -errno;
        reign__errf(errbuf, errlen, "eventfd: %s", strerror(errno));
        goto fail;
    }
    zc.hosts = hosts;
    zc.log = &c->log;
    zc.timers = &c->timers;
    zc.on_state = on_zk_state;
    zc.state_arg = c;
    zc.wake_fd = c->wake_fd;
    r = reign__zk_new(&c->zk, &zc, errbuf, errlen);
    if (r < 0)
        goto fail;
    reign__timer_start(&c->timers, &c->connect_timer,
                       reign__now_ns() + (int64_t)c->connect_timeout_ms * REIGN__NS_PER_MS);
    reign__log(&c->log, REIGN_LOG_INFO, "client: connecting to %s (session timeout %d ms)",
               c->uri_redacted, c->session_timeout_ms);
    if (password) {
        explicit_bzero(password, strlen(password));
        reign__free(password);
    }
    reign__free(hosts);
    reign__uri_free(u);
    *ret = c;
    return 0;

fail:
    if (password) {
        explicit_bzero(password, strlen(password));
        reign__free(password);
    }
    reign__free(hosts);
    reign__uri_free(u);
    if (c->wake_fd >= 0)
        close(c->wake_fd);
    reign__free(c->uri_redacted);
    reign__timers_free(&c->timers);
    reign__free(c);
    return r;
}

/* ---- the loop ----------------------------------------------------------- */

int reign_client_get_fd(const reign_client *c)
{
    return c->wake_fd;
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
    reign__zk_close(c->zk);
    reign__zk_dispatch(c->zk);
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
    while (read(c->wake_fd, &v, sizeof(v)) > 0) {
    }
    int64_t now = reign__now_ns();
    /* Deadlines first: after a stall, a leader must demote before it acts
     * on anything that was queued meanwhile. */
    run_deadlines(c, now);
    reign__zk_dispatch(c->zk);
    reign__timers_run(&c->timers, reign__now_ns());
    if (c->close_requested)
        do_close(c);
    run_deadlines(c, reign__now_ns());
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
    struct pollfd pfd = {.fd = c->wake_fd, .events = POLLIN};
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
        if (c->state == REIGN_CONN_CLOSED)
            return strstr(c->errmsg, "credentials") ? REIGN_EAUTH : REIGN_ECLOSED;
        int64_t now = reign__now_ns();
        if (now >= deadline) {
            snprintf(c->errmsg, sizeof(c->errmsg),
                     "no ZooKeeper server answered at %s within %d ms", c->uri_redacted,
                     c->connect_timeout_ms);
            return REIGN_ETIMEDOUT;
        }
        int r = poll_once(c, (deadline - now + REIGN__NS_PER_MS - 1) / REIGN__NS_PER_MS);
        if (r < 0)
            return r;
        if (reign_client_process(c) == REIGN_ECLOSED && c->state != REIGN_CONN_CONNECTED)
            return REIGN_ECLOSED;
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
    while (c->recipes) {
        reign__recipe *r = c->recipes;
        reign__client_detach(c, r);
        if (r->ops->destroy)
            r->ops->destroy(r);
    }
    reign__zk_free(c->zk);
    reign__timers_free(&c->timers);
    close(c->wake_fd);
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
    return reign__zk_session_timeout_ms(c->zk);
}

int64_t reign_client_session_id(const reign_client *c)
{
    return reign__zk_session_id(c->zk);
}

const char *reign_client_errmsg(const reign_client *c)
{
    return c->errmsg;
}

void *reign_client_userdata(const reign_client *c)
{
    return c->opts.userdata;
}

size_t reign_uri_redact(const char *uri, char *out, size_t outlen)
{
    /* scheme://user:password@host -> scheme://user:***@host; only the
     * authority (up to the first '/', '?' after "://") is looked at. */
    const char *p = strstr(uri, "://");
    const char *colon = NULL, *at = NULL;
    if (p) {
        const char *auth = p + 3;
        size_t alen = strcspn(auth, "/?#");
        for (const char *q = auth; q < auth + alen; q++)
            if (*q == '@')
                at = q;
        if (at)
            colon = memchr(auth, ':', (size_t)(at - auth));
    }
    if (!colon) {
        size_t n = strlen(uri);
        if (outlen)
            reign__strlcpy(out, uri, outlen);
        return n;
    }
    int n = snprintf(out, outlen, "%.*s:***%s", (int)(colon - uri), uri, at);
    return n < 0 ? 0 : (size_t)n;
}
