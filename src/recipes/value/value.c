/*
 * value.c - watched values (<reign/value.h>): the checks every request passes before it goes
 * to the backend of its client (value_zk.c, value_sql.c), and the part of a watch that decides
 * what to report (value_impl.h).
 */
#include <stdio.h>
#include <string.h>

#include "value_impl.h"

/* ---- keys --------------------------------------------------------------- */

bool reign__segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > REIGN__SEGMENT_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

int reign_value_key_check(const char *key)
{
    if (!key)
        return REIGN_ENAME;
    size_t len = strlen(key);
    if (len == 0 || len > REIGN_KEY_MAX)
        return REIGN_ENAME;
    size_t segments = 0;
    for (const char *p = key;;) {
        size_t n = strcspn(p, "/");
        /* an empty segment: leading, trailing or doubled '/' */
        if (!reign__segment_ok(p, n) || ++segments > REIGN__KEY_SEGMENTS)
            return REIGN_ENAME;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

char *reign__value_path(const char *key)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s", REIGN__VALUE_DIR, key);
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

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

/* ---- one-shot requests --------------------------------------------------- */

static int request(reign_client *client, const reign__value_req *r)
{
    if (!client)
        return REIGN_EINVAL;
    int rc = reign_value_key_check(r->key);
    if (rc < 0)
        return rc;
    /* Versions are ZooKeeper's: 32 bits, whatever the store. */
    if (r->version < REIGN_VALUE_ABSENT || r->version > INT32_MAX ||
        (r->op == REIGN__VALUE_DELETE && r->version == REIGN_VALUE_ABSENT))
        return REIGN_EINVAL;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    if (reign__client_zk(client))
        return reign__value_zk_request(client, r);
    if (reign__client_sql(client))
        return reign__value_sql_request(client, r);
    return REIGN_ENOTSUP;
}

int reign_value_get(reign_client *client, const char *key, reign_value_cb *cb, void *userdata)
{
    reign__value_req r = {.op = REIGN__VALUE_GET,
                          .key = key,
                          .version = REIGN_VALUE_ANY,
                          .cb = cb,
                          .userdata = userdata};
    return request(client, &r);
}

int reign_value_set(reign_client *client, const char *key, const void *data, size_t len,
                    int64_t version, reign_value_cb *cb, void *userdata)
{
    if (len > REIGN_VALUE_DATA_MAX)
        return REIGN_E2BIG;
    if (len && !data)
        return REIGN_EINVAL;
    reign__value_req r = {.op = REIGN__VALUE_SET,
                          .key = key,
                          .data = data,
                          .len = len,
                          .version = version,
                          .cb = cb,
                          .userdata = userdata};
    return request(client, &r);
}

int reign_value_delete(reign_client *client, const char *key, int64_t version, reign_value_cb *cb,
                       void *userdata)
{
    reign__value_req r = {
        .op = REIGN__VALUE_DELETE, .key = key, .version = version, .cb = cb, .userdata = userdata};
    return request(client, &r);
}

/* ---- watching ------------------------------------------------------------ */

const char *reign_value_event_name(reign_value_event_type t)
{
    switch (t) {
    case REIGN_VALUE_READY:
        return "ready";
    case REIGN_VALUE_CREATED:
        return "created";
    case REIGN_VALUE_CHANGED:
        return "changed";
    case REIGN_VALUE_DELETED:
        return "deleted";
    case REIGN_VALUE_ERROR:
        return "error";
    }
    return "unknown";
}

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
    if (--w->busy == 0 && w->free_requested)
        reign_value_watch_free(w);
}

static void emit(reign_value_watch *w, reign_value_event_type type, int err, const char *msg)
{
    if (w->free_requested || !w->cb)
        return;
    reign_value v;
    reign_value_event ev = {.type = type, .at_ns = reign__now_ns(), .error = err, .message = msg};
    if (w->present && type != REIGN_VALUE_DELETED && type != REIGN_VALUE_ERROR) {
        reign__value_fill(&v, w->key, &w->stat, w->data ? w->data : "", w->data_len);
        ev.value = &v;
    }
    /* The backend holds the watch (REIGN__VALUE_ENTER) around every read it applies, so a free
     * from this callback waits for its end. */
    w->busy++;
    w->cb(w, &ev, w->userdata);
    w->busy--;
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

int reign_value_watch_start(reign_value_watch **ret, reign_client *client, const char *key,
                            reign_value_watch_cb *cb, void *userdata)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    int rc = reign_value_key_check(key);
    if (rc < 0)
        return rc;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    if (reign__client_zk(client))
        return reign__value_zk_watch(ret, client, key, cb, userdata);
    if (reign__client_sql(client))
        return reign__value_sql_watch(ret, client, key, cb, userdata);
    return REIGN_ENOTSUP;
}

int reign_value_watch_get(const reign_value_watch *w, reign_value *out)
{
    if (!w || !out)
        return REIGN_EINVAL;
    if (!w->present)
        return REIGN_ENOENT;
    reign__value_fill(out, w->key, &w->stat, w->data ? w->data : "", w->data_len);
    return 0;
}

const char *reign_value_watch_key(const reign_value_watch *w)
{
    return w->key;
}

void *reign_value_watch_userdata(const reign_value_watch *w)
{
    return w->userdata;
}

reign_value_watch *reign_value_watch_free(reign_value_watch *w)
{
    if (!w)
        return NULL;
    w->free_requested = true;
    w->ops->stop(w); /* no backend callback from now on */
    if (w->busy > 0)
        return NULL; /* inside one of our callbacks: freed when it returns */
    w->ops->destroy(w);
    return NULL;
}
