/*
 * test_trace.c - the step trace of REIGN_TRACE: one line per step, with the
 * monotonic time, pid, tid, step and detail; several threads append whole
 * lines; an over-long detail is cut, never the newline.  ctest runs it twice:
 * "on" with REIGN_TRACE naming a file (set before the library is loaded, as a
 * user would), "off" without it.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core.h"

#define PER_THREAD 200

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char *buf = NULL;
    size_t cap = 0, n = 0, r;
    do {
        if (n + 4096 > cap)
            buf = realloc(buf, cap = (cap + 4096) * 2);
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void *writer(void *arg)
{
    for (int i = 0; i < PER_THREAD; i++)
        reign_trace("unit.thread", "%d %d", (int)(intptr_t)arg, i);
    return NULL;
}

static void test_on(void **state)
{
    (void)state;
    const char *path = getenv("REIGN_TRACE");
    assert_non_null(path);
    assert_true(reign_trace_enabled());
    size_t before;
    free(slurp(path, &before));

    int64_t t0 = reign__now_ns();
    reign_trace("unit.step", "x=%d %s", 7, "/a/b");
    reign_trace("unit.bare", NULL);
    char long_detail[2000];
    memset(long_detail, 'z', sizeof(long_detail) - 1);
    long_detail[sizeof(long_detail) - 1] = '\0';
    reign_trace("unit.long", "%s", long_detail);
    reign_trace(long_detail, "%d", 1); /* a step longer than a line: cut, one line still */
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);

    size_t len;
    char *all = slurp(path, &len);
    assert_true(len > before);
    char *p = all + before, *save = NULL;
    int n = 0, threads = 0, seen[4] = {0};
    for (char *line = strtok_r(p, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
        long long ns;
        int pid, tid, off = 0;
        char step[64];
        assert_int_equal(sscanf(line, "%lld %d %d %63s %n", &ns, &pid, &tid, step, &off), 4);
        assert_true(ns >= t0);
        assert_int_equal(pid, (int)getpid());
        assert_true(strlen(line) < 512);
        if (n == 0) {
            assert_string_equal(step, "unit.step");
            assert_string_equal(line + off, "x=7 /a/b");
            assert_int_equal(tid, (int)getpid()); /* the main thread */
        } else if (n == 1) {
            assert_string_equal(step, "unit.bare");
            assert_int_equal(line[off], '\0');
        } else if (n == 2) {
            assert_string_equal(step, "unit.long");
            assert_true(strspn(line + off, "z") == strlen(line + off));
        } else if (n == 3) {
            assert_true(strspn(step, "z") == strlen(step)); /* %63s: its first 63 */
        } else {
            int who, i;
            assert_string_equal(step, "unit.thread");
            assert_int_equal(sscanf(line + off, "%d %d", &who, &i), 2);
            assert_true(who >= 0 && who < 4);
            assert_int_equal(i, seen[who]++); /* each thread's lines whole and in order */
            threads++;
        }
    }
    assert_int_equal(threads, 4 * PER_THREAD);
    free(all);
}

static void test_off(void **state)
{
    (void)state;
    assert_null(getenv("REIGN_TRACE"));
    assert_false(reign_trace_enabled());
    reign_trace("unit.step", "%s", "nothing happens");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest on[] = {cmocka_unit_test(test_on)};
    const struct CMUnitTest off[] = {cmocka_unit_test(test_off)};
    if (argc > 1 && strcmp(argv[1], "on") == 0)
        return cmocka_run_group_tests(on, NULL, NULL);
    return cmocka_run_group_tests(off, NULL, NULL);
}
