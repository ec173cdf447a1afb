/*
 * health.h - a service's health monitor (ZKFC's HealthMonitor): a check
 * run every interval on the daemon's libuv loop, and the health state its
 * results give.
 *
 * Checks (config.h, check_type):
 *   command  /bin/sh -c TARGET in a process group of its own, stdin and
 *            stdout on /dev/null, REIGN_SERVICE and REIGN_NODE_ID in its
 *            environment: exit 0 is a success, any other status a failure;
 *            126 and 127 (the shell could not run it) mean the check itself
 *            could not run.
 *   tcp      connect to host:port: accepted is a success, refused a failure.
 *   http     GET http://host:port/path (HTTP/1.0): a 2xx status line is a
 *            success, any other answer a failure.
 * A host name is resolved at every check (libuv's thread pool; numeric
 * addresses skip it), and its addresses are tried in turn until one
 * accepts the connection.
 * A check still running after its timeout is "not responding": it is
 * abandoned (a command's whole process group is killed).  A check that
 * cannot even run (spawn failed, name not resolved, no socket) is "monitor
 * failed".
 *
 * The state (reignd_health_step(), a pure function):
 *   INITIALIZING  until the first verdict: `rise` successes in a row, or
 *                 one failure of any kind;
 *   HEALTHY       after `rise` successes in a row; it is left only after
 *                 `fall` failures in a row, for the state of the last one;
 *   UNHEALTHY / NOT_RESPONDING / MONITOR_FAILED
 *                 the last failure's kind (a check said no / timed out /
 *                 could not run); a further failure of another kind moves
 *                 between these three at once; `rise` successes in a row
 *                 lead back to HEALTHY.
 * Only HEALTHY may stand in the election; a service stands only after a
 * verdict of its own (ZKFC once wrote an empty breadcrumb by standing
 * before its first check).
 */
#ifndef REIGND_HEALTH_H
#define REIGND_HEALTH_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"

typedef enum reignd_health_state {
    REIGND_HEALTH_INITIALIZING,
    REIGND_HEALTH_HEALTHY,
    REIGND_HEALTH_UNHEALTHY,
    REIGND_HEALTH_NOT_RESPONDING,
    REIGND_HEALTH_MONITOR_FAILED,
} reignd_health_state;
#define REIGND_HEALTH_N_STATES 5

/* What one check found. */
typedef enum reignd_check_result {
    REIGND_CHECK_OK,      /* healthy answer */
    REIGND_CHECK_FAILED,  /* an answer, and not a healthy one */
    REIGND_CHECK_TIMEOUT, /* no answer within the timeout */
    REIGND_CHECK_NOT_RUN, /* the check could not run */
} reignd_check_result;
#define REIGND_CHECK_N_RESULTS 4

/* The state with its run counters; zero-initialised is INITIALIZING. */
typedef struct reignd_health_track {
    reignd_health_state state;
    int successes; /* successes in a row, up to rise */
    int failures;  /* failures in a row, up to fall */
} reignd_health_track;

/*
 * The pure state function: `t` after one more `result`, with `rise` and
 * `fall` >= 1.  Returns true when t->state changed.
 */
bool reignd_health_step(reignd_health_track *t, reignd_check_result result, int rise, int fall);

/* "initializing", "healthy", "unhealthy", "not_responding", "monitor_failed". */
const char *reignd_health_state_name(reignd_health_state state);
/* "ok", "failed", "timeout", "not_run". */
const char *reignd_check_result_name(reignd_check_result result);

/* ---- the monitor on a libuv loop --------------------------------------- */

typedef struct reignd_health reignd_health;

/* Called on the loop when the state changes; `detail` says what the last
 * check found ("exit status 1", "connection refused", "HTTP 503",
 * "timed out after 1000 ms"), valid during the call only.  It may call
 * reignd_health_close(). */
typedef void reignd_health_cb(reignd_health *h, reignd_health_state old_state,
                              reignd_health_state new_state, const char *detail, void *userdata);

/*
 * A monitor for `svc` (check_type, check_target, interval, timeout, rise,
 * fall; svc must outlive it) on `loop`.  It does nothing until
 * reignd_health_start().  Returns 0 or REIGN_ENOMEM.
 */
int reignd_health_new(reignd_health **ret, uv_loop_t *loop, const reignd_service_config *svc,
                      reignd_health_cb *cb, void *userdata);

/* Runs the first check now, then one every check_interval_ms (measured
 * from start to start; a check never overlaps the next). */
int reignd_health_start(reignd_health *h);

/* The current state, and the number of checks finished so far. */
reignd_health_state reignd_health_state_get(const reignd_health *h);
uint64_t reignd_health_checks(const reignd_health *h);

/* Also called on every finished check, state changed or not (optional;
 * for metrics and tests). */
typedef void reignd_check_cb(reignd_health *h, reignd_check_result result, const char *detail,
                             void *userdata);
void reignd_health_on_check(reignd_health *h, reignd_check_cb *cb);

/* Stops checking (a running check is abandoned, a command's process group
 * killed) and frees the monitor once its handles are closed; no callback
 * after this.  NULL-safe. */
void reignd_health_close(reignd_health *h);

#endif
