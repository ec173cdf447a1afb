/*
 * etcd_h2.c - etcd's gRPC API itself, over HTTP/2 on plain TCP (h2c), on the client's loop,
 * for members reached over http:// (etcd_internal.h).  The requests keep the gateway's JSON
 * that the layers above build and read (etcd_pb.c turns it into protobuf and back); what goes
 * is what etcdctl sends, and what is saved is the gateway's own hop inside etcd: it decodes the
 * JSON, calls the gRPC server over a loopback connection of its own, encodes the answer (half
 * a millisecond a request on an idle member, measured: docs/etcd.md).
 *
 * libnghttp2 does HTTP/2 (frames, HPACK, flow control, SETTINGS and PING answered); this file
 * gives it a socket and reads gRPC's length-prefixed messages out of each stream.  One
 * connection per member carries every request to it, unary calls and watch streams alike, each
 * a stream.  A call's end is its trailers: grpc-status 0 and its message, or a code and a
 * message, written as the gateway writes an error ({"error":..,"code":N}; on a stream an error
 * line) so that reign__eh_answer() reads both transports alike.
 *
 * A request that ends (answered, failed, timed out) goes onto the same list as etcd_h1.c's, and
 * reign__eh_pump() runs its done.  A member that closes the connection, or a connect that fails,
 * ends every request on it unanswered; a GOAWAY lets the streams it names finish and sends later
 * ones on a new connection.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "etcd_internal.h"

#define CONNECT_MS     2000 /* a connection's own deadline (within its requests') */
#define READ_CHUNK     16384
#define STREAM_WINDOW  (1 << 22) /* what the member may send on a stream before we read it */
#define SESSION_WINDOW (1 << 26) /* ... and on the whole connection */
#define MESSAGE_MAX    (1 << 28) /* an answer's message larger than this is no answer */
#define PING_MS        1000      /* how long a member has to answer a ping (stream_timer()) */

/* A connection to one member. */
struct h2conn {
    reign__etcd *e;
    h2conn *prev, *next; /* e->h2all: every connection, draining ones too */
    size_t member;
    int fd;
    const struct addrinfo *ai; /* the address connected to (or being tried) */
    nghttp2_session *s;
    bool connecting, blocked, draining, dying;
    bool answered;  /* a frame came from the member */
    char err[160];  /* why libnghttp2 ended the session, if it did */
    int send_errno; /* why the socket refused what it sent */
    uint32_t events;
    int64_t last_read_ns; /* when bytes last came from the member */
    int64_t ping_due_ns;  /* a ping is out, to be answered by then (0: none) */
    reign__timer timer;   /* the connect's deadline, then the ping's */
    h2stream *streams;    /* its requests */
};

/* A request on a connection. */
struct h2stream {
    ereq *q;
    h2conn *c;
    h2stream *prev, *next;
    int32_t id;
    size_t wire_at;     /* how much of q->g.wire was sent */
    reign__timer timer; /* the request's deadline */
};

static void wake(reign__etcd *e)
{
    uint64_t one = 1;
    ssize_t w = write(e->cfg.wake_fd, &one, sizeof(one));
    (void)w;
}

/* ---- streams ------------------------------------------------------------------------------- */

static void stream_free(h2stream *hs)
{
    h2conn *c = hs->c;
    if (c) {
        *(hs->prev ? &hs->prev->next : &c->streams) = hs->next;
        if (hs->next)
            hs->next->prev = hs->prev;
        if (c->s && hs->id > 0 && !c->dying)
            nghttp2_session_set_stream_user_data(c->s, hs->id, NULL);
    }
    reign__timer_stop(hs->q->e->cfg.timers, &hs->timer);
    hs->q->hs = NULL;
    reign__free(hs);
}

/* q ends: its stream freed, q onto the list the pump ends. */
static void end(h2stream *hs, int fail, const char *why)
{
    ereq *q = hs->q;
    if (why)
        reign__strlcpy(q->why, why, sizeof(q->why));
    stream_free(hs);
    reign__h1_ended(q->e, q, fail);
}

/* ---- a gRPC call, whatever carries it ------------------------------------------------------ */

int reign__eg_start(ereq *q, char *why, size_t whylen)
{
    egrpc *g = &q->g;
    reign__buf_reset(&g->wire);
    reign__buf_reset(&g->in);
    g->status = -1;
    g->msg[0] = '\0';
    g->m = reign__pb_method_of(q->path);
    if (!g->m) {
        reign__errf(why, whylen, "no gRPC method for %s", q->path);
        return REIGN_EBACKEND;
    }
    int rc = reign__pb_request(g->m, q->body.data ? q->body.data : "", q->body.len, &g->wire, why,
                               whylen);
    return rc == REIGN_ENOMEM ? rc : rc < 0 ? REIGN_EBACKEND : 0;
}

void reign__eg_free(ereq *q)
{
    /* A login's request holds the password, and its answer the token: every call's are wiped
     * (the request is mostly small; the bytes of an answer are what is left in the buffer). */
    reign__buf_wipe(&q->g.wire);
    reign__buf_wipe(&q->g.in);
}

bool reign__eg_got(ereq *q, const uint8_t *p, size_t n)
{
    egrpc *g = &q->g;
    if (q->status && q->status != 200)
        return true; /* not gRPC's answer (a 404's text): reign__eg_end() says what it was */
    if (reign__buf_append(&g->in, p, n) < 0)
        return false;
    size_t at = 0;
    const uint8_t *d = (const uint8_t *)g->in.data;
    while (g->in.len - at >= 5) {
        uint32_t len = (uint32_t)d[at + 1] << 24 | (uint32_t)d[at + 2] << 16 |
                       (uint32_t)d[at + 3] << 8 | d[at + 4];
        if (d[at] != 0 || len > MESSAGE_MAX)
            return false; /* compressed (never asked for), or absurd */
        if (g->in.len - at - 5 < len)
            break;
        reign__buf json;
        reign__buf_init(&json);
        int rc = reign__pb_answer(g->m, d + at + 5, len, &json);
        if (rc == 0)
            rc = reign__h1_got(q, json.data, json.len);
        reign__buf_free(&json);
        if (rc < 0)
            return false;
        at += 5 + (size_t)len;
    }
    if (at) {
        memmove(g->in.data, g->in.data + at, g->in.len - at);
        g->in.len -= at;
    }
    return true;
}

void reign__eg_header(ereq *q, const char *name, size_t namelen, const char *value, size_t valuelen)
{
    egrpc *g = &q->g;
    if (namelen == 11 && !strncasecmp(name, "grpc-status", 11)) {
        int st = 0;
        for (size_t i = 0; i < valuelen && i < 4 && value[i] >= '0' && value[i] <= '9'; i++)
            st = st * 10 + (value[i] - '0');
        g->status = st;
    } else if (namelen == 12 && !strncasecmp(name, "grpc-message", 12)) {
        /* percent-encoded (gRPC's rule); kept printable */
        size_t o = 0;
        for (size_t i = 0; i < valuelen && o + 1 < sizeof(g->msg); i++) {
            unsigned ch = (unsigned char)value[i];
            if (ch == '%' && i + 2 < valuelen) {
                char hex[3] = {value[i + 1], value[i + 2], 0};
                char *endp;
                unsigned long v = strtoul(hex, &endp, 16);
                if (*endp == '\0') {
                    ch = (unsigned)v;
                    i += 2;
                }
            }
            g->msg[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
        }
        g->msg[o] = '\0';
    }
}

int reign__eg_end(ereq *q, char *why, size_t whylen)
{
    egrpc *g = &q->g;
    if (g->status < 0) {
        if (q->status && q->status != 200) {
            reign__errf(why, whylen, "HTTP %ld on %s, not etcd's gRPC API", q->status,
                        reign__pb_path(g->m));
            return REIGN_EBACKEND;
        }
        reign__errf(why, whylen, "the call ended without a gRPC status");
        return REIGN_ECONNLOSS;
    }
    if (g->in.len) {
        reign__errf(why, whylen, "the call ended inside a message");
        return REIGN_ECONNLOSS;
    }
    if (g->status != 0) {
        cJSON *err = cJSON_CreateObject();
        if (err && reign__pb_streaming(g->m)) {
            cJSON *in = cJSON_AddObjectToObject(err, "error");
            if (in && cJSON_AddNumberToObject(in, "grpc_code", g->status))
                cJSON_AddStringToObject(in, "message", g->msg);
        } else if (err && cJSON_AddStringToObject(err, "error", g->msg)) {
            cJSON_AddNumberToObject(err, "code", g->status);
        }
        char *txt = err ? cJSON_PrintUnformatted(err) : NULL;
        cJSON_Delete(err);
        int rc = txt ? reign__h1_got(q, txt, strlen(txt)) : -1;
        if (rc == 0 && reign__pb_streaming(g->m))
            rc = reign__h1_got(q, "\n", 1);
        cJSON_free(txt);
        if (rc < 0) {
            reign__errf(why, whylen, "out of memory");
            return REIGN_ECONNLOSS;
        }
    }
    q->status = 200; /* the answer is in the body, as the gateway's */
    return 0;
}

/* The stream's end (error_code: HTTP/2's, NO_ERROR when it ended as it should). */
static void closed(h2stream *hs, uint32_t error_code)
{
    char why[CURL_ERROR_SIZE];
    if (error_code != NGHTTP2_NO_ERROR && hs->q->g.status < 0) {
        snprintf(why, sizeof(why), "stream reset by the member (%s)",
                 nghttp2_http2_strerror(error_code));
        end(hs, REIGN_ECONNLOSS, why);
        return;
    }
    int fail = reign__eg_end(hs->q, why, sizeof(why));
    end(hs, fail, fail ? why : NULL);
}

/* ---- the session's callbacks --------------------------------------------------------------- */

static ssize_t on_send(nghttp2_session *s, const uint8_t *data, size_t n, int flags, void *arg)
{
    (void)s;
    (void)flags;
    h2conn *c = arg;
    for (;;) {
        ssize_t w = send(c->fd, data, n, MSG_NOSIGNAL);
        if (w >= 0)
            return w;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            c->blocked = true;
            return NGHTTP2_ERR_WOULDBLOCK;
        }
        c->send_errno = errno;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
}

/* The next part of a request's body w, from *at: the stream ends with it (half-closed: a watch
 * stream's watches are all asked). */
static ssize_t body_part(const reign__buf *w, size_t *at, uint8_t *buf, size_t n, uint32_t *flags)
{
    if (n > w->len - *at)
        n = w->len - *at;
    memcpy(buf, w->data + *at, n);
    *at += n;
    if (*at == w->len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* A header of a call's answer: its :status, or what gRPC's part reads. */
static void header(ereq *q, const uint8_t *name, size_t namelen, const uint8_t *value,
                   size_t valuelen)
{
    if (namelen == 7 && !memcmp(name, ":status", 7)) {
        long st = 0;
        for (size_t i = 0; i < valuelen && value[i] >= '0' && value[i] <= '9'; i++)
            st = st * 10 + (value[i] - '0');
        q->status = st;
    } else {
        reign__eg_header(q, (const char *)name, namelen, (const char *)value, valuelen);
    }
}

static ssize_t on_read_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t n, uint32_t *flags,
                            nghttp2_data_source *src, void *arg)
{
    (void)s;
    (void)id;
    (void)arg;
    h2stream *hs = src->ptr;
    return body_part(&hs->q->g.wire, &hs->wire_at, buf, n, flags);
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *arg)
{
    (void)flags;
    (void)arg;
    h2stream *hs = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (hs && f->hd.type == NGHTTP2_HEADERS)
        header(hs->q, name, namelen, value, valuelen);
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t n,
                   void *arg)
{
    (void)flags;
    (void)arg;
    h2stream *hs = nghttp2_session_get_stream_user_data(s, id);
    if (hs && !reign__eg_got(hs->q, data, n)) {
        nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        end(hs, REIGN_ECONNLOSS, "not a gRPC answer (or out of memory)");
    }
    return 0;
}

static int on_frame(nghttp2_session *s, const nghttp2_frame *f, void *arg)
{
    (void)s;
    h2conn *c = arg;
    c->answered = true;
    if (f->hd.type == NGHTTP2_PING && (f->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->ping_due_ns = 0;
        reign__timer_stop(c->e->cfg.timers, &c->timer);
    }
    if (f->hd.type == NGHTTP2_GOAWAY)
        c->draining = true; /* later requests go on a new connection */
    return 0;
}

static int on_error(nghttp2_session *s, int code, const char *msg, size_t len, void *arg)
{
    (void)s;
    (void)code;
    h2conn *c = arg;
    snprintf(c->err, sizeof(c->err), "%.*s", (int)len, msg);
    return 0;
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *arg)
{
    h2conn *c = arg;
    h2stream *hs = c->dying ? NULL : nghttp2_session_get_stream_user_data(s, id);
    if (hs)
        closed(hs, error_code);
    return 0;
}

static nghttp2_session_callbacks *callbacks;
static pthread_once_t callbacks_once = PTHREAD_ONCE_INIT;

static void callbacks_init(void)
{
    if (nghttp2_session_callbacks_new(&callbacks) != 0)
        return;
    nghttp2_session_callbacks_set_send_callback(callbacks, on_send);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
    nghttp2_session_callbacks_set_error_callback2(callbacks, on_error);
}

/* ---- connections --------------------------------------------------------------------------- */

static void conn_timer(reign__timer *t, void *arg);

static void watch_for(h2conn *c, uint32_t events)
{
    if (c->events == events || c->fd < 0)
        return;
    struct epoll_event ev = {.events = events, .data = {.ptr = c}};
    epoll_ctl(c->e->epfd, c->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev);
    c->events = events;
}

/* Closes c: every request still on it ends unanswered (why). */
static void conn_close(h2conn *c, const char *why)
{
    reign__etcd *e = c->e;
    c->dying = true;
    while (c->streams)
        end(c->streams, REIGN_ECONNLOSS, why);
    reign__timer_stop(e->cfg.timers, &c->timer);
    if (c->s)
        nghttp2_session_del(c->s);
    if (c->fd >= 0) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    if (e->h2conns[c->member] == c)
        e->h2conns[c->member] = NULL;
    *(c->prev ? &c->prev->next : &e->h2all) = c->next;
    if (c->next)
        c->next->prev = c->prev;
    reign__free(c);
}

/* Why the connection broke: err, errno's, or 0 for a close.  A member whose client port is TLS
 * only closes a plain connection without a word, and as it closes it our first bytes may meet a
 * reset: said alike. */
static void broken(const h2conn *c, int err, char *why, size_t whylen)
{
    if (!c->answered && (err == 0 || err == EPIPE || err == ECONNRESET))
        snprintf(why, whylen,
                 "connection closed without an answer (a member that speaks TLS only "
                 "needs etcds://)");
    else if (err == 0)
        snprintf(why, whylen, "connection closed by the member");
    else
        snprintf(why, whylen, "%s", strerror(err));
}

/* Sends what the session has to send; false when the connection broke (and was closed). */
static bool pump_out(h2conn *c)
{
    if (c->connecting)
        return true;
    c->blocked = false;
    int rc = nghttp2_session_send(c->s);
    if (rc != 0) {
        char why[160];
        if (rc == NGHTTP2_ERR_CALLBACK_FAILURE)
            broken(c, c->send_errno, why, sizeof(why));
        else
            snprintf(why, sizeof(why), "send: %s", nghttp2_strerror(rc));
        conn_close(c, why);
        return false;
    }
    if (!nghttp2_session_want_read(c->s) && !nghttp2_session_want_write(c->s)) {
        /* With calls on it: libnghttp2 ended the session (the member broke HTTP/2, and it sent
         * its GOAWAY); it reads nothing more and starts no stream. */
        char why[200];
        snprintf(why, sizeof(why), "not HTTP/2 from the member (%s)",
                 c->err[0] ? c->err : "the session ended");
        conn_close(c, c->streams ? why : "connection done");
        return false;
    }
    if (c->draining && !c->streams) {
        conn_close(c, "connection drained");
        return false;
    }
    watch_for(c, EPOLLIN | (c->blocked ? EPOLLOUT : 0));
    return true;
}

/* The connection to member m, made if there is none (or the last one is draining): NULL with
 * why when it cannot even start. */
static h2conn *conn_get(reign__etcd *e, size_t m, char *why, size_t whylen)
{
    h2conn *c = e->h2conns[m];
    if (c && !c->draining)
        return c;
    if (c) /* draining: it ends with its last stream, unnamed */
        e->h2conns[m] = NULL;
    if (!e->addrs[m]) {
        const char *mem = e->members[m];
        e->addrs[m] = reign__h1_resolve(mem, strlen(mem), why, whylen);
        if (!e->addrs[m])
            return NULL;
    }
    if (!callbacks) {
        reign__errf(why, whylen, "out of memory");
        return NULL;
    }
    c = reign__calloc(1, sizeof(*c));
    if (!c) {
        reign__errf(why, whylen, "out of memory");
        return NULL;
    }
    c->e = e;
    c->member = m;
    c->fd = -1;
    reign__timer_init(&c->timer, conn_timer, c);
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW},
    };
    if (nghttp2_session_client_new(&c->s, callbacks, c) != 0 ||
        nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0 ||
        nghttp2_session_set_local_window_size(c->s, NGHTTP2_FLAG_NONE, 0, SESSION_WINDOW) != 0) {
        if (c->s)
            nghttp2_session_del(c->s);
        reign__free(c);
        reign__errf(why, whylen, "out of memory");
        return NULL;
    }
    c->ai = e->addrs[m];
    c->fd = reign__h1_connect_to(c->ai);
    while (c->fd < 0 && c->ai->ai_next) {
        c->ai = c->ai->ai_next;
        c->fd = reign__h1_connect_to(c->ai);
    }
    if (c->fd < 0) {
        reign__errf(why, whylen, "connect: %s", strerror(errno));
        nghttp2_session_del(c->s);
        reign__free(c);
        return NULL;
    }
    c->connecting = true;
    e->h2conns[m] = c;
    c->next = e->h2all;
    if (e->h2all)
        e->h2all->prev = c;
    e->h2all = c;
    if (reign__timer_start(e->cfg.timers, &c->timer,
                           reign__now_ns() + (int64_t)CONNECT_MS * REIGN__NS_PER_MS) < 0) {
        conn_close(c, "out of memory");
        reign__errf(why, whylen, "out of memory");
        return NULL;
    }
    watch_for(c, EPOLLOUT);
    return c;
}

/* The connect failed (err) or timed out: the member's next address, or the end of it. */
static void connect_failed(h2conn *c, int err, const char *why)
{
    reign__etcd *e = c->e;
    while (c->ai && c->ai->ai_next) {
        c->ai = c->ai->ai_next;
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->events = 0;
        c->fd = reign__h1_connect_to(c->ai);
        if (c->fd >= 0) {
            watch_for(c, EPOLLOUT);
            return;
        }
    }
    char msg[128];
    snprintf(msg, sizeof(msg), "connect: %s", why ? why : strerror(err));
    conn_close(c, msg);
}

static void conn_timer(reign__timer *t, void *arg)
{
    (void)t;
    h2conn *c = arg;
    reign__etcd *e = c->e;
    if (c->connecting) {
        c->ai = NULL; /* no other address tried past the connect's deadline */
        connect_failed(c, 0, "timed out");
    } else if (c->ping_due_ns) {
        char why[128];
        snprintf(why, sizeof(why),
                 "no answer to a ping within %d ms (the member stopped, or cut off)", PING_MS);
        conn_close(c, why);
    }
    wake(e);
}

static void stream_timer(reign__timer *t, void *arg)
{
    (void)t;
    h2stream *hs = arg;
    h2conn *c = hs->c;
    reign__etcd *e = hs->q->e;
    char msg[CURL_ERROR_SIZE];
    snprintf(msg, sizeof(msg), "no answer within %d ms", hs->q->timeout_ms);
    int32_t id = hs->id;
    int64_t sent = hs->q->sent_ns;
    end(hs, REIGN_ETIMEDOUT, msg);
    if (c && id > 0) {
        nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        /* Nothing at all from the member since the call went: a ping says whether the connection
         * still leads anywhere (a member stopped, or a path cut without a reset, answers none),
         * or else every later call to that member would wait on it in vain.  (Still connecting:
         * the connect's own deadline, on the same timer, says it.) */
        int64_t now = reign__now_ns();
        if (!c->connecting && c->last_read_ns < sent && !c->ping_due_ns &&
            nghttp2_submit_ping(c->s, NGHTTP2_FLAG_NONE, NULL) == 0 &&
            reign__timer_start(e->cfg.timers, &c->timer,
                               now + (int64_t)PING_MS * REIGN__NS_PER_MS) == 0)
            c->ping_due_ns = now + (int64_t)PING_MS * REIGN__NS_PER_MS;
        pump_out(c);
    }
    wake(e);
}

static void readable(h2conn *c)
{
    uint8_t buf[READ_CHUNK];
    for (;;) {
        ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (r <= 0) {
            char why[160];
            broken(c, r < 0 ? errno : 0, why, sizeof(why));
            conn_close(c, why);
            return;
        }
        c->last_read_ns = reign__now_ns();
        ssize_t used = nghttp2_session_mem_recv(c->s, buf, (size_t)r);
        if (used < 0) {
            char why[160];
            snprintf(why, sizeof(why), "not HTTP/2 from the member (%s)",
                     nghttp2_strerror((int)used));
            conn_close(c, why);
            return;
        }
    }
    pump_out(c); /* what reading made: SETTINGS and PING acks, window updates */
}

void reign__h2_event(reign__etcd *e, h2conn *c, uint32_t events)
{
    (void)e;
    if (c->connecting) {
        if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            connect_failed(c, err, NULL);
            return;
        }
        c->connecting = false;
        reign__timer_stop(c->e->cfg.timers, &c->timer);
        pump_out(c);
        return;
    }
    if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
        readable(c); /* may close c */
        return;
    }
    if (events & EPOLLOUT)
        pump_out(c);
}

/* ---- requests ------------------------------------------------------------------------------ */

#define NV(n, v, vl)                                                                               \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NO_COPY_NAME          \
    }

int reign__h2_send(reign__etcd *e, ereq *q)
{
    char why[CURL_ERROR_SIZE];
    int rc = reign__eg_start(q, why, sizeof(why));
    if (rc == REIGN_ENOMEM)
        return rc;
    if (rc < 0) {
        reign__strlcpy(q->why, why, sizeof(q->why));
        reign__h1_ended(e, q, rc);
        return 0;
    }
    h2stream *hs = reign__calloc(1, sizeof(*hs));
    if (!hs)
        return REIGN_ENOMEM;
    hs->q = q;
    reign__timer_init(&hs->timer, stream_timer, hs);
    q->hs = hs;
    h2conn *c = conn_get(e, q->member, why, sizeof(why));
    if (!c) {
        end(hs, REIGN_ECONNLOSS, why);
        return 0;
    }
    if (q->timeout_ms > 0 &&
        reign__timer_start(e->cfg.timers, &hs->timer,
                           reign__now_ns() + (int64_t)q->timeout_ms * REIGN__NS_PER_MS) < 0) {
        stream_free(hs);
        return REIGN_ENOMEM;
    }
    const char *member = e->members[q->member] + strlen("http://");
    const char *path = reign__pb_path(q->g.m);
    nghttp2_nv nv[8] = {
        NV(":method", "POST", 4),
        NV(":scheme", "http", 4),
        NV(":authority", member, strlen(member)),
        NV(":path", path, strlen(path)),
        NV("content-type", "application/grpc", 16),
        NV("te", "trailers", 8),
    };
    size_t n = 6;
    if (q->stream) /* a member that loses its leader cancels the watch instead of going silent */
        nv[n++] = (nghttp2_nv)NV("hasleader", "true", 4);
    const char *tok = e->token_header ? strchr(e->token_header, ' ') : NULL;
    if (tok)
        nv[n++] = (nghttp2_nv)NV("authorization", tok + 1, strlen(tok + 1));
    nghttp2_data_provider body = {.source = {.ptr = hs}, .read_callback = on_read_body};
    int32_t id = nghttp2_submit_request(c->s, NULL, nv, n, &body, hs);
    if (id < 0) {
        snprintf(why, sizeof(why), "HTTP/2: %s", nghttp2_strerror(id));
        end(hs, REIGN_ECONNLOSS, why);
        return 0;
    }
    hs->id = id;
    hs->c = c;
    hs->next = c->streams;
    if (c->streams)
        c->streams->prev = hs;
    c->streams = hs;
    pump_out(c); /* if it broke, q ended with it */
    return 0;
}

void reign__h2_withdraw(reign__etcd *e, ereq *q)
{
    h2stream *hs = q->hs;
    if (hs) {
        h2conn *c = hs->c;
        int32_t id = hs->id;
        stream_free(hs);
        if (c && id > 0) {
            nghttp2_submit_rst_stream(c->s, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            pump_out(c);
        }
    }
    reign__h1_withdraw(e, q); /* off the list of ended ones */
}

int reign__h2_init(reign__etcd *e)
{
    pthread_once(&callbacks_once, callbacks_init);
    e->h2conns = reign__calloc(e->n_members, sizeof(*e->h2conns));
    return callbacks && e->h2conns ? 0 : REIGN_ENOMEM;
}

void reign__h2_free(reign__etcd *e)
{
    while (e->h2all)
        conn_close(e->h2all, "closed");
    reign__free(e->h2conns);
    e->h2conns = NULL;
}

/* ---- one call, blocking -------------------------------------------------------------------- */

long reign__eg_http_status(int grpc_status)
{
    /* as the gateway maps them (grpc-gateway's HTTPStatusFromCode) */
    static const short http[] = {200, 408, 500, 400, 504, 404, 409, 403, 429,
                                 400, 409, 400, 501, 500, 503, 500, 401};
    return grpc_status >= 0 && grpc_status < (int)(sizeof(http) / sizeof(http[0]))
               ? http[grpc_status]
               : 500;
}

/* The state of a blocking call: one stream on a connection of its own. */
typedef struct h2sync {
    int fd;
    int64_t until;
    ereq q;
    size_t wire_at;
    bool done, broken;
    uint32_t error_code;
} h2sync;

static ssize_t sync_send(nghttp2_session *s, const uint8_t *data, size_t n, int flags, void *arg)
{
    (void)s;
    (void)flags;
    h2sync *x = arg;
    for (;;) {
        ssize_t w = send(x->fd, data, n, MSG_NOSIGNAL);
        if (w >= 0)
            return w;
        if ((errno == EAGAIN || errno == EINTR) && reign__h1_wait_fd(x->fd, POLLOUT, x->until))
            continue;
        x->broken = true;
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
}

static ssize_t sync_body(nghttp2_session *s, int32_t id, uint8_t *buf, size_t n, uint32_t *flags,
                         nghttp2_data_source *src, void *arg)
{
    (void)s;
    (void)id;
    (void)src;
    h2sync *x = arg;
    return body_part(&x->q.g.wire, &x->wire_at, buf, n, flags);
}

static int sync_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                       size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                       void *arg)
{
    (void)s;
    (void)flags;
    h2sync *x = arg;
    if (f->hd.type == NGHTTP2_HEADERS)
        header(&x->q, name, namelen, value, valuelen);
    return 0;
}

static int sync_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t n,
                     void *arg)
{
    (void)s;
    (void)flags;
    (void)id;
    h2sync *x = arg;
    if (!reign__eg_got(&x->q, data, n))
        x->broken = true;
    return 0;
}

static int sync_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *arg)
{
    (void)s;
    (void)id;
    h2sync *x = arg;
    x->done = true;
    x->error_code = error_code;
    return 0;
}

long reign__h2_post(const char *member, size_t mlen, const char *path, const char *body,
                    const char *header, int64_t until, reign__buf *out, char *why, size_t whylen)
{
    why[0] = '\0';
    if (out)
        reign__buf_reset(out);
    h2sync x = {.fd = -1, .until = until};
    x.q.path = path;
    char msg[CURL_ERROR_SIZE] = "";
    nghttp2_session_callbacks *cb = NULL;
    nghttp2_session *s = NULL;
    long status = 0;
    if (reign__buf_puts(&x.q.body, body) < 0 || reign__eg_start(&x.q, msg, sizeof(msg)) < 0) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member, msg[0] ? msg : "no memory");
        goto out;
    }
    x.fd = reign__h1_dial(member, mlen, until, why, whylen);
    if (x.fd < 0)
        goto out;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        goto oom;
    nghttp2_session_callbacks_set_send_callback(cb, sync_send);
    nghttp2_session_callbacks_set_on_header_callback(cb, sync_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, sync_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, sync_close);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}};
    const char *authority = member + strlen("http://");
    const char *gpath = reign__pb_path(x.q.g.m);
    const char *tok = header ? strchr(header, ' ') : NULL;
    nghttp2_nv nv[7] = {
        NV(":method", "POST", 4),
        NV(":scheme", "http", 4),
        NV(":authority", authority, mlen - strlen("http://")),
        NV(":path", gpath, strlen(gpath)),
        NV("content-type", "application/grpc", 16),
        NV("te", "trailers", 8),
    };
    size_t n = 6;
    if (tok)
        nv[n++] = (nghttp2_nv)NV("authorization", tok + 1, strlen(tok + 1));
    nghttp2_data_provider prd = {.read_callback = sync_body};
    if (nghttp2_session_client_new(&s, cb, &x) != 0 ||
        nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, iv, 1) != 0 ||
        nghttp2_submit_request(s, NULL, nv, n, &prd, NULL) < 0)
        goto oom;
    uint8_t buf[READ_CHUNK];
    while (!x.done && !x.broken) {
        if (nghttp2_session_send(s) != 0) {
            reign__errf(why, whylen, "%.*s: cannot send", (int)mlen, member);
            goto out;
        }
        if (!reign__h1_wait_fd(x.fd, POLLIN, until)) {
            reign__errf(why, whylen, "%.*s: no answer in time", (int)mlen, member);
            goto out;
        }
        ssize_t r = recv(x.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0 || nghttp2_session_mem_recv(s, buf, (size_t)r) < 0 ||
            (!x.done && !nghttp2_session_want_read(s) && !nghttp2_session_want_write(s))) {
            reign__errf(why, whylen, "%.*s: %s", (int)mlen, member,
                        r <= 0 ? "connection closed before the whole answer" : "not HTTP/2");
            goto out;
        }
    }
    if (x.broken) {
        reign__errf(why, whylen, "%.*s: not a gRPC answer", (int)mlen, member);
        goto out;
    }
    if (x.error_code != NGHTTP2_NO_ERROR && x.q.g.status < 0) {
        reign__errf(why, whylen, "%.*s: stream reset (%s)", (int)mlen, member,
                    nghttp2_http2_strerror(x.error_code));
        goto out;
    }
    if (reign__eg_end(&x.q, msg, sizeof(msg)) != 0) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member, msg);
        goto out;
    }
    status = reign__eg_http_status(x.q.g.status);
    if (out && reign__buf_append(out, x.q.resp.data ? x.q.resp.data : "", x.q.resp.len) < 0)
        status = 0;
    goto out;
oom:
    reign__errf(why, whylen, "%.*s: no memory", (int)mlen, member);
out:
    if (s)
        nghttp2_session_del(s);
    if (cb)
        nghttp2_session_callbacks_del(cb);
    if (x.fd >= 0)
        close(x.fd);
    reign__eg_free(&x.q);
    /* the body may hold a password (a login): wiped */
    reign__buf_wipe(&x.q.body);
    reign__buf_wipe(&x.q.resp);
    return status;
}
