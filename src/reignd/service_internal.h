/*
 * service_internal.h - what the files behind service.h share: the daemon,
 * its stores and services, and what each layer offers the ones above it.
 *
 * The files are layers, each calling only those below it (the test
 * reignd_no_cycles refuses a circle):
 *
 *   service.c        start-up: the daemon made from its configuration, the
 *                    stores connected and checked, health and connection
 *                    news turned into events; it wires the layers together
 *   ops_failover.c   `reign ctl failover S --to NODE`, a graceful failover
 *   ops_view.c       the status page's data: the status, and each
 *                    service's election and history as its store has them
 *   ops.c            the other operations: status, cede, pause and resume
 *                    (and the watch that makes every node obey a pause), a
 *                    peer's graceful fence, the metrics
 *   failover.c       a transition's actions: the become-* hooks, fencing the
 *                    old active, our breadcrumb, stepping down for a while
 *   candidacy.c      standing in the election: join, leave, its news, one
 *                    live daemon per node id
 *   service_core.c   each service's event queue and step on fsm.c's table,
 *                    the calls that wait for become-standby, timers, the
 *                    end of the daemon
 *
 * The core steps the state machine and ends the daemon, but what an action
 * does and what a failover under way holds are the business of the layers
 * above: it reaches them through service_upcalls, set by
 * reignd_daemon_new(), as libuv's core.c reaches tcp.c through a handle's
 * callback.
 */
#ifndef REIGND_SERVICE_INTERNAL_H
#define REIGND_SERVICE_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include <reign/adapters/libuv.h>

#include "fence.h"
#include "fsm.h"
#include "health.h"
#include "hooks.h"
#include "service.h"
#include "srvlog.h"

#define QUEUE_MAX 32

typedef struct store store;
typedef struct service service;
typedef struct failover_req failover_req;

/* One reign_client, shared by the services whose election_uri is the same. */
struct store {
    reignd_daemon *d;
    char *uri;
    reign_client *client;
    reign_uv *uv;
    int closed;
    int connected; /* the client's last connection state was connected or reconnected */
};

struct service {
    reignd_daemon *d;
    const reignd_service_config *cfg;
    store *st;
    reign_election *election; /* NULL while not standing */
    reignd_health *health;
    reignd_hooks *hooks;
    reignd_fence *fence;

    reignd_state state;
    reignd_health_state health_state;
    char reason[300]; /* the last transition's */

    /* The election's pause, as the store has it (every node obeys it). */
    reign_value_watch *pause_watch;
    int paused;                       /* the pause value is there */
    char paused_by[REIGN_ID_MAX + 1]; /* who paused, as the value says */

    /* Another live daemon standing with our node id, as last seen ("" if none). */
    char conflict[1400];
    uv_timer_t *id_timer;  /* the periodic look for one */
    int id_check_inflight; /* a periodic look is under way */
    int id_unsure;         /* the last look could not tell who stood first: look again */
    uint64_t join_seq;     /* bumped by each JOIN and each leave: stale looks are dropped */

    uv_timer_t *cede_timer; /* while CEDED: REJOIN when it fires */
    failover_req *failover; /* a failover from this node under way (waiting for the target) */

    uint64_t term, token;  /* of the latest leadership (kept after it ends, for hooks) */
    uint64_t epoch;        /* bumped on each election win: stale results are dropped */
    int64_t crumb_version; /* the breadcrumb version read (CAS base), then ours */
    int crumb_ours;        /* we wrote the breadcrumb at crumb_version */
    int cede_delay_ms;     /* for the next CEDE action */
    int service_active;    /* possibly active: from the start (we know nothing) or a queued
                              become-active, until a become-standby succeeds */
    int activated;         /* become-active succeeded for the current leadership */
    int standby_pending;   /* become-standby hooks queued or running */
    int stopped;           /* EXIT done */
    int deletes_pending;   /* breadcrumb deletes in flight: a shutdown waits for them */
    int leaving;           /* resigned for good: waiting for our election node's delete */

    reignd_call **waiters; /* calls answered when become-standby finishes */
    size_t n_waiters;

    reignd_event queue[QUEUE_MAX];
    size_t q_head, q_len;
    int stepping;

    uint64_t failovers, fence_attempts, fence_ok; /* for the metrics */
    /* The election as this node follows it, for the metrics (candidacy.c). */
    uint64_t changes[REIGND_CHANGE__COUNT]; /* leadership changes seen, by reason */
    int observing;                          /* standing, and READY came: the leader is followed */
    int64_t leaderless_since_ns;            /* no leader known since (monotonic); 0: one is */
    int64_t leaderless_ns;                  /* earlier stretches without a leader, summed */
};

/* A failover from this node under way (ops_failover.c, which says how it goes); the other
 * files read only its target, `to`. */
struct failover_req {
    reignd_daemon *d;
    size_t index;
    reignd_call *call; /* NULL once answered */
    char to[REIGN_ID_MAX + 1];
    int wait;                      /* answer once `to` is active (else once handed over) */
    int next_in_line;              /* `to` takes over when we step down; else it is designated */
    char peer[REIGND_ADDRESS_MAX]; /* `to`'s peer endpoint ("" if none) */
    double base_failovers;         /* `to`'s failover count before (-1: unknown) */
    int64_t deadline_ns;
    int following; /* handed over: polling `to` (s->failover is this) */
    uv_timer_t *poll;
    reignd_peer_request *inflight;
    int querying;   /* an election query (no peer endpoint) in flight */
    char last[400]; /* what `to` said last, for a failure's message */
};

/*
 * The calls the core makes into the layers above it (see the top of this
 * file), set once by reignd_daemon_new().
 */
typedef struct service_upcalls {
    /* Carries out a transition's actions, lowest bit first (failover.c). */
    void (*run_actions)(service *s, unsigned actions);
    /* Ends a failover under way: answers its call if still due, lets a ceded old active stand
     * again (ops_failover.c). */
    void (*end_failover)(failover_req *f, int err, const char *msg);
} service_upcalls;

struct reignd_daemon {
    reignd_daemon_options o;
    char instance[REIGND_INSTANCE_MAX]; /* this run's id: in the breadcrumb and the election */
    store *stores;
    size_t n_stores;
    service *services;
    size_t n_services;
    reignd_ops ops;
    service_upcalls up;
    uv_timer_t grace;
    int grace_started;
    int started; /* reignd_daemon_start() ran: before, prepare() reports a store's failure */
    int shutting_down;
    int exit_status;
    int exited;
};

#define dlog(d, level, ...) reignd__logf((d)->o.log_fn, (d)->o.log_userdata, level, __VA_ARGS__)
#define slog(s, level, fmt, ...)                                                                   \
    dlog((s)->d, level, "service %s: " fmt, (s)->cfg->name, ##__VA_ARGS__)

/* ---- service_core.c ---------------------------------------------------------- */

/* Whether the last health check said healthy (the table's guards look at it). */
int reignd__healthy(const service *s);
/* Queues an event and steps until the queue is empty (unless a step runs already). */
void reignd__post(service *s, reignd_event ev);
/* Steps what is queued, and whatever a change of the election's pause calls for. */
void reignd__run_queue(service *s);
/* Answers `call` once the service's become-standby hooks have run: REIGND_PENDING. */
int reignd__add_waiter(service *s, reignd_call *call);
/* Answers the waiters, if no become-standby is pending any more. */
void reignd__answer_waiters(service *s);
/* {service, node, state}: an operation's result. */
cJSON *reignd__state_result(const service *s);
/* A timer on the loop with s (or what the caller puts there) as its data; NULL if none. */
uv_timer_t *reignd__timer_start(service *s, uv_timer_cb cb, uint64_t ms, uint64_t repeat);
/* Stops and frees *t (its close completes on a later loop turn); NULL-safe. */
void reignd__timer_stop(uv_timer_t **t);
/* A service leaves for good (EXIT, or the daemon's end): stops its timers and its pause watch,
 * and ends a failover from it under way. */
void reignd__quiesce(service *s);
/* A shutdown ends once nothing is left to wait for: this looks whether that is now. */
void reignd__maybe_finish(reignd_daemon *d);
/* Logs `what` and shuts the daemon down with exit status 1. */
void reignd__fatal(reignd_daemon *d, const char *what);

/* ZooKeeper queues the candidates (the next in line takes over, designation works); a SQL
 * lease goes to whoever takes it first. */
static inline int reignd__store_queues(const store *st)
{
    return strncmp(st->uri, "zk://", 5) == 0;
}

/* ---- candidacy.c --------------------------------------------------------------- */

/* A candidate's payload: "SERVICE_ADDRESS PEER_ADDRESS INSTANCE" ("-" for no
 * peer address; a payload not written by reignd may lack any of them). */
#define PAYLOAD_MAX (2 * REIGND_ADDRESS_MAX + REIGND_INSTANCE_MAX + 8)

typedef struct payload {
    char service_address[REIGND_ADDRESS_MAX];
    char peer_address[REIGND_ADDRESS_MAX]; /* "" for none */
    char instance[REIGND_INSTANCE_MAX];    /* "" for none */
} payload;

void reignd__payload_parse(const void *data, size_t len, payload *p);
/* This node's peer address, "" for none. */
const char *reignd__own_peer_address(const service *s);
/* JOIN: stand, once no other live daemon stands with our node id. */
void reignd__join(service *s);
/* Leaves the election (RESIGN, CEDE); a leadership it ends counts as `why` in the metrics. */
void reignd__leave(service *s, reignd_change why);
/* Leaves for good (EXIT): the shutdown waits for our election node's delete. */
void reignd__leave_for_good(service *s);
/* The periodic look for another live daemon with our node id (data: the service). */
void reignd__on_id_timer(uv_timer_t *t);
/* Seconds without a known leader: the current stretch (0 if a leader is known or the election
 * is not followed) and in all. */
void reignd__leaderless(const service *s, double *now_s, double *total_s);

/* ---- failover.c ---------------------------------------------------------------- */

/* The service_upcalls' run_actions. */
void reignd__run_actions(service *s, unsigned actions);
/* A cede ends: CEDED stands again (moot in any other state). */
void reignd__end_cede(service *s);

/* ---- ops.c --------------------------------------------------------------------- */

/* The service named `name`; NULL, with the call failed, if there is none. */
service *reignd__find(reignd_daemon *d, reignd_call *call, const char *name);
/* Reads the service's election for an operator's call: REIGND_PENDING (cb
 * follows), or a negative code with the call's message set (cb never runs). */
int reignd__query_for_call(service *s, reignd_call *call, reign_election_query_cb *cb,
                           void *userdata);
/* The watch on the election's pause (userdata: the service). */
void reignd__on_pause_watch(reign_value_watch *w, const reign_value_event *ev, void *userdata);
/* The reignd_ops but failover (control.h). */
cJSON *reignd__op_status(void *ctx);
int reignd__op_cede(void *ctx, reignd_call *call, const char *name, double delay_s);
int reignd__op_pause(void *ctx, reignd_call *call, const char *name);
int reignd__op_resume(void *ctx, reignd_call *call, const char *name);
int reignd__op_standby(void *ctx, reignd_call *call, const char *name, const char *from,
                       uint64_t term);

/* ---- ops_view.c ---------------------------------------------------------------- */

/* The status page's data (reignd_ops.view, control.h). */
int reignd__op_view(void *ctx, reignd_call *call);

/* ---- ops_failover.c ------------------------------------------------------------ */

int reignd__op_failover(void *ctx, reignd_call *call, const char *name, const char *to, int wait);
/* The service_upcalls' end_failover. */
void reignd__failover_end(failover_req *f, int err, const char *msg);

#endif
