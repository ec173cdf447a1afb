/*
 * control.c - the local control socket (control.h): request parsing, and a
 * libuv Unix stream server that answers one JSON line per request line
 * through the daemon's reignd_ops.
 *
 * Each connection handles one request at a time: while an operation is
 * pending (a failover that waits for the new active) the connection stops
 * reading, so answers keep the order of the requests and a client cannot
 * make the daemon buffer more than one line per connection.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "call.h"
#include "control.h"
#include "srvlog.h"

/* Connections beyond this are refused: the socket is for an operator's tools. */
#define CONTROL_CONN_MAX 16

/* ---- requests ------------------------------------------------------------ */

static const char *const op_names[] = {
    [REIGND_OP_STATUS] = "status", [REIGND_OP_CEDE] = "cede",     [REIGND_OP_FAILOVER] = "failover",
    [REIGND_OP_PAUSE] = "pause",   [REIGND_OP_RESUME] = "resume",
};

#define OP_COUNT (sizeof(op_names) / sizeof(op_names[0]))

const char *reignd_op_name(reignd_op op)
{
    return (unsigned)op < OP_COUNT ? op_names[op] : "?";
}

/* The keys a request of each op may carry besides "op". */
static int key_allowed(reignd_op op, const char *key)
{
    switch (op) {
    case REIGND_OP_STATUS:
        return 0;
    case REIGND_OP_CEDE:
        return strcmp(key, "service") == 0 || strcmp(key, "delay_s") == 0;
    case REIGND_OP_FAILOVER:
        return strcmp(key, "service") == 0 || strcmp(key, "to") == 0 || strcmp(key, "wait") == 0;
    case REIGND_OP_PAUSE:
    case REIGND_OP_RESUME:
        return strcmp(key, "service") == 0;
    }
    return 0;
}

/* 1..max bytes without control characters: names end up in logs and lines. */
static int name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            return 0;
    }
    return 1;
}

static int errf(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return code;
}

/* Copies the string member `key` (a name of at most max bytes) into *out. */
static int take_name(const cJSON *root, const char *key, size_t max, char **out, char *err,
                     size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v)
        return errf(err, errlen, REIGN_EINVAL, "missing \"%s\"", key);
    if (!cJSON_IsString(v) || !v->valuestring)
        return errf(err, errlen, REIGN_EINVAL, "\"%s\" must be a string", key);
    if (!name_ok(v->valuestring, max)) {
        snprintf(err, errlen, "\"%s\" must be 1 to %zu bytes without control characters", key, max);
        return REIGN_EINVAL;
    }
    *out = strdup(v->valuestring);
    return *out ? 0 : errf(err, errlen, REIGN_ENOMEM, "out of memory");
}

static int parse_op(const cJSON *root, reignd_op *op, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "op");
    if (!v)
        return errf(err, errlen, REIGN_EINVAL, "missing \"op\"");
    if (!cJSON_IsString(v) || !v->valuestring)
        return errf(err, errlen, REIGN_EINVAL, "\"op\" must be a string");
    for (size_t i = 0; i < OP_COUNT; i++)
        if (strcmp(v->valuestring, op_names[i]) == 0) {
            *op = (reignd_op)i;
            return 0;
        }
    return errf(err, errlen, REIGN_EINVAL,
                "unknown op (expected status, cede, failover, pause or resume)");
}

/* Every key known for the op, and none twice. */
static int check_keys(const cJSON *root, reignd_op op, char *err, size_t errlen)
{
    for (const cJSON *a = root->child; a; a = a->next) {
        char q[64];
        snprintf(q, sizeof(q), "%.40s%s", a->string, strlen(a->string) > 40 ? "..." : "");
        for (size_t i = 0; q[i]; i++)
            if ((unsigned char)q[i] < 0x20 || q[i] == '"' || q[i] == '\\' || q[i] == 0x7f)
                q[i] = '?';
        if (strcmp(a->string, "op") != 0 && !key_allowed(op, a->string))
            return errf(err, errlen, REIGN_EINVAL, "unexpected key \"%s\"", q);
        for (const cJSON *b = root->child; b != a; b = b->next)
            if (strcmp(a->string, b->string) == 0)
                return errf(err, errlen, REIGN_EINVAL, "duplicate key \"%s\"", q);
    }
    return 0;
}

static int parse_members(const cJSON *root, reignd_request *req, char *err, size_t errlen)
{
    int r;
    if (req->op == REIGND_OP_STATUS)
        return 0;
    if ((r = take_name(root, "service", REIGN_NAME_MAX, &req->service, err, errlen)))
        return r;
    if (req->op == REIGND_OP_FAILOVER) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(root, "wait");
        if (w && !cJSON_IsBool(w))
            return errf(err, errlen, REIGN_EINVAL, "%s", "\"wait\" must be true or false");
        req->no_wait = w && cJSON_IsFalse(w);
        return take_name(root, "to", REIGN_ID_MAX, &req->to, err, errlen);
    }
    if (req->op == REIGND_OP_CEDE) {
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "delay_s");
        if (!d)
            return 0;
        if (!cJSON_IsNumber(d) || !isfinite(d->valuedouble) || d->valuedouble < 0 ||
            d->valuedouble > REIGND_CEDE_DELAY_MAX_S)
            return errf(err, errlen, REIGN_EINVAL, "%s",
                        "\"delay_s\" must be a number of seconds from 0 to 86400");
        req->delay_s = d->valuedouble;
    }
    return 0;
}

int reignd_request_parse(const char *line, size_t len, reignd_request *req, char *err,
                         size_t errlen)
{
    memset(req, 0, sizeof(*req));
    if (len > REIGND_CONTROL_LINE_MAX) {
        snprintf(err, errlen, "request longer than %d bytes", REIGND_CONTROL_LINE_MAX);
        return REIGN_E2BIG;
    }
    if (memchr(line, '\0', len))
        return errf(err, errlen, REIGN_EINVAL, "request contains a NUL byte");
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, 0);
    if (!root) {
        size_t at = end && end >= line && end <= line + len ? (size_t)(end - line) : 0;
        snprintf(err, errlen, "malformed JSON at byte %zu", at);
        return REIGN_EINVAL;
    }
    int r = 0;
    for (const char *p = end; p && p < line + len && r == 0; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            r = errf(err, errlen, REIGN_EINVAL, "text after the request object");
    if (r == 0 && !cJSON_IsObject(root))
        r = errf(err, errlen, REIGN_EINVAL, "a request must be a JSON object");
    if (r == 0)
        r = parse_op(root, &req->op, err, errlen);
    if (r == 0)
        r = check_keys(root, req->op, err, errlen);
    if (r == 0)
        r = parse_members(root, req, err, errlen);
    cJSON_Delete(root);
    if (r)
        reignd_request_clear(req);
    return r;
}

void reignd_request_clear(reignd_request *req)
{
    free(req->service);
    free(req->to);
    memset(req, 0, sizeof(*req));
}

/* ---- the server ------------------------------------------------------------ */

typedef struct conn conn;

struct reignd_control {
    uv_loop_t *loop;
    uv_pipe_t pipe;
    reignd_ops ops;
    reign_log_fn *log_fn;
    void *log_userdata;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    conn *conns;
    int nconns;
    int handles; /* open libuv handles: the listener and every connection */
    int closing;
};

struct conn {
    uv_pipe_t pipe;
    reignd_control *ctl;
    conn *next, **pprev;
    reignd_call *call; /* the pending operation, if any */
    int dispatching;   /* inside dispatch(): completion must not recurse */
    int closing;
    char origin[96];
    size_t len;
    char buf[REIGND_CONTROL_LINE_MAX + 1]; /* one line and its newline */
};

#define LOG(ctl, level, ...) reignd__logf((ctl)->log_fn, (ctl)->log_userdata, level, __VA_ARGS__)

static void release(reignd_control *ctl)
{
    if (--ctl->handles == 0 && ctl->closing)
        free(ctl);
}

static void on_conn_closed(uv_handle_t *h)
{
    conn *c = h->data;
    reignd_control *ctl = c->ctl;
    free(c);
    release(ctl);
}

static void conn_close(conn *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    if (c->call)
        reignd__call_detach(c->call);
    c->call = NULL;
    *c->pprev = c->next;
    if (c->next)
        c->next->pprev = c->pprev;
    c->ctl->nconns--;
    uv_close((uv_handle_t *)&c->pipe, on_conn_closed);
}

typedef struct write_req {
    uv_write_t req;
    conn *c;
    int close_after;
    char line[];
} write_req;

static void on_written(uv_write_t *w, int status)
{
    write_req *wr = (write_req *)w;
    if ((status < 0 || wr->close_after) && status != UV_ECANCELED)
        conn_close(wr->c);
    free(wr);
}

/* Sends an answer line; close_after ends the connection once it is out. */
static void answer(conn *c, int err, const char *msg, const cJSON *result, int close_after)
{
    size_t len;
    if (c->closing)
        return;
    char *line = reignd__answer_line(err, msg, result, &len);
    write_req *wr = line ? malloc(sizeof(*wr) + len) : NULL;
    if (!wr) {
        free(line);
        LOG(c->ctl, REIGN_LOG_ERROR, "control: out of memory answering %s", c->origin);
        conn_close(c);
        return;
    }
    memcpy(wr->line, line, len);
    free(line);
    wr->c = c;
    wr->close_after = close_after;
    uv_buf_t b = uv_buf_init(wr->line, (unsigned)len);
    if (uv_write(&wr->req, (uv_stream_t *)&c->pipe, &b, 1, on_written) < 0) {
        free(wr);
        conn_close(c);
    }
}

static void conn_resume(conn *c);

static void on_call_complete(void *owner, int err, const char *msg, const cJSON *result)
{
    conn *c = owner;
    c->call = NULL;
    answer(c, err, msg, result, 0);
    if (!c->dispatching)
        conn_resume(c);
}

static int run_op(const reignd_ops *ops, reignd_call *call, const reignd_request *req)
{
    switch (req->op) {
    case REIGND_OP_CEDE:
        return ops->cede ? ops->cede(ops->ctx, call, req->service, req->delay_s) : REIGN_ENOTSUP;
    case REIGND_OP_FAILOVER:
        return ops->failover ? ops->failover(ops->ctx, call, req->service, req->to, !req->no_wait)
                             : REIGN_ENOTSUP;
    case REIGND_OP_PAUSE:
        return ops->pause ? ops->pause(ops->ctx, call, req->service) : REIGN_ENOTSUP;
    case REIGND_OP_RESUME:
        return ops->resume ? ops->resume(ops->ctx, call, req->service) : REIGN_ENOTSUP;
    case REIGND_OP_STATUS:
        break;
    }
    return REIGN_ENOTSUP;
}

static void answer_status(conn *c)
{
    const reignd_ops *ops = &c->ctl->ops;
    if (!ops->status) {
        answer(c, REIGN_ENOTSUP, NULL, NULL, 0);
        return;
    }
    cJSON *st = ops->status(ops->ctx);
    if (!st)
        answer(c, REIGN_ENOMEM, NULL, NULL, 0);
    else
        answer(c, 0, NULL, st, 0);
    cJSON_Delete(st);
}

static void dispatch(conn *c, const char *line, size_t len)
{
    reignd_request req;
    char err[256];
    int r = reignd_request_parse(line, len, &req, err, sizeof(err));
    if (r < 0) {
        answer(c, r, err, NULL, 0);
        return;
    }
    if (req.op == REIGND_OP_STATUS) {
        answer_status(c);
    } else {
        reignd_call *call = reignd__call_new(on_call_complete, c, c->origin);
        if (!call) {
            answer(c, REIGN_ENOMEM, NULL, NULL, 0);
        } else {
            c->call = call;
            reignd__call_run(call, run_op(&c->ctl->ops, call, &req));
        }
    }
    reignd_request_clear(&req);
}

/* Answers every complete line buffered, stopping at a pending operation. */
static void process_lines(conn *c)
{
    while (!c->closing && !c->call) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (!nl) {
            if (c->len == sizeof(c->buf)) {
                char err[64];
                snprintf(err, sizeof(err), "request longer than %d bytes", REIGND_CONTROL_LINE_MAX);
                answer(c, REIGN_E2BIG, err, NULL, 1);
                uv_read_stop((uv_stream_t *)&c->pipe);
            }
            return;
        }
        size_t n = (size_t)(nl - c->buf);
        size_t linelen = n > 0 && c->buf[n - 1] == '\r' ? n - 1 : n;
        c->dispatching = 1;
        if (linelen > 0) /* an empty line is a keep-alive, not a request */
            dispatch(c, c->buf, linelen);
        c->dispatching = 0;
        if (c->closing)
            return;
        c->len -= n + 1;
        memmove(c->buf, nl + 1, c->len);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    conn *c = h->data;
    (void)suggested;
    *b = uv_buf_init(c->buf + c->len, (unsigned)(sizeof(c->buf) - c->len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    conn *c = s->data;
    (void)b;
    if (nread < 0) {
        conn_close(c);
        return;
    }
    c->len += (size_t)nread;
    process_lines(c);
    if (c->call)
        uv_read_stop(s);
}

static void conn_resume(conn *c)
{
    process_lines(c);
    if (!c->closing && !c->call && c->len < sizeof(c->buf))
        uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

/* Same uid as the daemon, or root; 0, or -1 after logging the refusal. */
static int check_peer(reignd_control *ctl, conn *c)
{
    uv_os_fd_t fd;
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || clen != sizeof(cred)) {
        LOG(ctl, REIGN_LOG_WARN, "control: refused a connection: cannot read its credentials");
        return -1;
    }
    if (cred.uid != geteuid() && cred.uid != 0) {
        LOG(ctl, REIGN_LOG_WARN,
            "control: refused a connection from uid %u (pid %ld): only uid %u or root may "
            "control reignd",
            (unsigned)cred.uid, (long)cred.pid, (unsigned)geteuid());
        return -1;
    }
    snprintf(c->origin, sizeof(c->origin), "control (uid %u, pid %ld)", (unsigned)cred.uid,
             (long)cred.pid);
    return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
    reignd_control *ctl = server->data;
    if (status < 0 || ctl->closing)
        return;
    conn *c = calloc(1, sizeof(*c));
    if (!c) {
        LOG(ctl, REIGN_LOG_ERROR, "control: out of memory accepting a connection");
        return;
    }
    c->ctl = ctl;
    uv_pipe_init(ctl->loop, &c->pipe, 0);
    c->pipe.data = c;
    ctl->handles++;
    c->next = ctl->conns;
    if (ctl->conns)
        ctl->conns->pprev = &c->next;
    c->pprev = &ctl->conns;
    ctl->conns = c;
    ctl->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0 || check_peer(ctl, c) < 0) {
        conn_close(c);
        return;
    }
    if (ctl->nconns > CONTROL_CONN_MAX) {
        LOG(ctl, REIGN_LOG_WARN, "control: refused %s: %d connections already open", c->origin,
            CONTROL_CONN_MAX);
        conn_close(c);
        return;
    }
    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);
}

/* ---- the socket file ------------------------------------------------------- */

/* The directory of the socket `path` into dir. */
static void socket_dir(const char *path, char *dir, size_t len)
{
    snprintf(dir, len, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == dir)
        slash[1] = '\0';
    else
        *slash = '\0';
}

/* An existing directory that only we reach (0 if it does not exist: *missing). */
static int check_dir(const char *dir, int *missing, char *err, size_t errlen)
{
    struct stat st;
    *missing = 0;
    if (lstat(dir, &st) < 0) {
        if (errno == ENOENT) {
            *missing = 1;
            return 0;
        }
        return errf(err, errlen, -errno, "directory '%s': %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return errf(err, errlen, REIGN_EINVAL, "'%s' is not a directory", dir);
    if (st.st_uid != geteuid() || (st.st_mode & 077))
        return errf(err, errlen, REIGN_EACCES,
                    "directory '%s' must belong to uid %u with mode 0700 (it is uid %u, mode "
                    "%04o): the control socket goes in a directory no one else can enter",
                    dir, (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* The socket's directory: created 0700, or an existing one that only we reach. */
static int prepare_dir(const char *path, char *err, size_t errlen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int missing;
    socket_dir(path, dir, sizeof(dir));
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return errf(err, errlen, -errno, "cannot create directory '%s': %s", dir, strerror(errno));
    int r = check_dir(dir, &missing, err, errlen);
    if (r == 0 && missing)
        return errf(err, errlen, -ENOENT, "directory '%s' vanished", dir);
    return r;
}

/* Whether someone listens on the socket at `path`: 1 yes, 0 no (a stale
 * socket), or a negative code with err. */
static int probe_socket(const char *path, char *err, size_t errlen)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return errf(err, errlen, -errno, "socket: %s", strerror(errno));
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    close(fd);
    if (r == 0 || e == EAGAIN || e == EINPROGRESS)
        return 1;
    if (e != ECONNREFUSED)
        return errf(err, errlen, -e, "cannot probe '%s': %s", path, strerror(e));
    return 0;
}

/* The socket file at `path`, if any: 0 none, 1 a socket, or an error. */
static int socket_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : errf(err, errlen, -errno, "'%s': %s", path, strerror(errno));
    if (!S_ISSOCK(st.st_mode))
        return errf(err, errlen, REIGN_EEXIST, "'%s' exists and is not a socket", path);
    return 1;
}

/* Removes a socket no one listens on; a live one means another daemon runs. */
static int clear_stale(const char *path, char *err, size_t errlen)
{
    int r = socket_file(path, err, errlen);
    if (r > 0)
        r = probe_socket(path, err, errlen);
    if (r > 0)
        return errf(err, errlen, REIGN_EEXIST,
                    "another reignd listens on '%s' (stop it, or choose another control_socket)",
                    path);
    if (r < 0)
        return r;
    if (unlink(path) < 0 && errno != ENOENT)
        return errf(err, errlen, -errno, "cannot remove the stale socket '%s': %s", path,
                    strerror(errno));
    return 0;
}

static int check_path(const char *path, char *err, size_t errlen)
{
    if (path[0] == '\0' || strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return errf(err, errlen, REIGN_EINVAL,
                    "control socket path '%s' is empty or longer than %zu bytes", path,
                    sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    return 0;
}

int reignd_control_check(const char *path, int *running, char *err, size_t errlen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int missing;
    *running = 0;
    int r = check_path(path, err, errlen);
    if (r < 0)
        return r;
    socket_dir(path, dir, sizeof(dir));
    if ((r = check_dir(dir, &missing, err, errlen)) < 0)
        return r;
    if (missing) {
        /* reignd makes the last level only (0700), like the unit's RuntimeDirectory=. */
        char parent[sizeof(dir)];
        struct stat st;
        socket_dir(dir, parent, sizeof(parent));
        if (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode))
            return errf(err, errlen, REIGN_ENOENT,
                        "directory '%s' does not exist, nor does its parent '%s' (reignd creates "
                        "only the last level)",
                        dir, parent);
        if (access(parent, W_OK | X_OK) < 0)
            return errf(err, errlen, REIGN_EACCES, "cannot create directory '%s' in '%s': %s", dir,
                        parent, strerror(errno));
        return 0;
    }
    if ((r = socket_file(path, err, errlen)) > 0 && (r = probe_socket(path, err, errlen)) > 0)
        *running = 1;
    return r < 0 ? r : 0;
}

static int bind_listen(reignd_control *ctl, char *err, size_t errlen)
{
    /* The umask makes the socket 0600 from its creation: a chmod after
     * bind would leave a moment in which others could connect. */
    mode_t old = umask(0177);
    int r = uv_pipe_bind(&ctl->pipe, ctl->path);
    umask(old);
    if (r < 0)
        return errf(err, errlen, REIGN_EINVAL, "cannot bind '%s': %s", ctl->path, uv_strerror(r));
    if (chmod(ctl->path, 0600) < 0) {
        int e = errno;
        unlink(ctl->path);
        return errf(err, errlen, -e, "cannot chmod '%s': %s", ctl->path, strerror(e));
    }
    r = uv_listen((uv_stream_t *)&ctl->pipe, 16, on_connection);
    if (r < 0) {
        unlink(ctl->path);
        return errf(err, errlen, REIGN_EINVAL, "cannot listen on '%s': %s", ctl->path,
                    uv_strerror(r));
    }
    return 0;
}

static void on_listener_closed(uv_handle_t *h)
{
    release(h->data);
}

int reignd_control_start(uv_loop_t *loop, const reignd_control_options *opts, reignd_control **ret,
                         char *err, size_t errlen)
{
    const char *path = opts->path ? opts->path : REIGND_CONTROL_SOCKET_DEFAULT;
    *ret = NULL;
    if (!opts->ops)
        return errf(err, errlen, REIGN_EINVAL, "no operations given");
    int r = check_path(path, err, errlen);
    if (r < 0)
        return r;
    /* A client that leaves before its answer must cost a failed write, not
     * the daemon: libuv writes to pipes with write(2), which raises SIGPIPE.
     * (Hooks do not inherit this: libuv resets dispositions in children.) */
    signal(SIGPIPE, SIG_IGN);
    r = prepare_dir(path, err, errlen);
    if (r == 0)
        r = clear_stale(path, err, errlen);
    if (r < 0)
        return r;
    reignd_control *ctl = calloc(1, sizeof(*ctl));
    if (!ctl)
        return errf(err, errlen, REIGN_ENOMEM, "out of memory");
    ctl->loop = loop;
    ctl->ops = *opts->ops;
    ctl->log_fn = opts->log_fn;
    ctl->log_userdata = opts->log_userdata;
    snprintf(ctl->path, sizeof(ctl->path), "%s", path);
    uv_pipe_init(loop, &ctl->pipe, 0);
    ctl->pipe.data = ctl;
    ctl->handles = 1;
    if ((r = bind_listen(ctl, err, errlen)) < 0) {
        ctl->closing = 1;
        uv_close((uv_handle_t *)&ctl->pipe, on_listener_closed);
        return r;
    }
    *ret = ctl;
    return 0;
}

void reignd_control_close(reignd_control *ctl)
{
    if (!ctl || ctl->closing)
        return;
    ctl->closing = 1;
    while (ctl->conns)
        conn_close(ctl->conns);
    unlink(ctl->path);
    uv_close((uv_handle_t *)&ctl->pipe, on_listener_closed);
}
