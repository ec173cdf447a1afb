/*
 * child.c - a command tied to its group and to this process (child.h).
 */
#include "child.h"
#include "leash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* While the rest of a group dies: first look again after this, then less and less often. */
#define GROUP_WAIT_FIRST_MS 1
#define GROUP_WAIT_MAX_MS   50

char *cli_child_resolve(const char *name)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) < 0)
            return NULL;
        return strdup(name);
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    int err = ENOENT;
    for (const char *p = path;;) {
        size_t n = strcspn(p, ":");
        size_t len = n + strlen(name) + 2;
        char *cand = malloc(len);
        if (!cand)
            return NULL;
        snprintf(cand, len, "%.*s/%s", (int)n, n ? p : ".", name);
        if (access(cand, X_OK) == 0)
            return cand;
        if (errno == EACCES)
            err = EACCES;
        free(cand);
        if (!p[n])
            break;
        p += n + 1;
    }
    errno = err;
    return NULL;
}

static void handle_closed(uv_handle_t *h)
{
    cli_child *ch = h->data;
    /* Both handles are closed together; whichever's callback comes last reports (libuv runs
     * them last closed first, and on_exit may free the memory that holds ch). */
    if (--ch->closing > 0)
        return;
    close(ch->pidfd);
    ch->pidfd = -1;
    ch->pid = 0;
    ch->on_exit(ch, ch->status);
}

static void close_handles(cli_child *ch)
{
    ch->closing = 2;
    uv_close((uv_handle_t *)&ch->exit_watch, handle_closed);
    uv_close((uv_handle_t *)&ch->group_timer, handle_closed);
}

static void on_group_timer(uv_timer_t *t);

/* Kills what is left of the group; reports the exit once none of it runs. */
static void finish(cli_child *ch)
{
    int rc = reign_kill_group(ch->pid);
    if (rc == 1) {
        uv_timer_start(&ch->group_timer, on_group_timer, (uint64_t)ch->group_wait_ms, 0);
        if (ch->group_wait_ms < GROUP_WAIT_MAX_MS)
            ch->group_wait_ms *= 2;
        return;
    }
    if (rc < 0)
        cli_log(ch->c, REIGN_LOG_WARN, "cannot kill process group %d: %s", (int)ch->pid,
                reign_strerror(rc));
    if (ch->c->client)
        reign_client_unguard_pgid(ch->c->client, ch->pid);
    cli_leash_unguard(ch->c->leash, ch->pid);
    close_handles(ch);
}

static void on_group_timer(uv_timer_t *t)
{
    finish(t->data);
}

static void on_exit_ready(uv_poll_t *h, int status, int events)
{
    cli_child *ch = h->data;
    int st;
    pid_t r = waitpid(ch->pid, &st, WNOHANG);
    if (r == 0 || (r < 0 && errno == EINTR))
        return;
    uv_poll_stop(h);
    ch->exited = true;
    ch->status = r == ch->pid ? st : 0;
    /* The leader is reaped, but its group id stays taken while any member lives, and nothing
     * that runs is left once reign_kill_group() says so. */
    ch->group_wait_ms = GROUP_WAIT_FIRST_MS;
    finish(ch);
}

static int pidfd_of(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int cli_child_start(cli *c, cli_child *ch, const char *exe, char *const argv[], char *const env[],
                    const int fds[3], bool own_session, cli_child_exit_fn *on_exit)
{
    int go[2], report[2];
    if (pipe2(go, O_CLOEXEC) < 0)
        return errno;
    if (pipe2(report, O_CLOEXEC) < 0) {
        int e = errno;
        close(go[0]);
        close(go[1]);
        return e;
    }
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* Only async-signal-safe calls from here to execve. */
        sigset_t none;
        sigemptyset(&none);
        signal(SIGPIPE, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (own_session)
            setsid();
        else
            setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* this process died: so does the command */
        if (getppid() != parent)
            _exit(127);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Wait until the guardian knows the group (end of file: the parent died first). */
        char b;
        close(go[1]);
        if (read(go[0], &b, 1) != 1)
            _exit(127);
        for (int i = 0; i < 3; i++)
            if (fds[i] >= 0 && fds[i] != i)
                dup2(fds[i], i);
        execve(exe, argv, env);
        int e = errno;
        ssize_t w = write(report[1], &e, sizeof(e));
        (void)w;
        _exit(e == ENOENT ? 127 : 126);
    }
    int fork_err = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(go[0]);
    close(report[1]);
    if (pid < 0) {
        close(go[1]);
        close(report[0]);
        return fork_err;
    }
    /* The group is known to the guardian before the command runs a single instruction. */
    if (c->client)
        reign_client_guard_pgid(c->client, pid);
    cli_leash_guard(c->leash, pid);
    ssize_t w = write(go[1], "g", 1);
    (void)w;
    close(go[1]);
    int exec_err = 0;
    ssize_t n;
    while ((n = read(report[0], &exec_err, sizeof(exec_err))) < 0 && errno == EINTR) {
    }
    close(report[0]);
    if (n == (ssize_t)sizeof(exec_err)) {
        int st;
        waitpid(pid, &st, 0);
        if (c->client)
            reign_client_unguard_pgid(c->client, pid);
        cli_leash_unguard(c->leash, pid);
        return exec_err;
    }
    memset(ch, 0, sizeof(*ch));
    ch->c = c;
    ch->pid = pid;
    ch->on_exit = on_exit;
    ch->pidfd = pidfd_of(pid);
    if (ch->pidfd < 0) {
        /* Linux before 5.3: nothing to wait on; the command runs unwatched. */
        int e = errno;
        kill(-pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (c->client)
            reign_client_unguard_pgid(c->client, pid);
        cli_leash_unguard(c->leash, pid);
        return e;
    }
    uv_poll_init(&c->loop, &ch->exit_watch, ch->pidfd);
    uv_timer_init(&c->loop, &ch->group_timer);
    ch->exit_watch.data = ch->group_timer.data = ch;
    uv_poll_start(&ch->exit_watch, UV_READABLE, on_exit_ready);
    return 0;
}

void cli_child_close(cli_child *ch)
{
    if (!ch->pid || uv_is_closing((uv_handle_t *)&ch->group_timer))
        return;
    cli_child_signal(ch, SIGKILL);
    ch->status = -1;
    close_handles(ch);
}

void cli_child_signal(cli_child *ch, int sig)
{
    /* The command itself too, should it have left its group; only while it is not reaped, so
     * that its pid cannot name another process. */
    if (ch->pid > 0 && kill(-ch->pid, sig) < 0 && !ch->exited)
        kill(ch->pid, sig);
}
