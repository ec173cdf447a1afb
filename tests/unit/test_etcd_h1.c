/*
 * test_etcd_h1.c - reign's own HTTP/1.1 client (src/etcd/etcd_h1.c), with no etcd: its members
 * are loopback listeners (fake_member.h) whose scripts, each on a thread, play what a member
 * may do (answer by length or chunked, keep the connection or close it while idle, answer half,
 * answer nonsense, say nothing, send "100 Continue" or not).  The test drives the transport as
 * etcd_http.c's pump does: epoll, the client's timers, the ended requests.
 *
 * No timed assertion.  A script and the test wait for each other (an eventfd one way, a pipe the
 * other), and a test that must show what happens before a timer fires keeps the timers from
 * running meanwhile.  The one check on the clock is a lower bound (a stream's body waits a
 * second for "100 Continue"), which a slow machine cannot break.  A wait that lasts GUARD_MS is
 * a stuck test: it fails instead of hanging.
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

#include "etcd/etcd_internal.h"
#include "fake_member.h"
#include "oom.h"

#define ENDED 64
#define MINE  64

/* ---- the client, driven as etcd_http.c drives it ------------------------------------------- */

/* The members: two fake ones, a port that refuses, a member that is no URL, a full backlog. */
enum { M_A, M_B, M_REFUSED, M_BAD, M_FULL, N_MEMBERS };

typedef struct h1t {
    reign__etcd *e;
    reign__timers timers;
    fake srv[2];
    int refused_fd, full_fd, filler_fd;
    bool timers_off; /* the test looks at what happens before a timer may fire */
    ereq *ended[ENDED];
    size_t n_ended;
    uint64_t wakes; /* what the transport wrote to the wake eventfd */
    ereq *mine[MINE];
    char token[32];
} h1t;

static int loopback_socket(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_true(fd >= 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

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
    char err[256];
    if (reign__h1_load(err, sizeof(err)) != 0) {
        print_error("%s\n", err);
        return -1;
    }
    h1t *t = calloc(1, sizeof(*t));
    assert_non_null(t);
    fake_init(&t->srv[0]);
    fake_init(&t->srv[1]);
    int refused_port, full_port;
    t->refused_fd = loopback_socket(&refused_port); /* bound, never listening */
    /* A backlog of 0 with one connection in it: the kernel drops the next SYNs. */
    t->full_fd = loopback_socket(&full_port);
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
    e->h1 = true;
    e->n_members = N_MEMBERS;
    e->members = reign__calloc(N_MEMBERS, sizeof(*e->members));
    e->addrs = reign__calloc(N_MEMBERS, sizeof(*e->addrs));
    assert_true(e->members && e->addrs);
    e->members[M_A] = member_of(t->srv[0].port);
    e->members[M_B] = member_of(t->srv[1].port);
    e->members[M_REFUSED] = member_of(refused_port);
    e->members[M_BAD] = reign__strdup("http://127.0.0.1"); /* no port */
    e->members[M_FULL] = member_of(full_port);
    t->e = e;
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    h1t *t = *state;
    reign__etcd *e = t->e;
    g_fail_at = -1; /* an out-of-memory loop that failed half-way */
    reign_set_allocator(NULL, NULL, NULL);
    fake_end(&t->srv[0]);
    fake_end(&t->srv[1]);
    for (size_t i = 0; i < MINE; i++)
        reign__eh_drop(t->mine[i]);
    reign__h1_free(e);
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

static void drain(int fd, uint64_t *count)
{
    uint64_t n;
    if (read(fd, &n, sizeof(n)) == sizeof(n) && count)
        *count += n;
}

/* One turn of the loop: what epoll says, the timers due, the requests that ended. */
static void pump(h1t *t)
{
    reign__etcd *e = t->e;
    int ms = 1000;
    int64_t next = t->timers_off ? -1 : reign__timers_next(&t->timers);
    if (next >= 0) {
        int64_t left = (next - reign__now_ns()) / REIGN__NS_PER_MS + 1;
        ms = left < 0 ? 0 : left < ms ? (int)left : ms;
    }
    struct pollfd p[4] = {{.fd = e->epfd, .events = POLLIN},
                          {.fd = t->srv[0].said, .events = POLLIN},
                          {.fd = t->srv[1].said, .events = POLLIN},
                          {.fd = e->cfg.wake_fd, .events = POLLIN}};
    poll(p, 4, ms);
    struct epoll_event ev[16];
    int n = epoll_wait(e->epfd, ev, 16, 0);
    for (int i = 0; i < n; i++)
        reign__h1_event(e, ev[i].data.ptr, ev[i].events);
    if (!t->timers_off)
        reign__timers_run(&t->timers, reign__now_ns());
    for (ereq *q; (q = reign__h1_take_done(e));) {
        assert_true(t->n_ended < ENDED);
        t->ended[t->n_ended++] = q;
    }
    drain(t->srv[0].said, NULL);
    drain(t->srv[1].said, NULL);
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

/* Waits for a script's stage without turning the loop: the client notices nothing meanwhile. */
static void await_stage(fake *f, int n)
{
    int64_t guard = reign__now_ns() + GUARD_MS * REIGN__NS_PER_MS;
    while (stage(f) < n) {
        if (reign__now_ns() > guard)
            fail_msg("stuck waiting for stage %d", n);
        struct pollfd p = {.fd = f->said, .events = POLLIN};
        poll(&p, 1, 1000);
        drain(f->said, NULL);
    }
}

static size_t times_ended(const h1t *t, const ereq *q)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n_ended; i++)
        n += t->ended[i] == q;
    return n;
}

/* A request to member m, not sent yet. */
static ereq *make(h1t *t, size_t m, const char *body, int timeout_ms, bool stream)
{
    ereq *q = reign__eh_new(t->e, NULL, NULL);
    assert_non_null(q);
    assert_int_equal(reign__buf_puts(&q->body, body), 0);
    q->path = stream ? "/v3/watch" : "/v3/kv/range";
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

static ereq *send_to(h1t *t, size_t m, const char *body, int timeout_ms, bool stream)
{
    ereq *q = make(t, m, body, timeout_ms, stream);
    assert_int_equal(reign__h1_send(t->e, q), 0);
    return q;
}

/* Frees q, which ended at most once, and forgets it. */
static void drop(h1t *t, ereq *q)
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

/* Until q ends; it ends once, off its connection. */
static void wait_end(h1t *t, ereq *q)
{
    PUMP_UNTIL(t, times_ended(t, q) > 0);
    assert_int_equal(times_ended(t, q), 1);
    assert_null(q->c);
    assert_false(q->finished);
}

static void assert_answer(const ereq *q, long status, const char *body)
{
    if (q->fail)
        fail_msg("failed (%d): %s", q->fail, q->why);
    assert_int_equal(q->status, status);
    assert_int_equal(q->resp.len, strlen(body));
    assert_string_equal(q->resp.data ? q->resp.data : "", body);
}

static void assert_failed(const ereq *q, int fail, const char *why_start)
{
    assert_int_equal(q->fail, fail);
    if (strncmp(q->why, why_start, strlen(why_start)))
        fail_msg("why is \"%s\", want \"%s...\"", q->why, why_start);
}

static void assert_has(const char *text, const char *part)
{
    if (!strstr(text, part))
        fail_msg("\"%s\" not in:\n%s", part, text);
}

/* The fake's request i: its head and its body. */
static void assert_request(fake *f, int i, const char *line, const char *body)
{
    assert_true(atomic_load(&f->n_reqs) > i);
    const char *r = f->reqs[i];
    if (strncmp(r, line, strlen(line)))
        fail_msg("request starts \"%.40s\", want \"%s\"", r, line);
    char host[64], length[64];
    snprintf(host, sizeof(host), "\r\nHost: 127.0.0.1:%d\r\n", f->port);
    snprintf(length, sizeof(length), "\r\nContent-Length: %zu\r\n", strlen(body));
    assert_has(r, host);
    assert_has(r, "\r\nContent-Type: application/json\r\n");
    assert_has(r, length);
    assert_string_equal(r + f->head_len[i], body);
}

static void assert_no_trouble(h1t *t)
{
    for (int i = 0; i < 2; i++)
        if (t->srv[i].trouble[0])
            fail_msg("fake member %d: %s", i, t->srv[i].trouble);
}

/* ---- answers ------------------------------------------------------------------------------- */

#define RANGE  "{\"key\":\"L3IvcmVpZ24=\",\"range_end\":\"L3IvcmVpZ28=\"}"
#define ANSWER "{\"header\":{\"revision\":\"7\"},\"count\":\"1\"}"

static void test_content_length(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, OK(ANSWER), AWAIT, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, RANGE, 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, ANSWER);
    assert_string_equal(q->why, "");
    assert_request(&t->srv[0], 0, "POST /v3/kv/range HTTP/1.1\r\n", RANGE);
    assert_null(strstr(t->srv[0].reqs[0], "Expect:"));
    assert_null(strstr(t->srv[0].reqs[0], "Authorization:"));
    assert_int_equal(t->e->n_idle, 1); /* kept open */
    drop(t, q);
    assert_no_trouble(t);
}

/* Chunked, in pieces cut inside a chunk and inside a chunk's size line. */
static void test_chunked(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"),
        AWAIT,
        SEND("lo\r\n6\r\n wor"),
        AWAIT,
        SEND("ld\r"),
        AWAIT,
        SEND("\n0\r\n\r\n"),
        AWAIT,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    PUMP_UNTIL(t, q->resp.len == 3);
    let_go(&t->srv[0]);
    PUMP_UNTIL(t, q->resp.len == 9);
    let_go(&t->srv[0]);
    PUMP_UNTIL(t, q->resp.len == 11);
    assert_int_equal(t->n_ended, 0); /* the last chunk has not come */
    let_go(&t->srv[0]);
    wait_end(t, q);
    assert_answer(q, 200, "hello world");
    assert_int_equal(t->e->n_idle, 1);
    drop(t, q);
    assert_no_trouble(t);
}

/* What else a member answers: an interim 100, an error status, no length, Connection: close. */
static void test_answers(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        SEND("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
        READ,
        SEND("HTTP/1.1 404 Not Found\r\nContent-Length: 19\r\n\r\n404 page not found\n"),
        READ,
        SEND("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\n{\"a\""),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n[]"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"eof\":1}"),
        CLOSE,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "{}"); /* the 100 is not the answer */
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 404, "404 page not found\n"); /* an answer, not a failure */
    assert_int_equal(t->e->n_idle, 1);
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "{\"a\"");
    assert_int_equal(t->e->n_idle, 0); /* Connection: close */
    PUMP_UNTIL(t, atomic_load(&t->srv[0].eofs) == 1);
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "[]");
    assert_int_equal(t->e->n_idle, 0); /* HTTP/1.0, no keep-alive */
    PUMP_UNTIL(t, atomic_load(&t->srv[0].eofs) == 2);
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "{\"eof\":1}"); /* its end is the connection's */
    assert_int_equal(t->e->n_idle, 0);
    drop(t, q);
    assert_int_equal(atomic_load(&t->srv[0].accepts), 3);
    assert_no_trouble(t);
}

/* ---- kept-open connections ----------------------------------------------------------------- */

static void test_reuse(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, OK("{\"n\":1}"), READ, OK("{\"n\":2}"), AWAIT, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q1 = send_to(t, M_A, "{\"r\":1}", 5000, false);
    wait_end(t, q1);
    assert_answer(q1, 200, "{\"n\":1}");
    ereq *q2 = send_to(t, M_A, "{\"r\":2}", 5000, false);
    wait_end(t, q2);
    assert_answer(q2, 200, "{\"n\":2}");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 1);
    assert_request(&t->srv[0], 0, "POST /v3/kv/range HTTP/1.1\r\n", "{\"r\":1}");
    assert_request(&t->srv[0], 1, "POST /v3/kv/range HTTP/1.1\r\n", "{\"r\":2}");
    assert_int_equal(t->e->n_idle, 1);
    drop(t, q1);
    drop(t, q2);
    assert_no_trouble(t);
}

/* Each member its own connections. */
static void test_members(void **state)
{
    h1t *t = *state;
    static const step a[] = {ACCEPT, READ, OK("\"a\""), AWAIT, END};
    static const step b[] = {ACCEPT, READ, OK("\"b\""), READ, OK("\"b2\""), AWAIT, END};
    fake_start(&t->srv[0], run_steps, a);
    fake_start(&t->srv[1], run_steps, b);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "\"a\"");
    drop(t, q);
    q = send_to(t, M_B, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "\"b\"");
    drop(t, q);
    assert_int_equal(t->e->n_idle, 2);
    q = send_to(t, M_B, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "\"b2\"");
    drop(t, q);
    assert_int_equal(atomic_load(&t->srv[0].accepts), 1);
    assert_int_equal(atomic_load(&t->srv[1].accepts), 1);
    assert_no_trouble(t);
}

/* The member closes a kept-open connection, and the client sees it: the next request goes on a
 * new one. */
static void test_idle_closed(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, OK("1"), CLOSE, SAY,
                                 ACCEPT, READ, OK("2"), AWAIT, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "1");
    drop(t, q);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1 && t->e->n_idle == 0);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "2");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 2);
    assert_int_equal(t->e->n_idle, 1);
    drop(t, q);
    assert_no_trouble(t);
}

/* The member closes a kept-open connection before the client notices: the request sent on it
 * gets no byte back, and goes once more on a new connection. */
static void test_retry(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, OK("1"), AWAIT, CLOSE, SAY,
                                 ACCEPT, READ, OK("2"), AWAIT, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "1");
    drop(t, q);
    let_go(&t->srv[0]);
    await_stage(&t->srv[0], 1);
    assert_int_equal(t->e->n_idle, 1); /* still kept: the client has not looked */
    q = send_to(t, M_A, "{\"again\":1}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "2");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 2);
    assert_int_equal(atomic_load(&t->srv[0].n_reqs), 2);
    assert_request(&t->srv[0], 1, "POST /v3/kv/range HTTP/1.1\r\n", "{\"again\":1}");
    assert_int_equal(t->e->n_idle, 1);
    drop(t, q);
    assert_no_trouble(t);
}

/* Once more, not twice: a new connection closed before an answer ends the request. */
static void test_retry_once(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ,   OK("1"), AWAIT, CLOSE,
                                 SAY,    ACCEPT, READ,    CLOSE, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    drop(t, q);
    let_go(&t->srv[0]);
    await_stage(&t->srv[0], 1);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "connection closed without an answer");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 2);
    assert_int_equal(t->e->n_idle, 0);
    drop(t, q);
    assert_no_trouble(t);
}

/* At most IDLE_MAX (48) connections kept with no request; the others close. */
static void serve_fifty(fake *f)
{
    static const step accept = ACCEPT;
    char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n1";
    for (int i = 0; i < 50; i++)
        if (!do_step(f, &accept))
            return;
    for (int i = 0; i < 50; i++) {
        f->cur = f->fds[i];
        f->in_len = 0;
        f->n_reqs = 0;
        if (!read_head(f) || !read_body(f) || !send_all(f, ok, strlen(ok)))
            return;
    }
    say(f);
    /* One more request, on one of the kept connections; the two closed ones read as ends. */
    for (;;) {
        struct pollfd p[MAX_FDS + 1];
        int n = 0;
        for (int i = 0; i < f->n_fds; i++)
            if (f->fds[i] >= 0)
                p[n++] = (struct pollfd){.fd = f->fds[i], .events = POLLIN};
        p[n++] = (struct pollfd){.fd = f->stop, .events = POLLIN};
        if (poll(p, (nfds_t)n, GUARD_MS) <= 0 || p[n - 1].revents)
            return;
        for (int i = 0; i < n - 1; i++) {
            char c;
            if (!p[i].revents)
                continue;
            if (recv(p[i].fd, &c, 1, MSG_PEEK) <= 0) {
                atomic_fetch_add(&f->eofs, 1);
                for (int j = 0; j < f->n_fds; j++)
                    if (f->fds[j] == p[i].fd)
                        f->fds[j] = -1;
                close(p[i].fd);
                continue;
            }
            f->cur = p[i].fd;
            f->in_len = 0;
            f->n_reqs = 0;
            if (read_head(f) && read_body(f) && send_all(f, ok, strlen(ok)))
                say(f);
            return;
        }
    }
}

static void test_idle_max(void **state)
{
    h1t *t = *state;
    fake_start(&t->srv[0], serve_fifty, NULL);
    ereq *q[51];
    for (int i = 0; i < 50; i++)
        q[i] = send_to(t, M_A, "{}", 10000, false);
    PUMP_UNTIL(t, t->n_ended == 50);
    for (int i = 0; i < 50; i++)
        assert_answer(q[i], 200, "1");
    assert_int_equal(t->e->n_idle, 48);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1);
    q[50] = send_to(t, M_A, "{}", 10000, false); /* on a kept one */
    wait_end(t, q[50]);
    assert_answer(q[50], 200, "1");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 50);
    assert_int_equal(t->e->n_idle, 48);
    for (int i = 0; i < 51; i++)
        drop(t, q[i]);
    assert_no_trouble(t);
}

/* Bytes that come on a kept connection with no request: it is not trusted any more. */
static void test_idle_noise(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT,  READ, OK("1"), AWAIT, SEND("HTTP/1.1 200 OK\r\n"),
                                 SEE_EOF, SAY,  END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_int_equal(t->e->n_idle, 1);
    let_go(&t->srv[0]);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1); /* the client closed it */
    assert_int_equal(t->e->n_idle, 0);
    assert_int_equal(t->n_ended, 1);
    drop(t, q);
    assert_no_trouble(t);
}

/* ---- failures ------------------------------------------------------------------------------ */

static void test_truncated(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{\"header\":"),
        CLOSE,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nContent-Len"),
        CLOSE,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"),
        CLOSE,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    for (int i = 0; i < 3; i++) {
        ereq *q = send_to(t, M_A, "{}", 5000, false);
        wait_end(t, q);
        assert_failed(q, REIGN_ECONNLOSS, "connection closed before the whole answer");
        assert_int_equal(t->e->n_idle, 0);
        drop(t, q);
    }
    assert_int_equal(atomic_load(&t->srv[0].accepts), 3);
    assert_no_trouble(t);
}

/* Half an answer on a kept connection: the member answered, so no second try. */
static void test_truncated_reused(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT, READ, OK("1"), READ, SEND("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab"),
        CLOSE,  END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "connection closed before the whole answer");
    assert_int_equal(atomic_load(&t->srv[0].accepts), 1);
    drop(t, q);
    assert_no_trouble(t);
}

static void test_garbage(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        SEND("SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u2\r\n"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
        SEE_EOF,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    for (int i = 0; i < 3; i++) {
        ereq *q = send_to(t, M_A, "{}", 5000, false);
        wait_end(t, q);
        assert_failed(q, REIGN_ECONNLOSS, "not an HTTP answer (HPE_");
        PUMP_UNTIL(t, atomic_load(&t->srv[0].eofs) == i + 1); /* closed, not kept */
        drop(t, q);
    }
    assert_int_equal(t->e->n_idle, 0);
    assert_no_trouble(t);
}

static void test_timeout(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, SEE_EOF, SAY, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 300, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ETIMEDOUT, "no answer within 300 ms");
    assert_true(t->wakes >= 1);            /* ended on a timer: the loop was woken */
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1); /* and the connection closed */
    assert_int_equal(t->e->n_idle, 0);
    drop(t, q);
    assert_no_trouble(t);
}

static void test_refused(void **state)
{
    h1t *t = *state;
    ereq *q = send_to(t, M_REFUSED, "{}", 5000, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "connect: ");
    assert_has(q->why, "refused");
    drop(t, q);
    /* A member that is no http://host:port ends at once. */
    q = send_to(t, M_BAD, "{}", 5000, false);
    assert_true(q->finished);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "not http://host:port");
    drop(t, q);
}

/* A member whose backlog is full never completes the connection: the connect's own deadline
 * (2 s), or the request's when it is earlier. */
static void test_connect_timeout(void **state)
{
    h1t *t = *state;
    ereq *slow = send_to(t, M_FULL, "{}", 0, false);
    ereq *fast = send_to(t, M_FULL, "{}", 300, false);
    wait_end(t, fast);
    assert_failed(fast, REIGN_ETIMEDOUT, "no answer within 300 ms");
    wait_end(t, slow);
    assert_failed(slow, REIGN_ECONNLOSS, "connect: timed out");
    drop(t, slow);
    drop(t, fast);
}

/* ---- watch streams ------------------------------------------------------------------------- */

#define WATCH "{\"create_request\":{\"key\":\"L3I=\",\"range_end\":\"L3M=\"}}"
#define LINE1 "{\"result\":{\"created\":true}}\n"
#define LINE2 "{\"result\":{\"events\":[]}}\n"

static void assert_stream_head(fake *f, int i)
{
    assert_request(f, i, "POST /v3/watch HTTP/1.1\r\n", WATCH);
    assert_has(f->reqs[i], "\r\nExpect: 100-continue\r\n");
    assert_has(f->reqs[i], "\r\nGrpc-Metadata-hasleader: true\r\n");
}

/* The body waits for "100 Continue" (the timers do not run meanwhile: no second passes for the
 * client), then lines come as chunks; a stream never takes a kept-open connection. */
static void test_stream(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        OK("{}"),
        ACCEPT,
        HEAD,
        SAY,
        AWAIT,
        EARLY,
        SEND("HTTP/1.1 100 Continue\r\n\r\n"),
        BODY,
        SEND("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
             "chunked\r\n\r\n1c\r\n" LINE1 "\r\n"),
        SAY,
        AWAIT,
        SEND("19\r\n" LINE2 "\r\n0\r\n\r\n"),
        SEE_EOF,
        SAY,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    ereq *op = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, op);
    assert_int_equal(t->e->n_idle, 1);

    t->timers_off = true;
    ereq *q = send_to(t, M_A, WATCH, 0, true);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1);
    let_go(&t->srv[0]);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 2 && q->resp.len == strlen(LINE1));
    assert_int_equal(t->srv[0].early, 0); /* no byte of the body before the 100 */
    assert_stream_head(&t->srv[0], 1);
    assert_string_equal(q->resp.data, LINE1);
    assert_ptr_equal(t->e->with_data, q);
    assert_true(q->got_data);
    assert_true(reign__eh_out(q));
    assert_int_equal(times_ended(t, q), 0);
    /* handed out, as etcd_http.c's pump does */
    t->e->with_data = NULL;
    q->got_data = false;
    t->timers_off = false;
    let_go(&t->srv[0]);
    wait_end(t, q);
    assert_answer(q, 200, LINE1 LINE2);
    assert_ptr_equal(t->e->with_data, q);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 3); /* its connection closed with it */
    assert_int_equal(atomic_load(&t->srv[0].accepts), 2);
    assert_int_equal(t->e->n_idle, 1); /* the operation's, still there */
    drop(t, op);
    drop(t, q);
    assert_no_trouble(t);
}

/* No "100 Continue": the body goes after a second anyway. */
static void test_stream_no_continue(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,  HEAD,  SAY,
        AWAIT,   EARLY, SAY,
        BODY,    SAY,   SEND("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"),
        SEE_EOF, END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    t->timers_off = true;
    int64_t sent = reign__now_ns();
    ereq *q = send_to(t, M_A, WATCH, 0, true);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1);
    let_go(&t->srv[0]);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 2);
    assert_int_equal(t->srv[0].early, 0);
    t->timers_off = false;
    wait_end(t, q);
    assert_answer(q, 200, "{}");
    assert_int_equal(stage(&t->srv[0]), 3);
    assert_stream_head(&t->srv[0], 0);
    /* A lower bound: the second counts from the connection, made after `sent`. */
    assert_true(t->srv[0].body_ns - sent >= 1000 * REIGN__NS_PER_MS);
    assert_true(t->wakes >= 1);
    drop(t, q);
    assert_no_trouble(t);
}

/* ---- withdrawn requests -------------------------------------------------------------------- */

static void test_withdraw(void **state)
{
    h1t *t = *state;
    static const step steps[] = {ACCEPT, READ, SAY, SEE_EOF, SAY, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 0, false);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 1);
    reign__h1_withdraw(t->e, q);
    assert_null(q->c);
    assert_false(q->finished);
    PUMP_UNTIL(t, stage(&t->srv[0]) == 2); /* its connection closed */
    assert_int_equal(t->n_ended, 0);
    assert_int_equal(t->e->n_idle, 0);
    drop(t, q);
    assert_no_trouble(t);
}

/* Ended requests not taken yet leave the list wherever they are in it. */
static void test_withdraw_ended(void **state)
{
    h1t *t = *state;
    reign__etcd *e = t->e;
    ereq *q[5];
    for (int i = 0; i < 4; i++) {
        q[i] = send_to(t, M_BAD, "{}", 0, false); /* each ends at once */
        assert_true(q[i]->finished);
    }
    reign__h1_withdraw(e, q[3]); /* the last */
    reign__h1_withdraw(e, q[1]); /* one inside */
    reign__h1_withdraw(e, q[0]); /* the first */
    for (int i = 0; i < 2; i++)
        assert_false(q[i]->finished);
    q[4] = send_to(t, M_BAD, "{}", 0, false);
    assert_ptr_equal(reign__h1_take_done(e), q[2]);
    assert_ptr_equal(reign__h1_take_done(e), q[4]);
    assert_null(reign__h1_take_done(e));
    assert_null(e->h1_done_tail);
    for (int i = 0; i < 5; i++)
        drop(t, q[i]);
}

/* ---- the token, the blocking POST ---------------------------------------------------------- */

static void test_token(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT, READ,     OK("{}"), ACCEPT, HEAD, SEND("HTTP/1.1 100 Continue\r\n\r\n"),
        BODY,   OK("{}"), AWAIT,    END};
    fake_start(&t->srv[0], run_steps, steps);
    snprintf(t->token, sizeof(t->token), "Authorization: tok");
    t->e->token_header = t->token;
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "{}");
    drop(t, q);
    q = send_to(t, M_A, WATCH, 0, true);
    wait_end(t, q);
    assert_answer(q, 200, "{}");
    drop(t, q);
    t->e->token_header = NULL;
    assert_has(t->srv[0].reqs[0], "\r\nAuthorization: tok\r\n");
    assert_has(t->srv[0].reqs[1], "\r\nAuthorization: tok\r\n");
    assert_stream_head(&t->srv[0], 1);
    assert_no_trouble(t);
}

static long post(h1t *t, size_t m, const char *header, int ms, reign__buf *out, char *why,
                 size_t whylen)
{
    const char *member = t->e->members[m];
    return reign__h1_post(member, strlen(member), "/v3/lease/revoke", "{\"ID\":\"42\"}", header,
                          reign__now_ns() + ms * REIGN__NS_PER_MS, out, why, whylen);
}

static void test_post(void **state)
{
    h1t *t = *state;
    static const step steps[] = {
        ACCEPT,
        READ,
        SEND("HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nhello"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
             "3\r\nabc\r\n0\r\n\r\n"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\n\r\n{\"x\":1}"),
        CLOSE,
        ACCEPT,
        READ,
        SEND("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc"),
        CLOSE,
        ACCEPT,
        READ,
        SEND("garbage\r\n"),
        SEE_EOF,
        ACCEPT,
        READ,
        SEE_EOF,
        END,
    };
    fake_start(&t->srv[0], run_steps, steps);
    reign__buf out;
    reign__buf_init(&out);
    char why[256];
    assert_int_equal(post(t, M_A, "Authorization: tok", 5000, &out, why, sizeof(why)), 201);
    assert_string_equal(out.data, "hello");
    assert_string_equal(why, "");
    fake *f = &t->srv[0];
    assert_request(f, 0, "POST /v3/lease/revoke HTTP/1.1\r\n", "{\"ID\":\"42\"}");
    assert_has(f->reqs[0], "\r\nConnection: close\r\n");
    assert_has(f->reqs[0], "\r\nAuthorization: tok\r\n");

    assert_int_equal(post(t, M_A, NULL, 5000, &out, why, sizeof(why)), 200);
    assert_string_equal(out.data, "abc"); /* out starts empty each time */
    assert_null(strstr(f->reqs[1], "Authorization"));
    assert_int_equal(post(t, M_A, NULL, 5000, NULL, why, sizeof(why)), 200);
    assert_string_equal(why, "");

    assert_int_equal(post(t, M_A, NULL, 5000, &out, why, sizeof(why)), 0);
    assert_has(why, t->e->members[M_A]);
    assert_has(why, "no whole answer");
    assert_int_equal(post(t, M_A, NULL, 5000, &out, why, sizeof(why)), 0);
    assert_has(why, "no whole answer");
    assert_int_equal(post(t, M_A, NULL, 300, &out, why, sizeof(why)), 0);
    assert_has(why, "no answer in time");
    assert_int_equal(atomic_load(&f->accepts), 6);

    assert_int_equal(post(t, M_REFUSED, NULL, 5000, &out, why, sizeof(why)), 0);
    assert_has(why, "connect: ");
    assert_has(why, "refused");
    assert_int_equal(post(t, M_BAD, NULL, 5000, &out, why, sizeof(why)), 0);
    assert_has(why, "not http://host:port");
    reign__buf_free(&out);
    assert_no_trouble(t);
}

/* Bytes past a whole answer are no part of it, and the connection that brought them is not kept
 * (as on a kept connection with no request: test_idle_noise); the blocking POST's answer is the
 * first one too. */
static void test_extra_answer(void **state)
{
    h1t *t = *state;
#define TWO                                                                                        \
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1 500 Oops\r\nContent-Length: "          \
    "3\r\n\r\nbad"
    static const step steps[] = {ACCEPT, READ,      SEND(TWO), SEE_EOF, ACCEPT,
                                 READ,   SEND(TWO), SEE_EOF,   END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_answer(q, 200, "{}");
    assert_int_equal(t->e->n_idle, 0);
    drop(t, q);
    reign__buf out;
    reign__buf_init(&out);
    char why[256];
    assert_int_equal(post(t, M_A, NULL, 5000, &out, why, sizeof(why)), 200);
    assert_string_equal(out.data, "{}");
    reign__buf_free(&out);
    assert_no_trouble(t);
}

/* ---- out of memory ------------------------------------------------------------------------- */

/* Every request answered on a connection of its own, until the test ends. */
static void serve_closing(fake *f)
{
    static const step steps[] = {ACCEPT, READ,
                                 SEND("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: "
                                      "11\r\n\r\n{\"count\":1}"),
                                 CLOSE};
    for (;;) {
        f->n_reqs = 0;
        for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
            if (!do_step(f, &steps[i]))
                return;
    }
}

static void test_oom(void **state)
{
    h1t *t = *state;
    fake_start(&t->srv[0], serve_closing, NULL);
    reign__timer warm; /* the timer heap grown before allocations may fail */
    reign__timer_init(&warm, NULL, NULL);
    reign__timer_start(&t->timers, &warm, INT64_MAX);
    reign__timer_stop(&t->timers, &warm);
    /* The member resolved, once, before too (getaddrinfo does not use reign's allocator). */
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    drop(t, q);
    assert_int_equal(reign_set_allocator(oom_malloc, oom_realloc, oom_free), 0);
    bool whole = false;
    for (long n = 0; n < 100 && !whole; n++) {
        g_fail_at = -1;
        q = make(t, M_A, "{\"key\":\"YQ==\"}", 5000, false);
        long live = g_live;
        g_calls = 0;
        g_fail_at = n;
        int rc = reign__h1_send(t->e, q);
        if (rc == 0)
            wait_end(t, q);
        g_fail_at = -1;
        if (rc == REIGN_ENOMEM) {
            assert_null(q->c);
            assert_false(q->finished);
        } else {
            assert_int_equal(rc, 0);
            if (q->fail)
                assert_failed(q, REIGN_ECONNLOSS, "not an HTTP answer");
            else
                assert_answer(q, 200, "{\"count\":1}");
            whole = !q->fail;
        }
        reign__buf_free(&q->resp);
        assert_int_equal(g_live, live); /* its connection and head gone with it */
        drop(t, q);
    }
    assert_true(whole);

    whole = false;
    for (long n = 0; n < 100 && !whole; n++) {
        reign__buf out;
        reign__buf_init(&out);
        char why[256];
        long live = g_live;
        g_calls = 0;
        g_fail_at = n;
        long status = post(t, M_A, NULL, 5000, &out, why, sizeof(why));
        g_fail_at = -1;
        if (status) {
            assert_int_equal(status, 200);
            assert_string_equal(out.data, "{\"count\":1}");
            whole = true;
        } else {
            assert_has(why, "no whole answer");
        }
        reign__buf_free(&out);
        assert_int_equal(g_live, live);
    }
    assert_true(whole);
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
    assert_no_trouble(t);
}

/* A status line with no status (000), and a switch of protocols nobody asked for, are no
 * answer: the request fails (not "200" with nothing, not a wait for the rest), on each path. */
static void test_no_status(void **state)
{
    h1t *t = *state;
#define ZERO "HTTP/1.1 000 X\r\nContent-Length: 0\r\n\r\n"
#define UPGRADE                                                                                    \
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n"              \
    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    static const step steps[] = {
        ACCEPT,        READ,    SEND(ZERO),    SEE_EOF, ACCEPT,     READ,
        SEND(UPGRADE), SEE_EOF, ACCEPT,        READ,    SEND(ZERO), SEE_EOF,
        ACCEPT,        READ,    SEND(UPGRADE), SEE_EOF, END};
    fake_start(&t->srv[0], run_steps, steps);
    ereq *q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "not an HTTP answer (HPE_");
    drop(t, q);
    q = send_to(t, M_A, "{}", 5000, false);
    wait_end(t, q);
    assert_failed(q, REIGN_ECONNLOSS, "the member switched protocols");
    drop(t, q);
    for (int i = 0; i < 2; i++) {
        reign__buf out;
        reign__buf_init(&out);
        char why[256];
        assert_int_equal(post(t, M_A, NULL, 5000, &out, why, sizeof(why)), 0);
        assert_has(why, "no whole answer");
        reign__buf_free(&out);
    }
    assert_int_equal(t->e->n_idle, 0);
    assert_no_trouble(t);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_content_length),
        T(test_chunked),
        T(test_answers),
        T(test_reuse),
        T(test_members),
        T(test_idle_closed),
        T(test_retry),
        T(test_retry_once),
        T(test_idle_max),
        T(test_idle_noise),
        T(test_truncated),
        T(test_truncated_reused),
        T(test_garbage),
        T(test_timeout),
        T(test_refused),
        T(test_connect_timeout),
        T(test_stream),
        T(test_stream_no_continue),
        T(test_withdraw),
        T(test_withdraw_ended),
        T(test_token),
        T(test_post),
        T(test_extra_answer),
        T(test_no_status),
        T(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
