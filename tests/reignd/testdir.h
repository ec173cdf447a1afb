/*
 * testdir.h - what the tests of reignd's child processes share: a fresh
 * temporary directory per test (cmocka setup/teardown), and a way to see
 * that a process they started is gone.
 */
#ifndef REIGND_TESTDIR_H
#define REIGND_TESTDIR_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

static char dir[64];

static int setup(void **state)
{
    snprintf(dir, sizeof(dir), "/tmp/reignd-test-XXXXXX");
    assert_non_null(mkdtemp(dir));
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* True while `pid` runs (a zombie no longer does: an orphan's reaping is up
 * to init, which in a container may never come). */
static bool process_alive(pid_t pid)
{
    char path[64], st[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(st, 1, sizeof(st) - 1, f);
    fclose(f);
    st[n] = '\0';
    const char *paren = strrchr(st, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z';
}

/* Fails unless `pid` is gone within a generous 10 s (SIGKILL was sent to
 * its group; only the kernel's delivery is waited for). */
static void assert_process_gone(pid_t pid)
{
    for (int i = 0; i < 1000 && process_alive(pid); i++)
        usleep(10000);
    assert_false(process_alive(pid));
}

/* Lets no new file descriptor be opened (so a spawn fails) until
 * allow_fds(); returns the limit to give back. */
static struct rlimit forbid_fds(void)
{
    struct rlimit old, none;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int lowest = dup(0);
    assert_true(lowest >= 0);
    close(lowest);
    none = old;
    none.rlim_cur = (rlim_t)lowest;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
    return old;
}

static void allow_fds(struct rlimit old)
{
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
}

#endif
