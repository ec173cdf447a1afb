/*
 * tasks_master_zk.c - the queue's master (see <reign/tasks.h>, docs/tasks.md).
 *
 * A master stands in the election "tasks.Q" (<reign/election.h>).  When it
 * wins it finds its own election node (the term node names it), watches the
 * workers (the group "tasks.Q", <reign/group.h>), recovers what the last
 * master left, then assigns.  Every move of a task (from tasks/, or from a
 * dead worker's assign/D/) is one multi: "our election node exists" +
 * "create assign/W/T" + "delete the source".  The check makes a deposed
 * master's move fail; the multi makes each move all or nothing, so a task
 * is always in exactly one place, whoever dies when.
 *
 * Recovery reads assign/ (every worker's), then status/, then tasks/: in
 * the order a task moves, so no task is missed by reading while workers
 * finish tasks.  It gives the tasks of dead workers to live ones.
 *
 * Each worker gets at most its prefetch (from its group payload) tasks at
 * once; the rest wait in tasks/, so least-loaded means something and a dead
 * worker takes few tasks with it.  The master learns that tasks are done from
 * a listing of assign/W, made only when its count says W holds at least what
 * it runs at once (see list_worker), and lists tasks/ again only once it has used up the names
 * of the last listing.  It never reads a pending task: the payload stays in
 * data/<tag>/<guid> for the worker (see send_move).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/election.h>
#include <reign/group.h>

#include "recipes/life.h"
#include "tasks_internal.h"

#define F_INFLIGHT 1 /* an assignment of it is being written */
#define F_MOVING   2 /* being taken from a dead worker */

typedef struct worker {
    char *id;
    bool live;
    size_t cap;          /* tasks it may hold: its prefetch */
    size_t run;          /* tasks it runs at once: its concurrency */
    size_t load;         /* tasks we gave it and have not seen finished (see list_worker) */
    bool listing, dirty; /* a listing of assign/W in flight; W changed since the last one */
} worker;

typedef struct zmaster {
    /* First: the client calls us through it; tasks_api.c too.  Its life's epoch is bumped at
     * each election and demotion: older answers drop. */
    reign_tasks_master head;
    reign__zk *zk;
    reign_tasks_strategy strategy;
    int64_t retention_ms;
    reign_group_watch *watch;
    bool leading, active;
    uint64_t term, token;
    char *check_path; /* our election node */
    worker *workers;
    size_t n_workers;
    reign__tmap held; /* task -> worker, for every assignment we know of */
    uint64_t gen;     /* listings of workers' directories sent (see list_worker) */
    char **pending;   /* the last listing of tasks/ */
    size_t n_pending, next_pending;
    bool tasks_listing, tasks_dirty;
    int recovering;     /* outstanding reads of the recovery */
    reign__timer timer; /* retention sweep */
    reign__held *args;  /* the arguments of requests in flight */
} zmaster;

#define ARG(m)      REIGN__LIFE_ARG(&(m)->head.base.life, 0, 0)
#define STALE(m, a) (reign__life_stale(&(m)->head.base.life, (a), 0) || !(m)->leading)

/*
 * Arguments of requests in flight are held by the master, because
 * reign__zk_forget() (on demotion and on free) drops their callbacks, which
 * would otherwise have freed them.
 */
#define targ_new(m, n, dtor) reign__held_new(&(m)->args, (n), (dtor), (m)->head.base.life.epoch)
#define targ_epoch(p)        reign__held_tag(p)
#define targ_free(m, p)      reign__held_free(&(m)->args, (p))
#define targ_free_all(m)     reign__held_free_all(&(m)->args)

static void assign_more(zmaster *m);
static void list_tasks(zmaster *m);
static void refresh_worker(zmaster *m, worker *w);

/* ---- workers -------------------------------------------------------------- */

static worker *find_worker(zmaster *m, const char *id)
{
    for (size_t i = 0; i < m->n_workers; i++)
        if (!strcmp(m->workers[i].id, id))
            return &m->workers[i];
    return NULL;
}

static worker *add_worker(zmaster *m, const char *id)
{
    worker *w = find_worker(m, id);
    if (w)
        return w;
    worker *v = reign__realloc(m->workers, (m->n_workers + 1) * sizeof(*v));
    if (!v)
        return NULL;
    m->workers = v;
    w = &v[m->n_workers];
    memset(w, 0, sizeof(*w));
    if (!(w->id = reign__strdup(id)))
        return NULL;
    w->cap = 2;
    w->dirty = true; /* not listed yet: nothing is known of its directory */
    m->n_workers++;
    return w;
}

static void clear_state(zmaster *m)
{
    for (size_t i = 0; i < m->n_workers; i++)
        reign__free(m->workers[i].id);
    reign__free(m->workers);
    m->workers = NULL;
    m->n_workers = 0;
    reign__tmap_clear(&m->held);
    for (size_t i = 0; i < m->n_pending; i++)
        reign__free(m->pending[i]);
    reign__free(m->pending);
    m->pending = NULL;
    m->n_pending = m->next_pending = 0;
    m->tasks_listing = m->tasks_dirty = false;
    m->recovering = 0;
    reign__free(m->check_path);
    m->check_path = NULL;
    m->watch = reign_group_watch_free(m->watch);
    reign__timer_stop(reign__client_timers(m->head.base.client), &m->timer);
}

/* The worker for the next task, or NULL if every live one is full. */
static worker *choose(zmaster *m)
{
    worker *best = NULL;
    size_t n_free = 0;
    for (size_t i = 0; i < m->n_workers; i++) {
        worker *w = &m->workers[i];
        if (!w->live || w->load >= w->cap)
            continue;
        n_free++;
        if (m->strategy == REIGN_TASKS_RANDOM) {
            uint32_t r = 0;
            reign__random_bytes(&r, sizeof(r));
            if (r % n_free == 0) /* reservoir sampling: each free worker equally likely */
                best = w;
        } else if (!best || w->load < best->load) {
            best = w;
        }
    }
    return best;
}

/* ---- one assignment -------------------------------------------------------- */

/* What an assignment in flight needs. */
typedef struct move {
    char *task;
    char *to;
    char *from; /* NULL: from tasks/ */
    char *src;  /* the node the task leaves */
    char *dst;
    char *payload; /* a pending task's payload node, checked by the multi; NULL: none */
    uint64_t gen;  /* listings sent before the request that will prove the move (see moved) */
} move;

static void move_dtor(void *p)
{
    move *mv = p;
    reign__free(mv->task);
    reign__free(mv->to);
    reign__free(mv->from);
    reign__free(mv->src);
    reign__free(mv->dst);
    reign__free(mv->payload);
}

#define move_free(mv) targ_free(m, (mv))
#define MV_STALE(m, mv)                                                                            \
    (!reign__life_current(&(m)->head.base.life, targ_epoch(mv)) || !(m)->leading)

static void unhold(zmaster *m, const char *task);

static void hold(zmaster *m, const char *task, const char *wid, int flags);

/* Gives up a move whose task is gone or not ours to move: it is no longer held (a pending
 * task that is still there is offered again by the next listing). */
static void drop_move(zmaster *m, move *mv)
{
    unhold(m, mv->task);
    move_free(mv);
}

/* Gives up a move after an error: the task stays where it is, a dead worker's task held
 * on that worker again (moved on the next change), a pending one unheld (next listing). */
static void abandon_move(zmaster *m, move *mv)
{
    if (mv->from)
        hold(m, mv->task, mv->from, 0);
    else
        unhold(m, mv->task);
    move_free(mv);
}

static void unhold(zmaster *m, const char *task)
{
    reign__tmap_entry *e = reign__tmap_get(&m->held, task);
    if (!e)
        return;
    worker *w = e->worker ? find_worker(m, e->worker) : NULL;
    if (w && w->load)
        w->load--;
    reign__tmap_del(&m->held, e);
}

static void hold(zmaster *m, const char *task, const char *wid, int flags)
{
    reign__tmap_entry *e = reign__tmap_put(&m->held, task);
    if (!e)
        return;
    if (e->worker) {
        worker *old = find_worker(m, e->worker);
        if (old && old->load)
            old->load--;
        reign__free(e->worker);
    }
    e->worker = reign__strdup(wid);
    e->flags = flags;
    worker *w = find_worker(m, wid);
    if (w)
        w->load++;
}

/* The move happened (its multi was answered, or found done after a lost answer). */
static void moved(zmaster *m, move *mv)
{
    reign__tmap_entry *e = reign__tmap_get(&m->held, mv->task);
    if (e && e->worker && !strcmp(e->worker, mv->to)) {
        /* The assignment existed when the request that proves it (the multi, or the read
         * after its lost answer) was served; a listing sent after that request is served
         * after it, so one that lacks the task proves it done.  (The generation at this
         * answer would be too late: a listing sent meanwhile may have missed a task that
         * was finished before it was served, and its watch would not fire for that.) */
        e->flags &= ~(F_INFLIGHT | F_MOVING);
        e->gen = mv->gen;
    }
    reign_tasks_event ev = {
        .type = REIGN_TASKS_ASSIGNED, .task = mv->task, .worker = mv->to, .from = mv->from};
    reign__tasks_master_emit(&m->head, &ev);
    move_free(mv);
    if (reign__life_live(&m->head.base.life))
        assign_more(m);
}

/* The source is gone and the move did not happen: the task was finished by the worker we
 * took it for dead, or deleted.  Nothing to assign. */
static void source_gone(zmaster *m, move *mv)
{
    drop_move(m, mv);
    if (reign__life_live(&m->head.base.life))
        assign_more(m);
}

static void send_move(zmaster *m, move *mv);

/*
 * The multi's answer was lost: did it happen?  Its source is deleted by it and by nothing
 * else while we lead (a task's name is never used again; a worker deletes only its own
 * assignment, which it then no longer holds), so a source that is still there means not
 * yet, and the multi is sent again.  A read from a server that has not yet applied the
 * lost multi could say "there" wrongly; the second multi then fails on its create (the
 * assignment exists), which says the first one landed.
 */
static void on_source_checked(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    move *mv = arg;
    reign__life_enter(&m->head.base.life);
    if (MV_STALE(m, mv)) {
        move_free(mv);
    } else if (r->rc == 0) {
        send_move(m, mv);
    } else if (r->rc == REIGN_ENOENT) {
        /* Landed (or landed and done already).  Across the lost connection the order of
         * requests is less plain: W is listed afresh when its count next matters. */
        worker *w = find_worker(m, mv->to);
        if (w)
            w->dirty = true;
        moved(m, mv);
    } else {
        reign__tasks_master_report(&m->head, r->rc,
                                   "checking an assignment after a connection loss");
        abandon_move(m, mv);
    }
    reign__tasks_master_leave(&m->head);
}

static void on_move_written(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    move *mv = arg;
    reign__life_enter(&m->head.base.life);
    if (MV_STALE(m, mv)) {
        move_free(mv);
        goto out;
    }
    /* The parts: 0 check our election node, [check the payload,] create the assignment,
     * delete the source. */
    int create = mv->payload ? 2 : 1;
    if (r->rc == 0 || (r->rc == REIGN_EEXIST && r->failed_op == create)) {
        /* EEXIST: an earlier send whose answer was lost landed. */
        moved(m, mv);
    } else if (r->rc == REIGN_ENOENT && mv->payload && r->failed_op == 1) {
        drop_move(m, mv); /* no payload: the task was deleted meanwhile (a stale listing) */
    } else if (r->rc == REIGN_ENOENT && r->failed_op == create) {
        /* The worker's directory is missing (made by the worker, but we may
         * be first): make it, then again. */
        char *dir = reign__tasks_path(m->head.base.queue, REIGN__N_ASSIGN, mv->to, NULL);
        if (dir)
            reign__zk_create(m->zk, dir, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
        reign__free(dir);
        send_move(m, mv);
    } else if (r->rc == REIGN_ENOENT && r->failed_op == create + 1) {
        source_gone(m, mv);
    } else if (r->rc == REIGN_ECONNLOSS || r->rc == REIGN_ETIMEDOUT) {
        mv->gen = m->gen;
        if (reign__zk_exists(m->zk, mv->src, NULL, REIGN__ZK_RETRY, m, on_source_checked, mv) < 0)
            abandon_move(m, mv);
    } else if (r->rc == REIGN_ENOENT && r->failed_op == 0) {
        drop_move(m, mv); /* our election node is gone: we are deposed (DEMOTED follows) */
    } else {
        reign__tasks_master_report(&m->head, r->rc, "assigning a task");
        abandon_move(m, mv); /* tried again later */
    }
out:
    reign__tasks_master_leave(&m->head);
}

/*
 * One multi: our election node exists (rule 2 of docs/tasks.md), the assignment is
 * created, the source deleted.  All or nothing, so the task is always in exactly one place.
 * A pending task's payload stays in data/<tag>/<guid> (the worker reads it there), so the master
 * never reads the task: the multi checks that the payload is there instead.  A dead worker's
 * task is moved the same way (its payload stays where it is).
 */
static void send_move(zmaster *m, move *mv)
{
    reign__zk_mop ops[4] = {{.type = REIGN__ZK_MCHECK, .path = m->check_path, .version = -1}};
    size_t n = 1;
    if (mv->payload)
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCHECK, .path = mv->payload, .version = -1};
    ops[n++] =
        (reign__zk_mop){.type = REIGN__ZK_MCREATE, .path = mv->dst, .data = "", .version = -1};
    ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MDELETE, .path = mv->src, .version = -1};
    mv->gen = m->gen;
    if (reign__zk_multi(m->zk, ops, n, m, on_move_written, mv) < 0)
        abandon_move(m, mv);
}

/* Starts moving `task` from tasks/ (from == NULL) or from dead worker `from` to w. */
static bool start_move(zmaster *m, const char *task, const char *from, worker *w)
{
    move *mv = targ_new(m, sizeof(*mv), move_dtor);
    if (!mv)
        return false;
    mv->task = reign__strdup(task);
    mv->to = reign__strdup(w->id);
    mv->from = from ? reign__strdup(from) : NULL;
    mv->src = from ? reign__tasks_path(m->head.base.queue, REIGN__N_ASSIGN, from, task)
                   : reign__tasks_path(m->head.base.queue, REIGN__N_TASKS, task, NULL);
    mv->dst = reign__tasks_path(m->head.base.queue, REIGN__N_ASSIGN, w->id, task);
    mv->payload = from ? NULL : reign__tasks_payload_path(m->head.base.queue, task);
    if (!(mv->task && mv->to && (from ? !!mv->from : !!mv->payload) && mv->src && mv->dst)) {
        move_free(mv);
        return false;
    }
    hold(m, task, w->id, F_INFLIGHT | (from ? F_MOVING : 0));
    send_move(m, mv); /* after hold: a failure to send unholds it */
    return true;
}

/* ---- pending tasks ---------------------------------------------------------- */

/* Settles the tasks of workers that are gone, then assigns pending tasks
 * while some live worker has room. */
/* Whether some task is held by a worker that is gone (or unknown): only then is the whole
 * map scanned, not at every assignment. */
static bool someone_to_move(const zmaster *m)
{
    size_t counted = 0;
    for (size_t i = 0; i < m->n_workers; i++) {
        if (!m->workers[i].live && m->workers[i].load)
            return true;
        counted += m->workers[i].load;
    }
    return counted < m->held.n; /* held on a worker we do not know (hold() counts known ones) */
}

static void assign_more(zmaster *m)
{
    if (!m->active)
        return;
    bool scan = someone_to_move(m);
    for (size_t i = 0; scan && i < m->held.cap; i++) {
        if (!reign__tmap_live(&m->held, i))
            continue;
        reign__tmap_entry *e = &m->held.v[i];
        worker *from = find_worker(m, e->worker);
        if (from && from->live)
            continue;
        if (e->flags & (F_INFLIGHT | F_MOVING))
            continue;
        if (from && (from->dirty || from->listing))
            continue; /* listed first (below): the tasks it finished are not moved */
        worker *to = choose(m);
        if (!to)
            break;
        char *task = reign__strdup(e->key), *fid = reign__strdup(e->worker);
        bool ok = task && fid && start_move(m, task, fid, to);
        reign__free(task);
        reign__free(fid);
        if (!ok)
            break;
        i = (size_t)-1; /* the map may have changed: scan again */
        scan = someone_to_move(m);
    }
    while (m->next_pending < m->n_pending) {
        const char *task = m->pending[m->next_pending];
        if (reign__tmap_get(&m->held, task)) {
            m->next_pending++; /* being assigned, or listed before its move landed */
            continue;
        }
        worker *w = choose(m);
        if (!w)
            break;
        m->next_pending++;
        if (!start_move(m, task, NULL, w))
            break;
    }
    if (m->tasks_dirty && !m->tasks_listing && m->next_pending >= m->n_pending)
        list_tasks(m);
    for (size_t i = 0; i < m->n_workers; i++)
        refresh_worker(m, &m->workers[i]);
}

static void on_tasks_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zmaster *m = owner;
    (void)ev;
    (void)path;
    if (STALE(m, arg))
        return;
    reign__life_enter(&m->head.base.life);
    /* Listed again once the names we hold are used up: until then there is nothing
     * new to do, and each listing costs the server all the pending names. */
    m->tasks_dirty = true;
    if (m->next_pending >= m->n_pending)
        list_tasks(m);
    reign__tasks_master_leave(&m->head);
}

static void on_tasks_listed(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    reign__life_enter(&m->head.base.life);
    if (STALE(m, arg))
        goto out;
    m->tasks_listing = false;
    if (r->rc < 0) {
        if (r->rc != REIGN_ESESSION)
            reign__tasks_master_report(&m->head, r->rc, "listing the tasks");
        m->tasks_dirty = true; /* the watch may not be armed: list again below */
    } else {
        for (size_t i = 0; i < m->n_pending; i++)
            reign__free(m->pending[i]);
        reign__free(m->pending);
        m->pending = NULL;
        m->n_pending = m->next_pending = 0;
        char **v = r->n_children ? reign__calloc(r->n_children, sizeof(*v)) : NULL;
        size_t n = 0;
        for (size_t i = 0; v && i < r->n_children; i++) {
            const char *t = r->children[i];
            if (!reign__task_name_parse(t, NULL, NULL))
                continue; /* not a task of ours: never acted on */
            if (reign__tmap_get(&m->held, t))
                continue; /* assigned already: listed before its move's multi landed */
            if ((v[n] = reign__strdup(t)))
                n++;
        }
        reign__tasks_sort_names(v, n);
        m->pending = v;
        m->n_pending = n;
        assign_more(m);
    }
    if (m->tasks_dirty && m->leading && m->next_pending >= m->n_pending)
        list_tasks(m);
out:
    reign__tasks_master_leave(&m->head);
}

static void list_tasks(zmaster *m)
{
    if (m->tasks_listing)
        return; /* tasks_dirty: again after this one */
    m->tasks_dirty = false;
    char *p = reign__tasks_path(m->head.base.queue, REIGN__N_TASKS, NULL, NULL);
    if (p && reign__zk_children(m->zk, p, on_tasks_event, REIGN__ZK_RETRY, m, on_tasks_listed,
                                ARG(m)) == 0)
        m->tasks_listing = true;
    reign__free(p);
}

/* ---- a worker's assignments ----------------------------------------------- */

typedef struct wref {
    char *id;
} wref;

static void wref_dtor(void *p)
{
    reign__free(((wref *)p)->id);
}

/*
 * The master learns that a worker finished tasks by listing its directory assign/W, lazily:
 * only when the count of tasks it gave W says W is full (or W is gone and its tasks are to
 * be moved) and the directory changed since the last listing (the listing's watch fired:
 * dirty).  Until then a finished task still counts against W, so the count is an upper
 * bound: W never gets more than its share, and one listing settles a whole burst of
 * completions instead of a request per task.
 *
 * A listing proves a task finished only if the task's assignment was known to exist before
 * the listing was sent (a session's requests are served in order): each listing takes the
 * next generation, each confirmed assignment the generation current when it was confirmed.
 */
typedef struct dref {
    char *worker;
    uint64_t gen;
} dref;

static void dref_dtor(void *p)
{
    reign__free(((dref *)p)->worker);
}

static void list_worker(zmaster *m, worker *w);

/* Lists W if its count may be out of date and that matters now: W holds as many tasks as it
 * runs at once, so it may soon have room that we do not see, or W is gone and holds tasks to
 * move.  Waiting until W looks full would leave it idle for the round trips between its
 * finishing and our next assignment. */
static void refresh_worker(zmaster *m, worker *w)
{
    if (m->active && w->dirty && !w->listing && (w->load >= w->run || (!w->live && w->load)))
        list_worker(m, w);
}

static void on_worker_dir_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zmaster *m = owner;
    (void)arg; /* the listing's argument, freed by now */
    (void)ev;
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!m->leading || !reign__life_live(&m->head.base.life) || !slash)
        return;
    reign__life_enter(&m->head.base.life);
    worker *w = find_worker(m, slash + 1); /* path: .../assign/W */
    if (w) {
        w->dirty = true;
        refresh_worker(m, w);
    }
    reign__tasks_master_leave(&m->head);
}

static bool listed(char *const *names, size_t n, const char *task)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], task))
            return true;
    return false;
}

static void on_worker_listed(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    dref *d = arg;
    reign__life_enter(&m->head.base.life);
    worker *w =
        MV_STALE(m, d) || !reign__life_live(&m->head.base.life) ? NULL : find_worker(m, d->worker);
    if (!w)
        goto out;
    w->listing = false;
    if (r->rc < 0 && r->rc != REIGN_ENOENT) {
        if (r->rc != REIGN_ESESSION)
            reign__tasks_master_report(&m->head, r->rc, "listing a worker's tasks");
        w->dirty = true; /* the watch may not be armed */
    } else {
        /* ENOENT: the directory is gone, and every task in it (an operator removed it). */
        char **names = r->rc == 0 ? r->children : NULL;
        size_t n = r->rc == 0 ? r->n_children : 0;
        for (size_t i = 0; i < m->held.cap; i++) {
            if (!reign__tmap_live(&m->held, i))
                continue;
            reign__tmap_entry *e = &m->held.v[i];
            if (!e->worker || strcmp(e->worker, d->worker) != 0 ||
                (e->flags & (F_INFLIGHT | F_MOVING)) || e->gen >= d->gen ||
                listed(names, n, e->key))
                continue;
            unhold(m, e->key); /* finished (or moved away by an operator) */
        }
        /* A task there that we do not hold was assigned by a move whose answer we lost and
         * gave up on: hold it, so that its worker's share and its move if W dies are right. */
        for (size_t i = 0; i < n; i++)
            if (reign__task_name_parse(names[i], NULL, NULL) &&
                !reign__tmap_get(&m->held, names[i]))
                hold(m, names[i], d->worker, 0);
    }
    assign_more(m);
out:
    targ_free(m, d);
    reign__tasks_master_leave(&m->head);
}

static void list_worker(zmaster *m, worker *w)
{
    dref *d = targ_new(m, sizeof(*d), dref_dtor);
    char *p = reign__tasks_path(m->head.base.queue, REIGN__N_ASSIGN, w->id, NULL);
    int rc = REIGN_ENOMEM;
    if (d && p && (d->worker = reign__strdup(w->id))) {
        d->gen = ++m->gen;
        rc = reign__zk_children(m->zk, p, on_worker_dir_event, REIGN__ZK_RETRY, m, on_worker_listed,
                                d);
    }
    reign__free(p);
    if (rc < 0) {
        targ_free(m, d);
        reign__tasks_master_report(&m->head, rc, "listing a worker's tasks");
        return;
    }
    w->listing = true;
    w->dirty = false; /* set again by the watch if W changes after this listing */
}

/* ---- the workers' group ------------------------------------------------------ */

static void recompute_live(zmaster *m)
{
    const reign_member *v;
    size_t n;
    reign_group_watch_members(m->watch, &v, &n);
    for (size_t i = 0; i < m->n_workers; i++)
        m->workers[i].live = false;
    for (size_t i = 0; i < n; i++) {
        if (reign__tasks_worker_check(v[i].id) < 0)
            continue;
        worker *w = add_worker(m, v[i].id);
        if (!w)
            continue;
        w->live = true;
        reign__tasks_limits_parse(v[i].data, v[i].data_len, &w->run, &w->cap);
    }
}

static void start_recovery(zmaster *m);

static void on_members(reign_group_watch *gw, const reign_group_watch_event *ev, void *ud)
{
    zmaster *m = ud;
    (void)gw;
    reign__life_enter(&m->head.base.life);
    if (!m->leading || !reign__life_live(&m->head.base.life))
        goto out;
    if (ev->type == REIGN_MEMBERS_READY) {
        recompute_live(m);
        start_recovery(m);
    } else if (ev->type != REIGN_MEMBERS_ERROR) {
        /* Keep the view current during recovery too: a worker that registers
         * meanwhile must be known when recovery ends and assigns. */
        recompute_live(m);
        if (m->active)
            assign_more(m);
    }
out:
    reign__tasks_master_leave(&m->head);
}

/* ---- recovery -------------------------------------------------------------- */

static void recovery_step(zmaster *m);

static void on_recovery_list(void *owner, void *arg, const reign__zk_result *r);

/* Recovery's reads: assign/ (worker NULL), then each assign/W. */
typedef struct rread {
    char *worker;
} rread;

static void rread_dtor(void *p)
{
    reign__free(((rread *)p)->worker);
}

static int recovery_list(zmaster *m, const char *wid)
{
    rread *a = targ_new(m, sizeof(*a), rread_dtor);
    char *p = reign__tasks_path(m->head.base.queue, REIGN__N_ASSIGN, wid, NULL);
    int rc = REIGN_ENOMEM;
    if (a && p && (!wid || (a->worker = reign__strdup(wid)))) {
        rc = reign__zk_children(m->zk, p, NULL, REIGN__ZK_RETRY, m, on_recovery_list, a);
    }
    reign__free(p);
    if (rc < 0) {
        targ_free(m, a);
        return rc;
    }
    m->recovering++;
    return 0;
}

static void recovery_failed(zmaster *m, int rc)
{
    reign__tasks_master_report(&m->head, rc, "recovering the queue; standing again");
    reign_election_cede(m->head.election, 1000);
}

static void on_recovery_list(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    rread *a = arg;
    reign__life_enter(&m->head.base.life);
    if (!reign__life_current(&m->head.base.life, targ_epoch(a)) || !m->leading ||
        !reign__life_live(&m->head.base.life))
        goto out;
    m->recovering--;
    if (r->rc < 0 && r->rc != REIGN_ENOENT) {
        m->recovering = -1000; /* drop the rest of this round */
        recovery_failed(m, r->rc);
        goto out;
    }
    for (size_t i = 0; r->rc == 0 && i < r->n_children; i++) {
        const char *c = r->children[i];
        if (!a->worker) {
            if (reign__tasks_worker_check(c) == 0 && add_worker(m, c) && recovery_list(m, c) < 0)
                m->recovering = -1000;
        } else if (reign__task_name_parse(c, NULL, NULL)) {
            hold(m, c, a->worker, 0);
        }
    }
    if (m->recovering == 0)
        recovery_step(m);
out:
    targ_free(m, a);
    reign__tasks_master_leave(&m->head);
}

static void recovery_step(zmaster *m)
{
    m->active = true;
    reign__log(m->head.base.log, REIGN_LOG_NOTICE, "tasks %s: recovered: %zu assigned",
               m->head.base.queue, m->held.n);
    reign_tasks_event ev = {.type = REIGN_TASKS_RECOVERED, .term = m->term};
    reign__tasks_master_emit(&m->head, &ev);
    if (!reign__life_live(&m->head.base.life) || !m->leading)
        return;
    recompute_live(m); /* the members as they are now, not as at READY */
    list_tasks(m);     /* assigns what is pending */
    if (m->retention_ms > 0) {
        reign__timers *ts = reign__client_timers(m->head.base.client);
        reign__timer_start(ts, &m->timer, reign__now_ns());
    }
}

static void start_recovery(zmaster *m)
{
    m->recovering = 0;
    if (recovery_list(m, NULL) < 0)
        recovery_failed(m, REIGN_ENOMEM);
}

/* ---- retention ---------------------------------------------------------------- */

static void on_result_stat(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    wref *ref = arg; /* id: the status node's path */
    if (r->rc == 0 && m->leading && r->stat.ctime_ms + m->retention_ms < reign__wall_ms())
        reign__zk_delete(m->zk, ref->id, -1, 0, NULL, NULL, NULL);
    targ_free(m, ref);
}

static void on_results_listed(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    if (STALE(m, arg) || r->rc < 0)
        return;
    for (size_t i = 0; i < r->n_children; i++) {
        if (!reign__task_name_parse(r->children[i], NULL, NULL))
            continue;
        wref *ref = targ_new(m, sizeof(*ref), wref_dtor);
        if (!ref)
            break;
        ref->id = reign__tasks_path(m->head.base.queue, REIGN__N_STATUS, r->children[i], NULL);
        if (!ref->id ||
            reign__zk_exists(m->zk, ref->id, NULL, REIGN__ZK_RETRY, m, on_result_stat, ref) < 0)
            targ_free(m, ref);
    }
}

static void retention_cb(reign__timer *t, void *arg)
{
    zmaster *m = arg;
    (void)t;
    if (!m->active)
        return;
    char *p = reign__tasks_path(m->head.base.queue, REIGN__N_STATUS, NULL, NULL);
    if (p)
        reign__zk_children(m->zk, p, NULL, REIGN__ZK_RETRY, m, on_results_listed, ARG(m));
    reign__free(p);
    int64_t every = m->retention_ms / 4;
    if (every < 1000)
        every = 1000;
    if (every > 60000)
        every = 60000;
    reign__timer_start(reign__client_timers(m->head.base.client), t,
                       reign__now_ns() + every * REIGN__NS_PER_MS);
}

/* ---- the election ----------------------------------------------------------- */

static void on_term_read(void *owner, void *arg, const reign__zk_result *r)
{
    zmaster *m = owner;
    reign__life_enter(&m->head.base.life);
    if (STALE(m, arg))
        goto out;
    reign__record rec;
    const char *node = NULL;
    bool ok = r->rc == 0 && (uint64_t)r->stat.version == m->term &&
              reign__record_parse(r->value, r->value_len, &rec) == 0;
    if (ok) {
        node = reign__record_get(&rec, REIGN__K_NODE);
        if (node && node[0] && !strchr(node, '/'))
            m->check_path = reign__strf("%s/%s/%s", REIGN__ELECTION_DIR, m->head.base.gname, node);
        reign__record_clear(&rec);
    }
    if (!m->check_path) {
        /* The term moved on already (we are being demoted) or is unreadable. */
        reign__tasks_master_report(&m->head, r->rc < 0 ? r->rc : REIGN_EFOREIGN,
                                   "finding our election node");
        reign_election_cede(m->head.election, 1000);
        goto out;
    }
    reign__tasks_make_dirs(m->zk, m->head.base.queue);
    reign_group_watch_options wo = {.size = sizeof(wo), .cb = on_members, .userdata = m};
    int rc = reign_group_watch_start(&m->watch, m->head.base.client, m->head.base.gname, &wo);
    if (rc < 0) {
        reign__tasks_master_report(&m->head, rc, "watching the workers");
        reign_election_cede(m->head.election, 1000);
    }
out:
    reign__tasks_master_leave(&m->head);
}

static void on_election(reign_election *e, const reign_election_event *ev, void *ud)
{
    zmaster *m = ud;
    (void)e;
    reign__life_enter(&m->head.base.life);
    if (ev->type == REIGN_ELECTION_ELECTED) {
        reign__life_bump(&m->head.base.life);
        clear_state(m);
        m->leading = true;
        m->term = ev->term;
        m->token = ev->token;
        reign_tasks_event te = {.type = REIGN_TASKS_ELECTED, .term = ev->term};
        reign__tasks_master_emit(&m->head, &te);
        /* The term node names the winner's node: ours, if its version is our term. */
        char *p = reign__strf("%s/%s/" REIGN__N_TERM, REIGN__ELECTION_DIR, m->head.base.gname);
        if (!p || reign__zk_get(m->zk, p, NULL, REIGN__ZK_RETRY, m, on_term_read, ARG(m)) < 0)
            reign__tasks_master_report(&m->head, REIGN_ENOMEM, "reading the term");
        reign__free(p);
    } else if (ev->type == REIGN_ELECTION_DEMOTED) {
        reign__life_bump(&m->head.base.life);
        m->leading = false;
        m->active = false;
        reign__zk_forget(m->zk, m);
        targ_free_all(m);
        clear_state(m);
        reign_tasks_event te = {
            .type = REIGN_TASKS_DEMOTED, .term = ev->term, .reason = ev->reason};
        reign__tasks_master_emit(&m->head, &te);
    } else if (ev->type == REIGN_ELECTION_ERROR) {
        reign__tasks_master_report(&m->head, ev->error, ev->message ? ev->message : "election");
    }
    reign__tasks_master_leave(&m->head);
}

/* ---- the object --------------------------------------------------------------- */

/* The whole of a free (tasks_api.c), or of a failed start. */
static void master_destroy(reign_tasks_master *head)
{
    zmaster *m = (zmaster *)head;
    reign__zk_forget(m->zk, m);
    targ_free_all(m);
    clear_state(m);
    reign__tasks_master_detach(&m->head);
    reign__tasks_base_clear(&m->head.base);
    reign__free(m);
}

static void master_on_destroy(reign__recipe *rp)
{
    zmaster *m = (zmaster *)rp;
    /* The client frees its recipes (the election and the watch among them)
     * itself: forget ours so that we do not free them twice. */
    m->head.election = NULL;
    m->watch = NULL;
    reign__zk_forget(m->zk, m);
    targ_free_all(m);
    clear_state(m);
    reign__tasks_base_clear(&m->head.base);
    reign__free(m);
}

static const reign__recipe_ops master_ops = {.destroy = master_on_destroy};

static int master_is_active(const reign_tasks_master *base)
{
    return ((const zmaster *)base)->active;
}

static const reign__tasks_master_ops zk_ops = {.is_active = master_is_active,
                                               .destroy = master_destroy};

int reign__tasks_master_zk(reign_tasks_master **ret, reign_client *client, const char *queue,
                           const reign_tasks_master_options *opts)
{
    const reign_tasks_master_options o = *opts;
    zmaster *m = reign__calloc(1, sizeof(*m));
    if (!m)
        return REIGN_ENOMEM;
    m->zk = reign__client_zk(client);
    m->strategy = o.strategy;
    m->retention_ms = o.retention_ms;
    reign__timer_init(&m->timer, retention_cb, m);
    int rc = reign__tasks_master_init(&m->head, &zk_ops, &master_ops, client, queue, &o);
    if (rc < 0) {
        reign__tasks_base_clear(&m->head.base);
        reign__free(m);
        return rc;
    }
    reign__client_attach(client, &m->head.base.recipe);
    return reign__tasks_master_join(&m->head, on_election, m, ret);
}
