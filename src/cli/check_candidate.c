/*
 * check_candidate.c - one candidate of `reign check`, a process of its own: the parent
 * re-executes `reign [--log-level L] check --candidate` with its configuration on our stdin
 * (check.h) and reads our reports on fd 3.  We stand in the scratch election and report, with
 * our own CLOCK_MONOTONIC times, each ELECTED and DEMOTED and, while we lead, our
 * reign_election_valid_until_ns() every 50 ms, so that the
 * parent can tell where each leadership began and where it was promised to end, even if we
 * are killed or stopped without a word.
 *
 * SIGTERM (or SIGINT) resigns and exits, as `reign campaign` does; the end of our stdin (the
 * parent gone, or done with us) does the same; the parent's death also SIGKILLs us
 * (PR_SET_PDEATHSIG), so that a stopped candidate does not outlive it.  The guardian is on,
 * as for the other tools, unless REIGN_GUARDIAN=off (the parent sets it for the candidates
 * it kills without one) or the URI says guardian=off.
 *
 * Test hook, for the tests that prove the check catches a broken election (never for users):
 * REIGN_CHECK_TEST_FAULT=claim-without-lease makes candidate c2 a stand-in that claims without
 * the lease: it joins as an observer, so it can never lead, and reports ELECTED as soon as the
 * election is loaded, then valid_until = now + the session timeout every 50 ms, forever.  A
 * correct check must report that leadership as overlapping the real leader's and fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "check.h"

#define TICK_MS 50

typedef struct cand {
    cli *c;
    chk_config cfg;
    char id[16];
    char cmd[32];
    uv_poll_t in;      /* stdin: its end of file means resign and exit */
    uv_timer_t tick;   /* report valid_until while leading */
    bool fake;         /* the test hook */
    bool fake_leading; /* ... has claimed */
} cand;

/* A whole report, or exit: the parent is gone (a failed write of a pipe). */
static void send_msg(cand *k, const chk_msg *m)
{
    const char *p = (const char *)m;
    size_t left = sizeof(*m);
    while (left) {
        ssize_t w = write(CHK_REPORT_FD, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            cli_log(k->c, REIGN_LOG_INFO, "the check is gone: %s", strerror(errno));
            _exit(CLI_EXIT_FAIL);
        }
        p += w;
        left -= (size_t)w;
    }
}

static void report(cand *k, chk_msg_type type, int64_t at, int64_t valid, uint64_t term,
                   uint64_t token, int reason)
{
    chk_msg m;
    memset(&m, 0, sizeof(m));
    m.type = type;
    m.at_ns = at;
    m.valid_until_ns = valid;
    m.term = term;
    m.token = token;
    m.reason = reason;
    if (type == CHK_MSG_READY)
        m.guardian_pid = (int32_t)reign_client_guardian_pid(k->c->client);
    send_msg(k, &m);
}

static void on_tick(uv_timer_t *t)
{
    cand *k = t->data;
    int64_t now = reign_now_ns();
    if (k->fake) {
        if (k->fake_leading)
            report(k, CHK_MSG_VALID, now, now + (int64_t)k->cfg.session_timeout_ms * 1000000, 0, 0,
                   0);
        return;
    }
    reign_election *e = k->c->election;
    /* is_leader() compares the clock: a leadership past its bound is not reported as led,
     * even before the library has had the turn that demotes it. */
    if (!e || !reign_election_is_leader(e))
        return;
    int64_t v = reign_election_valid_until_ns(e);
    if (v > now)
        report(k, CHK_MSG_VALID, now, v, 0, 0, 0);
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cand *k = userdata;
    cli *c = k->c;
    switch (ev->type) {
    case REIGN_ELECTION_READY:
        report(k, CHK_MSG_READY, ev->at_ns, 0, 0, 0, 0);
        if (k->fake) {
            int64_t now = reign_now_ns();
            k->fake_leading = true;
            report(k, CHK_MSG_ELECTED, now, now + (int64_t)k->cfg.session_timeout_ms * 1000000, 1,
                   1, 0);
        }
        break;
    case REIGN_ELECTION_ELECTED:
        report(k, CHK_MSG_ELECTED, ev->at_ns, ev->valid_until_ns, ev->term, ev->token, 0);
        break;
    case REIGN_ELECTION_DEMOTED:
        report(k, CHK_MSG_DEMOTED, ev->at_ns, 0, ev->term, ev->token, (int)ev->reason);
        break;
    default:
        cli_election_end(c, e, ev);
        break;
    }
}

static void on_stdin(uv_poll_t *h, int status, int events)
{
    cand *k = h->data;
    char b[64];
    (void)events;
    ssize_t n = status < 0 ? 0 : read(STDIN_FILENO, b, sizeof(b));
    if (n > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
        return; /* nothing but the configuration is ever sent */
    uv_poll_stop(h);
    cli_leave_on_signal(k->c, SIGTERM);
    cli_update(k->c);
}

static int read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    /* Neither pipe may reach the guardian or anything else we start. */
    fcntl(fd, F_SETFD, FD_CLOEXEC);
}

static void close_handle(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int chk_candidate_main(cli *c)
{
    static cand k;
    static char uri[8192], name[REIGN_NAME_MAX + 1];
    memset(&k, 0, sizeof(k));
    k.c = c;
    if (isatty(STDIN_FILENO) || fcntl(CHK_REPORT_FD, F_GETFD) < 0) {
        cli_error(c, "--candidate is for reign check's own use");
        return CLI_EXIT_USAGE;
    }
    blocking(STDIN_FILENO);
    blocking(CHK_REPORT_FD);
    if (read_all(STDIN_FILENO, &k.cfg, sizeof(k.cfg)) < 0 || k.cfg.magic != CHK_CONFIG_MAGIC ||
        k.cfg.uri_len >= sizeof(uri) || k.cfg.name_len >= sizeof(name) ||
        read_all(STDIN_FILENO, uri, k.cfg.uri_len) < 0 ||
        read_all(STDIN_FILENO, name, k.cfg.name_len) < 0) {
        cli_error(c, "--candidate is for reign check's own use");
        return CLI_EXIT_USAGE;
    }
    uri[k.cfg.uri_len] = '\0';
    name[k.cfg.name_len] = '\0';
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != (pid_t)k.cfg.parent_pid)
        return CLI_EXIT_FAIL; /* the check died before we could be told */
    snprintf(k.id, sizeof(k.id), "c%u", k.cfg.index);
    snprintf(k.cmd, sizeof(k.cmd), "check: %s", k.id);
    c->cmd = k.cmd;
    c->uri = uri;
    c->session_timeout_ms = k.cfg.session_timeout_ms;
    const char *fault = getenv("REIGN_CHECK_TEST_FAULT");
    k.fake = k.cfg.index == 2 && fault && !strcmp(fault, "claim-without-lease");

    int r;
    c->guarded = 1;
    if ((r = cli_client_new(c)))
        return r;
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.id = k.id;
    eo.listed = 1; /* a SQL store lists it, so that the check can designate it */
    eo.observer = k.fake;
    eo.cb = on_event;
    eo.userdata = &k;
    if ((r = cli_join(c, name, &eo)) || (r = cli_connect(c)))
        return r;
    /* The granted timeout, for the fake's claims (the URI's may have been changed). */
    if (reign_client_session_timeout_ms(c->client) > 0)
        k.cfg.session_timeout_ms = reign_client_session_timeout_ms(c->client);
    c->on_signal = cli_leave_on_signal;
    uv_poll_init(&c->loop, &k.in, STDIN_FILENO);
    k.in.data = &k;
    uv_poll_start(&k.in, UV_READABLE | UV_DISCONNECT, on_stdin);
    uv_timer_init(&c->loop, &k.tick);
    k.tick.data = &k;
    uv_timer_start(&k.tick, on_tick, TICK_MS, TICK_MS);
    r = cli_run(c);
    close_handle((uv_handle_t *)&k.in);
    close_handle((uv_handle_t *)&k.tick);
    return r;
}
