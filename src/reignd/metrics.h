/*
 * metrics.h - reignd's Prometheus endpoint: GET /metrics on the metrics
 * address answers the text exposition format (version 0.0.4), built at each
 * scrape from a snapshot the daemon gives through a callback, so the daemon
 * keeps only its own counters and this file no state of its own.
 *
 * Per service (label service="NAME"):
 *   reignd_service_leader          1 while this node's service is active, else 0
 *   reignd_service_term            this node's term while it leads, else 0
 *   reignd_service_token           this node's fencing token while it leads, else 0
 *   reignd_service_health{state=}  1 for the current health state, 0 for the others
 *   reignd_service_state{state=}   1 for the service's FSM state, 0 for the others
 *   reignd_service_paused          1 while its election is paused (reign ctl pause)
 *   reignd_failovers_total         times the service became active here
 *   reignd_fence_attempts_total    fence methods tried against an old active
 *   reignd_fence_outcomes_total{outcome="success"|"failure"}
 *   reignd_leadership_changes_total{reason=}  changes of leadership this node saw: "elected"
 *                                  here, demoted here (libreign's demote reasons), or a
 *                                  leader elected "elsewhere"
 *   reignd_election_observed       1 while this node follows the election's leader (it stands)
 *   reignd_election_leaderless_seconds        how long no leader has been known, now (0: one is)
 *   reignd_election_leaderless_seconds_total  seconds without a known leader, in all
 *   reignd_store_connected         1 while the client of the service's store is connected
 * and reignd_up 1, reignd_build_info{version=}.
 *
 * The same server serves the status page (page.h) at /status and
 * /status.json when given the daemon's operations: as open as /metrics, and
 * as read-only.
 *
 * Served by libmicrohttpd on the daemon's libuv loop (httpd.h); the snapshot
 * callback runs on the loop thread.
 */
#ifndef REIGND_METRICS_H
#define REIGND_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include <reign/reign.h>

#include "control.h"

/*
 * Why leadership changed, as one node sees it: elected here, demoted here (the
 * values of reign_demote_reason, in its order), or another node elected.
 */
#define REIGND_CHANGES(XX)                                                                         \
    XX(ELECTED, "elected")   /* this node was elected */                                           \
    XX(RESIGNED, "resigned") /* demoted here, reason REIGN_DEMOTE_RESIGNED ... */                  \
    XX(CEDED, "ceded")                                                                             \
    XX(SUSPENDED, "suspended")                                                                     \
    XX(SESSION_LOST, "session_lost")                                                               \
    XX(NODE_DELETED, "node_deleted")                                                               \
    XX(STALLED, "stalled")                                                                         \
    XX(ERROR, "error")                                                                             \
    XX(HANDOFF, "handoff")     /* ... to REIGN_DEMOTE_HANDOFF */                                   \
    XX(ELSEWHERE, "elsewhere") /* another node became leader (LEADER_CHANGED) */

typedef enum reignd_change {
#define REIGND__CH_ENUM(name, str) REIGND_CHANGE_##name,
    REIGND_CHANGES(REIGND__CH_ENUM)
#undef REIGND__CH_ENUM
        REIGND_CHANGE__COUNT
} reignd_change;

/* The label value of a reason ("elected"), or "?" */
const char *reignd_change_name(reignd_change c);
/* The change a demotion with libreign's `reason` counts as (an unknown one: ERROR). */
reignd_change reignd_change_of_demotion(reign_demote_reason reason);

/* One service as the snapshot callback reports it; strings borrowed for the call. */
typedef struct reignd_metrics_service {
    const char *name;
    const char *health; /* "initializing", "healthy", "unhealthy", "not_responding",
                           "monitor_failed" */
    const char *state;  /* the FSM state's name (fsm.h); NULL: no state series */
    int leader;
    int paused;
    uint64_t term;
    uint64_t token;
    uint64_t failovers;
    uint64_t fence_attempts;
    uint64_t fence_successes;
    uint64_t fence_failures;
    uint64_t changes[REIGND_CHANGE__COUNT]; /* leadership changes seen, by reason */
    int observed;                           /* the election's leader is followed */
    int store_connected;
    double leaderless_s;       /* without a known leader for this long, now (0: one is known) */
    double leaderless_total_s; /* without a known leader, in all (the current stretch too) */
} reignd_metrics_service;

typedef struct reignd_metrics_sink reignd_metrics_sink;

/* Adds one service to a scrape (call once per service from the snapshot callback). */
void reignd_metrics_add(reignd_metrics_sink *sink, const reignd_metrics_service *svc);

/* Reports every service with reignd_metrics_add(). */
typedef void reignd_metrics_snapshot_fn(reignd_metrics_sink *sink, void *ctx);

/*
 * Renders a scrape into a new NUL-terminated string (free()); NULL on out of
 * memory.  Pure apart from the callback: the endpoint and the tests use it.
 */
char *reignd_metrics_render(reignd_metrics_snapshot_fn *snapshot, void *ctx, size_t *len);

typedef struct reignd_metrics reignd_metrics;

typedef struct reignd_metrics_options {
    size_t size;        /* sizeof(reignd_metrics_options) */
    const char *listen; /* "HOST:PORT", "[V6]:PORT" or ":PORT"; port 0 picks one */
    reignd_metrics_snapshot_fn *snapshot;
    void *ctx;
    reign_log_fn *log_fn; /* errors; NULL: silent */
    void *log_userdata;
    /* The daemon's operations: with them the same server serves the status page (page.h) at
     * /status and /status.json, reading through status and view only; NULL: no page. */
    const reignd_ops *ops;
} reignd_metrics_options;

/* Starts the endpoint on `loop`.  0 and *ret, or a negative REIGN_E* with err. */
int reignd_metrics_start(uv_loop_t *loop, const reignd_metrics_options *opts, reignd_metrics **ret,
                         char *err, size_t errlen);

/* The port actually bound (for port 0). */
int reignd_metrics_port(const reignd_metrics *m);

/* Stops the endpoint; memory is released in close callbacks (run the loop).  NULL-safe. */
void reignd_metrics_close(reignd_metrics *m);

#endif
