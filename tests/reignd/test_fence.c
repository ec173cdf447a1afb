/*
 * test_fence.c - fencing (src/reignd/fence.c) on a real libuv loop with the
 * real hook queue and /bin/sh: methods run in order until one succeeds, a
 * shell method sees the target only in REIGN_TARGET_* variables, graceful is
 * skipped without a peer address and fails against a peer that does not
 * answer, every failure fails the fence, and an abandoned fence never calls
 * back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fence.h"

typedef struct outcome {
    int called, ok;
    unsigned attempts;
    char detail[512];
} outcome;

static void on_fence(int ok, unsigned attempts, const char *detail, void *userdata)
{
    outcome *o = userdata;
    o->called++;
    o->ok = ok;
    o->attempts = attempts;
    snprintf(o->detail, sizeof(o->detail), "%s", detail);
}

/* Runs `methods` against node A (service 127.0.0.1:9, term 4) for node B's
 * term 5; returns what the callback saw. */
static outcome fence(reignd_fence_method *methods, size_t n, const char *peer_address,
                     const reignd_secret *secret)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    reignd_hooks *hooks;
    assert_int_equal(reignd_hooks_new(&hooks, &loop), 0);
    reignd_service_config svc = {.name = "web", .node_id = "B", .fence = methods, .n_fence = n};
    reignd_breadcrumb target = {.term = 4, .token = 40};
    strcpy(target.id, "A");
    strcpy(target.service_address, "127.0.0.1:9");
    strcpy(target.peer_address, peer_address);
    reignd_fence_ctx ctx = {&loop, &svc, hooks, secret, 5, 50};
    outcome o = {0};
    reignd_fence *f;
    assert_int_equal(reignd_fence_start(&f, &ctx, &target, on_fence, &o), 0);
    while (!o.called)
        uv_run(&loop, UV_RUN_ONCE);
    reignd_hooks_close(hooks);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(o.called, 1);
    return o;
}

#define SHELL(cmd)                                                                                 \
    {                                                                                              \
        REIGND_FENCE_SHELL, (char *)(cmd), 10000, 0                                                \
    }
#define GRACEFUL                                                                                   \
    {                                                                                              \
        REIGND_FENCE_GRACEFUL, NULL, 2000, 0                                                       \
    }

static void first_success_wins(void **state)
{
    reignd_fence_method m[] = {
        GRACEFUL, SHELL("exit 3"),
        SHELL("test \"$REIGN_TARGET_ID\" = A && test \"$REIGN_TARGET_ADDRESS\" = 127.0.0.1:9 && "
              "test \"$REIGN_TARGET_TERM\" = 4 && test \"$REIGN_TERM\" = 5 && "
              "test \"$REIGN_TOKEN\" = 50 && test \"$REIGN_HOOK\" = fence"),
        SHELL("exit 0"), /* never reached */
    };
    outcome o = fence(m, 4, "", NULL);
    assert_int_equal(o.ok, 1);
    assert_int_equal(o.attempts, 3);
    assert_non_null(strstr(o.detail, "method 1 (graceful): skipped"));
    assert_non_null(strstr(o.detail, "method 2 (shell): exited with status 3"));
    assert_non_null(strstr(o.detail, "method 3 (shell)"));
    assert_null(strstr(o.detail, "method 4"));
}

static void every_failure_fails(void **state)
{
    reignd_fence_method m[] = {SHELL("exit 1"), SHELL("kill -9 $$")};
    outcome o = fence(m, 2, "", NULL);
    assert_int_equal(o.ok, 0);
    assert_int_equal(o.attempts, 2);

    /* Graceful alone, without a secret: skipped, so the fence fails. */
    reignd_fence_method g[] = {GRACEFUL};
    o = fence(g, 1, "127.0.0.1:9", NULL);
    assert_int_equal(o.ok, 0);
    assert_non_null(strstr(o.detail, "no peer secret"));
}

static void graceful_against_a_dead_peer(void **state)
{
    reignd_secret secret = {.len = 24};
    memcpy(secret.bytes, "0123456789abcdef01234567", 24);
    /* Nothing listens on port 1 of the loopback: the request fails, the shell method runs. */
    reignd_fence_method m[] = {GRACEFUL, SHELL("exit 0")};
    outcome o = fence(m, 2, "127.0.0.1:1", &secret);
    assert_int_equal(o.ok, 1);
    assert_int_equal(o.attempts, 2);
    assert_non_null(strstr(o.detail, "method 1 (graceful): "));
    assert_null(strstr(o.detail, "skipped"));
}

static void abandoned_never_calls_back(void **state)
{
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    reignd_hooks *hooks;
    assert_int_equal(reignd_hooks_new(&hooks, &loop), 0);
    reignd_fence_method m[] = {SHELL("exit 0")};
    reignd_service_config svc = {.name = "web", .node_id = "B", .fence = m, .n_fence = 1};
    reignd_breadcrumb target = {.term = 1};
    strcpy(target.id, "A");
    strcpy(target.service_address, "127.0.0.1:9");
    reignd_fence_ctx ctx = {&loop, &svc, hooks, NULL, 2, 2};
    outcome o = {0};
    reignd_fence *f;
    assert_int_equal(reignd_fence_start(&f, &ctx, &target, on_fence, &o), 0);
    reignd_fence_abandon(f);
    while (reignd_hooks_pending(hooks))
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(o.called, 0);
    reignd_hooks_close(hooks);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* No method at all is refused up front. */
    svc.n_fence = 0;
    assert_int_equal(reignd_fence_start(&f, &ctx, &target, on_fence, &o), REIGN_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_success_wins),
        cmocka_unit_test(every_failure_fails),
        cmocka_unit_test(graceful_against_a_dead_peer),
        cmocka_unit_test(abandoned_never_calls_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
