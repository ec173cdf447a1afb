/*
 * leash.c - the leash of a command (leash.h).
 *
 * One pipe from the runner to the leash carries fixed-size messages (16 bytes, below
 * PIPE_BUF, so each arrives whole); its write end is close-on-exec, so the command never holds
 * it and the leash sees end of file exactly when the runner is gone.
 */
#include "leash.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <reign/client.h>

#include "toollog.h"

enum { MSG_GUARD = 1, MSG_UNGUARD, MSG_DEADLINE, MSG_BYE };

typedef struct msg {
    int32_t op;
    int32_t pgid;
    int64_t ns;
} msg;

struct cli_leash {
    int fd;
    pid_t pid;
};

#define FENCE_MIN_MARGIN_NS 100000000LL /* 100 ms */

/* The start of the leash's lines, as the tool's own ("reign: run: warn: "), set before fork. */
static char line_prefix[64];

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Kills every group and waits until none of them runs. */
static void kill_all(pid_t *groups, size_t n, const char *why)
{
    for (size_t i = 0; i < n; i++) {
        /* With the time (or the journal's priority) every line of the tool has. */
        char line[256];
        snprintf(line, sizeof(line), "leash: SIGKILL to process group %d: %s", (int)groups[i], why);
        toollog_signal_line(REIGN_LOG_WARN, line_prefix, line);
        for (int tries = 0; tries < 2000 && reign_kill_group(groups[i]) == 1; tries++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
    }
}

static void leash_main(int fd)
{
    /* As many groups as the runner has commands (`reign tasks worker --concurrency`). */
    pid_t *groups = NULL;
    size_t n = 0, cap = 0;
    int64_t deadline = 0;
    for (;;) {
        int timeout = -1;
        if (deadline && n) {
            int64_t left = deadline - mono_ns();
            if (left <= 0) {
                kill_all(groups, n, "the leadership's guarantee ran out");
                deadline = 0;
                continue;
            }
            /* Rounded down: a wake-up a hair early looks again; never late. */
            timeout = (int)(left / 1000000);
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, timeout);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            continue;
        msg m;
        ssize_t got = read(fd, &m, sizeof m);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof m) {
            /* End of file: the runner is gone. */
            if (n)
                kill_all(groups, n, "the process that ran it is gone");
            _exit(0);
        }
        switch (m.op) {
        case MSG_GUARD:
            if (m.pgid <= 1)
                break;
            if (n == cap) {
                size_t more = cap ? 2 * cap : 16;
                pid_t *g = realloc(groups, more * sizeof(*g));
                if (!g) {
                    /* Unguarded, the group could outlive its guarantee: better none run. */
                    kill_all(&(pid_t){m.pgid}, 1, "out of memory to guard it");
                    break;
                }
                groups = g;
                cap = more;
            }
            groups[n++] = m.pgid;
            break;
        case MSG_UNGUARD:
            for (size_t i = 0; i < n; i++) {
                if (groups[i] == m.pgid) {
                    groups[i] = groups[--n];
                    break;
                }
            }
            break;
        case MSG_DEADLINE:
            deadline = m.ns;
            break;
        case MSG_BYE:
            _exit(0);
        }
    }
}

int cli_leash_start(cli_leash **ret, const char *prefix)
{
    *ret = NULL;
    snprintf(line_prefix, sizeof(line_prefix), "%s", prefix ? prefix : "");
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return errno;
    cli_leash *l = calloc(1, sizeof *l);
    if (!l) {
        close(p[0]);
        close(p[1]);
        return ENOMEM;
    }
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        free(l);
        return e;
    }
    if (pid == 0) {
        /* Out of the runner's group and session: a Ctrl-C or SIGSTOP aimed at the runner's
         * group spares it.  Nothing but the pipe and stderr stays open. */
        setsid();
        prctl(PR_SET_NAME, "reign-leash");
        static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE};
        for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
            signal(ignored[i], SIG_IGN);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
        }
        if (dup2(p[0], 3) < 0)
            _exit(1);
        syscall(SYS_close_range, 4U, ~0U, 0U);
        leash_main(3);
        _exit(0);
    }
    close(p[0]);
    l->fd = p[1];
    l->pid = pid;
    /* A full pipe (the leash stuck) must not stall the runner's loop. */
    fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
    *ret = l;
    return 0;
}

static void send_msg(cli_leash *l, int op, pid_t pgid, int64_t ns)
{
    if (!l)
        return;
    msg m = {.op = op, .pgid = pgid, .ns = ns};
    ssize_t w;
    while ((w = write(l->fd, &m, sizeof m)) < 0 && errno == EINTR) {
    }
}

void cli_leash_guard(cli_leash *l, pid_t pgid)
{
    send_msg(l, MSG_GUARD, pgid, 0);
}

void cli_leash_unguard(cli_leash *l, pid_t pgid)
{
    send_msg(l, MSG_UNGUARD, pgid, 0);
}

void cli_leash_deadline(cli_leash *l, int64_t ns)
{
    send_msg(l, MSG_DEADLINE, 0, ns);
}

int cli_leash_begin(cli *c)
{
    char prefix[64];
    cli_prefix(c, reign_log_level_name(REIGN_LOG_WARN), prefix, sizeof(prefix));
    int e = cli_leash_start(&c->leash, prefix);
    if (e) {
        cli_error(c, "cannot start the leash of the command: %s", strerror(e));
        return CLI_EXIT_FAIL;
    }
    return 0;
}

int64_t cli_fence_margin_ns(cli *c)
{
    int64_t margin = (int64_t)reign_client_session_timeout_ms(c->client) * 100000; /* ms/10 */
    return margin < FENCE_MIN_MARGIN_NS ? FENCE_MIN_MARGIN_NS : margin;
}

void cli_leash_stop(cli_leash *l)
{
    if (!l)
        return;
    send_msg(l, MSG_BYE, 0, 0);
    close(l->fd);
    /* It is our child: reap it, so that it does not linger as a zombie while we run on. */
    waitpid(l->pid, NULL, 0);
    free(l);
}

void cli_leash_drop(cli_leash *l)
{
    if (!l)
        return;
    close(l->fd);
    free(l);
}
