/*
 * ctl.c - `reign ctl`: talks to a running reignd over its control socket
 * (src/reignd/control.h): one JSON request line out, one answer line back.
 *
 *   reign ctl status [--json]
 *   reign ctl cede SERVICE [--delay SECONDS]
 *   reign ctl failover SERVICE --to NODE [--no-wait]
 *   reign ctl pause SERVICE
 *   reign ctl resume SERVICE
 *
 * It needs no store and no loop: a blocking socket with poll() bounded by
 * --timeout is all.  The daemon checks who we are (same user or root).
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "control_socket.h"

/* The longest answer read: a status of many services is still far below. */
#define CTL_ANSWER_MAX (4 * 1024 * 1024)

typedef struct ctl {
    const char *socket;
    char default_socket[4096];
    const char *sub; /* status, cede, ... */
    const char *service;
    const char *to;
    double delay_s;
    int has_delay;
    int no_wait;
    int json;
    int64_t timeout_ns;
    int has_timeout;
} ctl;

/* How long to wait for an answer: a failover waits for the new active, which
 * the daemon bounds by its own timeouts (session, fences, hooks). */
#define CTL_TIMEOUT_S          120
#define CTL_FAILOVER_TIMEOUT_S 600

static void usage(FILE *f)
{
    fprintf(
        f, "Usage: reign ctl status [--json]\n"
           "       reign ctl cede SERVICE [--delay SECONDS]\n"
           "       reign ctl failover SERVICE --to NODE [--no-wait]\n"
           "       reign ctl pause SERVICE\n"
           "       reign ctl resume SERVICE\n"
           "\n"
           "Control a running reignd through its local socket.\n"
           "  status     every service: state, health, leader, term, token, paused\n"
           "  cede       give up the active role of SERVICE on this node; stand again\n"
           "             after --delay seconds (default 0: at once, behind the standby\n"
           "             that takes over); refused if no other node stands\n"
           "  failover   hand SERVICE over to NODE gracefully and wait until NODE is\n"
           "             active; refused, with the reason, unless NODE is a healthy\n"
           "             standby; fails (exit 1) with the reason if NODE does not\n"
           "             become active\n"
           "  pause      maintenance mode for SERVICE's whole election, kept in the\n"
           "             store: no automatic failover on any node until resumed\n"
           "  resume     end maintenance mode (on every node)\n"
           "\n"
           "Options:\n"
           "  -s, --socket PATH       the control socket (default: /run/reign/reignd.sock\n"
           "                          for root, else $XDG_RUNTIME_DIR/reign/reignd.sock)\n"
           "      --json              print the daemon's answer as one JSON object\n"
           "                          (status: {\"services\":[{\"name\",\"node\",\"state\",\n"
           "                          \"health\",\"paused\",\"paused_by\",\"leader\",\"term\",\n"
           "                          \"token\",\"failovers\",\"activated\",\"election\",\n"
           "                          \"instance\",\"conflict\",\"failover_to\",\"reason\"}...]})\n"
           "  -d, --delay SECONDS     cede: how long to stay out of the election\n"
           "  -t, --to NODE           failover: the node to hand over to\n"
           "      --no-wait           failover: answer once handed over, without waiting\n"
           "                          for NODE to be active\n"
           "  -T, --timeout SECONDS   how long to wait for the answer (default 120;\n"
           "                          600 for a failover that waits)\n"
           "  -h, --help              show this help\n");
}

/* The socket reignd uses when its configuration names none (config.c). */
static int default_socket(cli *c, ctl *s)
{
    if (geteuid() == 0) {
        s->socket = REIGND_CONTROL_SOCKET_DEFAULT;
        return 0;
    }
    const char *dir = getenv("XDG_RUNTIME_DIR");
    if (!dir || dir[0] != '/')
        return cli_usage_error(c, "no --socket given and $XDG_RUNTIME_DIR is not set");
    snprintf(s->default_socket, sizeof(s->default_socket), "%s/reign/reignd.sock", dir);
    s->socket = s->default_socket;
    return 0;
}

/* ---- the exchange -------------------------------------------------------- */

static int connect_socket(cli *c, const char *path)
{
    char q[512];
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path)) {
        cli_error(c, "socket path '%s' is too long", cli_quote(path, q, sizeof(q)));
        return -1;
    }
    memcpy(sa.sun_path, path, strlen(path));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        int e = errno;
        cli_error(c, "cannot connect to '%s': %s%s", cli_quote(path, q, sizeof(q)), strerror(e),
                  e == ENOENT || e == ECONNREFUSED ? " (is reignd running? see --socket)" : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Waits until fd is ready for `events` or the deadline passes; 0 or -1 (timed out). */
static int wait_fd(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ns();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = events};
        int ms = left / 1000000 > 60000 ? 60000 : (int)(left / 1000000) + 1;
        int r = poll(&p, 1, ms);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

/* The daemon hangs up without a word on a client of another user. */
static void refused(cli *c)
{
    cli_error(c, "reignd closed the connection without an answer (only its own user and root "
                 "may use the control socket)");
}

/* Sends `line` and reads one answer line into *out (malloc'd).  0 or CLI_EXIT_FAIL. */
static int exchange(cli *c, ctl *s, int fd, const char *line, char **out)
{
    int64_t deadline = now_ns() + s->timeout_ns;
    size_t len = strlen(line), off = 0;
    while (off < len) {
        if (wait_fd(fd, POLLOUT, deadline) < 0) {
            cli_error(c, "reignd did not take the request within the timeout");
            return CLI_EXIT_FAIL;
        }
        ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
            refused(c); /* it hung up on us before reading */
            return CLI_EXIT_FAIL;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            cli_error(c, "cannot send the request: %s", strerror(errno));
            return CLI_EXIT_FAIL;
        }
        off += n > 0 ? (size_t)n : 0;
    }
    size_t cap = 4096, got = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            cli_error(c, "out of memory");
            return CLI_EXIT_FAIL;
        }
        char *nl = memchr(buf, '\n', got);
        if (nl) {
            *nl = '\0';
            *out = buf;
            return 0;
        }
        if (got + 1 >= cap) {
            char *bigger = cap < CTL_ANSWER_MAX ? realloc(buf, cap * 2) : NULL;
            if (!bigger) {
                free(buf);
                cli_error(c, "the answer of reignd is too long");
                return CLI_EXIT_FAIL;
            }
            buf = bigger;
            cap *= 2;
        }
        if (wait_fd(fd, POLLIN, deadline) < 0) {
            free(buf);
            cli_error(c,
                      "no answer from reignd within %.0f s (the operation may still complete; "
                      "see 'reign ctl status')",
                      (double)s->timeout_ns / 1e9);
            return CLI_EXIT_FAIL;
        }
        ssize_t n = recv(fd, buf + got, cap - got - 1, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            free(buf);
            refused(c);
            return CLI_EXIT_FAIL;
        }
        if (n < 0 && errno != EINTR && errno != EAGAIN) {
            free(buf);
            cli_error(c, "cannot read the answer: %s", strerror(errno));
            return CLI_EXIT_FAIL;
        }
        got += n > 0 ? (size_t)n : 0;
    }
}

static cJSON *build_request(const ctl *s)
{
    cJSON *o = cJSON_CreateObject();
    if (!o || !cJSON_AddStringToObject(o, "op", s->sub))
        goto fail;
    if (s->service && !cJSON_AddStringToObject(o, "service", s->service))
        goto fail;
    if (s->to && !cJSON_AddStringToObject(o, "to", s->to))
        goto fail;
    if (s->has_delay && !cJSON_AddNumberToObject(o, "delay_s", s->delay_s))
        goto fail;
    if (s->no_wait && !cJSON_AddFalseToObject(o, "wait"))
        goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* ---- output ---------------------------------------------------------------- */

/* A member as text: strings as they are, numbers whole, booleans yes/no, else "-". */
static const char *member_text(const cJSON *o, const char *key, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v) && v->valuestring[0])
        snprintf(buf, len, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(buf, len, "%.0f", v->valuedouble);
    else if (cJSON_IsBool(v))
        snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "yes" : "no");
    else
        snprintf(buf, len, "-");
    /* Keep the table one line per service whatever the daemon sent. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return buf;
}

static const char *const columns[] = {"name",   "node", "state", "health",   "paused",
                                      "leader", "term", "token", "failovers"};
static const char *const headings[] = {"SERVICE", "NODE", "STATE", "HEALTH",   "PAUSED",
                                       "LEADER",  "TERM", "TOKEN", "FAILOVERS"};
#define NCOL (sizeof(columns) / sizeof(columns[0]))

static void print_status(const cJSON *result)
{
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(result, "services");
    int width[NCOL];
    char cell[256];
    const cJSON *svc;
    for (size_t i = 0; i < NCOL; i++)
        width[i] = (int)strlen(headings[i]);
    cJSON_ArrayForEach(svc, list)
    {
        for (size_t i = 0; i < NCOL; i++) {
            int w = (int)strlen(member_text(svc, columns[i], cell, sizeof(cell)));
            if (w > width[i])
                width[i] = w;
        }
    }
    char line[4096];
    size_t off = 0;
    for (size_t i = 0; i < NCOL && off < sizeof(line); i++)
        off += (size_t)snprintf(line + off, sizeof(line) - off, "%-*s%s", width[i], headings[i],
                                i + 1 < NCOL ? "  " : "");
    cli_print("%s", line);
    cJSON_ArrayForEach(svc, list)
    {
        off = 0;
        for (size_t i = 0; i < NCOL && off < sizeof(line); i++)
            off += (size_t)snprintf(line + off, sizeof(line) - off, "%-*s%s", width[i],
                                    member_text(svc, columns[i], cell, sizeof(cell)),
                                    i + 1 < NCOL ? "  " : "");
        cli_print("%s", line);
        const cJSON *reason = cJSON_GetObjectItemCaseSensitive(svc, "reason");
        if (cJSON_IsString(reason) && reason->valuestring[0])
            cli_print("  %s: %s", member_text(svc, "name", cell, sizeof(cell)),
                      member_text(svc, "reason", line, sizeof(line)));
        /* What an operator must not miss, each on a line of its own. */
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(svc, "paused")))
            cli_print("  %s: paused by %s: no automatic failover on any node (reign ctl resume)",
                      member_text(svc, "name", cell, sizeof(cell)),
                      member_text(svc, "paused_by", line, sizeof(line)));
        const cJSON *conflict = cJSON_GetObjectItemCaseSensitive(svc, "conflict");
        if (cJSON_IsString(conflict) && conflict->valuestring[0])
            cli_print("  %s: CONFLICT: %s", member_text(svc, "name", cell, sizeof(cell)),
                      member_text(svc, "conflict", line, sizeof(line)));
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(svc, "failover_to");
        if (cJSON_IsString(to) && to->valuestring[0])
            cli_print("  %s: failing over to %s", member_text(svc, "name", cell, sizeof(cell)),
                      member_text(svc, "failover_to", line, sizeof(line)));
    }
    if (cJSON_GetArraySize(list) == 0)
        cli_print("(no services)");
}

static void print_done(const ctl *s)
{
    if (strcmp(s->sub, "cede") == 0 && s->has_delay)
        cli_print("ceded %s (out of the election for %g s)", s->service, s->delay_s);
    else if (strcmp(s->sub, "cede") == 0)
        cli_print("ceded %s", s->service);
    else if (strcmp(s->sub, "failover") == 0 && s->no_wait)
        cli_print("handed %s over to %s (not waiting for it to be active: see 'reign ctl "
                  "status')",
                  s->service, s->to);
    else if (strcmp(s->sub, "failover") == 0)
        cli_print("failed over %s to %s: %s is active", s->service, s->to, s->to);
    else if (strcmp(s->sub, "pause") == 0)
        cli_print("paused %s (its whole election: no automatic failover on any node)", s->service);
    else
        cli_print("resumed %s (on every node)", s->service);
}

/* Reads the answer; prints the result or the daemon's error.  Exit code. */
static int report(cli *c, const ctl *s, const char *answer)
{
    cJSON *a = cJSON_Parse(answer);
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(a, "ok");
    const cJSON *result = cJSON_GetObjectItemCaseSensitive(a, "result");
    int code = CLI_EXIT_OK;
    if (cJSON_IsTrue(ok) && cJSON_IsObject(result)) {
        if (s->json)
            code = cli_json_print(c, cJSON_DetachItemFromObject(a, "result"));
        else if (strcmp(s->sub, "status") == 0)
            print_status(result);
        else
            print_done(s);
    } else if (cJSON_IsFalse(ok)) {
        char m[512], sq[512];
        cli_error(
            c, "%s%s%s: %s", s->sub, s->service ? " " : "",
            s->service ? cli_quote(s->service, sq, sizeof(sq)) : "",
            member_text(a, cJSON_HasObjectItem(a, "message") ? "message" : "error", m, sizeof(m)));
        code = CLI_EXIT_FAIL;
    } else {
        cli_error(c, "malformed answer from reignd");
        code = CLI_EXIT_FAIL;
    }
    cJSON_Delete(a);
    return code;
}

/* ---- arguments ------------------------------------------------------------- */

static int parse_args(cli *c, ctl *s, int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_NO_WAIT };
    static const struct option opts[] = {
        {"socket", required_argument, NULL, 's'},
        {"json", no_argument, NULL, OPT_JSON},
        {"no-wait", no_argument, NULL, OPT_NO_WAIT},
        {"delay", required_argument, NULL, 'd'},
        {"to", required_argument, NULL, 't'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    int64_t ns;
    s->timeout_ns = (int64_t)CTL_TIMEOUT_S * 1000000000;
    while ((o = getopt_long(argc, argv, ":s:d:t:T:h", opts, NULL)) != -1) {
        switch (o) {
        case 's':
            s->socket = optarg;
            break;
        case OPT_JSON:
            s->json = 1;
            break;
        case OPT_NO_WAIT:
            s->no_wait = 1;
            break;
        case 'd':
            if (cli_parse_seconds(c, "--delay", optarg, REIGND_CEDE_DELAY_MAX_S, &ns))
                return CLI_EXIT_USAGE;
            s->delay_s = (double)ns / 1e9;
            s->has_delay = 1;
            break;
        case 't':
            s->to = optarg;
            break;
        case 'T':
            if (cli_parse_seconds(c, "--timeout", optarg, 86400, &ns))
                return CLI_EXIT_USAGE;
            s->timeout_ns = ns > 0 ? ns : 1;
            s->has_timeout = 1;
            break;
        case 'h':
            usage(stdout);
            return -1;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    return 0;
}

/* The subcommand and its SERVICE, and which options fit it. */
static int check_args(cli *c, ctl *s, int argc, char **argv)
{
    char q[512];
    if (optind >= argc)
        return cli_usage_error(c, "no subcommand given (status, cede, failover, pause, resume)");
    s->sub = argv[optind++];
    int status = strcmp(s->sub, "status") == 0;
    if (!status && strcmp(s->sub, "cede") && strcmp(s->sub, "failover") &&
        strcmp(s->sub, "pause") && strcmp(s->sub, "resume"))
        return cli_usage_error(c,
                               "unknown subcommand '%s' (expected status, cede, failover, "
                               "pause or resume)",
                               cli_quote(s->sub, q, sizeof(q)));
    if (!status) {
        if (optind >= argc)
            return cli_usage_error(c, "%s: no SERVICE given", s->sub);
        s->service = argv[optind++];
    }
    if (optind < argc)
        return cli_usage_error(c, "unexpected argument '%s'",
                               cli_quote(argv[optind], q, sizeof(q)));
    if (s->has_delay && strcmp(s->sub, "cede") != 0)
        return cli_usage_error(c, "--delay is for cede only");
    if (s->to && strcmp(s->sub, "failover") != 0)
        return cli_usage_error(c, "--to is for failover only");
    if (!s->to && strcmp(s->sub, "failover") == 0)
        return cli_usage_error(c, "failover: --to NODE is required");
    if (s->no_wait && strcmp(s->sub, "failover") != 0)
        return cli_usage_error(c, "--no-wait is for failover only");
    if (strcmp(s->sub, "failover") == 0 && !s->no_wait && !s->has_timeout)
        s->timeout_ns = (int64_t)CTL_FAILOVER_TIMEOUT_S * 1000000000;
    if (!s->socket)
        return default_socket(c, s);
    return 0;
}

int cli_ctl_main(cli *c, int argc, char **argv)
{
    ctl s;
    memset(&s, 0, sizeof(s));
    int r = parse_args(c, &s, argc, argv);
    if (r)
        return r < 0 ? CLI_EXIT_OK : r;
    if ((r = check_args(c, &s, argc, argv)))
        return r;

    cJSON *req = build_request(&s);
    char *text = req ? cJSON_PrintUnformatted(req) : NULL;
    cJSON_Delete(req);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 2) : NULL;
    if (!line) {
        free(text);
        cli_error(c, "out of memory");
        return CLI_EXIT_FAIL;
    }
    memcpy(line + n, "\n", 2);

    int fd = connect_socket(c, s.socket);
    char *answer = NULL;
    r = fd < 0 ? CLI_EXIT_FAIL : exchange(c, &s, fd, line, &answer);
    if (fd >= 0)
        close(fd);
    free(line);
    if (r == 0)
        r = report(c, &s, answer);
    free(answer);
    return r;
}
