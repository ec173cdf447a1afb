/*
 * reign-guardian - ends a dead libreign client's leaderships at once.
 *
 * libreign starts one per client (guardian.h says when and why) with:
 *   fd 3  its end of a SOCK_SEQPACKET socket pair: what to clean up (proto.h)
 *   fd 4  a pidfd of the client's process
 *   argv  reign-guardian CLIENT_PID   (for ps(1) and the log only)
 *
 * It first leaves its parent's process group and session and ignores the
 * signals a terminal or a service manager aims at a group (so a Ctrl-C or a
 * `kill 0` of the client's group spares it), forks once so that it is not
 * its client's child, and then waits.  It acts when, and only when, the
 * pidfd says the client's process has exited:
 *
 *   1. SIGKILL every process group it was given, and wait until none of their
 *      processes runs;
 *   2. end every leadership: write the end of each leadership's history
 *      record it was given (end=guardian, ended_ms now, at version 0: only if
 *      the leader has not written its own) and close the ZooKeeper session
 *      (its ephemeral nodes go, the successor's watch fires), on one
 *      connection, the writes first (on etcd: txns, then the lease's revoke,
 *      over the client's TLS and as its user); or release each lease the
 *      client held, by compare-and-set on owner, guid and term.
 *
 * A "bye" (the client resigned, freed its client or exited cleanly) makes it
 * leave without acting.  An end of file alone never makes it act: a client
 * that closed the socket may live on and keep leading; it waits a moment for
 * the pidfd (a dying process closes its descriptors before it is reported
 * dead) and leaves if the client still lives.  A stopped client (SIGSTOP, a
 * debugger) is alive: nothing happens.
 *
 * On MariaDB and PostgreSQL it connects to the store as soon as it is told of a first lease
 * or session, and keeps that connection idle until the end, so that a death costs the
 * statements only (checked with one round trip, made again if the server closed it); so a
 * guarded client holds two connections to its store.  A SQLite file is opened at death.
 *
 * Output: one line on stderr when it acts (or fails to), nothing otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <reign/process.h>

#include "etcd/etcd.h"
#include "guardian.h"
#include "proto.h"
#include "common/toollog.h"
#include "layout.h"
#include "sql/candidates.h"
#include "sql/history.h"
#include "sql/sessions.h"
#include "sql/sql.h"
#include "zk/zk.h"

#define SOCK_FD  3
#define PIDFD_FD 4
/* How long an end of file waits for the pidfd: a dying process closes its descriptors first,
 * and a multi-threaded one is reported dead once its last thread is gone. */
#define EOF_GRACE_MS 2000
/* A connection ahead that could not be made is tried again no sooner than this. */
#define AHEAD_RETRY_NS (10000 * REIGN__NS_PER_MS)

static struct {
    int client_pid;
    /* ZooKeeper */
    char *hosts;
    int64_t session;
    unsigned char passwd[16];
    int timeout_ms;
    reign__zk_access access; /* the terms' root; the credentials (secrets, never said); TLS */
    /* SQL */
    reign__gmsg sql; /* the last op=sql message, kept whole: target points into it */
    bool have_sql;
    reign__gset set; /* the leases to release, the groups to kill */
    /* MariaDB, PostgreSQL: a connection made once there is something to release, so that a
     * death costs the statements only, not a connection's set-up (a backend's start and SCRAM's
     * key stretching: tens of milliseconds).  NULL until then, or while it cannot be made. */
    reign__sqlconn *ahead;
    int64_t ahead_tried_ns; /* when it was last tried: at most once per AHEAD_RETRY_NS */
    /* The tables the connection ahead has read once (see warm_ahead()). */
    bool warm_sessions, warm_leases;
    bool bye;
} g;

static void say(const char *fmt, ...) REIGN__PRINTF(1, 2);
static void say(const char *fmt, ...)
{
    char prefix[48], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    snprintf(prefix, sizeof(prefix), "reign-guardian[%d]: ", (int)getpid());
    /* As the tools write theirs: the local time first, unless stderr is the journal. */
    toollog_line(REIGN_LOG_NOTICE, prefix, line);
}

static double ms_since(int64_t t0)
{
    return (double)(reign__now_ns() - t0) / 1e6;
}

/* ---- what the client tells ---------------------------------------------- */

static const reign__logger quiet_log = {0};

/* Connects to the SQL store, with the guardian's quiet logger.  0 or a negative code (err). */
static int sql_connect(reign__sqlconn **c, char *err, size_t errlen)
{
    g.sql.target.log = &quiet_log;
    return reign__sql_connect(c, &g.sql.target, err, errlen);
}

/* Makes the connection ahead, once there is something to release on a server store (SQLite's
 * file is opened at death: cheap, and the path may name another file by then). */
static void connect_ahead(void)
{
    if (g.ahead || !g.have_sql || g.sql.target.kind == REIGN__SQL_SQLITE)
        return;
    int64_t now = reign__now_ns();
    if (g.ahead_tried_ns && now - g.ahead_tried_ns < AHEAD_RETRY_NS)
        return;
    g.ahead_tried_ns = now;
    char err[512];
    if (sql_connect(&g.ahead, err, sizeof(err)) < 0)
        g.ahead = NULL; /* connected at death instead */
    g.warm_sessions = g.warm_leases = false;
}

/* Reads, on the connection ahead, the tables a death will write, changing nothing: a
 * PostgreSQL backend loads each table's description on its first use, and the first
 * statement of a connection costs a few milliseconds more again, which would otherwise be
 * paid after the death, before the watchers hear of it.  Once per kind of table. */
static void warm_ahead(void)
{
    char err[512];
    const char *dc = g.sql.dc ? g.sql.dc : "default";
    for (reign__glease *l = g.set.leases; g.ahead && l; l = l->next) {
        if (!strcmp(l->name, REIGN__GUARDIAN_SESSION)) {
            if (!g.warm_sessions)
                g.warm_sessions = reign__sessions_warm(g.ahead, dc, l->guid, err, sizeof(err)) == 0;
        } else if (!g.warm_leases) {
            reign__lease lease = {0};
            g.warm_leases =
                reign__sql_lease_read(g.ahead, dc, l->name, &lease, err, sizeof(err)) == 0;
            reign__lease_clear(&lease);
        }
    }
}

static void apply(reign__gmsg *m)
{
    switch (m->op) {
    case REIGN__GMSG_ZK:
        reign__free(g.hosts);
        g.hosts = reign__strdup(m->hosts);
        if (g.hosts && !strncmp(g.hosts, "etcd:", 5)) {
            /* Its HTTP library loaded now, not in the milliseconds after the client died. */
            char err[400];
            if (reign__etcd_end_prepare(g.hosts + 5, err, sizeof(err)) < 0)
                say("%s", err);
        }
        g.session = m->session;
        memcpy(g.passwd, m->passwd, sizeof(g.passwd));
        g.timeout_ms = m->timeout_ms;
        reign__gaccess_free(&g.access);
        if (reign__gaccess_copy(&g.access, &m->access) < 0)
            say("out of memory: the store's credentials and files forgotten");
        break;
    case REIGN__GMSG_SQL:
        if (g.have_sql)
            reign__gmsg_clear(&g.sql);
        reign__sql_close(g.ahead); /* made to the store told before */
        g.ahead = NULL;
        g.ahead_tried_ns = 0;
        g.sql = *m; /* takes the record over */
        memset(m, 0, sizeof(*m));
        g.have_sql = true;
        /* The store's client library now, not when the process dies: loading libpq and what it
         * links (OpenSSL, Kerberos, LDAP) takes tens of milliseconds, which every successor and
         * watcher would wait on. */
        char err[256];
        if (reign__sql_load(g.sql.target.kind, err, sizeof(err)) < 0)
            say("%s", err);
        return;
    case REIGN__GMSG_LEASE:
    case REIGN__GMSG_UNLEASE:
        if (reign__gset_lease(&g.set, m->op == REIGN__GMSG_LEASE, m->name, m->owner, m->guid) < 0)
            say("out of memory: lease %s forgotten", m->name);
        if (m->op == REIGN__GMSG_LEASE) {
            connect_ahead();
            warm_ahead();
        }
        break;
    case REIGN__GMSG_PGID:
    case REIGN__GMSG_UNPGID:
        if (reign__gset_pgid(&g.set, m->op == REIGN__GMSG_PGID, m->pgid) < 0)
            say("out of memory: process group %d forgotten", (int)m->pgid);
        break;
    case REIGN__GMSG_TERM:
    case REIGN__GMSG_UNTERM:
        if (reign__gset_term(&g.set, m->op == REIGN__GMSG_TERM, m->path, m->data, m->data_len) < 0)
            say("out of memory: history record %s forgotten", m->path);
        break;
    case REIGN__GMSG_BYE:
        g.bye = true;
        break;
    case REIGN__GMSG_HELLO:
        break; /* ours to send, not to receive */
    }
    reign__gmsg_clear(m);
}

/* Reads every message waiting.  1 at end of file, 0 when none is left, -1 on error. */
static int drain(void)
{
    static char buf[REIGN__GMSG_MAX + 1];
    for (;;) {
        ssize_t n = recv(SOCK_FD, buf, sizeof(buf), MSG_DONTWAIT);
        if (n == 0)
            return 1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : errno == EINTR ? 0 : -1;
        reign__gmsg m;
        char err[256];
        if (reign__gmsg_parse(buf, (size_t)n, &m, err, sizeof(err)) < 0)
            say("%s: dropped", err);
        else
            apply(&m);
        /* The secrets it held; not before apply(): a term's record points into buf. */
        explicit_bzero(buf, (size_t)n);
    }
}

/* ---- acting ------------------------------------------------------------- */

/* The longest any leadership of the client can outlive it: after that, acting is pointless. */
static int horizon_ms(void)
{
    if (g.hosts)
        return g.timeout_ms;
    return g.have_sql ? g.sql.timeout_ms : 60000;
}

/* SIGKILLs the groups; true once none of their processes runs. */
static bool kill_groups(char *report, size_t len)
{
    int64_t until = reign__now_ns() + (int64_t)horizon_ms() * REIGN__NS_PER_MS;
    size_t used = strlen(report);
    for (size_t i = 0; i < g.set.n_pgids; i++) {
        pid_t pgid = g.set.pgids[i];
        int rc;
        long pause_us = 200;
        while ((rc = reign_kill_group(pgid)) == 1) {
            if (reign__now_ns() > until) {
                snprintf(report + used, len - used, "process group %d still runs after %d ms; ",
                         (int)pgid, horizon_ms());
                return false;
            }
            struct timespec ts = {0, pause_us * 1000};
            nanosleep(&ts, NULL);
            if (pause_us < 10000)
                pause_us *= 2;
        }
        if (rc < 0)
            say("cannot kill process group %d: %s", (int)pgid, strerror(-rc));
        snprintf(report + used, len - used, "killed process group %d; ", (int)pgid);
        used = strlen(report);
    }
    return true;
}

/* Why a history record was not ended, as the guardian's line says it (with the record's path,
 * never the record itself). */
static const char *write_failure(int rc)
{
    switch (rc) {
    case 1:
        return "no answer";
    case REIGN_EBADVERSION:
        return "ended already, or the session gone";
    case REIGN_ENOENT:
        return "gone";
    case REIGN_EACCES:
    case REIGN_EAUTH:
        return "not allowed";
    case REIGN_ESESSION:
        return "the session had expired";
    default:
        return reign_err_name(rc);
    }
}

/*
 * The history records of the leaderships the client held, as they are to be written: each
 * record the client gave, with ended_ms set to now (this host's clock, as the client's own
 * end would have).  NULL if there are none (or no memory: the session matters more).
 */
static reign__zk_end_write *term_writes(reign__buf **bufs, size_t *n)
{
    size_t count = 0;
    for (reign__gterm *t = g.set.terms; t; t = t->next)
        count++;
    *n = 0;
    *bufs = NULL;
    if (!count)
        return NULL;
    reign__zk_end_write *w = reign__calloc(count, sizeof(*w));
    reign__buf *b = reign__calloc(count, sizeof(*b));
    if (!w || !b) {
        reign__free(w);
        reign__free(b);
        return NULL;
    }
    char now[24];
    snprintf(now, sizeof(now), "%lld", (long long)reign__wall_ms());
    for (reign__gterm *t = g.set.terms; t; t = t->next) {
        reign__record rec;
        reign__buf_init(&b[*n]);
        if (reign__record_parse(t->rec, t->len, &rec) < 0)
            continue; /* checked when told: cannot be */
        int rc = reign__record_build_with(&b[*n], &rec, REIGN__K_ENDED_MS, now);
        reign__record_clear(&rec);
        if (rc < 0 || b[*n].oom) {
            reign__buf_free(&b[*n]);
            continue;
        }
        w[*n] = (reign__zk_end_write){.path = t->path, .data = b[*n].data, .len = b[*n].len};
        (*n)++;
    }
    *bufs = b;
    return w;
}

static void end_zk(char *report, size_t len)
{
    char err[512] = "";
    size_t used = strlen(report);
    reign__buf *bufs = NULL;
    reign__zk_end e = {
        .hosts = g.hosts, .session = g.session, .timeout_ms = g.timeout_ms, .access = g.access};
    memcpy(e.passwd, g.passwd, sizeof(e.passwd));
    e.writes = term_writes(&bufs, &e.n_writes);
    int rc = reign__zk_end_session(&e, err, sizeof(err));
    explicit_bzero(e.passwd, sizeof(e.passwd));
    size_t ended = 0;
    for (size_t i = 0; i < e.n_writes; i++) {
        reign_trace("guardian.term", "%s %d", e.writes[i].path, e.writes[i].rc);
        ended += e.writes[i].rc == 0;
    }
    if (ended)
        snprintf(report + used, len - used, "ended %zu history record%s; ", ended,
                 ended == 1 ? "" : "s");
    used = strlen(report);
    if (rc == 1)
        snprintf(report + used, len - used, "%s 0x%llx; ",
                 strncmp(g.hosts, "etcd:", 5) ? "closed ZooKeeper session" : "revoked etcd lease",
                 (unsigned long long)g.session);
    else if (rc == 0)
        snprintf(report + used, len - used, "session 0x%llx had expired; ",
                 (unsigned long long)g.session);
    else
        snprintf(report + used, len - used, "cannot close session 0x%llx: %s; ",
                 (unsigned long long)g.session, err);
    /* Last, so that a long list cuts nothing else off the line. */
    for (size_t i = 0; i < e.n_writes; i++) {
        used = strlen(report);
        if (e.writes[i].rc != 0)
            snprintf(report + used, len - used, "history record %s not ended: %s; ",
                     e.writes[i].path, write_failure(e.writes[i].rc));
    }
    for (size_t i = 0; i < e.n_writes; i++)
        reign__buf_free(&bufs[i]);
    reign__free(bufs);
    reign__free(e.writes);
}

static void end_leases(char *report, size_t len)
{
    reign__sqlconn *c = g.ahead;
    char err[512] = "";
    size_t used = strlen(report);
    int rc = 0;
    g.ahead = NULL;
    /* The connection made ahead may have been closed since (a server restarted, an idle
     * timeout): one round trip says, and a new one is made if so. */
    if (c && reign__sql_query(c, "checking the connection", "SELECT 1", NULL, 0, NULL, err,
                              sizeof(err)) < 0) {
        reign__sql_close(c);
        c = NULL;
    }
    if (!c)
        rc = sql_connect(&c, err, sizeof(err));
    if (rc < 0) {
        snprintf(report + used, len - used, "cannot release leases: %s; ", err);
        return;
    }
    const char *dc = g.sql.dc ? g.sql.dc : "default";
    for (reign__glease *l = g.set.leases; l; l = l->next) {
        if (!strcmp(l->name, REIGN__GUARDIAN_SESSION)) {
            /* The client's session: its group members go with it, in one transaction. */
            rc = reign__sessions_end(c, dc, l->guid, -1, err, sizeof(err));
            reign_trace("guardian.ended", "session %s %d", l->guid, rc);
            used = strlen(report);
            if (rc == 1)
                snprintf(report + used, len - used, "ended session %s; ", l->guid);
            else if (rc < 0)
                snprintf(report + used, len - used, "cannot end session %s: %s; ", l->guid, err);
            continue;
        }
        reign__lease_claim cl = {
            .dc = dc, .name = l->name, .owner = l->owner, .owner_guid = l->guid};
        uint64_t term = 0;
        /* The history's end first (sql/history.h), as its holder would have written it before
         * letting go: only an open row of this standing's leadership changes.  No table, or a
         * failure, must not keep the lease from being released. */
        char herr[256];
        (void)reign__history_guardian(c, dc, l->name, l->guid, herr, sizeof herr);
        rc = reign__sql_lease_release_ours(c, &cl, &term, err, sizeof(err));
        used = strlen(report);
        if (rc == 1)
            snprintf(report + used, len - used, "released %s term %llu; ", l->name,
                     (unsigned long long)term);
        else if (rc < 0)
            snprintf(report + used, len - used, "cannot release %s: %s; ", l->name, err);
    }
    /* After the leases, which a successor waits for: listed candidates (election.h's
     * options.listed) have a row of each standing too, else gone one lease later.  Looked for
     * only where the table exists, so that no store logs a missing table. */
    reign__sql_rows cols;
    bool listed =
        reign__sql_side_columns(c, REIGN__SQL_CANDIDATES_SUFFIX, &cols, err, sizeof(err)) == 0 &&
        cols.n_rows > 0;
    reign__sql_rows_free(&cols);
    for (reign__glease *l = g.set.leases; listed && l; l = l->next)
        if (strcmp(l->name, REIGN__GUARDIAN_SESSION))
            (void)reign__candidates_leave(c, dc, l->name, l->guid, err, sizeof(err));
    reign__sql_close(c);
}

static int act(int64_t died_ns)
{
    char report[2048] = "";
    reign_trace("guardian.died", "%d", (int)g.client_pid);
    bool gone = kill_groups(report, sizeof(report));
    if (gone && g.hosts && g.session)
        end_zk(report, sizeof(report));
    if (gone && g.have_sql && g.set.leases)
        end_leases(report, sizeof(report));
    if (!gone)
        strncat(report, "leaderships left to expire; ", sizeof(report) - strlen(report) - 1);
    size_t n = strlen(report);
    if (n >= 2)
        report[n - 2] = '\0';
    if (n)
        say("process %d died: %s (%.1f ms)", g.client_pid, report, ms_since(died_ns));
    return gone ? 0 : 1;
}

/* ---- main --------------------------------------------------------------- */

static bool is_open(int fd)
{
    return fcntl(fd, F_GETFD) >= 0;
}

int main(int argc, char **argv)
{
    if (argc != 2 || !is_open(SOCK_FD) || !is_open(PIDFD_FD)) {
        fprintf(stderr, "reign-guardian: started by libreign only (see reign(1), GUARDIAN)\n");
        return 2;
    }
    g.client_pid = atoi(argv[1]);
    toollog_init();
    /* Whatever is aimed at the client's group or terminal is not for us. */
    static const int ignored[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT, SIGPIPE,
                                  SIGTSTP, SIGTTIN, SIGTTOU, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
        signal(ignored[i], SIG_IGN);
    /* Not the client's child: its wait() must never see us, and we outlive it anyway. */
    pid_t pid = fork();
    if (pid < 0) {
        say("fork: %s", strerror(errno));
        return 1;
    }
    if (pid > 0)
        _exit(0);
    setsid(); /* no-op if the spawn did it already */

    struct pollfd p[2] = {{.fd = SOCK_FD, .events = POLLIN}, {.fd = PIDFD_FD, .events = POLLIN}};
    int eof_wait = -1; /* how long to wait for the pidfd after an end of file; -1: no end yet */
    reign__buf hello;
    reign__buf_init(&hello);
    if (reign__gmsg_hello(&hello, getpid()) == 0)
        (void)send(SOCK_FD, hello.data, hello.len, MSG_NOSIGNAL | MSG_DONTWAIT);
    reign__buf_free(&hello);
    for (;;) {
        int n = poll(p, 2, eof_wait);
        if (n < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return 1;
        }
        if (p[1].revents) {
            int64_t died = reign__now_ns();
            /* Everything it sent before it died is still queued: read it first. */
            if (eof_wait < 0)
                drain();
            return g.bye ? 0 : act(died);
        }
        if (n == 0 && eof_wait >= 0) {
            say("process %d closed its end but lives on: leaving without acting", g.client_pid);
            return 0;
        }
        if (p[0].revents && eof_wait < 0) {
            int r = drain();
            if (g.bye)
                return 0;
            if (r != 0) {
                /* End of file: never act on it alone; wait for the pidfd a moment. */
                p[0].fd = -1;
                eof_wait = EOF_GRACE_MS;
            }
        }
    }
}
