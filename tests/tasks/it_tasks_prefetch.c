/*
 * it_tasks_prefetch.c - a worker's prefetch and read-ahead, through the library alone against
 * a real ZooKeeper server (one process, a client per party).
 *
 * Workers here hold every task they are given (RUN is recorded, reign_tasks_worker_done() comes
 * later, from the test), so what the master gives and what the worker runs can be seen while
 * nothing moves.  All along, a listing of the queue runs again as soon as the last one is back,
 * and every one is checked: no worker ever holds more assignments than its prefetch.
 *
 *   one-worker   the options: prefetch below concurrency or above 40000 is REIGN_EINVAL, the
 *                edges are accepted.  Then a master and one worker (concurrency 2, prefetch 5),
 *                12 tasks: once settled, 5 are assigned to the worker and 7 pending, 2 got RUN
 *                and reign_tasks_worker_running() is 2; nothing more happens meanwhile.  The
 *                held tasks are then finished one at a time: each frees a slot that the next
 *                task takes (its RUN from the loop, never from inside done), never more than 2
 *                run at once, and every task runs once and gets one result (its payload as
 *                output).  The read-ahead is seen through the
 *                payloads: once settled, those of the 3 assigned tasks not running are changed
 *                (with a plain ZooKeeper handle); the 2 read ahead still run with the payload
 *                they had, the third with the new one.
 *   two-workers  a master and two workers (concurrency 1, prefetch 1), 6 tasks: each worker
 *                holds one and 4 wait; finished one at a time, alternately.  A worker is never
 *                given a task while it holds one: its next RUN comes only after the result of
 *                the last one is recorded (the master learns of the room from the deletion
 *                that the result's multi makes, and ZooKeeper answers a session in order).
 *   moved-away   no master: the test assigns (as the master does, with a plain ZooKeeper
 *                handle).  One worker (concurrency 2), 3 tasks: 2 run, the third is read ahead.
 *                That one is then put back in tasks/ (as if given to another worker): the
 *                worker's next listing drops it, so when a slot frees it does not run.  Assigned
 *                again, it runs once.
 *
 * "Processed" below is made sure of without waiting on the clock: a request sent on a worker's
 * session after a change is answered after ZooKeeper told that session of the change and after
 * every request it had sent before; a few such requests in a row (barrier()) cover the worker's
 * chain of reactions (a listing, a status check, a read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_TASKS   16
#define MAX_WORKERS 2
#define MAX_HELD    8

typedef struct held {
    char task[REIGN_TASKS_TASK_MAX + 1];
    int index; /* the task's number, from its payload "p<i>" */
} held;

typedef struct wk {
    char id[16];
    int concurrency, prefetch;
    h_cand *cand;
    reign_tasks_worker *w;
    int registered;
    held held[MAX_HELD]; /* RUN given, done not called yet; oldest first */
    size_t n_held, max_held;
    size_t runs, done_called, recorded;
} wk;

static const char *queue;
static int n_tasks;
static wk workers[MAX_WORKERS];
static int n_workers;
static int recovered;
static int submitted;
static int runs[MAX_TASKS], ran_by[MAX_TASKS], results[MAX_TASKS], n_results;
static int in_done;      /* inside reign_tasks_worker_done(), called by the test */
static int strict_order; /* two-workers: RUN only after the worker's last result is recorded */

static wk *worker_of(const reign_tasks_worker *w)
{
    for (int i = 0; i < n_workers; i++)
        if (workers[i].w == w)
            return &workers[i];
    h_fail(__FILE__, __LINE__, "an event from an unknown worker");
}

static int worker_index(const char *id)
{
    for (int i = 0; i < n_workers; i++)
        if (id && !strcmp(workers[i].id, id))
            return i;
    return -1;
}

/* ---- the queue, listed again and again ---------------------------------- */

typedef struct snapshot {
    size_t pending, assigned, done, per_worker[MAX_WORKERS];
} snapshot;

static struct {
    int on, inflight;
    size_t lists;
    snapshot last;
    size_t max_per_worker[MAX_WORKERS];
} mon;

static size_t prefetch_sum(void)
{
    size_t n = 0;
    for (int k = 0; k < n_workers; k++)
        n += (size_t)workers[k].prefetch;
    return n;
}

static void on_mon_list(reign_client *c, int err, const reign_task_info *v, size_t n, void *ud)
{
    (void)ud;
    mon.inflight = 0;
    if (err) {
        h_log("listing: %s", reign_strerror(err));
    } else {
        snapshot s = {0};
        for (size_t i = 0; i < n; i++) {
            if (v[i].state == REIGN_TASK_PENDING) {
                s.pending++;
            } else if (v[i].state == REIGN_TASK_ASSIGNED) {
                s.assigned++;
                int k = worker_index(v[i].worker);
                H_CHECKF(k >= 0, "%s assigned to an unknown worker '%s'", v[i].task,
                         v[i].worker ? v[i].worker : "(null)");
                s.per_worker[k]++;
            } else {
                s.done++;
            }
        }
        /* One listing of assign/W is one read: what W held at that moment. */
        for (int k = 0; k < n_workers; k++) {
            H_CHECKF(s.per_worker[k] <= (size_t)workers[k].prefetch,
                     "%s holds %zu assignments, its prefetch is %d", workers[k].id, s.per_worker[k],
                     workers[k].prefetch);
            if (s.per_worker[k] > mon.max_per_worker[k])
                mon.max_per_worker[k] = s.per_worker[k];
        }
        H_CHECKF(s.assigned <= prefetch_sum(), "%zu tasks assigned, the prefetches add up to %zu",
                 s.assigned, prefetch_sum());
        mon.last = s;
        mon.lists++;
    }
    if (mon.on) {
        H_OK(reign_tasks_list(c, queue, on_mon_list, NULL));
        mon.inflight = 1;
    }
}

static void monitor_start(reign_client *c)
{
    mon.on = 1;
    mon.inflight = 1;
    H_OK(reign_tasks_list(c, queue, on_mon_list, NULL));
}

static int monitor_idle(void *arg)
{
    (void)arg;
    return !mon.inflight;
}

static void monitor_stop(void)
{
    mon.on = 0;
    H_WAIT(monitor_idle, NULL, "the last listing");
}

/* ---- callbacks ------------------------------------------------------------ */

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    (void)m;
    (void)ud;
    if (ev->type == REIGN_TASKS_RECOVERED)
        recovered++;
    else if (ev->type == REIGN_TASKS_ERROR)
        h_log("master: %s (%s)", ev->message ? ev->message : "?", reign_strerror(ev->error));
}

static int ran_changed[MAX_TASKS]; /* RUN with the payload the test changed ("x<i>") */

static int payload_index(const reign_tasks_event *ev)
{
    char buf[8] = "";
    H_CHECKF(ev->data_len >= 2 && ev->data_len < sizeof(buf), "RUN %s with %zu bytes", ev->task,
             ev->data_len);
    memcpy(buf, ev->data, ev->data_len);
    int i = atoi(buf + 1);
    H_CHECKF((buf[0] == 'p' || buf[0] == 'x') && i >= 0 && i < n_tasks, "RUN %s with payload '%s'",
             ev->task, buf);
    ran_changed[i] += buf[0] == 'x';
    return i;
}

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    wk *k = worker_of(w);
    (void)ud;
    switch (ev->type) {
    case REIGN_TASKS_REGISTERED:
        k->registered++;
        break;
    case REIGN_TASKS_RUN: {
        int i = payload_index(ev);
        runs[i]++;
        ran_by[i] = (int)(k - workers);
        k->runs++;
        /* Never from inside done: RUN comes from the loop (see reign_tasks_worker_done()). */
        H_CHECKF(!in_done, "%s: RUN %s from inside reign_tasks_worker_done()", k->id, ev->task);
        H_CHECKF(k->n_held < (size_t)k->concurrency,
                 "%s: RUN %s while it runs %zu (concurrency %d)", k->id, ev->task, k->n_held,
                 k->concurrency);
        if (strict_order)
            H_CHECKF(k->done_called == k->recorded,
                     "%s: RUN %s while the result of its last task is not recorded yet: it was "
                     "given a second task",
                     k->id, ev->task);
        held *h = &k->held[k->n_held++];
        snprintf(h->task, sizeof(h->task), "%s", ev->task);
        h->index = i;
        if (k->n_held > k->max_held)
            k->max_held = k->n_held;
        /* The worker counts this one already (RUN given, done not called). */
        H_CHECKF(reign_tasks_worker_running(w) == k->n_held, "%s: running() is %zu, it holds %zu",
                 k->id, reign_tasks_worker_running(w), k->n_held);
        break;
    }
    case REIGN_TASKS_RECORDED:
        k->recorded++;
        break;
    case REIGN_TASKS_CANCEL:
        h_fail(__FILE__, __LINE__, "%s: CANCEL %s (no session was lost)", k->id, ev->task);
    case REIGN_TASKS_ERROR:
        h_log("%s: %s (%s)", k->id, ev->message ? ev->message : "?", reign_strerror(ev->error));
        break;
    default:
        break;
    }
}

static void on_result(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    int i = (int)(intptr_t)ud;
    (void)c;
    H_CHECKF(err == 0, "result of task %d: %s", i, reign_strerror(err));
    results[i]++;
    n_results++;
    char want[16];
    snprintf(want, sizeof(want), "p%d", i);
    H_CHECKF(info->state == REIGN_TASK_DONE && info->exit_code == 0 && info->signal == 0,
             "task %d: state %d exit %d signal %d", i, info->state, info->exit_code, info->signal);
    H_CHECKF(info->output_len == strlen(want) && !memcmp(info->output, want, strlen(want)),
             "task %d: output '%.*s', expected '%s'", i, (int)info->output_len,
             (const char *)info->output, want);
    H_CHECKF(info->worker && worker_index(info->worker) == ran_by[i],
             "task %d: recorded by '%s', run by %s", i, info->worker ? info->worker : "(null)",
             workers[ran_by[i]].id);
}

static char ids[MAX_TASKS][REIGN_TASKS_TASK_MAX + 1];

static void on_submitted(reign_client *c, int err, const char *task, void *ud)
{
    H_CHECKF(err == 0, "submit %d: %s", (int)(intptr_t)ud, reign_strerror(err));
    snprintf(ids[(intptr_t)ud], sizeof(ids[0]), "%s", task);
    submitted++;
    H_OK(reign_tasks_wait(c, queue, task, on_result, ud));
}

/* ---- predicates ------------------------------------------------------------ */

static int master_recovered(void *arg)
{
    (void)arg;
    return recovered >= 1;
}

static int all_registered(void *arg)
{
    (void)arg;
    for (int k = 0; k < n_workers; k++)
        if (!workers[k].registered)
            return 0;
    return 1;
}

static int all_submitted(void *arg)
{
    (void)arg;
    return submitted == n_tasks;
}

static size_t total_runs(void)
{
    size_t n = 0;
    for (int k = 0; k < n_workers; k++)
        n += workers[k].runs;
    return n;
}

static size_t total_held(void)
{
    size_t n = 0;
    for (int k = 0; k < n_workers; k++)
        n += workers[k].n_held;
    return n;
}

/* Settled: every worker holds `concurrency` running tasks and `prefetch` assignments, the
 * rest wait (the queue has more tasks than the workers may take). */
static int settled(void *arg)
{
    size_t lists = *(size_t *)arg, assigned = 0;
    if (mon.lists <= lists)
        return 0; /* wait for a listing answered since the wait began */
    for (int k = 0; k < n_workers; k++) {
        if (workers[k].n_held != (size_t)workers[k].concurrency ||
            mon.last.per_worker[k] != (size_t)workers[k].prefetch)
            return 0;
        assigned += (size_t)workers[k].prefetch;
    }
    return mon.last.assigned == assigned && mon.last.pending == (size_t)n_tasks - assigned;
}

static int finished_count;

/* After the last done: every slot that can be busy is (the tasks not run yet are at least as
 * many as the free slots, or all have run). */
static int slots_refilled(void *arg)
{
    (void)arg;
    size_t slots = 0;
    for (int k = 0; k < n_workers; k++)
        slots += (size_t)workers[k].concurrency;
    size_t left = (size_t)(n_tasks - finished_count);
    return total_held() == (left < slots ? left : slots);
}

static int all_results(void *arg)
{
    (void)arg;
    size_t recorded = 0;
    for (int k = 0; k < n_workers; k++)
        recorded += workers[k].recorded;
    return n_results == n_tasks && recorded == (size_t)n_tasks;
}

/* ---- steps ------------------------------------------------------------------ */

static void finish_oldest(wk *k)
{
    H_CHECKF(k->n_held > 0, "%s holds no task", k->id);
    held h = k->held[0];
    memmove(&k->held[0], &k->held[1], (k->n_held - 1) * sizeof(k->held[0]));
    k->n_held--;
    char out[16];
    snprintf(out, sizeof(out), "p%d", h.index);
    k->done_called++;
    in_done = 1;
    H_OK(reign_tasks_worker_done(k->w, h.task, 0, 0, out, strlen(out)));
    in_done = 0;
    finished_count++;
    H_CHECKF(reign_tasks_worker_running(k->w) == k->n_held, "%s: running() is %zu, it holds %zu",
             k->id, reign_tasks_worker_running(k->w), k->n_held);
    /* Not ours any more: a second done is refused. */
    H_CHECKF(reign_tasks_worker_done(k->w, h.task, 0, 0, NULL, 0) == REIGN_ENOENT,
             "%s: a second done of %s was not refused", k->id, h.task);
}

static void start_workers(int n, int concurrency, int prefetch)
{
    n_workers = n;
    for (int k = 0; k < n; k++) {
        wk *w = &workers[k];
        snprintf(w->id, sizeof(w->id), "w%d", k);
        w->concurrency = concurrency;
        w->prefetch = prefetch;
        w->cand = h_cand_new(w->id, NULL, NULL, NULL, NULL);
        reign_tasks_worker_options wo = {.size = sizeof(wo),
                                         .id = w->id,
                                         .concurrency = concurrency,
                                         .prefetch = prefetch,
                                         .cb = on_worker};
        H_OK(reign_tasks_worker_start(&w->w, w->cand->client, queue, &wo));
    }
    H_WAIT(all_registered, NULL, "the workers registered");
}

static void submit_all(h_cand *cs)
{
    for (int i = 0; i < n_tasks; i++) {
        char data[16];
        snprintf(data, sizeof(data), "p%d", i);
        H_OK(reign_tasks_submit(cs->client, queue, data, strlen(data), on_submitted,
                                (void *)(intptr_t)i));
    }
    H_WAIT(all_submitted, NULL, "every submit");
}

/* Waits until settled, watches a while that nothing more happens, checks. */
static void settle(void)
{
    size_t lists = mon.lists;
    H_WAIT(settled, &lists, "the queue to settle (workers full, the rest pending)");
    size_t runs_then = total_runs();
    h_log("settled after %zu listings: %zu assigned, %zu pending, %zu RUN", mon.lists,
          mon.last.assigned, mon.last.pending, runs_then);
    /* An observation window, not a deadline: whatever the master or the workers would do
     * wrongly (assign beyond the prefetch, run beyond the concurrency) has the time to
     * show; the listings go on meanwhile and check every one. */
    h_run_for(1500);
    lists = mon.lists;
    H_WAIT(settled, &lists, "a listing after the window");
    H_CHECKF(total_runs() == runs_then, "%zu RUN during the window, while nothing finished",
             total_runs() - runs_then);
    for (int k = 0; k < n_workers; k++) {
        wk *w = &workers[k];
        H_CHECKF(reign_tasks_worker_running(w->w) == (size_t)w->concurrency,
                 "%s: running() is %zu, concurrency %d", w->id, reign_tasks_worker_running(w->w),
                 w->concurrency);
        H_CHECKF(w->runs == (size_t)w->concurrency, "%s: %zu RUN, concurrency %d", w->id, w->runs,
                 w->concurrency);
        H_CHECKF(mon.max_per_worker[k] <= (size_t)w->prefetch, "%s held %zu, prefetch %d", w->id,
                 mon.max_per_worker[k], w->prefetch);
    }
}

/* A listing sent after the last check shows every task done. */
static int listed_done(void *arg)
{
    return mon.lists > *(size_t *)arg && mon.last.done == (size_t)n_tasks && !mon.last.assigned &&
           !mon.last.pending;
}

/* Everything ran once, every result arrived once, nothing ran beyond its concurrency. */
static void check_all_done(void)
{
    H_WAIT(all_results, NULL, "every result, and RECORDED for each");
    for (int i = 0; i < n_tasks; i++) {
        H_CHECKF(runs[i] == 1, "task %d: RUN %d times", i, runs[i]);
        H_CHECKF(results[i] == 1, "task %d: %d results", i, results[i]);
    }
    for (int k = 0; k < n_workers; k++) {
        wk *w = &workers[k];
        H_CHECKF(w->max_held <= (size_t)w->concurrency, "%s ran %zu at once, concurrency %d", w->id,
                 w->max_held, w->concurrency);
        H_CHECKF(reign_tasks_worker_running(w->w) == 0, "%s: running() is %zu at the end", w->id,
                 reign_tasks_worker_running(w->w));
        H_CHECKF(mon.max_per_worker[k] <= (size_t)w->prefetch, "%s held %zu, prefetch %d", w->id,
                 mon.max_per_worker[k], w->prefetch);
    }
    size_t lists = mon.lists;
    H_WAIT(listed_done, &lists, "a listing after the last result");
}

/* ---- a plain ZooKeeper handle: the test's own hand in the queue ----------------- */

static zhandle_t *zh;
static char saved[MAX_TASKS][512]; /* tasks/T's data, kept while the test has T assigned */
static int saved_len[MAX_TASKS];

static int index_of(const char *task)
{
    for (int i = 0; i < n_tasks; i++)
        if (!strcmp(ids[i], task))
            return i;
    h_fail(__FILE__, __LINE__, "unknown task %s", task);
}

/* Moves task i as a master does (one multi: create the new node, delete the old one): to
 * worker w0, or back to tasks/. */
static void raw_move(int i, int to_worker)
{
    char pending[512], assigned[512];
    snprintf(pending, sizeof(pending), "/reign/tasks/%s/tasks/%s", queue, ids[i]);
    snprintf(assigned, sizeof(assigned), "/reign/tasks/%s/assign/%s/%s", queue, workers[0].id,
             ids[i]);
    if (to_worker) {
        int len = (int)sizeof(saved[i]);
        struct Stat st;
        int rc = zoo_get(zh, pending, 0, saved[i], &len, &st);
        H_CHECKF(rc == ZOK && len >= 0, "get %s: %s", pending, h_zerr_name(rc));
        saved_len[i] = len;
    }
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    zoo_create_op_init(&ops[0], to_worker ? assigned : pending, to_worker ? NULL : saved[i],
                       to_worker ? -1 : saved_len[i], &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    zoo_delete_op_init(&ops[1], to_worker ? pending : assigned, -1);
    int rc = zoo_multi(zh, 2, ops, res);
    H_CHECKF(rc == ZOK, "moving %s: %s", ids[i], h_zerr_name(rc));
}

/* Changes the payload of a task ("p<i>" to "x<i>", same length) in data/<tag>/<guid>. */
static void change_payload(const char *task)
{
    char path[512], buf[512];
    snprintf(path, sizeof(path), "/reign/tasks/%s/data/%.4s/%.16s", queue, task + 2, task + 2);
    int len = (int)sizeof(buf);
    struct Stat st;
    int rc = zoo_get(zh, path, 0, buf, &len, &st);
    H_CHECKF(rc == ZOK && len > 0, "get %s: %s", path, h_zerr_name(rc));
    char *body = memmem(buf, (size_t)len, "\n\n", 2);
    H_CHECKF(body && body + 2 < buf + len && body[2] == 'p', "%s: no payload 'p...'", path);
    body[2] = 'x';
    rc = zoo_set(zh, path, buf, len, st.version);
    H_CHECKF(rc == ZOK, "set %s: %s", path, h_zerr_name(rc));
}

static void on_barrier(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    (void)c;
    (void)err;
    (void)info;
    *(int *)ud = 1;
}

static int flag_set(void *arg)
{
    return *(int *)arg;
}

/* Requests on w's session, one after the other: what the worker was told or answered before
 * the first is processed, and so are its reactions, a step per request (see the top). */
static void barrier(wk *w)
{
    for (int i = 0; i < 6; i++) {
        int answered = 0;
        H_OK(reign_tasks_status(w->cand->client, queue, ids[0], on_barrier, &answered));
        H_WAIT(flag_set, &answered, "a request on the worker's session");
    }
}

/* ---- scenarios ---------------------------------------------------------------- */

static int start_rc(reign_client *c, const char *q, int concurrency, int prefetch)
{
    reign_tasks_worker *w = NULL;
    reign_tasks_worker_options wo = {
        .size = sizeof(wo), .id = "opt", .concurrency = concurrency, .prefetch = prefetch};
    int rc = reign_tasks_worker_start(&w, c, q, &wo);
    if (rc == 0)
        reign_tasks_worker_free(w);
    return rc;
}

static void check_options(reign_client *c)
{
    static const int bad[][2] = {{2, 1}, {1, 40001}, {2, 40001}, {8, 7}, {1, -1}, {10000, 9999}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int rc = start_rc(c, queue, bad[i][0], bad[i][1]);
        H_CHECKF(rc == REIGN_EINVAL, "concurrency %d prefetch %d: %s, expected REIGN_EINVAL",
                 bad[i][0], bad[i][1], reign_err_name(rc));
    }
    /* The edges are accepted (on a queue of their own, freed at once). */
    char other[160];
    snprintf(other, sizeof(other), "%s-edges", queue);
    static const int good[][2] = {{2, 2}, {1, 40000}, {10000, 0}, {0, 0}, {0, 1}, {3, 0}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int rc = start_rc(c, other, good[i][0], good[i][1]);
        H_CHECKF(rc == 0, "concurrency %d prefetch %d: %s", good[i][0], good[i][1],
                 reign_err_name(rc));
    }
}

static void one_worker(h_cand *cs)
{
    check_options(cs->client);
    n_tasks = 12;
    start_workers(1, 2, 5);
    submit_all(cs);
    settle();
    wk *w = &workers[0];

    /* The assigned tasks that do not run: those read ahead have their payload already. */
    barrier(w);
    char dir[512], names[MAX_TASKS][H_NODE_MAX];
    snprintf(dir, sizeof(dir), "/reign/tasks/%s/assign/%s", queue, w->id);
    int n = h_raw_children(zh, dir, names, MAX_TASKS);
    H_CHECKF(n == w->prefetch, "%s holds %d assignments", w->id, n);
    int changed[MAX_TASKS] = {0}, n_changed = 0;
    for (int j = 0; j < n; j++) {
        int running = 0;
        for (size_t h = 0; h < w->n_held; h++)
            running |= !strcmp(w->held[h].task, names[j]);
        if (running)
            continue;
        change_payload(names[j]);
        changed[index_of(names[j])] = 1;
        n_changed++;
    }
    H_CHECKF(n_changed == w->prefetch - w->concurrency, "%d payloads changed", n_changed);

    while (finished_count < n_tasks) {
        finish_oldest(w);
        H_WAIT(slots_refilled, NULL, "a freed slot to take the next task");
        H_CHECKF(reign_tasks_worker_running(w->w) == w->n_held, "running() %zu, holding %zu",
                 reign_tasks_worker_running(w->w), w->n_held);
    }
    int ahead = 0, late = 0;
    for (int i = 0; i < n_tasks; i++) {
        H_CHECKF(!ran_changed[i] || changed[i], "task %d ran with a payload never changed", i);
        ahead += changed[i] && !ran_changed[i];
        late += ran_changed[i];
    }
    H_CHECKF(ahead == w->concurrency && late == n_changed - w->concurrency,
             "of the %d tasks waiting, %d ran with the payload read before the change (expected "
             "%d: the read-ahead), %d with the new one",
             n_changed, ahead, w->concurrency, late);
}

static int holds_two(void *arg)
{
    return ((wk *)arg)->n_held == 2;
}

static void moved_away(h_cand *cs)
{
    n_tasks = 3;
    start_workers(1, 2, 8);
    submit_all(cs);
    wk *w = &workers[0];
    for (int i = 0; i < n_tasks; i++)
        raw_move(i, 1);
    H_WAIT(holds_two, w, "two tasks running");
    barrier(w);
    int r = 0; /* the one read ahead */
    while (r < n_tasks && runs[r])
        r++;
    H_CHECKF(r < n_tasks && w->runs == 2, "%zu RUN for 3 tasks, concurrency 2", w->runs);
    raw_move(r, 0);
    barrier(w); /* the worker listed its tasks again, without it */
    finish_oldest(w);
    barrier(w);
    H_CHECKF(runs[r] == 0, "task %d, read ahead then moved away, was given RUN", r);
    H_CHECKF(w->n_held == 1 && reign_tasks_worker_running(w->w) == 1, "%s holds %zu", w->id,
             w->n_held);
    raw_move(r, 1);
    H_WAIT(slots_refilled, NULL, "the task assigned again");
    while (finished_count < n_tasks) {
        finish_oldest(w);
        H_WAIT(slots_refilled, NULL, "a freed slot to take the next task");
    }
}

static void two_workers(h_cand *cs)
{
    n_tasks = 6;
    strict_order = 1;
    start_workers(2, 1, 1);
    submit_all(cs);
    settle();
    for (int turn = 0; finished_count < n_tasks; turn++) {
        wk *w = &workers[turn % 2];
        if (!w->n_held)
            w = &workers[(turn + 1) % 2];
        finish_oldest(w);
        H_WAIT(slots_refilled, NULL, "a freed slot to take the next task");
    }
    /* Both took a share (each was given a task whenever it had room). */
    for (int k = 0; k < 2; k++)
        H_CHECKF(workers[k].runs >= 1, "%s ran %zu tasks", workers[k].id, workers[k].runs);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    if (strcmp(scenario, "one-worker") && strcmp(scenario, "two-workers") &&
        strcmp(scenario, "moved-away")) {
        fprintf(stderr, "usage: it_tasks_prefetch one-worker|two-workers|moved-away\n");
        return 2;
    }
    h_init("it_tasks_prefetch");
    static char name[128];
    h_unique_name(name, sizeof(name), "it-prefetch");
    queue = name;
    zh = h_raw_connect(h_hosts(), NULL);

    reign_tasks_master *m = NULL;
    if (strcmp(scenario, "moved-away")) {
        h_cand *cm = h_cand_new("m0", NULL, NULL, NULL, NULL);
        reign_tasks_master_options mo = {.size = sizeof(mo), .id = "m0", .cb = on_master};
        H_OK(reign_tasks_master_start(&m, cm->client, queue, &mo));
        H_WAIT(master_recovered, NULL, "the master recovered");
    }

    h_cand *cs = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    monitor_start(cs->client);
    if (!strcmp(scenario, "one-worker"))
        one_worker(cs);
    else if (!strcmp(scenario, "two-workers"))
        two_workers(cs);
    else
        moved_away(cs);
    check_all_done();
    monitor_stop();
    h_log("%zu listings", mon.lists);

    reign_tasks_master_free(m);
    for (int k = 0; k < n_workers; k++)
        reign_tasks_worker_free(workers[k].w);
    h_raw_close(zh);
    return h_finish();
}
