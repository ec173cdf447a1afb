/*
 * config.c - what a store URI and the client options say (config.h): the scheme and the
 * store's address, reign's parameters and those of the SQL client libraries, timeouts and
 * retries, the lease timing and its safety checks, the suspend policy, the guardian, the
 * credentials.  One reading, reign__client_config_read(), serves both reign_uri_check() and
 * reign_client_new() (client.c), so a URI the check accepts is one the client starts with, and
 * each mistake has one message.  Also reign_uri_redact(), the URI as it may be logged.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define DEFAULT_SESSION_TIMEOUT_MS 10000
#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define DEFAULT_OP_TIMEOUT_MS      10000
#define DEFAULT_RETRY_PERIOD_MS    1000
#define DEFAULT_RETRY_MAX          10

/* ---- the parts of a URI --------------------------------------------------------------------- */

/* The program's default, overridden by the URI's guardian=, and REIGN_GUARDIAN=off over all. */
static int want_guardian(const reign__client_config *cfg, const reign__uri *u, bool *on, char *err,
                         size_t errlen)
{
    *on = cfg->opts.guardian == REIGN_GUARDIAN_ON;
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
static int parse_policy(reign__client_config *cfg, const reign__uri *u, char *err, size_t errlen)
{
    cfg->policy = cfg->opts.suspend_policy;
    const char *sp = reign__uri_param(u, "suspend_policy");
    if (!cfg->policy && sp) {
        if (strcmp(sp, "deadline") == 0) {
            cfg->policy = REIGN_SUSPEND_DEADLINE;
        } else if (strcmp(sp, "immediate") == 0) {
            cfg->policy = REIGN_SUSPEND_IMMEDIATE;
        } else {
            reign__errf(err, errlen, "suspend_policy must be 'deadline' or 'immediate', not '%s'",
                        sp);
            return REIGN_EURI;
        }
    }
    if (!cfg->policy)
        cfg->policy = REIGN_SUSPEND_DEADLINE;
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
    "session_timeout_ms", "connect_timeout_ms", "op_timeout_ms", "retry_period_ms", "retry_max",
    "suspend_policy",     "password_file",      "guardian",      "history",         NULL};

static const char *const etcd_params[] = {"session_timeout_ms",
                                          "connect_timeout_ms",
                                          "op_timeout_ms",
                                          "retry_period_ms",
                                          "retry_max",
                                          "suspend_policy",
                                          "password_file",
                                          "guardian",
                                          "cacert",
                                          "cert",
                                          "key",
                                          "history",
                                          "api",
                                          NULL};

static bool is_etcd_scheme(const char *s)
{
    return !strcmp(s, "etcd") || !strcmp(s, "etcds");
}

/* A TLS file named by the URI: it must be there and readable now, not at the first request. */
static int tls_file(const reign__uri *u, const char *key, const char **out, char *err,
                    size_t errlen)
{
    const char *v = reign__uri_param(u, key);
    if (!v)
        return 0;
    if (!strcmp(u->scheme, "etcd")) {
        reign__errf(err, errlen, "parameter '%s' is for etcds:// (TLS), not etcd://", key);
        return REIGN_EURI;
    }
    if (!*v || access(v, R_OK) < 0) {
        reign__errf(err, errlen, "parameter '%s': cannot read '%s': %s", key, v,
                    *v ? strerror(errno) : "empty path");
        return REIGN_EURI;
    }
    *out = v;
    return 0;
}

static int configure_etcd(reign__client_config *cfg, const reign__uri *u, char *err, size_t errlen)
{
    reign__zk_config *zc = &cfg->zk;
    int r = 0;
    reign__zk_tls *tf = &zc->tls_files;
    if ((r = tls_file(u, "cacert", &tf->ca, err, errlen)) < 0 ||
        (r = tls_file(u, "cert", &tf->cert, err, errlen)) < 0 ||
        (r = tls_file(u, "key", &tf->key, err, errlen)) < 0)
        return r;
    if (!tf->cert != !tf->key) {
        reign__errf(err, errlen, "a client certificate needs both cert= and key=");
        return REIGN_EURI;
    }
    zc->tls = !strcmp(u->scheme, "etcds");
    const char *api = reign__uri_param(u, "api");
    if (api && strcmp(api, "grpc") && strcmp(api, "gateway")) {
        reign__errf(err, errlen, "parameter 'api': 'grpc' or 'gateway', not '%s'", api);
        return REIGN_EURI;
    }
    zc->etcd_gateway = api && !strcmp(api, "gateway");
    if (u->n_hosts == 0) {
        reign__errf(err, errlen, "an %s:// URI needs at least one host:port", u->scheme);
        return REIGN_EURI;
    }
    const char *prefix = u->path;
    size_t pl = strlen(prefix);
    if (pl > 1 && (prefix[pl - 1] == '/' || strstr(prefix, "//"))) {
        reign__errf(err, errlen, "bad key prefix '%s': empty path component", prefix);
        return REIGN_EURI;
    }
    if (!(cfg->hosts = reign__uri_hosts_string(u, 2379)))
        return REIGN_ENOMEM;
    zc->etcd_members = cfg->hosts;
    zc->etcd_prefix = pl > 1 ? prefix : "";
    return 0;
}

static int configure_zk(reign__client_config *cfg, const reign__uri *u, char *err, size_t errlen)
{
    reign__zk_config *zc = &cfg->zk;
    bool etcd = is_etcd_scheme(u->scheme);
    for (size_t i = 0; i < u->n_params && !etcd; i++) {
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
    int r = reign__uri_check_params(u, etcd ? etcd_params : zk_params, err, errlen);
    if (r == 0 && etcd)
        r = configure_etcd(cfg, u, err, errlen);
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
    const reign_client_options *o = &cfg->opts;
    cfg->session_timeout_ms =
        pick(o->session_timeout_ms, p[0].value, p[0].have, DEFAULT_SESSION_TIMEOUT_MS);
    cfg->connect_timeout_ms =
        pick(o->connect_timeout_ms, p[1].value, p[1].have, DEFAULT_CONNECT_TIMEOUT_MS);
    zc->session_timeout_ms = cfg->session_timeout_ms;
    zc->op_timeout_ms = pick(o->op_timeout_ms, p[2].value, p[2].have, DEFAULT_OP_TIMEOUT_MS);
    zc->retry_period_ms = pick(o->retry_period_ms, p[3].value, p[3].have, DEFAULT_RETRY_PERIOD_MS);
    zc->retry_max = o->retry_max ? (o->retry_max < 0 ? 0 : o->retry_max)
                                 : (p[4].have ? (int)p[4].value : DEFAULT_RETRY_MAX);
    if ((r = parse_policy(cfg, u, err, errlen)) < 0)
        return r;
    if ((r = read_credentials(u, NULL, &cfg->password, err, errlen)) < 0)
        return r;
    zc->user = u->user;
    zc->password = cfg->password;
    return 0;
}

static const char *const sql_params[] = {"lease_ms",
                                         "renew_ms",
                                         "poll_ms",
                                         "statement_timeout_ms",
                                         "connect_timeout_ms",
                                         "retry_period_ms",
                                         "table",
                                         "data_center",
                                         "suspend_policy",
                                         "password_file",
                                         "guardian",
                                         "leases",
                                         "history",
                                         NULL};

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
static int lease_timing(reign__client_config *cfg, const int_param *p, char *err, size_t errlen)
{
    reign__lease_settings *ls = &cfg->lease;
    const reign_client_options *o = &cfg->opts;
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
    cfg->session_timeout_ms = ls->lease_ms;
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
                        "data_center, suspend_policy, password_file, guardian, leases, history%s)",
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

static int configure_sql(reign__client_config *cfg, const reign__uri *u, char *err, size_t errlen)
{
    reign__sqlw_config *sc = &cfg->sql;
    int r = sql_conn_params(u, &cfg->params, err, errlen);
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
    if ((r = lease_timing(cfg, p, err, errlen)) < 0)
        return r;
    const reign_client_options *o = &cfg->opts;
    cfg->connect_timeout_ms =
        pick(o->connect_timeout_ms, p[4].value, p[4].have, DEFAULT_CONNECT_TIMEOUT_MS);
    sc->retry_period_ms = pick(o->retry_period_ms, p[5].value, p[5].have, DEFAULT_RETRY_PERIOD_MS);
    sc->target.connect_timeout_ms = cfg->connect_timeout_ms;
    sc->target.statement_timeout_ms = cfg->lease.statement_timeout_ms;
    sc->target.table = reign__uri_param(u, "table");
    sc->dc = reign__uri_param(u, "data_center");
    if (sc->dc && !*sc->dc) {
        reign__errf(err, errlen, "data_center must not be empty");
        return REIGN_EURI;
    }
    if ((r = parse_policy(cfg, u, err, errlen)) < 0)
        return r;
    const char *leases = reign__uri_param(u, "leases");
    if (leases && strcmp(leases, "session") && strcmp(leases, "row")) {
        reign__errf(err, errlen, "leases=%s: want session (the default) or row", leases);
        return REIGN_EURI;
    }
    cfg->lease.own_rows = leases && !strcmp(leases, "row");
    const char *lib_env = sc->target.kind == REIGN__SQL_POSTGRES  ? "PGPASSWORD"
                          : sc->target.kind == REIGN__SQL_MARIADB ? "MYSQL_PWD"
                                                                  : NULL;
    if (sc->target.kind == REIGN__SQL_SQLITE && (u->user || reign__uri_param(u, "password_file"))) {
        reign__errf(err, errlen, "a sqlite:// store takes no user nor password");
        return REIGN_EURI;
    }
    if (lib_env && (r = read_credentials(u, lib_env, &cfg->password, err, errlen)) < 0)
        return r;
    sc->target.password = cfg->password;
    sc->target.params = cfg->params;
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
    if (strcmp((*u)->scheme, "zk") && !is_etcd_scheme((*u)->scheme) &&
        !is_sql_scheme((*u)->scheme)) {
        reign__errf(err, errlen,
                    "unknown URI scheme '%s' (reign speaks zk://, etcd://, etcds://, sqlite://, "
                    "mysql:// and postgres://)",
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

static void copy_options(reign__client_config *cfg, const reign_client_options *opts)
{
    if (opts)
        memcpy(&cfg->opts, opts,
               opts->size && opts->size < sizeof(*opts) ? opts->size : sizeof(*opts));
    cfg->opts.size = sizeof(cfg->opts);
}

/* How many leaderships each election's history keeps: history=N (docs/history.md). */
static int history_bound(reign__client_config *cfg, const reign__uri *u, char *err, size_t errlen)
{
    int_param p = {"history", 1, REIGN_HISTORY_MAX, 0, 0};
    int r = read_int_params(u, &p, 1, err, errlen);
    cfg->history_max = p.have ? (int)p.value : REIGN_HISTORY_DEFAULT;
    return r < 0 ? r : 0;
}

/* ---- the configuration ---------------------------------------------------------------------- */

int reign__client_config_read(reign__client_config *cfg, const char *uri,
                              const reign_client_options *opts, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof(*cfg));
    int r = parse_uri(uri, opts, &cfg->uri, err, errlen);
    if (r < 0)
        return r;
    const reign__uri *u = cfg->uri;
    copy_options(cfg, opts);
    cfg->is_zk = !strcmp(u->scheme, "zk") || is_etcd_scheme(u->scheme);
    cfg->zk.epoll_fd = -1;
    r = want_guardian(cfg, u, &cfg->guarded, err, errlen);
    if (r == 0)
        r = history_bound(cfg, u, err, errlen);
    if (r == 0 && cfg->is_zk) {
        if ((r = configure_zk(cfg, u, err, errlen)) == 0 && !cfg->zk.etcd_members &&
            !(cfg->hosts = zk_hosts(u, err, errlen)))
            r = err[0] ? REIGN_EURI : REIGN_ENOMEM;
        cfg->zk.hosts = cfg->hosts;
    } else if (r == 0) {
        r = configure_sql(cfg, u, err, errlen);
    }
    if (r < 0)
        reign__client_config_clear(cfg);
    return r;
}

void reign__client_config_clear(reign__client_config *cfg)
{
    if (cfg->password) {
        explicit_bzero(cfg->password, strlen(cfg->password));
        reign__free(cfg->password);
    }
    reign__free(cfg->hosts);
    reign__free(cfg->params);
    reign__uri_free(cfg->uri);
    memset(cfg, 0, sizeof(*cfg));
}

void reign__client_errbuf(char **errbuf, size_t *errlen, char *scratch, size_t n)
{
    if (!*errbuf) {
        *errbuf = scratch;
        *errlen = n;
    }
    if (*errlen)
        (*errbuf)[0] = '\0';
}

/* ---- the public URI functions --------------------------------------------------------------- */

int reign_uri_check(const char *uri, const reign_client_options *opts, char *errbuf, size_t errlen)
{
    char scratch[512];
    reign__client_errbuf(&errbuf, &errlen, scratch, sizeof(scratch));
    /* What reign_client_new() reads, by the same function, for a client that is never made. */
    reign__client_config cfg;
    int r = reign__client_config_read(&cfg, uri, opts, errbuf, errlen);
    reign__client_config_clear(&cfg);
    return r;
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
