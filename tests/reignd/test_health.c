/*
 * test_health.c - the health monitor (src/reignd/health.c).
 *
 * The state function is checked against a second, independent statement
 * of its rule for every sequence of up to 8 results and every rise and
 * fall of 1..3.  The checks themselves run for real on a libuv loop: a TCP
 * listener that is there and then gone, a small HTTP server in the test
 * answering 200, 503 or nothing at all, and commands that exit 0, exit 1,
 * cannot run, or hang (and are killed, with everything they started).
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testdir.h"

#include "health.h"

/* ---- the state function ------------------------------------------------- */

static reignd_health_state kind(reignd_check_result r)
{
    return r == REIGND_CHECK_TIMEOUT   ? REIGND_HEALTH_NOT_RESPONDING
           : r == REIGND_CHECK_NOT_RUN ? REIGND_HEALTH_MONITOR_FAILED
                                       : REIGND_HEALTH_UNHEALTHY;
}

/* The rule from the history: healthy once the last `rise` results are all
 * successes; a failure gives its kind unless the service was healthy and
 * the last `fall` results are not all failures; else unchanged. */
static reignd_health_state reference(const reignd_check_result *seq, int n, int rise, int fall)
{
    reignd_health_state s = REIGND_HEALTH_INITIALIZING;
    for (int i = 0; i < n; i++) {
        int ok_run = 0, fail_run = 0;
        for (int j = i; j >= 0 && seq[j] == REIGND_CHECK_OK; j--)
            ok_run++;
        for (int j = i; j >= 0 && seq[j] != REIGND_CHECK_OK; j--)
            fail_run++;
        if (ok_run >= rise)
            s = REIGND_HEALTH_HEALTHY;
        else if (seq[i] != REIGND_CHECK_OK && (s != REIGND_HEALTH_HEALTHY || fail_run >= fall))
            s = kind(seq[i]);
    }
    return s;
}

static void test_state_exhaustive(void **state)
{
    enum { LEN = 8 };
    long sequences = 0;
    for (int rise = 1; rise <= 3; rise++)
        for (int fall = 1; fall <= 3; fall++)
            for (int len = 0; len <= LEN; len++) {
                long total = 1;
                for (int i = 0; i < len; i++)
                    total *= REIGND_CHECK_N_RESULTS;
                for (long code = 0; code < total; code++) {
                    reignd_check_result seq[LEN];
                    long c = code;
                    for (int i = 0; i < len; i++, c /= REIGND_CHECK_N_RESULTS)
                        seq[i] = (reignd_check_result)(c % REIGND_CHECK_N_RESULTS);
                    reignd_health_track t = {0};
                    for (int i = 0; i < len; i++) {
                        reignd_health_state before = t.state;
                        bool changed = reignd_health_step(&t, seq[i], rise, fall);
                        assert_int_equal(changed, t.state != before);
                        assert_true(t.successes >= 0 && t.successes <= rise);
                        assert_true(t.failures >= 0 && t.failures <= fall);
                        /* Healthy only with `rise` successes in a row behind it. */
                        if (t.state == REIGND_HEALTH_HEALTHY && before != REIGND_HEALTH_HEALTHY)
                            assert_int_equal(t.successes, rise);
                        assert_int_equal(t.state, reference(seq, i + 1, rise, fall));
                    }
                    sequences++;
                }
            }
    assert_true(sequences > 9 * 65536);
}

static void test_state_scenarios(void **state)
{
    reignd_health_track t = {0};
    /* rise 2, fall 3: initializing until judged. */
    assert_false(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_INITIALIZING);
    assert_true(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_HEALTHY);
    /* Two failures are forgiven, a success resets the count. */
    assert_false(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_TIMEOUT, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    /* The third in a row: its kind decides the state. */
    assert_true(reignd_health_step(&t, REIGND_CHECK_TIMEOUT, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_NOT_RESPONDING);
    assert_true(reignd_health_step(&t, REIGND_CHECK_NOT_RUN, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_MONITOR_FAILED);
    assert_true(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_UNHEALTHY);
    assert_false(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    /* One success is not enough to come back. */
    assert_false(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_FAILED, 2, 3));
    assert_false(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_true(reignd_health_step(&t, REIGND_CHECK_OK, 2, 3));
    assert_int_equal(t.state, REIGND_HEALTH_HEALTHY);

    /* A first failure is a verdict of its own. */
    reignd_health_track u = {0};
    assert_true(reignd_health_step(&u, REIGND_CHECK_NOT_RUN, 1, 5));
    assert_int_equal(u.state, REIGND_HEALTH_MONITOR_FAILED);

    assert_string_equal(reignd_health_state_name(REIGND_HEALTH_NOT_RESPONDING), "not_responding");
    assert_string_equal(reignd_health_state_name(REIGND_HEALTH_MONITOR_FAILED), "monitor_failed");
    assert_string_equal(reignd_health_state_name(REIGND_HEALTH_INITIALIZING), "initializing");
    assert_string_equal(reignd_check_result_name(REIGND_CHECK_NOT_RUN), "not_run");
    assert_string_equal(reignd_health_state_name((reignd_health_state)99), "?");
}

/* ---- real checks ------------------------------------------------------------ */

typedef struct watch {
    uv_loop_t *loop;
    reignd_health *h;
    reignd_health_state states[64]; /* every state entered, in order */
    int n_states;
    int checks;
    reignd_check_result results[256];
    char detail[160];
    reignd_health_state stop_at;
    int stop_after; /* checks */
    uv_timer_t guard;
    /* What was seen when the stop condition was met: the rest of that loop
     * turn may still deliver more. */
    struct {
        int n_states, checks;
        char detail[160];
    } at_stop;
} watch;

static void snapshot(watch *w)
{
    w->at_stop.n_states = w->n_states;
    w->at_stop.checks = w->checks;
    memcpy(w->at_stop.detail, w->detail, sizeof(w->detail));
    uv_stop(w->loop);
}

static void on_state(reignd_health *h, reignd_health_state old_state, reignd_health_state new_state,
                     const char *detail, void *userdata)
{
    watch *w = userdata;
    assert_int_not_equal(old_state, new_state);
    if (w->n_states > 0)
        assert_int_equal(old_state, w->states[w->n_states - 1]);
    else
        assert_int_equal(old_state, REIGND_HEALTH_INITIALIZING);
    assert_true(w->n_states < 64);
    w->states[w->n_states++] = new_state;
    if (new_state == w->stop_at && w->at_stop.checks < 0)
        snapshot(w);
}

static void on_check(reignd_health *h, reignd_check_result result, const char *detail,
                     void *userdata)
{
    watch *w = userdata;
    snprintf(w->detail, sizeof(w->detail), "%s", detail);
    if (w->checks < 256)
        w->results[w->checks] = result;
    w->checks++;
    if (w->stop_after && w->checks >= w->stop_after && w->at_stop.checks < 0)
        snapshot(w);
}

static void on_guard(uv_timer_t *t)
{
    fail_msg("the monitor did not get there within a minute");
}

static reignd_service_config service(reignd_check_type type, const char *target)
{
    return (reignd_service_config){
        .name = "svc",
        .node_id = "node-a",
        .check_type = type,
        .check_target = (char *)target,
        /* Generous: a check of a local service that is slower than this
         * under load would be a spurious "not responding". */
        .check_interval_ms = 1000,
        .check_timeout_ms = 1000,
        .check_rise = 2,
        .check_fall = 2,
    };
}

/* Runs the monitor until `stop_at` is entered (or `stop_after` checks). */
static void run_until(watch *w, reignd_health_state stop_at, int stop_after)
{
    uv_timer_start(&w->guard, on_guard, 60000, 0);
    w->stop_at = stop_at;
    w->stop_after = stop_after;
    w->at_stop.checks = -1;
    uv_run(w->loop, UV_RUN_DEFAULT);
    assert_true(w->at_stop.checks >= 0);
    uv_timer_stop(&w->guard);
}

static void start(watch *w, uv_loop_t *loop, const reignd_service_config *svc)
{
    *w = (watch){.loop = loop, .stop_at = (reignd_health_state)-1};
    w->at_stop.checks = -1;
    uv_timer_init(loop, &w->guard);
    assert_int_equal(reignd_health_new(&w->h, loop, svc, on_state, w), 0);
    reignd_health_on_check(w->h, on_check);
    assert_int_equal(reignd_health_start(w->h), 0);
}

static void finish(watch *w)
{
    uv_close((uv_handle_t *)&w->guard, NULL);
    reignd_health_close(w->h);
    reignd_health_close(NULL);
    /* Whatever a check still had going ends too (a killed command is reaped). */
    uv_run(w->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(w->loop), 0);
}

/* A listening socket on 127.0.0.1 (connections complete in the kernel's
 * backlog; nobody needs to accept them). */
static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 64), 0);
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_tcp(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int port;
    int fd = listener(&port);
    char target[64];
    snprintf(target, sizeof(target), "127.0.0.1:%d", port);
    reignd_service_config svc = service(REIGND_CHECK_TCP, target);
    watch w;
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_HEALTHY, 0);
    assert_int_equal(w.at_stop.n_states, 1);
    assert_int_equal(w.at_stop.checks, 2); /* rise = 2 */
    assert_string_equal(w.at_stop.detail, "connected");
    assert_int_equal(reignd_health_state_get(w.h), REIGND_HEALTH_HEALTHY);

    close(fd); /* the service goes away: refused */
    run_until(&w, REIGND_HEALTH_UNHEALTHY, 0);
    assert_int_equal(w.at_stop.n_states, 2);
    assert_string_equal(w.at_stop.detail, "connection refused");
    assert_int_equal(w.results[w.at_stop.checks - 1], REIGND_CHECK_FAILED);
    assert_int_equal(w.results[w.at_stop.checks - 2], REIGND_CHECK_FAILED);
    assert_int_equal(reignd_health_checks(w.h), (uint64_t)w.checks);
    finish(&w);
}

/* A name goes through the resolver, and each of its addresses is tried:
 * "localhost" may give ::1 before 127.0.0.1, where the listener is. */
static void test_tcp_by_name(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    int port;
    int fd = listener(&port);
    char target[64];
    snprintf(target, sizeof(target), "localhost:%d", port);
    reignd_service_config svc = service(REIGND_CHECK_TCP, target);
    svc.check_rise = 1;
    watch w;
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_HEALTHY, 0);
    assert_int_equal(w.at_stop.checks, 1);
    assert_string_equal(w.at_stop.detail, "connected");
    close(fd);
    finish(&w);

    uv_loop_init(&loop);
    svc = service(REIGND_CHECK_TCP, "no-such-host.invalid:80");
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_N_STATES, 1);
    /* Not resolved (or, with a resolver that does not answer in time, not
     * responding): either way not the service's fault. */
    assert_int_not_equal(w.results[0], REIGND_CHECK_OK);
    assert_int_not_equal(w.results[0], REIGND_CHECK_FAILED);
    finish(&w);
}

/* ---- a tiny HTTP server on the test's loop --------------------------------- */

typedef struct http_server {
    uv_tcp_t listen;
    int status; /* 0: accept and never answer */
    int port;
    int requests;
    char last_request[512];
} http_server;

typedef struct http_conn {
    uv_tcp_t tcp;
    http_server *srv;
    char buf[512];
    size_t len;
    uv_write_t wr;
    char answer[128];
} http_conn;

static void conn_closed(uv_handle_t *h)
{
    free(h->data);
}

static void conn_written(uv_write_t *req, int status)
{
    http_conn *c = req->data;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    http_conn *c = h->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - 1 - c->len));
}

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    http_conn *c = s->data;
    if (nread < 0) {
        uv_close((uv_handle_t *)&c->tcp, conn_closed);
        return;
    }
    c->len += (size_t)nread;
    c->buf[c->len] = '\0';
    if (!strstr(c->buf, "\r\n\r\n"))
        return;
    c->srv->requests++;
    snprintf(c->srv->last_request, sizeof(c->srv->last_request), "%s", c->buf);
    uv_read_stop(s);
    if (c->srv->status == 0)
        return; /* silent: the client's timeout closes it */
    int n = snprintf(c->answer, sizeof(c->answer),
                     "HTTP/1.0 %d Whatever\r\nContent-Length: 0\r\n\r\n", c->srv->status);
    uv_buf_t b = uv_buf_init(c->answer, (unsigned)n);
    c->wr.data = c;
    uv_write(&c->wr, s, &b, 1, conn_written);
}

static void on_connection(uv_stream_t *server, int status)
{
    http_server *srv = server->data;
    http_conn *c = calloc(1, sizeof(*c));
    c->srv = srv;
    uv_tcp_init(server->loop, &c->tcp);
    c->tcp.data = c;
    assert_int_equal(uv_accept(server, (uv_stream_t *)&c->tcp), 0);
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read);
}

static void http_start(uv_loop_t *loop, http_server *srv)
{
    struct sockaddr_in a;
    uv_ip4_addr("127.0.0.1", 0, &a);
    uv_tcp_init(loop, &srv->listen);
    srv->listen.data = srv;
    assert_int_equal(uv_tcp_bind(&srv->listen, (struct sockaddr *)&a, 0), 0);
    assert_int_equal(uv_listen((uv_stream_t *)&srv->listen, 64, on_connection), 0);
    int len = sizeof(a);
    uv_tcp_getsockname(&srv->listen, (struct sockaddr *)&a, &len);
    srv->port = ntohs(a.sin_port);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, h->type == UV_TCP && h->data != arg ? conn_closed : NULL);
}

static void test_http(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    http_server srv = {.status = 200};
    http_start(&loop, &srv);
    char target[96];
    snprintf(target, sizeof(target), "http://127.0.0.1:%d/health?deep=1", srv.port);
    reignd_service_config svc = service(REIGND_CHECK_HTTP, target);
    svc.check_rise = 1;
    watch w;
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_HEALTHY, 0);
    assert_string_equal(w.at_stop.detail, "HTTP 200");
    char host[64];
    snprintf(host, sizeof(host), "Host: 127.0.0.1:%d\r\n", srv.port);
    assert_non_null(strstr(srv.last_request, "GET /health?deep=1 HTTP/1.0\r\n"));
    assert_non_null(strstr(srv.last_request, host));

    srv.status = 503; /* answers, but not healthy */
    run_until(&w, REIGND_HEALTH_UNHEALTHY, 0);
    assert_string_equal(w.at_stop.detail, "HTTP 503");

    srv.status = 204;
    run_until(&w, REIGND_HEALTH_HEALTHY, 0);
    assert_string_equal(w.at_stop.detail, "HTTP 204");

    srv.status = 0; /* stops answering */
    run_until(&w, REIGND_HEALTH_NOT_RESPONDING, 0);
    assert_string_equal(w.at_stop.detail, "timed out after 1000 ms");
    assert_int_equal(w.at_stop.n_states, 4);
    assert_int_equal(w.states[0], REIGND_HEALTH_HEALTHY);
    assert_int_equal(w.states[1], REIGND_HEALTH_UNHEALTHY);
    assert_int_equal(w.states[2], REIGND_HEALTH_HEALTHY);
    assert_int_equal(w.states[3], REIGND_HEALTH_NOT_RESPONDING);

    reignd_health_close(w.h);
    uv_walk(&loop, close_walk, &srv);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- commands ------------------------------------------------------------- */

static void test_command_states(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char flag[96], target[256];
    snprintf(flag, sizeof(flag), "%s/ok", dir);
    /* Healthy while the flag file exists; its environment names the service. */
    snprintf(target, sizeof(target),
             "test -e %s && test \"$REIGN_SERVICE\" = svc && test \"$REIGN_NODE_ID\" = node-a",
             flag);
    reignd_service_config svc = service(REIGND_CHECK_COMMAND, target);
    svc.check_timeout_ms = 2000;
    svc.check_interval_ms = 2000; /* room for a slow fork under ASan */
    svc.check_rise = 1;
    svc.check_fall = 1;
    FILE *f = fopen(flag, "w");
    fclose(f);
    watch w;
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_HEALTHY, 0);
    assert_string_equal(w.at_stop.detail, "exit status 0");
    unlink(flag);
    run_until(&w, REIGND_HEALTH_UNHEALTHY, 0);
    assert_string_equal(w.at_stop.detail, "exit status 1");
    finish(&w);
}

static void test_command_not_run(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_service_config svc = service(REIGND_CHECK_COMMAND, "/nonexistent/check-it");
    svc.check_interval_ms = svc.check_timeout_ms = 2000;
    watch w;
    start(&w, &loop, &svc);
    run_until(&w, REIGND_HEALTH_MONITOR_FAILED, 0);
    assert_int_equal(w.at_stop.checks, 1);
    assert_non_null(strstr(w.at_stop.detail, "could not run the check (status 127)"));
    finish(&w);
}

/* A check that hangs is not responding, and is killed with its children. */
static void test_command_hangs(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    char target[256];
    snprintf(target, sizeof(target), "sleep 300 & echo $! >> %s/children; exec sleep 300", dir);
    reignd_service_config svc = service(REIGND_CHECK_COMMAND, target);
    svc.check_interval_ms = 300;
    svc.check_timeout_ms = 200;
    svc.check_fall = 2;
    watch w;
    start(&w, &loop, &svc);
    /* Not judged before, so the first timeout decides. */
    run_until(&w, REIGND_HEALTH_NOT_RESPONDING, 0);
    assert_int_equal(w.at_stop.n_states, 1);
    assert_int_equal(w.at_stop.checks, 1);
    assert_string_equal(w.at_stop.detail, "timed out after 200 ms");
    run_until(&w, REIGND_HEALTH_N_STATES, 3); /* two more, each killed */
    finish(&w);

    char path[96];
    snprintf(path, sizeof(path), "%s/children", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int pid, n = 0;
    while (fscanf(f, "%d", &pid) == 1) {
        n++;
        assert_process_gone(pid);
    }
    fclose(f);
    assert_true(n >= 1);
}

/* A check that cannot be started: monitor failed. */
static void test_command_spawn_fails(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_service_config svc = service(REIGND_CHECK_COMMAND, "true");
    svc.check_rise = 1;
    watch w;
    start(&w, &loop, &svc);
    struct rlimit old = forbid_fds();
    uv_run(&loop, UV_RUN_NOWAIT); /* the first check, at once */
    allow_fds(old);
    assert_int_equal(w.checks, 1);
    assert_int_equal(w.n_states, 1);
    assert_int_equal(w.states[0], REIGND_HEALTH_MONITOR_FAILED);
    assert_non_null(strstr(w.detail, "cannot start the check"));
    run_until(&w, REIGND_HEALTH_HEALTHY, 0); /* the next one runs */
    finish(&w);
}

/* Closing in the middle of a check, and from inside a callback. */
static void on_state_close(reignd_health *h, reignd_health_state old_state,
                           reignd_health_state new_state, const char *detail, void *userdata)
{
    watch *w = userdata;
    w->states[w->n_states++] = new_state;
    reignd_health_close(h);
}

static void test_close_from_callback(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_service_config svc = service(REIGND_CHECK_COMMAND, "true");
    svc.check_rise = 1;
    svc.check_interval_ms = svc.check_timeout_ms = 2000;
    watch w = {.loop = &loop};
    assert_int_equal(reignd_health_new(&w.h, &loop, &svc, on_state_close, &w), 0);
    assert_int_equal(reignd_health_start(w.h), 0);
    uv_run(&loop, UV_RUN_DEFAULT); /* ends: the monitor closed itself */
    assert_int_equal(w.n_states, 1);
    assert_int_equal(w.states[0], REIGND_HEALTH_HEALTHY);
    assert_int_equal(uv_loop_close(&loop), 0);

    /* Closed while a check runs: no callback, nothing left behind. */
    uv_loop_init(&loop);
    svc = service(REIGND_CHECK_COMMAND, "exec sleep 300");
    svc.check_interval_ms = svc.check_timeout_ms = 60000;
    watch w2;
    start(&w2, &loop, &svc);
    uv_run(&loop, UV_RUN_NOWAIT);
    finish(&w2);
    assert_int_equal(w2.checks, 0);
}

static void test_bad_target(void **state)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    reignd_health *h = NULL;
    reignd_service_config svc = service(REIGND_CHECK_TCP, "no-port");
    assert_int_equal(reignd_health_new(&h, &loop, &svc, NULL, NULL), REIGN_EINVAL);
    assert_null(h);
    svc = service(REIGND_CHECK_HTTP, "ftp://x/");
    assert_int_equal(reignd_health_new(&h, &loop, &svc, NULL, NULL), REIGN_EINVAL);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_exhaustive),
        cmocka_unit_test(test_state_scenarios),
        cmocka_unit_test(test_tcp),
        cmocka_unit_test(test_tcp_by_name),
        cmocka_unit_test(test_http),
        cmocka_unit_test_setup_teardown(test_command_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_not_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_hangs, setup, teardown),
        cmocka_unit_test(test_command_spawn_fails),
        cmocka_unit_test(test_close_from_callback),
        cmocka_unit_test(test_bad_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
