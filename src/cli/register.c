/*
 * register.c - `reign register GROUP`: be a member of a group until SIGINT or SIGTERM,
 * printing one line each time our registration appears or goes:
 *
 *   registered <id> node=<node> monotonic_ns=<ns>
 *   unregistered <id> reason=<session_lost|node_deleted> monotonic_ns=<ns>
 *
 * The library registers again by itself after either loss, so an `unregistered` line is
 * followed by a `registered` one.  On a signal the registration's node is deleted at once
 * (and with the session in any case), so watchers see the member leave.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"

typedef struct reg {
    reign_group *group;
} reg;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] register GROUP [OPTIONS]\n"
               "\n"
               "Be a member of GROUP until SIGINT or SIGTERM, then leave.  Prints a line on\n"
               "stdout each time the registration appears or goes (it comes back by itself\n"
               "after a session expiry, or after someone deleted it):\n"
               "  registered ID node=NODE monotonic_ns=NS\n"
               "  unregistered ID reason=session_lost|node_deleted monotonic_ns=NS\n"
               "\n"
               "Options:\n"
               "  -i, --id ID             member id (default: HOSTNAME-PID)\n"
               "  -d, --data DATA         payload others see, e.g. an address\n"
               "      --data-file FILE    read the payload from FILE ('-': stdin)\n"
               "  -h, --help              show this help\n");
}

static void on_event(reign_group *g, const reign_group_event *ev, void *userdata)
{
    cli *c = userdata;
    switch (ev->type) {
    case REIGN_GROUP_REGISTERED:
        cli_print("registered %s node=%s monotonic_ns=%lld", reign_group_id(g), ev->node,
                  (long long)ev->at_ns);
        break;
    case REIGN_GROUP_UNREGISTERED:
        cli_print("unregistered %s reason=%s monotonic_ns=%lld", reign_group_id(g),
                  reign_group_loss_name(ev->reason), (long long)ev->at_ns);
        break;
    case REIGN_GROUP_ERROR:
        cli_error(c, "%s", ev->message ? ev->message : reign_strerror(ev->error));
        cli_exit(c, CLI_EXIT_FAIL);
        break;
    }
}

static void on_signal(cli *c, int signum)
{
    reg *r = c->cmd_data;
    (void)signum;
    /* The delete goes out now; closing the session would remove the node too. */
    r->group = reign_group_free(r->group);
    cli_exit(c, CLI_EXIT_OK);
}

int cli_register_main(cli *c, int argc, char **argv)
{
    enum { OPT_DATA_FILE = 256 };
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},
        {"data", required_argument, NULL, 'd'},
        {"data-file", required_argument, NULL, OPT_DATA_FILE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static reg r;
    reign_group_options go;
    memset(&go, 0, sizeof(go));
    cli_data data = {0};
    int o, rc;

    while ((o = getopt_long(argc, argv, ":i:d:h", opts, NULL)) != -1) {
        switch (o) {
        case 'i':
            go.id = optarg;
            break;
        case 'd':
            cli_data_set(&data, optarg);
            break;
        case OPT_DATA_FILE:
            if ((rc = cli_data_read(c, &data, optarg)))
                goto out;
            break;
        case 'h':
            usage(stdout);
            rc = CLI_EXIT_OK;
            goto out;
        default:
            rc = cli_bad_option(c, o, argv);
            goto out;
        }
    }
    const char *name;
    if ((rc = cli_one_arg(c, argv, argc, "GROUP", &name)))
        goto out;
    c->cmd_data = &r;
    c->guarded = 1;
    if ((rc = cli_client_new(c)))
        goto out;
    go.size = sizeof(go);
    go.data = data.data;
    go.data_len = data.len;
    go.cb = on_event;
    go.userdata = c;
    /* Before connecting: a bad name, id or payload is reported at once. */
    int err = reign_group_register(&r.group, c->client, name, &go);
    if (err < 0) {
        r.group = NULL;
        rc = fmt_group_refused(c, err, name, go.id, go.data_len);
        goto out;
    }
    if ((rc = cli_connect(c)))
        goto out;
    c->on_signal = on_signal;
    rc = cli_run(c);
out:
    /* Before the client goes (cli_cleanup): the delete is sent first. */
    r.group = reign_group_free(r.group);
    cli_data_free(&data);
    return rc;
}
