/*
 * srvlog.h - formatted logging through a reign_log_fn, for the modules that
 * take a log sink in their options (control, peer, metrics) and so never
 * write to stderr themselves.
 */
#ifndef REIGND_SRVLOG_H
#define REIGND_SRVLOG_H

#include <stdarg.h>
#include <stdio.h>

#include <reign/reign.h>

__attribute__((format(printf, 4, 5))) static inline void
reignd__logf(reign_log_fn *fn, void *userdata, reign_log_level level, const char *fmt, ...)
{
    if (!fn)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fn(level, line, userdata);
}

#endif
