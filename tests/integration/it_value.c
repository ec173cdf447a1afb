/*
 * it_value.c - watched values on a real ZooKeeper.
 *
 *     it_value ops | burst | expiry
 *
 *   ops     a watch on a key that does not exist yet reports READY with no value; then set
 *           (CREATED), compare-and-set with the right version (CHANGED) and with a wrong one
 *           (refused with REIGN_EBADVERSION, nothing written, no event), set-if-absent on an
 *           existing value (REIGN_EEXIST), delete with a wrong version (refused), delete
 *           (DELETED); get then says REIGN_ENOENT.  A value with values below it is emptied
 *           by delete (DELETED for its watcher) while the one below stays.  Data written by
 *           another tool is refused by get (REIGN_EFOREIGN) and reported by the watch as an
 *           ERROR.
 *   burst   100 writes without waiting: the watcher's last event is the last write.
 *   expiry  the watcher's session expires and the value changes meanwhile: the watch re-reads
 *           by itself and reports the change.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expire.h"
#include "harness.h"

#define MAX_EV 1024

typedef struct vev {
    reign_value_event_type type;
    int has_value;
    char data[64];
    int64_t version;
    int error;
} vev;

typedef struct watcher {
    reign_value_watch *w;
    vev ev[MAX_EV];
    size_t n;
} watcher;

static void on_watch(reign_value_watch *w, const reign_value_event *ev, void *ud)
{
    watcher *x = ud;
    H_CHECK(x->n < MAX_EV);
    vev *e = &x->ev[x->n++];
    memset(e, 0, sizeof(*e));
    e->type = ev->type;
    e->error = ev->error;
    if (ev->value) {
        e->has_value = 1;
        snprintf(e->data, sizeof(e->data), "%.*s", (int)ev->value->data_len,
                 (const char *)ev->value->data);
        e->version = ev->value->version;
    }
    h_log("watch %s: %s %s", reign_value_watch_key(w), reign_value_event_name(ev->type),
          e->has_value ? e->data : "-");
}

static void watch_start(watcher *x, h_cand *c, const char *key)
{
    memset(x, 0, sizeof(*x));
    H_OK(reign_value_watch_start(&x->w, c->client, key, on_watch, x));
}

typedef struct waitev {
    watcher *x;
    size_t n;
} waitev;

static int pred_events(void *arg)
{
    waitev *a = arg;
    return a->x->n >= a->n;
}

/* Waits for event number n (1-based) and returns it. */
static const vev *nth(watcher *x, size_t n)
{
    waitev a = {x, n};
    H_WAIT(pred_events, &a, "a watch event");
    return &x->ev[n - 1];
}

/* ---- synchronous helpers over the asynchronous calls ------------------------------------- */

typedef struct result {
    int done;
    int err;
    int has_value;
    char data[256];
    int64_t version;
} result;

static void on_result(reign_client *c, int err, const reign_value *v, void *ud)
{
    result *r = ud;
    r->done = 1;
    r->err = err;
    if (v) {
        r->has_value = 1;
        snprintf(r->data, sizeof(r->data), "%.*s", (int)v->data_len, (const char *)v->data);
        r->version = v->version;
    }
}

static int pred_done(void *arg)
{
    return ((result *)arg)->done;
}

static result do_get(h_cand *c, const char *key)
{
    result r = {0};
    H_OK(reign_value_get(c->client, key, on_result, &r));
    H_WAIT(pred_done, &r, "get");
    return r;
}

static result do_set(h_cand *c, const char *key, const char *data, int64_t version)
{
    result r = {0};
    H_OK(reign_value_set(c->client, key, data, strlen(data), version, on_result, &r));
    H_WAIT(pred_done, &r, "set");
    return r;
}

static result do_del(h_cand *c, const char *key, int64_t version)
{
    result r = {0};
    H_OK(reign_value_delete(c->client, key, version, on_result, &r));
    H_WAIT(pred_done, &r, "delete");
    return r;
}

static void ops(const char *base)
{
    h_cand *c = h_cand_new("writer", NULL, NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s/root_table", base);
    static watcher x;
    watch_start(&x, o, key);
    const vev *e = nth(&x, 1);
    H_CHECK(e->type == REIGN_VALUE_READY && !e->has_value);
    H_RC(do_get(c, key).err, REIGN_ENOENT);

    result r = do_set(c, key, "ts1:2200", REIGN_VALUE_ANY);
    H_OK(r.err);
    int64_t v0 = r.version;
    e = nth(&x, 2);
    H_CHECK(e->type == REIGN_VALUE_CREATED && !strcmp(e->data, "ts1:2200") && e->version == v0);

    r = do_set(c, key, "ts2:2200", v0);
    H_OK(r.err);
    H_CHECK(r.version > v0);
    int64_t v1 = r.version;
    e = nth(&x, 3);
    H_CHECK(e->type == REIGN_VALUE_CHANGED && !strcmp(e->data, "ts2:2200") && e->version == v1);

    /* compare-and-set on a stale version: refused, nothing written */
    H_RC(do_set(c, key, "ts3:2200", v0).err, REIGN_EBADVERSION);
    H_RC(do_set(c, key, "ts3:2200", REIGN_VALUE_ABSENT).err, REIGN_EEXIST);
    r = do_get(c, key);
    H_OK(r.err);
    H_CHECK(!strcmp(r.data, "ts2:2200") && r.version == v1);
    H_RC(do_del(c, key, v0).err, REIGN_EBADVERSION);
    H_OK(do_get(c, key).err);

    H_OK(do_del(c, key, v1).err);
    e = nth(&x, 4);
    H_CHECK(e->type == REIGN_VALUE_DELETED && !e->has_value);
    H_RC(do_get(c, key).err, REIGN_ENOENT);
    H_RC(do_del(c, key, REIGN_VALUE_ANY).err, REIGN_ENOENT);
    H_RC(do_set(c, key, "x", v1).err, REIGN_ENOENT);

    /* set-if-absent creates; created again after a delete it is CREATED again */
    r = do_set(c, key, "ts4:2200", REIGN_VALUE_ABSENT);
    H_OK(r.err);
    e = nth(&x, 5);
    H_CHECK(e->type == REIGN_VALUE_CREATED && !strcmp(e->data, "ts4:2200"));
    H_CHECK(x.n == 5); /* nothing for the refused writes */

    /* a value with a value below it: deleting empties it, the one below stays */
    char below[300];
    snprintf(below, sizeof(below), "%s/child", key);
    H_OK(do_set(c, below, "kept", REIGN_VALUE_ANY).err);
    H_OK(do_del(c, key, REIGN_VALUE_ANY).err);
    e = nth(&x, 6);
    H_CHECK(e->type == REIGN_VALUE_DELETED);
    H_RC(do_get(c, key).err, REIGN_ENOENT);
    r = do_get(c, below);
    H_OK(r.err);
    H_CHECK(!strcmp(r.data, "kept"));
    /* and it can hold a value again, created from empty */
    H_OK(do_set(c, key, "ts5:2200", REIGN_VALUE_ABSENT).err);
    e = nth(&x, 7);
    H_CHECK(e->type == REIGN_VALUE_CREATED && !strcmp(e->data, "ts5:2200"));
    /* the parent of a key holds no value just because the key does */
    H_RC(do_get(c, base).err, REIGN_ENOENT);

    /* data written by another tool */
    zhandle_t *zh = h_raw_connect(h_hosts(), NULL);
    char path[512];
    snprintf(path, sizeof(path), "/reign/value/%s", key);
    H_CHECK(zoo_set(zh, path, "10.0.0.9:2200", 13, -1) == ZOK);
    h_raw_close(zh);
    e = nth(&x, 8);
    H_CHECK(e->type == REIGN_VALUE_DELETED);
    e = nth(&x, 9);
    H_CHECK(e->type == REIGN_VALUE_ERROR && e->error == REIGN_EFOREIGN);
    H_RC(do_get(c, key).err, REIGN_EFOREIGN);
    /* ours again */
    H_OK(do_set(c, key, "ts6:2200", REIGN_VALUE_ANY).err);
    e = nth(&x, 10);
    H_CHECK(e->type == REIGN_VALUE_CREATED && !strcmp(e->data, "ts6:2200"));
    reign_value cur;
    H_OK(reign_value_watch_get(x.w, &cur));
    H_CHECK(cur.data_len == 8 && !memcmp(cur.data, "ts6:2200", 8));
    x.w = reign_value_watch_free(x.w);
}

typedef struct settled {
    watcher *x;
    const char *data;
} settled;

static int pred_last_is(void *arg)
{
    settled *s = arg;
    return s->x->n && s->x->ev[s->x->n - 1].has_value &&
           !strcmp(s->x->ev[s->x->n - 1].data, s->data);
}

static void burst(const char *base)
{
    h_cand *c = h_cand_new("writer", NULL, NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s/safemode", base);
    static watcher x;
    watch_start(&x, o, key);
    nth(&x, 1);
    static result rs[100];
    char data[32];
    for (int i = 0; i < 100; i++) {
        snprintf(data, sizeof(data), "write-%d", i);
        H_OK(reign_value_set(c->client, key, data, strlen(data), REIGN_VALUE_ANY, on_result,
                             &rs[i]));
    }
    H_WAIT(pred_done, &rs[99], "the last write");
    settled s = {&x, "write-99"};
    H_WAIT(pred_last_is, &s, "the watcher to report the last write");
    /* in order: versions only grow, first CREATED then CHANGED */
    H_CHECK(x.ev[1].type == REIGN_VALUE_CREATED);
    for (size_t i = 2; i < x.n; i++)
        H_CHECK(x.ev[i].type == REIGN_VALUE_CHANGED && x.ev[i].version > x.ev[i - 1].version);
    h_log("100 writes reported in %zu events", x.n - 1);
    x.w = reign_value_watch_free(x.w);
}

static void expiry(const char *base)
{
    h_cand *c = h_cand_new("writer", NULL, NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s/root_table", base);
    H_OK(do_set(c, key, "before", REIGN_VALUE_ANY).err);
    static watcher x;
    watch_start(&x, o, key);
    const vev *e = nth(&x, 1);
    H_CHECK(e->type == REIGN_VALUE_READY && !strcmp(e->data, "before"));
    h_expire_session(o->client);
    H_OK(do_set(c, key, "after", REIGN_VALUE_ANY).err);
    settled s = {&x, "after"};
    H_WAIT(pred_last_is, &s, "the watcher to report the change after its expiry");
    H_CHECK(x.ev[x.n - 1].type == REIGN_VALUE_CHANGED);
    /* and it still watches in its new session (the count taken before the delete: the
     * watcher's DELETED may come in before the writer's answer does) */
    size_t n = x.n;
    H_OK(do_del(c, key, REIGN_VALUE_ANY).err);
    e = nth(&x, n + 1);
    H_CHECK(e->type == REIGN_VALUE_DELETED);
    x.w = reign_value_watch_free(x.w);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    char name[64];
    snprintf(name, sizeof(name), "it_value_%s", scenario);
    h_init(name);
    char base[128];
    h_unique_name(base, sizeof(base), "it-value");
    if (!strcmp(scenario, "ops"))
        ops(base);
    else if (!strcmp(scenario, "burst"))
        burst(base);
    else if (!strcmp(scenario, "expiry"))
        expiry(base);
    else {
        fprintf(stderr, "usage: it_value ops|burst|expiry\n");
        return 2;
    }
    return h_finish();
}
