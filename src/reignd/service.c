/*
 * service.c - reignd's wiring (see service.h), and its start-up: the daemon
 * made from its configuration, the stores connected and checked before the
 * loop runs, the health and connection news turned into events, the start
 * of every service; and the operations offered to `reign ctl` and to other
 * reignds.  What runs after lies in the layers below (service_internal.h),
 * which this file ties together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breadcrumb.h"
#include "service_internal.h"

/* How often a service in CONFLICT looks whether the other live daemon with
 * its node id is gone. */
#define ID_CHECK_MS 2000
/* How often the old active of a failover asks the target how far it got. */
#define FAILOVER_POLL_MS 200
/* Margin on a failover's wait, beyond the timeouts that bound it (session,
 * fence methods, become-standby, become-active). */
#define FAILOVER_MARGIN_MS 5000

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
        reignd__post(s, REIGND_EV_HEALTHY);
    else if (new_state != REIGND_HEALTH_INITIALIZING)
        reignd__post(s, REIGND_EV_UNHEALTHY);
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
    reignd_event ev;
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
        /* Closed while prepare() waits for it (a SQL store refusing the password at once):
         * prepare() says why and the daemon exits with the matching status; nothing runs yet. */
        if (!d->started)
            return;
        if (!d->shutting_down)
            reignd__fatal(d, "a store closed (see its error above)");
        reignd__maybe_finish(d);
        return;
    default:
        return;
    }
    for (size_t i = 0; i < d->n_services; i++)
        if (d->services[i].st == st)
            reignd__post(&d->services[i], ev);
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

/* Reads the service's election for an operator's call: REIGND_PENDING (cb
 * follows), or a negative code with the call's message set (cb never runs). */
static int query_for_call(service *s, reignd_call *call, reign_election_query_cb *cb,
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

static int op_cede(void *ctx, reignd_call *call, const char *name, double delay_s)
{
    reignd_daemon *d = ctx;
    service *s = find(d, call, name);
    if (!s)
        return REIGN_ENOENT;
    if (refused(s, call, REIGND_EV_CEDE))
        return REIGN_ESTATE;
    cede_req *c = malloc(sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    *c = (cede_req){d, (size_t)(s - d->services), call, (int)(delay_s * 1000)};
    int r = query_for_call(s, call, on_cede_view, c);
    if (r < 0)
        free(c);
    return r;
}

/* ---- the election's pause ------------------------------------------------------ */

static void on_pause_watch(reign_value_watch *w, const reign_value_event *ev, void *userdata)
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
    service *s = find(d, call, name);
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

static int op_pause(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, 1);
}

static int op_resume(void *ctx, reignd_call *call, const char *name)
{
    return pause_resume(ctx, call, name, 0);
}

/* A graceful fence from the node that won the election: answered once the
 * service is standby here (at once if this run made it standby already). */
static int op_standby(void *ctx, reignd_call *call, const char *name, const char *from,
                      uint64_t term)
{
    service *s = find(ctx, call, name);
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
        };
        reignd_metrics_add(sink, &m);
    }
}

/* ---- graceful failover --------------------------------------------------------- */

/*
 * `reign ctl failover S --to NODE` (ZKFC's gracefulFailover): checks that
 * NODE is a healthy standby, hands over (the old active steps down cleanly
 * if NODE is next in line, else NODE is designated and fences it
 * gracefully), then follows NODE until its service is active: the call is
 * answered then, or with the reason it failed (unless --no-wait: answered
 * once handed over).  The old active, ceded meanwhile, stands again as soon
 * as NODE is active, or when the failover ends otherwise.
 */

static int64_t mono_ns(void)
{
    return (int64_t)uv_hrtime();
}

/* How long a failover may take: the target's session may have to end for it
 * to lead, it fences, we run become-standby, it runs become-active (our
 * configuration's timeouts: the nodes of a service usually share them). */
static int failover_bound_ms(const service *s)
{
    uint64_t ms = s->cfg->session_timeout_ms + s->cfg->become_standby.timeout_ms +
                  s->cfg->become_active.timeout_ms + FAILOVER_MARGIN_MS;
    for (size_t i = 0; i < s->cfg->n_fence; i++)
        ms += s->cfg->fence[i].timeout_ms;
    return ms > 24 * 3600 * 1000ull ? 24 * 3600 * 1000 : (int)ms;
}

static void failover_free(failover_req *f)
{
    service *s = &f->d->services[f->index];
    if (s->failover == f)
        s->failover = NULL;
    reignd__timer_stop(&f->poll);
    free(f);
}

/* Ends a failover: answers the call if still due, lets a ceded old active stand again. */
static void failover_end(failover_req *f, int err, const char *msg)
{
    service *s = &f->d->services[f->index];
    if (err < 0)
        slog(s, REIGN_LOG_WARN, "failover to %s failed: %s", f->to, msg);
    else
        slog(s, REIGN_LOG_NOTICE, "failover to %s done: %s", f->to, msg);
    if (f->call)
        reignd_call_done(f->call, err, err < 0 ? msg : NULL,
                         err < 0 ? NULL : reignd__state_result(s));
    f->call = NULL;
    f->following = 0;
    reignd__timer_stop(&f->poll);
    if (s->failover == f)
        s->failover = NULL;
    if (f->inflight) {
        reignd_peer_request *q = f->inflight;
        f->inflight = NULL;
        reignd_peer_cancel(q); /* its callback runs now and frees f */
    } else if (!f->querying) {
        failover_free(f);
    } /* else the query's callback frees f */
    if (s->state == REIGND_ST_CEDED)
        reignd__end_cede(s);
}

static void failover_refuse(failover_req *f, int err, const char *msg)
{
    service *s = &f->d->services[f->index];
    slog(s, REIGN_LOG_WARN, "failover to %s refused: %s", f->to, msg);
    reignd_call_done(f->call, err, msg, NULL);
    free(f);
}

static const char *json_str(const cJSON *o, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* What `to`'s reignd says of its service, while we wait for it to be active. */
static void on_poll_state(int err, const char *msg, const cJSON *result, void *userdata)
{
    failover_req *f = userdata;
    f->inflight = NULL;
    if (!f->following) {
        failover_free(f); /* ended meanwhile (failover_end) */
        return;
    }
    if (err < 0) {
        snprintf(f->last, sizeof(f->last), "%s", msg);
        return; /* asked again at the next tick, until the deadline */
    }
    const char *state = json_str(result, "state", "unknown");
    const char *leader = json_str(result, "leader", "");
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(result, "failovers");
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(result, "activated");
    double failovers = cJSON_IsNumber(fo) ? fo->valuedouble : -1;
    /* Its count of takeovers tells a standby that has not taken over yet from
     * one whose takeover failed (unknown when its first status lacked it). */
    int took_over =
        f->base_failovers >= 0 ? failovers > f->base_failovers : strcmp(state, "active") == 0;
    snprintf(f->last, sizeof(f->last), "%s is %s (%s)", f->to, state,
             json_str(result, "reason", ""));
    service *s = &f->d->services[f->index];
    char why[1024];
    if (took_over && strcmp(state, "active") == 0 && (!act || cJSON_IsTrue(act))) {
        snprintf(why, sizeof(why), "%s is active", f->to);
        failover_end(f, 0, why);
    } else if (took_over && strcmp(state, "fencing") != 0 && strcmp(state, "claiming") != 0 &&
               strcmp(state, "active") != 0) {
        snprintf(why, sizeof(why), "%s did not become active: %s", f->to, f->last);
        failover_end(f, REIGN_ESTATE, why);
    } else if (leader[0] && strcmp(leader, f->to) != 0 && strcmp(leader, s->cfg->node_id) != 0) {
        snprintf(why, sizeof(why), "%s took over instead of %s", leader, f->to);
        failover_end(f, REIGN_ESTATE, why);
    }
}

/* Without a peer endpoint, leading is all we can see of `to`. */
static void on_poll_view(reign_client *client, int err, const reign_election_view *view,
                         void *userdata)
{
    failover_req *f = userdata;
    f->querying = 0;
    if (!f->following) {
        failover_free(f);
        return;
    }
    if (err < 0 || !view->has_leader)
        return;
    char why[1024];
    if (strcmp(view->leader.id, f->to) == 0) {
        snprintf(why, sizeof(why),
                 "%s leads (without a peer endpoint its become-active cannot be seen)", f->to);
        failover_end(f, 0, why);
    } else if (strcmp(view->leader.id, f->d->services[f->index].cfg->node_id) != 0) {
        snprintf(why, sizeof(why), "%s took over instead of %s", view->leader.id, f->to);
        failover_end(f, REIGN_ESTATE, why);
    }
}

static void on_failover_poll(uv_timer_t *t)
{
    failover_req *f = t->data;
    service *s = &f->d->services[f->index];
    if (f->inflight || f->querying)
        return;
    if (mono_ns() > f->deadline_ns) {
        char why[1024];
        snprintf(why, sizeof(why), "%s did not become active within %.0f s%s%s", f->to,
                 failover_bound_ms(s) / 1000.0, f->last[0] ? ": " : "", f->last);
        failover_end(f, REIGN_ETIMEDOUT, why);
        return;
    }
    int err;
    if (f->peer[0] && f->d->o.secret) {
        reignd_peer_target tgt = {f->peer, f->d->o.secret, 2000};
        err = reignd_peer_state(f->d->o.loop, &tgt, s->cfg->name, on_poll_state, f, &f->inflight);
        if (err < 0)
            f->inflight = NULL;
    } else {
        err = reign_election_query(s->st->client, s->cfg->election_name, on_poll_view, f);
        if (err == 0) {
            f->querying = 1;
            if (s->st->uv)
                reign_uv_update(s->st->uv);
        }
    }
    if (err < 0)
        snprintf(f->last, sizeof(f->last), "cannot ask %s: %s", f->to, reign_strerror(err));
}

/* Handed over: answer now (--no-wait) or once `to` is active; follow it either way. */
static void failover_follow(failover_req *f)
{
    service *s = &f->d->services[f->index];
    if (!f->wait && f->call) {
        reignd_call_done(f->call, 0, NULL, reignd__state_result(s));
        f->call = NULL;
    }
    f->following = 1;
    f->deadline_ns = mono_ns() + (int64_t)failover_bound_ms(s) * 1000000;
    f->poll = reignd__timer_start(s, on_failover_poll, FAILOVER_POLL_MS, FAILOVER_POLL_MS);
    if (!f->poll) {
        failover_end(f, REIGN_ENOMEM, "cannot follow the failover");
        return;
    }
    f->poll->data = f;
}

static void on_designated(reign_client *client, int err, void *userdata)
{
    failover_req *f = userdata;
    service *s = &f->d->services[f->index];
    if (err < 0) {
        char msg[600];
        if (err == REIGN_ENOTSUP)
            snprintf(msg, sizeof(msg),
                     "cannot hand over to %s on a SQL store while other standbys stand: the lease "
                     "goes to whichever takes it first (stop the other standbys' reignd first)",
                     f->to);
        else
            snprintf(msg, sizeof(msg), "cannot designate %s: %s", f->to, reign_strerror(err));
        if (s->failover == f)
            s->failover = NULL;
        failover_refuse(f, err, msg);
        return;
    }
    failover_follow(f);
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
    if (s->state != REIGND_ST_ACTIVE || s->failover) {
        char msg[200];
        snprintf(msg, sizeof(msg), "service %s is no longer active here (%s)", s->cfg->name,
                 s->failover ? "another failover is under way" : reignd_state_name(s->state));
        failover_refuse(f, REIGN_ESTATE, msg);
        return;
    }
    slog(s, REIGN_LOG_NOTICE, "failover to %s, asked by %s%s", f->to, reignd_call_origin(f->call),
         f->wait ? "" : " (no wait)");
    s->failover = f;
    if (!f->next_in_line) {
        int err =
            reign_election_designate(s->st->client, s->cfg->election_name, f->to, on_designated, f);
        if (err < 0)
            on_designated(s->st->client, err, f);
        else if (s->st->uv)
            reign_uv_update(s->st->uv);
        return;
    }
    /* Out of the election until `to` is active (failover_end), at most the bound. */
    s->cede_delay_ms = failover_bound_ms(s);
    reignd__post(s, REIGND_EV_CEDE);
    if (!f->wait && f->call) { /* answered once become-standby ran, as before --no-wait */
        if (s->standby_pending)
            reignd__add_waiter(s, f->call);
        else
            reignd_call_done(f->call, 0, NULL, reignd__state_result(s));
        f->call = NULL;
    }
    failover_follow(f);
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
    const char *state = json_str(result, "state", "unknown");
    const char *health = json_str(result, "health", "unknown");
    if (strcmp(state, "standby") != 0 || strcmp(health, "healthy") != 0) {
        snprintf(why, sizeof(why), "%s is not a healthy standby: it reports state %s, health %s",
                 f->to, state, health);
        failover_refuse(f, REIGN_ESTATE, why);
        return;
    }
    const cJSON *fo = cJSON_GetObjectItemCaseSensitive(result, "failovers");
    f->base_failovers = cJSON_IsNumber(fo) ? fo->valuedouble : -1;
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
                 "(not running, not healthy, paused, ceded or in conflict)",
                 f->to, s->cfg->name);
        failover_refuse(f, REIGN_ESTATE, msg);
        return;
    }
    /* ZooKeeper's candidates queue: the one after the leader takes over.  A SQL lease goes to
     * whoever takes it first, so there the target is next only when it stands alone with us
     * (else it is designated, which those stores refuse: failover_go). */
    f->next_in_line = pos == 1 && strcmp(view->candidates[0].id, s->cfg->node_id) == 0 &&
                      (reignd__store_queues(s->st) || view->n_candidates == 2);
    payload p;
    reignd__payload_parse(target->data, target->data_len, &p);
    snprintf(f->peer, sizeof(f->peer), "%s", p.peer_address);
    if (!f->peer[0] || !f->d->o.secret) {
        failover_go(f); /* standing is all we can know */
        return;
    }
    reignd_peer_target t = {f->peer, f->d->o.secret, 5000};
    err = reignd_peer_state(f->d->o.loop, &t, s->cfg->name, on_target_state, f, NULL);
    if (err < 0) {
        snprintf(msg, sizeof(msg), "cannot ask %s at %s: %s", f->to, f->peer, reign_strerror(err));
        failover_refuse(f, err, msg);
    }
}

static int op_failover(void *ctx, reignd_call *call, const char *name, const char *to, int wait)
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
    if (s->failover) {
        reignd_call_fail(call, "a failover of %s to %s is under way", s->cfg->name,
                         s->failover->to);
        return REIGN_ESTATE;
    }
    failover_req *f = calloc(1, sizeof(*f));
    if (!f)
        return REIGN_ENOMEM;
    f->d = d;
    f->index = (size_t)(s - d->services);
    f->call = call;
    f->wait = wait;
    f->base_failovers = -1;
    snprintf(f->to, sizeof(f->to), "%s", to);
    int r = query_for_call(s, call, on_failover_view, f);
    if (r < 0)
        free(f);
    return r;
}

const reignd_ops *reignd_daemon_ops(reignd_daemon *d)
{
    return &d->ops;
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
    d->up = (service_upcalls){reignd__run_actions, failover_end};
    int ie = reignd_instance_new(d->instance, sizeof(d->instance));
    if (ie < 0) {
        snprintf(err, errlen, "cannot draw an instance id: %s", reign_strerror(ie));
        reignd_daemon_free(d);
        return ie;
    }
    for (size_t i = 0; i < cfg->n_services; i++) {
        const reignd_service_config *sc = &cfg->services[i];
        service *s = &d->services[d->n_services++];
        s->d = d;
        s->cfg = sc;
        s->state = REIGND_ST_STARTING;
        s->crumb_version = REIGN_VALUE_ABSENT;
        /* A daemon that starts knows nothing of its service: possibly active
         * until a become-standby of this run succeeds. */
        s->service_active = 1;
        snprintf(s->reason, sizeof(s->reason), "starting");
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

static int read_pauses(reignd_daemon *d, char *err, size_t errlen);

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
    if (!check_layout)
        return 0;
    int e = reignd_daemon_format(d, -1, err, errlen);
    return e < 0 ? e : read_pauses(d, err, errlen);
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

/* Reads each election's pause before the loop runs: a daemon started while
 * its election is paused must not run its start-up become-standby. */
typedef struct sync_get {
    reign_client *client;
    int done;
    int err;
    int present;
    char by[REIGN_ID_MAX + 1];
} sync_get;

static void on_pause_read(reign_client *client, int err, const reign_value *value, void *userdata)
{
    sync_get *g = userdata;
    g->done = 1;
    g->err = err == REIGN_ENOENT ? 0 : err;
    g->present = err == 0;
    if (err == 0)
        reignd_pause_decode(value->data, value->data_len, g->by, sizeof(g->by));
    reign_client_stop(client);
}

static int read_pauses(reignd_daemon *d, char *err, size_t errlen)
{
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        char key[REIGN_KEY_MAX + 1];
        sync_get g = {s->st->client, 0, 0, 0, ""};
        int e = reignd_pause_key(s->cfg->election_name, key, sizeof(key));
        if (e == 0)
            e = reign_value_get(g.client, key, on_pause_read, &g);
        while (e == 0 && !g.done)
            if (reign_client_run(g.client) == REIGN_ECLOSED && !g.done)
                e = REIGN_ECLOSED;
        if (e == 0)
            e = g.err;
        if (e == REIGN_EFOREIGN) {
            dlog(d, REIGN_LOG_WARN,
                 "service %s: the pause value of election %s holds data reignd did not write; "
                 "taken as not paused",
                 s->cfg->name, s->cfg->election_name);
            e = 0;
        }
        if (e < 0) {
            snprintf(err, errlen, "service %s: cannot read whether election %s is paused: %s",
                     s->cfg->name, s->cfg->election_name, reign_strerror(e));
            return e;
        }
        s->paused = g.present;
        snprintf(s->paused_by, sizeof(s->paused_by), "%s", g.by);
    }
    return 0;
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
    d->started = 1;
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
        char key[REIGN_KEY_MAX + 1];
        if ((e = reignd_pause_key(s->cfg->election_name, key, sizeof(key))) == 0)
            e = reign_value_watch_start(&s->pause_watch, s->st->client, key, on_pause_watch, s);
        if (e < 0) {
            s->pause_watch = NULL;
            snprintf(err, errlen, "service %s: cannot watch the election's pause: %s", s->cfg->name,
                     reign_strerror(e));
            return e;
        }
        s->id_timer = reignd__timer_start(s, reignd__on_id_timer, ID_CHECK_MS, ID_CHECK_MS);
        if (!s->id_timer) {
            snprintf(err, errlen, "service %s: cannot start a timer", s->cfg->name);
            return REIGN_ENOMEM;
        }
        slog(s, REIGN_LOG_INFO, "daemon instance %s%s", s->d->instance,
             s->paused ? "; the election is paused" : "");
        reignd__post(s, s->paused ? REIGND_EV_START_PAUSED : REIGND_EV_START);
    }
    for (size_t i = 0; i < d->n_stores; i++)
        if (d->stores[i].uv)
            reign_uv_update(d->stores[i].uv);
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
        s->pause_watch = reign_value_watch_free(s->pause_watch);
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
