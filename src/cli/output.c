/*
 * output.c - what `reign` writes (cli.h): messages and log lines on stderr, lines on stdout,
 * and the formatting of payloads, times and JSON.
 *
 * Messages follow one rule: one line, "reign: COMMAND: what was wrong", with the offending
 * value in single quotes.  A URI is only ever shown redacted.  Log lines (those with a level)
 * go through toollog.h: a timestamp first, or under systemd the journal's priority.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "toollog.h"

/* ---- messages ------------------------------------------------------ */

/* "reign: COMMAND: " or "reign: ", then "LEVEL: " for a log line. */
void cli_prefix(const cli *c, const char *level, char *out, size_t outlen)
{
    snprintf(out, outlen, "reign: %s%s%s%s", c && c->cmd ? c->cmd : "", c && c->cmd ? ": " : "",
             level ? level : "", level ? ": " : "");
}

static void vmessage(cli *c, reign_log_level level, bool logged, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void vmessage(cli *c, reign_log_level level, bool logged, const char *fmt, va_list ap)
{
    char msg[2048], prefix[64];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    cli_prefix(c, logged ? reign_log_level_name(level) : NULL, prefix, sizeof(prefix));
    /* One stdio call per line: stdio locks the stream, so lines logged by the
     * ZooKeeper client's threads never interleave with ours.  An error is not
     * a log line (no time: scripts read it), but the journal gets its priority. */
    if (logged)
        toollog_line(level, prefix, msg);
    else
        fprintf(stderr, "%s%s%s\n", toollog_journal() ? "<3>" : "", prefix, msg);
}

void cli_error(cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmessage(c, REIGN_LOG_ERROR, false, fmt, ap);
    va_end(ap);
}

int cli_usage_error(cli *c, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (c->cmd)
        cli_error(c, "%s (see 'reign %s --help')", msg, c->cmd);
    else
        cli_error(c, "%s (see 'reign --help')", msg);
    return CLI_EXIT_USAGE;
}

void cli_log(cli *c, reign_log_level level, const char *fmt, ...)
{
    if (level > c->log_level)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmessage(c, level, true, fmt, ap);
    va_end(ap);
}

const char *cli_quote(const char *s, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    if (outlen < 8) {
        if (outlen)
            out[0] = '\0';
        return out;
    }
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (o + 8 >= outlen) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (ch < 0x20 || ch == 0x7f || ch == '\\' || ch == '\'') {
            out[o++] = '\\';
            if (ch == '\\' || ch == '\'') {
                out[o++] = (char)ch;
            } else {
                out[o++] = 'x';
                out[o++] = hex[ch >> 4];
                out[o++] = hex[ch & 15];
            }
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
    return out;
}

void cli_print(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
    fputc('\n', stdout);
    /* Each line is an event someone may be waiting for (a checker, a
     * script): it must not sit in a buffer. */
    fflush(stdout);
    reign_trace("cli.print", NULL);
}

const char *cli_line_id(const char *id)
{
    return id && *id ? id : "-";
}

/* ---- formatting ---------------------------------------------------- */

/*
 * Whether data is valid UTF-8 without control characters, but for the tab and, if `breaks`,
 * line feeds and carriage returns: what a program prints with printf("%s\n") is text.
 */
static int utf8_text(const unsigned char *p, size_t len, int breaks)
{
    const unsigned char *end = p + len;
    while (p < end) {
        unsigned char b = *p;
        uint32_t cp;
        size_t n;
        if (b < 0x80) {
            if ((b < 0x20 && b != '\t' && !(breaks && (b == '\n' || b == '\r'))) || b == 0x7f)
                return 0;
            p++;
            continue;
        }
        if (b >= 0xc2 && b <= 0xdf) {
            n = 1;
            cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            n = 2;
            cp = b & 0x0f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            n = 3;
            cp = b & 0x07;
        } else {
            return 0;
        }
        if ((size_t)(end - p) <= n)
            return 0;
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        /* overlong forms, surrogates, beyond Unicode, C1 controls */
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp < 0xa0)
            return 0;
        p += n + 1;
    }
    return 1;
}

int cli_data_is_text(const void *data, size_t len)
{
    return utf8_text(data, len, 1);
}

long cli_data_line_len(const void *data, size_t len)
{
    const unsigned char *p = data;
    /* The line ends a command's output ends in are not part of what it said. */
    while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
        len--;
    return len <= LONG_MAX && utf8_text(p, len, 0) ? (long)len : -1;
}

char *cli_base64(const void *data, size_t len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = data;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    size_t i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = tab[(v >> 6) & 63];
        *o++ = tab[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        *o++ = tab[v >> 18];
        *o++ = tab[(v >> 12) & 63];
        *o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

const char *cli_iso8601(int64_t unix_ms, char *buf, size_t len)
{
    /* floor division, so times before 1970 still get a 0..999 fraction */
    int64_t secs = unix_ms / 1000, ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        secs--;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    char day[32];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, len, "@%lld", (long long)unix_ms);
        return buf;
    }
    snprintf(buf, len, "%s.%03dZ", day, (int)ms);
    return buf;
}

void cli_json_add_u64(cJSON *obj, const char *key, uint64_t v)
{
    char num[32];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)v);
    cJSON_AddRawToObject(obj, key, num);
}

void cli_json_add_i64(cJSON *obj, const char *key, int64_t v)
{
    char num[32];
    snprintf(num, sizeof(num), "%lld", (long long)v);
    cJSON_AddRawToObject(obj, key, num);
}

void cli_json_add_ms(cJSON *obj, const char *key, int64_t unix_ms)
{
    if (unix_ms)
        cli_json_add_i64(obj, key, unix_ms);
    else
        cJSON_AddNullToObject(obj, key);
}

void cli_json_add_data(cJSON *obj, const void *data, size_t len)
{
    if (!data)
        len = 0;
    if (cli_data_is_text(data, len)) {
        /* cJSON takes a C string: the payload has no NUL (a control character) */
        char *s = malloc(len + 1);
        if (!s)
            return;
        if (len)
            memcpy(s, data, len);
        s[len] = '\0';
        cJSON_AddStringToObject(obj, "data", s);
        free(s);
    } else {
        char *b = cli_base64(data, len);
        if (!b)
            return;
        cJSON_AddStringToObject(obj, "data_base64", b);
        free(b);
    }
}

cJSON *cli_json_leader(const reign_leader *l)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", l->id ? l->id : "");
    cli_json_add_data(o, l->data, l->data_len);
    cli_json_add_u64(o, "term", l->term);
    cli_json_add_u64(o, "token", l->token);
    cli_json_add_ms(o, "since_ms", l->since_ms);
    return o;
}

int cli_json_print(cli *c, cJSON *v)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    cJSON_Delete(v);
    if (!s) {
        cli_error(c, "out of memory");
        return CLI_EXIT_FAIL;
    }
    cli_print("%s", s);
    cJSON_free(s);
    return 0;
}
