/*
 * it_tasks_move_connloss.c - a move of a task whose outcome is unknown.
 *
 *     it_tasks_move_connloss assign-lost | assign-failed | done-lost | done-failed | done-held
 *
 * Linked with zk_fault.c, which sees every multi libreign sends.  Each move of a task is one
 * multi: the master's assignment (a create under assign/, with the delete of tasks/T) and the
 * worker's completion (a create under status/, with the delete of assign/W/T).  The first
 * such multi sent after the test arms the injector is
 *
 *   *-lost    sent and applied by the server, but answered with ZCONNECTIONLOSS: the master
 *             must find that its source is gone and take the move as made; the worker must
 *             find its own result and report it recorded.  Neither sends that multi again.
 *   *-failed  never sent, and answered with ZCONNECTIONLOSS from another thread (as the C
 *             client's completion thread would): the master or the worker sends it again.
 *
 * Either way every task gets one result and runs once, the worker reports every result
 * recorded, the master every task assigned, and the queue ends with nothing in tasks/,
 * data/ or assign/W and one status per task.
 *
 *   done-held the answer of the first result multi is held back (applied, not yet answered)
 *             until the worker (concurrency 1) has been given the next task: a task whose
 *             result is being written no longer takes the worker's one slot.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "record.h"
#include "zk_fault.h"

#define N_TASKS 5

/* "/reign/tasks/Q/assign/" or "/reign/tasks/Q/status/", set before the first client. */
static char target_dir[300];

/* A move the test is about: a multi that creates a node under target_dir. */
static int choose_move(int count, const zoo_op_t *ops)
{
    return h_fault_create_under(count, ops, target_dir);
}

static int assigned, recorded, registered, recovered, results, result_errors;
static int runs[N_TASKS];
static const char *queue;

/* The task's index, from its payload "p<i>" (known before the submit's answer may be). */
static int index_of(const void *data, size_t len)
{
    int i = len == 2 && ((const char *)data)[0] == 'p' ? ((const char *)data)[1] - '0' : -1;
    return i >= 0 && i < N_TASKS ? i : -1;
}

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    (void)m;
    (void)ud;
    if (ev->type == REIGN_TASKS_RECOVERED)
        recovered++;
    else if (ev->type == REIGN_TASKS_ASSIGNED)
        assigned++;
    else if (ev->type == REIGN_TASKS_ERROR)
        h_log("master: %s (%s)", ev->message ? ev->message : "?", reign_strerror(ev->error));
}

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    (void)ud;
    if (ev->type == REIGN_TASKS_REGISTERED) {
        registered++;
    } else if (ev->type == REIGN_TASKS_RECORDED) {
        recorded++;
    } else if (ev->type == REIGN_TASKS_RUN) {
        int i = index_of(ev->data, ev->data_len);
        H_CHECKF(i >= 0, "ran %s, whose payload is not one submitted", ev->task);
        runs[i]++;
        H_OK(reign_tasks_worker_done(w, ev->task, 0, 0, ev->data, ev->data_len));
    } else if (ev->type == REIGN_TASKS_ERROR) {
        h_log("worker: %s (%s)", ev->message ? ev->message : "?", reign_strerror(ev->error));
    }
}

static void on_result(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    (void)c;
    results++;
    if (err || index_of(info->output, info->output_len) != (int)(intptr_t)ud) {
        result_errors++;
        h_log("result of task %d: %s", (int)(intptr_t)ud, err ? reign_strerror(err) : "output");
    }
}

static void on_submitted(reign_client *c, int err, const char *task, void *ud)
{
    H_CHECKF(err == 0, "submit %d: %s", (int)(intptr_t)ud, reign_strerror(err));
    H_OK(reign_tasks_wait(c, queue, task, on_result, ud));
}

static int flag_set(void *arg)
{
    return *(int *)arg > 0;
}

static int answer_held_and_two_ran(void *arg)
{
    (void)arg;
    int ran = 0;
    for (int i = 0; i < N_TASKS; i++)
        ran += runs[i];
    return h_fault_held() && ran >= 2;
}

static int all_done(void *arg)
{
    (void)arg;
    return results >= N_TASKS && recorded >= N_TASKS && assigned >= N_TASKS;
}

/* The number of children of /reign/tasks/Q/<dir>, or 0 if it does not exist. */
static int count_children(zhandle_t *zh, const char *dir)
{
    char path[H_NODE_MAX + 300], names[2 * N_TASKS][H_NODE_MAX];
    snprintf(path, sizeof(path), "/reign/tasks/%s/%s", queue, dir);
    int n = h_raw_children(zh, path, names, 2 * N_TASKS);
    return n == ZNONODE ? 0 : n;
}

/* Payload nodes: data/<tag>/<guid> (and a guid directly in data/, which nothing writes). */
static int count_payloads(zhandle_t *zh)
{
    char path[300], names[2 * N_TASKS][H_NODE_MAX];
    snprintf(path, sizeof(path), "/reign/tasks/%.200s/data", queue);
    int n = h_raw_children(zh, path, names, 2 * N_TASKS), payloads = 0;
    for (int i = 0; i < n; i++) {
        char bucket[H_NODE_MAX + 8];
        snprintf(bucket, sizeof(bucket), "data/%.*s", H_NODE_MAX - 1, names[i]);
        payloads += strlen(names[i]) == 16 ? 1 : count_children(zh, bucket);
    }
    return payloads;
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"assign-lost", "assign-failed", "done-lost", "done-failed",
                                        "done-held"};
    int mode = -1;
    for (int i = 0; argc == 2 && i < 5; i++)
        if (!strcmp(argv[1], modes[i]))
            mode = i;
    if (mode < 0) {
        fprintf(stderr, "usage: %s assign-lost|assign-failed|done-lost|done-failed|done-held\n",
                argv[0]);
        return 2;
    }
    int hold_reply = mode == 4;
    h_init("it_tasks_move_connloss");
    int lose_reply = mode == 0 || mode == 2;
    static char name[128];
    h_unique_name(name, sizeof(name), "it-move");
    queue = name;
    snprintf(target_dir, sizeof(target_dir), "/reign/tasks/%s/%s/", queue,
             mode < 2 ? "assign" : "status");
    h_fault_setup(hold_reply   ? H_FAULT_REPLY_HELD
                  : lose_reply ? H_FAULT_REPLY_LOST
                               : H_FAULT_NEVER_SENT,
                  NULL, choose_move);
    h_fault_arm(); /* the first move of its kind */

    h_cand *cm = h_cand_new("m0", NULL, NULL, NULL, NULL);
    reign_tasks_master *m = NULL;
    reign_tasks_master_options mo = {.size = sizeof(mo), .id = "m0", .cb = on_master};
    H_OK(reign_tasks_master_start(&m, cm->client, queue, &mo));
    H_WAIT(flag_set, &recovered, "the master recovered");
    h_cand *cw = h_cand_new("w0", NULL, NULL, NULL, NULL);
    reign_tasks_worker *w = NULL;
    reign_tasks_worker_options wo = {.size = sizeof(wo), .id = "w0", .cb = on_worker};
    H_OK(reign_tasks_worker_start(&w, cw->client, queue, &wo));
    H_WAIT(flag_set, &registered, "the worker registered");

    h_cand *cs = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    for (int i = 0; i < N_TASKS; i++) {
        char data[8];
        snprintf(data, sizeof(data), "p%d", i);
        H_OK(reign_tasks_submit(cs->client, queue, data, strlen(data), on_submitted,
                                (void *)(intptr_t)i));
    }
    if (hold_reply) {
        /* The worker runs one task at a time; the first result's answer is held back. */
        H_WAIT(answer_held_and_two_ran, NULL, "the next task run while a result is written");
        h_fault_release();
    }
    /* Every result, and the worker's and the master's last answers. */
    H_WAIT(all_done, NULL, "every result recorded and reported");

    int multis = h_fault_chosen();
    H_CHECKF(h_fault_injected(), "the fault was never injected");
    H_CHECKF(result_errors == 0, "%d results failed", result_errors);
    for (int i = 0; i < N_TASKS; i++)
        H_CHECKF(runs[i] == 1, "task %d ran %d times", i, runs[i]);
    /* A lost reply is settled by a read, a failed send by sending again. */
    int want = N_TASKS + (lose_reply || hold_reply ? 0 : 1);
    H_CHECKF(multis == want, "%d %s multis, expected %d", multis, mode < 2 ? "move" : "result",
             want);
    H_CHECKF(recorded == N_TASKS, "the worker reported %d results recorded, expected %d", recorded,
             N_TASKS);
    H_CHECKF(assigned == N_TASKS, "the master reported %d assignments, expected %d", assigned,
             N_TASKS);

    zhandle_t *zh = h_raw_connect(h_hosts(), NULL);
    int pending = count_children(zh, "tasks");
    int payloads = count_payloads(zh);
    int held = count_children(zh, "assign/w0");
    int done = count_children(zh, "status");
    h_raw_close(zh);
    H_CHECKF(pending == 0 && payloads == 0 && held == 0 && done == N_TASKS,
             "the store holds %d pending, %d payloads, %d assigned, %d results (expected 0, 0, "
             "0, %d)",
             pending, payloads, held, done, N_TASKS);

    reign_tasks_master_free(m);
    reign_tasks_worker_free(w);
    return h_finish();
}
