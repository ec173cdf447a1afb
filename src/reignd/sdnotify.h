/*
 * sdnotify.h - reignd's part of the systemd service protocol (Type=notify):
 * READY=1 once the daemon is up, STATUS= lines saying what it does, and
 * WATCHDOG=1 at half of WatchdogSec when the unit sets one.
 *
 * The watchdog is kicked by a timer on the daemon's libuv loop, so a loop
 * that stops turning (a wedged callback) stops the kicks and systemd
 * restarts the daemon: that is the proof that the loop still turns (docs/design.md, "Safety").
 * Outside systemd (no NOTIFY_SOCKET) every call does nothing.
 */
#ifndef REIGND_SDNOTIFY_H
#define REIGND_SDNOTIFY_H

#include <stdint.h>

#include <uv.h>

typedef struct reignd_sdnotify reignd_sdnotify;

/*
 * Starts the watchdog timer on `loop` if systemd asked for one
 * (sd_watchdog_enabled).  Does not send READY=1 (reignd_sdnotify_ready).
 * Returns 0 and *ret, or a negative REIGN_E* code (REIGN_ENOMEM).
 */
int reignd_sdnotify_start(uv_loop_t *loop, reignd_sdnotify **ret);

/* The watchdog interval in use, in microseconds (half of WATCHDOG_USEC), or 0. */
uint64_t reignd_sdnotify_watchdog_usec(const reignd_sdnotify *n);

/* READY=1 with a STATUS= line (status may be NULL). */
void reignd_sdnotify_ready(reignd_sdnotify *n, const char *status);

/* STATUS=... (printf format). */
void reignd_sdnotify_status(reignd_sdnotify *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* STOPPING=1, before a clean shutdown. */
void reignd_sdnotify_stopping(reignd_sdnotify *n);

/* Stops the timer; memory is released in a close callback (run the loop).  NULL-safe. */
void reignd_sdnotify_close(reignd_sdnotify *n);

#endif
