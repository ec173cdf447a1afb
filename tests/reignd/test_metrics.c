/*
 * test_metrics.c - the Prometheus endpoint (src/reignd/metrics.c): its text
 * read back by a parser of the exposition format (HELP and TYPE once per
 * family and before its samples, label values escaped, every value a
 * number), the values per service, and the endpoint over HTTP (200 with the
 * format's content type on /metrics, 404 elsewhere); and the status page on
 * the same server (page.c): its reads of the stores shared, a store that does
 * not answer not holding it, GET and HEAD only.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "call.h"
#include "fake_ops.h"
#include "fsm.h"
#include "metrics.h"
#include "net_client.h"

/* ---- a parser of the text format ------------------------------------------- */

#define MAX_SAMPLES  512
#define MAX_FAMILIES 32

typedef struct sample {
    char name[64];
    char labels[256]; /* unescaped, "k=v,k=v" in order */
    double value;
} sample;

typedef struct exposition {
    sample samples[MAX_SAMPLES];
    int n;
    char families[MAX_FAMILIES][64];
    char types[MAX_FAMILIES][16];
    int nfam;
} exposition;

static int family_index(const exposition *e, const char *name)
{
    for (int i = 0; i < e->nfam; i++)
        if (strcmp(e->families[i], name) == 0)
            return i;
    return -1;
}

/* The family a sample belongs to: its name (we use no _sum/_bucket). */
static void parse_labels(const char **pp, char *out, size_t outlen)
{
    const char *p = *pp;
    size_t o = 0;
    while (*p != '}') {
        const char *eq = strchr(p, '=');
        assert_non_null(eq);
        for (const char *k = p; k < eq; k++)
            assert_true((*k >= 'a' && *k <= 'z') || *k == '_');
        if (o)
            out[o++] = ',';
        memcpy(out + o, p, (size_t)(eq - p));
        o += (size_t)(eq - p);
        out[o++] = '=';
        assert_int_equal(eq[1], '"');
        p = eq + 2;
        while (*p != '"') {
            assert_true(*p != '\0' && *p != '\n');
            if (*p == '\\') {
                p++;
                assert_true(*p == '\\' || *p == '"' || *p == 'n');
                out[o++] = *p == 'n' ? '\n' : *p;
            } else {
                out[o++] = *p;
            }
            p++;
            assert_true(o < outlen - 2);
        }
        p++;
        if (*p == ',')
            p++;
        else
            assert_int_equal(*p, '}');
    }
    out[o] = '\0';
    *pp = p + 1;
}

static void parse_exposition(const char *text, exposition *e)
{
    memset(e, 0, sizeof(*e));
    const char *p = text;
    int last_help = -1;
    while (*p) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl); /* every line ends with a newline */
        char line[1024];
        assert_true((size_t)(nl - p) < sizeof(line));
        memcpy(line, p, (size_t)(nl - p));
        line[nl - p] = '\0';
        p = nl + 1;
        char name[64], rest[512];
        if (sscanf(line, "# HELP %63s %511[^\n]", name, rest) == 2) {
            assert_int_equal(family_index(e, name), -1); /* once per family */
            assert_true(e->nfam < MAX_FAMILIES);
            snprintf(e->families[e->nfam], 64, "%s", name);
            last_help = e->nfam++;
            continue;
        }
        if (sscanf(line, "# TYPE %63s %511s", name, rest) == 2) {
            assert_true(last_help >= 0);
            assert_string_equal(e->families[last_help], name);
            assert_true(strcmp(rest, "gauge") == 0 || strcmp(rest, "counter") == 0);
            snprintf(e->types[last_help], 16, "%.15s", rest);
            continue;
        }
        assert_true(line[0] != '#');
        sample *s = &e->samples[e->n++];
        assert_true(e->n <= MAX_SAMPLES);
        const char *q = line;
        size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyz_");
        assert_true(n > 0 && n < sizeof(s->name));
        memcpy(s->name, q, n);
        q += n;
        if (*q == '{') {
            q++;
            parse_labels(&q, s->labels, sizeof(s->labels));
        }
        assert_int_equal(*q, ' ');
        char *end;
        s->value = strtod(q + 1, &end);
        assert_true(*end == '\0' && isfinite(s->value));
        /* Its family was announced, and is the latest one. */
        int f = family_index(e, s->name);
        assert_true(f >= 0 && f == last_help && e->types[f][0]);
        if (strcmp(e->types[f], "counter") == 0)
            assert_true(strlen(s->name) > 6 &&
                        strcmp(s->name + strlen(s->name) - 6, "_total") == 0);
    }
}

static double value_of(const exposition *e, const char *name, const char *labels)
{
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->samples[i].name, name) == 0 && strcmp(e->samples[i].labels, labels) == 0)
            return e->samples[i].value;
    fail_msg("no sample %s{%s}", name, labels);
    return -1;
}

/* ---- rendering --------------------------------------------------------------- */

static void snapshot(reignd_metrics_sink *sink, void *ctx)
{
    (void)ctx;
    reignd_metrics_service web = {
        .name = "web",
        .health = "healthy",
        .state = "active",
        .leader = 1,
        .term = 7,
        .token = 12,
        .failovers = 2,
        .fence_attempts = 3,
        .fence_successes = 1,
        .fence_failures = 2,
        .changes = {[REIGND_CHANGE_ELECTED] = 3,
                    [REIGND_CHANGE_HANDOFF] = 1,
                    [REIGND_CHANGE_ELSEWHERE] = 4},
        .observed = 1,
        .store_connected = 1,
        .leaderless_total_s = 2.5,
    };
    reignd_metrics_service odd = {
        .name = "a\"b\\c\nd",
        .health = "not_responding",
        .state = NULL,
        .paused = 1,
        .leaderless_s = 1.25,
        .leaderless_total_s = 7.75,
    };
    reignd_metrics_add(sink, &web);
    reignd_metrics_add(sink, &odd);
}

static void test_render(void **state)
{
    (void)state;
    size_t len;
    char *text = reignd_metrics_render(snapshot, NULL, &len);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    exposition *e = malloc(sizeof(*e));
    parse_exposition(text, e);

    assert_true(value_of(e, "reignd_up", "") == 1);
    assert_true(value_of(e, "reignd_service_leader", "service=web") == 1);
    assert_true(value_of(e, "reignd_service_term", "service=web") == 7);
    assert_true(value_of(e, "reignd_service_token", "service=web") == 12);
    assert_true(value_of(e, "reignd_service_paused", "service=web") == 0);
    assert_true(value_of(e, "reignd_service_health", "service=web,state=healthy") == 1);
    assert_true(value_of(e, "reignd_service_health", "service=web,state=unhealthy") == 0);
    assert_true(value_of(e, "reignd_service_state", "service=web,state=active") == 1);
    assert_true(value_of(e, "reignd_service_state", "service=web,state=standby") == 0);
    assert_true(value_of(e, "reignd_service_state", "service=web,state=ceded") == 0);
    assert_true(value_of(e, "reignd_failovers_total", "service=web") == 2);
    assert_true(value_of(e, "reignd_fence_attempts_total", "service=web") == 3);
    assert_true(value_of(e, "reignd_fence_outcomes_total", "service=web,outcome=success") == 1);
    assert_true(value_of(e, "reignd_fence_outcomes_total", "service=web,outcome=failure") == 2);

    assert_true(value_of(e, "reignd_store_connected", "service=web") == 1);
    assert_true(value_of(e, "reignd_election_observed", "service=web") == 1);
    assert_true(value_of(e, "reignd_election_leaderless_seconds", "service=web") == 0);
    assert_true(value_of(e, "reignd_election_leaderless_seconds_total", "service=web") == 2.5);
    assert_true(value_of(e, "reignd_leadership_changes_total", "service=web,reason=elected") == 3);
    assert_true(value_of(e, "reignd_leadership_changes_total", "service=web,reason=handoff") == 1);
    assert_true(value_of(e, "reignd_leadership_changes_total", "service=web,reason=elsewhere") ==
                4);
    assert_true(value_of(e, "reignd_leadership_changes_total", "service=web,reason=stalled") == 0);

    /* The odd name comes back intact through the escaping. */
    const char *odd = "service=a\"b\\c\nd";
    char labels[128];
    assert_true(value_of(e, "reignd_service_leader", odd) == 0);
    assert_true(value_of(e, "reignd_service_paused", odd) == 1);
    snprintf(labels, sizeof(labels), "%s,state=not_responding", odd);
    assert_true(value_of(e, "reignd_service_health", labels) == 1);
    snprintf(labels, sizeof(labels), "%s,state=healthy", odd);
    assert_true(value_of(e, "reignd_service_health", labels) == 0);
    assert_true(value_of(e, "reignd_store_connected", odd) == 0);
    assert_true(value_of(e, "reignd_election_observed", odd) == 0);
    assert_true(value_of(e, "reignd_election_leaderless_seconds", odd) == 1.25);
    assert_true(value_of(e, "reignd_election_leaderless_seconds_total", odd) == 7.75);
    int states = 0, changes = 0;
    for (int i = 0; i < e->n; i++) {
        states += strcmp(e->samples[i].name, "reignd_service_state") == 0;
        changes += strcmp(e->samples[i].name, "reignd_leadership_changes_total") == 0;
    }
    /* Every state of the one service with a state, none for the other. */
    assert_int_equal(states, REIGND_ST__COUNT);
    /* Every reason of both, 0 or more: a series is there before its first change. */
    assert_int_equal(changes, 2 * REIGND_CHANGE__COUNT);
    free(e);
    free(text);
}

/* A demotion counts under libreign's own name for its reason. */
static void test_change_names(void **state)
{
    (void)state;
    for (int r = REIGN_DEMOTE_RESIGNED; r <= REIGN_DEMOTE_HANDOFF; r++)
        assert_string_equal(reignd_change_name(reignd_change_of_demotion((reign_demote_reason)r)),
                            reign_demote_reason_name((reign_demote_reason)r));
    assert_int_equal(reignd_change_of_demotion((reign_demote_reason)99), REIGND_CHANGE_ERROR);
    assert_string_equal(reignd_change_name(REIGND_CHANGE_ELECTED), "elected");
    assert_string_equal(reignd_change_name(REIGND_CHANGE__COUNT), "?");
}

static void test_render_empty(void **state)
{
    (void)state;
    char *text = reignd_metrics_render(NULL, NULL, NULL);
    exposition *e = malloc(sizeof(*e));
    parse_exposition(text, e);
    assert_true(value_of(e, "reignd_up", "") == 1);
    free(e);
    free(text);
}

/* ---- over HTTP ----------------------------------------------------------------- */

/* GET path from the endpoint on port; the whole answer in g. */
static void http_get(uv_loop_t *loop, int port, const char *path, net_job *g)
{
    char req[256];
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    memset(g, 0, sizeof(*g));
    g->tcp_port = port;
    g->send = req;
    net_exchange(loop, g);
}

static void test_endpoint(void **state)
{
    uv_loop_t loop;
    reignd_metrics *m;
    char err[256];
    (void)state;
    uv_loop_init(&loop);
    reignd_metrics_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.listen = "127.0.0.1:0";
    o.snapshot = snapshot;
    assert_int_equal(reignd_metrics_start(&loop, &o, &m, err, sizeof(err)), 0);

    net_job *g = calloc(1, sizeof(*g));
    http_get(&loop, reignd_metrics_port(m), "/metrics", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);
    assert_non_null(strstr(g->answer, "text/plain; version=0.0.4"));
    char *body = strstr(g->answer, "\r\n\r\n");
    assert_non_null(body);
    exposition *e = malloc(sizeof(*e));
    parse_exposition(body + 4, e);
    assert_true(value_of(e, "reignd_service_term", "service=web") == 7);
    free(e);

    http_get(&loop, reignd_metrics_port(m), "/other", g);
    assert_memory_equal(g->answer, "HTTP/1.1 404", 12);
    free(g);

    /* A bad address is refused with a reason. */
    reignd_metrics *bad;
    o.listen = "localhost";
    assert_int_equal(reignd_metrics_start(&loop, &o, &bad, err, sizeof(err)), REIGN_EINVAL);
    assert_non_null(strstr(err, "localhost"));

    reignd_metrics_close(m);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- the status page ------------------------------------------------------------ */

static reignd_call *held; /* the page's read of the stores, held by the test */
static int views;         /* reads the page started */

static int held_view(void *ctx, reignd_call *call)
{
    (void)ctx;
    views++;
    held = call;
    return REIGND_PENDING;
}

static void send_raw(uv_loop_t *loop, int port, const char *req, net_job *g)
{
    memset(g, 0, sizeof(*g));
    g->tcp_port = port;
    g->send = req;
    net_exchange(loop, g);
}

static void test_page_endpoint(void **state)
{
    uv_loop_t loop;
    reignd_metrics *m;
    fake_ops f;
    char err[256];
    (void)state;
    uv_loop_init(&loop);
    fake_ops_init(&f, &loop);
    f.ops.view = held_view;
    reignd_metrics_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.listen = "127.0.0.1:0";
    o.snapshot = snapshot;
    o.ops = &f.ops;
    assert_int_equal(reignd_metrics_start(&loop, &o, &m, err, sizeof(err)), 0);
    int port = reignd_metrics_port(m);
    net_job *g = calloc(1, sizeof(*g));

    /* The stores do not answer: after a while, this node's own state, and it says so. */
    http_get(&loop, port, "/status.json", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);
    assert_non_null(strstr(g->answer, "application/json"));
    assert_non_null(strstr(g->answer, "did not answer within 2 s"));
    assert_non_null(strstr(g->answer, "\"name\":\"web\""));
    assert_int_equal(views, 1);
    /* While that read lasts, a request neither starts another nor waits. */
    http_get(&loop, port, "/status", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);
    assert_non_null(strstr(g->answer, "text/html"));
    assert_non_null(strstr(g->answer, "Content-Security-Policy: default-src 'none'"));
    assert_non_null(strstr(g->answer, "have not answered yet"));
    assert_int_equal(views, 1);

    /* The read ends: its view is served while fresh, without another read. */
    cJSON *v = f.ops.status(f.ops.ctx);
    cJSON *web = cJSON_GetArrayItem(cJSON_GetObjectItem(v, "services"), 0);
    cJSON *store = cJSON_AddObjectToObject(web, "store");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(store, "leader"), "id", "n<1>");
    cJSON_AddArrayToObject(store, "candidates");
    reignd_call_done(held, 0, NULL, v);
    held = NULL;
    http_get(&loop, port, "/status.json", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);
    assert_null(strstr(g->answer, "did not answer"));
    assert_non_null(strstr(g->answer, "data-leader=\\\"n&lt;1&gt;\\\""));
    assert_int_equal(views, 1);

    /* Read-only: GET and HEAD only. */
    send_raw(&loop, port,
             "POST /status HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
             "Connection: close\r\n\r\n{}",
             g);
    assert_memory_equal(g->answer, "HTTP/1.1 405", 12);
    send_raw(&loop, port, "HEAD /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);
    http_get(&loop, port, "/metrics", g);
    assert_memory_equal(g->answer, "HTTP/1.1 200", 12);

    /* A view older than a second is read again; the server closed while that read lasts
     * leaves the read to end alone. */
    usleep(1100 * 1000);
    http_get(&loop, port, "/status.json", g);
    assert_int_equal(views, 2);
    assert_non_null(held);
    reignd_metrics_close(m);
    reignd_call_done(held, 0, NULL, NULL);
    free(g);
    while (uv_run(&loop, UV_RUN_NOWAIT))
        ;
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),        cmocka_unit_test(test_change_names),
        cmocka_unit_test(test_render_empty),  cmocka_unit_test(test_endpoint),
        cmocka_unit_test(test_page_endpoint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
