/*
 * zk_end.c - ends a ZooKeeper session from another process (zk.h): the
 * guardian attaches to its dead client's session with the session's id and
 * password, writes the end of each leadership's history record, and closes
 * it, so that the server deletes the session's ephemeral nodes at once
 * instead of when the session times out.
 *
 * It speaks the two messages it needs itself, on one thread, rather than
 * through the C client: the C client would start two threads, read
 * /etc/passwd and the routing tables, and resolve the hosts again before it
 * sends a byte, which on a busy host cost the guardian several milliseconds
 * of a takeover it exists to make fast; and the guardian stays a small
 * single-threaded process that does not map libzookeeper at all.  The
 * messages are ZooKeeper's jute encoding, big-endian, each framed by its
 * length:
 *
 *   ConnectRequest  int protocolVersion (0), long lastZxidSeen (0), int timeOut,
 *                   long sessionId, buffer passwd, bool readOnly (false)
 *   AuthPacket      RequestHeader (xid -4, type 100), int type (0), ustring
 *                   scheme ("digest"), buffer auth ("user:password"): only
 *                   with writes to make and credentials to make them with
 *   SetDataRequest  RequestHeader (xid 2.., type 5), ustring path, buffer
 *                   data, int version (0): one per write
 *   RequestHeader   int xid (1), int type (-11: closeSession)
 *
 * All are sent at once: the server reads nothing after a ConnectRequest
 * until it has (re)validated the session, takes credentials as it reads
 * them, and applies a session's requests in the order sent, so the writes
 * land before the close, and one that fails (ZBADVERSION: its holder wrote
 * the end itself) costs the close nothing.  The answers:
 *
 *   ConnectResponse int protocolVersion, int timeOut, long sessionId, buffer
 *                   passwd [, bool readOnly]: timeOut 0 means the session had
 *                   expired (then the server closes the connection)
 *   ReplyHeader     int xid, long zxid, int err [, Stat]: each write's, then
 *                   the close's; a refused AuthPacket's (then the server
 *                   closes the connection: the next try goes without it)
 *
 * Closing a session takes only its id and password, and the server removes
 * ephemeral nodes whatever their ACL; the writes need the credentials the
 * nodes were made with (zk.c: the creator's digest may write, others read).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "etcd/etcd.h"
#include "zk.h"

#define CLOSE_SESSION     (-11)
#define SET_DATA          5
#define AUTH_PACKET       100
#define CLOSE_XID         1
#define AUTH_XID          (-4)
#define WRITE_XID0        2
#define ZK_SESSIONEXPIRED (-112)

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t ms_left(int64_t until)
{
    int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
    return left > 0 ? left : 0;
}

/* Waits for `events` on fd until `until`; 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, int64_t until)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int n = poll(&p, 1, (int)ms_left(until));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n;
        return (p.revents & (POLLERR | POLLNVAL)) && !(p.revents & events) ? -1 : 1;
    }
}

/* Reads exactly n bytes before `until`: 0, or -1 (closed, error or timeout). */
static int read_full(int fd, unsigned char *buf, size_t n, int64_t until)
{
    size_t got = 0;
    while (got < n) {
        if (wait_fd(fd, POLLIN, until) <= 0)
            return -1;
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* One framed message (at most cap bytes of it kept): its length, or -1. */
static long read_frame(int fd, unsigned char *buf, size_t cap, int64_t until)
{
    unsigned char len[4];
    if (read_full(fd, len, 4, until) < 0)
        return -1;
    uint32_t n = get32(len);
    if (n > cap)
        return -1;
    return read_full(fd, buf, n, until) < 0 ? -1 : (long)n;
}

/* A TCP connection to host:port, or -1. */
static int dial(const char *host, const char *port, int64_t until)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
            break;
        int err = 0;
        socklen_t el = sizeof(err);
        if (errno != EINPROGRESS || wait_fd(fd, POLLOUT, until) <= 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* Appends a jute int, long, or buffer (its length first). */
static void jint(reign__buf *b, uint32_t v)
{
    unsigned char p[4];
    put32(p, v);
    reign__buf_append(b, p, 4);
}

static void jbytes(reign__buf *b, const void *p, size_t n)
{
    jint(b, (uint32_t)n);
    reign__buf_append(b, p, n);
}

/* Starts a framed request (its length patched by end_frame()); returns where it starts. */
static size_t start_frame(reign__buf *b, int32_t xid, int32_t type)
{
    size_t at = b->len;
    jint(b, 0);
    jint(b, (uint32_t)xid);
    jint(b, (uint32_t)type);
    return at;
}

static void end_frame(reign__buf *b, size_t at)
{
    if (!b->oom)
        put32((unsigned char *)b->data + at, (uint32_t)(b->len - at - 4));
}

/* Sends all of buf before `until`: 0 or -1. */
static int send_full(int fd, const unsigned char *p, size_t n, int64_t until)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLOUT, until) <= 0)
                return -1;
            continue;
        }
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* ZooKeeper's codes of a write's answer, as zk.h's (zookeeper.h is not included here). */
static int write_rc(int32_t err)
{
    switch (err) {
    case 0:
        return 0;
    case -101:
        return REIGN_ENOENT;
    case -102:
        return REIGN_EACCES;
    case -103:
        return REIGN_EBADVERSION;
    case -112:
        return REIGN_ESESSION;
    default:
        return REIGN_EBACKEND;
    }
}

/*
 * Attaches to the session through one server, makes the writes not answered yet (after the
 * credentials, if any) and closes it: 1, 0 (expired), -1 (try another).  The server takes a
 * session's requests in the order sent, so the writes land before the close and a failed one
 * delays nothing.  *auth_refused: the server refused the credentials (and then closes the
 * connection): the next try goes without them, and without the writes, which need them.
 */
static int end_via(int fd, reign__zk_end *e, const char *root, bool with_writes, int64_t until,
                   bool *auth_refused)
{
    reign__buf out;
    reign__buf_init(&out);
    jint(&out, 45); /* ConnectRequest: 4 + 8 + 4 + 8 + (4 + 16) + 1 */
    jint(&out, 0);
    jint(&out, 0), jint(&out, 0); /* lastZxidSeen */
    jint(&out, (uint32_t)e->timeout_ms);
    jint(&out, (uint32_t)((uint64_t)e->session >> 32)), jint(&out, (uint32_t)e->session);
    jbytes(&out, e->passwd, 16);
    reign__buf_append(&out, "", 1); /* readOnly: false */
    size_t n_sent = 0;
    for (size_t i = 0; with_writes && i < e->n_writes; i++)
        n_sent += e->writes[i].rc == 1;
    if (n_sent && e->access.auth) {
        size_t at = start_frame(&out, AUTH_XID, AUTH_PACKET);
        jint(&out, 0);
        jbytes(&out, "digest", 6);
        jbytes(&out, e->access.auth, strlen(e->access.auth));
        end_frame(&out, at);
    }
    for (size_t i = 0; n_sent && i < e->n_writes; i++) {
        reign__zk_end_write *w = &e->writes[i];
        if (w->rc != 1)
            continue;
        size_t at = start_frame(&out, WRITE_XID0 + (int32_t)i, SET_DATA);
        size_t rl = strlen(root), pl = strlen(w->path);
        jint(&out, (uint32_t)(rl + pl));
        reign__buf_append(&out, root, rl);
        reign__buf_append(&out, w->path, pl);
        jbytes(&out, w->data, w->len);
        jint(&out, 0); /* version */
        end_frame(&out, at);
    }
    size_t at = start_frame(&out, CLOSE_XID, CLOSE_SESSION);
    end_frame(&out, at);
    int sent = out.oom ? -1 : send_full(fd, (unsigned char *)out.data, out.len, until);
    explicit_bzero(out.data, out.len); /* the password, the credentials */
    reign__buf_free(&out);
    if (sent < 0)
        return -1;
    unsigned char in[512];
    long n = read_frame(fd, in, sizeof(in), until);
    if (n < 8)
        return -1;
    if ((int32_t)get32(in + 4) <= 0)
        return 0; /* the session had expired: nothing left to close, nor written */
    /* The answers, in order: the credentials', the writes', the close's. */
    for (;;) {
        n = read_frame(fd, in, sizeof(in), until);
        if (n < 16)
            return -1;
        int32_t xid = (int32_t)get32(in), err = (int32_t)get32(in + 12);
        if (xid == CLOSE_XID)
            return err == 0 ? 1 : err == ZK_SESSIONEXPIRED ? 0 : -1;
        if (xid == AUTH_XID && err != 0)
            *auth_refused = true;
        else if (xid >= WRITE_XID0 && (size_t)(xid - WRITE_XID0) < e->n_writes)
            e->writes[xid - WRITE_XID0].rc = write_rc(err);
    }
}

int reign__zk_end_session(reign__zk_end *e, char *err, size_t errlen)
{
    for (size_t i = 0; i < e->n_writes; i++)
        e->writes[i].rc = 1;
    if (!strncmp(e->hosts, "etcd:", 5)) /* the tree is kept on etcd: its session is a lease */
        return reign__etcd_end_lease(e->hosts + 5, e, err, errlen);
    const char *hosts = e->hosts;
    int64_t until = reign__now_ns() + (int64_t)e->timeout_ms * REIGN__NS_PER_MS;
    size_t hl = strcspn(hosts, "/"); /* the chroot does not matter to a session */
    const char *root = e->access.root ? e->access.root : "";
    char *list = reign__strndup(hosts, hl);
    if (!list)
        return REIGN_ENOMEM;
    /* Each server in turn, until one answers; the whole list again until the deadline. */
    int rc = -1;
    bool auth_refused = false;
    for (;;) {
        memcpy(list, hosts, hl); /* strtok_r cuts it */
        for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok && rc < 0;
             tok = strtok_r(NULL, ",", &save)) {
            char *host = tok, *port = strrchr(tok, ':');
            if (!port || port[1] == '\0')
                continue;
            *port++ = '\0';
            if (*host == '[') { /* [v6]:port */
                host++;
                host[strcspn(host, "]")] = '\0';
            }
            int fd = dial(host, port, until);
            if (fd >= 0) {
                rc = end_via(fd, e, root, !auth_refused, until, &auth_refused);
                close(fd);
            }
        }
        if (rc >= 0 || ms_left(until) <= 50)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    reign__free(list);
    for (size_t i = 0; auth_refused && i < e->n_writes; i++)
        if (e->writes[i].rc == 1)
            e->writes[i].rc = REIGN_EAUTH;
    if (rc == 0) /* expired: the session could write nothing */
        for (size_t i = 0; i < e->n_writes; i++)
            if (e->writes[i].rc == 1)
                e->writes[i].rc = REIGN_ESESSION;
    if (rc < 0) {
        reign__errf(err, errlen, "no ZooKeeper server at '%.*s' answered within %d ms", (int)hl,
                    hosts, e->timeout_ms);
        return REIGN_ETIMEDOUT;
    }
    return rc;
}
