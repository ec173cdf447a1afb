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
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client_internal.h"
#include "guardian/guardian.h"
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
    int epoll_fd; /* with a guardian: the descriptor the loop polls (wake_fd and its socket) */
    reign__guardian *guardian;
    char *zk_hosts; /* for the guardian */
    reign__timers timers;
    reign__zk *zk;    /* zk:// */
    reign__sqlw *sql; /* sqlite://, mysql://, postgres:// */
    reign__lease_settings lease;
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

reign__recipe *reign__client_find(reign_client *c, const reign__recipe_ops *ops)
{
    for (reign__recipe *r = c->recipes; r; r = r->next)
        if (r->ops == ops)
            return r;
    return NULL;
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
    int t = c->zk ? reign__zk_session_timeout_ms(c->zk) : 0;
    return (int64_t)(t > 0 ? t : c->session_timeout_ms) * REIGN__NS_PER_MS;
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
    if (c->zk)
        snprintf(c->errmsg, sizeof(c->errmsg), "no ZooKeeper server answered at %s within %d ms",
                 c->uri_redacted, c->connect_timeout_ms);
    else if (!c->errmsg[0])
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

static void call_changed(reign__recipe *r, void *arg)
{
    if (r->ops->changed)
        r->ops->changed(r);
}

static void on_sql_change(void *arg)
{
    for_each_recipe(arg, call_changed, NULL);
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

/* The program's default, overridden by the URI's guardian=, and REIGN_GUARDIAN=off over all. */
static int want_guardian(const reign_client *c, const reign__uri *u, bool *on, char *err,
                         size_t errlen)
{
    *on = c->opts.guardian == REIGN_GUARDIAN_ON;
    const char *v = reign__uri_param(u, "guardian");
    if (v) {
        if (strcmp(v, "on") && strcmp(v, "off")) {
            reign__errf(err, errlen, "guardian must be 'on' or 'off', not '%s'", v);
            return REIGN_EURI;
        }
        *on = !strcmp(v, "on");
    }
    const char *env = getenv("REIGN_GUARDIAN");
    if (env && !strcmp(env, "off"))
        *on = false;
    return 0;
}

/* The client's descriptor becomes an epoll set of the wake-up eventfd and the guardian's socket. */
static int start_guardian(reign_client *c, char *err, size_t errlen)
{
    c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = NULL}};
    if (c->epoll_fd < 0 || epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->wake_fd, &ev) < 0) {
        reign__errf(err, errlen, "epoll: %s", strerror(errno));
        return -errno;
    }
    return reign__guardian_new(&c->guardian, c->epoll_fd, &c->log, &c->timers);
}

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

/* suspend_policy: the options, else the URI, else deadline. */
static int parse_policy(reign_client *c, const reign__uri *u, char *err, size_t errlen)
{
    c->policy = c->opts.suspend_policy;
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
    return 0;
}

/*
 * Credentials: URI, else environment, else file; never on their own only on
 * a command line, and never logged.  *password stays NULL without a user.
 * `lib_env` (PGPASSWORD, MYSQL_PWD): a SQL server's client library finds a
 * password of its own (that variable, ~/.pgpass, option files), so none is
 * needed, the user may be absent too (the library's default), and that
 * variable is read here, after ours, because the guardian's environment
 * has no password in it (guardian.c): it must be told.
 */
static int read_credentials(const reign__uri *u, const char *lib_env, char **password, char *err,
                            size_t errlen)
{
    if (lib_env) {
        const char *pf = reign__uri_param(u, "password_file");
        const char *env = getenv("REIGN_PASSWORD"), *lenv = getenv(lib_env);
        if (u->user && !*u->user) {
            reign__errf(err, errlen, "empty user name in the URI");
            return REIGN_EAUTH;
        }
        if (u->password)
            *password = reign__strdup(u->password);
        else if (env && *env)
            *password = reign__strdup(env);
        else if (pf)
            return read_password_file(pf, password, err, errlen);
        else if (lenv && *lenv)
            *password = reign__strdup(lenv);
        else
            return 0;
        return *password ? 0 : REIGN_ENOMEM;
    }
    if (!u->user) {
        if (reign__uri_param(u, "password_file")) {
            reign__errf(err, errlen, "password_file given but no user in the URI ('%s://USER@...')",
                        u->scheme);
            return REIGN_EAUTH;
        }
        return 0;
    }
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
        int r = read_password_file(pf, password, err, errlen);
        if (r < 0)
            return r;
    } else {
        reign__errf(err, errlen,
                    "no password for user '%s': set REIGN_PASSWORD or password_file=PATH", u->user);
        return REIGN_EAUTH;
    }
    return *password ? 0 : REIGN_ENOMEM;
}

typedef struct int_param {
    const char *key;
    long min, max, value;
    int have;
} int_param;

static int read_int_params(const reign__uri *u, int_param *p, size_t n, char *err, size_t errlen)
{
    for (size_t i = 0; i < n; i++) {
        int r = reign__uri_param_int(u, p[i].key, p[i].min, p[i].max, &p[i].value, err, errlen);
        if (r < 0)
            return r;
        p[i].have = r;
    }
    return 0;
}

static const char *const zk_params[] = {
    "session_timeout_ms", "connect_timeout_ms", "op_timeout_ms",
    "retry_period_ms",    "retry_max",          "suspend_policy",
    "password_file",      "guardian",           NULL};

static int configure_zk(reign_client *c, const reign__uri *u, reign__zk_config *zc, char **password,
                        char *err, size_t errlen)
{
    for (size_t i = 0; i < u->n_params; i++) {
        const char *k = u->params[i].key;
        if (!strncmp(k, "ssl", 3) || !strncmp(k, "tls", 3)) {
            /* Say why rather than "unknown": see reign(1), GLOBAL OPTIONS. */
            reign__errf(err, errlen,
                        "parameter '%s': TLS to ZooKeeper is not supported (the installed "
                        "ZooKeeper C client is built without OpenSSL); use a TLS tunnel",
                        k);
            return REIGN_ENOTSUP;
        }
    }
    int r = reign__uri_check_params(u, zk_params, err, errlen);
    if (r < 0)
        return r;
    int_param p[] = {
        {"session_timeout_ms", 100, 3600000, 0, 0},
        {"connect_timeout_ms", 1, 3600000, 0, 0},
        {"op_timeout_ms", 1, 3600000, 0, 0},
        {"retry_period_ms", 0, 3600000, 0, 0},
        {"retry_max", 0, 1000, 0, 0},
    };
    r = read_int_params(u, p, sizeof(p) / sizeof(p[0]), err, errlen);
    if (r < 0)
        return r;
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
    if ((r = parse_policy(c, u, err, errlen)) < 0)
        return r;
    if ((r = read_credentials(u, NULL, password, err, errlen)) < 0)
        return r;
    zc->user = u->user;
    zc->password = *password;
    return 0;
}

static const char *const sql_params[] = {
    "lease_ms",           "renew_ms",        "poll_ms",  "statement_timeout_ms",
    "connect_timeout_ms", "retry_period_ms", "table",    "data_center",
    "suspend_policy",     "password_file",   "guardian", NULL};

/* The store and its address, from the scheme, hosts and path. */
static int sql_target(const reign__uri *u, reign__sql_target *t, char *err, size_t errlen)
{
    const char *s = u->scheme;
    if (!strcmp(s, "sqlite")) {
        t->kind = REIGN__SQL_SQLITE;
        if (u->n_hosts || u->user) {
            reign__errf(err, errlen,
                        "a sqlite:// URI names a local file and no host: write "
                        "sqlite:///absolute/path/file.db");
            return REIGN_EURI;
        }
        if (u->path[0] != '/' || u->path[1] == '\0' || u->path[strlen(u->path) - 1] == '/') {
            reign__errf(err, errlen,
                        "a sqlite:// URI needs an absolute file path, as in "
                        "sqlite:///var/lib/reign/reign.db");
            return REIGN_EURI;
        }
        t->path = u->path;
        return 0;
    }
    t->kind = !strcmp(s, "postgres") || !strcmp(s, "postgresql") ? REIGN__SQL_POSTGRES
                                                                 : REIGN__SQL_MARIADB;
    if (u->n_hosts != 1) {
        reign__errf(err, errlen, "a %s:// URI needs exactly one host[:port]", s);
        return REIGN_EURI;
    }
    const char *db = u->path[0] == '/' ? u->path + 1 : u->path;
    if (!*db || strchr(db, '/')) {
        reign__errf(err, errlen, "a %s:// URI needs a database name as its path: %s://USER@HOST/DB",
                    s, s);
        return REIGN_EURI;
    }
    t->host = u->hosts[0].host;
    t->port = u->hosts[0].port;
    t->database = db;
    t->user = u->user;
    return 0;
}

/*
 * The lease timing, checked against the safety rule (client_internal.h):
 * a leader must be able to renew three times before its bound, a statement
 * must end before the next renewal is due, and a follower must look at least
 * once per lease.
 */
static int lease_timing(reign_client *c, const int_param *p, char *err, size_t errlen)
{
    reign__lease_settings *ls = &c->lease;
    const reign_client_options *o = &c->opts;
    ls->lease_ms = pick(o->session_timeout_ms, p[0].value, p[0].have, DEFAULT_SESSION_TIMEOUT_MS);
    ls->margin_ms = ls->lease_ms / 10 > 50 ? ls->lease_ms / 10 : 50;
    ls->renew_ms = p[1].have ? (int)p[1].value : ls->lease_ms / 5;
    ls->poll_ms = p[2].have ? (int)p[2].value : ls->renew_ms;
    ls->statement_timeout_ms =
        p[3].have ? (int)p[3].value : (ls->renew_ms / 2 < 5000 ? ls->renew_ms / 2 : 5000);
    int room = ls->lease_ms - ls->margin_ms;
    if (ls->lease_ms < 300) {
        reign__errf(err, errlen, "lease_ms=%d is too short: at least 300", ls->lease_ms);
        return REIGN_EINVAL;
    }
    if (ls->renew_ms * 3 > room) {
        reign__errf(err, errlen,
                    "renew_ms=%d is too long for lease_ms=%d: a leader must be able to renew "
                    "three times within the lease less its safety margin (%d ms), so "
                    "renew_ms <= %d",
                    ls->renew_ms, ls->lease_ms, room, room / 3);
        return REIGN_EINVAL;
    }
    if (ls->statement_timeout_ms >= ls->renew_ms) {
        reign__errf(err, errlen,
                    "statement_timeout_ms=%d must be shorter than renew_ms=%d: a slow statement "
                    "would delay the next renewal",
                    ls->statement_timeout_ms, ls->renew_ms);
        return REIGN_EINVAL;
    }
    if (ls->poll_ms > ls->lease_ms) {
        reign__errf(err, errlen,
                    "poll_ms=%d is longer than lease_ms=%d: followers would miss expired leases",
                    ls->poll_ms, ls->lease_ms);
        return REIGN_EINVAL;
    }
    c->session_timeout_ms = ls->lease_ms;
    return 0;
}

/*
 * Checks the parameters: reign's own, else (MariaDB, PostgreSQL) one the store's client library
 * takes, collected into *params as "key=value" lines for it.
 */
static int sql_conn_params(const reign__uri *u, char **params, char *err, size_t errlen)
{
    reign__sql_kind kind = !strcmp(u->scheme, "sqlite") ? REIGN__SQL_SQLITE
                           : !strcmp(u->scheme, "postgres") || !strcmp(u->scheme, "postgresql")
                               ? REIGN__SQL_POSTGRES
                               : REIGN__SQL_MARIADB;
    reign__buf b;
    reign__buf_init(&b);
    int r = 0;
    for (size_t i = 0; i < u->n_params && r >= 0; i++) {
        const reign__uri_kv *kv = &u->params[i];
        bool ours = false;
        for (size_t k = 0; sql_params[k] && !ours; k++)
            ours = !strcmp(sql_params[k], kv->key);
        if (ours)
            continue;
        r = reign__sql_conn_param(kind, kv->key, kv->value, err, errlen);
        if (r == 0) {
            reign__errf(err, errlen,
                        "unknown parameter '%s' (reign's: lease_ms, renew_ms, poll_ms, "
                        "statement_timeout_ms, connect_timeout_ms, retry_period_ms, table, "
                        "data_center, suspend_policy, password_file, guardian%s)",
                        kv->key,
                        kind == REIGN__SQL_POSTGRES  ? "; and libpq's: sslmode, sslrootcert, ..."
                        : kind == REIGN__SQL_MARIADB ? "; and ssl, ssl_ca, ssl_cert, ssl_key, "
                                                       "ssl_verify_server_cert, option_file, ..."
                                                     : "");
            r = REIGN_EURI;
        } else if (r > 0) {
            reign__buf_printf(&b, "%s%s=%s", b.len ? "\n" : "", kv->key, kv->value);
        }
    }
    if (r >= 0 && b.oom)
        r = REIGN_ENOMEM;
    if (r < 0 || !b.len) {
        reign__buf_free(&b);
        return r < 0 ? r : 0;
    }
    *params = b.data;
    return 0;
}

static int configure_sql(reign_client *c, const reign__uri *u, reign__sqlw_config *sc,
                         char **password, char **params, char *err, size_t errlen)
{
    int r = sql_conn_params(u, params, err, errlen);
    if (r < 0)
        return r;
    int_param p[] = {
        {"lease_ms", 1, 3600000, 0, 0},           {"renew_ms", 10, 3600000, 0, 0},
        {"poll_ms", 10, 3600000, 0, 0},           {"statement_timeout_ms", 10, 3600000, 0, 0},
        {"connect_timeout_ms", 1, 3600000, 0, 0}, {"retry_period_ms", 10, 3600000, 0, 0},
    };
    if ((r = read_int_params(u, p, sizeof(p) / sizeof(p[0]), err, errlen)) < 0)
        return r;
    if ((r = sql_target(u, &sc->target, err, errlen)) < 0)
        return r;
    if ((r = lease_timing(c, p, err, errlen)) < 0)
        return r;
    const reign_client_options *o = &c->opts;
    c->connect_timeout_ms =
        pick(o->connect_timeout_ms, p[4].value, p[4].have, DEFAULT_CONNECT_TIMEOUT_MS);
    sc->retry_period_ms = pick(o->retry_period_ms, p[5].value, p[5].have, DEFAULT_RETRY_PERIOD_MS);
    sc->target.connect_timeout_ms = c->connect_timeout_ms;
    sc->target.statement_timeout_ms = c->lease.statement_timeout_ms;
    sc->target.table = reign__uri_param(u, "table");
    sc->dc = reign__uri_param(u, "data_center");
    if (sc->dc && !*sc->dc) {
        reign__errf(err, errlen, "data_center must not be empty");
        return REIGN_EURI;
    }
    if ((r = parse_policy(c, u, err, errlen)) < 0)
        return r;
    const char *lib_env = sc->target.kind == REIGN__SQL_POSTGRES  ? "PGPASSWORD"
                          : sc->target.kind == REIGN__SQL_MARIADB ? "MYSQL_PWD"
                                                                  : NULL;
    if (sc->target.kind == REIGN__SQL_SQLITE && (u->user || reign__uri_param(u, "password_file"))) {
        reign__errf(err, errlen, "a sqlite:// store takes no user nor password");
        return REIGN_EURI;
    }
    if (lib_env && (r = read_credentials(u, lib_env, password, err, errlen)) < 0)
        return r;
    sc->target.password = *password;
    sc->target.params = *params;
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

static bool is_sql_scheme(const char *s)
{
    return !strcmp(s, "sqlite") || !strcmp(s, "mysql") || !strcmp(s, "mariadb") ||
           !strcmp(s, "postgres") || !strcmp(s, "postgresql");
}

/* Once the URI is known to be good: the guardian, then the backend. */
static int start_zk(reign_client *c, const reign__uri *u, bool guarded, char **password,
                    char **hosts, char *err, size_t errlen)
{
    reign__zk_config zc = {0};
    int r = configure_zk(c, u, &zc, password, err, errlen);
    if (r < 0)
        return r;
    *hosts = zk_hosts(u, err, errlen);
    if (!*hosts)
        return err[0] ? REIGN_EURI : REIGN_ENOMEM;
    zc.hosts = *hosts;
    if (!(c->zk_hosts = reign__strdup(*hosts)))
        return REIGN_ENOMEM;
    zc.log = &c->log;
    zc.timers = &c->timers;
    zc.on_state = on_zk_state;
    zc.on_ephemeral = on_zk_ephemeral;
    zc.state_arg = c;
    zc.wake_fd = c->wake_fd;
    if (guarded && (r = start_guardian(c, err, errlen)) < 0)
        return r;
    return reign__zk_new(&c->zk, &zc, err, errlen);
}

static int start_sql(reign_client *c, const reign__uri *u, bool guarded, char **password, char *err,
                     size_t errlen)
{
    reign__sqlw_config sc = {0};
    char *params = NULL;
    int r = configure_sql(c, u, &sc, password, &params, err, errlen);
    if (r < 0) {
        reign__free(params);
        return r;
    }
    sc.target.log = &c->log;
    sc.log = &c->log;
    sc.wake_fd = c->wake_fd;
    sc.on_state = on_sql_state;
    sc.on_change = on_sql_change;
    sc.arg = c;
    if (guarded && (r = start_guardian(c, err, errlen)) == 0)
        reign__guardian_sql(c->guardian, &sc.target, sc.dc, c->lease.lease_ms);
    if (r == 0)
        r = reign__sqlw_new(&c->sql, &sc, err, errlen);
    reign__free(params);
    return r;
}

/* The URI parsed, its scheme one reign speaks, the options sane: what every use of a URI checks
 * first.  *u is the parsed URI on success. */
static int parse_uri(const char *uri, const reign_client_options *opts, reign__uri **u, char *err,
                     size_t errlen)
{
    if (!uri) {
        reign__errf(err, errlen, "no URI");
        return REIGN_EINVAL;
    }
    if (opts && opts->size && opts->size < offsetof(reign_client_options, userdata)) {
        reign__errf(err, errlen, "reign_client_options.size is too small");
        return REIGN_EINVAL;
    }
    int r = reign__uri_parse(uri, u, err, errlen);
    if (r < 0)
        return r;
    if (strcmp((*u)->scheme, "zk") && !is_sql_scheme((*u)->scheme)) {
        reign__errf(err, errlen,
                    "unknown URI scheme '%s' (reign speaks zk://, sqlite://, mysql:// and "
                    "postgres://)",
                    (*u)->scheme);
        r = REIGN_EURI;
    } else if (opts && (opts->session_timeout_ms < 0 || opts->connect_timeout_ms < 0 ||
                        opts->op_timeout_ms < 0 || opts->retry_period_ms < 0)) {
        reign__errf(err, errlen, "negative timeout in the client options");
        r = REIGN_EINVAL;
    }
    if (r < 0) {
        reign__uri_free(*u);
        *u = NULL;
    }
    return r;
}

/* The caller's message buffer, else a scratch one; emptied. */
static void use_errbuf(char **errbuf, size_t *errlen, char *scratch, size_t n)
{
    if (!*errbuf) {
        *errbuf = scratch;
        *errlen = n;
    }
    if (*errlen)
        (*errbuf)[0] = '\0';
}

static void copy_options(reign_client *c, const reign_client_options *opts)
{
    if (opts)
        memcpy(&c->opts, opts,
               opts->size && opts->size < sizeof(*opts) ? opts->size : sizeof(*opts));
    c->opts.size = sizeof(c->opts);
}

static void wipe_password(char *password)
{
    if (password) {
        explicit_bzero(password, strlen(password));
        reign__free(password);
    }
}

int reign_uri_check(const char *uri, const reign_client_options *opts, char *errbuf, size_t errlen)
{
    char scratch[512];
    use_errbuf(&errbuf, &errlen, scratch, sizeof(scratch));
    reign__uri *u = NULL;
    int r = parse_uri(uri, opts, &u, errbuf, errlen);
    if (r < 0)
        return r;
    /* What reign_client_new() reads, into a client that is never started. */
    reign_client *c = reign__calloc(1, sizeof(*c));
    char *password = NULL, *extra = NULL;
    bool guarded;
    if (!c)
        r = REIGN_ENOMEM;
    else
        copy_options(c, opts);
    if (r == 0)
        r = want_guardian(c, u, &guarded, errbuf, errlen);
    if (r == 0 && !strcmp(u->scheme, "zk")) {
        reign__zk_config zc = {0};
        if ((r = configure_zk(c, u, &zc, &password, errbuf, errlen)) == 0 &&
            !(extra = zk_hosts(u, errbuf, errlen)))
            r = errbuf[0] ? REIGN_EURI : REIGN_ENOMEM;
    } else if (r == 0) {
        reign__sqlw_config sc = {0};
        r = configure_sql(c, u, &sc, &password, &extra, errbuf, errlen);
    }
    wipe_password(password);
    reign__free(extra);
    reign__free(c);
    reign__uri_free(u);
    return r;
}

int reign_client_new(reign_client **ret, const char *uri, const reign_client_options *opts,
                     char *errbuf, size_t errlen)
{
    char scratch[512];
    use_errbuf(&errbuf, &errlen, scratch, sizeof(scratch));
    if (!ret) {
        reign__errf(errbuf, errlen, "no client to fill");
        return REIGN_EINVAL;
    }
    *ret = NULL;
    reign__uri *u = NULL;
    int r = parse_uri(uri, opts, &u, errbuf, errlen);
    if (r < 0)
        return r;
    bool is_zk = !strcmp(u->scheme, "zk");

    reign_client *c = reign__calloc(1, sizeof(*c));
    if (!c) {
        reign__uri_free(u);
        return REIGN_ENOMEM;
    }
    copy_options(c, opts);
    c->log.fn = c->opts.log_fn;
    c->log.userdata = c->opts.userdata;
    c->log.level = c->opts.log_level;
    c->wake_fd = -1;
    c->epoll_fd = -1;
    c->state = REIGN_CONN_CONNECTING;
    reign__timer_init(&c->connect_timer, connect_timeout_cb, c);
    reign__timer_init(&c->heartbeat_timer, heartbeat_cb, c);
    reign__timer_init(&c->deadline_timer, deadline_cb, c);

    char *password = NULL;
    char *hosts = NULL;
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
    bool guarded;
    if ((r = want_guardian(c, u, &guarded, errbuf, errlen)) < 0)
        goto fail;
    r = is_zk ? start_zk(c, u, guarded, &password, &hosts, errbuf, errlen)
              : start_sql(c, u, guarded, &password, errbuf, errlen);
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
    wipe_password(password);
    reign__free(hosts);
    reign__uri_free(u);
    *ret = c;
    return 0;

fail:
    wipe_password(password);
    reign__free(hosts);
    reign__uri_free(u);
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
    while (read(c->wake_fd, &v, sizeof(v)) > 0) {
    }
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
        return "zookeeper";
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
    /* Followers read when the lease runs out (or at their poll), then take it: two statements. */
    return (int64_t)c->lease.lease_ms + 2 * c->lease.statement_timeout_ms;
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
