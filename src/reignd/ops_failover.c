/*
 * ops_failover.c - `reign ctl failover S --to NODE` (ZKFC's
 * gracefulFailover): checks that NODE is a healthy standby, hands over (the
 * old active steps down cleanly if NODE is next in line, else NODE is
 * designated and fences it gracefully), then follows NODE until its service
 * is active: the call is answered then, or with the reason it failed
 * (unless --no-wait: answered once handed over).  The old active, ceded
 * meanwhile, stands again as soon as NODE is active, or when the failover
 * ends otherwise.  The top of the operations (service_internal.h): the old
 * active's cede is failover.c's CEDE action, the takeover NODE's own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service_internal.h"

/* How often the old active of a failover asks the target how far it got. */
#define FAILOVER_POLL_MS 200
/* Margin on a failover's wait, beyond the timeouts that bound it (session,
 * fence methods, become-standby, become-active). */
#define FAILOVER_MARGIN_MS 5000

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
void reignd__failover_end(failover_req *f, int err, const char *msg)
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
        failover_free(f); /* ended meanwhile (reignd__failover_end) */
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
        reignd__failover_end(f, 0, why);
    } else if (took_over && strcmp(state, "fencing") != 0 && strcmp(state, "claiming") != 0 &&
               strcmp(state, "active") != 0) {
        snprintf(why, sizeof(why), "%s did not become active: %s", f->to, f->last);
        reignd__failover_end(f, REIGN_ESTATE, why);
    } else if (leader[0] && strcmp(leader, f->to) != 0 && strcmp(leader, s->cfg->node_id) != 0) {
        snprintf(why, sizeof(why), "%s took over instead of %s", leader, f->to);
        reignd__failover_end(f, REIGN_ESTATE, why);
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
        reignd__failover_end(f, 0, why);
    } else if (strcmp(view->leader.id, f->d->services[f->index].cfg->node_id) != 0) {
        snprintf(why, sizeof(why), "%s took over instead of %s", view->leader.id, f->to);
        reignd__failover_end(f, REIGN_ESTATE, why);
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
        reignd__failover_end(f, REIGN_ETIMEDOUT, why);
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
        reignd__failover_end(f, REIGN_ENOMEM, "cannot follow the failover");
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
    /* Out of the election until `to` is active (reignd__failover_end), at most the bound. */
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
     * whoever takes it first, so there the target is next only when it stands alone with us;
     * else it is designated (failover_go), on every store. */
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

int reignd__op_failover(void *ctx, reignd_call *call, const char *name, const char *to, int wait)
{
    reignd_daemon *d = ctx;
    service *s = reignd__find(d, call, name);
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
    int r = reignd__query_for_call(s, call, on_failover_view, f);
    if (r < 0)
        free(f);
    return r;
}
