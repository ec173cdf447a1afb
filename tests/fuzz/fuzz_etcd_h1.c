/*
 * fuzz_etcd_h1.c - libFuzzer target for what reign's own HTTP/1.1 client (src/etcd/etcd_h1.c)
 * reads from a member.  The input is whatever a member answers: its bytes, then the end of the
 * connection.  A loopback listener plays the member, on the client's own loop (no thread), and
 * the input is read four ways:
 *
 *   - by an operation on a new connection, the bytes in three pieces (each read on its own
 *     when the kernel keeps them apart);
 *   - by a watch stream ("Expect: 100-continue": its body goes only if the input says 100, the
 *     input's end coming long before the second after which it would go anyway);
 *   - by an operation on a kept-open connection, after a good answer on it (an input that
 *     closes before its first byte sends the request once more, on a new connection, which is
 *     given the input again);
 *   - by the guardian's blocking POST, served by a thread (it blocks the caller).
 *
 * Each request ends exactly once, off its connection, answered or failed with a reason; what it
 * kept of the answer came from the input; a stream is among those with data exactly when it got
 * some.  Nothing may crash, leak or hang (a request still out after GUARD_MS is a hang).
 * libhttp_parser, loaded with dlopen, is not instrumented: coverage guides the fuzzer through
 * etcd_h1.c's own branches only, so the seeds and the dictionary carry the parser's states.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "etcd/etcd_internal.h"
#include "fuzz_common.h"

#define GUARD_MS 5000
#define PEERS    8

/* A good answer that keeps the connection open, for the kept-open case's first request. */
static const char good[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";

/* The member's side of a connection: what it still has to send, then its end. */
typedef struct peer {
    int fd;
    const uint8_t *out;
    size_t len, at, piece;
    bool eof, shut;
} peer;

typedef struct run {
    reign__etcd *e;
    reign__timers timers;
    char *members[1];
    peer peers[PEERS];
    size_t n_peers;
    const uint8_t *data; /* what new connections are given, and then their end (eof) */
    size_t size, pieces;
    bool eof;
    ereq *ended;
    int n_ended;
} run;

static int lfd = -1, post_lfd = -1; /* the fake member's listeners: the loop's, the thread's */
static char member[64], post_member[64];

/* ---- the guardian's POST, served by a thread --------------------------------------------- */

static sem_t job, job_done;
static const uint8_t *job_data;
static size_t job_size;

static void serve_post(void)
{
    struct pollfd p = {.fd = post_lfd, .events = POLLIN};
    CHECK(poll(&p, 1, GUARD_MS) == 1);
    int fd = accept4(post_lfd, NULL, NULL, SOCK_CLOEXEC);
    CHECK(fd >= 0);
    for (size_t at = 0; at < job_size;) {
        ssize_t w = send(fd, job_data + at, job_size - at, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* the client stopped reading: a whole answer, or none */
        at += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    char buf[4096];
    while (poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, GUARD_MS) == 1 &&
           recv(fd, buf, sizeof(buf), 0) > 0)
        ;
    close(fd);
}

static void *post_thread(void *arg)
{
    (void)arg;
    for (;;) {
        while (sem_wait(&job) < 0)
            ;
        serve_post();
        sem_post(&job_done);
    }
    return NULL;
}

static void post_once(const uint8_t *data, size_t size)
{
    job_data = data;
    job_size = size;
    sem_post(&job);
    reign__buf out;
    reign__buf_init(&out);
    char why[256];
    long status =
        reign__h1_post(post_member, strlen(post_member), "/v3/lease/revoke", "{\"ID\":\"1\"}",
                       "Authorization: tok", reign__now_ns() + GUARD_MS * REIGN__NS_PER_MS, &out,
                       why, sizeof(why));
    CHECK(status >= 0 && status <= 999 && status / 100 != 1);
    CHECK(out.len <= size);
    reign__buf_free(&out);
    while (sem_wait(&job_done) < 0)
        ;
}

/* ---- the member on the loop ---------------------------------------------------------------- */

static int listener(char *name, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CHECK(listen(fd, 64) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &alen) == 0);
    snprintf(name, len, "http://127.0.0.1:%d", ntohs(a.sin_port));
    return fd;
}

static void init(void)
{
    char err[256];
    if (reign__h1_load(err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        abort();
    }
    lfd = listener(member, sizeof(member));
    post_lfd = listener(post_member, sizeof(post_member));
    CHECK(sem_init(&job, 0, 0) == 0 && sem_init(&job_done, 0, 0) == 0);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, post_thread, NULL) == 0);
    pthread_detach(th);
}

static void give(peer *p, const uint8_t *out, size_t len, size_t pieces, bool eof)
{
    p->out = out;
    p->len = len;
    p->at = 0;
    p->piece = len / pieces + 1;
    p->eof = eof;
}

/* Accepts new connections, sends each its next piece (then its end), drops what the client
 * sent. */
static void member_turn(run *r)
{
    int fd;
    while ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        CHECK(r->n_peers < PEERS);
        peer *p = &r->peers[r->n_peers++];
        p->fd = fd;
        p->shut = false;
        give(p, r->data, r->size, r->pieces, r->eof);
    }
    for (size_t i = 0; i < r->n_peers; i++) {
        peer *p = &r->peers[i];
        char buf[4096];
        while (recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
            ;
        if (p->at < p->len) {
            size_t n = p->len - p->at < p->piece ? p->len - p->at : p->piece;
            ssize_t w = send(p->fd, p->out + p->at, n, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                p->at += (size_t)w;
            else if (errno != EAGAIN && errno != EINTR)
                p->at = p->len; /* the client closed it */
        } else if (p->eof && !p->shut) {
            shutdown(p->fd, SHUT_WR);
            p->shut = true;
        }
    }
}

/* One turn of the client's loop, as etcd_http.c's pump turns it. */
static void client_turn(run *r, int ms)
{
    reign__etcd *e = r->e;
    struct pollfd p = {.fd = e->epfd, .events = POLLIN};
    poll(&p, 1, ms);
    struct epoll_event ev[16];
    int n = epoll_wait(e->epfd, ev, 16, 0);
    for (int i = 0; i < n; i++)
        reign__h1_event(e, ev[i].data.ptr, ev[i].events);
    reign__timers_run(&r->timers, reign__now_ns());
    for (ereq *q; (q = reign__h1_take_done(e));) {
        r->ended = q;
        r->n_ended++;
    }
    uint64_t woke;
    ssize_t w = read(e->cfg.wake_fd, &woke, sizeof(woke));
    (void)w;
}

/* Until q ends; it ends once. */
static void until_end(run *r, ereq *q)
{
    r->n_ended = 0;
    r->ended = NULL;
    int64_t guard = reign__now_ns() + GUARD_MS * REIGN__NS_PER_MS;
    while (!r->n_ended) {
        CHECK(reign__now_ns() < guard); /* a request that never ends */
        member_turn(r);
        client_turn(r, 1);
    }
    client_turn(r, 0);
    CHECK(r->n_ended == 1 && r->ended == q);
    CHECK(!q->c && !q->finished);
    CHECK(q->fail == 0 || q->fail == REIGN_ECONNLOSS);
    CHECK(!q->fail || q->why[0]);
    CHECK(q->fail || (q->status >= 0 && q->status <= 999 && q->status / 100 != 1));
}

static run *run_new(void)
{
    run *r = reign__calloc(1, sizeof(*r));
    CHECK(r != NULL);
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    CHECK(e != NULL);
    e->cfg.timers = &r->timers;
    e->cfg.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    e->cfg.epoll_fd = -1;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    CHECK(e->cfg.wake_fd >= 0 && e->epfd >= 0);
    e->h1 = true;
    r->members[0] = member;
    e->members = r->members;
    e->n_members = 1;
    e->addrs = reign__calloc(1, sizeof(*e->addrs));
    CHECK(e->addrs != NULL);
    r->e = e;
    return r;
}

static void run_free(run *r)
{
    reign__etcd *e = r->e;
    for (size_t i = 0; i < r->n_peers; i++)
        close(r->peers[i].fd);
    reign__h1_free(e);
    CHECK(!e->conns && !e->idle && e->n_idle == 0);
    close(e->epfd);
    close(e->cfg.wake_fd);
    reign__free(e);
    reign__timers_free(&r->timers);
    reign__free(r);
}

static ereq *request(run *r, bool stream)
{
    ereq *q = reign__eh_new(r->e, NULL, NULL);
    CHECK(q != NULL);
    CHECK(reign__buf_puts(&q->body, stream ? "{\"create_request\":{\"key\":\"L3I=\"}}" : "{}") ==
          0);
    q->path = stream ? "/v3/watch" : "/v3/kv/range";
    q->timeout_ms = stream ? 0 : 2 * GUARD_MS; /* the input's end ends it, not the clock */
    q->stream = stream;
    CHECK(reign__h1_send(r->e, q) == 0);
    return q;
}

/* The input to one request, on a new connection. */
static void fresh(const uint8_t *data, size_t size, bool stream, size_t pieces)
{
    run *r = run_new();
    r->data = data;
    r->size = size;
    r->pieces = pieces;
    r->eof = true;
    ereq *q = request(r, stream);
    until_end(r, q);
    CHECK(q->resp.len <= size);
    if (stream) {
        CHECK(q->got_data == (q->resp.len > 0));
        CHECK(r->e->with_data == (q->got_data ? q : NULL));
        CHECK(r->e->n_idle == 0);
    }
    reign__eh_drop(q);
    CHECK(!r->e->with_data);
    run_free(r);
}

/* The input to a second request, on the connection the first one left open. */
static void reused(const uint8_t *data, size_t size)
{
    run *r = run_new();
    r->data = (const uint8_t *)good;
    r->size = sizeof(good) - 1;
    r->pieces = 1;
    ereq *q = request(r, false);
    until_end(r, q);
    CHECK(!q->fail && q->status == 200 && r->e->n_idle == 1);
    reign__eh_drop(q);
    CHECK(r->n_peers == 1);
    r->data = data;
    r->size = size;
    r->eof = true;
    give(&r->peers[0], data, size, 1, true);
    q = request(r, false);
    until_end(r, q);
    CHECK(q->resp.len <= size);
    CHECK(r->n_peers <= 2); /* once more at most */
    reign__eh_drop(q);
    run_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init);
    fresh(data, size, false, 3);
    fresh(data, size, true, 2);
    reused(data, size);
    post_once(data, size);
    return 0;
}
