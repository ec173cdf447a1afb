/*
 * check_report.c - what `reign check` concludes and prints: the safety checks over every
 * leadership the candidates reported (no overlap, terms and tokens that grow), the summary
 * table or the JSON object, and the advice on the timeout.
 *
 * The advice: a leader renews every fifth of the timeout (ZooKeeper's and etcd's syncs and
 * keepalives, SQL's renew_ms) and demotes itself when it could not for 3/4 of it (9/10 on SQL), so
 * the timeout should hold many round trips: 100 at the p99 seen, and at least 2 s, below
 * which an ordinary stall of the host (a swap storm, a paused VM) demotes a healthy leader.
 * etcd grants whole seconds, 2 at least; ZooKeeper raises anything below 2 x its tickTime.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define MS             1000000LL
#define ADVICE_RTTS    100
#define ADVICE_MIN_MS  2000
#define ADVICE_ROUNDED 100 /* ms; etcd: whole seconds */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t chk_percentile(int64_t *v, int n, int p)
{
    if (n <= 0)
        return 0;
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    int i = (p * n + 99) / 100 - 1; /* nearest rank */
    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int cmp_lead(const void *a, const void *b)
{
    const chk_lead *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void violation(chk_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void violation(chk_report *r, const char *fmt, ...)
{
    int max = (int)(sizeof(r->violations) / sizeof(r->violations[0]));
    if (r->n_violations >= max) {
        r->n_violations++;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->violations[r->n_violations++], sizeof(r->violations[0]), fmt, ap);
    va_end(ap);
}

void chk_verify(chk_report *r, chk_lead *leads, int n)
{
    const char *const *id = r->cand_ids;
    qsort(leads, (size_t)n, sizeof(*leads), cmp_lead);
    int64_t base = n ? leads[0].start : 0;
    int last = -1; /* the leadership that ends last so far */
    for (int i = 0; i < n; i++) {
        const chk_lead *l = &leads[i];
        if (last >= 0 && l->start < chk_lead_end(&leads[last])) {
            const chk_lead *o = &leads[last];
            violation(r,
                      "leaderships overlap by %.3f ms: %s's (term %llu, token %llu, from "
                      "+%.3f ms to +%.3f ms) and %s's (term %llu, token %llu, from +%.3f ms)",
                      (double)(chk_lead_end(o) - l->start) / MS, id[o->cand],
                      (unsigned long long)o->term, (unsigned long long)o->token,
                      (double)(o->start - base) / MS, (double)(chk_lead_end(o) - base) / MS,
                      id[l->cand], (unsigned long long)l->term, (unsigned long long)l->token,
                      (double)(l->start - base) / MS);
        }
        if (i > 0 && (l->token <= leads[i - 1].token || l->term <= leads[i - 1].term))
            violation(r,
                      "%s did not grow: %s's term %llu token %llu, then %s's term %llu token "
                      "%llu",
                      l->token <= leads[i - 1].token ? "the fencing token" : "the term",
                      id[leads[i - 1].cand], (unsigned long long)leads[i - 1].term,
                      (unsigned long long)leads[i - 1].token, id[l->cand],
                      (unsigned long long)l->term, (unsigned long long)l->token);
        if (last < 0 || chk_lead_end(l) > chk_lead_end(&leads[last]))
            last = i;
    }
}

/* ---- the verdict ------------------------------------------------------------ */

static bool passed(const chk_report *r)
{
    if (r->n_violations || r->n_errors || r->interrupted)
        return false;
    for (int i = 0; i < CHK_N_PHASES; i++)
        if (r->phases[i].result != CHK_OK && r->phases[i].result != CHK_SKIPPED)
            return false;
    return true;
}

/* Phases left out after a failure (the check stops at the first). */
static bool stopped_early(const chk_report *r)
{
    for (int i = 0; i < CHK_N_PHASES; i++)
        if (r->phases[i].result == CHK_NOT_RUN)
            return true;
    return false;
}

static const char *result_name(chk_result res)
{
    switch (res) {
    case CHK_OK:
        return "ok";
    case CHK_FAILED:
        return "failed";
    case CHK_ERROR:
        return "error";
    case CHK_SKIPPED:
        return "skipped";
    default:
        return "not run";
    }
}

static bool is_sql(const chk_report *r)
{
    return strcmp(r->backend, "zookeeper") && strcmp(r->backend, "etcd");
}

/* The advised timeout, in ms, for the p99 round trip seen. */
static int64_t advised_ms(const chk_report *r, int64_t rtt_p99)
{
    int64_t ms = (ADVICE_RTTS * rtt_p99 + MS - 1) / MS;
    if (ms < ADVICE_MIN_MS)
        ms = ADVICE_MIN_MS;
    int64_t unit = strcmp(r->backend, "etcd") ? ADVICE_ROUNDED : 1000;
    return (ms + unit - 1) / unit * unit;
}

static void advice(const chk_report *r, int64_t rtt_p99, char *out, size_t len)
{
    int64_t adv = advised_ms(r, rtt_p99);
    const char *param = is_sql(r) ? "lease_ms" : "session_timeout_ms";
    const char *floor = !strcmp(r->backend, "zookeeper") ? ", and 2 x the servers' tickTime"
                        : !strcmp(r->backend, "etcd")    ? ", in whole seconds"
                                                         : "";
    if (r->timeout_ms < adv)
        snprintf(out, len,
                 "%s=%d leaves fewer than %d round trips of %.2f ms (p99): raise it to at least "
                 "%s=%lld (the larger of %d round trips and %d ms%s), or a slow round trip or a "
                 "stall of the host may demote a healthy leader",
                 param, r->timeout_ms, ADVICE_RTTS, (double)rtt_p99 / MS, param, (long long)adv,
                 ADVICE_RTTS, ADVICE_MIN_MS, floor);
    else
        snprintf(out, len,
                 "%s=%lld would do for round trips of %.2f ms (p99; the larger of %d round trips "
                 "and %d ms%s); %d is safe, and a leader that dies without its guardian, stops or "
                 "is cut off is replaced within %lld ms",
                 param, (long long)adv, (double)rtt_p99 / MS, ADVICE_RTTS, ADVICE_MIN_MS, floor,
                 r->timeout_ms, (long long)r->takeover_bound);
}

/* ---- text ----------------------------------------------------------------- */

static const char *ms_text(int64_t ns, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f ms", (double)ns / MS);
    return buf;
}

static void print_table(const chk_report *r, int64_t rtt50, int64_t rtt99, const char *adv)
{
    cli_print("%-17s %7s %13s %13s %10s  %s", "PHASE", "ROUNDS", "TAKEOVER P50", "TAKEOVER P99",
              "BOUND", "RESULT");
    for (int i = 0; i < CHK_N_PHASES; i++) {
        chk_phase ph = r->phases[i];
        char rounds[16], p50[32] = "-", p99[32] = "-", bound[32] = "-", res[400];
        snprintf(rounds, sizeof(rounds), "%d/%d", ph.done, ph.rounds);
        if (ph.done) {
            ms_text(chk_percentile(ph.takeover_ns, ph.done, 50), p50, sizeof(p50));
            ms_text(chk_percentile(ph.takeover_ns, ph.done, 99), p99, sizeof(p99));
        }
        if (i >= CHK_KILL_NO_GUARDIAN)
            snprintf(bound, sizeof(bound), "%lld ms", (long long)r->takeover_bound);
        if (ph.result == CHK_OK)
            snprintf(res, sizeof(res), "ok");
        else if (ph.reason[0])
            snprintf(res, sizeof(res), "%s%s%s",
                     ph.result == CHK_SKIPPED ? "" : result_name(ph.result),
                     ph.result == CHK_SKIPPED ? "" : ": ", ph.reason);
        else
            snprintf(res, sizeof(res), "%s", result_name(ph.result));
        cli_print("%-17s %7s %13s %13s %10s  %s", ph.name, rounds, p50, p99, bound, res);
    }
    if (r->n_rtt)
        cli_print("round trip: p50 %.2f ms, p99 %.2f ms (%d reads of the election)",
                  (double)rtt50 / MS, (double)rtt99 / MS, r->n_rtt);
    if (!r->n_violations)
        cli_print("safety: %d leaderships, none overlap; terms and fencing tokens strictly grow",
                  r->n_leads);
    int shown = r->n_violations < 16 ? r->n_violations : 16;
    for (int i = 0; i < shown; i++)
        cli_print("violation: %s", r->violations[i]);
    if (r->n_violations > shown)
        cli_print("violation: ... and %d more", r->n_violations - shown);
    for (int i = 0; i < r->n_errors; i++)
        cli_print("error: %s", r->errors[i]);
    if (r->interrupted)
        cli_print("interrupted");
    else if (stopped_early(r))
        cli_print("stopped at the first failure: the phases not run were left out");
    if (r->cleanup_note[0])
        cli_print("note: %s", r->cleanup_note);
    if (adv[0])
        cli_print("advice: %s", adv);
    cli_print("%s", passed(r) ? "PASS" : "FAIL");
}

/* ---- JSON ----------------------------------------------------------------- */

static cJSON *ms_json(int64_t ns)
{
    return cJSON_CreateNumber((double)(ns / 1000) / 1000.0);
}

static cJSON *report_json(const chk_report *r, int64_t rtt50, int64_t rtt99, const char *adv)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "uri", r->uri);
    cJSON_AddStringToObject(o, "store", r->backend);
    cJSON_AddStringToObject(o, "election", r->election);
    cJSON_AddNumberToObject(o, "candidates", r->candidates);
    cJSON_AddNumberToObject(o, "timeout_ms", r->timeout_ms);
    cli_json_add_i64(o, "takeover_bound_ms", r->takeover_bound);
    cJSON *phases = cJSON_AddArrayToObject(o, "phases");
    for (int i = 0; i < CHK_N_PHASES; i++) {
        chk_phase ph = r->phases[i];
        cJSON *p = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "name", ph.name);
        cJSON_AddNumberToObject(p, "rounds", ph.rounds);
        cJSON_AddNumberToObject(p, "done", ph.done);
        cJSON *t = cJSON_AddArrayToObject(p, "takeover_ms");
        for (int j = 0; j < ph.done; j++)
            cJSON_AddItemToArray(t, ms_json(ph.takeover_ns[j]));
        if (ph.done) {
            cJSON_AddItemToObject(p, "takeover_p50_ms",
                                  ms_json(chk_percentile(ph.takeover_ns, ph.done, 50)));
            cJSON_AddItemToObject(p, "takeover_p99_ms",
                                  ms_json(chk_percentile(ph.takeover_ns, ph.done, 99)));
        } else {
            cJSON_AddNullToObject(p, "takeover_p50_ms");
            cJSON_AddNullToObject(p, "takeover_p99_ms");
        }
        cJSON_AddStringToObject(p, "result", result_name(ph.result));
        if (ph.reason[0])
            cJSON_AddStringToObject(p, "reason", ph.reason);
        else
            cJSON_AddNullToObject(p, "reason");
        cJSON_AddItemToArray(phases, p);
    }
    cJSON *rtt = cJSON_AddObjectToObject(o, "round_trip");
    cJSON_AddNumberToObject(rtt, "samples", r->n_rtt);
    cJSON_AddItemToObject(rtt, "p50_ms", ms_json(rtt50));
    cJSON_AddItemToObject(rtt, "p99_ms", ms_json(rtt99));
    cJSON_AddNumberToObject(o, "leaderships", r->n_leads);
    cJSON *v = cJSON_AddArrayToObject(o, "violations");
    int shown = r->n_violations < 16 ? r->n_violations : 16;
    for (int i = 0; i < shown; i++)
        cJSON_AddItemToArray(v, cJSON_CreateString(r->violations[i]));
    cJSON *e = cJSON_AddArrayToObject(o, "errors");
    for (int i = 0; i < r->n_errors; i++)
        cJSON_AddItemToArray(e, cJSON_CreateString(r->errors[i]));
    if (r->interrupted)
        cJSON_AddItemToArray(e, cJSON_CreateString("interrupted"));
    cJSON_AddBoolToObject(o, "stopped_early", !r->interrupted && stopped_early(r));
    if (r->cleanup_note[0])
        cJSON_AddStringToObject(o, "note", r->cleanup_note);
    cJSON *a = cJSON_AddObjectToObject(o, "advice");
    if (r->n_rtt) {
        cJSON_AddStringToObject(a, "parameter", is_sql(r) ? "lease_ms" : "session_timeout_ms");
        cli_json_add_i64(a, "value", advised_ms(r, rtt99));
        cJSON_AddStringToObject(a, "text", adv);
    }
    cJSON_AddStringToObject(o, "result", passed(r) ? "pass" : "fail");
    return o;
}

int chk_print(cli *c, chk_report *r, bool json)
{
    int64_t rtt[64];
    memcpy(rtt, r->rtt_ns, sizeof(rtt));
    int64_t rtt50 = chk_percentile(rtt, r->n_rtt, 50), rtt99 = chk_percentile(rtt, r->n_rtt, 99);
    char adv[640] = "";
    if (r->n_rtt)
        advice(r, rtt99, adv, sizeof(adv));
    if (json) {
        if (cli_json_print(c, report_json(r, rtt50, rtt99, adv)))
            return CLI_EXIT_FAIL;
    } else {
        print_table(r, rtt50, rtt99, adv);
    }
    return passed(r) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
