/*
 * client.c - the client setup every store-facing subcommand of `reign` shares (cli.h):
 * making the client (the default SQLite store, the guardian), connecting with a bounded wait,
 * one libuv loop with SIGINT/SIGTERM handlers, joining or following an election, and a
 * bounded resign before exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "toollog.h"

static const char *redacted_uri(cli *c, char *out, size_t len)
{
    char tmp[1024];
    reign_uri_redact(c->uri, tmp, sizeof(tmp));
    return cli_quote(tmp, out, len);
}

static void on_client_state(reign_client *client, reign_conn_state state, void *userdata)
{
    cli *c = userdata;
    (void)client;
    if (c->done)
        return;
    switch (state) {
    case REIGN_CONN_CONNECTED:
        c->connected = 1;
        if (reign_client_session_id(c->client))
            cli_log(c, REIGN_LOG_INFO, "connected: session 0x%llx, timeout %d ms",
                    (unsigned long long)reign_client_session_id(c->client),
                    reign_client_session_timeout_ms(c->client));
        else
            cli_log(c, REIGN_LOG_INFO, "connected to %s: lease %d ms",
                    reign_client_backend(c->client), reign_client_session_timeout_ms(c->client));
        break;
    case REIGN_CONN_SUSPENDED:
        cli_log(c, REIGN_LOG_WARN, "connection suspended; reconnecting");
        break;
    case REIGN_CONN_RECONNECTED:
        cli_log(c, REIGN_LOG_NOTICE, "reconnected%s",
                reign_client_session_id(c->client) ? "; the session survived" : "");
        break;
    case REIGN_CONN_LOST:
        /* Expired, suspended past the safety deadline, or (SQLite) its
         * file replaced: either way it may be gone; the library makes a
         * new one if the store says so. */
        cli_log(c, REIGN_LOG_WARN,
                "session may be lost (expired, suspended past the safety "
                "deadline, or its store file replaced)");
        break;
    case REIGN_CONN_CLOSED: {
        if (!c->connected)
            return; /* while connecting: cli_connect() says why, once */
        const char *why = reign_client_errmsg(c->client);
        cli_error(c, "connection closed: %s", why && *why ? why : "no reason given");
        /* A subcommand with a hook decides when to exit (run waits for its
         * child); the others are done. */
        if (c->on_state)
            c->on_state(c, state);
        else
            cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    default:
        break;
    }
    if (c->on_state)
        c->on_state(c, state);
}

/*
 * The embedded default store: a SQLite file in the user's state directory
 * ($XDG_STATE_HOME/reign/reign.db, ~/.local/state/reign/reign.db, or
 * /var/lib/reign/reign.db for root), its directory created owner-only.
 */
static int default_uri(cli *c)
{
    const char *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    char dir[PATH_MAX];
    int n;
    if (geteuid() == 0)
        n = snprintf(dir, sizeof(dir), "/var/lib/reign");
    else if (xdg && xdg[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/reign", xdg);
    else if (home && home[0] == '/')
        n = snprintf(dir, sizeof(dir), "%s/.local/state/reign", home);
    else {
        cli_error(c, "no store: give --uri or set REIGN_URI (no HOME for the default SQLite "
                     "file)");
        return CLI_EXIT_USAGE;
    }
    if (n < 0 || (size_t)n >= sizeof(dir)) {
        cli_error(c, "no store: the state directory's path is too long; give --uri");
        return CLI_EXIT_USAGE;
    }
    /* mkdir -p, each level 0700 (existing ones are left as they are). */
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
            cli_error(c, "cannot create the state directory '%s': %s", dir, strerror(errno));
            return CLI_EXIT_FAIL;
        }
        *p = saved;
        if (!saved)
            break;
    }
    /* A URI: percent-encode what the URI syntax would read otherwise. */
    size_t o = (size_t)snprintf(c->default_uri, sizeof(c->default_uri), "sqlite://");
    for (const char *p = dir; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        bool esc = ch == '%' || ch == '?' || ch == '#' || ch <= 0x20 || ch >= 0x7f;
        o += (size_t)snprintf(c->default_uri + o, sizeof(c->default_uri) - o, esc ? "%%%02X" : "%c",
                              ch);
    }
    snprintf(c->default_uri + o, sizeof(c->default_uri) - o, "/reign.db");
    c->uri = c->default_uri;
    cli_log(c, REIGN_LOG_INFO, "no --uri or REIGN_URI: using %s", c->uri);
    return 0;
}

int cli_client_new(cli *c)
{
    char q[1024];
    char errbuf[512] = "";

    if (!c->uri || !*c->uri) {
        const char *env = getenv("REIGN_URI");
        c->uri = env && *env ? env : NULL;
    }
    if (!c->uri) {
        int r = default_uri(c);
        if (r)
            return r;
    }

    /* The client starts connecting (and says so at info) as it is made: from
     * then on an early signal ends the command "while connecting". */
    char doing[1200];
    redacted_uri(c, q, sizeof(q));
    snprintf(doing, sizeof(doing), "while connecting to '%s'", q);
    cli_catch_signals(c, doing);

    reign_client_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.session_timeout_ms = c->session_timeout_ms;
    o.guardian = c->guarded ? REIGN_GUARDIAN_ON : REIGN_GUARDIAN_OFF;
    o.on_state = on_client_state;
    o.userdata = c;

    int r = reign_client_new(&c->client, c->uri, &o, errbuf, sizeof(errbuf));
    if (r < 0) {
        const char *why = *errbuf ? errbuf : reign_strerror(r);
        redacted_uri(c, q, sizeof(q));
        if (r == REIGN_EURI)
            cli_error(c, "malformed URI '%s': %s", q, why);
        else if (r == REIGN_EAUTH)
            cli_error(c, "no usable credentials for '%s': %s", q, why);
        else if (r == REIGN_ENOTSUP)
            cli_error(c, "unsupported store '%s': %s", q, why);
        else
            cli_error(c, "cannot use store '%s': %s", q, why);
        c->client = NULL;
        return CLI_EXIT_FAIL;
    }
    return 0;
}

int cli_join(cli *c, const char *name, reign_election_options *opts)
{
    char qn[512], qi[600];
    opts->size = sizeof(*opts);
    int r = reign_election_join(&c->election, c->client, name, opts);
    if (r == 0)
        return 0;
    c->election = NULL;
    cli_quote(name, qn, sizeof(qn));
    switch (r) {
    case REIGN_ENAME:
        cli_error(c,
                  "illegal election name '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, "
                  "not '.' or '..')",
                  qn, REIGN_NAME_MAX);
        break;
    case REIGN_E2BIG:
        cli_error(c, "payload too large: %s%zu bytes (at most %d)",
                  opts->data_len > REIGN_DATA_MAX ? "at least " : "", opts->data_len,
                  REIGN_DATA_MAX);
        break;
    case REIGN_EINVAL:
        if (opts->id)
            cli_error(c, "invalid candidate id '%s' (1 to %d bytes, no control characters)",
                      cli_quote(opts->id, qi, sizeof(qi)), REIGN_ID_MAX);
        else
            cli_error(c, "cannot join election '%s': %s", qn, reign_strerror(r));
        break;
    case REIGN_ENOTSUP:
        if (opts->priority || opts->no_preempt || opts->preempt_delay_ms)
            cli_error(c,
                      "cannot join election '%s': priorities and preemption need the queue "
                      "strategy",
                      qn);
        else if (opts->strategy == REIGN_STRATEGY_LOCK)
            cli_error(c, "cannot join election '%s': the lock strategy needs a ZooKeeper store",
                      qn);
        else
            cli_error(c, "cannot join election '%s': %s", qn, reign_strerror(r));
        break;
    default:
        cli_error(c, "cannot join election '%s': %s", qn, reign_strerror(r));
        break;
    }
    return CLI_EXIT_FAIL;
}

static void on_signal(uv_signal_t *h, int signum)
{
    cli *c = h->data;
    reign_trace("cli.signal", "%s", signum == SIGINT ? "SIGINT" : "SIGTERM");
    cli_log(c, REIGN_LOG_INFO, "got %s", signum == SIGINT ? "SIGINT" : "SIGTERM");
    if (c->on_signal)
        c->on_signal(c, signum);
    else
        cli_exit(c, CLI_EXIT_OK);
    cli_update(c);
}

/*
 * Signals before the loop runs.  Until then reign blocks (waiting for the
 * first session), where a libuv handler would not run; and a signal ignored
 * by inheritance (a command started with & by a script) would be ignored
 * for the whole wait.  So a handler of our own ends the command at once,
 * from the handler: nothing was joined or written yet.  cli_connect()
 * hands the signals to the loop once the session is there.
 */
static char interrupted_msg[1400];

static void on_early_signal(int signum)
{
    (void)signum;
    ssize_t ignored = write(STDERR_FILENO, interrupted_msg, strlen(interrupted_msg));
    (void)ignored;
    _exit(CLI_EXIT_FAIL);
}

void cli_catch_signals(cli *c, const char *doing)
{
    char prefix[64];
    sigset_t both, old;
    sigemptyset(&both);
    sigaddset(&both, SIGINT);
    sigaddset(&both, SIGTERM);
    cli_prefix(c, NULL, prefix, sizeof(prefix));
    /* A signal that comes while the message is rewritten is held until the
     * new one is whole (no thread of the client exists yet to take it). */
    pthread_sigmask(SIG_BLOCK, &both, &old);
    snprintf(interrupted_msg, sizeof(interrupted_msg), "%s%sinterrupted%s%s\n",
             toollog_journal() ? "<3>" : "", prefix, doing ? " " : "", doing ? doing : "");
    toollog_catch_signals(on_early_signal);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

int cli_connect(cli *c)
{
    char q[1024];
    /* The library warns "...; still trying" as the wait gives up: when it does,
     * the error below says it all (toollog.h). */
    toollog_hold();
    int r = reign_client_wait_connected(c->client);
    toollog_release(r < 0);
    if (r < 0) {
        const char *detail = reign_client_errmsg(c->client);
        redacted_uri(c, q, sizeof(q));
        if (r == REIGN_EAUTH)
            cli_error(c, "authentication failed at '%s': %s", q,
                      detail && *detail ? detail : reign_strerror(r));
        else if (detail && *detail && (r == REIGN_ENOENT || r == REIGN_ECLOSED))
            /* the detail names what is missing (a directory, a database), or why the store
             * refused for good (the client closed itself); the code's own words, "no such node
             * or row", "object is closing", would only mislead */
            cli_error(c, "cannot connect to '%s': %s", q, detail);
        else if (detail && *detail)
            cli_error(c, "cannot connect to '%s': %s (%s)", q, reign_strerror(r), detail);
        else
            cli_error(c, "cannot connect to '%s': %s", q, reign_strerror(r));
        return CLI_EXIT_FAIL;
    }
    if (c->done) /* a callback already decided (an error while connecting) */
        return c->exit_code;

    r = reign_uv_attach(&c->adapter, &c->loop, c->client);
    if (r < 0) {
        c->adapter = NULL;
        cli_error(c, "cannot watch the client: %s", uv_strerror(r));
        return CLI_EXIT_FAIL;
    }
    uv_signal_init(&c->loop, &c->sig_int);
    uv_signal_init(&c->loop, &c->sig_term);
    c->sig_int.data = c;
    c->sig_term.data = c;
    c->signals_ready = 1;
    uv_signal_start(&c->sig_int, on_signal, SIGINT);
    uv_signal_start(&c->sig_term, on_signal, SIGTERM);
    return 0;
}

int cli_run(cli *c)
{
    if (!c->done)
        uv_run(&c->loop, UV_RUN_DEFAULT);
    if (!c->done) {
        cli_error(c, "internal error: the event loop ended early");
        return CLI_EXIT_FAIL;
    }
    return c->exit_code;
}

void cli_exit(cli *c, int code)
{
    if (c->done)
        return;
    c->done = 1;
    c->exit_code = code;
    if (c->loop_ready)
        uv_stop(&c->loop);
}

void cli_election_fail(cli *c, const char *name, const char *what)
{
    char q[512];
    cli_error(c, "election '%s': %s", cli_quote(name, q, sizeof(q)), what);
    cli_exit(c, CLI_EXIT_FAIL);
}

static void follow_query_done(reign_client *client, int err, const reign_election_view *view,
                              void *userdata)
{
    cli *c = userdata;
    char q[512];
    (void)client;
    if (c->done)
        return;
    cli_quote(c->follow_name, q, sizeof(q));
    if (err == REIGN_ENOENT) {
        cli_error(c, "no such election '%s'", q);
        cli_exit(c, CLI_EXIT_FAIL);
        return;
    }
    if (err < 0 || !view) {
        char msg[256];
        snprintf(msg, sizeof(msg), "cannot read the election: %s",
                 reign_strerror(err < 0 ? err : REIGN_EBACKEND));
        cli_election_fail(c, c->follow_name, msg);
        return;
    }
    if (c->follow_check && c->follow_check(c, view))
        return;
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.observer = 1;
    eo.cb = c->follow_cb;
    eo.userdata = c;
    if (cli_join(c, c->follow_name, &eo))
        cli_exit(c, CLI_EXIT_FAIL);
}

void cli_election_error(cli *c, reign_election *e, const reign_election_event *ev)
{
    /* the message, when there is one, says more than the code (and names the election) */
    if (ev->message)
        cli_error(c, "%s", ev->message);
    else
        cli_error(c, "election '%s': %s", reign_election_name(e), reign_strerror(ev->error));
}

void cli_election_end(cli *c, reign_election *e, const reign_election_event *ev)
{
    if (ev->type == REIGN_ELECTION_LEFT) {
        cli_left(c, ev);
    } else if (ev->type == REIGN_ELECTION_ERROR) {
        cli_election_error(c, e, ev);
        cli_exit(c, CLI_EXIT_FAIL);
    }
}

void cli_leave_on_signal(cli *c, int signum)
{
    (void)signum;
    if (c->leaving) /* a second signal: stop waiting for the delete */
        cli_exit(c, CLI_EXIT_OK);
    else
        cli_leave(c, CLI_EXIT_OK);
}

void cli_interrupted(cli *c, int signum)
{
    (void)signum;
    cli_error(c, "interrupted");
    cli_exit(c, CLI_EXIT_FAIL);
}

int cli_follow_existing(cli *c, const char *name, reign_election_cb *cb,
                        int (*check)(cli *c, const reign_election_view *view))
{
    char q[512];
    int r;
    if ((r = cli_client_new(c)) || (r = cli_connect(c)))
        return r;
    c->on_signal = cli_interrupted;
    c->follow_name = name;
    c->follow_cb = cb;
    c->follow_check = check;
    r = reign_election_query(c->client, name, follow_query_done, c);
    if (r == REIGN_ENAME) {
        cli_error(c,
                  "illegal election name '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, "
                  "not '.' or '..')",
                  cli_quote(name, q, sizeof(q)), REIGN_NAME_MAX);
        return CLI_EXIT_FAIL;
    }
    if (r < 0) {
        cli_error(c, "cannot read election '%s': %s", cli_quote(name, q, sizeof(q)),
                  reign_strerror(r));
        return CLI_EXIT_FAIL;
    }
    cli_update(c);
    return 0;
}

void cli_update(cli *c)
{
    if (c->adapter)
        reign_uv_update(c->adapter);
}

static void on_leave_timeout(uv_timer_t *t)
{
    cli *c = t->data;
    cli_log(c, REIGN_LOG_WARN,
            "could not confirm within %d ms that our node is deleted; it goes when the session "
            "closes",
            CLI_LEAVE_WAIT_MS);
    cli_exit(c, c->leave_code);
}

void cli_leave(cli *c, int code)
{
    if (c->leaving || c->done)
        return;
    if (!c->election) {
        cli_exit(c, code);
        return;
    }
    int r = reign_election_resign(c->election);
    if (r < 0) {
        cli_log(c, REIGN_LOG_INFO, "resign: %s", reign_strerror(r));
        cli_exit(c, code);
        return;
    }
    c->leaving = 1;
    c->leave_code = code;
    uv_timer_init(&c->loop, &c->leave_timer);
    c->leave_timer.data = c;
    c->leave_timer_ready = 1;
    uv_timer_start(&c->leave_timer, on_leave_timeout, CLI_LEAVE_WAIT_MS, 0);
    cli_update(c);
}

static void on_lingered(uv_timer_t *t)
{
    cli *c = t->data;
    cli_exit(c, c->leave_code);
}

void cli_left(cli *c, const reign_election_event *ev)
{
    if (ev->error)
        cli_log(c, REIGN_LOG_WARN, "leaving the election: %s%s%s", reign_strerror(ev->error),
                ev->message ? ": " : "", ev->message ? ev->message : "");
    else
        cli_log(c, REIGN_LOG_INFO, "left the election");
    if (c->leaving && !ev->error)
        uv_timer_start(&c->leave_timer, on_lingered, CLI_LINGER_MS, 0);
    else if (c->leaving)
        cli_exit(c, c->leave_code);
}

static void close_handle(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

void cli_cleanup(cli *c)
{
    c->done = 1; /* no more state callbacks into the subcommand */
    /* Free the election first: if it still stands, its node's delete is sent
     * before the session closes (closing deletes it too, a moment later). */
    c->election = reign_election_free(c->election);
    if (c->adapter) {
        reign_uv_detach(c->adapter);
        c->adapter = NULL;
    }
    if (c->loop_ready) {
        uv_walk(&c->loop, close_handle, NULL);
        uv_run(&c->loop, UV_RUN_DEFAULT);
        uv_loop_close(&c->loop);
        c->loop_ready = 0;
    }
    c->client = reign_client_free(c->client);
}
