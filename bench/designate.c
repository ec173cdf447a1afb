/*
 * designate.c - designation latency: how long from reign_election_designate() until
 * the named candidate's ELECTED callback.
 *
 *   designate-latency --uri zk://127.0.0.1:2181 [--candidates 3] [--rounds 300] [--warmup 10]
 *                     [--gap-ms 20] [--name NAME] [--seed S] [--pause] [--trace]
 *
 * One process holds N candidate clients (each its own client, so its own ZooKeeper session, as
 * separate candidate processes would have) standing in one election, and an operator client.
 * Each round picks a candidate that does not lead (at random, seeded), takes t0, calls
 * reign_election_designate() on the operator client, and turns every client's loop (one poll
 * over all their descriptors) until the target's ELECTED.  Recorded per round, from t0:
 *
 *   request   the done callback (the designation is written to the target's node)
 *   demoted   the old leader's DEMOTED at_ns (it must say handoff)
 *   elected   the target's ELECTED at_ns
 *
 * All three are CLOCK_MONOTONIC in this process, so no pipe or scheduling delay of a harness is
 * in them.  Between rounds the loops turn for --gap-ms, so the old leader has settled back in
 * line before the next request.  The first --warmup rounds are reported but flagged.
 *
 * With --trace, the library's messages (info and up) go to stderr, each as
 * "trace ROUND MS CLIENT MESSAGE" (the round's number and the ms since its t0, or "- -" between
 * rounds; the client is c0, c1, ... or op): where the time of a designation goes.
 *
 * Stdout is one JSON object: the settings, every round, and nearest-rank percentiles of the
 * measured (not warm-up) rounds.  With --pause (for bench/designate.py, which counts the
 * server's requests around the rounds) it first prints "ready leader=ID" once every candidate
 * stands, waits for SIGUSR1 before the first round, prints the JSON on one line prefixed by
 * "result ", and waits for SIGTERM before resigning.  Otherwise SIGTERM or SIGINT interrupts.
 *
 * Exit 0; 1 on an error (a failed join or designation, an ERROR event, a round that did not
 * finish within 10 s, a demotion for another reason than handoff, a target elected before the
 * old leader stepped down, or an interruption); 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <reign/reign.h>

#define MAX_CANDIDATES 64
#define ROUND_LIMIT_NS (10 * 1000000000LL)

typedef struct sample {
    int target, from; /* candidate indexes */
    uint64_t term;
    int64_t request_ns, demoted_ns, elected_ns; /* after t0; -1 if not seen */
} sample;

typedef struct cand {
    struct bench *b;
    int index;
    char id[16];
    reign_client *client;
    reign_election *election;
    int ready;
    int leads;
} cand;

typedef struct bench {
    const char *uri, *name;
    int n, rounds, warmup, gap_ms, pause, trace, seed;
    uint64_t rng;
    cand c[MAX_CANDIDATES];
    reign_client *op;
    int failed;
    int stopping;      /* --pause: SIGTERM is the cue to resign, not an interruption */
    sigset_t waitmask; /* the signal mask inside ppoll */
    /* the round in progress */
    int64_t t0;
    int target, from, request_done;
    sample *cur;
    sample *samples;
    int n_samples;
} bench;

static volatile sig_atomic_t got_go, got_stop;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        got_go = 1;
    else
        got_stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void fail(bench *b, const char *what, const char *detail)
{
    fprintf(stderr, "designate-latency: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    b->failed = 1;
}

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cand *c = userdata;
    bench *b = c->b;
    (void)e;
    switch (ev->type) {
    case REIGN_ELECTION_READY:
        c->ready = 1;
        break;
    case REIGN_ELECTION_ELECTED:
        c->leads = 1;
        if (b->cur && c->index == b->target) {
            b->cur->elected_ns = ev->at_ns - b->t0;
            b->cur->term = ev->term;
        } else if (b->cur) {
            fail(b, "elected instead of the target", c->id);
        }
        break;
    case REIGN_ELECTION_DEMOTED:
        c->leads = 0;
        if (b->cur && c->index == b->from) {
            b->cur->demoted_ns = ev->at_ns - b->t0;
            if (ev->reason != REIGN_DEMOTE_HANDOFF)
                fail(b, "the old leader was demoted for another reason than handoff",
                     reign_demote_reason_name(ev->reason));
        }
        break;
    case REIGN_ELECTION_ERROR:
        fail(b, c->id, ev->message ? ev->message : reign_strerror(ev->error));
        break;
    default:
        break;
    }
}

/* --trace: the client's log lines, stamped with the time since t0 and the client's name. */
static void on_log(reign_log_level level, const char *msg, void *userdata)
{
    const cand *c = userdata;
    const bench *b = c->b;
    if (b->cur)
        fprintf(stderr, "trace %d %.3f %s %s\n", b->n_samples, (double)(now_ns() - b->t0) / 1e6,
                c->index < 0 ? "op" : c->id, msg);
    else
        fprintf(stderr, "trace - - %s %s\n", c->index < 0 ? "op" : c->id, msg);
    (void)level;
}

static void on_designated(reign_client *client, int err, void *userdata)
{
    bench *b = userdata;
    (void)client;
    if (!b->cur)
        return;
    b->request_done = 1;
    b->cur->request_ns = now_ns() - b->t0;
    if (err < 0)
        fail(b, "designation failed", reign_strerror(err));
}

/* One turn of every client's loop: a poll over all their descriptors, then process() on each.
 * SIGUSR1 and SIGTERM/SIGINT are blocked except inside the poll, so they are never missed. */
static int turn(bench *b, int64_t max_ms)
{
    struct pollfd pfd[MAX_CANDIDATES + 1];
    int64_t ms = max_ms;
    for (int i = 0; i <= b->n; i++) {
        reign_client *cl = i < b->n ? b->c[i].client : b->op;
        int64_t t = reign_client_get_timeout_ms(cl);
        if (t >= 0 && (ms < 0 || t < ms))
            ms = t;
        pfd[i] = (struct pollfd){.fd = reign_client_get_fd(cl), .events = POLLIN};
    }
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    if (ppoll(pfd, (nfds_t)b->n + 1, ms < 0 ? NULL : &ts, &b->waitmask) < 0 && errno != EINTR) {
        perror("designate-latency: ppoll");
        return -1;
    }
    if (got_stop && !b->stopping) {
        fail(b, "interrupted", NULL);
        return -1;
    }
    for (int i = 0; i < b->n; i++)
        if (reign_client_process(b->c[i].client) < 0)
            return -1;
    return reign_client_process(b->op) < 0 ? -1 : 0;
}

/* Turns the loops for ms milliseconds. */
static int idle(bench *b, int ms)
{
    int64_t end = now_ns() + (int64_t)ms * 1000000;
    for (int64_t left; !b->failed && (left = end - now_ns()) > 0;)
        if (turn(b, left / 1000000 + 1) < 0)
            return -1;
    return b->failed ? -1 : 0;
}

/* Turns the loops until *flag is set by a signal. */
static int wait_signal(bench *b, volatile sig_atomic_t *flag)
{
    while (!*flag)
        if (b->failed || turn(b, -1) < 0)
            return -1;
    return 0;
}

static int leader_index(const bench *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->c[i].leads)
            return i;
    return -1;
}

static int start_clients(bench *b)
{
    static cand op_label = {.index = -1};
    char err[512];
    op_label.b = b;
    for (int i = 0; i <= b->n; i++) {
        reign_client **cl = i < b->n ? &b->c[i].client : &b->op;
        reign_client_options o = {.size = sizeof(o)};
        if (b->trace) {
            o.log_fn = on_log;
            o.log_level = REIGN_LOG_INFO;
            o.userdata = i < b->n ? (void *)&b->c[i] : (void *)&op_label;
        }
        int r = reign_client_new(cl, b->uri, &o, err, sizeof(err));
        if (r == 0)
            r = reign_client_wait_connected(*cl);
        if (r < 0) {
            fprintf(stderr, "designate-latency: connect: %s%s%s\n", reign_strerror(r),
                    *err ? ": " : "", err);
            return -1;
        }
        *err = '\0';
    }
    return 0;
}

/* Every candidate joins, in index order; returns once all stand and one leads. */
static int stand_all(bench *b)
{
    for (int i = 0; i < b->n; i++) {
        cand *c = &b->c[i];
        /* Listed: on a SQL store only listed candidates can be designated (on ZooKeeper every
         * candidate can, and listing changes nothing). */
        reign_election_options o = {
            .size = sizeof(o), .id = c->id, .cb = on_election, .userdata = c, .listed = 1};
        int r = reign_election_join(&c->election, c->client, b->name, &o);
        if (r < 0) {
            fprintf(stderr, "designate-latency: cannot join '%s': %s\n", b->name,
                    reign_strerror(r));
            return -1;
        }
    }
    int64_t end = now_ns() + ROUND_LIMIT_NS;
    for (;;) {
        int ready = 0;
        for (int i = 0; i < b->n; i++)
            ready += b->c[i].ready;
        if (ready == b->n && leader_index(b) >= 0)
            return 0;
        if (b->failed || now_ns() > end || turn(b, 100) < 0) {
            fprintf(stderr, "designate-latency: the candidates did not all stand in time\n");
            return -1;
        }
    }
}

/* One designation: a non-leader target, the request, and the loops until it is elected. */
static int one_round(bench *b, int round)
{
    int from = leader_index(b);
    if (from < 0) {
        fprintf(stderr, "designate-latency: no leader before round %d\n", round);
        return -1;
    }
    sample *s = &b->samples[b->n_samples];
    *s = (sample){.from = from, .request_ns = -1, .demoted_ns = -1, .elected_ns = -1};
    /* Any other candidate, at random (xorshift, seeded: runs repeat), so that targets come
     * from every place in the line. */
    b->rng ^= b->rng << 13;
    b->rng ^= b->rng >> 7;
    b->rng ^= b->rng << 17;
    s->target = (from + 1 + (int)(b->rng % (uint64_t)(b->n - 1))) % b->n;
    b->from = from;
    b->target = s->target;
    b->request_done = 0;
    b->cur = s;
    b->t0 = now_ns();
    int r = reign_election_designate(b->op, b->name, b->c[s->target].id, on_designated, b);
    if (r < 0) {
        fprintf(stderr, "designate-latency: reign_election_designate: %s\n", reign_strerror(r));
        return -1;
    }
    while (!b->failed && (s->elected_ns < 0 || s->demoted_ns < 0 || !b->request_done)) {
        if (now_ns() - b->t0 > ROUND_LIMIT_NS) {
            fprintf(stderr, "designate-latency: round %d: %s not elected within 10 s\n", round,
                    b->c[s->target].id);
            return -1;
        }
        if (turn(b, 1000) < 0)
            return -1;
    }
    b->cur = NULL;
    if (!b->failed && s->elected_ns < s->demoted_ns) {
        fprintf(stderr, "designate-latency: round %d: %s elected before %s stepped down\n", round,
                b->c[s->target].id, b->c[from].id);
        return -1;
    }
    b->n_samples++;
    return b->failed ? -1 : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile p (0 < p <= 100) of the measured rounds' field, in ms. */
static double pct(const bench *b, size_t off, double p, int64_t *tmp)
{
    int n = 0;
    for (int i = b->warmup; i < b->n_samples; i++) {
        int64_t v;
        memcpy(&v, (const char *)&b->samples[i] + off, sizeof(v));
        tmp[n++] = v;
    }
    if (n == 0)
        return -1;
    qsort(tmp, (size_t)n, sizeof(*tmp), cmp_i64);
    int k = (int)(p / 100.0 * n + 0.999999);
    return (double)tmp[(k < 1 ? 1 : k) - 1] / 1e6;
}

static void print_stats(const bench *b, const char *key, size_t off, int64_t *tmp)
{
    printf("\"%s\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}", key,
           pct(b, off, 50, tmp), pct(b, off, 90, tmp), pct(b, off, 99, tmp), pct(b, off, 100, tmp));
}

static void report(const bench *b)
{
    int64_t *tmp = calloc((size_t)b->n_samples + 1, sizeof(*tmp));
    if (!tmp)
        return;
    printf("%s{\"candidates\": %d, \"rounds\": %d, \"warmup\": %d, \"gap_ms\": %d, "
           "\"seed\": %d, \"name\": \"%s\", \"summary\": {",
           b->pause ? "result " : "", b->n, b->rounds, b->warmup, b->gap_ms, b->seed, b->name);
    print_stats(b, "request_ms", offsetof(sample, request_ns), tmp);
    printf(", ");
    print_stats(b, "demoted_ms", offsetof(sample, demoted_ns), tmp);
    printf(", ");
    print_stats(b, "elected_ms", offsetof(sample, elected_ns), tmp);
    printf("}, \"samples\": [");
    for (int i = 0; i < b->n_samples; i++) {
        const sample *s = &b->samples[i];
        printf("%s{\"round\": %d, \"warmup\": %s, \"from\": \"%s\", \"target\": \"%s\", "
               "\"term\": %llu, \"request_ms\": %.3f, \"demoted_ms\": %.3f, "
               "\"elected_ms\": %.3f}",
               i ? ", " : "", i, i < b->warmup ? "true" : "false", b->c[s->from].id,
               b->c[s->target].id, (unsigned long long)s->term, (double)s->request_ns / 1e6,
               (double)s->demoted_ns / 1e6, (double)s->elected_ns / 1e6);
    }
    printf("]}\n");
    fflush(stdout);
    free(tmp);
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: designate-latency --uri URI [--candidates N] [--rounds R] [--warmup W]\n"
               "                         [--gap-ms MS] [--name NAME] [--pause] [--seed S]\n"
               "                         [--trace]\n"
               "N candidates (default 3), each on its own client, stand in election NAME; an\n"
               "operator client designates a non-leader W+R times (defaults 10 and 300) and\n"
               "the time from the call until the target's ELECTED is reported as JSON.\n");
}

static int parse_num(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse(bench *b, int argc, char **argv)
{
    static const struct option opts[] = {
        {"uri", required_argument, NULL, 'u'},
        {"candidates", required_argument, NULL, 'n'},
        {"rounds", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'},
        {"gap-ms", required_argument, NULL, 'g'},
        {"name", required_argument, NULL, 'N'},
        {"pause", no_argument, NULL, 'p'},
        {"seed", required_argument, NULL, 's'},
        {"trace", no_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static char name[64];
    snprintf(name, sizeof(name), "bench.designate.%ld", (long)getpid());
    b->name = name;
    b->n = 3;
    b->rounds = 300;
    b->warmup = 10;
    b->gap_ms = 20;
    b->seed = 1;
    int o, bad = 0;
    while ((o = getopt_long(argc, argv, "u:n:r:w:g:N:ps:th", opts, NULL)) != -1) {
        switch (o) {
        case 'u':
            b->uri = optarg;
            break;
        case 'n':
            bad |= parse_num(optarg, 2, MAX_CANDIDATES, &b->n);
            break;
        case 'r':
            bad |= parse_num(optarg, 1, 1000000, &b->rounds);
            break;
        case 'w':
            bad |= parse_num(optarg, 0, 1000000, &b->warmup);
            break;
        case 'g':
            bad |= parse_num(optarg, 0, 60000, &b->gap_ms);
            break;
        case 'N':
            b->name = optarg;
            break;
        case 'p':
            b->pause = 1;
            break;
        case 's':
            bad |= parse_num(optarg, 1, 1000000000, &b->seed);
            break;
        case 't':
            b->trace = 1;
            break;
        case 'h':
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            return -1;
        }
    }
    b->rng = (uint64_t)b->seed * 0x9E3779B97F4A7C15ULL;
    return bad || optind != argc || !b->uri ? -1 : 0;
}

static int run(bench *b)
{
    if (start_clients(b) < 0 || stand_all(b) < 0)
        return -1;
    if (b->pause) {
        printf("ready leader=%s\n", b->c[leader_index(b)].id);
        fflush(stdout);
        if (wait_signal(b, &got_go) < 0)
            return -1;
    }
    for (int i = 0; i < b->warmup + b->rounds; i++)
        if (one_round(b, i) < 0 || idle(b, b->gap_ms) < 0)
            return -1;
    report(b);
    b->stopping = 1;
    return b->pause ? wait_signal(b, &got_stop) : 0;
}

/* SIGUSR1 (go) and SIGTERM/SIGINT (stop) are blocked but inside ppoll. */
static void catch_signals(bench *b)
{
    sigset_t block;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &b->waitmask);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

int main(int argc, char **argv)
{
    static bench bench_;
    bench *b = &bench_;
    if (parse(b, argc, argv) < 0) {
        usage(stderr);
        return 2;
    }
    for (int i = 0; i < b->n; i++) {
        b->c[i] = (cand){.b = b, .index = i};
        snprintf(b->c[i].id, sizeof(b->c[i].id), "c%d", i);
    }
    b->samples = calloc((size_t)(b->warmup + b->rounds), sizeof(*b->samples));
    if (!b->samples)
        return EXIT_FAILURE;
    catch_signals(b);
    int code = run(b) < 0 || b->failed ? EXIT_FAILURE : EXIT_SUCCESS;
    for (int i = 0; i < b->n; i++) {
        reign_election_free(b->c[i].election);
        reign_client_free(b->c[i].client);
    }
    reign_client_free(b->op);
    free(b->samples);
    return code;
}
