/*
 * service_core.c - the bottom of reignd's service (service_internal.h): each
 * service's event queue in front of fsm.c's table, stepped one event at a
 * time; the calls that wait for become-standby; timers; and the end of the
 * daemon, which waits for every service to leave and every session to close.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service_internal.h"

/* How long a shutdown may wait for hooks and sessions before giving up. */
#define SHUTDOWN_GRACE_MS 60000

/* ---- the event queue and the state machine ------------------------------- */

int reignd__healthy(const service *s)
{
    return s->health_state == REIGND_HEALTH_HEALTHY;
}

/* One step of the state machine, logged; actions run after the state moved. */
static void step(service *s, reignd_event ev)
{
    reignd_step r = reignd_fsm_step(s->state, ev, reignd__healthy(s));
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
    /* The status keeps the reason of the last decision, not health news only noted since
     * (the health column shows that). */
    if (lvl == REIGN_LOG_NOTICE || (ev != REIGND_EV_HEALTHY && ev != REIGND_EV_UNHEALTHY))
        snprintf(s->reason, sizeof(s->reason), "%s", r.reason);
    s->state = r.to;
    s->d->up.run_actions(s, r.actions);
}

static int enqueue(service *s, reignd_event ev)
{
    if (s->q_len == QUEUE_MAX) {
        slog(s, REIGN_LOG_ERROR, "event queue full, dropping %s", reignd_event_name(ev));
        reignd__fatal(s->d, "event queue overflow");
        return 0;
    }
    s->queue[(s->q_head + s->q_len++) % QUEUE_MAX] = ev;
    return 1;
}

/*
 * The pause is the store's (breadcrumb.h), the state machine's PAUSED
 * states follow it: when they differ, PAUSE or RESUME is queued as soon as
 * the state takes it (a node fencing, claiming, ceding or starting finishes
 * that first; the step is then taken in the state it reached).
 */
static int follow_pause(service *s)
{
    if (s->stopped || s->state == REIGND_ST_STARTING)
        return 0;
    int want = s->paused, have = reignd_state_is_paused(s->state);
    if (want == have)
        return 0;
    reignd_event ev = want ? REIGND_EV_PAUSE : REIGND_EV_RESUME;
    reignd_step r = reignd_fsm_step(s->state, ev, reignd__healthy(s));
    if (r.refused || r.moot || reignd_state_is_paused(r.to) != want)
        return 0; /* later: the next step comes back here */
    return enqueue(s, ev);
}

/*
 * Steps until the queue is empty, unless a step of this service is running
 * (an action raised the event: a callback that fired at once).  So a
 * service's events are taken strictly one after another.
 */
void reignd__run_queue(service *s)
{
    if (s->stepping)
        return;
    s->stepping = 1;
    while (s->q_len || follow_pause(s)) {
        reignd_event next = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % QUEUE_MAX;
        s->q_len--;
        step(s, next);
    }
    s->stepping = 0;
    reignd__maybe_finish(s->d);
}

/* Queues an event and steps (see reignd__run_queue). */
void reignd__post(service *s, reignd_event ev)
{
    if (enqueue(s, ev))
        reignd__run_queue(s);
}

/* ---- waiters: calls answered once the service is standby ----------------- */

int reignd__add_waiter(service *s, reignd_call *call)
{
    reignd_call **w = realloc(s->waiters, (s->n_waiters + 1) * sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    s->waiters = w;
    s->waiters[s->n_waiters++] = call;
    return REIGND_PENDING;
}

cJSON *reignd__state_result(const service *s)
{
    cJSON *o = cJSON_CreateObject();
    if (o) {
        cJSON_AddStringToObject(o, "service", s->cfg->name);
        cJSON_AddStringToObject(o, "node", s->cfg->node_id);
        cJSON_AddStringToObject(o, "state", reignd_state_name(s->state));
    }
    return o;
}

void reignd__answer_waiters(service *s)
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
            reignd_call_done(w[i], 0, NULL, reignd__state_result(s));
    }
    free(w);
}

/* ---- timers (allocated: a close completes on a later loop turn) ------------- */

static void on_timer_closed(uv_handle_t *h)
{
    free(h);
}

uv_timer_t *reignd__timer_start(service *s, uv_timer_cb cb, uint64_t ms, uint64_t repeat)
{
    uv_timer_t *t = malloc(sizeof(*t));
    if (!t || uv_timer_init(s->d->o.loop, t) < 0) {
        free(t);
        return NULL;
    }
    t->data = s;
    uv_timer_start(t, cb, ms, repeat);
    return t;
}

void reignd__timer_stop(uv_timer_t **t)
{
    if (*t) {
        uv_close((uv_handle_t *)*t, on_timer_closed);
        *t = NULL;
    }
}

/* ---- life cycle ------------------------------------------------------------- */

void reignd__quiesce(service *s)
{
    reignd__timer_stop(&s->cede_timer);
    reignd__timer_stop(&s->id_timer);
    s->pause_watch = reign_value_watch_free(s->pause_watch);
    if (s->failover)
        s->d->up.end_failover(s->failover, REIGN_ECANCELED, "the daemon is stopping");
}

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
        reignd__quiesce(s);
    }
    for (size_t i = 0; i < d->n_stores; i++)
        if (d->stores[i].uv) {
            reign_uv_detach(d->stores[i].uv);
            d->stores[i].uv = NULL;
        }
    if (d->o.on_exit)
        d->o.on_exit(d, status, d->o.userdata);
}

/* A shutdown ends once every service left (its election node deleted),
 * every hook ran, and every breadcrumb delete and id look was answered
 * (closing first would cancel the delete, and the next active would fence
 * us); then the sessions are closed, then done. */
void reignd__maybe_finish(reignd_daemon *d)
{
    if (!d->shutting_down || d->exited)
        return;
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        if (!s->stopped || s->deletes_pending || s->leaving || s->id_check_inflight ||
            (s->hooks && reignd_hooks_pending(s->hooks)))
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

void reignd__fatal(reignd_daemon *d, const char *what)
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
        reignd__post(&d->services[i], REIGND_EV_SHUTDOWN);
    reignd__maybe_finish(d);
}
