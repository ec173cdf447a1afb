/*
 * service.c - reignd's wiring (see service.h): stores, services, the event
 * queue in front of each service's state machine, the actions it asks for,
 * and the operations offered to `reign ctl` and to other reignds.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/adapters/libuv.h>

#include "breadcrumb.h"
#include "fence.h"
#include "fsm.h"
#include "health.h"
#include "hooks.h"
#include "service.h"
#include "srvlog.h"

/* After a failure to become active (fence, breadcrumb, become-active), how
 * long to stay out of the election before standing again (ZKFC waits a
 * second); another candidate may take over meanwhile. */
#define RETRY_DELAY_MS 2000
/* A failover's old active stands again after this, so the target takes over. */
#define FAILOVER_CEDE_MS 10000
/* Cede delay for a leadership deposed from outside (reign cede). */
#define DEPOSED_DELAY_MS 1000
/* How long a shutdown may wait for hooks and sessions before giving up. */
#define SHUTDOWN_GRACE_MS 60000

#define QUEUE_MAX 32

typedef struct store store;
typedef struct service service;

/* One reign_client, shared by the services whose election_uri is the same. */
struct store {
    reignd_daemon *d;
    char *uri;
    reign_client *client;
    reign_uv *uv;
    int closed;
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
    char reason[200]; /* the last transition's */

    uint64_t term, token;  /* of the latest leadership (kept after it ends, for hooks) */
    uint64_t epoch;        /* bumped on each election win: stale results are dropped */
    int64_t crumb_version; /* the breadcrumb version read (CAS base), then ours */
    int crumb_ours;        /* we wrote the breadcrumb at crumb_version */
    int cede_delay_ms;     /* for the next CEDE action */
    int service_active;    /* become-active queued and no become-standby succeeded since */
    int standby_pending;   /* become-standby hooks queued or running */
    int stopped;           /* EXIT done */
    int deletes_pending;   /* breadcrumb deletes in flight: a shutdown waits for them */

    reignd_call **waiters; /* calls answered when become-standby finishes */
    size_t n_waiters;

    reignd_event queue[QUEUE_MAX];
    size_t q_head, q_len;
    int stepping;

    uint64_t failovers, fence_attempts, fence_ok; /* for the metrics */
};

struct reignd_daemon {
    reignd_daemon_options o;
    store *stores;
    size_t n_stores;
    service *services;
    size_t n_services;
    reignd_ops ops;
    uv_timer_t grace;
    int grace_started;
    int shutting_down;
    int exit_status;
    int exited;
};

/* ---- logging --------------------------------------------------------------- */

#define dlog(d, level, ...) reignd__logf((d)->o.log_fn, (d)->o.log_userdata, level, __VA_ARGS__)
#define slog(s, level, fmt, ...)                                                                   \
    dlog((s)->d, level, "service %s: " fmt, (s)->cfg->name, ##__VA_ARGS__)

static void fatal(reignd_daemon *d, const char *what);
static void maybe_finish(reignd_daemon *d);

/* ---- the event queue and the state machine ------------------------------- */

static void run_actions(service *s, unsigned actions);

static int healthy(const service *s)
{
    return s->health_state == REIGND_HEALTH_HEALTHY;
}

/* One step of the state machine, logged; actions run after the state moved. */
static void step(service *s, reignd_event ev)
{
    reignd_step r = reignd_fsm_step(s->state, ev, healthy(s));
    if (r.refused) {
        slog(s, REIGN_LOG_WARN, "%s refused in state %s: %s", reignd_event_name(ev),
             reignd_state_name(s->state), r.reason);
        return;
    }
    if (r.moot) {
        slog(s, REIGN_LOG_DEBUG, "%s in state %s: %s", reignd_event_name(ev),
             reignd_state_name(s->state), r.reason);
        return;
    }
    char acts[200];
    reignd_actions_format(r.actions, acts, sizeof(acts));
    reign_log_level lvl = r.to != s->state || r.actions ? REIGN_LOG_NOTICE : REIGN_LOG_INFO;
    slog(s, lvl, "%s -> %s on %s%s%s: %s", reignd_state_name(s->state), reignd_state_name(r.to),
         reignd_event_name(ev), acts[0] ? " / " : "", acts, r.reason);
    s->state = r.to;
    snprintf(s->reason, sizeof(s->reason), "%s", r.reason);
    run_actions(s, r.actions);
}

/*
 * Queues an event and, unless a step of this service is running (an action
 * raised it: a callback that fired at once), steps until the queue is
 * empty.  So a service's events are taken strictly one after another.
 */
static void post(service *s, reignd_event ev)
{
    if (s->q_len == QUEUE_MAX) {
        slog(s, REIGN_LOG_ERROR, "event queue full, dropping %s", reignd_event_name(ev));
        fatal(s->d, "event queue overflow");
        return;
    }
    s->queue[(s->q_head + s->q_len++) % QUEUE_MAX] = ev;
    if (s->stepping)
        return;
    s->stepping = 1;
    while (s->q_len) {
        reignd_event next = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % QUEUE_MAX;
        s->q_len--;
        step(s, next);
    }
    s->stepping = 0;
    maybe_finish(s->d);
}

/* ---- waiters: calls answered once the service is standby ----------------- */

static int add_waiter(service *s, reignd_call *call)
{
    reignd_call **w = realloc(s->waiters, (s->n_waiters + 1) * sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    s->waiters = w;
    s->waiters[s->n_waiters++] = call;
    return REIGND_PENDING;
}

static cJSON *state_result(const service *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "service", s->cfg->name);
        cJSON_AddStringToObject(o, "node", s->cfg->node_id);
        cJSON_AddStringToObject(o, "state", reignd_state_name(s->state));
    }
    return o;
}

static void answer_waiters(service *s)
{
    if (s->standby_pending || !s->n_waiters)
        return;
    reignd_call **w = s->waiters;
    size_t n = s->n_waiters;
    s->waiters = NULL;
    s->n_waiters = 0;
    for (size_t i = 0; i < n; i++) {
        if (s->service_active)
            reignd_call_done(w[i], REIGN_ESTATE,
                             "become-standby failed on this node: it must be fenced otherwise",
                             NULL);
        else
            reignd_call_done(w[i], 0, NULL, state_result(s));
    }
    free(w);
}

/* ---- hooks ------------------------------------------------------------------ */

static void hook_env(const service *s, const char *state, reignd_hook_env *env)
{
    *env = (reignd_hook_env){
        .service = s->cfg->name,
        .state = state,
        .node_id = s->cfg->node_id,
        .term = s->term ? (int64_t)s->term : -1,
        .token = s->token ? (int64_t)s->token : -1,
        .target_term = -1,
    };
}

static void on_notify_done(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata)
{
    service *s = userdata;
    if (!reignd_hook_succeeded(r)) {
        char text[160];
        reignd_hook_result_text(r, text, sizeof(text));
        slog(s, REIGN_LOG_WARN, "notify: %s", text);
    }
    maybe_finish(s->d);
}

/* The optional notify command, after each become-* hook, in the same queue. */
static void queue_notify(service *s, const char *state)
{
    if (!s->cfg->notify.command)
        return;
    reignd_hook_env env;
    hook_env(s, state, &env);
    int err = reignd_hooks_run(s->hooks, "notify", s->cfg->notify.command,
                               s->cfg->notify.timeout_ms, &env, on_notify_done, s);
    if (err < 0)
        slog(s, REIGN_LOG_ERROR, "notify not run: %s", reign_strerror(err));
}

static void log_hook(service *s, const reignd_hook_result *r)
{
    char text[160];
    reignd_hook_result_text(r, text, sizeof(text));
    slog(s, reignd_hook_succeeded(r) ? REIGN_LOG_INFO : REIGN_LOG_ERROR, "%s: %s", r->what, text);
}

static void on_active_done(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata)
{
    service *s = userdata;
    log_hook(s, r);
    post(s, reignd_hook_succeeded(r) ? REIGND_EV_ACTIVE_HOOK_OK : REIGND_EV_ACTIVE_HOOK_FAILED);
}

static void on_standby_done(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata)
{
    service *s = userdata;
    log_hook(s, r);
    s->standby_pending--;
    if (reignd_hook_succeeded(r))
        s->service_active = 0;
    /* Answer first: the step may end the daemon (shutdown) and its servers. */
    answer_waiters(s);
    post(s, reignd_hook_succeeded(r) ? REIGND_EV_STANDBY_HOOK_OK : REIGND_EV_STANDBY_HOOK_FAILED);
}

/* Queues a become-* hook and its notify; returns 0, or a negative code
 * (logged) when it could not even be queued. */
static int queue_hook(service *s, const reignd_command *cmd, const char *what, const char *state,
                      reignd_hook_cb *cb)
{
    reignd_hook_env env;
    hook_env(s, state, &env);
    int err = reignd_hooks_run(s->hooks, what, cmd->command, cmd->timeout_ms, &env, cb, s);
    if (err < 0) {
        slog(s, REIGN_LOG_ERROR, "%s not run: %s", what, reign_strerror(err));
        return err;
    }
    queue_notify(s, state);
    return 0;
}

/* ---- election -------------------------------------------------------------- */

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    service *s = userdata;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        s->term = ev->term;
        s->token = ev->token;
        slog(s, REIGN_LOG_NOTICE, "elected: term %llu, token %llu", (unsigned long long)ev->term,
             (unsigned long long)ev->token);
        post(s, REIGND_EV_ELECTED);
        break;
    case REIGN_ELECTION_DEMOTED:
        slog(s, REIGN_LOG_NOTICE, "demoted (%s), term %llu", reign_demote_reason_name(ev->reason),
             (unsigned long long)ev->term);
        post(s, REIGND_EV_DEMOTED);
        break;
    case REIGN_ELECTION_LEADER_CHANGED:
        slog(s, REIGN_LOG_INFO, "leader: %s", ev->leader ? ev->leader->id : "none");
        break;
    case REIGN_ELECTION_ERROR:
        slog(s, REIGN_LOG_ERROR, "election stopped: %s (%s)", reign_strerror(ev->error),
             ev->message ? ev->message : "");
        fatal(s->d, "an election stopped on an error");
        break;
    default:
        break;
    }
}

static void join(service *s)
{
    if (s->election)
        return;
    char data[2 * REIGND_ADDRESS_MAX + 8];
    snprintf(data, sizeof(data), "%s %s", s->cfg->service_address,
             s->cfg->peer_address ? s->cfg->peer_address : "-");
    reign_election_options o = {
        .size = sizeof(o),
        .id = s->cfg->node_id,
        .data = data,
        .data_len = strlen(data),
        .follow_leader = 1,
        .cede_delay_ms = DEPOSED_DELAY_MS,
        .cb = on_election,
        .userdata = s,
    };
    int err = reign_election_join(&s->election, s->st->client, s->cfg->election_name, &o);
    if (err < 0) {
        s->election = NULL;
        slog(s, REIGN_LOG_ERROR, "cannot join election %s: %s", s->cfg->election_name,
             reign_strerror(err));
        fatal(s->d, "cannot join an election");
    }
}

static void leave(service *s)
{
    s->election = reign_election_free(s->election);
}

static void step_down(service *s, int delay_ms)
{
    if (!s->election)
        return;
    int err = reign_election_cede(s->election, delay_ms);
    if (err < 0)
        slog(s, REIGN_LOG_INFO, "step down: %s (not leading any more)", reign_strerror(err));
}

/* ---- fence and breadcrumb ------------------------------------------------- */

/* Carries the epoch of the leadership a request was made for. */
typedef struct op_ctx {
    service *s;
    uint64_t epoch;
} op_ctx;

static op_ctx *op_new(service *s)
{
    op_ctx *o = malloc(sizeof(*o));
    if (o) {
        o->s = s;
        o->epoch = s->epoch;
    }
    return o;
}

/* Frees the context; returns its service if the result is still current. */
static service *op_take(op_ctx *o)
{
    service *s = o->s;
    int current = o->epoch == s->epoch;
    free(o);
    return current ? s : NULL;
}

static void on_fenced(int ok, unsigned attempts, const char *detail, void *userdata)
{
    service *s = userdata;
    s->fence = NULL;
    s->fence_attempts += attempts;
    s->fence_ok += ok ? 1 : 0;
    slog(s, ok ? REIGN_LOG_NOTICE : REIGN_LOG_ERROR, "fence %s: %s", ok ? "succeeded" : "FAILED",
         detail);
    post(s, ok ? REIGND_EV_FENCE_OK : REIGND_EV_FENCE_FAILED);
}

static void on_crumb_read(int err, const char *msg, const reignd_breadcrumb *b, int64_t version,
                          void *userdata)
{
    service *s = op_take(userdata);
    if (!s)
        return;
    if (err < 0) {
        /* Unknown is not "nobody": never become active on a guess. */
        slog(s, REIGN_LOG_ERROR, "cannot read the breadcrumb: %s", msg);
        post(s, REIGND_EV_FENCE_FAILED);
        return;
    }
    s->crumb_version = version;
    s->crumb_ours = 0;
    if (!b) {
        slog(s, REIGN_LOG_INFO, "no breadcrumb: no old active to fence");
        post(s, REIGND_EV_FENCE_OK);
        return;
    }
    if (strcmp(b->id, s->cfg->node_id) == 0) {
        slog(s, REIGN_LOG_INFO, "the breadcrumb names this node (term %llu): nothing to fence",
             (unsigned long long)b->term);
        post(s, REIGND_EV_FENCE_OK);
        return;
    }
    slog(s, REIGN_LOG_NOTICE, "fencing the old active %s (service %s, term %llu)", b->id,
         b->service_address, (unsigned long long)b->term);
    reignd_fence_ctx ctx = {s->d->o.loop, s->cfg, s->hooks, s->d->o.secret, s->term, s->token};
    err = reignd_fence_start(&s->fence, &ctx, b, on_fenced, s);
    if (err < 0) {
        s->fence = NULL;
        slog(s, REIGN_LOG_ERROR, "cannot fence: %s", reign_strerror(err));
        post(s, REIGND_EV_FENCE_FAILED);
    }
}

static void start_fence(service *s)
{
    s->epoch++;
    reignd_fence_abandon(s->fence);
    s->fence = NULL;
    op_ctx *o = op_new(s);
    int err = o ? reignd_breadcrumb_read(s->st->client, s->cfg->election_name, on_crumb_read, o)
                : REIGN_ENOMEM;
    if (err < 0) {
        free(o);
        slog(s, REIGN_LOG_ERROR, "cannot read the breadcrumb: %s", reign_strerror(err));
        post(s, REIGND_EV_FENCE_FAILED);
    }
}

static void write_crumb(service *s);

static void on_crumb_written(int err, int64_t version, void *userdata)
{
    service *s = op_take(userdata);
    if (!s)
        return;
    if (err == REIGN_ENOENT && s->crumb_version != REIGN_VALUE_ABSENT) {
        /* The old active removed its breadcrumb after it went standby (we fenced it since we
         * read it, and only we lead): no breadcrumb is what we expect now.  Write ours afresh;
         * if someone else's is there by then, that fails as below. */
        slog(s, REIGN_LOG_INFO, "the old active removed its breadcrumb meanwhile; writing ours");
        s->crumb_version = REIGN_VALUE_ABSENT;
        write_crumb(s);
        return;
    }
    if (err < 0) {
        slog(s, REIGN_LOG_ERROR, "cannot write our breadcrumb: %s%s", reign_strerror(err),
             err == REIGN_EBADVERSION || err == REIGN_EEXIST || err == REIGN_ENOENT
                 ? " (someone else wrote it since we read it)"
                 : "");
        post(s, REIGND_EV_BREADCRUMB_FAILED);
        return;
    }
    s->crumb_version = version;
    s->crumb_ours = 1;
    post(s, REIGND_EV_BREADCRUMB_OK);
}

static void write_crumb(service *s)
{
    reignd_breadcrumb b = {.term = s->term, .token = s->token};
    snprintf(b.id, sizeof(b.id), "%s", s->cfg->node_id);
    snprintf(b.service_address, sizeof(b.service_address), "%s", s->cfg->service_address);
    snprintf(b.peer_address, sizeof(b.peer_address), "%s",
             s->cfg->peer_address ? s->cfg->peer_address : "");
    op_ctx *o = op_new(s);
    int err = o ? reignd_breadcrumb_write(s->st->client, s->cfg->election_name, &b,
                                          s->crumb_version, on_crumb_written, o)
                : REIGN_ENOMEM;
    if (err < 0) {
        free(o);
        slog(s, REIGN_LOG_ERROR, "cannot write our breadcrumb: %s", reign_strerror(err));
        post(s, REIGND_EV_BREADCRUMB_FAILED);
    }
}

static void on_crumb_deleted(int err, int64_t version, void *userdata)
{
    service *s = userdata;
    s->deletes_pending--;
    if (err < 0 && err != REIGN_ENOENT)
        slog(s, REIGN_LOG_WARN, "our breadcrumb was not removed: %s", reign_strerror(err));
    else
        slog(s, REIGN_LOG_INFO, "breadcrumb removed: nobody needs to fence this node");
    maybe_finish(s->d);
}

static void delete_crumb(service *s)
{
    if (!s->crumb_ours)
        return;
    s->crumb_ours = 0;
    int err = reignd_breadcrumb_delete(s->st->client, s->cfg->election_name, s->crumb_version,
                                       on_crumb_deleted, s);
    if (err < 0)
        slog(s, REIGN_LOG_WARN, "our breadcrumb was not removed: %s", reign_strerror(err));
    else
        s->deletes_pending++;
}

/* ---- actions ---------------------------------------------------------------- */

static void run_actions(service *s, unsigned a)
{
    if (a & REIGND_A_BECOME_STANDBY) {
        if (queue_hook(s, &s->cfg->become_standby, "become_standby", "standby", on_standby_done) ==
            0)
            s->standby_pending++;
        else
            post(s, REIGND_EV_STANDBY_HOOK_FAILED);
    }
    if (a & REIGND_A_DELETE_BREADCRUMB)
        delete_crumb(s);
    if (a & REIGND_A_RESIGN)
        leave(s);
    if (a & REIGND_A_CEDE)
        step_down(s, s->cede_delay_ms);
    if (a & REIGND_A_RETRY_LATER)
        step_down(s, RETRY_DELAY_MS);
    if (a & REIGND_A_JOIN)
        join(s);
    if (a & REIGND_A_FENCE)
        start_fence(s);
    if (a & REIGND_A_WRITE_BREADCRUMB)
        write_crumb(s);
    if (a & REIGND_A_BECOME_ACTIVE) {
        s->failovers++;
        s->service_active = 1;
        if (queue_hook(s, &s->cfg->become_active, "become_active", "active", on_active_done) < 0)
            post(s, REIGND_EV_ACTIVE_HOOK_FAILED);
    }
    if (a & REIGND_A_EXIT) {
        s->stopped = 1;
        reignd_fence_abandon(s->fence);
        s->fence = NULL;
    }
}

/* ---- health and connection -------------------------------------------------- */

static void on_health(reignd_health *h, reignd_health_state old_state,
                      reignd_health_state new_state, const char *detail, void *userdata)
{
    service *s = userdata;
    s->health_state = new_state;
    slog(s, new_state == REIGND_HEALTH_HEALTHY ? REIGN_LOG_NOTICE : REIGN_LOG_WARN,
         "health %s -> %s (%s)", reignd_health_state_name(old_state),
         reignd_health_state_name(new_state), detail ? detail : "");
    if (new_state == REIGND_HEALTH_HEALTHY)
        post(s, REIGND_EV_HEALTHY);
    else if (new_state != REIGND_HEALTH_INITIALIZING)
        post(s, REIGND_EV_UNHEALTHY);
}

static void on_store_state(reign_client *client, reign_conn_state state, void *userdata)
{
    store *st = userdata;
    reignd_daemon *d = st->d;
    char uri[512];
    reign_uri_redact(st->uri, uri, sizeof(uri));
    dlog(d,
         state == REIGN_CONN_CONNECTED || state == REIGN_CONN_RECONNECTED ? REIGN_LOG_INFO
                                                                          : REIGN_LOG_WARN,
         "store %s: %s", uri, reign_conn_state_name(state));
    int ev;
    switch (state) {
    case REIGN_CONN_CONNECTED:
        ev = REIGND_EV_CONNECTED;
        break;
    case REIGN_CONN_SUSPENDED:
        ev = REIGND_EV_SUSPENDED;
        break;
    case REIGN_CONN_RECONNECTED:
        ev = REIGND_EV_RECONNECTED;
        break;
    case REIGN_CONN_LOST:
        ev = REIGND_EV_SESSION_LOST;
        break;
    case REIGN_CONN_CLOSED:
        st->closed = 1;
        if (st->uv) {
            reign_uv_detach(st->uv);
            st->uv = NULL;
        }
        if (!d->shutting_down)
            fatal(d, "a store closed (see its error above)");
        maybe_finish(d);
        return;
    default:
        return;
    }
    for (size_t i = 0; i < d->n_services; i++)
        if (d->services[i].st == st)
            post(&d->services[i], (reignd_event)ev);
}

/* ---- life cycle ------------------------------------------------------------- */

static void finish(reignd_daemon *d, int status)
{
    if (d->exited)
        return;
    d->exited = 1;
    if (d->grace_started)
        uv_close((uv_handle_t *)&d->grace, NULL);
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        reignd_health_close(s->health);
        s->health = NULL;
        reignd_hooks_close(s->hooks);
        s->hooks = NULL;
    }
    for (size_t i = 0; i < d->n_stores; i++)
        if (d->stores[i].uv) {
            reign_uv_detach(d->stores[i].uv);
            d->stores[i].uv = NULL;
        }
    if (d->o.on_exit)
        d->o.on_exit(d, status, d->o.userdata);
}

/* A shutdown ends once every service left, every hook ran and every
 * breadcrumb delete was answered (closing first would cancel it, and the
 * next active would fence us); then the sessions are closed (orderly: our
 * election nodes go at once), then done. */
static void maybe_finish(reignd_daemon *d)
{
    if (!d->shutting_down || d->exited)
        return;
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        if (!s->stopped || s->deletes_pending || (s->hooks && reignd_hooks_pending(s->hooks)))
            return;
    }
    for (size_t i = 0; i < d->n_stores; i++) {
        store *st = &d->stores[i];
        if (st->closed)
            continue; /* closed (1) or closing (-1) */
        st->closed = -1;
        reign_client_close(st->client);
        if (st->uv)
            reign_uv_update(st->uv);
    }
    for (size_t i = 0; i < d->n_stores; i++)
        if (d->stores[i].closed != 1)
            return;
    finish(d, d->exit_status);
}

static void on_grace(uv_timer_t *t)
{
    reignd_daemon *d = t->data;
    dlog(d, REIGN_LOG_ERROR, "shutdown: gave up waiting for hooks and sessions");
    finish(d, d->exit_status ? d->exit_status : 1);
}

static void fatal(reignd_daemon *d, const char *what)
{
    dlog(d, REIGN_LOG_ERROR, "fatal: %s; shutting down", what);
    d->exit_status = 1;
    reignd_daemon_shutdown(d);
}

size_t reignd_daemon_describe_wait(const reignd_daemon *d, char *out, size_t outlen)
{
    size_t used = 0;
    if (outlen)
        out[0] = '\0';
    for (size_t i = 0; i < d->n_services && used + 1 < outlen; i++) {
        const service *s = &d->services[i];
        char what[400] = "";
        if (s->hooks && reignd_hooks_pending(s->hooks))
            reignd_hooks_describe(s->hooks, what, sizeof(what));
        else if (!s->stopped)
            snprintf(what, sizeof(what), "leaving its election");
        if (s->deletes_pending)
            snprintf(what + strlen(what), sizeof(what) - strlen(what), "%sremoving its breadcrumb",
                     what[0] ? ", then " : "");
        if (!what[0])
            continue;
        int n = snprintf(out + used, outlen - used, "%sservice %s: %s", used ? "; " : "",
                         s->cfg->name, what);
        used += n < 0 ? 0 : (size_t)n;
    }
    return used < outlen ? used : outlen - 1;
}

int reignd_daemon_grace_ms(void)
{
    return SHUTDOWN_GRACE_MS;
}

void reignd_daemon_shutdown(reignd_daemon *d)
{
    if (d->exited)
        return;
    if (d->shutting_down) {
        if (d->exit_status == 0 || d->grace_started) {
            dlog(d, REIGN_LOG_WARN, "shutdown: not waiting any longer");
            finish(d, d->exit_status ? d->exit_status : 1);
        }
        return;
    }
    d->shutting_down = 1;
    dlog(d, REIGN_LOG_NOTICE, "shutting down");
    if (uv_timer_init(d->o.loop, &d->grace) == 0) {
        d->grace.data = d;
        d->grace_started = 1;
        uv_timer_start(&d->grace, on_grace, SHUTDOWN_GRACE_MS, 0);
        uv_unref((uv_handle_t *)&d->grace);
    }
    for (size_t i = 0; i < d->n_services; i++)
        post(&d->services[i], REIGND_EV_SHUTDOWN);
    maybe_finish(d);
}

/* ---- operations (control.h, peer.h) ------------------------------------------ */

static service *find(reignd_daemon *d, reignd_call *call, const char *name)
{
    for (size_t i = 0; i < d->n_services; i++)
        if (strcmp(d->services[i].cfg->name, name) == 0)
            return &d->services[i];
    reignd_call_fail(call, "no service '%s' here", name);
    return NULL;
}

/* Refuses an operator's event the state machine would refuse, with its reason. */
static int refused(service *s, reignd_call *call, reignd_event ev)
{
    reignd_step r = reignd_fsm_step(s->state, ev, healthy(s));
    if (!r.refused)
        return 0;
    reignd_call_fail(call, "%s (service %s is %s here)", r.reason, s->cfg->name,
                     reignd_state_name(s->state));
    return 1;
}

static cJSON *service_status(const service *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    reign_leader l;
    int has_leader = s->election && reign_election_leader(s->election, &l) == 0;
    int leading = s->election && reign_election_is_leader(s->election);
    cJSON_AddStringToObject(o, "name", s->cfg->name);
    cJSON_AddStringToObject(o, "node", s->cfg->node_id);
    cJSON_AddStringToObject(o, "state", reignd_state_name(s->state));
    cJSON_AddStringToObject(o, "health", reignd_health_state_name(s->health_state));
    cJSON_AddBoolToObject(o, "paused",
                          s->state == REIGND_ST_PAUSED || s->state == REIGND_ST_PAUSED_ACTIVE);
    if (has_leader)
        cJSON_AddStringToObject(o, "leader", l.id);
    else
        cJSON_AddNullToObject(o, "leader");
    cJSON_AddNumberToObject(o, "term", leading ? (double)s->term : 0);
    cJSON_AddNumberToObject(o, "token", leading ? (double)s->token : 0);
    cJSON_AddNumberToObject(o, "failovers", (double)s->failovers);
    cJSON_AddStringToObject(o, "election", s->cfg->election_name);
    cJSON_AddStringToObject(o, "reason", s->reason);
    return o;
}

static cJSON *op_status(void *ctx)
{
    reignd_daemon *d = ctx;
    cJSON *root = cJSON_CreateObject();
    cJSON *arr = root ? cJSON_AddArrayToObject(root, "services") : NULL;
    if (!arr) {
        cJSON_Delete(root);
        return NULL;
    }
    for (size_t i = 0; i < d->n_services; i++) {
        cJSON *one = service_status(&d->services[i]);
        if (!one) {
            cJSON_Delete(root);
            return NULL;
        }
        cJSON_AddItemToArray(arr, one);
    }
    return root;
}

/* Steps down after become-standby; the call is answered when that ran. */
static int cede_now(service *s, reignd_call *call, int delay_ms)
{
    s->cede_delay_ms = delay_ms;
    post(s, REIGND_EV_CEDE);
    return s->standby_pending ? add_waiter(s, call) : 0;
}

static int op_cede(void *ctx, reignd_call *call, const char *name, double delay_s)
{
    service *s = find(ctx, call, name);
    if (!s)
        return REIGN_ENOENT;
    if (refused(s, call, REIGND_EV_CEDE))
        return REIGN_ESTATE;
    slog(s, REIGN_LOG_NOTICE, "cede for %.0f s, asked by %s", delay_s, reignd_call_origin(call));
    return cede_now(s, call, (int)(delay_s * 1000));
}

typedef struct failover_req {
    reignd_daemon *d;
    size_t index;
    reignd_call *call;
    char to[REIGN_ID_MAX + 1];
    int next_in_line; /* `to` takes over when we step down; else it is designated */
} failover_req;

static void failover_refuse(failover_req *f, int err, const char *msg)
{
    service *s = &f->d->services[f->index];
    slog(s, REIGN_LOG_WARN, "failover to %s refused: %s", f->to, msg);
    reignd_call_done(f->call, err, msg, NULL);
    free(f);
}

static void on_designated(reign_client *client, int err, void *userdata)
{
    failover_req *f = userdata;
    if (err < 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "cannot designate %s: %s", f->to, reign_strerror(err));
        failover_refuse(f, err, msg);
        return;
    }
    reignd_call_done(f->call, 0, NULL, state_result(&f->d->services[f->index]));
    free(f);
}

/*
 * The checks passed: hand over.  The target next in line takes over when we
 * step down cleanly (become-standby, breadcrumb removed, cede); one further
 * back is designated, so that it asks us to hand over (our become-standby
 * then runs on the demotion, and its graceful fence waits for it).
 */
static void failover_go(failover_req *f)
{
    service *s = &f->d->services[f->index];
    if (s->state != REIGND_ST_ACTIVE) {
        char msg[200];
        snprintf(msg, sizeof(msg), "service %s is no longer active here (%s)", s->cfg->name,
                 reignd_state_name(s->state));
        failover_refuse(f, REIGN_ESTATE, msg);
        return;
    }
    slog(s, REIGN_LOG_NOTICE, "failover to %s, asked by %s", f->to, reignd_call_origin(f->call));
    if (!f->next_in_line) {
        int err =
            reign_election_designate(s->st->client, s->cfg->election_name, f->to, on_designated, f);
        if (err < 0)
            on_designated(s->st->client, err, f);
        else if (s->st->uv)
            reign_uv_update(s->st->uv);
        return;
    }
    reignd_call *call = f->call;
    free(f);
    int r = cede_now(s, call, FAILOVER_CEDE_MS);
    if (r != REIGND_PENDING)
        reignd_call_done(call, r, NULL, r == 0 ? state_result(s) : NULL);
}

/* The target's own reignd on its service: it must say healthy and standby. */
static void on_target_state(int err, const char *msg, const cJSON *result, void *userdata)
{
    failover_req *f = userdata;
    char why[400];
    if (err < 0) {
        snprintf(why, sizeof(why), "cannot confirm that %s is a healthy standby: %s", f->to, msg);
        failover_refuse(f, err, why);
        return;
    }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(result, "state");
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(result, "health");
    const char *state = cJSON_IsString(st) ? st->valuestring : "unknown";
    const char *health = cJSON_IsString(h) ? h->valuestring : "unknown";
    if (strcmp(state, "standby") != 0 || strcmp(health, "healthy") != 0) {
        snprintf(why, sizeof(why), "%s is not a healthy standby: it reports state %s, health %s",
                 f->to, state, health);
        failover_refuse(f, REIGN_ESTATE, why);
        return;
    }
    failover_go(f);
}

/*
 * The election as it stands: `to` must stand in it (only a healthy node
 * stands), and its reignd, when it has a peer endpoint, must confirm that
 * its service is a healthy standby.
 */
static void on_failover_view(reign_client *client, int err, const reign_election_view *view,
                             void *userdata)
{
    failover_req *f = userdata;
    service *s = &f->d->services[f->index];
    char msg[800];
    if (err < 0) {
        snprintf(msg, sizeof(msg), "cannot read election %s: %s", s->cfg->election_name,
                 reign_strerror(err));
        failover_refuse(f, err, msg);
        return;
    }
    const reign_candidate *target = NULL;
    size_t pos = 0;
    for (size_t i = 0; i < view->n_candidates && !target; i++)
        if (strcmp(view->candidates[i].id, f->to) == 0) {
            target = &view->candidates[i];
            pos = i;
        }
    if (!target) {
        snprintf(msg, sizeof(msg),
                 "%s is not a healthy standby of %s: it does not stand in the election "
                 "(not running, not healthy, or paused)",
                 f->to, s->cfg->name);
        failover_refuse(f, REIGN_ESTATE, msg);
        return;
    }
    f->next_in_line = pos == 1 && strcmp(view->candidates[0].id, s->cfg->node_id) == 0;
    /* Its payload is "SERVICE_ADDRESS PEER_ADDRESS" (join()); "-" for no peer. */
    char data[2 * REIGND_ADDRESS_MAX + 8] = "", peer[REIGND_ADDRESS_MAX] = "";
    if (target->data_len < sizeof(data))
        memcpy(data, target->data, target->data_len);
    const char *sp = strchr(data, ' ');
    if (sp && strcmp(sp + 1, "-") != 0)
        snprintf(peer, sizeof(peer), "%s", sp + 1);
    if (!peer[0] || !f->d->o.secret) {
        failover_go(f); /* standing is all we can know */
        return;
    }
    reignd_peer_target t = {peer, f->d->o.secret, 5000};
    err = reignd_peer_state(f->d->o.loop, &t, s->cfg->name, on_target_state, f, NULL);
    if (err < 0) {
        snprintf(msg, sizeof(msg), "cannot ask %s at %s: %s", f->to, peer, reign_strerror(err));
        failover_refuse(f, err, msg);
    }
}

static int op_failover(void *ctx, reignd_call *call, const char *name, const char *to)
{
    reignd_daemon *d = ctx;
    service *s = find(d, call, name);
    if (!s)
        return REIGN_ENOENT;
    if (strcmp(to, s->cfg->node_id) == 0 && reignd_state_is_active(s->state)) {
        reignd_call_fail(call, "%s is already the active node of %s", to, s->cfg->name);
        return REIGN_ESTATE;
    }
    if (s->state != REIGND_ST_ACTIVE) {
        reignd_call_fail(call,
                         "this node is not active for %s (it is %s): run the failover on the "
                         "active node",
                         s->cfg->name, reignd_state_name(s->state));
        return REIGN_ESTATE;
    }
    failover_req *f = calloc(1, sizeof(*f));
    if (!f)
        return REIGN_ENOMEM;
    *f = (failover_req){d, (size_t)(s - d->services), call, "", 0};
    snprintf(f->to, sizeof(f->to), "%s", to);
    int err = reign_election_query(s->st->client, s->cfg->election_name, on_failover_view, f);
    if (err < 0) {
        free(f);
        reignd_call_fail(call, "cannot read election %s: %s", s->cfg->election_name,
                         reign_strerror(err));
        return err;
    }
    if (s->st->uv)
        reign_uv_update(s->st->uv);
    return REIGND_PENDING;
}

static int pause_resume(void *ctx, reignd_call *call, const char *name, reignd_event ev)
{
    service *s = find(ctx, call, name);
    if (!s)
        return REIGN_ENOENT;
    if (refused(s, call, ev))
        return REIGN_ESTATE;
    slog(s, REIGN_LOG_NOTICE, "%s, asked by %s", reignd_event_name(ev), reignd_call_origin(call));
    post(s, ev);
    reignd_call_set_result(call, state_result(s));
    return 0;
}

static int op_pause(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, REIGND_EV_PAUSE);
}

static int op_resume(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, REIGND_EV_RESUME);
}

/* A graceful fence from the node that won the election: answered once the
 * service is standby here (at once if it was not active). */
static int op_standby(void *ctx, reignd_call *call, const char *name, const char *from,
                      uint64_t term)
{
    service *s = find(ctx, call, name);
    if (!s)
        return REIGN_ENOENT;
    slog(s, REIGN_LOG_NOTICE, "%s (%s, term %llu) asks this node to go standby", from,
         reignd_call_origin(call), (unsigned long long)term);
    post(s, REIGND_EV_FENCE_REQUEST);
    if (s->standby_pending)
        return add_waiter(s, call);
    if (s->service_active) {
        reignd_call_fail(call, "become-standby failed on this node: it must be fenced otherwise");
        return REIGN_ESTATE;
    }
    reignd_call_set_result(call, state_result(s));
    return 0;
}

const reignd_ops *reignd_daemon_ops(reignd_daemon *d)
{
    return &d->ops;
}

void reignd_daemon_metrics(reignd_metrics_sink *sink, void *ctx)
{
    reignd_daemon *d = ctx;
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        int leading = s->election && reign_election_is_leader(s->election);
        reignd_metrics_service m = {
            .name = s->cfg->name,
            .health = reignd_health_state_name(s->health_state),
            .state = reignd_state_name(s->state),
            .leader = reignd_state_is_active(s->state),
            .paused = s->state == REIGND_ST_PAUSED || s->state == REIGND_ST_PAUSED_ACTIVE,
            .term = leading ? s->term : 0,
            .token = leading ? s->token : 0,
            .failovers = s->failovers,
            .fence_attempts = s->fence_attempts,
            .fence_successes = s->fence_ok,
            /* Per method, as the metric counts them: every method tried failed
             * except the last of each successful fence. */
            .fence_failures = s->fence_attempts - s->fence_ok,
        };
        reignd_metrics_add(sink, &m);
    }
}

/* ---- construction and start-up ---------------------------------------------- */

static store *store_for(reignd_daemon *d, const char *uri)
{
    for (size_t i = 0; i < d->n_stores; i++)
        if (strcmp(d->stores[i].uri, uri) == 0)
            return &d->stores[i];
    return NULL;
}

int reignd_daemon_new(reignd_daemon **ret, const reignd_daemon_options *opts, char *err,
                      size_t errlen)
{
    const reignd_config *cfg = opts->config;
    reignd_daemon *d = calloc(1, sizeof(*d));
    if (!d)
        return REIGN_ENOMEM;
    d->o = *opts;
    d->services = calloc(cfg->n_services, sizeof(*d->services));
    d->stores = calloc(cfg->n_services, sizeof(*d->stores));
    if (!d->services || !d->stores) {
        reignd_daemon_free(d);
        return REIGN_ENOMEM;
    }
    d->ops = (reignd_ops){d, op_status, op_cede, op_failover, op_pause, op_resume, op_standby};
    for (size_t i = 0; i < cfg->n_services; i++) {
        const reignd_service_config *sc = &cfg->services[i];
        service *s = &d->services[d->n_services++];
        s->d = d;
        s->cfg = sc;
        s->state = REIGND_ST_INITIALIZING;
        s->crumb_version = REIGN_VALUE_ABSENT;
        snprintf(s->reason, sizeof(s->reason), "starting: waiting for the first health check");
        s->st = store_for(d, sc->election_uri);
        if (!s->st) {
            s->st = &d->stores[d->n_stores++];
            s->st->d = d;
            s->st->uri = strdup(sc->election_uri);
            if (!s->st->uri) {
                reignd_daemon_free(d);
                return REIGN_ENOMEM;
            }
        }
        int e = reignd_hooks_new(&s->hooks, d->o.loop);
        if (e == 0)
            e = reignd_health_new(&s->health, d->o.loop, sc, on_health, s);
        if (e < 0) {
            snprintf(err, errlen, "service %s: %s", sc->name, reign_strerror(e));
            reignd_daemon_free(d);
            return e;
        }
    }
    *ret = d;
    return 0;
}

/* The session timeout asked for by the first service of a store. */
static int store_session_ms(reignd_daemon *d, const store *st)
{
    for (size_t i = 0; i < d->n_services; i++)
        if (d->services[i].st == st)
            return (int)d->services[i].cfg->session_timeout_ms;
    return 0;
}

int reignd_daemon_prepare(reignd_daemon *d, int check_layout, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->n_stores; i++) {
        store *st = &d->stores[i];
        char uri[512], why[256] = "";
        reign_uri_redact(st->uri, uri, sizeof(uri));
        reign_client_options o = {
            .size = sizeof(o),
            .session_timeout_ms = store_session_ms(d, st),
            /* A reignd killed or crashed: its guardian closes the session, so the standby fences
             * and takes over at once instead of after the session timeout. */
            .guardian = REIGN_GUARDIAN_ON,
            .on_state = on_store_state,
            .log_fn = d->o.log_fn,
            .log_level = d->o.log_level,
            .userdata = st,
        };
        int e = reign_client_new(&st->client, st->uri, &o, why, sizeof(why));
        if (e == 0 && (e = reign_client_wait_connected(st->client)) < 0)
            snprintf(why, sizeof(why), "%s", reign_client_errmsg(st->client));
        if (e < 0) {
            snprintf(err, errlen, "cannot use the store %s: %s%s%s", uri, reign_strerror(e),
                     why[0] ? ": " : "", why);
            return e == REIGN_EAUTH ? REIGN_EAUTH : REIGN_ECONNECT;
        }
        dlog(d, REIGN_LOG_INFO, "store %s: session established (timeout %d ms)", uri,
             reign_client_session_timeout_ms(st->client));
    }
    return check_layout ? reignd_daemon_format(d, -1, err, errlen) : 0;
}

/* Runs one store's client until a layout request has answered. */
typedef struct sync_wait {
    reign_client *client;
    int done;
    int err;
    char msg[256];
} sync_wait;

static void on_layout(int err, const char *msg, void *userdata)
{
    sync_wait *w = userdata;
    w->done = 1;
    w->err = err;
    snprintf(w->msg, sizeof(w->msg), "%s", msg ? msg : "");
    reign_client_stop(w->client);
}

static void on_probe_written(reign_client *client, int err, const reign_value *value,
                             void *userdata)
{
    sync_wait *w = userdata;
    (void)value;
    w->done = 1;
    /* ZooKeeper checks the ACL before the version: a version that moved meanwhile (another
     * daemon's probe) still proves the write was allowed. */
    w->err = err == REIGN_EBADVERSION ? 0 : err;
    reign_client_stop(client);
}

static void on_probe_read(reign_client *client, int err, const reign_value *value, void *userdata)
{
    sync_wait *w = userdata;
    if (err == 0)
        err = reign_value_set(client, value->key, value->data, value->data_len, value->version,
                              on_probe_written, w);
    if (err < 0) {
        w->done = 1;
        w->err = err;
        reign_client_stop(client);
    }
}

/*
 * The credentials, at start.  ZooKeeper's digest scheme takes any password
 * when the session is made; a wrong one shows only when a node with the
 * election's ACL is written, which would be after the service's first
 * healthy check, with the daemon already running.  So write one now: the
 * layout value again, as it is, at its version (a no-op but for the
 * version number).  0, or the error with err set.
 */
static int probe_credentials(service *s, char *err, size_t errlen)
{
    char key[REIGN_KEY_MAX + 1];
    sync_wait w = {s->st->client, 0, 0, ""};
    int e = reignd_layout_key(s->cfg->election_name, key, sizeof(key));
    if (e == 0)
        e = reign_value_get(w.client, key, on_probe_read, &w);
    while (e == 0 && !w.done)
        if (reign_client_run(w.client) == REIGN_ECLOSED && !w.done)
            e = REIGN_ECLOSED;
    if (e == 0)
        e = w.err;
    if (e == REIGN_EACCES || e == REIGN_EAUTH) {
        snprintf(err, errlen,
                 "service %s: the store refused our credentials: writing election %s is %s; "
                 "are election_uri's user and password the ones `reignd --format` used?",
                 s->cfg->name, s->cfg->election_name,
                 e == REIGN_EACCES ? "not authorized by its access control" : reign_strerror(e));
        return REIGN_EAUTH;
    }
    if (e < 0)
        snprintf(err, errlen, "service %s: election %s: checking our credentials: %s", s->cfg->name,
                 s->cfg->election_name, reign_strerror(e));
    return e;
}

/* force < 0: only check that the layout is there, and that we may write it. */
int reignd_daemon_format(reignd_daemon *d, int force, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        sync_wait w = {s->st->client, 0, 0, ""};
        int e = force < 0
                    ? reignd_layout_check(w.client, s->cfg->election_name, on_layout, &w)
                    : reignd_layout_format(w.client, s->cfg->election_name, force, on_layout, &w);
        while (e == 0 && !w.done) {
            if (reign_client_run(w.client) == REIGN_ECLOSED && !w.done) {
                snprintf(w.msg, sizeof(w.msg), "%s", reign_client_errmsg(w.client));
                e = REIGN_ECLOSED;
            }
        }
        if (e == 0)
            e = w.err;
        if (e == REIGN_ENOENT && force < 0) {
            snprintf(err, errlen,
                     "service %s: election %s is not formatted for reignd: run `reignd --format` "
                     "once (with this configuration) before starting the daemon",
                     s->cfg->name, s->cfg->election_name);
            return e;
        }
        if (e == REIGN_ENOTSUP) {
            snprintf(err, errlen,
                     "service %s: reignd keeps its breadcrumb in a reign value, which needs a "
                     "ZooKeeper store (election_uri = zk://...)",
                     s->cfg->name);
            return e;
        }
        if (e < 0) {
            snprintf(err, errlen, "service %s: election %s: %s", s->cfg->name,
                     s->cfg->election_name, w.msg[0] ? w.msg : reign_strerror(e));
            return e;
        }
        if (force < 0 && (e = probe_credentials(s, err, errlen)) < 0)
            return e;
        if (force >= 0)
            dlog(d, REIGN_LOG_NOTICE, "service %s: election %s formatted%s", s->cfg->name,
                 s->cfg->election_name, force ? " (forced: the breadcrumb was removed)" : "");
    }
    return 0;
}

int reignd_daemon_start(reignd_daemon *d, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->n_stores; i++) {
        store *st = &d->stores[i];
        int e = reign_uv_attach(&st->uv, d->o.loop, st->client);
        if (e < 0) {
            snprintf(err, errlen, "cannot watch a store on the loop: %s", uv_strerror(e));
            return REIGN_EBACKEND;
        }
    }
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        char timing[300];
        reignd_config_timing_text(s->cfg, timing, sizeof(timing));
        slog(s, REIGN_LOG_NOTICE, "node %s, election %s: %s", s->cfg->node_id,
             s->cfg->election_name, timing);
        const char *warn = reignd_config_timing_warning(s->cfg);
        if (warn)
            slog(s, REIGN_LOG_WARN, "%s", warn);
        int e = reignd_health_start(s->health);
        if (e < 0) {
            snprintf(err, errlen, "service %s: cannot start its health check: %s", s->cfg->name,
                     reign_strerror(e));
            return e;
        }
    }
    return 0;
}

reignd_daemon *reignd_daemon_free(reignd_daemon *d)
{
    if (!d)
        return NULL;
    /* Closing a hook queue that still has work completes it on later loop
     * turns, with the service as userdata: only a daemon that finished
     * (finish() closed the queues while the loop ran) or never ran any
     * command may be freed.  Otherwise keep the memory (a leak at exit)
     * rather than let a late callback write to freed memory. */
    bool late = false;
    for (size_t i = 0; i < d->n_services && !d->exited; i++)
        late |= d->services[i].hooks && reignd_hooks_pending(d->services[i].hooks) > 0;
    if (late) {
        dlog(d, REIGN_LOG_WARN, "freed with hooks still pending: their memory is kept");
        for (size_t i = 0; i < d->n_services; i++)
            reignd_hooks_close(d->services[i].hooks);
        return NULL;
    }
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        s->election = reign_election_free(s->election);
        for (size_t j = 0; j < s->n_waiters; j++)
            reignd_call_done(s->waiters[j], REIGN_ECANCELED, "the daemon is stopping", NULL);
        free(s->waiters);
        if (!d->exited) {
            reignd_health_close(s->health);
            reignd_hooks_close(s->hooks);
        }
    }
    for (size_t i = 0; i < d->n_stores; i++) {
        if (d->stores[i].uv && !d->exited)
            reign_uv_detach(d->stores[i].uv);
        reign_client_free(d->stores[i].client);
        free(d->stores[i].uri);
    }
    free(d->services);
    free(d->stores);
    free(d);
    return NULL;
}
