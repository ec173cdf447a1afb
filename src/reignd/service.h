/*
 * service.h - reignd's wiring: every [service] of the configuration with its
 * health monitor, hook queue, election and state machine (fsm.h), on one
 * libuv loop, and the reignd_ops table (control.h) the control socket and
 * the peer endpoint call.
 *
 * One reign_client per distinct election URI: services that share a store
 * share its session.  Events from the health monitor, the election, the
 * client's connection, hooks, fences, breadcrumb requests and operators are
 * all turned into fsm events and stepped one at a time per service (an
 * event raised while a step's actions run waits for that step to finish),
 * so every transition runs its hooks once, in order.
 *
 * Start-up is in two phases: reignd_daemon_prepare() connects to each store
 * and checks that `reignd --format` was run (blocking, before the loop runs,
 * so that a daemon that cannot work exits at once with a clear message),
 * then reignd_daemon_start() hands everything to the loop.
 */
#ifndef REIGND_SERVICE_H
#define REIGND_SERVICE_H

#include <stddef.h>

#include <uv.h>

#include <reign/reign.h>

#include "config.h"
#include "control.h"
#include "metrics.h"
#include "peer.h"

typedef struct reignd_daemon reignd_daemon;

/* Called once, on the loop, when the daemon has finished: status 0 after a
 * clean shutdown, 1 after a fatal error (logged). */
typedef void reignd_daemon_exit_cb(reignd_daemon *d, int status, void *userdata);

typedef struct reignd_daemon_options {
    size_t size; /* sizeof(reignd_daemon_options) */
    uv_loop_t *loop;
    const reignd_config *config; /* must outlive the daemon */
    const reignd_secret *secret; /* the peers' secret; NULL: none (graceful fencing skipped) */
    reign_log_fn *log_fn;        /* the daemon's log; NULL: silent */
    void *log_userdata;
    reign_log_level log_level; /* passed on to libreign's clients */
    reignd_daemon_exit_cb *on_exit;
    void *userdata;
} reignd_daemon_options;

/* Makes the daemon (no I/O yet).  0, or a negative code with err. */
int reignd_daemon_new(reignd_daemon **ret, const reignd_daemon_options *opts, char *err,
                      size_t errlen);

/*
 * Connects to every store and waits for its first session (up to its
 * connect timeout).  With `check_layout`, then checks that each service's
 * election was formatted, and that the credentials may write it (the layout
 * is written again as it is: a wrong ZooKeeper password shows only on a
 * write).  Blocks; call before the loop runs.  Returns 0, REIGN_ECONNECT (a
 * store cannot be reached: err says which), REIGN_EAUTH (a store refused
 * the credentials), or REIGN_ENOENT (a service's election is not formatted:
 * err says which and what to run).
 */
int reignd_daemon_prepare(reignd_daemon *d, int check_layout, char *err, size_t errlen);

/*
 * `reignd --format [--force]`: writes each service's layout (breadcrumb.h).
 * After reignd_daemon_prepare(d, 0, ...).  Blocks.  Returns 0, REIGN_EEXIST
 * (formatted already and !force), or another negative code; err says which
 * service.
 */
int reignd_daemon_format(reignd_daemon *d, int force, char *err, size_t errlen);

/* Hands the stores to the loop and starts the health checks.  0 or a negative code. */
int reignd_daemon_start(reignd_daemon *d, char *err, size_t errlen);

/* The operations for control.h and peer.h (valid for the daemon's life). */
const reignd_ops *reignd_daemon_ops(reignd_daemon *d);

/* A metrics.h snapshot callback; ctx is the daemon. */
void reignd_daemon_metrics(reignd_metrics_sink *sink, void *ctx);

/*
 * Clean shutdown (SIGTERM): every service leaves (an active one runs
 * become-standby first and removes its breadcrumb), the hook queues drain,
 * the sessions close; then on_exit(0).  A second call gives up waiting.
 */
void reignd_daemon_shutdown(reignd_daemon *d);

/*
 * What a shutdown still waits for, for a log line: "service web: its
 * become_standby hook (running for 0.4 s, killed at 30 s), then removing
 * its breadcrumb; service db: leaving its election"; "" when nothing.
 * Returns the length written.
 */
size_t reignd_daemon_describe_wait(const reignd_daemon *d, char *out, size_t outlen);

/* The longest a shutdown waits, in ms, before it gives up (exit status 1). */
int reignd_daemon_grace_ms(void);

/* Frees everything; after on_exit and once the loop has run out.  NULL-safe. */
reignd_daemon *reignd_daemon_free(reignd_daemon *d);

#endif
