/*
 * test_hooks.c - the serial hook queue (src/reignd/hooks.c) with real
 * /bin/sh commands on a real libuv loop: order and one at a time, exit
 * statuses, timeouts that kill the whole process group, data only in the
 * environment (a value like $(touch x) arrives verbatim and runs nothing),
 * reignd's own REIGN_* variables kept out, and closing with work queued.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testdir.h"

#include "hooks.h"

#define MAX_RESULTS 16

typedef struct results {
    int n;
    char what[MAX_RESULTS][32];
    reignd_hook_result r[MAX_RESULTS];
    reignd_hooks *requeue_on; /* on_result queues "again" once on this queue */
} results;

static void on_result(reignd_hooks *q, const reignd_hook_result *r, void *userdata)
{
    results *res = userdata;
    assert_true(res->n < MAX_RESULTS);
    snprintf(res->what[res->n], sizeof(res->what[0]), "%s", r->what);
    res->r[res->n] = *r;
    res->r[res->n].what = res->what[res->n];
    res->n++;
    if (res->requeue_on == q) {
        res->requeue_on = NULL;
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "echo again >> %s/log", dir);
        assert_int_equal(reignd_hooks_run(q, "again", cmd, 5000, NULL, on_result, res), 0);
    }
}

static char *slurp(const char *name)
{
    static char buf[4096];
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static bool exists(const char *name)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static reignd_hooks *new_queue(uv_loop_t *loop)
{
    reignd_hooks *q = NULL;
    assert_int_equal(reignd_hooks_new(&q, loop), 0);
    return q;
}

/* Runs the loop until nothing is left, then frees the queue. */
static void drain(uv_loop_t *loop, reignd_hooks *q)
{
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(reignd_hooks_pending(q), 0);
    reignd_hooks_close(q);
    uv_run(loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(loop), 0);
}

/* Three commands that each take a while: never two at once, in order. */
static void test_serial_order(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {.requeue_on = NULL};
    const char *names[] = {"become_standby", "become_active", "notify"};
    for (int i = 0; i < 3; i++) {
        char cmd[256];
        /* The sleep gives a second command every chance to overlap. */
        snprintf(cmd, sizeof(cmd), "echo start %d >> %s/log; sleep 0.2; echo end %d >> %s/log", i,
                 dir, i, dir);
        assert_int_equal(reignd_hooks_run(q, names[i], cmd, 10000, NULL, on_result, &res), 0);
    }
    assert_int_equal(reignd_hooks_pending(q), 3);
    assert_true(reignd_hooks_busy(q));
    res.requeue_on = q;
    drain(&loop, q);
    assert_int_equal(res.n, 4);
    assert_string_equal(res.what[0], "become_standby");
    assert_string_equal(res.what[1], "become_active");
    assert_string_equal(res.what[2], "notify");
    assert_string_equal(res.what[3], "again");
    for (int i = 0; i < 4; i++)
        assert_true(reignd_hook_succeeded(&res.r[i]));
    assert_string_equal(slurp("log"), "start 0\nend 0\nstart 1\nend 1\nstart 2\nend 2\nagain\n");
}

static void test_exit_status_and_signal(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    assert_int_equal(reignd_hooks_run(q, "three", "exit 3", 5000, NULL, on_result, &res), 0);
    assert_int_equal(reignd_hooks_run(q, "term", "kill -TERM $$", 5000, NULL, on_result, &res), 0);
    assert_int_equal(
        reignd_hooks_run(q, "missing", "/nonexistent/cmd", 5000, NULL, on_result, &res), 0);
    drain(&loop, q);
    assert_int_equal(res.n, 3);
    assert_int_equal(res.r[0].outcome, REIGND_HOOK_EXITED);
    assert_int_equal(res.r[0].exit_status, 3);
    assert_false(reignd_hook_succeeded(&res.r[0]));
    assert_int_equal(res.r[1].outcome, REIGND_HOOK_SIGNALED);
    assert_int_equal(res.r[1].term_signal, SIGTERM);
    assert_int_equal(res.r[2].outcome, REIGND_HOOK_EXITED);
    assert_int_equal(res.r[2].exit_status, 127);

    char text[128];
    reignd_hook_result_text(&res.r[0], text, sizeof(text));
    assert_non_null(strstr(text, "exited with status 3"));
    reignd_hook_result_text(&res.r[1], text, sizeof(text));
    assert_non_null(strstr(text, "killed by signal 15"));
}

/* Data arrives verbatim in the environment; nothing in it is run. */
static void test_env_verbatim(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    char evil[256], evil2[256];
    snprintf(evil, sizeof(evil), "$(touch %s/pwned1)", dir);
    snprintf(evil2, sizeof(evil2), "x; touch %s/pwned2 `touch %s/pwned3`", dir, dir);
    reignd_hook_env env = {
        .service = "web",
        .state = "active",
        .node_id = evil2,
        .term = 7,
        .token = 123456789012345LL,
        .target_id = "node-b",
        .target_address = evil,
        .target_term = 6,
    };
    setenv("REIGN_PASSWORD", "Hunter2pw", 1);
    setenv("REIGN_TERM", "999", 1);
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "env | grep '^REIGN_' | sort > %s/env", dir);
    assert_int_equal(reignd_hooks_run(q, "fence", cmd, 5000, &env, on_result, &res), 0);
    /* Unknown values are left out. */
    reignd_hook_env partial = {.service = "web", .term = -1, .token = -1, .target_term = -1};
    snprintf(cmd, sizeof(cmd), "env | grep '^REIGN_' | sort > %s/env2", dir);
    assert_int_equal(reignd_hooks_run(q, "notify", cmd, 5000, &partial, on_result, &res), 0);
    unsetenv("REIGN_PASSWORD");
    unsetenv("REIGN_TERM");
    drain(&loop, q);
    assert_int_equal(res.n, 2);
    assert_true(reignd_hook_succeeded(&res.r[0]));
    char want[1024];
    snprintf(want, sizeof(want),
             "REIGN_HOOK=fence\n"
             "REIGN_NODE_ID=%s\n"
             "REIGN_SERVICE=web\n"
             "REIGN_STATE=active\n"
             "REIGN_TARGET_ADDRESS=%s\n"
             "REIGN_TARGET_ID=node-b\n"
             "REIGN_TARGET_TERM=6\n"
             "REIGN_TERM=7\n"
             "REIGN_TOKEN=123456789012345\n",
             evil2, evil);
    assert_string_equal(slurp("env"), want);
    assert_string_equal(slurp("env2"), "REIGN_HOOK=notify\nREIGN_SERVICE=web\n");
    assert_false(exists("pwned1"));
    assert_false(exists("pwned2"));
    assert_false(exists("pwned3"));
}

/* A command past its timeout is killed with everything it started; the
 * next one runs afterwards. */
static void test_timeout_kills_group(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "sleep 300 & echo $! > %s/child; sleep 300", dir);
    assert_int_equal(reignd_hooks_run(q, "hang", cmd, 300, NULL, on_result, &res), 0);
    snprintf(cmd, sizeof(cmd), "touch %s/after", dir);
    assert_int_equal(reignd_hooks_run(q, "after", cmd, 5000, NULL, on_result, &res), 0);
    drain(&loop, q);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.r[0].outcome, REIGND_HOOK_TIMED_OUT);
    assert_true(reignd_hook_succeeded(&res.r[1]));
    assert_true(exists("after"));
    char text[128];
    reignd_hook_result_text(&res.r[0], text, sizeof(text));
    assert_non_null(strstr(text, "timed out"));

    pid_t child = (pid_t)atoi(slurp("child"));
    assert_true(child > 0);
    assert_process_gone(child);
}

/* Closing kills the running command; it and the queued ones complete as
 * cancelled, in order; the queued ones never start. */
static void test_close_cancels(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "touch %s/first; exec sleep 300", dir);
    assert_int_equal(reignd_hooks_run(q, "first", cmd, 60000, NULL, on_result, &res), 0);
    snprintf(cmd, sizeof(cmd), "touch %s/second", dir);
    assert_int_equal(reignd_hooks_run(q, "second", cmd, 60000, NULL, on_result, &res), 0);
    /* Let the first one start for real. */
    for (int i = 0; i < 1000 && !exists("first"); i++)
        uv_run(&loop, UV_RUN_NOWAIT), usleep(5000);
    assert_true(exists("first"));
    reignd_hooks_close(q);
    assert_int_equal(reignd_hooks_run(q, "late", "true", 1000, NULL, on_result, &res),
                     REIGN_EINVAL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(res.n, 2);
    assert_string_equal(res.what[0], "first");
    assert_int_equal(res.r[0].outcome, REIGND_HOOK_CANCELLED);
    assert_string_equal(res.what[1], "second");
    assert_int_equal(res.r[1].outcome, REIGND_HOOK_CANCELLED);
    assert_false(exists("second"));
}

/* A command that cannot even be started completes as such, later, and
 * the queue goes on with the next one. */
static void test_spawn_failure(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    struct rlimit old = forbid_fds();
    int rc = reignd_hooks_run(q, "doomed", "true", 5000, NULL, on_result, &res);
    allow_fds(old);
    assert_int_equal(rc, 0);
    assert_int_equal(res.n, 0); /* never from inside reignd_hooks_run() */
    assert_int_equal(reignd_hooks_run(q, "next", "true", 5000, NULL, on_result, &res), 0);
    drain(&loop, q);
    assert_int_equal(res.n, 2);
    assert_int_equal(res.r[0].outcome, REIGND_HOOK_SPAWN_FAILED);
    assert_true(res.r[0].spawn_error < 0);
    char text[128];
    reignd_hook_result_text(&res.r[0], text, sizeof(text));
    assert_non_null(strstr(text, "could not be started"));
    assert_true(reignd_hook_succeeded(&res.r[1]));
}

static void test_bad_arguments(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_hooks *q = new_queue(&loop);
    results res = {0};
    assert_int_equal(reignd_hooks_run(q, "x", "", 1000, NULL, on_result, &res), REIGN_EINVAL);
    assert_int_equal(reignd_hooks_run(q, "x", NULL, 1000, NULL, on_result, &res), REIGN_EINVAL);
    assert_int_equal(reignd_hooks_run(q, "x", "true", 0, NULL, on_result, &res), REIGN_EINVAL);
    assert_int_equal(reignd_hooks_run(NULL, "x", "true", 1, NULL, on_result, &res), REIGN_EINVAL);
    assert_int_equal(reignd_hooks_pending(q), 0);
    assert_false(reignd_hooks_busy(q));
    /* A NULL callback is allowed. */
    assert_int_equal(reignd_hooks_run(q, NULL, "true", 1000, NULL, NULL, NULL), 0);
    drain(&loop, q);
    assert_int_equal(res.n, 0);
    reignd_hooks_close(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serial_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_status_and_signal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_env_verbatim, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_kills_group, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_cancels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spawn_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
