/*
 * metrics.c - the Prometheus text endpoint (metrics.h).  Each scrape asks
 * the daemon for a snapshot and writes every family with its HELP and TYPE
 * lines once, then one sample per service; label values are escaped as the
 * exposition format says (backslash, double quote, newline).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsm.h"
#include "httpd.h"
#include "metrics.h"
#include "page.h"

static const char *const health_states[] = {"initializing", "healthy", "unhealthy",
                                            "not_responding", "monitor_failed"};
#define N_HEALTH (sizeof(health_states) / sizeof(health_states[0]))

static const char *const change_names[] = {
#define REIGND__CH_NAME(name, str) str,
    REIGND_CHANGES(REIGND__CH_NAME)
#undef REIGND__CH_NAME
};

/* The demotion reasons line up with libreign's (metrics.h). */
_Static_assert(REIGND_CHANGE_RESIGNED == (int)REIGN_DEMOTE_RESIGNED &&
                   REIGND_CHANGE_HANDOFF == (int)REIGN_DEMOTE_HANDOFF,
               "REIGND_CHANGES follows reign_demote_reason");

const char *reignd_change_name(reignd_change c)
{
    return (unsigned)c < REIGND_CHANGE__COUNT ? change_names[c] : "?";
}

reignd_change reignd_change_of_demotion(reign_demote_reason reason)
{
    return reason >= REIGN_DEMOTE_RESIGNED && reason <= REIGN_DEMOTE_HANDOFF ? (reignd_change)reason
                                                                             : REIGND_CHANGE_ERROR;
}

/* A snapshot: copies of what the callback reported, strings included. */
typedef struct svc_copy {
    reignd_metrics_service s;
    char *name, *health, *state;
} svc_copy;

struct reignd_metrics_sink {
    svc_copy *svcs;
    size_t n, cap;
    int oom;
};

/* A growing text buffer; oom sticks. */
typedef struct text {
    char *buf;
    size_t len, cap;
    int oom;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !t->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if (t->buf && t->len + (size_t)n < t->cap) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap ? t->cap : 4096);
        while (cap <= t->len + (size_t)n)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->oom = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
}

/* A label value, escaped; malloc'd (NULL on out of memory). */
static char *escape_label(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(2 * n + 1), *o = out;
    if (!out)
        return NULL;
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') {
            *o++ = '\\';
            *o++ = *s;
        } else if (*s == '\n') {
            *o++ = '\\';
            *o++ = 'n';
        } else {
            *o++ = *s;
        }
    }
    *o = '\0';
    return out;
}

void reignd_metrics_add(reignd_metrics_sink *sink, const reignd_metrics_service *svc)
{
    if (sink->oom || !svc->name)
        return;
    if (sink->n == sink->cap) {
        size_t cap = sink->cap ? 2 * sink->cap : 8;
        svc_copy *v = realloc(sink->svcs, cap * sizeof(*v));
        if (!v) {
            sink->oom = 1;
            return;
        }
        sink->svcs = v;
        sink->cap = cap;
    }
    svc_copy *c = &sink->svcs[sink->n];
    memset(c, 0, sizeof(*c));
    c->s = *svc;
    c->name = escape_label(svc->name);
    c->health = escape_label(svc->health ? svc->health : "initializing");
    c->state = svc->state ? escape_label(svc->state) : NULL;
    sink->n++;
    if (!c->name || !c->health || (svc->state && !c->state))
        sink->oom = 1;
}

static void sink_free(reignd_metrics_sink *sink)
{
    for (size_t i = 0; i < sink->n; i++) {
        free(sink->svcs[i].name);
        free(sink->svcs[i].health);
        free(sink->svcs[i].state);
    }
    free(sink->svcs);
}

static void family(text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* What a field of reignd_metrics_service holds. */
typedef enum kind { K_COUNT, K_FLAG, K_SECONDS } kind;

/* A family with one sample per service, its value one field of reignd_metrics_service. */
typedef struct simple_family {
    const char *name, *type, *help;
    size_t offset;
    kind k;
} simple_family;

#define FIELD(f) offsetof(reignd_metrics_service, f)

static const simple_family simple_families[] = {
    {"reignd_service_leader", "gauge", "1 while this node's service is active, else 0.",
     FIELD(leader), K_FLAG},
    {"reignd_service_term", "gauge", "This node's election term while it leads, else 0.",
     FIELD(term), K_COUNT},
    {"reignd_service_token", "gauge", "This node's fencing token while it leads, else 0.",
     FIELD(token), K_COUNT},
    {"reignd_service_paused", "gauge",
     "1 while the service's election is paused (reign ctl pause), on every node.", FIELD(paused),
     K_FLAG},
    {"reignd_failovers_total", "counter", "Times the service became active on this node.",
     FIELD(failovers), K_COUNT},
    {"reignd_fence_attempts_total", "counter", "Fence methods tried against an old active.",
     FIELD(fence_attempts), K_COUNT},
    {"reignd_election_observed", "gauge",
     "1 while this node follows the election's leader (it stands in the election).",
     FIELD(observed), K_FLAG},
    {"reignd_election_leaderless_seconds", "gauge",
     "Seconds the election has been without a known leader, now (0: one is known or the "
     "election is not observed).",
     FIELD(leaderless_s), K_SECONDS},
    {"reignd_election_leaderless_seconds_total", "counter",
     "Seconds this node observed the election without a known leader, in all.",
     FIELD(leaderless_total_s), K_SECONDS},
    {"reignd_store_connected", "gauge",
     "1 while the client of the service's store is connected (0: suspended, session lost, "
     "closed).",
     FIELD(store_connected), K_FLAG},
};
#define N_SIMPLE (sizeof(simple_families) / sizeof(simple_families[0]))

static void per_service(text *t, const reignd_metrics_sink *sink, const simple_family *f)
{
    family(t, f->name, f->type, f->help);
    for (size_t i = 0; i < sink->n; i++) {
        const char *base = (const char *)&sink->svcs[i].s + f->offset;
        if (f->k == K_SECONDS)
            put(t, "%s{service=\"%s\"} %.3f\n", f->name, sink->svcs[i].name, *(const double *)base);
        else
            put(t, "%s{service=\"%s\"} %llu\n", f->name, sink->svcs[i].name,
                f->k == K_FLAG ? (unsigned long long)(*(const int *)base != 0)
                               : (unsigned long long)*(const uint64_t *)base);
    }
}

static void render_services(text *t, const reignd_metrics_sink *sink)
{
    for (size_t f = 0; f < N_SIMPLE; f++)
        per_service(t, sink, &simple_families[f]);
    family(t, "reignd_service_health", "gauge", "1 for the service's current health state.");
    for (size_t i = 0; i < sink->n; i++)
        for (size_t h = 0; h < N_HEALTH; h++)
            put(t, "reignd_service_health{service=\"%s\",state=\"%s\"} %d\n", sink->svcs[i].name,
                health_states[h], strcmp(sink->svcs[i].health, health_states[h]) == 0);
    /* Every state, 0 or 1, as for health: a series never vanishes when the state changes. */
    family(t, "reignd_service_state", "gauge", "1 for the service's current controller state.");
    for (size_t i = 0; i < sink->n; i++)
        for (unsigned st = 0; sink->svcs[i].state && st < REIGND_ST__COUNT; st++) {
            const char *name = reignd_state_name((reignd_state)st);
            put(t, "reignd_service_state{service=\"%s\",state=\"%s\"} %d\n", sink->svcs[i].name,
                name, strcmp(sink->svcs[i].state, name) == 0);
        }
    family(t, "reignd_fence_outcomes_total", "counter", "Fence method outcomes.");
    for (size_t i = 0; i < sink->n; i++)
        put(t,
            "reignd_fence_outcomes_total{service=\"%s\",outcome=\"success\"} %llu\n"
            "reignd_fence_outcomes_total{service=\"%s\",outcome=\"failure\"} %llu\n",
            sink->svcs[i].name, (unsigned long long)sink->svcs[i].s.fence_successes,
            sink->svcs[i].name, (unsigned long long)sink->svcs[i].s.fence_failures);
    /* Every reason, 0 or more, as for states: a series is there before its first change. */
    family(t, "reignd_leadership_changes_total", "counter",
           "Leadership changes this node saw: elected here, demoted here (by libreign's "
           "reason), or another node elected.");
    for (size_t i = 0; i < sink->n; i++)
        for (unsigned c = 0; c < REIGND_CHANGE__COUNT; c++)
            put(t, "reignd_leadership_changes_total{service=\"%s\",reason=\"%s\"} %llu\n",
                sink->svcs[i].name, reignd_change_name((reignd_change)c),
                (unsigned long long)sink->svcs[i].s.changes[c]);
}

char *reignd_metrics_render(reignd_metrics_snapshot_fn *snapshot, void *ctx, size_t *len)
{
    reignd_metrics_sink sink;
    text t;
    memset(&sink, 0, sizeof(sink));
    memset(&t, 0, sizeof(t));
    if (snapshot)
        snapshot(&sink, ctx);
    family(&t, "reignd_up", "gauge", "1: reignd is running.");
    put(&t, "reignd_up 1\n");
    family(&t, "reignd_build_info", "gauge", "The reign version reignd was built from.");
    put(&t, "reignd_build_info{version=\"%s\"} 1\n", REIGN_VERSION_STRING);
    if (!sink.oom)
        render_services(&t, &sink);
    sink_free(&sink);
    if (t.oom || sink.oom || !t.buf) {
        free(t.buf);
        return NULL;
    }
    if (len)
        *len = t.len;
    return t.buf;
}

/* ---- the endpoint ---------------------------------------------------------- */

struct reignd_metrics {
    reignd_httpd *httpd;
    reignd_metrics_snapshot_fn *snapshot;
    void *ctx;
    reignd_page *page; /* /status and /status.json (page.h); NULL: none */
};

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    reignd_metrics *m = cls;
    (void)version;
    (void)upload;
    if (m->page && reignd_page_handles(url) && *con_cls != m) {
        if (*con_cls && *upload_size) { /* the page reads no body either */
            *upload_size = 0;
            return MHD_YES;
        }
        return reignd_page_request(m->page, conn, url, method, con_cls);
    }
    if (!*con_cls) { /* headers only so far */
        *con_cls = m;
        return MHD_YES;
    }
    if (*upload_size) { /* a scrape has no body: ignore one */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0)
        return reignd__httpd_reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", 10, NULL,
                                   NULL);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reignd__httpd_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                                   "method not allowed\n", 19, NULL, NULL);
    size_t len = 0;
    char *body = reignd_metrics_render(m->snapshot, m->ctx, &len);
    return reignd__httpd_reply_taken(conn, "text/plain; version=0.0.4; charset=utf-8", body, len,
                                     NULL);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    reignd_metrics *m = cls;
    (void)conn;
    (void)toe;
    if (*con_cls && *con_cls != m)
        reignd_page_completed(m->page, *con_cls);
    *con_cls = NULL;
}

int reignd_metrics_start(uv_loop_t *loop, const reignd_metrics_options *opts, reignd_metrics **ret,
                         char *err, size_t errlen)
{
    *ret = NULL;
    if (!opts->listen || !opts->snapshot) {
        snprintf(err, errlen, "the metrics endpoint needs a listen address and a snapshot");
        return REIGN_EINVAL;
    }
    reignd_metrics *m = calloc(1, sizeof(*m));
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return REIGN_ENOMEM;
    }
    m->snapshot = opts->snapshot;
    m->ctx = opts->ctx;
    if (opts->ops && !(m->page = reignd_page_new(loop, opts->ops))) {
        free(m);
        snprintf(err, errlen, "out of memory");
        return REIGN_ENOMEM;
    }
    reignd_httpd_options ho = {
        .what = "metrics",
        .listen = opts->listen,
        .handler = on_request,
        .completed = on_completed,
        .cls = m,
        .suspend = 1,
        .log_fn = opts->log_fn,
        .log_userdata = opts->log_userdata,
    };
    int r = reignd_httpd_start(loop, &ho, &m->httpd, err, errlen);
    if (r < 0) {
        reignd_page_free(m->page);
        free(m);
        return r;
    }
    if (m->page)
        reignd_page_attach(m->page, m->httpd);
    *ret = m;
    return 0;
}

int reignd_metrics_port(const reignd_metrics *m)
{
    return reignd_httpd_port(m->httpd);
}

void reignd_metrics_close(reignd_metrics *m)
{
    if (!m)
        return;
    reignd_page_stop(m->page);
    reignd_httpd_close(m->httpd);
    reignd_page_free(m->page);
    free(m);
}
