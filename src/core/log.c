/*
 * log.c - one logging function with levels and a user hook.  The library
 * never writes to stderr itself; without a sink nothing is logged.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core.h"

static reign_log_fn *g_fn;
static void *g_userdata;
static reign_log_level g_level = REIGN_LOG_WARN;

void reign_set_log(reign_log_fn *fn, void *userdata, reign_log_level max_level)
{
    g_fn = fn;
    g_userdata = userdata;
    g_level = max_level;
}

static const char *const level_names[] = {"error", "warn", "notice", "info", "debug"};

int reign_log_level_parse(const char *s)
{
    for (size_t i = 0; s && i < sizeof(level_names) / sizeof(level_names[0]); i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return (int)i;
    return REIGN_EINVAL;
}

const char *reign_log_level_name(reign_log_level level)
{
    if ((int)level < 0 || (size_t)level >= sizeof(level_names) / sizeof(level_names[0]))
        return "?";
    return level_names[level];
}

bool reign__log_enabled(const reign__logger *lg, reign_log_level level)
{
    if (lg && lg->fn)
        return level <= lg->level;
    return g_fn && level <= g_level;
}

void reign__vlog(const reign__logger *lg, reign_log_level level, const char *fmt, va_list ap)
{
    if (!reign__log_enabled(lg, level))
        return;
    char line[1024];
    vsnprintf(line, sizeof(line), fmt, ap);
    if (lg && lg->fn)
        lg->fn(level, line, lg->userdata);
    else
        g_fn(level, line, g_userdata);
}

void reign__log(const reign__logger *lg, reign_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reign__vlog(lg, level, fmt, ap);
    va_end(ap);
}
