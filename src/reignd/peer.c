/*
 * peer.c - the endpoint between reignds (peer.h): the shared secret, the
 * server (libmicrohttpd through httpd.h, answering through reignd_ops) and
 * the client (a plain libuv TCP exchange with one deadline).  Requests and
 * answers are signed with the secret (peer_auth.h), which never crosses the
 * wire.
 *
 * A standby request may take a while (the become-standby hook runs first):
 * the server suspends the connection while the operation is pending and
 * answers when reignd_call_done() comes, so the loop never waits.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "call.h"
#include "httpd.h"
#include "peer.h"
#include "peer_auth.h"
#include "srvlog.h"

#define PEER_PREFIX             "/v1/services/"
#define PEER_STANDBY_SUFFIX     "/standby"
#define PEER_DEFAULT_TIMEOUT_MS 5000
#define PEER_HEAD_MAX           8192 /* the client's limit on an answer's status line and headers */
#define PEER_REQUEST_BODY_MAX   4096 /* the server's limit on a request body ({"from","term"}) */

/* ---- the secret ------------------------------------------------------------ */

int reignd_secret_load(const char *path, reignd_secret *secret, char *err, size_t errlen)
{
    memset(secret, 0, sizeof(*secret));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open secret file '%s': %s", path, strerror(errno));
        return -errno;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        snprintf(err, errlen, "secret file '%s' is not a regular file", path);
        return REIGN_EINVAL;
    }
    if (st.st_mode & 077) {
        close(fd);
        snprintf(err, errlen,
                 "secret file '%s' is accessible by group or others (mode %04o): chmod 600 it",
                 path, (unsigned)(st.st_mode & 07777));
        return REIGN_EACCES;
    }
    unsigned char buf[REIGND_PEER_SECRET_MAX + 3];
    size_t len = 0;
    ssize_t n;
    while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            explicit_bzero(buf, sizeof(buf));
            snprintf(err, errlen, "cannot read secret file '%s': %s", path, strerror(e));
            return -e;
        }
        len += (size_t)n;
    }
    close(fd);
    if (len > 0 && buf[len - 1] == '\n')
        len--;
    if (len > 0 && buf[len - 1] == '\r')
        len--;
    int bad = 0;
    for (size_t i = 0; i < len; i++)
        bad |= buf[i] <= 0x20 || buf[i] >= 0x7f;
    if (bad || len < REIGND_PEER_SECRET_MIN || len > REIGND_PEER_SECRET_MAX) {
        explicit_bzero(buf, sizeof(buf));
        snprintf(err, errlen,
                 "secret file '%s' must hold %d to %d printable ASCII characters without spaces",
                 path, REIGND_PEER_SECRET_MIN, REIGND_PEER_SECRET_MAX);
        return REIGN_EINVAL;
    }
    memcpy(secret->bytes, buf, len);
    secret->len = len;
    explicit_bzero(buf, sizeof(buf));
    return 0;
}

void reignd_secret_wipe(reignd_secret *secret)
{
    explicit_bzero(secret, sizeof(*secret));
}

/* ---- the server ------------------------------------------------------------ */

struct reignd_peer_server {
    reignd_httpd *httpd;
    reignd_secret secret;
    reignd_nonce_cache *nonces; /* the requests taken within the window */
    reignd_ops ops;
    reign_log_fn *log_fn;
    void *log_userdata;
    struct preq *suspended; /* requests waiting for their operation */
};

/* One HTTP request in progress (libmicrohttpd's per-connection pointer). */
typedef struct preq {
    reignd_peer_server *srv;
    struct MHD_Connection *conn;
    struct preq *next, **pprev; /* on srv->suspended while suspended */
    reignd_call *call;
    char origin[96];
    reignd_auth auth;
    int signed_req;    /* the Authorization header parsed: the answer is signed for its nonce */
    char refusal[320]; /* why the header did not parse */
    int too_big;
    int answered; /* the answer below is ready to be queued */
    unsigned code;
    char *answer;
    size_t answer_len;
    size_t body_len;
    char body[PEER_REQUEST_BODY_MAX + 1];
} preq;

#define PLOG(srv, level, ...) reignd__logf((srv)->log_fn, (srv)->log_userdata, level, __VA_ARGS__)

static unsigned http_code(int err)
{
    switch (err) {
    case 0:
        return MHD_HTTP_OK;
    case REIGN_EINVAL:
    case REIGN_E2BIG:
        return MHD_HTTP_BAD_REQUEST;
    case REIGN_EAUTH:
        return MHD_HTTP_UNAUTHORIZED;
    case REIGN_ENOENT:
        return MHD_HTTP_NOT_FOUND;
    case REIGN_ESTATE:
    case REIGN_EBUSY:
        return MHD_HTTP_CONFLICT;
    case REIGN_ETIMEDOUT:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

/* Keeps the answer in the request, to be queued now or after a resume. */
static void set_answer(preq *r, int err, const char *msg, const cJSON *result)
{
    free(r->answer);
    r->answer = reignd__answer_line(err, msg, result, &r->answer_len);
    r->code = r->answer ? http_code(err) : MHD_HTTP_INTERNAL_SERVER_ERROR;
    r->answered = 1;
}

/* Queues the answer, signed for the request's nonce when it had one (a request
 * refused before its header could be read gets an unsigned answer: the client
 * takes any answer it cannot check as a failure, never as a success). */
static enum MHD_Result queue_answer(preq *r)
{
    static const char oom[] = "out of memory\n";
    const char *type = r->answer ? "application/json" : "text/plain";
    const char *body = r->answer ? r->answer : oom;
    size_t len = r->answer ? r->answer_len : sizeof(oom) - 1;
    char sig[REIGND_AUTH_SIG_HEX + 1];
    if (r->signed_req)
        reignd_auth_sign_answer(&r->srv->secret, r->auth.nonce, r->code, body, len, sig);
    return reignd__httpd_reply(r->conn, r->code, type, body, len,
                               r->signed_req ? REIGND_AUTH_ANSWER : NULL, sig);
}

static void unlink_suspended(preq *r)
{
    if (!r->pprev)
        return;
    *r->pprev = r->next;
    if (r->next)
        r->next->pprev = r->pprev;
    r->pprev = NULL;
    r->next = NULL;
}

static void on_call_complete(void *owner, int err, const char *msg, const cJSON *result)
{
    preq *r = owner;
    r->call = NULL;
    set_answer(r, err, msg, result);
    if (r->pprev) { /* suspended: wake it, the handler queues the answer */
        unlink_suspended(r);
        MHD_resume_connection(r->conn);
        reignd_httpd_kick(r->srv->httpd);
    }
}

/* The status entry of `service`, or NULL (then the answer is set). */
static cJSON *service_entry(preq *r, const char *service, cJSON **snapshot)
{
    const reignd_ops *ops = &r->srv->ops;
    *snapshot = ops->status ? ops->status(ops->ctx) : NULL;
    if (!*snapshot) {
        set_answer(r, ops->status ? REIGN_ENOMEM : REIGN_ENOTSUP, NULL, NULL);
        return NULL;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(*snapshot, "services");
    const cJSON *s;
    cJSON_ArrayForEach(s, list)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(s, "name");
        if (cJSON_IsString(name) && strcmp(name->valuestring, service) == 0)
            return (cJSON *)s;
    }
    char msg[300];
    snprintf(msg, sizeof(msg), "no service '%.200s' here", service);
    set_answer(r, REIGN_ENOENT, msg, NULL);
    return NULL;
}

static void do_state(preq *r, const char *service)
{
    cJSON *snapshot;
    const cJSON *entry = service_entry(r, service, &snapshot);
    if (entry)
        set_answer(r, 0, NULL, entry);
    cJSON_Delete(snapshot);
}

static void do_standby(preq *r, const char *service)
{
    const reignd_ops *ops = &r->srv->ops;
    r->body[r->body_len] = '\0';
    cJSON *body = cJSON_ParseWithLength(r->body, r->body_len);
    const cJSON *from = cJSON_GetObjectItemCaseSensitive(body, "from");
    const cJSON *term = cJSON_GetObjectItemCaseSensitive(body, "term");
    if (!cJSON_IsObject(body) || !cJSON_IsString(from) || !cJSON_IsNumber(term) ||
        term->valuedouble < 0 || term->valuedouble > 9007199254740992.0 ||
        strlen(from->valuestring) == 0 || strlen(from->valuestring) > REIGN_ID_MAX) {
        set_answer(r, REIGN_EINVAL, "the body must be {\"from\":\"ID\",\"term\":N}", NULL);
    } else if (!ops->standby) {
        set_answer(r, REIGN_ENOTSUP, NULL, NULL);
    } else {
        reignd_call *call = reignd__call_new(on_call_complete, r, r->origin);
        if (!call) {
            set_answer(r, REIGN_ENOMEM, NULL, NULL);
        } else {
            r->call = call;
            int rc = ops->standby(ops->ctx, call, service, from->valuestring,
                                  (uint64_t)term->valuedouble);
            reignd__call_run(call, rc);
        }
    }
    cJSON_Delete(body);
}

/* Routes a complete, authorized request; sets the answer unless pending. */
static void route(preq *r, const char *url, const char *method)
{
    size_t plen = strlen(PEER_PREFIX), slen = strlen(PEER_STANDBY_SUFFIX);
    size_t ulen = strlen(url);
    if (strncmp(url, PEER_PREFIX, plen) != 0 || ulen == plen) {
        set_answer(r, REIGN_ENOENT, "no such path", NULL);
        return;
    }
    char name[REIGN_NAME_MAX + 1];
    const char *rest = url + plen;
    int standby = ulen - plen > slen && strcmp(url + ulen - slen, PEER_STANDBY_SUFFIX) == 0;
    size_t nlen = strlen(rest) - (standby ? slen : 0);
    if (nlen > REIGN_NAME_MAX) {
        set_answer(r, REIGN_ENOENT, "no such service", NULL);
        return;
    }
    memcpy(name, rest, nlen);
    name[nlen] = '\0';
    if (standby && strcmp(method, "POST") == 0)
        do_standby(r, name);
    else if (!standby && strcmp(method, "GET") == 0)
        do_state(r, name);
    else
        set_answer(r, REIGN_EINVAL, "method not allowed here", NULL);
}

static void describe_client(struct MHD_Connection *conn, char *out, size_t len)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
    if (ci && ci->client_addr)
        getnameinfo(ci->client_addr,
                    ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                                           : sizeof(struct sockaddr_in),
                    host, sizeof(host), serv, sizeof(serv), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(out, len, "peer %s:%s", host, serv);
}

/*
 * Whether the request is one a holder of the secret sent just now, for the
 * first time: its signature (method, path, body, time, nonce), then its time
 * against our clock, then its nonce against those taken.  0, or the error
 * with the answer set and the refusal logged (method and path only: the
 * rest is not the log's business).
 */
static int authenticate(preq *r, const char *url, const char *method)
{
    reignd_peer_server *srv = r->srv;
    char why[400];
    int err = REIGN_EAUTH;
    if (!r->signed_req) {
        snprintf(why, sizeof(why), "%s", r->refusal);
    } else if (!reignd_auth_check_request(&srv->secret, method, url, r->body, r->body_len,
                                          &r->auth)) {
        snprintf(why, sizeof(why), "wrong signature (not signed with our secret, or altered)");
    } else {
        int64_t now = reignd_auth_now_ms();
        switch (reignd_nonce_take(srv->nonces, &r->auth, now)) {
        case REIGND_AUTH_OK:
            return 0;
        case REIGND_AUTH_SKEWED:
            snprintf(why, sizeof(why),
                     "signed at a time %.1f s from ours (more than %d s): are both clocks "
                     "synchronised (NTP)?",
                     (double)(r->auth.ts_ms - now) / 1000.0, REIGND_AUTH_WINDOW_MS / 1000);
            break;
        case REIGND_AUTH_REPLAYED:
            snprintf(why, sizeof(why), "replayed: this request was received before");
            break;
        case REIGND_AUTH_FULL:
            snprintf(why, sizeof(why), "too many requests: %d within %d s", REIGND_AUTH_CACHE_MAX,
                     REIGND_AUTH_WINDOW_MS / 1000);
            err = REIGN_EBUSY;
            break;
        }
    }
    PLOG(srv, REIGN_LOG_WARN, "peer: refused %s %.100s from %s: %s", method, url, r->origin + 5,
         why);
    set_answer(r, err, why, NULL);
    if (err == REIGN_EBUSY)
        r->code = MHD_HTTP_SERVICE_UNAVAILABLE;
    return err;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    reignd_peer_server *srv = cls;
    preq *r = *con_cls;
    (void)version;
    if (!r) { /* the headers are in: an unsigned request's body is not even kept */
        r = calloc(1, sizeof(*r));
        if (!r)
            return MHD_NO;
        r->srv = srv;
        r->conn = conn;
        describe_client(conn, r->origin, sizeof(r->origin));
        const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
        r->signed_req = reignd_auth_parse(h, &r->auth, r->refusal, sizeof(r->refusal)) == 0;
        *con_cls = r;
        return MHD_YES;
    }
    if (*upload_size) {
        if (r->body_len + *upload_size > PEER_REQUEST_BODY_MAX)
            r->too_big = 1;
        else if (r->signed_req) {
            memcpy(r->body + r->body_len, upload, *upload_size);
            r->body_len += *upload_size;
        }
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->answered)
        return queue_answer(r);
    if (r->call) /* resumed spuriously: keep waiting */
        return MHD_YES;
    if (r->too_big && r->signed_req)
        set_answer(r, REIGN_E2BIG, "request body too large", NULL);
    else if (authenticate(r, url, method) == 0)
        route(r, url, method);
    if (r->answered)
        return queue_answer(r);
    /* Pending: park the connection until the operation completes. */
    r->next = srv->suspended;
    if (srv->suspended)
        srv->suspended->pprev = &r->next;
    r->pprev = &srv->suspended;
    srv->suspended = r;
    MHD_suspend_connection(conn);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    preq *r = *con_cls;
    (void)cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    if (r->call)
        reignd__call_detach(r->call);
    unlink_suspended(r);
    free(r->answer);
    free(r);
    *con_cls = NULL;
}

int reignd_peer_server_start(uv_loop_t *loop, const reignd_peer_server_options *opts,
                             reignd_peer_server **ret, char *err, size_t errlen)
{
    *ret = NULL;
    if (!opts->listen || !opts->secret || !opts->ops || opts->secret->len == 0) {
        snprintf(err, errlen, "the peer endpoint needs a listen address, a secret and operations");
        return REIGN_EINVAL;
    }
    reignd_peer_server *srv = calloc(1, sizeof(*srv));
    if (!srv) {
        snprintf(err, errlen, "out of memory");
        return REIGN_ENOMEM;
    }
    srv->secret = *opts->secret;
    srv->ops = *opts->ops;
    if (!(srv->nonces = reignd_nonce_cache_new())) {
        reignd_secret_wipe(&srv->secret);
        free(srv);
        snprintf(err, errlen, "out of memory");
        return REIGN_ENOMEM;
    }
    srv->log_fn = opts->log_fn;
    srv->log_userdata = opts->log_userdata;
    reignd_httpd_options ho = {
        .what = "peer",
        .listen = opts->listen,
        .handler = on_request,
        .completed = on_completed,
        .cls = srv,
        .suspend = 1,
        .log_fn = opts->log_fn,
        .log_userdata = opts->log_userdata,
    };
    int r = reignd_httpd_start(loop, &ho, &srv->httpd, err, errlen);
    if (r < 0) {
        reignd_secret_wipe(&srv->secret);
        reignd_nonce_cache_free(srv->nonces);
        free(srv);
        return r;
    }
    *ret = srv;
    return 0;
}

int reignd_peer_server_port(const reignd_peer_server *srv)
{
    return reignd_httpd_port(srv->httpd);
}

void reignd_peer_server_close(reignd_peer_server *srv)
{
    if (!srv)
        return;
    /* libmicrohttpd must not be stopped with suspended connections. */
    while (srv->suspended) {
        preq *r = srv->suspended;
        unlink_suspended(r);
        MHD_resume_connection(r->conn);
    }
    reignd_httpd_close(srv->httpd);
    reignd_secret_wipe(&srv->secret);
    reignd_nonce_cache_free(srv->nonces);
    free(srv);
}

/* ---- the client ------------------------------------------------------------ */

struct reignd_peer_request {
    uv_loop_t *loop;
    uv_getaddrinfo_t gai;
    uv_connect_t connect;
    uv_write_t write;
    uv_tcp_t tcp;
    uv_timer_t timer;
    int gai_pending;
    struct addrinfo *addrs; /* the resolved addresses, tried in order */
    struct addrinfo *next;  /* the next one to try */
    int tcp_open;
    int handles; /* open handles (timer, tcp) */
    int done;    /* the callback ran (or never will) */
    uint64_t timeout_ms;
    reignd_peer_cb *cb;
    void *userdata;
    char address[300];
    reignd_secret secret; /* checks the answer's signature; wiped with the request */
    char nonce[REIGND_AUTH_NONCE_HEX + 1]; /* the request's: the answer must be signed for it */
    char *out;                             /* the request */
    size_t out_len;
    char *in;
    size_t in_len;
};

#define IN_MAX (PEER_HEAD_MAX + REIGND_PEER_BODY_MAX)

static void req_maybe_free(reignd_peer_request *q)
{
    if (q->handles == 0 && !q->gai_pending) {
        reignd_secret_wipe(&q->secret);
        free(q->out);
        free(q->in);
        uv_freeaddrinfo(q->addrs);
        free(q);
    }
}

static void on_req_handle_closed(uv_handle_t *h)
{
    reignd_peer_request *q = h->data;
    q->handles--;
    req_maybe_free(q);
}

/* Ends the exchange: the callback (once), then every handle closed. */
static void finish(reignd_peer_request *q, int err, const char *msg, const cJSON *result)
{
    if (q->done)
        return;
    q->done = 1;
    if (q->cb)
        q->cb(err, msg, result, q->userdata);
    if (q->gai_pending)
        uv_cancel((uv_req_t *)&q->gai);
    uv_close((uv_handle_t *)&q->timer, on_req_handle_closed);
    if (q->tcp_open)
        uv_close((uv_handle_t *)&q->tcp, on_req_handle_closed);
}

static void finishf(reignd_peer_request *q, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void finishf(reignd_peer_request *q, int err, const char *fmt, ...)
{
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "peer %s: ", q->address);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    finish(q, err, msg, NULL);
}

static int code_by_name(const char *name)
{
#define REIGND__BY_NAME(n, v, m)                                                                   \
    if (strcmp(name, "REIGN_" #n) == 0)                                                            \
        return v;
    REIGN_ERRNO_MAP(REIGND__BY_NAME)
#undef REIGND__BY_NAME
    return REIGN_EBACKEND;
}

/* The value of header `name` (case-insensitive) in head, spaces skipped, or NULL. */
static const char *header_value(const char *head, const char *name)
{
    size_t nlen = strlen(name);
    for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n"))
        if (strncasecmp(p + 2, name, nlen) == 0 && p[2 + nlen] == ':')
            return p + 3 + nlen + strspn(p + 3 + nlen, " \t");
    return NULL;
}

static long header_long(const char *head, const char *name)
{
    const char *v = header_value(head, name);
    return v ? strtol(v, NULL, 10) : -1;
}

/* The signature header's value (NUL-terminated in `out`), or NULL. */
static const char *answer_signature(const char *head, char *out, size_t outlen)
{
    const char *v = header_value(head, REIGND_AUTH_ANSWER);
    if (!v)
        return NULL;
    size_t n = strcspn(v, " \t\r\n");
    if (n >= outlen)
        return NULL;
    memcpy(out, v, n);
    out[n] = '\0';
    return out;
}

/* Reads the answer once complete (or at EOF); 1 if it finished the request. */
static int parse_answer(reignd_peer_request *q, int eof)
{
    q->in[q->in_len] = '\0';
    char *end = strstr(q->in, "\r\n\r\n");
    if (!end) {
        if (eof || q->in_len > PEER_HEAD_MAX)
            finishf(q, REIGN_EBACKEND, "malformed HTTP answer");
        return eof || q->in_len > PEER_HEAD_MAX;
    }
    *end = '\0';
    const char *body = end + 4;
    size_t have = q->in_len - (size_t)(body - q->in);
    long clen = header_long(q->in, "Content-Length");
    if (!eof && (clen < 0 || (size_t)clen > have))
        return 0; /* more to come */
    unsigned code = 0;
    if (sscanf(q->in, "HTTP/1.%*1[01] %3u", &code) != 1) {
        finishf(q, REIGN_EBACKEND, "malformed HTTP status line");
        return 1;
    }
    if (clen >= 0 && (size_t)clen < have)
        have = (size_t)clen;
    char sigbuf[REIGND_AUTH_SIG_HEX + 2];
    const char *sig = answer_signature(q->in, sigbuf, sizeof(sigbuf));
    cJSON *json = cJSON_ParseWithLength(body, have);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(json, "ok");
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(json, "error");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(json, "message");
    if (!reignd_auth_check_answer(&q->secret, q->nonce, code, body, have, sig)) {
        /* Not made by a holder of our secret for this request: never a success.  A
         * refusal's reason is shown (from the peer, or from whoever answered). */
        if (code == MHD_HTTP_UNAUTHORIZED && cJSON_IsString(m))
            finishf(q, REIGN_EAUTH, "refused our request: %.200s", m->valuestring);
        else if (code == MHD_HTTP_UNAUTHORIZED)
            finishf(q, REIGN_EAUTH, "refused our request");
        else
            finishf(q, REIGN_EAUTH,
                    "the answer (HTTP %u) is not signed with our secret: a different secret "
                    "there, or not a reignd (or not this version)",
                    code);
    } else if (code == MHD_HTTP_OK && cJSON_IsTrue(ok))
        finish(q, 0, NULL, cJSON_GetObjectItemCaseSensitive(json, "result"));
    else if (cJSON_IsFalse(ok) && cJSON_IsString(e) && cJSON_IsString(m))
        finishf(q, code_by_name(e->valuestring), "%s", m->valuestring);
    else
        finishf(q, REIGN_EBACKEND, "unexpected answer (HTTP %u)", code);
    cJSON_Delete(json);
    return 1;
}

static void on_alloc_in(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    reignd_peer_request *q = h->data;
    (void)suggested;
    *b = uv_buf_init(q->in + q->in_len, (unsigned)(IN_MAX - q->in_len));
}

static void on_read_in(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    reignd_peer_request *q = s->data;
    (void)b;
    if (q->done)
        return;
    if (nread == UV_EOF) {
        parse_answer(q, 1);
        return;
    }
    if (nread < 0) {
        finishf(q, REIGN_ECONNECT, "connection lost: %s", uv_strerror((int)nread));
        return;
    }
    q->in_len += (size_t)nread;
    if (parse_answer(q, 0))
        return;
    if (q->in_len == IN_MAX)
        finishf(q, REIGN_EBACKEND, "answer larger than %d bytes", IN_MAX);
}

static void on_written_out(uv_write_t *w, int status)
{
    reignd_peer_request *q = w->data;
    if (status < 0 && !q->done)
        finishf(q, REIGN_ECONNECT, "cannot send the request: %s", uv_strerror(status));
}

static void try_connect(reignd_peer_request *q);

/* A connection attempt failed: its handle closed, the next address. */
static void on_tcp_closed_retry(uv_handle_t *h)
{
    reignd_peer_request *q = h->data;
    q->handles--;
    if (q->done)
        req_maybe_free(q);
    else
        try_connect(q);
}

static void on_connected(uv_connect_t *c, int status)
{
    reignd_peer_request *q = c->data;
    if (q->done)
        return;
    if (status < 0 && q->next) { /* "localhost" may be ::1 and 127.0.0.1 */
        q->tcp_open = 0;         /* closing already: finish() must not close it again */
        uv_close((uv_handle_t *)&q->tcp, on_tcp_closed_retry);
        return;
    }
    if (status < 0) {
        finishf(q, REIGN_ECONNECT, "cannot connect: %s", uv_strerror(status));
        return;
    }
    uv_buf_t b = uv_buf_init(q->out, (unsigned)q->out_len);
    q->write.data = q;
    int r = uv_write(&q->write, (uv_stream_t *)&q->tcp, &b, 1, on_written_out);
    if (r == 0)
        r = uv_read_start((uv_stream_t *)&q->tcp, on_alloc_in, on_read_in);
    if (r < 0)
        finishf(q, REIGN_ECONNECT, "cannot send the request: %s", uv_strerror(r));
}

static void try_connect(reignd_peer_request *q)
{
    const struct addrinfo *ai = q->next;
    q->next = ai->ai_next;
    int r = uv_tcp_init(q->loop, &q->tcp);
    if (r == 0) {
        q->tcp.data = q;
        q->tcp_open = 1;
        q->handles++;
        q->connect.data = q;
        r = uv_tcp_connect(&q->connect, &q->tcp, ai->ai_addr, on_connected);
    }
    if (r < 0)
        finishf(q, REIGN_ECONNECT, "cannot connect: %s", uv_strerror(r));
}

static void on_resolved(uv_getaddrinfo_t *g, int status, struct addrinfo *res)
{
    reignd_peer_request *q = g->data;
    q->gai_pending = 0;
    q->addrs = res; /* freed with the request */
    if (q->done) {
        req_maybe_free(q);
        return;
    }
    if (status < 0 || !res) {
        finishf(q, REIGN_ECONNECT, "cannot resolve: %s", uv_strerror(status));
        return;
    }
    q->next = res;
    try_connect(q);
}

static void on_req_timeout(uv_timer_t *t)
{
    reignd_peer_request *q = t->data;
    finishf(q, REIGN_ETIMEDOUT, "no answer within %llu ms", (unsigned long long)q->timeout_ms);
}

/* The path segment `name`, percent-encoded but for unreserved characters. */
static void path_escape(const char *name, char *out, size_t outlen)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 4 < outlen; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~') {
            out[o++] = (char)*p;
        } else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    out[o] = '\0';
}

/* Builds the HTTP request, signed, into q->out (the secret is not in it). */
static int build_request(reignd_peer_request *q, const reignd_secret *secret, const char *host,
                         const char *method, const char *service, const char *suffix,
                         const char *body)
{
    char name[3 * REIGN_NAME_MAX + 1], path[3 * REIGN_NAME_MAX + 64];
    path_escape(service, name, sizeof(name));
    snprintf(path, sizeof(path), PEER_PREFIX "%s%s", name, suffix);
    size_t blen = body ? strlen(body) : 0;
    reignd_auth auth;
    int r = reignd_auth_fresh(&auth, reignd_auth_now_ms());
    if (r < 0)
        return r;
    reignd_auth_sign_request(secret, method, path, body, blen, &auth);
    char authz[256];
    reignd_auth_format(&auth, authz, sizeof(authz));
    memcpy(q->nonce, auth.nonce, sizeof(q->nonce));
    q->secret = *secret;
    size_t cap = strlen(host) + strlen(path) + strlen(authz) + blen + 512;
    q->out = malloc(cap);
    if (!q->out)
        return REIGN_ENOMEM;
    int n = snprintf(q->out, cap,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n"
                     "Content-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Authorization: %s\r\n\r\n",
                     method, path, host, blen, authz);
    if (n < 0 || (size_t)n + blen >= cap)
        return REIGN_EINVAL;
    if (blen)
        memcpy(q->out + n, body, blen);
    q->out_len = (size_t)n + blen;
    return 0;
}

static int start_request(uv_loop_t *loop, const reignd_peer_target *t, const char *method,
                         const char *service, const char *suffix, const char *body,
                         reignd_peer_cb *cb, void *userdata, reignd_peer_request **ret)
{
    char host[256], port[16];
    if (ret)
        *ret = NULL;
    if (!t || !t->address || !t->secret || t->secret->len == 0 || !service || !*service ||
        strlen(service) > REIGN_NAME_MAX ||
        reignd__split_hostport(t->address, host, sizeof(host), port, sizeof(port)) < 0 || !host[0])
        return REIGN_EINVAL;
    reignd_peer_request *q = calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->in = malloc(IN_MAX + 1);
    int r = q->in ? build_request(q, t->secret, host, method, service, suffix, body) : REIGN_ENOMEM;
    if (r < 0) {
        req_maybe_free(q);
        return r;
    }
    q->loop = loop;
    q->cb = cb;
    q->userdata = userdata;
    q->timeout_ms = t->timeout_ms ? t->timeout_ms : PEER_DEFAULT_TIMEOUT_MS;
    snprintf(q->address, sizeof(q->address), "%s", t->address);
    uv_timer_init(loop, &q->timer);
    q->timer.data = q;
    q->handles = 1;
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    q->gai.data = q;
    r = uv_getaddrinfo(loop, &q->gai, on_resolved, host, port, &hints);
    if (r < 0) {
        q->done = 1; /* a call that fails never calls back */
        uv_close((uv_handle_t *)&q->timer, on_req_handle_closed);
        return REIGN_ENOMEM;
    }
    q->gai_pending = 1;
    uv_timer_start(&q->timer, on_req_timeout, q->timeout_ms, 0);
    if (ret)
        *ret = q;
    return 0;
}

int reignd_peer_standby(uv_loop_t *loop, const reignd_peer_target *target, const char *service,
                        const char *from, uint64_t term, reignd_peer_cb *cb, void *userdata,
                        reignd_peer_request **ret)
{
    if (!from || !*from || strlen(from) > REIGN_ID_MAX)
        return REIGN_EINVAL;
    cJSON *o = cJSON_CreateObject();
    char *body = NULL;
    if (o && cJSON_AddStringToObject(o, "from", from) &&
        cJSON_AddNumberToObject(o, "term", (double)term))
        body = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!body)
        return REIGN_ENOMEM;
    int r =
        start_request(loop, target, "POST", service, PEER_STANDBY_SUFFIX, body, cb, userdata, ret);
    free(body);
    return r;
}

int reignd_peer_state(uv_loop_t *loop, const reignd_peer_target *target, const char *service,
                      reignd_peer_cb *cb, void *userdata, reignd_peer_request **ret)
{
    return start_request(loop, target, "GET", service, "", NULL, cb, userdata, ret);
}

void reignd_peer_cancel(reignd_peer_request *req)
{
    if (req && !req->done) {
        char msg[400];
        snprintf(msg, sizeof(msg), "peer %s: canceled", req->address);
        finish(req, REIGN_ECANCELED, msg, NULL);
    }
}
