/*
 * contract_tasks.c - what <reign/tasks.h> promises on every store.
 *
 * One program, run once per store (contract_tasks_zk, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake).  Each case works in a queue of its own:
 *
 *   ops       a submitted task reads as pending (status, list) while no master runs; a
 *             pending task cannot be deleted (REIGN_ENOENT); once a master and a worker run,
 *             the worker gets RUN with the payload, its result is RECORDED, and status, wait
 *             and list show it done with the exit code and output the worker gave; delete
 *             removes it (then status and delete say REIGN_ENOENT); a wait from a client that
 *             did not submit gets the same result
 *   burst     30 submits sent without waiting: 30 distinct task ids, one task each in the
 *             list (a submit never makes two tasks), every one run once and done once
 *   masters   two masters: one is ELECTED, the other assigns nothing while it leads; freed,
 *             the other is elected, recovers and assigns the tasks submitted since
 *   freed     a worker freed while it runs a task: the task goes to another worker, once (one
 *             ASSIGNED with the freed worker as `from`), and gets exactly one result
 *   removal   `reign ls` and `reign rm` of a queue (<reign/store.h>): a queue with tasks is listed
 *             once, as a queue; its removal is refused while a worker stands (naming it, its
 *             tasks left), then while a master stands (naming it); once both have gone it is
 *             removed with its tasks (listed no more, a second removal finds none), and a
 *             master of the queue made again leads with a term above the removed one's: the
 *             fencing tokens of its election never go back
 *   refusals  bad queue names (REIGN_ENAME), bad task names (REIGN_ENAME), a payload over
 *             REIGN_TASK_DATA_MAX (REIGN_E2BIG), bad worker options (REIGN_EINVAL): refused at
 *             once, and a refused call never calls back
 *
 * Idempotent submit after a lost answer needs a fault the public API cannot make: the stores'
 * own tests lose answers on purpose (tests/tasks/it_tasks_submit_connloss.c on ZooKeeper,
 * tests/sql/sql_tasks.c for the SQL stores' statements).  Every wait is for an event, bounded
 * by H_WAIT_MS.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define N_BURST 30
#define MAX_LOG 256

/* ---- what the masters and workers report ------------------------------------------------- */

typedef struct seen {
    char task[REIGN_TASKS_TASK_MAX + 1];
    char who[32];  /* ASSIGNED: the worker; RUN, RECORDED: the worker reporting */
    char from[32]; /* ASSIGNED: the worker it came from, or "" */
    char data[64]; /* RUN: the payload */
    reign_tasks_event_type type;
    int master; /* ASSIGNED: which master reported it */
} seen;

static seen logv[MAX_LOG];
static size_t n_log;
static int elected[2], recovered[2], registered;
static uint64_t term[2]; /* the term of each master's last ELECTED */

static void note(reign_tasks_event_type type, const reign_tasks_event *ev, const char *who,
                 int master)
{
    H_CHECK(n_log < MAX_LOG);
    seen *s = &logv[n_log++];
    memset(s, 0, sizeof(*s));
    s->type = type;
    s->master = master;
    snprintf(s->task, sizeof(s->task), "%s", ev->task ? ev->task : "");
    snprintf(s->who, sizeof(s->who), "%s", who ? who : "");
    snprintf(s->from, sizeof(s->from), "%s", ev->from ? ev->from : "");
    if (ev->data)
        snprintf(s->data, sizeof(s->data), "%.*s", (int)ev->data_len, (const char *)ev->data);
}

static size_t count(reign_tasks_event_type type, const char *task, const char *who)
{
    size_t n = 0;
    for (size_t i = 0; i < n_log; i++)
        if (logv[i].type == type && (!task || !strcmp(logv[i].task, task)) &&
            (!who || !strcmp(logv[i].who, who)))
            n++;
    return n;
}

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    int i = (int)(intptr_t)ud;
    (void)m;
    if (ev->type == REIGN_TASKS_ELECTED) {
        elected[i]++;
        term[i] = ev->term;
    } else if (ev->type == REIGN_TASKS_RECOVERED) {
        recovered[i]++;
    } else if (ev->type == REIGN_TASKS_ASSIGNED) {
        note(ev->type, ev, ev->worker, i);
    } else if (ev->type == REIGN_TASKS_ERROR) {
        h_log("master %d: %s (%s)", i, ev->message ? ev->message : "?", reign_strerror(ev->error));
    }
}

/* A worker: its id, and whether it answers RUN at once (or holds the task). */
typedef struct worker {
    char id[32];
    int hold;
    reign_tasks_worker *w;
    h_cand *c;
} worker;

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    worker *k = ud;
    if (ev->type == REIGN_TASKS_REGISTERED) {
        registered++;
    } else if (ev->type == REIGN_TASKS_RUN) {
        note(ev->type, ev, k->id, -1);
        if (!k->hold) {
            /* The output names the worker; exit 3 for payload "fail". */
            int fail = ev->data_len == 4 && !memcmp(ev->data, "fail", 4);
            H_OK(reign_tasks_worker_done(w, ev->task, fail ? 3 : 0, 0, k->id, strlen(k->id)));
        }
    } else if (ev->type == REIGN_TASKS_RECORDED || ev->type == REIGN_TASKS_CANCEL) {
        note(ev->type, ev, k->id, -1);
    } else if (ev->type == REIGN_TASKS_ERROR) {
        h_log("worker %s: %s (%s)", k->id, ev->message ? ev->message : "?",
              reign_strerror(ev->error));
    }
}

static void worker_start(worker *k, const char *queue, const char *id, int hold)
{
    memset(k, 0, sizeof(*k));
    snprintf(k->id, sizeof(k->id), "%s", id);
    k->hold = hold;
    k->c = h_cand_new(id, h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_worker_options o = {.size = sizeof(o),
                                    .id = k->id,
                                    .concurrency = 1,
                                    .prefetch = 1,
                                    .cb = on_worker,
                                    .userdata = k};
    H_OK(reign_tasks_worker_start(&k->w, k->c->client, queue, &o));
}

static void worker_stop(worker *k)
{
    k->w = reign_tasks_worker_free(k->w);
    h_cand_close(k->c);
}

static reign_tasks_master *master_start(h_cand *c, const char *queue, const char *id, int i)
{
    reign_tasks_master *m = NULL;
    reign_tasks_master_options o = {
        .size = sizeof(o), .id = id, .cb = on_master, .userdata = (void *)(intptr_t)i};
    H_OK(reign_tasks_master_start(&m, c->client, queue, &o));
    return m;
}

/* ---- one-shot calls, waited for ---------------------------------------------------------- */

typedef struct answer {
    int done;
    int err;
    char task[REIGN_TASKS_TASK_MAX + 1];
    reign_task_state state;
    char worker[32];
    int exit_code;
    char output[64];
    size_t n, n_pending, n_done; /* list */
    char tasks[N_BURST + 4][REIGN_TASKS_TASK_MAX + 1];
} answer;

static int pred_done(void *arg)
{
    return ((answer *)arg)->done;
}

static void on_submit(reign_client *c, int err, const char *task, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
    snprintf(a->task, sizeof(a->task), "%s", task ? task : "");
}

static void on_info(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
    if (!info)
        return;
    a->state = info->state;
    a->exit_code = info->exit_code;
    snprintf(a->worker, sizeof(a->worker), "%s", info->worker ? info->worker : "");
    snprintf(a->output, sizeof(a->output), "%.*s", (int)info->output_len,
             info->output ? (const char *)info->output : "");
}

static void on_list(reign_client *c, int err, const reign_task_info *v, size_t n, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
    a->n = n;
    for (size_t i = 0; i < n; i++) {
        if (i < sizeof(a->tasks) / sizeof(a->tasks[0]))
            snprintf(a->tasks[i], sizeof(a->tasks[i]), "%s", v[i].task);
        a->n_pending += v[i].state == REIGN_TASK_PENDING;
        a->n_done += v[i].state == REIGN_TASK_DONE;
    }
}

static void on_deleted(reign_client *c, int err, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
}

static answer do_submit(h_cand *c, const char *queue, const char *data)
{
    answer a = {0};
    H_OK(reign_tasks_submit(c->client, queue, data, strlen(data), on_submit, &a));
    H_WAIT(pred_done, &a, "submit");
    H_OK(a.err);
    return a;
}

static answer do_status(h_cand *c, const char *queue, const char *task)
{
    answer a = {0};
    H_OK(reign_tasks_status(c->client, queue, task, on_info, &a));
    H_WAIT(pred_done, &a, "status");
    return a;
}

static answer do_wait(h_cand *c, const char *queue, const char *task)
{
    answer a = {0};
    H_OK(reign_tasks_wait(c->client, queue, task, on_info, &a));
    H_WAIT(pred_done, &a, "wait");
    H_CHECKF(a.done == 1, "wait called back %d times", a.done);
    return a;
}

static answer do_list(h_cand *c, const char *queue)
{
    answer a = {0};
    H_OK(reign_tasks_list(c->client, queue, on_list, &a));
    H_WAIT(pred_done, &a, "list");
    H_OK(a.err);
    return a;
}

static int do_delete(h_cand *c, const char *queue, const char *task)
{
    answer a = {0};
    H_OK(reign_tasks_delete(c->client, queue, task, on_deleted, &a));
    H_WAIT(pred_done, &a, "delete");
    return a.err;
}

static int pred_registered(void *arg)
{
    return registered >= *(int *)arg;
}

static int pred_recovered(void *arg)
{
    return recovered[*(int *)arg] > 0;
}

typedef struct until {
    reign_tasks_event_type type;
    const char *task, *who;
    size_t n;
} until;

static int pred_seen(void *arg)
{
    until *u = arg;
    return count(u->type, u->task, u->who) >= u->n;
}

static void wait_seen(reign_tasks_event_type type, const char *task, const char *who, size_t n,
                      const char *what)
{
    until u = {type, task, who, n};
    H_WAIT(pred_seen, &u, what);
}

static void reset_log(void)
{
    n_log = 0;
    registered = 0;
    memset(elected, 0, sizeof(elected));
    memset(recovered, 0, sizeof(recovered));
}

/* ---- the cases ----------------------------------------------------------------------------- */

static void case_ops(void)
{
    h_log("---- ops");
    reset_log();
    char queue[128];
    h_unique_name(queue, sizeof(queue), "ops");
    h_cand *s = h_cand_new("submitter", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("other", h_uri(NULL), NULL, NULL, NULL);

    answer t = do_submit(s, queue, "fail");
    answer st = do_status(s, queue, t.task);
    H_CHECKF(st.err == 0 && st.state == REIGN_TASK_PENDING, "status: %s, state %d",
             reign_err_name(st.err), st.state);
    answer l = do_list(o, queue);
    H_CHECK(l.n == 1 && l.n_pending == 1 && !strcmp(l.tasks[0], t.task));
    H_RC(do_delete(s, queue, t.task), REIGN_ENOENT);

    h_cand *mc = h_cand_new("master", h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_master *m = master_start(mc, queue, "m0", 0);
    worker w;
    worker_start(&w, queue, "w0", 0);
    answer done = do_wait(s, queue, t.task);
    H_CHECKF(done.err == 0 && done.state == REIGN_TASK_DONE && done.exit_code == 3 &&
                 !strcmp(done.output, "w0") && !strcmp(done.worker, "w0"),
             "wait: %s, state %d, exit %d, output '%s'", reign_err_name(done.err), done.state,
             done.exit_code, done.output);
    H_CHECK(count(REIGN_TASKS_RUN, t.task, "w0") == 1);
    wait_seen(REIGN_TASKS_RECORDED, t.task, "w0", 1, "RECORDED");
    answer other = do_wait(o, queue, t.task);
    H_CHECK(other.err == 0 && other.state == REIGN_TASK_DONE && other.exit_code == 3);
    st = do_status(o, queue, t.task);
    H_CHECK(st.err == 0 && st.state == REIGN_TASK_DONE && !strcmp(st.output, "w0"));
    l = do_list(s, queue);
    H_CHECK(l.n == 1 && l.n_done == 1);

    H_OK(do_delete(s, queue, t.task));
    H_RC(do_status(s, queue, t.task).err, REIGN_ENOENT);
    H_RC(do_delete(s, queue, t.task), REIGN_ENOENT);
    H_CHECK(do_list(s, queue).n == 0);

    worker_stop(&w);
    reign_tasks_master_free(m);
    h_cand_close(mc);
    h_cand_close(o);
    h_cand_close(s);
}

static int pred_all_submitted(void *arg)
{
    answer *a = arg;
    for (int i = 0; i < N_BURST; i++)
        if (!a[i].done)
            return 0;
    return 1;
}

static void case_burst(void)
{
    h_log("---- burst");
    reset_log();
    char queue[128];
    h_unique_name(queue, sizeof(queue), "burst");
    h_cand *s = h_cand_new("submitter", h_uri(NULL), NULL, NULL, NULL);
    static answer a[N_BURST];
    memset(a, 0, sizeof(a));
    for (int i = 0; i < N_BURST; i++) {
        char data[16];
        snprintf(data, sizeof(data), "p%d", i);
        H_OK(reign_tasks_submit(s->client, queue, data, strlen(data), on_submit, &a[i]));
    }
    H_WAIT(pred_all_submitted, a, "every submit");
    for (int i = 0; i < N_BURST; i++) {
        H_CHECKF(a[i].done == 1 && a[i].err == 0, "submit %d: %d answers, %s", i, a[i].done,
                 reign_err_name(a[i].err));
        for (int j = 0; j < i; j++)
            H_CHECKF(strcmp(a[i].task, a[j].task), "submits %d and %d got one id", i, j);
    }
    answer l = do_list(s, queue);
    H_CHECKF(l.n == N_BURST && l.n_pending == N_BURST, "%zu tasks listed, %zu pending", l.n,
             l.n_pending);

    h_cand *mc = h_cand_new("master", h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_master *m = master_start(mc, queue, "m0", 0);
    worker w[2];
    worker_start(&w[0], queue, "w0", 0);
    worker_start(&w[1], queue, "w1", 0);
    for (int i = 0; i < N_BURST; i++) {
        answer d = do_wait(s, queue, a[i].task);
        H_CHECK(d.err == 0 && d.state == REIGN_TASK_DONE && d.exit_code == 0);
    }
    for (int i = 0; i < N_BURST; i++)
        H_CHECKF(count(REIGN_TASKS_RUN, a[i].task, NULL) == 1, "%s ran %zu times", a[i].task,
                 count(REIGN_TASKS_RUN, a[i].task, NULL));
    l = do_list(s, queue);
    H_CHECK(l.n == N_BURST && l.n_done == N_BURST);
    for (int i = 0; i < 2; i++)
        worker_stop(&w[i]);
    reign_tasks_master_free(m);
    h_cand_close(mc);
    h_cand_close(s);
}

static void case_masters(void)
{
    h_log("---- masters");
    reset_log();
    char queue[128];
    h_unique_name(queue, sizeof(queue), "masters");
    h_cand *mc[2], *s = h_cand_new("submitter", h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_master *m[2];
    mc[0] = h_cand_new("m0", h_uri(NULL), NULL, NULL, NULL);
    mc[1] = h_cand_new("m1", h_uri(NULL), NULL, NULL, NULL);
    m[0] = master_start(mc[0], queue, "m0", 0);
    int first = 0;
    H_WAIT(pred_recovered, &first, "m0 recovered");
    m[1] = master_start(mc[1], queue, "m1", 1);
    worker w;
    worker_start(&w, queue, "w0", 0);
    int one = 1;
    H_WAIT(pred_registered, &one, "the worker registered");
    answer t1 = do_submit(s, queue, "a");
    H_CHECK(do_wait(s, queue, t1.task).state == REIGN_TASK_DONE);
    H_CHECKF(elected[1] == 0 && recovered[1] == 0, "the standby was elected while m0 led");
    for (size_t i = 0; i < n_log; i++)
        H_CHECKF(logv[i].type != REIGN_TASKS_ASSIGNED || logv[i].master == 0,
                 "the standby assigned %s", logv[i].task);
    H_CHECK(reign_tasks_master_is_active(m[0]) && !reign_tasks_master_is_active(m[1]));

    m[0] = reign_tasks_master_free(m[0]);
    int second = 1;
    H_WAIT(pred_recovered, &second, "m1 recovered");
    answer t2 = do_submit(s, queue, "b");
    H_CHECK(do_wait(s, queue, t2.task).state == REIGN_TASK_DONE);
    H_CHECK(count(REIGN_TASKS_RUN, t1.task, NULL) == 1 &&
            count(REIGN_TASKS_RUN, t2.task, NULL) == 1);
    for (size_t i = 0; i < n_log; i++)
        if (logv[i].type == REIGN_TASKS_ASSIGNED && !strcmp(logv[i].task, t2.task))
            H_CHECK(logv[i].master == 1);
    worker_stop(&w);
    reign_tasks_master_free(m[1]);
    h_cand_close(mc[0]);
    h_cand_close(mc[1]);
    h_cand_close(s);
}

static void case_freed(void)
{
    h_log("---- freed");
    reset_log();
    char queue[128];
    h_unique_name(queue, sizeof(queue), "freed");
    h_cand *s = h_cand_new("submitter", h_uri(NULL), NULL, NULL, NULL);
    h_cand *mc = h_cand_new("master", h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_master *m = master_start(mc, queue, "m0", 0);
    worker a, b;
    worker_start(&a, queue, "holder", 1);
    answer t = do_submit(s, queue, "held");
    wait_seen(REIGN_TASKS_RUN, t.task, "holder", 1, "the holder runs the task");

    /* Another worker, then the holder goes without a result. */
    worker_start(&b, queue, "taker", 0);
    int two = 2;
    H_WAIT(pred_registered, &two, "the second worker registered");
    worker_stop(&a);
    answer d = do_wait(s, queue, t.task);
    H_CHECKF(d.err == 0 && d.state == REIGN_TASK_DONE && !strcmp(d.output, "taker"),
             "wait: %s, state %d, output '%s'", reign_err_name(d.err), d.state, d.output);
    wait_seen(REIGN_TASKS_RECORDED, t.task, "taker", 1, "RECORDED by the taker");
    /* The master reports the move when its own write answers, on its own client: that can come
     * after the taker ran the task and recorded it, whose clients are other ones. */
    wait_seen(REIGN_TASKS_ASSIGNED, t.task, "taker", 1, "the master's ASSIGNED to the taker");
    size_t moved = 0;
    for (size_t i = 0; i < n_log; i++)
        if (logv[i].type == REIGN_TASKS_ASSIGNED && !strcmp(logv[i].task, t.task) &&
            logv[i].from[0]) {
            H_CHECK(!strcmp(logv[i].from, "holder") && !strcmp(logv[i].who, "taker"));
            moved++;
        }
    H_CHECKF(moved == 1, "the task was given again %zu times", moved);
    H_CHECK(count(REIGN_TASKS_RUN, t.task, "taker") == 1);
    H_CHECK(count(REIGN_TASKS_RECORDED, t.task, NULL) == 1);
    answer st = do_status(s, queue, t.task);
    H_CHECK(st.err == 0 && st.state == REIGN_TASK_DONE && !strcmp(st.worker, "taker"));
    worker_stop(&b);
    reign_tasks_master_free(m);
    h_cand_close(mc);
    h_cand_close(s);
}

/* ---- removal: reign_store_list() and reign_store_remove() ----------------------------------- */

typedef struct store_answer {
    int done, err;
    size_t n;
    reign_entry_kind kind;
    char name[REIGN_TASKS_QUEUE_MAX + 1];
    size_t standing;
    int foreign;
    char who[4][32];
} store_answer;

static void on_store_list(reign_client *c, int err, const reign_entry *v, size_t n, void *ud)
{
    store_answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
    a->n = n;
    if (n) {
        a->kind = v[0].kind;
        snprintf(a->name, sizeof(a->name), "%s", v[0].name);
        a->standing = v[0].standing;
        a->foreign = v[0].foreign;
    }
}

static void on_store_removed(reign_client *c, int err, const char *const *who, size_t n, void *ud)
{
    store_answer *a = ud;
    (void)c;
    a->done++;
    a->err = err;
    a->n = n;
    for (size_t i = 0; i < n && i < 4; i++)
        snprintf(a->who[i], sizeof(a->who[i]), "%s", who[i]);
}

/* The entries whose name starts with the queue's: the queue's own, as its workers' group and
 * masters' election are named "tasks.<queue>". */
static store_answer do_ls(h_cand *c, const char *queue)
{
    store_answer a = {0};
    H_OK(reign_store_list(c->client, queue, on_store_list, &a));
    H_WAIT(pred_done, &a, "ls");
    H_OK(a.err);
    return a;
}

static store_answer do_rm(h_cand *c, const char *queue)
{
    store_answer a = {0};
    H_OK(reign_store_remove(c->client, REIGN_ENTRY_QUEUE, queue, on_store_removed, &a));
    H_WAIT(pred_done, &a, "rm");
    return a;
}

static int pred_elected(void *arg)
{
    return elected[*(int *)arg] > 0;
}

static void case_removal(void)
{
    h_log("---- removal");
    reset_log();
    char queue[128];
    h_unique_name(queue, sizeof(queue), "removal");
    h_cand *s = h_cand_new("submitter", h_uri(NULL), NULL, NULL, NULL);
    do_submit(s, queue, "a");
    do_submit(s, queue, "b");
    store_answer ls = do_ls(s, queue);
    H_CHECKF(ls.n == 1 && ls.kind == REIGN_ENTRY_QUEUE && !strcmp(ls.name, queue) &&
                 ls.standing == 0 && !ls.foreign,
             "ls: %zu entries, the first %s '%s' standing=%zu foreign=%d", ls.n,
             reign_entry_kind_name(ls.kind), ls.name, ls.standing, ls.foreign);

    worker w;
    worker_start(&w, queue, "w-busy", 1);
    int one = 1;
    H_WAIT(pred_registered, &one, "the worker registered");
    store_answer rm = do_rm(s, queue);
    H_CHECKF(rm.err == REIGN_EBUSY && rm.n == 1 && !strcmp(rm.who[0], "w-busy"),
             "rm with a worker: %s, %zu named, the first '%s'", reign_err_name(rm.err), rm.n,
             rm.who[0]);
    H_CHECK(do_list(s, queue).n_pending == 2);
    worker_stop(&w);

    /* A master and no worker: the tasks stay pending, the master stands. */
    h_cand *mc = h_cand_new("master", h_uri(NULL), NULL, NULL, NULL);
    reign_tasks_master *m = master_start(mc, queue, "m-busy", 0);
    int first = 0;
    H_WAIT(pred_elected, &first, "the master elected");
    uint64_t before = term[0];
    rm = do_rm(s, queue);
    H_CHECKF(rm.err == REIGN_EBUSY && rm.n == 1 && !strcmp(rm.who[0], "m-busy"),
             "rm with a master: %s, %zu named, the first '%s'", reign_err_name(rm.err), rm.n,
             rm.who[0]);
    H_CHECK(do_list(s, queue).n_pending == 2);
    reign_tasks_master_free(m);
    h_cand_close(mc); /* its release reaches the store before the client is gone */

    rm = do_rm(s, queue);
    H_CHECKF(rm.err == 0, "rm once nobody stands: %s, %zu named, the first '%s'",
             reign_err_name(rm.err), rm.n, rm.n ? rm.who[0] : "");
    H_CHECKF(do_ls(s, queue).n == 0, "the queue is listed after its removal");
    answer l = {0};
    H_OK(reign_tasks_list(s->client, queue, on_list, &l));
    H_WAIT(pred_done, &l, "list");
    H_CHECKF((l.err == 0 || l.err == REIGN_ENOENT) && l.n == 0, "list after rm: %s, %zu tasks",
             reign_err_name(l.err), l.n);
    H_RC(do_rm(s, queue).err, REIGN_ENOENT);

    /* Made again: its master's election goes on from the removed queue's term. */
    elected[0] = 0;
    mc = h_cand_new("master-again", h_uri(NULL), NULL, NULL, NULL);
    m = master_start(mc, queue, "m-again", 0);
    H_WAIT(pred_elected, &first, "the master of the queue made again elected");
    H_CHECKF(term[0] > before, "term %llu after the removal, %llu before",
             (unsigned long long)term[0], (unsigned long long)before);
    reign_tasks_master_free(m);
    h_cand_close(mc);
    h_cand_close(s);
}

static int calls_back;

static void counting_submit(reign_client *c, int err, const char *task, void *ud)
{
    (void)c;
    (void)err;
    (void)task;
    (void)ud;
    calls_back++;
}

static void counting_info(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    (void)c;
    (void)err;
    (void)info;
    (void)ud;
    calls_back++;
}

static void case_refusals(void)
{
    h_log("---- refusals");
    h_cand *c = h_cand_new("refused", h_uri(NULL), NULL, NULL, NULL);
    static char big[REIGN_TASK_DATA_MAX + 1];
    static const char *const bad_queues[] = {"", ".", "..", "a/b", "a b"};
    for (size_t i = 0; i < sizeof(bad_queues) / sizeof(bad_queues[0]); i++) {
        H_RC(reign_tasks_submit(c->client, bad_queues[i], "x", 1, counting_submit, NULL),
             REIGN_ENAME);
        H_RC(reign_tasks_status(c->client, bad_queues[i], "t_0123456789abcdef_0000000001",
                                counting_info, NULL),
             REIGN_ENAME);
    }
    H_RC(reign_tasks_status(c->client, "q", "not-a-task", counting_info, NULL), REIGN_ENAME);
    H_RC(reign_tasks_wait(c->client, "q", "t_x", counting_info, NULL), REIGN_ENAME);
    H_RC(reign_tasks_submit(c->client, "q", big, sizeof(big), counting_submit, NULL), REIGN_E2BIG);
    reign_tasks_worker *w = NULL;
    reign_tasks_worker_options o = {.size = sizeof(o), .id = "w", .concurrency = 2, .prefetch = 1};
    H_RC(reign_tasks_worker_start(&w, c->client, "q", &o), REIGN_EINVAL);
    o.prefetch = 0;
    o.id = "a/b";
    H_RC(reign_tasks_worker_start(&w, c->client, "q", &o), REIGN_ENAME);
    H_CHECK(w == NULL);
    h_run_until(NULL, NULL, 0);
    H_CHECKF(calls_back == 0, "a refused call called back");
    h_cand_close(c);
}

int main(void)
{
    h_contract_init("contract_tasks", NULL);
    case_refusals();
    case_ops();
    case_burst();
    case_masters();
    case_freed();
    case_removal();
    return h_finish();
}
