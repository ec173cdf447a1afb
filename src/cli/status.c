/*
 * status.c - `reign status NAME`: one snapshot of an election (its leader
 * and its candidates in the order in which they would lead), as text for
 * people or, with --json, as one JSON object for scripts.
 *
 * When `reign run NAME --slot|--every` has run slots of NAME, the latest
 * one is shown too (its key, verdict and attempts: `reign runs` has them all).
 *
 * Payloads are shown as text when they are printable UTF-8 (without the line
 * ends they end in), else in base64 (JSON key "data_base64" instead of "data"),
 * so that the output stays one terminal-safe line per item whatever a
 * candidate published.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "runs.h"

typedef struct status {
    const char *name;
    int json;
    cJSON *slot; /* the latest slot of `reign run NAME --slot|--every`, or NULL */
    cJSON *last; /* the last change of leader (history.c's form), or NULL */
} status;

static void usage(FILE *f)
{
    fprintf(
        f, "Usage: reign [GLOBAL OPTIONS] status NAME [OPTIONS]\n"
           "\n"
           "Show the leader of election NAME (id, payload, term, fencing token, since\n"
           "when) and its candidates in the order in which they would lead (a SQL\n"
           "lease table knows its leader only).  Also the backend and the worst-case\n"
           "takeover time after a leader's crash for the election's own settings (the\n"
           "leader's session timeout, or the lease in the row), and where it comes from.\n"
           "\n"
           "Options:\n"
           "      --json              print one JSON object:\n"
           "                          {\"election\",\"backend\",\"strategy\",\"takeover_ms\",\n"
           "                          \"takeover_from\":\"leader\"|\"candidates\"|\"lease\"|\n"
           "                          \"this client\",\n"
           "                          \"leader\":{\"id\",\"data\",\"term\",\n"
           "                          \"token\",\"since_ms\"}|null,\"candidates\":[{\"id\","
           "\"data\",\n"
           "                          \"node\",\"joined_ms\",\"priority\"}...],\n"
           "                          \"slot\":{\"slot\",\"verdict\",\"runs\":[...]}|null,\n"
           "                          \"last_change\":{\"term\",\"id\",\"started_ms\",\n"
           "                          \"previous\":{\"id\",\"end\",\"ended_ms\",\"gap_ms\"}|null}\n"
           "                          |null}\n"
           "                          (the latest slot of `reign run --slot|--every`;\n"
           "                          since_ms, joined_ms: null where the store does not\n"
           "                          say, as a SQL lease row does not; last_change: the\n"
           "                          newest leadership and how the one before ended,\n"
           "                          as `reign history` tells them)\n"
           "  -h, --help              show this help\n");
}

/* One "label:   value" line, values aligned at column `width`. */
static void field(int width, const char *label, const char *value)
{
    cli_print("%-*s %s", width - 1, label, value);
}

/* "data: TEXT" (without trailing line ends) or "data_base64: B64"; nothing if empty. */
static void print_data(int width, const char *indent, const void *data, size_t len)
{
    char label[32];
    if (!data || !len)
        return;
    long shown = cli_data_line_len(data, len);
    if (shown >= 0) {
        snprintf(label, sizeof(label), "%sdata:", indent);
        cli_print("%-*s %.*s", width - 1, label, (int)shown, (const char *)data);
    } else {
        char *b = cli_base64(data, len);
        snprintf(label, sizeof(label), "%sdata_base64:", indent);
        field(width, label, b ? b : "(out of memory)");
        free(b);
    }
}

static const char *show_id(const char *id)
{
    return id && *id ? id : "(unknown)";
}

/* "queue" or "lock" on ZooKeeper and etcd; a SQL store has one lease row per election. */
static const char *strategy_of(const reign_client *client, const reign_election_view *v)
{
    const char *b = reign_client_backend(client);
    return strcmp(b, "zookeeper") && strcmp(b, "etcd") ? "lease" : reign_strategy_name(v->strategy);
}

/* A number of the slot's JSON form (cli_slot_json() writes them raw, exactly). */
static const char *raw(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return v && v->valuestring ? v->valuestring : "?";
}

/* The latest slot, from its JSON form. */
static void print_slot(int width, const cJSON *slot)
{
    char line[600];
    const cJSON *runs = cJSON_GetObjectItem(slot, "runs");
    snprintf(line, sizeof(line), "%s (%s)", raw(slot, "slot"), raw(slot, "verdict"));
    field(width, "slot:", line);
    const cJSON *u = runs ? cJSON_GetArrayItem(runs, cJSON_GetArraySize(runs) - 1) : NULL;
    if (!u)
        return;
    snprintf(line, sizeof(line), "%s, %s %s, %s on %s, token %s", raw(u, "attempt"),
             raw(u, "result"), raw(u, "code"), raw(u, "owner"), raw(u, "host"), raw(u, "token"));
    field(width, "  last attempt:", line);
}

/*
 * The worst case from the leader's crash to the next election, for the
 * election's own settings: the leader's session timeout, written in its
 * node, or the lease in the row.  Only when the election does not say
 * (records not written by reign) this client's own, said as such.
 */
static int64_t takeover_ms(const reign_client *client, const reign_election_view *v,
                           const char **from)
{
    static const char *const names[] = {
        [REIGN_TAKEOVER_LEADER] = "the leader's session timeout",
        [REIGN_TAKEOVER_CANDIDATES] = "the longest session timeout of the candidates",
        [REIGN_TAKEOVER_LEASE] =
            "the lease in the row, plus a poll and the statements of a takeover",
    };
    if (v->takeover_ms > 0 && v->takeover_from > REIGN_TAKEOVER_UNKNOWN &&
        v->takeover_from <= REIGN_TAKEOVER_LEASE) {
        *from = names[v->takeover_from];
        return v->takeover_ms;
    }
    *from = "this client's settings: the election does not say";
    return reign_client_takeover_ms(client);
}

static const char *takeover_key(const reign_election_view *v)
{
    switch (v->takeover_ms > 0 ? v->takeover_from : REIGN_TAKEOVER_UNKNOWN) {
    case REIGN_TAKEOVER_LEADER:
        return "leader";
    case REIGN_TAKEOVER_CANDIDATES:
        return "candidates";
    case REIGN_TAKEOVER_LEASE:
        return "lease";
    default:
        return "this client";
    }
}

static void print_text(const reign_client *client, const reign_election_view *v)
{
    char t[64], n[160];
    const int w = 18; /* fits "    data_base64:" */
    const char *from;
    field(w, "election:", v->name);
    field(w, "backend:", reign_client_backend(client));
    field(w, "strategy:", strategy_of(client, v));
    int64_t ms = takeover_ms(client, v, &from);
    snprintf(n, sizeof(n), "%lld ms after a crash (%s)", (long long)ms, from);
    field(w, "takeover:", n); /* the worst case */
    if (v->has_leader) {
        const reign_leader *l = &v->leader;
        field(w, "leader:", show_id(l->id));
        snprintf(n, sizeof(n), "%llu", (unsigned long long)l->term);
        field(w, "  term:", n);
        snprintf(n, sizeof(n), "%llu", (unsigned long long)l->token);
        field(w, "  token:", n);
        if (l->since_ms) /* unknown on SQL: the row does not say */
            field(w, "  since:", cli_iso8601(l->since_ms, t, sizeof(t)));
        print_data(w, "  ", l->data, l->data_len);
    } else {
        field(w, "leader:", "none");
    }
    snprintf(n, sizeof(n), "%zu", v->n_candidates);
    field(w, "candidates:", n);
    for (size_t i = 0; i < v->n_candidates; i++) {
        const reign_candidate *k = &v->candidates[i];
        cli_print("  %zu. %s", i + 1, show_id(k->id));
        field(w, "    node:", k->node ? k->node : "");
        if (k->joined_ms)
            field(w, "    joined:", cli_iso8601(k->joined_ms, t, sizeof(t)));
        if (k->priority) {
            snprintf(n, sizeof(n), "%d%s", k->priority,
                     k->priority > REIGN_PRIORITY_MAX ? " (designated)" : "");
            field(w, "    priority:", n);
        }
        print_data(w, "    ", k->data, k->data_len);
    }
}

/* "term 5 (b) at 2026-...Z; before it a ended (guardian), no leader for 12 ms". */
static void print_last(int width, const cJSON *last)
{
    char t[64], line[512];
    const cJSON *prev = cJSON_GetObjectItem(last, "previous");
    int n = snprintf(line, sizeof(line), "term %s (%s) at %s", raw(last, "term"),
                     cJSON_GetStringValue(cJSON_GetObjectItem(last, "id")),
                     cli_iso8601(strtoll(raw(last, "started_ms"), NULL, 10), t, sizeof(t)));
    if (cJSON_IsObject(prev) && n > 0 && (size_t)n < sizeof(line)) {
        const char *gap = raw(prev, "gap_ms");
        bool known = strcmp(gap, "?") != 0;
        snprintf(line + n, sizeof(line) - (size_t)n, "; before it %s ended (%s)%s%s%s",
                 cJSON_GetStringValue(cJSON_GetObjectItem(prev, "id")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(prev, "end")),
                 known ? ", no leader for " : "", known ? gap : "", known ? " ms" : "");
    }
    field(width, "last change:", line);
}

static int print_json(cli *c, const reign_election_view *v)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        goto oom;
    cJSON_AddStringToObject(o, "election", v->name);
    cJSON_AddStringToObject(o, "backend", reign_client_backend(c->client));
    cJSON_AddStringToObject(o, "strategy", strategy_of(c->client, v));
    const char *from;
    cli_json_add_i64(o, "takeover_ms", takeover_ms(c->client, v, &from));
    cJSON_AddStringToObject(o, "takeover_from", takeover_key(v));
    status *s = c->cmd_data;
    cJSON *l = v->has_leader ? cli_json_leader(&v->leader) : cJSON_CreateNull();
    if (!l)
        goto oom;
    cJSON_AddItemToObject(o, "leader", l);
    cJSON *arr = cJSON_AddArrayToObject(o, "candidates");
    if (!arr)
        goto oom;
    for (size_t i = 0; i < v->n_candidates; i++) {
        const reign_candidate *k = &v->candidates[i];
        cJSON *j = cJSON_CreateObject();
        if (!j)
            goto oom;
        cJSON_AddItemToArray(arr, j);
        cJSON_AddStringToObject(j, "id", k->id ? k->id : "");
        cli_json_add_data(j, k->data, k->data_len);
        cJSON_AddStringToObject(j, "node", k->node ? k->node : "");
        cli_json_add_ms(j, "joined_ms", k->joined_ms);
        cli_json_add_i64(j, "priority", k->priority);
    }
    if (s->slot) {
        cJSON_AddItemToObject(o, "slot", s->slot);
        s->slot = NULL;
    } else {
        cJSON_AddNullToObject(o, "slot");
    }
    if (s->last) {
        cJSON_AddItemToObject(o, "last_change", s->last);
        s->last = NULL;
    } else {
        cJSON_AddNullToObject(o, "last_change");
    }
    return cli_json_print(c, o);
oom:
    cJSON_Delete(o);
    cli_error(c, "out of memory");
    return CLI_EXIT_FAIL;
}

/* "tree" on ZooKeeper and etcd (an election is a node), else "lease". */
static const char *strategy_backend(const cli *c)
{
    const char *b = c->client ? reign_client_backend(c->client) : "";
    return strcmp(b, "zookeeper") && strcmp(b, "etcd") ? "lease" : "tree";
}

static int query_failed(cli *c, const char *name, int err)
{
    char q[512];
    cli_quote(name, q, sizeof(q));
    if (err == REIGN_ENOENT)
        cli_error(c, "no such election '%s'", q);
    else if (err == REIGN_ENAME)
        cli_error(c,
                  "illegal election name '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, "
                  "not '.' or '..')",
                  q, REIGN_NAME_MAX);
    else if (err == REIGN_EFOREIGN && !strcmp(strategy_backend(c), "tree"))
        cli_error(c,
                  "cannot read election '%s': its node /reign/election/%s holds data reign "
                  "did not write (nothing was changed)",
                  q, q);
    else
        cli_error(c, "cannot read election '%s': %s", q, reign_strerror(err));
    return CLI_EXIT_FAIL;
}

static void on_query(reign_client *client, int err, const reign_election_view *view, void *userdata)
{
    cli *c = userdata;
    status *s = c->cmd_data;
    (void)client;
    if (err < 0 || !view) {
        cli_exit(c, query_failed(c, s->name, err < 0 ? err : REIGN_EBACKEND));
        return;
    }
    if (s->json) {
        cli_exit(c, print_json(c, view));
    } else {
        print_text(c->client, view);
        if (s->slot)
            print_slot(18, s->slot);
        if (s->last)
            print_last(18, s->last);
        cli_exit(c, CLI_EXIT_OK);
    }
}

/* The newest leadership and the end of the one before (a store without history: none). */
static cJSON *last_change(const reign_term *t, size_t n)
{
    if (!n)
        return NULL;
    const reign_term *x = &t[n - 1], *p = n > 1 ? &t[n - 2] : NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cli_json_add_u64(o, "term", x->term);
    cJSON_AddStringToObject(o, "id", x->id ? x->id : "");
    cli_json_add_ms(o, "started_ms", x->started_ms);
    cJSON *q = p ? cJSON_AddObjectToObject(o, "previous") : cJSON_AddNullToObject(o, "previous");
    if (p && q) {
        cJSON_AddStringToObject(q, "id", p->id ? p->id : "");
        cJSON_AddStringToObject(q, "end", reign_term_end_name(p->end));
        cli_json_add_ms(q, "ended_ms", p->ended_ms);
        if (p->ended_ms)
            cli_json_add_i64(q, "gap_ms", x->started_ms - p->ended_ms);
        else
            cJSON_AddNullToObject(q, "gap_ms");
    }
    return o;
}

static void on_terms(reign_client *client, int err, const reign_term *terms, size_t n,
                     void *userdata)
{
    cli *c = userdata;
    status *s = c->cmd_data;
    if (err == 0)
        s->last = last_change(terms, n);
    int r = reign_election_query(client, s->name, on_query, c);
    if (r < 0)
        cli_exit(c, query_failed(c, s->name, r));
}

/* The latest slot, read before the election (its record outlives the callback as JSON). */
static void on_history(reign_client *client, int err, const reign_slot_record *slots, size_t n,
                       void *userdata)
{
    cli *c = userdata;
    status *s = c->cmd_data;
    if (err == 0 && n > 0)
        s->slot = cli_slot_json(&slots[0]);
    int r = reign_election_history(client, s->name, 0, on_terms, c);
    if (r == REIGN_ENOTSUP) /* a store without history */
        r = reign_election_query(client, s->name, on_query, c);
    if (r < 0)
        cli_exit(c, query_failed(c, s->name, r));
}

int cli_status_main(cli *c, int argc, char **argv)
{
    static status s;
    int r;
    if (cli_json_options(c, argc, argv, usage, &s.json, &r))
        return r;
    if ((r = cli_election_name(c, argv, argc, "", &s.name)))
        return r;
    c->cmd_data = &s;

    if ((r = cli_client_new(c)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    r = reign_slot_history(c->client, s.name, 1, on_history, c);
    if (r < 0)
        return query_failed(c, s.name, r);
    cli_update(c);
    r = cli_run(c);
    cJSON_Delete(s.slot);
    cJSON_Delete(s.last);
    s.slot = s.last = NULL;
    return r;
}
