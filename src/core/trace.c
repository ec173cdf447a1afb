/*
 * trace.c - the step trace of REIGN_TRACE (reign/common.h): one line per
 * step, appended with a single write(2) so that several processes and
 * threads can share a file without a lock.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core.h"

static int g_fd = -1;

/* Read once, when the library is loaded: a step must cost one branch. */
__attribute__((constructor)) static void trace_open(void)
{
    const char *path = getenv("REIGN_TRACE");
    if (path && *path)
        g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

bool reign_trace_enabled(void)
{
    return g_fd >= 0;
}

void reign_trace(const char *step, const char *fmt, ...)
{
    if (g_fd < 0)
        return;
    char line[512];
    int n = snprintf(line, sizeof(line), "%lld %d %d %s", (long long)reign__now_ns(), (int)getpid(),
                     (int)gettid(), step ? step : "?");
    if (fmt && n > 0 && (size_t)n < sizeof(line) - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fmt);
        int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
        va_end(ap);
        n = m < 0 ? n - 1 : (size_t)(n + m) >= sizeof(line) - 1 ? (int)sizeof(line) - 2 : n + m;
    }
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2; /* a step name longer than the line: cut, keep the newline */
    line[n++] = '\n';
    ssize_t w = write(g_fd, line, (size_t)n);
    (void)w; /* a lost line of a diagnostic trace is not worth an error path */
}
