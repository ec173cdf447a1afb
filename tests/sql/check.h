/*
 * check.h - the checks of the SQL tests (test_sql_lease.c, test_sql_dl.c): a failed check
 * names its place and the last error message of the code under test (err), and ends the
 * program with status 1; and the helpers that read what ctest and the server scripts leave.
 * For one-file test programs: everything here is static.
 */
#ifndef REIGN_TEST_SQL_CHECK_H
#define REIGN_TEST_SQL_CHECK_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/common.h>

/* The last error message: pass it as the errbuf of the calls under test. */
static char err[512];

static void fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "FAIL %s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  last error message: %s\n", err[0] ? err : "(none)");
    exit(1);
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fail(__FILE__, __LINE__, "check failed: %s", #cond);                                   \
    } while (0)

/* expr must return `want`; otherwise both are named, with err. */
#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ != (want))                                                                         \
            fail(__FILE__, __LINE__, "%s returned %d (%s), want %d (%s)", #expr, rc_,              \
                 rc_ < 0 ? reign_err_name(rc_) : "", (want),                                       \
                 (want) < 0 ? reign_err_name(want) : "");                                          \
    } while (0)

/* A progress line ("# ...") on stderr. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "# ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

/* The value of an environment variable ctest sets; the program ends without it. */
__attribute__((unused)) static const char *need_env(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set (run this test through ctest)\n", name);
        exit(1);
    }
    return v;
}

/* The first line of DIR/NAME (a server's uri, password, port), into out. */
__attribute__((unused)) static void read_file(const char *dir, const char *name, char *out,
                                              size_t n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        fail(__FILE__, __LINE__, "cannot read %s: %s", path, strerror(errno));
    size_t len = fread(out, 1, n - 1, f);
    fclose(f);
    out[len] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
}

#endif
