/*
 * service_masters.c - one master per service:version, many services in one process, as an
 * SOA framework's service masters do.
 *
 * README
 * ------
 * In such an SOA framework every container runs many services, and each service:version
 * needs exactly one master among the containers to run its scheduled jobs.  Each container
 * races to create /soa/master/services/<service:version>, keeps an isMaster cache per
 * service:version, and watches the node to race again when the master goes.  This program does
 * the same with libreign: one election per service:version, all on one client (one ZooKeeper
 * session, however many services), and a cache kept current from the election callbacks.  The
 * cache is what a job scheduler would read before running a job ("am I the master of
 * AccountService:1.0.0?"); reign_election_is_leader() answers the same question from local
 * state, without a round trip, and the program checks on every change that both agree.
 * Unlike the seed's create-and-watch, every candidate waits in line behind one predecessor
 * (no herd when a master goes), a master whose connection is cut off steps down before anyone
 * else can take over, and every mastership has a fencing token.
 *
 *   service-masters --uri zk://127.0.0.1:2181 --id c1 --addr 192.168.99.100:9090 \
 *                   --services AccountService:1.0.0,OrderService:2.1.0
 *   service-masters --uri zk://127.0.0.1:2181 --id c2 --count 1000       # svc-0:1.0 ...
 *
 * Output (stdout), one line per change as it happens:
 *
 *   ismaster SERVICE true term=T token=K        this process became SERVICE's master
 *   ismaster SERVICE false reason=R             ... stopped being it (R: resigned, ceded, ...)
 *   master SERVICE id=ID data=DATA | none       with --follow: SERVICE's master, whoever it is
 *   ready services=N masters=K                  once every election has been looked at
 *   cache masters=K/N: SERVICE ...              on SIGUSR1: what the cache says now
 *
 * SIGINT/SIGTERM resign every mastership (the next container takes over at once) and exit 0.
 * Exit 1 on an error (or if the cache ever disagreed with the library), 2 for a usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/reign.h>

/* One service:version and this process's standing in its election. */
typedef struct program program;

typedef struct service {
    program *prog;
    char *name; /* "AccountService:1.0.0" */
    reign_election *election;
    int is_master; /* the isMaster cache: set from the callbacks only */
    int ready;     /* READY seen */
} service;

struct program {
    const char *uri, *id, *addr, *prefix;
    int follow;
    service *services;
    size_t n;
    size_t n_ready, n_masters;
    int ready_said;
    reign_client *client;
    int exit_code;
};

static volatile sig_atomic_t got_stop, got_dump;

static void on_signal(int sig)
{
    if (sig == SIGUSR1)
        got_dump = 1;
    else
        got_stop = 1;
}

__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

/* ---- the isMaster cache ------------------------------------------------------------------- */

static void set_master(program *p, service *s, int is_master)
{
    if (is_master && !s->is_master)
        p->n_masters++;
    else if (!is_master && s->is_master)
        p->n_masters--;
    s->is_master = is_master;
    /* The library's own answer is local state too, and already current inside the callback:
     * a scheduler may use either; they must never differ. */
    if (reign_election_is_leader(s->election) != is_master) {
        fprintf(stderr, "service-masters: %s: cache says %d, the election says %d\n", s->name,
                is_master, !is_master);
        p->exit_code = EXIT_FAILURE;
    }
}

static void dump_cache(const program *p)
{
    char line[4096];
    size_t len = (size_t)snprintf(line, sizeof(line), "cache masters=%zu/%zu:", p->n_masters, p->n);
    for (size_t i = 0; i < p->n && len < sizeof(line); i++)
        if (p->services[i].is_master)
            len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", p->services[i].name);
    if (len >= sizeof(line)) /* thousands of services: the count says enough */
        snprintf(line + sizeof(line) - 5, 5, " ...");
    say("%s", line);
}

/* The seed's "master cache" of every service, whoever holds it (--follow). */
static void print_master(const service *s, const reign_leader *leader)
{
    if (!leader) {
        say("master %s none", s->name);
        return;
    }
    /* Another container's payload: keep our one line per change whatever it holds. */
    const unsigned char *d = leader->data;
    int printable = leader->data_len < 256;
    for (size_t i = 0; printable && i < leader->data_len; i++)
        printable = d[i] > 0x20 && d[i] < 0x7f;
    say("master %s id=%s data=%.*s term=%llu", s->name, leader->id,
        printable ? (int)leader->data_len : 1, printable ? (const char *)d : "?",
        (unsigned long long)leader->term);
}

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    service *s = userdata;
    program *p = s->prog;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        set_master(p, s, 1);
        say("ismaster %s true term=%llu token=%llu", s->name, (unsigned long long)ev->term,
            (unsigned long long)ev->token);
        break;
    case REIGN_ELECTION_DEMOTED:
        set_master(p, s, 0);
        say("ismaster %s false reason=%s", s->name, reign_demote_reason_name(ev->reason));
        break;
    case REIGN_ELECTION_READY:          /* with --follow, it carries the first view of the master */
    case REIGN_ELECTION_LEADER_CHANGED: /* --follow only */
        if (p->follow)
            print_master(s, ev->leader);
        break;
    case REIGN_ELECTION_ERROR:
        fprintf(stderr, "service-masters: %s: %s\n", s->name,
                ev->message ? ev->message : reign_strerror(ev->error));
        p->exit_code = EXIT_FAILURE;
        got_stop = 1;
        break;
    default:
        break;
    }
    /* READY comes once per election, just before ELECTED for one that leads at once. */
    if (ev->type == REIGN_ELECTION_READY && !s->ready) {
        s->ready = 1;
        p->n_ready++;
    }
}

/* Joins the election of one service:version, named PREFIX + service. */
static int stand(program *p, service *s)
{
    char name[REIGN_NAME_MAX + 2];
    if (snprintf(name, sizeof(name), "%s%s", p->prefix, s->name) >= (int)sizeof(name))
        return REIGN_ENAME;
    reign_election_options o = {.size = sizeof(o),
                                .id = p->id,
                                .data = p->addr,
                                .data_len = p->addr ? strlen(p->addr) : 0,
                                .follow_leader = p->follow,
                                .cb = on_election,
                                .userdata = s};
    return reign_election_join(&s->election, p->client, name, &o);
}

/* ---- options ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "Usage: service-masters (--services LIST | --count N) [OPTIONS]\n"
               "\n"
               "Stands in one election per service:version on one session and prints each\n"
               "change of this process's isMaster flag (see the header of\n"
               "examples/service-masters/service_masters.c).\n"
               "\n"
               "Options:\n"
               "  -u, --uri URI          the store (default: $REIGN_URI)\n"
               "  -s, --services LIST    comma-separated service:version names\n"
               "  -n, --count N          services svc-0:1.0 ... svc-<N-1>:1.0 instead\n"
               "  -i, --id ID            candidate id (default: HOSTNAME-PID)\n"
               "  -a, --addr ADDR        payload others see, e.g. this container's address\n"
               "  -p, --prefix PREFIX    election name prefix (default: soa.master.)\n"
               "  -f, --follow           also print every service's master (costs a watch each)\n"
               "  -l, --log-level LEVEL  library messages on stderr (default: warn)\n"
               "  -h, --help             show this help\n");
}

static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    fprintf(stderr, "service-masters: %s: %s\n", reign_log_level_name(level), msg);
}

static int add_service(program *p, const char *name, size_t len)
{
    if (len == 0)
        return -1;
    service *s = &p->services[p->n];
    s->prog = p;
    s->name = strndup(name, len);
    if (!s->name)
        return -1;
    p->n++;
    return 0;
}

/* Fills p->services from "a:1,b:2" or from a count. */
static int make_services(program *p, const char *list, long count)
{
    size_t cap = list ? 1 : (size_t)count;
    for (const char *c = list; c && *c; c++)
        cap += *c == ',';
    p->services = calloc(cap, sizeof(*p->services));
    if (!p->services)
        return -1;
    if (!list) {
        char name[32];
        for (long i = 0; i < count; i++)
            if (add_service(p, name, (size_t)snprintf(name, sizeof(name), "svc-%ld:1.0", i)) < 0)
                return -1;
        return 0;
    }
    for (const char *c = list;;) {
        const char *comma = strchr(c, ',');
        size_t len = comma ? (size_t)(comma - c) : strlen(c);
        if (add_service(p, c, len) < 0) {
            fprintf(stderr, "service-masters: empty service name in '%s'\n", list);
            return -1;
        }
        if (!comma)
            return 0;
        c = comma + 1;
    }
}

static int parse_options(program *p, int argc, char **argv)
{
    static const struct option opts[] = {
        {"uri", required_argument, NULL, 'u'},   {"services", required_argument, NULL, 's'},
        {"count", required_argument, NULL, 'n'}, {"id", required_argument, NULL, 'i'},
        {"addr", required_argument, NULL, 'a'},  {"prefix", required_argument, NULL, 'p'},
        {"follow", no_argument, NULL, 'f'},      {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0},
    };
    const char *list = NULL;
    long count = 0;
    int o, level = REIGN_LOG_WARN;
    char *end;
    p->uri = getenv("REIGN_URI");
    p->prefix = "soa.master.";
    while ((o = getopt_long(argc, argv, "u:s:n:i:a:p:fl:h", opts, NULL)) != -1) {
        switch (o) {
        case 'u':
            p->uri = optarg;
            break;
        case 's':
            list = optarg;
            break;
        case 'n':
            count = strtol(optarg, &end, 10);
            if (!*optarg || *end || count < 1 || count > 1000000) {
                fprintf(stderr, "service-masters: invalid --count '%s' (1 to 1000000)\n", optarg);
                return 2;
            }
            break;
        case 'i':
            p->id = optarg;
            break;
        case 'a':
            p->addr = optarg;
            break;
        case 'p':
            p->prefix = optarg;
            break;
        case 'f':
            p->follow = 1;
            break;
        case 'l':
            if ((level = reign_log_level_parse(optarg)) < 0) {
                fprintf(stderr, "service-masters: invalid --log-level '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || !p->uri || !list == !count) {
        fprintf(stderr, "service-masters: %s\n",
                optind != argc ? "unexpected argument"
                : !p->uri      ? "no store: give --uri or set REIGN_URI"
                               : "give one of --services and --count");
        return 2;
    }
    if (make_services(p, list, count) < 0)
        return 2;
    reign_set_log(log_sink, NULL, (reign_log_level)level);
    return 0;
}

/* ---- main --------------------------------------------------------------------------------- */

/*
 * The loop: the client's descriptor and deadline, and signals.  The signals are blocked except
 * inside ppoll(), so one that arrives between two turns is not lost until the next timeout:
 * ppoll returns at once with EINTR.
 */
static void run(program *p, const sigset_t *waitmask)
{
    int closing = 0;
    for (;;) {
        if (got_stop && !closing) {
            /* Every election resigns: the next candidate of each takes over at once. */
            closing = 1;
            reign_client_close(p->client);
        }
        if (got_dump) {
            got_dump = 0;
            dump_cache(p);
        }
        struct pollfd pfd = {.fd = reign_client_get_fd(p->client), .events = POLLIN};
        int64_t ms = reign_client_get_timeout_ms(p->client);
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
        if (ppoll(&pfd, 1, ms < 0 ? NULL : &ts, waitmask) < 0 && errno != EINTR) {
            perror("service-masters: ppoll");
            p->exit_code = EXIT_FAILURE;
            return;
        }
        if (reign_client_process(p->client) == REIGN_ECLOSED) {
            if (!closing) { /* closed by a fatal error, not by us */
                fprintf(stderr, "service-masters: the client closed: %s\n",
                        reign_client_errmsg(p->client));
                p->exit_code = EXIT_FAILURE;
            }
            return;
        }
        /* After the turn, not inside the last READY: its ELECTED follows in the same turn. */
        if (p->n_ready == p->n && !p->ready_said) {
            p->ready_said = 1;
            say("ready services=%zu masters=%zu", p->n, p->n_masters);
        }
    }
}

int main(int argc, char **argv)
{
    static program prog;
    program *p = &prog;
    int r = parse_options(p, argc, argv);
    if (r)
        return r;

    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);

    char err[512];
    if ((r = reign_client_new(&p->client, p->uri, NULL, err, sizeof(err))) < 0) {
        fprintf(stderr, "service-masters: %s: %s\n", reign_strerror(r), err);
        return EXIT_FAILURE;
    }
    /* Joining needs no connection: every election stands as soon as the session is there. */
    for (size_t i = 0; i < p->n; i++) {
        if ((r = stand(p, &p->services[i])) < 0) {
            fprintf(stderr, "service-masters: cannot stand for '%s%s': %s\n", p->prefix,
                    p->services[i].name, reign_strerror(r));
            p->services[i].election = NULL;
            p->exit_code = r == REIGN_ENAME || r == REIGN_EINVAL ? 2 : EXIT_FAILURE;
            break;
        }
    }
    if (!p->exit_code)
        run(p, &waitmask);
    for (size_t i = 0; i < p->n; i++) {
        reign_election_free(p->services[i].election);
        free(p->services[i].name);
    }
    free(p->services);
    reign_client_free(p->client);
    return p->exit_code;
}
