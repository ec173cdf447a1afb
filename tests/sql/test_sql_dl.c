/*
 * test_sql_dl.c - the SQL client libraries load only when a client of their
 * store is made (src/sql/dl.h), through the public API of the shared
 * libreign.  This program links libreign alone: no SQL client library.
 *
 * Usage: test_sql_dl MODE, one ctest entry per mode:
 *   maps     a zk:// client maps none of libsqlite3, libmariadb, libpq (read in
 *            /proc/self/maps); then a sqlite:// client (connected to a file under
 *            $REIGN_TEST_STATE_DIR) maps libsqlite3 and nothing else, a postgres:// client
 *            adds libpq, a mysql:// client libmariadb.
 *   missing  run with REIGN_TEST_LIBPQ naming a file that does not exist and
 *            REIGN_TEST_LIBMARIADB naming a library without MariaDB's functions (dl.h's test
 *            hook): reign_client_new() refuses postgres:// and mysql:// with REIGN_ENOTSUP and
 *            the message naming the library and its Debian package, every time; zk:// and
 *            sqlite:// are unaffected; and `reign campaign` ($REIGN_CLI) on postgres:// says
 *            the same and fails.
 *
 * The postgres:// and mysql:// clients point at a closed port: they are only created, never
 * expected to connect.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <reign/reign.h>

#include "check.h"

/* ---- what is mapped ----------------------------------------------------------------------- */

enum { SQLITE = 1, MARIADB = 2, PQ = 4 };

static const struct {
    int bit;
    const char *file; /* as it appears in a path of /proc/self/maps */
} libs[] = {{SQLITE, "/libsqlite3.so"}, {MARIADB, "/libmariadb.so"}, {PQ, "/libpq.so"}};

/* The SQL client libraries mapped into this process, as bits. */
static int mapped(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    CHECK(f != NULL);
    char line[4096];
    int found = 0;
    while (fgets(line, sizeof line, f))
        for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
            if (strstr(line, libs[i].file))
                found |= libs[i].bit;
    fclose(f);
    return found;
}

#define CHECK_MAPPED(want)                                                                         \
    do {                                                                                           \
        int m_ = mapped();                                                                         \
        if (m_ != (want))                                                                          \
            fail(__FILE__, __LINE__,                                                               \
                 "mapped SQL libraries: sqlite %d mariadb %d pq %d (want "                         \
                 "%d %d %d)",                                                                      \
                 !!(m_ & SQLITE), !!(m_ & MARIADB), !!(m_ & PQ), !!((want)&SQLITE),                \
                 !!((want)&MARIADB), !!((want)&PQ));                                               \
    } while (0)

static reign_client *client(const char *uri)
{
    reign_client *c = NULL;
    err[0] = '\0';
    CHECK_RC(reign_client_new(&c, uri, NULL, err, sizeof err), 0);
    return c;
}

static void sqlite_uri(char *out, size_t n)
{
    const char *dir = getenv("REIGN_TEST_STATE_DIR");
    CHECK(dir && dir[0] == '/');
    CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
    int w = snprintf(out, n, "sqlite://%s/dl.db", dir);
    CHECK(w > 0 && (size_t)w < n);
}

static void test_maps(void)
{
    CHECK_MAPPED(0);
    reign_client *zk = client("zk://127.0.0.1:1/reign_dl");
    CHECK_MAPPED(0);

    char uri[600];
    sqlite_uri(uri, sizeof uri);
    reign_client *lite = client(uri);
    CHECK_RC(reign_client_wait_connected(lite), 0);
    CHECK_MAPPED(SQLITE);

    reign_client *pq = client("postgres://reign:pw@127.0.0.1:1/reign");
    CHECK_MAPPED(SQLITE | PQ);
    reign_client *maria = client("mysql://reign:pw@127.0.0.1:1/reign");
    CHECK_MAPPED(SQLITE | PQ | MARIADB);

    reign_client_free(maria);
    reign_client_free(pq);
    reign_client_free(lite);
    reign_client_free(zk);
    say("maps: zk:// maps no SQL library; each SQL store maps its own: OK");
}

/* ---- a missing library -------------------------------------------------------------------- */

static void starts_with(const char *s, const char *prefix)
{
    if (strncmp(s, prefix, strlen(prefix)))
        fail(__FILE__, __LINE__, "message \"%s\" does not start with \"%s\"", s, prefix);
}

static void refused(const char *uri, const char *prefix, const char *detail)
{
    /* Twice: the outcome of the one load is kept and given again. */
    for (int i = 0; i < 2; i++) {
        reign_client *c = NULL;
        err[0] = '\0';
        CHECK_RC(reign_client_new(&c, uri, NULL, err, sizeof err), REIGN_ENOTSUP);
        CHECK(c == NULL);
        starts_with(err, prefix);
        CHECK(strstr(err, detail) != NULL);
    }
}

/* Runs `reign campaign` on a postgres:// URI (given in the environment, with a password) and
 * returns what it wrote to stderr; its exit status into *status. */
static char *run_cli(const char *cli, int *status)
{
    static char out[4096];
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        close(p[1]);
        setenv("REIGN_URI", "postgres://reign@127.0.0.1:1/reign", 1);
        setenv("REIGN_PASSWORD", "dl-secret-7", 1);
        execl(cli, cli, "campaign", "dl_test", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(p[0], out + n, sizeof out - 1 - n)) != 0) {
        if (r < 0 && errno == EINTR)
            continue;
        CHECK(r > 0);
        n += (size_t)r;
    }
    while (n && out[n - 1] == '\n')
        n--;
    out[n] = '\0';
    close(p[0]);
    CHECK(waitpid(pid, status, 0) == pid);
    return out;
}

static void test_missing(void)
{
    const char *pq_file = getenv("REIGN_TEST_LIBPQ");
    CHECK(pq_file && strstr(pq_file, "nonexistent"));
    CHECK(getenv("REIGN_TEST_LIBMARIADB") != NULL);
    CHECK(getenv("REIGN_TEST_LIBSQLITE3") == NULL);

    refused("postgres://reign:pw@127.0.0.1:1/reign",
            "postgres:// needs libpq.so.5 (Debian package libpq5): ", pq_file);
    refused("postgresql://reign:pw@127.0.0.1:1/reign",
            "postgres:// needs libpq.so.5 (Debian package libpq5): ", pq_file);
    refused("mysql://reign:pw@127.0.0.1:1/reign",
            "mysql:// needs libmariadb.so.3 (Debian package libmariadb3): ", "no function mysql_");
    CHECK_MAPPED(0);

    /* The other stores do not care. */
    reign_client_free(client("zk://127.0.0.1:1/reign_dl"));
    char uri[600];
    sqlite_uri(uri, sizeof uri);
    reign_client *lite = client(uri);
    CHECK_RC(reign_client_wait_connected(lite), 0);
    reign_client_free(lite);
    CHECK_MAPPED(SQLITE);
    say("missing: reign_client_new says which library and package: OK");

    const char *cli = getenv("REIGN_CLI");
    if (!cli || !*cli) {
        say("missing: no REIGN_CLI, the CLI's message is not checked");
        return;
    }
    int status = 0;
    const char *out = run_cli(cli, &status);
    say("reign campaign said: %s", out);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 127);
    CHECK(strstr(out, "postgres:// needs libpq.so.5 (Debian package libpq5): ") != NULL);
    CHECK(strstr(out, "dl-secret-7") == NULL); /* the password never shows */
    say("missing: reign campaign fails with the same message: OK");
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "maps"))
        test_maps();
    else if (argc == 2 && !strcmp(argv[1], "missing"))
        test_missing();
    else {
        fprintf(stderr, "usage: test_sql_dl maps|missing\n");
        return 2;
    }
    return 0;
}
