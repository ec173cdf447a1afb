/*
 * test_core.c - unit tests of the core pieces that have no parser of their
 * own: the timer heap, buffers, error names, and the allocator hook.
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

static int fired[64];
static int order[64];
static int n_order;

static void on_timer(reign__timer *t, void *arg)
{
    int i = (int)(intptr_t)arg;
    fired[i]++;
    order[n_order++] = i;
}

static void test_timer_order(void **state)
{
    reign__timers ts = {0};
    reign__timer t[32];
    memset(fired, 0, sizeof(fired));
    n_order = 0;
    /* Arm in a scrambled order; they must fire by due time. */
    for (int i = 0; i < 32; i++) {
        int k = (i * 7) % 32;
        reign__timer_init(&t[k], on_timer, (void *)(intptr_t)k);
        assert_int_equal(reign__timer_start(&ts, &t[k], 1000 + k), 0);
    }
    assert_int_equal(reign__timers_next(&ts), 1000);
    reign__timers_run(&ts, 1015);
    assert_int_equal(n_order, 16);
    for (int i = 0; i < 16; i++)
        assert_int_equal(order[i], i);
    assert_false(reign__timer_armed(&t[3]));
    assert_true(reign__timer_armed(&t[20]));
    /* Stopping from the middle keeps the heap ordered. */
    reign__timer_stop(&ts, &t[20]);
    reign__timer_stop(&ts, &t[20]); /* twice is harmless */
    reign__timer_stop(&ts, &t[16]);
    assert_int_equal(reign__timers_next(&ts), 1017);
    /* Re-arming moves a timer. */
    assert_int_equal(reign__timer_start(&ts, &t[31], 1), 0);
    assert_int_equal(reign__timers_next(&ts), 1);
    reign__timers_run(&ts, 5000);
    assert_int_equal(fired[20], 0);
    assert_int_equal(fired[16], 0);
    assert_int_equal(fired[31], 1);
    assert_int_equal(reign__timers_next(&ts), -1);
    reign__timers_free(&ts);
}

static reign__timers *g_ts;
static reign__timer g_self;
static int g_rearms;

static void rearm_self(reign__timer *t, void *arg)
{
    /* A timer may re-arm itself from its own callback, in the future. */
    if (++g_rearms < 3)
        reign__timer_start(g_ts, t, t->due_ns + 10);
}

static void test_timer_rearm_from_callback(void **state)
{
    reign__timers ts = {0};
    g_ts = &ts;
    g_rearms = 0;
    reign__timer_init(&g_self, rearm_self, NULL);
    reign__timer_start(&ts, &g_self, 100);
    reign__timers_run(&ts, 100);
    assert_int_equal(g_rearms, 1);
    assert_int_equal(reign__timers_next(&ts), 110);
    reign__timers_run(&ts, 1000); /* fires at 110 and 120; the last does not re-arm */
    assert_int_equal(g_rearms, 3);
    assert_false(reign__timer_armed(&g_self));
    reign__timers_free(&ts);
}

static void test_buf(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    for (int i = 0; i < 1000; i++)
        assert_int_equal(reign__buf_printf(&b, "%d,", i), 0);
    assert_false(b.oom);
    assert_int_equal(strncmp(b.data, "0,1,2,", 6), 0);
    assert_int_equal(b.len, strlen(b.data));
    reign__buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_int_equal(reign__buf_append(&b, "a\0b", 3), 0);
    assert_int_equal(b.len, 3);
    assert_int_equal(b.data[3], '\0');
    reign__buf_free(&b);

    char small[4];
    reign__strlcpy(small, "abcdef", sizeof(small));
    assert_string_equal(small, "abc");
}

static void test_strset(void **state)
{
    (void)state;
    reign__strset set = {0};
    assert_false(reign__strset_has(&set, "a"));
    char s[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(s, sizeof(s), "name-%d", i);
        assert_int_equal(reign__strset_add(&set, s), 1);
    }
    for (int i = 0; i < 5000; i += 7) {
        snprintf(s, sizeof(s), "name-%d", i);
        assert_int_equal(reign__strset_add(&set, s), 0); /* there already */
    }
    assert_int_equal(set.n, 5000);
    for (int i = 0; i < 6000; i++) {
        snprintf(s, sizeof(s), "name-%d", i);
        assert_int_equal(reign__strset_has(&set, s), i < 5000);
    }
    assert_string_equal(set.v[0], "name-0"); /* in the order added */
    assert_string_equal(set.v[4999], "name-4999");
    assert_int_equal(reign__strset_add(&set, ""), 1);
    assert_true(reign__strset_has(&set, ""));
    reign__strset_free(&set);
    assert_int_equal(set.n, 0);
    assert_false(reign__strset_has(&set, "name-1"));
}

static void test_u64set(void **state)
{
    (void)state;
    reign__u64set set = {0};
    assert_false(reign__u64set_has(&set, 0));
    for (uint64_t k = 0; k < 3000; k++)
        assert_int_equal(reign__u64set_add(&set, k * 0x100000001ULL), 1);
    assert_int_equal(reign__u64set_add(&set, 7 * 0x100000001ULL), 0);
    assert_int_equal(reign__u64set_add(&set, UINT64_MAX), 1); /* the key without a slot */
    assert_int_equal(reign__u64set_add(&set, UINT64_MAX), 0);
    assert_int_equal(set.n, 3001);
    for (uint64_t k = 0; k < 4000; k++)
        assert_int_equal(reign__u64set_has(&set, k * 0x100000001ULL), k < 3000);
    assert_true(reign__u64set_has(&set, UINT64_MAX));
    assert_false(reign__u64set_has(&set, UINT64_MAX - 1));
    assert_true(reign__hash_str("a") != reign__hash_str("b"));
    reign__u64set_free(&set);
    assert_false(reign__u64set_has(&set, 0));
}

static void test_errors(void **state)
{
    assert_string_equal(reign_strerror(REIGN_EURI), "malformed URI");
    assert_string_equal(reign_err_name(REIGN_EURI), "REIGN_EURI");
    assert_int_equal(REIGN_EINVAL, -EINVAL);
    assert_string_equal(reign_err_name(REIGN_ETIMEDOUT), "REIGN_ETIMEDOUT");
    assert_non_null(reign_strerror(-99999));
    assert_non_null(reign_strerror(-EPIPE)); /* falls back to strerror */
    assert_string_equal(reign_strerror(0), "success");
    assert_int_equal(reign_log_level_parse("debug"), REIGN_LOG_DEBUG);
    assert_int_equal(reign_log_level_parse("loud"), REIGN_EINVAL);
    assert_string_equal(reign_log_level_name(REIGN_LOG_WARN), "warn");
    assert_string_equal(reign_version(), REIGN_VERSION_STRING);
}

static int fail_after;
static void *counting_malloc(size_t n)
{
    return fail_after-- > 0 ? malloc(n) : NULL;
}
static void *counting_realloc(void *p, size_t n)
{
    return fail_after-- > 0 ? realloc(p, n) : NULL;
}

static int g_dtors;
static void count_dtor(void *p)
{
    (void)p;
    g_dtors++;
}

/* Held allocations: freed one by one from the middle, the head and the
 * tail, or all at once; each dtor runs exactly once. */
static void test_held(void **state)
{
    (void)state;
    reign__held *list = NULL;
    int *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = reign__held_new(&list, sizeof(int), count_dtor, (uintptr_t)i + 10);
        assert_non_null(p[i]);
        assert_int_equal(*p[i], 0);
        assert_int_equal(reign__held_tag(p[i]), i + 10);
    }
    g_dtors = 0;
    reign__held_free(&list, p[1]);
    reign__held_free(&list, p[3]); /* the newest: the list's head */
    reign__held_free(&list, NULL);
    assert_int_equal(g_dtors, 2);
    reign__held_free_all(&list);
    assert_int_equal(g_dtors, 4);
    assert_null(list);
    reign__held_free_all(&list);
    assert_int_equal(g_dtors, 4);
}

static void test_allocator_hook(void **state)
{
    assert_int_equal(reign_set_allocator(counting_malloc, NULL, free), REIGN_EINVAL);
    assert_int_equal(reign_set_allocator(counting_malloc, counting_realloc, free), 0);
    fail_after = 0;
    assert_null(reign__strdup("x"));
    reign__buf b;
    reign__buf_init(&b);
    assert_int_equal(reign__buf_puts(&b, "hello"), REIGN_ENOMEM);
    assert_true(b.oom);
    fail_after = 100;
    assert_int_equal(reign__buf_puts(&b, "again"), REIGN_ENOMEM); /* sticky */
    reign__buf_free(&b);
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timer_order), cmocka_unit_test(test_timer_rearm_from_callback),
        cmocka_unit_test(test_buf),         cmocka_unit_test(test_errors),
        cmocka_unit_test(test_held),        cmocka_unit_test(test_allocator_hook),
        cmocka_unit_test(test_strset),      cmocka_unit_test(test_u64set),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
