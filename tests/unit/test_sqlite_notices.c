/*
 * test_sqlite_notices.c - SQLite's notice file (src/sql/sqlite_notices.h), between two
 * handles on one file in a directory of the test's own: what a listener hears, a transaction's
 * notices held until its end, the file cut to a new generation when it grows past its cap, a
 * torn line, a file removed under a writer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sql/sqlite_notices.h"

#define CH_A "reign_t_00000000000000aa"
#define CH_B "reign_t_00000000000000bb"

typedef struct heard_log {
    char v[64][128];
    size_t n, all;
} heard_log;

static void on_heard(void *arg, const char *payload)
{
    heard_log *h = arg;
    if (!payload) {
        h->all++;
        return;
    }
    if (h->n < 64)
        snprintf(h->v[h->n++], sizeof h->v[0], "%s", payload);
}

static char dir[] = "/tmp/reign-test-notices-XXXXXX";
static char db[sizeof dir + 8];

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(db, sizeof db, "%s/x.db", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char p[sizeof db + 32];
    snprintf(p, sizeof p, "%s%s", db, REIGN__NOTICES_SUFFIX);
    unlink(p);
    rmdir(dir);
    return 0;
}

static void listen_on(reign__notices *n, const char *chan)
{
    char c[1][64];
    snprintf(c[0], sizeof c[0], "%s", chan);
    assert_int_equal(reign__notices_listen(n, (const char(*)[64])c, 1, NULL, 0), 0);
}

static heard_log read_all(reign__notices *n)
{
    heard_log h = {0};
    assert_true(reign__notices_read(n, on_heard, &h) >= 0);
    return h;
}

/* A writer and a reader listening on CH_A, on a notice file made anew with mode. */
static void pair(reign__notices *w, reign__notices *r, mode_t mode)
{
    assert_int_equal(reign__notices_init(w, db, mode), 0);
    assert_int_equal(reign__notices_init(r, db, mode), 0);
    unlink(r->path);
    listen_on(r, CH_A);
}

static void test_post_and_hear(void **state)
{
    (void)state;
    reign__notices w, r;
    pair(&w, &r, 0640);
    struct stat st;
    assert_int_equal(stat(r.path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640); /* the database's mode, whatever the umask */
    heard_log h = read_all(&r);
    assert_int_equal(h.n + h.all, 0);

    /* Only the channels listened to; payloads with newlines and backslashes intact. */
    assert_int_equal(reign__notices_post(&w, CH_B, "other", false, NULL, 0), 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "e1\nhint \\ x", false, NULL, 0), 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "", false, NULL, 0), 0); /* names nothing */
    h = read_all(&r);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.v[0], "e1\nhint \\ x");
    assert_int_equal(h.all, 1);
    h = read_all(&r); /* read once only */
    assert_int_equal(h.n + h.all, 0);

    /* A transaction's: none until its end; dropped by a rollback, appended by a commit. */
    assert_int_equal(reign__notices_post(&w, CH_A, "held", true, NULL, 0), 0);
    h = read_all(&r);
    assert_int_equal(h.n, 0);
    assert_int_equal(reign__notices_commit(&w, false, NULL, 0), 0);
    h = read_all(&r);
    assert_int_equal(h.n, 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "kept", true, NULL, 0), 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "kept2", true, NULL, 0), 0);
    assert_int_equal(reign__notices_commit(&w, true, NULL, 0), 0);
    h = read_all(&r);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.v[0], "kept");
    assert_string_equal(h.v[1], "kept2");

    /* A torn line: not read until whole; one left torn for good is ended by the next writer. */
    FILE *f = fopen(r.path, "a");
    assert_non_null(f);
    fputs(CH_A " tor", f);
    fclose(f);
    h = read_all(&r);
    assert_int_equal(h.n, 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "after", false, NULL, 0), 0);
    h = read_all(&r);
    assert_int_equal(h.n, 2);
    assert_string_equal(h.v[0], "tor");
    assert_string_equal(h.v[1], "after");
    reign__notices_free(&w);
    reign__notices_free(&r);
}

static void test_cut_and_removed(void **state)
{
    (void)state;
    reign__notices w, r;
    pair(&w, &r, 0600);
    /* Past the cap, a writer starts a new generation: a reader that did not read meanwhile
     * hears "something changed", then what came after the cut. */
    char big[200];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    size_t posts = REIGN__NOTICES_CAP / sizeof big + 10;
    for (size_t i = 0; i < posts; i++)
        assert_int_equal(reign__notices_post(&w, CH_B, big, false, NULL, 0), 0);
    assert_int_equal(reign__notices_post(&w, CH_A, "late", false, NULL, 0), 0);
    struct stat st;
    assert_int_equal(fstat(w.fd, &st), 0);
    assert_true(st.st_size < REIGN__NOTICES_CAP);
    heard_log h = read_all(&r);
    assert_true(h.all >= 1);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.v[0], "late");

    /* Removed under the writer: it appends to the file the path names now, where a reader
     * that finds its file moved reads from the start. */
    assert_false(reign__notices_moved(&r));
    unlink(w.path);
    assert_true(reign__notices_moved(&r));
    assert_int_equal(reign__notices_reopen(&r), 0);
    assert_false(reign__notices_moved(&r));
    assert_int_equal(reign__notices_post(&w, CH_A, "new file", false, NULL, 0), 0);
    h = read_all(&r);
    assert_int_equal(h.n, 1);
    assert_string_equal(h.v[0], "new file");
    reign__notices_free(&w);
    reign__notices_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_post_and_hear),
        cmocka_unit_test(test_cut_and_removed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
