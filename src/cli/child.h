/*
 * child.h - a command that must not outlive what it runs for: the command of
 * `reign run` (a leadership) and each task's of `reign tasks worker`.
 *
 * The command runs in a process group of its own (a session too, with
 * `own_session`), so that it can be signalled as a whole.  It is tied to
 * this process three ways, however this process ends:
 *
 *   - its group is given to the client's guardian before the command runs
 *     (the child waits on a pipe until then), so if this process dies
 *     (SIGKILL, the OOM killer, a crash) the guardian kills the whole group
 *     before it ends the leaderships;
 *   - the child sets PR_SET_PDEATHSIG to SIGKILL, a second line of defence
 *     for the command itself should no guardian run;
 *   - when the command exits, whatever it left in its group is killed, and
 *     the exit is reported only once none of the group runs any more: a
 *     resignation that follows can never leave a part of the command running
 *     beside the next leader's.
 *
 * Exits are watched with a pidfd on the loop: no SIGCHLD handler.
 */
#ifndef REIGN_CLI_CHILD_H
#define REIGN_CLI_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

#include "cli.h"

typedef struct cli_child cli_child;

/* The command and all of its group are gone; `status` is its wait(2) status. */
typedef void cli_child_exit_fn(cli_child *ch, int status);

struct cli_child {
    cli *c;
    pid_t pid; /* the command, leader of its group; 0 once reported */
    int pidfd;
    int status;
    bool exited; /* the command is reaped; its group may still be dying */
    uv_poll_t exit_watch;
    uv_timer_t group_timer; /* while the rest of the group dies */
    int64_t group_wait_ms;
    int closing; /* handles closed whose callback has not run yet */
    cli_child_exit_fn *on_exit;
    void *data;
};

/*
 * Starts `exe` (a path, resolved beforehand: cli_child_resolve) with argv and env; fds[0..2]
 * become its stdin, stdout and stderr (-1: inherited).  0, or an errno value (ENOENT, EACCES...
 * from the exec itself, or fork's) and nothing runs.
 */
int cli_child_start(cli *c, cli_child *ch, const char *exe, char *const argv[], char *const env[],
                    const int fds[3], bool own_session, cli_child_exit_fn *on_exit);

/*
 * For an owner that goes away before the command has exited (the program is
 * ending): SIGKILL to the group, and the handles closed without waiting; the
 * exit callback still runs, once, with status -1, when they are closed.
 */
void cli_child_close(cli_child *ch);

/* Sends `sig` to the command's whole group. */
void cli_child_signal(cli_child *ch, int sig);

/* `name` as execve wants it: itself if it holds a '/', else the first executable match on
 * $PATH; NULL if none (errno set).  malloc'd. */
char *cli_child_resolve(const char *name);

#endif
