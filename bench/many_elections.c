/*
 * many_elections.c - joins N elections on one client (one ZooKeeper session) and times how long
 * it takes until every one of them is decided.
 *
 *   many-elections --uri zk://127.0.0.1:2181 --count 10000 [--prefix P] [--id ID] [--follow]
 *
 * Without --follow each election is joined as its sole candidate, and "decided" means ELECTED;
 * with --follow another process already leads every election, and "decided" means READY (the
 * first view loaded, standing in line).  The client connects first (not timed), then the clock
 * starts before the first reign_election_join() and stops in the loop turn in which the last
 * election was decided.
 *
 * Stdout gets two lines, then the program holds its elections until SIGTERM or SIGINT (so that
 * a second process can follow them, and the harness can count the server's requests after the
 * joins and before anything resigns):
 *
 *   connected monotonic_ns=T
 *   decided {"count": N, "join_ms": ..., "total_ms": ..., ...}   (JSON after the word)
 *
 * The JSON holds what bench/many_elections.py reports: the time spent inside the join calls and
 * inside reign_client_process(), how many loop turns it took and the longest, when the first,
 * the 10th, 50th and 90th percentile elections were decided, and the process's resident memory
 * (VmRSS and VmHWM, the peak) before the joins and once all were decided.
 *
 * Exit 0 after a clean resign, 1 on an error (an election's ERROR event, a failed join).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <reign/reign.h>

typedef struct bench {
    const char *uri, *prefix, *id;
    long n;
    int follow;
    reign_election **elections;
    long decided;
    int64_t *decided_ns; /* when each of the first n decisions happened, in order */
    int failed;
    /* the loop, measured */
    long turns;
    int64_t process_ns, max_turn_ns;
} bench;

static volatile sig_atomic_t got_stop;

static void on_signal(int sig)
{
    (void)sig;
    got_stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One field of /proc/self/status, in kB; -1 if missing. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, field, len) == 0 && line[len] == ':') {
            kb = strtol(line + len + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

/* CPU time of the whole process (every thread, the C client's included), in ns. */
static int64_t cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) < 0)
        return 0;
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    bench *b = userdata;
    (void)e;
    /* A candidate that leads at once gets READY then ELECTED; a follower READY only. */
    int decides = b->follow ? ev->type == REIGN_ELECTION_READY : ev->type == REIGN_ELECTION_ELECTED;
    if (decides && b->decided < b->n)
        b->decided_ns[b->decided++] = now_ns();
    if (ev->type == REIGN_ELECTION_ERROR) {
        fprintf(stderr, "many-elections: %s\n",
                ev->message ? ev->message : reign_strerror(ev->error));
        b->failed = 1;
    }
}

/* One loop turn: wait for the client's descriptor or deadline, then process, timed. */
static int turn(reign_client *client, bench *b, const sigset_t *waitmask)
{
    struct pollfd pfd = {.fd = reign_client_get_fd(client), .events = POLLIN};
    int64_t ms = reign_client_get_timeout_ms(client);
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    if (ppoll(&pfd, 1, ms < 0 ? NULL : &ts, waitmask) < 0 && errno != EINTR) {
        perror("many-elections: ppoll");
        return -1;
    }
    int64_t t0 = now_ns();
    int r = reign_client_process(client);
    int64_t dt = now_ns() - t0;
    b->turns++;
    b->process_ns += dt;
    if (dt > b->max_turn_ns)
        b->max_turn_ns = dt;
    return r;
}

static double ms_since(int64_t t0, int64_t t)
{
    return (double)(t - t0) / 1e6;
}

/* When the election at fraction q of all (0 < q <= 1) was decided, in ms after t0. */
static double decided_at(const bench *b, int64_t t0, double q)
{
    long k = (long)(q * (double)b->n + 0.999999);
    if (k < 1)
        k = 1;
    return ms_since(t0, b->decided_ns[k - 1]);
}

static void report(const bench *b, int64_t t0, int64_t t_joined, int64_t cpu0, long rss0, long hwm0)
{
    printf("decided {\"count\": %ld, \"follow\": %s, \"join_ms\": %.3f, \"total_ms\": %.3f, "
           "\"first_ms\": %.3f, \"p10_ms\": %.3f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, "
           "\"turns\": %ld, \"process_ms\": %.3f, \"max_turn_ms\": %.3f, \"cpu_ms\": %.3f, "
           "\"rss_before_kb\": %ld, \"hwm_before_kb\": %ld, \"rss_kb\": %ld, \"hwm_kb\": %ld}\n",
           b->n, b->follow ? "true" : "false", ms_since(t0, t_joined), decided_at(b, t0, 1.0),
           ms_since(t0, b->decided_ns[0]), decided_at(b, t0, 0.1), decided_at(b, t0, 0.5),
           decided_at(b, t0, 0.9), b->turns, (double)b->process_ns / 1e6,
           (double)b->max_turn_ns / 1e6, (double)(cpu_ns() - cpu0) / 1e6, rss0, hwm0,
           status_kb("VmRSS"), status_kb("VmHWM"));
    fflush(stdout);
}

static int join_all(reign_client *client, bench *b)
{
    char name[REIGN_NAME_MAX + 2];
    reign_election_options o = {.size = sizeof(o), .id = b->id, .cb = on_election, .userdata = b};
    for (long i = 0; i < b->n; i++) {
        if (snprintf(name, sizeof(name), "%ssvc-%ld", b->prefix, i) >= (int)sizeof(name))
            return REIGN_ENAME;
        int r = reign_election_join(&b->elections[i], client, name, &o);
        if (r < 0) {
            fprintf(stderr, "many-elections: cannot join '%s': %s\n", name, reign_strerror(r));
            return r;
        }
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: many-elections --uri URI --count N [--prefix P] [--id ID] [--follow]\n"
               "Joins N elections P0..P<N-1> on one client and reports, as JSON, how long\n"
               "until all were decided; then holds them until SIGTERM.\n");
}

static int parse(bench *b, int argc, char **argv)
{
    static const struct option opts[] = {
        {"uri", required_argument, NULL, 'u'},
        {"count", required_argument, NULL, 'n'},
        {"prefix", required_argument, NULL, 'p'},
        {"id", required_argument, NULL, 'i'},
        {"follow", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    char *end;
    b->prefix = "bench.many.";
    while ((o = getopt_long(argc, argv, "u:n:p:i:fh", opts, NULL)) != -1) {
        switch (o) {
        case 'u':
            b->uri = optarg;
            break;
        case 'n':
            b->n = strtol(optarg, &end, 10);
            if (!*optarg || *end || b->n < 1 || b->n > 10000000)
                return -1;
            break;
        case 'p':
            b->prefix = optarg;
            break;
        case 'i':
            b->id = optarg;
            break;
        case 'f':
            b->follow = 1;
            break;
        case 'h':
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            return -1;
        }
    }
    return optind == argc && b->uri && b->n > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    static bench bench_;
    bench *b = &bench_;
    if (parse(b, argc, argv) < 0) {
        usage(stderr);
        return 2;
    }
    b->elections = calloc((size_t)b->n, sizeof(*b->elections));
    b->decided_ns = calloc((size_t)b->n, sizeof(*b->decided_ns));
    if (!b->elections || !b->decided_ns)
        return EXIT_FAILURE;

    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    reign_client *client;
    char err[512];
    int r = reign_client_new(&client, b->uri, NULL, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "many-elections: %s: %s\n", reign_strerror(r), err);
        return EXIT_FAILURE;
    }
    if ((r = reign_client_wait_connected(client)) < 0) {
        fprintf(stderr, "many-elections: connect: %s\n", reign_strerror(r));
        reign_client_free(client);
        return EXIT_FAILURE;
    }
    printf("connected monotonic_ns=%lld\n", (long long)now_ns());
    fflush(stdout);

    long rss0 = status_kb("VmRSS"), hwm0 = status_kb("VmHWM");
    int64_t cpu0 = cpu_ns(), t0 = now_ns();
    r = join_all(client, b);
    int64_t t_joined = now_ns();
    int said = 0, closing = 0;
    while (r == 0 && !b->failed) {
        if (b->decided == b->n && !said) {
            said = 1;
            report(b, t0, t_joined, cpu0, rss0, hwm0);
        }
        if (got_stop && !closing) {
            closing = 1;
            reign_client_close(client); /* every election resigns */
        }
        if ((r = turn(client, b, &waitmask)) == REIGN_ECLOSED) {
            r = closing ? 0 : r;
            break;
        }
    }
    int code = r < 0 || b->failed ? EXIT_FAILURE : EXIT_SUCCESS;
    for (long i = 0; i < b->n; i++)
        reign_election_free(b->elections[i]);
    reign_client_free(client);
    free(b->elections);
    free(b->decided_ns);
    return code;
}
