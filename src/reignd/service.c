/*
 * service.c - reignd's wiring (see service.h), and its start-up: the daemon
 * made from its configuration, the stores connected and checked before the
 * loop runs, the health and connection news turned into events, the start
 * of every service.  What runs after lies in the layers below
 * (service_internal.h), which this file ties together.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "breadcrumb.h"
#include "service_internal.h"

/* How often a service in CONFLICT looks whether the other live daemon with
 * its node id is gone. */
#define ID_CHECK_MS 2000

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
    /* A store closed by our own shutdown is the clean stop going as planned, not news. */
    int expected = state == REIGN_CONN_CONNECTED || state == REIGN_CONN_RECONNECTED ||
                   (state == REIGN_CONN_CLOSED && d->shutting_down);
    dlog(d, expected ? REIGN_LOG_INFO : REIGN_LOG_WARN, "store %s: %s", uri,
         reign_conn_state_name(state));
    st->connected = state == REIGN_CONN_CONNECTED || state == REIGN_CONN_RECONNECTED;
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
    d->ops = (reignd_ops){
        .ctx = d,
        .status = reignd__op_status,
        .cede = reignd__op_cede,
        .failover = reignd__op_failover,
        .pause = reignd__op_pause,
        .resume = reignd__op_resume,
        .standby = reignd__op_standby,
        .view = reignd__op_view,
    };
    d->up = (service_upcalls){
        .run_actions = reignd__run_actions,
        .end_failover = reignd__failover_end,
    };
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
        st->connected = 1;
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
            e = reign_value_watch_start(&s->pause_watch, s->st->client, key, reignd__on_pause_watch,
                                        s);
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
