/*
 * fuzz_guardian_msg.c - libFuzzer target for the guardian's messages (src/guardian/proto.c),
 * which reign-guardian parses from its socket (proto.h).  Each input is one datagram:
 *
 *   - the parse either refuses it (REIGN_EFOREIGN with a message naming the guardian
 *     message, and nothing left to free) or gives a known op whose fields hold what that op
 *     promises: a zk message has hosts, a timeout in (0, 1 h], and a root that is "" or a
 *     path, credentials with a ':' if any, etcd's user (named, with its password) only on
 *     etcd, TLS files (named, a certificate with its key) only on https:// members;
 *     a sql message a known kind with
 *     its address (an absolute path for SQLite); a lease a name, guid (and owner); a pgid, an
 *     unpgid or a hello a process id of at least 2 (never 0, -1 or init's 1: kill(-pgid) of
 *     those would hit far more than the client's group); a term or an unterm a path of a
 *     node ("/a/b": no empty name), a term its record, which parses as a reign record (the
 *     guardian rewrites it at death) and which the sets keep byte for byte;
 *   - nothing over REIGN__GMSG_MAX bytes is accepted;
 *   - what was accepted, encoded again with the reign__gmsg_* encoder of its op, parses to
 *     the same fields (the encoders and the parser agree).
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "guardian/proto.h"

static bool same(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void check_fields(const reign__gmsg *m, size_t size)
{
    const reign__zk_access *a = &m->access;
    bool etcd = m->hosts && !strncmp(m->hosts, "etcd:", 5);
    bool https = m->hosts && !strncmp(m->hosts, "etcd:https://", 13);
    CHECK(size <= REIGN__GMSG_MAX);
    switch (m->op) {
    case REIGN__GMSG_ZK:
        CHECK(m->hosts && *m->hosts);
        CHECK(m->timeout_ms >= 1 && m->timeout_ms <= 3600000);
        CHECK(!a->root || !*a->root || (a->root[0] == '/' && a->root[strlen(a->root) - 1] != '/'));
        CHECK(!a->auth || strchr(a->auth, ':'));
        CHECK(!a->user == !a->password && (!a->user || (*a->user && etcd)));
        CHECK(!a->tls.ca || (*a->tls.ca && https));
        CHECK(!a->tls.cert == !a->tls.key && (!a->tls.cert || *a->tls.cert));
        CHECK(!a->tls.key || (*a->tls.key && https));
        break;
    case REIGN__GMSG_SQL:
        CHECK(m->target.kind == REIGN__SQL_SQLITE || m->target.kind == REIGN__SQL_MARIADB ||
              m->target.kind == REIGN__SQL_POSTGRES);
        if (m->target.kind == REIGN__SQL_SQLITE)
            CHECK(m->target.path && m->target.path[0] == '/');
        else
            CHECK(m->target.host && m->target.database); /* no user: the library's default */
        CHECK(m->target.port >= 0 && m->target.port <= 65535);
        CHECK(m->timeout_ms >= 1 && m->timeout_ms <= 3600000);
        CHECK(m->target.connect_timeout_ms >= 0 && m->target.statement_timeout_ms >= 0);
        break;
    case REIGN__GMSG_LEASE:
        CHECK(m->owner && *m->owner);
        /* fall through */
    case REIGN__GMSG_UNLEASE:
        CHECK(m->name && *m->name && m->guid && *m->guid);
        break;
    case REIGN__GMSG_PGID:
    case REIGN__GMSG_UNPGID:
    case REIGN__GMSG_HELLO:
        CHECK(m->pgid >= 2);
        break;
    case REIGN__GMSG_TERM:
    case REIGN__GMSG_UNTERM:
        CHECK(m->path && m->path[0] == '/' && strlen(m->path) >= 2 && !strstr(m->path, "//"));
        CHECK(m->path[strlen(m->path) - 1] != '/');
        if (m->op == REIGN__GMSG_TERM) {
            reign__record r;
            CHECK(m->data && m->data_len > 0);
            int rc = reign__record_parse(m->data, m->data_len, &r);
            CHECK(rc == 0 || rc == REIGN_ENOMEM);
            reign__record_clear(&r);
            /* What the guardian keeps of it, and rewrites. */
            reign__gset set = {0};
            if (reign__gset_term(&set, true, m->path, m->data, m->data_len) == 1) {
                CHECK(set.terms && set.terms->len == m->data_len);
                CHECK(!memcmp(set.terms->rec, m->data, m->data_len));
                CHECK(!strcmp(set.terms->path, m->path));
                CHECK(reign__gset_term(&set, false, m->path, NULL, 0) == 1 && !set.terms);
            }
            reign__gset_free(&set);
        }
        break;
    case REIGN__GMSG_BYE:
        break;
    default:
        CHECK(!"an op the parser does not know");
    }
}

/* Encodes m again with its op's encoder; false if that encoder cannot (too large). */
static bool encode(const reign__gmsg *m, reign__buf *b)
{
    int rc = REIGN_EINVAL;
    switch (m->op) {
    case REIGN__GMSG_ZK:
        rc = reign__gmsg_zk(b, m->hosts, m->session, m->passwd, m->timeout_ms, &m->access);
        break;
    case REIGN__GMSG_SQL:
        rc = reign__gmsg_sql(b, &m->target, m->dc, m->timeout_ms);
        break;
    case REIGN__GMSG_LEASE:
    case REIGN__GMSG_UNLEASE:
        rc = reign__gmsg_lease(b, m->op == REIGN__GMSG_LEASE, m->name, m->owner, m->guid);
        break;
    case REIGN__GMSG_PGID:
    case REIGN__GMSG_UNPGID:
        rc = reign__gmsg_pgid(b, m->op == REIGN__GMSG_PGID, m->pgid);
        break;
    case REIGN__GMSG_HELLO:
        rc = reign__gmsg_hello(b, m->pgid);
        break;
    case REIGN__GMSG_BYE:
        rc = reign__gmsg_bye(b);
        break;
    case REIGN__GMSG_TERM:
    case REIGN__GMSG_UNTERM:
        rc = reign__gmsg_term(b, m->op == REIGN__GMSG_TERM, m->path, m->data, m->data_len);
        break;
    }
    /* Escaping may make a message longer than the one parsed, so past the limit. */
    CHECK(rc == 0 || rc == REIGN_E2BIG || rc == REIGN_ENOMEM);
    return rc == 0;
}

static void check_same(const reign__gmsg *a, const reign__gmsg *b)
{
    CHECK(a->op == b->op);
    switch (a->op) {
    case REIGN__GMSG_ZK:
        CHECK(same(a->hosts, b->hosts) && a->session == b->session);
        CHECK(!memcmp(a->passwd, b->passwd, sizeof(a->passwd)) && a->timeout_ms == b->timeout_ms);
        CHECK(same(a->access.root, b->access.root) && same(a->access.auth, b->access.auth));
        CHECK(same(a->access.user, b->access.user) && same(a->access.password, b->access.password));
        CHECK(same(a->access.tls.ca, b->access.tls.ca) &&
              same(a->access.tls.cert, b->access.tls.cert) &&
              same(a->access.tls.key, b->access.tls.key));
        break;
    case REIGN__GMSG_SQL:
        CHECK(a->target.kind == b->target.kind && same(a->target.path, b->target.path));
        CHECK(same(a->target.host, b->target.host) && a->target.port == b->target.port);
        CHECK(same(a->target.user, b->target.user) && same(a->target.password, b->target.password));
        CHECK(same(a->target.database, b->target.database) &&
              same(a->target.table, b->target.table));
        CHECK(same(a->dc, b->dc) && a->timeout_ms == b->timeout_ms);
        CHECK(a->target.connect_timeout_ms == b->target.connect_timeout_ms);
        CHECK(a->target.statement_timeout_ms == b->target.statement_timeout_ms);
        break;
    case REIGN__GMSG_LEASE:
        CHECK(same(a->owner, b->owner));
        /* fall through */
    case REIGN__GMSG_UNLEASE:
        CHECK(same(a->name, b->name) && same(a->guid, b->guid));
        break;
    case REIGN__GMSG_TERM:
    case REIGN__GMSG_UNTERM:
        CHECK(same(a->path, b->path) && a->data_len == b->data_len);
        CHECK(!a->data_len || !memcmp(a->data, b->data, a->data_len));
        break;
    default:
        CHECK(a->pgid == b->pgid);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reign__gmsg m, m2;
    char err[256] = "";
    int rc = reign__gmsg_parse(data, size, &m, err, sizeof(err));
    if (rc != 0) {
        CHECK(rc == REIGN_EFOREIGN || rc == REIGN_ENOMEM);
        CHECK(m.op == 0 && m.rec.n_fields == 0);
        if (rc == REIGN_EFOREIGN)
            CHECK(strstr(err, "guardian message: ") == err);
        return 0;
    }
    check_fields(&m, size);
    reign__buf b;
    reign__buf_init(&b);
    if (encode(&m, &b)) {
        CHECK(reign__gmsg_parse(b.data, b.len, &m2, err, sizeof(err)) == 0);
        check_same(&m, &m2);
        reign__gmsg_clear(&m2);
    }
    reign__buf_free(&b);
    reign__gmsg_clear(&m);
    return 0;
}
