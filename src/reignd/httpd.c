/*
 * httpd.c - libmicrohttpd on the daemon's libuv loop (see httpd.h): the
 * listening socket is ours (so we know the port and report bind errors
 * well), everything after accept() is libmicrohttpd's, run whenever its
 * epoll descriptor is readable or its next timeout is due.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "httpd.h"
#include "srvlog.h"

/* Small on purpose: peers and Prometheus make a few short requests. */
#define HTTPD_CONN_LIMIT   32
#define HTTPD_CONN_TIMEOUT 10 /* seconds a connection may idle */
#define HTTPD_CONN_MEMORY  (32 * 1024)

struct reignd_httpd {
    uv_poll_t poll;
    uv_timer_t timer;
    struct MHD_Daemon *mhd;
    int port;
    int open_handles;
    const char *what;
    reign_log_fn *log_fn;
    void *log_userdata;
};

int reignd__split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen)
{
    const char *colon;
    size_t hlen;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return REIGN_EINVAL;
        hlen = (size_t)(close - s - 1);
        s++;
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return REIGN_EINVAL;
        hlen = (size_t)(colon - s);
        if (memchr(s, ':', hlen)) /* an IPv6 address needs its brackets */
            return REIGN_EINVAL;
    }
    const char *p = colon + 1;
    size_t plen = strlen(p);
    if (plen == 0 || plen >= portlen || hlen >= hostlen || strspn(p, "0123456789") != plen)
        return REIGN_EINVAL;
    memcpy(host, s, hlen);
    host[hlen] = '\0';
    memcpy(port, p, plen + 1);
    return atol(port) <= 65535 ? 0 : REIGN_EINVAL;
}

/* A listening socket on `listen`; the fd or a negative REIGN_E* code with err. */
static int open_listener(const char *listen_addr, int *port, char *err, size_t errlen)
{
    char host[256], portstr[16];
    if (reignd__split_hostport(listen_addr, host, sizeof(host), portstr, sizeof(portstr)) < 0) {
        snprintf(err, errlen,
                 "invalid listen address '%s' (expected HOST:PORT, [V6]:PORT or :PORT)",
                 listen_addr);
        return REIGN_EINVAL;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = host[0] ? AF_UNSPEC : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(host[0] ? host : NULL, portstr, &hints, &res);
    if (g != 0) {
        snprintf(err, errlen, "cannot resolve listen address '%s': %s", listen_addr,
                 gai_strerror(g));
        return REIGN_EINVAL;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on '%s': %s", listen_addr, strerror(e));
        return e ? -e : REIGN_EINVAL;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    *port = 0;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        *port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    reignd_httpd *h = cls;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\r\n")] = '\0';
    reignd__logf(h->log_fn, h->log_userdata, REIGN_LOG_WARN, "%s: %s", h->what, line);
}
#pragma GCC diagnostic pop

static void on_timer(uv_timer_t *t);

/* One turn of libmicrohttpd, then the timer at its next deadline. */
static void run_mhd(reignd_httpd *h)
{
    if (!h->mhd)
        return;
    MHD_run(h->mhd);
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
        uv_timer_start(&h->timer, on_timer, (uint64_t)ms, 0);
    else
        uv_timer_stop(&h->timer);
}

static void on_timer(uv_timer_t *t)
{
    run_mhd(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    run_mhd(p->data);
}

void reignd_httpd_kick(reignd_httpd *h)
{
    /* Not MHD_run() from here: the caller may be inside a handler. */
    if (h && h->mhd)
        uv_timer_start(&h->timer, on_timer, 0, 0);
}

int reignd_httpd_port(const reignd_httpd *h)
{
    return h->port;
}

static void on_closed(uv_handle_t *handle)
{
    reignd_httpd *h = handle->data;
    if (--h->open_handles == 0)
        free(h);
}

int reignd_httpd_start(uv_loop_t *loop, const reignd_httpd_options *opts, reignd_httpd **ret,
                       char *err, size_t errlen)
{
    *ret = NULL;
    reignd_httpd *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "out of memory");
        return REIGN_ENOMEM;
    }
    h->what = opts->what;
    h->log_fn = opts->log_fn;
    h->log_userdata = opts->log_userdata;
    int fd = open_listener(opts->listen, &h->port, err, errlen);
    if (fd < 0) {
        free(h);
        return fd;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
    if (opts->suspend)
        flags |= MHD_ALLOW_SUSPEND_RESUME;
    /* The logger first: libmicrohttpd reports options before it on stderr. */
    h->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, opts->handler, opts->cls, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, opts->completed, opts->cls,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTPD_CONN_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)HTTPD_CONN_TIMEOUT, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTPD_CONN_MEMORY,
        MHD_OPTION_END);
    const union MHD_DaemonInfo *info =
        h->mhd ? MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
    if (!info) {
        snprintf(err, errlen, "cannot start the %s server on '%s'", opts->what, opts->listen);
        if (h->mhd)
            MHD_stop_daemon(h->mhd);
        else
            close(fd);
        free(h);
        return REIGN_EINVAL;
    }
    uv_timer_init(loop, &h->timer);
    uv_poll_init(loop, &h->poll, info->epoll_fd);
    h->timer.data = h;
    h->poll.data = h;
    h->open_handles = 2;
    uv_poll_start(&h->poll, UV_READABLE, on_poll);
    run_mhd(h);
    *ret = h;
    return 0;
}

void reignd_httpd_close(reignd_httpd *h)
{
    if (!h || !h->mhd)
        return;
    /* libuv must stop watching the epoll descriptor before it is closed. */
    uv_poll_stop(&h->poll);
    struct MHD_Daemon *mhd = h->mhd;
    h->mhd = NULL;
    MHD_stop_daemon(mhd);
    uv_close((uv_handle_t *)&h->poll, on_closed);
    uv_close((uv_handle_t *)&h->timer, on_closed);
}

enum MHD_Result reignd__httpd_reply(struct MHD_Connection *conn, unsigned code, const char *type,
                                    const char *body, size_t len, const char *header,
                                    const char *value)
{
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (header && value && MHD_add_response_header(resp, header, value) != MHD_YES) {
        MHD_destroy_response(resp);
        return MHD_NO;
    }
    enum MHD_Result r = MHD_queue_response(conn, code, resp);
    MHD_destroy_response(resp);
    return r;
}

enum MHD_Result reignd__httpd_reply_taken(struct MHD_Connection *conn, const char *type, char *body,
                                          size_t len, const char *const *headers)
{
    if (!body)
        return reignd__httpd_reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain",
                                   "out of memory\n", 14, NULL, NULL);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
        MHD_add_response_header(resp, headers[i], headers[i + 1]);
    enum MHD_Result r = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return r;
}
