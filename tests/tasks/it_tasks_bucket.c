/*
 * it_tasks_bucket.c - waiting for results by payload bucket (src/recipes/tasks/tasks_bucket_zk.c),
 * through the library alone against a real ZooKeeper server (one process, a client per party).
 *
 * The guids of a client's tasks start with the client's tag, and each task's payload lives in
 * data/<tag>/<guid> (a container node per tag, the bucket) until the multi that records its
 * result deletes it.  reign_tasks_wait() lists the bucket with one child watch per client and
 * bucket, and reads the result once a listing no longer shows the payload.
 *
 *   burst         one master, one worker (concurrency 4) that finishes each task from its RUN
 *                 (output: the payload), and a submitter that submits 1100 tasks and waits
 *                 for each from the submit's callback.  Every wait calls back once with its
 *                 task's result and every task runs once; afterwards no payload is left in the
 *                 buckets, the first 1024 guids share one tag and the rest another (a client
 *                 draws a new tag every 1024), and data/ holds no other bucket.
 *   other-client  client A submits, client B waits: for two tasks (one of them twice) before
 *                 any worker exists, its listing of A's bucket answered first, and for a task
 *                 already done.  Every wait gets the right result once.
 *   reaped        the empty bucket deleted (as the server's container reaper does) after a
 *                 first task is done: a wait from a new client for that task returns its
 *                 result (the listing's ENOENT: no payload), and submits from the same client
 *                 make the bucket again (a burst of them, all failing alike at first).  Deleted
 *                 once more: the submitter's own waits for its done tasks, and a submit.
 *   refused       the bucket made unreadable (its ACL grants no READ): a wait from a new client
 *                 for a done task reads the result, and the submitter's wait for a new task
 *                 (its payload still made there) reads or watches status/T.  Each returns once,
 *                 with its result.
 *   expire        the submitter's (and waiter's) session expired with 8 waits in flight, the
 *                 worker holding its tasks: two finished while the client is cut off, the rest
 *                 once it has a new session.  Every wait still calls back once, with its result.
 *
 * Linked against reign_internal with -Wl,--wrap=zoo_awget_children2, to see the listings of the
 * buckets each session sends and which set a watch (the server's wchc shows data watches only),
 * and with expire.c.  "Answered" below is made sure of without the clock: ZooKeeper answers a
 * session's requests in order, so once a status read sent after a wait is back, so is the
 * wait's first listing (barrier()).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "expire.h"
#include "harness.h"

#define MAX_TASKS 1100 /* more than a tag's span, 1024 guids */
#define MAX_WAITS 1200
#define TAG_SPAN  1024
#define MAX_HELD  16
#define GUID_LEN  16
#define TAG_LEN   4

static const char *queue;
static zhandle_t *zh;
static int n_tasks;

/* ---- the listings of buckets, as libreign sends them ------------------------------- */

#define MAX_LISTINGS 4096

typedef struct listing {
    int64_t sid; /* the session it was sent on */
    char path[256];
    int watched;
} listing;

static listing listings[MAX_LISTINGS];
static int n_listings;
static char data_dir[256]; /* "/reign/tasks/<queue>/data/": the buckets' prefix */

int __real_zoo_awget_children2(zhandle_t *handle, const char *path, watcher_fn watcher,
                               void *watcher_ctx, strings_stat_completion_t completion,
                               const void *data);
int __wrap_zoo_awget_children2(zhandle_t *handle, const char *path, watcher_fn watcher,
                               void *watcher_ctx, strings_stat_completion_t completion,
                               const void *data);

/* On the loop thread, like every call libreign makes into the ZooKeeper client. */
int __wrap_zoo_awget_children2(zhandle_t *handle, const char *path, watcher_fn watcher,
                               void *watcher_ctx, strings_stat_completion_t completion,
                               const void *data)
{
    int rc = __real_zoo_awget_children2(handle, path, watcher, watcher_ctx, completion, data);
    if (rc == ZOK && data_dir[0] && !strncmp(path, data_dir, strlen(data_dir))) {
        H_CHECK(n_listings < MAX_LISTINGS);
        listing *l = &listings[n_listings++];
        const clientid_t *id = zoo_client_id(handle);
        l->sid = id ? id->client_id : 0;
        snprintf(l->path, sizeof(l->path), "%s", path);
        l->watched = watcher != NULL;
    }
    return rc;
}

/* The listings of `path` sent on session sid (only those that set a watch if `watched`). */
static int count_listings(int64_t sid, const char *path, int watched)
{
    int n = 0;
    for (int k = 0; k < n_listings; k++)
        n += listings[k].sid == sid && !strcmp(listings[k].path, path) &&
             (!watched || listings[k].watched);
    return n;
}

/* ---- the master ------------------------------------------------------------- */

static int recovered;

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    (void)m;
    (void)ud;
    if (ev->type == REIGN_TASKS_RECOVERED)
        recovered++;
    else if (ev->type == REIGN_TASKS_ERROR)
        h_log("master: %s (%s)", ev->message ? ev->message : "?", reign_strerror(ev->error));
}

static int master_recovered(void *arg)
{
    (void)arg;
    return recovered > 0;
}

static reign_tasks_master *start_master(void)
{
    h_cand *cm = h_cand_new("m0", NULL, NULL, NULL, NULL);
    reign_tasks_master *m = NULL;
    reign_tasks_master_options mo = {.size = sizeof(mo), .id = "m0", .cb = on_master};
    H_OK(reign_tasks_master_start(&m, cm->client, queue, &mo));
    H_WAIT(master_recovered, NULL, "the master recovered");
    return m;
}

/* ---- the worker: finishes each task from its RUN, or holds it ------------------- */

static int registered, recorded;
static int runs[MAX_TASKS];
static char ran_as[MAX_TASKS][REIGN_TASKS_TASK_MAX + 1]; /* the task name RUN gave */
static int hold; /* keep what runs until the test finishes it */
static char held[MAX_HELD][REIGN_TASKS_TASK_MAX + 1];
static int held_index[MAX_HELD], n_held;

/* The task's number, from its payload "p<i>". */
static int payload_index(const void *data, size_t len)
{
    char buf[16];
    H_CHECKF(len > 1 && len < sizeof(buf) && *(const char *)data == 'p', "payload '%.*s'", (int)len,
             (const char *)data);
    memcpy(buf, data, len);
    buf[len] = '\0';
    char *end;
    long i = strtol(buf + 1, &end, 10);
    H_CHECKF(*end == '\0' && i >= 0 && i < n_tasks, "payload '%s'", buf);
    return (int)i;
}

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    (void)ud;
    if (ev->type == REIGN_TASKS_REGISTERED) {
        registered++;
    } else if (ev->type == REIGN_TASKS_RUN) {
        int i = payload_index(ev->data, ev->data_len);
        runs[i]++;
        snprintf(ran_as[i], sizeof(ran_as[i]), "%s", ev->task);
        if (hold) {
            H_CHECK(n_held < MAX_HELD);
            snprintf(held[n_held], sizeof(held[0]), "%s", ev->task);
            held_index[n_held++] = i;
            return;
        }
        H_OK(reign_tasks_worker_done(w, ev->task, 0, 0, ev->data, ev->data_len));
    } else if (ev->type == REIGN_TASKS_RECORDED) {
        recorded++;
    } else if (ev->type == REIGN_TASKS_CANCEL || ev->type == REIGN_TASKS_ERROR) {
        h_log("worker: %s %s (%s)", reign_tasks_event_name(ev->type), ev->task ? ev->task : "",
              ev->message ? ev->message : "");
    }
}

static int worker_registered(void *arg)
{
    (void)arg;
    return registered > 0;
}

static reign_tasks_worker *start_worker(int concurrency)
{
    h_cand *cw = h_cand_new("w0", NULL, NULL, NULL, NULL);
    reign_tasks_worker *w = NULL;
    reign_tasks_worker_options wo = {
        .size = sizeof(wo), .id = "w0", .concurrency = concurrency, .cb = on_worker};
    H_OK(reign_tasks_worker_start(&w, cw->client, queue, &wo));
    H_WAIT(worker_registered, NULL, "the worker registered");
    return w;
}

/* Finishes the oldest held task, its output its payload. */
static void finish_held(reign_tasks_worker *w)
{
    H_CHECK(n_held > 0);
    char task[REIGN_TASKS_TASK_MAX + 1], out[16];
    snprintf(task, sizeof(task), "%s", held[0]);
    snprintf(out, sizeof(out), "p%d", held_index[0]);
    n_held--;
    memmove(&held[0], &held[1], (size_t)n_held * sizeof(held[0]));
    memmove(&held_index[0], &held_index[1], (size_t)n_held * sizeof(held_index[0]));
    H_OK(reign_tasks_worker_done(w, task, 0, 0, out, strlen(out)));
}

/* ---- submits and waits ----------------------------------------------------------- */

static char ids[MAX_TASKS][REIGN_TASKS_TASK_MAX + 1];
static int submitted;
static int wait_on_submit; /* reign_tasks_wait() from the submit's callback */

typedef struct waited {
    int task;  /* its number */
    int calls; /* callbacks */
} waited;

static waited waits[MAX_WAITS];
static int n_waits, results;

static void on_result(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    waited *x = ud;
    (void)c;
    x->calls++;
    results++;
    H_CHECKF(x->calls == 1, "the wait for task %d called back %d times", x->task, x->calls);
    H_CHECKF(err == 0, "the wait for task %d: %s", x->task, reign_strerror(err));
    char want[16];
    snprintf(want, sizeof(want), "p%d", x->task);
    H_CHECKF(info->state == REIGN_TASK_DONE, "task %d: state %s", x->task,
             reign_task_state_name(info->state));
    H_CHECKF(!strcmp(info->task, ids[x->task]), "task %d: the result of %s, expected %s", x->task,
             info->task, ids[x->task]);
    H_CHECKF(info->exit_code == 0 && info->signal == 0, "task %d: exit %d signal %d", x->task,
             info->exit_code, info->signal);
    H_CHECKF(info->output_len == strlen(want) && !memcmp(info->output, want, strlen(want)),
             "task %d: output '%.*s', expected '%s'", x->task, (int)info->output_len,
             (const char *)info->output, want);
}

static waited *start_wait(reign_client *c, int i)
{
    H_CHECK(n_waits < MAX_WAITS);
    waited *x = &waits[n_waits++];
    x->task = i;
    H_OK(reign_tasks_wait(c, queue, ids[i], on_result, x));
    return x;
}

static void on_submitted(reign_client *c, int err, const char *task, void *ud)
{
    int i = (int)(intptr_t)ud;
    H_CHECKF(err == 0, "submit %d: %s", i, reign_strerror(err));
    H_CHECKF(!ids[i][0], "submit %d called back twice", i);
    snprintf(ids[i], sizeof(ids[i]), "%s", task);
    submitted++;
    if (wait_on_submit)
        start_wait(c, i);
}

static void submit(h_cand *c, int i)
{
    char data[16];
    snprintf(data, sizeof(data), "p%d", i);
    H_OK(reign_tasks_submit(c->client, queue, data, strlen(data), on_submitted,
                            (void *)(intptr_t)i));
}

static int submitted_at_least(void *arg)
{
    return submitted >= *(int *)arg;
}

static int results_at_least(void *arg)
{
    return results >= *(int *)arg;
}

static int recorded_at_least(void *arg)
{
    return recorded >= *(int *)arg;
}

static int called_back(void *arg)
{
    return ((waited *)arg)->calls > 0;
}

/* Submits tasks [from, to) from c and waits for their submits. */
static void submit_range(h_cand *c, int from, int to)
{
    for (int i = from; i < to; i++)
        submit(c, i);
    int want = submitted + (to - from);
    H_WAIT(submitted_at_least, &want, "the submits");
}

typedef struct status {
    int done, err;
    reign_task_state state;
} status;

static void on_status(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    status *s = ud;
    (void)c;
    s->done = 1;
    s->err = err;
    s->state = err ? 0 : info->state;
}

static int status_done(void *arg)
{
    return ((status *)arg)->done;
}

/* A status read of task i on c's session: what c sent before is answered (see the top). */
static reign_task_state barrier(h_cand *c, int i)
{
    status s = {0};
    H_OK(reign_tasks_status(c->client, queue, ids[i], on_status, &s));
    H_WAIT(status_done, &s, "a status read");
    H_CHECKF(s.err == 0, "status of task %d: %s", i, reign_strerror(s.err));
    return s.state;
}

/* Every wait called back once (a second call fails in on_result), every task ran once and
 * its result was recorded once. */
static void check_all(int n_results)
{
    H_WAIT(results_at_least, &n_results, "every wait's result");
    H_WAIT(recorded_at_least, &n_tasks, "every task's result recorded");
    H_CHECKF(results == n_results && n_waits == n_results, "%d results for %d waits", results,
             n_waits);
    for (int k = 0; k < n_waits; k++)
        H_CHECKF(waits[k].calls == 1, "the wait for task %d called back %d times", waits[k].task,
                 waits[k].calls);
    for (int i = 0; i < n_tasks; i++) {
        H_CHECKF(runs[i] == 1, "task %d ran %d times", i, runs[i]);
        H_CHECKF(!strcmp(ran_as[i], ids[i]), "task %d ran as %s, submitted as %s", i, ran_as[i],
                 ids[i]);
    }
    H_CHECKF(recorded == n_tasks, "%d results recorded for %d tasks", recorded, n_tasks);
}

/* ---- the bucket, seen with a plain handle ----------------------------------------- */

/* Task i's guid: t_<guid>_<seq>. */
static const char *guid_of(int i)
{
    H_CHECKF(strlen(ids[i]) == 2 + GUID_LEN + 1 + 10 && !strncmp(ids[i], "t_", 2) &&
                 ids[i][2 + GUID_LEN] == '_',
             "task %d: name '%s'", i, ids[i]);
    return ids[i] + 2;
}

static void bucket_path(char *buf, size_t len, int i)
{
    snprintf(buf, len, "/reign/tasks/%s/data/%.4s", queue, guid_of(i));
}

/* Deletes task i's bucket, empty by now, as the server's container reaper would. */
static void reap_bucket(int i)
{
    char path[512];
    bucket_path(path, sizeof(path), i);
    int rc = zoo_delete(zh, path, -1);
    H_CHECKF(rc == ZOK || rc == ZNONODE, "delete %s: %s", path, h_zerr_name(rc));
    h_log("%s deleted%s", path, rc == ZNONODE ? " (by the server already)" : "");
    struct Stat st;
    rc = zoo_exists(zh, path, 0, &st);
    H_CHECKF(rc == ZNONODE, "%s still there: %s", path, h_zerr_name(rc));
}

/* The server's data watches (exists, get) by session: the four-letter word wchc, "0x<session>"
 * lines, each followed by the paths it watches, indented.  (Child watches are not shown.) */
static const char *server_watches(void)
{
    static char out[1 << 16];
    char host[64];
    snprintf(host, sizeof(host), "%s", h_hosts());
    host[strcspn(host, ",")] = '\0';
    char *colon = strrchr(host, ':');
    H_CHECKF(colon, "no port in '%s'", host);
    *colon = '\0';
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
    H_CHECKF(inet_pton(AF_INET, host, &sa.sin_addr) == 1, "not an IPv4 address: '%s'", host);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    H_CHECK(fd >= 0);
    H_CHECKF(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "connect to %s:%s", host,
             colon + 1);
    H_CHECK(write(fd, "wchc", 4) == 4);
    size_t len = 0;
    ssize_t n;
    while ((n = read(fd, out + len, sizeof(out) - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    out[len] = '\0';
    H_CHECKF(!strstr(out, "not executed") && !strstr(out, "not in the whitelist"), "wchc: '%s'",
             out);
    return out;
}

/* How many data watches session sid holds on `path`, in wchc's answer `w`. */
static int watches_on(const char *w, int64_t sid, const char *path)
{
    char head[32];
    snprintf(head, sizeof(head), "0x%llx", (unsigned long long)sid);
    int n = 0, mine = 0;
    for (const char *line = w; *line;) {
        size_t len = strcspn(line, "\n");
        if (line[0] == '0' && line[1] == 'x') {
            mine = len == strlen(head) && !strncmp(line, head, len);
        } else if (mine) {
            const char *p = line + strspn(line, " \t");
            n += (size_t)(line + len - p) == strlen(path) && !strncmp(p, path, strlen(path));
        }
        line += len + (line[len] == '\n');
    }
    return n;
}

/* c's waits not over yet (their payloads still there) ride on their bucket's child watch: none
 * fell back to an exists of status/T, the per-task watch of earlier versions.  (One that ended
 * may have: a result read on a session that expired meanwhile is watched for on the next.) */
static void check_no_status_watch(h_cand *c)
{
    const char *w = server_watches();
    int64_t sid = reign_client_session_id(c->client);
    int pending = 0;
    for (int k = 0; k < n_waits; k++) {
        if (waits[k].calls)
            continue;
        pending++;
        char path[512];
        snprintf(path, sizeof(path), "/reign/tasks/%s/status/%s", queue, ids[waits[k].task]);
        H_CHECKF(!watches_on(w, sid, path), "%s (session 0x%llx) watches %s", c->id,
                 (unsigned long long)sid, path);
    }
    H_CHECKF(pending > 0, "%s: no wait left to look at", c->id);
}

/* ---- scenarios ------------------------------------------------------------------- */

static void burst(void)
{
    reign_tasks_master *m = start_master();
    reign_tasks_worker *w = start_worker(4);
    h_cand *cs = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    n_tasks = MAX_TASKS;
    wait_on_submit = 1;
    submit_range(cs, 0, n_tasks);
    check_all(n_tasks);

    /* One tag per TAG_SPAN guids drawn (a new one differs), and nothing left behind. */
    char tags[2][TAG_LEN + 1];
    snprintf(tags[0], sizeof(tags[0]), "%.4s", guid_of(0));
    snprintf(tags[1], sizeof(tags[1]), "%.4s", guid_of(TAG_SPAN));
    H_CHECKF(strcmp(tags[0], tags[1]), "task %d has the tag of the first %d, %s", TAG_SPAN,
             TAG_SPAN, tags[0]);
    for (int i = 0; i < n_tasks; i++)
        H_CHECKF(!strncmp(guid_of(i), tags[i >= TAG_SPAN], TAG_LEN), "task %d (%s): not of tag %s",
                 i, ids[i], tags[i >= TAG_SPAN]);
    static char names[MAX_TASKS + 1][H_NODE_MAX];
    char path[512];
    for (int k = 0; k < 2; k++) {
        bucket_path(path, sizeof(path), k * TAG_SPAN);
        int n = h_raw_children(zh, path, names, MAX_TASKS + 1);
        H_CHECKF(n == 0 || n == ZNONODE, "%s: %d payloads left (%s)", path, n,
                 n > 0 ? names[0] : h_zerr_name(n));
        h_log("bucket %s: %s", path, n == 0 ? "empty" : "deleted by the server");
    }
    snprintf(path, sizeof(path), "/reign/tasks/%s/data", queue);
    int n = h_raw_children(zh, path, names, MAX_TASKS + 1);
    H_CHECKF(n >= 0, "%s: %s", path, h_zerr_name(n));
    for (int k = 0; k < n; k++)
        H_CHECKF(!strcmp(names[k], tags[0]) || !strcmp(names[k], tags[1]),
                 "%s holds '%s' besides the buckets %s and %s", path, names[k], tags[0], tags[1]);
    reign_tasks_master_free(m);
    reign_tasks_worker_free(w);
}

static void other_client(void)
{
    reign_tasks_master *m = start_master();
    h_cand *ca = h_cand_new("client-a", NULL, NULL, NULL, NULL);
    h_cand *cb = h_cand_new("client-b", NULL, NULL, NULL, NULL);
    n_tasks = 3;
    submit_range(ca, 0, 2);

    /* Before any worker: B's listing of A's bucket shows both payloads, and watches. */
    waited *w0 = start_wait(cb->client, 0), *w0b = start_wait(cb->client, 0);
    waited *w1 = start_wait(cb->client, 1);
    H_CHECKF(barrier(cb, 1) == REIGN_TASK_PENDING, "task 1 is not pending");
    H_CHECKF(!w0->calls && !w0b->calls && !w1->calls, "a wait returned before any worker");
    check_no_status_watch(cb);
    char bucket[512];
    bucket_path(bucket, sizeof(bucket), 0);
    int64_t sid = reign_client_session_id(cb->client);
    H_CHECKF(count_listings(sid, bucket, 1) == 1, "B's 3 waits on %s: %d listings set a watch",
             bucket, count_listings(sid, bucket, 1));
    reign_tasks_worker *w = start_worker(4);
    H_WAIT(called_back, w0, "B's first wait for task 0");
    H_WAIT(called_back, w0b, "B's second wait for task 0");
    H_WAIT(called_back, w1, "B's wait for task 1");

    /* After the task is done. */
    submit_range(ca, 2, 3);
    int all = n_tasks;
    H_WAIT(recorded_at_least, &all, "task 2's result recorded");
    H_CHECKF(barrier(cb, 2) == REIGN_TASK_DONE, "task 2 is not done");
    H_WAIT(called_back, start_wait(cb->client, 2), "B's wait for task 2, already done");
    H_WAIT(called_back, start_wait(cb->client, 0), "B's wait for task 0, already done");
    check_all(5);
    reign_tasks_master_free(m);
    reign_tasks_worker_free(w);
}

/* A master, a worker (concurrency 4) and a submitter; the first of n tasks submitted, and
 * waited for until done. */
typedef struct rig {
    reign_tasks_master *m;
    reign_tasks_worker *w;
    h_cand *cs;
} rig;

static rig first_task_done(int n)
{
    rig r = {start_master(), start_worker(4), h_cand_new("submitter", NULL, NULL, NULL, NULL)};
    n_tasks = n;
    wait_on_submit = 1;
    submit_range(r.cs, 0, 1);
    H_WAIT(called_back, &waits[0], "the first task's wait");
    return r;
}

static void stop_rig(rig *r)
{
    reign_tasks_master_free(r->m);
    reign_tasks_worker_free(r->w);
}

static void reaped(void)
{
    rig r = first_task_done(7);
    h_cand *cs = r.cs;
    reap_bucket(0);

    /* Its payload's bucket is gone: a new client's wait sees no payload, reads the result. */
    wait_on_submit = 0;
    h_cand *cn = h_cand_new("newcomer", NULL, NULL, NULL, NULL);
    H_WAIT(called_back, start_wait(cn->client, 0), "a new client's wait, the bucket gone");

    /* Submits fail alike (ENOENT) until the bucket is made again. */
    wait_on_submit = 1;
    submit_range(cs, 1, 6);
    int want = n_waits; /* every wait so far */
    H_WAIT(results_at_least, &want, "the waits after the bucket was made again");
    for (int i = 1; i < 6; i++)
        H_CHECKF(!strncmp(guid_of(i), guid_of(0), TAG_LEN), "task %d (%s): another tag than %s", i,
                 ids[i], ids[0]);

    /* Gone once more: the submitter's own waits, then its submit. */
    reap_bucket(0);
    wait_on_submit = 0;
    H_WAIT(called_back, start_wait(cs->client, 0), "the submitter's wait, the bucket gone");
    H_WAIT(called_back, start_wait(cs->client, 3), "the submitter's wait, the bucket gone");
    wait_on_submit = 1;
    submit_range(cs, 6, 7);
    check_all(n_tasks + 3);
    stop_rig(&r);
}

/* The bucket may not be listed (no READ for anyone): every wait reads its result instead, and
 * one whose task is not done yet watches status/T. */
static void refused(void)
{
    rig r = first_task_done(2);
    h_cand *cs = r.cs;

    char path[512];
    bucket_path(path, sizeof(path), 0);
    struct ACL no_read_acl = {ZOO_PERM_CREATE | ZOO_PERM_DELETE | ZOO_PERM_WRITE | ZOO_PERM_ADMIN,
                              ZOO_ANYONE_ID_UNSAFE};
    struct ACL_vector no_read = {1, &no_read_acl};
    int rc = zoo_set_acl(zh, path, -1, &no_read);
    if (rc == ZNONODE) /* deleted by the server once empty: made again, unreadable */
        rc = zoo_create(zh, path, NULL, -1, &no_read, ZOO_CONTAINER, NULL, 0);
    H_CHECKF(rc == ZOK, "making %s unreadable: %s", path, h_zerr_name(rc));

    /* A done task, from a new client: its bucket refuses the listing, the result is read. */
    wait_on_submit = 0;
    h_cand *cn = h_cand_new("newcomer", NULL, NULL, NULL, NULL);
    H_WAIT(called_back, start_wait(cn->client, 0), "a new client's wait, the bucket unreadable");

    /* A new task (its payload can still be made there): its wait reads or watches status/T. */
    wait_on_submit = 1;
    submit_range(cs, 1, 2);
    check_all(n_tasks + 1);
    stop_rig(&r);
}

static int held_at_least(void *arg)
{
    return n_held >= *(int *)arg;
}

typedef struct session {
    h_cand *c;
    int64_t old;
} session;

static int new_session(void *arg)
{
    session *s = arg;
    int64_t id = reign_client_session_id(s->c->client);
    return id != 0 && id != s->old && s->c->state == REIGN_CONN_CONNECTED;
}

static void expire(void)
{
    reign_tasks_master *m = start_master();
    hold = 1;
    reign_tasks_worker *w = start_worker(4);
    h_cand *cs = h_cand_new("submitter", NULL, NULL, NULL, NULL);
    n_tasks = 8;
    wait_on_submit = 1;
    submit_range(cs, 0, n_tasks);
    int four = 4;
    H_WAIT(held_at_least, &four, "the worker to hold 4 tasks");
    barrier(cs, 0); /* the waits' listing is answered: the bucket is watched */
    H_CHECKF(results == 0, "%d waits returned while every task is held", results);
    check_no_status_watch(cs);

    session s = {cs, reign_client_session_id(cs->client)};
    h_expire_session(cs->client);
    /* Two results recorded while the waiter's session is over (its watch gone with it). */
    finish_held(w);
    finish_held(w);
    int two = 2;
    H_WAIT(recorded_at_least, &two, "two results recorded");
    H_WAIT(new_session, &s, "the submitter's new session");
    h_log("new session 0x%llx, %d results so far",
          (unsigned long long)reign_client_session_id(cs->client), results);

    /* The waits left are listed again on the new session, with a watch (the old one went with
     * the old session), not turned into exists. */
    barrier(cs, 0);
    check_no_status_watch(cs);
    char bucket[512];
    bucket_path(bucket, sizeof(bucket), 0);
    int64_t sid = reign_client_session_id(cs->client);
    H_CHECKF(count_listings(sid, bucket, 1) >= 1, "no listing of %s set a watch on the new session",
             bucket);

    /* The rest on the new session: the held ones now, the others from their RUN. */
    hold = 0;
    while (n_held > 0)
        finish_held(w);
    check_all(n_tasks);
    reign_tasks_master_free(m);
    reign_tasks_worker_free(w);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    void (*run)(void) = !strcmp(scenario, "burst")          ? burst
                        : !strcmp(scenario, "other-client") ? other_client
                        : !strcmp(scenario, "reaped")       ? reaped
                        : !strcmp(scenario, "expire")       ? expire
                        : !strcmp(scenario, "refused")      ? refused
                                                            : NULL;
    if (!run) {
        fprintf(stderr, "usage: it_tasks_bucket burst|other-client|reaped|expire|refused\n");
        return 2;
    }
    char name[64];
    snprintf(name, sizeof(name), "it_tasks_bucket_%s", scenario);
    h_init(name);
    static char q[128];
    h_unique_name(q, sizeof(q), "it-bucket");
    queue = q;
    snprintf(data_dir, sizeof(data_dir), "/reign/tasks/%s/data/", q);
    zh = h_raw_connect(h_hosts(), NULL);
    run();
    h_raw_close(zh);
    return h_finish();
}
