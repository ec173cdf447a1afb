/*
 * test_etcd_h2.c - etcd's gRPC API over HTTP/2 (src/etcd/etcd_h2.c), with no etcd: the member is
 * a loopback listener (fake_h2_member.h) whose scripts, each on a thread, play a member's gRPC
 * side with libnghttp2's server session: answers whole, cut across DATA frames or several in
 * one, errors in trailers or trailers only, other HTTP statuses, resets, a GOAWAY, a close in
 * the middle of an answer or before any byte, answers larger than the windows, and bytes that
 * are no gRPC, no protobuf, no HTTP/2.  The answers are protobuf-c's structs, packed; the calls
 * the fake saw are unpacked and checked against the JSON the client was given.  The test drives
 * the transport as etcd_http.c's pump does: epoll, the client's timers, the ended requests, and
 * a stream's new lines handed out as they come.
 *
 * No timed assertion.  A script and the test wait for each other (an eventfd one way, a pipe the
 * other); a test that must show what happens before a timer fires keeps the timers from
 * running meanwhile.  A wait that lasts GUARD_MS is a stuck test: it fails instead of hanging.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <protobuf-c/protobuf-c.h>

#include "etcd/etcd_internal.h"
#include "etcd_rpc.pb-c.h"
#include "fake_h2_member.h"

#define ENDED 512
#define MINE  512

/* ---- the client, driven as etcd_http.c drives it ------------------------------------------- */

/* The members: the fake one, a port that refuses, a member that is no URL, a full backlog. */
enum { M_A, M_REFUSED, M_BAD, M_FULL, N_MEMBERS };

typedef struct h2t {
    reign__etcd *e;
    reign__timers timers;
    h2fake srv;
    int refused_fd, full_fd, filler_fd;
    bool timers_off; /* the test looks at what happens before a timer may fire */
    ereq *ended[ENDED];
    size_t n_ended;
    size_t handouts; /* a stream's new bytes handed out while it was out (etcd_http.c's pump) */
    uint64_t wakes;  /* what the transport wrote to the wake eventfd */
    ereq *mine[MINE];
    char token[32];
} h2t;

static char *member_of(int port)
{
    char m[64];
    snprintf(m, sizeof(m), "http://127.0.0.1:%d", port);
    char *s = reign__strdup(m);
    assert_non_null(s);
    return s;
}

static int setup(void **state)
{
    h2t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    assert_int_equal(hf_init(&t->srv), 0);
    int refused_port, full_port;
    t->refused_fd = hf_bound(&refused_port); /* bound, never listening */
    /* A backlog of 0 with one connection in it: the kernel drops the next SYNs. */
    t->full_fd = hf_bound(&full_port);
    assert_int_equal(listen(t->full_fd, 0), 0);
    t->filler_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)full_port)};
    assert_int_equal(connect(t->filler_fd, (struct sockaddr *)&a, sizeof(a)), 0);

    reign__etcd *e = reign__calloc(1, sizeof(*e));
    assert_non_null(e);
    e->cfg.timers = &t->timers;
    e->cfg.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    e->cfg.epoll_fd = -1;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    assert_true(e->cfg.wake_fd >= 0 && e->epfd >= 0);
    e->h2 = true;
    e->n_members = N_MEMBERS;
    e->members = reign__calloc(N_MEMBERS, sizeof(*e->members));
    e->addrs = reign__calloc(N_MEMBERS, sizeof(*e->addrs));
    assert_true(e->members && e->addrs);
    e->members[M_A] = member_of(t->srv.port);
    e->members[M_REFUSED] = member_of(refused_port);
    e->members[M_BAD] = reign__strdup("http://127.0.0.1"); /* no port */
    e->members[M_FULL] = member_of(full_port);
    assert_int_equal(reign__h2_init(e), 0);
    t->e = e;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    h2t *t = *state;
    reign__etcd *e = t->e;
    hf_free(&t->srv);
    for (size_t i = 0; i < MINE; i++)
        reign__eh_drop(t->mine[i]);
    reign__h2_free(e);
    reign__h1_free(e); /* the members' addresses */
    close(e->epfd);
    close(e->cfg.wake_fd);
    for (size_t i = 0; i < N_MEMBERS; i++)
        reign__free(e->members[i]);
    reign__free(e->members);
    reign__free(e);
    reign__timers_free(&t->timers);
    close(t->refused_fd);
    close(t->full_fd);
    close(t->filler_fd);
    free(t);
    return 0;
}

/* The test's state, its member playing script. */
static h2t *started(void **state, hf_script *script)
{
    h2t *t = *state;
    assert_int_equal(hf_start(&t->srv, script, NULL), 0);
    return t;
}

static void drain(int fd, uint64_t *count)
{
    uint64_t n;
    if (read(fd, &n, sizeof(n)) == sizeof(n) && count)
        *count += n;
}

/* The streams with new bytes, each once, as etcd_http.c's pump hands them out: a done for each
 * one still out (a part of its answer, not its end). */
static void hand_out(h2t *t)
{
    reign__etcd *e = t->e;
    while (e->with_data) {
        ereq *q = e->with_data;
        e->with_data = q->dnext;
        if (q->dnext)
            q->dnext->dprev = NULL;
        q->dprev = q->dnext = NULL;
        q->got_data = false;
        if (reign__eh_out(q))
            t->handouts++;
    }
}

/* One turn of the loop: what epoll says, the timers due, the requests that ended, the lines. */
static void pump(h2t *t)
{
    reign__etcd *e = t->e;
    int ms = 1000;
    int64_t next = t->timers_off ? -1 : reign__timers_next(&t->timers);
    if (next >= 0) {
        int64_t left = (next - reign__now_ns()) / REIGN__NS_PER_MS + 1;
        ms = left < 0 ? 0 : left < ms ? (int)left : ms;
    }
    struct pollfd p[3] = {{.fd = e->epfd, .events = POLLIN},
                          {.fd = t->srv.said, .events = POLLIN},
                          {.fd = e->cfg.wake_fd, .events = POLLIN}};
    poll(p, 3, ms);
    struct epoll_event ev[32];
    int n;
    while ((n = epoll_wait(e->epfd, ev, 32, 0)) > 0) {
        for (int i = 0; i < n; i++)
            reign__h2_event(e, ev[i].data.ptr, ev[i].events);
        if (n < 32)
            break;
    }
    if (!t->timers_off)
        reign__timers_run(&t->timers, reign__now_ns());
    for (ereq *q; (q = reign__h1_take_done(e));) {
        assert_true(t->n_ended < ENDED);
        t->ended[t->n_ended++] = q;
    }
    hand_out(t);
    drain(t->srv.said, NULL);
    drain(e->cfg.wake_fd, &t->wakes);
}

#define PUMP_UNTIL(t, cond)                                                                        \
    do {                                                                                           \
        int64_t guard_ = reign__now_ns() + GUARD_MS * REIGN__NS_PER_MS;                            \
        while (!(cond)) {                                                                          \
            if (reign__now_ns() > guard_)                                                          \
                fail_msg("stuck waiting for %s", #cond);                                           \
            pump(t);                                                                               \
        }                                                                                          \
    } while (0)

static size_t times_ended(const h2t *t, const ereq *q)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_ended; i++)
        n += t->ended[i] == q;
    return n;
}

/* A request of the gateway's path to member m, not sent yet. */
static ereq *make(h2t *t, size_t m, const char *path, const char *body, int timeout_ms, bool stream)
{
    ereq *q = reign__eh_new(t->e, NULL, NULL);
    assert_non_null(q);
    assert_int_equal(reign__buf_puts(&q->body, body), 0);
    q->path = path;
    q->timeout_ms = timeout_ms;
    q->member = m;
    q->stream = stream;
    for (size_t i = 0; i < MINE; i++)
        if (!t->mine[i]) {
            t->mine[i] = q;
            return q;
        }
    fail_msg("too many requests");
    return NULL;
}

static ereq *send_to(h2t *t, size_t m, const char *path, const char *body, int timeout_ms,
                     bool stream)
{
    ereq *q = make(t, m, path, body, timeout_ms, stream);
    q->sent_ns = reign__now_ns(); /* as etcd_http.c's hand_over() */
    assert_int_equal(reign__h2_send(t->e, q), 0);
    return q;
}

#define RANGE "{\"key\":\"L3IvcmVpZ24=\",\"range_end\":\"L3IvcmVpZ28=\"}"

static ereq *send_range(h2t *t, int timeout_ms)
{
    return send_to(t, M_A, "/v3/kv/range", RANGE, timeout_ms, false);
}

/* Frees q, which ended at most once, and forgets it. */
static void drop(h2t *t, ereq *q)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_ended; i++)
        if (t->ended[i] != q)
            t->ended[n++] = t->ended[i];
    assert_true(t->n_ended - n <= 1);
    t->n_ended = n;
    for (size_t i = 0; i < MINE; i++)
        if (t->mine[i] == q)
            t->mine[i] = NULL;
    reign__eh_drop(q);
}

/* Until q ends; it ends once, off its stream. */
static void wait_end(h2t *t, ereq *q)
{
    PUMP_UNTIL(t, times_ended(t, q) > 0);
    assert_int_equal(times_ended(t, q), 1);
    assert_null(q->hs);
    assert_false(q->finished);
}

/* Answered: the gateway's status and body. */
static void assert_answer(const ereq *q, const char *body)
{
    if (q->fail)
        fail_msg("failed (%d): %s", q->fail, q->why);
    assert_int_equal(q->status, 200);
    assert_string_equal(q->why, "");
    assert_string_equal(q->resp.data ? q->resp.data : "", body);
    assert_int_equal(q->resp.len, strlen(body));
}

/* A range (5000 ms) answered with body, then dropped. */
static void range_answered(h2t *t, const char *body)
{
    ereq *q = send_range(t, 5000);
    wait_end(t, q);
    assert_answer(q, body);
    drop(t, q);
}

/* Failed, why naming part (its wording is etcd_h2.c's). */
static void assert_failed(const ereq *q, int fail, const char *part)
{
    if (q->fail != fail)
        fail_msg("fail is %d (%s), want %d", q->fail, q->why, fail);
    if (!strstr(q->why, part))
        fail_msg("why is \"%s\", want \"...%s...\"", q->why, part);
}

/* Until q ends, failed so. */
static void ends_failed(h2t *t, ereq *q, int fail, const char *part)
{
    wait_end(t, q);
    assert_failed(q, fail, part);
}

static void assert_has(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("\"%s\" not in:\n%s", part, text);
}

/* What reign__eh_answer() makes of q, as etcd_http.c reads it: no answer but rc, its message
 * naming part. */
static void assert_eh(ereq *q, int rc, const char *part)
{
    int got;
    char msg[256];
    assert_null(reign__eh_answer(q, &got, msg, sizeof(msg)));
    assert_int_equal(got, rc);
    assert_has(msg, part);
}

/* ---- answers ------------------------------------------------------------------------------- */

/* A txn: compare, a put with a lease, a range on failure. */
#define TXN                                                                                        \
    "{\"compare\":[{\"key\":\"L3IvZS9h\",\"target\":\"VERSION\",\"result\":\"EQUAL\","             \
    "\"version\":\"1\"}],\"success\":[{\"request_put\":{\"key\":\"L3IvZS9h\",\"value\":"           \
    "\"aGVsbG8=\",\"lease\":\"7\"}}],\"failure\":[{\"request_range\":{\"key\":\"L3IvZS9h\"}}]}"

static void s_unary(h2fake *f)
{
    hf_take(f, 1);
    answer_txn_put(f, 0);
    hf_calls(f, 2);
    answer_range(f, 1, 1);
    hf_await(f);
}

/* A txn's answer read back as the gateway's JSON (as etcd_http.c reads it), then a range on the
 * same connection; the calls as etcd's gRPC server takes them. */
static void test_unary(void **state)
{
    h2t *t = started(state, s_unary);
    ereq *q = send_to(t, M_A, "/v3/kv/txn", TXN, 5000, false);
    wait_end(t, q);
    assert_answer(q, "{\"header\":{\"revision\":\"7\"},\"succeeded\":true,\"responses\":"
                     "[{\"response_put\":{\"header\":{\"revision\":\"7\"}}}]}");
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    assert_non_null(root);
    assert_int_equal(rc, 0);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "succeeded")));
    cJSON_Delete(root);
    drop(t, q);
    range_answered(t, ANSWER);
    hf_stop_accepted(&t->srv, 1); /* one connection for both */

    h2fake *f = &t->srv;
    assert_int_equal(f->reqs[1].conn, 0);
    /* the client's SETTINGS: no push; a stream's window 4 MB, the connection's 64 MB */
    assert_true(f->conns[0].settings);
    assert_int_equal(f->conns[0].push, 0);
    assert_int_equal(f->conns[0].window, 1 << 22);
    assert_int_equal(f->conns[0].conn_window_inc, (1 << 26) - 65535);

    size_t len;
    const uint8_t *m =
        hf_message(hf_assert_call(&t->srv, 0, "/etcdserverpb.KV/Txn", false, NULL), &len);
    Etcdserverpb__TxnRequest *tr = etcdserverpb__txn_request__unpack(NULL, len, m);
    assert_non_null(tr);
    assert_int_equal(tr->n_compare, 1);
    assert_true(hf_bin_is(tr->compare[0]->key, "/r/e/a"));
    assert_int_equal(tr->compare[0]->target, ETCDSERVERPB__COMPARE__COMPARE_TARGET__VERSION);
    assert_int_equal(tr->compare[0]->result, ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL);
    assert_int_equal(tr->compare[0]->target_union_case,
                     ETCDSERVERPB__COMPARE__TARGET_UNION_VERSION);
    assert_int_equal(tr->compare[0]->version, 1);
    assert_int_equal(tr->n_success, 1);
    assert_int_equal(tr->success[0]->request_case, ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT);
    assert_true(hf_bin_is(tr->success[0]->request_put->key, "/r/e/a"));
    assert_true(hf_bin_is(tr->success[0]->request_put->value, "hello"));
    assert_int_equal(tr->success[0]->request_put->lease, 7);
    assert_int_equal(tr->n_failure, 1);
    assert_int_equal(tr->failure[0]->request_case, ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_RANGE);
    assert_true(hf_bin_is(tr->failure[0]->request_range->key, "/r/e/a"));
    etcdserverpb__txn_request__free_unpacked(tr, NULL);

    m = hf_message(hf_assert_call(&t->srv, 1, "/etcdserverpb.KV/Range", false, NULL), &len);
    Etcdserverpb__RangeRequest *rr = etcdserverpb__range_request__unpack(NULL, len, m);
    assert_non_null(rr);
    assert_true(hf_bin_is(rr->key, "/r/reign"));
    assert_true(hf_bin_is(rr->range_end, "/r/reigo"));
    etcdserverpb__range_request__free_unpacked(rr, NULL);
}

#define WATCH "{\"create_request\":{\"key\":\"L3I=\",\"range_end\":\"L3M=\"}}"

static void s_token(h2fake *f)
{
    hf_take(f, 2);
    answer_range(f, 0, 1);
    hf_head(f, 1);
    hf_trailers(f, 1, 0, NULL);
    hf_await(f);
}

/* The token goes as "authorization", on a unary call and on a stream. */
static void test_token(void **state)
{
    h2t *t = started(state, s_token);
    snprintf(t->token, sizeof(t->token), "Authorization: tok");
    t->e->token_header = t->token;
    ereq *q = send_range(t, 5000);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    wait_end(t, q);
    wait_end(t, w);
    t->e->token_header = NULL;
    assert_answer(q, ANSWER);
    assert_answer(w, ""); /* a stream that ends with no line */
    hf_stop_checked(&t->srv);
    hf_assert_call(&t->srv, 0, "/etcdserverpb.KV/Range", false, "tok");
    hf_assert_call(&t->srv, 1, "/etcdserverpb.Watch/Watch", true, "tok");
    drop(t, q);
    drop(t, w);
}

static void s_split(h2fake *f)
{
    hf_take(f, 1);
    size_t n;
    uint8_t *b = range_framed(1, &n);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    /* the prefix cut, then the message, then its last byte alone */
    hf_head(f, 0);
    hf_data(f, 0, b, 2, false);
    hf_data(f, 0, b + 2, 4, false);
    hf_data(f, 0, b + 6, n - 7, false);
    hf_data(f, 0, b + n - 1, 1, false);
    free(b);
    hf_say(f);
    hf_await(f);
    hf_trailers(f, 0, 0, NULL);
    hf_await(f);
}

/* One message across four DATA frames: it is whole when its last byte comes, and the call ends
 * with its trailers only. */
static void test_split(void **state)
{
    h2t *t = started(state, s_split);
    ereq *q = send_range(t, 5000);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1 && q->resp.len == strlen(ANSWER));
    assert_string_equal(q->resp.data, ANSWER);
    assert_int_equal(times_ended(t, q), 0);
    assert_true(reign__eh_out(q));
    hf_let_go(&t->srv);
    wait_end(t, q);
    assert_answer(q, ANSWER);
    drop(t, q);
    hf_stop_checked(&t->srv);
}

/* ---- streams ------------------------------------------------------------------------------- */

static void s_watch(h2fake *f)
{
    hf_take(f, 1);
    size_t first, n;
    uint8_t *b = watch_answers(&first, &n);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    hf_head(f, 0);
    /* the first message and 3 bytes of the second's prefix ... */
    hf_data(f, 0, b, first + 3, false);
    hf_say(f);
    hf_await(f);
    /* ... the rest of the prefix and 2 bytes, then its rest and two messages whole */
    hf_data(f, 0, b + first + 3, 4, false);
    hf_data(f, 0, b + first + 7, n - first - 7, false);
    free(b);
    hf_say(f);
    hf_await(f);
    hf_trailers(f, 0, 0, NULL);
    hf_await(f);
}

/* A watch's answers are lines, handed out as they come: a message whole is a line at once,
 * half of one waits for its rest, several in a frame are several lines; the trailers end it. */
static void test_stream_lines(void **state)
{
    h2t *t = started(state, s_watch);
    ereq *q = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1 && q->resp.len == strlen(LINE1));
    assert_string_equal(q->resp.data, LINE1);
    assert_int_equal(t->handouts, 1);
    assert_true(reign__eh_out(q));
    assert_int_equal(times_ended(t, q), 0);
    assert_int_equal(q->status, 200);
    hf_let_go(&t->srv);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 2 && q->resp.len == strlen(LINE1 LINE2 LINE3 LINE4));
    assert_string_equal(q->resp.data, LINE1 LINE2 LINE3 LINE4);
    assert_true(t->handouts >= 2);
    assert_int_equal(times_ended(t, q), 0);
    hf_let_go(&t->srv);
    wait_end(t, q);
    assert_answer(q, LINE1 LINE2 LINE3 LINE4); /* no error line: grpc-status 0 */
    drop(t, q);
    hf_stop_checked(&t->srv);

    size_t len;
    const uint8_t *m =
        hf_message(hf_assert_call(&t->srv, 0, "/etcdserverpb.Watch/Watch", true, NULL), &len);
    Etcdserverpb__WatchRequest *wr = etcdserverpb__watch_request__unpack(NULL, len, m);
    assert_non_null(wr);
    assert_int_equal(wr->request_union_case,
                     ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST);
    assert_true(hf_bin_is(wr->create_request->key, "/r"));
    assert_true(hf_bin_is(wr->create_request->range_end, "/s"));
    etcdserverpb__watch_request__free_unpacked(wr, NULL);
}

/* ---- gRPC's errors ------------------------------------------------------------------------- */

static const struct {
    int code;
    const char *wire, *msg; /* grpc-message as it goes (percent-encoded), and as it reads */
    int rc;                 /* what reign__eh_answer() makes of it */
} grpc_errors[] = {
    {5, "etcdserver: requested lease not found", "etcdserver: requested lease not found",
     REIGN_ESESSION},
    {14, "etcdserver: no leader", "etcdserver: no leader", REIGN_ECONNLOSS},
    {3, "etcdserver: request is too large", "etcdserver: request is too large", REIGN_E2BIG},
    {7, "etcdserver: permission denied", "etcdserver: permission denied", REIGN_EACCES},
    {2, "a%20b%25c%0Ad%", "a b%c?d%", REIGN_EBACKEND},
};
#define N_GRPC_ERRORS (int)(sizeof(grpc_errors) / sizeof(grpc_errors[0]))

static void s_errors(h2fake *f)
{
    hf_accept(f);
    for (int i = 0; i < N_GRPC_ERRORS; i++) {
        hf_calls(f, i + 1);
        hf_head(f, i);
        hf_trailers(f, i, grpc_errors[i].code, grpc_errors[i].wire);
    }
    hf_await(f);
}

/* An error in the trailers of a unary call is the gateway's {"error":MSG,"code":N}: an answer,
 * which reign__eh_answer() reads as reign's code. */
static void test_grpc_errors(void **state)
{
    h2t *t = started(state, s_errors);
    for (int i = 0; i < N_GRPC_ERRORS; i++) {
        ereq *q = send_range(t, 5000);
        wait_end(t, q);
        char want[256];
        snprintf(want, sizeof(want), "{\"error\":\"%s\",\"code\":%d}", grpc_errors[i].msg,
                 grpc_errors[i].code);
        assert_answer(q, want);
        assert_eh(q, grpc_errors[i].rc, grpc_errors[i].msg);
        drop(t, q);
    }
    hf_stop_accepted(&t->srv, 1);
}

#define KA_LINE "{\"result\":{\"header\":{\"revision\":\"5\"},\"ID\":\"7\",\"TTL\":\"10\"}}\n"
#define KA_GONE                                                                                    \
    "{\"error\":{\"grpc_code\":5,\"message\":\"etcdserver: requested lease not found\"}}\n"

static void s_stream_error(h2fake *f)
{
    hf_take(f, 1);
    size_t n;
    uint8_t *b = keepalive_framed(7, &n);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    hf_head(f, 0);
    hf_data(f, 0, b, n, false);
    free(b);
    hf_trailers(f, 0, 5, "etcdserver: requested lease not found");
    hf_await(f);
}

/* On a stream the error is a line of its own, after the ones that came. */
static void test_stream_error(void **state)
{
    h2t *t = started(state, s_stream_error);
    ereq *q = send_to(t, M_A, "/v3/lease/keepalive", "{\"ID\":\"7\"}", 0, true);
    wait_end(t, q);
    assert_answer(q, KA_LINE KA_GONE);
    drop(t, q);
    hf_stop_checked(&t->srv);
    size_t len;
    const uint8_t *m = hf_message(
        hf_assert_call(&t->srv, 0, "/etcdserverpb.Lease/LeaseKeepAlive", true, NULL), &len);
    Etcdserverpb__LeaseKeepAliveRequest *kr =
        etcdserverpb__lease_keep_alive_request__unpack(NULL, len, m);
    assert_non_null(kr);
    assert_int_equal(kr->id, 7);
    etcdserverpb__lease_keep_alive_request__free_unpacked(kr, NULL);
}

#define COMPACTED "etcdserver: mvcc: required revision has been compacted"

static void s_trailers_only(h2fake *f)
{
    hf_take(f, 2);
    hf_trailers_only(f, 0, 16, "etcdserver: invalid auth token");
    hf_trailers_only(f, 1, 11, COMPACTED);
    hf_await(f);
}

/* gRPC's trailers-only answer: one HEADERS with the status, END_STREAM, no DATA. */
static void test_trailers_only(void **state)
{
    h2t *t = started(state, s_trailers_only);
    ereq *q = send_range(t, 5000);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    wait_end(t, q);
    wait_end(t, w);
    assert_answer(q, "{\"error\":\"etcdserver: invalid auth token\",\"code\":16}");
    assert_eh(q, REIGN_EAUTH, "");
    assert_answer(w, "{\"error\":{\"grpc_code\":11,\"message\":\"" COMPACTED "\"}}\n");
    drop(t, q);
    drop(t, w);
    hf_stop_checked(&t->srv);
}

/* ---- not etcd's answers -------------------------------------------------------------------- */

static void s_status(h2fake *f)
{
    hf_take(f, 1);
    hf_head_as(f, 0, "503", "text/plain", true);
    hf_calls(f, 2);
    answer_range(f, 1, 1);
    hf_await(f);
}

/* Another HTTP status with no body: not etcd's gRPC API, a failure no other member cures. */
static void test_http_status(void **state)
{
    h2t *t = started(state, s_status);
    ereq *q = send_range(t, 5000);
    ends_failed(t, q, REIGN_EBACKEND, "HTTP 503 on /etcdserverpb.KV/Range, not etcd's gRPC API");
    assert_eh(q, REIGN_EBACKEND, "HTTP 503");
    drop(t, q);
    range_answered(t, ANSWER); /* the connection still serves */
    hf_stop_accepted(&t->srv, 1);
}

static void s_status_body(h2fake *f)
{
    static const char text[] = "404 page not found\n";
    hf_take(f, 1);
    hf_head_as(f, 0, "404", "text/plain; charset=utf-8", false);
    hf_data(f, 0, text, strlen(text), true);
    hf_await(f);
}

/* The same with the body an HTTP server writes with its 404 (Go's, an HTTP/2 proxy's): still
 * not etcd's gRPC API, and the same failure.  The body is the server's text, not gRPC. */
static void test_http_status_body(void **state)
{
    h2t *t = started(state, s_status_body);
    ereq *q = send_range(t, 5000);
    ends_failed(t, q, REIGN_EBACKEND, "HTTP 404 on /etcdserverpb.KV/Range, not etcd's gRPC API");
    drop(t, q);
    hf_stop_checked(&t->srv);
}

static void s_no_status(h2fake *f)
{
    hf_take(f, 2);
    size_t n, first, all;
    uint8_t *b = range_framed(1, &n), *w = watch_answers(&first, &all);
    if (b && w) {
        hf_head(f, 0);
        hf_data(f, 0, b, n, true);
        hf_head(f, 1);
        hf_data(f, 1, w, first, true);
    } else {
        hf_trouble(f, "no memory");
    }
    free(b);
    free(w);
    hf_await(f);
}

/* A call that ends with no grpc-status (END_STREAM on its DATA) got no whole answer. */
static void test_no_grpc_status(void **state)
{
    h2t *t = started(state, s_no_status);
    ereq *q = send_range(t, 5000);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    wait_end(t, q);
    wait_end(t, w);
    assert_failed(q, REIGN_ECONNLOSS, "without a gRPC status");
    assert_failed(w, REIGN_ECONNLOSS, "without a gRPC status");
    assert_string_equal(w->resp.data, LINE1); /* what came was handed out */
    assert_eh(q, REIGN_ECONNLOSS, "");
    drop(t, q);
    drop(t, w);
    hf_stop_checked(&t->srv);
}

static void s_rst(h2fake *f)
{
    hf_take(f, 1);
    hf_head(f, 0);
    hf_rst(f, 0, NGHTTP2_INTERNAL_ERROR);
    hf_calls(f, 2);
    hf_rst(f, 1, NGHTTP2_REFUSED_STREAM);
    hf_calls(f, 3);
    answer_range(f, 2, 1);
    hf_await(f);
}

/* The member resets a call (after its HEADERS, or before any): no answer, and the connection
 * serves the next one. */
static void test_member_rst(void **state)
{
    h2t *t = started(state, s_rst);
    ereq *q = send_range(t, 5000);
    ends_failed(t, q, REIGN_ECONNLOSS, "(INTERNAL_ERROR)");
    drop(t, q);
    q = send_range(t, 5000);
    ends_failed(t, q, REIGN_ECONNLOSS, "(REFUSED_STREAM)");
    drop(t, q);
    range_answered(t, ANSWER);
    hf_stop_accepted(&t->srv, 1);
}

/* Call 0 answered with the bytes f->arg points to; then the client's reset. */
typedef struct bytes {
    const uint8_t *p;
    size_t n;
} bytes;

static void s_bad_message(h2fake *f)
{
    const bytes *m = f->arg;
    hf_take(f, 1);
    hf_head(f, 0);
    hf_data(f, 0, m->p, m->n, false);
    hf_until(f, HF_RST, 0);
    hf_say(f);
    hf_await(f);
}

/* An answer that is no gRPC message, or no protobuf: the call fails, and its stream is reset
 * (CANCEL) at once rather than read to its end. */
static void bad_message(void **state, const uint8_t *p, size_t n)
{
    h2t *t = *state;
    bytes m = {p, n};
    assert_int_equal(hf_start(&t->srv, s_bad_message, &m), 0);
    ereq *q = send_range(t, 5000);
    ends_failed(t, q, REIGN_ECONNLOSS, "not a gRPC answer");
    assert_int_equal(q->resp.len, 0);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    drop(t, q);
    hf_stop_checked(&t->srv);
    assert_int_equal(t->srv.reqs[0].rst, NGHTTP2_CANCEL);
}

static void test_compressed(void **state)
{
    /* the compressed flag set (no compression was asked for) */
    static const uint8_t msg[] = {1, 0, 0, 0, 2, 0x20, 0x01};
    bad_message(state, msg, sizeof(msg));
}

static void test_not_protobuf(void **state)
{
    /* field 1, a message of 127 bytes, of which one came */
    static const uint8_t msg[] = {0, 0, 0, 0, 3, 0x0a, 0x7f, 'x'};
    bad_message(state, msg, sizeof(msg));
}

static void s_not_http2(h2fake *f)
{
    hf_accept_as(f, 0, true);
    hf_calls(f, 1);
    /* what an HTTP/1.1 server writes to the preface; and it keeps the connection */
    static const char text[] =
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n";
    hf_raw(f, 0, text, strlen(text));
    hf_until(f, HF_GOAWAY, 0);
    hf_say(f);
    hf_await(f);
}

/* A member that answers something that is not HTTP/2 at all: the client gives the connection
 * up (libnghttp2 sends a GOAWAY), and the calls on it end then, not at their deadlines (a
 * watch has none). */
static void test_not_http2(void **state)
{
    h2t *t = started(state, s_not_http2);
    ereq *q = send_range(t, 0);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    /* The client's GOAWAY (or its close) went out as it read the bytes: whatever it does with
     * the call, it did then. */
    assert_int_equal(times_ended(t, q), 1);
    assert_int_equal(q->fail, REIGN_ECONNLOSS);
    assert_null(t->e->h2all); /* and the next call goes on a new connection */
    drop(t, q);
    hf_stop_checked(&t->srv);
}

static void s_protocol_error(h2fake *f)
{
    /* DATA on stream 0, which HTTP/2 forbids: a connection error */
    static const char bad[] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 'x'};
    hf_take(f, 1);
    answer_watch(f, 0, false);
    hf_raw(f, 0, bad, sizeof(bad));
    hf_until(f, HF_GOAWAY, 0);
    hf_say(f);
    hf_await(f);
}

/* The same on a connection that worked, with a watch on it: the watch (no deadline) ends when
 * the client gives the connection up, rather than waiting for events that cannot come. */
static void test_protocol_error(void **state)
{
    h2t *t = started(state, s_protocol_error);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    assert_string_equal(w->resp.data, LINE1);
    assert_int_equal(times_ended(t, w), 1);
    assert_int_equal(w->fail, REIGN_ECONNLOSS);
    assert_null(t->e->h2all);
    drop(t, w);
    hf_stop_checked(&t->srv);
}

/* ---- the connection ------------------------------------------------------------------------ */

static void s_goaway(h2fake *f)
{
    hf_take(f, 2);
    hf_goaway(f, 0, f->reqs[0].id); /* took the first call, not the second */
    hf_say(f);
    hf_take(f, 3);
    answer_range(f, 2, 3);
    answer_range(f, 0, 1);
    hf_until(f, HF_EOF, 0); /* the client closes the drained connection */
    hf_say(f);
    hf_calls(f, 4);
    answer_range(f, 3, 4);
    hf_await(f);
}

/* A GOAWAY: the call it took still gets its answer; the one it did not fails at once (to be sent
 * again), and later calls go on a new connection; the old one closes with its last call. */
static void test_goaway(void **state)
{
    h2t *t = started(state, s_goaway);
    ereq *a = send_range(t, 5000);
    ereq *b = send_range(t, 5000);
    ends_failed(t, b, REIGN_ECONNLOSS, "(REFUSED_STREAM)");
    assert_int_equal(times_ended(t, a), 0);
    ereq *c = send_range(t, 5000);
    wait_end(t, c);
    assert_answer(c, range_json(3));
    wait_end(t, a);
    assert_answer(a, ANSWER);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 2);
    range_answered(t, range_json(4));
    hf_stop_accepted(&t->srv, 2);
    h2fake *f = &t->srv;
    assert_int_equal(f->reqs[1].conn, 0);
    assert_int_equal(f->reqs[2].conn, 1);
    assert_int_equal(f->reqs[3].conn, 1);
    drop(t, a);
    drop(t, b);
    drop(t, c);
}

static void s_cut(h2fake *f)
{
    size_t n;
    uint8_t *b = range_framed(1, &n);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    hf_take(f, 2);
    hf_head(f, 0);
    hf_data(f, 0, b, 7, false); /* the prefix and 2 bytes of the message */
    free(b);
    hf_close(f, 0);
    hf_say(f);
    hf_take(f, 3);
    answer_range(f, 2, 1);
    hf_await(f);
}

/* The member closes the connection in the middle of an answer: every call on it fails, and the
 * next one goes on a new connection. */
static void test_closed_mid_answer(void **state)
{
    h2t *t = started(state, s_cut);
    ereq *a = send_range(t, 5000);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    wait_end(t, a);
    wait_end(t, w);
    assert_failed(a, REIGN_ECONNLOSS, "connection closed by the member");
    assert_failed(w, REIGN_ECONNLOSS, "connection closed by the member");
    assert_eh(a, REIGN_ECONNLOSS, "");
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    range_answered(t, ANSWER);
    hf_stop_accepted(&t->srv, 2);
    drop(t, a);
    drop(t, w);
}

static void s_unanswered(h2fake *f)
{
    hf_accept_as(f, 0, true);
    hf_calls(f, 1);
    hf_close(f, 0);
    hf_await(f);
}

/* The member reads the call and closes the connection without a byte, as a member whose client
 * port speaks TLS only does with a plain connection: the failure says etcds://. */
static void test_closed_unanswered(void **state)
{
    h2t *t = started(state, s_unanswered);
    ereq *q = send_range(t, 5000);
    ends_failed(t, q, REIGN_ECONNLOSS, "connection closed without an answer");
    assert_has(q->why, "etcds://");
    assert_eh(q, REIGN_ECONNLOSS, "etcds://");
    drop(t, q);
    hf_stop_checked(&t->srv);
}

static void s_idle_closed(h2fake *f)
{
    hf_take(f, 1);
    answer_range(f, 0, 1);
    hf_close(f, 0);
    hf_say(f);
    hf_take(f, 2);
    answer_range(f, 1, 2);
    hf_await(f);
}

/* The member closes the connection while no call is on it: the client lets it go, and the next
 * call goes on a new one. */
static void test_idle_closed(void **state)
{
    h2t *t = started(state, s_idle_closed);
    range_answered(t, ANSWER);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    assert_null(t->e->h2conns[M_A]);
    assert_null(t->e->h2all);
    range_answered(t, range_json(2));
    hf_stop_accepted(&t->srv, 2);
}

static void test_refused(void **state)
{
    h2t *t = *state;
    ereq *q = send_to(t, M_REFUSED, "/v3/kv/range", RANGE, 5000, false);
    ends_failed(t, q, REIGN_ECONNLOSS, "connect: ");
    assert_has(q->why, "refused");
    drop(t, q);
    /* A member that is no http://host:port ends at once. */
    q = send_to(t, M_BAD, "/v3/kv/range", RANGE, 5000, false);
    assert_true(q->finished);
    ends_failed(t, q, REIGN_ECONNLOSS, "not http://host:port");
    drop(t, q);
    /* A path with no gRPC method behind it: a bug of reign's, not the member's. */
    q = send_to(t, M_A, "/v3/kv/compaction", "{}", 5000, false);
    assert_true(q->finished);
    ends_failed(t, q, REIGN_EBACKEND, "no gRPC method for /v3/kv/compaction");
    drop(t, q);
    assert_null(t->e->h2all);
}

/* A member whose backlog is full never completes the connection: the connect's own deadline
 * (2 s), or the request's when it is earlier. */
static void test_connect_timeout(void **state)
{
    h2t *t = *state;
    int64_t start = reign__now_ns();
    ereq *slow = send_to(t, M_FULL, "/v3/kv/range", RANGE, 0, false);
    ereq *fast = send_to(t, M_FULL, "/v3/kv/range", RANGE, 300, false);
    ends_failed(t, fast, REIGN_ETIMEDOUT, "no answer within 300 ms");
    /* no ping on a connection not made yet: the connect keeps its deadline */
    assert_true(reign__timers_next(&t->timers) >= start + 2000 * REIGN__NS_PER_MS);
    ends_failed(t, slow, REIGN_ECONNLOSS, "connect: timed out");
    assert_null(t->e->h2all);
    drop(t, slow);
    drop(t, fast);
}

/* ---- deadlines, drops ---------------------------------------------------------------------- */

static void s_timeout(h2fake *f)
{
    hf_take(f, 1);
    hf_until(f, HF_RST, 0);
    hf_say(f);
    hf_calls(f, 2);
    answer_range(f, 1, 1);
    hf_await(f);
}

/* No answer in time: ETIMEDOUT, the stream reset (CANCEL), the connection kept for the next. */
static void test_timeout(void **state)
{
    h2t *t = started(state, s_timeout);
    ereq *q = send_range(t, 300);
    ends_failed(t, q, REIGN_ETIMEDOUT, "no answer within 300 ms");
    assert_true(t->wakes >= 1); /* ended on a timer: the loop was woken */
    assert_eh(q, REIGN_ETIMEDOUT, "");
    drop(t, q);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1);
    range_answered(t, ANSWER);
    hf_stop_checked(&t->srv);
    h2fake *f = &t->srv;
    assert_int_equal(f->reqs[0].rst, NGHTTP2_CANCEL);
    assert_int_equal(atomic_load(&f->accepts), 1);
    assert_int_equal(f->reqs[1].conn, 0);
}

/* A watch, then a call left unanswered: the member answers the client's PING (f->arg), or goes
 * deaf. */
static void s_ping(h2fake *f)
{
    hf_take(f, 1);
    answer_watch(f, 0, false);
    hf_say(f);
    hf_calls(f, 2);
    if (f->arg) {
        hf_until(f, HF_PING, 0);  /* its session ACKs the ping ... */
        answer_watch(f, 0, true); /* ... then the watch's events */
        hf_say(f);
    } else {
        hf_deaf(f, 0);
        hf_say(f);
        hf_accept(f);
    }
    hf_calls(f, 3);
    answer_range(f, 2, 1);
    hf_await(f);
}

/* The call (300 ms) sent once the connection is quiet, with a watch on it (no deadline). */
static ereq *ping_call(h2t *t, bool answers, ereq **w)
{
    assert_int_equal(hf_start(&t->srv, s_ping, answers ? t : NULL), 0);
    *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1 && (*w)->resp.len == strlen(LINE1));
    return send_range(t, 300);
}

/* A call times out with nothing at all from the member since it went: the client pings, and
 * with no ACK within PING_MS it gives the connection up (a member stopped, or cut off), with
 * every call on it; the next call goes on a new one. */
static void test_ping_unanswered(void **state)
{
    h2t *t = *state;
    t->timers_off = true; /* the member deaf before the call's deadline may pass */
    ereq *w, *q = ping_call(t, false, &w);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 2);
    t->timers_off = false;
    ends_failed(t, q, REIGN_ETIMEDOUT, "no answer within 300 ms");
    assert_int_equal(times_ended(t, w), 0); /* the ping's deadline is later */
    ends_failed(t, w, REIGN_ECONNLOSS, "no answer to a ping");
    assert_string_equal(w->resp.data, LINE1);
    assert_null(t->e->h2conns[M_A]);
    range_answered(t, ANSWER);
    hf_stop_accepted(&t->srv, 2);
    assert_int_equal(t->srv.reqs[2].conn, 1);
    drop(t, q);
    drop(t, w);
}

/* The same with a member that ACKs the ping but answers no call: the connection stays, with its
 * watch, past the ping's deadline, and serves the next call. */
static void test_ping_answered(void **state)
{
    h2t *t = *state;
    ereq *w, *q = ping_call(t, true, &w);
    ends_failed(t, q, REIGN_ETIMEDOUT, "no answer within 300 ms");
    /* the ping's deadline, the one timer left (kept from firing until the ACK is read) */
    t->timers_off = true;
    int64_t due = reign__timers_next(&t->timers);
    assert_true(due >= q->sent_ns + 1300 * REIGN__NS_PER_MS);
    PUMP_UNTIL(t, w->resp.len == strlen(LINE1 LINE2 LINE3 LINE4)); /* sent after the ACK */
    assert_int_equal(reign__timers_next(&t->timers), -1);
    t->timers_off = false;
    PUMP_UNTIL(t, reign__now_ns() > due);
    range_answered(t, ANSWER); /* its timers ran past the deadline */
    assert_int_equal(times_ended(t, w), 0);
    hf_stop_accepted(&t->srv, 1);
    h2fake *f = &t->srv;
    assert_int_equal(f->conns[0].pings, 1);
    assert_int_equal(f->reqs[1].rst, NGHTTP2_CANCEL);
    assert_int_equal(f->reqs[2].conn, 0);
    drop(t, q);
    drop(t, w);
}

static void s_drop(h2fake *f)
{
    hf_take(f, 2);
    answer_watch(f, 1, false);
    hf_say(f);
    hf_until(f, HF_RST, 0);
    hf_until(f, HF_RST, 1);
    hf_say(f);
    hf_calls(f, 3);
    answer_range(f, 2, 1);
    hf_await(f);
}

/* reign__eh_drop() of calls that are out (one waiting, a stream with a line): their streams
 * reset (CANCEL), nothing ends, the connection serves the next call. */
static void test_drop(void **state)
{
    h2t *t = started(state, s_drop);
    t->timers_off = true;
    ereq *q = send_range(t, 5000);
    ereq *w = send_to(t, M_A, "/v3/watch", WATCH, 0, true);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 1 && w->resp.len == strlen(LINE1));
    drop(t, q);
    drop(t, w);
    PUMP_UNTIL(t, hf_stage(&t->srv) == 2);
    t->timers_off = false;
    assert_int_equal(t->n_ended, 0);
    assert_null(t->e->with_data);
    q = send_range(t, 5000);
    wait_end(t, q);
    assert_answer(q, ANSWER);
    assert_int_equal(t->n_ended, 1);
    drop(t, q);
    hf_stop_checked(&t->srv);
    h2fake *f = &t->srv;
    assert_int_equal(f->reqs[0].rst, NGHTTP2_CANCEL);
    assert_int_equal(f->reqs[1].rst, NGHTTP2_CANCEL);
    assert_int_equal(atomic_load(&f->accepts), 1);
}

/* ---- many calls, large answers ------------------------------------------------------------- */

#define MANY 200

static void s_many(h2fake *f)
{
    hf_accept(f);
    for (int i = 0; i < MANY && !f->dead; i++) {
        hf_calls(f, i + 1);
        /* answered with the number its key names: each answer is its own call's */
        const hf_req *r = &f->reqs[i];
        Etcdserverpb__RangeRequest *rr =
            r->body_len > 5
                ? etcdserverpb__range_request__unpack(NULL, r->body_len - 5, r->body + 5)
                : NULL;
        if (!rr || rr->key.len < 4 || rr->key.len > 8) {
            hf_trouble(f, "call %d is no range of /k/N", i);
        } else {
            char num[8] = {0};
            memcpy(num, rr->key.data + 3, rr->key.len - 3);
            answer_range(f, i, atoi(num) + 1);
        }
        if (rr)
            etcdserverpb__range_request__free_unpacked(rr, NULL);
    }
    hf_await(f);
}

/* 200 calls at once on one connection (more than the 100 libnghttp2 sends before the member's
 * SETTINGS): every one answered, each with its own answer (call i counts i + 1: a count of 0
 * is left out of the JSON). */
static void test_many(void **state)
{
    h2t *t = started(state, s_many);
    ereq *q[MANY];
    for (int i = 0; i < MANY; i++) {
        char key[16];
        snprintf(key, sizeof(key), "/k/%d", i);
        reign__buf b;
        reign__buf_init(&b);
        reign__buf_puts(&b, "{\"key\":");
        reign__ej_b64(&b, key, strlen(key));
        reign__buf_puts(&b, "}");
        assert_false(b.oom);
        q[i] = send_to(t, M_A, "/v3/kv/range", b.data, 15000, false);
        reign__buf_free(&b);
    }
    PUMP_UNTIL(t, t->n_ended == MANY);
    for (int i = 0; i < MANY; i++) {
        assert_int_equal(times_ended(t, q[i]), 1);
        assert_answer(q[i], range_json(i + 1));
    }
    hf_stop_accepted(&t->srv, 1);
    assert_int_equal(t->srv.n_reqs, MANY);
    for (int i = 0; i < MANY; i++)
        drop(t, q[i]);
}

#define BIG (8u << 20)

static uint8_t big_byte(size_t i)
{
    return (uint8_t)(i * 131 + (i >> 12));
}

static void s_large(h2fake *f)
{
    hf_take(f, 1);
    uint8_t *v = malloc(BIG);
    if (!v)
        return (void)hf_trouble(f, "no memory");
    for (size_t i = 0; i < BIG; i++)
        v[i] = big_byte(i);
    answer_value(f, 0, v, BIG);
    free(v);
    hf_await(f);
}

/* An answer of 8 MB, twice a stream's window: read whole, the client opening its windows as it
 * reads (flow control). */
static void test_large(void **state)
{
    h2t *t = started(state, s_large);
    ereq *q = send_range(t, 0);
    wait_end(t, q);
    if (q->fail)
        fail_msg("failed (%d): %s", q->fail, q->why);
    int rc;
    char msg[256];
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    assert_non_null(root);
    assert_int_equal(rc, 0);
    const cJSON *kv = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "kvs"), 0);
    size_t len;
    char *v = reign__ej_bytes(kv, "value", &len);
    assert_non_null(v);
    assert_int_equal(len, BIG);
    size_t bad = 0;
    for (size_t i = 0; i < BIG; i++)
        bad += (uint8_t)v[i] != big_byte(i);
    assert_int_equal(bad, 0);
    reign__free(v);
    cJSON_Delete(root);
    drop(t, q);
    hf_stop_checked(&t->srv);
    assert_true(t->srv.conns[0].stream_window_inc >= BIG - (1u << 22));
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_unary),
        T(test_token),
        T(test_split),
        T(test_stream_lines),
        T(test_grpc_errors),
        T(test_stream_error),
        T(test_trailers_only),
        T(test_http_status),
        T(test_http_status_body),
        T(test_no_grpc_status),
        T(test_member_rst),
        T(test_compressed),
        T(test_not_protobuf),
        T(test_not_http2),
        T(test_protocol_error),
        T(test_goaway),
        T(test_closed_mid_answer),
        T(test_closed_unanswered),
        T(test_idle_closed),
        T(test_refused),
        T(test_connect_timeout),
        T(test_timeout),
        T(test_ping_unanswered),
        T(test_ping_answered),
        T(test_drop),
        T(test_many),
        T(test_large),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
