/*
 * it_tasks_submit_connloss.c - a submit whose outcome is unknown.
 *
 *     it_tasks_submit_connloss lost-reply | failed
 *
 * Linked with -Wl,--wrap=zoo_amulti against reign_internal: the first submit sent after the
 * test arms the injector (a multi creating under /reign/tasks/Q/tasks/, with the task's
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

int __real_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);
int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char task_dir[300]; /* "/reign/tasks/Q/tasks/" */
static int lose_reply;     /* lost-reply (1) or failed (0) */
static int armed, injected, task_creates;
static char applied[300]; /* lost-reply: what the server created */

typedef struct pending_multi {
    void_completion_t completion;
    const void *data;
    zoo_op_result_t *results;
} pending_multi;

static void answer_lost(int rc, const void *data)
{
    pending_multi *p = (pending_multi *)data;
    pthread_mutex_lock(&mu);
    if (rc == ZOK) {
        /* The first create is the task's node: its result holds the name the server made. */
        const char *made = p->results[0].value;
        snprintf(applied, sizeof(applied), "%.*s", made ? p->results[0].valuelen : 0,
                 made ? made : "");
        injected = 1;
    }
    pthread_mutex_unlock(&mu);
    p->completion(rc == ZOK ? ZCONNECTIONLOSS : rc, p->data);
    free(p);
}

static void *never_sent(void *arg)
{
    pending_multi *p = arg;
    pthread_mutex_lock(&mu);
    injected = 1;
    pthread_mutex_unlock(&mu);
    p->completion(ZCONNECTIONLOSS, p->data);
    free(p);
    return NULL;
}

/* Whether the multi creates a task node (a submit). */
static int is_submit(int count, const zoo_op_t *ops)
{
    for (int i = 0; i < count; i++)
        if (ops[i].type == ZOO_CREATE_OP &&
            !strncmp(ops[i].create_op.path, task_dir, strlen(task_dir)))
            return 1;
    return 0;
}

int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data)
{
    int inject = 0;
    pthread_mutex_lock(&mu);
    if (task_dir[0] && is_submit(count, ops)) {
        task_creates++;
        inject = armed;
        armed = 0;
    }
    pthread_mutex_unlock(&mu);
    if (!inject)
        return __real_zoo_amulti(zh, count, ops, results, completion, data);
    pending_multi *p = malloc(sizeof(*p));
    H_CHECK(p != NULL);
    p->completion = completion;
    p->data = data;
    p->results = results;
    const char *path = ops[0].create_op.path;
    if (lose_reply) {
        h_log("injecting: the submit of %s is applied, its reply lost", path);
        int rc = __real_zoo_amulti(zh, count, ops, results, answer_lost, p);
        if (rc != ZOK)
            free(p);
        return rc;
    }
    h_log("injecting: the submit of %s never reaches the server", path);
    pthread_t t;
    H_CHECK(pthread_create(&t, NULL, never_sent, p) == 0);
    pthread_detach(t);
    return ZOK;
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
    lose_reply = !strcmp(argv[1], "lost-reply");
    char queue[128];
    h_unique_name(queue, sizeof(queue), "it-tasks");
    pthread_mutex_lock(&mu);
    snprintf(task_dir, sizeof(task_dir), "/reign/tasks/%s/tasks/", queue);
    pthread_mutex_unlock(&mu);

    h_cand *c = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    outcome first, second;
    submit(c, queue, "first", &first); /* makes the queue's directories */

    pthread_mutex_lock(&mu);
    armed = 1;
    int before = task_creates;
    pthread_mutex_unlock(&mu);
    submit(c, queue, "second", &second);

    pthread_mutex_lock(&mu);
    int creates = task_creates - before;
    int inj = injected;
    char server_made[300];
    snprintf(server_made, sizeof(server_made), "%s", applied);
    pthread_mutex_unlock(&mu);
    H_CHECKF(inj, "the fault was never injected");

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
