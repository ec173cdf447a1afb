/*
 * ops.c - the operations reignd offers `reign ctl` and its peers (control.h,
 * peer.h), but the graceful failover (ops_failover.c): status, cede, the
 * election's pause (written here for every node, and watched here on each
 * node, which follows it), a peer's graceful fence; and the metrics.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breadcrumb.h"
#include "service_internal.h"

/* ---- the service named, its status -------------------------------------------- */

service *reignd__find(reignd_daemon *d, reignd_call *call, const char *name)
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
    reignd_step r = reignd_fsm_step(s->state, ev, reignd__healthy(s));
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
    /* The election's pause (the store's, for every node), not this node's state. */
    cJSON_AddBoolToObject(o, "paused", s->paused);
    if (s->paused)
        cJSON_AddStringToObject(o, "paused_by", s->paused_by);
    else
        cJSON_AddNullToObject(o, "paused_by");
    if (has_leader)
        cJSON_AddStringToObject(o, "leader", l.id);
    else
        cJSON_AddNullToObject(o, "leader");
    cJSON_AddNumberToObject(o, "term", leading ? (double)s->term : 0);
    cJSON_AddNumberToObject(o, "token", leading ? (double)s->token : 0);
    cJSON_AddNumberToObject(o, "failovers", (double)s->failovers);
    cJSON_AddBoolToObject(o, "activated", s->activated && reignd_state_is_active(s->state));
    cJSON_AddStringToObject(o, "election", s->cfg->election_name);
    cJSON_AddStringToObject(o, "instance", s->d->instance);
    if (s->conflict[0])
        cJSON_AddStringToObject(o, "conflict", s->conflict);
    else
        cJSON_AddNullToObject(o, "conflict");
    if (s->failover)
        cJSON_AddStringToObject(o, "failover_to", s->failover->to);
    else
        cJSON_AddNullToObject(o, "failover_to");
    cJSON_AddStringToObject(o, "reason", s->reason);
    return o;
}

cJSON *reignd__op_status(void *ctx)
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

/* Reads the service's election for an operator's call: REIGND_PENDING (cb
 * follows), or a negative code with the call's message set (cb never runs). */
int reignd__query_for_call(service *s, reignd_call *call, reign_election_query_cb *cb,
                           void *userdata)
{
    int err = reign_election_query(s->st->client, s->cfg->election_name, cb, userdata);
    if (err < 0) {
        reignd_call_fail(call, "cannot read election %s: %s", s->cfg->election_name,
                         reign_strerror(err));
        return err;
    }
    if (s->st->uv)
        reign_uv_update(s->st->uv);
    return REIGND_PENDING;
}

/* ---- cede ---------------------------------------------------------------------- */

/* Another daemon than this one stands in the view (by instance, not id). */
static int someone_else_stands(const service *s, const reign_election_view *view)
{
    for (size_t i = 0; i < view->n_candidates; i++) {
        payload p;
        reignd__payload_parse(view->candidates[i].data, view->candidates[i].data_len, &p);
        if (strcmp(p.instance, s->d->instance) != 0)
            return 1;
    }
    return 0;
}

typedef struct cede_req {
    reignd_daemon *d;
    size_t index;
    reignd_call *call;
    int delay_ms;
} cede_req;

/* Steps down after become-standby; the call is answered when that ran. */
static void cede_now(service *s, reignd_call *call, int delay_ms)
{
    s->cede_delay_ms = delay_ms;
    reignd__post(s, REIGND_EV_CEDE);
    if (s->standby_pending)
        reignd__add_waiter(s, call);
    else
        reignd_call_done(call, 0, NULL, reignd__state_result(s));
}

/*
 * A cede leaves the service with no active until another node takes over:
 * refused when no other daemon stands (it would be the cede delay without
 * any active; stop or pause instead).
 */
static void on_cede_view(reign_client *client, int err, const reign_election_view *view,
                         void *userdata)
{
    cede_req *c = userdata;
    service *s = &c->d->services[c->index];
    reignd_step r = reignd_fsm_step(s->state, REIGND_EV_CEDE, reignd__healthy(s));
    char msg[400];
    if (r.refused) {
        snprintf(msg, sizeof(msg), "%s (service %s is %s here)", r.reason, s->cfg->name,
                 reignd_state_name(s->state));
        reignd_call_done(c->call, REIGN_ESTATE, msg, NULL);
    } else if (err < 0) {
        snprintf(msg, sizeof(msg), "cannot read election %s: %s", s->cfg->election_name,
                 reign_strerror(err));
        reignd_call_done(c->call, err, msg, NULL);
    } else if (!someone_else_stands(s, view)) {
        snprintf(msg, sizeof(msg),
                 "no other node stands in election %s to take %s over: a cede would leave it "
                 "with no active node (start or resume another node first)",
                 s->cfg->election_name, s->cfg->name);
        slog(s, REIGN_LOG_WARN, "cede refused: %s", msg);
        reignd_call_done(c->call, REIGN_ESTATE, msg, NULL);
    } else {
        slog(s, REIGN_LOG_NOTICE, "cede for %g s, asked by %s", c->delay_ms / 1000.0,
             reignd_call_origin(c->call));
        cede_now(s, c->call, c->delay_ms);
    }
    free(c);
}

int reignd__op_cede(void *ctx, reignd_call *call, const char *name, double delay_s)
{
    reignd_daemon *d = ctx;
    service *s = reignd__find(d, call, name);
    if (!s)
        return REIGN_ENOENT;
    if (refused(s, call, REIGND_EV_CEDE))
        return REIGN_ESTATE;
    cede_req *c = malloc(sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    *c = (cede_req){d, (size_t)(s - d->services), call, (int)(delay_s * 1000)};
    int r = reignd__query_for_call(s, call, on_cede_view, c);
    if (r < 0)
        free(c);
    return r;
}

/* ---- pause: the election's, in the store --------------------------------------- */

typedef struct pause_req {
    reignd_daemon *d;
    size_t index;
    reignd_call *call;
    int pause;
} pause_req;

static void on_pause_done(reign_client *client, int err, const reign_value *value, void *userdata)
{
    pause_req *p = userdata;
    service *s = &p->d->services[p->index];
    char msg[400];
    if (!p->pause && err == REIGN_ENOENT) {
        snprintf(msg, sizeof(msg), "election %s of service %s is not paused", s->cfg->election_name,
                 s->cfg->name);
        reignd_call_done(p->call, REIGN_ESTATE, msg, NULL);
    } else if (err < 0) {
        snprintf(msg, sizeof(msg), "cannot %s election %s: %s", p->pause ? "pause" : "resume",
                 s->cfg->election_name, reign_strerror(err));
        reignd_call_done(p->call, err, msg, NULL);
    } else {
        slog(s, REIGN_LOG_NOTICE, "election %s %s for every node, asked by %s",
             s->cfg->election_name, p->pause ? "paused" : "resumed", reignd_call_origin(p->call));
        cJSON *r = reignd__state_result(s);
        if (r)
            cJSON_AddBoolToObject(r, "paused", p->pause);
        reignd_call_done(p->call, 0, NULL, r);
    }
    free(p);
}

/*
 * `reign ctl pause` / `resume` (Patroni's pause): the pause is the
 * election's, kept in the store, so every node obeys it, including one
 * started later or restarted; this node follows it through its watch like
 * the others.  Answered once the store has it.
 */
static int pause_resume(void *ctx, reignd_call *call, const char *name, int pause)
{
    reignd_daemon *d = ctx;
    service *s = reignd__find(d, call, name);
    if (!s)
        return REIGN_ENOENT;
    char key[REIGN_KEY_MAX + 1], data[REIGND_PAUSE_MAX];
    int n = 0, err = reignd_pause_key(s->cfg->election_name, key, sizeof(key));
    if (err == 0 && pause && (n = reignd_pause_encode(s->cfg->node_id, data, sizeof(data))) < 0)
        err = n;
    pause_req *p = err == 0 ? malloc(sizeof(*p)) : NULL;
    if (err == 0 && !p)
        err = REIGN_ENOMEM;
    if (err == 0) {
        *p = (pause_req){d, (size_t)(s - d->services), call, pause};
        err = pause ? reign_value_set(s->st->client, key, data, (size_t)n, REIGN_VALUE_ANY,
                                      on_pause_done, p)
                    : reign_value_delete(s->st->client, key, REIGN_VALUE_ANY, on_pause_done, p);
    }
    if (err < 0) {
        free(p);
        reignd_call_fail(call, "cannot %s election %s: %s", pause ? "pause" : "resume",
                         s->cfg->election_name, reign_strerror(err));
        return err;
    }
    if (s->st->uv)
        reign_uv_update(s->st->uv);
    return REIGND_PENDING;
}

int reignd__op_pause(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, 1);
}

int reignd__op_resume(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, 0);
}

/* Every node follows the pause through this watch, this one included (the
 * operation above only writes it): the state machine takes it as soon as
 * its state allows (follow_pause, service_core.c). */
void reignd__on_pause_watch(reign_value_watch *w, const reign_value_event *ev, void *userdata)
{
    service *s = userdata;
    int paused = s->paused;
    switch (ev->type) {
    case REIGN_VALUE_READY:
    case REIGN_VALUE_CREATED:
    case REIGN_VALUE_CHANGED:
        paused = ev->value != NULL;
        if (ev->value)
            reignd_pause_decode(ev->value->data, ev->value->data_len, s->paused_by,
                                sizeof(s->paused_by));
        break;
    case REIGN_VALUE_DELETED:
        paused = 0;
        break;
    default:
        slog(s, REIGN_LOG_WARN, "watching the election's pause: %s",
             ev->message ? ev->message : reign_strerror(ev->error));
        return;
    }
    if (paused != s->paused)
        slog(s, REIGN_LOG_NOTICE, "%s%s%s", paused ? "the election is paused (by " : "",
             paused ? s->paused_by : "",
             paused ? "): no automatic failover on any node until `reign ctl resume`"
                    : "the election is resumed");
    s->paused = paused;
    reignd__run_queue(s); /* follow_pause takes it when the state allows */
}

/* ---- a peer's graceful fence ----------------------------------------------- */

/* A graceful fence from the node that won the election: answered once the
 * service is standby here (at once if this run made it standby already). */
int reignd__op_standby(void *ctx, reignd_call *call, const char *name, const char *from,
                       uint64_t term)
{
    service *s = reignd__find(ctx, call, name);
    if (!s)
        return REIGN_ENOENT;
    slog(s, REIGN_LOG_NOTICE, "%s (%s, term %llu) asks this node to go standby", from,
         reignd_call_origin(call), (unsigned long long)term);
    reignd__post(s, REIGND_EV_FENCE_REQUEST);
    /* Starting: the start-up become-standby comes first, whatever the
     * service does; never "not active" from a daemon that cannot know. */
    if (s->standby_pending || s->state == REIGND_ST_STARTING)
        return reignd__add_waiter(s, call);
    if (s->service_active) {
        reignd_call_fail(call, "become-standby failed on this node: it must be fenced otherwise");
        return REIGN_ESTATE;
    }
    reignd_call_set_result(call, reignd__state_result(s));
    return 0;
}

/* ---- metrics (metrics.h) ---------------------------------------------------- */

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
            .paused = s->paused,
            .term = leading ? s->term : 0,
            .token = leading ? s->token : 0,
            .failovers = s->failovers,
            .fence_attempts = s->fence_attempts,
            .fence_successes = s->fence_ok,
            /* Per method, as the metric counts them: every method tried failed
             * except the last of each successful fence. */
            .fence_failures = s->fence_attempts - s->fence_ok,
            .observed = s->observing,
            .store_connected = s->st->connected,
        };
        memcpy(m.changes, s->changes, sizeof(m.changes));
        reignd__leaderless(s, &m.leaderless_s, &m.leaderless_total_s);
        reignd_metrics_add(sink, &m);
    }
}
