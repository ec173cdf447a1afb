/*
 * ops_view.c - the status page's data (reignd_ops.view, control.h): the
 * status snapshot of every service, and for each what its store says of its
 * election, read now: the leader and the candidates (reign_election_query(),
 * as `reign status` has them) and the last leaderships
 * (reign_election_history(), as `reign history` has them).  Two reads per
 * service, all sent at once; the call is answered when every one returned
 * (each read ends: with its answer, an error, or REIGN_ECLOSED when its
 * client closes).  Read-only: nothing here writes to a store or steps a
 * service.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service_internal.h"

/* The leaderships a view keeps, the latest (the page draws these). */
#define VIEW_TERMS_MAX 30

typedef struct gather {
    reignd_daemon *d;
    reignd_call *call;
    cJSON *root;   /* the answer being filled: status, plus "store" and "history" */
    int pending;   /* reads sent and not returned */
    int launching; /* still sending: an early answer must not end the gather */
} gather;

typedef struct read_req {
    gather *g;
    size_t index; /* the service */
} read_req;

static cJSON *entry_of(gather *g, size_t index)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g->root, "services"), (int)index);
}

static void add_ms(cJSON *o, const char *key, int64_t ms)
{
    if (ms)
        cJSON_AddNumberToObject(o, key, (double)ms);
    else
        cJSON_AddNullToObject(o, key);
}

/* The last read returned: answer (unless still sending) and free. */
static void read_done(gather *g)
{
    if (--g->pending > 0 || g->launching)
        return;
    reignd_call_done(g->call, 0, NULL, g->root);
    free(g);
}

static void set_error(cJSON *entry, const char *key, int err, const char *what)
{
    cJSON *o = cJSON_AddObjectToObject(entry, key);
    if (!o)
        return;
    char msg[200];
    if (err == REIGN_ENOTSUP)
        snprintf(msg, sizeof(msg), "no %s on this store", what);
    else if (err == REIGN_ENOENT)
        snprintf(msg, sizeof(msg), "the election does not exist in the store");
    else
        snprintf(msg, sizeof(msg), "cannot read the %s: %s", what, reign_strerror(err));
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddBoolToObject(o, "unsupported", err == REIGN_ENOTSUP);
}

static void on_view(reign_client *client, int err, const reign_election_view *v, void *userdata)
{
    read_req *r = userdata;
    gather *g = r->g;
    cJSON *entry = entry_of(g, r->index), *o;
    (void)client;
    if (err < 0 || !v) {
        set_error(entry, "store", err < 0 ? err : REIGN_ENOMEM, "election");
    } else if ((o = cJSON_AddObjectToObject(entry, "store"))) {
        if (v->has_leader) {
            cJSON *l = cJSON_AddObjectToObject(o, "leader");
            cJSON_AddStringToObject(l, "id", v->leader.id ? v->leader.id : "");
            cJSON_AddNumberToObject(l, "term", (double)v->leader.term);
            cJSON_AddNumberToObject(l, "token", (double)v->leader.token);
            add_ms(l, "since_ms", v->leader.since_ms);
        } else {
            cJSON_AddNullToObject(o, "leader");
        }
        cJSON *arr = cJSON_AddArrayToObject(o, "candidates");
        for (size_t i = 0; arr && i < v->n_candidates; i++) {
            const reign_candidate *k = &v->candidates[i];
            cJSON *c = cJSON_CreateObject();
            if (!c)
                break;
            cJSON_AddItemToArray(arr, c);
            payload p;
            reignd__payload_parse(k->data, k->data_len, &p);
            cJSON_AddStringToObject(c, "id", k->id ? k->id : "");
            cJSON_AddNumberToObject(c, "priority", k->priority);
            add_ms(c, "joined_ms", k->joined_ms);
            cJSON_AddStringToObject(c, "service_address", p.service_address);
            cJSON_AddStringToObject(c, "peer_address", p.peer_address);
        }
        cJSON_AddNumberToObject(o, "takeover_ms", (double)v->takeover_ms);
    }
    free(r);
    read_done(g);
}

static void on_history(reign_client *client, int err, const reign_term *terms, size_t n,
                       void *userdata)
{
    read_req *r = userdata;
    gather *g = r->g;
    cJSON *entry = entry_of(g, r->index), *o;
    (void)client;
    if (err < 0) {
        set_error(entry, "history", err, "history");
    } else if ((o = cJSON_AddObjectToObject(entry, "history"))) {
        cJSON_AddNumberToObject(o, "total", (double)n);
        cJSON *arr = cJSON_AddArrayToObject(o, "terms");
        for (size_t i = n > VIEW_TERMS_MAX ? n - VIEW_TERMS_MAX : 0; arr && i < n; i++) {
            const reign_term *t = &terms[i];
            cJSON *j = cJSON_CreateObject();
            if (!j)
                break;
            cJSON_AddItemToArray(arr, j);
            cJSON_AddNumberToObject(j, "term", (double)t->term);
            cJSON_AddNumberToObject(j, "token", (double)t->token);
            cJSON_AddStringToObject(j, "id", t->id ? t->id : "");
            add_ms(j, "started_ms", t->started_ms);
            add_ms(j, "ended_ms", t->ended_ms);
            cJSON_AddBoolToObject(j, "ended_estimated", t->ended_estimated != 0);
            cJSON_AddStringToObject(j, "end", reign_term_end_name(t->end));
        }
    }
    free(r);
    read_done(g);
}

/* What the service checks, without a command's text (it may hold a secret; the page is as
 * open as the metrics) nor a URL's user part. */
static void add_check(cJSON *entry, const reignd_service_config *cfg)
{
    cJSON *c = cJSON_AddObjectToObject(entry, "check");
    if (!c)
        return;
    const char *target = cfg->check_target;
    int shown = cfg->check_type == REIGND_CHECK_TCP ||
                (cfg->check_type == REIGND_CHECK_HTTP && target && !strchr(target, '@'));
    cJSON_AddStringToObject(c, "type", reignd_check_type_name(cfg->check_type));
    if (shown && target)
        cJSON_AddStringToObject(c, "target", target);
    else
        cJSON_AddNullToObject(c, "target");
    cJSON_AddNumberToObject(c, "interval_ms", (double)cfg->check_interval_ms);
    cJSON_AddNumberToObject(c, "rise", cfg->check_rise);
    cJSON_AddNumberToObject(c, "fall", cfg->check_fall);
}

/* Sends one read; a failure to send is the entry's error at once. */
static void launch(gather *g, size_t index, int history)
{
    service *s = &g->d->services[index];
    read_req *r = malloc(sizeof(*r));
    int err = !s->st->client || s->st->closed ? REIGN_ECLOSED : REIGN_ENOMEM;
    if (r && err == REIGN_ENOMEM) {
        *r = (read_req){g, index};
        g->pending++;
        err = history
                  ? reign_election_history(s->st->client, s->cfg->election_name, 0, on_history, r)
                  : reign_election_query(s->st->client, s->cfg->election_name, on_view, r);
        if (err < 0)
            g->pending--;
    }
    if (err < 0) {
        free(r);
        set_error(entry_of(g, index), history ? "history" : "store", err,
                  history ? "history" : "election");
    }
}

int reignd__op_view(void *ctx, reignd_call *call)
{
    reignd_daemon *d = ctx;
    gather *g = calloc(1, sizeof(*g));
    cJSON *root = reignd__op_status(d);
    if (!g || !root) {
        free(g);
        cJSON_Delete(root);
        return REIGN_ENOMEM;
    }
    *g = (gather){.d = d, .call = call, .root = root, .launching = 1};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cJSON_AddNumberToObject(root, "generated_ms",
                            (double)((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
    cJSON_AddStringToObject(root, "version", reign_version());
    for (size_t i = 0; i < d->n_services; i++) {
        service *s = &d->services[i];
        cJSON *entry = entry_of(g, i);
        if (!entry)
            continue;
        cJSON_AddStringToObject(entry, "backend",
                                s->st->client ? reign_client_backend(s->st->client) : "");
        add_check(entry, s->cfg);
        launch(g, i, 0);
        launch(g, i, 1);
        if (s->st->uv)
            reign_uv_update(s->st->uv);
    }
    g->launching = 0;
    if (g->pending == 0) { /* every read failed to send: answered now */
        reignd_call_set_result(call, g->root);
        free(g);
        return 0;
    }
    return REIGND_PENDING;
}
