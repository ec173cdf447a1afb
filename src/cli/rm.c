/*
 * rm.c - `reign rm NAME`: remove an election, group, value (by key) or task queue
 * nobody stands in (<reign/store.h>).  Without --kind, NAME must name one entry of the
 * store (`reign ls` tells which).  Refused, with exit status 1, while
 * somebody stands in it: the message names who.  There is no --force: on
 * ZooKeeper the candidates' and members' nodes are their sessions' own, and
 * removing the election from under them would depose a leader behind its
 * back; stop them (or `reign cede`) first.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct rm {
    const char *name;
    reign_entry_kind kind;
} rm;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] rm NAME [OPTIONS]\n"
               "\n"
               "Remove election, group, value or task queue NAME from the store if nobody\n"
               "stands in it (no candidate, no member; a queue: no worker, no master; on a\n"
               "SQL store: no live lease, no listed candidate), and print\n"
               "  removed KIND NAME\n"
               "A value is named by its whole key (app/config), as `reign ls` lists it.\n"
               "Refused (exit 1) while somebody does, naming who; data that is not reign's\n"
               "is never removed.  Fencing tokens never go back: an election made again\n"
               "after its removal leads with tokens above the old ones (on a SQL store its\n"
               "lease row stays, cleared, with its term).\n"
               "\n"
               "Options:\n"
               "  -k, --kind KIND         election, group, value or queue: which NAME (needed\n"
               "                          when several kinds hold that name)\n"
               "  -h, --help              show this help\n");
}

static void on_removed(reign_client *client, int err, const char *const *standing, size_t n,
                       void *userdata)
{
    cli *c = userdata;
    rm *s = c->cmd_data;
    const char *kind = reign_entry_kind_name(s->kind);
    char name[512];
    (void)client;
    cli_quote(s->name, name, sizeof(name));
    if (err == 0) {
        cli_print("removed %s %s", kind, name);
        cli_exit(c, CLI_EXIT_OK);
        return;
    }
    if (err == REIGN_EBUSY) {
        char who[1024] = "";
        size_t used = 0;
        for (size_t i = 0; i < n && used < sizeof(who); i++) {
            char q[REIGN_ID_MAX * 4 + 8];
            int w = snprintf(who + used, sizeof(who) - used, "%s'%s'", i ? ", " : "",
                             cli_quote(standing[i], q, sizeof(q)));
            used += w > 0 ? (size_t)w : 0;
        }
        if (n)
            cli_error(c, "%s '%s' is in use, not removed: %s %s", kind, name, who,
                      s->kind == REIGN_ENTRY_GROUP ? (n == 1 ? "is its member" : "are its members")
                      : s->kind == REIGN_ENTRY_QUEUE
                          ? (n == 1 ? "works or masters for it" : "work or master for it")
                          : (n == 1 ? "stands in it" : "stand in it"));
        else
            cli_error(c, "%s '%s' is in use, not removed: somebody joined or changed it meanwhile",
                      kind, name);
    } else if (err == REIGN_ENOENT) {
        cli_error(c, "no %s '%s'", kind, name);
    } else if (err == REIGN_EFOREIGN) {
        cli_error(c, "%s '%s' is not reign's (foreign data): left alone", kind, name);
    } else {
        cli_error(c, "cannot remove %s '%s': %s", kind, name, reign_strerror(err));
    }
    cli_exit(c, CLI_EXIT_FAIL);
}

static void start_remove(cli *c)
{
    rm *s = c->cmd_data;
    int r = reign_store_remove(c->client, s->kind, s->name, on_removed, c);
    if (r < 0)
        on_removed(c->client, r, NULL, 0, c);
}

/* Without --kind: the one kind that holds NAME. */
static void on_list(reign_client *client, int err, const reign_entry *v, size_t n, void *userdata)
{
    cli *c = userdata;
    rm *s = c->cmd_data;
    char name[512];
    (void)client;
    cli_quote(s->name, name, sizeof(name));
    if (err < 0) {
        cli_error(c, "cannot read the store: %s", reign_strerror(err));
        cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    size_t found = 0;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, s->name) && found++ == 0)
            s->kind = v[i].kind;
    if (found == 0) {
        cli_error(c, "no election, group, value or queue '%s'", name);
        cli_exit(c, CLI_EXIT_FAIL);
    } else if (found > 1) {
        cli_error(c, "several kinds hold '%s': give --kind election|group|value|queue", name);
        cli_exit(c, CLI_EXIT_USAGE);
    } else {
        start_remove(c);
    }
}

int cli_rm_main(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"kind", required_argument, NULL, 'k'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static rm s;
    int o, r;

    while ((o = getopt_long(argc, argv, ":k:h", opts, NULL)) != -1) {
        switch (o) {
        case 'k':
            s.kind = reign_entry_kind_of(optarg);
            if (!s.kind) {
                char q[128];
                return cli_usage_error(c, "--kind '%s': want election, group, value or queue",
                                       cli_quote(optarg, q, sizeof(q)));
            }
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    if (argc - optind != 1)
        return cli_usage_error(c, "rm takes one NAME");
    s.name = argv[optind];
    c->cmd_data = &s;
    if ((r = cli_client_new(c)))
        return r;
    if ((r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    if (s.kind) {
        start_remove(c);
    } else if ((r = reign_store_list(c->client, s.name, on_list, c)) < 0) {
        cli_error(c, "cannot read the store: %s", reign_strerror(r));
        return CLI_EXIT_FAIL;
    }
    cli_update(c);
    return cli_run(c);
}
