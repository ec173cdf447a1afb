/*
 * test_peer.c - the endpoint between reignds (src/reignd/peer.c,
 * peer_auth.c): the secret file's checks; the signatures (the header's
 * parser, a request or answer altered in any part, another secret) and the
 * nonce cache (replay, clock skew, expiry, a full cache); the server and the
 * client on one loop over loopback: a service's state, a standby (graceful
 * fence) answered at once, later, or refused; requests refused with 401 and
 * logged without the secret: signed with another secret, unsigned, an old
 * "Bearer" secret, replayed byte for byte, altered (forged), signed too long
 * ago; an answer that is not signed refused by the client; a malformed body;
 * and the client's own failures (connection refused, no answer within the
 * timeout, cancel, a bad address), and a server closed while a standby is
 * pending.  The same attacks on real daemons: test_reignd_e2e.py peer_auth.
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
#include "peer_auth.h"
#include <pthread.h>

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

/* ---- signatures ------------------------------------------------------------ */

static reignd_secret make_secret(const char *text)
{
    reignd_secret k;
    memset(&k, 0, sizeof(k));
    memcpy(k.bytes, text, strlen(text));
    k.len = strlen(text);
    return k;
}

static void test_auth_parse(void **state)
{
    (void)state;
    reignd_auth a;
    char err[400];
    const char *n = "0123456789abcdef0123456789abcdef";
    char sig[65];
    memset(sig, 'a', 64);
    sig[64] = '\0';
    char h[300];
    snprintf(h, sizeof(h), "REIGN-HMAC-SHA256 ts=1700000000123, nonce=%s, sig=%s", n, sig);
    assert_int_equal(reignd_auth_parse(h, &a, err, sizeof(err)), 0);
    assert_int_equal(a.ts_ms, 1700000000123LL);
    assert_string_equal(a.nonce, n);
    assert_string_equal(a.sig, sig);
    snprintf(h, sizeof(h), "REIGN-HMAC-SHA256 sig=%s,nonce=%s,ts=5", sig, n); /* any order */
    assert_int_equal(reignd_auth_parse(h, &a, err, sizeof(err)), 0);
    assert_int_equal(a.ts_ms, 5);

    const char *bad[] = {
        NULL,
        "",
        "Bearer s3cr3t-peer-token-0123456789",
        "REIGN-HMAC-SHA256",
        "REIGN-HMAC-SHA256X ts=1",
        "REIGN-HMAC-SHA256 ts=1, nonce=0123456789abcdef0123456789abcdef",
        "REIGN-HMAC-SHA256 ts=1, ts=2",
        "REIGN-HMAC-SHA256 ts=-1",
        "REIGN-HMAC-SHA256 ts=1234567890123456",
        "REIGN-HMAC-SHA256 nonce=0123456789ABCDEF0123456789abcdef",
        "REIGN-HMAC-SHA256 nonce=0123",
        "REIGN-HMAC-SHA256 other=1",
        "REIGN-HMAC-SHA256 ts=1 nonce=0123456789abcdef0123456789abcdef",
        "REIGN-HMAC-SHA256 ts",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        assert_int_equal(reignd_auth_parse(bad[i], &a, err, sizeof(err)), REIGN_EINVAL);
        assert_true(err[0] != '\0');
    }
    assert_int_equal(reignd_auth_parse("Bearer x", &a, err, sizeof(err)), REIGN_EINVAL);
    assert_non_null(strstr(err, "not signed"));
}

static void test_auth_sign_check(void **state)
{
    (void)state;
    reignd_secret k = make_secret(SECRET), other = make_secret(SECRET "x");
    reignd_auth a;
    const char body[] = "{\"from\":\"n2\",\"term\":7}";
    assert_int_equal(reignd_auth_fresh(&a, 1700000000000LL), 0);
    assert_int_equal(strlen(a.nonce), REIGND_AUTH_NONCE_HEX);
    reignd_auth b;
    assert_int_equal(reignd_auth_fresh(&b, 1700000000000LL), 0);
    assert_string_not_equal(a.nonce, b.nonce);
    reignd_auth_sign_request(&k, "POST", "/v1/services/web/standby", body, strlen(body), &a);
    assert_true(
        reignd_auth_check_request(&k, "POST", "/v1/services/web/standby", body, strlen(body), &a));
    /* The header says it all: parse what format wrote. */
    char h[256];
    reignd_auth back;
    char err[200];
    reignd_auth_format(&a, h, sizeof(h));
    assert_null(strstr(h, SECRET));
    assert_int_equal(reignd_auth_parse(h, &back, err, sizeof(err)), 0);
    assert_true(reignd_auth_check_request(&k, "POST", "/v1/services/web/standby", body,
                                          strlen(body), &back));
    /* Any part changed, or another secret: refused. */
    const char forged[] = "{\"from\":\"n2\",\"term\":8}";
    assert_false(reignd_auth_check_request(&k, "POST", "/v1/services/web/standby", forged,
                                           strlen(forged), &a));
    assert_false(
        reignd_auth_check_request(&k, "GET", "/v1/services/web/standby", body, strlen(body), &a));
    assert_false(
        reignd_auth_check_request(&k, "POST", "/v1/services/db/standby", body, strlen(body), &a));
    assert_false(reignd_auth_check_request(&other, "POST", "/v1/services/web/standby", body,
                                           strlen(body), &a));
    reignd_auth t = a;
    t.ts_ms++;
    assert_false(
        reignd_auth_check_request(&k, "POST", "/v1/services/web/standby", body, strlen(body), &t));
    t = a;
    t.nonce[0] = t.nonce[0] == '0' ? '1' : '0';
    assert_false(
        reignd_auth_check_request(&k, "POST", "/v1/services/web/standby", body, strlen(body), &t));
    reignd_secret none;
    memset(&none, 0, sizeof(none));
    assert_false(reignd_auth_check_request(&none, "POST", "/v1/services/web/standby", body,
                                           strlen(body), &a));

    /* Answers: bound to the request's nonce, the status and the body. */
    char sig[REIGND_AUTH_SIG_HEX + 1];
    reignd_auth_sign_answer(&k, a.nonce, 200, "{}", 2, sig);
    assert_true(reignd_auth_check_answer(&k, a.nonce, 200, "{}", 2, sig));
    assert_false(reignd_auth_check_answer(&k, b.nonce, 200, "{}", 2, sig));
    assert_false(reignd_auth_check_answer(&k, a.nonce, 409, "{}", 2, sig));
    assert_false(reignd_auth_check_answer(&k, a.nonce, 200, "{ }", 3, sig));
    assert_false(reignd_auth_check_answer(&other, a.nonce, 200, "{}", 2, sig));
    assert_false(reignd_auth_check_answer(&k, a.nonce, 200, "{}", 2, NULL));
    assert_false(reignd_auth_check_answer(&k, a.nonce, 200, "{}", 2, ""));
}

static void test_nonce_cache(void **state)
{
    (void)state;
    const int64_t now = 1700000000000LL, w = REIGND_AUTH_WINDOW_MS;
    reignd_nonce_cache *c = reignd_nonce_cache_new();
    assert_non_null(c);
    reignd_auth a;
    assert_int_equal(reignd_auth_fresh(&a, now), 0);
    assert_int_equal(reignd_nonce_take(c, &a, now), REIGND_AUTH_OK);
    assert_int_equal(reignd_nonce_take(c, &a, now + 1), REIGND_AUTH_REPLAYED);
    assert_int_equal(reignd_nonce_take(c, &a, now + w), REIGND_AUTH_REPLAYED);
    /* Once its time is out of the window, it fails on its time (and is forgotten). */
    assert_int_equal(reignd_nonce_take(c, &a, now + w + 1), REIGND_AUTH_SKEWED);
    reignd_auth old = a, future = a;
    old.ts_ms = now - w - 1;
    future.ts_ms = now + w + 1;
    assert_int_equal(reignd_nonce_take(c, &old, now), REIGND_AUTH_SKEWED);
    assert_int_equal(reignd_nonce_take(c, &future, now), REIGND_AUTH_SKEWED);
    /* Full: refused until entries expire. */
    for (int i = 1; i < REIGND_AUTH_CACHE_MAX; i++) {
        reignd_auth x;
        assert_int_equal(reignd_auth_fresh(&x, now), 0);
        assert_int_equal(reignd_nonce_take(c, &x, now), REIGND_AUTH_OK);
    }
    reignd_auth y;
    assert_int_equal(reignd_auth_fresh(&y, now), 0);
    assert_int_equal(reignd_nonce_take(c, &y, now), REIGND_AUTH_FULL);
    y.ts_ms = now + w;
    assert_int_equal(reignd_nonce_take(c, &y, now + w + 1), REIGND_AUTH_OK);
    reignd_nonce_cache_free(c);
    reignd_nonce_cache_free(NULL);
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
    assert_non_null(strstr(o.msg, "refused our request: wrong signature"));
    assert_int_equal(fx->fake.calls, 0);
    assert_non_null(strstr(fx->log, "wrong signature"));
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

/* A request signed with `secret` at now + skew_ms (the nonce in *a). */
static void signed_request(char *out, size_t outlen, const reignd_secret *secret,
                           const char *method, const char *path, const char *body, int64_t skew_ms,
                           reignd_auth *a)
{
    char h[256];
    assert_int_equal(reignd_auth_fresh(a, reignd_auth_now_ms() + skew_ms), 0);
    reignd_auth_sign_request(secret, method, path, body, strlen(body), a);
    reignd_auth_format(a, h, sizeof(h));
    snprintf(out, outlen,
             "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: %s\r\n"
             "Content-Length: %zu\r\n\r\n%s",
             method, path, h, strlen(body), body);
}

/* Whether the answer in r carries the server's signature for nonce. */
static bool answer_signed(const fixture *fx, const net_job *r, const char *nonce)
{
    const char *body = strstr(r->answer, "\r\n\r\n");
    const char *h = strcasestr(r->answer, "\r\n" REIGND_AUTH_ANSWER ":");
    unsigned code = 0;
    if (!body || !h || h > body || sscanf(r->answer, "HTTP/1.1 %u", &code) != 1)
        return false;
    h += strlen("\r\n" REIGND_AUTH_ANSWER ":");
    h += strspn(h, " ");
    char sig[REIGND_AUTH_SIG_HEX + 1];
    snprintf(sig, sizeof(sig), "%.*s", (int)strcspn(h, "\r"), h);
    body += 4;
    return reignd_auth_check_answer(&fx->secret, nonce, code, body, strlen(body), sig);
}

static void test_refused_requests(void **state)
{
    fixture *fx = *state;
    net_job r;
    char req[1024];
    reignd_auth a;
    const char *standby = "/v1/services/web/standby", *body = "{\"from\":\"n2\",\"term\":1}";

    /* No signature, or the secret itself (what earlier versions sent). */
    raw_exchange(fx, &r,
                 "POST /v1/services/web/standby HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Content-Length: 22\r\n\r\n{\"from\":\"n2\",\"term\":1}");
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "REIGN_EAUTH"));
    assert_non_null(strstr(r.answer, "not signed"));
    raw_exchange(fx, &r,
                 "POST /v1/services/web/standby HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                 "Authorization: Bearer " SECRET "\r\nContent-Length: 22\r\n\r\n"
                 "{\"from\":\"n2\",\"term\":1}");
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "not signed"));
    assert_int_equal(fx->fake.calls, 0);

    /* Signed: taken, and the answer is signed for its nonce. */
    signed_request(req, sizeof(req), &fx->secret, "POST", standby, body, 0, &a);
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 200", 12);
    assert_true(answer_signed(fx, &r, a.nonce));
    assert_false(answer_signed(fx, &r, "00000000000000000000000000000000"));
    assert_int_equal(fx->fake.calls, 1);

    /* The same bytes again (seen on the network): refused. */
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "replayed"));
    assert_int_equal(fx->fake.calls, 1);

    /* The signature of one request on another body (forged): refused. */
    char *term = strstr(req, "\"term\":1}");
    assert_non_null(term);
    term[7] = '2';
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "wrong signature"));
    assert_int_equal(fx->fake.calls, 1);

    /* Signed right, but a minute ago (or clocks apart): refused, saying why. */
    signed_request(req, sizeof(req), &fx->secret, "POST", standby, body, -60000, &a);
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 401", 12);
    assert_non_null(strstr(r.answer, "clocks"));
    assert_int_equal(fx->fake.calls, 1);
    assert_non_null(strstr(fx->log, "replayed"));
    assert_null(strstr(fx->log, SECRET));

    /* Signed, but wrong in itself. */
    signed_request(req, sizeof(req), &fx->secret, "POST", standby, "{\"from\":", 0, &a);
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 400", 12);
    assert_non_null(strstr(r.answer, "REIGN_EINVAL"));
    assert_true(answer_signed(fx, &r, a.nonce));
    signed_request(req, sizeof(req), &fx->secret, "GET", "/v2/other", "", 0, &a);
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 404", 12);
    signed_request(req, sizeof(req), &fx->secret, "DELETE", "/v1/services/web", "", 0, &a);
    raw_exchange(fx, &r, req);
    assert_memory_equal(r.answer, "HTTP/1.1 400", 12);
    assert_int_equal(fx->fake.calls, 1);
}

/* A server that answers one request with canned bytes (what a forger would send). */
typedef struct canned {
    int fd;
    const char *answer;
    pthread_t thread;
} canned;

static void *canned_main(void *arg)
{
    canned *c = arg;
    int conn = accept(c->fd, NULL, NULL);
    if (conn < 0)
        return NULL;
    char buf[4096];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof(buf) - 1 && (n = read(conn, buf + got, sizeof(buf) - 1 - got)) > 0) {
        got += (size_t)n;
        buf[got] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        const char *cl = strcasestr(buf, "Content-Length:");
        if (end && cl && got >= (size_t)(end + 4 - buf) + (size_t)atol(cl + 15))
            break;
    }
    assert_int_equal(write(conn, c->answer, strlen(c->answer)), (ssize_t)strlen(c->answer));
    close(conn);
    return NULL;
}

static void canned_start(canned *c, const char *answer, char *address, size_t len)
{
    struct sockaddr_in sa;
    socklen_t sl = sizeof(sa);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(bind(c->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(c->fd, 1), 0);
    getsockname(c->fd, (struct sockaddr *)&sa, &sl);
    snprintf(address, len, "127.0.0.1:%d", ntohs(sa.sin_port));
    c->answer = answer;
    assert_int_equal(pthread_create(&c->thread, NULL, canned_main, c), 0);
}

static void canned_stop(canned *c)
{
    pthread_join(c->thread, NULL);
    close(c->fd);
}

static void test_unsigned_answers(void **state)
{
    fixture *fx = *state;
    static const char *const answers[] = {
        /* "done" from someone without the secret: must not read as a success */
        "HTTP/1.1 200 OK\r\nContent-Length: 25\r\n\r\n{\"ok\":true,\"result\":null}",
        ("HTTP/1.1 200 OK\r\nX-Reign-Signature: "
         "0000000000000000000000000000000000000000000000000000000000000000\r\n"
         "Content-Length: 25\r\n\r\n{\"ok\":true,\"result\":null}"),
        ("HTTP/1.1 401 Unauthorized\r\nContent-Length: 59\r\n\r\n"
         "{\"ok\":false,\"error\":\"REIGN_EAUTH\",\"message\":\"who are you?\"}"),
    };
    for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
        canned c;
        char address[64];
        canned_start(&c, answers[i], address, sizeof(address));
        reignd_peer_target t = {address, &fx->secret, 0};
        outcome o = {0};
        assert_int_equal(reignd_peer_standby(&fx->loop, &t, "web", "n2", 9, on_answer, &o, NULL),
                         0);
        wait_for(fx, &o);
        canned_stop(&c);
        assert_int_equal(o.err, REIGN_EAUTH);
        assert_null(o.result);
        assert_non_null(strstr(o.msg, i < 2 ? "not signed with our secret" : "who are you?"));
    }
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
        cmocka_unit_test(test_auth_parse),
        cmocka_unit_test(test_auth_sign_check),
        cmocka_unit_test(test_nonce_cache),
        cmocka_unit_test_setup_teardown(test_state, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standby, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsigned_answers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_failures, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
