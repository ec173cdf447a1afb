/*
 * sdnotify.c - READY=1, STATUS= and the watchdog for systemd (sdnotify.h),
 * through libsystemd's sd_notify.  Without NOTIFY_SOCKET, sd_notify does
 * nothing, so the daemon calls these unconditionally.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include <reign/reign.h>

#include "sdnotify.h"

struct reignd_sdnotify {
    uv_timer_t timer;
    uint64_t interval_usec; /* 0: no watchdog */
};

static void on_watchdog(uv_timer_t *t)
{
    (void)t;
    sd_notify(0, "WATCHDOG=1");
}

int reignd_sdnotify_start(uv_loop_t *loop, reignd_sdnotify **ret)
{
    reignd_sdnotify *n = calloc(1, sizeof(*n));
    if (!n)
        return REIGN_ENOMEM;
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    uint64_t usec = 0;
    /* unset_environment 0: children (hooks) must not see NOTIFY_SOCKET
     * anyway, which hooks.c's environment takes care of; and a re-exec
     * would need it. */
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
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
        sd_notifyf(0, "READY=1\nSTATUS=%s", line);
    } else
        sd_notify(0, "READY=1");
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
    sd_notifyf(0, "STATUS=%s", line);
}

void reignd_sdnotify_stopping(reignd_sdnotify *n)
{
    (void)n;
    sd_notify(0, "STOPPING=1\nSTATUS=stopping");
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
