/*
 * test_peer.c - the endpoint between reignds (src/reignd/peer.c): the
 * secret file's checks and the constant-time comparison; the server and
 * the client on one loop over loopback: a service's state, a standby
 * (graceful fence) answered at once, later, or refused; a wrong or missing
 * secret refused with 401 and logged without the secret; a malformed body;
 * and the client's own failures (connection refused, no answer within the
 * timeout, cancel, a bad address), and a server closed while a standby is
 * pending.
 */
#include <arpa/inet.h>
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

#include "fake_ops.h"
#include "net_client.h"
#include "peer.h"

#define SECRET "s3cr3t-peer-token-0123456789"

/* ---- the secret ------------------------------------------------------------ */

static char *write_file(const char *content, mode_t mode)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/reignd-secret-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    fchmod(fd, mode);
    close(fd);
    return path;
}

static void test_secret_load(void **state)
{
    reignd_secret s;
    char err[256];
    (void)state;
    char *p = write_file(SECRET "\n", 0600);
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), 0);
    assert_int_equal(s.len, strlen(SECRET));
    assert_memory_equal(s.bytes, SECRET, s.len);
    unlink(p);

    p = write_file(SECRET "\r\n", 0400);
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), 0);
    assert_int_equal(s.len, strlen(SECRET));
    unlink(p);

    p = write_file(SECRET, 0644); /* readable by others */
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), REIGN_EACCES);
    assert_non_null(strstr(err, "chmod 600"));
    assert_null(strstr(err, SECRET));
    unlink(p);

    p = write_file("short", 0600);
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), REIGN_EINVAL);
    assert_null(strstr(err, "short"));
    unlink(p);

    p = write_file("has a space in the middle of it", 0600);
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), REIGN_EINVAL);
    unlink(p);

    p = write_file(SECRET "\n\n", 0600); /* only one newline is dropped */
    assert_int_equal(reignd_secret_load(p, &s, err, sizeof(err)), REIGN_EINVAL);
    unlink(p);

    assert_true(reignd_secret_load("/nonexistent/secret", &s, err, sizeof(err)) < 0);
    assert_non_null(strstr(err, "/nonexistent/secret"));
}

static void test_secret_equal(void **state)
{
    reignd_secret s;
    (void)state;
    memset(&s, 0, sizeof(s));
    memcpy(s.bytes, SECRET, strlen(SECRET));
    s.len = strlen(SECRET);
    assert_true(reignd_secret_equal(&s, SECRET, strlen(SECRET)));
    assert_false(reignd_secret_equal(&s, SECRET, strlen(SECRET) - 1));
    assert_false(reignd_secret_equal(&s, SECRET "x", strlen(SECRET) + 1));
    assert_false(reignd_secret_equal(&s, "", 0));
    char other[] = SECRET;
    other[strlen(other) - 1] ^= 1;
    assert_false(reignd_secret_equal(&s, other, strlen(other)));
    reignd_secret_wipe(&s);
    assert_int_equal(s.len, 0);
    assert_false(reignd_secret_equal(&s, "", 0)); /* no secret matches nothing */
}

/* ---- server and client ------------------------------------------------------- */

typedef struct fixture {
    uv_loop_t loop;
    fake_ops fake;
    reignd_secret secret;
    reignd_peer_server *srv;
    char address[64];
    char log[8192];
} fixture;

typedef struct outcome {
    int done;
    int err;
    char msg[512];
    cJSON *result;
} outcome;

static void capture_log(reign_log_level level, const char *msg, void *userdata)
{
    fixture *fx = userdata;
    size_t n = strlen(fx->log);
    (void)level;
    snprintf(fx->log + n, sizeof(fx->log) - n, "%s\n", msg);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    char err[256];
    uv_loop_init(&fx->loop);
    fake_ops_init(&fx->fake, &fx->loop);
    memcpy(fx->secret.bytes, SECRET, strlen(SECRET));
    fx->secret.len = strlen(SECRET);
    reignd_peer_server_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.listen = "127.0.0.1:0";
    o.secret = &fx->secret;
    o.ops = &fx->fake.ops;
    o.log_fn = capture_log;
    o.log_userdata = fx;
    if (reignd_peer_server_start(&fx->loop, &o, &fx->srv, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    snprintf(fx->address, sizeof(fx->address), "127.0.0.1:%d", reignd_peer_server_port(fx->srv));
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    reignd_peer_server_close(fx->srv);
    fake_ops_finish(&fx->fake, 0);
    while (uv_run(&fx->loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    free(fx);
    return 0;
}

static void on_answer(int err, const char *msg, const cJSON *result, void *userdata)
{
    outcome *o = userdata;
    assert_false(o->done); /* exactly once */
    o->done = 1;
    o->err = err;
    snprintf(o->msg, sizeof(o->msg), "%s", msg ? msg : "");
    o->result = result ? cJSON_Duplicate(result, 1) : NULL;
}

static void wait_for(fixture *fx, outcome *o)
{
    while (!o->done)
        uv_run(&fx->loop, UV_RUN_ONCE);
}

static reignd_peer_target target(fixture *fx, const reignd_secret *secret, uint64_t timeout_ms)
{
    reignd_peer_target t = {fx->address, secret ? secret : &fx->secret, timeout_ms};
    return t;
}

static void test_state(void **state)
{
    fixture *fx = *state;
    outcome o = {0};
    reignd_peer_target t = target(fx, NULL, 0);
    assert_int_equal(reignd_peer_state(&fx->loop, &t, "web", on_answer, &o, NULL), 0);
    wait_for(fx, &o);
    assert_int_equal(o.err, 0);
    assert_string_equal(cJSON_GetObjectItem(o.result, "name")->valuestring, "web");
    assert_string_equal(cJSON_GetObjectItem(o.result, "health")->valuestring, "healthy");
    cJSON_Delete(o.result);

    /* A name that may resolve to ::1 first: the client goes on to 127.0.0.1. */
    char local[64];
    snprintf(local, sizeof(local), "localhost:%d", reignd_peer_server_port(fx->srv));
    reignd_peer_target lt = {local, &fx->secret, 0};
    outcome ol = {0};
    assert_int_equal(reignd_peer_state(&fx->loop, &lt, "web", on_answer, &ol, NULL), 0);
    wait_for(fx, &ol);
    assert_int_equal(ol.err, 0);
    cJSON_Delete(ol.result);

    outcome o2 = {0};
    assert_int_equal(reignd_peer_state(&fx->loop, &t, "nosuch", on_answer, &o2, NULL), 0);
    wait_for(fx, &o2);
    assert_int_equal(o2.err, REIGN_ENOENT);
    assert_non_null(strstr(o2.msg, "no service 'nosuch'"));
    assert_non_null(strstr(o2.msg, fx->address));
}

static void test_standby(void **state)
{
    fixture *fx = *state;
    reignd_peer_target t = target(fx, NULL, 0);
    outcome o = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "web", "n2", 9, on_answer, &o, NULL), 0);
    wait_for(fx, &o);
    assert_int_equal(o.err, 0);
    cJSON_Delete(o.result);
    assert_string_equal(fx->fake.op, "standby");
    assert_string_equal(fx->fake.service, "web");
    assert_string_equal(fx->fake.node, "n2");
    assert_int_equal(fx->fake.term, 9);
    assert_memory_equal(fx->fake.origin, "peer 127.0.0.1:", 15);

    /* Pending in the daemon: the connection waits for reignd_call_done. */
    outcome o2 = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "db", "n2", 10, on_answer, &o2, NULL), 0);
    wait_for(fx, &o2);
    assert_int_equal(o2.err, 0);
    cJSON_Delete(o2.result);

    outcome o3 = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "slow", "n2", 11, on_answer, &o3, NULL), 0);
    while (fx->fake.npending == 0)
        uv_run(&fx->loop, UV_RUN_ONCE);
    assert_false(o3.done);
    fake_ops_finish(&fx->fake, REIGN_ESTATE);
    wait_for(fx, &o3);
    assert_int_equal(o3.err, REIGN_ESTATE);
    assert_non_null(strstr(o3.msg, "finished with an error"));

    outcome o4 = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "busy", "n2", 12, on_answer, &o4, NULL), 0);
    wait_for(fx, &o4);
    assert_int_equal(o4.err, REIGN_ESTATE);
    assert_non_null(strstr(o4.msg, "middle of a failover"));
}

static void test_wrong_secret(void **state)
{
    fixture *fx = *state;
    reignd_secret wrong = fx->secret;
    wrong.bytes[3] ^= 1;
    reignd_peer_target t = target(fx, &wrong, 0);
    outcome o = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "web", "n2", 9, on_answer, &o, NULL), 0);
    wait_for(fx, &o);
    assert_int_equal(o.err, REIGN_EAUTH);
    assert_int_equal(fx->fake.calls, 0);
    assert_non_null(strstr(fx->log, "missing or wrong secret"));
    assert_null(strstr(fx->log, SECRET));
    assert_null(strstr(fx->log, (const char *)wrong.bytes));
}

/* A raw HTTP exchange, for what our client never sends; the answer in r. */
static void raw_exchange(fixture *fx, net_job *r, const char *request)
{
    memset(r, 0, sizeof(*r));
    r->tcp_port = reignd_peer_server_port(fx->srv);
    r->send = request;
    net_exchange(&fx->loop, r);
}

static void test_missing_secret_and_bad_body(void **state)
{
    fixture *fx = *state;
    net_job r;
    raw_exchange(fx, &r,
                 "POST /v1/services/web/standby HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Content-Length: 22\r\n\r\n{\"from\":\"n2\",\"term\":1}");
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "REIGN_EAUTH"));

    raw_exchange(fx, &r,
                 "POST /v1/services/web/standby HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Authorization: Bearer " SECRET "\r\nContent-Length: 8\r\n\r\n{\"from\":");
    assert_memory_equal(r.answer, "HTTP/1.1 400", 12);
    assert_non_null(strstr(r.answer, "REIGN_EINVAL"));

    raw_exchange(fx, &r,
                 "GET /v2/other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Authorization: Bearer " SECRET "\r\n\r\n");
    assert_memory_equal(r.answer, "HTTP/1.1 404", 12);

    raw_exchange(fx, &r,
                 "DELETE /v1/services/web HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Authorization: Bearer " SECRET "\r\n\r\n");
    assert_memory_equal(r.answer, "HTTP/1.1 400", 12);
    assert_int_equal(fx->fake.calls, 0);
}

static void test_client_failures(void **state)
{
    fixture *fx = *state;

    /* Nothing listens there. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    char addr[64];
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sa.sin_port));
    reignd_peer_target t = {addr, &fx->secret, 0};
    outcome o = {0};
    assert_int_equal(reignd_peer_state(&fx->loop, &t, "web", on_answer, &o, NULL), 0);
    wait_for(fx, &o);
    assert_int_equal(o.err, REIGN_ECONNECT);

    /* Someone listens but never answers: the timeout ends it. */
    assert_int_equal(listen(fd, 4), 0);
    t.timeout_ms = 200;
    outcome o2 = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "web", "n2", 1, on_answer, &o2, NULL), 0);
    wait_for(fx, &o2);
    assert_int_equal(o2.err, REIGN_ETIMEDOUT);
    assert_non_null(strstr(o2.msg, "no answer within 200 ms"));

    /* Cancel: the callback at once, once. */
    t.timeout_ms = 60000;
    outcome o3 = {0};
    reignd_peer_request *req;
    assert_int_equal(reignd_peer_state(&fx->loop, &t, "web", on_answer, &o3, &req), 0);
    reignd_peer_cancel(req);
    assert_true(o3.done);
    assert_int_equal(o3.err, REIGN_ECANCELED);
    close(fd);

    /* Refused before starting: no callback. */
    reignd_peer_target bad = {"no-port", &fx->secret, 0};
    outcome o4 = {0};
    assert_int_equal(reignd_peer_state(&fx->loop, &bad, "web", on_answer, &o4, NULL), REIGN_EINVAL);
    bad.address = fx->address;
    assert_int_equal(reignd_peer_state(&fx->loop, &bad, "", on_answer, &o4, NULL), REIGN_EINVAL);
    assert_int_equal(reignd_peer_standby(&fx->loop, &bad, "web", "", 1, on_answer, &o4, NULL),
                     REIGN_EINVAL);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    assert_false(o4.done);
}

static void test_close_with_pending(void **state)
{
    fixture *fx = *state;
    reignd_peer_target t = target(fx, NULL, 0);
    outcome o = {0};
    assert_int_equal(reignd_peer_standby(&fx->loop, &t, "slow", "n2", 3, on_answer, &o, NULL), 0);
    while (fx->fake.npending == 0)
        uv_run(&fx->loop, UV_RUN_ONCE);
    reignd_peer_server_close(fx->srv);
    fx->srv = NULL;
    wait_for(fx, &o);
    assert_true(o.err < 0);        /* the connection went away without an answer */
    fake_ops_finish(&fx->fake, 0); /* the daemon finishes later: dropped */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_load),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test_setup_teardown(test_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standby, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_secret_and_bad_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
