/*
 * hooks.h - one serial queue of commands per service: become_active,
 * become_standby, notify and shell fence methods.
 *
 * keepalived runs its notify scripts concurrently and out of order; a
 * failover controller must not: a become_standby still running when the
 * next become_active starts, or the two swapped, leave the service in the
 * wrong state.  So each service has one queue, and its commands run one at
 * a time, in the order they were queued, each exactly once.
 *
 * A command is the administrator's text, run as `/bin/sh -c COMMAND` in a
 * process group of its own (a new session), with stdin from /dev/null and
 * stdout/stderr shared with reignd (the journal).  Data never enters the
 * command's text: it is passed in environment variables only,
 *
 *   REIGN_SERVICE         the service's name
 *   REIGN_STATE           the state the hook is for (e.g. "active", "standby")
 *   REIGN_NODE_ID         this node's id
 *   REIGN_TERM            the election term (absent if unknown)
 *   REIGN_TOKEN           the fencing token (absent if unknown)
 *   REIGN_HOOK            what runs: "become_active", "fence", ...
 * and for fence commands
 *   REIGN_TARGET_ID       the node to fence
 *   REIGN_TARGET_ADDRESS  its service address (host:port)
 *   REIGN_TARGET_TERM     the term it was active in
 *
 * on top of reignd's own environment, from which every REIGN_* variable
 * (REIGN_PASSWORD among them) is removed first.
 *
 * A command that runs longer than its timeout has its whole process group
 * killed (SIGKILL) and completes as REIGND_HOOK_TIMED_OUT; the queue moves
 * on only once it has exited.  A command that exits by itself leaves any
 * process it started in the background alone (a become_active may start
 * the service).
 *
 * Everything runs on the libuv loop given to reignd_hooks_new(), and each
 * completion callback runs there once per queued command.
 */
#ifndef REIGND_HOOKS_H
#define REIGND_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <reign/common.h>

typedef struct reignd_hooks reignd_hooks;

/* The data a command gets, in its environment.  Strings are copied when
 * the command is queued; NULL strings and negative numbers are left out. */
typedef struct reignd_hook_env {
    const char *service;
    const char *state;
    const char *node_id;
    int64_t term;  /* -1: unknown */
    int64_t token; /* -1: unknown */
    /* Fence commands only (else NULL / -1). */
    const char *target_id;
    const char *target_address;
    int64_t target_term;
} reignd_hook_env;

/* How a command ended. */
typedef enum reignd_hook_outcome {
    REIGND_HOOK_EXITED,       /* exited by itself; see exit_status */
    REIGND_HOOK_SIGNALED,     /* killed by a signal not sent by reignd; see term_signal */
    REIGND_HOOK_TIMED_OUT,    /* ran past its timeout; its process group was killed */
    REIGND_HOOK_SPAWN_FAILED, /* could not be started; see spawn_error */
    REIGND_HOOK_CANCELLED,    /* never started: the queue was closed first */
} reignd_hook_outcome;

typedef struct reignd_hook_result {
    const char *what; /* the label given to reignd_hooks_run() */
    reignd_hook_outcome outcome;
    int exit_status;      /* REIGND_HOOK_EXITED: the status (0..255) */
    int term_signal;      /* REIGND_HOOK_SIGNALED: the signal */
    int spawn_error;      /* REIGND_HOOK_SPAWN_FAILED: a negative libuv error */
    uint64_t duration_ms; /* from start to exit (0 if never started) */
} reignd_hook_result;

/* True when the command exited by itself with status 0. */
static inline bool reignd_hook_succeeded(const reignd_hook_result *r)
{
    return r->outcome == REIGND_HOOK_EXITED && r->exit_status == 0;
}

/* Called once per queued command, on the loop, when it has ended (or was
 * cancelled).  `r` is valid during the call only.  The callback may queue
 * more commands, and may close the queue. */
typedef void reignd_hook_cb(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata);

/* A new, empty queue on `loop`.  Returns 0, or REIGN_ENOMEM. */
int reignd_hooks_new(reignd_hooks **ret, uv_loop_t *loop);

/*
 * Queues `command` (run as /bin/sh -c command) with `env` in its
 * environment; it starts when the commands queued before it have ended.
 * `what` labels it in REIGN_HOOK and in the result ("become_active").
 * `cb` (may be NULL) is called once when it has ended.  Returns 0, or
 * REIGN_ENOMEM / REIGN_EINVAL (empty command, timeout <= 0, closed queue),
 * in which case `cb` is never called.
 */
int reignd_hooks_run(reignd_hooks *hooks, const char *what, const char *command, int64_t timeout_ms,
                     const reignd_hook_env *env, reignd_hook_cb *cb, void *userdata);

/* Commands queued or running. */
size_t reignd_hooks_pending(const reignd_hooks *hooks);

/* True while a command runs. */
bool reignd_hooks_busy(const reignd_hooks *hooks);

/*
 * What the queue is doing, for a log line: "its become_standby hook
 * (running for 1.2 s, killed at 30 s), then notify (up to 30 s)"; "" when
 * idle.  Returns the length written (like snprintf, but never more than
 * outlen - 1).
 */
size_t reignd_hooks_describe(const reignd_hooks *hooks, char *out, size_t outlen);

/*
 * Closes the queue.  A running command's process group is killed; it
 * completes as REIGND_HOOK_CANCELLED once it has exited, and the commands
 * not yet started complete as REIGND_HOOK_CANCELLED after it, in queue
 * order, without being run.  All of that happens on later loop turns,
 * never inside this call, so every queued callback's userdata must stay
 * valid until the loop has run on; then the queue frees itself.  May be
 * called from a completion callback; a second call is ignored; NULL-safe.
 */
void reignd_hooks_close(reignd_hooks *hooks);

/* A one-line description of a result ("exited with status 3", "timed out
 * after 5000 ms"), for logs.  Returns the length needed (like snprintf). */
size_t reignd_hook_result_text(const reignd_hook_result *r, char *out, size_t outlen);

/* ---- shared with health.c's command checks ------------------------------ */

/*
 * A copy of reignd's environment without any REIGN_* variable, plus the
 * REIGN_* variables for `env` (and REIGN_HOOK=what when `what` is not
 * NULL), NULL-terminated.  NULL when out of memory.  Freed with
 * reignd_env_free().
 */
char **reignd_env_build(const reignd_hook_env *env, const char *what);
void reignd_env_free(char **envp);

/*
 * Starts `/bin/sh -c command` with `envp` in a new session (so its process
 * group is its own, and kill(-pid) reaches everything it started), stdin
 * from /dev/null, stdout to /dev/null or shared with reignd, stderr shared.
 * `proc` must be closed with uv_close() afterwards even if this fails.
 * Returns 0 or a negative libuv error.
 */
int reignd_spawn_shell(uv_loop_t *loop, uv_process_t *proc, const char *command, char **envp,
                       bool quiet_stdout, uv_exit_cb on_exit);

#endif
