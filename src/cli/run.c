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
 * CMD is also held by a leash (leash.h), which kills it before the
 * leadership's guarantee runs out should reign itself be stopped (SIGSTOP, a
 * debugger): demoted or not, a stopped reign cannot act, and the next leader
 * may be elected once the guarantee is over.  The leash's deadline is the end
 * of the guarantee less the fence margin; it moves only while CMD runs under
 * the leadership, so a demotion keeps the earlier one.
 *
 * With --slot KEY or --every DURATION, CMD runs to success at most once per
 * slot across every copy (<reign/slot.h>, docs/slots.md): the slot recipe
 * stands in the election and says when to start CMD (START), when to stop it
 * (STOP: the leadership ended), and how the slot ended for this copy (DONE).
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
#include "leash.h"

extern char **environ;

#define NS_PER_MS        1000000LL
#define GRACE_DEFAULT_NS (10000 * NS_PER_MS)
#define EXIT_CANNOT_RUN  126
#define EXIT_NOT_FOUND   127

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

    int64_t leash_ns; /* the deadline last given to the leash */

    /* --slot / --every */
    reign_slot *slot;
    reign_slot_options so;
    int quiet;
    unsigned attempt; /* the attempt CMD runs for */
    int cmd_code;     /* CMD's status, the shell's way, once it has exited */

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
            "       reign [GLOBAL OPTIONS] run NAME --slot KEY|--every DURATION [OPTIONS] --\n"
            "             CMD [ARGS...]\n"
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
            "  -h, --help              show this help\n"
            "\n"
            "Scheduled jobs: CMD runs to success at most once per slot across every copy\n"
            "(cron, systemd timers).  A copy that finds the slot done exits 0 at once and\n"
            "says who ran it; one that finds it running waits, and takes over if the\n"
            "runner dies.  CMD gets REIGN_SLOT and REIGN_ATTEMPT too.\n"
            "      --slot KEY          the slot, e.g. \"$(date +%%F)\": 1 to 128 of\n"
            "                          A-Z a-z 0-9 . _ : + -\n"
            "      --every DURATION    the slot is the store's clock / DURATION (90s, 15m,\n"
            "                          1h, 1d, 1h30m); at least the session timeout (lease)\n"
            "      --deadline DURATION with --every: do not start a slot that began longer\n"
            "                          ago than that\n"
            "      --no-wait           exit 0 at once if another copy runs the slot\n"
            "      --retries N         attempts after one that failed or died (0 to 20,\n"
            "                          default 2)\n"
            "      --at-most-once      never start a slot again once it started\n"
            "      --keep N            slots kept in the record (default 100)\n"
            "  -q, --quiet             do not say why CMD was not run when that is no error\n"
            "Exit status: 0 the slot succeeded (here or before) or was skipped on purpose\n"
            "(--no-wait, --deadline); CMD's status if it ran here and failed; 1 the slot\n"
            "failed for good or was abandoned, or an error.  See reign(1) and 'reign runs'.\n");
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

/* Gives the leash the end of the current guarantee, less the margin, while
 * CMD runs under a leadership.  A CMD being stopped (`signaled`: demoted, or
 * the election failed) keeps the deadline of the leadership it ran for, even
 * once re-elected: its kill timer runs on that one too. */
static void update_leash(cli *c)
{
    runner *r = c->cmd_data;
    if (!c->leash || !r->proc || !r->leading || r->signaled || r->valid_until_ns <= 0)
        return;
    int64_t at = r->valid_until_ns - cli_fence_margin_ns(c);
    if (at != r->leash_ns) {
        r->leash_ns = at;
        cli_leash_deadline(c->leash, at);
    }
}

static void start_child(cli *c)
{
    runner *r = c->cmd_data;
    reign_election *e = r->slot ? reign_slot_election(r->slot) : c->election;
    char term[32], token[32], q[512];
    uint64_t t = reign_election_term(e), k = reign_election_token(e);

    r->start_pending = 0;
    if (!reign_election_is_leader(e) || t == 0) {
        /* The guarantee lapsed a moment ago: a demotion follows, or a renewal, and
         * then CMD starts (on_prepare). */
        r->start_pending = r->leading && !r->slot;
        return;
    }
    /* The leash learns the deadline before it guards the group (cli_child_start), so
     * the group never meets an earlier command's, long past.  A guarantee already
     * within the margin would only see CMD killed at once: wait for its renewal. */
    int64_t leash_at = r->valid_until_ns > 0 ? r->valid_until_ns - cli_fence_margin_ns(c) : 0;
    if (leash_at > 0 && !r->slot && leash_at <= reign_now_ns()) {
        cli_log(c, REIGN_LOG_INFO, "the guarantee ends within the margin: CMD waits for more");
        r->start_pending = 1;
        return;
    }
    cli_leash_deadline(c->leash, leash_at);
    snprintf(term, sizeof(term), "%llu", (unsigned long long)t);
    snprintf(token, sizeof(token), "%llu", (unsigned long long)k);

    /* The environment, with our variables replaced: data reaches CMD only
     * as values, never through a shell. */
    enum { OWN_MAX = 7 };
    static const char *const names[OWN_MAX] = {"REIGN_ELECTION",  "REIGN_TERM", "REIGN_TOKEN",
                                               "REIGN_ID",        "REIGN_SLOT", "REIGN_ATTEMPT",
                                               "REIGN_SLOT_START"};
    char attempt[16], start[32];
    snprintf(attempt, sizeof(attempt), "%u", r->attempt);
    snprintf(start, sizeof(start), "%lld", (long long)reign_slot_start_ms(r->slot));
    const char *values[OWN_MAX] = {reign_election_name(e),  term,    token, reign_election_id(e),
                                   reign_slot_key(r->slot), attempt, start};
    size_t n_own = !r->slot ? 4 : reign_slot_start_ms(r->slot) ? 7 : 6;
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + OWN_MAX + 1, sizeof(*env));
    char *own[OWN_MAX] = {NULL};
    bool oom = !env;
    for (size_t i = 0; i < n_own; i++)
        oom |= !(own[i] = env_entry(names[i], values[i]));
    int err = ENOMEM;
    if (!oom) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            bool ours = false;
            for (size_t j = 0; j < OWN_MAX; j++)
                ours |= is_env(environ[i], names[j]);
            if (!ours)
                env[m++] = environ[i];
        }
        for (size_t i = 0; i < n_own; i++)
            env[m++] = own[i];
        env[m] = NULL;

        static const int inherit[3] = {-1, -1, -1};
        err = cli_child_start(c, &r->child, r->exe, r->cmd, env, inherit, true, on_child_exit);
    }
    free(env);
    for (size_t i = 0; i < n_own; i++)
        free(own[i]);

    if (err) {
        cli_error(c, "cannot run '%s': %s", cli_quote(r->cmd[0], q, sizeof(q)), strerror(err));
        if (r->slot) {
            /* Recorded as a failed attempt, as the shell would report it. */
            r->fatal = 1;
            reign_slot_stand_down(r->slot);
            reign_slot_finish(r->slot, err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN, 0);
            cli_update(c);
            return;
        }
        cli_leave(c, err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_RUN);
        return;
    }
    r->child.data = c;
    r->proc = 1;
    r->pid = r->child.pid;
    r->signaled = 0;
    r->leash_ns = leash_at;
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
    r->cmd_code = code;
    /* Stopped for the leadership's sake: by the leash, when the guarantee was about to run
     * out (a moment before the demotion is noticed, if reign was stopped). */
    bool leashed = term_signal == SIGKILL && r->leash_ns > 0 && reign_now_ns() >= r->leash_ns;
    if (leashed)
        cli_log(c, REIGN_LOG_WARN, "command killed by the leash: the guarantee ran out");

    if (r->slot) {
        /* The slot records how it ended, then says what this copy does (DONE, or a
         * later START).  Told to stop, or failed: leave once the end is recorded. */
        if (r->user_stop || r->fatal)
            reign_slot_stand_down(r->slot);
        /* Stopped for the leadership's sake: after a demotion, or by the leash. */
        if (r->signaled || leashed)
            reign_slot_finish_stopped(r->slot, exit_status, term_signal);
        else
            reign_slot_finish(r->slot, exit_status, term_signal);
        cli_update(c);
        return;
    }
    if (r->fatal) {
        cli_exit(c, CLI_EXIT_FAIL);
    } else if (r->user_stop) {
        cli_leave(c, code);
    } else if (r->signaled || leashed) {
        /* Stopped because we lost the leadership (or nearly): keep standing.  Still
         * leading after the leash (its proof came late), CMD starts again once the
         * leadership is renewed (on_prepare), unless the demotion comes first. */
        if ((r->start_pending || leashed) && r->leading)
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
    int64_t margin = cli_fence_margin_ns(c);
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
    reign_election *e = r->slot ? reign_slot_election(r->slot) : c->election;
    if (!r->leading || !e)
        return;
    int64_t v = reign_election_valid_until_ns(e);
    if (v > 0 && v != r->valid_until_ns) {
        cli_log(c, REIGN_LOG_DEBUG, "leadership guaranteed for %lld ms more",
                (long long)((v - reign_now_ns()) / NS_PER_MS));
        r->valid_until_ns = v;
        update_leash(c);
        if (r->start_pending && !r->proc && !r->slot && !r->user_stop && !r->fatal && !c->leaving)
            start_child(c);
    }
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    runner *r = c->cmd_data;
    if (r->slot || r->so.cb) {
        /* The slot decides; the lines a checker reads are the same. */
        if (ev->type == REIGN_ELECTION_ELECTED)
            cli_log(c, REIGN_LOG_NOTICE, "elected %s term=%llu token=%llu monotonic_ns=%lld",
                    reign_election_id(e), (unsigned long long)ev->term,
                    (unsigned long long)ev->token, (long long)ev->at_ns);
        else if (ev->type == REIGN_ELECTION_DEMOTED)
            cli_log(c, REIGN_LOG_NOTICE, "demoted %s reason=%s monotonic_ns=%lld",
                    reign_election_id(e), reign_demote_reason_name(ev->reason),
                    (long long)ev->at_ns);
        return;
    }
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
        cli_election_error(c, e, ev);
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

/* ---- the slot ------------------------------------------------------ */

/* "attempt 2 on host-a (owner host-a-42), ended 2024-05-01T02:00:03.120Z, term 7, token 7" */
static const char *describe_run(const reign_slot_run *u, char *out, size_t len)
{
    char when[40] = "?", host[300], owner[300];
    if (u->end_ms > 0)
        cli_iso8601(u->end_ms, when, sizeof(when));
    else if (u->start_ms > 0)
        cli_iso8601(u->start_ms, when, sizeof(when));
    snprintf(out, len, "attempt %u on %s (owner %s), %s %s, term %llu, token %llu", u->attempt,
             cli_quote(u->host[0] ? u->host : "?", host, sizeof(host)),
             cli_quote(u->owner, owner, sizeof(owner)), u->end_ms > 0 ? "ended" : "started", when,
             (unsigned long long)u->term, (unsigned long long)u->token);
    return out;
}

/* How `reign run` exits for each outcome, and what it says. */
static int slot_done(cli *c, const reign_slot_event *ev)
{
    runner *r = c->cmd_data;
    char run[800] = "no attempt", q[300], start[40];
    const char *key = cli_quote(ev->key, q, sizeof(q));
    if (ev->run)
        describe_run(ev->run, run, sizeof(run));
    cli_log(c, REIGN_LOG_NOTICE, "slot %s outcome=%s verdict=%s attempt=%u term=%llu token=%llu",
            ev->key, reign_slot_outcome_name(ev->outcome), reign_slot_verdict_name(ev->verdict),
            ev->run ? ev->run->attempt : 0, (unsigned long long)ev->term,
            (unsigned long long)ev->token);
    switch (ev->outcome) {
    case REIGN_SLOT_RAN_OK:
        return CLI_EXIT_OK;
    case REIGN_SLOT_RAN_FAILED:
        if (r->fatal)
            return r->cmd_code ? r->cmd_code : CLI_EXIT_FAIL;
        if (ev->verdict == REIGN_SLOT_RETRY)
            cli_log(c, REIGN_LOG_NOTICE, "slot %s: another copy may retry it", ev->key);
        return r->cmd_code ? r->cmd_code : CLI_EXIT_FAIL;
    case REIGN_SLOT_UNRECORDED:
        cli_error(c,
                  "slot '%s' of '%s': the command succeeded, but a later leader had declared "
                  "the attempt lost before its result could be recorded: the slot may run again",
                  key, r->name);
        return CLI_EXIT_FAIL;
    case REIGN_SLOT_ALREADY_DONE:
        if (!r->quiet)
            cli_error(c, "slot '%s' of '%s' already ran: %s", key, r->name, run);
        return CLI_EXIT_OK;
    case REIGN_SLOT_GAVE_UP:
        cli_error(c, "slot '%s' of '%s' failed for good: %s", key, r->name, run);
        return CLI_EXIT_FAIL;
    case REIGN_SLOT_WAS_ABANDONED:
        cli_error(c,
                  "slot '%s' of '%s' was abandoned: it started once and did not succeed "
                  "(--at-most-once never runs it again): %s",
                  key, r->name, run);
        return CLI_EXIT_FAIL;
    case REIGN_SLOT_LATE:
        if (!r->quiet)
            cli_error(c, "slot '%s' of '%s' began at %s, more than --deadline ago: not started",
                      key, r->name,
                      cli_iso8601(reign_slot_start_ms(r->slot), start, sizeof(start)));
        return CLI_EXIT_OK;
    case REIGN_SLOT_SKIPPED:
        if (!r->quiet)
            cli_error(c, "slot '%s' of '%s' is running elsewhere: not waiting (--no-wait)%s%s", key,
                      r->name, ev->run ? ": " : "", ev->run ? run : "");
        return CLI_EXIT_OK;
    }
    return CLI_EXIT_FAIL;
}

static void on_slot(reign_slot *s, const reign_slot_event *ev, void *userdata)
{
    cli *c = userdata;
    runner *r = c->cmd_data;
    switch (ev->type) {
    case REIGN_SLOT_RESOLVED:
        cli_log(c, REIGN_LOG_INFO, "slot %s", ev->key);
        break;
    case REIGN_SLOT_START:
        cli_log(c, REIGN_LOG_NOTICE, "slot %s attempt=%u term=%llu token=%llu starts", ev->key,
                ev->attempt, (unsigned long long)ev->term, (unsigned long long)ev->token);
        if (r->user_stop || r->fatal) {
            reign_slot_stand_down(s);
            reign_slot_finish(s, 128 + SIGTERM, 0);
            break;
        }
        r->leading = 1;
        r->attempt = ev->attempt;
        if (ev->valid_until_ns > 0)
            r->valid_until_ns = ev->valid_until_ns;
        start_child(c);
        break;
    case REIGN_SLOT_STOP:
        r->leading = 0;
        if (ev->stop_by_ns > 0 && (r->valid_until_ns <= 0 || ev->stop_by_ns < r->valid_until_ns))
            r->valid_until_ns = ev->stop_by_ns;
        stop_child(c, ev->reason);
        break;
    case REIGN_SLOT_DONE:
        r->leading = 0;
        cli_exit(c, slot_done(c, ev));
        break;
    case REIGN_SLOT_ERROR: {
        char q[300];
        cli_error(c, "slot '%s' of '%s': %s", cli_quote(ev->key ? ev->key : "", q, sizeof(q)),
                  r->name, ev->message ? ev->message : reign_strerror(ev->error));
        r->fatal = 1;
        r->leading = 0;
        if (r->proc)
            signal_child(r, SIGKILL); /* the leadership is in doubt: no time left */
        cli_exit(c, CLI_EXIT_FAIL);
        break;
    }
    }
}

static void on_state(cli *c, reign_conn_state state)
{
    runner *r = c->cmd_data;
    if (state != REIGN_CONN_CLOSED || r->slot)
        return; /* a slot says so itself (ERROR) */
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
    } else if (r->slot) {
        /* Nothing runs: let go of the slot (its candidacy goes with it) and leave. */
        r->slot = reign_slot_free(r->slot);
        cli_exit(c, CLI_EXIT_OK);
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

/* --every / --deadline DURATION; 0 or CLI_EXIT_USAGE. */
static int parse_duration(cli *c, const char *opt, const char *val, int64_t *ms)
{
    char q[128];
    if (reign_slot_duration_parse(val, ms) < 0)
        return cli_usage_error(c,
                               "invalid duration '%s' for %s (e.g. 90s, 15m, 1h30m, 1d; at most "
                               "366d)",
                               cli_quote(val, q, sizeof(q)), opt);
    return 0;
}

static int parse_key(cli *c, const char *val)
{
    char q[300];
    size_t n = strlen(val);
    if (n == 0)
        return cli_usage_error(c, "the slot key given to --slot is empty");
    if (n > REIGN_SLOT_KEY_MAX)
        return cli_usage_error(c, "the slot key given to --slot is %zu characters long; at most %d",
                               n, REIGN_SLOT_KEY_MAX);
    if (reign_slot_key_check(val) < 0)
        return cli_usage_error(c,
                               "invalid slot key '%s' (expected 1 to %d characters of A-Z a-z 0-9 "
                               ". _ : + -)",
                               cli_quote(val, q, sizeof(q)), REIGN_SLOT_KEY_MAX);
    return 0;
}

/* The slot options make sense together; 0 or CLI_EXIT_USAGE. */
static int check_slot_options(cli *c, runner *r, const char *needs, bool retries_given)
{
    reign_slot_options *so = &r->so;
    if (so->key && so->every_ms)
        return cli_usage_error(c, "--slot and --every cannot be combined: give one");
    /* Before the general rule below: --slot would not do for --deadline. */
    if (so->deadline_ms && !so->every_ms)
        return cli_usage_error(c, "--deadline needs --every (a slot named by --slot has no start "
                                  "time)");
    if (!so->key && !so->every_ms) {
        if (needs)
            return cli_usage_error(c, "%s needs --slot or --every", needs);
        return 0;
    }
    if (so->at_most_once && retries_given && so->retries > 0)
        return cli_usage_error(c, "--at-most-once never runs a slot again: it cannot be combined "
                                  "with --retries");
    if (so->at_most_once)
        so->retries = 0;
    return 0;
}

/* Starts the slot (the leash is on already), then the client. */
static int run_slot(cli *c, runner *r, reign_election_options *eo)
{
    c->guarded = 1;
    int rc = cli_client_new(c);
    if (rc)
        return rc;
    if ((rc = cli_connect(c)))
        return rc;
    int lease = reign_client_session_timeout_ms(c->client);
    if (r->so.every_ms && r->so.every_ms < lease)
        return cli_usage_error(c,
                               "--every of %lld ms is shorter than the session timeout or lease "
                               "(%d ms): a slot must outlast a takeover",
                               (long long)r->so.every_ms, lease);
    eo->size = sizeof(*eo);
    eo->cb = on_event;
    eo->userdata = c;
    r->so.size = sizeof(r->so);
    r->so.election = eo;
    r->so.cb = on_slot;
    r->so.userdata = c;
    int err = reign_slot_start(&r->slot, c->client, r->name, &r->so);
    if (err < 0) {
        char q[300];
        cli_error(c, "slot of '%s': %s", cli_quote(r->name, q, sizeof(q)), reign_strerror(err));
        return err == REIGN_EINVAL || err == REIGN_ENAME ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    }
    c->on_signal = on_signal;
    c->on_state = on_state;
    cli_update(c);
    return cli_run(c);
}

int cli_run_main(cli *c, int argc, char **argv)
{
    enum {
        OPT_DATA_FILE = 256,
        OPT_SLOT,
        OPT_EVERY,
        OPT_DEADLINE,
        OPT_NO_WAIT,
        OPT_RETRIES,
        OPT_AT_MOST_ONCE,
        OPT_KEEP
    };
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},
        {"data", required_argument, NULL, 'd'},
        {"data-file", required_argument, NULL, OPT_DATA_FILE},
        {"strategy", required_argument, NULL, 's'},
        CLI_RANK_OPTIONS,
        {"grace", required_argument, NULL, 'g'},
        {"slot", required_argument, NULL, OPT_SLOT},
        {"every", required_argument, NULL, OPT_EVERY},
        {"deadline", required_argument, NULL, OPT_DEADLINE},
        {"no-wait", no_argument, NULL, OPT_NO_WAIT},
        {"retries", required_argument, NULL, OPT_RETRIES},
        {"at-most-once", no_argument, NULL, OPT_AT_MOST_ONCE},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"quiet", no_argument, NULL, 'q'},
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
    long v;
    /* The first slot-only option given, for "needs --slot" */
    const char *slot_only = NULL;
    bool retries_given = false;

    /* Our options end at "--"; everything after it is CMD's. */
    int dashes = 1;
    while (dashes < argc && strcmp(argv[dashes], "--") != 0)
        dashes++;

    r->grace_ns = GRACE_DEFAULT_NS;
    r->so.retries = 2;
    while ((o = getopt_long(dashes, argv, ":i:d:s:g:qh", opts, NULL)) != -1) {
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
        case OPT_SLOT:
            if ((rc = parse_key(c, optarg)))
                goto out;
            r->so.key = optarg;
            break;
        case OPT_EVERY:
            if ((rc = parse_duration(c, "--every", optarg, &r->so.every_ms)))
                goto out;
            break;
        case OPT_DEADLINE:
            if ((rc = parse_duration(c, "--deadline", optarg, &r->so.deadline_ms)))
                goto out;
            slot_only = slot_only ? slot_only : "--deadline";
            break;
        case OPT_NO_WAIT:
            r->so.no_wait = 1;
            slot_only = slot_only ? slot_only : "--no-wait";
            break;
        case OPT_RETRIES:
            if ((rc = cli_parse_int(c, "--retries", optarg, 0, REIGN_SLOT_RETRIES_MAX, &v)))
                goto out;
            r->so.retries = (int)v;
            retries_given = true;
            slot_only = slot_only ? slot_only : "--retries";
            break;
        case OPT_AT_MOST_ONCE:
            r->so.at_most_once = 1;
            slot_only = slot_only ? slot_only : "--at-most-once";
            break;
        case OPT_KEEP:
            if ((rc = cli_parse_int(c, "--keep", optarg, 1, REIGN_SLOT_KEEP_MAX, &v)))
                goto out;
            r->so.keep = (int)v;
            slot_only = slot_only ? slot_only : "--keep";
            break;
        case 'q':
            r->quiet = 1;
            slot_only = slot_only ? slot_only : "--quiet";
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
    if ((rc = check_slot_options(c, r, slot_only, retries_given)))
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

    eo.data = data.data;
    eo.data_len = data.len;
    /* The leash first, while this process has one thread (the client starts some). */
    if ((rc = cli_leash_begin(c)))
        goto out;
    if (r->so.key || r->so.every_ms) {
        rc = run_slot(c, r, &eo);
        goto out;
    }
    c->guarded = 1;
    if ((rc = cli_client_new(c)))
        goto out;
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
    r->slot = reign_slot_free(r->slot);
    if (c->leash) {
        /* With CMD still running its group is the leash's to kill (end of file); else it
         * leaves quietly. */
        if (r->proc)
            cli_leash_drop(c->leash);
        else
            cli_leash_stop(c->leash);
        c->leash = NULL;
    }
    free(r->exe);
    cli_data_free(&data);
    return rc;
}
