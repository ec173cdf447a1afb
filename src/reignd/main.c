/*
 * main.c - reignd, the failover daemon (HDFS's ZKFC for any service): reads
 * the configuration, prepares the stores, then runs every service (service.c),
 * the control socket, the peer endpoint, the metrics endpoint and the systemd
 * notifications on one libuv loop until SIGTERM.
 *
 * Before any store is contacted, everything that can be checked without one
 * is (preflight.h): `reignd --check` is exactly that, so it refuses what the
 * daemon would.
 *
 * Exit status (man reignd(8)), distinct so that scripts and systemd can tell
 * why the daemon did not run (ZKFC has its own; 2 is our usage error, so its
 * "format denied" moved to 5).  The unit file restarts on 1 and 8 only:
 *   0  clean shutdown (also a signal while starting), or --format / --check
 *      / --print-fsm done
 *   1  failure while running (a store closed, an election error, a server
 *      that could not start, ...), or --format interrupted
 *   2  usage error
 *   3  the store is not formatted for a service: run `reignd --format`
 *   4  a service has no fence method
 *   5  --format refused: already formatted (use --force)
 *   6  credentials: a store refused them at start, or they cannot be read
 *   7  configuration error (the message names FILE:LINE): the file, or what
 *      it names (peer secret, control socket directory, listen addresses)
 *   8  a store cannot be reached at start (within its connect timeout), or
 *      its client cannot start (a host name that does not resolve)
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include <reign/reign.h>

#include "config.h"
#include "control.h"
#include "fsm.h"
#include "metrics.h"
#include "peer.h"
#include "preflight.h"
#include "sdnotify.h"
#include "service.h"
#include "srvlog.h"
#include "toollog.h"

enum {
    EXIT_RUNTIME = 1,
    EXIT_USAGE = 2,
    EXIT_NOT_FORMATTED = 3,
    EXIT_NO_FENCE = 4,
    EXIT_FORMAT_DENIED = 5,
    EXIT_CREDENTIALS = 6,
    EXIT_CONFIG = 7,
    EXIT_NO_STORE = 8,
};

#define DEFAULT_CONFIG "/etc/reign/reign.conf"

static const char *level_words[] = {"error", "warning", "notice", "info", "debug"};
static reign_log_level max_level = REIGN_LOG_INFO;

/* The one log sink (libreign's and ours), through toollog.h: the journal's
 * priority under systemd, else "TIME reignd: LEVEL: ".  ZooKeeper's threads
 * call it too. */
static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    (void)userdata;
    if (level > max_level)
        return;
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "reignd: %s: ", level_words[(unsigned)level < 5 ? level : 4]);
    toollog_line(level, toollog_journal() ? NULL : prefix, msg);
}

#define say(level, ...) reignd__logf(log_sink, NULL, level, __VA_ARGS__)

/* ---- signals while starting -------------------------------------------------- */

/*
 * Until the loop runs, reignd blocks in the library (waiting for a session,
 * checking the layout), where a libuv signal handler would not run: a
 * signal then ends it at once, from the handler.  Nothing needs undoing: no
 * election was joined, no hook ran (a session left open expires by itself,
 * holding no node).  --format is reported as interrupted: its layout may or
 * may not have been written.
 */
static int early_status;
static char early_int[160], early_term[160];

static void on_early_signal(int signum)
{
    toollog_signal_line(REIGN_LOG_NOTICE, toollog_journal() ? NULL : "reignd: notice: ",
                        signum == SIGINT ? early_int : early_term);
    _exit(early_status);
}

static void catch_early_signals(int format)
{
    const char *what = format ? "--format interrupted (run it again to see whether the layout "
                                "was written); exiting"
                              : "the daemon had not started yet: nothing to undo; exiting";
    snprintf(early_int, sizeof(early_int), "SIGINT: %s", what);
    snprintf(early_term, sizeof(early_term), "SIGTERM: %s", what);
    early_status = format ? EXIT_RUNTIME : 0;
    toollog_catch_signals(on_early_signal);
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: reignd [--config FILE] [--format [--force]] [--check] [--print-fsm]\n"
               "\n"
               "Active/standby failover for the services of the configuration (reign.conf(5)):\n"
               "health checks, leader election, fencing of the old active, become-active and\n"
               "become-standby hooks.  Controlled with `reign ctl`.\n"
               "\n"
               "  -c, --config FILE  the configuration (default " DEFAULT_CONFIG ")\n"
               "      --format       prepare each service's election in its store, then exit\n"
               "      --force        with --format: reset an election already formatted (forgets\n"
               "                     the last active node, which will then not be fenced)\n"
               "      --check        check the configuration and exit\n"
               "      --print-fsm    print the service state machine as a graphviz digraph\n"
               "  -h, --help         show this help\n"
               "  -V, --version      show the version\n"
               "\n"
               "Exit status: 0 done, 1 failure, 2 usage, 3 not formatted (run --format),\n"
               "4 no fence method, 5 already formatted (--force), 6 credentials refused or\n"
               "unreadable, 7 configuration error, 8 store unreachable; see reignd(8).\n");
}

typedef struct args {
    const char *config;
    int format, force, check, print_fsm;
} args;

/* Returns -1 to go on, else an exit status. */
static int parse_args(int argc, char **argv, args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"format", no_argument, NULL, 'F'},
        {"force", no_argument, NULL, 'f'},        {"check", no_argument, NULL, 'k'},
        {"print-fsm", no_argument, NULL, 'p'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0},
    };
    *a = (args){.config = DEFAULT_CONFIG};
    int c;
    while ((c = getopt_long(argc, argv, "c:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config = optarg;
            break;
        case 'F':
            a->format = 1;
            break;
        case 'f':
            a->force = 1;
            break;
        case 'k':
            a->check = 1;
            break;
        case 'p':
            a->print_fsm = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        case 'V':
            printf("reignd %s\n", reign_version());
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "reignd: unexpected argument '%s'\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (a->force && !a->format) {
        fprintf(stderr, "reignd: --force goes with --format\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* Everything the loop runs besides the daemon itself. */
typedef struct servers {
    uv_loop_t *loop;
    reignd_daemon *daemon;
    reignd_control *control;
    reignd_peer_server *peer;
    reignd_metrics *metrics;
    reignd_sdnotify *notify;
    uv_signal_t sigterm, sigint;
    int leaving;
    int status;
} servers;

/* The first signal starts a clean leave and says what it waits for; a
 * second one stops waiting (reignd_daemon_shutdown()). */
static void on_signal(uv_signal_t *h, int signum)
{
    servers *sv = h->data;
    const char *name = signum == SIGTERM ? "SIGTERM" : "SIGINT";
    if (sv->leaving) {
        say(REIGN_LOG_WARN,
            "%s again: leaving at once: hooks still running are killed and breadcrumbs stay, so "
            "the next active node fences this one",
            name);
        reignd_daemon_shutdown(sv->daemon);
        return;
    }
    sv->leaving = 1;
    reignd_sdnotify_stopping(sv->notify);
    reignd_daemon_shutdown(sv->daemon);
    char what[1024];
    if (reignd_daemon_describe_wait(sv->daemon, what, sizeof(what)) > 0)
        say(REIGN_LOG_NOTICE,
            "%s: leaving cleanly: waiting for %s; %d s at most in all (%s again: leave at once)",
            name, what, reignd_daemon_grace_ms() / 1000, name);
    else
        say(REIGN_LOG_NOTICE, "%s: leaving cleanly", name);
}

/* The daemon is done: close the rest, so that the loop runs out. */
static void on_daemon_exit(reignd_daemon *d, int status, void *userdata)
{
    servers *sv = userdata;
    sv->status = status;
    reignd_control_close(sv->control);
    sv->control = NULL;
    reignd_peer_server_close(sv->peer);
    sv->peer = NULL;
    reignd_metrics_close(sv->metrics);
    sv->metrics = NULL;
    reignd_sdnotify_close(sv->notify);
    sv->notify = NULL;
    uv_close((uv_handle_t *)&sv->sigterm, NULL);
    uv_close((uv_handle_t *)&sv->sigint, NULL);
}

static int start_servers(servers *sv, const reignd_config *cfg, const reignd_secret *secret)
{
    char err[512] = "";
    const reignd_ops *ops = reignd_daemon_ops(sv->daemon);
    reignd_control_options co = {sizeof(co), cfg->control_socket, ops, log_sink, NULL};
    int e = reignd_control_start(sv->loop, &co, &sv->control, err, sizeof(err));
    if (e == 0 && cfg->peer_listen) {
        reignd_peer_server_options po = {sizeof(po), cfg->peer_listen, secret, ops, log_sink, NULL};
        e = reignd_peer_server_start(sv->loop, &po, &sv->peer, err, sizeof(err));
    }
    if (e == 0 && cfg->metrics_listen) {
        reignd_metrics_options mo = {
            sizeof(mo), cfg->metrics_listen,          reignd_daemon_metrics, sv->daemon, log_sink,
            NULL,       reignd_daemon_ops(sv->daemon)};
        e = reignd_metrics_start(sv->loop, &mo, &sv->metrics, err, sizeof(err));
    }
    if (e == 0)
        e = reignd_sdnotify_start(sv->loop, &sv->notify);
    if (e < 0) {
        say(REIGN_LOG_ERROR, "%s", err[0] ? err : reign_strerror(e));
        return e;
    }
    uv_signal_init(sv->loop, &sv->sigterm);
    uv_signal_init(sv->loop, &sv->sigint);
    sv->sigterm.data = sv->sigint.data = sv;
    uv_signal_start(&sv->sigterm, on_signal, SIGTERM);
    uv_signal_start(&sv->sigint, on_signal, SIGINT);
    return 0;
}

static int load_config(const char *path, reignd_config **cfg)
{
    char err[512];
    int e = reignd_config_load(path, cfg, err, sizeof(err));
    if (e == 0)
        return -1;
    say(REIGN_LOG_ERROR, "%s", err);
    if (e == REIGND_ENOFENCE) {
        say(REIGN_LOG_ERROR, "every service needs at least one fence method (fence = graceful, "
                             "fence = shell:COMMAND): without one, an old active that cannot be "
                             "reached could keep running beside the new one");
        return EXIT_NO_FENCE;
    }
    return EXIT_CONFIG;
}

/* Close what is left (servers that failed half-way, the loop's handles). */
static void drain(servers *sv)
{
    if (sv->control || sv->peer || sv->metrics || sv->notify) {
        reignd_control_close(sv->control);
        reignd_peer_server_close(sv->peer);
        reignd_metrics_close(sv->metrics);
        reignd_sdnotify_close(sv->notify);
    }
    uv_run(sv->loop, UV_RUN_DEFAULT);
}

static int run(const args *a, const reignd_config *cfg, const reignd_secret *secret)
{
    servers sv = {.loop = uv_default_loop(), .status = EXIT_RUNTIME};
    char err[768] = "";
    reignd_daemon_options o = {
        .size = sizeof(o),
        .loop = sv.loop,
        .config = cfg,
        .secret = secret,
        .log_fn = log_sink,
        .log_level = max_level,
        .on_exit = on_daemon_exit,
        .userdata = &sv,
    };
    int e = reignd_daemon_new(&sv.daemon, &o, err, sizeof(err));
    if (e == 0) {
        /* The library warns that it is "still trying" when the connect timeout
         * passes, the moment the wait gives up: the error below says it all. */
        toollog_hold();
        e = reignd_daemon_prepare(sv.daemon, !a->format, err, sizeof(err));
        toollog_release(e < 0);
    }
    int status = EXIT_RUNTIME, started = 0;
    if (e == REIGN_ECONNECT)
        status = EXIT_NO_STORE;
    else if (e == REIGN_EAUTH)
        status = EXIT_CREDENTIALS;
    else if (e == REIGN_ENOENT)
        status = EXIT_NOT_FORMATTED;
    else if (e == REIGN_ENOTSUP)
        status = EXIT_CONFIG; /* a store that cannot keep a breadcrumb (none left) */
    else if (e == 0 && a->format) {
        e = reignd_daemon_format(sv.daemon, a->force, err, sizeof(err));
        status = e == 0 ? 0 : e == REIGN_EEXIST ? EXIT_FORMAT_DENIED : EXIT_RUNTIME;
    } else if (e == 0) {
        started = 1;
        if ((e = start_servers(&sv, cfg, secret)) == 0 &&
            (e = reignd_daemon_start(sv.daemon, err, sizeof(err))) == 0) {
            reignd_sdnotify_ready(sv.notify, "running");
            log_sink(REIGN_LOG_NOTICE, "running", NULL);
            uv_run(sv.loop, UV_RUN_DEFAULT);
            status = sv.status;
        }
    }
    if (e < 0 && err[0])
        say(REIGN_LOG_ERROR, "%s", err);
    if (e < 0 && started) /* started half-way: leave cleanly anyway */
        reignd_daemon_shutdown(sv.daemon);
    drain(&sv);
    reignd_daemon_free(sv.daemon);
    uv_run(sv.loop, UV_RUN_DEFAULT);
    uv_loop_close(sv.loop);
    return status;
}

int main(int argc, char **argv)
{
    args a;
    int status = parse_args(argc, argv, &a);
    if (status >= 0)
        return status;
    if (a.print_fsm) {
        reignd_fsm_print_dot(stdout);
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    toollog_init();

    reignd_config *cfg = NULL;
    if ((status = load_config(a.config, &cfg)) >= 0)
        return status;
    max_level = (reign_log_level)cfg->log_level; /* the same order, error..debug */

    reignd_secret secret;
    char note[300], err[1024];
    int e = reignd_preflight(cfg, a.format, &secret, note, sizeof(note), err, sizeof(err));
    if (e < 0) {
        say(REIGN_LOG_ERROR, "%s", err);
        reignd_config_free(cfg);
        return e == REIGN_EAUTH ? EXIT_CREDENTIALS : EXIT_CONFIG;
    }
    if (a.check) {
        printf("%s: OK (%zu service%s%s%s)\n", cfg->path, cfg->n_services,
               cfg->n_services == 1 ? "" : "s", note[0] ? "; " : "", note);
        reignd_secret_wipe(&secret);
        reignd_config_free(cfg);
        return 0;
    }
    catch_early_signals(a.format);
    reign_set_log(log_sink, NULL, max_level);
    status = run(&a, cfg, secret.len ? &secret : NULL);
    reignd_secret_wipe(&secret);
    reignd_config_free(cfg);
    return status;
}
