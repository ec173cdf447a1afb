/*
 * test_election_unit.c - the parts of the election that need no server:
 * names, queue-node parsing and ordering, the validation of node names read
 * from data, and reign_election_join's argument checks; plus
 * reign_client_new's refusals (URI, credentials) and its out-of-memory
 * paths, which all happen before any connection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <reign/store.h>

#include "recipes/election/election_base.h"

static void test_names(void **state)
{
    assert_int_equal(reign__name_check("nightly"), 0);
    assert_int_equal(reign__name_check("AccountService:1.0.0"), 0);
    assert_int_equal(reign__name_check("a-b_c.d"), 0);
    assert_int_equal(reign__name_check(""), REIGN_ENAME);
    assert_int_equal(reign__name_check(NULL), REIGN_ENAME);
    assert_int_equal(reign__name_check("."), REIGN_ENAME);
    assert_int_equal(reign__name_check(".."), REIGN_ENAME);
    assert_int_equal(reign__name_check("a/b"), REIGN_ENAME);
    assert_int_equal(reign__name_check("a b"), REIGN_ENAME);
    assert_int_equal(reign__name_check("caf\xc3\xa9"), REIGN_ENAME);
    char longname[REIGN_NAME_MAX + 2];
    memset(longname, 'x', sizeof(longname));
    longname[REIGN_NAME_MAX] = '\0';
    assert_int_equal(reign__name_check(longname), 0);
    longname[REIGN_NAME_MAX] = 'x';
    longname[REIGN_NAME_MAX + 1] = '\0';
    assert_int_equal(reign__name_check(longname), REIGN_ENAME);
}

static void test_qnodes(void **state)
{
    reign__qnode q;
    assert_true(reign__qnode_parse("n_0123456789abcdef_0000000042", &q));
    assert_string_equal(q.guid, "0123456789abcdef");
    assert_int_equal(q.seq, 42);
    /* Anything else is not ours: not a candidate, never acted on. */
    const char *bad[] = {"term",
                         "lock",
                         "n_0123456789abcdef_000000004",
                         "n_0123456789ABCDEF_0000000042",
                         "n_0123456789abcdef-0000000042",
                         "x_0123456789abcdef_0000000042",
                         "n_0123456789abcdef_00000000x2",
                         "n_0123456789abcdef_00000000420",
                         ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(reign__qnode_parse(bad[i], &q));

    const char *names[] = {"n_aaaaaaaaaaaaaaaa_0000000010", "n_bbbbbbbbbbbbbbbb_0000000002",
                           "n_cccccccccccccccc_2147483647", "n_dddddddddddddddd_0000000003"};
    reign__qnode v[4];
    for (int i = 0; i < 4; i++)
        assert_true(reign__qnode_parse(names[i], &v[i]));
    reign__qnode_sort(v, 4);
    assert_int_equal(v[0].seq, 2);
    assert_int_equal(v[1].seq, 3);
    assert_int_equal(v[2].seq, 10);
    assert_int_equal(v[3].seq, 2147483647);

    /* With priorities: higher first, then first come. */
    assert_true(reign__qnode_parse("n_0123456789abcdef_p0042_0000000007", &q));
    assert_int_equal(q.prio, 42);
    assert_int_equal(q.seq, 7);
    const char *badp[] = {
        "n_0123456789abcdef_p0000_0000000007", /* 0 has the short name */
        "n_0123456789abcdef_p042_0000000007", "n_0123456789abcdef_q0042_0000000007",
        "n_0123456789abcdef_p00x2_0000000007", "n_0123456789abcdef_p0042-0000000007"};
    for (size_t i = 0; i < sizeof(badp) / sizeof(badp[0]); i++)
        assert_false(reign__qnode_parse(badp[i], &q));
    const char *ranked[] = {"n_aaaaaaaaaaaaaaaa_0000000001", "n_bbbbbbbbbbbbbbbb_p0005_0000000009",
                            "n_cccccccccccccccc_p0005_0000000004",
                            "n_dddddddddddddddd_p0300_0000000020",
                            "n_eeeeeeeeeeeeeeee_p0001_0000000002"};
    reign__qnode w[5];
    for (int i = 0; i < 5; i++)
        assert_true(reign__qnode_parse(ranked[i], &w[i]));
    reign__qnode_sort(w, 5);
    const char *order[] = {"dddddddddddddddd", "cccccccccccccccc", "bbbbbbbbbbbbbbbb",
                           "eeeeeeeeeeeeeeee", "aaaaaaaaaaaaaaaa"};
    for (int i = 0; i < 5; i++)
        assert_string_equal(w[i].guid, order[i]);
    assert_true(reign__qnode_before(&w[0], &w[1]));
    assert_false(reign__qnode_before(&w[1], &w[0]));
}

static void test_node_names_from_data(void **state)
{
    assert_true(reign__election_node_ok("lock"));
    assert_true(reign__election_node_ok("n_0123456789abcdef_0000000042"));
    assert_false(reign__election_node_ok("../../zookeeper"));
    assert_false(reign__election_node_ok("term"));
    assert_false(reign__election_node_ok(""));
    assert_false(reign__election_node_ok("lock/x"));
}

static void test_paths(void **state)
{
    char *p = reign__election_path("x", "/term");
    assert_string_equal(p, "/reign/election/x/term");
    reign__free(p);
}

static reign_client *new_client(const char *uri, int *rc, char *err, size_t errlen)
{
    reign_client *c = NULL;
    *rc = reign_client_new(&c, uri, NULL, err, errlen);
    return c;
}

static void test_client_refusals(void **state)
{
    char err[512];
    int rc;
    unsetenv("REIGN_PASSWORD");
    struct {
        const char *uri;
        int rc;
        const char *needle;
    } cases[] = {
        {"", REIGN_EURI, NULL},
        {"127.0.0.1:2181", REIGN_EURI, NULL},
        {"zk://", REIGN_EURI, NULL},
        {"zk://127.0.0.1:99999", REIGN_EURI, "99999"},
        {"zk://127.0.0.1:2181?sesion_timeout_ms=5", REIGN_EURI, "sesion_timeout_ms"},
        {"zk://127.0.0.1:2181?session_timeout_ms=abc", REIGN_EURI, "session_timeout_ms"},
        {"zk://127.0.0.1:2181?suspend_policy=later", REIGN_EURI, "later"},
        {"zk://127.0.0.1:2181/chroot/", REIGN_EURI, "chroot"},
        {"zk://alice@127.0.0.1:2181", REIGN_EAUTH, "REIGN_PASSWORD"},
        {"zk://alice@127.0.0.1:2181?password_file=/nonexistent/pw", REIGN_EAUTH, "/nonexistent/pw"},
        {"zk://127.0.0.1:2181?password_file=/etc/hostname", REIGN_EAUTH, "no user"},
        {"sqlite://tmp/x.db", REIGN_EURI, "absolute"},
        {"sqlite:///", REIGN_EURI, "absolute"},
        {"sqlite:///tmp/x.db?lease_ms=10000&renew_ms=4000", REIGN_EINVAL, "renew_ms <= 3000"},
        {"sqlite:///tmp/x.db?renew_ms=500&statement_timeout_ms=500", REIGN_EINVAL,
         "statement_timeout_ms"},
        {"sqlite:///tmp/x.db?lease_ms=1000&poll_ms=2000", REIGN_EINVAL, "poll_ms"},
        {"sqlite:///tmp/x.db?lease_ms=100", REIGN_EINVAL, "lease_ms"},
        {"sqlite:///tmp/x.db?session_timeout_ms=100", REIGN_EURI, "session_timeout_ms"},
        {"zk://127.0.0.1:2181?ssl=1", REIGN_ENOTSUP, "TLS"},
        {"sqlite:///tmp/x.db?sslmode=require", REIGN_EURI, "sslmode"},
        {"sqlite:///tmp/x.db?password_file=/etc/hostname", REIGN_EURI, "no user nor password"},
        {"postgres://u@127.0.0.1/db?sslmod=require", REIGN_EURI, "'sslmod'"},
        {"postgres://u@127.0.0.1/db?sslpassword=x", REIGN_EURI, "secret"},
        {"postgres://u@127.0.0.1/db?password=x", REIGN_EURI, "secret"},
        {"postgres://u@127.0.0.1/db?dbname=x", REIGN_EURI, "reign's to set"},
        {"mysql://u@127.0.0.1/db?ssl_verify_server_cert=maybe", REIGN_EURI, "on or off"},
        {"mysql://u@127.0.0.1/db?tls_passphrase=x", REIGN_EURI, "secret"},
        {"mysql://u@127.0.0.1/db?ssl_ca=", REIGN_EURI, "empty"},
        {"mysql://u@127.0.0.1/db?sslmode=require", REIGN_EURI, "ssl_verify_server_cert=on"},
        {"mysql://u@127.0.0.1/db?ssl_mode=REQUIRED", REIGN_EURI, "ssl=on"},
        {"mysql://u@127.0.0.1/db?sslcert=x", REIGN_EURI, "'sslcert'"},
        {"mysql://u@127.0.0.1", REIGN_EURI, "database"},
        {"postgres://u@h1,h2/db", REIGN_EURI, "one host"},
        {"http://127.0.0.1:2181", REIGN_EURI, "http"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        err[0] = '\0';
        reign_client *c = new_client(cases[i].uri, &rc, err, sizeof(err));
        if (rc != cases[i].rc)
            fail_msg("'%s': got %s (%s), want %s", cases[i].uri, reign_err_name(rc), err,
                     reign_err_name(cases[i].rc));
        assert_null(c);
        assert_true(err[0] != '\0');
        if (cases[i].needle && !strstr(err, cases[i].needle))
            fail_msg("'%s': message '%s' does not name '%s'", cases[i].uri, err, cases[i].needle);
    }
    /* A password never appears in a message. */
    new_client("zk://alice:s3cret@127.0.0.1:2181?bogus=1", &rc, err, sizeof(err));
    assert_int_equal(rc, REIGN_EURI);
    assert_null(strstr(err, "s3cret"));
}

static void test_redact(void **state)
{
    char out[128];
    reign_uri_redact("zk://alice:s3cret@h:1,h:2/x?y=1", out, sizeof(out));
    assert_string_equal(out, "zk://alice:***@h:1,h:2/x?y=1");
    reign_uri_redact("zk://alice@h:1/x", out, sizeof(out));
    assert_string_equal(out, "zk://alice@h:1/x");
    reign_uri_redact("zk://h:1/a@b", out, sizeof(out)); /* '@' in the path is not userinfo */
    assert_string_equal(out, "zk://h:1/a@b");
}

static void never_called_remove(reign_client *c, int err, const char *const *s, size_t n, void *u)
{
    fail_msg("a refused removal called back");
}

static void never_called_list(reign_client *c, int err, const reign_entry *v, size_t n, void *u)
{
    fail_msg("a refused listing called back");
}

/* reign ls / rm: kinds by name, and arguments refused before anything goes to the store. */
static void test_store_refusals(void **state)
{
    char err[256];
    reign_client *c = NULL;
    for (int k = REIGN_ENTRY_ELECTION; k <= REIGN_ENTRY_QUEUE; k++)
        assert_int_equal(reign_entry_kind_of(reign_entry_kind_name((reign_entry_kind)k)), k);
    assert_null(reign_entry_kind_name((reign_entry_kind)0));
    assert_null(reign_entry_kind_name((reign_entry_kind)9));
    assert_int_equal(reign_entry_kind_of("elections"), 0);
    assert_int_equal(reign_entry_kind_of(NULL), 0);
    assert_int_equal(
        reign_client_new(&c, "zk://127.0.0.1:1?connect_timeout_ms=100", NULL, err, sizeof(err)), 0);
    const char *bad[] = {"", "a/b", ".", "..", NULL};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(
            reign_store_remove(c, REIGN_ENTRY_ELECTION, bad[i], never_called_remove, NULL),
            REIGN_EINVAL);
    /* A value is named by its key, of one or more segments: only a bad key is refused. */
    const char *bad_keys[] = {"", "/a", "a/", "a//b", "a/./b", "..", NULL};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++)
        assert_int_equal(
            reign_store_remove(c, REIGN_ENTRY_VALUE, bad_keys[i], never_called_remove, NULL),
            REIGN_EINVAL);
    assert_int_equal(reign_store_remove(c, (reign_entry_kind)0, "x", never_called_remove, NULL),
                     REIGN_EINVAL);
    assert_int_equal(reign_store_remove(c, REIGN_ENTRY_VALUE, "x", NULL, NULL), REIGN_EINVAL);
    assert_int_equal(reign_store_remove(NULL, REIGN_ENTRY_VALUE, "x", never_called_remove, NULL),
                     REIGN_EINVAL);
    assert_int_equal(reign_store_list(c, "", NULL, NULL), REIGN_EINVAL);
    assert_int_equal(reign_store_list(NULL, "", never_called_list, NULL), REIGN_EINVAL);
    reign_client_free(c);
}

static void test_join_refusals(void **state)
{
    char err[256];
    reign_client *c = NULL;
    /* A client that never connects (a closed port) is enough: join checks
     * its arguments before anything goes to the store. */
    assert_int_equal(
        reign_client_new(&c, "zk://127.0.0.1:1?connect_timeout_ms=100", NULL, err, sizeof(err)), 0);
    reign_election *e = NULL;
    reign_election_options o = {.size = sizeof(o)};
    assert_int_equal(reign_election_join(&e, c, "a/b", &o), REIGN_ENAME);
    o.id = "";
    assert_int_equal(reign_election_join(&e, c, "ok", &o), REIGN_EINVAL);
    o.id = "line\nbreak";
    assert_int_equal(reign_election_join(&e, c, "ok", &o), REIGN_EINVAL);
    o.id = "fine";
    static char big[REIGN_DATA_MAX + 1];
    o.data = big;
    o.data_len = sizeof(big);
    assert_int_equal(reign_election_join(&e, c, "ok", &o), REIGN_E2BIG);
    o.data_len = 10;
    o.strategy = (reign_strategy)7;
    assert_int_equal(reign_election_join(&e, c, "ok", &o), REIGN_EINVAL);
    o.strategy = REIGN_STRATEGY_LOCK;
    assert_int_equal(reign_election_join(&e, c, "ok", &o), 0);
    assert_non_null(e);
    assert_int_equal(reign_election_is_leader(e), 0);
    assert_int_equal(reign_election_valid_until_ns(e), 0);
    assert_int_equal(reign_election_cede(e, 0), REIGN_ESTATE);
    assert_null(reign_election_free(e));
    assert_int_equal(reign_client_wait_connected(c), REIGN_ETIMEDOUT);
    assert_non_null(strstr(reign_client_errmsg(c), "127.0.0.1:1"));
    assert_null(reign_client_free(c));
}

/* The event contract's order when an owed event and a newer one meet: a DEMOTED an API call
 * owes (resign, cede: told on the next loop turn) goes out before a LEFT or an ELECTED that
 * comes due first, whatever the order the loop runs the timer and the store's answers in. */
static reign_election_event_type seen[8];
static size_t n_seen;

static void record_event(reign_election *e, const reign_election_event *ev, void *ud)
{
    (void)e;
    (void)ud;
    if (n_seen < 8)
        seen[n_seen++] = ev->type;
}

static reign_election *no_free(reign_election *e)
{
    return e;
}

static void test_owed_demoted_first(void **state)
{
    (void)state;
    char err[256];
    reign_client *c = NULL;
    assert_int_equal(
        reign_client_new(&c, "zk://127.0.0.1:1?connect_timeout_ms=100", NULL, err, sizeof(err)), 0);
    static const reign__election_impl impl = {.free = no_free};
    reign_election e = {.impl = &impl};
    reign_election_options o = {.size = sizeof(o), .id = "a", .cb = record_event};
    assert_int_equal(reign__election_base_init(&e, c, "order", &o), 0);

    /* resign: DEMOTED owed by the call, then the delete's answer brings LEFT first */
    n_seen = 0;
    reign__election_lead(&e, 1, 1);
    assert_true(reign__election_demote(&e, REIGN_DEMOTE_RESIGNED, 0, true));
    assert_int_equal(n_seen, 0); /* never from inside the call */
    reign__election_left(&e, 0);
    assert_int_equal(n_seen, 2);
    assert_int_equal(seen[0], REIGN_ELECTION_DEMOTED);
    assert_int_equal(seen[1], REIGN_ELECTION_LEFT);

    /* cede: DEMOTED owed, then a new leadership's claim lands first */
    n_seen = 0;
    reign__election_lead(&e, 2, 2);
    assert_true(reign__election_demote(&e, REIGN_DEMOTE_CEDED, 0, true));
    reign__election_lead(&e, 3, 3);
    reign__election_elected(&e, reign_now_ns(), reign_now_ns() + 1000000000);
    assert_int_equal(n_seen, 2);
    assert_int_equal(seen[0], REIGN_ELECTION_DEMOTED);
    assert_int_equal(seen[1], REIGN_ELECTION_ELECTED);

    /* the owed timer, when it fires, has nothing left to tell */
    reign__election_flush(&e);
    assert_int_equal(n_seen, 2);
    reign__election_base_free(&e);
    assert_null(reign_client_free(c));
}

/* Out of memory at every allocation of reign_client_new and join: each
 * either succeeds or fails cleanly (ASan finds leaks and bad frees). */
static int budget;
static void *oom_malloc(size_t n)
{
    return budget-- > 0 ? malloc(n) : NULL;
}
static void *oom_realloc(void *p, size_t n)
{
    return budget-- > 0 ? realloc(p, n) : NULL;
}

static void test_oom(void **state)
{
    int successes = 0;
    for (int limit = 0; limit < 400 && successes < 3; limit++) {
        budget = limit;
        reign_set_allocator(oom_malloc, oom_realloc, free);
        char err[256];
        reign_client *c = NULL;
        int rc = reign_client_new(&c, "zk://u:p@127.0.0.1:1/x?connect_timeout_ms=50", NULL, err,
                                  sizeof(err));
        if (rc == 0) {
            reign_election *e = NULL;
            reign_election_options o = {.size = sizeof(o), .id = "me", .data = "d", .data_len = 1};
            rc = reign_election_join(&e, c, "oom", &o);
            if (rc == 0) {
                successes++;
                reign_election_free(e);
            } else {
                assert_int_equal(rc, REIGN_ENOMEM);
            }
            reign_set_allocator(NULL, NULL, NULL);
            reign_client_free(c);
        } else {
            reign_set_allocator(NULL, NULL, NULL);
            if (rc != REIGN_ENOMEM && rc != REIGN_ECONNECT)
                fail_msg("limit %d: %s: %s", limit, reign_err_name(rc), err);
            assert_null(c);
        }
    }
    reign_set_allocator(NULL, NULL, NULL);
    assert_true(successes > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_qnodes),
        cmocka_unit_test(test_node_names_from_data),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_client_refusals),
        cmocka_unit_test(test_redact),
        cmocka_unit_test(test_join_refusals),
        cmocka_unit_test(test_owed_demoted_first),
        cmocka_unit_test(test_store_refusals),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
