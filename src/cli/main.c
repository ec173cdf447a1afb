/*
 * main.c - entry point of the `reign` tool: global options, then one
 * subcommand (the table below; cli.h declares them), each in its own file.
 *
 * Global options come before the subcommand; parsing stops at the first
 * non-option, which names the subcommand, and the rest is the subcommand's.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "toollog.h"

static const struct {
    const char *name;
    cli_main_fn *main;
    const char *summary;
} commands[] = {
    {"campaign", cli_campaign_main, "stand for leader and report each change of leadership"},
    {"run", cli_run_main, "run a command while leading, or once per slot (cron, timers)"},
    {"runs", cli_runs_main, "show the record of a slot's runs: who ran it, when, how it ended"},
    {"status", cli_status_main, "show the leader and the candidates of an election"},
    {"history", cli_history_main, "show an election's last leaderships and how each ended"},
    {"watch", cli_watch_main, "print a line each time the leader changes"},
    {"cede", cli_cede_main, "make the current leader step down, wait for the next one"},
    {"designate", cli_designate_main, "name the leader: hand over to a standing candidate"},
    {"register", cli_register_main, "be a member of a group until SIGINT or SIGTERM"},
    {"members", cli_members_main, "show the members of a group, or follow them"},
    {"value", cli_value_main, "get, set, delete or watch a value"},
    {"tasks", cli_tasks_main, "a master-worker task queue: master, worker, submit, status, list"},
    {"ctl", cli_ctl_main, "control a running reignd: status, cede, failover, pause, resume"},
    {"ls", cli_ls_main, "list the elections, groups, values and task queues of the store"},
    {"rm", cli_rm_main, "remove an election, group or value nobody stands in"},
    {"check", cli_check_main, "prove election safety and measure takeover on a store"},
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] COMMAND [ARGS...]\n"
               "\n"
               "Leader election, group membership and watched values.\n"
               "\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "Global options:\n"
               "  --uri URI               the store: zk://host:2181,host2:2181/chroot,\n"
               "                          sqlite:///path/file.db, mysql://user@host/db or\n"
               "                          postgres://user@host/db (default: $REIGN_URI, else\n"
               "                          the SQLite file $XDG_STATE_HOME/reign/reign.db, or\n"
               "                          ~/.local/state/reign/reign.db without\n"
               "                          XDG_STATE_HOME, or /var/lib/reign/reign.db for root)\n"
               "  --session-timeout MS    session timeout to ask for (default: from the URI,\n"
               "                          else 10000)\n"
               "  --log-level LEVEL       error, warn, notice, info or debug (default: warn)\n"
               "  -h, --help              show this help\n"
               "  -V, --version           show the version\n"
               "\n"
               "Run 'reign COMMAND --help' for a command's options.  Exit status: 0 success,\n"
               "1 failure, 2 usage error; see reign(1).\n");
}

/* Sink for libreign's log; also called from the ZooKeeper client's threads,
 * which is fine: one fprintf per line. */
static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    const cli *c = userdata;
    char prefix[64];
    cli_prefix(c, reign_log_level_name(level), prefix, sizeof(prefix));
    toollog_line(level, prefix, msg);
}

int main(int argc, char **argv)
{
    enum { OPT_URI = 256, OPT_SESSION_TIMEOUT, OPT_LOG_LEVEL };
    static const struct option opts[] = {
        {"uri", required_argument, NULL, OPT_URI},
        {"session-timeout", required_argument, NULL, OPT_SESSION_TIMEOUT},
        {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    cli c;
    memset(&c, 0, sizeof(c));
    c.log_level = REIGN_LOG_WARN;

    /* A reader of our output that goes away must not kill us with SIGPIPE
     * before we resign.  (Children get the default back: libuv resets signal
     * dispositions in spawned processes.) */
    signal(SIGPIPE, SIG_IGN);

    opterr = 0;
    int o;
    /* "+": stop at the subcommand; ":": report missing values as ':' */
    while ((o = getopt_long(argc, argv, "+:hV", opts, NULL)) != -1) {
        char q[256];
        long v;
        switch (o) {
        case OPT_URI:
            c.uri = optarg;
            break;
        case OPT_SESSION_TIMEOUT:
            if (cli_parse_int(&c, "--session-timeout", optarg, 1, 2147483647L, &v))
                return CLI_EXIT_USAGE;
            c.session_timeout_ms = (int)v;
            break;
        case OPT_LOG_LEVEL: {
            int l = reign_log_level_parse(optarg);
            if (l < 0)
                return cli_usage_error(
                    &c, "invalid log level '%s' (expected error, warn, notice, info or debug)",
                    cli_quote(optarg, q, sizeof(q)));
            c.log_level = (reign_log_level)l;
            break;
        }
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        case 'V':
            printf("reign %s (libreign %s)\n", REIGN_VERSION_STRING, reign_version());
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(&c, o, argv);
        }
    }
    if (optind >= argc)
        return cli_usage_error(&c, "no command given");

    const char *name = argv[optind];
    cli_main_fn *fn = NULL;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strcmp(name, commands[i].name) == 0) {
            fn = commands[i].main;
            c.cmd = commands[i].name;
        }
    if (!fn) {
        char q[256];
        return cli_usage_error(&c, "unknown command '%s'", cli_quote(name, q, sizeof(q)));
    }

    toollog_init();
    /* Signals act at once in every command, also when inherited as ignored;
     * cli_connect() says more, and the loop takes them over once it runs. */
    cli_catch_signals(&c, NULL);
    reign_set_log(log_sink, &c, c.log_level);
    if (uv_loop_init(&c.loop) < 0) {
        cli_error(&c, "cannot create the event loop");
        return CLI_EXIT_FAIL;
    }
    c.loop_ready = 1;

    /* The subcommand parses its own options from a fresh start (optind = 0
     * makes glibc's getopt reinitialise itself). */
    int first = optind;
    optind = 0;
    int code = fn(&c, argc - first, argv + first);
    cli_cleanup(&c);
    return code;
}
