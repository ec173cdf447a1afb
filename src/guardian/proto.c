/*
 * proto.c - the guardian's messages (proto.h): records with an "op" key.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[] = {"",       "zk",  "sql",   "lease", "unlease", "pgid",
                                       "unpgid", "bye", "hello", "term",  "unterm"};
#define N_OPS (sizeof(op_names) / sizeof(op_names[0]))

/* ---- encoding ----------------------------------------------------------- */

static int build_payload(reign__buf *out, const char *const *kv, size_t n, const void *payload,
                         size_t len)
{
    reign__buf_reset(out);
    int r = reign__record_build(out, kv, n, payload, len);
    if (r == 0 && out->len > REIGN__GMSG_MAX)
        r = REIGN_E2BIG;
    return r;
}

static int build(reign__buf *out, const char *const *kv, size_t n)
{
    return build_payload(out, kv, n, NULL, 0);
}

/* Builds the message of `pairs` (key, value), leaving out each pair whose value is NULL. */
static int build_pairs(reign__buf *out, const char *const (*pairs)[2], size_t n_pairs)
{
    const char *kv[2 * 16]; /* the most pairs a message has: 14 (op=sql) */
    size_t n = 0;
    for (size_t i = 0; i < n_pairs && n < sizeof(kv) / sizeof(kv[0]); i++)
        if (pairs[i][1]) { /* absent: not sent */
            kv[n++] = pairs[i][0];
            kv[n++] = pairs[i][1];
        }
    return build(out, kv, n);
}

static void hex(char *out, const unsigned char *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int reign__gmsg_zk(reign__buf *out, const char *hosts, int64_t session,
                   const unsigned char passwd[16], int timeout_ms, const reign__zk_access *a)
{
    static const reign__zk_access none = {0};
    char sid[17], pw[33], tmo[16];
    snprintf(sid, sizeof(sid), "%016llx", (unsigned long long)session);
    hex(pw, passwd, 16);
    snprintf(tmo, sizeof(tmo), "%d", timeout_ms);
    if (!a)
        a = &none;
    const char *const pairs[][2] = {
        {"op", "zk"},          {"hosts", hosts},      {"session", sid},
        {"passwd", pw},        {"timeout_ms", tmo},   {"root", a->root},
        {"auth", a->auth},     {"user", a->user},     {"password", a->password},
        {"cacert", a->tls.ca}, {"cert", a->tls.cert}, {"key", a->tls.key},
        {"api", a->api},
    };
    int r = build_pairs(out, pairs, sizeof(pairs) / sizeof(pairs[0]));
    explicit_bzero(pw, sizeof(pw));
    return r;
}

int reign__gmsg_sql(reign__buf *out, const reign__sql_target *t, const char *dc, int lease_ms)
{
    static const char *const kinds[] = {"", "sqlite", "mariadb", "postgres"};
    char port[16], cms[16], sms[16], lms[16];
    snprintf(lms, sizeof(lms), "%d", lease_ms);
    snprintf(port, sizeof(port), "%d", t->port);
    snprintf(cms, sizeof(cms), "%d", t->connect_timeout_ms);
    snprintf(sms, sizeof(sms), "%d", t->statement_timeout_ms);
    const char *const pairs[][2] = {
        {"op", "sql"},         {"kind", kinds[t->kind]},
        {"path", t->path},     {"host", t->host},
        {"port", port},        {"database", t->database},
        {"user", t->user},     {"password", t->password},
        {"table", t->table},   {"dc", dc},
        {"params", t->params}, {"connect_ms", cms},
        {"statement_ms", sms}, {"timeout_ms", lms},
    };
    return build_pairs(out, pairs, sizeof(pairs) / sizeof(pairs[0]));
}

int reign__gmsg_lease(reign__buf *out, bool add, const char *name, const char *owner,
                      const char *guid)
{
    const char *kv[] = {"op", add ? "lease" : "unlease", "name", name, "guid", guid, "owner",
                        owner};
    return build(out, kv, add ? 8 : 6);
}

static int with_pid(reign__buf *out, const char *op, pid_t pid)
{
    char v[16];
    snprintf(v, sizeof(v), "%d", (int)pid);
    const char *kv[] = {"op", op, "pgid", v};
    return build(out, kv, 4);
}

int reign__gmsg_pgid(reign__buf *out, bool add, pid_t pgid)
{
    return with_pid(out, add ? "pgid" : "unpgid", pgid);
}

int reign__gmsg_hello(reign__buf *out, pid_t pid)
{
    return with_pid(out, "hello", pid);
}

int reign__gmsg_term(reign__buf *out, bool add, const char *path, const void *rec, size_t len)
{
    const char *kv[] = {"op", add ? "term" : "unterm", "path", path};
    if (add && (!rec || !len))
        return REIGN_EINVAL;
    return build_payload(out, kv, 4, add ? rec : NULL, add ? len : 0);
}

int reign__gmsg_bye(reign__buf *out)
{
    const char *kv[] = {"op", "bye"};
    return build(out, kv, 2);
}

/* ---- parsing ------------------------------------------------------------ */

static int unhex(const char *s, unsigned char *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        out[i / 2] = (unsigned char)(i % 2 ? out[i / 2] | v : v << 4);
    }
    return 0;
}

/* A decimal in [min, max]. */
static int number(const reign__record *r, const char *key, long min, long max, long *out)
{
    const char *s = reign__record_get(r, key);
    if (!s || !*s || strlen(s) > 10)
        return -1;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9')
            return -1;
    long v = strtol(s, NULL, 10);
    if (v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int fail(reign__gmsg *m, char *err, size_t errlen, const char *what)
{
    reign__errf(err, errlen, "guardian message: %s", what);
    reign__gmsg_clear(m);
    return REIGN_EFOREIGN;
}

/* A node's path: "/" and names, none of them empty ("/" alone is no node of reign's). */
static bool good_path(const char *p)
{
    size_t n = strlen(p);
    return n >= 2 && p[0] == '/' && p[n - 1] != '/' && !strstr(p, "//");
}

/* A TLS file's path, if given: not empty. */
static bool good_file(const char *p)
{
    return !p || *p;
}

static int parse_term(reign__gmsg *m, char *err, size_t errlen)
{
    m->path = reign__record_get(&m->rec, "path");
    if (!m->path || !good_path(m->path))
        return fail(m, err, errlen, "term without a path");
    if (m->op == REIGN__GMSG_UNTERM)
        return 0;
    m->data = m->rec.payload;
    m->data_len = m->rec.payload_len;
    if (!m->data_len)
        return fail(m, err, errlen, "term without its record");
    /* The record the guardian will rewrite: a reign record, or nothing to do with it. */
    reign__record rec;
    int r = reign__record_parse(m->data, m->data_len, &rec);
    if (r == REIGN_ENOMEM) {
        reign__gmsg_clear(m);
        return r;
    }
    if (r < 0)
        return fail(m, err, errlen, "term whose record is not a record");
    reign__record_clear(&rec);
    return 0;
}

static int parse_zk(reign__gmsg *m, char *err, size_t errlen)
{
    const reign__record *r = &m->rec;
    const char *sid = reign__record_get(r, "session");
    const char *pw = reign__record_get(r, "passwd");
    unsigned char id[8];
    long tmo;
    m->hosts = reign__record_get(r, "hosts");
    if (!m->hosts || !*m->hosts)
        return fail(m, err, errlen, "zk without hosts");
    if (!sid || unhex(sid, id, 8) < 0)
        return fail(m, err, errlen, "zk with a malformed session");
    if (!pw || unhex(pw, m->passwd, 16) < 0)
        return fail(m, err, errlen, "zk with a malformed passwd");
    if (number(r, "timeout_ms", 1, 3600000, &tmo) < 0)
        return fail(m, err, errlen, "zk with a malformed timeout_ms");
    reign__zk_access *a = &m->access;
    a->root = reign__record_get(r, "root");
    if (a->root && *a->root && !good_path(a->root))
        return fail(m, err, errlen, "zk with a malformed root");
    a->auth = reign__record_get(r, "auth");
    if (a->auth && (!*a->auth || !strchr(a->auth, ':')))
        return fail(m, err, errlen, "zk with malformed credentials");
    /* etcd's user, and its TLS files, only where they can be used. */
    bool etcd = !strncmp(m->hosts, "etcd:", 5), tls = !strncmp(m->hosts, "etcd:https://", 13);
    a->user = reign__record_get(r, "user");
    a->password = reign__record_get(r, "password");
    if ((a->user || a->password) && (!etcd || !a->user || !*a->user || !a->password))
        return fail(m, err, errlen, "zk with a malformed etcd user");
    a->tls.ca = reign__record_get(r, "cacert");
    a->tls.cert = reign__record_get(r, "cert");
    a->tls.key = reign__record_get(r, "key");
    if ((a->tls.ca || a->tls.cert || a->tls.key) &&
        (!tls || !good_file(a->tls.ca) || !good_file(a->tls.cert) || !good_file(a->tls.key) ||
         !a->tls.cert != !a->tls.key))
        return fail(m, err, errlen, "zk with malformed TLS files");
    a->api = reign__record_get(r, "api");
    if (a->api && (!etcd || strcmp(a->api, "gateway")))
        return fail(m, err, errlen, "zk with a malformed etcd api");
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | id[i];
    m->session = (int64_t)v;
    m->timeout_ms = (int)tmo;
    return 0;
}

static int parse_sql(reign__gmsg *m, char *err, size_t errlen)
{
    const reign__record *r = &m->rec;
    reign__sql_target *t = &m->target;
    const char *kind = reign__record_get(r, "kind");
    long port = 0, cms, sms, lms;
    if (!kind)
        return fail(m, err, errlen, "sql without kind");
    t->kind = !strcmp(kind, "sqlite")     ? REIGN__SQL_SQLITE
              : !strcmp(kind, "mariadb")  ? REIGN__SQL_MARIADB
              : !strcmp(kind, "postgres") ? REIGN__SQL_POSTGRES
                                          : 0;
    if (!t->kind)
        return fail(m, err, errlen, "sql of an unknown kind");
    t->path = reign__record_get(r, "path");
    t->host = reign__record_get(r, "host");
    t->database = reign__record_get(r, "database");
    t->user = reign__record_get(r, "user");
    t->password = reign__record_get(r, "password");
    t->table = reign__record_get(r, "table");
    t->params = reign__record_get(r, "params");
    m->dc = reign__record_get(r, "dc");
    if (t->kind == REIGN__SQL_SQLITE ? !t->path || t->path[0] != '/' : !t->host || !t->database)
        return fail(m, err, errlen, "sql without its store's address");
    if (reign__record_get(r, "port") && number(r, "port", 0, 65535, &port) < 0)
        return fail(m, err, errlen, "sql with a malformed port");
    if (number(r, "connect_ms", 0, 3600000, &cms) < 0 ||
        number(r, "statement_ms", 0, 3600000, &sms) < 0 ||
        number(r, "timeout_ms", 1, 3600000, &lms) < 0)
        return fail(m, err, errlen, "sql with malformed timeouts");
    m->timeout_ms = (int)lms;
    t->port = (int)port;
    t->connect_timeout_ms = (int)cms;
    t->statement_timeout_ms = (int)sms;
    return 0;
}

int reign__gmsg_parse(const void *buf, size_t len, reign__gmsg *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    if (len > REIGN__GMSG_MAX)
        return fail(m, err, errlen, "too long");
    int r = reign__record_parse(buf, len, &m->rec);
    if (r == REIGN_ENOMEM)
        return r;
    if (r < 0)
        return fail(m, err, errlen, "not a record");
    const char *op = reign__record_get(&m->rec, "op");
    for (size_t i = 1; op && i < N_OPS; i++)
        if (!strcmp(op, op_names[i]))
            m->op = (reign__gmsg_op)i;
    if (!m->op)
        return fail(m, err, errlen, "unknown op");
    long pgid;
    switch (m->op) {
    case REIGN__GMSG_ZK:
        return parse_zk(m, err, errlen);
    case REIGN__GMSG_SQL:
        return parse_sql(m, err, errlen);
    case REIGN__GMSG_LEASE:
    case REIGN__GMSG_UNLEASE:
        m->name = reign__record_get(&m->rec, "name");
        m->guid = reign__record_get(&m->rec, "guid");
        m->owner = reign__record_get(&m->rec, "owner");
        if (!m->name || !*m->name || !m->guid || !*m->guid ||
            (m->op == REIGN__GMSG_LEASE && (!m->owner || !*m->owner)))
            return fail(m, err, errlen, "lease without name, guid or owner");
        return 0;
    case REIGN__GMSG_PGID:
    case REIGN__GMSG_UNPGID:
    case REIGN__GMSG_HELLO:
        if (number(&m->rec, "pgid", 2, 0x7fffffff, &pgid) < 0)
            return fail(m, err, errlen, "malformed pgid");
        m->pgid = (pid_t)pgid;
        return 0;
    case REIGN__GMSG_TERM:
    case REIGN__GMSG_UNTERM:
        return parse_term(m, err, errlen);
    case REIGN__GMSG_BYE:
        return 0;
    }
    return fail(m, err, errlen, "unknown op");
}

/* A secret of a parsed message, in the record's copy of the datagram. */
static void wipe(const char *s)
{
    if (s)
        explicit_bzero((char *)s, strlen(s));
}

void reign__gmsg_clear(reign__gmsg *m)
{
    wipe(m->access.auth);
    wipe(m->access.password);
    wipe(m->target.password);
    explicit_bzero(m->passwd, sizeof(m->passwd));
    reign__record_clear(&m->rec);
    memset(m, 0, sizeof(*m));
}

/* ---- the sets ----------------------------------------------------------- */

static void free_lease(reign__glease *l)
{
    reign__free(l->name);
    reign__free(l->owner);
    reign__free(l->guid);
    reign__free(l);
}

int reign__gset_lease(reign__gset *s, bool add, const char *name, const char *owner,
                      const char *guid)
{
    reign__glease **p = &s->leases;
    while (*p && (strcmp((*p)->name, name) || strcmp((*p)->guid, guid)))
        p = &(*p)->next;
    if (!add) {
        if (!*p)
            return 0;
        reign__glease *l = *p;
        *p = l->next;
        free_lease(l);
        return 1;
    }
    reign__glease *l = reign__calloc(1, sizeof(*l));
    if (!l || !(l->name = reign__strdup(name)) || !(l->owner = reign__strdup(owner)) ||
        !(l->guid = reign__strdup(guid))) {
        if (l)
            free_lease(l);
        return REIGN_ENOMEM;
    }
    if (*p) { /* the same standing again: the newest owner wins */
        reign__glease *old = *p;
        *p = old->next;
        free_lease(old);
    }
    l->next = s->leases;
    s->leases = l;
    return 1;
}

int reign__gset_pgid(reign__gset *s, bool add, pid_t pgid)
{
    size_t i = 0;
    while (i < s->n_pgids && s->pgids[i] != pgid)
        i++;
    if (add == (i < s->n_pgids))
        return 0; /* there already, or not there to remove */
    if (!add) {
        s->pgids[i] = s->pgids[--s->n_pgids];
        return 1;
    }
    if (s->n_pgids == s->cap_pgids) {
        size_t cap = s->cap_pgids ? 2 * s->cap_pgids : 4;
        pid_t *v = reign__realloc(s->pgids, cap * sizeof(*v));
        if (!v)
            return REIGN_ENOMEM;
        s->pgids = v;
        s->cap_pgids = cap;
    }
    s->pgids[s->n_pgids++] = pgid;
    return 1;
}

static void free_term(reign__gterm *t)
{
    reign__free(t->path);
    reign__free(t->rec);
    reign__free(t);
}

int reign__gset_term(reign__gset *s, bool add, const char *path, const void *rec, size_t len)
{
    reign__gterm **p = &s->terms;
    while (*p && strcmp((*p)->path, path))
        p = &(*p)->next;
    if (!add) {
        if (!*p)
            return 0;
        reign__gterm *t = *p;
        *p = t->next;
        free_term(t);
        return 1;
    }
    reign__gterm *t = reign__calloc(1, sizeof(*t));
    if (!t || !(t->path = reign__strdup(path)) || !(t->rec = reign__malloc(len ? len : 1))) {
        if (t)
            free_term(t);
        return REIGN_ENOMEM;
    }
    memcpy(t->rec, rec, len);
    t->len = len;
    if (*p) { /* the same record again: the newest wins */
        reign__gterm *old = *p;
        *p = old->next;
        free_term(old);
    }
    t->next = s->terms;
    s->terms = t;
    return 1;
}

void reign__gset_free(reign__gset *s)
{
    while (s->leases) {
        reign__glease *l = s->leases;
        s->leases = l->next;
        free_lease(l);
    }
    while (s->terms) {
        reign__gterm *t = s->terms;
        s->terms = t->next;
        free_term(t);
    }
    reign__free(s->pgids);
    memset(s, 0, sizeof(*s));
}

/* ---- the access to the tree --------------------------------------------------------------- */

static void free_secret(const char *s)
{
    wipe(s);
    reign__free((char *)s);
}

void reign__gaccess_free(reign__zk_access *a)
{
    reign__free((char *)a->root);
    free_secret(a->auth);
    reign__free((char *)a->user);
    free_secret(a->password);
    reign__free((char *)a->tls.ca);
    reign__free((char *)a->tls.cert);
    reign__free((char *)a->tls.key);
    reign__free((char *)a->api);
    memset(a, 0, sizeof(*a));
}

int reign__gaccess_copy(reign__zk_access *dst, const reign__zk_access *src)
{
    const char *const from[] = {src->root,   src->auth,     src->user,    src->password,
                                src->tls.ca, src->tls.cert, src->tls.key, src->api};
    const char **to[] = {&dst->root,   &dst->auth,     &dst->user,    &dst->password,
                         &dst->tls.ca, &dst->tls.cert, &dst->tls.key, &dst->api};
    memset(dst, 0, sizeof(*dst));
    for (size_t i = 0; i < sizeof(from) / sizeof(from[0]); i++)
        if (from[i] && !(*to[i] = reign__strdup(from[i]))) {
            reign__gaccess_free(dst);
            return REIGN_ENOMEM;
        }
    return 0;
}
