/*
 * runs.c - `reign runs NAME [--json] [--last N]`: the record of slots of NAME (<reign/slot.h>),
 * newest slot first, each with its attempts: who ran it, on which host, under which term and
 * fencing token, from when to when by the store's clock, how it ended, and the verdict.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runs.h"

typedef struct runs {
    const char *name;
    int json;
    unsigned last;
} runs;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] runs NAME [OPTIONS]\n"
               "\n"
               "Show the record of the slots of NAME that `reign run NAME --slot|--every` ran,\n"
               "newest first: each attempt's owner and host, term and fencing token, start\n"
               "and end by the store's clock, result (running, exited N, killed N, stopped N,\n"
               "lost) and the slot's verdict (running, succeeded, retry, failed, abandoned).\n"
               "\n"
               "Options:\n"
               "      --last N            the N most recent slots only (default: all kept)\n"
               "      --json              print one JSON object: {\"name\",\"slots\":[{\"slot\",\n"
               "                          \"verdict\",\"runs\":[{\"attempt\",\"owner\",\"host\",\n"
               "                          \"term\",\"token\",\"start_ms\",\"end_ms\",\"result\",\n"
               "                          \"code\"}...]}...]}\n"
               "  -h, --help              show this help\n");
}

cJSON *cli_slot_json(const reign_slot_record *r)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "slot", r->key);
    cJSON_AddStringToObject(o, "verdict", reign_slot_verdict_name(r->verdict));
    cJSON *arr = cJSON_AddArrayToObject(o, "runs");
    for (size_t i = 0; arr && i < r->n_runs; i++) {
        const reign_slot_run *u = &r->runs[i];
        cJSON *j = cJSON_CreateObject();
        if (!j)
            break;
        cJSON_AddItemToArray(arr, j);
        cli_json_add_i64(j, "attempt", u->attempt);
        cJSON_AddStringToObject(j, "owner", u->owner);
        cJSON_AddStringToObject(j, "host", u->host);
        cli_json_add_u64(j, "term", u->term);
        cli_json_add_u64(j, "token", u->token);
        cli_json_add_i64(j, "start_ms", u->start_ms);
        if (u->end_ms)
            cli_json_add_i64(j, "end_ms", u->end_ms);
        else
            cJSON_AddNullToObject(j, "end_ms");
        cJSON_AddStringToObject(j, "result", reign_slot_result_name(u->result));
        cli_json_add_i64(j, "code", u->code);
    }
    return o;
}

void cli_slot_print(const reign_slot_record *r, const char *indent)
{
    char q[300], owner[300], host[300], from[40], to[40], how[32];
    cli_print("%s%s  %s", indent, cli_quote(r->key, q, sizeof(q)),
              reign_slot_verdict_name(r->verdict));
    for (size_t i = 0; i < r->n_runs; i++) {
        const reign_slot_run *u = &r->runs[i];
        if (u->result == REIGN_SLOT_EXITED || u->result == REIGN_SLOT_KILLED ||
            u->result == REIGN_SLOT_STOPPED)
            snprintf(how, sizeof(how), "%s %d", reign_slot_result_name(u->result), u->code);
        else
            snprintf(how, sizeof(how), "%s", reign_slot_result_name(u->result));
        cli_print("%s  attempt %u  %-10s  %s on %s  term %llu  token %llu  %s .. %s", indent,
                  u->attempt, how, cli_quote(u->owner, owner, sizeof(owner)),
                  cli_quote(u->host[0] ? u->host : "?", host, sizeof(host)),
                  (unsigned long long)u->term, (unsigned long long)u->token,
                  u->start_ms ? cli_iso8601(u->start_ms, from, sizeof(from)) : "?",
                  u->end_ms ? cli_iso8601(u->end_ms, to, sizeof(to)) : "");
    }
}

static void on_history(reign_client *client, int err, const reign_slot_record *slots, size_t n,
                       void *userdata)
{
    cli *c = userdata;
    runs *s = c->cmd_data;
    char q[300];
    (void)client;
    if (err < 0) {
        cli_error(c, "cannot read the runs of '%s': %s", cli_quote(s->name, q, sizeof(q)),
                  reign_strerror(err));
        cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    if (!s->json) {
        if (n == 0)
            cli_print("no slot of '%s' on record", cli_quote(s->name, q, sizeof(q)));
        for (size_t i = 0; i < n; i++)
            cli_slot_print(&slots[i], "");
        cli_exit(c, CLI_EXIT_OK);
        return;
    }
    cJSON *o = cJSON_CreateObject();
    if (o)
        cJSON_AddStringToObject(o, "name", s->name);
    cJSON *arr = o ? cJSON_AddArrayToObject(o, "slots") : NULL;
    bool oom = !arr;
    for (size_t i = 0; !oom && i < n; i++) {
        cJSON *j = cli_slot_json(&slots[i]);
        oom = !j;
        if (j)
            cJSON_AddItemToArray(arr, j);
    }
    if (oom) {
        cJSON_Delete(o);
        cli_error(c, "out of memory");
        cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    cli_exit(c, cli_json_print(c, o));
}

int cli_runs_main(cli *c, int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_LAST };
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"last", required_argument, NULL, OPT_LAST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static runs s;
    int o, r;
    long v;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case OPT_JSON:
            s.json = 1;
            break;
        case OPT_LAST:
            if (cli_parse_int(c, "--last", optarg, 1, REIGN_SLOT_KEEP_MAX, &v))
                return CLI_EXIT_USAGE;
            s.last = (unsigned)v;
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    if ((r = cli_election_name(c, argv, argc, "", &s.name)))
        return r;
    c->cmd_data = &s;
    if ((r = cli_client_new(c)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    r = reign_slot_history(c->client, s.name, s.last, on_history, c);
    if (r < 0) {
        char q[300];
        cli_quote(s.name, q, sizeof(q));
        if (r == REIGN_ENAME)
            cli_error(c,
                      "illegal election name '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, "
                      "not '.' or '..')",
                      q, REIGN_NAME_MAX);
        else
            cli_error(c, "cannot read the runs of '%s': %s", q, reign_strerror(r));
        return CLI_EXIT_FAIL;
    }
    cli_update(c);
    return cli_run(c);
}
