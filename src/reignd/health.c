/*
 * health.c - the health monitor of one service (health.h): a check every
 * interval on the daemon's libuv loop, and the pure state function its
 * results go through.
 *
 * Each run of a check is a `check` object of its own.  The monitor learns
 * its result exactly once (check_finish()); the object itself lives on
 * until every libuv request and handle it started has called back (a
 * timed-out getaddrinfo cannot be taken back, a killed command still has
 * to be reaped), so a late callback never touches a monitor that has moved
 * on or been freed.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/common.h>

#include "health.h"
#include "hooks.h"

/* ---- the state function ------------------------------------------------- */

static reignd_health_state failure_state(reignd_check_result r)
{
    switch (r) {
    case REIGND_CHECK_TIMEOUT:
        return REIGND_HEALTH_NOT_RESPONDING;
    case REIGND_CHECK_NOT_RUN:
        return REIGND_HEALTH_MONITOR_FAILED;
    default:
        return REIGND_HEALTH_UNHEALTHY;
    }
}

bool reignd_health_step(reignd_health_track *t, reignd_check_result result, int rise, int fall)
{
    reignd_health_state old = t->state;
    if (result == REIGND_CHECK_OK) {
        t->failures = 0;
        if (t->successes < rise)
            t->successes++;
        if (t->successes >= rise)
            t->state = REIGND_HEALTH_HEALTHY;
    } else {
        t->successes = 0;
        if (t->failures < fall)
            t->failures++;
        /* A healthy service is given `fall` chances; one not yet judged, or
         * already failed, takes each failure's kind at once. */
        if (t->state != REIGND_HEALTH_HEALTHY || t->failures >= fall)
            t->state = failure_state(result);
    }
    return t->state != old;
}

const char *reignd_health_state_name(reignd_health_state state)
{
    static const char *const names[] = {"initializing", "healthy", "unhealthy", "not_responding",
                                        "monitor_failed"};
    return (unsigned)state < REIGND_HEALTH_N_STATES ? names[state] : "?";
}

const char *reignd_check_result_name(reignd_check_result result)
{
    static const char *const names[] = {"ok", "failed", "timeout", "not_run"};
    return (unsigned)result < REIGND_CHECK_N_RESULTS ? names[result] : "?";
}

/* ---- one run of a check ---------------------------------------------------- */

typedef struct check check;

struct reignd_health {
    uv_loop_t *loop;
    const reignd_service_config *svc;
    reignd_health_cb *cb;
    reignd_check_cb *check_cb;
    void *userdata;

    reignd_health_track track;
    uint64_t checks;
    check *cur;  /* the run in progress, or NULL */
    char **envp; /* command checks: REIGN_SERVICE, REIGN_NODE_ID */
    char host[256];
    int port;
    const char *path; /* http: into svc->check_target */
    char request[512];
    size_t request_len;

    uv_timer_t tick;    /* starts a check every interval */
    uv_timer_t timeout; /* the running check's deadline */
    int handles;        /* open timers; freed at 0 once closing */
    bool closing;
};

struct check {
    reignd_health *h; /* NULL once finished */
    int refs;         /* requests and handles not yet called back */
    uv_process_t proc;
    bool proc_exited;
    uv_getaddrinfo_t gai;
    struct addrinfo *addrs; /* what the name resolved to */
    struct addrinfo *next;  /* the address to try if this one fails */
    uv_tcp_t tcp;
    bool tcp_open;
    uv_connect_t connect;
    uv_write_t write;
    char buf[128]; /* the status line of an HTTP answer */
    size_t len;
};

static void check_unref(check *c)
{
    if (--c->refs == 0) {
        uv_freeaddrinfo(c->addrs);
        free(c);
    }
}

static void deliver(reignd_health *h, reignd_check_result result, const char *detail)
{
    h->checks++;
    if (h->check_cb)
        h->check_cb(h, result, detail, h->userdata);
    reignd_health_state old = h->track.state;
    if (!h->closing &&
        reignd_health_step(&h->track, result, h->svc->check_rise, h->svc->check_fall) && h->cb)
        h->cb(h, old, h->track.state, detail, h->userdata);
}

static void on_tcp_closed(uv_handle_t *handle)
{
    check_unref(handle->data);
}

/* Ends what the run still has going: closes its socket, kills its
 * command's process group. */
static void check_release(check *c)
{
    if (c->tcp_open) {
        c->tcp_open = false;
        uv_close((uv_handle_t *)&c->tcp, on_tcp_closed);
    }
    if (c->proc.pid > 0 && !c->proc_exited)
        kill(-c->proc.pid, SIGKILL); /* reaped by on_proc_exit */
}

/* Parts the run from the monitor, which drops its reference. */
static void check_detach(check *c)
{
    reignd_health *h = c->h;
    c->h = NULL;
    h->cur = NULL;
    uv_timer_stop(&h->timeout);
    check_release(c);
    check_unref(c);
}

/* The run's result; only the first call counts. */
static void check_finish(check *c, reignd_check_result result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_finish(check *c, reignd_check_result result, const char *fmt, ...)
{
    reignd_health *h = c->h;
    if (!h)
        return;
    char detail[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    check_detach(c);
    deliver(h, result, detail);
}

/* -- command -- */

static void on_proc_closed(uv_handle_t *handle)
{
    check_unref(handle->data);
}

static void on_proc_exit(uv_process_t *proc, int64_t status, int term_signal)
{
    check *c = proc->data;
    c->proc_exited = true;
    if (term_signal)
        check_finish(c, REIGND_CHECK_FAILED, "killed by signal %d", term_signal);
    else if (status == 0)
        check_finish(c, REIGND_CHECK_OK, "exit status 0");
    else if (status == 126 || status == 127)
        check_finish(c, REIGND_CHECK_NOT_RUN, "the shell could not run the check (status %d)",
                     (int)status);
    else
        check_finish(c, REIGND_CHECK_FAILED, "exit status %d", (int)status);
    uv_close((uv_handle_t *)proc, on_proc_closed);
}

static void start_command(reignd_health *h, check *c)
{
    c->proc.data = c;
    c->refs++;
    int rc =
        reignd_spawn_shell(h->loop, &c->proc, h->svc->check_target, h->envp, true, on_proc_exit);
    if (rc < 0) {
        c->proc.pid = 0;
        check_finish(c, REIGND_CHECK_NOT_RUN, "cannot start the check: %s", uv_strerror(rc));
        uv_close((uv_handle_t *)&c->proc, on_proc_closed);
    }
}

/* -- tcp and http -- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
    check *c = handle->data;
    *buf = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - 1 - c->len));
}

/* Judges an HTTP answer by its status line, "HTTP/1.x NNN ...". */
static void judge_status_line(check *c)
{
    c->buf[c->len] = '\0';
    int code = 0;
    if (strncmp(c->buf, "HTTP/", 5) != 0 || sscanf(c->buf, "HTTP/%*d.%*d %3d", &code) != 1 ||
        code < 100 || code > 999)
        check_finish(c, REIGND_CHECK_FAILED, "not an HTTP answer");
    else if (code >= 200 && code < 300)
        check_finish(c, REIGND_CHECK_OK, "HTTP %d", code);
    else
        check_finish(c, REIGND_CHECK_FAILED, "HTTP %d", code);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
    check *c = stream->data;
    if (nread < 0) {
        if (c->len > 0)
            judge_status_line(c);
        else
            check_finish(c, REIGND_CHECK_FAILED, "connection closed before an answer (%s)",
                         uv_strerror((int)nread));
        return;
    }
    c->len += (size_t)nread;
    if (memchr(c->buf, '\n', c->len) || c->len >= sizeof(c->buf) - 1)
        judge_status_line(c);
}

static void on_write(uv_write_t *req, int status)
{
    check *c = req->data;
    if (status < 0)
        check_finish(c, REIGND_CHECK_FAILED, "cannot send the request: %s", uv_strerror(status));
    check_unref(c);
}

static void connect_to(check *c, const struct sockaddr *addr);

static void on_tcp_closed_try_next(uv_handle_t *handle)
{
    check *c = handle->data;
    if (c->h) {
        const struct addrinfo *a = c->next;
        c->next = a->ai_next;
        connect_to(c, a->ai_addr);
    }
    check_unref(c);
}

static void on_connect(uv_connect_t *req, int status)
{
    check *c = req->data;
    reignd_health *h = c->h;
    if (!h) {
        /* Finished meanwhile (timeout); the socket is being closed. */
    } else if (status < 0 && c->next && status != UV_ECANCELED) {
        /* A name with several addresses (localhost: ::1 and 127.0.0.1):
         * the service may listen on the next one. */
        c->tcp_open = false;
        uv_close((uv_handle_t *)&c->tcp, on_tcp_closed_try_next);
    } else if (status < 0) {
        check_finish(c, REIGND_CHECK_FAILED, "%s",
                     status == UV_ECONNREFUSED ? "connection refused" : uv_strerror(status));
    } else if (h->svc->check_type == REIGND_CHECK_TCP) {
        check_finish(c, REIGND_CHECK_OK, "connected");
    } else {
        uv_buf_t b = uv_buf_init(h->request, (unsigned)h->request_len);
        c->write.data = c;
        c->refs++;
        int rc = uv_write(&c->write, (uv_stream_t *)&c->tcp, &b, 1, on_write);
        if (rc < 0) {
            c->refs--;
            check_finish(c, REIGND_CHECK_FAILED, "cannot send the request: %s", uv_strerror(rc));
        } else {
            uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
        }
    }
    check_unref(c);
}

static void connect_to(check *c, const struct sockaddr *addr)
{
    reignd_health *h = c->h;
    int rc = uv_tcp_init(h->loop, &c->tcp);
    if (rc < 0) {
        check_finish(c, REIGND_CHECK_NOT_RUN, "no socket: %s", uv_strerror(rc));
        return;
    }
    c->tcp.data = c;
    c->tcp_open = true;
    c->refs++; /* the handle, until on_tcp_closed */
    c->connect.data = c;
    rc = uv_tcp_connect(&c->connect, &c->tcp, addr, on_connect);
    if (rc < 0)
        check_finish(c, rc == UV_ECONNREFUSED ? REIGND_CHECK_FAILED : REIGND_CHECK_NOT_RUN,
                     "cannot connect: %s", uv_strerror(rc));
    else
        c->refs++; /* the request, until on_connect */
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    check *c = req->data;
    if (c->h && status < 0)
        check_finish(c, REIGND_CHECK_NOT_RUN, "cannot resolve '%s': %s", c->h->host,
                     uv_strerror(status));
    c->addrs = res;
    if (c->h && status == 0) {
        c->next = res->ai_next;
        connect_to(c, res->ai_addr);
    }
    check_unref(c);
}

static void start_connect(reignd_health *h, check *c)
{
    struct sockaddr_storage ss;
    /* Numeric addresses need no resolver (and no thread pool). */
    if (uv_ip4_addr(h->host, h->port, (struct sockaddr_in *)&ss) == 0 ||
        uv_ip6_addr(h->host, h->port, (struct sockaddr_in6 *)&ss) == 0) {
        connect_to(c, (struct sockaddr *)&ss);
        return;
    }
    char port[8];
    snprintf(port, sizeof(port), "%d", h->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    c->gai.data = c;
    c->refs++;
    int rc = uv_getaddrinfo(h->loop, &c->gai, on_resolved, h->host, port, &hints);
    if (rc < 0) {
        c->refs--;
        check_finish(c, REIGND_CHECK_NOT_RUN, "cannot resolve '%s': %s", h->host, uv_strerror(rc));
    }
}

/* ---- the monitor ---------------------------------------------------------- */

static void on_timeout(uv_timer_t *t)
{
    reignd_health *h = t->data;
    if (h->cur)
        check_finish(h->cur, REIGND_CHECK_TIMEOUT, "timed out after %" PRId64 " ms",
                     h->svc->check_timeout_ms);
}

static void on_tick(uv_timer_t *t)
{
    reignd_health *h = t->data;
    /* The timeout is at most the interval, so a run still going is at its
     * deadline: the tick came first in the same loop turn. */
    if (h->cur)
        on_timeout(&h->timeout);
    if (h->closing)
        return;
    check *c = calloc(1, sizeof(*c));
    if (!c) {
        deliver(h, REIGND_CHECK_NOT_RUN, "out of memory");
        return;
    }
    c->h = h;
    c->refs = 1; /* the monitor's, until check_finish */
    h->cur = c;
    uv_timer_start(&h->timeout, on_timeout, (uint64_t)h->svc->check_timeout_ms, 0);
    if (h->svc->check_type == REIGND_CHECK_COMMAND)
        start_command(h, c);
    else
        start_connect(h, c);
}

int reignd_health_new(reignd_health **ret, uv_loop_t *loop, const reignd_service_config *svc,
                      reignd_health_cb *cb, void *userdata)
{
    *ret = NULL;
    reignd_health *h = calloc(1, sizeof(*h));
    if (!h)
        return REIGN_ENOMEM;
    h->loop = loop;
    h->svc = svc;
    h->cb = cb;
    h->userdata = userdata;
    int rc = 0;
    if (svc->check_type == REIGND_CHECK_COMMAND) {
        reignd_hook_env env = {.service = svc->name,
                               .node_id = svc->node_id,
                               .term = -1,
                               .token = -1,
                               .target_term = -1};
        if (!(h->envp = reignd_env_build(&env, "health")))
            rc = REIGN_ENOMEM;
    } else if (svc->check_type == REIGND_CHECK_TCP) {
        rc = reignd_parse_hostport(svc->check_target, h->host, sizeof(h->host), &h->port);
    } else {
        rc = reignd_parse_http_url(svc->check_target, h->host, sizeof(h->host), &h->port, &h->path);
        /* The Host header: the URL's own host[:port], brackets and all. */
        const char *auth = svc->check_target + strlen("http://");
        size_t alen = strcspn(auth, "/");
        int n = snprintf(h->request, sizeof(h->request),
                         "GET %s HTTP/1.0\r\nHost: %.*s\r\nUser-Agent: reignd\r\n"
                         "Connection: close\r\n\r\n",
                         h->path, (int)alen, auth);
        if (rc == 0 && (n < 0 || (size_t)n >= sizeof(h->request)))
            rc = REIGN_EINVAL;
        h->request_len = n > 0 ? (size_t)n : 0;
    }
    if (rc < 0) {
        reignd_env_free(h->envp);
        free(h);
        return rc;
    }
    uv_timer_init(loop, &h->tick);
    uv_timer_init(loop, &h->timeout);
    h->tick.data = h->timeout.data = h;
    h->handles = 2;
    *ret = h;
    return 0;
}

int reignd_health_start(reignd_health *h)
{
    if (!h || h->closing)
        return REIGN_EINVAL;
    return uv_timer_start(&h->tick, on_tick, 0, (uint64_t)h->svc->check_interval_ms);
}

reignd_health_state reignd_health_state_get(const reignd_health *h)
{
    return h->track.state;
}

uint64_t reignd_health_checks(const reignd_health *h)
{
    return h->checks;
}

void reignd_health_on_check(reignd_health *h, reignd_check_cb *cb)
{
    h->check_cb = cb;
}

static void on_timer_closed(uv_handle_t *t)
{
    reignd_health *h = t->data;
    if (--h->handles == 0) {
        reignd_env_free(h->envp);
        free(h);
    }
}

void reignd_health_close(reignd_health *h)
{
    if (!h || h->closing)
        return;
    h->closing = true;
    h->cb = NULL;
    h->check_cb = NULL;
    if (h->cur)
        check_detach(h->cur);
    uv_close((uv_handle_t *)&h->tick, on_timer_closed);
    uv_close((uv_handle_t *)&h->timeout, on_timer_closed);
}
