/*
 * tasks_head.c - the head every master and worker of the queue starts with, whichever its store
 * (tasks_internal.h): its fields filled and freed, a free deferred past the callbacks on the
 * stack, the application called back, errors logged and reported, a worker's registration in
 * the group "tasks.Q" and a master's candidacy in the election "tasks.Q".  Written once for the
 * four backends (tasks_master_zk.c, tasks_worker_zk.c, tasks_master_sql.c, tasks_worker_sql.c),
 * which call it; it calls none of them by name (a destroy goes through the head's ops), nor
 * tasks_api.c.
 */
#include <string.h>

#include "tasks_internal.h"

static int base_init(reign__tasks_base *b, const reign__recipe_ops *rops, const char *role,
                     reign_client *client, const char *queue, const char *id, void *userdata)
{
    b->recipe.ops = rops;
    b->client = client;
    b->log = reign__client_log(client);
    b->role = role;
    b->userdata = userdata;
    b->queue = reign__strdup(queue);
    b->gname = reign__tasks_group_name(queue);
    int rc = id ? ((b->id = reign__strdup(id)) ? 0 : REIGN_ENOMEM) : reign__default_id(&b->id);
    return rc == 0 && (!b->queue || !b->gname) ? REIGN_ENOMEM : rc;
}

void reign__tasks_base_clear(reign__tasks_base *b)
{
    reign__free(b->queue);
    reign__free(b->gname);
    reign__free(b->id);
    b->queue = b->gname = b->id = NULL;
}

int reign__tasks_worker_init(reign_tasks_worker *w, const reign__tasks_worker_ops *ops,
                             const reign__recipe_ops *rops, reign_client *client, const char *queue,
                             const reign_tasks_worker_options *o)
{
    w->ops = ops;
    w->cb = o->cb;
    w->concurrency = o->concurrency;
    w->prefetch = o->prefetch;
    /* o->id is never NULL here (tasks_api.c checks it): a worker has no default id. */
    return base_init(&w->base, rops, "worker", client, queue, o->id, o->userdata);
}

int reign__tasks_master_init(reign_tasks_master *m, const reign__tasks_master_ops *ops,
                             const reign__recipe_ops *rops, reign_client *client, const char *queue,
                             const reign_tasks_master_options *o)
{
    m->ops = ops;
    m->cb = o->cb;
    return base_init(&m->base, rops, "master", client, queue, o->id, o->userdata);
}

void reign__tasks_worker_leave(reign_tasks_worker *w)
{
    if (reign__life_leave(&w->base.life))
        w->ops->destroy(w);
}

void reign__tasks_master_leave(reign_tasks_master *m)
{
    if (reign__life_leave(&m->base.life))
        m->ops->destroy(m);
}

/* Logs the warning of report() and returns its event. */
static reign_tasks_event warn(const reign__tasks_base *b, int err, const char *what)
{
    reign__log(b->log, REIGN_LOG_WARN, "tasks %s: %s %s: %s: %s", b->queue, b->role, b->id, what,
               reign_strerror(err));
    return (reign_tasks_event){.type = REIGN_TASKS_ERROR, .error = err, .message = what};
}

void reign__tasks_worker_emit(reign_tasks_worker *w, const reign_tasks_event *ev)
{
    if (w->cb && reign__life_live(&w->base.life))
        w->cb(w, ev, w->base.userdata);
}

void reign__tasks_master_emit(reign_tasks_master *m, const reign_tasks_event *ev)
{
    if (m->cb && reign__life_live(&m->base.life))
        m->cb(m, ev, m->base.userdata);
}

void reign__tasks_worker_report(reign_tasks_worker *w, int err, const char *what)
{
    reign_tasks_event ev = warn(&w->base, err, what);
    reign__tasks_worker_emit(w, &ev);
}

void reign__tasks_master_report(reign_tasks_master *m, int err, const char *what)
{
    reign_tasks_event ev = warn(&m->base, err, what);
    reign__tasks_master_emit(m, &ev);
}

int reign__tasks_worker_register(reign_tasks_worker *w, reign_group_cb *cb, void *userdata,
                                 reign_tasks_worker **ret)
{
    char payload[REIGN__TASKS_LIMITS_MAX];
    size_t n = reign__tasks_limits_build(payload, w->concurrency, w->prefetch);
    reign_group_options go = {.size = sizeof(go),
                              .id = w->base.id,
                              .data = payload,
                              .data_len = n,
                              .cb = cb,
                              .userdata = userdata};
    int rc = reign_group_register(&w->group, w->base.client, w->base.gname, &go);
    if (rc < 0) {
        w->ops->destroy(w);
        return rc;
    }
    *ret = w;
    return 0;
}

int reign__tasks_master_join(reign_tasks_master *m, reign_election_cb *cb, void *userdata,
                             reign_tasks_master **ret)
{
    reign_election_options eo = {
        .size = sizeof(eo), .id = m->base.id, .cb = cb, .userdata = userdata};
    int rc = reign_election_join(&m->election, m->base.client, m->base.gname, &eo);
    if (rc < 0) {
        m->ops->destroy(m);
        return rc;
    }
    *ret = m;
    return 0;
}

void reign__tasks_worker_detach(reign_tasks_worker *w)
{
    w->group = reign_group_free(w->group);
    reign__client_detach(w->base.client, &w->base.recipe);
}

void reign__tasks_master_detach(reign_tasks_master *m)
{
    m->election = reign_election_free(m->election);
    reign__client_detach(m->base.client, &m->base.recipe);
}
