/*
 * value_watch.c - what the value backends (value_zk.c, value_sql.c) share, below them and
 * value.c: a value as the API gives it, and the part of a watch that decides what to report
 * from each read (value_impl.h).  Calls no backend and nothing of value.c, so that no circle
 * of calls joins the three.
 */
#include <string.h>

#include "value_impl.h"

void reign__value_fill(reign_value *v, const char *key, const reign__value_stat *st,
                       const void *data, size_t len)
{
    memset(v, 0, sizeof(*v));
    v->key = key;
    v->data = data;
    v->data_len = data ? len : 0;
    v->version = st->version;
    v->created_ms = st->ctime_ms;
    v->modified_ms = st->mtime_ms;
    v->zxid = (uint64_t)st->mzxid;
}

/* ---- watches ----------------------------------------------------------------------------- */

int reign__value_watch_init(reign_value_watch *w, const reign__value_watch_ops *ops,
                            reign_client *client, const char *key, reign_value_watch_cb *cb,
                            void *userdata)
{
    w->ops = ops;
    w->client = client;
    w->log = reign__client_log(client);
    w->cb = cb;
    w->userdata = userdata;
    w->key = reign__strdup(key);
    return w->key ? 0 : REIGN_ENOMEM;
}

void reign__value_watch_clear(reign_value_watch *w)
{
    reign__free(w->data);
    reign__free(w->key);
    w->data = NULL;
    w->key = NULL;
}

void reign__value_watch_leave(reign_value_watch *w)
{
    if (reign__life_leave(&w->life))
        w->ops->destroy(w); /* freed meanwhile: stopped then, the memory goes now */
}

static void emit(reign_value_watch *w, reign_value_event_type type, int err, const char *msg)
{
    if (!reign__life_live(&w->life) || !w->cb)
        return;
    reign_value v;
    reign_value_event ev = {.type = type, .at_ns = reign__now_ns(), .error = err, .message = msg};
    if (w->present && type != REIGN_VALUE_DELETED && type != REIGN_VALUE_ERROR) {
        reign__value_fill(&v, w->key, &w->stat, w->data ? w->data : "", w->data_len);
        ev.value = &v;
    }
    /* The backend holds the watch (reign__life_enter) around every read it applies, so a free
     * from this callback waits for its end. */
    reign__life_enter(&w->life);
    w->cb(w, &ev, w->userdata);
    (void)reign__life_leave(&w->life);
}

void reign__value_watch_error(reign_value_watch *w, int err, const char *msg)
{
    emit(w, REIGN_VALUE_ERROR, err, msg);
}

void reign__value_watch_apply(reign_value_watch *w, bool present, const reign__value_stat *st,
                              const void *data, size_t len)
{
    bool was = w->present;
    bool same_node = was && present && w->stat.czxid == st->czxid;
    if (was && present && same_node && w->stat.mzxid == st->mzxid && w->ready_sent)
        return; /* nothing new (a read after a reconnect, say) */
    if (!was && !present && w->ready_sent)
        return;
    void *copy = NULL;
    if (present && len && !(copy = reign__memdup(data, len))) {
        emit(w, REIGN_VALUE_ERROR, REIGN_ENOMEM, "out of memory reading the value");
        return;
    }
    if (was && w->ready_sent && !same_node) {
        /* gone, or replaced by a new one between two reads */
        w->present = false;
        emit(w, REIGN_VALUE_DELETED, 0, NULL);
    }
    reign__free(w->data);
    w->data = copy;
    w->data_len = present ? len : 0;
    w->present = present;
    if (present)
        w->stat = *st;
    if (!w->ready_sent) {
        w->ready_sent = true;
        emit(w, REIGN_VALUE_READY, 0, NULL);
    } else if (present) {
        emit(w, same_node ? REIGN_VALUE_CHANGED : REIGN_VALUE_CREATED, 0, NULL);
    }
}
