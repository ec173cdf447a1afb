/*
 * tasks_api.c - the task queue's master and worker, public functions (<reign/tasks.h>): each
 * checks its arguments, then hands the request to the client's store (tasks_master_zk.c,
 * tasks_master_sql.c, tasks_worker_zk.c, tasks_worker_sql.c), or to the object's own through
 * the head it starts with (tasks_internal.h, tasks_head.c), whose lifecycle makes a free asked
 * in a callback wait for it to return.  Above the backends: they never call here.
 */
#include <string.h>

#include "tasks_internal.h"

int reign_tasks_master_start(reign_tasks_master **ret, reign_client *client, const char *queue,
                             const reign_tasks_master_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_tasks_master_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = reign__tasks_queue_check(queue);
    if (rc < 0)
        return rc;
    if ((o.strategy != REIGN_TASKS_LEAST_LOADED && o.strategy != REIGN_TASKS_RANDOM) ||
        o.retention_ms < 0)
        return REIGN_EINVAL;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    return reign__client_zk(client) ? reign__tasks_master_zk(ret, client, queue, &o)
                                    : reign__tasks_master_sql(ret, client, queue, &o);
}

int reign_tasks_master_is_active(const reign_tasks_master *m)
{
    return m && m->ops->is_active(m);
}

/* The memory goes at once, or when the last callback of ours on the stack returns
 * (reign__tasks_master_leave()); the application is never called back after this. */
reign_tasks_master *reign_tasks_master_free(reign_tasks_master *m)
{
    if (m && reign__life_request_free(&m->base.life) && !reign__life_busy(&m->base.life))
        m->ops->destroy(m);
    return NULL;
}

int reign_tasks_worker_start(reign_tasks_worker **ret, reign_client *client, const char *queue,
                             const reign_tasks_worker_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_tasks_worker_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = reign__tasks_queue_check(queue);
    if (rc == 0)
        rc = reign__tasks_worker_check(o.id);
    if (rc < 0)
        return rc;
    if (o.concurrency < 0 || o.concurrency > 10000 || o.prefetch < 0 || o.prefetch > 40000)
        return REIGN_EINVAL;
    o.concurrency = o.concurrency ? o.concurrency : 1;
    o.prefetch = o.prefetch ? o.prefetch : 4 * o.concurrency;
    if (o.prefetch < o.concurrency)
        return REIGN_EINVAL;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    return reign__client_zk(client) ? reign__tasks_worker_zk(ret, client, queue, &o)
                                    : reign__tasks_worker_sql(ret, client, queue, &o);
}

int reign_tasks_worker_done(reign_tasks_worker *w, const char *task, int exit_code, int signal,
                            const void *output, size_t output_len)
{
    if (!w || !task || (output_len && !output) || exit_code < -1 || exit_code > 255 || signal < 0 ||
        signal > 255)
        return REIGN_EINVAL;
    return w->ops->done(w, task, exit_code, signal, output, output_len);
}

size_t reign_tasks_worker_running(const reign_tasks_worker *w)
{
    return w ? w->ops->running(w) : 0;
}

int64_t reign_tasks_worker_valid_until_ns(const reign_tasks_worker *w)
{
    return w ? w->ops->valid_until(w) : 0;
}

/* As reign_tasks_master_free(). */
reign_tasks_worker *reign_tasks_worker_free(reign_tasks_worker *w)
{
    if (w && reign__life_request_free(&w->base.life) && !reign__life_busy(&w->base.life))
        w->ops->destroy(w);
    return NULL;
}
