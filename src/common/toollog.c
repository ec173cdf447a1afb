/*
 * toollog.c - the tools' log lines on stderr (toollog.h): the journal's
 * priority prefix or a local timestamp, and lines held during a wait.
 */
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "toollog.h"

#define HOLD_MAX 64

typedef struct held {
    struct timespec when; /* written with the time it was logged, not released */
    reign_log_level level;
    char *text; /* the whole line, prefix included, without the newline */
} held;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool journal;
static long utc_offset_s; /* local time - UTC, as at toollog_init() */
static bool holding;
static held lines[HOLD_MAX];
static size_t n_held;

void toollog_init(void)
{
    /* "DEVICE:INODE" of the stream systemd connected; ours must be that one. */
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    journal = js && sscanf(js, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
              (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
    time_t now = time(NULL);
    struct tm tm;
    if (localtime_r(&now, &tm))
        utc_offset_s = tm.tm_gmtoff;
}

bool toollog_journal(void)
{
    return journal;
}

static void write_line(reign_log_level level, const char *text, const struct timespec *ts)
{
    static const int syslog_prio[] = {3, 4, 5, 6, 7};
    if (journal) {
        fprintf(stderr, "<%d>%s\n", syslog_prio[(unsigned)level < 5 ? level : 4], text);
        return;
    }
    struct tm tm;
    char when[32] = "";
    time_t secs = ts->tv_sec;
    if (localtime_r(&secs, &tm))
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(stderr, "%s.%03ld %s\n", when, ts->tv_nsec / 1000000, text);
}

void toollog_line(reign_log_level level, const char *prefix, const char *msg)
{
    /* The contract is one line without a newline; the ZooKeeper client's own
     * messages may still end with one. */
    int len = (int)strcspn(msg, "\r\n");
    char text[2048];
    snprintf(text, sizeof(text), "%s%.*s", prefix ? prefix : "", len, msg);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    pthread_mutex_lock(&lock);
    char *copy = holding && level == REIGN_LOG_WARN && n_held < HOLD_MAX ? strdup(text) : NULL;
    if (copy)
        lines[n_held++] = (held){now, level, copy};
    else
        write_line(level, text, &now);
    pthread_mutex_unlock(&lock);
}

/* Appends the decimal `v` with at least `width` digits; returns the new end. */
static char *put_num(char *o, long long v, int width)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 || n < width);
    while (n)
        *o++ = digits[--n];
    return o;
}

static char *put_str(char *o, const char *end, const char *s)
{
    while (*s && o < end)
        *o++ = *s++;
    return o;
}

void toollog_signal_line(reign_log_level level, const char *prefix, const char *msg)
{
    char line[512], *o = line, *end = line + sizeof(line) - 1;
    if (journal) {
        *o++ = '<';
        o = put_num(o, 3 + ((unsigned)level < 5 ? level : 4), 1);
        *o++ = '>';
    } else {
        /* Civil date from days since 1970 (Howard Hinnant's algorithm): no libc call that
         * a signal handler may not make. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long t = (long long)ts.tv_sec + utc_offset_s;
        long long z = (t >= 0 ? t : t - 86399) / 86400, secs = t - z * 86400;
        z += 719468;
        long long era = (z >= 0 ? z : z - 146096) / 146097;
        long long doe = z - era * 146097;
        long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
        long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        long long mp = (5 * doy + 2) / 153;
        long long d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
        o = put_num(o, yoe + era * 400 + (m <= 2), 4);
        *o++ = '-';
        o = put_num(o, m, 2);
        *o++ = '-';
        o = put_num(o, d, 2);
        *o++ = ' ';
        o = put_num(o, secs / 3600, 2);
        *o++ = ':';
        o = put_num(o, secs / 60 % 60, 2);
        *o++ = ':';
        o = put_num(o, secs % 60, 2);
        *o++ = '.';
        o = put_num(o, ts.tv_nsec / 1000000, 3);
        *o++ = ' ';
    }
    o = put_str(o, end, prefix ? prefix : "");
    o = put_str(o, end, msg);
    *o++ = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, (size_t)(o - line));
    (void)ignored;
}

void toollog_catch_signals(void (*handler)(int signum))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

void toollog_hold(void)
{
    pthread_mutex_lock(&lock);
    holding = true;
    pthread_mutex_unlock(&lock);
}

void toollog_release(bool failed)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n_held; i++) {
        if (!failed)
            write_line(lines[i].level, lines[i].text, &lines[i].when);
        free(lines[i].text);
    }
    n_held = 0;
    holding = false;
    pthread_mutex_unlock(&lock);
}
