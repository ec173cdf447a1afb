/*
 * it_tasks_submit_connloss.c - a submit whose outcome is unknown.
 *
 *     it_tasks_submit_connloss lost-reply | failed
 *
 * Linked with zk_fault.c, which sees every multi libreign sends: the first submit sent after
 * the test arms the injector (a multi creating under /reign/tasks/Q/tasks/, with the task's
 * payload node data/<guid>) is
 *
 *   lost-reply  sent and applied by the server, but answered with ZCONNECTIONLOSS: the task
 *               exists and the submitter does not know it.  reign_tasks_submit() must find
 *               it by the guid in its name and report that very task, creating no second one.
 *   failed      never sent, and answered with ZCONNECTIONLOSS from another thread (as the C
 *               client's completion thread would): the search finds nothing, the submit
 *               creates the task once.
 *
 * Either way the queue ends with exactly the tasks submitted (the first, unarmed submit made
 * the queue's directories), and the id reported is the one in the store.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "zk_fault.h"

static char task_dir[300]; /* set before the first client: "/reign/tasks/Q/tasks/" */

/* A submit: a multi that creates a task's node under task_dir. */
static int choose_submit(int count, const zoo_op_t *ops)
{
    return h_fault_create_under(count, ops, task_dir);
}

typedef struct outcome {
    int done;
    int err;
    char task[64];
} outcome;

static void on_submitted(reign_client *client, int err, const char *task, void *ud)
{
    outcome *o = ud;
    (void)client;
    o->done = 1;
    o->err = err;
    snprintf(o->task, sizeof(o->task), "%s", task ? task : "");
}

static int submitted(void *arg)
{
    return ((outcome *)arg)->done;
}

static void submit(h_cand *c, const char *queue, const char *data, outcome *o)
{
    memset(o, 0, sizeof(*o));
    H_OK(reign_tasks_submit(c->client, queue, data, strlen(data), on_submitted, o));
    H_WAIT(submitted, o, "the submit's answer");
    H_CHECKF(o->err == 0, "submit failed: %s", reign_strerror(o->err));
    h_log("submitted %s", o->task);
}

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "lost-reply") && strcmp(argv[1], "failed"))) {
        fprintf(stderr, "usage: %s lost-reply|failed\n", argv[0]);
        return 2;
    }
    h_init("it_tasks_submit_connloss");
    int lose_reply = !strcmp(argv[1], "lost-reply");
    char queue[128];
    h_unique_name(queue, sizeof(queue), "it-tasks");
    snprintf(task_dir, sizeof(task_dir), "/reign/tasks/%s/tasks/", queue);
    h_fault_setup(lose_reply ? H_FAULT_REPLY_LOST : H_FAULT_NEVER_SENT, NULL, choose_submit);

    h_cand *c = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    outcome first, second;
    submit(c, queue, "first", &first); /* makes the queue's directories */

    int before = h_fault_chosen();
    h_fault_arm();
    submit(c, queue, "second", &second);

    int creates = h_fault_chosen() - before;
    char server_made[300];
    h_fault_applied(server_made, sizeof(server_made));
    H_CHECKF(h_fault_injected(), "the fault was never injected");

    char names[8][H_NODE_MAX];
    zhandle_t *zh = h_raw_connect(h_hosts(), NULL);
    char dir[300];
    snprintf(dir, sizeof(dir), "/reign/tasks/%s/tasks", queue);
    int n = h_raw_children(zh, dir, names, 8);
    char data_dir[300], payloads[8][H_NODE_MAX];
    /* Both submits come from one client: their payloads share its bucket, data/<tag>. */
    snprintf(data_dir, sizeof(data_dir), "/reign/tasks/%s/data/%.4s", queue, first.task + 2);
    int n_payloads = h_raw_children(zh, data_dir, payloads, 8);
    h_raw_close(zh);
    H_CHECKF(n == 2, "%d task nodes, expected 2 (one per submit)", n);
    H_CHECKF(n_payloads == 2, "%d payload nodes, expected 2 (one per task)", n_payloads);
    H_CHECKF(!strcmp(names[0], first.task) || !strcmp(names[1], first.task),
             "the first task %s is not in the store", first.task);
    H_CHECKF(!strcmp(names[0], second.task) || !strcmp(names[1], second.task),
             "the second submit reported %s, which is not in the store", second.task);
    if (lose_reply) {
        /* Adopted, not created again. */
        H_CHECKF(creates == 1, "%d creates for the second submit, expected 1", creates);
        const char *slash = strrchr(server_made, '/');
        H_CHECKF(slash && !strcmp(slash + 1, second.task),
                 "the submit reported %s but the server made %s", second.task, server_made);
    } else {
        H_CHECKF(creates == 2, "%d creates for the second submit, expected 2", creates);
    }
    return h_finish();
}
