/*
 * reignd_stamp.c - the hook and fence command of bench/reignd.py: appends one
 * line, "WHAT NODE SERVICE TERM TOKEN MONOTONIC_NS", to the file named by
 * $REIGND_STAMP_FILE and exits 0.
 *
 * The clock is read first thing, so the line says when reignd's hook really
 * started running (after /bin/sh and the exec), in CLOCK_MONOTONIC, which
 * the harness and the dummy services read too.  A Python one-liner would add
 * the interpreter's start (tens of milliseconds) to every failover measured.
 * One write(2) on an O_APPEND descriptor: lines from several nodes never mix.
 *
 * `reignd-stamp --lines` is the other end of a daemon's stderr: it copies
 * each line from stdin to stdout behind the CLOCK_MONOTONIC time the read
 * that brought it returned.  A process of its own, blocked in read(2), marks
 * a log line within microseconds of its writing; a reader thread in the
 * Python harness could be late by tens of milliseconds on a busy machine.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* stdin to stdout, each line behind the time its bytes arrived. */
static int stamp_lines(void)
{
    static char buf[65536];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(0, buf + len, sizeof(buf) - 1 - len);
        if (n <= 0)
            break;
        long long t = now_ns();
        len += (size_t)n;
        char *start = buf, *nl;
        while ((nl = memchr(start, '\n', len - (size_t)(start - buf))) != NULL) {
            printf("%lld %.*s\n", t, (int)(nl - start), start);
            start = nl + 1;
        }
        len -= (size_t)(start - buf);
        memmove(buf, start, len);
        if (len == sizeof(buf) - 1) { /* a line longer than the buffer: cut it */
            printf("%lld %.*s\n", t, (int)len, buf);
            len = 0;
        }
        fflush(stdout);
    }
    if (len > 0)
        printf("%lld %.*s\n", now_ns(), (int)len, buf);
    return fflush(stdout) == 0 ? 0 : 1;
}

static const char *env_or_dash(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : "-";
}

int main(int argc, char **argv)
{
    long long t = now_ns();
    if (argc == 2 && strcmp(argv[1], "--lines") == 0)
        return stamp_lines();
    const char *path = getenv("REIGND_STAMP_FILE");
    if (argc != 2 || !path) {
        fprintf(stderr, "usage: REIGND_STAMP_FILE=FILE reignd-stamp WHAT\n"
                        "       reignd-stamp --lines <IN >OUT\n");
        return 2;
    }
    char line[512];
    int n = snprintf(line, sizeof(line), "%s %s %s %s %s %lld\n", argv[1],
                     env_or_dash("REIGN_NODE_ID"), env_or_dash("REIGN_SERVICE"),
                     env_or_dash("REIGN_TERM"), env_or_dash("REIGN_TOKEN"), t);
    if (n < 0 || (size_t)n >= sizeof(line))
        return 1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    int ok = write(fd, line, (size_t)n) == n;
    close(fd);
    return ok ? 0 : 1;
}
