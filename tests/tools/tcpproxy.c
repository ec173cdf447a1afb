/*
 * tcpproxy.c - a TCP proxy that fault tests steer with signals (reign_tcpproxy).
 *
 *     reign_tcpproxy LISTEN_PORT TARGET_HOST:TARGET_PORT
 *
 * Listens on 127.0.0.1:LISTEN_PORT (0: a free port), prints the port it got on the first line
 * of stdout, and forwards every connection it accepts to the target.  A test puts it between a
 * client and ZooKeeper and then sends it:
 *
 *   SIGUSR1  freeze: keep every connection open but move no byte in either direction and accept
 *            nothing, so the client is cut off silently, as by a network partition;
 *   SIGUSR2  thaw: forward again (bytes held back flow on; waiting connects are accepted);
 *   SIGHUP   drop: reset (RST) both sides of every current connection; keep accepting;
 *   SIGTERM, SIGINT  exit.
 *
 * It also exits when the process that started it dies, so a killed test leaves no proxy behind.
 * One thread and one poll() loop; signals arrive through a signalfd, so a signal is handled
 * between two loop turns and never interrupts one.  Events are logged on stderr.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 256
#define BUF_SIZE  65536

/* One direction of a connection: bytes read from src, not yet written to dst. */
struct half {
    char buf[BUF_SIZE];
    size_t start, end; /* pending bytes are buf[start..end) */
    bool eof;          /* src sent FIN */
    bool shut;         /* FIN passed on to dst */
};

struct conn {
    int client_fd;
    int server_fd;
    bool connecting;  /* non-blocking connect to the target still in progress */
    unsigned long id; /* for the log */
    struct half up;   /* client -> server */
    struct half down; /* server -> client */
};

static struct conn *conns[MAX_CONNS];
static size_t nconns;
static unsigned long next_id = 1;
static bool frozen;

static struct sockaddr_storage target_addr;
static socklen_t target_len;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logf_(const char *fmt, ...)
{
    va_list ap;
    fputs("tcpproxy: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Close with SO_LINGER 0, which makes the kernel send RST instead of FIN: the peer sees an
 * abrupt connection loss, not an orderly end of stream. */
static void close_rst(int fd)
{
    struct linger lg = {.l_onoff = 1, .l_linger = 0};

    if (fd < 0)
        return;
    (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
}

static void conn_remove(size_t i, bool reset, const char *why)
{
    struct conn *c = conns[i];

    logf_("connection %lu closed (%s)", c->id, why);
    if (reset) {
        close_rst(c->client_fd);
        close_rst(c->server_fd);
    } else {
        close(c->client_fd);
        close(c->server_fd);
    }
    free(c);
    conns[i] = conns[--nconns];
    conns[nconns] = NULL;
}

static void drop_all(void)
{
    size_t n = nconns;

    while (nconns > 0)
        conn_remove(nconns - 1, true, "dropped by SIGHUP");
    logf_("dropped %zu connection(s)", n);
}

static void accept_new(int listen_fd)
{
    for (;;) {
        int cfd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                logf_("accept: %s", strerror(errno));
            return;
        }
        if (nconns == MAX_CONNS) {
            logf_("too many connections (%d); refusing one", MAX_CONNS);
            close_rst(cfd);
            continue;
        }
        int sfd = socket(target_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        struct conn *c = sfd < 0 ? NULL : calloc(1, sizeof(*c));
        if (c == NULL) {
            logf_("cannot open a connection to the target: %s", strerror(errno));
            close_rst(cfd);
            if (sfd >= 0)
                close(sfd);
            continue;
        }
        int one = 1;
        (void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        (void)setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->client_fd = cfd;
        c->server_fd = sfd;
        c->id = next_id++;
        c->connecting = true;
        conns[nconns++] = c;
        if (connect(sfd, (struct sockaddr *)&target_addr, target_len) == 0) {
            c->connecting = false;
        } else if (errno != EINPROGRESS) {
            logf_("connect to target: %s", strerror(errno));
            conn_remove(nconns - 1, true, "target refused");
            continue;
        }
        logf_("connection %lu accepted", c->id);
    }
}

/* Read from src into an empty half.  Returns 0, or -1 if the connection must be reset. */
static int half_read(int src, struct half *h)
{
    ssize_t n = read(src, h->buf, sizeof(h->buf));

    if (n > 0) {
        h->start = 0;
        h->end = (size_t)n;
    } else if (n == 0) {
        h->eof = true;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return -1;
    }
    return 0;
}

static int half_write(int dst, struct half *h)
{
    ssize_t n = send(dst, h->buf + h->start, h->end - h->start, MSG_NOSIGNAL);

    if (n > 0) {
        h->start += (size_t)n;
        if (h->start == h->end)
            h->start = h->end = 0;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return -1;
    }
    return 0;
}

/* Pass a FIN on once everything before it has been written. */
static void half_finish(int dst, struct half *h)
{
    if (h->eof && !h->shut && h->start == h->end) {
        (void)shutdown(dst, SHUT_WR);
        h->shut = true;
    }
}

static short events_for(const struct conn *c, bool client_side)
{
    const struct half *in = client_side ? &c->up : &c->down;  /* read from this fd */
    const struct half *out = client_side ? &c->down : &c->up; /* written to this fd */
    short ev = 0;

    if (c->connecting)
        return client_side ? 0 : POLLOUT;
    if (!in->eof && in->end == 0)
        ev |= POLLIN;
    if (out->end > out->start)
        ev |= POLLOUT;
    return ev;
}

/* Handle poll results for connection i.  Returns false if it was removed. */
static bool conn_service(size_t i, short crev, short srev)
{
    struct conn *c = conns[i];

    if (c->connecting) {
        if (srev == 0)
            return true;
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->server_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err != 0) {
            logf_("connection %lu: connect to target: %s", c->id, strerror(err));
            conn_remove(i, true, "target unreachable");
            return false;
        }
        c->connecting = false;
        return true;
    }
    /* POLLHUP/POLLERR come with the read or write that reports what happened. */
    if ((crev & (POLLIN | POLLHUP | POLLERR)) && !c->up.eof && c->up.end == 0 &&
        half_read(c->client_fd, &c->up) < 0) {
        conn_remove(i, true, "client reset");
        return false;
    }
    if ((srev & (POLLIN | POLLHUP | POLLERR)) && !c->down.eof && c->down.end == 0 &&
        half_read(c->server_fd, &c->down) < 0) {
        conn_remove(i, true, "target reset");
        return false;
    }
    if (c->up.end > c->up.start && half_write(c->server_fd, &c->up) < 0) {
        conn_remove(i, true, "target reset");
        return false;
    }
    if (c->down.end > c->down.start && half_write(c->client_fd, &c->down) < 0) {
        conn_remove(i, true, "client reset");
        return false;
    }
    half_finish(c->server_fd, &c->up);
    half_finish(c->client_fd, &c->down);
    if (c->up.shut && c->down.shut) {
        conn_remove(i, false, "both sides done");
        return false;
    }
    return true;
}

/* Returns true to keep running. */
static bool handle_signals(int sfd)
{
    struct signalfd_siginfo si;

    while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        switch (si.ssi_signo) {
        case SIGUSR1:
            frozen = true;
            logf_("frozen (%zu connection(s) held)", nconns);
            break;
        case SIGUSR2:
            frozen = false;
            logf_("thawed");
            break;
        case SIGHUP:
            drop_all();
            break;
        default:
            logf_("exiting on signal %u", si.ssi_signo);
            return false;
        }
    }
    return true;
}

static int parse_target(const char *arg)
{
    char host[256];
    const char *colon = strrchr(arg, ':');

    if (colon == NULL || colon == arg || colon[1] == '\0' ||
        (size_t)(colon - arg) >= sizeof(host)) {
        fprintf(stderr, "tcpproxy: target '%s' is not HOST:PORT\n", arg);
        return -1;
    }
    memcpy(host, arg, (size_t)(colon - arg));
    host[colon - arg] = '\0';
    /* [::1]:2181 */
    char *h = host;
    size_t hl = strlen(h);
    if (h[0] == '[' && hl > 2 && h[hl - 1] == ']') {
        h[hl - 1] = '\0';
        h++;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(h, colon + 1, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "tcpproxy: target '%s': %s\n", arg, gai_strerror(rc));
        return -1;
    }
    memcpy(&target_addr, res->ai_addr, res->ai_addrlen);
    target_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static int open_listener(const char *port_arg)
{
    char *end = NULL;
    long port = strtol(port_arg, &end, 10);

    if (*port_arg == '\0' || *end != '\0' || port < 0 || port > 65535) {
        fprintf(stderr, "tcpproxy: listen port '%s' is not 0..65535\n", port_arg);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("tcpproxy: socket");
        return -1;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sin);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sin, &len) < 0) {
        fprintf(stderr, "tcpproxy: listen on 127.0.0.1:%s: %s\n", port_arg, strerror(errno));
        close(fd);
        return -1;
    }
    printf("%u\n", (unsigned)ntohs(sin.sin_port));
    fflush(stdout);
    return fd;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr,
                "usage: %s LISTEN_PORT TARGET_HOST:TARGET_PORT\n"
                "  SIGUSR1 freeze, SIGUSR2 thaw, SIGHUP drop all, SIGTERM exit\n",
                argv[0]);
        return 2;
    }

    /* Block the signals before anything else, so none is lost between startup and the loop;
     * the parent-death signal is one of them and arrives through the signalfd too. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) {
        perror("tcpproxy: sigprocmask");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 1; /* the parent is already gone */

    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) {
        perror("tcpproxy: signalfd");
        return 1;
    }
    if (parse_target(argv[2]) < 0)
        return 2;
    int lfd = open_listener(argv[1]);
    if (lfd < 0)
        return 1;

    static struct pollfd pfd[2 + 2 * MAX_CONNS];
    for (;;) {
        size_t n = nconns;
        pfd[0] = (struct pollfd){.fd = sfd, .events = POLLIN};
        /* Frozen: no fd but the signalfd is watched, so nothing moves and nothing is accepted
         * (the kernel still queues new connections in the backlog until the thaw). */
        pfd[1] = (struct pollfd){.fd = frozen ? -1 : lfd, .events = POLLIN};
        for (size_t i = 0; i < n; i++) {
            short cev = frozen ? 0 : events_for(conns[i], true);
            short sev = frozen ? 0 : events_for(conns[i], false);
            /* An fd with no wanted event is left out: poll would still report POLLHUP on it
             * and spin the loop. */
            pfd[2 + 2 * i] = (struct pollfd){.fd = cev ? conns[i]->client_fd : -1, .events = cev};
            pfd[3 + 2 * i] = (struct pollfd){.fd = sev ? conns[i]->server_fd : -1, .events = sev};
        }
        if (poll(pfd, 2 + 2 * n, -1) < 0) {
            if (errno == EINTR)
                continue;
            perror("tcpproxy: poll");
            return 1;
        }
        if (pfd[0].revents) {
            bool was_frozen = frozen;
            size_t before = nconns;
            if (!handle_signals(sfd))
                break;
            /* The poll results may describe connections that are gone or now frozen. */
            if (frozen || was_frozen || nconns != before)
                continue;
        }
        /* Downwards, so removing connection i (the last one moves into its slot, already
         * serviced) leaves the rest of the results in place. */
        for (size_t i = n; i-- > 0;)
            conn_service(i, pfd[2 + 2 * i].revents, pfd[3 + 2 * i].revents);
        if (pfd[1].revents)
            accept_new(lfd);
    }
    while (nconns > 0)
        conn_remove(nconns - 1, false, "exit");
    close(lfd);
    close(sfd);
    return 0;
}
