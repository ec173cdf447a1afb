/*
 * it_value.c - watched values on a real ZooKeeper: what ZooKeeper's layout makes of them.
 *
 *     it_value tree | expiry
 *
 *   tree    a value with a value below it is emptied by delete (DELETED for its watcher) while
 *           the one below stays, and holds a value again when set; the parent of a key holds
 *           no value just because the key does.  Data written by another tool is refused by
 *           get (REIGN_EFOREIGN) and reported by the watch as an ERROR; written by reign
 *           again, it is a value again.
 *   expiry  the watcher's session expires and the value changes meanwhile: the watch re-reads
 *           by itself and reports the change.
 *
 * What every store promises of values (set, compare-and-set, delete, their refusals, watches,
 * payloads, bursts, races) is tests/contract/contract_value.c, run on ZooKeeper too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expire.h"
#include "harness.h"

static void tree(const char *base)
{
    h_cand *c = h_cand_new("writer", NULL, NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s/root_table", base);
    h_vwatch x = {0};
    h_vwatch_start(&x, o, key);
    h_vwatch_expect(&x, 1, REIGN_VALUE_READY, NULL);
    H_OK(h_value_set(c, key, "ts4:2200", REIGN_VALUE_ABSENT).err);
    h_vwatch_expect(&x, 2, REIGN_VALUE_CREATED, "ts4:2200");

    /* a value with a value below it: deleting empties it, the one below stays */
    char below[300];
    snprintf(below, sizeof(below), "%s/child", key);
    H_OK(h_value_set(c, below, "kept", REIGN_VALUE_ANY).err);
    H_OK(h_value_delete(c, key, REIGN_VALUE_ANY).err);
    h_vwatch_expect(&x, 3, REIGN_VALUE_DELETED, NULL);
    H_RC(h_value_get(c, key).err, REIGN_ENOENT);
    h_vans r = h_value_get(c, below);
    H_OK(r.err);
    H_CHECK(!strcmp(r.data, "kept"));
    /* and it can hold a value again, created from empty */
    H_OK(h_value_set(c, key, "ts5:2200", REIGN_VALUE_ABSENT).err);
    h_vwatch_expect(&x, 4, REIGN_VALUE_CREATED, "ts5:2200");
    /* the parent of a key holds no value just because the key does */
    H_RC(h_value_get(c, base).err, REIGN_ENOENT);

    /* data written by another tool */
    zhandle_t *zh = h_raw_connect(h_hosts(), NULL);
    char path[512];
    snprintf(path, sizeof(path), "/reign/value/%s", key);
    H_CHECK(zoo_set(zh, path, "10.0.0.9:2200", 13, -1) == ZOK);
    h_raw_close(zh);
    h_vwatch_expect(&x, 5, REIGN_VALUE_DELETED, NULL);
    H_CHECK(h_vwatch_expect(&x, 6, REIGN_VALUE_ERROR, NULL)->error == REIGN_EFOREIGN);
    H_RC(h_value_get(c, key).err, REIGN_EFOREIGN);
    /* ours again */
    H_OK(h_value_set(c, key, "ts6:2200", REIGN_VALUE_ANY).err);
    h_vwatch_expect(&x, 7, REIGN_VALUE_CREATED, "ts6:2200");
    reign_value cur;
    H_OK(reign_value_watch_get(x.w, &cur));
    H_CHECK(cur.data_len == 8 && !memcmp(cur.data, "ts6:2200", 8));
    h_vwatch_free(&x);
}

static void expiry(const char *base)
{
    h_cand *c = h_cand_new("writer", NULL, NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    char key[256];
    snprintf(key, sizeof(key), "%s/root_table", base);
    H_OK(h_value_set(c, key, "before", REIGN_VALUE_ANY).err);
    h_vwatch x = {0};
    h_vwatch_start(&x, o, key);
    h_vwatch_expect(&x, 1, REIGN_VALUE_READY, "before");
    h_expire_session(o->client);
    H_OK(h_value_set(c, key, "after", REIGN_VALUE_ANY).err);
    h_vwatch_wait_last(&x, "after");
    H_CHECK(x.ev[x.n - 1].type == REIGN_VALUE_CHANGED);
    /* and it still watches in its new session (the count taken before the delete: the
     * watcher's DELETED may come in before the writer's answer does) */
    size_t n = x.n;
    H_OK(h_value_delete(c, key, REIGN_VALUE_ANY).err);
    h_vwatch_expect(&x, n + 1, REIGN_VALUE_DELETED, NULL);
    h_vwatch_free(&x);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    char name[64];
    snprintf(name, sizeof(name), "it_value_%s", scenario);
    h_init(name);
    char base[128];
    h_unique_name(base, sizeof(base), "it-value");
    if (!strcmp(scenario, "tree"))
        tree(base);
    else if (!strcmp(scenario, "expiry"))
        expiry(base);
    else {
        fprintf(stderr, "usage: it_value tree|expiry\n");
        return 2;
    }
    return h_finish();
}
