/*
 * leash.h - a command that must die before its leadership could have lapsed, even if the
 * process responsible for it is stopped (SIGSTOP, a debugger, a loop stalled past its lease):
 * `reign run`'s command, and each task's of `reign tasks worker` (whose task goes to another
 * worker once the worker's session has expired).
 *
 * The guardian (client.h) acts when its client's process dies; a stopped process is alive and
 * can do nothing, so a command it started would run on beside the next leader's.  The leash is
 * a small process forked at start (before the client starts any thread), in a session of its
 * own, that holds the command's process group and a deadline on the host's monotonic clock.
 * The runner moves the deadline forward each time its leadership's guarantee moves; if the
 * deadline passes, the leash SIGKILLs the group (and waits until none of it runs).  If the
 * runner dies, the leash kills the group at once.  A clean end tells it to leave without
 * acting.  Its lines carry the time (or the journal's priority) and the tool's prefix, as the
 * tool's own do (toollog.h).
 */
#ifndef REIGN_CLI_LEASH_H
#define REIGN_CLI_LEASH_H

#include <stdint.h>
#include <sys/types.h>

#include "cli.h"

typedef struct cli_leash cli_leash;

/* Forks the leash, whose lines start with `prefix` ("reign: run: warn: ").  Call it while the
 * process has one thread.  0 or an errno value. */
int cli_leash_start(cli_leash **ret, const char *prefix);

/* Starts c->leash with the tool's prefix, before the client starts any thread; the error is
 * printed.  0 or CLI_EXIT_FAIL. */
int cli_leash_begin(cli *c);

/*
 * The least time between killing a command and the end of its guarantee: a tenth of the
 * session timeout (lease), at least 100 ms.  It covers the time SIGKILL takes, and a leash that
 * wakes a little late.
 */
int64_t cli_fence_margin_ns(cli *c);

/* Group `pgid` runs under the leash (before the command runs an instruction), or no more. */
void cli_leash_guard(cli_leash *l, pid_t pgid);
void cli_leash_unguard(cli_leash *l, pid_t pgid);

/* Kill the guarded groups at `ns` (CLOCK_MONOTONIC) unless moved again; 0: no deadline. */
void cli_leash_deadline(cli_leash *l, int64_t ns);

/* Tells the leash to leave without acting, and frees.  NULL-safe. */
void cli_leash_stop(cli_leash *l);
/* Lets go of the leash without telling it to leave: it kills what it guards, then leaves. */
void cli_leash_drop(cli_leash *l);

#endif
