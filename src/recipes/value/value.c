/*
 * value.c - watched values (<reign/value.h>): the checks every request passes before it goes
 * to the backend of its client (value_zk.c, value_sql.c), and a watch's public side; the part
 * of a watch that decides what to report is in value_watch.c, below the backends.
 */
#include <stdio.h>
#include <string.h>

#include "value_impl.h"

/* ---- keys --------------------------------------------------------------- */

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
    if (reign__life_request_free(&w->life))
        w->ops->stop(w); /* no backend callback from now on */
    if (reign__life_busy(&w->life))
        return NULL; /* inside one of our callbacks: freed when it returns */
    w->ops->destroy(w);
    return NULL;
}
