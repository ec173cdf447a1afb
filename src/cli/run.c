/*
 * run.c - `reign run NAME -- CMD [ARGS...]`: run a command only while this
 * process leads election NAME.
 *
 * On ELECTED, CMD starts in a process group (and session) of its own, with
 * REIGN_ELECTION, REIGN_TERM, REIGN_TOKEN and REIGN_ID in its environment,
 * tied to this process by child.h: the client's guardian kills its group
 * should reign die, and whatever CMD leaves in its group when it exits is
 * killed before reign acts on the exit.
 * On DEMOTED its group gets SIGTERM, then SIGKILL after the grace period -
 * but never later than the moment the leadership stopped being guaranteed,
 * so the command is gone before any other candidate could be elected (see
 * stop_child()).  Demoted, reign keeps standing, and a later ELECTED starts
 * CMD again.  When CMD exits by itself, or after SIGINT/SIGTERM (passed on
 * to CMD, SIGKILL after the grace period), reign resigns and exits with
 * CMD's status.
 *
 * stdout belongs to CMD: reign reports leadership changes on stderr (at
 * level notice).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "cli.h"

extern char **environ;

#define NS_PER_MS 1000000LL
/* The least margin between killing CMD and the end of the guarantee. */
#define FENCE_MIN_MARGIN_NS (100 * NS_PER_MS)
#define GRACE_DEFAULT_NS    (10000 * NS_PER_MS)
#define EXIT_CANNOT_RUN     126
#define EXIT_NOT_FOUND      127

typedef struct runner {
    const char *name;
    char **cmd; /* CMD and its arguments, NULL-terminated */
    char *exe;  /* cmd[0] resolved on PATH */
    int64_t grace_ns;

    cli_child child;
    int proc; /* CMD (or what is left of its group) runs */
    int pid;
    int signaled;      /* we are stopping CMD because the leadership ended */
    int user_stop;     /* SIGINT/SIGTERM: exit when CMD is gone */
    int fatal;         /* the election or client failed: exit 1 when CMD is gone */
    int start_pending; /* re-elected while the previous CMD was still exiting */

    int leading;
    /* The end of the current leadership's guarantee (CLOCK_MONOTONIC), as
     * last read while leading: refreshed every loop turn by `prepare`. */
    int64_t valid_until_ns;
    uv_prepare_t prepare;
    uv_timer_t kill_timer;
} runner;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: reign [GLOBAL OPTIONS] run NAME [OPTIONS] -- CMD [ARGS...]\n"
            "\n"
            "Run CMD only while this process leads election NAME.  Elected: start CMD in\n"
            "its own process group, with REIGN_ELECTION, REIGN_TERM, REIGN_TOKEN and\n"
            "REIGN_ID set.  Demoted: SIGTERM to the group, SIGKILL after the grace period\n"
            "or earlier, before any other candidate could be elected; then stand again.\n"
            "CMD exits, or reign gets SIGINT/SIGTERM (passed on to CMD): resign and exit\n"
            "with CMD's status (128+N if killed by signal N).\n"
            "\n"
            "Options:\n"
            "  -i, --id ID             candidate id (default: HOSTNAME-PID)\n"
            "  -d, --data DATA         payload other processes see, e.g. an address\n"
            "      --data-file FILE    read the payload from FILE ('-': stdin)\n"
            "  -s, --strategy NAME     queue (default) or lock, for a new election\n" CLI_RANK_HELP
            "  -g, --grace SECONDS     between SIGTERM (or a signal passed on) and SIGKILL\n"
            "                          (default 10)\n"
            "  -h, --help              show this help\n");
}

/* ---- the command ----------------------------------------------------- */

/* Exit status of a finished process, the shell's way. */
static int status_of(int64_t exit_status, int term_signal)
{
    return term_signal ? 128 + term_signal : (int)exit_status;
}

/* Signals CMD's process group (and CMD itself, should it have left it). */
static void signal_child(runner *r, int signum)
{
    if (r->proc)
        cli_child_signal(&r->child, signum);
}

static int is_env(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return strncmp(entry, name, n) == 0 && entry[n] == '=';
}

static char *env_entry(const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *s = malloc(len);
    if (s)
        snprintf(s, len, "%s=%s", name, value);
    return s;
}

static void on_child_exit(cli_child *ch, int status);

static void start_child(cli *c)
{
    runner *r = c->cmd_data;
    reign_election *e = c->election;
    char term[32], token[32], q[512];
    uint64_t t = reign_election_term(e), k = reign_election_token(e);

    r->start_pending = 0;
    if (!reign_election_is_leader(e) || t == 0)
        return;
    snprintf(term, sizeof(term), "%llu", (unsigned long long)t);
    snprintf(token, sizeof(token), "%llu", (unsigned long long)k);

    /* The environment, with our four variables replaced: data reaches CMD
     * only as values, never through a shell. */
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 5, sizeof(*env));
    char *own[4] = {env_entry("REIGN_ELECTION", reign_election_name(e)),
                    env_entry("REIGN_TERM", term), env_entry("REIGN_TOKEN", token),
                    env_entry("REIGN_ID", reign_election_id(e))};
    int err = ENOMEM;
    if (env && own[0] && own[1] && own[2] && own[3]) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (!is_env(environ[i], "REIGN_ELECTION") && !is_env(environ[i], "REIGN_TERM") &&
                !is_env(environ[i], "REIGN_TOKEN") && !is_env(environ[i], "REIGN_ID"))
                env[m++] = environ[i];
        for (int i = 0; i < 4; i++)
            env[m++] = own[i];
        env[m] = NULL;

        static const int inherit[3] = {-1, -1, -1};
        err = cli_child_start(c, &r->child, r->exe, r->cmd, env, inherit, true, on_child_exit);
    }
    free(env);
    for (int i = 0; i < 4; i++)
        free(own[i]);

    if (err) {
        cli_error(c, "cannot run '%s': %s", cli_quote(r->cmd[0], q, sizeof(q)), strerror(err));
        cli_leave(c, err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
        return;
    }
    r->child.data = c;
    r->proc = 1;
    r->pid = r->child.pid;
    r->signaled = 0;
    cli_log(c, REIGN_LOG_NOTICE, "started '%s' (pid %d) for term %s", cli_quote(r->cmd[0], q, 256),
            r->pid, term);
}

/* CMD has exited and nothing of its group runs any more (child.h). */
static void on_child_exit(cli_child *ch, int status)
{
    cli *c = ch->data;
    runner *r = c->cmd_data;
    int term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    int code = status_of(exit_status, term_signal);

    uv_timer_stop(&r->kill_timer);
    r->proc = 0;
    if (term_signal)
        cli_log(c, REIGN_LOG_NOTICE, "command (pid %d) killed by signal %d", r->pid, term_signal);
    else
        cli_log(c, REIGN_LOG_NOTICE, "command (pid %d) exited with status %d", r->pid,
                (int)exit_status);
    r->pid = 0;

    if (r->fatal) {
        cli_exit(c, CLI_EXIT_FAIL);
    } else if (r->user_stop) {
        cli_leave(c, code);
    } else if (r->signaled) {
        /* stopped because we lost the leadership: keep standing */
        if (r->start_pending && r->leading)
            start_child(c);
    } else {
        cli_log(c, REIGN_LOG_NOTICE, "command finished; resigning");
        cli_leave(c, code);
    }
    cli_update(c);
}

static void on_kill_timer(uv_timer_t *t)
{
    cli *c = t->data;
    runner *r = c->cmd_data;
    if (!r->proc)
        return;
    cli_log(c, REIGN_LOG_WARN, "command (pid %d) still running: SIGKILL", r->pid);
    signal_child(r, SIGKILL);
}

/*
 * Stops CMD after a demotion (or a failure).  SIGTERM now, SIGKILL at
 *   min(now + grace, valid_until - margin)
 * where valid_until is the end of the guarantee of the leadership that just
 * ended: before then no other candidate can be elected, so CMD is gone
 * before a successor's could start.  The margin (a tenth of the session
 * timeout, at least 100 ms) covers the time SIGKILL takes.  When the
 * leadership ended because our node or session is gone, a successor may
 * already be elected: there is no time left, and CMD is killed at once.
 */
static void stop_child(cli *c, reign_demote_reason reason)
{
    runner *r = c->cmd_data;
    if (!r->proc || r->signaled)
        return;
    r->signaled = 1;

    int64_t now = reign_now_ns();
    int64_t margin = (int64_t)reign_client_session_timeout_ms(c->client) * NS_PER_MS / 10;
    if (margin < FENCE_MIN_MARGIN_NS)
        margin = FENCE_MIN_MARGIN_NS;
    int64_t fence = r->valid_until_ns > 0 ? r->valid_until_ns - margin : now;
    if (r->valid_until_ns > 0)
        cli_log(c, REIGN_LOG_INFO, "the leadership was guaranteed until %+lld ms from now",
                (long long)((r->valid_until_ns - now) / NS_PER_MS));
    if (reason == REIGN_DEMOTE_NODE_DELETED || reason == REIGN_DEMOTE_SESSION_LOST)
        fence = now;
    int64_t kill_at = now + r->grace_ns;
    if (kill_at > fence)
        kill_at = fence;

    if (kill_at <= now) {
        cli_log(c, REIGN_LOG_NOTICE, "no time left in the leadership: SIGKILL to pid %d", r->pid);
        signal_child(r, SIGKILL);
        return;
    }
    int64_t ms = (kill_at - now) / NS_PER_MS;
    cli_log(c, REIGN_LOG_NOTICE, "SIGTERM to pid %d; SIGKILL in %lld ms if still running", r->pid,
            (long long)ms);
    signal_child(r, SIGTERM);
    /* Rounded down, and libuv measures from the start of this loop turn:
     * the timer can only fire early, never late. */
    uv_timer_start(&r->kill_timer, on_kill_timer, (uint64_t)ms, 0);
}

/* ---- the election ---------------------------------------------------- */

static void on_prepare(uv_prepare_t *h)
{
    cli *c = h->data;
    runner *r = c->cmd_data;
    if (!r->leading || !c->election)
        return;
    int64_t v = reign_election_valid_until_ns(c->election);
    if (v > 0 && v != r->valid_until_ns) {
        cli_log(c, REIGN_LOG_DEBUG, "leadership guaranteed for %lld ms more",
                (long long)((v - reign_now_ns()) / NS_PER_MS));
        r->valid_until_ns = v;
    }
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    runner *r = c->cmd_data;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        r->leading = 1;
        r->valid_until_ns =
            ev->valid_until_ns > 0 ? ev->valid_until_ns : reign_election_valid_until_ns(e);
        cli_log(c, REIGN_LOG_NOTICE, "elected %s term=%llu token=%llu monotonic_ns=%lld",
                reign_election_id(e), (unsigned long long)ev->term, (unsigned long long)ev->token,
                (long long)ev->at_ns);
        if (r->user_stop || r->fatal || c->leaving)
            break;
        if (r->proc) {
            cli_log(c, REIGN_LOG_INFO, "waiting for the previous command (pid %d) to exit", r->pid);
            r->start_pending = 1;
        } else {
            start_child(c);
        }
        break;
    case REIGN_ELECTION_DEMOTED:
        r->leading = 0;
        r->start_pending = 0;
        cli_log(c, REIGN_LOG_NOTICE, "demoted %s reason=%s monotonic_ns=%lld", reign_election_id(e),
                reign_demote_reason_name(ev->reason), (long long)ev->at_ns);
        stop_child(c, ev->reason);
        break;
    case REIGN_ELECTION_LEFT:
        cli_left(c, ev);
        break;
    case REIGN_ELECTION_ERROR:
        /* the message, when there is one, says more than the code (and
         * names the election) */
        if (ev->message)
            cli_error(c, "%s", ev->message);
        else
            cli_error(c, "election '%s': %s", reign_election_name(e), reign_strerror(ev->error));
        r->fatal = 1;
        r->leading = 0;
        if (r->proc)
            stop_child(c, REIGN_DEMOTE_ERROR);
        else
            cli_exit(c, CLI_EXIT_FAIL);
        break;
    default:
        break;
    }
}

static void on_state(cli *c, reign_conn_state state)
{
    runner *r = c->cmd_data;
    if (state != REIGN_CONN_CLOSED)
        return;
    /* The session is closed, so our node is gone: no time left. */
    r->fatal = 1;
    r->leading = 0;
    if (r->proc)
        stop_child(c, REIGN_DEMOTE_SESSION_LOST);
    else
        cli_exit(c, CLI_EXIT_FAIL);
}

static void on_signal(cli *c, int signum)
{
    runner *r = c->cmd_data;
    if (r->proc) {
        cli_log(c, REIGN_LOG_INFO, "passing %s on to pid %d",
                signum == SIGINT ? "SIGINT" : "SIGTERM", r->pid);
        signal_child(r, signum);
        /* The first time, the grace period starts: a command that ignores
         * the signal must not keep reign (and the leadership) forever.  A
         * demotion's earlier deadline, if any, stays. */
        if (!r->user_stop && !uv_is_active((uv_handle_t *)&r->kill_timer))
            uv_timer_start(&r->kill_timer, on_kill_timer, (uint64_t)(r->grace_ns / NS_PER_MS), 0);
        r->user_stop = 1;
    } else if (c->leaving) {
        cli_exit(c, c->leave_code); /* a second signal: stop waiting */
    } else {
        r->user_stop = 1;
        cli_leave(c, CLI_EXIT_OK);
    }
}

/* ---- the command line ------------------------------------------------ */

/* 0 if CMD can be executed; else prints why and returns 126 or 127. */
static int check_command(cli *c, const char *file)
{
    char q[512], path[4096];
    struct stat st;
    cli_quote(file, q, sizeof(q));
    if (strchr(file, '/')) {
        if (stat(file, &st) < 0) {
            cli_error(c, "cannot run '%s': %s", q, strerror(errno));
            return EXIT_NOT_FOUND;
        }
        if (S_ISDIR(st.st_mode) || access(file, X_OK) < 0) {
            cli_error(c, "cannot run '%s': %s", q,
                      S_ISDIR(st.st_mode) ? "is a directory" : strerror(errno));
            return EXIT_CANNOT_RUN;
        }
        return 0;
    }
    const char *dirs = getenv("PATH");
    if (!dirs)
        dirs = "/usr/local/bin:/usr/bin:/bin";
    while (*dirs) {
        size_t n = strcspn(dirs, ":");
        int len = snprintf(path, sizeof(path), "%.*s/%s", (int)n, n ? dirs : ".", file);
        if (len > 0 && (size_t)len < sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            access(path, X_OK) == 0)
            return 0;
        dirs += n;
        if (*dirs == ':')
            dirs++;
    }
    cli_error(c, "command not found: '%s'", q);
    return EXIT_NOT_FOUND;
}

int cli_run_main(cli *c, int argc, char **argv)
{
    enum { OPT_DATA_FILE = 256 };
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},
        {"data", required_argument, NULL, 'd'},
        {"data-file", required_argument, NULL, OPT_DATA_FILE},
        {"strategy", required_argument, NULL, 's'},
        CLI_RANK_OPTIONS,
        {"grace", required_argument, NULL, 'g'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static runner run;
    runner *r = &run;
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    cli_data data = {0};
    int o, rc;

    /* Our options end at "--"; everything after it is CMD's. */
    int dashes = 1;
    while (dashes < argc && strcmp(argv[dashes], "--") != 0)
        dashes++;

    r->grace_ns = GRACE_DEFAULT_NS;
    while ((o = getopt_long(dashes, argv, ":i:d:s:g:h", opts, NULL)) != -1) {
        switch (o) {
        case 'i':
            eo.id = optarg;
            break;
        case 'd':
            cli_data_set(&data, optarg);
            break;
        case OPT_DATA_FILE:
            if ((rc = cli_data_read(c, &data, optarg)))
                goto out;
            break;
        case 's':
            if ((rc = cli_parse_strategy(c, optarg, &eo.strategy)))
                goto out;
            break;
        case 'g':
            if ((rc = cli_parse_seconds(c, "--grace", optarg, 86400, &r->grace_ns)))
                goto out;
            break;
        case 'h':
            usage(stdout);
            rc = CLI_EXIT_OK;
            goto out;
        default:
            if ((rc = cli_rank_option(c, o, optarg, &eo)) >= 0) {
                if (rc)
                    goto out;
                break;
            }
            rc = cli_bad_option(c, o, argv);
            goto out;
        }
    }
    if ((rc = cli_election_name(c, argv, dashes, " (the command goes after '--')", &r->name)))
        goto out;
    if (dashes >= argc || dashes + 1 >= argc) {
        rc = cli_usage_error(c, "missing '-- CMD': the command to run");
        goto out;
    }
    r->cmd = argv + dashes + 1;
    /* Say now, not when elected, that CMD cannot be run. */
    if ((rc = check_command(c, r->cmd[0])))
        goto out;
    if (!(r->exe = cli_child_resolve(r->cmd[0]))) {
        cli_error(c, "cannot run '%s': %s", r->cmd[0], strerror(errno));
        rc = EXIT_CANNOT_RUN;
        goto out;
    }

    c->cmd_data = r;
    uv_timer_init(&c->loop, &r->kill_timer);
    r->kill_timer.data = c;
    uv_prepare_init(&c->loop, &r->prepare);
    r->prepare.data = c;
    uv_prepare_start(&r->prepare, on_prepare);

    c->guarded = 1;
    if ((rc = cli_client_new(c)))
        goto out;
    eo.data = data.data;
    eo.data_len = data.len;
    eo.cb = on_event;
    eo.userdata = c;
    if ((rc = cli_join(c, r->name, &eo)))
        goto out;
    if ((rc = cli_connect(c)))
        goto out;
    c->on_signal = on_signal;
    c->on_state = on_state;
    rc = cli_run(c);
out:
    if (r->proc) {
        /* Never leave CMD running without the leadership behind us. */
        cli_log(c, REIGN_LOG_WARN, "exiting: SIGKILL to pid %d", r->pid);
        signal_child(r, SIGKILL);
    }
    free(r->exe);
    cli_data_free(&data);
    return rc;
}
