/*
 * test_tasks_unit.c - the task queue's pure parts, without a server: task names, queue names
 * and worker ids, paths, the status record, the order of names, and the task map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "recipes/tasks_internal.h"

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
    /* A task's payload node is named by the guid in the task's name. */
    p = reign__tasks_payload_path("q", "t_0123456789abcdef_0000000001");
    assert_string_equal(p, "/reign/tasks/q/data/0123456789abcdef");
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
    assert_int_equal(reign__tasks_status_parse(b.data, b.len, &st, &rec, &info), 0);
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
            reign__tasks_status_parse(foreign[i], strlen(foreign[i]), &st, &rec, &info),
            REIGN_EFOREIGN);

    /* Output beyond the bound is cut. */
    reign__buf_reset(&b);
    char *big = calloc(1, REIGN_TASK_OUTPUT_MAX + 10);
    assert_non_null(big);
    assert_int_equal(reign__tasks_status_build(&b, "w1", 0, 9, big, REIGN_TASK_OUTPUT_MAX + 10), 0);
    assert_int_equal(reign__tasks_status_parse(b.data, b.len, &st, &rec, &info), 0);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_task_names),    cmocka_unit_test(test_names_and_paths),
        cmocka_unit_test(test_status_record), cmocka_unit_test(test_sort),
        cmocka_unit_test(test_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
