/*
 * test_sdnotify.c - reignd's sd_notify messages (src/reignd/sdnotify.c),
 * received on a datagram socket standing in for systemd's NOTIFY_SOCKET:
 * READY=1 with STATUS=, STATUS= kept on one line, STOPPING=1, and
 * WATCHDOG=1 sent by the loop's timer at half of WATCHDOG_USEC; without
 * WATCHDOG_USEC, or with a WATCHDOG_PID that is not ours, no watchdog; an
 * abstract socket ("@name").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "sdnotify.h"

typedef struct fixture {
    char dir[64];
    char path[128];
    int fd;
    uv_loop_t loop;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/reignd-notify-XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    snprintf(fx->path, sizeof(fx->path), "%s/notify", fx->dir);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, fx->path, strlen(fx->path));
    fx->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (bind(fx->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    setenv("NOTIFY_SOCKET", fx->path, 1);
    uv_loop_init(&fx->loop);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    while (uv_run(&fx->loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    close(fx->fd);
    unlink(fx->path);
    rmdir(fx->dir);
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
    free(fx);
    return 0;
}

/* The next datagram, which must be there already. */
static void next_message(fixture *fx, char *buf, size_t len)
{
    ssize_t n = recv(fx->fd, buf, len - 1, MSG_DONTWAIT);
    assert_true(n > 0);
    buf[n] = '\0';
}

static void test_messages(void **state)
{
    fixture *fx = *state;
    reignd_sdnotify *n;
    char buf[512];
    unsetenv("WATCHDOG_USEC");
    assert_int_equal(reignd_sdnotify_start(&fx->loop, &n), 0);
    assert_int_equal(reignd_sdnotify_watchdog_usec(n), 0);
    reignd_sdnotify_ready(n, "2 services\nINJECTED=1");
    next_message(fx, buf, sizeof(buf));
    assert_string_equal(buf, "READY=1\nSTATUS=2 services INJECTED=1");
    reignd_sdnotify_status(n, "web %s", "active");
    next_message(fx, buf, sizeof(buf));
    assert_string_equal(buf, "STATUS=web active");
    reignd_sdnotify_stopping(n);
    next_message(fx, buf, sizeof(buf));
    assert_memory_equal(buf, "STOPPING=1", 10);
    reignd_sdnotify_close(n);
}

static void on_datagram(uv_poll_t *p, int status, int events)
{
    fixture *fx = p->data;
    char buf[512];
    (void)status;
    (void)events;
    ssize_t n = recv(fx->fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    if (n > 0) {
        buf[n] = '\0';
        if (strcmp(buf, "WATCHDOG=1") == 0) {
            uv_poll_stop(p);
            uv_stop(p->loop);
        }
    }
}

static void test_watchdog(void **state)
{
    fixture *fx = *state;
    reignd_sdnotify *n;
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    setenv("WATCHDOG_USEC", "200000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(reignd_sdnotify_start(&fx->loop, &n), 0);
    assert_int_equal(reignd_sdnotify_watchdog_usec(n), 100000);
    /* The kick comes from the loop: run it until one arrives. */
    uv_poll_t p;
    uv_poll_init(&fx->loop, &p, fx->fd);
    p.data = fx;
    uv_poll_start(&p, UV_READABLE, on_datagram);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&p, NULL);
    reignd_sdnotify_close(n);
    uv_run(&fx->loop, UV_RUN_NOWAIT); /* p lives on this stack */
}

/* WATCHDOG_PID names another process (we were forked): no watchdog. */
static void test_watchdog_other_pid(void **state)
{
    fixture *fx = *state;
    reignd_sdnotify *n;
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)getpid() + 1);
    setenv("WATCHDOG_USEC", "200000", 1);
    setenv("WATCHDOG_PID", pid, 1);
    assert_int_equal(reignd_sdnotify_start(&fx->loop, &n), 0);
    assert_int_equal(reignd_sdnotify_watchdog_usec(n), 0);
    setenv("WATCHDOG_USEC", "junk", 1);
    unsetenv("WATCHDOG_PID");
    reignd_sdnotify *m;
    assert_int_equal(reignd_sdnotify_start(&fx->loop, &m), 0);
    assert_int_equal(reignd_sdnotify_watchdog_usec(m), 0);
    reignd_sdnotify_close(n);
    reignd_sdnotify_close(m);
}

/* "@name": a socket in the abstract namespace, as systemd may hand out. */
static void test_abstract_socket(void **state)
{
    fixture *fx = *state;
    char name[64], buf[128];
    snprintf(name, sizeof(name), "@reignd-notify-test-%d", (int)getpid());
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path + 1, name + 1, strlen(name) - 1);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name))),
                     0);
    setenv("NOTIFY_SOCKET", name, 1);
    reignd_sdnotify *n;
    assert_int_equal(reignd_sdnotify_start(&fx->loop, &n), 0);
    reignd_sdnotify_status(n, "abstract");
    ssize_t got = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
    assert_true(got > 0);
    buf[got] = '\0';
    assert_string_equal(buf, "STATUS=abstract");
    /* Nothing went to the path socket. */
    assert_true(recv(fx->fd, buf, sizeof(buf), MSG_DONTWAIT) < 0);
    reignd_sdnotify_close(n);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watchdog_other_pid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abstract_socket, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
