/*
 * test_group_unit.c - the parts of the group and value recipes that need no
 * server: value keys, member node names, ordering, keeping the newest
 * registration per id, and the difference between two views (what a group
 * watch reports); when a SQL watch may reap a dead host's session; plus the argument checks of the
 * public functions, which refuse before anything is sent.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "recipes/group/group_internal.h"
#include "recipes/value/value_internal.h"

static void test_keys(void **state)
{
    const char *good[] = {
        "safemode", "tera/root_table", "a/b/c", "AccountService:1.0.0", "x.y_z-1", "...", "a/.b"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        assert_int_equal(reign_value_key_check(good[i]), 0);
    const char *bad[] = {"",       "/a",  "a/",   "a//b",        ".",    "..",  "a/./b",
                         "a/../b", "a b", "a\nb", "caf\xc3\xa9", "a\\b", "a/b/"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(reign_value_key_check(bad[i]), REIGN_ENAME);
    assert_int_equal(reign_value_key_check(NULL), REIGN_ENAME);

    /* a segment of 200 is fine, 201 is not */
    char seg[REIGN__SEGMENT_MAX + 2];
    memset(seg, 's', sizeof(seg));
    seg[REIGN__SEGMENT_MAX] = '\0';
    assert_int_equal(reign_value_key_check(seg), 0);
    seg[REIGN__SEGMENT_MAX] = 's';
    seg[REIGN__SEGMENT_MAX + 1] = '\0';
    assert_int_equal(reign_value_key_check(seg), REIGN_ENAME);

    /* 16 segments are fine, 17 are not */
    char deep[64] = "a";
    for (int i = 1; i < REIGN__KEY_SEGMENTS; i++)
        strcat(deep, "/a");
    assert_int_equal(reign_value_key_check(deep), 0);
    strcat(deep, "/a");
    assert_int_equal(reign_value_key_check(deep), REIGN_ENAME);

    /* the whole key is bounded too */
    char longkey[REIGN_KEY_MAX + 2];
    for (size_t i = 0; i < sizeof(longkey) - 1; i++)
        longkey[i] = i % 100 == 99 ? '/' : 'k';
    longkey[REIGN_KEY_MAX] = '\0';
    assert_int_equal(reign_value_key_check(longkey), 0);
    longkey[REIGN_KEY_MAX] = 'k';
    longkey[REIGN_KEY_MAX + 1] = '\0';
    assert_int_equal(reign_value_key_check(longkey), REIGN_ENAME);

    char *p = reign__value_path("tera/safemode");
    assert_string_equal(p, "/reign/value/tera/safemode");
    reign__free(p);
}

static void test_member_nodes(void **state)
{
    char guid[17];
    uint64_t seq;
    assert_true(reign__member_node_parse("m_0123456789abcdef_0000000042", guid, &seq));
    assert_string_equal(guid, "0123456789abcdef");
    assert_int_equal(seq, 42);
    assert_true(reign__member_node_parse("m_0123456789abcdef_2147483647", NULL, &seq));
    assert_int_equal(seq, 2147483647);
    const char *bad[] = {"n_0123456789abcdef_0000000042",
                         "m_0123456789abcdef_000000004",
                         "m_0123456789ABCDEF_0000000042",
                         "m_0123456789abcdef-0000000042",
                         "m_0123456789abcdef_00000000x2",
                         "m_0123456789abcdef_00000000420",
                         "term",
                         ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(reign__member_node_parse(bad[i], guid, &seq));
}

static reign_member mk(const char *node, uint64_t seq, const char *id, int64_t version)
{
    return (reign_member){.node = node, .seq = seq, .id = id, .version = version};
}

static void test_sort_and_newest(void **state)
{
    reign_member v[] = {mk("c", 10, "ts1:80", 0), mk("a", 2, "ts1:80", 0), mk("d", 11, "ts2:80", 0),
                        mk("b", 3, "ts2:80", 0), mk("e", 7, "ts3:80", 0)};
    reign__members_sort(v, 5);
    for (size_t i = 1; i < 5; i++)
        assert_true(v[i - 1].seq < v[i].seq);
    /* Tera's ts list: of several live entries of one address, the newest counts */
    size_t n = reign__members_newest_per_id(v, 5);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].node, "e");
    assert_string_equal(v[1].node, "c");
    assert_string_equal(v[2].node, "d");
    assert_int_equal(reign__members_newest_per_id(v, 0), 0);
}

typedef struct seen {
    char log[1024];
    int stop_after; /* sets *stop after this many calls (0: never) */
    int calls;
    bool stop;
} seen;

static void record(void *arg, reign__member_change kind, const reign_member *now,
                   const reign_member *before)
{
    seen *s = arg;
    const char *k = kind == REIGN__MEMBER_REMOVED ? "-" : kind == REIGN__MEMBER_CHANGED ? "~" : "+";
    size_t len = strlen(s->log);
    snprintf(s->log + len, sizeof(s->log) - len, "%s%s%s", len ? " " : "", k, now->node);
    if (kind == REIGN__MEMBER_CHANGED) {
        assert_non_null(before);
        assert_true(before->version != now->version);
        assert_int_equal(before->seq, now->seq);
    } else {
        assert_null(before);
    }
    if (++s->calls == s->stop_after)
        s->stop = true;
}

static void test_diff(void **state)
{
    reign_member before[] = {mk("a", 1, "x", 0), mk("b", 2, "y", 0), mk("c", 3, "z", 0),
                             mk("d", 4, "w", 5)};
    reign_member now[] = {mk("b", 2, "y", 1), mk("d", 4, "w", 5), mk("e", 5, "v", 0),
                          mk("f", 6, "u", 0)};
    seen s = {0};
    size_t n = reign__members_diff(before, 4, now, 4, record, &s, &s.stop);
    /* removed first, then changed, then added, each in registration order */
    assert_string_equal(s.log, "-a -c ~b +e +f");
    assert_int_equal(n, 5);

    /* from nothing: all added; to nothing: all removed; equal: nothing */
    memset(&s, 0, sizeof(s));
    reign__members_diff(NULL, 0, now, 4, record, &s, NULL);
    assert_string_equal(s.log, "+b +d +e +f");
    memset(&s, 0, sizeof(s));
    reign__members_diff(before, 4, NULL, 0, record, &s, NULL);
    assert_string_equal(s.log, "-a -b -c -d");
    memset(&s, 0, sizeof(s));
    assert_int_equal(reign__members_diff(now, 4, now, 4, record, &s, NULL), 0);
    assert_string_equal(s.log, "");

    /* the same sequence number under another node name (the group was made
     * again) is another registration */
    reign_member again[] = {mk("a2", 1, "x", 0)};
    memset(&s, 0, sizeof(s));
    reign__members_diff(before, 1, again, 1, record, &s, NULL);
    assert_string_equal(s.log, "-a +a2");

    /* the callback may stop the report (the watch was freed) */
    memset(&s, 0, sizeof(s));
    s.stop_after = 2;
    reign__members_diff(before, 4, now, 4, record, &s, &s.stop);
    assert_string_equal(s.log, "-a -c");
}

/* A burst applied to a view, step by step, and the diff of the first and
 * last views: replaying the reported changes onto the first view gives the
 * last one exactly. */
static void test_diff_replays(void **state)
{
    enum { N = 64 };
    static char names[N][8];
    reign_member a[N], b[N];
    size_t na = 0, nb = 0;
    srand(7);
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "n%d", i);
        if (rand() % 2)
            a[na++] = mk(names[i], (uint64_t)i, names[i], rand() % 3);
        if (rand() % 2)
            b[nb++] = mk(names[i], (uint64_t)i, names[i], rand() % 3);
    }
    seen s = {0};
    reign__members_diff(a, na, b, nb, record, &s, NULL);
    /* replay */
    bool present[N] = {0};
    for (size_t i = 0; i < na; i++)
        present[a[i].seq] = true;
    char *save = NULL;
    for (char *tok = strtok_r(s.log, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        int idx = atoi(tok + 2);
        if (tok[0] == '-') {
            assert_true(present[idx]);
            present[idx] = false;
        } else if (tok[0] == '+') {
            assert_false(present[idx]);
            present[idx] = true;
        } else {
            assert_true(present[idx]);
        }
    }
    size_t count = 0;
    for (int i = 0; i < N; i++)
        count += present[i];
    assert_int_equal(count, nb);
    for (size_t i = 0; i < nb; i++)
        assert_true(present[b[i].seq]);
}

static void test_api_refusals(void **state)
{
    reign_client *client = NULL;
    char err[256];
    /* a client that never connects: the refusals happen before any request */
    assert_int_equal(
        reign_client_new(&client, "zk://127.0.0.1:1?connect_timeout_ms=1", NULL, err, sizeof(err)),
        0);
    reign_group *g = NULL;
    reign_group_options o = {.size = sizeof(o), .id = "m1"};
    assert_int_equal(reign_group_register(&g, client, "a/b", &o), REIGN_ENAME);
    assert_int_equal(reign_group_register(&g, client, "..", &o), REIGN_ENAME);
    assert_int_equal(reign_group_register(&g, client, "", &o), REIGN_ENAME);
    o.id = "";
    assert_int_equal(reign_group_register(&g, client, "ok", &o), REIGN_EINVAL);
    o.id = "bad\nid";
    assert_int_equal(reign_group_register(&g, client, "ok", &o), REIGN_EINVAL);
    o.id = "m1";
    o.data_len = REIGN_MEMBER_DATA_MAX + 1;
    o.data = "";
    assert_int_equal(reign_group_register(&g, client, "ok", &o), REIGN_E2BIG);
    assert_null(g);
    reign_group_watch *w = NULL;
    assert_int_equal(reign_group_watch_start(&w, client, "a b", NULL), REIGN_ENAME);
    assert_int_equal(reign_group_list(client, "ok", NULL, NULL), REIGN_EINVAL);

    assert_int_equal(reign_value_get(client, "a//b", NULL, NULL), REIGN_ENAME);
    assert_int_equal(reign_value_set(client, "k", "x", 1, -3, NULL, NULL), REIGN_EINVAL);
    assert_int_equal(reign_value_set(client, "k", NULL, 1, REIGN_VALUE_ANY, NULL, NULL),
                     REIGN_EINVAL);
    assert_int_equal(
        reign_value_set(client, "k", "", REIGN_VALUE_DATA_MAX + 1, REIGN_VALUE_ANY, NULL, NULL),
        REIGN_E2BIG);
    assert_int_equal(reign_value_delete(client, "k", REIGN_VALUE_ABSENT, NULL, NULL), REIGN_EINVAL);
    reign_value_watch *vw = NULL;
    assert_int_equal(reign_value_watch_start(&vw, client, "/abs", NULL, NULL), REIGN_ENAME);
    assert_null(vw);

    /* objects made before any session are freed cleanly with the client */
    o.data_len = 0;
    assert_int_equal(reign_group_register(&g, client, "ok", &o), 0);
    assert_int_equal(reign_group_is_registered(g), 0);
    assert_null(reign_group_node(g));
    assert_int_equal(reign_group_watch_start(&w, client, "ok", NULL), 0);
    assert_int_equal(reign_value_watch_start(&vw, client, "a/b", NULL, NULL), 0);
    const reign_member *m;
    size_t n = 1;
    reign_group_watch_members(w, &m, &n);
    assert_int_equal(n, 0);
    reign_value v;
    assert_int_equal(reign_value_watch_get(vw, &v), REIGN_ENOENT);
    assert_null(reign_group_free(g));
    reign_client_free(client);
}

static void test_names(void **state)
{
    assert_string_equal(reign_group_watch_event_name(REIGN_MEMBER_ADDED), "added");
    assert_string_equal(reign_group_watch_event_name(REIGN_MEMBERS_GROUP_DELETED), "group_deleted");
    assert_string_equal(reign_group_loss_name(REIGN_GROUP_SESSION_LOST), "session_lost");
    assert_string_equal(reign_value_event_name(REIGN_VALUE_DELETED), "deleted");
}

/* A session is reaped only after its beat stood still for a whole lease, counted from the
 * first read that showed that beat; a new beat, or a session read again after it went, starts
 * the count again. */
static void test_seen_sessions(void **state)
{
    (void)state;
    const int64_t ms = REIGN__NS_PER_MS;
    reign__seen_session *known = NULL;
    size_t n = 0;
    reign__session_read r1[] = {{"s1", 5, 1000}, {"s2", 7, 2000}, {"s1", 5, 1000}};
    assert_int_equal(reign__seen_sessions_update(&known, &n, r1, 3, 100 * ms), 0);
    assert_int_equal(n, 2); /* s1 twice: one session */
    assert_int_equal(reign__seen_sessions_next(known, n), 1100 * ms);
    assert_false(reign__seen_session_due(&known[0], 1099 * ms));
    assert_true(reign__seen_session_due(&known[0], 1100 * ms));

    /* Read again later: s1 at the same beat keeps its count, s2 beat meanwhile restarts. */
    reign__session_read r2[] = {{"s1", 5, 1000}, {"s2", 8, 2000}};
    assert_int_equal(reign__seen_sessions_update(&known, &n, r2, 2, 900 * ms), 0);
    assert_int_equal(known[0].since_ns, 100 * ms);
    assert_int_equal(known[1].since_ns, 900 * ms);
    assert_false(reign__seen_session_due(&known[1], 2899 * ms));
    assert_true(reign__seen_session_due(&known[1], 2900 * ms));

    /* s1 not read (its members left): forgotten; read again at the old beat, counted anew. */
    reign__session_read r3[] = {{"s2", 8, 2000}};
    assert_int_equal(reign__seen_sessions_update(&known, &n, r3, 1, 1000 * ms), 0);
    assert_int_equal(n, 1);
    assert_int_equal(reign__seen_sessions_update(&known, &n, r2, 2, 1200 * ms), 0);
    assert_int_equal(known[0].since_ns, 1200 * ms);
    assert_false(reign__seen_session_due(&known[0], 2199 * ms));

    /* No session: nothing to reap, ever. */
    assert_int_equal(reign__seen_sessions_update(&known, &n, NULL, 0, 3000 * ms), 0);
    assert_int_equal(n, 0);
    assert_true(reign__seen_sessions_next(known, n) == INT64_MAX);
    reign__free(known);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_member_nodes),
        cmocka_unit_test(test_sort_and_newest),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_diff_replays),
        cmocka_unit_test(test_seen_sessions),
        cmocka_unit_test(test_api_refusals),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
