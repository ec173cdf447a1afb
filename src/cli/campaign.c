/*
 * campaign.c - `reign campaign NAME`: stand for leader of an election and
 * stay until SIGINT or SIGTERM, printing one line per change of our own
 * leadership:
 *
 *   elected <id> term=<term> token=<token> monotonic_ns=<ns>
 *   demoted <id> reason=<reason> monotonic_ns=<ns>
 *
 * The times are the events' own (when the change took effect, by
 * CLOCK_MONOTONIC), not when the line was printed, so that a checker can
 * compare the lines of several processes on one host and prove that
 * leaderships never overlap.  On a signal it resigns and waits (bounded)
 * until its node is deleted, so the next candidate takes over at once.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: reign [GLOBAL OPTIONS] campaign NAME [OPTIONS]\n"
            "\n"
            "Stand for leader of election NAME until SIGINT or SIGTERM, then resign.\n"
            "Prints one line on stdout for each change of this candidate's leadership:\n"
            "  elected ID term=TERM token=TOKEN monotonic_ns=NS\n"
            "  demoted ID reason=REASON monotonic_ns=NS\n"
            "\n"
            "Options:\n"
            "  -i, --id ID             candidate id (default: HOSTNAME-PID)\n"
            "  -d, --data DATA         payload other processes see, e.g. an address\n"
            "      --data-file FILE    read the payload from FILE ('-': stdin)\n"
            "  -s, --strategy NAME     queue (default) or lock, for a new election\n" CLI_RANK_HELP
            "  -h, --help              show this help\n");
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        cli_print("elected %s term=%llu token=%llu monotonic_ns=%lld", reign_election_id(e),
                  (unsigned long long)ev->term, (unsigned long long)ev->token,
                  (long long)ev->at_ns);
        break;
    case REIGN_ELECTION_DEMOTED:
        cli_print("demoted %s reason=%s monotonic_ns=%lld", reign_election_id(e),
                  reign_demote_reason_name(ev->reason), (long long)ev->at_ns);
        break;
    case REIGN_ELECTION_READY:
        cli_log(c, REIGN_LOG_INFO, "standing in election '%s' as '%s'", reign_election_name(e),
                reign_election_id(e));
        break;
    default:
        cli_election_end(c, e, ev);
        break;
    }
}

int cli_campaign_main(cli *c, int argc, char **argv)
{
    enum { OPT_DATA_FILE = 256 };
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},
        {"data", required_argument, NULL, 'd'},
        {"data-file", required_argument, NULL, OPT_DATA_FILE},
        {"strategy", required_argument, NULL, 's'},
        CLI_RANK_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    cli_data data = {0};
    int o, r;

    while ((o = getopt_long(argc, argv, ":i:d:s:h", opts, NULL)) != -1) {
        switch (o) {
        case 'i':
            eo.id = optarg;
            break;
        case 'd':
            cli_data_set(&data, optarg);
            break;
        case OPT_DATA_FILE:
            if ((r = cli_data_read(c, &data, optarg)))
                goto out;
            break;
        case 's':
            if ((r = cli_parse_strategy(c, optarg, &eo.strategy)))
                goto out;
            break;
        case 'h':
            usage(stdout);
            r = CLI_EXIT_OK;
            goto out;
        default:
            if ((r = cli_rank_option(c, o, optarg, &eo)) >= 0) {
                if (r)
                    goto out;
                break;
            }
            r = cli_bad_option(c, o, argv);
            goto out;
        }
    }
    const char *name;
    if ((r = cli_election_name(c, argv, argc, "", &name)))
        goto out;

    c->guarded = 1;
    if ((r = cli_client_new(c)))
        goto out;
    /* Listed on a SQL store, so that `reign status` names it and `reign designate` finds it
     * (ZooKeeper lists every candidate anyway). */
    eo.listed = 1;
    eo.data = data.data;
    eo.data_len = data.len;
    eo.cb = on_event;
    eo.userdata = c;
    /* Join before connecting: a bad name, id or payload is reported at once,
     * whether or not the store answers. */
    if ((r = cli_join(c, name, &eo)))
        goto out;
    if ((r = cli_connect(c)))
        goto out;
    c->on_signal = cli_leave_on_signal;
    r = cli_run(c);
out:
    /* The library copied the payload at join. */
    cli_data_free(&data);
    return r;
}
