/*
 * members.c - membership latency: how long a member's join, and its death by SIGKILL, take to
 * reach a watcher of its group, on any store.
 *
 *   members-latency --uri URI [--rounds 50] [--warmup 3] [--gap-ms 50] [--group NAME]
 *
 * This process watches group NAME (reign_group_watch_start()).  Each round it starts a member:
 * this program again (--member), a process of its own with its own client and its guardian,
 * as a member on another host's process would be.  Once the member is connected, it takes t0
 * (CLOCK_MONOTONIC) and calls reign_group_register(); the watcher's ADDED event's at_ns minus
 * t0 is the join.  Once the member's guardian runs (it starts with the registration) and
 * --gap-ms have passed, the watcher takes t1,
 * kills the member with SIGKILL (its guardian removes what it held at once) and waits for its
 * REMOVED: at_ns minus t1 is the death.  Both clocks are the same CLOCK_MONOTONIC, so no pipe
 * or scheduling delay of a harness is in them.  The first --warmup rounds are reported but
 * flagged.
 *
 * Stdout is one JSON object: the settings, every round, and nearest-rank percentiles of the
 * measured rounds.  Exit 0; 1 on an error (the watch or a member failing, a round that did not
 * finish within 30 s); 2 on a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reign/reign.h>

#define ROUND_LIMIT_NS (30 * 1000000000LL)

extern char **environ;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int connect_client(reign_client **ret, const char *uri, int guardian)
{
    reign_client_options o = {.size = sizeof(o),
                              .guardian = guardian ? REIGN_GUARDIAN_ON : REIGN_GUARDIAN_OFF};
    char err[256] = "";
    int r = reign_client_new(ret, uri, &o, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "members-latency: %s\n", err[0] ? err : reign_strerror(r));
        return r;
    }
    r = reign_client_wait_connected(*ret);
    if (r < 0)
        fprintf(stderr, "members-latency: %s: %s\n", uri, reign_client_errmsg(*ret));
    return r;
}

/* ---- the member (--member URI GROUP ID) ------------------------------------------------- */

static void on_member(reign_group *g, const reign_group_event *ev, void *userdata)
{
    (void)g;
    (void)userdata;
    if (ev->type == REIGN_GROUP_ERROR) {
        fprintf(stderr, "members-latency: member: %s\n",
                ev->message ? ev->message : reign_strerror(ev->error));
        exit(1);
    }
}

/* Prints "ready" once connected with its guardian, waits for a line on stdin, prints
 * "t0 NS", registers, and runs until killed. */
static int member(const char *uri, const char *group, const char *id)
{
    reign_client *c;
    if (connect_client(&c, uri, 1) < 0)
        return 1;
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof(line), stdin))
        return 1;
    reign_group_options o = {.size = sizeof(o), .id = id, .cb = on_member};
    reign_group *g;
    int64_t t0 = now_ns();
    int r = reign_group_register(&g, c, group, &o);
    printf("t0 %lld\n", (long long)t0);
    fflush(stdout);
    if (r < 0) {
        fprintf(stderr, "members-latency: member: register: %s\n", reign_strerror(r));
        return 1;
    }
    /* The guardian starts with the first thing a dead process must give up (the member):
     * say when it runs, so that the kill is its case. */
    for (int64_t end = now_ns() + 10000000000LL; reign_client_guardian_pid(c) <= 0;) {
        if (now_ns() > end) {
            fprintf(stderr, "members-latency: member: no guardian\n");
            return 1;
        }
        struct pollfd p = {.fd = reign_client_get_fd(c), .events = POLLIN};
        poll(&p, 1, 10);
        if (reign_client_process(c) < 0)
            return 1;
    }
    printf("guarded\n");
    fflush(stdout);
    return reign_client_run(c) < 0;
}

/* ---- the watcher ------------------------------------------------------------------------ */

typedef struct sample {
    int64_t join_ns, death_ns;
} sample;

typedef struct bench {
    const char *uri, *group;
    reign_client *client;
    reign_group_watch *watch;
    int ready, failed;
    char want[64];                /* the member id this round waits for */
    int64_t added_at, removed_at; /* its events' at_ns, 0 until seen */
} bench;

static void on_watch(reign_group_watch *w, const reign_group_watch_event *ev, void *userdata)
{
    bench *b = userdata;
    (void)w;
    switch (ev->type) {
    case REIGN_MEMBERS_READY:
        b->ready = 1;
        break;
    case REIGN_MEMBER_ADDED:
        if (strcmp(ev->member->id, b->want) == 0)
            b->added_at = ev->at_ns;
        break;
    case REIGN_MEMBER_REMOVED:
        if (strcmp(ev->member->id, b->want) == 0)
            b->removed_at = ev->at_ns;
        break;
    case REIGN_MEMBERS_ERROR:
        fprintf(stderr, "members-latency: watch: %s\n",
                ev->message ? ev->message : reign_strerror(ev->error));
        break;
    default:
        break;
    }
}

/* Turns the watcher's loop until *flag is set, or until the deadline (then -1); also reads
 * a line of the member's stdout into line when fd >= 0 and one is ready (*got set). */
static int turn_until(bench *b, const int64_t *flag, int fd, FILE *in, char *line, size_t len,
                      int *got, int64_t deadline)
{
    while (!*flag || (got && !*got)) {
        int64_t left = (deadline - now_ns()) / 1000000;
        if (left <= 0)
            return -1;
        int64_t t = reign_client_get_timeout_ms(b->client);
        int ms = (int)(t >= 0 && t < left ? t : left);
        struct pollfd p[2] = {{.fd = reign_client_get_fd(b->client), .events = POLLIN},
                              {.fd = fd, .events = POLLIN}};
        if (poll(p, fd >= 0 && got && !*got ? 2 : 1, ms) < 0 && errno != EINTR)
            return -1;
        if (reign_client_process(b->client) < 0)
            return -1;
        if (fd >= 0 && got && !*got && (p[1].revents & (POLLIN | POLLHUP))) {
            if (!fgets(line, (int)len, in))
                return -1;
            *got = 1;
        }
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct_ms(int64_t *v, int n, int p)
{
    if (n == 0)
        return -1;
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    int k = (n * p + 99) / 100;
    return (double)v[k < 1 ? 0 : k - 1] / 1e6;
}

/* One round: the member i joins, then dies. */
static int round_once(bench *b, const char *self, int i, sample *s, int gap_ms)
{
    snprintf(b->want, sizeof(b->want), "m%d-%d", i, (int)getpid());
    b->added_at = b->removed_at = 0;
    int to[2], from[2];
    if (pipe(to) < 0 || pipe(from) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, to[0], 0);
    posix_spawn_file_actions_adddup2(&fa, from[1], 1);
    posix_spawn_file_actions_addclose(&fa, to[1]);
    posix_spawn_file_actions_addclose(&fa, from[0]);
    char *argv[] = {(char *)self, "--member", (char *)b->uri, (char *)b->group, b->want, NULL};
    pid_t pid;
    int r = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(to[0]);
    close(from[1]);
    if (r != 0) {
        fprintf(stderr, "members-latency: spawn: %s\n", strerror(r));
        return -1;
    }
    FILE *in = fdopen(from[0], "r");
    setvbuf(in, NULL, _IONBF, 0); /* a line read leaves the next one to poll() */
    char line[64];
    int got = 0, rc = -1;
    int64_t none = 1, deadline = now_ns() + ROUND_LIMIT_NS;
    if (turn_until(b, &none, from[0], in, line, sizeof(line), &got, deadline) < 0 ||
        strcmp(line, "ready\n") != 0) {
        fprintf(stderr, "members-latency: member %s did not start\n", b->want);
        goto out;
    }
    if (write(to[1], "go\n", 3) != 3)
        goto out;
    got = 0;
    if (turn_until(b, &b->added_at, from[0], in, line, sizeof(line), &got, deadline) < 0) {
        fprintf(stderr, "members-latency: member %s: no ADDED\n", b->want);
        goto out;
    }
    long long t0;
    if (sscanf(line, "t0 %lld", &t0) != 1)
        goto out;
    s->join_ns = b->added_at - (int64_t)t0;
    got = 0;
    if (turn_until(b, &none, from[0], in, line, sizeof(line), &got, deadline) < 0 ||
        strcmp(line, "guarded\n") != 0) {
        fprintf(stderr, "members-latency: member %s has no guardian\n", b->want);
        goto out;
    }
    int64_t settle = now_ns() + (int64_t)gap_ms * 1000000;
    int64_t never = 0;
    turn_until(b, &never, -1, NULL, NULL, 0, NULL, settle);
    int64_t t1 = now_ns();
    reign_trace("bench.kill", "%d", (int)pid);
    kill(pid, SIGKILL);
    if (turn_until(b, &b->removed_at, -1, NULL, NULL, 0, NULL, deadline) < 0) {
        fprintf(stderr, "members-latency: member %s: no REMOVED\n", b->want);
        goto out;
    }
    s->death_ns = b->removed_at - t1;
    rc = 0;
out:
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fclose(in);
    close(to[1]);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--member") == 0)
        return member(argv[2], argv[3], argv[4]);
    bench b = {.group = "bench-members"};
    int rounds = 50, warmup = 3, gap_ms = 50;
    static const struct option opts[] = {
        {"uri", required_argument, NULL, 'u'},    {"rounds", required_argument, NULL, 'r'},
        {"warmup", required_argument, NULL, 'w'}, {"gap-ms", required_argument, NULL, 'g'},
        {"group", required_argument, NULL, 'n'},  {NULL, 0, NULL, 0}};
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'u':
            b.uri = optarg;
            break;
        case 'r':
            rounds = atoi(optarg);
            break;
        case 'w':
            warmup = atoi(optarg);
            break;
        case 'g':
            gap_ms = atoi(optarg);
            break;
        case 'n':
            b.group = optarg;
            break;
        default:
            return 2;
        }
    }
    if (!b.uri || rounds < 1 || warmup < 0 || gap_ms < 0) {
        fprintf(stderr, "usage: members-latency --uri URI [--rounds N] [--warmup N] "
                        "[--gap-ms MS] [--group NAME]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (connect_client(&b.client, b.uri, 0) < 0)
        return 1;
    reign_group_watch_options wo = {.size = sizeof(wo), .cb = on_watch, .userdata = &b};
    int r = reign_group_watch_start(&b.watch, b.client, b.group, &wo);
    if (r < 0) {
        fprintf(stderr, "members-latency: watch %s: %s\n", b.group, reign_strerror(r));
        return 1;
    }
    int64_t ready = 0, deadline = now_ns() + ROUND_LIMIT_NS;
    while (!b.ready) {
        if (turn_until(&b, &ready, -1, NULL, NULL, 0, NULL, now_ns() + 10000000) < 0 &&
            now_ns() > deadline) {
            fprintf(stderr, "members-latency: the watch never became ready\n");
            return 1;
        }
    }
    int total = warmup + rounds;
    sample *s = calloc((size_t)total, sizeof(*s));
    int64_t *join = calloc((size_t)rounds, sizeof(*join)), *death = calloc((size_t)rounds, 8);
    if (!s || !join || !death)
        return 1;
    for (int i = 0; i < total; i++)
        if (round_once(&b, argv[0], i, &s[i], gap_ms) < 0)
            return 1;
    printf("{\"uri_backend\": \"%s\", \"rounds\": %d, \"warmup\": %d, \"gap_ms\": %d, "
           "\"samples\": [",
           reign_client_backend(b.client), rounds, warmup, gap_ms);
    for (int i = 0; i < total; i++) {
        printf("%s{\"warmup\": %s, \"join_ms\": %.3f, \"death_ms\": %.3f}", i ? ", " : "",
               i < warmup ? "true" : "false", (double)s[i].join_ns / 1e6,
               (double)s[i].death_ns / 1e6);
        if (i >= warmup) {
            join[i - warmup] = s[i].join_ns;
            death[i - warmup] = s[i].death_ns;
        }
    }
    printf("], \"join_ms\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}",
           pct_ms(join, rounds, 50), pct_ms(join, rounds, 90), pct_ms(join, rounds, 99),
           pct_ms(join, rounds, 100));
    printf(", \"death_ms\": {\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f}}\n",
           pct_ms(death, rounds, 50), pct_ms(death, rounds, 90), pct_ms(death, rounds, 99),
           pct_ms(death, rounds, 100));
    reign_group_watch_free(b.watch);
    reign_client_free(b.client);
    free(s);
    free(join);
    free(death);
    return 0;
}
