/*
 * failover.c - what a reignd service does when its state machine says so
 * (service_internal.h): the become-* hooks and their notify, fencing the old
 * active named by the breadcrumb, writing and removing our breadcrumb,
 * stepping down for a while (a cede, a failed takeover), in the order of the
 * action bits (fsm.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breadcrumb.h"
#include "service_internal.h"

/* After a failure to become active (fence, breadcrumb, become-active), how
 * long to stay out of the election before standing again (ZKFC waits a
 * second); another candidate may take over meanwhile.  On a SQL store cede()
 * makes it one session_timeout at least, as reignd(8) says. */
#define RETRY_DELAY_MS 2000

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
    reignd__maybe_finish(s->d);
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
    /* A become-standby queued after it (a demotion meanwhile) clears it again. */
    s->activated = reignd_hook_succeeded(r) && reignd_state_is_active(s->state);
    reignd__post(s, reignd_hook_succeeded(r) ? REIGND_EV_ACTIVE_HOOK_OK
                                             : REIGND_EV_ACTIVE_HOOK_FAILED);
}

static void on_standby_done(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata)
{
    service *s = userdata;
    log_hook(s, r);
    s->standby_pending--;
    if (reignd_hook_succeeded(r))
        s->service_active = 0;
    /* Answer first: the step may end the daemon (shutdown) and its servers. */
    reignd__answer_waiters(s);
    reignd__post(s, reignd_hook_succeeded(r) ? REIGND_EV_STANDBY_HOOK_OK
                                             : REIGND_EV_STANDBY_HOOK_FAILED);
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
    reignd__post(s, ok ? REIGND_EV_FENCE_OK : REIGND_EV_FENCE_FAILED);
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
        reignd__post(s, REIGND_EV_FENCE_FAILED);
        return;
    }
    s->crumb_version = version;
    s->crumb_ours = 0;
    if (!b) {
        slog(s, REIGN_LOG_INFO, "no breadcrumb: no old active to fence");
        reignd__post(s, REIGND_EV_FENCE_OK);
        return;
    }
    /*
     * Never skip a fence for an id alone: another daemon may have this node's
     * id (a copy of its configuration), and a record of this node's earlier
     * run says nothing of what its service does now.  Skipped only for a
     * record this very daemon wrote (its state machine knows what it did
     * since), and for one of an earlier run at this node's own addresses:
     * that service is ours, made standby when this run started (PROBING)
     * before it stood; fencing "it" would fence ourselves.
     */
    int own_id = strcmp(b->id, s->cfg->node_id) == 0;
    if (own_id && b->instance[0] && strcmp(b->instance, s->d->instance) == 0) {
        slog(s, REIGN_LOG_INFO,
             "the breadcrumb is this daemon's own (instance %s, term %llu): nothing to fence",
             b->instance, (unsigned long long)b->term);
        reignd__post(s, REIGND_EV_FENCE_OK);
        return;
    }
    if (own_id && strcmp(b->service_address, s->cfg->service_address) == 0 &&
        strcmp(b->peer_address, reignd__own_peer_address(s)) == 0) {
        slog(s, REIGN_LOG_NOTICE,
             "the breadcrumb names an earlier run of this daemon (instance %s, term %llu, the same "
             "addresses): its service is this one, made standby when this run started; nothing "
             "more to fence",
             b->instance[0] ? b->instance : "unknown", (unsigned long long)b->term);
        reignd__post(s, REIGND_EV_FENCE_OK);
        return;
    }
    if (own_id)
        slog(s, REIGN_LOG_WARN,
             "the breadcrumb names this node's id %s, but another daemon (instance %s) at other "
             "addresses (service %s, peer %s): a copy with the same node_id; fencing it",
             b->id, b->instance[0] ? b->instance : "unknown", b->service_address,
             b->peer_address[0] ? b->peer_address : "none");
    slog(s, REIGN_LOG_NOTICE, "fencing the old active %s (service %s, term %llu)", b->id,
         b->service_address, (unsigned long long)b->term);
    reignd_fence_ctx ctx = {s->d->o.loop, s->cfg, s->hooks, s->d->o.secret, s->term, s->token};
    err = reignd_fence_start(&s->fence, &ctx, b, on_fenced, s);
    if (err < 0) {
        s->fence = NULL;
        slog(s, REIGN_LOG_ERROR, "cannot fence: %s", reign_strerror(err));
        reignd__post(s, REIGND_EV_FENCE_FAILED);
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
        reignd__post(s, REIGND_EV_FENCE_FAILED);
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
        reignd__post(s, REIGND_EV_BREADCRUMB_FAILED);
        return;
    }
    s->crumb_version = version;
    s->crumb_ours = 1;
    reignd__post(s, REIGND_EV_BREADCRUMB_OK);
}

static void write_crumb(service *s)
{
    reignd_breadcrumb b = {.term = s->term, .token = s->token};
    snprintf(b.id, sizeof(b.id), "%s", s->cfg->node_id);
    snprintf(b.service_address, sizeof(b.service_address), "%s", s->cfg->service_address);
    snprintf(b.peer_address, sizeof(b.peer_address), "%s", reignd__own_peer_address(s));
    snprintf(b.instance, sizeof(b.instance), "%s", s->d->instance);
    op_ctx *o = op_new(s);
    int err = o ? reignd_breadcrumb_write(s->st->client, s->cfg->election_name, &b,
                                          s->crumb_version, on_crumb_written, o)
                : REIGN_ENOMEM;
    if (err < 0) {
        free(o);
        slog(s, REIGN_LOG_ERROR, "cannot write our breadcrumb: %s", reign_strerror(err));
        reignd__post(s, REIGND_EV_BREADCRUMB_FAILED);
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
    reignd__maybe_finish(s->d);
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

/* ---- stepping down for a while: the CEDE and RETRY_LATER actions -------- */

/* A cede ends: CEDED stands again (moot in any other state). */
void reignd__end_cede(service *s)
{
    reignd__timer_stop(&s->cede_timer);
    reignd__post(s, REIGND_EV_REJOIN);
}

static void on_cede_timer(uv_timer_t *t)
{
    reignd__end_cede(t->data);
}

/*
 * CEDE: leave the election now (the breadcrumb delete, if any, went first
 * on the same session) and stand again after the delay, or earlier when a
 * failover's target is active (ops_failover.c), as ZKFC's graceful failover
 * lets the old active stand again once the new one is up.
 */
static void cede(service *s, int delay_ms, int retry)
{
    /* A SQL lease goes to whoever takes it first, and the others see it free when told
     * (SQLite, PostgreSQL) or at their next poll (MariaDB): standing again at once would take
     * it straight back.  Out for one session_timeout at least (the lease; its poll period is
     * shorter), or until a failover's target is active. */
    if (!reignd__store_queues(s->st) && delay_ms < (int)s->cfg->session_timeout_ms)
        delay_ms = (int)s->cfg->session_timeout_ms;
    reignd__leave(s, REIGND_CHANGE_CEDED);
    reignd__timer_stop(&s->cede_timer);
    s->cede_timer =
        reignd__timer_start(s, on_cede_timer, (uint64_t)(delay_ms > 0 ? delay_ms : 0), 0);
    if (!s->cede_timer) {
        slog(s, REIGN_LOG_ERROR, "cannot time the cede: standing again at once");
        reignd__post(s, REIGND_EV_REJOIN);
        return;
    }
    size_t used = strlen(s->reason);
    if (s->failover && !retry)
        snprintf(s->reason + used, sizeof(s->reason) - used,
                 " (a failover to %s: stands again once it is active, at the latest in %.0f s)",
                 s->failover->to, delay_ms / 1000.0);
    else
        snprintf(s->reason + used, sizeof(s->reason) - used, " (stands again in %g s)",
                 delay_ms / 1000.0);
}

/* ---- actions ---------------------------------------------------------------- */

void reignd__run_actions(service *s, unsigned a)
{
    if (a & REIGND_A_BECOME_STANDBY) {
        s->activated = 0;
        if (queue_hook(s, &s->cfg->become_standby, "become_standby", "standby", on_standby_done) ==
            0)
            s->standby_pending++;
        else
            reignd__post(s, REIGND_EV_STANDBY_HOOK_FAILED);
    }
    if (a & REIGND_A_DELETE_BREADCRUMB)
        delete_crumb(s);
    if (a & REIGND_A_RESIGN) {
        if (a & REIGND_A_EXIT)
            reignd__leave_for_good(s);
        else
            reignd__leave(s, REIGND_CHANGE_RESIGNED);
    }
    if (a & REIGND_A_CEDE)
        cede(s, s->cede_delay_ms, 0);
    if (a & REIGND_A_RETRY_LATER)
        cede(s, RETRY_DELAY_MS, 1);
    if (a & REIGND_A_JOIN)
        reignd__join(s);
    if (a & REIGND_A_FENCE)
        start_fence(s);
    if (a & REIGND_A_WRITE_BREADCRUMB)
        write_crumb(s);
    if (a & REIGND_A_BECOME_ACTIVE) {
        s->failovers++;
        s->service_active = 1;
        s->activated = 0;
        if (queue_hook(s, &s->cfg->become_active, "become_active", "active", on_active_done) < 0)
            reignd__post(s, REIGND_EV_ACTIVE_HOOK_FAILED);
    }
    if (a & REIGND_A_EXIT) {
        s->stopped = 1;
        reignd_fence_abandon(s->fence);
        s->fence = NULL;
        reignd__quiesce(s);
    }
    if (a & REIGND_A_TAKE_HEALTH) {
        /* Health news was noted, not acted on, in the state just left. */
        if (s->health_state == REIGND_HEALTH_HEALTHY)
            reignd__post(s, REIGND_EV_HEALTHY);
        else if (s->health_state != REIGND_HEALTH_INITIALIZING)
            reignd__post(s, REIGND_EV_UNHEALTHY);
    }
}
