/*
 * test_guardian_proto.c - unit tests of the guardian's messages (src/guardian/proto.c): every
 * encoder's message parses back to what it was given; what the parser refuses (not a record,
 * an unknown op, missing keys, bad hex, numbers out of range or malformed, a term whose path
 * is no node's or whose payload is no record, a message over
 * REIGN__GMSG_MAX) is refused with REIGN_EFOREIGN and a message naming what is wrong, and
 * leaves nothing to free; encoders refuse what would not fit; an out-of-memory loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core.h"
#include "guardian/proto.h"
#include "oom.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const unsigned char passwd[16] = {0x00, 0x01, 0x7f, 0x80, 0xff, 0x10, 0xab, 0xcd,
                                         0xef, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde};

/* Parses b, which must be accepted. */
static void parse_ok(const reign__buf *b, reign__gmsg *m)
{
    char err[256] = "";
    int rc = reign__gmsg_parse(b->data, b->len, m, err, sizeof(err));
    if (rc != 0)
        fail_msg("message '%.*s' refused (%d): %s", (int)b->len, b->data, rc, err);
}

/* Parses buf[0..len), which must be refused with an error message containing `what`. */
static void refused_n(const void *buf, size_t len, const char *what)
{
    reign__gmsg m;
    char err[256] = "";
    memset(&m, 0xab, sizeof(m)); /* parse must leave it empty */
    int rc = reign__gmsg_parse(buf, len, &m, err, sizeof(err));
    if (rc != REIGN_EFOREIGN)
        fail_msg("message '%.*s': want REIGN_EFOREIGN, got %d", (int)(len > 200 ? 200 : len),
                 buf ? (const char *)buf : "", rc);
    if (!strstr(err, what) || !strstr(err, "guardian message"))
        fail_msg("message '%.*s': error '%s' does not say '%s'", (int)(len > 200 ? 200 : len),
                 (const char *)buf, err, what);
    assert_int_equal(m.op, 0);
    assert_int_equal(m.rec.n_fields, 0);
    assert_null(m.hosts);
    assert_null(m.name);
    reign__gmsg_clear(&m); /* harmless on an empty message */
}

static void refused(const char *s, const char *what)
{
    refused_n(s, strlen(s), what);
}

/* ---- round trips -------------------------------------------------------- */

static void test_zk(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__gmsg m;
    assert_int_equal(reign__gmsg_zk(&b, "127.0.0.1:2181,[::1]:2182/chroot", 0x0123456789abcdefLL,
                                    passwd, 10000, NULL),
                     0);
    assert_true(b.len <= REIGN__GMSG_MAX);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_ZK);
    assert_string_equal(m.hosts, "127.0.0.1:2181,[::1]:2182/chroot");
    assert_true(m.session == 0x0123456789abcdefLL);
    assert_memory_equal(m.passwd, passwd, 16);
    assert_int_equal(m.timeout_ms, 10000);
    assert_null(m.access.root); /* absent, not empty */
    assert_null(m.access.auth);
    assert_null(m.access.user);
    assert_null(m.access.password);
    assert_null(m.access.tls.ca);
    assert_null(m.access.tls.cert);
    assert_null(m.access.tls.key);
    reign__gmsg_clear(&m);

    /* The tree's root and the digest credentials, which may hold any byte but NUL. */
    reign__zk_access a = {.root = "/chroot", .auth = "u:p=w:%\nx"};
    assert_int_equal(reign__gmsg_zk(&b, "h:1/chroot", 7, passwd, 10000, &a), 0);
    assert_null(strstr(b.data, "p=w:%\nx")); /* escaped */
    parse_ok(&b, &m);
    assert_string_equal(m.access.root, "/chroot");
    assert_string_equal(m.access.auth, "u:p=w:%\nx");
    assert_null(m.access.user);
    reign__gmsg_clear(&m);

    /* Session 0 (none any more, after an expiry) and the largest id, whose top bit is set. */
    assert_int_equal(reign__gmsg_zk(&b, "h:1", 0, passwd, 1, NULL), 0);
    parse_ok(&b, &m);
    assert_true(m.session == 0);
    assert_int_equal(m.timeout_ms, 1);
    reign__gmsg_clear(&m);
    assert_int_equal(
        reign__gmsg_zk(&b, "h:1", (int64_t)UINT64_C(0xfedcba9876543210), passwd, 3600000, NULL), 0);
    parse_ok(&b, &m);
    assert_true((uint64_t)m.session == UINT64_C(0xfedcba9876543210));
    assert_int_equal(m.timeout_ms, 3600000);
    reign__gmsg_clear(&m);

    /* The password travels as hex, never raw. */
    assert_int_equal(reign__gmsg_zk(&b, "h:1", 1, passwd, 1000, NULL), 0);
    assert_non_null(strstr(b.data, "passwd=00017f80ff10abcdef123456789abcde\n"));
    reign__buf_free(&b);
}

/* etcd over TLS with a user: the files and the credentials travel, and the password, like the
 * others, is wiped when the parsed message is cleared. */
static void test_zk_etcd_access(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__gmsg m;
    static const char hosts[] = "etcd:https://127.0.0.1:2379,https://[::1]:2380";
    reign__zk_access a = {.root = "/prefix",
                          .user = "r\xc3\xa9ign:u=1",
                          .password = "p\"w\\d\n%",
                          .tls = {"/etc/ca.pem", "/home/x/client 1.crt", "/home/x/client.key"}};
    assert_int_equal(reign__gmsg_zk(&b, hosts, 0x694d8f1a2b3c, passwd, 3000, &a), 0);
    assert_null(strstr(b.data, "p\"w\\d\n%")); /* escaped */
    parse_ok(&b, &m);
    assert_string_equal(m.hosts, hosts);
    assert_string_equal(m.access.root, "/prefix");
    assert_null(m.access.auth);
    assert_string_equal(m.access.user, "r\xc3\xa9ign:u=1");
    assert_string_equal(m.access.password, "p\"w\\d\n%");
    assert_string_equal(m.access.tls.ca, "/etc/ca.pem");
    assert_string_equal(m.access.tls.cert, "/home/x/client 1.crt");
    assert_string_equal(m.access.tls.key, "/home/x/client.key");

    /* What both ends keep: a copy of every string, freed with the secrets wiped. */
    reign__zk_access kept;
    assert_int_equal(reign__gaccess_copy(&kept, &m.access), 0);
    assert_ptr_not_equal(kept.password, m.access.password);
    assert_string_equal(kept.password, m.access.password);
    assert_string_equal(kept.tls.key, m.access.tls.key);
    reign__gaccess_free(&kept);
    assert_null(kept.password);
    reign__gmsg_clear(&m);
    assert_null(m.access.password);

    /* An empty password is one; a CA alone (the system's would do otherwise) is enough. */
    reign__zk_access b2 = {.user = "u", .password = "", .tls = {"/ca", NULL, NULL}};
    assert_int_equal(reign__gmsg_zk(&b, "etcd:https://h:1", 1, passwd, 1000, &b2), 0);
    parse_ok(&b, &m);
    assert_string_equal(m.access.password, "");
    assert_string_equal(m.access.tls.ca, "/ca");
    assert_null(m.access.tls.cert);
    reign__gmsg_clear(&m);
    /* A user over plain HTTP: no files; gRPC unless the client speaks to the gateway. */
    reign__zk_access b3 = {.user = "u", .password = "pw"};
    assert_int_equal(reign__gmsg_zk(&b, "etcd:http://h:1", 1, passwd, 1000, &b3), 0);
    parse_ok(&b, &m);
    assert_string_equal(m.access.user, "u");
    assert_null(m.access.tls.ca);
    assert_null(m.access.api);
    reign__gmsg_clear(&m);
    reign__zk_access b4 = {.api = "gateway"};
    assert_int_equal(reign__gmsg_zk(&b, "etcd:http://h:1", 1, passwd, 1000, &b4), 0);
    parse_ok(&b, &m);
    assert_string_equal(m.access.api, "gateway");
    assert_int_equal(reign__gaccess_copy(&kept, &m.access), 0);
    assert_string_equal(kept.api, "gateway");
    reign__gaccess_free(&kept);
    reign__gmsg_clear(&m);
    reign__buf_free(&b);
}

static void test_sql(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__gmsg m;
    reign__sql_target t = {.kind = REIGN__SQL_POSTGRES,
                           .host = "db.example",
                           .port = 5433,
                           .user = "reign",
                           .password = "p=a%s\nw\x01rd",
                           .database = "reign",
                           .table = "my_locks",
                           .params = "sslmode=verify-full\nsslrootcert=/etc/ca 1.crt",
                           .connect_timeout_ms = 1500,
                           .statement_timeout_ms = 700};
    assert_int_equal(reign__gmsg_sql(&b, &t, "dc-east", 20000), 0);
    assert_null(strstr(b.data, "\x01")); /* values are escaped */
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_SQL);
    assert_int_equal(m.target.kind, REIGN__SQL_POSTGRES);
    assert_string_equal(m.target.host, "db.example");
    assert_int_equal(m.target.port, 5433);
    assert_string_equal(m.target.user, "reign");
    assert_string_equal(m.target.password, "p=a%s\nw\x01rd");
    assert_string_equal(m.target.database, "reign");
    assert_string_equal(m.target.table, "my_locks");
    assert_string_equal(m.target.params, "sslmode=verify-full\nsslrootcert=/etc/ca 1.crt");
    assert_int_equal(m.target.connect_timeout_ms, 1500);
    assert_int_equal(m.target.statement_timeout_ms, 700);
    assert_string_equal(m.dc, "dc-east");
    assert_int_equal(m.timeout_ms, 20000);
    assert_null(m.target.path);
    reign__gmsg_clear(&m);

    /* MariaDB without a password, table or data center: absent, not empty. */
    reign__sql_target mt = {
        .kind = REIGN__SQL_MARIADB, .host = "127.0.0.1", .user = "u", .database = "d"};
    assert_int_equal(reign__gmsg_sql(&b, &mt, NULL, 2000), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.target.kind, REIGN__SQL_MARIADB);
    assert_null(m.target.password);
    assert_null(m.target.table);
    assert_null(m.dc);
    assert_int_equal(m.target.port, 0);
    reign__gmsg_clear(&m);

    /* SQLite: a path, nothing else. */
    reign__sql_target st = {.kind = REIGN__SQL_SQLITE, .path = "/var/lib/x/leases.db"};
    assert_int_equal(reign__gmsg_sql(&b, &st, "default", 1), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.target.kind, REIGN__SQL_SQLITE);
    assert_string_equal(m.target.path, "/var/lib/x/leases.db");
    assert_null(m.target.host);
    assert_string_equal(m.dc, "default");
    reign__gmsg_clear(&m);
    reign__buf_free(&b);
}

static void test_lease_pgid_bye_hello(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__gmsg m;

    assert_int_equal(reign__gmsg_lease(&b, true, "svc:v1.0/a b", "host-1", "0123abcd"), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_LEASE);
    assert_string_equal(m.name, "svc:v1.0/a b");
    assert_string_equal(m.owner, "host-1");
    assert_string_equal(m.guid, "0123abcd");
    reign__gmsg_clear(&m);

    /* unlease carries no owner. */
    assert_int_equal(reign__gmsg_lease(&b, false, "e", "ignored", "g"), 0);
    assert_null(strstr(b.data, "owner"));
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_UNLEASE);
    assert_string_equal(m.name, "e");
    assert_string_equal(m.guid, "g");
    assert_null(m.owner);
    reign__gmsg_clear(&m);

    assert_int_equal(reign__gmsg_pgid(&b, true, 4242), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_PGID);
    assert_int_equal(m.pgid, 4242);
    reign__gmsg_clear(&m);
    assert_int_equal(reign__gmsg_pgid(&b, false, 0x7fffffff), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_UNPGID);
    assert_int_equal(m.pgid, 0x7fffffff);
    reign__gmsg_clear(&m);

    assert_int_equal(reign__gmsg_hello(&b, 77), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_HELLO);
    assert_int_equal(m.pgid, 77);
    reign__gmsg_clear(&m);

    assert_int_equal(reign__gmsg_bye(&b), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_BYE);
    reign__gmsg_clear(&m);

    /* Each encoder starts the buffer afresh: one message per datagram. */
    assert_int_equal(reign__gmsg_pgid(&b, true, 9), 0);
    assert_int_equal(reign__gmsg_bye(&b), 0);
    assert_string_equal(b.data, "reign 1\nop=bye\n\n");
    reign__buf_free(&b);
}

/* A leadership's history record: its path, and the record itself as the payload, byte for
 * byte (a payload of the record's own after its blank line too). */
static void test_term(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__gmsg m;
    static const char rec[] = "reign 1\nid=a\nend=guardian\nterm=7\n\npay\nload\0x";
    const char *path = "/reign/election/e/history/h_0000000007";
    assert_int_equal(reign__gmsg_term(&b, true, path, rec, sizeof(rec)), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_TERM);
    assert_string_equal(m.path, path);
    assert_int_equal(m.data_len, sizeof(rec));
    assert_memory_equal(m.data, rec, sizeof(rec));
    reign__gmsg_clear(&m);

    assert_int_equal(reign__gmsg_term(&b, false, path, NULL, 0), 0);
    parse_ok(&b, &m);
    assert_int_equal(m.op, REIGN__GMSG_UNTERM);
    assert_string_equal(m.path, path);
    assert_int_equal(m.data_len, 0);
    reign__gmsg_clear(&m);

    /* A term without its record is nothing to write. */
    assert_int_equal(reign__gmsg_term(&b, true, path, NULL, 0), REIGN_EINVAL);
    reign__buf_free(&b);

    /* The sets: one record per path, the newest kept. */
    reign__gset set = {0};
    assert_int_equal(reign__gset_term(&set, true, "/a", "x", 1), 1);
    assert_int_equal(reign__gset_term(&set, true, "/b", "yy", 2), 1);
    assert_int_equal(reign__gset_term(&set, true, "/a", "zzz", 3), 1);
    size_t n = 0;
    for (reign__gterm *t = set.terms; t; t = t->next, n++)
        if (!strcmp(t->path, "/a"))
            assert_memory_equal(t->rec, "zzz", t->len == 3 ? 3 : 0);
    assert_int_equal(n, 2);
    assert_int_equal(reign__gset_term(&set, false, "/a", NULL, 0), 1);
    assert_int_equal(reign__gset_term(&set, false, "/a", NULL, 0), 0);
    assert_string_equal(set.terms->path, "/b");
    assert_null(set.terms->next);
    reign__gset_free(&set);
    assert_null(set.terms);
}

/* Keys the parser does not know are left alone (a newer client, an older guardian). */
static void test_unknown_keys(void **state)
{
    static const char s[] = "reign 1\nop=pgid\nfuture=1\npgid=12\n\n";
    reign__gmsg m;
    char err[128];
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    assert_int_equal(m.pgid, 12);
    reign__gmsg_clear(&m);
}

/* ---- refusals ----------------------------------------------------------- */

static void test_refuse_foreign(void **state)
{
    refused("", "not a record");
    refused("op=bye\n", "not a record");
    refused("reign 2\nop=bye\n\n", "not a record");
    refused("reign 1\nop=bye\nop=bye\n\n", "not a record"); /* a key twice */
    refused("reign 1\n\n", "unknown op");
    refused("reign 1\nop=\n\n", "unknown op");
    refused("reign 1\nop=BYE\n\n", "unknown op");
    refused("reign 1\nop=exec\n\n", "unknown op");
    refused("reign 1\nop=bye \n\n", "unknown op");
    refused("reign 1\nop=bye%00x\n\n", "not a record"); /* no NUL inside a value */
    refused_n("reign 1\nop=bye\0\n\n", 17, "not a record");
    refused("reign 1\nop=hello\n\n", "malformed pgid");
}

static void test_refuse_zk(void **state)
{
    static const char pw[] = "00112233445566778899aabbccddeeff";
    char s[512];
#define ZK(hosts, sid, pass, tmo)                                                                  \
    (snprintf(s, sizeof(s), "reign 1\nop=zk\n%s%s%s%s\n", hosts, sid, pass, tmo), s)
    const char *h = "hosts=h:1\n", *sid = "session=0123456789abcdef\n", *t = "timeout_ms=100\n";
    char p[64];
    snprintf(p, sizeof(p), "passwd=%s\n", pw);

    /* The reference message is good; then one key at a time goes wrong. */
    reign__gmsg m;
    char err[128];
    ZK(h, sid, p, t);
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    reign__gmsg_clear(&m);

    refused(ZK("", sid, p, t), "without hosts");
    refused(ZK("hosts=\n", sid, p, t), "without hosts");
    refused(ZK(h, "", p, t), "malformed session");
    refused(ZK(h, "session=0123456789ABCDEF\n", p, t), "malformed session"); /* upper case */
    refused(ZK(h, "session=0123456789abcde\n", p, t), "malformed session");  /* 15 digits */
    refused(ZK(h, "session=0123456789abcdef0\n", p, t), "malformed session");
    refused(ZK(h, "session=0123456789abcdeg\n", p, t), "malformed session");
    refused(ZK(h, "session=-123456789abcdef\n", p, t), "malformed session");
    refused(ZK(h, "session=0x23456789abcdef\n", p, t), "malformed session");
    refused(ZK(h, sid, "", t), "malformed passwd");
    refused(ZK(h, sid, "passwd=00112233445566778899aabbccddeef\n", t), "malformed passwd");
    refused(ZK(h, sid, "passwd=00112233445566778899aabbccddeeff00\n", t), "malformed passwd");
    refused(ZK(h, sid, "passwd=0011223344556677 899aabbccddeeff\n", t), "malformed passwd");
    refused(ZK(h, sid, "passwd=00112233445566778899aabbccddeefF\n", t), "malformed passwd");
    refused(ZK(h, sid, p, ""), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=0\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=3600001\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=-5\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=+5\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms= 5\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=5ms\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=\n"), "malformed timeout_ms");
    refused(ZK(h, sid, p, "timeout_ms=99999999999999999999\n"), "malformed timeout_ms");
#undef ZK
}

static void test_refuse_sql(void **state)
{
    char s[512];
#define SQL(rest) (snprintf(s, sizeof(s), "reign 1\nop=sql\n%s\n", rest), s)
    const char *ms = "connect_ms=1\nstatement_ms=2\ntimeout_ms=3\n";
    char ok[256];
    snprintf(ok, sizeof(ok), "kind=mariadb\nhost=h\ndatabase=d\nuser=u\nport=3306\n%s", ms);
    reign__gmsg m;
    char err[128];
    SQL(ok);
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    assert_int_equal(m.target.port, 3306);
    reign__gmsg_clear(&m);

    char r[256];
    refused(SQL(ms), "sql without kind");
    snprintf(r, sizeof(r), "kind=oracle\nhost=h\ndatabase=d\nuser=u\n%s", ms);
    refused(SQL(r), "unknown kind");
    snprintf(r, sizeof(r), "kind=SQLITE\npath=/x\n%s", ms);
    refused(SQL(r), "unknown kind");
    snprintf(r, sizeof(r), "kind=sqlite\n%s", ms);
    refused(SQL(r), "address");
    snprintf(r, sizeof(r), "kind=sqlite\npath=relative/leases.db\n%s", ms);
    refused(SQL(r), "address");
    snprintf(r, sizeof(r), "kind=sqlite\npath=\n%s", ms);
    refused(SQL(r), "address");
    snprintf(r, sizeof(r), "kind=postgres\ndatabase=d\nuser=u\n%s", ms);
    refused(SQL(r), "address");
    snprintf(r, sizeof(r), "kind=postgres\nhost=h\nuser=u\n%s", ms);
    refused(SQL(r), "address");
    /* No user: the client library's default (the login name, PGUSER, an option file). */
    snprintf(r, sizeof(r), "kind=mariadb\nhost=h\ndatabase=d\nparams=ssl%%3Don%%0Assl_ca%%3D/x\n%s",
             ms);
    SQL(r);
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    assert_null(m.target.user);
    assert_string_equal(m.target.params, "ssl=on\nssl_ca=/x");
    reign__gmsg_clear(&m);
    snprintf(r, sizeof(r), "kind=mariadb\nhost=h\ndatabase=d\nuser=u\nport=65536\n%s", ms);
    refused(SQL(r), "malformed port");
    snprintf(r, sizeof(r), "kind=mariadb\nhost=h\ndatabase=d\nuser=u\nport=-1\n%s", ms);
    refused(SQL(r), "malformed port");
    snprintf(r, sizeof(r), "kind=mariadb\nhost=h\ndatabase=d\nuser=u\nport=\n%s", ms);
    refused(SQL(r), "malformed port");
    refused(SQL("kind=sqlite\npath=/x\nstatement_ms=2\ntimeout_ms=3\n"), "malformed timeouts");
    refused(SQL("kind=sqlite\npath=/x\nconnect_ms=1\ntimeout_ms=3\n"), "malformed timeouts");
    refused(SQL("kind=sqlite\npath=/x\nconnect_ms=1\nstatement_ms=2\n"), "malformed timeouts");
    refused(SQL("kind=sqlite\npath=/x\nconnect_ms=1\nstatement_ms=2\ntimeout_ms=0\n"),
            "malformed timeouts");
    refused(SQL("kind=sqlite\npath=/x\nconnect_ms=1\nstatement_ms=x\ntimeout_ms=9\n"),
            "malformed timeouts");
    refused(SQL("kind=sqlite\npath=/x\nconnect_ms=3600001\nstatement_ms=2\ntimeout_ms=9\n"),
            "malformed timeouts");
#undef SQL
}

static void test_refuse_lease_pgid(void **state)
{
    refused("reign 1\nop=lease\nname=n\nguid=g\n\n", "lease without");
    refused("reign 1\nop=lease\nname=n\nguid=g\nowner=\n\n", "lease without");
    refused("reign 1\nop=lease\nname=n\nowner=o\n\n", "lease without");
    refused("reign 1\nop=lease\nguid=g\nowner=o\n\n", "lease without");
    refused("reign 1\nop=lease\nname=\nguid=g\nowner=o\n\n", "lease without");
    refused("reign 1\nop=unlease\nname=n\n\n", "lease without");
    refused("reign 1\nop=unlease\nguid=g\n\n", "lease without");
    refused("reign 1\nop=unlease\nname=n\nguid=\n\n", "lease without");

    /* pgid 0 would be our own group, -1 every process, 1 init's: never killed. */
    static const char *const bad[] = {"",           "0",           "1",    "-1",  "-5",  "+5",
                                      "2147483648", "99999999999", "0x10", "12a", " 12", "12 "};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        char s[128];
        snprintf(s, sizeof(s), "reign 1\nop=pgid\npgid=%s\n\n", bad[i]);
        refused(s, "malformed pgid");
        snprintf(s, sizeof(s), "reign 1\nop=unpgid\npgid=%s\n\n", bad[i]);
        refused(s, "malformed pgid");
        snprintf(s, sizeof(s), "reign 1\nop=hello\npgid=%s\n\n", bad[i]);
        refused(s, "malformed pgid");
    }
    refused("reign 1\nop=pgid\n\n", "malformed pgid");
}

static void test_refuse_term(void **state)
{
    refused("reign 1\nop=term\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=term\npath=\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=term\npath=/\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=term\npath=a/b\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=term\npath=/a/\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=term\npath=/a//b\n\nreign 1\n\n", "term without a path");
    refused("reign 1\nop=unterm\n\n", "term without a path");
    refused("reign 1\nop=unterm\npath=x\n\n", "term without a path");
    refused("reign 1\nop=term\npath=/a\n\n", "term without its record");
    refused("reign 1\nop=term\npath=/a\n\nnot a record", "not a record");
    refused("reign 1\nop=term\npath=/a\n\nreign 1\nend=x\nend=y\n\n", "not a record");
    refused("reign 1\nop=term\npath=/a\n\nreign 1\nend=guardian\n", "not a record");

    /* op=zk's root and credentials are checked too. */
    static const char zk[] = "reign 1\nop=zk\nhosts=h:1\nsession=0123456789abcdef\n"
                             "passwd=00112233445566778899aabbccddeeff\ntimeout_ms=100\n";
    char s[512];
    snprintf(s, sizeof(s), "%sroot=chroot\n\n", zk);
    refused(s, "malformed root");
    snprintf(s, sizeof(s), "%sroot=/a/\n\n", zk);
    refused(s, "malformed root");
    snprintf(s, sizeof(s), "%sauth=user\n\n", zk);
    refused(s, "malformed credentials");
    snprintf(s, sizeof(s), "%sauth=\n\n", zk);
    refused(s, "malformed credentials");
    reign__gmsg m;
    char err[128];
    snprintf(s, sizeof(s), "%sroot=\nauth=u:\n\n", zk); /* the root itself; an empty password */
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    assert_string_equal(m.access.root, "");
    assert_string_equal(m.access.auth, "u:");
    reign__gmsg_clear(&m);

    /* etcd's user: on etcd only, with its password, and never an empty name. */
    static const char etcd[] = "reign 1\nop=zk\nhosts=etcd:http://h:1\nsession=0123456789abcdef\n"
                               "passwd=00112233445566778899aabbccddeeff\ntimeout_ms=100\n";
    static const char etcds[] = "reign 1\nop=zk\nhosts=etcd:https://h:1\n"
                                "session=0123456789abcdef\n"
                                "passwd=00112233445566778899aabbccddeeff\ntimeout_ms=100\n";
    static const struct {
        const char *head, *tail, *what;
    } bad[] = {
        {zk, "user=u\npassword=p\n", "malformed etcd user"}, /* ZooKeeper's hosts */
        {etcd, "user=u\n", "malformed etcd user"},
        {etcd, "password=p\n", "malformed etcd user"},
        {etcd, "user=\npassword=p\n", "malformed etcd user"},
        {etcd, "cacert=/ca\n", "malformed TLS files"}, /* http:// members */
        {zk, "cacert=/ca\n", "malformed TLS files"},
        {etcds, "cacert=\n", "malformed TLS files"},
        {etcds, "cert=/c\n", "malformed TLS files"}, /* a certificate without its key */
        {etcds, "key=/k\n", "malformed TLS files"},
        {etcds, "cert=/c\nkey=\n", "malformed TLS files"},
        {zk, "api=gateway\n", "malformed etcd api"}, /* ZooKeeper's hosts */
        {etcd, "api=grpc\n", "malformed etcd api"},  /* gRPC is said by no api at all */
        {etcd, "api=\n", "malformed etcd api"},
    };
    for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
        snprintf(s, sizeof(s), "%s%s\n", bad[i].head, bad[i].tail);
        refused(s, bad[i].what);
    }
    snprintf(s, sizeof(s), "%suser=u\npassword=\ncert=/c\nkey=/k\n\n", etcds);
    assert_int_equal(reign__gmsg_parse(s, strlen(s), &m, err, sizeof(err)), 0);
    assert_string_equal(m.access.user, "u");
    assert_string_equal(m.access.tls.key, "/k");
    assert_null(m.access.tls.ca);
    reign__gmsg_clear(&m);
}

static void test_refuse_oversized(void **state)
{
    /* The largest message accepted is REIGN__GMSG_MAX bytes; one more is refused before it
     * is parsed at all. */
    size_t len = REIGN__GMSG_MAX + 1;
    char *s = malloc(len + 1);
    assert_non_null(s);
    static const char head[] = "reign 1\nop=lease\nname=n\nguid=g\nowner=";
    memcpy(s, head, sizeof(head) - 1);
    memset(s + sizeof(head) - 1, 'o', len - (sizeof(head) - 1) - 2);
    memcpy(s + len - 2, "\n\n", 2);
    s[len] = '\0';
    refused_n(s, len, "too long");

    reign__gmsg m;
    char err[128];
    memmove(s + sizeof(head) - 1, s + sizeof(head), len - sizeof(head)); /* one 'o' less */
    assert_int_equal(reign__gmsg_parse(s, len - 1, &m, err, sizeof(err)), 0);
    assert_int_equal(strlen(m.owner), len - 1 - (sizeof(head) - 1) - 2);
    reign__gmsg_clear(&m);
    free(s);

    /* Encoders refuse what the guardian would not read. */
    reign__buf b;
    reign__buf_init(&b);
    char *big = malloc(REIGN__GMSG_MAX);
    assert_non_null(big);
    memset(big, 'h', REIGN__GMSG_MAX - 1);
    big[REIGN__GMSG_MAX - 1] = '\0';
    assert_int_equal(reign__gmsg_zk(&b, big, 1, passwd, 1000, NULL), REIGN_E2BIG);
    assert_int_equal(reign__gmsg_lease(&b, true, "n", big, "g"), REIGN_E2BIG);
    reign__sql_target t = {.kind = REIGN__SQL_SQLITE, .path = big};
    assert_int_equal(reign__gmsg_sql(&b, &t, NULL, 1000), REIGN_E2BIG);
    free(big);
    reign__buf_free(&b);
}

/* ---- out of memory ------------------------------------------------------ */

/* One message: its encoder, and what a receiver does with it once parsed (0, or REIGN_ENOMEM). */
typedef struct oom_case {
    int (*encode)(reign__buf *b);
    int (*keep)(const reign__gmsg *m);
} oom_case;

/* Encodes, parses and keeps the message with the n-th allocation failing, n = 0, 1, ... until
 * all three succeed: each fails only for want of memory, and nothing leaks on any path. */
static void oom_loop(const oom_case *c)
{
    bool done = false;
    for (long n = 0; n < 200 && !done; n++) {
        g_fail_at = n;
        g_calls = 0;
        g_live = 0;
        reign__buf b;
        reign__buf_init(&b);
        int rc = c->encode(&b);
        assert_true(rc == 0 || rc == REIGN_ENOMEM);
        if (rc == 0) {
            reign__gmsg m;
            char err[128];
            rc = reign__gmsg_parse(b.data, b.len, &m, err, sizeof(err));
            assert_true(rc == 0 || rc == REIGN_ENOMEM);
            if (rc == 0) {
                rc = c->keep(&m);
                assert_true(rc == 0 || rc == REIGN_ENOMEM);
                done = rc == 0;
            }
            reign__gmsg_clear(&m);
        }
        reign__buf_free(&b);
        assert_int_equal(g_live, 0);
    }
    g_fail_at = -1;
    assert_true(done);
}

static int encode_sql(reign__buf *b)
{
    reign__sql_target t = {.kind = REIGN__SQL_POSTGRES,
                           .host = "h",
                           .user = "u",
                           .password = "secret",
                           .database = "d",
                           .table = "t"};
    return reign__gmsg_sql(b, &t, "dc", 5000);
}

static int keep_sql(const reign__gmsg *m)
{
    assert_string_equal(m->target.password, "secret");
    return 0;
}

/* A term: its record is parsed too, and the sets copy it. */
static int encode_term(reign__buf *b)
{
    static const char rec[] = "reign 1\nid=a\nend=guardian\n\npayload";
    return reign__gmsg_term(b, true, "/r/h_1", rec, sizeof(rec) - 1);
}

static int keep_term(const reign__gmsg *m)
{
    reign__gset set = {0};
    int rc = reign__gset_term(&set, true, m->path, m->data, m->data_len);
    reign__gset_free(&set);
    return rc == 1 ? 0 : rc;
}

/* etcd's access, as the guardian keeps it. */
static int encode_etcd(reign__buf *b)
{
    reign__zk_access a = {.root = "/p", .user = "u", .password = "pw", .tls = {"/a", "/b", "/c"}};
    return reign__gmsg_zk(b, "etcd:https://h:1", 1, passwd, 1000, &a);
}

static int keep_etcd(const reign__gmsg *m)
{
    reign__zk_access kept;
    int rc = reign__gaccess_copy(&kept, &m->access);
    if (rc == 0)
        assert_string_equal(kept.tls.key, "/c");
    reign__gaccess_free(&kept);
    return rc;
}

static void test_oom(void **state)
{
    static const oom_case cases[] = {
        {encode_sql, keep_sql}, {encode_term, keep_term}, {encode_etcd, keep_etcd}};
    assert_int_equal(reign_set_allocator(oom_malloc, oom_realloc, oom_free), 0);
    for (size_t i = 0; i < ARRAY_LEN(cases); i++)
        oom_loop(&cases[i]);
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zk),
        cmocka_unit_test(test_zk_etcd_access),
        cmocka_unit_test(test_sql),
        cmocka_unit_test(test_lease_pgid_bye_hello),
        cmocka_unit_test(test_term),
        cmocka_unit_test(test_unknown_keys),
        cmocka_unit_test(test_refuse_foreign),
        cmocka_unit_test(test_refuse_zk),
        cmocka_unit_test(test_refuse_sql),
        cmocka_unit_test(test_refuse_lease_pgid),
        cmocka_unit_test(test_refuse_term),
        cmocka_unit_test(test_refuse_oversized),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
