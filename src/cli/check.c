/*
 * check.c - `reign check [URI]`: prove election safety and measure takeover time on the
 * user's own store, with the user's own timeouts.
 *
 * Several candidates, each a process of its own (this binary re-executed in its hidden
 * candidate mode, check_candidate.c), stand in a scratch election of a unique name.  Phases,
 * each of a few rounds, make the leader go: SIGTERM (a graceful handoff), SIGKILL with and
 * without the guardian, SIGSTOP until a successor is elected and then SIGCONT, and a cut of
 * the connection by a proxy inside this process (TCP stores only).  Each candidate reports
 * its ELECTED and DEMOTED and, while it leads, its valid_until, all on its own
 * CLOCK_MONOTONIC; on one host those clocks are one.  A leadership is the interval from its
 * ELECTED to its DEMOTED, or, when it never says (killed, stopped), to the last valid_until it
 * reported (the library promises that nobody else is elected before then), or to its SIGKILL
 * if that came first (a dead process leads nothing).  The check then
 * proves that no two intervals overlap, that terms and tokens strictly grow, and that each
 * round made a new leader; takeover is timed from the moment this process acted (kill, stop,
 * cut) to the successor's ELECTED.  check_report.c prints it all.
 *
 * Everything waits with a deadline, on this process's libuv loop, which also runs the proxy;
 * at the end (or on SIGINT/SIGTERM) every candidate is made to resign, killed if it does not,
 * and reaped, and the scratch election is removed.
 */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define DEFAULT_CANDIDATES  3
#define MAX_CANDIDATES      20
#define FAST_ROUNDS         10 /* of the phases that take milliseconds */
#define SLOW_ROUNDS         1  /* of those that wait a session timeout */
#define RTT_SAMPLES         20
#define MS                  1000000LL
#define SEC                 (1000 * MS)
#define RESUMED_DEMOTE_WAIT (10 * SEC) /* a resumed leader demotes on its first loop turn */

extern char **environ;

typedef struct chk chk;

/* The parent's side of one candidate process. */
typedef struct pcand {
    chk *k;
    int idx;
    char id[16];
    uv_process_t proc;
    uv_pipe_t in, rep;
    unsigned char buf[sizeof(chk_msg)];
    size_t have;
    int handles; /* not yet closed */
    bool exited, eof, ready, stopped, expected_exit, special;
    int lead;          /* its open leadership, or -1 */
    int64_t killed_at; /* when we sent SIGKILL */
    uv_pipe_t err;     /* its stderr (and its guardian's) */
    char line[1024];
    size_t line_len;
    int64_t exit_status;
    int term_signal;
} pcand;

struct chk {
    cli *c;
    int n_cand;
    int rounds; /* 0: the defaults */
    bool json, tty;
    char name[REIGN_NAME_MAX + 1];
    char exe[PATH_MAX];
    pcand **cands;
    int n_cands, cap_cands;
    chk_lead *leads;
    int n_leads, cap_leads;
    const char **ids;
    chk_report r;
    chk_proxy *proxy;
    char proxy_uri[8192];
    uv_timer_t wake;
    int64_t bound; /* the longest a takeover may take: 2 x the store's bound + slack */
    int interrupted;
    bool violated, broken, cleaning, wake_ready;
    int op_done, op_err;
};

int64_t chk_lead_end(const chk_lead *l)
{
    int64_t end = l->demoted ? l->demoted : l->valid;
    return l->killed && l->killed < end ? l->killed : end;
}

/* ---- waiting ------------------------------------------------------------- */

static void on_wake(uv_timer_t *t)
{
    (void)t;
}

static bool aborting(chk *k)
{
    if (k->interrupted > 1)
        return true;
    if (k->cleaning)
        return false;
    return k->interrupted || k->violated || k->broken || k->c->done;
}

typedef bool chk_pred(chk *k, const void *arg);

enum { WAIT_OK = 0, WAIT_TIMEOUT, WAIT_ABORT };

/* Runs the loop until pred holds (WAIT_OK), deadline passes (WAIT_TIMEOUT; without a pred,
 * WAIT_OK), or the check is to stop (WAIT_ABORT). */
static int wait_until(chk *k, int64_t deadline, chk_pred *pred, const void *arg)
{
    for (;;) {
        if (pred && pred(k, arg))
            return WAIT_OK;
        if (aborting(k))
            return WAIT_ABORT;
        int64_t now = reign_now_ns();
        if (now >= deadline)
            return pred ? WAIT_TIMEOUT : WAIT_OK;
        int64_t ms = (deadline - now + MS - 1) / MS;
        uv_timer_start(&k->wake, on_wake, (uint64_t)(ms > 100 ? 100 : ms), 0);
        uv_run(&k->c->loop, UV_RUN_ONCE);
    }
}

static void on_signal(cli *c, int signum)
{
    chk *k = c->cmd_data;
    (void)signum;
    k->interrupted++;
}

static void add_error(chk *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void add_error(chk *k, const char *fmt, ...)
{
    chk_report *r = &k->r;
    if (r->n_errors >= (int)(sizeof(r->errors) / sizeof(r->errors[0])))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->errors[r->n_errors++], sizeof(r->errors[0]), fmt, ap);
    va_end(ap);
}

/* ---- what the candidates report ------------------------------------------- */

/* Online, a violation that later reports cannot undo: two leaderships whose certain parts
 * (from ELECTED to the latest moment each said it led) overlap.  check_report.c lists it. */
static void check_online(chk *k, int li)
{
    const chk_lead *a = &k->leads[li];
    for (int j = 0; j < k->n_leads; j++) {
        const chk_lead *b = &k->leads[j];
        if (j == li || b->cand == a->cand)
            continue;
        int64_t from = a->start > b->start ? a->start : b->start;
        int64_t to = a->leading_at < b->leading_at ? a->leading_at : b->leading_at;
        if (from < to)
            k->violated = true;
    }
}

static int new_lead(chk *k, pcand *p, const chk_msg *m)
{
    if (k->n_leads == k->cap_leads) {
        int cap = k->cap_leads ? 2 * k->cap_leads : 64;
        chk_lead *v = realloc(k->leads, (size_t)cap * sizeof(*v));
        if (!v)
            return -1;
        k->leads = v;
        k->cap_leads = cap;
    }
    chk_lead *l = &k->leads[k->n_leads];
    memset(l, 0, sizeof(*l));
    l->cand = p->idx;
    l->term = m->term;
    l->token = m->token;
    l->start = m->at_ns;
    l->valid = m->valid_until_ns;
    l->leading_at = m->at_ns;
    l->killed = p->killed_at;
    p->lead = k->n_leads++;
    return p->lead;
}

static void on_msg(pcand *p, const chk_msg *m)
{
    chk *k = p->k;
    chk_lead *l = p->lead >= 0 ? &k->leads[p->lead] : NULL;
    switch (m->type) {
    case CHK_MSG_READY:
        p->ready = true;
        cli_log(k->c, REIGN_LOG_INFO, "%s stands (guardian pid %d)", p->id, m->guardian_pid);
        break;
    case CHK_MSG_ELECTED:
        if (l) /* a second ELECTED without a DEMOTED: the first ended here */
            l->demoted = m->at_ns;
        if (new_lead(k, p, m) < 0) {
            add_error(k, "out of memory");
            k->broken = true;
            return;
        }
        cli_log(k->c, REIGN_LOG_INFO, "%s elected, term %llu token %llu", p->id,
                (unsigned long long)m->term, (unsigned long long)m->token);
        check_online(k, p->lead);
        break;
    case CHK_MSG_VALID:
        if (!l)
            break;
        if (m->valid_until_ns > l->valid)
            l->valid = m->valid_until_ns;
        if (m->at_ns > l->leading_at)
            l->leading_at = m->at_ns;
        check_online(k, p->lead);
        break;
    case CHK_MSG_DEMOTED:
        if (!l)
            break;
        l->demoted = m->at_ns;
        l->reason = m->reason;
        p->lead = -1;
        cli_log(k->c, REIGN_LOG_INFO, "%s demoted (%s)", p->id,
                reign_demote_reason_name((reign_demote_reason)m->reason));
        break;
    default:
        break;
    }
}

static void on_handle_closed(uv_handle_t *h)
{
    pcand *p = h->data;
    p->handles--;
}

static void close_h(pcand *p, uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, on_handle_closed);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    static char b[4096];
    (void)h;
    (void)suggested;
    buf->base = b;
    buf->len = sizeof(b);
}

static void on_rep(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    pcand *p = st->data;
    if (n < 0) {
        p->eof = true;
        uv_read_stop(st);
        close_h(p, (uv_handle_t *)&p->rep);
        return;
    }
    for (ssize_t i = 0; i < n;) {
        size_t take = sizeof(p->buf) - p->have;
        if ((size_t)(n - i) < take)
            take = (size_t)(n - i);
        memcpy(p->buf + p->have, buf->base + i, take);
        p->have += take;
        i += (ssize_t)take;
        if (p->have == sizeof(p->buf)) {
            chk_msg m;
            memcpy(&m, p->buf, sizeof(m));
            p->have = 0;
            on_msg(p, &m);
        }
    }
}

/* A candidate's stderr, line by line onto ours; its guardian's notices ("process N died:
 * released ...") only at --log-level info and above. */
static void on_err(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    pcand *p = st->data;
    if (n < 0) {
        uv_read_stop(st);
        close_h(p, (uv_handle_t *)&p->err);
        return;
    }
    for (ssize_t i = 0; i < n; i++) {
        char ch = buf->base[i];
        if (p->line_len < sizeof(p->line) - 1)
            p->line[p->line_len++] = ch;
        if (ch != '\n' && p->line_len < sizeof(p->line) - 1)
            continue;
        p->line[p->line_len] = '\0';
        if (!strstr(p->line, "reign-guardian[") || p->k->c->log_level >= REIGN_LOG_INFO)
            fputs(p->line, stderr);
        p->line_len = 0;
    }
}

static void on_exit_cb(uv_process_t *proc, int64_t status, int sig)
{
    pcand *p = proc->data;
    chk *k = p->k;
    p->exited = true;
    p->exit_status = status;
    p->term_signal = sig;
    close_h(p, (uv_handle_t *)&p->proc);
    if (!p->expected_exit && !k->cleaning) {
        if (sig)
            add_error(k, "candidate %s died of signal %d", p->id, sig);
        else
            add_error(k, "candidate %s exited with status %lld%s", p->id, (long long)status,
                      p->ready ? "" : " before it could stand (its message is above)");
        k->broken = true;
    }
}

/* ---- candidates ---------------------------------------------------------- */

static void on_config_written(uv_write_t *w, int status)
{
    (void)status;
    free(w);
}

/* The environment with REIGN_GUARDIAN=off, for a candidate without a guardian. */
static char **env_without_guardian(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 2, sizeof(*env));
    if (!env)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "REIGN_GUARDIAN=", 15))
            env[o++] = environ[i];
    env[o++] = (char *)"REIGN_GUARDIAN=off";
    env[o] = NULL;
    return env;
}

static pcand *spawn(chk *k, const char *uri, bool no_guardian, bool special)
{
    if (k->n_cands == k->cap_cands) {
        int cap = k->cap_cands ? 2 * k->cap_cands : 16;
        pcand **v = realloc(k->cands, (size_t)cap * sizeof(*v));
        const char **ids = realloc(k->ids, (size_t)cap * sizeof(*ids));
        if (v)
            k->cands = v;
        if (ids)
            k->ids = ids;
        if (!v || !ids) {
            add_error(k, "out of memory");
            return NULL;
        }
        k->cap_cands = cap;
    }
    pcand *p = calloc(1, sizeof(*p));
    if (!p) {
        add_error(k, "out of memory");
        return NULL;
    }
    uv_loop_t *loop = &k->c->loop;
    p->k = k;
    p->idx = k->n_cands;
    p->lead = -1;
    p->special = special;
    snprintf(p->id, sizeof(p->id), "c%d", p->idx + 1);
    uv_pipe_init(loop, &p->in, 0);
    uv_pipe_init(loop, &p->rep, 0);
    uv_pipe_init(loop, &p->err, 0);
    p->in.data = p->rep.data = p->err.data = p->proc.data = p;
    p->handles = 3;
    k->cands[k->n_cands] = p;
    k->ids[k->n_cands++] = p->id;

    uv_stdio_container_t io[4];
    io[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
    io[0].data.stream = (uv_stream_t *)&p->in;
    io[1].flags = UV_IGNORE;
    io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    io[2].data.stream = (uv_stream_t *)&p->err;
    io[3].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    io[3].data.stream = (uv_stream_t *)&p->rep;
    /* The faults are the check's own doing: the warnings they cause are not shown unless
     * asked for (errors always are). */
    reign_log_level level = k->c->log_level >= REIGN_LOG_INFO ? k->c->log_level : REIGN_LOG_ERROR;
    char *args[] = {k->exe,          (char *)"--log-level", (char *)reign_log_level_name(level),
                    (char *)"check", (char *)"--candidate", NULL};
    char **env = no_guardian ? env_without_guardian() : NULL;
    uv_process_options_t o;
    memset(&o, 0, sizeof(o));
    o.file = k->exe;
    o.args = args;
    o.env = env;
    o.exit_cb = on_exit_cb;
    o.stdio = io;
    o.stdio_count = 4;
    int r = uv_spawn(loop, &p->proc, &o);
    free(env);
    if (r < 0) {
        add_error(k, "cannot start candidate %s: %s", p->id, uv_strerror(r));
        p->exited = p->eof = true;
        close_h(p, (uv_handle_t *)&p->in);
        close_h(p, (uv_handle_t *)&p->rep);
        close_h(p, (uv_handle_t *)&p->err);
        k->broken = true;
        return NULL;
    }
    p->handles++;

    size_t ul = strlen(uri), nl = strlen(k->name);
    chk_config cfg = {.magic = CHK_CONFIG_MAGIC,
                      .index = (uint32_t)p->idx + 1,
                      .session_timeout_ms = k->c->session_timeout_ms,
                      .parent_pid = (int32_t)getpid(),
                      .uri_len = (uint32_t)ul,
                      .name_len = (uint32_t)nl};
    struct {
        uv_write_t w;
        char data[];
    } *w = malloc(sizeof(*w) + sizeof(cfg) + ul + nl);
    if (!w) {
        add_error(k, "out of memory");
        k->broken = true;
        return NULL;
    }
    memcpy(w->data, &cfg, sizeof(cfg));
    memcpy(w->data + sizeof(cfg), uri, ul);
    memcpy(w->data + sizeof(cfg) + ul, k->name, nl);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)(sizeof(cfg) + ul + nl));
    if (uv_write(&w->w, (uv_stream_t *)&p->in, &b, 1, on_config_written) < 0)
        free(w);
    uv_read_start((uv_stream_t *)&p->rep, on_alloc, on_rep);
    uv_read_start((uv_stream_t *)&p->err, on_alloc, on_err);
    cli_log(k->c, REIGN_LOG_INFO, "%s started, pid %d%s", p->id, p->proc.pid,
            no_guardian           ? ", without a guardian"
            : uri == k->proxy_uri ? ", through the proxy"
                                  : "");
    return p;
}

static bool live(const pcand *p)
{
    return !p->exited && !p->eof && !p->expected_exit;
}

static bool pred_ready(chk *k, const void *arg)
{
    (void)k;
    const pcand *p = arg;
    return p->ready;
}

static bool pred_gone(chk *k, const void *arg)
{
    (void)k;
    const pcand *p = arg;
    return p->exited && p->eof;
}

static bool pred_all_ready(chk *k, const void *arg)
{
    (void)arg;
    for (int i = 0; i < k->n_cands; i++)
        if (live(k->cands[i]) && !k->cands[i]->ready)
            return false;
    return true;
}

/* The leader: the live candidate whose leadership is open and began last. */
static pcand *leader(chk *k)
{
    pcand *best = NULL;
    for (int i = 0; i < k->n_cands; i++) {
        pcand *p = k->cands[i];
        if (live(p) && !p->stopped && p->lead >= 0 &&
            (!best || k->leads[p->lead].start > k->leads[best->lead].start))
            best = p;
    }
    return best;
}

static bool pred_leads(chk *k, const void *arg)
{
    (void)k;
    const pcand *p = arg;
    return p->lead >= 0;
}

static bool pred_not_leading(chk *k, const void *arg)
{
    (void)k;
    const pcand *p = arg;
    return p->lead < 0;
}

/* A new leadership: begun at or after `t0`, by someone other than `old`, among those from
 * `since` on. */
typedef struct new_leader {
    int since;
    int64_t t0;
    const pcand *old;
    int found;
} new_leader;

static bool pred_new_leader(chk *k, const void *arg)
{
    new_leader *w = (new_leader *)arg;
    for (int j = w->since; j < k->n_leads; j++)
        if (k->leads[j].cand != w->old->idx && k->leads[j].start >= w->t0) {
            w->found = j;
            return true;
        }
    return false;
}

/* Keeps n_cand candidates that are not special standing; 0, or -1 (the reason recorded). */
static int fill_pool(chk *k)
{
    int n = 0;
    for (int i = 0; i < k->n_cands; i++)
        n += live(k->cands[i]) && !k->cands[i]->special;
    for (; n < k->n_cand; n++)
        if (!spawn(k, k->c->uri, false, false))
            return -1;
    int r = wait_until(k, reign_now_ns() + k->bound, pred_all_ready, NULL);
    if (r == WAIT_TIMEOUT)
        add_error(k, "candidates did not stand within %lld ms", (long long)(k->bound / MS));
    return r == WAIT_OK ? 0 : -1;
}

/* A leader that has said at least once since its ELECTED that it leads: from then on its
 * leadership has a part that no later report can take back (check_online()). */
static bool pred_settled_leader(chk *k, const void *arg)
{
    (void)arg;
    pcand *p = leader(k);
    return p && k->leads[p->lead].leading_at > k->leads[p->lead].start;
}

static pcand *wait_leader(chk *k)
{
    if (wait_until(k, reign_now_ns() + k->bound, pred_settled_leader, NULL) == WAIT_OK)
        return leader(k);
    if (!aborting(k))
        add_error(k, "no leader within %lld ms", (long long)(k->bound / MS));
    return NULL;
}

static void on_op_done(reign_client *client, int err, void *userdata)
{
    chk *k = userdata;
    (void)client;
    k->op_done = 1;
    k->op_err = err;
}

static bool pred_op(chk *k, const void *arg)
{
    (void)arg;
    return k->op_done;
}

/* Designates `p` and waits until it leads; 0 or -1 (recorded). */
static int make_leader(chk *k, pcand *p)
{
    int64_t deadline = reign_now_ns() + k->bound;
    for (;;) {
        k->op_done = 0;
        int r = reign_election_designate(k->c->client, k->name, p->id, on_op_done, k);
        if (r == 0) {
            cli_update(k->c);
            r = wait_until(k, deadline, pred_op, NULL);
            if (r != WAIT_OK)
                break;
            r = k->op_err;
        }
        if (r == 0)
            break;
        /* REIGN_ENOENT: its standing is not visible yet */
        if (r != REIGN_ENOENT || reign_now_ns() > deadline) {
            add_error(k, "cannot designate %s: %s", p->id, reign_strerror(r));
            return -1;
        }
        if (wait_until(k, reign_now_ns() + 100 * MS, NULL, NULL) != WAIT_OK)
            return -1;
    }
    int r = wait_until(k, deadline, pred_leads, p);
    if (r == WAIT_TIMEOUT)
        add_error(k, "%s, designated, was not elected within %lld ms", p->id,
                  (long long)(k->bound / MS));
    return r == WAIT_OK ? 0 : -1;
}

/* ---- phases -------------------------------------------------------------- */

static void progress(chk *k, const chk_phase *ph, int round)
{
    if (!k->tty)
        return;
    if (ph)
        fprintf(stderr, "\r\033[K%s: round %d/%d", ph->name, round, ph->rounds);
    else
        fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

static void phase_fail(chk *k, chk_phase *ph, chk_result res, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void phase_fail(chk *k, chk_phase *ph, chk_result res, const char *fmt, ...)
{
    (void)k;
    if (ph->result == CHK_FAILED || ph->result == CHK_ERROR)
        return;
    ph->result = res;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ph->reason, sizeof(ph->reason), fmt, ap);
    va_end(ap);
}

/* Waits for a successor of `old` after t0 and records the takeover; 0 or -1. */
static int successor(chk *k, chk_phase *ph, const pcand *old, int since, int64_t t0)
{
    new_leader w = {.since = since, .t0 = t0, .old = old, .found = -1};
    int r = wait_until(k, t0 + k->bound, pred_new_leader, &w);
    if (r == WAIT_TIMEOUT)
        phase_fail(k, ph, CHK_FAILED, "round %d: no new leader within %lld ms of the %s",
                   ph->done + 1, (long long)(k->bound / MS), ph->what);
    if (r != WAIT_OK)
        return -1;
    ph->takeover_ns[ph->done] = k->leads[w.found].start - t0;
    return 0;
}

/* The candidate is to go: it exits and its reports end (bounded). */
static int reap(chk *k, chk_phase *ph, pcand *p)
{
    int r = wait_until(k, reign_now_ns() + k->bound, pred_gone, p);
    if (r == WAIT_TIMEOUT)
        phase_fail(k, ph, CHK_ERROR, "%s did not exit", p->id);
    return r == WAIT_OK ? 0 : -1;
}

/* A killed leader leads no later than the moment it is sent SIGKILL: the time is read before
 * the kill, since the guardian may end its leadership and a successor be elected before this
 * process runs again after kill(2). */
static void sigkill(chk *k, pcand *p)
{
    p->expected_exit = true;
    p->killed_at = reign_now_ns();
    kill(p->proc.pid, SIGKILL);
    if (p->lead >= 0)
        k->leads[p->lead].killed = p->killed_at;
}

/* handoff (SIGTERM: it resigns) and kill (SIGKILL, its guardian ends its leadership). */
static int round_signal(chk *k, chk_phase *ph, int sig)
{
    pcand *old;
    if (fill_pool(k) < 0 || !(old = wait_leader(k)))
        return -1;
    old->expected_exit = true;
    int since = k->n_leads;
    int64_t t0 = reign_now_ns();
    if (sig == SIGKILL)
        sigkill(k, old);
    else
        kill(old->proc.pid, sig);
    if (successor(k, ph, old, since, t0) < 0 || reap(k, ph, old) < 0)
        return -1;
    return 0;
}

/* SIGKILL of a leader without a guardian: its session or lease has to time out. */
static int round_kill_unguarded(chk *k, chk_phase *ph)
{
    if (fill_pool(k) < 0 || !wait_leader(k))
        return -1;
    pcand *s = spawn(k, k->c->uri, true, true);
    if (!s || wait_until(k, reign_now_ns() + k->bound, pred_ready, s) != WAIT_OK ||
        make_leader(k, s) < 0)
        return -1;
    int since = k->n_leads;
    int64_t t0 = reign_now_ns();
    sigkill(k, s);
    if (successor(k, ph, s, since, t0) < 0 || reap(k, ph, s) < 0)
        return -1;
    return 0;
}

/* Whether process pid holds a POSIX write lock on some file (/proc/locks; waiters left out). */
static bool holds_write_lock(pid_t pid)
{
    FILE *f = fopen("/proc/locks", "r");
    char line[256];
    bool held = false;
    while (f && !held && fgets(line, sizeof(line), f)) {
        char kind[16], mode[16];
        long owner;
        if (!strstr(line, "->") && sscanf(line, "%*s %15s %*s %15s %ld", kind, mode, &owner) == 3)
            held = !strcmp(kind, "POSIX") && !strcmp(mode, "WRITE") && owner == (long)pid;
    }
    if (f)
        fclose(f);
    return held;
}

/*
 * SIGSTOP to a leader, but on SQLite not while it holds the file's write lock: stopped inside a
 * statement, it would hold every other process off the file until continued (SQLite has one
 * writer; docs/sql-leases.md), and the phase would measure that rather than the lease.  Such a
 * stop is continued and tried again a moment later.  The time of the stop that stays.
 */
static int64_t stop_leader(chk *k, pcand *p)
{
    bool sqlite = !strcmp(k->r.backend, "sqlite");
    for (int tries = 0;; tries++) {
        int64_t t0 = reign_now_ns();
        kill(p->proc.pid, SIGSTOP);
        if (!sqlite || tries >= 100 || !holds_write_lock(p->proc.pid))
            return t0;
        kill(p->proc.pid, SIGCONT);
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* SIGSTOP until a successor is elected, then SIGCONT: the old leader must say DEMOTED. */
static int round_stop(chk *k, chk_phase *ph)
{
    pcand *old;
    if (fill_pool(k) < 0 || !(old = wait_leader(k)))
        return -1;
    int since = k->n_leads;
    old->stopped = true;
    int64_t t0 = stop_leader(k, old);
    int r = successor(k, ph, old, since, t0);
    kill(old->proc.pid, SIGCONT);
    old->stopped = false;
    if (r < 0)
        return -1;
    r = wait_until(k, reign_now_ns() + RESUMED_DEMOTE_WAIT, pred_not_leading, old);
    if (r == WAIT_TIMEOUT)
        phase_fail(k, ph, CHK_FAILED,
                   "round %d: %s, stopped while leading, did not report DEMOTED within %lld ms "
                   "of SIGCONT",
                   ph->done + 1, old->id, RESUMED_DEMOTE_WAIT / MS);
    return r == WAIT_OK ? 0 : -1;
}

/* The leader's connection cut by the proxy; it must demote itself. */
static int round_cut(chk *k, chk_phase *ph)
{
    if (fill_pool(k) < 0 || !wait_leader(k))
        return -1;
    pcand *p = spawn(k, k->proxy_uri, false, true);
    if (!p || wait_until(k, reign_now_ns() + k->bound, pred_ready, p) != WAIT_OK ||
        make_leader(k, p) < 0)
        return -1;
    int since = k->n_leads;
    int64_t t0 = reign_now_ns();
    chk_proxy_cut(k->proxy);
    int r = successor(k, ph, p, since, t0);
    if (r == 0) {
        r = wait_until(k, t0 + k->bound, pred_not_leading, p);
        if (r == WAIT_TIMEOUT)
            phase_fail(k, ph, CHK_FAILED, "round %d: %s, cut off while leading, never demoted",
                       ph->done + 1, p->id);
        r = r == WAIT_OK ? 0 : -1;
    }
    chk_proxy_heal(k->proxy);
    sigkill(k, p);
    if (r < 0 || reap(k, ph, p) < 0)
        return -1;
    return 0;
}

static void run_phase(chk *k, chk_phase_id id)
{
    chk_phase *ph = &k->r.phases[id];
    if (ph->result == CHK_SKIPPED)
        return;
    for (int i = 0; i < ph->rounds && !aborting(k); i++) {
        progress(k, ph, i + 1);
        int r;
        switch (id) {
        case CHK_HANDOFF:
            r = round_signal(k, ph, SIGTERM);
            break;
        case CHK_KILL:
            r = round_signal(k, ph, SIGKILL);
            break;
        case CHK_KILL_NO_GUARDIAN:
            r = round_kill_unguarded(k, ph);
            break;
        case CHK_STOP:
            r = round_stop(k, ph);
            break;
        default:
            r = round_cut(k, ph);
            break;
        }
        if (r < 0)
            break;
        ph->done++;
    }
    if (ph->done < ph->rounds) {
        /* it stopped: say why, unless the round said it */
        int round = ph->done + 1;
        if (k->violated)
            phase_fail(k, ph, CHK_FAILED, "round %d: two leaders at once (below)", round);
        else if (k->interrupted)
            phase_fail(k, ph, CHK_ERROR, "round %d: interrupted", round);
        else
            phase_fail(k, ph, CHK_ERROR, "round %d: %s", round,
                       k->r.n_errors ? k->r.errors[k->r.n_errors - 1] : "failed");
    }
    progress(k, NULL, 0);
    if (ph->result == CHK_NOT_RUN && ph->done == ph->rounds)
        ph->result = CHK_OK;
    if (ph->result == CHK_FAILED || ph->result == CHK_ERROR)
        k->broken = true;
    if (!k->json && ph->result != CHK_NOT_RUN) {
        if (ph->done) {
            int64_t t[CHK_MAX_ROUNDS]; /* sorted apart: the JSON keeps the order of the rounds */
            memcpy(t, ph->takeover_ns, sizeof(t));
            int64_t p50 = chk_percentile(t, ph->done, 50);
            int64_t p99 = chk_percentile(t, ph->done, 99);
            cli_print("%-16s %d/%d rounds, takeover p50 %.1f ms, p99 %.1f ms%s%s", ph->name,
                      ph->done, ph->rounds, (double)p50 / MS, (double)p99 / MS,
                      ph->result == CHK_OK ? "" : ": ", ph->result == CHK_OK ? "" : ph->reason);
        } else {
            cli_print("%-16s %s", ph->name, ph->reason);
        }
    }
}

/* ---- the store's round trip ------------------------------------------------- */

static void on_query(reign_client *client, int err, const reign_election_view *view, void *ud)
{
    chk *k = ud;
    (void)client;
    (void)view;
    k->op_done = 1;
    k->op_err = err;
}

static int measure_rtt(chk *k)
{
    for (int i = 0; i < RTT_SAMPLES; i++) {
        k->op_done = 0;
        int64_t t0 = reign_now_ns();
        int r = reign_election_query(k->c->client, k->name, on_query, k);
        if (r == 0) {
            cli_update(k->c);
            r = wait_until(k, t0 + k->bound, pred_op, NULL);
            if (r != WAIT_OK) {
                if (r == WAIT_TIMEOUT)
                    add_error(k, "the store did not answer a read within %lld ms",
                              (long long)(k->bound / MS));
                return -1;
            }
            r = k->op_err == REIGN_ENOENT ? 0 : k->op_err;
        }
        if (r < 0) {
            add_error(k, "cannot read the store: %s", reign_strerror(r));
            return -1;
        }
        k->r.rtt_ns[k->r.n_rtt++] = reign_now_ns() - t0;
    }
    return 0;
}

/* ---- the end ------------------------------------------------------------- */

static bool pred_all_gone(chk *k, const void *arg)
{
    (void)arg;
    for (int i = 0; i < k->n_cands; i++)
        if (!pred_gone(k, k->cands[i]))
            return false;
    return true;
}

static void on_removed(reign_client *client, int err, const char *const *standing, size_t n,
                       void *userdata)
{
    chk *k = userdata;
    (void)client;
    (void)standing;
    (void)n;
    k->op_done = 1;
    k->op_err = err;
}

/* Every candidate resigns and exits (SIGTERM; SIGKILL if it does not), is reaped, and the
 * scratch election goes. */
static void clean_up(chk *k)
{
    k->cleaning = true;
    if (k->proxy)
        chk_proxy_heal(k->proxy);
    for (int i = 0; i < k->n_cands; i++) {
        pcand *p = k->cands[i];
        if (p->exited)
            continue;
        p->expected_exit = true;
        if (p->stopped) {
            kill(p->proc.pid, SIGCONT);
            p->stopped = false;
        }
        kill(p->proc.pid, SIGTERM);
    }
    int64_t wait = (CLI_LEAVE_WAIT_MS + 3000) * MS;
    if (wait_until(k, reign_now_ns() + wait, pred_all_gone, NULL) != WAIT_OK) {
        for (int i = 0; i < k->n_cands; i++)
            if (!k->cands[i]->exited)
                sigkill(k, k->cands[i]);
        wait_until(k, reign_now_ns() + 5 * SEC, pred_all_gone, NULL);
    }
    for (int i = 0; i < k->n_cands; i++) {
        close_h(k->cands[i], (uv_handle_t *)&k->cands[i]->in);
        close_h(k->cands[i], (uv_handle_t *)&k->cands[i]->rep);
        close_h(k->cands[i], (uv_handle_t *)&k->cands[i]->err);
    }

    /* The election: nobody stands in it any more (a session of a killed candidate may still
     * be timing out: try again for a while). */
    int64_t deadline = reign_now_ns() + 2 * SEC;
    int err = 0;
    while (k->c->client && !k->c->done && k->interrupted < 2) {
        k->op_done = 0;
        err = reign_store_remove(k->c->client, REIGN_ENTRY_ELECTION, k->name, on_removed, k);
        if (err == 0) {
            cli_update(k->c);
            if (wait_until(k, reign_now_ns() + k->bound, pred_op, NULL) != WAIT_OK) {
                err = REIGN_ETIMEDOUT;
                break;
            }
            err = k->op_err;
        }
        if (err != REIGN_EBUSY || reign_now_ns() > deadline)
            break;
        wait_until(k, reign_now_ns() + 250 * MS, NULL, NULL);
    }
    if (err && err != REIGN_ENOENT)
        snprintf(k->r.cleanup_note, sizeof(k->r.cleanup_note),
                 "the scratch election '%s' could not be removed (%s): `reign rm %s` removes "
                 "it once its candidates' sessions have ended",
                 k->name,
                 err == REIGN_EBUSY ? "something still stands in it or was written to it"
                                    : reign_strerror(err),
                 k->name);
}

static bool pred_closed(chk *k, const void *arg)
{
    (void)arg;
    for (int i = 0; i < k->n_cands; i++)
        if (k->cands[i]->handles)
            return false;
    return true;
}

static void free_all(chk *k)
{
    chk_proxy_stop(k->proxy);
    k->proxy = NULL;
    k->interrupted = 0;
    if (k->wake_ready) {
        k->cleaning = true;
        wait_until(k, reign_now_ns() + 5 * SEC, pred_closed, NULL);
        uv_close((uv_handle_t *)&k->wake, NULL);
        uv_run(&k->c->loop, UV_RUN_NOWAIT);
    }
    for (int i = 0; i < k->n_cands; i++)
        if (!k->cands[i]->handles)
            free(k->cands[i]);
    free(k->cands);
    free(k->ids);
    free(k->leads);
}

/* ---- the command ------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: reign [GLOBAL OPTIONS] check [URI] [OPTIONS]\n"
            "\n"
            "Prove election safety and measure takeover time on a store (URI, else --uri or\n"
            "$REIGN_URI), with its own timeouts.  Candidates, each a process of its own, stand\n"
            "in a scratch election, and the leader is made to go in every way: SIGTERM\n"
            "(handoff), SIGKILL with and without the guardian, SIGSTOP until a successor is\n"
            "elected, and its connection cut (TCP stores).  Checks, from the candidates' own\n"
            "clocks, that no two leaderships overlap, that terms and fencing tokens grow,\n"
            "and that every round made a new leader; prints takeover times, the store's round\n"
            "trip and advice on the timeout, then PASS or FAIL.  Exit status 0 if every\n"
            "check passed, 1 if one failed or the store failed, 2 for a usage error.\n"
            "\n"
            "Options:\n"
            "  -n, --candidates N      candidates standing at once, 2 to %d (default %d)\n"
            "  -r, --rounds N          rounds of every phase, 1 to %d (default %d of the\n"
            "                          fast phases, %d of those that wait a timeout)\n"
            "      --json              print one JSON object instead of the table\n"
            "  -h, --help              show this help\n",
            MAX_CANDIDATES, DEFAULT_CANDIDATES, CHK_MAX_ROUNDS, FAST_ROUNDS, SLOW_ROUNDS);
}

/* A name of the allowed characters: reign-check-HOST-PID-RANDOM. */
static void scratch_name(chk *k)
{
    char host[64] = "host";
    unsigned int rnd = 0;
    gethostname(host, sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    for (char *s = host; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '_' || *s == '-'))
            *s = '-';
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&rnd, sizeof(rnd), 1, f) != 1)
        rnd = (unsigned int)reign_now_ns();
    if (f)
        fclose(f);
    snprintf(k->name, sizeof(k->name), "reign-check-%s-%ld-%08x", host, (long)getpid(), rnd);
}

static const struct {
    const char *name, *what;
    bool slow;
} phase_defs[CHK_N_PHASES] = {
    {"handoff", "SIGTERM", false},
    {"kill", "SIGKILL", false},
    {"kill-no-guardian", "SIGKILL", true},
    {"stop", "SIGSTOP", true},
    {"cut", "cut", true},
};

static bool guardian_off(const char *uri)
{
    const char *env = getenv("REIGN_GUARDIAN");
    const char *q = strchr(uri, '?');
    if (env && !strcmp(env, "off"))
        return true;
    return q && (strstr(q, "?guardian=off") || strstr(q, "&guardian=off"));
}

static int check_options(cli *c, chk *k, int argc, char **argv, bool *candidate)
{
    enum { OPT_JSON = 256, OPT_CANDIDATE };
    static const struct option opts[] = {
        {"candidates", required_argument, NULL, 'n'},
        {"rounds", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {"candidate", no_argument, NULL, OPT_CANDIDATE}, /* hidden: check_candidate.c */
        {NULL, 0, NULL, 0},
    };
    int o;
    long v;
    while ((o = getopt_long(argc, argv, ":n:r:h", opts, NULL)) != -1) {
        switch (o) {
        case 'n':
            if (cli_parse_int(c, "--candidates", optarg, 2, MAX_CANDIDATES, &v))
                return CLI_EXIT_USAGE;
            k->n_cand = (int)v;
            break;
        case 'r':
            if (cli_parse_int(c, "--rounds", optarg, 1, CHK_MAX_ROUNDS, &v))
                return CLI_EXIT_USAGE;
            k->rounds = (int)v;
            break;
        case OPT_JSON:
            k->json = true;
            break;
        case OPT_CANDIDATE:
            *candidate = true;
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    if (*candidate)
        return 0;
    if (argc - optind > 1)
        return cli_usage_error(c, "check takes at most one URI");
    if (argc - optind == 1) {
        if (c->uri)
            return cli_usage_error(c, "give the URI once: as an argument or with --uri");
        c->uri = argv[optind];
    }
    return 0;
}

static int run_check(chk *k)
{
    cli *c = k->c;
    chk_report *r = &k->r;
    int rc;
    if ((rc = cli_client_new(c)) || (rc = cli_connect(c)))
        return rc;
    c->cmd_data = k;
    c->on_signal = on_signal;
    uv_timer_init(&c->loop, &k->wake);
    k->wake_ready = true;
    size_t exelen = sizeof(k->exe);
    if (uv_exepath(k->exe, &exelen) < 0) {
        cli_error(c, "cannot find the reign binary to run the candidates");
        return CLI_EXIT_FAIL;
    }
    scratch_name(k);
    reign_uri_redact(c->uri, r->uri, sizeof(r->uri));
    r->backend = reign_client_backend(c->client);
    snprintf(r->election, sizeof(r->election), "%s", k->name);
    r->candidates = k->n_cand;
    r->timeout_ms = reign_client_session_timeout_ms(c->client);
    r->takeover_bound = reign_client_takeover_ms(c->client);
    k->bound = (2 * r->takeover_bound + 10000) * MS;
    k->tty = !k->json && isatty(STDERR_FILENO);

    char why[240];
    for (int i = 0; i < CHK_N_PHASES; i++) {
        chk_phase *ph = &r->phases[i];
        ph->name = phase_defs[i].name;
        ph->what = phase_defs[i].what;
        ph->rounds = k->rounds ? k->rounds : phase_defs[i].slow ? SLOW_ROUNDS : FAST_ROUNDS;
    }
    if (guardian_off(c->uri)) {
        r->phases[CHK_KILL].result = CHK_SKIPPED;
        snprintf(r->phases[CHK_KILL].reason, sizeof(r->phases[0].reason),
                 "skipped: the guardian is off (guardian=off or REIGN_GUARDIAN=off)");
    }
    if (chk_proxy_start(&k->proxy, &c->loop, c->uri, k->proxy_uri, sizeof(k->proxy_uri), why,
                        sizeof(why)) < 0) {
        r->phases[CHK_CUT].result = CHK_SKIPPED;
        snprintf(r->phases[CHK_CUT].reason, sizeof(r->phases[0].reason), "skipped: %s", why);
    }
    if (!k->json)
        cli_print("checking %s (%s, %s %d ms) with %d candidates in election %s", r->uri,
                  r->backend,
                  r->backend[0] == 'z' || r->backend[0] == 'e' ? "session timeout" : "lease",
                  r->timeout_ms, k->n_cand, k->name);

    if (measure_rtt(k) == 0 && fill_pool(k) == 0 && wait_leader(k))
        for (int i = 0; i < CHK_N_PHASES && !aborting(k); i++)
            run_phase(k, (chk_phase_id)i);
    bool setup_failed = !k->violated && !k->interrupted && r->n_errors && !r->phases[0].done;
    r->interrupted = k->interrupted > 0;
    clean_up(k);
    r->cand_ids = k->ids;
    chk_verify(r, k->leads, k->n_leads);
    r->leads = k->leads;
    r->n_leads = k->n_leads;
    if (setup_failed && !r->n_violations) {
        /* Nothing was checked: the store (or this host) is the trouble. */
        for (int i = 0; i < r->n_errors; i++)
            cli_error(c, "%s", r->errors[i]);
        if (r->cleanup_note[0])
            cli_error(c, "%s", r->cleanup_note);
        return CLI_EXIT_FAIL;
    }
    return chk_print(c, r, k->json);
}

int cli_check_main(cli *c, int argc, char **argv)
{
    static chk k;
    bool candidate = false;
    memset(&k, 0, sizeof(k));
    k.c = c;
    k.n_cand = DEFAULT_CANDIDATES;
    int r = check_options(c, &k, argc, argv, &candidate);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if (candidate)
        return chk_candidate_main(c);
    r = run_check(&k);
    free_all(&k);
    return r;
}
