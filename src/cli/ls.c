/*
 * ls.c - `reign ls [PREFIX]`: what a store holds (<reign/store.h>): its
 * elections, groups, values and task queues, one line each,
 *
 *   KIND NAME standing=N [leader=ID] [slots=N] [used-by=PROGRAM] [foreign]
 *
 * or, with --json, one JSON array of
 * {"kind","name","standing","leader","slots","used_by","foreign"}.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct ls {
    const char *prefix;
    int json;
} ls;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] ls [PREFIX] [OPTIONS]\n"
               "\n"
               "List what the store holds: elections, groups, values (by key) and task queues,\n"
               "those whose name starts with PREFIX, one per line:\n"
               "  KIND NAME standing=N [leader=ID] [slots=N] [used-by=PROGRAM] [foreign]\n"
               "standing: candidates of an election (SQL: 1 while a lease is held), members\n"
               "of a group.  slots: slots of `reign run --slot|--every` on record (`reign\n"
               "runs`).  used-by=reignd: a value reignd keeps for an election (its\n"
               "breadcrumb, layout or pause mark).  foreign: the node or row is not reign's;\n"
               "reign leaves it alone.\n"
               "\n"
               "Options:\n"
               "      --json              print one JSON array of {\"kind\",\"name\",\n"
               "                          \"standing\",\"leader\",\"slots\",\"used_by\",\n"
               "                          \"foreign\"}\n"
               "  -h, --help              show this help\n");
}

static int print_json(cli *c, const reign_entry *v, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    if (!a)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            goto oom;
        cJSON_AddItemToArray(a, o);
        cJSON_AddStringToObject(o, "kind", reign_entry_kind_name(v[i].kind));
        cJSON_AddStringToObject(o, "name", v[i].name);
        cli_json_add_u64(o, "standing", v[i].standing);
        if (v[i].leader)
            cJSON_AddStringToObject(o, "leader", v[i].leader);
        else
            cJSON_AddNullToObject(o, "leader");
        cli_json_add_u64(o, "slots", v[i].slots);
        if (v[i].used_by)
            cJSON_AddStringToObject(o, "used_by", v[i].used_by);
        else
            cJSON_AddNullToObject(o, "used_by");
        cJSON_AddBoolToObject(o, "foreign", v[i].foreign);
    }
    return cli_json_print(c, a);
oom:
    cJSON_Delete(a);
    cli_error(c, "out of memory");
    return CLI_EXIT_FAIL;
}

static void on_list(reign_client *client, int err, const reign_entry *v, size_t n, void *userdata)
{
    cli *c = userdata;
    ls *s = c->cmd_data;
    (void)client;
    if (err < 0) {
        cli_error(c, "cannot list the store: %s", reign_strerror(err));
        cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    if (s->json) {
        cli_exit(c, print_json(c, v, n));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        char name[512], leader[512] = "", slots[32] = "", user[64] = "";
        cli_quote(v[i].name, name, sizeof(name));
        if (v[i].leader) {
            char q[REIGN_ID_MAX * 4 + 8];
            snprintf(leader, sizeof(leader), " leader=%s", cli_quote(v[i].leader, q, sizeof(q)));
        }
        if (v[i].slots)
            snprintf(slots, sizeof(slots), " slots=%zu", v[i].slots);
        if (v[i].used_by)
            snprintf(user, sizeof(user), " used-by=%s", v[i].used_by);
        cli_print("%-8s %s standing=%zu%s%s%s%s", reign_entry_kind_name(v[i].kind), name,
                  v[i].standing, leader, slots, user, v[i].foreign ? " foreign" : "");
    }
    cli_exit(c, CLI_EXIT_OK);
}

int cli_ls_main(cli *c, int argc, char **argv)
{
    static ls s;
    int r;
    if (cli_json_options(c, argc, argv, usage, &s.json, &r))
        return r;
    if (argc - optind > 1)
        return cli_usage_error(c, "ls takes at most one PREFIX");
    s.prefix = optind < argc ? argv[optind] : "";
    c->cmd_data = &s;
    if ((r = cli_client_new(c)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    r = reign_store_list(c->client, s.prefix, on_list, c);
    if (r < 0) {
        cli_error(c, "cannot list the store: %s", reign_strerror(r));
        return CLI_EXIT_FAIL;
    }
    cli_update(c);
    return cli_run(c);
}
