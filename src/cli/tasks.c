/*
 * tasks.c - `reign tasks`: the master-worker task queue of <reign/tasks.h>.
 *
 *   reign tasks master QUEUE [--id ID] [--strategy least_loaded|random] [--retention S]
 *   reign tasks worker QUEUE --id ID [--concurrency N] [--prefetch N] [--max-output BYTES]
 *                     -- CMD [ARGS...]
 *   reign tasks submit QUEUE [--wait] [DATA | -]
 *   reign tasks status QUEUE TASK [--json]
 *   reign tasks list QUEUE [--json]
 *   reign tasks delete QUEUE TASK
 *
 * The worker runs CMD once per task with fork and execve (argv only, never a
 * shell): the task's payload on its stdin, its id and queue in the
 * environment (REIGN_TASK_ID, REIGN_TASK_QUEUE, REIGN_WORKER_ID), in a process
 * group of its own (child.h) which is killed if the worker dies (by the
 * client's guardian, and PR_SET_PDEATHSIG) or loses its task, and whose
 * leftovers are killed when CMD exits.  Its exit status and the first --max-output bytes of its
 * stdout become the task's result.  Each CMD is also held by the leash (leash.h): a worker that
 * is stopped (SIGSTOP, a debugger) still looks registered until its session expires, and then
 * the master gives its tasks to others; the leash kills every CMD before that could happen
 * (reign_tasks_worker_valid_until_ns(), less the fence margin), whatever the worker is doing.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "fmt.h"
#include "leash.h"

extern char **environ;

#define DEFAULT_MAX_OUTPUT 65536
#define EXIT_GRACE_MS      1000 /* after CMD exits, how long its stdout may stay open */

static void tasks_usage(FILE *f)
{
    fprintf(f,
            "Usage: reign [GLOBAL OPTIONS] tasks SUBCOMMAND QUEUE [ARGS...]\n"
            "\n"
            "A master-worker task queue: clients submit tasks, one elected master assigns\n"
            "each to a live worker, workers run a command per task and record its result.\n"
            "\n"
            "  master QUEUE [--id ID] [--strategy least_loaded|random] [--retention SECONDS]\n"
            "      stand in the queue's master election; the leader assigns tasks\n"
            "  worker QUEUE --id ID [--concurrency N] [--prefetch N] [--max-output BYTES]\n"
            "         -- CMD [ARGS...]\n"
            "      run CMD once per task: payload on stdin, REIGN_TASK_ID, REIGN_TASK_QUEUE\n"
            "      and REIGN_WORKER_ID in the environment; its exit status and stdout\n"
            "      (first BYTES, default %d) are the result\n"
            "  submit QUEUE [--wait] [DATA | -]\n"
            "      submit a task (payload DATA, '-': stdin, none: empty), print its id;\n"
            "      --wait: then print its output and exit with its exit status\n"
            "  status QUEUE TASK [--json]    where a task is, and its result\n"
            "  list QUEUE [--json]           every task of the queue\n"
            "  delete QUEUE TASK             delete a done task's result\n",
            DEFAULT_MAX_OUTPUT);
}

/* ---- shared -------------------------------------------------------------- */

static int refused(cli *c, int err, const char *what, const char *value)
{
    char q[512];
    cli_quote(value ? value : "", q, sizeof(q));
    if (err == REIGN_ENAME && !strcmp(what, "task id"))
        cli_error(c, "illegal task id '%s' (ids look like t_<16 hex digits>_<10 digits>)", q);
    else if (err == REIGN_ENAME)
        cli_error(c, "illegal %s '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, not '.' or '..')",
                  what, q,
                  !strcmp(what, "worker id") ? REIGN_TASKS_WORKER_MAX : REIGN_TASKS_QUEUE_MAX);
    else
        cli_error(c, "%s '%s': %s", what, q, reign_strerror(err));
    return CLI_EXIT_FAIL;
}

/* A queue name or worker id the library would take (checked here to name
 * the right one in the message). */
static int segment_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !strcmp(s, ".") || !strcmp(s, ".."))
        return 0;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-") == n;
}

/* After getopt: exactly `n` positional arguments (n = 1 or 2). */
static int positional(cli *c, int argc, char **argv, int n, const char *names, const char **out)
{
    char q[256];
    if (argc - optind < n)
        return cli_usage_error(c, "missing %s", names);
    if (argc - optind > n)
        return cli_usage_error(c, "unexpected argument '%s'",
                               cli_quote(argv[optind + n], q, sizeof(q)));
    for (int i = 0; i < n; i++)
        out[i] = argv[optind + i];
    return 0;
}

static void json_add_output(cJSON *o, const reign_task_info *t)
{
    if (cli_data_is_text(t->output, t->output_len)) {
        char *s = malloc(t->output_len + 1);
        if (!s)
            return;
        memcpy(s, t->output, t->output_len);
        s[t->output_len] = '\0';
        cJSON_AddStringToObject(o, "output", s);
        free(s);
    } else {
        char *b = cli_base64(t->output, t->output_len);
        if (b)
            cJSON_AddStringToObject(o, "output_base64", b);
        free(b);
    }
}

static cJSON *json_task(const reign_task_info *t)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "task", t->task);
    cJSON_AddStringToObject(o, "state", reign_task_state_name(t->state));
    if (t->worker)
        cJSON_AddStringToObject(o, "worker", t->worker);
    if (t->state == REIGN_TASK_DONE && t->worker) {
        cJSON_AddNumberToObject(o, "exit", t->exit_code);
        cJSON_AddNumberToObject(o, "signal", t->signal);
        cli_json_add_i64(o, "done_ms", t->done_ms);
        json_add_output(o, t);
    }
    return o;
}

static void print_task(const reign_task_info *t)
{
    if (t->state != REIGN_TASK_DONE || !t->worker) {
        cli_print("%s %s%s%s", t->task, reign_task_state_name(t->state),
                  t->worker ? " worker=" : "", t->worker ? t->worker : "");
        return;
    }
    char when[40];
    char *out = fmt_data(t->output, t->output_len);
    cli_print("%s done worker=%s exit=%d signal=%d done=%s output%s", t->task, t->worker,
              t->exit_code, t->signal, cli_iso8601(t->done_ms, when, sizeof(when)),
              out ? out + 4 : "=");
    free(out);
}

/* ---- one-shot subcommands ------------------------------------------------- */

typedef struct oneshot {
    cli *c;
    int json;
    int wait;
    const char *queue;
    char task[REIGN_TASKS_TASK_MAX + 1];
} oneshot;

static void on_info(reign_client *client, int err, const reign_task_info *t, void *ud)
{
    oneshot *o = ud;
    (void)client;
    if (err < 0) {
        char q[256];
        cli_error(o->c, "task '%s' of queue '%s': %s", o->task, cli_quote(o->queue, q, sizeof(q)),
                  reign_strerror(err));
        cli_exit(o->c, CLI_EXIT_FAIL);
        return;
    }
    if (o->wait) {
        /* The result itself, as the command wrote it. */
        if (t->output_len)
            fwrite(t->output, 1, t->output_len, stdout);
        fflush(stdout);
        cli_exit(o->c, t->signal ? 128 + t->signal : t->exit_code < 0 ? 127 : t->exit_code);
        return;
    }
    if (o->json)
        cli_exit(o->c, cli_json_print(o->c, json_task(t)));
    else {
        print_task(t);
        cli_exit(o->c, CLI_EXIT_OK);
    }
}

static void on_list(reign_client *client, int err, const reign_task_info *v, size_t n, void *ud)
{
    oneshot *o = ud;
    (void)client;
    if (err < 0) {
        char q[256];
        cli_error(o->c, "listing queue '%s': %s", cli_quote(o->queue, q, sizeof(q)),
                  reign_strerror(err));
        cli_exit(o->c, CLI_EXIT_FAIL);
        return;
    }
    if (!o->json) {
        for (size_t i = 0; i < n; i++)
            print_task(&v[i]);
        cli_exit(o->c, CLI_EXIT_OK);
        return;
    }
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, json_task(&v[i]));
    cli_exit(o->c, cli_json_print(o->c, a));
}

static void on_deleted(reign_client *client, int err, void *ud)
{
    oneshot *o = ud;
    (void)client;
    if (err < 0)
        cli_error(o->c, "deleting the result: %s%s", reign_strerror(err),
                  err == REIGN_ENOENT ? " (no result: unknown task, or not done yet)" : "");
    cli_exit(o->c, err < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK);
}

static void on_submitted(reign_client *client, int err, const char *task, void *ud)
{
    oneshot *o = ud;
    if (err < 0) {
        char q[256];
        cli_error(o->c, "submitting to queue '%s': %s", cli_quote(o->queue, q, sizeof(q)),
                  reign_strerror(err));
        cli_exit(o->c, CLI_EXIT_FAIL);
        return;
    }
    cli_print("%s", task);
    snprintf(o->task, sizeof(o->task), "%s", task);
    if (!o->wait) {
        cli_exit(o->c, CLI_EXIT_OK);
        return;
    }
    int rc = reign_tasks_wait(client, o->queue, task, on_info, o);
    if (rc < 0) {
        cli_error(o->c, "waiting for '%s': %s", task, reign_strerror(rc));
        cli_exit(o->c, CLI_EXIT_FAIL);
    }
}

enum { SUB_SUBMIT, SUB_STATUS, SUB_LIST, SUB_DELETE };

static int oneshot_main(cli *c, int argc, char **argv, int sub)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},
        {"wait", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    static oneshot o; /* callbacks may see it during cleanup */
    memset(&o, 0, sizeof(o));
    o.c = c;
    cli_data data = {0};
    int opt, rc;
    while ((opt = getopt_long(argc, argv, ":jwh", opts, NULL)) != -1) {
        switch (opt) {
        case 'j':
            o.json = 1;
            break;
        case 'w':
            o.wait = 1;
            break;
        case 'h':
            tasks_usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, opt, argv);
        }
    }
    if ((o.json && (sub == SUB_SUBMIT || sub == SUB_DELETE)) || (o.wait && sub != SUB_SUBMIT))
        return cli_usage_error(c, "option '%s' does not apply to '%s'",
                               o.json ? "--json" : "--wait", argv[0]);
    const char *pos[2] = {NULL, NULL};
    if (sub == SUB_SUBMIT) {
        if (optind >= argc)
            return cli_usage_error(c, "missing QUEUE");
        if (argc - optind > 2)
            return cli_usage_error(c, "unexpected argument '%s'", argv[optind + 2]);
        pos[0] = argv[optind];
        pos[1] = argc - optind == 2 ? argv[optind + 1] : NULL;
    } else if ((rc = positional(c, argc, argv, sub == SUB_LIST ? 1 : 2,
                                sub == SUB_LIST ? "QUEUE" : "QUEUE or TASK", pos))) {
        return rc;
    }
    o.queue = pos[0];
    if (sub != SUB_SUBMIT && pos[1])
        cli_quote(pos[1], o.task, sizeof(o.task));
    if (sub == SUB_SUBMIT && pos[1]) {
        if (!strcmp(pos[1], "-")) {
            if ((rc = cli_data_read(c, &data, "-")))
                return rc;
        } else {
            cli_data_set(&data, pos[1]);
        }
    }
    if ((rc = cli_client_new(c)) || (rc = cli_connect(c)))
        goto out;
    int err;
    switch (sub) {
    case SUB_SUBMIT:
        err = reign_tasks_submit(c->client, o.queue, data.data, data.len, on_submitted, &o);
        break;
    case SUB_STATUS:
        err = reign_tasks_status(c->client, o.queue, pos[1], on_info, &o);
        break;
    case SUB_LIST:
        err = reign_tasks_list(c->client, o.queue, on_list, &o);
        break;
    default:
        err = reign_tasks_delete(c->client, o.queue, pos[1], on_deleted, &o);
        break;
    }
    if (err < 0) {
        rc = err == REIGN_ENAME && pos[1] && sub != SUB_SUBMIT &&
                     segment_ok(o.queue, REIGN_TASKS_QUEUE_MAX)
                 ? refused(c, err, "task id", pos[1])
             : err == REIGN_ENAME ? refused(c, err, "queue name", o.queue)
             : err == REIGN_E2BIG ? (cli_error(c, "payload of %zu bytes is over the limit of %d",
                                               data.len, REIGN_TASK_DATA_MAX),
                                     CLI_EXIT_FAIL)
                                  : refused(c, err, "queue", o.queue);
        goto out;
    }
    cli_update(c);
    rc = cli_run(c);
out:
    cli_data_free(&data);
    return rc;
}

/* ---- master ------------------------------------------------------------------ */

static reign_tasks_master *the_master;
static uint64_t master_term; /* the term we lead in, 0 while we do not */

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    cli *c = ud;
    (void)m;
    switch (ev->type) {
    case REIGN_TASKS_ELECTED:
        master_term = ev->term;
        /* fall through */
    case REIGN_TASKS_RECOVERED:
        cli_print("%s term=%llu", reign_tasks_event_name(ev->type), (unsigned long long)ev->term);
        break;
    case REIGN_TASKS_DEMOTED:
        master_term = 0;
        cli_print("demoted term=%llu reason=%s", (unsigned long long)ev->term,
                  reign_demote_reason_name(ev->reason));
        break;
    case REIGN_TASKS_ASSIGNED:
        cli_print("assigned %s worker=%s%s%s", ev->task, ev->worker, ev->from ? " from=" : "",
                  ev->from ? ev->from : "");
        break;
    case REIGN_TASKS_ERROR:
        cli_log(c, REIGN_LOG_WARN, "%s: %s", ev->message ? ev->message : "error",
                reign_strerror(ev->error));
        break;
    default:
        break;
    }
}

static void master_signal(cli *c, int signum)
{
    (void)signum;
    /* Freed, the master calls back no more: a leader says here that it lets go, as `reign
     * campaign` does, so that every elected line has its demoted one. */
    if (master_term)
        cli_print("demoted term=%llu reason=%s", (unsigned long long)master_term,
                  reign_demote_reason_name(REIGN_DEMOTE_RESIGNED));
    master_term = 0;
    the_master = reign_tasks_master_free(the_master); /* our election node's delete goes out */
    cli_exit(c, CLI_EXIT_OK);
}

static int master_main(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},
        {"strategy", required_argument, NULL, 's'},
        {"retention", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    reign_tasks_master_options mo = {.size = sizeof(mo)};
    int opt, rc;
    int64_t ns;
    while ((opt = getopt_long(argc, argv, ":i:s:r:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'i':
            mo.id = optarg;
            break;
        case 's':
            if ((rc = reign_tasks_strategy_parse(optarg)) < 0)
                return cli_usage_error(c, "unknown strategy '%s' (least_loaded or random)", optarg);
            mo.strategy = (reign_tasks_strategy)rc;
            break;
        case 'r':
            if (cli_parse_seconds(c, "--retention", optarg, 10 * 365 * 86400.0, &ns))
                return CLI_EXIT_USAGE;
            mo.retention_ms = ns / 1000000;
            break;
        case 'h':
            tasks_usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, opt, argv);
        }
    }
    const char *queue = NULL;
    if ((rc = positional(c, argc, argv, 1, "QUEUE", &queue)))
        return rc;
    c->guarded = 1;
    if ((rc = cli_client_new(c)))
        return rc;
    mo.cb = on_master;
    mo.userdata = c;
    int err = reign_tasks_master_start(&the_master, c->client, queue, &mo);
    if (err < 0)
        return refused(c, err, "queue name", queue);
    if ((rc = cli_connect(c)) == 0) {
        c->on_signal = master_signal;
        rc = cli_run(c);
    }
    the_master = reign_tasks_master_free(the_master);
    return rc;
}

/* ---- worker ------------------------------------------------------------------ */

typedef struct job {
    struct job *next;
    struct wk *wk;
    char *task;
    cli_child child;
    int child_open; /* the child's handles are not closed yet */
    uv_pipe_t out, in;
    uv_write_t wreq;
    uv_buf_t wbuf;
    char *incopy; /* a payload too large to write at once */
    uv_timer_t grace;
    char *output;
    size_t len;
    int exited, eof, cancelled, status, handles;
} job;

typedef struct wk {
    cli *c;
    const char *queue;
    const char *id;
    char **cmd;
    char *exe; /* cmd[0] resolved on PATH, once */
    size_t max_output;
    reign_tasks_worker *worker;
    job *jobs;
    uv_prepare_t prepare; /* moves the leash's deadline, every loop turn */
    int64_t leash_ns;     /* the deadline last given to the leash; 0: none */
} wk;

static wk the_wk;

/* The environment for one task: ours minus REIGN_TASK_ID, REIGN_TASK_QUEUE and
 * REIGN_WORKER_ID, plus those three for this task. */
static char **task_env(wk *w, const char *task, char **own)
{
    const char *names[3] = {"REIGN_TASK_ID", "REIGN_TASK_QUEUE", "REIGN_WORKER_ID"};
    const char *values[3] = {task, w->queue, w->id};
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = calloc(n + 4, sizeof(*env));
    if (!env)
        return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int ours = 0;
        for (int k = 0; k < 3; k++) {
            size_t l = strlen(names[k]);
            ours |= !strncmp(environ[i], names[k], l) && environ[i][l] == '=';
        }
        if (!ours)
            env[m++] = environ[i];
    }
    for (int k = 0; k < 3; k++) {
        size_t len = strlen(names[k]) + strlen(values[k]) + 2;
        if (!(own[k] = malloc(len))) {
            free(env);
            return NULL;
        }
        snprintf(own[k], len, "%s=%s", names[k], values[k]);
        env[m++] = own[k];
    }
    env[m] = NULL;
    return env;
}

/*
 * Gives the leash the end of the session's guarantee, less the fence margin.  Unknown (0: no
 * session proven yet, or it may be lost): the last deadline stays while a CMD may run under it,
 * so that none runs on unguarded; there is none before the first.
 */
static void update_leash(wk *w)
{
    int64_t v = reign_tasks_worker_valid_until_ns(w->worker);
    int64_t at = v > 0 ? v - cli_fence_margin_ns(w->c) : 0;
    if (at == w->leash_ns || (at == 0 && w->jobs))
        return;
    w->leash_ns = at;
    cli_leash_deadline(w->c->leash, at);
}

static void on_prepare(uv_prepare_t *h)
{
    update_leash(h->data);
}

static void job_free(job *j)
{
    if (j->handles > 0 || j->child_open)
        return;
    free(j->task);
    free(j->output);
    free(j->incopy);
    free(j);
}

static void job_closed(uv_handle_t *h)
{
    job *j = h->data;
    j->handles--;
    job_free(j);
}

static void job_unlink(job *j)
{
    for (job **p = &j->wk->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            return;
        }
}

/* Frees the job once its three handles are closed (stdin may be already). */
static void job_close(job *j)
{
    job_unlink(j);
    uv_close((uv_handle_t *)&j->out, job_closed);
    if (!uv_is_closing((uv_handle_t *)&j->in))
        uv_close((uv_handle_t *)&j->in, job_closed);
    uv_close((uv_handle_t *)&j->grace, job_closed);
}

/* Both the exit and the end of stdout are in (or the grace ran out): report. */
static void job_finish(job *j)
{
    wk *w = j->wk;
    if (WIFSIGNALED(j->status) && WTERMSIG(j->status) == SIGKILL && w->leash_ns > 0 &&
        reign_now_ns() >= w->leash_ns)
        cli_log(w->c, REIGN_LOG_WARN,
                "%s: command killed by the leash: the session's guarantee ran out (the task "
                "goes to another worker if the session expired; else it failed with signal 9)",
                j->task);
    if (!j->cancelled && w->worker) {
        int code = 0, sig = 0;
        if (WIFEXITED(j->status))
            code = WEXITSTATUS(j->status);
        else if (WIFSIGNALED(j->status))
            sig = WTERMSIG(j->status), code = 128 + sig;
        cli_print("done %s exit=%d signal=%d", j->task, code, sig);
        int rc = reign_tasks_worker_done(w->worker, j->task, code, sig, j->output, j->len);
        if (rc < 0)
            cli_log(w->c, REIGN_LOG_WARN, "cannot record %s: %s", j->task, reign_strerror(rc));
        cli_update(w->c);
    }
    job_close(j);
}

static void on_grace(uv_timer_t *t)
{
    job *j = t->data;
    uv_read_stop((uv_stream_t *)&j->out);
    j->eof = 1;
    job_finish(j);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static char scratch[65536];
    (void)h;
    (void)hint;
    *buf = uv_buf_init(scratch, sizeof(scratch));
}

static void on_out(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    job *j = s->data;
    if (n > 0) {
        size_t keep = j->len < j->wk->max_output ? j->wk->max_output - j->len : 0;
        if ((size_t)n < keep)
            keep = (size_t)n;
        if (keep) {
            char *o = realloc(j->output, j->len + keep);
            if (o) {
                memcpy(o + j->len, buf->base, keep);
                j->output = o;
                j->len += keep;
            }
        }
        return; /* beyond the bound: read and dropped, so CMD never blocks on us */
    }
    if (n < 0) {
        uv_read_stop(s);
        j->eof = 1;
        if (j->exited) {
            uv_timer_stop(&j->grace);
            job_finish(j);
        }
    }
}

static void on_written(uv_write_t *req, int status)
{
    job *j = req->data;
    (void)status; /* CMD need not read its stdin */
    if (!uv_is_closing((uv_handle_t *)&j->in))
        uv_close((uv_handle_t *)&j->in, job_closed);
}

/* CMD and the rest of its group are gone (child.h). */
static void on_job_exit(cli_child *ch, int status)
{
    job *j = ch->data;
    j->child_open = 0;
    if (status == -1) { /* closed while the worker ends */
        job_free(j);
        return;
    }
    j->exited = 1;
    j->status = status;
    if (j->eof)
        job_finish(j);
    else
        uv_timer_start(&j->grace, on_grace, EXIT_GRACE_MS, 0); /* a process that left the group */
}

static int start_job(wk *w, const char *task, const void *data, size_t len)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    char *own[3] = {NULL, NULL, NULL};
    job *j = calloc(1, sizeof(*j));
    char **env = j ? task_env(w, task, own) : NULL;
    if (!j || !env || !(j->task = strdup(task)) || pipe2(in, O_CLOEXEC) < 0 ||
        pipe2(out, O_CLOEXEC) < 0)
        goto fail;
    int fds[3] = {in[0], out[1], -1};
    /* The leash knows the current deadline before it guards the group. */
    update_leash(w);
    int err = cli_child_start(w->c, &j->child, w->exe, w->cmd, env, fds, false, on_job_exit);
    if (err) {
        errno = err;
        goto fail;
    }
    close(in[0]);
    close(out[1]);
    free(env);
    for (int k = 0; k < 3; k++)
        free(own[k]);
    j->wk = w;
    j->child.data = j;
    j->child_open = 1;
    uv_pipe_init(&w->c->loop, &j->out, 0);
    uv_pipe_init(&w->c->loop, &j->in, 0);
    uv_timer_init(&w->c->loop, &j->grace);
    j->out.data = j->in.data = j->grace.data = j->wreq.data = j;
    uv_pipe_open(&j->out, out[0]);
    uv_pipe_open(&j->in, in[1]);
    uv_read_start((uv_stream_t *)&j->out, alloc_cb, on_out);
    j->wbuf = uv_buf_init((char *)data, (unsigned)len); /* RUN's data: borrowed for now */
    j->handles = 3;
    int done = len ? uv_try_write((uv_stream_t *)&j->in, &j->wbuf, 1) : 0;
    if (done < 0)
        done = 0;
    if ((size_t)done == len) {
        uv_close((uv_handle_t *)&j->in, job_closed);
    } else {
        /* A large payload: the rest from a copy, once the pipe takes it. */
        size_t rest = len - (size_t)done;
        j->incopy = malloc(rest);
        if (j->incopy) {
            memcpy(j->incopy, (const char *)data + done, rest);
            j->wbuf = uv_buf_init(j->incopy, (unsigned)rest);
        }
        if (!j->incopy || uv_write(&j->wreq, (uv_stream_t *)&j->in, &j->wbuf, 1, on_written) < 0)
            uv_close((uv_handle_t *)&j->in, job_closed);
    }
    j->next = w->jobs;
    w->jobs = j;
    cli_print("run %s pid=%d", task, (int)j->child.pid);
    return 0;
fail:
    for (int k = 0; k < 2; k++) {
        if (in[k] >= 0)
            close(in[k]);
        if (out[k] >= 0)
            close(out[k]);
    }
    free(env);
    for (int k = 0; k < 3; k++)
        free(own[k]);
    if (j)
        free(j->task);
    free(j);
    return -1;
}

static job *find_job(wk *w, const char *task)
{
    for (job *j = w->jobs; j; j = j->next)
        if (!strcmp(j->task, task))
            return j;
    return NULL;
}

static void kill_job(job *j, int sig)
{
    j->cancelled = 1;
    cli_child_signal(&j->child, sig); /* its whole process group */
}

static void on_worker(reign_tasks_worker *tw, const reign_tasks_event *ev, void *ud)
{
    wk *w = ud;
    switch (ev->type) {
    case REIGN_TASKS_REGISTERED:
        cli_print("registered %s", w->id);
        break;
    case REIGN_TASKS_RUN:
        if (start_job(w, ev->task, ev->data, ev->data_len) < 0) {
            /* Could not even start: a failure like a shell's "cannot run". */
            cli_log(w->c, REIGN_LOG_WARN, "cannot start a process for %s: %s", ev->task,
                    strerror(errno));
            reign_tasks_worker_done(tw, ev->task, 127, 0, NULL, 0);
        }
        break;
    case REIGN_TASKS_CANCEL: {
        job *j = find_job(w, ev->task);
        cli_print("cancel %s", ev->task);
        if (j)
            kill_job(j, SIGKILL);
        break;
    }
    case REIGN_TASKS_RECORDED:
        cli_print("recorded %s", ev->task);
        break;
    case REIGN_TASKS_ERROR:
        cli_log(w->c, REIGN_LOG_WARN, "%s: %s", ev->message ? ev->message : "error",
                reign_strerror(ev->error));
        break;
    default:
        break;
    }
}

static void worker_signal(cli *c, int signum)
{
    wk *w = &the_wk;
    /* Unregister first: the master gives our tasks to others; then stop them. */
    w->worker = reign_tasks_worker_free(w->worker);
    for (job *j = w->jobs; j; j = j->next)
        kill_job(j, signum == SIGINT ? SIGINT : SIGTERM);
    cli_exit(c, CLI_EXIT_OK);
}

static int worker_main(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"id", required_argument, NULL, 'i'},       {"concurrency", required_argument, NULL, 'n'},
        {"prefetch", required_argument, NULL, 'p'}, {"max-output", required_argument, NULL, 'm'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    wk *w = &the_wk;
    memset(w, 0, sizeof(*w));
    w->c = c;
    w->max_output = DEFAULT_MAX_OUTPUT;
    reign_tasks_worker_options wo = {.size = sizeof(wo)};
    int opt, rc;
    long v;
    int end = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            end = i;
            break;
        }
    while ((opt = getopt_long(end, argv, ":i:n:p:m:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'i':
            wo.id = optarg;
            break;
        case 'n':
            if (cli_parse_int(c, "--concurrency", optarg, 1, 10000, &v))
                return CLI_EXIT_USAGE;
            wo.concurrency = (int)v;
            break;
        case 'p':
            if (cli_parse_int(c, "--prefetch", optarg, 1, 40000, &v))
                return CLI_EXIT_USAGE;
            wo.prefetch = (int)v;
            break;
        case 'm':
            if (cli_parse_int(c, "--max-output", optarg, 0, REIGN_TASK_OUTPUT_MAX, &v))
                return CLI_EXIT_USAGE;
            w->max_output = (size_t)v;
            break;
        case 'h':
            tasks_usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, opt, argv);
        }
    }
    if (!wo.id)
        return cli_usage_error(c, "missing --id ID (each worker needs its own)");
    int runs = wo.concurrency ? wo.concurrency : 1;
    if (wo.prefetch && wo.prefetch < runs)
        return cli_usage_error(c,
                               "--prefetch %d is below --concurrency %d: the worker could "
                               "never fill its slots",
                               wo.prefetch, runs);
    const char *queue = NULL;
    if ((rc = positional(c, end, argv, 1, "QUEUE", &queue)))
        return rc;
    if (end + 1 >= argc)
        return cli_usage_error(c, "missing the command (after '--')");
    w->queue = queue;
    w->id = wo.id;
    w->cmd = argv + end + 1;
    w->exe = cli_child_resolve(w->cmd[0]);
    if (!w->exe) {
        char q[256];
        cli_error(c, "command '%s' not found or not executable%s",
                  cli_quote(w->cmd[0], q, sizeof(q)), strchr(w->cmd[0], '/') ? "" : " on PATH");
        return CLI_EXIT_FAIL;
    }
    /* The leash first, while this process has one thread (the client starts some). */
    if ((rc = cli_leash_begin(c)))
        return rc;
    uv_prepare_init(&c->loop, &w->prepare);
    w->prepare.data = w;
    uv_prepare_start(&w->prepare, on_prepare);
    c->guarded = 1;
    if ((rc = cli_client_new(c)))
        goto out;
    wo.cb = on_worker;
    wo.userdata = w;
    int err = reign_tasks_worker_start(&w->worker, c->client, queue, &wo);
    if (err < 0) {
        rc = !segment_ok(queue, REIGN_TASKS_QUEUE_MAX) ? refused(c, err, "queue name", queue)
                                                       : refused(c, err, "worker id", wo.id);
        goto out;
    }
    if ((rc = cli_connect(c)) == 0) {
        c->on_signal = worker_signal;
        rc = cli_run(c);
    }
out:
    w->worker = reign_tasks_worker_free(w->worker);
    for (job *j = w->jobs; j; j = j->next) {
        j->cancelled = 1;
        cli_child_close(&j->child);
    }
    /* With a CMD still dying, its group is the leash's to finish (end of file); else the leash
     * leaves quietly. */
    if (w->jobs)
        cli_leash_drop(c->leash);
    else
        cli_leash_stop(c->leash);
    c->leash = NULL;
    while (w->jobs)
        job_close(w->jobs);
    free(w->exe);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------- */

int cli_tasks_main(cli *c, int argc, char **argv)
{
    if (argc < 2)
        return cli_usage_error(c, "missing SUBCOMMAND (master, worker, submit, status, list, "
                                  "delete)");
    const char *sub = argv[1];
    if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
        tasks_usage(stdout);
        return CLI_EXIT_OK;
    }
    optind = 0;
    argc--;
    argv++;
    if (!strcmp(sub, "master"))
        return master_main(c, argc, argv);
    if (!strcmp(sub, "worker"))
        return worker_main(c, argc, argv);
    if (!strcmp(sub, "submit"))
        return oneshot_main(c, argc, argv, SUB_SUBMIT);
    if (!strcmp(sub, "status"))
        return oneshot_main(c, argc, argv, SUB_STATUS);
    if (!strcmp(sub, "list"))
        return oneshot_main(c, argc, argv, SUB_LIST);
    if (!strcmp(sub, "delete"))
        return oneshot_main(c, argc, argv, SUB_DELETE);
    char q[256];
    return cli_usage_error(c, "unknown tasks subcommand '%s'", cli_quote(sub, q, sizeof(q)));
}
