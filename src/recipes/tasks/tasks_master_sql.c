/*
 * tasks_master_sql.c - the master of a queue on a SQL store (see <reign/tasks.h>, docs/tasks.md;
 * the table and its statements: src/sql/tasks.h).  tasks_api.c hands a SQL client's master here.
 *
 * Masters stand in the lease election "tasks.Q" (<reign/election.h> on SQL); the leader's token
 * is its lease (its id and term), and every write of its own - assign, take back, sweep - runs
 * in a transaction that first locks that lease row and checks it (src/sql/tasks.h), so a
 * deposed master changes nothing however late its statement comes.  The leader watches the
 * group "tasks.Q" (the workers, each registration's node the token its tasks are assigned to).
 *
 * Its work is one round at a time, a CALL on the client's worker thread: read the load of every
 * registration holding tasks; take back the tasks of a registration that is not a current
 * member (a worker gone: its row deleted with its session, or by its free) and note where they
 * came from; then give pending tasks, oldest first, to members by their prefetch minus their
 * load (least loaded first, or in random order), a concurrency's worth per member and pass,
 * each pass one transaction for all members (reign__tasks_assign_many()).  The
 * first round after ELECTED is the recovery (RECOVERED); a round follows every change of the
 * members, every notice of the queue (PostgreSQL's NOTIFY, SQLite's file; MariaDB every poll
 * period) and REIGN__TASKS_SQL_CHECK_MS at the latest.  Results older than the retention are swept
 * with a round now and then, as on ZooKeeper.  A registration appears in a view only after the
 * lease was taken, and a view is read after that, so one holding tasks but absent from the view is
 * gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/group.h>

#include "recipes/life.h"
#include "sql/tasks.h"
#include "sql/worker.h"
#include "tasks_internal.h"

#define RETRY_MS  1000
#define TOKEN_MAX 96

typedef struct mem {
    char node[TOKEN_MAX];
    char id[REIGN_TASKS_WORKER_MAX + 1];
    size_t run, cap, load;
} mem;

typedef struct moved {
    char task[REIGN_TASKS_TASK_MAX + 1];
    char worker[REIGN_TASKS_WORKER_MAX + 1];
} moved;

/* A round: what travels to the worker thread and back. */
typedef struct rcall {
    char *queue, *name, *owner;
    uint64_t term;
    reign_tasks_strategy strategy;
    mem *v;
    size_t n;
    int64_t sweep_ms; /* > 0: sweep results older than this too */
    moved *taken;     /* out: taken back from gone registrations (worker: where from) */
    size_t n_taken, cap_taken;
    moved *given; /* out: assigned (worker: to whom) */
    size_t n_given, cap_given;
    bool deposed;
} rcall;

typedef struct smaster {
    /* First: the client calls us through it; tasks_api.c too.  Its life's epoch is bumped at
     * each election and demotion: older answers drop. */
    reign_tasks_master head;
    reign__sqlw *sw;
    reign_tasks_strategy strategy;
    int64_t retention_ms;
    reign_group_watch *watch;
    bool leading, ready, active;
    uint64_t term;
    bool busy, again, listening, sweep_due;
    reign__tmap from; /* task -> the worker it was taken back from, until reassigned */
    reign__timer poll, sweep;
} smaster;

static void round_start(smaster *m);

static reign__timers *timers(smaster *m)
{
    return reign__client_timers(m->head.base.client);
}

static void later(smaster *m, int ms)
{
    reign__timer_start(timers(m), &m->poll, reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS);
}

/* ---- a round, on the worker thread ------------------------------------------------------- */

static void rcall_free(void *p)
{
    rcall *c = p;
    reign__free(c->queue);
    reign__free(c->name);
    reign__free(c->owner);
    reign__free(c->v);
    reign__free(c->taken);
    reign__free(c->given);
    reign__free(c);
}

static int note(moved **v, size_t *n, size_t *cap, const char *task, const char *worker)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        moved *nv = reign__realloc(*v, nc * sizeof(*nv));
        if (!nv)
            return REIGN_ENOMEM;
        *v = nv;
        *cap = nc;
    }
    snprintf((*v)[*n].task, sizeof(*v)[*n].task, "%s", task);
    snprintf((*v)[*n].worker, sizeof(*v)[*n].worker, "%s", worker);
    (*n)++;
    return 0;
}

static mem *member(rcall *c, const char *node)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->v[i].node, node))
            return &c->v[i];
    return NULL;
}

/* Takes back the tasks of registrations that are not members; fills in the members' load. */
static int take_back(reign__sqlconn *conn, const char *dc, rcall *c, const reign__tasks_fence *f,
                     char *err, size_t errlen)
{
    reign__sql_rows load = {0};
    int rc = reign__tasks_load(conn, dc, c->queue, &load, err, errlen);
    for (size_t i = 0; rc >= 0 && i < load.n_rows && !c->deposed; i++) {
        const char *node = reign__sql_cell(&load, i, 0);
        const char *count = reign__sql_cell(&load, i, 1);
        if (!node)
            continue;
        mem *mb = member(c, node);
        if (mb) {
            mb->load = count ? (size_t)strtoull(count, NULL, 10) : 0;
            continue;
        }
        reign__task_rows rows = {0};
        rc = reign__tasks_assigned(conn, dc, c->queue, node, &rows, err, errlen);
        for (size_t j = 0; rc >= 0 && j < rows.n; j++)
            rc = note(&c->taken, &c->n_taken, &c->cap_taken, rows.v[j].name, rows.v[j].worker);
        reign__task_rows_free(&rows);
        if (rc >= 0)
            rc = reign__tasks_requeue(conn, dc, c->queue, f, node, &c->deposed, err, errlen);
    }
    reign__sql_rows_free(&load);
    return rc < 0 ? rc : 0;
}

static int by_load(const void *a, const void *b)
{
    const mem *x = a, *y = b;
    return x->load < y->load ? -1 : x->load > y->load;
}

static void shuffle(mem *v, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        uint32_t r = 0;
        reign__random_bytes(&r, sizeof(r));
        size_t j = r % i;
        mem t = v[i - 1];
        v[i - 1] = v[j];
        v[j] = t;
    }
}

static int run_round(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    rcall *c = ctx;
    reign__tasks_fence f = {.name = c->name, .owner = c->owner, .term = c->term};
    int rc = take_back(conn, dc, c, &f, err, errlen);
    bool more = true;
    while (rc >= 0 && more && !c->deposed) {
        more = false;
        if (c->n < 2)
            ; /* no member (c->v is NULL: qsort must not see it), or nothing to order */
        else if (c->strategy == REIGN_TASKS_RANDOM)
            shuffle(c->v, c->n);
        else
            qsort(c->v, c->n, sizeof(*c->v), by_load);
        /* One transaction per pass: each member with room its share, least loaded (or the
         * random order's first) the oldest. */
        reign__tasks_give *g = c->n ? reign__calloc(c->n, sizeof *g) : NULL;
        mem **to = c->n ? reign__calloc(c->n, sizeof *to) : NULL;
        size_t n = 0, asked = 0, given = 0;
        if (c->n && (!g || !to)) {
            snprintf(err, errlen, "out of memory");
            rc = REIGN_ENOMEM;
        }
        for (size_t i = 0; rc >= 0 && i < c->n; i++) {
            mem *mb = &c->v[i];
            if (mb->load >= mb->cap)
                continue;
            size_t k = mb->cap - mb->load;
            if (k > mb->run)
                k = mb->run ? mb->run : 1;
            g[n] = (reign__tasks_give){.worker = mb->id, .worker_guid = mb->node, .max = k};
            to[n++] = mb;
            asked += k;
        }
        if (rc >= 0 && n)
            rc = reign__tasks_assign_many(conn, dc, c->queue, &f, g, n, err, errlen);
        if (rc == REIGN__TASKS_DEPOSED) {
            c->deposed = true;
            rc = 0;
        }
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; rc >= 0 && j < g[i].rows.n; j++)
                rc = note(&c->given, &c->n_given, &c->cap_given, g[i].rows.v[j].name, to[i]->id);
            to[i]->load += g[i].rows.n;
            given += g[i].rows.n;
            reign__task_rows_free(&g[i].rows);
        }
        reign__free(g);
        reign__free(to);
        more = rc >= 0 && n && given == asked; /* else nothing pending any more */
    }
    if (rc >= 0 && !c->deposed && c->sweep_ms > 0) {
        int n = reign__tasks_sweep(conn, dc, c->queue, &f, c->sweep_ms, &c->deposed, err, errlen);
        if (n < 0)
            rc = n;
    }
    return rc < 0 ? rc : 1;
}

/* ---- rounds, on the loop ----------------------------------------------------------------- */

static void on_round(void *owner, void *arg, const reign__sqlw_result *res)
{
    smaster *m = owner;
    rcall *c = res->ctx;
    reign__life_enter(&m->head.base.life);
    if (reign__life_stale(&m->head.base.life, arg, 0) || !m->leading)
        goto out;
    m->busy = false;
    for (size_t i = 0; i < c->n_taken; i++) {
        reign__tmap_entry *e = reign__tmap_put(&m->from, c->taken[i].task);
        if (e && !e->worker)
            e->worker = reign__strdup(c->taken[i].worker);
    }
    if (res->rc == REIGN_ECLOSED)
        goto out; /* the client is closing */
    if (res->rc < 0 && !c->deposed) {
        /* A lost answer is not reported: the next round settles it. */
        if (res->rc != REIGN_ECONNLOSS && res->rc != REIGN_ETIMEDOUT)
            reign__tasks_master_report(&m->head, res->rc, "assigning");
        if (reign__life_live(&m->head.base.life))
            later(m, RETRY_MS);
        goto out;
    }
    if (c->deposed) {
        /* The election tells DEMOTED once it sees the lease gone; until then, nothing lands. */
        reign__tasks_master_report(&m->head, REIGN_ESTATE, "our lease moved on: nothing assigned");
        if (reign__life_live(&m->head.base.life))
            later(m, RETRY_MS);
        goto out;
    }
    if (!m->active) {
        m->active = true;
        reign_tasks_event te = {.type = REIGN_TASKS_RECOVERED, .term = m->term};
        reign__tasks_master_emit(&m->head, &te);
    }
    for (size_t i = 0; i < c->n_given && reign__life_live(&m->head.base.life) && m->leading; i++) {
        reign__tmap_entry *e = reign__tmap_get(&m->from, c->given[i].task);
        reign_tasks_event te = {.type = REIGN_TASKS_ASSIGNED,
                                .task = c->given[i].task,
                                .worker = c->given[i].worker,
                                .from = e ? e->worker : NULL};
        reign__tasks_master_emit(&m->head, &te);
        if ((e = reign__tmap_get(&m->from, c->given[i].task)))
            reign__tmap_del(&m->from, e);
    }
    if (!reign__life_live(&m->head.base.life) || !m->leading)
        goto out;
    if (m->again || c->n_given) {
        m->again = false;
        round_start(m);
    } else {
        later(m, reign__tasks_sql_idle_ms(m->head.base.client));
    }
out:
    reign__tasks_master_leave(&m->head);
}

static void round_start(smaster *m)
{
    if (!m->leading || !m->ready)
        return;
    if (m->busy) {
        m->again = true;
        return;
    }
    reign__timer_stop(timers(m), &m->poll);
    /* Results free a worker's room (the queue's own notices), submits bring tasks. */
    if (!m->listening)
        m->listening = reign__tasks_sql_listen(m->sw, m->head.base.queue, "") &&
                       reign__tasks_sql_listen(m->sw, m->head.base.queue, REIGN__TASKS_SUBMITTED);
    const reign_member *v;
    size_t n;
    reign_group_watch_members(m->watch, &v, &n);
    rcall *c = reign__calloc(1, sizeof(*c));
    if (c && (!(c->queue = reign__strdup(m->head.base.queue)) ||
              !(c->name = reign__strdup(m->head.base.gname)) ||
              !(c->owner = reign__strdup(m->head.base.id)) ||
              (n && !(c->v = reign__calloc(n, sizeof(mem))))))
        goto fail;
    if (!c)
        goto fail;
    c->term = m->term;
    c->strategy = m->strategy;
    for (size_t i = 0; i < n; i++) {
        if (reign__tasks_worker_check(v[i].id) < 0 || strlen(v[i].node) >= TOKEN_MAX)
            continue;
        mem *mb = &c->v[c->n++];
        snprintf(mb->node, sizeof mb->node, "%s", v[i].node);
        snprintf(mb->id, sizeof mb->id, "%s", v[i].id);
        mb->cap = 2;
        reign__tasks_limits_parse(v[i].data, v[i].data_len, &mb->run, &mb->cap);
    }
    if (m->sweep_due)
        c->sweep_ms = m->retention_ms;
    m->sweep_due = false;
    if (reign__sqlw_call(m->sw, "tasks", run_round, c, rcall_free, m, on_round,
                         REIGN__LIFE_ARG(&m->head.base.life, 0, 0)) < 0)
        goto fail;
    m->busy = true;
    return;
fail:
    if (c)
        rcall_free(c);
    later(m, RETRY_MS);
}

static void on_poll(reign__timer *t, void *arg)
{
    smaster *m = arg;
    (void)t;
    reign__life_enter(&m->head.base.life);
    if (reign__life_live(&m->head.base.life))
        round_start(m);
    reign__tasks_master_leave(&m->head);
}

static void on_sweep(reign__timer *t, void *arg)
{
    smaster *m = arg;
    reign__life_enter(&m->head.base.life);
    if (m->active && reign__life_live(&m->head.base.life)) {
        m->sweep_due = true;
        round_start(m);
        int64_t every = m->retention_ms / 4;
        every = every < 1000 ? 1000 : every > 60000 ? 60000 : every;
        reign__timer_start(timers(m), t, reign__now_ns() + every * REIGN__NS_PER_MS);
    }
    reign__tasks_master_leave(&m->head);
}

/* ---- the election and the workers -------------------------------------------------------- */

static void on_members(reign_group_watch *gw, const reign_group_watch_event *ev, void *ud)
{
    smaster *m = ud;
    (void)gw;
    reign__life_enter(&m->head.base.life);
    if (m->leading && reign__life_live(&m->head.base.life) && ev->type != REIGN_MEMBERS_ERROR) {
        if (ev->type == REIGN_MEMBERS_READY)
            m->ready = true;
        round_start(m);
    }
    reign__tasks_master_leave(&m->head);
}

/* Back to standing: nothing of a leadership stays. */
static void step_down(smaster *m)
{
    reign__life_bump(&m->head.base.life);
    m->leading = m->ready = m->active = m->busy = m->again = m->sweep_due = false;
    m->watch = reign_group_watch_free(m->watch);
    reign__tmap_clear(&m->from);
    reign__timer_stop(timers(m), &m->poll);
    reign__timer_stop(timers(m), &m->sweep);
}

static void on_election(reign_election *e, const reign_election_event *ev, void *ud)
{
    smaster *m = ud;
    (void)e;
    reign__life_enter(&m->head.base.life);
    if (ev->type == REIGN_ELECTION_ELECTED) {
        step_down(m);
        m->leading = true;
        m->term = ev->term;
        reign_tasks_event te = {.type = REIGN_TASKS_ELECTED, .term = ev->term};
        reign__tasks_master_emit(&m->head, &te);
        reign_group_watch_options wo = {.size = sizeof(wo), .cb = on_members, .userdata = m};
        int rc =
            reign__life_live(&m->head.base.life)
                ? reign_group_watch_start(&m->watch, m->head.base.client, m->head.base.gname, &wo)
                : 0;
        if (rc < 0) {
            reign__tasks_master_report(&m->head, rc, "watching the workers");
            reign_election_cede(m->head.election, 1000);
        } else if (m->retention_ms > 0) {
            reign__timer_start(timers(m), &m->sweep, reign__now_ns());
        }
    } else if (ev->type == REIGN_ELECTION_DEMOTED) {
        step_down(m);
        reign_tasks_event te = {
            .type = REIGN_TASKS_DEMOTED, .term = ev->term, .reason = ev->reason};
        reign__tasks_master_emit(&m->head, &te);
    } else if (ev->type == REIGN_ELECTION_ERROR) {
        reign__tasks_master_report(&m->head, ev->error, ev->message ? ev->message : "election");
    }
    reign__tasks_master_leave(&m->head);
}

static void master_conn(reign__recipe *rp, reign_conn_state st)
{
    smaster *m = (smaster *)rp;
    if (st == REIGN_CONN_CONNECTED)
        m->listening = false;
}

static void master_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    (void)heard; /* looks again at all it follows */
    smaster *m = (smaster *)rp;
    reign__life_enter(&m->head.base.life);
    if (reign__life_live(&m->head.base.life))
        round_start(m);
    reign__tasks_master_leave(&m->head);
}

/* ---- the object -------------------------------------------------------------------------- */

static void master_free_fields(smaster *m)
{
    reign__tmap_clear(&m->from);
    reign__timer_stop(timers(m), &m->poll);
    reign__timer_stop(timers(m), &m->sweep);
    reign__tasks_base_clear(&m->head.base);
    reign__free(m);
}

/* The whole of a free (tasks_api.c), or of a failed start. */
static void master_destroy(reign_tasks_master *head)
{
    smaster *m = (smaster *)head;
    reign__sqlw_forget(m->sw, m);
    m->watch = reign_group_watch_free(m->watch);
    reign__tasks_master_detach(&m->head);
    master_free_fields(m);
}

static void master_on_destroy(reign__recipe *rp)
{
    smaster *m = (smaster *)rp;
    reign__sqlw_forget(m->sw, m);
    master_free_fields(m); /* the client frees the election and the watch itself */
}

static int master_is_active(const reign_tasks_master *base)
{
    return ((const smaster *)base)->active;
}

static const reign__recipe_ops master_ops = {
    .conn = master_conn, .destroy = master_on_destroy, .changed = master_changed};

static const reign__tasks_master_ops sql_ops = {.is_active = master_is_active,
                                                .destroy = master_destroy};

int reign__tasks_master_sql(reign_tasks_master **ret, reign_client *client, const char *queue,
                            const reign_tasks_master_options *o)
{
    smaster *m = reign__calloc(1, sizeof(*m));
    if (!m)
        return REIGN_ENOMEM;
    m->sw = reign__client_sql(client);
    m->strategy = o->strategy;
    m->retention_ms = o->retention_ms;
    reign__timer_init(&m->poll, on_poll, m);
    reign__timer_init(&m->sweep, on_sweep, m);
    int rc = reign__tasks_master_init(&m->head, &sql_ops, &master_ops, client, queue, o);
    if (rc < 0) {
        master_free_fields(m);
        return rc;
    }
    reign__client_attach(client, &m->head.base.recipe);
    return reign__tasks_master_join(&m->head, on_election, m, ret);
}
