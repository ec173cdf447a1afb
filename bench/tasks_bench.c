/*
 * tasks_bench.c - throughput of the task queue, driven by bench/tasks.py.
 *
 *     tasks-bench raw   HOSTS COUNT WINDOW [SESSIONS]
 *     tasks-bench ops   HOSTS TYPE COUNT WINDOW
 *     tasks-bench queue HOSTS COUNT WINDOW WORKERS CONCURRENCY [SUBMITTERS]
 *
 * raw: the limit.  COUNT creates of 100-byte persistent sequential nodes through the
 * ZooKeeper C client itself (libzookeeper_mt, the client libreign uses), WINDOW of them in
 * flight at any time, spread over SESSIONS sessions (default 1; the queue writes from several
 * sessions at once, which the server can commit together).  Prints one JSON line: writes,
 * seconds, writes_per_s.
 *
 * ops: what one request costs the server, by type (bench/tasks.py reads the server's CPU
 * time around it).  COUNT requests of TYPE on one session, WINDOW in flight: create (as raw),
 * exists and get (of a 100-byte node), children (of an empty node), multi (two checks and two
 * creates, shaped like the queue's multis).  Prints the same JSON line as raw (the requests
 * as "writes").
 *
 * queue: one process, one session per role: a master, WORKERS workers (each taking
 * CONCURRENCY tasks at once and answering each at once with exit 0 and a 2-byte output, so
 * that the queue itself is measured, not a command), and SUBMITTERS clients (default 1)
 * keeping WINDOW tasks in flight between them, each from reign_tasks_submit() until
 * reign_tasks_wait() has its result.  The server's zxid is read (the czxid of a marker node) before
 * and after, so the transactions per task are counted by the server, not estimated.  Prints one
 * JSON line: tasks, seconds, tasks_per_s, writes_per_task, latency p50/p99 (submit to result, ms).
 *
 *     tasks-bench queue-uri URI COUNT WINDOW WORKERS CONCURRENCY [SUBMITTERS]
 *
 * queue-uri: the same on any store (bench/parity.py: SQLite, PostgreSQL, MariaDB beside
 * ZooKeeper), without the count of writes (writes_per_task is -1).
 */
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#include <reign/reign.h>

#define MAX_CLIENTS 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "tasks-bench: %s: %d (%s)\n", what, rc,
            rc <= -1000 || rc >= -200 ? reign_strerror(rc) : zerror(rc));
    exit(1);
}

/* ---- a raw handle (the limit, and the zxid markers) ---------------------------------- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int connected, raw_done, raw_failed;

static void on_session(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE) {
        pthread_mutex_lock(&mu);
        connected = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}

static zhandle_t *raw_connect(const char *hosts)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = zookeeper_init(hosts, on_session, 30000, NULL, NULL, 0);
    if (!zh)
        die("zookeeper_init", ZSYSTEMERROR);
    pthread_mutex_lock(&mu);
    while (!connected)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return zh;
}

/* The zxid of a new marker node: every transaction before it has a smaller one. */
static int64_t zxid_now(zhandle_t *zh)
{
    struct Stat st;
    char made[128];
    zoo_create(zh, "/reign-bench", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    int rc = zoo_create2(zh, "/reign-bench/mark-", "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, made,
                         sizeof(made), &st);
    if (rc != ZOK)
        die("creating a marker", rc);
    return st.czxid;
}

#define MAX_RAW 64
static int raw_count, raw_window, raw_sent, n_raw;
static zhandle_t *raw_zh[MAX_RAW];
static const char raw_data[100] = "a 100-byte payload";

static void raw_send(intptr_t h);

static void on_raw_created(int rc, const char *value, const void *data)
{
    (void)value;
    pthread_mutex_lock(&mu);
    if (rc != ZOK)
        raw_failed++;
    raw_done++;
    int more = raw_sent < raw_count;
    if (more)
        raw_sent++;
    if (raw_done == raw_count)
        pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    if (more)
        raw_send((intptr_t)data); /* on the same session */
}

/* ops: the request each raw_send() makes (OP_CREATE for raw). */
enum { OP_CREATE, OP_EXISTS, OP_GET, OP_CHILDREN, OP_MULTI };
static int raw_op = OP_CREATE;

static void on_raw_stat(int rc, const struct Stat *st, const void *data)
{
    (void)st;
    on_raw_created(rc, NULL, data);
}

static void on_raw_data(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    (void)value, (void)len, (void)st;
    on_raw_created(rc, NULL, data);
}

static void on_raw_children(int rc, const struct String_vector *v, const void *data)
{
    (void)v;
    on_raw_created(rc, NULL, data);
}

/* A multi's parts and results live until its answer. */
typedef struct raw_multi {
    intptr_t h;
    zoo_op_t ops[4];
    zoo_op_result_t res[4];
    char made[2][64];
} raw_multi;

static void on_raw_multi(int rc, const void *data)
{
    raw_multi *m = (raw_multi *)data;
    intptr_t h = m->h;
    free(m);
    on_raw_created(rc, NULL, (void *)h);
}

static void raw_send(intptr_t h)
{
    zhandle_t *zh = raw_zh[h];
    int rc;
    switch (raw_op) {
    case OP_EXISTS:
        rc = zoo_aexists(zh, "/reign-bench/x", 0, on_raw_stat, (void *)h);
        break;
    case OP_GET:
        rc = zoo_aget(zh, "/reign-bench/x", 0, on_raw_data, (void *)h);
        break;
    case OP_CHILDREN:
        rc = zoo_aget_children(zh, "/reign-bench/empty", 0, on_raw_children, (void *)h);
        break;
    case OP_MULTI: {
        /* Shaped like the queue's: two checks and two writes in one transaction. */
        raw_multi *m = calloc(1, sizeof(*m));
        if (!m)
            die("out of memory", ZSYSTEMERROR);
        m->h = h;
        zoo_check_op_init(&m->ops[0], "/reign-bench/x", -1);
        zoo_create_op_init(&m->ops[1], "/reign-bench/raw-", raw_data, sizeof(raw_data),
                           &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, m->made[0], sizeof(m->made[0]));
        zoo_create_op_init(&m->ops[2], "/reign-bench/raw-", raw_data, sizeof(raw_data),
                           &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, m->made[1], sizeof(m->made[1]));
        zoo_check_op_init(&m->ops[3], "/reign-bench/empty", -1);
        rc = zoo_amulti(zh, 4, m->ops, m->res, on_raw_multi, m);
        break;
    }
    default:
        rc = zoo_acreate(zh, "/reign-bench/raw-", raw_data, sizeof(raw_data), &ZOO_OPEN_ACL_UNSAFE,
                         ZOO_SEQUENCE, on_raw_created, (void *)h);
    }
    if (rc != ZOK)
        die("sending a request", rc);
}

static int raw_main(const char *hosts, int count, int window, int sessions)
{
    if (sessions < 1 || sessions > MAX_RAW)
        die("sessions out of range", sessions);
    n_raw = sessions;
    for (int i = 0; i < n_raw; i++) {
        pthread_mutex_lock(&mu);
        connected = 0;
        pthread_mutex_unlock(&mu);
        raw_zh[i] = raw_connect(hosts);
    }
    zxid_now(raw_zh[0]); /* makes /reign-bench */
    zoo_create(raw_zh[0], "/reign-bench/x", raw_data, sizeof(raw_data), &ZOO_OPEN_ACL_UNSAFE, 0,
               NULL, 0);
    zoo_create(raw_zh[0], "/reign-bench/empty", NULL, -1, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
    raw_count = count;
    raw_window = window < count ? window : count;
    double t0 = now_s();
    pthread_mutex_lock(&mu);
    raw_sent = raw_window;
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < raw_window; i++)
        raw_send(i % n_raw);
    pthread_mutex_lock(&mu);
    while (raw_done < raw_count)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    double s = now_s() - t0;
    for (int i = 0; i < n_raw; i++)
        zookeeper_close(raw_zh[i]);
    if (raw_failed)
        die("raw creates failed", raw_failed);
    printf("{\"writes\": %d, \"window\": %d, \"sessions\": %d, \"seconds\": %.4f, "
           "\"writes_per_s\": %.1f}\n",
           count, window, n_raw, s, count / s);
    return 0;
}

/* ---- the queue ------------------------------------------------------------------------ */

static reign_client *clients[MAX_CLIENTS];
static int n_clients;
static const char *queue_name;
static int q_count, q_window, q_submitted, q_done, q_errors;
static double *latency;
static double *started; /* per submission, by slot */
static int registered, master_ready;
#define MAX_SUBMITTERS 16
static int n_submitters = 1;

static reign_client *new_client(const char *uri)
{
    reign_client *c;
    char err[256];
    int rc = reign_client_new(&c, uri, NULL, err, sizeof(err));
    if (rc < 0) {
        fprintf(stderr, "tasks-bench: %s\n", err);
        exit(1);
    }
    rc = reign_client_wait_connected(c);
    if (rc < 0)
        die("connecting", rc);
    clients[n_clients++] = c;
    return c;
}

/*
 * Turns the clients' loops once (waiting at most timeout_ms for any of them): processes the
 * clients whose descriptor is readable or whose deadline has come, as an event loop would -
 * not all of them at every wake-up, which cost this one process (sharing the machine's CPUs
 * with the server) a few system calls per client and wake-up.
 */
static void turn(int timeout_ms)
{
    struct pollfd p[MAX_CLIENTS];
    double due[MAX_CLIENTS], t0 = now_s();
    for (int i = 0; i < n_clients; i++) {
        p[i].fd = reign_client_get_fd(clients[i]);
        p[i].events = POLLIN;
        int64_t t = reign_client_get_timeout_ms(clients[i]);
        due[i] = t >= 0 ? t0 + (double)t / 1000.0 : -1.0;
        if (t >= 0 && t < timeout_ms)
            timeout_ms = (int)t;
    }
    poll(p, (nfds_t)n_clients, timeout_ms);
    double t1 = now_s();
    for (int i = 0; i < n_clients; i++)
        if (p[i].revents || (due[i] >= 0 && t1 >= due[i]))
            reign_client_process(clients[i]);
}

static void on_master(reign_tasks_master *m, const reign_tasks_event *ev, void *ud)
{
    (void)m, (void)ud;
    if (ev->type == REIGN_TASKS_RECOVERED)
        master_ready = 1;
    else if (ev->type == REIGN_TASKS_ERROR)
        fprintf(stderr, "tasks-bench: master: %s\n", ev->message ? ev->message : "error");
}

static void on_worker(reign_tasks_worker *w, const reign_tasks_event *ev, void *ud)
{
    (void)ud;
    if (ev->type == REIGN_TASKS_REGISTERED)
        registered++;
    else if (ev->type == REIGN_TASKS_RUN)
        reign_tasks_worker_done(w, ev->task, 0, 0, "ok", 2);
}

static void submit_next(reign_client *c);

static void on_result(reign_client *c, int err, const reign_task_info *info, void *ud)
{
    (void)info;
    intptr_t slot = (intptr_t)ud;
    if (err < 0)
        q_errors++;
    latency[q_done++] = (now_s() - started[slot]) * 1000.0;
    if (q_submitted < q_count)
        submit_next(c);
}

static void on_submitted(reign_client *c, int err, const char *task, void *ud)
{
    if (err < 0)
        die("submit", err);
    int rc = reign_tasks_wait(c, queue_name, task, on_result, ud);
    if (rc < 0)
        die("wait", rc);
}

static void submit_next(reign_client *c)
{
    intptr_t slot = q_submitted++;
    started[slot] = now_s();
    int rc = reign_tasks_submit(c, queue_name, "payload", 7, on_submitted, (void *)slot);
    if (rc < 0)
        die("submit", rc);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* hosts: ZooKeeper's, whose zxid counts the writes per task; NULL for another store (given by
 * its URI), where writes are not counted (-1). */
static int queue_main(const char *uri, const char *hosts, int count, int window, int workers,
                      int concurrency)
{
    char name[64];
    snprintf(name, sizeof(name), "bench-%d-%d-%ld", workers, (int)getpid(), (long)time(NULL));
    queue_name = name;
    zhandle_t *zh = hosts ? raw_connect(hosts) : NULL;

    reign_tasks_master *m;
    reign_tasks_master_options mo = {.size = sizeof(mo), .id = "master", .cb = on_master};
    int rc = reign_tasks_master_start(&m, new_client(uri), name, &mo);
    if (rc < 0)
        die("master", rc);
    reign_tasks_worker *w[MAX_CLIENTS];
    for (int i = 0; i < workers; i++) {
        char id[32];
        snprintf(id, sizeof(id), "w%d", i);
        reign_tasks_worker_options wo = {
            .size = sizeof(wo), .id = id, .concurrency = concurrency, .cb = on_worker};
        if ((rc = reign_tasks_worker_start(&w[i], new_client(uri), name, &wo)) < 0)
            die("worker", rc);
    }
    reign_client *subs[MAX_SUBMITTERS];
    for (int i = 0; i < n_submitters; i++)
        subs[i] = new_client(uri);
    while (!master_ready || registered < workers)
        turn(100);
    for (int i = 0; i < 20; i++) /* let the master see every worker */
        turn(10);

    latency = calloc((size_t)count, sizeof(double));
    started = calloc((size_t)count, sizeof(double));
    q_count = count;
    q_window = window < count ? window : count;
    int64_t z0 = zh ? zxid_now(zh) : 0;
    double t0 = now_s();
    for (int i = 0; i < q_window; i++)
        submit_next(subs[i % n_submitters]); /* each keeps its share of the window */
    while (q_done < q_count)
        turn(100);
    double s = now_s() - t0;
    int64_t z1 = zh ? zxid_now(zh) : 0;
    qsort(latency, (size_t)count, sizeof(double), cmp_double);
    printf("{\"tasks\": %d, \"workers\": %d, \"submitters\": %d, \"concurrency\": %d, "
           "\"window\": %d, "
           "\"seconds\": %.4f, \"tasks_per_s\": %.1f, \"writes_per_task\": %.3f, "
           "\"latency_p50_ms\": %.2f, \"latency_p99_ms\": %.2f, \"errors\": %d}\n",
           count, workers, n_submitters, concurrency, q_window, s, count / s,
           zh ? (double)(z1 - z0 - 1) / count : -1.0, latency[count / 2], latency[count * 99 / 100],
           q_errors);
    reign_tasks_master_free(m);
    for (int i = 0; i < workers; i++)
        reign_tasks_worker_free(w[i]);
    for (int i = 0; i < n_clients; i++)
        reign_client_free(clients[i]);
    if (zh)
        zookeeper_close(zh);
    free(latency);
    free(started);
    return q_errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "raw"))
        return raw_main(argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6 ? atoi(argv[5]) : 1);
    if (argc == 6 && !strcmp(argv[1], "ops")) {
        static const char *const names[] = {"create", "exists", "get", "children", "multi"};
        for (raw_op = 0; raw_op < 5 && strcmp(argv[3], names[raw_op]); raw_op++)
            ;
        if (raw_op == 5)
            die("unknown request type", 0);
        return raw_main(argv[2], atoi(argv[4]), atoi(argv[5]), 1);
    }
    if ((argc == 7 || argc == 8) && (!strcmp(argv[1], "queue") || !strcmp(argv[1], "queue-uri"))) {
        int workers = atoi(argv[5]);
        n_submitters = argc == 8 ? atoi(argv[7]) : 1;
        if (n_submitters < 1 || n_submitters > MAX_SUBMITTERS)
            die("submitters out of range", n_submitters);
        if (workers < 1 || workers > MAX_CLIENTS - 1 - n_submitters)
            die("workers out of range", workers);
        char uri[512];
        bool zk = !strcmp(argv[1], "queue");
        snprintf(uri, sizeof(uri), "%s%s", zk ? "zk://" : "", argv[2]);
        return queue_main(uri, zk ? argv[2] : NULL, atoi(argv[3]), atoi(argv[4]), workers,
                          atoi(argv[6]));
    }
    fprintf(stderr, "usage: tasks-bench raw HOSTS COUNT WINDOW [SESSIONS]\n"
                    "       tasks-bench ops HOSTS create|exists|get|children|multi COUNT WINDOW\n"
                    "       tasks-bench queue HOSTS COUNT WINDOW WORKERS CONCURRENCY "
                    "[SUBMITTERS]\n"
                    "       tasks-bench queue-uri URI COUNT WINDOW WORKERS CONCURRENCY "
                    "[SUBMITTERS]\n");
    return 2;
}
