/*
 * test_sql_lease.c - integration tests of the SQL lease layer (src/sql/sql.h)
 * against real MariaDB and PostgreSQL servers and SQLite files.
 *
 * Usage: test_sql_lease MODE, one ctest entry per mode:
 *   sqlite              the helpers of sql.c, then the lease statements, schema, errors,
 *                       notification, the file deleted or replaced under its connections,
 *                       the guardian's release (release_ours) on a file,
 *                       and the runs table of slots (runs.h): its writes fenced by the
 *                       lease's term in the database itself
 *   mariadb, postgres   the same on the shared server ($REIGN_TEST_MARIADB_DIR,
 *                       $REIGN_TEST_PG_DIR), in tables of this run's own
 *   sqlite-concurrency  20 processes take and renew one lease in one file for a few seconds:
 *                       no error ever ("database is locked" included), and no term held by
 *                       two processes
 *   fault-mariadb, fault-postgres
 *                       a server of the test's own, restarted between two statements (the
 *                       next fails cleanly, a new connection works) and paused (a statement
 *                       and a connect give up within their timeouts)
 *
 * Nothing here waits for time to pass without a condition: waits poll a condition (the lease
 * expired by the database's clock, a descriptor readable) with a generous overall bound that
 * only a hang can reach.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "check.h"
#include "dialect.h"
#include "runs.h"
#include "sql.h"

#define WAIT_MS   60000 /* bound for anything that must happen; a correct run is far below */
#define SHORT_MS  300   /* a lease meant to run out */
#define LONG_MS   60000 /* a lease meant not to */
#define N_HAMMER  20
#define HAMMER_MS 3000

static int64_t now_ms(void)
{
    return reign_now_ns() / 1000000;
}

static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    fprintf(stderr, "  [%s] %s\n", reign_log_level_name(level), msg);
}

/* ---- environment -------------------------------------------------------------------------- */

typedef struct backend {
    reign__sql_kind kind;
    const char *name;
    const char *script; /* mariadb.sh, pg.sh */
    char dir[2048];     /* the server's state dir */
    char password[128];
    int port;
    char state[1024]; /* the test's own directory */
} backend;

static void mkdir_p(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    }
    if (mkdir(p, 0755) < 0 && errno != EEXIST)
        fail(__FILE__, __LINE__, "mkdir %s: %s", p, strerror(errno));
}

static void backend_load(backend *b)
{
    char port[16];
    read_file(b->dir, "password", b->password, sizeof b->password);
    read_file(b->dir, "port", port, sizeof port);
    b->port = atoi(port);
    CHECK(b->port > 0);
}

static void backend_init(backend *b, reign__sql_kind kind)
{
    memset(b, 0, sizeof *b);
    b->kind = kind;
    snprintf(b->state, sizeof b->state, "%s", need_env("REIGN_TEST_STATE_DIR"));
    mkdir_p(b->state);
    if (kind == REIGN__SQL_SQLITE) {
        b->name = "sqlite";
        return;
    }
    b->name = kind == REIGN__SQL_MARIADB ? "mariadb" : "postgres";
    b->script = kind == REIGN__SQL_MARIADB ? "mariadb.sh" : "pg.sh";
    snprintf(b->dir, sizeof b->dir, "%s",
             need_env(kind == REIGN__SQL_MARIADB ? "REIGN_TEST_MARIADB_DIR" : "REIGN_TEST_PG_DIR"));
    backend_load(b);
}

/* Runs `bash $REIGN_SCRIPTS/<script> <args...>`; its stdout into out (if given). */
static int run_script(const backend *b, char *out, size_t outlen, const char *const *args)
{
    char script[PATH_MAX];
    snprintf(script, sizeof script, "%s/%s", need_env("REIGN_SCRIPTS"), b->script);
    int fds[2];
    CHECK(pipe(fds) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        const char *argv[16] = {"bash", script};
        int i = 2;
        for (const char *const *a = args; *a && i < 15; a++)
            argv[i++] = *a;
        argv[i] = NULL;
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execvp("bash", (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0 && out && len + 1 < outlen) {
            size_t k = (size_t)n < outlen - 1 - len ? (size_t)n : outlen - 1 - len;
            memcpy(out + len, buf, k);
            len += k;
        }
    }
    if (out)
        out[len] = '\0';
    close(fds[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Runs SQL on the server as its administrator; the rows, tab-separated, into out. */
static void admin_sql(const backend *b, const char *sql, char *out, size_t outlen)
{
    const char *args[] = {"sql", b->dir, sql, NULL};
    if (run_script(b, out, outlen, args) != 0)
        fail(__FILE__, __LINE__, "%s sql failed: %s", b->script, sql);
}

static void server_cmd(const backend *b, const char *cmd)
{
    const char *args[] = {cmd, b->dir, NULL};
    say("%s %s", b->script, cmd);
    if (run_script(b, NULL, 0, args) != 0)
        fail(__FILE__, __LINE__, "%s %s failed", b->script, cmd);
}

/* The state letter of task `tid` of process `pid` ('T' when stopped), or 0 if it is gone. */
static char task_state(const char *pid, const char *tid)
{
    char path[600], buf[512];
    snprintf(path, sizeof path, "/proc/%s/task/%s/stat", pid, tid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after "pid (comm)" */
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether every thread of process `pid` is stopped; sets *ppid to its parent. */
static bool process_stopped(const char *pid, long *ppid)
{
    char path[320], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return true;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    *ppid = p ? strtol(p + 4, NULL, 10) : -1;
    snprintf(path, sizeof path, "/proc/%s/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return true;
    bool stopped = true;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char st = task_state(pid, e->d_name);
        if (st && st != 'T' && st != 't' && st != 'Z' && st != 'X')
            stopped = false;
    }
    closedir(d);
    return stopped;
}

/*
 * `pause-server` sends SIGSTOP and returns; the kernel stops the server's threads a moment
 * later (the one thread woken for the signal stops the others), and a loaded machine can
 * stretch that moment enough for a statement to be answered.  So wait until every thread of
 * the server and of its children (PostgreSQL's backends) is stopped.
 */
static void wait_paused(const backend *b)
{
    char pidbuf[32];
    read_file(b->dir, "pid", pidbuf, sizeof pidbuf);
    long server = atol(pidbuf);
    CHECK(server > 0);
    int64_t until = now_ms() + WAIT_MS;
    for (;;) {
        bool all = true;
        DIR *d = opendir("/proc");
        CHECK(d);
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] < '1' || e->d_name[0] > '9')
                continue;
            long ppid = -1, pid = atol(e->d_name);
            bool stopped = process_stopped(e->d_name, &ppid);
            if ((pid == server || ppid == server) && !stopped)
                all = false;
        }
        closedir(d);
        if (all)
            return;
        CHECK(now_ms() < until);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A target for the backend, with the given table (and, for SQLite, file under the state dir). */
static reign__sql_target target(const backend *b, const char *table, const char *file)
{
    static char path[8][PATH_MAX];
    static int next;
    reign__sql_target t = {.kind = b->kind, .table = table};
    if (b->kind == REIGN__SQL_SQLITE) {
        char *p = path[next++ % 8];
        snprintf(p, PATH_MAX, "%s/%s", b->state, file ? file : "lease.db");
        t.path = p;
    } else {
        t.host = "127.0.0.1";
        t.port = b->port;
        t.user = "reign";
        t.password = b->password;
        t.database = "reign";
    }
    t.connect_timeout_ms = 5000;
    t.statement_timeout_ms = 5000;
    return t;
}

static reign__sqlconn *connect_ok(const reign__sql_target *t)
{
    reign__sqlconn *c = NULL;
    err[0] = '\0';
    CHECK_RC(reign__sql_connect(&c, t, err, sizeof err), 0);
    CHECK(c != NULL);
    CHECK(reign__sql_kind_of(c) == t->kind);
    return c;
}

static void remove_db(const char *path)
{
    char p[PATH_MAX + 8];
    unlink(path);
    snprintf(p, sizeof p, "%s-wal", path);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", path);
    unlink(p);
}

/* ---- the lease protocol ------------------------------------------------------------------- */

static reign__lease_claim claim(const char *name, const char *owner, const char *guid,
                                int64_t duration_ms)
{
    reign__lease_claim cl = {
        .dc = "dc1", .name = name, .owner = owner, .owner_guid = guid, .duration_ms = duration_ms};
    return cl;
}

static void read_ok(reign__sqlconn *c, const char *name, reign__lease *l)
{
    CHECK_RC(reign__sql_lease_read(c, "dc1", name, l, err, sizeof err), 0);
}

/*
 * PostgreSQL prepares a statement on its second use on a connection.  Prepared statements
 * discarded under it (DISCARD ALL, as a pooler may run): the one statement that finds its
 * statement gone fails, the following ones are prepared again and work.
 */
static void test_prepared_discarded(reign__sqlconn *c)
{
    reign__lease_claim a = claim("prepared", "p1", "gp1", 60000);
    CHECK_RC(reign__sql_lease_insert(c, &a, err, sizeof err), 1);
    reign__lease l = {0};
    for (int i = 0; i < 3; i++) { /* unprepared, then prepared, then prepared already */
        read_ok(c, "prepared", &l);
        CHECK(l.exists && !strcmp(l.owner, "p1"));
        reign__lease_clear(&l);
    }
    CHECK_RC(reign__sql_query(c, "discarding", "DISCARD ALL", NULL, 0, NULL, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_read(c, "dc1", "prepared", &l, err, sizeof err), REIGN_EBACKEND);
    CHECK(strstr(err, "26000") != NULL);
    for (int i = 0; i < 3; i++) {
        read_ok(c, "prepared", &l);
        CHECK(l.exists && !strcmp(l.owner, "p1"));
        reign__lease_clear(&l);
    }
    say("%s: prepared statements discarded under the connection: one error, then prepared again",
        "postgres");
}

/* Polls the lease until the database says it expired. */
static void wait_expired(reign__sqlconn *c, const char *name)
{
    reign__lease l = {0};
    int64_t until = now_ms() + WAIT_MS;
    int reads = 0;
    for (;;) {
        read_ok(c, name, &l);
        reads++;
        CHECK(l.exists);
        if (l.db_expired)
            break;
        CHECK(now_ms() < until);
        /* Not expired: by the database's own numbers, it must not be due yet. */
        CHECK(l.db_now_ms < l.modified_ms + l.duration_ms);
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    CHECK(l.db_now_ms >= l.modified_ms + l.duration_ms);
    say("lease %s expired by the database's clock after %d reads", name, reads);
    reign__lease_clear(&l);
}

static void test_protocol(reign__sqlconn *c, const char *tag)
{
    char n1[96], n2[96];
    snprintf(n1, sizeof n1, "%s-long-%d", tag, (int)getpid());
    snprintf(n2, sizeof n2, "%s-short-%d", tag, (int)getpid());
    static const unsigned char bin[] = {'A', 0, 'B', 0xff, 0, 0x80, '\n', 0};
    reign__lease l = {0};
    uint64_t term = 0;

    /* A row that does not exist. */
    read_ok(c, n1, &l);
    CHECK(!l.exists);

    /* insert, then insert again: the row is there, nothing changes. */
    reign__lease_claim a = claim(n1, "alice", "guid-alice-1", LONG_MS);
    a.payload = bin;
    a.payload_len = sizeof bin;
    reign__lease_claim b = claim(n1, "bob", "guid-bob-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &a, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_insert(c, &a, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_insert(c, &b, err, sizeof err), 0);

    read_ok(c, n1, &l);
    CHECK(l.exists);
    CHECK(!strcmp(l.owner, "alice"));
    CHECK(!strcmp(l.owner_guid, "guid-alice-1"));
    CHECK(l.term == 1);
    CHECK(l.term_duration == 0);
    CHECK(l.duration_ms == LONG_MS);
    CHECK(!l.db_expired && !l.released);
    CHECK(l.payload_len == sizeof bin && !memcmp(l.payload, bin, sizeof bin));
    CHECK(l.created_ms == l.modified_ms);
    /* Written rounded up to the millisecond: at most 1 ms after the database's clock. */
    CHECK(l.modified_ms <= l.db_now_ms + 1);
    /* The database's clock and ours: the same machine, so within a minute of each other. */
    CHECK(llabs(l.db_now_ms - (int64_t)time(NULL) * 1000) < 60000);

    /* renew: by the owner (1), by the same owner id with another guid (0), at a wrong term (0),
     * by another owner (0). */
    CHECK_RC(reign__sql_lease_renew(c, &a, 1, err, sizeof err), 1);
    reign__lease_claim a2 = claim(n1, "alice", "guid-alice-2", LONG_MS);
    CHECK_RC(reign__sql_lease_renew(c, &a2, 1, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_renew(c, &a, 2, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_renew(c, &b, 1, err, sizeof err), 0);
    read_ok(c, n1, &l);
    CHECK(l.term == 1 && l.term_duration == 1 && !strcmp(l.owner_guid, "guid-alice-1"));
    CHECK(l.modified_ms >= l.created_ms);

    /* take at a version that moved on (alice renewed since: term_duration 1), or of a
     * released lease only while it is held: 0, and nothing changed. */
    term = 99;
    b.expect_renewals = 0;
    CHECK_RC(reign__sql_lease_take(c, &b, 1, &term, err, sizeof err), 0);
    b.expect_renewals = 1;
    b.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &b, 1, &term, err, sizeof err), 0);
    CHECK(term == 99);
    read_ok(c, n1, &l);
    CHECK(!strcmp(l.owner, "alice") && l.term == 1 && l.term_duration == 1 && !l.released);

    /* release by someone else, or by another guid: 0. */
    CHECK_RC(reign__sql_lease_release(c, &b, 1, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_release(c, &a2, 1, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_release(c, &a, 2, err, sizeof err), 0);
    read_ok(c, n1, &l);
    CHECK(!l.db_expired && !l.released);

    /* A short lease, left to run out by the database's clock: people see it so, but no clock
     * decides - its holder may renew it while nobody took it over, and a take is a
     * compare-and-set on the version the taker saw. */
    reign__lease_claim s_a = claim(n2, "alice", "guid-alice-1", SHORT_MS);
    reign__lease_claim s_b = claim(n2, "bob", "guid-bob-1", LONG_MS);
    s_b.payload = "bob's";
    s_b.payload_len = 5;
    reign__lease_claim s_c = claim(n2, "carol", "guid-carol-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &s_a, err, sizeof err), 1);
    wait_expired(c, n2);
    CHECK_RC(reign__sql_lease_renew(c, &s_a, 1, err, sizeof err), 1);
    s_b.expect_renewals = 0;
    CHECK_RC(reign__sql_lease_take(c, &s_b, 1, &term, err, sizeof err), 0);
    s_b.expect_renewals = 1;
    CHECK_RC(reign__sql_lease_take(c, &s_b, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    read_ok(c, n2, &l);
    CHECK(!strcmp(l.owner, "bob") && !strcmp(l.owner_guid, "guid-bob-1"));
    CHECK(l.term == 2 && l.term_duration == 0 && l.duration_ms == LONG_MS);
    CHECK(l.payload_len == 5 && !memcmp(l.payload, "bob's", 5));
    CHECK(!l.db_expired && !l.released);
    /* take again with the old expected term: the term moved on. */
    CHECK_RC(reign__sql_lease_take(c, &s_c, 1, &term, err, sizeof err), 0);
    /* The old holder's renewal is fenced by its term. */
    CHECK_RC(reign__sql_lease_renew(c, &s_a, 1, err, sizeof err), 0);

    /* release, then another takes at once (a released lease, whatever its term_duration). */
    CHECK_RC(reign__sql_lease_release(c, &s_b, 2, err, sizeof err), 1);
    read_ok(c, n2, &l);
    CHECK(l.released && l.duration_ms == 0 && l.db_expired);
    CHECK(!strcmp(l.owner, "bob") && l.term == 2);
    CHECK_RC(reign__sql_lease_renew(c, &s_b, 2, err, sizeof err), 0);
    s_c.take_released = true;
    s_c.expect_renewals = 42;
    CHECK_RC(reign__sql_lease_take(c, &s_c, 2, &term, err, sizeof err), 1);
    CHECK(term == 3);
    CHECK_RC(reign__sql_lease_renew(c, &s_c, 3, err, sizeof err), 1);
    s_b.expect_renewals = 0; /* a version carol's renewal moved on from */
    CHECK_RC(reign__sql_lease_take(c, &s_b, 3, &term, err, sizeof err), 0);
    read_ok(c, n2, &l);
    CHECK(!strcmp(l.owner, "carol") && l.term == 3 && l.term_duration == 1 && !l.released);
    CHECK(l.payload == NULL && l.payload_len == 0); /* carol has no payload */

    /* A large payload with every byte value. */
    size_t big_len = 300000;
    unsigned char *big = malloc(big_len);
    CHECK(big);
    for (size_t i = 0; i < big_len; i++)
        big[i] = (unsigned char)(i * 7 + i / 251);
    CHECK_RC(reign__sql_lease_release(c, &s_c, 3, err, sizeof err), 1);
    reign__lease_claim s_d = claim(n2, "dave", "guid-dave-1", LONG_MS);
    s_d.payload = big;
    s_d.payload_len = big_len;
    s_d.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &s_d, 3, &term, err, sizeof err), 1);
    read_ok(c, n2, &l);
    CHECK(l.payload_len == big_len && !memcmp(l.payload, big, big_len));
    free(big);

    /* Data center is part of the key. */
    reign__lease_claim other_dc = a;
    other_dc.dc = "dc2";
    CHECK_RC(reign__sql_lease_insert(c, &other_dc, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_read(c, "dc2", n1, &l, err, sizeof err), 0);
    CHECK(l.exists && l.term == 1 && l.term_duration == 0);

    /* Names are compared byte for byte (MariaDB's default collation would not). */
    char upper[96];
    snprintf(upper, sizeof upper, "%s", n1);
    upper[0] = (char)(upper[0] - 32);
    reign__lease_claim up = claim(upper, "erin", "guid-erin-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &up, err, sizeof err), 1);
    read_ok(c, upper, &l);
    CHECK(!strcmp(l.owner, "erin"));
    read_ok(c, n1, &l);
    CHECK(!strcmp(l.owner, "alice"));

    /* A UTF-8 name and owner. */
    reign__lease_claim u = claim("m\xc3\xa4\xc3\xa4ritt\xc3\xa4j\xc3\xa4-\xe2\x9c\x93",
                                 "\xc3\xa5sa", "guid-asa-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &u, err, sizeof err), 1);
    read_ok(c, u.name, &l);
    CHECK(l.exists && !strcmp(l.owner, u.owner));

    /* Bad arguments change nothing and say what is wrong. */
    reign__lease_claim bad = a;
    bad.owner = "";
    CHECK_RC(reign__sql_lease_insert(c, &bad, err, sizeof err), REIGN_EINVAL);
    CHECK(strstr(err, "owner"));
    bad = a;
    bad.name = "bad\nname";
    CHECK_RC(reign__sql_lease_renew(c, &bad, 1, err, sizeof err), REIGN_EINVAL);
    bad = a;
    bad.duration_ms = 0;
    CHECK_RC(reign__sql_lease_take(c, &bad, 1, &term, err, sizeof err), REIGN_EINVAL);
    bad = a;
    bad.payload_len = REIGN_DATA_MAX + 1;
    CHECK_RC(reign__sql_lease_insert(c, &bad, err, sizeof err), REIGN_E2BIG);
    bad = a;
    bad.dc = "\xff\xfe";
    CHECK_RC(reign__sql_lease_insert(c, &bad, err, sizeof err), REIGN_EINVAL);

    reign__lease_clear(&l);
    CHECK(reign__sql_statements(c) > 30);
    say("lease protocol: ok (%llu statements)", (unsigned long long)reign__sql_statements(c));
}

/* Polls the lease until the database's clock is a few milliseconds past its gmt_modified, so
 * that a statement which wrote the time (as depose must not) would show. */
static void wait_clock_past(reign__sqlconn *c, const char *name)
{
    reign__lease l = {0};
    int64_t until = now_ms() + WAIT_MS;
    for (;;) {
        read_ok(c, name, &l);
        CHECK(l.exists);
        if (l.db_now_ms >= l.modified_ms + 3)
            break;
        CHECK(now_ms() < until);
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    reign__lease_clear(&l);
}

/* depose: a live lease gets the mark and nothing else; its holder is fenced off but may release
 * it with the mark; nobody can take it before that (or before it runs out). */
static void test_depose(reign__sqlconn *c, const char *tag)
{
    char n1[96], n2[96], n3[96];
    snprintf(n1, sizeof n1, "%s-depose-%d", tag, (int)getpid());
    snprintf(n2, sizeof n2, "%s-depose-short-%d", tag, (int)getpid());
    snprintf(n3, sizeof n3, "%s-depose-none-%d", tag, (int)getpid());
    reign__lease before = {0}, l = {0};
    uint64_t term = 0;

    reign__lease_claim h = claim(n1, "henry", "guid-henry-1", LONG_MS);
    h.payload = "henry's";
    h.payload_len = 7;
    reign__lease_claim f = claim(n1, "fiona", "guid-fiona-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &h, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_renew(c, &h, 1, err, sizeof err), 1);
    wait_clock_past(c, n1);
    read_ok(c, n1, &before);

    /* At a wrong term, or in another data center: 0, nothing changed. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 2, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 0, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_depose(c, "dc2", n1, 1, err, sizeof err), 0);
    read_ok(c, n1, &l);
    CHECK(!strcmp(l.owner_guid, "guid-henry-1"));

    /* The live lease at its term: 1; only the guid changed (gmt_modified too stays). */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 1, err, sizeof err), 1);
    read_ok(c, n1, &l);
    CHECK(l.exists && !l.released);
    CHECK(!strcmp(l.owner_guid, REIGN__SQL_DEPOSED));
    CHECK(!strcmp(l.owner, "henry") && l.term == 1 && l.term_duration == before.term_duration);
    CHECK(l.duration_ms == LONG_MS && l.modified_ms == before.modified_ms);
    CHECK(l.created_ms == before.created_ms);
    CHECK(l.payload_len == 7 && !memcmp(l.payload, "henry's", 7));
    /* Deposing again is harmless, and says so. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 1, err, sizeof err), 1);

    /* The holder's next renew fails on the guid; a follower cannot take the lease as released,
     * nor at a version it did not see, nor insert a row of its own. */
    CHECK_RC(reign__sql_lease_renew(c, &h, 1, err, sizeof err), 0);
    term = 99;
    f.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &f, 1, &term, err, sizeof err), 0);
    f.take_released = false;
    f.expect_renewals = 0;
    CHECK_RC(reign__sql_lease_take(c, &f, 1, &term, err, sizeof err), 0);
    CHECK(term == 99);
    CHECK_RC(reign__sql_lease_insert(c, &f, err, sizeof err), 0);
    read_ok(c, n1, &l);
    CHECK(!l.released && !strcmp(l.owner, "henry") && l.term == 1);
    CHECK(l.term_duration == before.term_duration && l.modified_ms == before.modified_ms);

    /* Nobody may pose as deposed to renew, take or insert: the mark is refused outright. */
    reign__lease_claim marked = h;
    marked.owner_guid = REIGN__SQL_DEPOSED;
    CHECK_RC(reign__sql_lease_renew(c, &marked, 1, err, sizeof err), REIGN_EINVAL);
    CHECK(strstr(err, "deposed"));
    CHECK_RC(reign__sql_lease_take(c, &marked, 1, &term, err, sizeof err), REIGN_EINVAL);
    CHECK_RC(reign__sql_lease_insert(c, &marked, err, sizeof err), REIGN_EINVAL);

    /* release: not with the holder's old guid, not by another owner with the mark; by the
     * holder's id with the mark, 1, and the lease is released at once. */
    CHECK_RC(reign__sql_lease_release(c, &h, 1, err, sizeof err), 0);
    reign__lease_claim f_marked = f;
    f_marked.owner_guid = REIGN__SQL_DEPOSED;
    CHECK_RC(reign__sql_lease_release(c, &f_marked, 1, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_release(c, &marked, 2, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_release(c, &marked, 1, err, sizeof err), 1);
    read_ok(c, n1, &l);
    CHECK(l.released && !strcmp(l.owner, "henry") && l.term == 1);
    /* A released lease is no longer held: nothing to depose. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 1, err, sizeof err), 0);

    /* The follower takes over at once, with the next term. */
    f.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &f, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    read_ok(c, n1, &l);
    CHECK(!strcmp(l.owner, "fiona") && !strcmp(l.owner_guid, "guid-fiona-1") && l.term == 2);
    CHECK(!l.released && l.term_duration == 0 && l.payload_len == 0);
    CHECK_RC(reign__sql_lease_renew(c, &f, 2, err, sizeof err), 1);
    /* The old term is gone: deposing it does nothing to the new holder. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, 1, err, sizeof err), 0);
    read_ok(c, n1, &l);
    CHECK(!strcmp(l.owner_guid, "guid-fiona-1"));

    /* A lease that ran out by the database's clock is still held (no clock decides): 1, and
     * the version followers count from stays. */
    reign__lease_claim s = claim(n2, "henry", "guid-henry-2", SHORT_MS);
    CHECK_RC(reign__sql_lease_insert(c, &s, err, sizeof err), 1);
    wait_expired(c, n2);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n2, 1, err, sizeof err), 1);
    read_ok(c, n2, &l);
    CHECK(!strcmp(l.owner_guid, REIGN__SQL_DEPOSED) && l.term == 1 && l.term_duration == 0);

    /* No row: 0, and none made. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n3, 1, err, sizeof err), 0);
    read_ok(c, n3, &l);
    CHECK(!l.exists);

    /* Bad arguments. */
    CHECK_RC(reign__sql_lease_depose(c, "dc1", "", 1, err, sizeof err), REIGN_EINVAL);
    CHECK_RC(reign__sql_lease_depose(c, NULL, n1, 1, err, sizeof err), REIGN_EINVAL);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", "bad\nname", 1, err, sizeof err), REIGN_EINVAL);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n1, (uint64_t)INT64_MAX + 1, err, sizeof err),
             REIGN_EINVAL);
    CHECK_RC(reign__sql_lease_depose(NULL, "dc1", n1, 1, err, sizeof err), REIGN_EINVAL);

    reign__lease_clear(&before);
    reign__lease_clear(&l);
    say("depose: ok");
}

/* ---- schema ------------------------------------------------------------------------------- */

/* designate: the mark (at the holder's term and guid, a new version) fences the holder's
 * renewal; the holder releases under the mark; a notified take (take_released) refuses the
 * marked row, the designee takes it at the version it read; no candidate may claim with a mark;
 * and a follower that is not the designee counts a whole lease from the version it saw. */
static void test_designate(reign__sqlconn *c, const char *tag)
{
    char n[96], mark[32];
    snprintf(n, sizeof n, "%s-designate-%d", tag, (int)getpid());
    reign__lease l = {0};
    uint64_t term = 0;
    reign__lease_claim h = claim(n, "henry", "1111111111111111", LONG_MS);
    reign__lease_claim f = claim(n, "fiona", "2222222222222222", LONG_MS);
    reign__lease_claim d = claim(n, "dora", "3333333333333333", LONG_MS);
    snprintf(mark, sizeof mark, "%c%s", REIGN__SQL_DESIGNATED, d.owner_guid);
    CHECK_RC(reign__sql_lease_insert(c, &h, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_renew(c, &h, 1, err, sizeof err), 1);
    read_ok(c, n, &l);
    uint64_t r0 = l.term_duration;
    CHECK(!reign__lease_designee(&l));

    /* At a wrong term, or over a guid that is not the row's: 0, nothing changed. */
    CHECK_RC(
        reign__sql_lease_designate(c, "dc1", n, 2, h.owner_guid, d.owner_guid, err, sizeof err), 0);
    CHECK_RC(
        reign__sql_lease_designate(c, "dc1", n, 1, f.owner_guid, d.owner_guid, err, sizeof err), 0);
    CHECK_RC(reign__sql_lease_designate(c, "dc1", n, 1, h.owner_guid, "", err, sizeof err),
             REIGN_EINVAL);
    CHECK_RC(
        reign__sql_lease_designate(c, "dc1", n, 1, h.owner_guid, d.owner_guid, err, sizeof err), 1);
    read_ok(c, n, &l);
    CHECK(!l.released && l.term == 1 && l.term_duration == r0 + 1 && !strcmp(l.owner, "henry"));
    CHECK(reign__lease_designee(&l) && !strcmp(reign__lease_designee(&l), d.owner_guid));
    CHECK(!strcmp(l.owner_guid, mark));

    /* The holder is fenced off, then releases under the mark. */
    CHECK_RC(reign__sql_lease_renew(c, &h, 1, err, sizeof err), 0);
    reign__lease_claim hm = h;
    hm.owner_guid = mark;
    CHECK_RC(reign__sql_lease_release(c, &hm, 1, err, sizeof err), 1);
    read_ok(c, n, &l);
    CHECK(l.released && reign__lease_designee(&l));

    /* A follower's count: released, but not for it - a whole lease from its first sight. */
    reign__lease_seen seen = {0};
    CHECK(reign__lease_free_for(&seen, &l, 100, f.owner_guid, 5000) == 100 + 5000);
    CHECK(reign__lease_free_for(&seen, &l, 900, f.owner_guid, 5000) == 100 + 5000);
    seen = (reign__lease_seen){0};
    CHECK(reign__lease_free_for(&seen, &l, 100, d.owner_guid, 5000) == 100);

    /* A notified take refuses the marked row; so does a claim that carries a mark. */
    f.take_released = true;
    term = 99;
    CHECK_RC(reign__sql_lease_take(c, &f, 1, &term, err, sizeof err), 0);
    reign__lease_claim fm = f;
    fm.owner_guid = mark;
    CHECK_RC(reign__sql_lease_take(c, &fm, 1, &term, err, sizeof err), REIGN_EINVAL);
    CHECK(term == 99);
    /* The designee takes it at the version it read: term 2, the mark gone. */
    d.expect_renewals = l.term_duration;
    CHECK_RC(reign__sql_lease_take(c, &d, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    read_ok(c, n, &l);
    CHECK(!strcmp(l.owner, "dora") && l.term == 2 && !l.released && !reign__lease_designee(&l));
    CHECK_RC(reign__sql_lease_release(c, &d, 2, err, sizeof err), 1);
    reign__lease_clear(&l);
    say("designate: ok");
}

static void sqlite_exec(const char *path, const char *sql)
{
    sqlite3 *db;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail(__FILE__, __LINE__, "sqlite: %s: %s", sql, msg ? msg : "?");
    sqlite3_close(db);
}

static int sqlite_count(const char *path, const char *sql)
{
    sqlite3 *db;
    sqlite3_stmt *st;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ROW);
    int n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Creates a table in a form of the backend's (SQLite: in a file of its own). */
static void create_table(const backend *b, const char *file, const char *sql)
{
    if (b->kind == REIGN__SQL_SQLITE) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", b->state, file);
        remove_db(path);
        sqlite_exec(path, sql);
    } else {
        char out[256];
        admin_sql(b, sql, out, sizeof out);
    }
}

/* PostgreSQL: a table the administrator made belongs to the administrator; hand it to reign,
 * as a real deployment would. */
static void give_to_reign(const backend *b, const char *table)
{
    if (b->kind != REIGN__SQL_POSTGRES)
        return;
    char sql[128], out[64];
    snprintf(sql, sizeof sql, "ALTER TABLE %s OWNER TO reign", table);
    admin_sql(b, sql, out, sizeof out);
}

/* How many columns named `col` the table has. */
static int column_count(const backend *b, const char *file, const char *table, const char *col)
{
    char sql[512], out[64];
    if (b->kind == REIGN__SQL_SQLITE) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", b->state, file);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM pragma_table_info('%s') WHERE name='%s'",
                 table, col);
        return sqlite_count(path, sql);
    }
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM information_schema.columns WHERE table_name = '%s' AND "
             "column_name = '%s'%s",
             table, col, b->kind == REIGN__SQL_MARIADB ? " AND table_schema = DATABASE()" : "");
    admin_sql(b, sql, out, sizeof out);
    return atoi(out);
}

/* ensure_schema on a table made by someone else must fail with EFOREIGN naming `what`, and
 * leave the table as it was. */
static void expect_foreign(const backend *b, const char *file, const char *table, const char *what)
{
    reign__sql_target t = target(b, table, file);
    reign__sqlconn *c = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), REIGN_EFOREIGN);
    say("refused as expected: %s", err);
    if (!strstr(err, what))
        fail(__FILE__, __LINE__, "the message does not name %s", what);
    CHECK(column_count(b, file, table, "owner_guid") == 0);
    reign__sql_close(c);
}

static void test_schema(const backend *b, char (*tables)[64], int *n_tables)
{
    char sql[2048];
    int pid = (int)getpid();

    /* A table without term: not ours. */
    char *t1 = tables[(*n_tables)++];
    snprintf(t1, 64, "t%d_noterm", pid);
    const char *ts = b->kind == REIGN__SQL_POSTGRES  ? "timestamptz(3)"
                     : b->kind == REIGN__SQL_MARIADB ? "timestamp(3)"
                                                     : "text";
    const char *pk = b->kind == REIGN__SQL_SQLITE    ? "INTEGER PRIMARY KEY"
                     : b->kind == REIGN__SQL_MARIADB ? "bigint AUTO_INCREMENT PRIMARY KEY"
                                                     : "bigserial PRIMARY KEY";
    const char *uk = b->kind == REIGN__SQL_MARIADB ? "lock_name(200)" : "lock_name";
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id %s, data_center varchar(128) NOT NULL, lock_name "
             "varchar(1024) NOT NULL, owner varchar(512) NOT NULL, duration bigint NOT NULL, "
             "term_duration bigint NOT NULL, gmt_create %s NOT NULL, gmt_modified %s NOT NULL, "
             "UNIQUE (data_center, %s))",
             t1, pk, ts, ts, uk);
    create_table(b, "noterm.db", sql);
    give_to_reign(b, t1);
    expect_foreign(b, "noterm.db", t1, "term");

    /* The seed's columns, but no unique key on (data_center, lock_name). */
    char *t2 = tables[(*n_tables)++];
    snprintf(t2, 64, "t%d_nokey", pid);
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id %s, data_center varchar(128) NOT NULL, lock_name "
             "varchar(1024) NOT NULL, owner varchar(512) NOT NULL, duration bigint NOT NULL, "
             "term bigint NOT NULL, term_duration bigint NOT NULL, gmt_create %s NOT NULL, "
             "gmt_modified %s NOT NULL)",
             t2, pk, ts, ts);
    create_table(b, "nokey.db", sql);
    give_to_reign(b, t2);
    expect_foreign(b, "nokey.db", t2, "unique key");

    /* Timestamps without milliseconds: a renewal would look older than it is. */
    if (b->kind != REIGN__SQL_SQLITE) {
        char *t3 = tables[(*n_tables)++];
        snprintf(t3, 64, "t%d_coarse", pid);
        const char *ts0 = b->kind == REIGN__SQL_POSTGRES ? "timestamptz(0)" : "timestamp";
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id %s, data_center varchar(128) NOT NULL, lock_name "
                 "varchar(1024) NOT NULL, owner varchar(512) NOT NULL, duration bigint NOT "
                 "NULL, term bigint NOT NULL, term_duration bigint NOT NULL, gmt_create %s NOT "
                 "NULL DEFAULT CURRENT_TIMESTAMP, gmt_modified %s NOT NULL DEFAULT "
                 "CURRENT_TIMESTAMP, UNIQUE (data_center, %s))",
                 t3, pk, ts0, ts0, uk);
        create_table(b, "coarse.db", sql);
        give_to_reign(b, t3);
        expect_foreign(b, "coarse.db", t3, "gmt_modified");
    }

    /* The seed's own table (SOFARegistry's, with a row of its own): accepted, reign's columns
     * added, its row readable, and the lease protocol works on it. */
    char *t4 = tables[(*n_tables)++];
    snprintf(t4, 64, "t%d_seed", pid);
    if (b->kind == REIGN__SQL_MARIADB)
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id bigint(20) NOT NULL AUTO_INCREMENT primary key, "
                 "data_center varchar(128) NOT NULL, lock_name varchar(1024) NOT NULL, owner "
                 "varchar(512) NOT NULL, duration bigint(20) NOT NULL, term bigint(20) unsigned "
                 "NOT NULL DEFAULT 0, term_duration bigint(20) unsigned NOT NULL DEFAULT 0, "
                 "gmt_create timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), gmt_modified "
                 "timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), UNIQUE KEY "
                 "uk_data_center_lock (data_center, lock_name), KEY idx_lock_owner (owner)) "
                 "DEFAULT CHARSET=latin1; INSERT INTO %s (data_center, lock_name, owner, "
                 "duration, gmt_create, gmt_modified, term, term_duration) VALUES ('DefaultDC', "
                 "'META-MASTER', '10.0.0.1', 30000, NOW(3), NOW(3), 7, 3)",
                 t4, t4);
    else
        snprintf(sql, sizeof sql,
                 "CREATE TABLE %s (id %s, data_center varchar(128) NOT NULL, lock_name "
                 "varchar(1024) NOT NULL, owner varchar(512) NOT NULL, duration bigint NOT NULL, "
                 "term bigint NOT NULL DEFAULT 0, term_duration bigint NOT NULL DEFAULT 0, "
                 "gmt_create %s NOT NULL, gmt_modified %s NOT NULL, UNIQUE (data_center, "
                 "lock_name)); INSERT INTO %s (data_center, lock_name, owner, duration, "
                 "gmt_create, gmt_modified, term, term_duration) VALUES ('DefaultDC', "
                 "'META-MASTER', '10.0.0.1', 30000, %s, %s, 7, 3)",
                 t4, pk, ts, ts, t4,
                 b->kind == REIGN__SQL_SQLITE ? "strftime('%Y-%m-%d %H:%M:%f', 'now')" : "now()",
                 b->kind == REIGN__SQL_SQLITE ? "strftime('%Y-%m-%d %H:%M:%f', 'now')" : "now()");
    create_table(b, "seed.db", sql);
    give_to_reign(b, t4);
    CHECK(column_count(b, "seed.db", t4, "owner_guid") == 0);
    reign__sql_target t = target(b, t4, "seed.db");
    reign__sqlconn *c = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    CHECK(column_count(b, "seed.db", t4, "owner_guid") == 1);
    CHECK(column_count(b, "seed.db", t4, "payload") == 1);
    reign__lease l = {0};
    CHECK_RC(reign__sql_lease_read(c, "DefaultDC", "META-MASTER", &l, err, sizeof err), 0);
    CHECK(l.exists && !strcmp(l.owner, "10.0.0.1") && !strcmp(l.owner_guid, ""));
    CHECK(l.term == 7 && l.term_duration == 3 && l.duration_ms == 30000 && !l.payload);
    reign__lease_clear(&l);
    reign__lease_claim cl = claim("seeded", "frank", "guid-frank-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &cl, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), 1);
    reign__sql_close(c);
    say("schema checks: ok");
}

/* MariaDB: a foreign table whose gmt_modified is ON UPDATE CURRENT_TIMESTAMP (MariaDB would
 * stamp every update that does not set it): depose must still leave the time alone, or it
 * would renew the lease it deposes. */
static void test_depose_on_update(const backend *b, char (*tables)[64], int *n_tables)
{
    char sql[1024];
    char *tb = tables[(*n_tables)++];
    snprintf(tb, 64, "t%d_onupdate", (int)getpid());
    snprintf(sql, sizeof sql,
             "CREATE TABLE %s (id bigint NOT NULL AUTO_INCREMENT PRIMARY KEY, data_center "
             "varchar(128) NOT NULL, lock_name varchar(1024) NOT NULL, owner varchar(512) NOT "
             "NULL, duration bigint NOT NULL, term bigint unsigned NOT NULL DEFAULT 0, "
             "term_duration bigint unsigned NOT NULL DEFAULT 0, gmt_create timestamp(3) NOT NULL "
             "DEFAULT CURRENT_TIMESTAMP(3), gmt_modified timestamp(3) NOT NULL DEFAULT "
             "CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3), UNIQUE KEY uk (data_center, "
             "lock_name(200)))",
             tb);
    create_table(b, NULL, sql);
    reign__sql_target t = target(b, tb, NULL);
    reign__sqlconn *c = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    reign__lease_claim h = claim("onupdate", "henry", "guid-henry-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &h, err, sizeof err), 1);
    wait_clock_past(c, "onupdate");
    reign__lease before = {0}, l = {0};
    read_ok(c, "onupdate", &before);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", "onupdate", 1, err, sizeof err), 1);
    read_ok(c, "onupdate", &l);
    CHECK(!strcmp(l.owner_guid, REIGN__SQL_DEPOSED));
    CHECK(l.modified_ms == before.modified_ms);
    reign__lease_clear(&before);
    reign__lease_clear(&l);
    reign__sql_close(c);
    say("depose on a table with ON UPDATE CURRENT_TIMESTAMP: ok");
}

/* Several processes create the same table at the same moment: every one succeeds. */
static void test_schema_race(const backend *b, const char *table)
{
    enum { N = 6 };
    int gate[2];
    CHECK(pipe(gate) == 0);
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        CHECK(pids[i] >= 0);
        if (pids[i] == 0) {
            close(gate[1]);
            reign__sql_target t = target(b, table, "race.db");
            reign__sqlconn *c = NULL;
            char e[512] = "";
            int rc = reign__sql_connect(&c, &t, e, sizeof e);
            char byte;
            /* Connected: wait until the parent lets every process go at once. */
            while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
            }
            if (!rc)
                rc = reign__sql_ensure_schema(c, e, sizeof e);
            if (rc)
                fprintf(stderr, "FAIL process %d: %s: %s\n", i, reign_err_name(rc), e);
            reign__sql_close(c);
            _exit(rc ? 1 : 0);
        }
    }
    close(gate[0]);
    close(gate[1]);
    int failed = 0;
    for (int i = 0; i < N; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
        }
        failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    }
    CHECK(failed == 0);
    reign__sql_target t = target(b, table, "race.db");
    reign__sqlconn *c = connect_ok(&t);
    reign__lease_claim cl = claim("race", "ivan", "guid-ivan-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &cl, err, sizeof err), 1);
    reign__sql_close(c);
    say("%d processes creating one table at once: ok", N);
}

/* ---- connecting --------------------------------------------------------------------------- */

/* A TCP port on 127.0.0.1 that nothing listens on (bound, then closed). */
static int dead_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
    close(s);
    return ntohs(a.sin_port);
}

/* A listening socket that never accepts: the kernel completes the handshake, nothing answers. */
static int silent_listener(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    CHECK(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    CHECK(listen(s, 16) == 0);
    CHECK(getsockname(s, (struct sockaddr *)&a, &len) == 0);
    *port = ntohs(a.sin_port);
    return s;
}

static void expect_connect_error(const reign__sql_target *t, int want, const char *what)
{
    reign__sqlconn *c = NULL;
    int64_t start = now_ms();
    int rc = reign__sql_connect(&c, t, err, sizeof err);
    int64_t took = now_ms() - start;
    say("%s: %s after %lld ms: %s", what, reign_err_name(rc), (long long)took, err);
    CHECK_RC(rc, want);
    CHECK(c == NULL);
    CHECK(err[0] != '\0');
    if (t->password && *t->password && strstr(err, t->password))
        fail(__FILE__, __LINE__, "the message shows the password");
    /* Only a hang could come near this. */
    CHECK(took < WAIT_MS);
}

static void test_connect_errors(const backend *b)
{
    reign__sql_target t = target(b, NULL, NULL);
    reign__sql_target bad = t;
    bad.table = "no-dashes";
    expect_connect_error(&bad, REIGN_EINVAL, "bad table name");
    bad.table = "x23456789012345678901234567890123456789012345678901234567890123456";
    expect_connect_error(&bad, REIGN_EINVAL, "table name too long");

    if (b->kind == REIGN__SQL_SQLITE) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/no/such/dir/x.db", b->state);
        bad = t;
        bad.path = path;
        expect_connect_error(&bad, REIGN_ENOENT, "missing directory");
        snprintf(path, sizeof path, "%s/garbage.db", b->state);
        FILE *f = fopen(path, "w");
        CHECK(f);
        for (int i = 0; i < 200; i++)
            fputs("this is not a database file. ", f);
        fclose(f);
        bad.path = path;
        expect_connect_error(&bad, REIGN_EFOREIGN, "not a database");
        return;
    }

    bad = t;
    char wrong[160];
    snprintf(wrong, sizeof wrong, "%sX", b->password);
    bad.password = wrong;
    expect_connect_error(&bad, REIGN_EAUTH, "wrong password");
    bad = t;
    bad.user = "no_such_user";
    expect_connect_error(&bad, REIGN_EAUTH, "unknown user");
    bad = t;
    bad.database = "no_such_database";
    /* MariaDB does not tell a user a missing database from one the user may not use: it says
     * "access denied" unless the user has rights that would cover the name (the fault test,
     * with a server of its own, grants such rights and sees REIGN_ENOENT). */
    expect_connect_error(&bad, b->kind == REIGN__SQL_MARIADB ? REIGN_EACCES : REIGN_ENOENT,
                         "missing database");
    bad = t;
    bad.user = "reign_nogrants";
    expect_connect_error(&bad, REIGN_EACCES, "user without rights");

    bad = t;
    bad.port = dead_port();
    bad.connect_timeout_ms = 1000;
    expect_connect_error(&bad, REIGN_ECONNECT, "nothing listening");

    int port, s = silent_listener(&port);
    bad.port = port;
    expect_connect_error(&bad, REIGN_ECONNECT, "a server that never answers");
    close(s);
    say("connect errors: ok");
}

/* ---- notification ------------------------------------------------------------------------- */

static bool fd_readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n;
    while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR) {
    }
    return n > 0;
}

/* Waits until the listener waits for the wake-up lock of (dc1, name) (its waits move on only
 * when it drains them), asking the server through c. */
static void await_waiter(reign__sqlconn *c, reign__sqlconn *listener, const char *table,
                         const char *name)
{
    char lock[64], like[80];
    reign__sql_channel(lock, table, "dc1", name);
    snprintf(like, sizeof like, "%%GET_LOCK('%s'%%", lock);
    reign__sqlv args[1] = {REIGN__SQLV_S(like)};
    for (int64_t until = now_ms() + WAIT_MS;;) {
        reign__sql_rows rows;
        CHECK_RC(reign__sql_query(c, "waiters",
                                  "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE "
                                  "STATE = 'User lock' AND INFO LIKE {1}",
                                  args, 1, &rows, err, sizeof err),
                 0);
        bool waits = rows.n_rows == 1 && strcmp(reign__sql_cell(&rows, 0, 0), "0") != 0;
        reign__sql_rows_free(&rows);
        if (waits)
            return;
        if (now_ms() > until)
            fail(__FILE__, __LINE__, "no wait for the lock of %s within %d ms", name, WAIT_MS);
        if (fd_readable(reign__sql_listen_fd(listener), 10))
            CHECK(reign__sql_drain_notify(listener) >= 0);
    }
}

/* Reads what is pending and expects a wake-up (or none) within ms. */
static void expect_wake(reign__sqlconn *listener, bool wake, int ms)
{
    int fd = reign__sql_listen_fd(listener), got = 0;
    CHECK(fd >= 0);
    for (int64_t until = now_ms() + ms; !got && now_ms() < until;)
        if (fd_readable(fd, 50))
            got = reign__sql_drain_notify(listener);
    CHECK(got == (wake ? 1 : 0));
}

/*
 * MariaDB has no notification: a lease's followers wait for the lock its leader holds
 * (mariadb_wake.h).  Its release, and its connection's end (a process killed), wake them; a
 * renewal, a lock nobody holds, and a leader that stays, do not; wakeup=poll turns it off.
 */
static void test_wake(const backend *b, const char *table, reign__sqlconn *writer,
                      reign__sqlconn *listener, const char *name)
{
    CHECK(reign__sql_listen_fd(listener) >= 0); /* a wait, though nobody holds the lock yet */
    expect_wake(listener, false, 300);

    reign__lease_claim cl = claim(name, "grace", "guid-wake-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(writer, &cl, err, sizeof err), 1);
    reign__sql_settle(writer); /* the lock is taken once the claim's answer is back */
    await_waiter(writer, listener, table, name);
    CHECK_RC(reign__sql_lease_renew(writer, &cl, 1, err, sizeof err), 1);
    expect_wake(listener, false, 300);
    CHECK_RC(reign__sql_lease_release(writer, &cl, 1, err, sizeof err), 1);
    expect_wake(listener, true, WAIT_MS);

    /* The holder's connection ends (its process killed): the server lets the lock go.  The
     * waits that follow, finding nobody holds it, tell again for a moment (the guardian's
     * release comes a moment later). */
    reign__sql_target t = target(b, table, NULL);
    reign__sqlconn *other = connect_ok(&t);
    cl.owner_guid = "guid-wake-2";
    cl.take_released = true;
    uint64_t term = 0;
    CHECK_RC(reign__sql_lease_take(other, &cl, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    reign__sql_settle(other);
    cl.take_released = false;
    await_waiter(writer, listener, table, name);
    expect_wake(listener, false, 200);
    reign__sql_close(other);
    expect_wake(listener, true, WAIT_MS);
    expect_wake(listener, true, WAIT_MS);

    /* A leader deposed lets go of the lock at its refused renewal. */
    cl.owner_guid = "guid-wake-3";
    CHECK_RC(reign__sql_lease_take(writer, &cl, 2, &term, err, sizeof err), 1);
    CHECK(term == 3);
    reign__sql_settle(writer);
    await_waiter(writer, listener, table, name);
    reign__sqlconn *third = connect_ok(&t);
    CHECK_RC(reign__sql_lease_depose(third, "dc1", name, 3, err, sizeof err), 1);
    expect_wake(listener, false, 200);
    CHECK_RC(reign__sql_lease_renew(writer, &cl, 3, err, sizeof err), 0);
    expect_wake(listener, true, WAIT_MS);
    reign__sql_close(third);

    /* wakeup=poll: no waits. */
    reign__sql_target polls = target(b, table, NULL);
    polls.params = "wakeup=poll";
    reign__sqlconn *p = connect_ok(&polls);
    CHECK_RC(reign__sql_listen(p, "dc1", name, err, sizeof err), 0);
    CHECK(reign__sql_listen_fd(p) == -1);
    CHECK_RC(reign__sql_drain_notify(p), 0);
    reign__sql_close(p);
    CHECK(reign__sql_conn_param(REIGN__SQL_MARIADB, "wakeup", "sometimes", err, sizeof err) ==
          REIGN_EURI);
    CHECK(strstr(err, "want lock or poll") != NULL);
    say("notification: MariaDB's followers woken by the leader's lock");
}

static void test_notify(const backend *b, const char *table)
{
    reign__sql_target t = target(b, table, NULL);
    reign__sqlconn *writer = connect_ok(&t);
    reign__sqlconn *listener = connect_ok(&t);
    char name[64];
    snprintf(name, sizeof name, "notify-%d", (int)getpid());

    CHECK(reign__sql_listen_fd(listener) == -1);
    CHECK_RC(reign__sql_listen(listener, "dc1", name, err, sizeof err), 0);
    int fd = reign__sql_listen_fd(listener);
    if (b->kind == REIGN__SQL_MARIADB) {
        test_wake(b, table, writer, listener, name);
        reign__sql_close(writer);
        reign__sql_close(listener);
        return;
    }
    CHECK(fd >= 0);
    /* Whatever our own connect and listen caused (SQLite: our reads open the -wal file). */
    while (fd_readable(fd, 0))
        CHECK(reign__sql_drain_notify(listener) >= 0);

    reign__lease_claim cl = claim(name, "grace", "guid-grace-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(writer, &cl, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_release(writer, &cl, 1, err, sizeof err), 1);
    CHECK_RC(reign__sql_notify(writer, "dc1", name, err, sizeof err), 0);
    if (!fd_readable(fd, WAIT_MS))
        fail(__FILE__, __LINE__, "no notification within %d ms", WAIT_MS);
    CHECK_RC(reign__sql_drain_notify(listener), 1);

    {
        /* A notification for another name is not ours (PostgreSQL does not even deliver it;
         * SQLite's reader skips its line), and a second listen on the same name is a no-op. */
        CHECK_RC(reign__sql_listen(listener, "dc1", name, err, sizeof err), 0);
        CHECK_RC(reign__sql_notify(writer, "dc1", "some-other-name", err, sizeof err), 0);
        CHECK_RC(reign__sql_notify(writer, "dc1", name, err, sizeof err), 0);
        int got = 0;
        int64_t until = now_ms() + WAIT_MS;
        while (!got && now_ms() < until) {
            if (fd_readable(fd, 1000))
                got = reign__sql_drain_notify(listener);
            CHECK(got >= 0);
        }
        CHECK(got == 1);

        /* A transaction's BEGIN goes with its first statement and its notices with its
         * COMMIT (one flight each): a notice of a transaction rolled back is never sent, one
         * of a committed transaction is; a statement that fails leaves the transaction to
         * its ROLLBACK, and the connection works on; an empty transaction costs nothing. */
        while (fd_readable(fd, 0))
            CHECK(reign__sql_drain_notify(listener) >= 0);
        CHECK_RC(reign__sql_query(writer, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        CHECK_RC(reign__sql_notify(writer, "dc1", name, err, sizeof err), 0);
        reign__sql_rollback(writer);
        CHECK_RC(reign__sql_query(writer, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        reign__lease l = {0};
        CHECK_RC(reign__sql_lease_read(writer, "dc1", name, &l, err, sizeof err), 0);
        reign__lease_clear(&l);
        CHECK_RC(reign__sql_notify(writer, "dc1", name, err, sizeof err), 0);
        reign__sql_rollback(writer);
        CHECK(!fd_readable(fd, 300));
        CHECK_RC(reign__sql_query(writer, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        CHECK_RC(reign__sql_notify(writer, "dc1", name, err, sizeof err), 0);
        CHECK_RC(reign__sql_query(writer, "commit", "COMMIT", NULL, 0, NULL, err, sizeof err), 0);
        if (!fd_readable(fd, WAIT_MS))
            fail(__FILE__, __LINE__, "no notification of a commit within %d ms", WAIT_MS);
        CHECK_RC(reign__sql_drain_notify(listener), 1);
        CHECK_RC(reign__sql_query(writer, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        CHECK(reign__sql_query(writer, "failing", "SELECT no_such_column FROM {T}", NULL, 0, NULL,
                               err, sizeof err) < 0);
        reign__sql_rollback(writer);
        reign__sql_rows rows;
        CHECK_RC(reign__sql_query(writer, "after", "SELECT 1", NULL, 0, &rows, err, sizeof err), 0);
        CHECK(rows.n_rows == 1);
        reign__sql_rows_free(&rows);
        CHECK_RC(reign__sql_query(writer, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        CHECK_RC(reign__sql_query(writer, "commit", "COMMIT", NULL, 0, NULL, err, sizeof err), 0);
        CHECK(!fd_readable(fd, 100));
    }
    reign__sql_close(writer);
    reign__sql_close(listener);
    say("notification: ok");
}

/* ---- a SQLite file deleted or replaced under its connections ------------------------------- */

/*
 * A connection holds the file it opened: deleted (rm) or replaced by another (mv), that file
 * lives on for it alone.  Every call must find that the path no longer names its file - a
 * renewal of a lease held there, a listener at the change notice, any other statement - and
 * fail with REIGN_ECONNLOSS, the connection gone (reign__sql_gone()); a new connection opens
 * what the path names now; and closing the old connections must not take the -wal and -shm of
 * the new file, which bear the old file's names (SQLite's close leaves them alone).
 */
static void test_file_moved(const backend *b, const char *table)
{
    reign__sql_target t = target(b, table, "moved.db");
    remove_db(t.path);
    reign__sqlconn *holder = connect_ok(&t), *listener = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(holder, err, sizeof err), 0);
    reign__lease_claim cl = claim("moved", "ivy", "guid-ivy-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(holder, &cl, err, sizeof err), 1);
    CHECK_RC(reign__sql_listen(listener, "dc1", "moved", err, sizeof err), 0);
    int fd = reign__sql_listen_fd(listener);
    CHECK(fd >= 0);
    while (fd_readable(fd, 0))
        CHECK(reign__sql_drain_notify(listener) >= 0);
    CHECK(reign__sql_gone(holder) == NULL && reign__sql_gone(listener) == NULL);

    /* Deleted with its -wal and -shm: the listener hears of it, the renewal fails, for good. */
    remove_db(t.path);
    if (!fd_readable(fd, WAIT_MS))
        fail(__FILE__, __LINE__, "no notice of the deleted file within %d ms", WAIT_MS);
    CHECK_RC(reign__sql_drain_notify(listener), REIGN_ECONNLOSS);
    CHECK(reign__sql_gone(listener) != NULL);
    CHECK_RC(reign__sql_lease_renew(holder, &cl, 1, err, sizeof err), REIGN_ECONNLOSS);
    CHECK(strstr(err, "deleted or replaced") != NULL && strstr(err, t.path) != NULL);
    say("file deleted: %s", err);
    CHECK(reign__sql_gone(holder) != NULL);
    CHECK_RC(reign__sql_lease_renew(holder, &cl, 1, err, sizeof err), REIGN_ECONNLOSS);

    /* What the path names now is a new file, without the lease.  The old connections close
     * after it is in use: its -wal (our commit, not yet checkpointed) must stay. */
    reign__sqlconn *c = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    reign__lease l = {0};
    read_ok(c, "moved", &l);
    CHECK(!l.exists);
    reign__lease_claim cl2 = claim("moved", "ivy", "guid-ivy-2", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &cl2, err, sizeof err), 1);
    reign__sql_close(holder);
    reign__sql_close(listener);
    reign__sqlconn *d = connect_ok(&t);
    read_ok(d, "moved", &l);
    CHECK(l.exists && l.term == 1 && !strcmp(l.owner_guid, "guid-ivy-2"));
    reign__sql_close(d);

    /* Replaced by another database (mv): a renewal and any other statement notice. */
    char other[PATH_MAX + 16];
    snprintf(other, sizeof other, "%s.other", t.path);
    remove_db(other);
    reign__sql_target to = t;
    to.path = other;
    d = connect_ok(&to);
    CHECK_RC(reign__sql_ensure_schema(d, err, sizeof err), 0);
    reign__sql_close(d);
    d = connect_ok(&t);
    CHECK(rename(other, t.path) == 0);
    CHECK_RC(reign__sql_lease_renew(c, &cl2, 1, err, sizeof err), REIGN_ECONNLOSS);
    CHECK(reign__sql_gone(c) != NULL);
    reign__sql_rows rows = {0};
    CHECK_RC(
        reign__sql_query(d, "count", "SELECT count(*) FROM {T}", NULL, 0, &rows, err, sizeof err),
        REIGN_ECONNLOSS);
    CHECK(reign__sql_gone(d) != NULL);
    reign__lease_clear(&l);
    reign__sql_close(c);
    reign__sql_close(d);
    say("file deleted or replaced: ok");
}

/* ---- the guardian's release --------------------------------------------------------------- */

/* Reads the row and checks it is exactly `before` again: nothing written. */
static void check_untouched(reign__sqlconn *c, const char *name, const reign__lease *before)
{
    reign__lease l = {0};
    read_ok(c, name, &l);
    CHECK(l.exists && l.released == before->released);
    CHECK(!strcmp(l.owner, before->owner) && !strcmp(l.owner_guid, before->owner_guid));
    CHECK(l.term == before->term && l.term_duration == before->term_duration);
    CHECK(l.modified_ms == before->modified_ms && l.duration_ms == before->duration_ms);
    reign__lease_clear(&l);
}

/*
 * reign__sql_lease_release_ours(), which a dead client's guardian uses knowing only the
 * owner and guid of each standing: it releases a live lease carrying both (and tells the
 * followers where the store can), and never touches one that somebody else holds now: the same
 * owner id with another guid (a restarted process), a lease that ran out and was taken by
 * another (the term moved), a lease that ran out and lies free, a deposed lease, no row.
 */
static void test_release_ours(const backend *b, const char *table, const char *tag)
{
    reign__sql_target t = target(b, table, NULL);
    reign__sqlconn *c = connect_ok(&t);
    reign__sqlconn *listener = connect_ok(&t);
    char n1[96], n2[96], n3[96], n4[96], n5[96];
    snprintf(n1, sizeof n1, "%s-ours-%d", tag, (int)getpid());
    snprintf(n2, sizeof n2, "%s-ours-restarted-%d", tag, (int)getpid());
    snprintf(n3, sizeof n3, "%s-ours-taken-%d", tag, (int)getpid());
    snprintf(n4, sizeof n4, "%s-ours-deposed-%d", tag, (int)getpid());
    snprintf(n5, sizeof n5, "%s-ours-none-%d", tag, (int)getpid());
    reign__lease l = {0}, before = {0}, restarted = {0};
    uint64_t term = 0;

    /* (a) owner and guid match: released at the term read, the term returned, followers told;
     * a follower takes over at once. */
    int fd = -1;
    if (b->kind != REIGN__SQL_MARIADB) {
        CHECK_RC(reign__sql_listen(listener, "dc1", n1, err, sizeof err), 0);
        fd = reign__sql_listen_fd(listener);
        CHECK(fd >= 0);
    }
    reign__lease_claim a = claim(n1, "alice", "guid-alice-1", LONG_MS);
    reign__lease_claim f = claim(n1, "frank", "guid-frank-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &a, err, sizeof err), 1);
    f.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &f, 1, &term, err, sizeof err), 0); /* held: no */
    CHECK_RC(reign__sql_lease_release(c, &a, 1, err, sizeof err), 1);
    a.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &a, 1, &term, err, sizeof err), 1);
    a.take_released = false;
    CHECK(term == 2);
    CHECK_RC(reign__sql_lease_renew(c, &a, 2, err, sizeof err), 1);
    if (fd >= 0)
        while (fd_readable(fd, 0)) /* what the writes above caused */
            CHECK(reign__sql_drain_notify(listener) >= 0);
    term = 0;
    CHECK_RC(reign__sql_lease_release_ours(c, &a, &term, err, sizeof err), 1);
    CHECK(term == 2);
    read_ok(c, n1, &l);
    CHECK(l.exists && l.released && !strcmp(l.owner, "alice") && l.term == 2);
    CHECK(l.duration_ms == 0); /* released: anyone may take it at once */
    if (fd >= 0) {
        if (!fd_readable(fd, WAIT_MS))
            fail(__FILE__, __LINE__, "no notification of the release within %d ms", WAIT_MS);
        CHECK_RC(reign__sql_drain_notify(listener), 1);
    }
    /* Released already: not ours any more (0), and nothing written. */
    read_ok(c, n1, &before);
    term = 77;
    CHECK_RC(reign__sql_lease_release_ours(c, &a, &term, err, sizeof err), 0);
    CHECK(term == 77);
    check_untouched(c, n1, &before);
    CHECK_RC(reign__sql_lease_take(c, &f, 2, &term, err, sizeof err), 1);
    CHECK(term == 3);

    /* (b) the same owner id with another guid: a process restarted with the same id must not
     * have its new lease released by its predecessor's guardian. */
    reign__lease_claim a_new = claim(n2, "alice", "guid-alice-2", LONG_MS);
    reign__lease_claim a_old = claim(n2, "alice", "guid-alice-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &a_new, err, sizeof err), 1);
    read_ok(c, n2, &restarted);
    CHECK_RC(reign__sql_lease_release_ours(c, &a_old, &term, err, sizeof err), 0);
    check_untouched(c, n2, &restarted);
    /* Nor another owner with the holder's guid. */
    reign__lease_claim other = claim(n2, "mallory", "guid-alice-2", LONG_MS);
    CHECK_RC(reign__sql_lease_release_ours(c, &other, &term, err, sizeof err), 0);
    check_untouched(c, n2, &restarted);

    /* (c) the lease ran out by the database's clock but nobody took it: still ours, so
     * released (no clock decides); once another took it (the term moved), that one's lease
     * is left alone. */
    reign__lease_claim s = claim(n3, "alice", "guid-alice-3", SHORT_MS);
    reign__lease_claim bob = claim(n3, "bob", "guid-bob-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &s, err, sizeof err), 1);
    wait_expired(c, n3);
    CHECK_RC(reign__sql_lease_release_ours(c, &s, &term, err, sizeof err), 1);
    CHECK(term == 1);
    bob.take_released = true;
    CHECK_RC(reign__sql_lease_take(c, &bob, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    read_ok(c, n3, &before);
    CHECK_RC(reign__sql_lease_release_ours(c, &s, &term, err, sizeof err), 0);
    check_untouched(c, n3, &before);
    CHECK(!before.released && !strcmp(before.owner, "bob") && before.term == 2);
    CHECK_RC(reign__sql_lease_renew(c, &bob, 2, err, sizeof err), 1);

    /* (d) a deposed lease (reignd fenced its holder): its guid is the mark, not the holder's;
     * only the holder itself, knowing it was deposed, releases it. */
    reign__lease_claim h = claim(n4, "henry", "guid-henry-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &h, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_depose(c, "dc1", n4, 1, err, sizeof err), 1);
    read_ok(c, n4, &before);
    CHECK(!strcmp(before.owner_guid, REIGN__SQL_DEPOSED) && !before.released);
    CHECK_RC(reign__sql_lease_release_ours(c, &h, &term, err, sizeof err), 0);
    check_untouched(c, n4, &before);

    /* No row: 0, and none made; in another data center: not ours either. */
    reign__lease_claim none = claim(n5, "alice", "guid-alice-1", LONG_MS);
    CHECK_RC(reign__sql_lease_release_ours(c, &none, &term, err, sizeof err), 0);
    read_ok(c, n5, &l);
    CHECK(!l.exists);
    reign__lease_claim dc2 = a_new;
    dc2.dc = "dc2";
    CHECK_RC(reign__sql_lease_release_ours(c, &dc2, &term, err, sizeof err), 0);
    check_untouched(c, n2, &restarted);

    reign__lease_clear(&l);
    reign__lease_clear(&before);
    reign__lease_clear(&restarted);
    reign__sql_close(listener);
    reign__sql_close(c);
    say("release_ours: ok");
}

/* ---- helpers of sql.c (no store needed) ---------------------------------------------------- */

/*
 * A follower's count (reign__lease_free_at): a lease may be taken over a whole duration after
 * the follower FIRST saw its version, on the follower's clock - every renewal restarts the
 * count, the database's times play no part, and a released lease is free at once.
 */
static void test_free_at(void)
{
    const int64_t ms = 1000000, d = 2000;
    reign__lease_seen seen = {0};
    reign__lease l = {.exists = true, .term = 4, .term_duration = 7, .duration_ms = d};
    /* Whatever the database says of its clock and times. */
    l.db_now_ms = INT64_C(1) << 50;
    l.modified_ms = 0;
    l.db_expired = true;
    CHECK(reign__lease_free_at(&seen, &l, 100 * ms) == 100 * ms + d * ms);
    /* Seen again, unchanged: counted from the first sight, not the last. */
    l.db_now_ms = 0;
    l.modified_ms = INT64_C(1) << 50;
    l.db_expired = false;
    CHECK(reign__lease_free_at(&seen, &l, 1500 * ms) == 100 * ms + d * ms);
    /* A renewal (term_duration moved): the count starts again. */
    l.term_duration = 8;
    CHECK(reign__lease_free_at(&seen, &l, 1900 * ms) == 1900 * ms + d * ms);
    /* A takeover (term moved, term_duration back to 0): again. */
    l.term = 5;
    l.term_duration = 0;
    CHECK(reign__lease_free_at(&seen, &l, 2000 * ms) == 2000 * ms + d * ms);
    /* Released: free at once, at the read. */
    l.duration_ms = 0;
    l.released = true;
    CHECK(reign__lease_free_at(&seen, &l, 2100 * ms) == 2100 * ms);
    /* A foreign duration beyond any lease: never (a person must look). */
    l.released = false;
    l.duration_ms = REIGN__SQL_DURATION_MAX_MS + 1;
    CHECK(reign__lease_free_at(&seen, &l, 2200 * ms) == INT64_MAX);
    /* No row: nothing to take over, and the count is forgotten. */
    l.exists = false;
    CHECK(reign__lease_free_at(&seen, &l, 2300 * ms) == INT64_MAX);
    CHECK(!seen.known);
    say("free_at: ok");
}

static void test_helpers(void)
{
    test_free_at();
    /* Passwords are cut out of messages, wherever and however often they appear. */
    char msg[128] = "user x password s3cret! and again s3cret!";
    reign__sql_scrub(msg, "s3cret!");
    CHECK(!strcmp(msg, "user x password *** and again ***"));
    char shortpw[32] = "a=ab b=ab";
    reign__sql_scrub(shortpw, "ab");
    CHECK(!strcmp(shortpw, "a=** b=**"));
    char stars[32] = "pw=*** or ****";
    reign__sql_scrub(stars, "***");
    reign__sql_scrub(stars, "*");
    CHECK(!strcmp(stars, "pw=*** or ****"));

    /* Channel names: identifiers, at most 63 bytes, the same for the same (table, dc, name),
     * different when any of them differs - even for names no identifier could hold. */
    char a[64], b[64], c2[64], d[64];
    char long_name[1100];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    reign__sql_channel(a, "x2345678901234567890123456789012345678901234567890123456789012",
                       "dc\"; DROP TABLE t; --", long_name);
    CHECK(strlen(a) <= 63);
    for (const char *p = a; *p; p++)
        CHECK((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_');
    reign__sql_channel(b, "t", "dc1", "name");
    reign__sql_channel(c2, "t", "dc1", "name");
    CHECK(!strcmp(b, c2));
    reign__sql_channel(c2, "t", "dc1n", "ame"); /* the NUL between dc and name counts */
    CHECK(strcmp(b, c2));
    reign__sql_channel(d, "u", "dc1", "name");
    CHECK(strcmp(b, d));

    /* Only the table name is spliced into statements. */
    char *out = reign__sql_splice("SELECT * FROM \"{T}\" WHERE {T}.x", "tab");
    CHECK(out && !strcmp(out, "SELECT * FROM \"tab\" WHERE tab.x"));
    reign__free(out);
    out = reign__sql_splice("{T", "tab"); /* a brace that names no table stays */
    CHECK(out && !strcmp(out, "{T"));
    reign__free(out);
    /* As long as it needs: a statement over many rows has no fixed limit. */
    char big[8192];
    memset(big, 'x', sizeof big - 4);
    memcpy(big + sizeof big - 4, "{T}", 4);
    out = reign__sql_splice(big, "tab");
    CHECK(out && strlen(out) == sizeof big - 4 + 3 && !strcmp(out + sizeof big - 4, "tab"));
    reign__free(out);

    /* Unique keys that make (data_center, lock_name) unique, and those that do not. */
    const char *k1[] = {"data_center", "lock_name"};
    const char *k2[] = {"LOCK_NAME"};
    const char *k3[] = {"data_center", "lock_name", "owner"};
    const char *k4[] = {"data_center", NULL};
    CHECK(reign__sql_unique_ok(k1, 2, false));
    CHECK(reign__sql_unique_ok(k2, 1, true) && !reign__sql_unique_ok(k2, 1, false));
    CHECK(!reign__sql_unique_ok(k3, 3, false));
    CHECK(!reign__sql_unique_ok(k4, 2, false));
    CHECK(!reign__sql_unique_ok(k1, 0, false));

    /* Without a store there is no connection, and the calls say so. */
    reign__lease l = {0};
    CHECK_RC(reign__sql_lease_read(NULL, "dc", "n", &l, err, sizeof err), REIGN_EINVAL);
    CHECK(reign__sql_listen_fd(NULL) == -1);
    reign__sql_close(NULL);
    reign__lease_clear(NULL);
    say("helpers: ok");
}

/* ---- one backend -------------------------------------------------------------------------- */

/* ---- the runs table of slots (runs.h) ----------------------------------------------------- */

static reign__run_row run_row(const char *slot, unsigned attempt, const char *owner, uint64_t term)
{
    reign__run_row r = {.attempt = attempt, .term = term, .token = term * 10};
    snprintf(r.slot, sizeof r.slot, "%s", slot);
    snprintf(r.owner, sizeof r.owner, "%s", owner);
    snprintf(r.host, sizeof r.host, "host-%s", owner);
    return r;
}

/*
 * A leadership's writes to the record are fenced by the database: a start or a mark carries
 * the writer's term, and once the lease has moved to another term the same statements are
 * refused (REIGN__RUNS_DEPOSED) and change nothing.  Ends are compare-and-set on the row.
 */
static void test_runs(reign__sqlconn *c, const char *tag)
{
    char name[96];
    snprintf(name, sizeof name, "%s-slots-%d", tag, (int)getpid());
    reign__run_rows rows = {0};

    /* Nothing yet: no rows (whether or not the table exists), and the database's clock. */
    CHECK_RC(reign__runs_read(c, "dc1", name, "2024-05-01", &rows, err, sizeof err), 0);
    CHECK(rows.n == 0 && rows.db_now_ms > 0);
    reign__run_rows_free(&rows);

    /* alice leads at term 1 and starts attempt 1. */
    reign__lease_claim a = claim(name, "alice", "guid-a", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &a, err, sizeof err), 1);
    reign__run_row r1 = run_row("2024-05-01", 1, "alice", 1);
    CHECK_RC(reign__runs_start(c, "dc1", name, &r1, 1, err, sizeof err), 1);
    /* Again, or by a writer that claims a term the lease never had: refused. */
    CHECK_RC(reign__runs_start(c, "dc1", name, &r1, 1, err, sizeof err), 0);
    reign__run_row r2 = run_row("2024-05-01", 2, "alice", 1);
    CHECK_RC(reign__runs_start(c, "dc1", name, &r2, 1, err, sizeof err), 0); /* 1 still runs */
    CHECK_RC(reign__runs_start(c, "dc1", name, &r2, 2, err, sizeof err), REIGN__RUNS_DEPOSED);
    CHECK_RC(reign__runs_read(c, "dc1", name, "2024-05-01", &rows, err, sizeof err), 0);
    CHECK(rows.n == 1 && rows.v[0].attempt == 1 && rows.v[0].end_ms == 0);
    CHECK(!strcmp(rows.v[0].owner, "alice") && !strcmp(rows.v[0].host, "host-alice"));
    CHECK(rows.v[0].term == 1 && rows.v[0].token == 10 && !strcmp(rows.v[0].result, "running"));
    CHECK(rows.v[0].start_ms > 0 && rows.v[0].start_ms <= rows.db_now_ms);
    reign__run_rows_free(&rows);

    /* bob takes the lease (term 2).  alice, deposed, can no longer start or mark anything:
     * the database refuses it. */
    CHECK_RC(reign__sql_lease_release(c, &a, 1, err, sizeof err), 1);
    reign__lease_claim b = claim(name, "bob", "guid-b", LONG_MS);
    uint64_t term = 0;
    CHECK_RC(reign__sql_lease_take(c, &b, 1, &term, err, sizeof err), 1);
    CHECK(term == 2);
    CHECK_RC(
        reign__runs_mark(c, "dc1", name, "2024-05-01", 1, "lost", 0, "retry", 1, err, sizeof err),
        REIGN__RUNS_DEPOSED);
    /* bob marks attempt 1 lost; alice's late end of it is refused (compare-and-set). */
    CHECK_RC(
        reign__runs_mark(c, "dc1", name, "2024-05-01", 1, "lost", 0, "retry", 2, err, sizeof err),
        1);
    CHECK_RC(reign__runs_end(c, "dc1", name, "2024-05-01", 1, 1, "exited", 0, "succeeded", 0, err,
                             sizeof err),
             0);
    /* bob runs attempt 2, ends it; alice (term 1) cannot start attempt 3. */
    reign__run_row r2b = run_row("2024-05-01", 2, "bob", 2);
    CHECK_RC(reign__runs_start(c, "dc1", name, &r2b, 2, err, sizeof err), 1);
    CHECK_RC(reign__runs_end(c, "dc1", name, "2024-05-01", 2, 2, "exited", 0, "succeeded", 0, err,
                             sizeof err),
             1);
    CHECK_RC(reign__runs_end(c, "dc1", name, "2024-05-01", 2, 2, "exited", 0, "succeeded", 0, err,
                             sizeof err),
             0);
    reign__run_row r3 = run_row("2024-05-01", 3, "alice", 1);
    CHECK_RC(reign__runs_start(c, "dc1", name, &r3, 1, err, sizeof err), REIGN__RUNS_DEPOSED);
    /* ... nor bob: the slot succeeded. */
    reign__run_row r3b = run_row("2024-05-01", 3, "bob", 2);
    CHECK_RC(reign__runs_start(c, "dc1", name, &r3b, 2, err, sizeof err), 0);
    CHECK_RC(reign__runs_read(c, "dc1", name, "2024-05-01", &rows, err, sizeof err), 0);
    CHECK(rows.n == 2);
    CHECK(!strcmp(rows.v[0].result, "lost") && !strcmp(rows.v[0].verdict, "retry"));
    CHECK(rows.v[0].end_ms >= rows.v[0].start_ms);
    CHECK(!strcmp(rows.v[1].result, "exited") && !strcmp(rows.v[1].verdict, "succeeded"));
    CHECK(!strcmp(rows.v[1].owner, "bob") && rows.v[1].term == 2);
    reign__run_rows_free(&rows);

    /* Two more slots, then the record cut to the newest two. */
    reign__run_row s2 = run_row("2024-05-02", 1, "bob", 2);
    reign__run_row s3 = run_row("2024-05-03", 1, "bob", 2);
    CHECK_RC(reign__runs_start(c, "dc1", name, &s2, 2, err, sizeof err), 1);
    CHECK_RC(reign__runs_start(c, "dc1", name, &s3, 2, err, sizeof err), 1);
    CHECK_RC(reign__runs_history(c, "dc1", name, &rows, err, sizeof err), 0);
    CHECK(rows.n == 4 && !strcmp(rows.v[0].slot, "2024-05-01") &&
          !strcmp(rows.v[3].slot, "2024-05-03"));
    reign__run_rows_free(&rows);
    CHECK_RC(reign__runs_prune(c, "dc1", name, 2, err, sizeof err), 1);
    CHECK_RC(reign__runs_history(c, "dc1", name, &rows, err, sizeof err), 0);
    CHECK(rows.n == 2 && !strcmp(rows.v[0].slot, "2024-05-02"));
    reign__run_rows_free(&rows);
    /* Another data center is another record. */
    CHECK_RC(reign__runs_history(c, "dc2", name, &rows, err, sizeof err), 0);
    CHECK(rows.n == 0);
    int64_t now = 0;
    CHECK_RC(reign__runs_now(c, &now, err, sizeof err), 0);
    CHECK(now > 0);
    say("%s: the runs table: fenced starts and marks, compare-and-set ends, pruning", tag);
}

static int run_backend(reign__sql_kind kind)
{
    backend b;
    backend_init(&b, kind);
    char tables[12][64];
    int n_tables = 0;
    reign__logger lg = {.fn = log_sink, .level = REIGN_LOG_INFO};

    char *main_table = tables[n_tables++];
    snprintf(main_table, 64, "t%d_lease", (int)getpid());
    snprintf(tables[n_tables++], 64, "t%d_lease_runs", (int)getpid());
    if (kind == REIGN__SQL_SQLITE) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/lease.db", b.state);
        remove_db(path);
    }
    reign__sql_target t = target(&b, main_table, NULL);
    t.log = &lg;
    reign__sqlconn *c = connect_ok(&t);
    /* Twice, and from a second connection: idempotent. */
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    reign__sqlconn *c2 = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c2, err, sizeof err), 0);
    reign__sql_close(c2);

    test_protocol(c, b.name);
    test_depose(c, b.name);
    test_designate(c, b.name);
    test_runs(c, b.name);
    if (kind == REIGN__SQL_POSTGRES)
        test_prepared_discarded(c);
    reign__sql_close(c);
    test_notify(&b, main_table);
    if (kind == REIGN__SQL_SQLITE)
        test_file_moved(&b, main_table);
    test_release_ours(&b, main_table, b.name);
    test_schema(&b, tables, &n_tables);
    if (kind == REIGN__SQL_MARIADB)
        test_depose_on_update(&b, tables, &n_tables);
    char *race = tables[n_tables++];
    snprintf(race, 64, "t%d_race", (int)getpid());
    if (kind == REIGN__SQL_SQLITE) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/race.db", b.state);
        remove_db(path);
    }
    test_schema_race(&b, race);
    test_connect_errors(&b);

    if (kind != REIGN__SQL_SQLITE) {
        for (int i = 0; i < n_tables; i++) {
            char sql[640], out[64];
            snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %.63s", tables[i]);
            admin_sql(&b, sql, out, sizeof out);
        }
    }
    say("%s: all ok", b.name);
    return 0;
}

/* ---- twenty processes on one SQLite file -------------------------------------------------- */

static void hammer_child(const char *path, const char *logpath, int idx)
{
    reign__sql_target t = {.kind = REIGN__SQL_SQLITE, .path = path};
    reign__sqlconn *c = NULL;
    char e[512] = "";
    int rc = reign__sql_connect(&c, &t, e, sizeof e);
    if (rc)
        goto failed;
    if ((rc = reign__sql_ensure_schema(c, e, sizeof e)))
        goto failed;
    int log = open(logpath, O_WRONLY | O_APPEND);
    if (log < 0) {
        perror("open log");
        _exit(1);
    }
    char owner[32], guid[32];
    snprintf(owner, sizeof owner, "p%d", idx);
    snprintf(guid, sizeof guid, "g%d-%d", idx, (int)getpid());
    /* A short lease, so that holders change all the time; every tenth renewal is a release. */
    reign__lease_claim cl = {
        .dc = "dc", .name = "hammer", .owner = owner, .owner_guid = guid, .duration_ms = 20};
    int64_t until = now_ms() + HAMMER_MS;
    int held = 0, ops = 0;
    reign__lease l = {0};
    while (now_ms() < until) {
        if ((rc = reign__sql_lease_read(c, "dc", "hammer", &l, e, sizeof e)) < 0)
            goto failed;
        ops++;
        uint64_t term = 0;
        if (!l.exists) {
            rc = reign__sql_lease_insert(c, &cl, e, sizeof e);
            term = 1;
        } else if (!strcmp(l.owner, owner) && !strcmp(l.owner_guid, guid)) {
            term = l.term;
            rc = ops % 10 ? reign__sql_lease_renew(c, &cl, term, e, sizeof e)
                          : reign__sql_lease_release(c, &cl, term, e, sizeof e);
            if (!(ops % 10))
                rc = 0; /* a release is not a holding */
        } else if (l.released || l.db_expired) {
            /* The database's clock stands in for a follower's own count here: what this
             * hammers is that one version is taken once. */
            cl.expect_renewals = l.term_duration;
            cl.take_released = l.released;
            rc = reign__sql_lease_take(c, &cl, l.term, &term, e, sizeof e);
        } else {
            rc = 0;
        }
        if (rc < 0)
            goto failed;
        if (rc == 1) {
            char line[64];
            int n =
                snprintf(line, sizeof line, "%llu %d\n", (unsigned long long)term, (int)getpid());
            if (write(log, line, (size_t)n) != n) {
                perror("write log");
                _exit(1);
            }
            held++;
        }
    }
    reign__lease_clear(&l);
    reign__sql_close(c);
    close(log);
    fprintf(stderr, "# process %d: %d reads, %d holdings\n", idx, ops, held);
    _exit(0);
failed:
    fprintf(stderr, "FAIL process %d: %s: %s\n", idx, reign_err_name(rc), e);
    _exit(1);
}

static int run_concurrency(void)
{
    backend b;
    backend_init(&b, REIGN__SQL_SQLITE);
    char path[PATH_MAX], logpath[PATH_MAX];
    snprintf(path, sizeof path, "%s/hammer.db", b.state);
    snprintf(logpath, sizeof logpath, "%s/hammer.log", b.state);
    remove_db(path);
    int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    close(fd);

    /* The children create the file, the table and WAL mode themselves, all at once. */
    pid_t pids[N_HAMMER];
    for (int i = 0; i < N_HAMMER; i++) {
        pids[i] = fork();
        CHECK(pids[i] >= 0);
        if (pids[i] == 0)
            hammer_child(path, logpath, i);
    }
    int failed = 0;
    for (int i = 0; i < N_HAMMER; i++) {
        int status;
        while (waitpid(pids[i], &status, 0) < 0 && errno == EINTR) {
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    CHECK(failed == 0);

    /* Every term was held by one process only. */
    FILE *f = fopen(logpath, "r");
    CHECK(f);
    enum { MAX_TERMS = 1 << 20 };
    int *holder = calloc(MAX_TERMS, sizeof *holder);
    CHECK(holder);
    unsigned long long term;
    int pid, lines = 0, terms = 0;
    while (fscanf(f, "%llu %d", &term, &pid) == 2) {
        lines++;
        CHECK(term > 0 && term < MAX_TERMS);
        if (!holder[term]) {
            holder[term] = pid;
            terms++;
        } else if (holder[term] != pid) {
            fail(__FILE__, __LINE__, "term %llu held by both %d and %d", term, holder[term], pid);
        }
    }
    fclose(f);
    free(holder);
    say("%d holdings in %d terms by %d processes, no term shared", lines, terms, N_HAMMER);
    /* The test must have tested something: many terms, not one process holding all along. */
    CHECK(terms > N_HAMMER);
    return 0;
}

/* ---- a server restarted, paused ----------------------------------------------------------- */

static int run_fault(reign__sql_kind kind)
{
    backend b;
    memset(&b, 0, sizeof b);
    b.kind = kind;
    b.name = kind == REIGN__SQL_MARIADB ? "mariadb" : "postgres";
    b.script = kind == REIGN__SQL_MARIADB ? "mariadb.sh" : "pg.sh";
    snprintf(b.state, sizeof b.state, "%s", need_env("REIGN_TEST_STATE_DIR"));
    mkdir_p(b.state);
    snprintf(b.dir, sizeof b.dir, "%s/%s", b.state, kind == REIGN__SQL_MARIADB ? "m" : "pg");
    server_cmd(&b, "start");
    backend_load(&b);

    /* Generous timeouts where a step must succeed (a loaded machine, a server just resumed or
     * recovering), short ones where the test is that a stopped server makes a call give up. */
    reign__sql_target t = target(&b, "fault_lease", NULL);
    t.statement_timeout_ms = 30000;
    t.connect_timeout_ms = 30000;
    reign__sql_target t_short = t;
    t_short.statement_timeout_ms = 2000;
    t_short.connect_timeout_ms = 2000;

    if (kind == REIGN__SQL_MARIADB) {
        /* MariaDB names a missing database only to a user whose rights would cover it. */
        char out[64];
        admin_sql(&b, "GRANT ALL ON `reign\\_extra\\_%`.* TO 'reign'@'%'", out, sizeof out);
        reign__sql_target missing = t;
        missing.database = "reign_extra_missing";
        expect_connect_error(&missing, REIGN_ENOENT, "missing database, with rights to it");
    }
    reign__sqlconn *c = connect_ok(&t);
    CHECK_RC(reign__sql_ensure_schema(c, err, sizeof err), 0);
    reign__lease_claim cl = claim("fault", "henry", "guid-henry-1", LONG_MS);
    CHECK_RC(reign__sql_lease_insert(c, &cl, err, sizeof err), 1);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), 1);

    /* Restarted between two statements: the next fails cleanly, and says so again after. */
    server_cmd(&b, "restart");
    int rc = reign__sql_lease_renew(c, &cl, 1, err, sizeof err);
    say("renew after the restart: %s: %s", reign_err_name(rc), err);
    CHECK(rc == REIGN_ECONNLOSS || rc == REIGN_ECONNECT);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), REIGN_ECONNLOSS);
    reign__sql_close(c);

    /* A new connection works, and the lease survived the restart. */
    c = connect_ok(&t);
    reign__lease l = {0};
    read_ok(c, "fault", &l);
    CHECK(l.exists && l.term == 1 && !strcmp(l.owner, "henry"));
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), 1);

    reign__sql_close(c);

    /* Paused: a statement gives up within its timeout (a hang would reach the ctest timeout),
     * and so does a new connection. */
    c = connect_ok(&t_short);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), 1);
    server_cmd(&b, "pause-server");
    wait_paused(&b);
    int64_t start = now_ms();
    rc = reign__sql_lease_renew(c, &cl, 1, err, sizeof err);
    say("renew while paused: %s after %lld ms: %s", reign_err_name(rc),
        (long long)(now_ms() - start), err);
    CHECK(rc == REIGN_ETIMEDOUT || rc == REIGN_ECONNLOSS);
    CHECK(now_ms() - start < WAIT_MS);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), REIGN_ECONNLOSS);
    reign__sql_close(c);
    expect_connect_error(&t_short, REIGN_ECONNECT, "connect to a paused server");
    server_cmd(&b, "resume-server");

    c = connect_ok(&t);
    read_ok(c, "fault", &l);
    CHECK(l.exists && l.term == 1);
    reign__lease_clear(&l);
    reign__sql_close(c);

    /* Killed: the same clean failure. */
    c = connect_ok(&t);
    server_cmd(&b, "kill-server");
    rc = reign__sql_lease_renew(c, &cl, 1, err, sizeof err);
    say("renew after a kill: %s: %s", reign_err_name(rc), err);
    CHECK(rc == REIGN_ECONNLOSS || rc == REIGN_ECONNECT);
    reign__sql_close(c);
    expect_connect_error(&t_short, REIGN_ECONNECT, "connect to a killed server");
    server_cmd(&b, "start-server");
    c = connect_ok(&t);
    CHECK_RC(reign__sql_lease_renew(c, &cl, 1, err, sizeof err), 1);
    reign__sql_close(c);

    server_cmd(&b, "stop");
    say("%s faults: all ok", b.name);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stderr, NULL, _IOLBF, 0);
    /* SIGPIPE is left as it is: a write to a connection the server closed must be an error
     * of the client library (libpq and Connector/C send with MSG_NOSIGNAL), not a signal. */
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "sqlite")) {
        test_helpers();
        return run_backend(REIGN__SQL_SQLITE);
    }
    if (!strcmp(mode, "mariadb"))
        return run_backend(REIGN__SQL_MARIADB);
    if (!strcmp(mode, "postgres"))
        return run_backend(REIGN__SQL_POSTGRES);
    if (!strcmp(mode, "sqlite-concurrency"))
        return run_concurrency();
    if (!strcmp(mode, "fault-mariadb"))
        return run_fault(REIGN__SQL_MARIADB);
    if (!strcmp(mode, "fault-postgres"))
        return run_fault(REIGN__SQL_POSTGRES);
    fprintf(stderr,
            "usage: %s sqlite|mariadb|postgres|sqlite-concurrency|fault-mariadb|"
            "fault-postgres\n",
            argv[0]);
    return 2;
}
