/*
 * fake_member.h - a fake server for the unit tests of reign's own HTTP/1.1 client
 * (test_etcd_h1.c) and of the guardian's end of a lease (test_etcd_end.c): a loopback listener
 * whose script, on a thread of its own, plays what a member may do, step by step (accept, read a
 * request or only its head, answer, close, wait for the client's close), and tells the test how
 * far it got.  The test and the script wait for each other (an eventfd one way, a pipe the
 * other), never on the clock; a wait that lasts GUARD_MS is a stuck test, noted in `trouble`.
 * Everything here is static, as in oom.h (inline what a test may not use).
 */
#ifndef REIGN_TEST_UNIT_FAKE_MEMBER_H
#define REIGN_TEST_UNIT_FAKE_MEMBER_H

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "core.h"

#define GUARD_MS 20000 /* a wait this long is a stuck test */
#define MAX_FDS  64
#define REQ_MAX  8192
#define REQS     8

/* ---- the fake members ---------------------------------------------------------------------- */

/* A script's steps, on its current connection (the last one accepted). */
enum op {
    OP_END,
    OP_ACCEPT, /* the next connection */
    OP_READ,   /* a whole request, head and body (Content-Length) */
    OP_HEAD,   /* a request's head only */
    OP_EARLY,  /* how many bytes past the head are there already (a stream's body, too soon) */
    OP_BODY,   /* the body of the request whose head came */
    OP_SEND,   /* text as it is */
    OP_OK,     /* a 200 answer whose body is text, by Content-Length */
    OP_SAY,    /* one stage further: the test may look */
    OP_AWAIT,  /* until the test lets it go on */
    OP_CLOSE,  /* the connection */
    OP_EOF,    /* until the client closes the connection */
};

typedef struct step {
    enum op op;
    const char *text;
} step;

#define ACCEPT                                                                                     \
    {                                                                                              \
        OP_ACCEPT, NULL                                                                            \
    }
#define READ                                                                                       \
    {                                                                                              \
        OP_READ, NULL                                                                              \
    }
#define HEAD                                                                                       \
    {                                                                                              \
        OP_HEAD, NULL                                                                              \
    }
#define EARLY                                                                                      \
    {                                                                                              \
        OP_EARLY, NULL                                                                             \
    }
#define BODY                                                                                       \
    {                                                                                              \
        OP_BODY, NULL                                                                              \
    }
#define SEND(s)                                                                                    \
    {                                                                                              \
        OP_SEND, s                                                                                 \
    }
#define OK(s)                                                                                      \
    {                                                                                              \
        OP_OK, s                                                                                   \
    }
#define SAY                                                                                        \
    {                                                                                              \
        OP_SAY, NULL                                                                               \
    }
#define AWAIT                                                                                      \
    {                                                                                              \
        OP_AWAIT, NULL                                                                             \
    }
#define CLOSE                                                                                      \
    {                                                                                              \
        OP_CLOSE, NULL                                                                             \
    }
#define SEE_EOF                                                                                    \
    {                                                                                              \
        OP_EOF, NULL                                                                               \
    }
#define END                                                                                        \
    {                                                                                              \
        OP_END, NULL                                                                               \
    }

typedef struct fake fake;
typedef void fake_script(fake *f);

struct fake {
    int lfd, port;
    int stop;  /* eventfd: the test ends, the script returns */
    int said;  /* eventfd: the script reached a stage */
    int go[2]; /* pipe: the test lets the script go on */
    pthread_t th;
    bool running;
    fake_script *script;
    const step *steps;
    int fds[MAX_FDS]; /* its connections (-1: closed); cur is the one steps act on */
    int n_fds, cur;
    char in[REQ_MAX]; /* what came on cur past what the steps took */
    size_t in_len;
    /* What it saw: the test reads it once a later stage says so. */
    atomic_int accepts, stage, eofs, n_reqs;
    char reqs[REQS][REQ_MAX]; /* each request whole, NUL-terminated */
    size_t head_len[REQS];
    size_t early;
    int64_t body_ns; /* when a stream's body came */
    char trouble[200];
};

static bool trouble(fake *f, const char *what)
{
    if (!f->trouble[0])
        snprintf(f->trouble, sizeof(f->trouble), "%s", what);
    return false;
}

/* Waits for fd, or gives up when the test ends (false). */
static bool srv_wait(fake *f, int fd, short events)
{
    struct pollfd p[2] = {{.fd = fd, .events = events}, {.fd = f->stop, .events = POLLIN}};
    int r;
    do
        r = poll(p, 2, GUARD_MS);
    while (r < 0 && errno == EINTR);
    if (r == 0)
        return trouble(f, "the script waited in vain");
    return r > 0 && !p[1].revents;
}

static bool send_all(fake *f, const char *s, size_t n)
{
    while (n) {
        ssize_t w = send(f->cur, s, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return trouble(f, "send failed");
        s += w;
        n -= (size_t)w;
    }
    return true;
}

/* More of cur into f->in: false on its end. */
static bool fill(fake *f)
{
    if (f->in_len == sizeof(f->in))
        return trouble(f, "request too long");
    if (!srv_wait(f, f->cur, POLLIN))
        return false;
    ssize_t r = recv(f->cur, f->in + f->in_len, sizeof(f->in) - f->in_len, 0);
    if (r <= 0)
        return trouble(f, "the connection ended inside a request");
    f->in_len += (size_t)r;
    return true;
}

static size_t content_length(const char *head)
{
    const char *cl = strcasestr(head, "\r\nContent-Length:");
    return cl ? strtoul(cl + strlen("\r\nContent-Length:"), NULL, 10) : 0;
}

/* Takes n bytes of f->in into request i (at its end). */
static void take(fake *f, int i, size_t n)
{
    size_t at = strlen(f->reqs[i]);
    if (at + n >= REQ_MAX)
        n = REQ_MAX - 1 - at;
    memcpy(f->reqs[i] + at, f->in, n);
    f->reqs[i][at + n] = '\0';
    memmove(f->in, f->in + n, f->in_len - n);
    f->in_len -= n;
}

static bool read_head(fake *f)
{
    int i = atomic_load(&f->n_reqs);
    if (i == REQS)
        return trouble(f, "too many requests");
    const char *end;
    while (!(end = memmem(f->in, f->in_len, "\r\n\r\n", 4)))
        if (!fill(f))
            return false;
    f->reqs[i][0] = '\0';
    f->head_len[i] = (size_t)(end + 4 - f->in);
    take(f, i, f->head_len[i]);
    atomic_store(&f->n_reqs, i + 1);
    return true;
}

/* The body of the last request, by its Content-Length. */
static bool read_body(fake *f)
{
    int i = atomic_load(&f->n_reqs) - 1;
    size_t n = content_length(f->reqs[i]);
    while (f->in_len < n)
        if (!fill(f))
            return false;
    take(f, i, n);
    f->body_ns = reign__now_ns();
    return true;
}

static bool do_accept(fake *f)
{
    if (f->n_fds == MAX_FDS)
        return trouble(f, "too many connections");
    if (!srv_wait(f, f->lfd, POLLIN))
        return false;
    int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return trouble(f, "accept failed");
    f->fds[f->n_fds++] = fd;
    f->cur = fd;
    f->in_len = 0;
    atomic_fetch_add(&f->accepts, 1);
    return true;
}

static void say(fake *f)
{
    atomic_fetch_add(&f->stage, 1);
    uint64_t one = 1;
    ssize_t w = write(f->said, &one, sizeof(one));
    (void)w;
}

static bool do_step(fake *f, const step *s)
{
    char buf[4096];
    switch (s->op) {
    case OP_END:
        return false;
    case OP_ACCEPT:
        return do_accept(f);
    case OP_READ:
        return read_head(f) && read_body(f);
    case OP_HEAD:
        return read_head(f);
    case OP_EARLY: {
        ssize_t r = recv(f->cur, buf, sizeof(buf), MSG_DONTWAIT | MSG_PEEK);
        f->early = f->in_len + (r > 0 ? (size_t)r : 0);
        return true;
    }
    case OP_BODY:
        return read_body(f);
    case OP_SEND:
        return send_all(f, s->text, strlen(s->text));
    case OP_OK: {
        int n = snprintf(buf, sizeof(buf),
                         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         strlen(s->text), s->text);
        return send_all(f, buf, (size_t)n);
    }
    case OP_SAY:
        say(f);
        return true;
    case OP_AWAIT:
        return srv_wait(f, f->go[0], POLLIN) && read(f->go[0], buf, 1) == 1;
    case OP_CLOSE:
        for (int i = 0; i < f->n_fds; i++)
            if (f->fds[i] == f->cur)
                f->fds[i] = -1;
        close(f->cur);
        f->cur = -1;
        return true;
    case OP_EOF:
        for (;;) {
            if (!srv_wait(f, f->cur, POLLIN))
                return false;
            if (recv(f->cur, buf, sizeof(buf), 0) <= 0)
                break;
        }
        atomic_fetch_add(&f->eofs, 1);
        return true;
    }
    return false;
}

static void run_steps(fake *f)
{
    for (const step *s = f->steps; do_step(f, s); s++)
        ;
}

static void *fake_main(void *arg)
{
    fake *f = arg;
    f->script(f);
    return NULL;
}

static void fake_init(fake *f)
{
    memset(f, 0, sizeof(*f));
    f->cur = -1;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(f->lfd, 128), 0);
    assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
    f->stop = eventfd(0, EFD_CLOEXEC);
    f->said = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    assert_true(f->stop >= 0 && f->said >= 0);
    assert_int_equal(pipe2(f->go, O_CLOEXEC), 0);
}

static void fake_start(fake *f, fake_script *script, const step *steps)
{
    f->script = script;
    f->steps = steps;
    assert_int_equal(pthread_create(&f->th, NULL, fake_main, f), 0);
    f->running = true;
}

/* Ends the script (however far it got) and closes everything. */
static void fake_end(fake *f)
{
    uint64_t one = 1;
    ssize_t w = write(f->stop, &one, sizeof(one));
    (void)w;
    if (f->running)
        pthread_join(f->th, NULL);
    f->running = false;
    for (int i = 0; i < f->n_fds; i++)
        if (f->fds[i] >= 0)
            close(f->fds[i]);
    close(f->lfd);
    close(f->stop);
    close(f->said);
    close(f->go[0]);
    close(f->go[1]);
}

static inline void let_go(fake *f)
{
    char b = 1;
    assert_int_equal(write(f->go[1], &b, 1), 1);
}

static inline int stage(fake *f)
{
    return atomic_load(&f->stage);
}

#endif
