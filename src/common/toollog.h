/*
 * toollog.h - how the tools (`reign`, `reignd`) write their log lines to
 * stderr, shared by both (the library itself never writes anywhere).
 *
 * Under systemd, stderr is the journal: it stamps every line itself and
 * takes a "<N>" prefix as the line's syslog priority.  Elsewhere (a
 * terminal, a file, a pipe) each line starts with the local time to the
 * millisecond, "2026-11-23 07:11:02.123 ".  Journal means: $JOURNAL_STREAM
 * names the device and inode of our stderr, as systemd's documentation
 * asks (a child whose stderr was redirected inherits the variable, not the
 * stream).
 *
 * While a tool waits synchronously for its first session
 * (reign_client_wait_connected()), warnings can be held: the library warns
 * that it is "still trying" at the very moment the wait gives up, and the
 * error that follows says everything (see toollog_hold()).
 *
 * Every function may be called from any thread (libzookeeper's threads log
 * too); each line is written with one stdio call, so lines never mix.
 */
#ifndef REIGN_TOOLLOG_H
#define REIGN_TOOLLOG_H

#include <stdbool.h>

#include <reign/common.h>

/* Looks at $JOURNAL_STREAM and stderr once; call before any line. */
void toollog_init(void);

/* Whether stderr is the journal. */
bool toollog_journal(void);

/* Writes "PREFIX" (may be NULL) then msg as one line, with the level's
 * priority under the journal, else with the local time. */
void toollog_line(reign_log_level level, const char *prefix, const char *msg);

/*
 * Writes one line from a signal handler: async-signal-safe (the time is
 * formatted by hand, with the UTC offset toollog_init() saw, and written
 * with write(2)); no other thread's line is cut, but one may come between.
 */
void toollog_signal_line(reign_log_level level, const char *prefix, const char *msg);

/*
 * Sets `handler` for SIGINT and SIGTERM with sigaction (also when they were
 * inherited ignored): how the tools act on a signal before their libuv loop
 * runs and takes the signals over.
 */
void toollog_catch_signals(void (*handler)(int signum));

/*
 * Holds the warnings written from now on instead of writing them (at most
 * a few dozen; more are written at once), until toollog_release(); other
 * lines are written as usual, so progress stays visible.
 */
void toollog_hold(void);

/*
 * Writes the held warnings in their order (with the time they were
 * logged), or, when `failed`, drops them: a warning that a wait goes on
 * ("...; still trying") is superseded by the error, written next, that says
 * it ended.
 */
void toollog_release(bool failed);

#endif
