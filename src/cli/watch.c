/*
 * watch.c - `reign watch NAME`: follow an election as an observer (without
 * standing) and print one line each time its leader changes:
 *
 *   leader <id> term=<term> token=<token> since_ms=<ms> monotonic_ns=<ns>
 *   leader none monotonic_ns=<ns>
 *
 * (since_ms=- where the store does not say since when: a SQL lease row)
 *
 * or, with --json, one JSON object per line.  The first line is the leader
 * found on joining.  Runs until SIGINT or SIGTERM.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct watch {
    int json;
    /* the last leader printed, so a repeated report prints nothing */
    int printed;
    int has_leader;
    uint64_t term;
    uint64_t token;
    char id[REIGN_ID_MAX + 1];
} watch;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] watch NAME [OPTIONS]\n"
               "\n"
               "Follow election NAME without standing; print a line each time its leader\n"
               "changes, until SIGINT or SIGTERM:\n"
               "  leader ID term=TERM token=TOKEN since_ms=MS monotonic_ns=NS\n"
               "  leader none monotonic_ns=NS\n"
               "(since_ms=- where the store does not say, as a SQL lease row does not)\n"
               "\n"
               "Options:\n"
               "      --json              one JSON object per line instead:\n"
               "                          {\"election\":...,\"leader\":{...}|null,"
               "\"monotonic_ns\":...}\n"
               "  -h, --help              show this help\n");
}

static int same_as_printed(const watch *w, const reign_leader *l)
{
    if (!w->printed)
        return 0;
    if (!l)
        return !w->has_leader;
    return w->has_leader && w->term == l->term && w->token == l->token &&
           strcmp(w->id, l->id ? l->id : "") == 0;
}

static void report(cli *c, reign_election *e, const reign_leader *l, int64_t at_ns)
{
    watch *w = c->cmd_data;
    if (same_as_printed(w, l))
        return;
    w->printed = 1;
    w->has_leader = l != NULL;
    if (l) {
        w->term = l->term;
        w->token = l->token;
        snprintf(w->id, sizeof(w->id), "%s", l->id ? l->id : "");
    }

    if (w->json) {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "election", reign_election_name(e));
            cJSON *lj = l ? cli_json_leader(l) : cJSON_CreateNull();
            if (lj)
                cJSON_AddItemToObject(o, "leader", lj);
            cli_json_add_i64(o, "monotonic_ns", at_ns);
        }
        if (cli_json_print(c, o))
            cli_exit(c, CLI_EXIT_FAIL);
    } else if (l) {
        /* "-" where the store does not say since when (a SQL lease row) */
        char since[24] = "-";
        if (l->since_ms)
            snprintf(since, sizeof(since), "%lld", (long long)l->since_ms);
        cli_print("leader %s term=%llu token=%llu since_ms=%s monotonic_ns=%lld",
                  l->id && *l->id ? l->id : "-", (unsigned long long)l->term,
                  (unsigned long long)l->token, since, (long long)at_ns);
    } else {
        cli_print("leader none monotonic_ns=%lld", (long long)at_ns);
    }
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    switch (ev->type) {
    case REIGN_ELECTION_READY:
    case REIGN_ELECTION_LEADER_CHANGED:
        report(c, e, ev->leader, ev->at_ns);
        break;
    default:
        cli_election_end(c, e, ev);
        break;
    }
}

int cli_watch_main(cli *c, int argc, char **argv)
{
    /* static: callbacks may still see it during cleanup, after we return */
    static watch w;
    int r;
    if (cli_json_options(c, argc, argv, usage, &w.json, &r))
        return r;
    const char *name;
    if ((r = cli_election_name(c, argv, argc, "", &name)))
        return r;

    c->cmd_data = &w;
    if ((r = cli_client_new(c)))
        return r;
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.observer = 1;
    eo.cb = on_event;
    eo.userdata = c;
    if ((r = cli_join(c, name, &eo)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    return cli_run(c);
}
