/*
 * it_tasks_queue.c - the task queue through the library alone, in one process (so that the
 * sanitizer builds, ThreadSanitizer included, run the recipe's code paths).
 *
 * Two masters (one leads, one stands by), two workers (concurrency 3) and a submitter, each on
 * its own client.  40 tasks are submitted and waited for; after 10 results the leading master
 * is freed (it resigns), and the standby must take over, recover and assign the rest.  Checks:
 * every task's result arrives once, with the output and exit status its worker gave (the
 * payload "fail" exits 3); every task ran exactly once (no worker died); list shows them all
 * done; status and delete work on one of them.  Workers answer RUN from inside it, and no
 * RUN comes from inside another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define N_TASKS 40

typedef struct ran {
    char task[64];
    int runs;
} ran;

static ran runs[4 * N_TASKS];
static size_t n_runs;
static int results, result_errors, registered, elected[2], recovered[2];
static char ids[N_TASKS][64];
static int got[N_TASKS];
static int submitted;

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    int i = (int)(intptr_t)ud;
    (void)m;
    if (ev->type == REIGN_TASKS_ELECTED)
        elected[i]++;
    else if (ev->type == REIGN_TASKS_RECOVERED)
        recovered[i]++;
    else if (ev->type == REIGN_TASKS_ERROR)
        h_log("master %d: %s (%s)", i, ev->message ? ev->message : "?", reign_strerror(ev->error));
}

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    (void)ud;
    if (ev->type == REIGN_TASKS_REGISTERED) {
        registered++;
    } else if (ev->type == REIGN_TASKS_RUN) {
        size_t i;
        for (i = 0; i < n_runs && strcmp(runs[i].task, ev->task); i++)
            ;
        if (i == n_runs) {
            H_CHECK(n_runs < sizeof(runs) / sizeof(runs[0]));
            snprintf(runs[n_runs++].task, sizeof(runs[0].task), "%s", ev->task);
        }
        runs[i].runs++;
        int fail = ev->data_len == 4 && !memcmp(ev->data, "fail", 4);
        /* Done from inside RUN: the next RUN must not come from inside this one. */
        static int in_run;
        H_CHECKF(!in_run, "RUN %s inside another worker's RUN", ev->task);
        in_run = 1;
        H_OK(reign_tasks_worker_done(w, ev->task, fail ? 3 : 0, 0, ev->data, ev->data_len));
        in_run = 0;
    }
}

static void on_result(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    int i = (int)(intptr_t)ud;
    (void)c;
    got[i]++;
    results++;
    if (err) {
        result_errors++;
        h_log("result of task %d: %s", i, reign_strerror(err));
        return;
    }
    char want[16];
    snprintf(want, sizeof(want), i == 7 ? "fail" : "p%d", i);
    H_CHECKF(info->state == REIGN_TASK_DONE, "task %d not done", i);
    H_CHECKF(info->output_len == strlen(want) && !memcmp(info->output, want, strlen(want)),
             "task %d: output %.*s, expected %s", i, (int)info->output_len,
             (const char *)info->output, want);
    H_CHECKF(info->exit_code == (i == 7 ? 3 : 0), "task %d: exit %d", i, info->exit_code);
}

static const char *queue;

static void on_submitted(reign_client *c, int err, const char *task, void *ud)
{
    int i = (int)(intptr_t)ud;
    H_CHECKF(err == 0, "submit %d: %s", i, reign_strerror(err));
    snprintf(ids[i], sizeof(ids[i]), "%s", task);
    submitted++;
    H_OK(reign_tasks_wait(c, queue, task, on_result, ud));
}

static int results_at_least_10(void *arg)
{
    (void)arg;
    return results >= 10;
}

static int all_results(void *arg)
{
    (void)arg;
    return results >= N_TASKS;
}

static int standby_recovered(void *arg)
{
    (void)arg;
    return recovered[1] >= 1;
}

static int first_recovered(void *arg)
{
    (void)arg;
    return recovered[0] >= 1;
}

static int workers_registered(void *arg)
{
    (void)arg;
    return registered >= 2;
}

typedef struct listed {
    int done;
    int err;
    size_t n, n_done;
} listed;

static void on_list(reign_client *c, int err, const reign_task_info *v, size_t n, void *ud)
{
    listed *l = ud;
    (void)c;
    l->done = 1;
    l->err = err;
    l->n = n;
    for (size_t i = 0; i < n; i++)
        l->n_done += v[i].state == REIGN_TASK_DONE;
}

static int list_done(void *arg)
{
    return ((listed *)arg)->done;
}

typedef struct one {
    int done, err;
    reign_task_state state;
    int exit_code;
} one;

static void on_status(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    one *o = ud;
    (void)c;
    o->done = 1;
    o->err = err;
    if (!err) {
        o->state = info->state;
        o->exit_code = info->exit_code;
    }
}

static void on_deleted(reign_client *c, int err, void *ud)
{
    one *o = ud;
    (void)c;
    o->done = 1;
    o->err = err;
}

static int one_done(void *arg)
{
    return ((one *)arg)->done;
}

int main(void)
{
    h_init("it_tasks_queue");
    static char name[128];
    h_unique_name(name, sizeof(name), "it-queue");
    queue = name;

    h_cand *cm[2], *cw[2];
    reign_tasks_master *m[2] = {NULL, NULL};
    reign_tasks_worker *w[2];
    for (int i = 0; i < 2; i++) {
        char id[16];
        snprintf(id, sizeof(id), "m%d", i);
        cm[i] = h_cand_new(id, NULL, NULL, NULL, NULL);
    }
    reign_tasks_master_options mo = {.size = sizeof(mo), .id = "m0", .cb = on_master};
    H_OK(reign_tasks_master_start(&m[0], cm[0]->client, queue, &mo));
    H_WAIT(first_recovered, NULL, "m0 recovered");
    mo.id = "m1";
    mo.userdata = (void *)(intptr_t)1;
    H_OK(reign_tasks_master_start(&m[1], cm[1]->client, queue, &mo));
    for (int i = 0; i < 2; i++) {
        char id[16];
        snprintf(id, sizeof(id), "w%d", i);
        cw[i] = h_cand_new(id, NULL, NULL, NULL, NULL);
        reign_tasks_worker_options wo = {
            .size = sizeof(wo), .id = id, .concurrency = 3, .cb = on_worker};
        H_OK(reign_tasks_worker_start(&w[i], cw[i]->client, queue, &wo));
    }
    H_WAIT(workers_registered, NULL, "both workers registered");

    h_cand *cs = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    for (int i = 0; i < N_TASKS; i++) {
        char data[16];
        snprintf(data, sizeof(data), i == 7 ? "fail" : "p%d", i);
        H_OK(reign_tasks_submit(cs->client, queue, data, strlen(data), on_submitted,
                                (void *)(intptr_t)i));
    }
    H_WAIT(results_at_least_10, NULL, "10 results");
    h_log("%d results: freeing the leading master", results);
    m[0] = reign_tasks_master_free(m[0]);
    H_WAIT(standby_recovered, NULL, "the standby master recovered");
    H_WAIT(all_results, NULL, "every result");

    H_CHECKF(result_errors == 0, "%d results failed", result_errors);
    for (int i = 0; i < N_TASKS; i++)
        H_CHECKF(got[i] == 1, "task %d got %d results", i, got[i]);
    H_CHECKF(n_runs == N_TASKS, "%zu tasks ran, expected %d", n_runs, N_TASKS);
    for (size_t i = 0; i < n_runs; i++)
        H_CHECKF(runs[i].runs == 1, "%s ran %d times", runs[i].task, runs[i].runs);
    H_CHECKF(elected[1] == 1, "the standby was elected %d times", elected[1]);

    listed l = {0};
    H_OK(reign_tasks_list(cs->client, queue, on_list, &l));
    H_WAIT(list_done, &l, "the listing");
    H_CHECKF(l.err == 0 && l.n == N_TASKS && l.n_done == N_TASKS,
             "list: err %d, %zu tasks, %zu done", l.err, l.n, l.n_done);

    one st = {0};
    H_OK(reign_tasks_status(cs->client, queue, ids[7], on_status, &st));
    H_WAIT(one_done, &st, "the status");
    H_CHECKF(st.err == 0 && st.state == REIGN_TASK_DONE && st.exit_code == 3,
             "status of the failing task: err %d state %d exit %d", st.err, st.state, st.exit_code);
    one del = {0};
    H_OK(reign_tasks_delete(cs->client, queue, ids[7], on_deleted, &del));
    H_WAIT(one_done, &del, "the delete");
    H_CHECKF(del.err == 0, "delete: %s", reign_strerror(del.err));
    one gone = {0};
    H_OK(reign_tasks_status(cs->client, queue, ids[7], on_status, &gone));
    H_WAIT(one_done, &gone, "the status after the delete");
    H_CHECKF(gone.err == REIGN_ENOENT, "status after delete: %s", reign_strerror(gone.err));

    reign_tasks_master_free(m[1]);
    for (int i = 0; i < 2; i++)
        reign_tasks_worker_free(w[i]);
    return h_finish();
}
