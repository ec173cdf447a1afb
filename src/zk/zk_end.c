/*
 * zk_end.c - ends a ZooKeeper session from another process (zk.h): the
 * guardian attaches to its dead client's session with the session's id and
 * password and closes it, so that the server deletes the session's ephemeral
 * nodes at once instead of when the session times out.
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
 *   RequestHeader   int xid, int type (-11: closeSession)
 *
 * Both are sent at once: the server reads nothing after a ConnectRequest
 * until it has (re)validated the session.  The answers:
 *
 *   ConnectResponse int protocolVersion, int timeOut, long sessionId, buffer
 *                   passwd [, bool readOnly]: timeOut 0 means the session had
 *                   expired (then the server closes the connection)
 *   ReplyHeader     int xid, long zxid, int err: the close is done
 *
 * No credentials are needed: closing a session takes only its id and
 * password, and the server removes ephemeral nodes whatever their ACL.
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
#define CLOSE_XID         1
#define ZK_SESSIONEXPIRED (-112)

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)(v >> 32));
    put32(p + 4, (uint32_t)v);
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

/* Attaches to the session through one server and closes it: 1, 0 (expired), -1 (try another). */
static int end_via(int fd, int64_t session, const unsigned char passwd[16], int timeout_ms,
                   int64_t until)
{
    unsigned char out[4 + 45 + 4 + 8], *p = out;
    put32(p, 45); /* ConnectRequest: 4 + 8 + 4 + 8 + (4 + 16) + 1 */
    p += 4;
    put32(p, 0);
    put64(p + 4, 0);
    put32(p + 12, (uint32_t)timeout_ms);
    put64(p + 16, (uint64_t)session);
    put32(p + 24, 16);
    memcpy(p + 28, passwd, 16);
    p[44] = 0;
    p += 45;
    put32(p, 8);
    put32(p + 4, (uint32_t)CLOSE_XID);
    put32(p + 8, (uint32_t)CLOSE_SESSION);
    if (send(fd, out, sizeof(out), MSG_NOSIGNAL) != (ssize_t)sizeof(out)) {
        explicit_bzero(out, sizeof(out));
        return -1;
    }
    explicit_bzero(out, sizeof(out));
    unsigned char in[64];
    long n = read_frame(fd, in, sizeof(in), until);
    if (n < 8)
        return -1;
    if ((int32_t)get32(in + 4) <= 0)
        return 0; /* the session had expired: nothing left to close */
    n = read_frame(fd, in, sizeof(in), until);
    if (n < 16 || (int32_t)get32(in) != CLOSE_XID)
        return -1;
    int32_t err = (int32_t)get32(in + 12);
    return err == 0 ? 1 : err == ZK_SESSIONEXPIRED ? 0 : -1;
}

int reign__zk_end_session(const char *hosts, int64_t session, const unsigned char passwd[16],
                          int timeout_ms, char *err, size_t errlen)
{
    if (!strncmp(hosts, "etcd:", 5)) /* the tree is kept on etcd: its session is a lease */
        return reign__etcd_end_lease(hosts + 5, session, timeout_ms, err, errlen);
    int64_t until = reign__now_ns() + (int64_t)timeout_ms * REIGN__NS_PER_MS;
    size_t hl = strcspn(hosts, "/"); /* the chroot does not matter to a session */
    char *list = reign__strndup(hosts, hl);
    if (!list)
        return REIGN_ENOMEM;
    /* Each server in turn, until one answers; the whole list again until the deadline. */
    int rc = -1;
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
                rc = end_via(fd, session, passwd, timeout_ms, until);
                close(fd);
            }
        }
        if (rc >= 0 || ms_left(until) <= 50)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    reign__free(list);
    if (rc < 0) {
        reign__errf(err, errlen, "no ZooKeeper server at '%.*s' answered within %d ms", (int)hl,
                    hosts, timeout_ms);
        return REIGN_ETIMEDOUT;
    }
    return rc;
}
