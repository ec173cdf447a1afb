/*
 * sdnotify.c - READY=1, STATUS= and the watchdog for systemd (sdnotify.h).
 *
 * The notify protocol is small and documented as stable (sd_notify(3)): one
 * datagram of "KEY=VALUE" lines to the AF_UNIX socket named in
 * $NOTIFY_SOCKET ('@' for the abstract namespace); the watchdog is on when
 * $WATCHDOG_USEC is set (and $WATCHDOG_PID, if set, is ours).  We speak it
 * ourselves rather than link libsystemd, which maps about 1 MB of libraries
 * (libgcrypt, liblzma, libzstd, liblz4, libcap) into the daemon for these
 * few lines: reignd's resident-memory budget is 6 MB.  Without
 * NOTIFY_SOCKET nothing is sent, so the daemon calls these unconditionally.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <reign/reign.h>

#include "sdnotify.h"

struct reignd_sdnotify {
    uv_timer_t timer;
    uint64_t interval_usec; /* 0: no watchdog */
};

/* One datagram to $NOTIFY_SOCKET; errors are ignored, as sd_notify's callers do. */
static void notify(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = path ? strlen(path) : 0;
    if (n < 2 || n >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
        return;
    memcpy(sa.sun_path, path, n);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0'; /* abstract: the length below delimits the name */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    (void)sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&sa,
                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
    close(fd);
}

static void notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void notifyf(const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    notify(msg);
}

/* $WATCHDOG_USEC, if the watchdog is on for this process; else 0. */
static uint64_t watchdog_usec(void)
{
    const char *u = getenv("WATCHDOG_USEC"), *p = getenv("WATCHDOG_PID");
    char *end;
    if (!u || !*u)
        return 0;
    if (p && *p) {
        long pid = strtol(p, &end, 10);
        if (*end || pid != (long)getpid())
            return 0; /* meant for another process (we were forked) */
    }
    unsigned long long v = strtoull(u, &end, 10);
    return *end ? 0 : (uint64_t)v;
}

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    notify("WATCHDOG=1");
}

int reignd_sdnotify_start(uv_loop_t *loop, reignd_sdnotify **ret)
{
    reignd_sdnotify *n = calloc(1, sizeof(*n));
    if (!n)
        return REIGN_ENOMEM;
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    /* The variables stay set: hooks.c's environment keeps them from the
     * children, and a re-exec would need them. */
    uint64_t usec = watchdog_usec();
    if (usec > 0) {
        /* Half of the period, as systemd advises: one late turn of the
         * loop is not yet a missed deadline. */
        n->interval_usec = usec / 2;
        uint64_t ms = n->interval_usec / 1000;
        if (ms == 0)
            ms = 1;
        uv_timer_start(&n->timer, on_watchdog, ms, ms);
    }
    *ret = n;
    return 0;
}

uint64_t reignd_sdnotify_watchdog_usec(const reignd_sdnotify *n)
{
    return n ? n->interval_usec : 0;
}

/* A newline would start another assignment in the message: keep one line. */
static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

void reignd_sdnotify_ready(reignd_sdnotify *n, const char *status)
{
    (void)n;
    if (status) {
        char line[512];
        snprintf(line, sizeof(line), "%s", status);
        one_line(line);
        notifyf("READY=1\nSTATUS=%s", line);
    } else
        notify("READY=1");
}

void reignd_sdnotify_status(reignd_sdnotify *n, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    (void)n;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    one_line(line);
    notifyf("STATUS=%s", line);
}

void reignd_sdnotify_stopping(reignd_sdnotify *n)
{
    (void)n;
    notify("STOPPING=1\nSTATUS=stopping");
}

static void on_closed(uv_handle_t *h)
{
    free(h->data);
}

void reignd_sdnotify_close(reignd_sdnotify *n)
{
    if (n)
        uv_close((uv_handle_t *)&n->timer, on_closed);
}
