/*
 * history.c - `reign history NAME`: the election's last leaderships (reign_election_history()),
 * oldest first, as a table for people (times in local time and as offsets from now, how long
 * each held, how it ended, how long the election then went without a leader) or, with --json,
 * one JSON object for scripts.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "timeline_svg.h"

typedef struct history {
    const char *name;
    int json;
    int64_t since_ms;
    const char *svg; /* --svg FILE */
} history;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: reign [GLOBAL OPTIONS] history NAME [OPTIONS]\n"
            "\n"
            "Show the last leaderships of election NAME, oldest first: term, fencing token,\n"
            "leader, when it began (local time, and how long ago), how long it held, how it\n"
            "ended (resigned, ceded, deposed, designated, preempted, guardian, expired, lost)\n"
            "and how long the election then had no leader.  A time marked ~ is an estimate:\n"
            "the leader's session or lease expired unheard, at the latest then.  The store\n"
            "keeps the last 100 (the URI's history=N).\n"
            "\n"
            "Options:\n"
            "      --since TIME        only leaderships that ended at or after TIME: a time\n"
            "                          ago (90s, 15m, 2h, 3d), a local date and time\n"
            "                          (2026-11-30, 2026-11-30T03:12[:05]), or @UNIX_SECONDS\n"
            "      --json              print one JSON object: {\"election\",\"backend\",\n"
            "                          \"terms\":[{\"term\",\"token\",\"id\",\"data\",\n"
            "                          \"data_full_len\",\"started_ms\",\"ended_ms\",\n"
            "                          \"ended_estimated\",\"end\",\"held_ms\",\"gap_ms\"}...]}\n"
            "                          (ended_ms, held_ms null while leading; gap_ms: without\n"
            "                          a leader after it, null for the last)\n"
            "      --svg FILE          draw them instead as an SVG timeline in FILE (- for\n"
            "                          standard output): one lane per leader, the time\n"
            "                          without one hatched red, details on hover\n"
            "  -h, --help              show this help\n");
}

/* "2026-11-30 03:12:05.120" in local time. */
static const char *local_time(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char day[32];
    if (!localtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "@%lld", (long long)ms);
    else
        snprintf(buf, len, "%s.%03d", day, (int)(ms % 1000));
    return buf;
}

/* A span for people ("-" for none): timeline_svg.h's, as the pictures say it. */
static const char *span(int64_t ms, char *buf, size_t len)
{
    if (ms < 0) {
        snprintf(buf, len, "-");
        return buf;
    }
    return timeline_svg_duration(ms, buf, len);
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* --since: "15m" ago, "2026-11-30[T03:12[:05]]" local, "@SECONDS". */
static int parse_since(cli *c, const char *v, int64_t *out)
{
    char *end;
    if (v[0] == '@') {
        long long s = strtoll(v + 1, &end, 10);
        if (end != v + 1 && !*end && s >= 0) {
            *out = s * 1000;
            return 0;
        }
    } else if (strchr(v, '-')) {
        static const char *const forms[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S",
                                            "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"};
        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
            struct tm tm = {0};
            tm.tm_isdst = -1;
            const char *rest = strptime(v, forms[i], &tm);
            if (rest && !*rest) {
                time_t t = mktime(&tm);
                if (t != (time_t)-1) {
                    *out = (int64_t)t * 1000;
                    return 0;
                }
            }
        }
    } else {
        double n = strtod(v, &end);
        double unit = !strcmp(end, "s")   ? 1
                      : !strcmp(end, "m") ? 60
                      : !strcmp(end, "h") ? 3600
                      : !strcmp(end, "d") ? 86400
                                          : 0;
        if (end != v && unit > 0 && n >= 0 && n * unit < 1e10) {
            *out = now_ms() - (int64_t)(n * unit * 1000);
            return 0;
        }
    }
    return cli_usage_error(c, "--since '%s': want 15m, 2h, 3d, 2026-11-30T03:12 or @SECONDS", v);
}

static int64_t gap_after(const reign_term *t, size_t i, size_t n)
{
    return i + 1 < n && t[i].ended_ms ? t[i + 1].started_ms - t[i].ended_ms : -1;
}

static void print_text(const reign_term *t, size_t n)
{
    char a[40], b[24], d[24], g[24], tok[24], end[40];
    int64_t now = now_ms();
    if (!n) {
        cli_print("no leaderships recorded");
        return;
    }
    cli_print("%-6s %-12s %-20s %-23s %-9s %-9s %-13s %s", "TERM", "TOKEN", "LEADER", "STARTED",
              "AGO", "HELD", "END", "NO LEADER AFTER");
    for (size_t i = 0; i < n; i++) {
        const reign_term *x = &t[i];
        int64_t held = x->ended_ms ? x->ended_ms - x->started_ms : now - x->started_ms;
        int64_t gap = gap_after(t, i, n);
        snprintf(tok, sizeof(tok), "%llu", (unsigned long long)x->token);
        snprintf(end, sizeof(end), "%s", reign_term_end_name(x->end));
        char term[24];
        snprintf(term, sizeof(term), "%llu", (unsigned long long)x->term);
        span(held, b, sizeof(b));
        span(gap, g, sizeof(g));
        char heldcol[32], gapcol[32];
        snprintf(heldcol, sizeof(heldcol), "%s%s", x->ended_estimated ? "~" : "",
                 x->ended_ms || x->end == REIGN_TERM_LEADING ? b : "?");
        snprintf(gapcol, sizeof(gapcol), "%s%s", gap >= 0 && x->ended_estimated ? "~" : "",
                 i + 1 < n ? g : "-");
        cli_print("%-6s %-12s %-20s %-23s -%-8s %-9s %-13s %s", x->term ? term : "?", tok,
                  x->id && *x->id ? cli_line_id(x->id) : "(unknown)",
                  local_time(x->started_ms, a, sizeof(a)), span(now - x->started_ms, d, sizeof(d)),
                  heldcol, end, gapcol);
    }
}

static int print_json(cli *c, const history *h, const reign_term *t, size_t n)
{
    cJSON *o = cJSON_CreateObject(), *arr = o ? cJSON_AddArrayToObject(o, "terms") : NULL;
    if (!arr)
        goto oom;
    cJSON_AddStringToObject(o, "election", h->name);
    cJSON_AddStringToObject(o, "backend", reign_client_backend(c->client));
    for (size_t i = 0; i < n; i++) {
        const reign_term *x = &t[i];
        cJSON *j = cJSON_CreateObject();
        if (!j)
            goto oom;
        cJSON_AddItemToArray(arr, j);
        cli_json_add_u64(j, "term", x->term);
        cli_json_add_u64(j, "token", x->token);
        cJSON_AddStringToObject(j, "id", x->id ? x->id : "");
        cli_json_add_data(j, x->data, x->data_len);
        cli_json_add_i64(j, "data_full_len", (int64_t)x->data_full_len);
        cli_json_add_ms(j, "started_ms", x->started_ms);
        cli_json_add_ms(j, "ended_ms", x->ended_ms);
        cJSON_AddBoolToObject(j, "ended_estimated", x->ended_estimated != 0);
        cJSON_AddStringToObject(j, "end", reign_term_end_name(x->end));
        cli_json_add_ms(j, "held_ms", x->ended_ms ? x->ended_ms - x->started_ms : 0);
        int64_t gap = gap_after(t, i, n);
        if (gap >= 0)
            cli_json_add_i64(j, "gap_ms", gap);
        else
            cJSON_AddNullToObject(j, "gap_ms");
    }
    return cli_json_print(c, o);
oom:
    cJSON_Delete(o);
    cli_error(c, "out of memory");
    return CLI_EXIT_FAIL;
}

/* --svg: the timeline of timeline_svg.h, as reignd's status page draws it. */
static int write_svg(cli *c, const history *h, const reign_term *t, size_t n)
{
    char why[512], title[300];
    snprintf(title, sizeof(title), "election %s", h->name);
    timeline_svg_options o = {.now_ms = now_ms(), .title = title};
    if (timeline_svg_file(h->svg, t, n, &o, why, sizeof(why)) == 0)
        return CLI_EXIT_OK;
    cli_error(c, "%s", why);
    return CLI_EXIT_FAIL;
}

static int failed(cli *c, const char *name, int err)
{
    char q[512];
    cli_quote(name, q, sizeof(q));
    if (err == REIGN_ENOENT)
        cli_error(c, "no such election '%s'", q);
    else if (err == REIGN_ENOTSUP)
        cli_error(c, "the history of '%s': not kept on a %s store yet", q,
                  reign_client_backend(c->client));
    else
        cli_error(c, "cannot read the history of '%s': %s", q, reign_strerror(err));
    return CLI_EXIT_FAIL;
}

static void on_history(reign_client *client, int err, const reign_term *terms, size_t n,
                       void *userdata)
{
    cli *c = userdata;
    history *h = c->cmd_data;
    (void)client;
    if (err < 0) {
        cli_exit(c, failed(c, h->name, err));
        return;
    }
    if (h->json) {
        cli_exit(c, print_json(c, h, terms, n));
        return;
    }
    if (h->svg) {
        cli_exit(c, write_svg(c, h, terms, n));
        return;
    }
    print_text(terms, n);
    cli_exit(c, CLI_EXIT_OK);
}

int cli_history_main(cli *c, int argc, char **argv)
{
    static history h;
    static const struct option opts[] = {{"since", required_argument, NULL, 's'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"svg", required_argument, NULL, 'g'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o, r;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (o == 'h') {
            usage(stdout);
            return CLI_EXIT_OK;
        } else if (o == 'j') {
            h.json = 1;
        } else if (o == 'g') {
            h.svg = optarg;
        } else if (o == 's') {
            if ((r = parse_since(c, optarg, &h.since_ms)))
                return r;
        } else {
            return cli_bad_option(c, o, argv);
        }
    }
    if (h.json && h.svg)
        return cli_usage_error(c, "--json and --svg: choose one");
    if ((r = cli_election_name(c, argv, argc, "", &h.name)))
        return r;
    c->cmd_data = &h;
    if ((r = cli_client_new(c)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    r = reign_election_history(c->client, h.name, h.since_ms, on_history, c);
    if (r < 0)
        return failed(c, h.name, r);
    cli_update(c);
    return cli_run(c);
}
