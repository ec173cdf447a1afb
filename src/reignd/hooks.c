/*
 * hooks.c - the per-service serial command queue (hooks.h).
 *
 * The queue is a singly linked list whose head is the command running (if
 * any).  A job is completed only once its process handle is closed, never
 * from inside reignd_hooks_run(): that keeps callbacks off the caller's
 * stack, and the next command starts only after the previous one is fully
 * gone.  Each job has its own uv_process_t (a process handle can only be
 * reused after its close callback), and the queue has one timer for the
 * running job's deadline.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/common.h>

#include "hooks.h"

extern char **environ;

typedef struct hook_job {
    struct hook_job *next;
    reignd_hooks *queue;
    char *what;
    char *command;
    int64_t timeout_ms;
    char **envp;
    reignd_hook_cb *cb;
    void *userdata;

    uv_process_t proc;
    bool started; /* proc is live (spawned) */
    bool exited;  /* its exit callback ran */
    bool killed;  /* reignd killed its process group */
    uint64_t start_ns;
    reignd_hook_result result;
} hook_job;

struct reignd_hooks {
    uv_loop_t *loop;
    hook_job *head, *tail;
    size_t n;
    bool running; /* head is started and not yet completed */
    bool closing;
    int handles; /* the timer, plus the running job's process handle */
    uv_timer_t timer;
};

/* ---- environment --------------------------------------------------------- */

static int env_add(char **envp, size_t *n, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *e = malloc(len);
    if (!e)
        return REIGN_ENOMEM;
    snprintf(e, len, "%s=%s", name, value);
    envp[(*n)++] = e;
    return 0;
}

static int env_add_num(char **envp, size_t *n, const char *name, int64_t v)
{
    char buf[24];
    if (v < 0)
        return 0;
    snprintf(buf, sizeof(buf), "%" PRId64, v);
    return env_add(envp, n, name, buf);
}

static int env_add_str(char **envp, size_t *n, const char *name, const char *v)
{
    return v ? env_add(envp, n, name, v) : 0;
}

char **reignd_env_build(const reignd_hook_env *env, const char *what)
{
    size_t inherited = 0;
    for (char **e = environ; e && *e; e++)
        inherited++;
    char **envp = calloc(inherited + 10, sizeof(char *));
    if (!envp)
        return NULL;
    size_t n = 0;
    for (char **e = environ; e && *e; e++) {
        /* REIGN_PASSWORD and the like are reignd's, not the hooks'. */
        if (strncmp(*e, "REIGN_", 6) == 0)
            continue;
        if (!(envp[n] = strdup(*e))) {
            reignd_env_free(envp);
            return NULL;
        }
        n++;
    }
    static const reignd_hook_env none = {.term = -1, .token = -1, .target_term = -1};
    if (!env)
        env = &none;
    int rc = env_add_str(envp, &n, "REIGN_SERVICE", env->service);
    rc = rc ? rc : env_add_str(envp, &n, "REIGN_STATE", env->state);
    rc = rc ? rc : env_add_str(envp, &n, "REIGN_NODE_ID", env->node_id);
    rc = rc ? rc : env_add_num(envp, &n, "REIGN_TERM", env->term);
    rc = rc ? rc : env_add_num(envp, &n, "REIGN_TOKEN", env->token);
    rc = rc ? rc : env_add_str(envp, &n, "REIGN_HOOK", what);
    rc = rc ? rc : env_add_str(envp, &n, "REIGN_TARGET_ID", env->target_id);
    rc = rc ? rc : env_add_str(envp, &n, "REIGN_TARGET_ADDRESS", env->target_address);
    rc = rc ? rc : env_add_num(envp, &n, "REIGN_TARGET_TERM", env->target_term);
    if (rc < 0) {
        reignd_env_free(envp);
        return NULL;
    }
    return envp;
}

void reignd_env_free(char **envp)
{
    for (char **e = envp; e && *e; e++)
        free(*e);
    free(envp);
}

int reignd_spawn_shell(uv_loop_t *loop, uv_process_t *proc, const char *command, char **envp,
                       bool quiet_stdout, uv_exit_cb on_exit)
{
    char *args[] = {"sh", "-c", (char *)command, NULL};
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = quiet_stdout ? UV_IGNORE : UV_INHERIT_FD, .data.fd = 1},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t opts = {
        .exit_cb = on_exit,
        .file = "/bin/sh",
        .args = args,
        .env = envp,
        /* setsid(): a process group of its own, which a timeout kills whole. */
        .flags = UV_PROCESS_DETACHED,
        .stdio_count = 3,
        .stdio = stdio,
    };
    return uv_spawn(loop, proc, &opts);
}

/* ---- the queue ------------------------------------------------------------ */

static void start_next(reignd_hooks *q);

static void free_job(hook_job *j)
{
    free(j->what);
    free(j->command);
    reignd_env_free(j->envp);
    free(j);
}

static void finish_close(reignd_hooks *q)
{
    /* Commands never started, in queue order. */
    while (q->head) {
        hook_job *j = q->head;
        q->head = j->next;
        q->n--;
        j->result = (reignd_hook_result){.what = j->what, .outcome = REIGND_HOOK_CANCELLED};
        if (j->cb)
            j->cb(q, &j->result, j->userdata);
        free_job(j);
    }
    free(q);
}

static void handle_gone(reignd_hooks *q)
{
    if (--q->handles == 0 && q->closing)
        finish_close(q);
}

static void on_timer_closed(uv_handle_t *h)
{
    handle_gone(h->data);
}

/* The running job's process handle is closed: complete it, start the next. */
static void on_proc_closed(uv_handle_t *h)
{
    hook_job *j = h->data;
    reignd_hooks *q = j->queue;
    q->head = j->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    q->running = false;
    q->handles++; /* held across the callback, which may close the queue */
    if (j->cb)
        j->cb(q, &j->result, j->userdata);
    free_job(j);
    q->handles--;
    if (!q->closing)
        start_next(q);
    handle_gone(q);
}

static void on_child_exit(uv_process_t *proc, int64_t exit_status, int term_signal)
{
    hook_job *j = proc->data;
    reignd_hooks *q = j->queue;
    j->exited = true;
    uv_timer_stop(&q->timer);
    reignd_hook_result *r = &j->result;
    r->duration_ms = (uv_hrtime() - j->start_ns) / 1000000;
    if (j->killed)
        r->outcome = q->closing ? REIGND_HOOK_CANCELLED : REIGND_HOOK_TIMED_OUT;
    else if (term_signal)
        r->outcome = REIGND_HOOK_SIGNALED;
    else
        r->outcome = REIGND_HOOK_EXITED;
    r->exit_status = (int)exit_status;
    r->term_signal = term_signal;
    uv_close((uv_handle_t *)proc, on_proc_closed);
}

/* Kills the running job's whole process group (it is its own session). */
static void kill_running(reignd_hooks *q)
{
    hook_job *j = q->head;
    if (!q->running || !j->started || j->exited || j->killed)
        return;
    j->killed = true;
    /* The leader is not reaped before on_exit runs, so its pid still names
     * this group. */
    kill(-j->proc.pid, SIGKILL);
}

static void on_timeout(uv_timer_t *t)
{
    kill_running(t->data);
}

static void start_next(reignd_hooks *q)
{
    hook_job *j = q->head;
    if (q->running || !j)
        return;
    q->running = true;
    q->handles++;
    j->proc.data = j;
    j->start_ns = uv_hrtime();
    int rc = reignd_spawn_shell(q->loop, &j->proc, j->command, j->envp, false, on_child_exit);
    if (rc < 0) {
        j->result.outcome = REIGND_HOOK_SPAWN_FAILED;
        j->result.spawn_error = rc;
    } else {
        j->started = true;
        /* The loop's clock is that of the start of this turn; the command
         * gets its whole timeout from now. */
        uv_update_time(q->loop);
        uv_timer_start(&q->timer, on_timeout, (uint64_t)j->timeout_ms, 0);
        return;
    }
    /* A process handle is closed even when the spawn failed. */
    uv_close((uv_handle_t *)&j->proc, on_proc_closed);
}

int reignd_hooks_new(reignd_hooks **ret, uv_loop_t *loop)
{
    reignd_hooks *q = calloc(1, sizeof(*q));
    *ret = NULL;
    if (!q)
        return REIGN_ENOMEM;
    q->loop = loop;
    uv_timer_init(loop, &q->timer);
    q->timer.data = q;
    q->handles = 1;
    *ret = q;
    return 0;
}

int reignd_hooks_run(reignd_hooks *q, const char *what, const char *command, int64_t timeout_ms,
                     const reignd_hook_env *env, reignd_hook_cb *cb, void *userdata)
{
    if (!q || q->closing || !command || !command[0] || timeout_ms <= 0)
        return REIGN_EINVAL;
    hook_job *j = calloc(1, sizeof(*j));
    if (!j)
        return REIGN_ENOMEM;
    j->queue = q;
    j->what = strdup(what ? what : "hook");
    j->command = strdup(command);
    j->envp = reignd_env_build(env, j->what);
    if (!j->what || !j->command || !j->envp) {
        free_job(j);
        return REIGN_ENOMEM;
    }
    j->timeout_ms = timeout_ms;
    j->cb = cb;
    j->userdata = userdata;
    j->result.what = j->what;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->n++;
    start_next(q);
    return 0;
}

size_t reignd_hooks_pending(const reignd_hooks *q)
{
    return q ? q->n : 0;
}

bool reignd_hooks_busy(const reignd_hooks *q)
{
    return q && q->running;
}

size_t reignd_hooks_describe(const reignd_hooks *q, char *out, size_t outlen)
{
    int n = 0;
    if (outlen)
        out[0] = '\0';
    if (!q || !q->head)
        return 0;
    const hook_job *j = q->head;
    if (j->started)
        n = snprintf(out, outlen, "its %s hook (running for %.1f s, killed at %.0f s)", j->what,
                     (double)(uv_hrtime() - j->start_ns) / 1e9, (double)j->timeout_ms / 1000.0);
    else
        n = snprintf(out, outlen, "its %s hook (about to start, killed after %.0f s)", j->what,
                     (double)j->timeout_ms / 1000.0);
    size_t used = n < 0 ? 0 : (size_t)n;
    for (j = j->next; j && used + 1 < outlen; j = j->next) {
        n = snprintf(out + used, outlen - used, ", then %s (up to %.0f s)", j->what,
                     (double)j->timeout_ms / 1000.0);
        used += n < 0 ? 0 : (size_t)n;
    }
    return used < outlen ? used : outlen - 1;
}

void reignd_hooks_close(reignd_hooks *q)
{
    if (!q || q->closing)
        return;
    q->closing = true;
    uv_timer_stop(&q->timer);
    kill_running(q);
    /* A running job completes (CANCELLED) once it has exited; the queued
     * ones after it when the last handle is closed (finish_close). */
    uv_close((uv_handle_t *)&q->timer, on_timer_closed);
}

size_t reignd_hook_result_text(const reignd_hook_result *r, char *out, size_t outlen)
{
    int n = 0;
    switch (r->outcome) {
    case REIGND_HOOK_EXITED:
        n = snprintf(out, outlen, "exited with status %d after %" PRIu64 " ms", r->exit_status,
                     r->duration_ms);
        break;
    case REIGND_HOOK_SIGNALED:
        n = snprintf(out, outlen, "killed by signal %d (%s) after %" PRIu64 " ms", r->term_signal,
                     strsignal(r->term_signal), r->duration_ms);
        break;
    case REIGND_HOOK_TIMED_OUT:
        n = snprintf(out, outlen, "timed out after %" PRIu64 " ms; its process group was killed",
                     r->duration_ms);
        break;
    case REIGND_HOOK_SPAWN_FAILED:
        n = snprintf(out, outlen, "could not be started: %s", uv_strerror(r->spawn_error));
        break;
    case REIGND_HOOK_CANCELLED:
        n = snprintf(out, outlen, "cancelled (reignd is shutting the queue down)");
        break;
    }
    return n < 0 ? 0 : (size_t)n;
}
