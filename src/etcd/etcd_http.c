/*
 * etcd_http.c - the requests of a client, on its loop (etcd_internal.h): their turns, the
 * member they go to, their answers read as reign's errors.  Two transports carry them: for
 * http:// members reign's own HTTP/1.1 (etcd_h1.c); for https:// ones libcurl's multi
 * interface, here, which says which sockets it waits on (they go into the backend's epoll set,
 * itself in the client's) and when it wants a timeout (one of the client's timers).
 * reign__eh_pump() hands the transport what is ready, then ends the requests it finished.  A
 * request's done never runs from inside the transport, so it may send the next request.
 *
 * Unary calls share kept-open connections; each watch stream has its own.  A request that got
 * no answer, or the gateway's "no leader" or "request timed out", moves the backend to the next
 * member: a member cut off from the others answers nothing useful.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "etcd_internal.h"

/* The calls at most in curl at once (ORDINARY_MAX), the watch streams (etcd_watch.c's
 * STREAMS_MAX), and the lease's and the token's own. */
#define MAX_CONNECTIONS_PER_MEMBER 96

reign__curl_api reign__cu;
static const reign__dl_symbol curl_symbols[] = {
    REIGN__CURL_FUNCTIONS(REIGN__DL_SYMBOL, reign__curl_api)};
static const reign__dl_library reign__etcd_curl_lib = {
    .scheme = "etcd://",
    .soname = "libcurl.so.4",
    .package = "libcurl4",
    .test_env = "REIGN_TEST_LIBCURL",
    .symbols = curl_symbols,
    .n_symbols = sizeof(curl_symbols) / sizeof(curl_symbols[0]),
    .table = &reign__cu,
};

static void pump_done(reign__etcd *e);
static void curl_done(reign__etcd *e);
static int curl_handle(reign__etcd *e, ereq *q);

static int on_socket(CURL *h, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)h;
    (void)socketp;
    reign__etcd *e = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(e->epfd, EPOLL_CTL_DEL, s, NULL);
        return 0;
    }
    struct epoll_event ev = {.events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
                                       (what & CURL_POLL_OUT ? EPOLLOUT : 0),
                             .data = {.fd = s}};
    if (epoll_ctl(e->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
        epoll_ctl(e->epfd, EPOLL_CTL_ADD, s, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    reign__etcd *e = userp;
    if (timeout_ms < 0)
        reign__timer_stop(e->cfg.timers, &e->curl_timer);
    else
        reign__timer_start(e->cfg.timers, &e->curl_timer,
                           reign__now_ns() + (int64_t)timeout_ms * REIGN__NS_PER_MS);
    return 0;
}

static void curl_timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    reign__etcd *e = arg;
    int running;
    reign__cu.curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    pump_done(e);
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    reign__cu.curl_global_init(CURL_GLOBAL_DEFAULT);
}

int reign__eh_load(bool tls, char *err, size_t errlen)
{
    if (!tls)
        return reign__h1_load(err, errlen);
    static reign__dl_slot slot = REIGN__DL_SLOT_INIT;
    int rc = reign__dl_load(&reign__etcd_curl_lib, &slot, err, errlen);
    if (rc == 0)
        pthread_once(&global_once, global_init);
    return rc;
}

int reign__eh_init(reign__etcd *e, char *err, size_t errlen)
{
    e->h1 = !e->cfg.tls && e->cfg.etcd_gateway;
    e->h2 = !e->cfg.tls && !e->cfg.etcd_gateway;
    reign__timer_init(&e->curl_timer, curl_timer_cb, e); /* reign__eh_free() stops it */
    int rc = reign__eh_load(e->cfg.tls, err, errlen);
    if (rc < 0)
        return rc;
    e->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (e->h1 || e->h2) {
        e->addrs = reign__calloc(e->n_members, sizeof(*e->addrs));
        if (e->epfd < 0 || !e->addrs || (e->h2 && reign__h2_init(e) < 0)) {
            reign__errf(err, errlen, "etcd: out of memory");
            return REIGN_ENOMEM;
        }
    } else {
        e->multi = reign__cu.curl_multi_init();
        if (e->epfd < 0 || !e->multi) {
            reign__errf(err, errlen, "etcd: cannot start libcurl's multi interface");
            return REIGN_ENOMEM;
        }
        reign__cu.curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
        reign__cu.curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
        reign__cu.curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer);
        reign__cu.curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
        reign__cu.curl_multi_setopt(e->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                                    (long)MAX_CONNECTIONS_PER_MEMBER);
        /* gRPC needs HTTP/2, which a libcurl built without libnghttp2 lacks: the gateway then. */
        const curl_version_info_data *v = reign__cu.curl_version_info(CURLVERSION_NOW);
        e->curl_grpc = !e->cfg.etcd_gateway && v && (v->features & CURL_VERSION_HTTP2);
        if (!e->cfg.etcd_gateway && !e->curl_grpc)
            reign__log(e->log, REIGN_LOG_INFO,
                       "etcd: this libcurl has no HTTP/2: etcd's JSON gateway, not gRPC");
    }
    if (e->cfg.epoll_fd >= 0) {
        struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = e}};
        if (epoll_ctl(e->cfg.epoll_fd, EPOLL_CTL_ADD, e->epfd, &ev) < 0) {
            reign__errf(err, errlen, "etcd: epoll: %s", strerror(errno));
            return -errno;
        }
    }
    return 0;
}

void reign__eh_free(reign__etcd *e)
{
    while (e->reqs)
        reign__eh_drop(e->reqs);
    reign__h2_free(e);
    reign__h1_free(e);
    if (e->multi)
        reign__cu.curl_multi_cleanup(e->multi);
    e->multi = NULL;
    reign__timer_stop(e->cfg.timers, &e->curl_timer);
    if (e->epfd >= 0) {
        if (e->cfg.epoll_fd >= 0)
            epoll_ctl(e->cfg.epoll_fd, EPOLL_CTL_DEL, e->epfd, NULL);
        close(e->epfd);
    }
    e->epfd = -1;
}

static size_t on_write(char *p, size_t size, size_t n, void *userp)
{
    /* out of memory: 0, and curl ends the request with an error */
    return reign__h1_got(userp, p, size * n) < 0 ? 0 : size * n;
}

/* A gRPC call's bytes (0: not gRPC's framing, and curl ends the request with an error). */
static size_t on_grpc_write(char *p, size_t size, size_t n, void *userp)
{
    return reign__eg_got(userp, (const uint8_t *)p, size * n) ? size * n : 0;
}

/* A header or trailer line of a gRPC call, "name: value\r\n" (the status line has no colon
 * before its first space: it is skipped). */
static size_t on_grpc_header(char *p, size_t size, size_t n, void *userp)
{
    size_t len = size * n;
    const char *colon = memchr(p, ':', len);
    if (colon && colon != p && !memchr(p, ' ', (size_t)(colon - p))) {
        const char *v = colon + 1;
        size_t vl = len - (size_t)(v - p);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
            vl--;
        reign__eg_header(userp, p, (size_t)(colon - p), v, vl);
    }
    return len;
}

/* The URI's TLS files, on an easy handle (NULL: none). */
static void set_tls(const reign__zk_tls *t, CURL *h)
{
    if (t && t->ca)
        reign__cu.curl_easy_setopt(h, CURLOPT_CAINFO, t->ca);
    if (t && t->cert)
        reign__cu.curl_easy_setopt(h, CURLOPT_SSLCERT, t->cert);
    if (t && t->key)
        reign__cu.curl_easy_setopt(h, CURLOPT_SSLKEY, t->key);
}

ereq *reign__eh_new(reign__etcd *e, ereq_done *done, void *arg)
{
    ereq *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return NULL;
    q->e = e;
    q->done = done;
    q->arg = arg;
    reign__buf_init(&q->body);
    reign__buf_init(&q->resp);
    return q;
}

/* Out of the streams with bytes not handed out. */
static void no_data(reign__etcd *e, ereq *q)
{
    if (!q->got_data)
        return;
    *(q->dprev ? &q->dprev->dnext : &e->with_data) = q->dnext;
    if (q->dnext)
        q->dnext->dprev = q->dprev;
    q->dprev = q->dnext = NULL;
    q->got_data = false;
}

static void unlink_req(ereq *q)
{
    reign__etcd *e = q->e;
    no_data(e, q);
    if (q->prev)
        q->prev->next = q->next;
    else if (e->reqs == q)
        e->reqs = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

/*
 * Turns.  curl keeps what waits for a connection in a list it walks at every removal, which
 * made a client joining thousands of elections spend its time inside curl.  At most
 * ORDINARY_MAX operations are in curl at once; the rest wait here, in order.  The lease's
 * keepalives, grants and the watch stream never wait behind them.
 */
#define ORDINARY_MAX 48

static void backlog_unlink(reign__etcd *e, ereq *q)
{
    if (q->bprev)
        q->bprev->bnext = q->bnext;
    else
        e->backlog = q->bnext;
    if (q->bnext)
        q->bnext->bprev = q->bprev;
    else
        e->backlog_tail = q->bprev;
    q->bprev = q->bnext = NULL;
    q->waiting_turn = false;
}

/* Takes q out of the transport (or out of the line): it is not sent any more. */
static void withdraw(reign__etcd *e, ereq *q)
{
    if (q->waiting_turn) {
        backlog_unlink(e, q);
    } else if (q->h || q->c || q->hs || q->finished) {
        if (q->h)
            reign__cu.curl_multi_remove_handle(e->multi, q->h);
        else if (e->h2)
            reign__h2_withdraw(e, q);
        else
            reign__h1_withdraw(e, q);
        if (q->ordinary)
            e->in_curl--;
    }
}

static int hand_over(reign__etcd *e, ereq *q)
{
    q->sent_ns = reign__now_ns();
    if (e->h2   ? reign__h2_send(e, q) < 0
        : e->h1 ? reign__h1_send(e, q) < 0
                : reign__cu.curl_multi_add_handle(e->multi, q->h) != CURLM_OK)
        return REIGN_ENOMEM;
    if (q->ordinary)
        e->in_curl++;
    return 0;
}

/* Lets waiting operations into curl while there is room. */
static void admit(reign__etcd *e)
{
    while (e->backlog && e->in_curl < ORDINARY_MAX) {
        ereq *q = e->backlog;
        backlog_unlink(e, q);
        if (hand_over(e, q) < 0) { /* ends as if unanswered: its done tries again */
            q->fail = REIGN_ECONNLOSS;
            reign__strlcpy(q->why, "out of memory", sizeof(q->why));
            if (q->h)
                reign__cu.curl_easy_cleanup(q->h);
            q->h = NULL;
            unlink_req(q);
            q->done(q, q->arg);
        }
    }
}

void reign__eh_drop(ereq *q)
{
    if (!q)
        return;
    withdraw(q->e, q);
    if (q->h)
        reign__cu.curl_easy_cleanup(q->h);
    if (q->hdrs)
        reign__cu.curl_slist_free_all(q->hdrs);
    unlink_req(q);
    reign__eg_free(q);
    reign__buf_free(&q->body);
    reign__buf_free(&q->resp);
    reign__free(q);
}

int reign__eh_send(reign__etcd *e, ereq *q, const char *path, int timeout_ms)
{
    if (q->body.oom)
        return REIGN_ENOMEM;
    /* Sent before: a new attempt starts clean. */
    withdraw(e, q);
    if (q->h)
        reign__cu.curl_easy_cleanup(q->h);
    q->h = NULL;
    if (q->hdrs)
        reign__cu.curl_slist_free_all(q->hdrs);
    q->hdrs = NULL;
    unlink_req(q);
    reign__buf_reset(&q->resp);
    q->line_at = 0;
    q->status = 0;
    q->fail = 0;
    q->why[0] = '\0';
    q->tls_refused = false;
    q->member = e->cur;
    q->path = path;
    q->timeout_ms = timeout_ms;
    reign_trace("etcd.send", "%s %p %zu", path, (void *)q, q->body.len);
    int rc = e->multi ? curl_handle(e, q) : 0;
    if (rc < 0 && rc != REIGN_EBACKEND)
        return REIGN_ENOMEM;
    if (rc == REIGN_EBACKEND) { /* no call to make: it ends at the pump's next turn */
        reign__h1_ended(e, q, rc);
        e->in_curl += q->ordinary; /* as if handed over: its end counts it out */
    } else if (q->ordinary && (e->backlog || e->in_curl >= ORDINARY_MAX)) {
        q->waiting_turn = true; /* its turn comes in admit() */
        q->bprev = e->backlog_tail;
        *(e->backlog_tail ? &e->backlog_tail->bnext : &e->backlog) = q;
        e->backlog_tail = q;
    } else if (hand_over(e, q) < 0) {
        if (q->h)
            reign__cu.curl_easy_cleanup(q->h);
        q->h = NULL;
        return REIGN_ENOMEM;
    }
    q->next = e->reqs;
    if (e->reqs)
        e->reqs->prev = q;
    e->reqs = q;
    return 0;
}

/* The parts of a handle both kinds of call have. */
static void curl_common(reign__etcd *e, ereq *q, const char *url)
{
    CURL *h = q->h;
    int timeout_ms = q->timeout_ms;
    reign__cu.curl_easy_setopt(h, CURLOPT_URL, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_POST, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_PRIVATE, q);
    reign__cu.curl_easy_setopt(h, CURLOPT_ERRORBUFFER, q->why);
    reign__cu.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                               (long)(timeout_ms > 0 && timeout_ms < 2000 ? timeout_ms : 2000));
    if (timeout_ms > 0)
        reign__cu.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    set_tls(&e->cfg.tls_files, h);
}

/* A gRPC call's handle: HTTP/2 over TLS, every call to a member a stream on one connection. */
static int curl_grpc_handle(reign__etcd *e, ereq *q, const char *url)
{
    q->h = reign__cu.curl_easy_init();
    if (!q->h)
        return REIGN_ENOMEM;
    q->hdrs = reign__cu.curl_slist_append(NULL, "Content-Type: application/grpc");
    q->hdrs = reign__cu.curl_slist_append(q->hdrs, "TE: trailers");
    q->hdrs = reign__cu.curl_slist_append(q->hdrs, "Expect:");
    if (q->stream) /* a member that loses its leader cancels the watch instead of going silent */
        q->hdrs = reign__cu.curl_slist_append(q->hdrs, "hasleader: true");
    if (e->token_header)
        q->hdrs = reign__cu.curl_slist_append(q->hdrs, e->token_header);
    if (!q->hdrs) {
        reign__cu.curl_easy_cleanup(q->h);
        q->h = NULL;
        return REIGN_ENOMEM;
    }
    CURL *h = q->h;
    curl_common(e, q, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    reign__cu.curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L); /* wait to share, not a connection more */
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->g.wire.data ? q->g.wire.data : "");
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)q->g.wire.len);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, q->hdrs);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_grpc_write);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
    reign__cu.curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_grpc_header);
    reign__cu.curl_easy_setopt(h, CURLOPT_HEADERDATA, q);
    return 0;
}

/* q's curl handle, made for its path and its member: 0, REIGN_ENOMEM, or REIGN_EBACKEND (a
 * body that is no gRPC message: q->why says why). */
static int curl_handle(reign__etcd *e, ereq *q)
{
    char url[512];
    if (e->curl_grpc) {
        int rc = reign__eg_start(q, q->why, sizeof(q->why));
        if (rc < 0)
            return rc;
        snprintf(url, sizeof(url), "%s%s", e->members[q->member], reign__pb_path(q->g.m));
        return curl_grpc_handle(e, q, url);
    }
    snprintf(url, sizeof(url), "%s%s", e->members[q->member], q->path);
    q->h = reign__cu.curl_easy_init();
    if (!q->h)
        return REIGN_ENOMEM;
    q->hdrs = reign__cu.curl_slist_append(NULL, "Content-Type: application/json");
    /* A watch stream's request holds several watchers' creates.  The gateway decodes them while
     * its first answer goes out, and Go's HTTP server, as it writes that answer, throws away
     * what is left of a request body nobody has read yet: creates were lost (54 to 271 of 300,
     * measured).  It leaves the body alone when the client asked for "100-continue". */
    q->hdrs = reign__cu.curl_slist_append(q->hdrs, q->stream ? "Expect: 100-continue" : "Expect:");
    if (q->stream)
        /* A member that loses its leader cancels the watch instead of keeping it silent. */
        q->hdrs = reign__cu.curl_slist_append(q->hdrs, "Grpc-Metadata-hasleader: true");
    CURL *h = q->h;
    curl_common(e, q, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, q->body.data ? q->body.data : "");
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)q->body.len);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, q->hdrs);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, q);
    if (q->stream)
        reign__cu.curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L),
            reign__cu.curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    if (e->token_header)
        q->hdrs = reign__cu.curl_slist_append(q->hdrs, e->token_header);
    if (!q->hdrs) {
        reign__cu.curl_easy_cleanup(h);
        q->h = NULL;
        return REIGN_ENOMEM;
    }
    return 0;
}

bool reign__eh_out(const ereq *q)
{
    return q->h || q->c || q->hs;
}

static size_t keep_answer(char *p, size_t size, size_t n, void *userp)
{
    return reign__buf_append(userp, p, size * n) < 0 ? 0 : size * n;
}

/* One gRPC call over TLS, blocking (reign__eh_post()). */
static long curl_grpc_post(const reign__zk_tls *tls, const char *member, size_t mlen,
                           const char *path, const char *body, const char *header, int64_t until,
                           reign__buf *out, char *why, size_t whylen)
{
    ereq q = {.path = path};
    char msg[CURL_ERROR_SIZE] = "", url[512];
    long status = 0;
    int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
    CURL *h = NULL;
    struct curl_slist *hd = NULL;
    if (left <= 0 || reign__buf_puts(&q.body, body) < 0 ||
        reign__eg_start(&q, msg, sizeof(msg)) < 0 || !(h = reign__cu.curl_easy_init())) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member,
                    msg[0]     ? msg
                    : left > 0 ? "no memory"
                               : "no time");
        goto out;
    }
    snprintf(url, sizeof(url), "%.*s%s", (int)mlen, member, reign__pb_path(q.g.m));
    hd = reign__cu.curl_slist_append(NULL, "Content-Type: application/grpc");
    if (hd)
        hd = reign__cu.curl_slist_append(hd, "TE: trailers");
    if (hd && header)
        hd = reign__cu.curl_slist_append(hd, header);
    reign__cu.curl_easy_setopt(h, CURLOPT_URL, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, q.g.wire.data);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)q.g.wire.len);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    reign__cu.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    reign__cu.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_grpc_write);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, &q);
    reign__cu.curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_grpc_header);
    reign__cu.curl_easy_setopt(h, CURLOPT_HEADERDATA, &q);
    reign__cu.curl_easy_setopt(h, CURLOPT_ERRORBUFFER, msg);
    set_tls(tls, h);
    CURLcode cc = hd ? reign__cu.curl_easy_perform(h) : CURLE_OUT_OF_MEMORY;
    reign__cu.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &q.status);
    if (cc != CURLE_OK) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member,
                    msg[0] ? msg : reign__cu.curl_easy_strerror(cc));
    } else if (reign__eg_end(&q, msg, sizeof(msg)) != 0) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member, msg);
    } else {
        status = reign__eg_http_status(q.g.status);
        if (out && reign__buf_append(out, q.resp.data ? q.resp.data : "", q.resp.len) < 0)
            status = 0;
    }
out:
    if (hd)
        reign__cu.curl_slist_free_all(hd);
    if (h)
        reign__cu.curl_easy_cleanup(h);
    reign__eg_free(&q);
    /* a login's body holds the password, its answer the token */
    reign__buf_wipe(&q.body);
    reign__buf_wipe(&q.resp);
    return status;
}

long reign__eh_post(const reign__zk_tls *tls, bool gateway, const char *member, size_t mlen,
                    const char *path, const char *body, const char *header, int64_t until,
                    reign__buf *out, char *why, size_t whylen)
{
    bool https = mlen >= 8 && !strncmp(member, "https://", 8);
    if (out)
        reign__buf_reset(out);
    if (!gateway && !https)
        return reign__h2_post(member, mlen, path, body, header, until, out, why, whylen);
    if (!https)
        return reign__h1_post(member, mlen, path, body, header, until, out, why, whylen);
    const curl_version_info_data *v = reign__cu.curl_version_info(CURLVERSION_NOW);
    if (!gateway && v && (v->features & CURL_VERSION_HTTP2))
        return curl_grpc_post(tls, member, mlen, path, body, header, until, out, why, whylen);
    why[0] = '\0';
    int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
    CURL *h = left > 0 ? reign__cu.curl_easy_init() : NULL;
    if (!h) {
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member, left > 0 ? "no memory" : "no time");
        return 0;
    }
    char url[512];
    snprintf(url, sizeof(url), "%.*s%s", (int)mlen, member, path);
    struct curl_slist *hd = reign__cu.curl_slist_append(NULL, "Content-Type: application/json");
    if (header && hd)
        hd = reign__cu.curl_slist_append(hd, header);
    reign__buf sink;
    reign__buf_init(&sink);
    char err[CURL_ERROR_SIZE] = "";
    reign__cu.curl_easy_setopt(h, CURLOPT_URL, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    reign__cu.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    reign__cu.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_answer);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, out ? out : &sink);
    reign__cu.curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
    set_tls(tls, h);
    CURLcode cc = hd ? reign__cu.curl_easy_perform(h) : CURLE_OUT_OF_MEMORY;
    long status = 0;
    reign__cu.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc != CURLE_OK)
        reign__errf(why, whylen, "%.*s: %s", (int)mlen, member,
                    err[0] ? err : reign__cu.curl_easy_strerror(cc));
    reign__cu.curl_slist_free_all(hd);
    reign__cu.curl_easy_cleanup(h);
    reign__buf_free(&sink);
    return cc == CURLE_OK ? status : 0;
}

void reign__eh_wake(reign__etcd *e)
{
    uint64_t one = 1;
    ssize_t w = write(e->cfg.wake_fd, &one, sizeof(one));
    (void)w;
}

void reign__eh_next_member(reign__etcd *e, size_t m)
{
    if (e->n_members > 1 && e->cur == m)
        e->cur = (m + 1) % e->n_members;
}

/* Ends what h1 finished: each request's done, outside the transport. */
static void h1_done(reign__etcd *e)
{
    ereq *q;
    while ((q = reign__h1_take_done(e))) {
        if (q->ordinary)
            e->in_curl--;
        unlink_req(q);
        reign_trace("etcd.done", "%p %ld", (void *)q, q->status);
        q->done(q, q->arg); /* may free q, send it again, or send others */
    }
}

/* Ends what the transport finished: each request's done, outside any call into it. */
static void pump_done(reign__etcd *e)
{
    if (e->h1 || e->h2) {
        do { /* what admit() hands over may end at once (a member that cannot be reached) */
            h1_done(e);
            admit(e);
        } while (e->h1_done);
    } else {
        h1_done(e); /* a call that could not even be made */
        curl_done(e);
        admit(e);
    }
    /* Streams hand out their lines as they come (a done may free any request). */
    while (e->with_data) {
        ereq *q = e->with_data;
        no_data(e, q);
        if (reign__eh_out(q))
            q->done(q, q->arg); /* still out: a part, not the end */
    }
}

/* Did TLS fail in a way that no try with the same files fares better?  A member's certificate
 * that does not verify, files that cannot be used, a member that refused our certificate (an
 * alert about it, as OpenSSL words it), or a member that does not speak TLS at all. */
static bool tls_no(CURLcode cc, const char *why)
{
    switch (cc) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        return true;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
        return (strstr(why, "alert") && (strstr(why, "certificate") || strstr(why, "unknown ca") ||
                                         strstr(why, "access denied"))) ||
               strstr(why, "wrong version number");
    default:
        return false;
    }
}

/* Ends what curl finished. */
static void curl_done(reign__etcd *e)
{
    CURLMsg *msg;
    int left;
    while ((msg = reign__cu.curl_multi_info_read(e->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        ereq *q = NULL;
        reign__cu.curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&q);
        if (!q)
            continue;
        CURLcode cc = msg->data.result;
        q->fail = cc == CURLE_OK                   ? 0
                  : cc == CURLE_OPERATION_TIMEDOUT ? REIGN_ETIMEDOUT
                                                   : REIGN_ECONNLOSS;
        if (q->fail && !q->why[0])
            reign__strlcpy(q->why, reign__cu.curl_easy_strerror(cc), sizeof(q->why));
        q->tls_refused = q->fail && tls_no(cc, q->why);
        reign__cu.curl_easy_getinfo(q->h, CURLINFO_RESPONSE_CODE, &q->status);
        if (!q->fail && e->curl_grpc)
            q->fail = reign__eg_end(q, q->why, sizeof(q->why));
        withdraw(e, q);
        reign__cu.curl_easy_cleanup(q->h);
        q->h = NULL;
        reign__cu.curl_slist_free_all(q->hdrs);
        q->hdrs = NULL;
        unlink_req(q);
        reign_trace("etcd.done", "%p %ld", (void *)q, q->status);
        q->done(q, q->arg); /* may free q, send it again, or send others */
    }
}

void reign__eh_pump(reign__etcd *e)
{
    struct epoll_event evs[32];
    int n, running;
    while ((n = epoll_wait(e->epfd, evs, 32, 0)) > 0) {
        for (int i = 0; i < n && e->h1; i++)
            reign__h1_event(e, evs[i].data.ptr, evs[i].events);
        for (int i = 0; i < n && e->h2; i++)
            reign__h2_event(e, evs[i].data.ptr, evs[i].events);
        for (int i = 0; i < n && e->multi; i++) {
            int flags = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            reign__cu.curl_multi_socket_action(e->multi, evs[i].data.fd, flags, &running);
        }
        if (n < 32)
            break;
    }
    pump_done(e);
}

/*
 * The revision clock.  etcd keeps no time with a key; ZooKeeper's ctime and mtime are
 * estimated from the revisions this client saw and when it saw them: a revision's time is the
 * wall clock when the client first learned the store had reached it (an answer's header, a
 * watch event, which come within a round trip of the change), a revision older than anything
 * seen that of the oldest sighting kept (a lower bound of the age).
 */
#define SEEN_MAX 1024

void reign__eh_saw(reign__etcd *e, int64_t rev)
{
    if (rev <= 0 || (e->seen_n && rev <= e->seen_rev[(e->seen_head + e->seen_n - 1) % SEEN_MAX]))
        return;
    size_t at = (e->seen_head + e->seen_n) % SEEN_MAX;
    if (e->seen_n == SEEN_MAX)
        e->seen_head = (e->seen_head + 1) % SEEN_MAX;
    else
        e->seen_n++;
    e->seen_rev[at] = rev;
    e->seen_ms[at] = reign__wall_ms();
}

int64_t reign__eh_time_of(const reign__etcd *e, int64_t rev)
{
    if (rev <= 0)
        return 0;
    size_t lo = 0, hi = e->seen_n; /* the first sighting at or past rev */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (e->seen_rev[(e->seen_head + mid) % SEEN_MAX] < rev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < e->seen_n ? e->seen_ms[(e->seen_head + lo) % SEEN_MAX] : reign__wall_ms();
}

bool reign__eh_transient(int rc)
{
    return rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT;
}

/* gRPC's codes, as the gateway names them in "code". */
enum {
    G_INVALID = 3,
    G_NOT_FOUND = 5,
    G_EXISTS = 6,
    G_DENIED = 7,
    G_EXHAUSTED = 8,
    G_FAILED_PRE = 9,
    G_OUT_OF_RANGE = 11,
    G_UNAVAILABLE = 14,
    G_UNAUTH = 16,
    G_DEADLINE = 4,
    G_UNKNOWN = 2
};

/* How much of an answer that is not JSON goes into a message: its first line, in printable
 * ASCII, at most 160 bytes (the gateway's Go server says why in plain text). */
static int text_len(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && i < 160 && s[i] >= 0x20 && s[i] < 0x7f)
        i++;
    return (int)i;
}

cJSON *reign__eh_answer(ereq *q, int *rc, char *msg, size_t msglen)
{
    msg[0] = '\0';
    if (q->fail) {
        reign__errf(msg, msglen, "%s: %s", q->e->members[q->member],
                    q->why[0] ? q->why : "no answer");
        *rc = q->fail;
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength(q->resp.data ? q->resp.data : "", q->resp.len);
    if (root && !cJSON_IsObject(root)) { /* "404 page not found" reads as the number 404 */
        cJSON_Delete(root);
        root = NULL;
    }
    if (!root) {
        if (q->status == 404)
            reign__errf(msg, msglen,
                        "%s answers 404 on /v3/: is etcd's JSON gateway turned off "
                        "(--enable-grpc-gateway=false)?",
                        q->e->members[q->member]);
        else
            reign__errf(msg, msglen, "%s: HTTP %ld, not etcd's JSON gateway%s%.*s",
                        q->e->members[q->member], q->status, q->resp.len ? ": " : "",
                        text_len(q->resp.data, q->resp.len), q->resp.data ? q->resp.data : "");
        *rc = REIGN_EBACKEND;
        return NULL;
    }
    int code = 0;
    const char *err = reign__ej_error(root, &code);
    if (!err && q->status == 200) {
        reign__eh_saw(q->e,
                      reign__ej_i64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision"));
        *rc = 0;
        return root;
    }
    reign__errf(msg, msglen, "%s: %s", q->e->members[q->member], err ? err : "HTTP error");
    if (!err)
        *rc = REIGN_EBACKEND;
    else if (code == G_NOT_FOUND && strstr(err, "lease not found"))
        *rc = REIGN_ESESSION;
    else if (code == G_INVALID && strstr(err, "too large"))
        *rc = REIGN_E2BIG;
    else if (code == G_EXHAUSTED)
        *rc = REIGN_E2BIG;
    else if (code == G_DENIED)
        *rc = REIGN_EACCES;
    else if (strstr(err, "auth token") || strstr(err, "authentication failed") ||
             strstr(err, "user name is empty") || strstr(err, "user name not found"))
        *rc = REIGN_EAUTH;
    else if (code == G_UNAUTH)
        *rc = REIGN_EAUTH;
    else if (code == G_UNAVAILABLE || code == G_DEADLINE ||
             (code == G_UNKNOWN && strstr(err, "deadline")) || strstr(err, "leader") ||
             strstr(err, "timed out") || strstr(err, "primary lessor"))
        *rc = REIGN_ECONNLOSS; /* no leader, not the lessor, timed out: try another member */
    else
        *rc = REIGN_EBACKEND;
    cJSON_Delete(root);
    return NULL;
}
