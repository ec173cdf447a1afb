/*
 * fake_h2_member.h - a fake etcd member's gRPC side for the unit test of reign's HTTP/2
 * transport (test_etcd_h2.c): a loopback listener whose script, on a thread of its own, plays
 * what a member may do with libnghttp2's server session (read the client's preface and its
 * calls; answer with HEADERS, DATA frames cut where the script says, trailers; reset a stream,
 * send a GOAWAY, close the connection, or answer something that is not HTTP/2 at all), and
 * records what the client sent: each call's headers and body, the RST_STREAMs and GOAWAYs, the
 * client's SETTINGS.  etcd's answers are protobuf-c's structs of etcd_rpc.proto, packed.
 *
 * As in fake_member.h, the test and the script wait for each other (an eventfd one way, a pipe
 * the other), never on the clock; a wait that lasts GUARD_MS is a stuck test, noted in
 * `trouble`.  A step fails once (trouble, or the test ended it) and every later one does
 * nothing, so that a script reads as a list of steps.  What the script records is read by the
 * test after a stage says so, or once hf_stop() has joined the thread.
 */
#ifndef REIGN_TEST_UNIT_FAKE_H2_MEMBER_H
#define REIGN_TEST_UNIT_FAKE_H2_MEMBER_H

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
#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>

#include "core.h"
#include "etcd_rpc.pb-c.h"

#define GUARD_MS 20000 /* a wait this long is a stuck test */
#define HF_CONNS 8
#define HF_REQS  256
#define HF_BODY  2048

/* One call the client made: what came, and what the script sends on it. */
typedef struct hf_req {
    int conn;   /* the connection it came on (in the order accepted) */
    int32_t id; /* its stream */
    char method[16], scheme[16], authority[64], path[64], ctype[64], te[32], auth[64];
    char hasleader[16];
    uint8_t body[HF_BODY];
    size_t body_len;
    bool ended;         /* the client's END_STREAM came: the whole call */
    bool got_rst;       /* the client reset the stream ... */
    uint32_t rst;       /* ... with this code */
    const uint8_t *out; /* what a DATA submission sends, and how far it got */
    size_t out_len, out_at;
} hf_req;

typedef struct h2fake h2fake;

/* A connection the script accepted. */
typedef struct hf_conn {
    h2fake *f;
    int fd;
    nghttp2_session *s;
    bool mute;                  /* reads only: not a byte goes out through the session */
    bool deaf;                  /* not a byte read or sent any more, and left open */
    bool shut;                  /* its writing half closed */
    bool eof;                   /* the client closed it (or reset it) */
    bool blocked;               /* the socket took no more */
    int goaways;                /* GOAWAY frames from the client */
    int pings;                  /* PING frames from the client (the session ACKs them) */
    bool settings;              /* the client's SETTINGS came ... */
    uint32_t push;              /* ... SETTINGS_ENABLE_PUSH */
    uint32_t window;            /* ... SETTINGS_INITIAL_WINDOW_SIZE */
    uint32_t conn_window_inc;   /* WINDOW_UPDATEs of the whole connection */
    uint32_t stream_window_inc; /* ... and of its streams */
} hf_conn;

typedef void hf_script(h2fake *f);

struct h2fake {
    int lfd, port;
    int stop;  /* eventfd: the test ends, the script returns */
    int said;  /* eventfd: the script reached a stage */
    int go[2]; /* pipe: the test lets the script go on */
    pthread_t th;
    bool running;
    hf_script *script;
    void *arg; /* the test's, for the script */
    nghttp2_session_callbacks *cbs;
    bool dead; /* a step failed or the test ended: no more steps */
    hf_conn conns[HF_CONNS];
    int n_conns;
    /* What it saw: the test reads it once a later stage says so. */
    atomic_int accepts, stage;
    int n_reqs;
    hf_req *reqs; /* HF_REQS, in the order their HEADERS came */
    char trouble[200];
};

static bool hf_trouble(h2fake *f, const char *fmt, ...) REIGN__PRINTF(2, 3);
static bool hf_trouble(h2fake *f, const char *fmt, ...)
{
    if (!f->trouble[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(f->trouble, sizeof(f->trouble), fmt, ap);
        va_end(ap);
    }
    f->dead = true;
    return false;
}

/* ---- the server session's callbacks -------------------------------------------------------- */

static ssize_t hf_on_send(nghttp2_session *s, const uint8_t *data, size_t n, int flags, void *arg)
{
    hf_conn *c = arg;
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
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    }
}

static int hf_on_begin(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
    hf_conn *c = arg;
    h2fake *f = c->f;
    if (fr->hd.type != NGHTTP2_HEADERS || fr->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (f->n_reqs == HF_REQS) {
        hf_trouble(f, "more than %d calls", HF_REQS);
        return 0;
    }
    hf_req *r = &f->reqs[f->n_reqs++];
    memset(r, 0, sizeof(*r));
    r->conn = (int)(c - f->conns);
    r->id = fr->hd.stream_id;
    nghttp2_session_set_stream_user_data(s, r->id, r);
    return 0;
}

static void hf_copy(char *dst, size_t size, const uint8_t *v, size_t n)
{
    if (n >= size)
        n = size - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

static int hf_on_header(nghttp2_session *s, const nghttp2_frame *fr, const uint8_t *name,
                        size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                        void *arg)
{
    hf_req *r = nghttp2_session_get_stream_user_data(s, fr->hd.stream_id);
    if (!r)
        return 0;
    static const struct {
        const char *name;
        size_t off, size;
    } known[] = {
#define HF_H(n, field) {n, offsetof(hf_req, field), sizeof(((hf_req *)0)->field)}
        HF_H(":method", method),     HF_H(":scheme", scheme),      HF_H(":authority", authority),
        HF_H(":path", path),         HF_H("content-type", ctype),  HF_H("te", te),
        HF_H("authorization", auth), HF_H("hasleader", hasleader),
#undef HF_H
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strlen(known[i].name) == namelen && !memcmp(known[i].name, name, namelen))
            hf_copy((char *)r + known[i].off, known[i].size, value, valuelen);
    return 0;
}

static int hf_on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t n,
                      void *arg)
{
    hf_conn *c = arg;
    hf_req *r = nghttp2_session_get_stream_user_data(s, id);
    if (!r)
        return 0;
    if (r->body_len + n > sizeof(r->body)) {
        hf_trouble(c->f, "a call's body past %d bytes", HF_BODY);
        return 0;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    return 0;
}

static int hf_on_frame(nghttp2_session *s, const nghttp2_frame *fr, void *arg)
{
    hf_conn *c = arg;
    hf_req *r = fr->hd.stream_id ? nghttp2_session_get_stream_user_data(s, fr->hd.stream_id) : NULL;
    switch (fr->hd.type) {
    case NGHTTP2_HEADERS:
    case NGHTTP2_DATA:
        if (r && (fr->hd.flags & NGHTTP2_FLAG_END_STREAM))
            r->ended = true;
        break;
    case NGHTTP2_RST_STREAM:
        if (r) {
            r->got_rst = true;
            r->rst = fr->rst_stream.error_code;
        }
        break;
    case NGHTTP2_GOAWAY:
        c->goaways++;
        break;
    case NGHTTP2_PING:
        if (!(fr->hd.flags & NGHTTP2_FLAG_ACK))
            c->pings++;
        break;
    case NGHTTP2_SETTINGS:
        if (fr->hd.flags & NGHTTP2_FLAG_ACK)
            break;
        c->settings = true;
        for (size_t i = 0; i < fr->settings.niv; i++)
            if (fr->settings.iv[i].settings_id == NGHTTP2_SETTINGS_ENABLE_PUSH)
                c->push = fr->settings.iv[i].value;
            else if (fr->settings.iv[i].settings_id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE)
                c->window = fr->settings.iv[i].value;
        break;
    case NGHTTP2_WINDOW_UPDATE:
        if (!fr->hd.stream_id)
            c->conn_window_inc += (uint32_t)fr->window_update.window_size_increment;
        else
            c->stream_window_inc += (uint32_t)fr->window_update.window_size_increment;
        break;
    }
    return 0;
}

/* A DATA submission's bytes, as the session asks for them (no more than a frame, or than the
 * client's windows allow). */
static ssize_t hf_read(nghttp2_session *s, int32_t id, uint8_t *buf, size_t n, uint32_t *flags,
                       nghttp2_data_source *src, void *arg)
{
    hf_req *r = src->ptr;
    size_t left = r->out_len - r->out_at;
    if (n > left)
        n = left;
    memcpy(buf, r->out + r->out_at, n);
    r->out_at += n;
    if (r->out_at == r->out_len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* ---- waiting ------------------------------------------------------------------------------- */

enum hf_until {
    HF_CALLS,   /* the first n calls whole (their END_STREAM came) */
    HF_SENT,    /* call n's DATA submission gone, and nothing left to send */
    HF_FLUSHED, /* nothing left to send on connection n */
    HF_RST,     /* the client reset call n */
    HF_EOF,     /* the client closed connection n */
    HF_GOAWAY,  /* a GOAWAY from the client on connection n, or its close */
    HF_PING,    /* a PING from the client on connection n, and its ACK gone */
    HF_GO,      /* the test let the script go on */
};

static bool hf_reached(h2fake *f, enum hf_until what, int n)
{
    switch (what) {
    case HF_CALLS:
        if (f->n_reqs < n)
            return false;
        for (int i = 0; i < n; i++)
            if (!f->reqs[i].ended)
                return false;
        return true;
    case HF_SENT: {
        const hf_req *r = &f->reqs[n];
        return r->out_at == r->out_len && !nghttp2_session_want_write(f->conns[r->conn].s);
    }
    case HF_FLUSHED:
        return !nghttp2_session_want_write(f->conns[n].s);
    case HF_RST:
        return f->reqs[n].got_rst;
    case HF_EOF:
        return f->conns[n].eof;
    case HF_GOAWAY:
        return f->conns[n].goaways > 0 || f->conns[n].eof;
    case HF_PING:
        return f->conns[n].pings > 0 && !nghttp2_session_want_write(f->conns[n].s);
    case HF_GO: {
        struct pollfd p = {.fd = f->go[0], .events = POLLIN};
        char b;
        return poll(&p, 1, 0) == 1 && read(f->go[0], &b, 1) == 1;
    }
    }
    return false;
}

/* Sends what the sessions have and reads what comes, on every connection, until `what`. */
static bool hf_until(h2fake *f, enum hf_until what, int n)
{
    int64_t guard = reign__now_ns() + GUARD_MS * REIGN__NS_PER_MS;
    while (!f->dead) {
        for (int i = 0; i < f->n_conns; i++) {
            hf_conn *c = &f->conns[i];
            if (c->fd < 0 || c->eof || c->mute || c->shut || c->deaf)
                continue;
            c->blocked = false;
            int rc = nghttp2_session_send(c->s);
            if (rc != 0)
                return hf_trouble(f, "send on connection %d: %s", i, nghttp2_strerror(rc));
        }
        if (hf_reached(f, what, n))
            return true;
        struct pollfd p[HF_CONNS + 2];
        int at[HF_CONNS], k = 0;
        for (int i = 0; i < f->n_conns; i++) {
            hf_conn *c = &f->conns[i];
            if (c->fd >= 0 && !c->eof && !c->deaf) {
                at[k] = i;
                p[k++] =
                    (struct pollfd){.fd = c->fd, .events = POLLIN | (c->blocked ? POLLOUT : 0)};
            }
        }
        /* the test's pipe too, when the script waits for it */
        p[k] = (struct pollfd){.fd = what == HF_GO ? f->go[0] : -1, .events = POLLIN};
        p[k + 1] = (struct pollfd){.fd = f->stop, .events = POLLIN};
        int64_t left = (guard - reign__now_ns()) / REIGN__NS_PER_MS;
        int r = left > 0 ? poll(p, (nfds_t)k + 2, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return hf_trouble(f, "the script waited in vain (%d, %d)", (int)what, n);
        if (r < 0 || p[k + 1].revents) {
            f->dead = true; /* the test ended it */
            return false;
        }
        for (int j = 0; j < k; j++) {
            hf_conn *c = &f->conns[at[j]];
            if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            uint8_t buf[65536];
            ssize_t got = recv(c->fd, buf, sizeof(buf), 0);
            if (got < 0 && (errno == EAGAIN || errno == EINTR))
                continue;
            if (got <= 0) {
                c->eof = true; /* closed, or reset */
                continue;
            }
            ssize_t used = nghttp2_session_mem_recv(c->s, buf, (size_t)got);
            if (used < 0)
                return hf_trouble(f, "not HTTP/2 from the client: %s", nghttp2_strerror((int)used));
        }
    }
    return false;
}

/* ---- steps --------------------------------------------------------------------------------- */

/* The next connection: its session's SETTINGS go first (max_streams > 0: that many streams at
 * once), unless mute: a member that reads the client's bytes and answers none. */
static void hf_accept_as(h2fake *f, int max_streams, bool mute)
{
    if (f->dead)
        return;
    if (f->n_conns == HF_CONNS) {
        hf_trouble(f, "too many connections");
        return;
    }
    struct pollfd p[2] = {{.fd = f->lfd, .events = POLLIN}, {.fd = f->stop, .events = POLLIN}};
    int r;
    do
        r = poll(p, 2, GUARD_MS);
    while (r < 0 && errno == EINTR);
    if (r == 0) {
        hf_trouble(f, "no connection came");
        return;
    }
    if (r < 0 || p[1].revents) {
        f->dead = true;
        return;
    }
    hf_conn *c = &f->conns[f->n_conns];
    memset(c, 0, sizeof(*c));
    c->f = f;
    c->fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c->fd < 0) {
        hf_trouble(f, "accept: %s", strerror(errno));
        return;
    }
    f->n_conns++;
    c->mute = mute;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)max_streams}};
    if (nghttp2_session_server_new(&c->s, f->cbs, c) != 0 ||
        (!mute &&
         nghttp2_submit_settings(c->s, NGHTTP2_FLAG_NONE, iv, max_streams > 0 ? 1 : 0) != 0)) {
        hf_trouble(f, "no server session");
        return;
    }
    atomic_fetch_add(&f->accepts, 1);
}

static void hf_accept(h2fake *f)
{
    hf_accept_as(f, 0, false);
}

/* Until the first n calls came whole. */
static void hf_calls(h2fake *f, int n)
{
    hf_until(f, HF_CALLS, n);
}

/* The next connection, then until the first n calls came whole. */
static void hf_take(h2fake *f, int n)
{
    hf_accept(f);
    hf_calls(f, n);
}

static void hf_check(h2fake *f, int rc, const char *what)
{
    if (rc != 0)
        hf_trouble(f, "%s: %s", what, nghttp2_strerror(rc));
}

#define HF_NV(n, v)                                                                                \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }

/* Call i's answer HEADERS: status and content type (end: with END_STREAM, a body-less answer). */
static void hf_head_as(h2fake *f, int i, const char *status, const char *ctype, bool end)
{
    if (f->dead)
        return;
    hf_req *r = &f->reqs[i];
    nghttp2_nv nv[] = {HF_NV(":status", status), HF_NV("content-type", ctype)};
    hf_check(f,
             nghttp2_submit_headers(f->conns[r->conn].s,
                                    end ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE, r->id, NULL,
                                    nv, 2, NULL),
             "HEADERS");
    hf_until(f, HF_FLUSHED, r->conn);
}

static void hf_head(h2fake *f, int i)
{
    hf_head_as(f, i, "200", "application/grpc", false);
}

/* n bytes on call i, as one DATA frame when they fit in one (end: with END_STREAM). */
static void hf_data(h2fake *f, int i, const void *p, size_t n, bool end)
{
    if (f->dead)
        return;
    hf_req *r = &f->reqs[i];
    r->out = p;
    r->out_len = n;
    r->out_at = 0;
    nghttp2_data_provider prd = {.source = {.ptr = r}, .read_callback = hf_read};
    hf_check(f,
             nghttp2_submit_data(f->conns[r->conn].s,
                                 end ? NGHTTP2_FLAG_END_STREAM : NGHTTP2_FLAG_NONE, r->id, &prd),
             "DATA");
    hf_until(f, HF_SENT, i);
    r->out = NULL;
    r->out_len = r->out_at = 0;
}

/* Call i's trailers, which end it: grpc-status code, and grpc-message msg (NULL: none) as it
 * goes on the wire (percent-encoded). */
static void hf_trailers(h2fake *f, int i, int code, const char *msg)
{
    if (f->dead)
        return;
    hf_req *r = &f->reqs[i];
    char st[16];
    snprintf(st, sizeof(st), "%d", code);
    nghttp2_nv nv[] = {HF_NV("grpc-status", st), HF_NV("grpc-message", msg ? msg : "")};
    hf_check(f, nghttp2_submit_trailer(f->conns[r->conn].s, r->id, nv, msg ? 2 : 1), "trailers");
    hf_until(f, HF_FLUSHED, r->conn);
}

/* gRPC's trailers-only answer: one HEADERS, status and trailers, with END_STREAM. */
static void hf_trailers_only(h2fake *f, int i, int code, const char *msg)
{
    if (f->dead)
        return;
    hf_req *r = &f->reqs[i];
    char st[16];
    snprintf(st, sizeof(st), "%d", code);
    nghttp2_nv nv[] = {HF_NV(":status", "200"), HF_NV("content-type", "application/grpc"),
                       HF_NV("grpc-status", st), HF_NV("grpc-message", msg)};
    hf_check(f,
             nghttp2_submit_headers(f->conns[r->conn].s, NGHTTP2_FLAG_END_STREAM, r->id, NULL, nv,
                                    4, NULL),
             "HEADERS");
    hf_until(f, HF_FLUSHED, r->conn);
}

static void hf_rst(h2fake *f, int i, uint32_t code)
{
    if (f->dead)
        return;
    hf_req *r = &f->reqs[i];
    hf_check(f, nghttp2_submit_rst_stream(f->conns[r->conn].s, NGHTTP2_FLAG_NONE, r->id, code),
             "RST_STREAM");
    hf_until(f, HF_FLUSHED, r->conn);
}

/* A GOAWAY on connection c: the streams up to last were taken, later ones were not. */
static void hf_goaway(h2fake *f, int c, int32_t last)
{
    if (f->dead)
        return;
    hf_check(
        f, nghttp2_submit_goaway(f->conns[c].s, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0),
        "GOAWAY");
    hf_until(f, HF_FLUSHED, c);
}

/* n bytes on connection c as they are, past the session. */
static void hf_raw(h2fake *f, int c, const void *p, size_t n)
{
    const char *s = p;
    while (!f->dead && n) {
        ssize_t w = send(f->conns[c].fd, s, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
            struct pollfd q = {.fd = f->conns[c].fd, .events = POLLOUT};
            poll(&q, 1, GUARD_MS);
            continue;
        }
        if (w < 0) {
            hf_trouble(f, "raw send: %s", strerror(errno));
            return;
        }
        s += w;
        n -= (size_t)w;
    }
}

/* The member closes connection c: its FIN (a shutdown, not a close that unread bytes would
 * turn into a reset), then it waits for the client's close. */
static void hf_close(h2fake *f, int c)
{
    if (f->dead)
        return;
    shutdown(f->conns[c].fd, SHUT_WR);
    f->conns[c].shut = true;
    hf_until(f, HF_EOF, c);
}

/* Connection c goes deaf, as a member stopped (SIGSTOP) or cut off without a reset: it reads
 * and sends nothing more, and stays open. */
static void hf_deaf(h2fake *f, int c)
{
    if (!f->dead)
        f->conns[c].deaf = true;
}

static void hf_say(h2fake *f)
{
    if (f->dead)
        return;
    atomic_fetch_add(&f->stage, 1);
    uint64_t one = 1;
    ssize_t w = write(f->said, &one, sizeof(one));
    (void)w;
}

/* Until the test lets the script go on; the connections are served meanwhile (a PING, a
 * WINDOW_UPDATE, a close noticed). */
static void hf_await(h2fake *f)
{
    hf_until(f, HF_GO, 0);
}

/* ---- etcd's answers (on the script's thread: no assertion here) ---------------------------- */

/* m after gRPC's prefix, allocated (NULL: no memory). */
static uint8_t *framed(const ProtobufCMessage *m, size_t *len)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *b = malloc(n + 5);
    if (!b)
        return NULL;
    b[0] = 0;
    b[1] = (uint8_t)(n >> 24);
    b[2] = (uint8_t)(n >> 16);
    b[3] = (uint8_t)(n >> 8);
    b[4] = (uint8_t)n;
    protobuf_c_message_pack(m, b + 5);
    *len = n + 5;
    return b;
}

/* Call i answered whole: HEADERS, message m in one DATA frame, trailers with grpc-status 0. */
static void answer(h2fake *f, int i, const ProtobufCMessage *m)
{
    size_t n;
    uint8_t *b = framed(m, &n);
    if (!b) {
        hf_trouble(f, "no memory");
        return;
    }
    hf_head(f, i);
    hf_data(f, i, b, n, false);
    hf_trailers(f, i, 0, NULL);
    free(b);
}

static Etcdserverpb__ResponseHeader header_at(int64_t revision)
{
    Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
    h.revision = revision;
    return h;
}

/* A txn's answer at revision 7: it succeeded, its one put answered. */
static void answer_txn_put(h2fake *f, int i)
{
    Etcdserverpb__ResponseHeader h = header_at(7);
    Etcdserverpb__PutResponse put = ETCDSERVERPB__PUT_RESPONSE__INIT;
    put.header = &h;
    Etcdserverpb__ResponseOp op = ETCDSERVERPB__RESPONSE_OP__INIT;
    op.response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT;
    op.response_put = &put;
    Etcdserverpb__ResponseOp *ops[] = {&op};
    Etcdserverpb__TxnResponse txn = ETCDSERVERPB__TXN_RESPONSE__INIT;
    txn.header = &h;
    txn.succeeded = true;
    txn.n_responses = 1;
    txn.responses = ops;
    answer(f, i, &txn.base);
}

/* A Range answer at revision 7 that counts n keys, framed (NULL: no memory). */
static uint8_t *range_framed(int64_t n, size_t *len)
{
    Etcdserverpb__ResponseHeader h = header_at(7);
    Etcdserverpb__RangeResponse r = ETCDSERVERPB__RANGE_RESPONSE__INIT;
    r.header = &h;
    r.count = n;
    return framed(&r.base, len);
}

/* A Range answer at revision 7 that found one key, its value n bytes at v. */
static void answer_value(h2fake *f, int i, const uint8_t *v, size_t n)
{
    Etcdserverpb__ResponseHeader h = header_at(7);
    Etcdserverpb__KeyValue kv = ETCDSERVERPB__KEY_VALUE__INIT;
    kv.key = (ProtobufCBinaryData){4, (uint8_t *)"/big"};
    kv.value = (ProtobufCBinaryData){n, (uint8_t *)v};
    Etcdserverpb__KeyValue *kvs[] = {&kv};
    Etcdserverpb__RangeResponse r = ETCDSERVERPB__RANGE_RESPONSE__INIT;
    r.header = &h;
    r.n_kvs = 1;
    r.kvs = kvs;
    r.count = 1;
    answer(f, i, &r.base);
}

/* A lease's keepalive answered: its TTL 10 s, at revision 5 (NULL: no memory). */
static uint8_t *keepalive_framed(int64_t id, size_t *len)
{
    Etcdserverpb__ResponseHeader h = header_at(5);
    Etcdserverpb__LeaseKeepAliveResponse ka = ETCDSERVERPB__LEASE_KEEP_ALIVE_RESPONSE__INIT;
    ka.header = &h;
    ka.id = id;
    ka.ttl = 10;
    return framed(&ka.base, len);
}

/* A Range answer at revision 7 that counts n keys. */
static void answer_range(h2fake *f, int i, int64_t n)
{
    size_t len;
    uint8_t *b = range_framed(n, &len);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    hf_head(f, i);
    hf_data(f, i, b, len, false);
    hf_trailers(f, i, 0, NULL);
    free(b);
}

/* ... as the gateway writes it. */
static const char *range_json(int64_t n)
{
    static char s[4][64];
    static int k;
    char *b = s[k++ & 3];
    snprintf(b, sizeof(s[0]), "{\"header\":{\"revision\":\"7\"},\"count\":\"%lld\"}", (long long)n);
    return b;
}

#define ANSWER "{\"header\":{\"revision\":\"7\"},\"count\":\"1\"}"

/* The gateway's line for each of the four watch answers below. */
#define LINE1 "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n"
#define LINE2                                                                                      \
    "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":[{\"kv\":{\"key\":\"L3IvYQ==\","      \
    "\"mod_revision\":\"6\",\"value\":\"MQ==\"}}]}}\n"
#define LINE3                                                                                      \
    "{\"result\":{\"header\":{\"revision\":\"7\"},\"events\":[{\"type\":\"DELETE\",\"kv\":"        \
    "{\"key\":\"L3IvYQ==\",\"mod_revision\":\"7\"}}]}}\n"
#define LINE4 "{\"result\":{\"header\":{\"revision\":\"8\"}}}\n"

/* Four watch answers, framed one after the other (NULL: no memory); *first: the first's length. */
static uint8_t *watch_answers(size_t *first, size_t *len)
{
    Etcdserverpb__ResponseHeader h[4] = {header_at(5), header_at(6), header_at(7), header_at(8)};
    Etcdserverpb__KeyValue kv[2] = {ETCDSERVERPB__KEY_VALUE__INIT, ETCDSERVERPB__KEY_VALUE__INIT};
    kv[0].key = kv[1].key = (ProtobufCBinaryData){4, (uint8_t *)"/r/a"};
    kv[0].mod_revision = 6;
    kv[0].value = (ProtobufCBinaryData){1, (uint8_t *)"1"};
    kv[1].mod_revision = 7;
    Etcdserverpb__Event ev[2] = {ETCDSERVERPB__EVENT__INIT, ETCDSERVERPB__EVENT__INIT};
    ev[0].kv = &kv[0];
    ev[1].type = ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE;
    ev[1].kv = &kv[1];
    Etcdserverpb__Event *evs[2] = {&ev[0], &ev[1]};
    Etcdserverpb__WatchResponse w[4];
    uint8_t *all = NULL;
    *len = 0;
    for (int i = 0; i < 4; i++) {
        w[i] = (Etcdserverpb__WatchResponse)ETCDSERVERPB__WATCH_RESPONSE__INIT;
        w[i].header = &h[i];
    }
    w[0].created = true;
    w[1].n_events = w[2].n_events = 1;
    w[1].events = &evs[0];
    w[2].events = &evs[1];
    for (int i = 0; i < 4; i++) {
        size_t n;
        uint8_t *b = framed(&w[i].base, &n);
        uint8_t *grown = b ? realloc(all, *len + n) : NULL;
        if (!grown) {
            free(b);
            free(all);
            return NULL;
        }
        all = grown;
        memcpy(all + *len, b, n);
        free(b);
        if (i == 0)
            *first = n;
        *len += n;
    }
    return all;
}

/* Watch call i answered (watch_answers()): its HEADERS and the first (created) when !rest,
 * else the three others. */
static void answer_watch(h2fake *f, int i, bool rest)
{
    size_t first, n;
    uint8_t *b = watch_answers(&first, &n);
    if (!b)
        return (void)hf_trouble(f, "no memory");
    if (!rest)
        hf_head(f, i);
    hf_data(f, i, rest ? b + first : b, rest ? n - first : first, false);
    free(b);
}

/* ---- the test's side (assertions: on the test's thread only) ------------------------------- */

/* Call i as the fake saw it: a gRPC POST of path, whole, with the headers it must have. */
static const hf_req *hf_assert_call(h2fake *f, int i, const char *path, bool stream,
                                    const char *auth)
{
    assert_true(f->n_reqs > i);
    const hf_req *r = &f->reqs[i];
    char authority[64];
    snprintf(authority, sizeof(authority), "127.0.0.1:%d", f->port);
    assert_true(r->ended);
    assert_string_equal(r->method, "POST");
    assert_string_equal(r->scheme, "http");
    assert_string_equal(r->authority, authority);
    assert_string_equal(r->path, path);
    assert_string_equal(r->ctype, "application/grpc");
    assert_string_equal(r->te, "trailers");
    /* a watch that loses its member's leader is cancelled, not left silent */
    assert_string_equal(r->hasleader, stream ? "true" : "");
    assert_string_equal(r->auth, auth ? auth : "");
    return r;
}

/* Its body: one message after gRPC's prefix (not compressed), the whole body. */
static const uint8_t *hf_message(const hf_req *r, size_t *len)
{
    assert_true(r->body_len >= 5);
    assert_int_equal(r->body[0], 0);
    *len =
        (size_t)r->body[1] << 24 | (size_t)r->body[2] << 16 | (size_t)r->body[3] << 8 | r->body[4];
    assert_int_equal(r->body_len, 5 + *len);
    return r->body + 5;
}

static bool hf_bin_is(ProtobufCBinaryData b, const char *s)
{
    return b.len == strlen(s) && !memcmp(b.data, s, b.len);
}

static void *hf_main(void *arg)
{
    h2fake *f = arg;
    f->script(f);
    return NULL;
}

/* A socket bound to a loopback port of its own (*port), not listening. */
static int hf_bound(int *port)
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

static int hf_init(h2fake *f)
{
    memset(f, 0, sizeof(*f));
    f->stop = f->said = f->go[0] = f->go[1] = -1;
    f->reqs = calloc(HF_REQS, sizeof(*f->reqs));
    f->lfd = hf_bound(&f->port);
    if (!f->reqs || listen(f->lfd, 128) != 0)
        return -1;
    f->stop = eventfd(0, EFD_CLOEXEC);
    f->said = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (f->stop < 0 || f->said < 0 || pipe2(f->go, O_CLOEXEC) != 0 ||
        nghttp2_session_callbacks_new(&f->cbs) != 0)
        return -1;
    nghttp2_session_callbacks_set_send_callback(f->cbs, hf_on_send);
    nghttp2_session_callbacks_set_on_begin_headers_callback(f->cbs, hf_on_begin);
    nghttp2_session_callbacks_set_on_header_callback(f->cbs, hf_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(f->cbs, hf_on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(f->cbs, hf_on_frame);
    return 0;
}

static int hf_start(h2fake *f, hf_script *script, void *arg)
{
    f->script = script;
    f->arg = arg;
    if (pthread_create(&f->th, NULL, hf_main, f) != 0)
        return -1;
    f->running = true;
    return 0;
}

/* Ends the script, however far it got (its connections stay open): what it recorded may be
 * read from now on. */
static void hf_stop(h2fake *f)
{
    uint64_t one = 1;
    ssize_t w = write(f->stop, &one, sizeof(one));
    (void)w;
    if (f->running)
        pthread_join(f->th, NULL);
    f->running = false;
}

/* ... and it met no trouble. */
static void hf_stop_checked(h2fake *f)
{
    hf_stop(f);
    if (f->trouble[0])
        fail_msg("fake member: %s", f->trouble);
}

/* ... and it accepted n connections. */
static void hf_stop_accepted(h2fake *f, int n)
{
    hf_stop_checked(f);
    assert_int_equal(atomic_load(&f->accepts), n);
}

static void hf_free(h2fake *f)
{
    hf_stop(f);
    for (int i = 0; i < f->n_conns; i++) {
        if (f->conns[i].fd >= 0)
            close(f->conns[i].fd);
        if (f->conns[i].s)
            nghttp2_session_del(f->conns[i].s);
    }
    if (f->cbs)
        nghttp2_session_callbacks_del(f->cbs);
    close(f->lfd);
    close(f->stop);
    close(f->said);
    close(f->go[0]);
    close(f->go[1]);
    free(f->reqs);
}

static inline void hf_let_go(h2fake *f)
{
    char b = 1;
    ssize_t w = write(f->go[1], &b, 1);
    (void)w;
}

static inline int hf_stage(h2fake *f)
{
    return atomic_load(&f->stage);
}

#endif
