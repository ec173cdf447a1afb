/*
 * test_tasks_unit.c - the task queue's pure parts, without a server: task names, queue names
 * and worker ids, paths, the status record, the order of names, the task map, and a worker's
 * limits (its group payload "concurrency=N\nprefetch=M", read by the master from any worker,
 * foreign ones included).
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "recipes/tasks/tasks_internal.h"

static void test_task_names(void **state)
{
    (void)state;
    char guid[17];
    uint64_t seq = 0;
    assert_true(reign__task_name_parse("t_0123456789abcdef_0000000042", guid, &seq));
    assert_string_equal(guid, "0123456789abcdef");
    assert_int_equal(seq, 42);
    const char *bad[] = {"",
                         "t_0123456789abcdef_000000004",    /* 9 digits */
                         "t_0123456789abcdef_00000000421",  /* 11 */
                         "t_0123456789ABCDEF_0000000042",   /* upper-case hex */
                         "x_0123456789abcdef_0000000042",   /* not a task */
                         "t_0123456789abcdeg_0000000042",   /* not hex */
                         "t_0123456789abcdef-0000000042",   /* separator */
                         "t_0123456789abcdef_00000000a2",   /* not a digit */
                         "../0123456789abcdef_0000000042"}; /* a path */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_false(reign__task_name_parse(bad[i], NULL, NULL));
    assert_false(reign__task_name_parse(NULL, NULL, NULL));
}

static void test_names_and_paths(void **state)
{
    (void)state;
    assert_int_equal(reign__tasks_queue_check("thumbs.v2:eu-1_a"), 0);
    assert_int_equal(reign__tasks_queue_check(""), REIGN_ENAME);
    assert_int_equal(reign__tasks_queue_check(".."), REIGN_ENAME);
    assert_int_equal(reign__tasks_queue_check("a/b"), REIGN_ENAME);
    assert_int_equal(reign__tasks_queue_check(NULL), REIGN_ENAME);
    char longname[REIGN_TASKS_QUEUE_MAX + 2];
    memset(longname, 'q', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(reign__tasks_queue_check(longname), REIGN_ENAME);
    longname[REIGN_TASKS_QUEUE_MAX] = '\0';
    assert_int_equal(reign__tasks_queue_check(longname), 0);
    assert_int_equal(reign__tasks_worker_check("w 1"), REIGN_ENAME);
    assert_int_equal(reign__tasks_worker_check("w1"), 0);

    char *p = reign__tasks_path("q", "assign", "w1", "t_0123456789abcdef_0000000001");
    assert_string_equal(p, "/reign/tasks/q/assign/w1/t_0123456789abcdef_0000000001");
    reign__free(p);
    p = reign__tasks_path("q", NULL, NULL, NULL);
    assert_string_equal(p, "/reign/tasks/q");
    reign__free(p);
    p = reign__tasks_path("q", "status", NULL, "ignored");
    assert_string_equal(p, "/reign/tasks/q/status");
    reign__free(p);
    p = reign__tasks_group_name("q");
    assert_string_equal(p, "tasks.q");
    reign__free(p);
    /* A task's payload node is named by the guid in the task's name, in the bucket of the
     * guid's first 4 digits. */
    p = reign__tasks_payload_path("q", "t_0123456789abcdef_0000000001");
    assert_string_equal(p, "/reign/tasks/q/data/0123/0123456789abcdef");
    reign__free(p);
    p = reign__tasks_bucket_path("q", "0123456789abcdef");
    assert_string_equal(p, "/reign/tasks/q/data/0123");
    reign__free(p);
    assert_null(reign__tasks_payload_path("q", "t_0123456789abcdef_1"));
    assert_null(reign__tasks_payload_path("q", "not-a-task"));
}

static void test_status_record(void **state)
{
    (void)state;
    reign__buf b;
    reign__buf_init(&b);
    assert_int_equal(reign__tasks_status_build(&b, "w1", 3, 0, "out\n", 4), 0);
    reign__record rec;
    reign_task_info info = {0};
    reign__zk_stat st = {.ctime_ms = 1234};
    assert_int_equal(reign__tasks_status_parse(b.data, b.len, st.ctime_ms, &rec, &info), 0);
    assert_int_equal(info.state, REIGN_TASK_DONE);
    assert_string_equal(info.worker, "w1");
    assert_int_equal(info.exit_code, 3);
    assert_int_equal(info.signal, 0);
    assert_int_equal(info.output_len, 4);
    assert_memory_equal(info.output, "out\n", 4);
    assert_int_equal(info.done_ms, 1234);
    reign__record_clear(&rec);

    /* Foreign data: not a record, a record without the fields, out-of-range values. */
    const char *foreign[] = {"hello",
                             "reign 1\nworker=w\n\n",
                             "reign 1\nexit=1\nsignal=0\n\n",
                             "reign 1\nworker=w\nexit=256\nsignal=0\n\n",
                             "reign 1\nworker=w\nexit=1x\nsignal=0\n\n",
                             "reign 1\nworker=w\nexit=1\nsignal=300\n\n"};
    for (size_t i = 0; i < sizeof(foreign) / sizeof(foreign[0]); i++)
        assert_int_equal(
            reign__tasks_status_parse(foreign[i], strlen(foreign[i]), st.ctime_ms, &rec, &info),
            REIGN_EFOREIGN);

    /* Output beyond the bound is cut. */
    reign__buf_reset(&b);
    char *big = calloc(1, REIGN_TASK_OUTPUT_MAX + 10);
    assert_non_null(big);
    assert_int_equal(reign__tasks_status_build(&b, "w1", 0, 9, big, REIGN_TASK_OUTPUT_MAX + 10), 0);
    assert_int_equal(reign__tasks_status_parse(b.data, b.len, st.ctime_ms, &rec, &info), 0);
    assert_int_equal(info.output_len, REIGN_TASK_OUTPUT_MAX);
    assert_int_equal(info.signal, 9);
    reign__record_clear(&rec);
    free(big);
    reign__buf_free(&b);
}

static void test_sort(void **state)
{
    (void)state;
    char a[] = "t_ffffffffffffffff_0000000010", b[] = "t_0000000000000000_0000000002",
         c[] = "t_aaaaaaaaaaaaaaaa_0000000007";
    char *v[] = {a, b, c};
    reign__tasks_sort_names(v, 3);
    assert_ptr_equal(v[0], b);
    assert_ptr_equal(v[1], c);
    assert_ptr_equal(v[2], a);
}

static void test_map(void **state)
{
    (void)state;
    reign__tmap m = {0};
    char key[64];
    /* Many puts and deletes, so that the table grows and tombstones are reused. */
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "t%d", i);
        reign__tmap_entry *e = reign__tmap_put(&m, key);
        assert_non_null(e);
        e->flags = i;
    }
    assert_int_equal(m.n, 1000);
    for (int i = 0; i < 1000; i += 2) {
        snprintf(key, sizeof(key), "t%d", i);
        reign__tmap_del(&m, reign__tmap_get(&m, key));
    }
    assert_int_equal(m.n, 500);
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "t%d", i);
        reign__tmap_entry *e = reign__tmap_get(&m, key);
        if (i % 2) {
            assert_non_null(e);
            assert_int_equal(e->flags, i);
        } else {
            assert_null(e);
        }
    }
    assert_ptr_equal(reign__tmap_put(&m, "t1"), reign__tmap_get(&m, "t1")); /* no duplicate */
    assert_int_equal(m.n, 500);
    size_t live = 0;
    for (size_t i = 0; i < m.cap; i++)
        live += reign__tmap_live(&m, i);
    assert_int_equal(live, 500);
    reign__tmap_clear(&m);
    assert_null(reign__tmap_get(&m, "t1"));
}

/* Parses data[0..len) and checks what the master would take from it. */
static void check_limits(const char *data, size_t len, size_t want_c, size_t want_p)
{
    size_t c = 0, p = 0;
    reign__tasks_limits_parse(data, len, &c, &p);
    if (c != want_c || p != want_p)
        fail_msg("'%.*s' (%zu bytes): concurrency %zu prefetch %zu, expected %zu %zu", (int)len,
                 data ? data : "", len, c, p, want_c, want_p);
}

static void test_limits_round_trip(void **state)
{
    (void)state;
    char buf[REIGN__TASKS_LIMITS_MAX];
    size_t n = reign__tasks_limits_build(buf, 2, 5);
    assert_int_equal(n, strlen("concurrency=2\nprefetch=5"));
    assert_memory_equal(buf, "concurrency=2\nprefetch=5", n);
    /* What a worker may ask for (1..10000, concurrency..40000), and the parser's own bounds. */
    static const int pairs[][2] = {{1, 1},           {1, 4},          {2, 5},
                                   {3, 12},          {10000, 10000},  {10000, 40000},
                                   {100000, 100000}, {100000, 400000}};
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        memset(buf, 'x', sizeof(buf));
        n = reign__tasks_limits_build(buf, pairs[i][0], pairs[i][1]);
        assert_true(n > 0 && n < REIGN__TASKS_LIMITS_MAX);
        assert_int_equal(buf[n], '\0');
        /* What is registered is the n bytes, without the NUL. */
        check_limits(buf, n, (size_t)pairs[i][0], (size_t)pairs[i][1]);
    }
    /* The widest ints still fit the buffer. */
    n = reign__tasks_limits_build(buf, INT_MIN, INT_MIN);
    assert_true(n > 0 && n < REIGN__TASKS_LIMITS_MAX);
    assert_int_equal(strlen(buf), n);
    /* ... and are not taken as limits. */
    check_limits(buf, n, 1, 2);
}

static void test_limits_earlier_workers(void **state)
{
    (void)state;
    /* Workers of earlier versions sent only their concurrency, and were given twice that. */
    check_limits("concurrency=8", 13, 8, 16);
    check_limits("concurrency=8\n", 14, 8, 16);
    check_limits("concurrency=1", 13, 1, 2);
    check_limits("concurrency=100000", 18, 100000, 200000);
    /* Nothing at all (a foreign member, or no payload). */
    check_limits("", 0, 1, 2);
    check_limits(NULL, 0, 1, 2);
    check_limits(NULL, 100, 1, 2); /* no data, whatever the length says */
}

static void test_limits_prefetch(void **state)
{
    (void)state;
    /* Below concurrency: concurrency (the worker could not even fill its slots). */
    check_limits("concurrency=8\nprefetch=3", 24, 8, 8);
    check_limits("concurrency=8\nprefetch=0", 24, 8, 8);
    check_limits("concurrency=8\nprefetch=8", 24, 8, 8);
    check_limits("concurrency=8\nprefetch=9", 24, 8, 9);
    /* Missing or malformed: twice concurrency, as for earlier workers. */
    static const char *const bad[] = {
        "concurrency=8\nprefetch=",    "concurrency=8\nprefetch=x",  "concurrency=8\nprefetch=-1",
        "concurrency=8\nprefetch=+9",  "concurrency=8\nprefetch= 9", "concurrency=8\nprefetch=9 ",
        "concurrency=8\nprefetch=9x",  "concurrency=8\nprefetch",    "concurrency=8\nprefetch:9",
        "concurrency=8\nPREFETCH=9",   "concurrency=8\nprefetch =9", "concurrency=8\nprefetch==9",
        "concurrency=8\nxprefetch=9",  "concurrency=8\nprefetchx=9", "concurrency=8\n prefetch=9",
        "concurrency=8\nprefetch=0x10"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        check_limits(bad[i], strlen(bad[i]), 8, 16);
    /* The parser's upper bound. */
    check_limits("concurrency=8\nprefetch=400000", 29, 8, 400000);
    /* Beyond it (no worker of ours says that), however long the number: concurrency, as for
     * any prefetch out of range. */
    static const char *const huge[] = {
        "concurrency=8\nprefetch=400001",
        "concurrency=8\nprefetch=9999999",
        "concurrency=8\nprefetch=10000000",
        "concurrency=8\nprefetch=99999999",
        "concurrency=8\nprefetch=0000000000400000",
        "concurrency=8\nprefetch=18446744073709551617",
        "concurrency=8\nprefetch=999999999999999999999999999999999999999"};
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++)
        check_limits(huge[i], strlen(huge[i]), 8, i == 4 ? 400000 : 8);
}

static void test_limits_malformed_concurrency(void **state)
{
    (void)state;
    /* A concurrency that cannot be read is 1 (and the prefetch, if missing, 2). */
    static const char *const bad[] = {"concurrency=x",
                                      "concurrency=12abc",
                                      "concurrency=",
                                      "concurrency",
                                      "concurrency=0",
                                      "concurrency=-3",
                                      "concurrency=+3",
                                      "concurrency= 3",
                                      "concurrency=3 ",
                                      "concurrency=3\r",
                                      "concurrency=3.0",
                                      "concurrency=100001",
                                      "concurrency=9999999",
                                      "concurrency=99999999999999999999",
                                      "concurrency=18446744073709551617",
                                      "CONCURRENCY=3",
                                      "concurrency =3",
                                      "concurrency==3",
                                      "xconcurrency=3",
                                      "concurrencyx=3",
                                      " concurrency=3",
                                      "concurrency:3",
                                      "\n",
                                      "\n\n\n",
                                      "=",
                                      "=3",
                                      "3"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        check_limits(bad[i], strlen(bad[i]), 1, 2);
    /* A bad concurrency with a good prefetch: the prefetch stands (it is at least 1). */
    check_limits("concurrency=x\nprefetch=5", 24, 1, 5);
    check_limits("concurrency=3\r\nprefetch=9", 25, 1, 9);
    /* A NUL inside a line makes it malformed (the payload is bytes, not a C string). */
    check_limits("concurrency=3\0", 14, 1, 2);
    check_limits("concurrency=3\0\nprefetch=9", 25, 1, 9);
    check_limits("concurrency=3\n\0prefetch=9", 25, 3, 6);
}

static void test_limits_layout(void **state)
{
    (void)state;
    /* Keys in any order, unknown keys and empty lines around them. */
    check_limits("prefetch=7\nconcurrency=3", 24, 3, 7);
    check_limits("foo=1\nconcurrency=3\nbar=2\nprefetch=7\n", 37, 3, 7);
    check_limits("\n\nconcurrency=3\n\nprefetch=7\n\n", 29, 3, 7);
    check_limits("\nconcurrency=3", 14, 3, 6);
    check_limits("prefetch=7", 10, 1, 7);
    check_limits("prefetch=7\n", 11, 1, 7);
    check_limits("concurrency=3\nconcurrency=x\nprefetch=7", 38, 3, 7);
    /* A repeated key: one of its values (which one is not promised). */
    size_t c = 0, p = 0;
    reign__tasks_limits_parse("concurrency=3\nconcurrency=5\nprefetch=7", 38, &c, &p);
    assert_true(c == 3 || c == 5);
    assert_int_equal(p, 7);
    /* A value that is a prefix of another line's key, and keys inside values. */
    check_limits("concurrency=3\nprefetch=concurrency=4", 36, 3, 6);
}

static void test_limits_length(void **state)
{
    (void)state;
    /* Only data[0..len) counts: the bytes after it are not read. */
    const char *s = "concurrency=34\nprefetch=99";
    check_limits(s, strlen(s), 34, 99);
    check_limits(s, strlen(s) - 1, 34, 34); /* "prefetch=9": below concurrency */
    check_limits(s, 16, 34, 68);            /* "concurrency=34\np" */
    check_limits(s, 15, 34, 68);            /* "concurrency=34\n" */
    check_limits(s, 13, 3, 6);              /* "concurrency=3" */
    check_limits(s, 12, 1, 2);              /* "concurrency=" */
    check_limits(s, 0, 1, 2);
    /* An exact-size buffer with no NUL anywhere (a sanitizer build sees a read past it). */
    static const char payload[] = "concurrency=6\nprefetch=24";
    char *exact = malloc(sizeof(payload) - 1);
    assert_non_null(exact);
    memcpy(exact, payload, sizeof(payload) - 1);
    check_limits(exact, sizeof(payload) - 1, 6, 24);
    check_limits(exact, 13, 6, 12);
    free(exact);
    /* A long payload: the keys are found wherever they are. */
    size_t big_len = 100000;
    char *big = malloc(big_len);
    assert_non_null(big);
    memset(big, '\n', big_len);
    memcpy(big + 50000, "concurrency=5", 13);
    memcpy(big + big_len - 10, "prefetch=9", 10);
    check_limits(big, big_len, 5, 9);
    free(big);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_names),
        cmocka_unit_test(test_names_and_paths),
        cmocka_unit_test(test_status_record),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_limits_round_trip),
        cmocka_unit_test(test_limits_earlier_workers),
        cmocka_unit_test(test_limits_prefetch),
        cmocka_unit_test(test_limits_malformed_concurrency),
        cmocka_unit_test(test_limits_layout),
        cmocka_unit_test(test_limits_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
