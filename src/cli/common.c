/*
 * common.c - what every subcommand of `reign` needs: messages and logging on
 * stderr, parsing option values, connecting to the store, the libuv loop with
 * its signal handlers, resigning before exit, and formatting of payloads,
 * times and JSON.
 *
 * Messages follow one rule: one line, "reign: COMMAND: what was wrong", with
 * the offending value in single quotes.  A URI is only ever shown redacted.
 * Log lines (those with a level) go through toollog.h: a timestamp first, or
 * under systemd the journal's priority.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

/* ---- messages -------------------------------------------------------- */

/* "reign: COMMAND: " or "reign: ", then "LEVEL: " for a log line. */
void cli_prefix(const cli *c, const char *level, char *out, size_t outlen)
{
    snprintf(out, outlen, "reign: %s%s%s%s", c && c->cmd ? c->cmd : "", c && c->cmd ? ": " : "",
             level ? level : "", level ? ": " : "");
}

static void vmessage(cli *c, reign_log_level level, bool logged, const char *fmt, va_list ap)
{
    char msg[2048], prefix[64];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    cli_prefix(c, logged ? reign_log_level_name(level) : NULL, prefix, sizeof(prefix));
    /* One stdio call per line: stdio locks the stream, so lines logged by the
     * ZooKeeper client's threads never interleave with ours.  An error is not
     * a log line (no time: scripts read it), but the journal gets its priority. */
    if (logged)
        toollog_line(level, prefix, msg);
    else
        fprintf(stderr, "%s%s%s\n", toollog_journal() ? "<3>" : "", prefix, msg);
}

void cli_error(cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(c, REIGN_LOG_ERROR, false, fmt, ap);
    va_end(ap);
}

int cli_usage_error(cli *c, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->cmd)
        cli_error(c, "%s (see 'reign %s --help')", msg, c->cmd);
    else
        cli_error(c, "%s (see 'reign --help')", msg);
    return CLI_EXIT_USAGE;
}

void cli_log(cli *c, reign_log_level level, const char *fmt, ...)
{
    if (level > c->log_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmessage(c, level, true, fmt, ap);
    va_end(ap);
}

const char *cli_quote(const char *s, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (outlen < 8) {
        if (outlen)
            out[0] = '\0';
        return out;
    }
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (o + 8 >= outlen) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch < 0x20 || ch == 0x7f || ch == '\\' || ch == '\'') {
            out[o++] = '\\';
            if (ch == '\\' || ch == '\'') {
                out[o++] = (char)ch;
            } else {
                out[o++] = 'x';
                out[o++] = hex[ch >> 4];
                out[o++] = hex[ch & 15];
            }
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
    return out;
}

void cli_print(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    /* Each line is an event someone may be waiting for (a checker, a
     * script): it must not sit in a buffer. */
    fflush(stdout);
    reign_trace("cli.print", NULL);
}

int cli_bad_option(cli *c, int ret, char **argv)
{
    char q[256];
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    char name[128];

    if (arg && strncmp(arg, "--", 2) == 0) {
        size_t n = strcspn(arg, "=");
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, arg, n);
        name[n] = '\0';
    } else if (optopt > 0 && optopt < 128) {
        snprintf(name, sizeof(name), "-%c", optopt);
    } else {
        snprintf(name, sizeof(name), "%s", arg ? arg : "?");
    }
    cli_quote(name, q, sizeof(q));

    if (ret == ':')
        return cli_usage_error(c, "option '%s' needs a value", q);
    if (c->cmd && (strcmp(name, "--uri") == 0 || strcmp(name, "--session-timeout") == 0 ||
                   strcmp(name, "--log-level") == 0))
        return cli_usage_error(c, "option '%s' is a global option: give it before '%s'", q, c->cmd);
    /* getopt_long also lands here for an abbreviation that fits two options */
    return cli_usage_error(c, "unknown %soption '%s'", name[1] == '-' ? "or ambiguous " : "", q);
}

/* ---- option values --------------------------------------------------- */

int cli_parse_int(cli *c, const char *opt, const char *val, long min, long max, long *out)
{
    char q[128];
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < min || v > max)
        return cli_usage_error(c, "invalid value '%s' for %s (expected an integer from %ld to %ld)",
                               cli_quote(val, q, sizeof(q)), opt, min, max);
    *out = v;
    return 0;
}

int cli_parse_seconds(cli *c, const char *opt, const char *val, double max_s, int64_t *out_ns)
{
    char q[128];
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    /* v == v rejects NaN; the range check rejects infinities. */
    if (errno || end == val || *end || !(v == v) || v < 0 || v > max_s)
        return cli_usage_error(c, "invalid value '%s' for %s (expected seconds from 0 to %.0f)",
                               cli_quote(val, q, sizeof(q)), opt, max_s);
    *out_ns = (int64_t)(v * 1e9);
    return 0;
}

int cli_parse_strategy(cli *c, const char *val, reign_strategy *out)
{
    char q[128];
    int s = reign_strategy_parse(val);
    if (s < 0)
        return cli_usage_error(c, "invalid strategy '%s' (expected 'queue' or 'lock')",
                               cli_quote(val, q, sizeof(q)));
    *out = (reign_strategy)s;
    return 0;
}

int cli_rank_option(cli *c, int o, const char *val, reign_election_options *eo)
{
    long v = 0;
    switch (o) {
    case CLI_OPT_PRIORITY:
        if (cli_parse_int(c, "--priority", val, 0, REIGN_PRIORITY_MAX, &v))
            return CLI_EXIT_USAGE;
        eo->priority = (int)v;
        return 0;
    case CLI_OPT_NO_PREEMPT:
        eo->no_preempt = 1;
        return 0;
    case CLI_OPT_PREEMPT_DELAY:
        if (cli_parse_int(c, "--preempt-delay", val, 0, 86400000L, &v))
            return CLI_EXIT_USAGE;
        eo->preempt_delay_ms = (int)v;
        return 0;
    default:
        return -1;
    }
}

void cli_data_set(cli_data *d, const char *text)
{
    cli_data_free(d);
    d->data = text;
    d->len = strlen(text);
}

int cli_data_read(cli *c, cli_data *d, const char *path)
{
    char q[512];
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(c, "cannot open --data-file '%s': %s", cli_quote(path, q, sizeof(q)),
                  strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* One byte more than allowed, so that the library, not the tool, decides
     * that the payload is too large (and says so in its own words). */
    size_t cap = (size_t)REIGN_DATA_MAX + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        cli_error(c, "out of memory");
        if (fd != STDIN_FILENO)
            close(fd);
        return CLI_EXIT_FAIL;
    }
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cli_error(c, "cannot read --data-file '%s': %s", cli_quote(path, q, sizeof(q)),
                      strerror(errno));
            free(buf);
            if (fd != STDIN_FILENO)
                close(fd);
            return CLI_EXIT_FAIL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (fd != STDIN_FILENO)
        close(fd);
    cli_data_free(d);
    d->buf = buf;
    d->data = buf;
    d->len = len;
    return 0;
}

void cli_data_free(cli_data *d)
{
    free(d->buf);
    d->buf = NULL;
    d->data = NULL;
    d->len = 0;
}

/* ---- the store and the loop ------------------------------------------ */

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
        /* Expired, or suspended past the safety deadline: either way it
         * may be gone; the library makes a new one if the server says so. */
        cli_log(c, REIGN_LOG_WARN,
                "session may be lost (expired, or suspended past the safety "
                "deadline)");
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
                      "cannot join election '%s': priorities and preemption need a ZooKeeper "
                      "store and the queue strategy",
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
    cli_prefix(c, NULL, prefix, sizeof(prefix));
    snprintf(interrupted_msg, sizeof(interrupted_msg), "%s%sinterrupted%s%s\n",
             toollog_journal() ? "<3>" : "", prefix, doing ? " " : "", doing ? doing : "");
    toollog_catch_signals(on_early_signal);
}

int cli_connect(cli *c)
{
    char q[1024], doing[1200];
    redacted_uri(c, q, sizeof(q));
    snprintf(doing, sizeof(doing), "while connecting to '%s'", q);
    cli_catch_signals(c, doing);
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

const char *cli_line_id(const char *id)
{
    return id && *id ? id : "-";
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

static void follow_interrupted(cli *c, int signum)
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
    c->on_signal = follow_interrupted;
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

void cli_left(cli *c, const reign_election_event *ev)
{
    if (ev->error)
        cli_log(c, REIGN_LOG_WARN, "leaving the election: %s%s%s", reign_strerror(ev->error),
                ev->message ? ": " : "", ev->message ? ev->message : "");
    else
        cli_log(c, REIGN_LOG_INFO, "left the election");
    if (c->leaving)
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

/* ---- formatting ------------------------------------------------------ */

int cli_data_is_text(const void *data, size_t len)
{
    const unsigned char *p = data, *end = p + len;
    while (p < end) {
        unsigned char b = *p;
        uint32_t cp;
        size_t n;
        if (b < 0x80) {
            if (b < 0x20 || b == 0x7f)
                return 0;
            p++;
            continue;
        }
        if (b >= 0xc2 && b <= 0xdf) {
            n = 1;
            cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            n = 2;
            cp = b & 0x0f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            n = 3;
            cp = b & 0x07;
        } else {
            return 0;
        }
        if ((size_t)(end - p) <= n)
            return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        /* overlong forms, surrogates, beyond Unicode, C1 controls */
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
            return 0;
        p += n + 1;
    }
    return 1;
}

char *cli_base64(const void *data, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

const char *cli_iso8601(int64_t unix_ms, char *buf, size_t len)
{
    /* floor division, so times before 1970 still get a 0..999 fraction */
    int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    char day[32];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, len, "@%lld", (long long)unix_ms);
        return buf;
    }
    snprintf(buf, len, "%s.%03dZ", day, (int)ms);
    return buf;
}

void cli_json_add_u64(cJSON *obj, const char *key, uint64_t v)
{
    char num[32];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    cJSON_AddRawToObject(obj, key, num);
}

void cli_json_add_i64(cJSON *obj, const char *key, int64_t v)
{
    char num[32];
    snprintf(num, sizeof(num), "%lld", (long long)v);
    cJSON_AddRawToObject(obj, key, num);
}

void cli_json_add_data(cJSON *obj, const void *data, size_t len)
{
    if (!data)
        len = 0;
    if (cli_data_is_text(data, len)) {
        /* cJSON takes a C string: the payload has no NUL (a control character) */
        char *s = malloc(len + 1);
        if (!s)
            return;
        if (len)
            memcpy(s, data, len);
        s[len] = '\0';
        cJSON_AddStringToObject(obj, "data", s);
        free(s);
    } else {
        char *b = cli_base64(data, len);
        if (!b)
            return;
        cJSON_AddStringToObject(obj, "data_base64", b);
        free(b);
    }
}

cJSON *cli_json_leader(const reign_leader *l)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", l->id ? l->id : "");
    cli_json_add_data(o, l->data, l->data_len);
    cli_json_add_u64(o, "term", l->term);
    cli_json_add_u64(o, "token", l->token);
    cli_json_add_i64(o, "since_ms", l->since_ms);
    return o;
}

int cli_json_print(cli *c, cJSON *v)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    if (!s) {
        cli_error(c, "out of memory");
        return CLI_EXIT_FAIL;
    }
    cli_print("%s", s);
    cJSON_free(s);
    return 0;
}

int cli_election_name(cli *c, char **argv, int end, const char *after, const char **name)
{
    if (optind >= end)
        return cli_usage_error(c, "missing election NAME");
    if (optind + 1 < end) {
        char q[256];
        return cli_usage_error(c, "unexpected argument '%s'%s",
                               cli_quote(argv[optind + 1], q, sizeof(q)), after);
    }
    *name = argv[optind];
    return 0;
}
