/*
 * etcd_h1.c - HTTP/1.1 of reign's own, on the client's loop, for members reached over plain
 * http:// (etcd_internal.h).  What the gateway asks of HTTP is small: a POST with a JSON body,
 * an answer of a given length or chunked, connections kept open.  libcurl, which etcds:// keeps
 * for its TLS, maps thirty libraries and 7 MB resident into the process; this file and
 * libhttp_parser (the answers' parser, loaded like libcurl: dl.h) cost a few pages.
 *
 * One request per connection at a time, no pipelining.  An operation takes a kept-open
 * connection to its member when one is idle, else opens one; a watch stream always opens its
 * own, and sends its head with "Expect: 100-continue" and its body after the gateway's
 * "100 Continue" (or, as curl does, a second without one: etcd_http.c says why).  A kept-open
 * connection that the member closed before any byte of the answer came is the member's doing,
 * not the request's: the request goes once more, on a new connection.
 *
 * A request that ends (answered, failed, timed out) goes on e->h1_done; reign__eh_pump() runs
 * its done.  One that ends on a timer wakes the loop, whose next turn pumps.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <http_parser.h>

#include "etcd_internal.h"

#define HP_FUNCTIONS(X, t)                                                                         \
    X(t, http_parser_init)                                                                         \
    X(t, http_parser_settings_init)                                                                \
    X(t, http_parser_execute)                                                                      \
    X(t, http_should_keep_alive)                                                                   \
    X(t, http_parser_pause)                                                                        \
    X(t, http_errno_name)

REIGN__DL_LIBRARY(hp, HP_FUNCTIONS, reign__etcd_hp_lib, "etcd://", "libhttp_parser.so.2.9",
                  "libhttp-parser2.9", "REIGN_TEST_LIBHTTP_PARSER");

#define CONNECT_MS  2000 /* a connection's own deadline (within the request's) */
#define CONTINUE_MS 1000 /* how long a stream's body waits for "100 Continue" */
#define IDLE_MAX    48   /* connections kept open with no request */
#define READ_CHUNK  16384

struct econn {
    reign__etcd *e;
    econn *prev, *next;   /* e->conns: every connection */
    econn *iprev, *inext; /* e->idle: kept open, no request */
    int fd;
    size_t member;
    const struct addrinfo *ai; /* the address connected to (or being tried) */
    ereq *q;                   /* its request, or NULL: idle */
    char *head;                /* the request's head; q->body follows */
    size_t head_len, out_at;   /* bytes of head + body sent */
    bool connecting, idle;
    bool expect, continued; /* a stream's body waits for "100 Continue" */
    bool reused;            /* it served a request before this one */
    bool answered;          /* a byte of this request's answer came */
    bool complete, keep;    /* the whole answer came; the connection may serve another */
    uint32_t events;        /* what epoll watches for */
    int timeout_ms;
    int64_t due_ns, step_ns; /* the request's deadline (0: none); the connect's or the 100's */
    reign__timer timer;
    http_parser p;
};

static http_parser_settings settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

/* ---- the parser's callbacks ---------------------------------------------------------------- */

static int on_headers(http_parser *p)
{
    econn *c = p->data;
    if (p->status_code < 100)
        return -1; /* "HTTP/1.1 000": no status, not an answer */
    if (p->status_code / 100 == 1) {
        if (p->status_code == 100 && c->expect)
            c->continued = true; /* the body goes after this parse */
        return 0;
    }
    if (c->q)
        c->q->status = p->status_code;
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t n)
{
    econn *c = p->data;
    return c->q && reign__h1_got(c->q, at, n) < 0 ? -1 : 0;
}

static int on_complete(http_parser *p)
{
    econn *c = p->data;
    if (p->status_code / 100 == 1)
        return 0; /* an interim answer: the real one follows */
    c->complete = true;
    c->keep = hp.http_should_keep_alive(p) != 0;
    hp.http_parser_pause(p, 1); /* what follows is no part of it (readable() looks) */
    return 0;
}

static void settings_init(void)
{
    hp.http_parser_settings_init(&settings);
    settings.on_headers_complete = on_headers;
    settings.on_body = on_body;
    settings.on_message_complete = on_complete;
}

int reign__h1_load(char *err, size_t errlen)
{
    static reign__dl_slot slot = REIGN__DL_SLOT_INIT;
    int rc = reign__dl_load(&reign__etcd_hp_lib, &slot, err, errlen);
    if (rc == 0)
        pthread_once(&settings_once, settings_init);
    return rc;
}

/* ---- members' addresses -------------------------------------------------------------------- */

/* "http://host:port" (host maybe "[v6]") into its parts; false when it is not that. */
static bool split_member(const char *m, size_t mlen, char *host, size_t hlen, char *port,
                         size_t plen)
{
    static const char scheme[] = "http://";
    if (mlen <= sizeof(scheme) - 1 || strncmp(m, scheme, sizeof(scheme) - 1))
        return false;
    m += sizeof(scheme) - 1;
    mlen -= sizeof(scheme) - 1;
    const char *colon = NULL;
    for (size_t i = mlen; i-- > 0;)
        if (m[i] == ':' || m[i] == ']') {
            colon = m[i] == ':' ? m + i : NULL;
            break;
        }
    if (!colon || colon == m || (size_t)(m + mlen - colon - 1) >= plen)
        return false;
    const char *h = m;
    size_t hl = (size_t)(colon - m);
    if (hl >= 2 && h[0] == '[' && h[hl - 1] == ']')
        h++, hl -= 2;
    if (!hl || hl >= hlen)
        return false;
    memcpy(host, h, hl);
    host[hl] = '\0';
    memcpy(port, colon + 1, (size_t)(m + mlen - colon - 1));
    port[m + mlen - colon - 1] = '\0';
    return *port != '\0';
}

struct addrinfo *reign__h1_resolve(const char *m, size_t mlen, char *why, size_t whylen)
{
    char host[256], port[16];
    if (!split_member(m, mlen, host, sizeof(host), port, sizeof(port))) {
        reign__errf(why, whylen, "not http://host:port");
        return NULL;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        reign__errf(why, whylen, "%s", gai_strerror(rc));
        return NULL;
    }
    return ai;
}

int reign__h1_connect_to(const struct addrinfo *ai)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
        int keep = errno;
        close(fd);
        errno = keep;
        return -1;
    }
    return fd;
}

/* The request's head: POST path, its headers, the body's length. */
static int write_head(reign__buf *b, const reign__etcd *e, const ereq *q, const char *path)
{
    const char *m = e->members[q->member];
    return reign__buf_printf(b,
                             "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                             "Content-Length: %zu\r\n%s%s%s%s\r\n",
                             path, m + strlen("http://"), q->body.len,
                             q->stream ? "Expect: 100-continue\r\n" : "",
                             /* a member that loses its leader cancels the watch */
                             q->stream ? "Grpc-Metadata-hasleader: true\r\n" : "",
                             e->token_header ? e->token_header : "", e->token_header ? "\r\n" : "");
}

/* ---- connections on the loop --------------------------------------------------------------- */

static void timer_cb(reign__timer *t, void *arg);

static void watch_for(econn *c, uint32_t events)
{
    if (c->events == events)
        return;
    struct epoll_event ev = {.events = events, .data = {.ptr = c}};
    epoll_ctl(c->e->epfd, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
    c->events = events;
}

static void idle_unlink(econn *c)
{
    reign__etcd *e = c->e;
    if (!c->idle)
        return;
    *(c->iprev ? &c->iprev->inext : &e->idle) = c->inext;
    if (c->inext)
        c->inext->iprev = c->iprev;
    c->iprev = c->inext = NULL;
    c->idle = false;
    e->n_idle--;
}

static void conn_close(econn *c)
{
    reign__etcd *e = c->e;
    idle_unlink(c);
    reign__timer_stop(e->cfg.timers, &c->timer);
    if (c->fd >= 0) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    reign__free(c->head);
    *(c->prev ? &c->prev->next : &e->conns) = c->next;
    if (c->next)
        c->next->prev = c->prev;
    reign__free(c);
}

static econn *conn_new(reign__etcd *e, size_t member)
{
    econn *c = reign__calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->e = e;
    c->fd = -1;
    c->member = member;
    reign__timer_init(&c->timer, timer_cb, c);
    c->next = e->conns;
    if (e->conns)
        e->conns->prev = c;
    e->conns = c;
    return c;
}

/* The earlier of the request's deadline and the step's, on the connection's timer: 0, or
 * REIGN_ENOMEM (only when it was not armed: the heap grows). */
static int arm(econn *c)
{
    int64_t due = c->due_ns;
    if (c->step_ns && (!due || c->step_ns < due))
        due = c->step_ns;
    if (due)
        return reign__timer_start(c->e->cfg.timers, &c->timer, due) < 0 ? REIGN_ENOMEM : 0;
    reign__timer_stop(c->e->cfg.timers, &c->timer);
    return 0;
}

static void wake(reign__etcd *e)
{
    uint64_t one = 1;
    ssize_t w = write(e->cfg.wake_fd, &one, sizeof(one));
    (void)w;
}

/* q onto the list of ended requests, whose done the pump runs.  A failure may come outside the
 * pump (a member refusing at once what a loop turn's flush sent): the loop turns again. */
void reign__h1_ended(reign__etcd *e, ereq *q, int fail)
{
    q->fail = fail;
    q->fnext = NULL;
    *(e->h1_done_tail ? &e->h1_done_tail->fnext : &e->h1_done) = q;
    e->h1_done_tail = q;
    q->finished = true;
    if (fail)
        wake(e);
}

/* q's end: its connection kept (idle) or closed, q onto the list the pump ends. */
static void finish(econn *c, int fail, const char *why)
{
    reign__etcd *e = c->e;
    ereq *q = c->q;
    c->q = NULL;
    q->c = NULL;
    if (why)
        reign__strlcpy(q->why, why, sizeof(q->why));
    bool sent = c->out_at == c->head_len + q->body.len;
    if (!fail && c->keep && sent && !q->stream && e->n_idle < IDLE_MAX) {
        reign__timer_stop(e->cfg.timers, &c->timer);
        c->idle = true;
        c->iprev = NULL;
        c->inext = e->idle;
        if (e->idle)
            e->idle->iprev = c;
        e->idle = c;
        e->n_idle++;
        watch_for(c, EPOLLIN); /* the member closing it shows as readable */
    } else {
        conn_close(c);
    }
    reign__h1_ended(e, q, fail);
}

static int start(reign__etcd *e, ereq *q, econn *c, char *head, size_t head_len, int64_t due);

/* The connection failed (errno-like err, or why): the next address, a new connection for a
 * request a kept-open one lost before its answer began, or the request's failure. */
static void broke(econn *c, int err, const char *why)
{
    reign__etcd *e = c->e;
    ereq *q = c->q;
    char msg[CURL_ERROR_SIZE];
    if (c->connecting && c->ai && c->ai->ai_next) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->events = 0;
        c->fd = -1;
        while (c->fd < 0 && c->ai->ai_next) {
            c->ai = c->ai->ai_next;
            c->fd = reign__h1_connect_to(c->ai);
            err = c->fd < 0 ? errno : 0;
        }
        if (c->fd >= 0) {
            watch_for(c, EPOLLOUT);
            return;
        }
    }
    if (c->reused && !c->answered && !c->connecting) {
        /* What a member does to a connection that sat idle: once more, on a new one. */
        char *head = c->head;
        size_t head_len = c->head_len;
        int64_t due = c->due_ns; /* the same deadline: a second try is no new request */
        c->head = NULL;
        c->q = NULL;
        q->c = NULL;
        conn_close(c);
        if (start(e, q, NULL, head, head_len, due) < 0) {
            reign__strlcpy(q->why, "out of memory", sizeof(q->why));
            reign__h1_ended(e, q, REIGN_ECONNLOSS);
        }
        return;
    }
    if (why)
        reign__strlcpy(msg, why, sizeof(msg));
    else
        snprintf(msg, sizeof(msg), "%s%s", c->connecting ? "connect: " : "", strerror(err));
    finish(c, REIGN_ECONNLOSS, msg);
}

/* Sends what is left of head and body (the body only once it may go): false when it broke. */
static bool flush(econn *c)
{
    ereq *q = c->q;
    size_t total = c->head_len + q->body.len;
    size_t limit = c->expect && !c->continued ? c->head_len : total;
    while (c->out_at < limit) {
        struct iovec v[2];
        int n = 0;
        if (c->out_at < c->head_len)
            v[n++] = (struct iovec){c->head + c->out_at, c->head_len - c->out_at};
        size_t body_at = c->out_at > c->head_len ? c->out_at - c->head_len : 0;
        if (limit > c->head_len && q->body.len > body_at)
            v[n++] = (struct iovec){q->body.data + body_at, q->body.len - body_at};
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (w < 0) {
            broke(c, errno, NULL);
            return false;
        }
        c->out_at += (size_t)w;
    }
    watch_for(c, EPOLLIN | (c->out_at < limit ? EPOLLOUT : 0));
    return true;
}

/* Reads what came and parses it: false when the request ended. */
static bool readable(econn *c)
{
    char buf[READ_CHUNK];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return true;
        if (c->idle) { /* closed by the member, or bytes nobody asked for */
            conn_close(c);
            return false;
        }
        if (r < 0) {
            broke(c, errno, NULL);
            return false;
        }
        c->answered = c->answered || r > 0;
        bool was_continued = c->continued;
        size_t used = hp.http_parser_execute(&c->p, &settings, buf, (size_t)r);
        enum http_errno he = HTTP_PARSER_ERRNO(&c->p);
        if (c->complete) {
            /* Bytes past the answer: nobody asked for them, the connection is not kept. */
            c->keep = c->keep && r > 0 && used == (size_t)r;
            finish(c, 0, NULL);
            return false;
        }
        if (c->p.upgrade) {
            broke(c, 0, "the member switched protocols");
            return false;
        }
        if (he != HPE_OK) {
            char why[128];
            snprintf(why, sizeof(why), "not an HTTP answer (%s)", hp.http_errno_name(he));
            broke(c, 0, r ? why : "connection closed before the whole answer");
            return false;
        }
        if (r == 0) {
            /* A member whose client port is TLS only closes a plain connection unanswered. */
            broke(c, 0,
                  c->answered ? "connection closed before the whole answer"
                              : "connection closed without an answer (a member that speaks TLS "
                                "only needs etcds://)");
            return false;
        }
        if (c->continued && !was_continued) {
            c->step_ns = 0;
            arm(c);
            if (!flush(c))
                return false;
        }
    }
}

static void connected(econn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
        err = errno;
    if (err) {
        broke(c, err, NULL);
        return;
    }
    c->connecting = false;
    c->step_ns = c->expect ? reign__now_ns() + (int64_t)CONTINUE_MS * REIGN__NS_PER_MS : 0;
    arm(c);
    flush(c);
}

void reign__h1_event(reign__etcd *e, econn *c, uint32_t events)
{
    (void)e;
    if (c->connecting) {
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            connected(c);
        return;
    }
    if ((events & (EPOLLIN | EPOLLERR | EPOLLHUP)) && !readable(c))
        return;
    if ((events & EPOLLOUT) && c->q)
        flush(c);
}

static void timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    econn *c = arg;
    reign__etcd *e = c->e;
    int64_t now = reign__now_ns();
    if (c->due_ns && now >= c->due_ns) {
        char msg[CURL_ERROR_SIZE];
        snprintf(msg, sizeof(msg), "no answer within %d ms", c->timeout_ms);
        finish(c, REIGN_ETIMEDOUT, msg);
    } else if (c->connecting) {
        c->ai = NULL; /* no other address tried past the connect's deadline */
        c->reused = false;
        broke(c, 0, "connect: timed out");
    } else { /* no "100 Continue" within a second: the body goes anyway */
        c->step_ns = 0;
        c->continued = true;
        arm(c);
        flush(c);
    }
    wake(e); /* a request may have ended: the loop's next turn pumps */
}

/* Starts q, whose head (allocated) it takes, on c (kept open) or on a new connection to its
 * member, to be answered by `due` (0: no deadline): 0, or REIGN_ENOMEM.  A connection that
 * cannot be made ends q (through the pump). */
static int start(reign__etcd *e, ereq *q, econn *c, char *head, size_t head_len, int64_t due)
{
    const char *m = e->members[q->member];
    if (!e->addrs[q->member]) {
        e->addrs[q->member] = reign__h1_resolve(m, strlen(m), q->why, sizeof(q->why));
        if (!e->addrs[q->member]) {
            reign__free(head);
            reign__h1_ended(e, q, REIGN_ECONNLOSS);
            return 0;
        }
    }
    if (c) {
        idle_unlink(c);
        c->reused = true;
    } else {
        c = conn_new(e, q->member);
        if (!c) {
            reign__free(head);
            return REIGN_ENOMEM;
        }
        c->ai = e->addrs[q->member];
        c->fd = reign__h1_connect_to(c->ai);
        while (c->fd < 0 && c->ai->ai_next) {
            c->ai = c->ai->ai_next;
            c->fd = reign__h1_connect_to(c->ai);
        }
        if (c->fd < 0) {
            snprintf(q->why, sizeof(q->why), "connect: %s", strerror(errno));
            reign__free(head);
            conn_close(c);
            reign__h1_ended(e, q, REIGN_ECONNLOSS);
            return 0;
        }
        c->connecting = true;
    }
    c->q = q;
    q->c = c;
    reign__free(c->head);
    c->head = head;
    c->head_len = head_len;
    c->out_at = 0;
    c->expect = q->stream;
    c->continued = c->answered = c->complete = c->keep = false;
    hp.http_parser_init(&c->p, HTTP_RESPONSE);
    c->p.data = c;
    c->timeout_ms = q->timeout_ms;
    int64_t now = reign__now_ns();
    c->due_ns = due;
    c->step_ns = c->connecting ? now + (int64_t)CONNECT_MS * REIGN__NS_PER_MS : 0;
    if (arm(c) < 0) { /* no room in the timer heap: no request without its deadline */
        c->q = NULL;
        q->c = NULL;
        conn_close(c);
        return REIGN_ENOMEM;
    }
    if (c->connecting)
        watch_for(c, EPOLLOUT);
    else
        flush(c); /* if it broke, a second try or the request's end is under way */
    return 0;
}

int reign__h1_send(reign__etcd *e, ereq *q)
{
    reign__buf head;
    reign__buf_init(&head);
    if (write_head(&head, e, q, q->path) < 0) {
        reign__buf_free(&head);
        return REIGN_ENOMEM;
    }
    econn *c = NULL;
    if (!q->stream) /* a stream holds its connection for good: always a new one */
        for (c = e->idle; c && c->member != q->member; c = c->inext)
            ;
    int64_t due =
        q->timeout_ms > 0 ? reign__now_ns() + (int64_t)q->timeout_ms * REIGN__NS_PER_MS : 0;
    return start(e, q, c, head.data, head.len, due);
}

int reign__h1_got(ereq *q, const char *p, size_t n)
{
    if (reign__buf_append(&q->resp, p, n) < 0)
        return -1;
    if (q->stream && !q->got_data) {
        reign__etcd *e = q->e;
        q->dprev = NULL;
        q->dnext = e->with_data;
        if (e->with_data)
            e->with_data->dprev = q;
        e->with_data = q;
        q->got_data = true;
    }
    return 0;
}

void reign__h1_withdraw(reign__etcd *e, ereq *q)
{
    if (q->c) {
        econn *c = q->c;
        c->q = NULL;
        q->c = NULL;
        conn_close(c); /* half a request on it: not reusable */
    }
    if (q->finished) {
        ereq **pp = &e->h1_done;
        ereq *prev = NULL;
        while (*pp && *pp != q)
            prev = *pp, pp = &(*pp)->fnext;
        if (*pp) {
            *pp = q->fnext;
            if (e->h1_done_tail == q)
                e->h1_done_tail = prev;
        }
        q->finished = false;
    }
}

ereq *reign__h1_take_done(reign__etcd *e)
{
    ereq *q = e->h1_done;
    if (q) {
        e->h1_done = q->fnext;
        if (!e->h1_done)
            e->h1_done_tail = NULL;
        q->fnext = NULL;
        q->finished = false;
    }
    return q;
}

void reign__h1_free(reign__etcd *e)
{
    while (e->conns) {
        if (e->conns->q)
            e->conns->q->c = NULL;
        conn_close(e->conns);
    }
    if (e->addrs)
        for (size_t i = 0; i < e->n_members; i++)
            if (e->addrs[i])
                freeaddrinfo(e->addrs[i]);
    reign__free(e->addrs);
    e->addrs = NULL;
}

/* ---- one blocking POST --------------------------------------------------------------------- */

typedef struct sync_ctx {
    reign__buf *out;
    int status;
    bool complete;
} sync_ctx;

static int sync_headers(http_parser *p)
{
    sync_ctx *s = p->data;
    if (p->status_code < 100)
        return -1; /* not an answer */
    if (p->status_code / 100 != 1)
        s->status = p->status_code;
    return 0;
}

static int sync_body(http_parser *p, const char *at, size_t n)
{
    sync_ctx *s = p->data;
    return s->out && reign__buf_append(s->out, at, n) < 0 ? -1 : 0;
}

static int sync_complete(http_parser *p)
{
    sync_ctx *s = p->data;
    if (p->status_code / 100 != 1) {
        s->complete = true;
        hp.http_parser_pause(p, 1); /* what follows is no part of it */
    }
    return 0;
}

bool reign__h1_wait_fd(int fd, short events, int64_t until)
{
    for (;;) {
        int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = events};
        int r = poll(&pfd, 1, (int)(left > 1000 ? 1000 : left) + 1);
        if (r > 0)
            return true;
        if (r < 0 && errno != EINTR)
            return false;
    }
}

int reign__h1_dial(const char *member, size_t mlen, int64_t until, char *why, size_t whylen)
{
    char msg[128];
    struct addrinfo *all = reign__h1_resolve(member, mlen, msg, sizeof(msg));
    if (!all) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member, msg);
        return -1;
    }
    int fd = -1, err = 0;
    for (const struct addrinfo *ai = all; ai && fd < 0 && err != ETIMEDOUT; ai = ai->ai_next) {
        fd = reign__h1_connect_to(ai);
        if (fd < 0) {
            err = errno;
            continue;
        }
        socklen_t len = sizeof(err);
        if (!reign__h1_wait_fd(fd, POLLOUT, until))
            err = ETIMEDOUT;
        else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(all);
    if (fd < 0)
        reign__errf(why, whylen, "%.*s: connect: %s", (int)mlen, member, strerror(err));
    return fd;
}

long reign__h1_post(const char *member, size_t mlen, const char *path, const char *body,
                    const char *header, int64_t until, reign__buf *out, char *why, size_t whylen)
{
    why[0] = '\0';
    if (out)
        reign__buf_reset(out);
    int fd = reign__h1_dial(member, mlen, until, why, whylen);
    if (fd < 0)
        return 0;
    char head[1024];
    int hl = snprintf(head, sizeof(head),
                      "POST %s HTTP/1.1\r\nHost: %.*s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n%s%s\r\n",
                      path, (int)(mlen - strlen("http://")), member + strlen("http://"),
                      strlen(body), header ? header : "", header ? "\r\n" : "");
    size_t total = (size_t)hl + strlen(body), at = 0;
    while (hl > 0 && (size_t)hl < sizeof(head) && at < total) {
        struct iovec v[2];
        int n = 0;
        if (at < (size_t)hl)
            v[n++] = (struct iovec){head + at, (size_t)hl - at};
        size_t b = at > (size_t)hl ? at - (size_t)hl : 0;
        v[n++] = (struct iovec){(char *)body + b, strlen(body) - b};
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &mh, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR) && reign__h1_wait_fd(fd, POLLOUT, until))
            continue;
        if (w < 0)
            break;
        at += (size_t)w;
    }
    sync_ctx s = {.out = out};
    http_parser_settings st;
    hp.http_parser_settings_init(&st);
    st.on_headers_complete = sync_headers;
    st.on_body = sync_body;
    st.on_message_complete = sync_complete;
    http_parser p;
    hp.http_parser_init(&p, HTTP_RESPONSE);
    p.data = &s;
    char buf[4096];
    while (at == total && !s.complete && HTTP_PARSER_ERRNO(&p) == HPE_OK) {
        ssize_t r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (!reign__h1_wait_fd(fd, POLLIN, until)) {
                reign__errf(why, whylen, "%.*s: no answer in time", (int)mlen, member);
                break;
            }
            continue;
        }
        if (r < 0)
            break;
        hp.http_parser_execute(&p, &st, buf, (size_t)r);
        if (r == 0 || p.upgrade) /* a switch of protocols is no answer either */
            break;
    }
    close(fd);
    if (!s.complete && !why[0])
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member,
                    at < total ? "cannot send" : "no whole answer");
    return s.complete ? s.status : 0;
}
