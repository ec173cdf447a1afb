/*
 * guardian.c - starting a client's guardian and keeping it told (guardian.h).
 */
#include "guardian.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proto.h"

extern char **environ;

#ifndef REIGN__GUARDIAN_PATH
#define REIGN__GUARDIAN_PATH "/usr/local/libexec/reign/reign-guardian"
#endif
/* The helper relative to the library's directory, as installed (e.g. ../libexec/reign/...). */
#ifndef REIGN__GUARDIAN_REL
#define REIGN__GUARDIAN_REL "../libexec/reign/reign-guardian"
#endif
#define HELPER_NAME "reign-guardian"

/* A guardian that died is replaced at once, but no more often than this. */
#define RESTART_MIN_NS (1000 * REIGN__NS_PER_MS)
/* After a failed start, the next try comes later and later, up to this. */
#define RETRY_MAX_NS (60000 * REIGN__NS_PER_MS)

/* What the socket's owner may not be told again in a new guardian's environment. */
static const char *const secret_env[] = {"REIGN_PASSWORD=", "PGPASSWORD=", "MYSQL_PWD="};

struct reign__guardian {
    const reign__logger *log;
    reign__timers *timers;
    reign__timer restart_timer;
    int epoll_fd;
    int sock; /* -1 while none runs */
    dev_t sock_dev;
    ino_t sock_ino;
    pid_t pid; /* from its hello */
    int64_t started_ns;
    int64_t retry_ns; /* the pause before the next try after a failed start */
    bool failing;     /* the last start failed (logged once) */
    bool needed;      /* the client holds something: a guardian runs (or is being restarted) */
    reign__buf store; /* the last op=zk or op=sql message: holds secrets */
    reign__zk_access access; /* op=zk's: the tree's root, credentials (secrets), TLS files */
    reign__gset set;         /* the leases and groups it was told of */
    reign__buf msg;          /* scratch */
};

/* ---- the helper's path ------------------------------------------------------------------- */

static bool executable(const char *p)
{
    return access(p, X_OK) == 0;
}

const char *reign__guardian_helper(char *buf, size_t len)
{
    const char *env = secure_getenv("REIGN_GUARDIAN_PATH");
    if (env && *env)
        return env;
    /* Beside the library (an installed tree, wherever it was moved, or the build tree), so
     * that a relocated install and an uninstalled build find their own helper. */
    Dl_info di;
    if (dladdr((void *)reign__guardian_helper, &di) && di.dli_fname && di.dli_fname[0] == '/') {
        const char *slash = strrchr(di.dli_fname, '/');
        int dir = (int)(slash - di.dli_fname);
        snprintf(buf, len, "%.*s/%s", dir, di.dli_fname, REIGN__GUARDIAN_REL);
        if (executable(buf))
            return buf;
        snprintf(buf, len, "%.*s/%s", dir, di.dli_fname, HELPER_NAME);
        if (executable(buf))
            return buf;
    }
    return REIGN__GUARDIAN_PATH;
}

/* ---- talking ----------------------------------------------------------------------------- */

static void drop_socket(reign__guardian *g)
{
    if (g->sock < 0)
        return;
    epoll_ctl(g->epoll_fd, EPOLL_CTL_DEL, g->sock, NULL);
    close(g->sock);
    g->sock = -1;
    g->pid = 0;
}

/* Whether g->sock is still our socket: a program that closes descriptors it does not know may
 * have closed it, and the number may belong to another file by now. */
static bool still_ours(const reign__guardian *g)
{
    struct stat st;
    return g->sock >= 0 && fstat(g->sock, &st) == 0 && st.st_dev == g->sock_dev &&
           st.st_ino == g->sock_ino;
}

static void lost(reign__guardian *g, const char *what);

static void send_buf(reign__guardian *g, const reign__buf *b)
{
    if (g->sock < 0 || b->oom || !b->len)
        return;
    if (!still_ours(g)) {
        reign__guardian_check(g); /* says so and starts another, which is told everything */
        return;
    }
    /* Never blocks the loop: a guardian that does not read (stopped, wedged) is replaced. */
    if (send(g->sock, b->data, b->len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
        char what[128];
        snprintf(what, sizeof(what), ": %s", errno == EAGAIN ? "not reading" : strerror(errno));
        lost(g, what);
    }
}

static void tell_everything(reign__guardian *g)
{
    send_buf(g, &g->store);
    for (reign__glease *l = g->set.leases; l && g->sock >= 0; l = l->next)
        if (reign__gmsg_lease(&g->msg, true, l->name, l->owner, l->guid) == 0)
            send_buf(g, &g->msg);
    for (size_t i = 0; i < g->set.n_pgids && g->sock >= 0; i++)
        if (reign__gmsg_pgid(&g->msg, true, g->set.pgids[i]) == 0)
            send_buf(g, &g->msg);
    for (reign__gterm *t = g->set.terms; t && g->sock >= 0; t = t->next)
        if (reign__gmsg_term(&g->msg, true, t->path, t->rec, t->len) == 0)
            send_buf(g, &g->msg);
}

/* ---- spawning ---------------------------------------------------------------------------- */

static int pidfd_self(void)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, getpid(), 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* Our environment without the passwords a user may have put there. */
static char **helper_env(void)
{
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = reign__calloc(n + 1, sizeof(*env));
    if (!env)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool secret = false;
        for (size_t k = 0; k < sizeof(secret_env) / sizeof(secret_env[0]); k++)
            secret |= !strncmp(environ[i], secret_env[k], strlen(secret_env[k]));
        if (!secret)
            env[m++] = environ[i];
    }
    return env;
}

static int spawn(reign__guardian *g, char *err, size_t errlen)
{
    char pathbuf[4096], pidarg[16];
    const char *path = reign__guardian_helper(pathbuf, sizeof(pathbuf));
    if (!executable(path)) {
        reign__errf(err, errlen, "no guardian helper at %s: %s (REIGN_GUARDIAN_PATH names another)",
                    path, strerror(errno));
        return REIGN_ENOTSUP;
    }
    int sv[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        reign__errf(err, errlen, "socketpair: %s", strerror(errno));
        return -errno;
    }
    int pidfd = pidfd_self();
    if (pidfd < 0) {
        int e = errno;
        reign__errf(err, errlen, "pidfd_open: %s (Linux 5.3 or later is needed)", strerror(e));
        close(sv[0]);
        close(sv[1]);
        return e == ENOSYS ? REIGN_ENOTSUP : -e;
    }
    snprintf(pidarg, sizeof(pidarg), "%d", (int)getpid());
    char *argv[] = {(char *)HELPER_NAME, pidarg, NULL};
    char **env = helper_env();

    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
    posix_spawn_file_actions_adddup2(&fa, pidfd, 4);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&fa, 5);
#endif
    /* Its own session (so a terminal's or a group's signals miss it), no inherited mask, every
     * handler back to the default (those the helper ignores, it ignores itself). */
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = 0;
    int rc = env ? posix_spawn(&pid, path, &fa, &attr, argv, env) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    reign__free(env);
    close(sv[1]);
    close(pidfd);
    if (rc != 0) {
        reign__errf(err, errlen, "cannot start %s: %s", path, strerror(rc));
        close(sv[0]);
        return -rc;
    }
    /* The helper forks at once and its first process exits: reap that one. */
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (w == pid && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        reign__errf(err, errlen, "%s failed at start (status %d)", path, status);
        close(sv[0]);
        return REIGN_EBACKEND;
    }
    struct stat st;
    struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = g}};
    if (fstat(sv[0], &st) < 0 || epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, sv[0], &ev) < 0) {
        reign__errf(err, errlen, "epoll: %s", strerror(errno));
        close(sv[0]);
        return -errno;
    }
    g->sock = sv[0];
    g->sock_dev = st.st_dev;
    g->sock_ino = st.st_ino;
    g->pid = 0;
    g->started_ns = reign__now_ns();
    return 0;
}

/* A start that failed: warned about once, tried again later and later. */
static void failed_start(reign__guardian *g, const char *err)
{
    if (!g->failing)
        reign__log(g->log, REIGN_LOG_WARN,
                   "guardian: %s; going on without one (takeover after a crash waits for the "
                   "session or lease to expire), trying again later",
                   err);
    g->failing = true;
    g->retry_ns = g->retry_ns ? g->retry_ns * 2 : RESTART_MIN_NS;
    if (g->retry_ns > RETRY_MAX_NS)
        g->retry_ns = RETRY_MAX_NS;
    reign__timer_start(g->timers, &g->restart_timer, reign__now_ns() + g->retry_ns);
}

static void restart_cb(reign__timer *t, void *arg)
{
    reign__guardian *g = arg;
    char err[512];
    if (g->sock >= 0)
        return;
    int rc = spawn(g, err, sizeof(err));
    if (rc < 0) {
        failed_start(g, err);
        return;
    }
    /* Started, not yet running: that is its hello (reign__guardian_check). */
    tell_everything(g);
}

static void schedule_restart(reign__guardian *g)
{
    if (reign__timer_armed(&g->restart_timer))
        return;
    int64_t at = g->started_ns + RESTART_MIN_NS;
    int64_t now = reign__now_ns();
    reign__timer_start(g->timers, &g->restart_timer, at > now ? at : now);
}

/* The guardian went away (or stopped reading).  One that never said hello never ran: a helper
 * that is no guardian, or one that cannot run here.  That is a failed start, warned about once
 * and tried again later and later, not a death to report every second. */
static void lost(reign__guardian *g, const char *what)
{
    bool ran = g->pid != 0;
    if (ran)
        reign__log(g->log, REIGN_LOG_WARN, "guardian (pid %d)%s; starting another", (int)g->pid,
                   what);
    drop_socket(g);
    if (ran) {
        schedule_restart(g);
    } else {
        char buf[4096], err[4200];
        snprintf(err, sizeof(err), "%s ended before it said hello",
                 reign__guardian_helper(buf, sizeof(buf)));
        failed_start(g, err);
    }
}

int reign__guardian_new(reign__guardian **ret, int epoll_fd, const reign__logger *log,
                        reign__timers *timers)
{
    *ret = NULL;
    reign__guardian *g = reign__calloc(1, sizeof(*g));
    if (!g)
        return REIGN_ENOMEM;
    g->log = log;
    g->timers = timers;
    g->epoll_fd = epoll_fd;
    g->sock = -1;
    reign__buf_init(&g->store);
    reign__buf_init(&g->msg);
    reign__timer_init(&g->restart_timer, restart_cb, g);
    *ret = g;
    return 0;
}

void reign__guardian_need(reign__guardian *g)
{
    if (g->needed)
        return;
    g->needed = true;
    restart_cb(&g->restart_timer, g); /* a failure is logged once, and tried again later */
}

void reign__guardian_free(reign__guardian *g)
{
    if (!g)
        return;
    if (g->sock >= 0 && reign__gmsg_bye(&g->msg) == 0)
        send_buf(g, &g->msg);
    drop_socket(g);
    reign__timer_stop(g->timers, &g->restart_timer);
    reign__gset_free(&g->set);
    if (g->store.data)
        explicit_bzero(g->store.data, g->store.len);
    reign__buf_free(&g->store);
    reign__gaccess_free(&g->access);
    reign__buf_free(&g->msg);
    reign__free(g);
}

/* ---- what the client tells --------------------------------------------------------------- */

static void set_store(reign__guardian *g, reign__buf *fresh)
{
    if (g->store.data)
        explicit_bzero(g->store.data, g->store.len);
    reign__buf_free(&g->store);
    g->store = *fresh;
    send_buf(g, &g->store);
}

int reign__guardian_zk_tree(reign__guardian *g, const char *root, const char *user,
                            const char *password)
{
    char *auth = NULL;
    if (user) {
        size_t n = strlen(user) + strlen(password ? password : "") + 2;
        if (!(auth = reign__malloc(n)))
            return REIGN_ENOMEM;
        snprintf(auth, n, "%s:%s", user, password ? password : "");
    }
    reign__zk_access a = {.root = root && *root ? root : NULL, .auth = auth};
    reign__gaccess_free(&g->access);
    int rc = reign__gaccess_copy(&g->access, &a);
    if (auth)
        explicit_bzero(auth, strlen(auth));
    reign__free(auth);
    return rc;
}

/* A TLS file's path as the guardian is to read it: absolute, resolved now, because a guardian
 * started again later starts in the directory the client is in by then.  One that cannot be
 * resolved (gone since the URI was read) is passed on as it is: the guardian's POSTs then fail
 * as the client's own would. */
static const char *absolute(const char *path, char *buf)
{
    return !path || path[0] == '/' || !realpath(path, buf) ? path : buf;
}

int reign__guardian_etcd_tree(reign__guardian *g, const char *prefix, const char *user,
                              const char *password, const reign__zk_tls *tls, bool gateway)
{
    char ca[PATH_MAX], cert[PATH_MAX], key[PATH_MAX];
    reign__zk_access a = {
        .root = prefix && *prefix ? prefix : NULL,
        .user = user,
        .password = user ? (password ? password : "") : NULL,
        .tls = {absolute(tls->ca, ca), absolute(tls->cert, cert), absolute(tls->key, key)},
        .api = gateway ? "gateway" : NULL};
    reign__gaccess_free(&g->access);
    return reign__gaccess_copy(&g->access, &a);
}

void reign__guardian_zk(reign__guardian *g, const char *hosts, int64_t session,
                        const unsigned char passwd[16], int timeout_ms)
{
    reign__buf b;
    reign__buf_init(&b);
    int rc = reign__gmsg_zk(&b, hosts, session, passwd, timeout_ms, &g->access);
    if (rc == 0) {
        set_store(g, &b);
        return;
    }
    if (b.data)
        explicit_bzero(b.data, b.cap);
    reign__buf_free(&b);
    if (rc == REIGN_E2BIG) /* the hosts and the TLS files' paths: the guardian reads no more */
        reign__log(g->log, REIGN_LOG_WARN,
                   "guardian: the store's address and files take more than %d bytes: a killed "
                   "process's session ends with its timeout",
                   REIGN__GMSG_MAX);
}

void reign__guardian_sql(reign__guardian *g, const reign__sql_target *t, const char *dc,
                         int lease_ms)
{
    reign__buf b;
    reign__buf_init(&b);
    if (reign__gmsg_sql(&b, t, dc, lease_ms) == 0)
        set_store(g, &b);
    else
        reign__buf_free(&b);
}

void reign__guardian_lease(reign__guardian *g, bool add, const char *name, const char *owner,
                           const char *guid)
{
    if (add)
        reign__guardian_need(g);
    if (reign__gset_lease(&g->set, add, name, owner, guid) == 1 &&
        reign__gmsg_lease(&g->msg, add, name, owner, guid) == 0)
        send_buf(g, &g->msg);
}

void reign__guardian_term(reign__guardian *g, bool add, const char *path, const void *rec,
                          size_t len)
{
    if (reign__gset_term(&g->set, add, path, rec, len) == 1 &&
        reign__gmsg_term(&g->msg, add, path, rec, len) == 0)
        send_buf(g, &g->msg);
}

int reign__guardian_pgid(reign__guardian *g, bool add, pid_t pgid)
{
    if (add)
        reign__guardian_need(g);
    int rc = reign__gset_pgid(&g->set, add, pgid);
    if (rc == 1 && (rc = reign__gmsg_pgid(&g->msg, add, pgid)) == 0)
        send_buf(g, &g->msg);
    return rc < 0 ? rc : 0;
}

void reign__guardian_check(reign__guardian *g)
{
    if (g->sock < 0)
        return;
    if (!still_ours(g)) {
        /* The program closed it (one that closes every descriptor it does not know): the
         * guardian sees an end of file, waits a moment for our death and leaves. */
        reign__log(g->log, REIGN_LOG_WARN,
                   "guardian: its socket was closed by someone else; starting another");
        g->sock = -1; /* the number may be another file's by now: not ours to close */
        g->pid = 0;
        schedule_restart(g);
        return;
    }
    char buf[512];
    for (;;) {
        ssize_t n = recv(g->sock, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            reign__gmsg m;
            char err[256];
            if (reign__gmsg_parse(buf, (size_t)n, &m, err, sizeof(err)) == 0 &&
                m.op == REIGN__GMSG_HELLO) {
                g->pid = m.pgid;
                if (g->failing)
                    reign__log(g->log, REIGN_LOG_NOTICE, "guardian: started again");
                g->failing = false;
                g->retry_ns = 0;
                reign__log(g->log, REIGN_LOG_DEBUG, "guardian: pid %d watches pid %d", (int)g->pid,
                           (int)getpid());
            }
            reign__gmsg_clear(&m);
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            lost(g, " is gone");
        return;
    }
}

pid_t reign__guardian_pid(const reign__guardian *g)
{
    return g && g->sock >= 0 ? g->pid : 0;
}
