/*
 * zk_thread.c - the ZooKeeper backend's completion side (zk_internal.h).
 *
 * The C client (libzookeeper_mt) calls the functions here on its completion
 * thread.  They touch only the operation they were handed (which the C
 * client owns until it calls back), a watch record allocated for that one
 * event, or the handle's state ring, then push onto the queue under `mu` and
 * write the eventfd; reign__zk_dispatch() (zk.c) drains it on the loop
 * thread.  Ordering: ZooKeeper delivers, per session, results and watch
 * events in the order the server produced them; the completion thread
 * preserves it and the queue is FIFO.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zk_internal.h"

/* The loop is woken only when the queue was empty: reign__zk_dispatch() drains it to the end,
 * so an item queued behind others is taken in the same drain (a system call per completion
 * cost more than the rest of the hand-off). */
void reign__zki_push(reign__zk *zk, item *it)
{
    it->next = NULL;
    pthread_mutex_lock(&zk->mu);
    bool was_empty = !zk->q_head;
    if (zk->q_tail)
        zk->q_tail->next = it;
    else
        zk->q_head = it;
    zk->q_tail = it;
    pthread_mutex_unlock(&zk->mu);
    if (was_empty) {
        uint64_t one = 1;
        ssize_t w = write(zk->cfg.wake_fd, &one, sizeof(one));
        (void)w; /* EAGAIN: the counter is already non-zero, the loop will wake */
    }
}

item *reign__zki_pop(reign__zk *zk)
{
    pthread_mutex_lock(&zk->mu);
    item *it = zk->q_head;
    if (it) {
        zk->q_head = it->next;
        if (!zk->q_head)
            zk->q_tail = NULL;
    }
    pthread_mutex_unlock(&zk->mu);
    return it;
}

static const char *const op_names[] = {
    [OP_CREATE] = "create",     [OP_DELETE] = "delete", [OP_EXISTS] = "exists", [OP_GET] = "get",
    [OP_CHILDREN] = "children", [OP_SET] = "set",       [OP_MULTI] = "multi",   [OP_SYNC] = "sync",
};

const char *reign__zki_op_name(const zk_op *op)
{
    return (size_t)op->type < sizeof(op_names) / sizeof(op_names[0]) && op_names[op->type]
               ? op_names[op->type]
               : "op";
}

static void done(const void *data, int rc)
{
    zk_op *op = (zk_op *)data;
    reign__zk *zk = op->zk;
    pthread_mutex_lock(&zk->mu);
    if (--zk->out <= 0)
        pthread_cond_broadcast(&zk->out_cv);
    pthread_mutex_unlock(&zk->mu);
    op->zrc = rc;
    reign_trace("zk.answer", "%s %s %d", reign__zki_op_name(op), op->path, rc);
    reign__zki_push(op->zk, &op->it);
}

void reign__zki_on_void(int rc, const void *data)
{
    done(data, rc);
}

void reign__zki_on_stat(int rc, const struct Stat *stat, const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK && stat) {
        op->stat = *stat;
        op->has_stat = true;
    }
    done(data, rc);
}

void reign__zki_on_data(int rc, const char *value, int len, const struct Stat *stat,
                        const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        op->value = reign__memdup(value ? value : "", len > 0 ? (size_t)len : 0);
        op->value_len = len > 0 ? (size_t)len : 0;
        if (!op->value)
            op->oom = true;
    }
    done(data, rc);
}

void reign__zki_on_string_stat(int rc, const char *value, const struct Stat *stat, const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        if (value) {
            op->value = reign__strdup(value);
            op->value_len = strlen(value);
            if (!op->value)
                op->oom = true;
        }
    }
    done(data, rc);
}

void reign__zki_on_string(int rc, const char *value, const void *data)
{
    reign__zki_on_string_stat(rc, value, NULL, data);
}

void reign__zki_on_children(int rc, const struct String_vector *sv, const struct Stat *stat,
                            const void *data)
{
    zk_op *op = (zk_op *)data;
    if (rc == ZOK) {
        if (stat) {
            op->stat = *stat;
            op->has_stat = true;
        }
        size_t n = sv ? (size_t)sv->count : 0, bytes = 0;
        for (size_t i = 0; i < n; i++)
            bytes += strlen(sv->data[i]) + 1;
        /* One block: the pointer array, then the strings. */
        char **v = reign__malloc(n * sizeof(char *) + bytes);
        if (!v) {
            op->oom = true;
        } else {
            char *p = (char *)(v + n);
            for (size_t i = 0; i < n; i++) {
                size_t l = strlen(sv->data[i]) + 1;
                memcpy(p, sv->data[i], l);
                v[i] = p;
                p += l;
            }
            op->children = v;
            op->n_children = n;
        }
    }
    done(data, rc);
}

void reign__zki_on_node_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    /* The C client also hands session events to every node watcher; the
     * global watcher deals with those, and they do not consume the watch. */
    if (type == ZOO_SESSION_EVENT || type == ZOO_NOTWATCHING_EVENT)
        return;
    zk_watch *w = ctx;
    w->ev_type = type;
    reign_trace("zk.event", "%d %s", type, path ? path : "");
    reign__zki_push(w->zk, &w->it);
}

void reign__zki_on_session_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    if (type != ZOO_SESSION_EVENT)
        return;
    handle_ctx *h = ctx;
    reign__zk *zk = h->zk;
    bool need_push = false;
    pthread_mutex_lock(&zk->mu);
    if (h->count == STATE_RING) { /* keep the newest states; the oldest are history */
        h->head = (h->head + 1) % STATE_RING;
        h->count--;
    }
    h->ring[(h->head + h->count++) % STATE_RING] = state;
    if (!h->queued) {
        h->queued = true;
        need_push = true;
    }
    pthread_mutex_unlock(&zk->mu);
    if (need_push)
        reign__zki_push(zk, &h->it);
}

void reign__zki_log_cb(const char *msg)
{
    /* The C client's own messages: useful only when debugging. */
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
        n--;
    reign__log(NULL, REIGN_LOG_DEBUG, "zookeeper: %.*s", (int)n, msg);
}
