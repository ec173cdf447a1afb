/*
 * contract_value.c - what <reign/value.h> promises on every store.
 *
 * One program, run once per store (contract_value_zk, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake).  Each case works under a key of its own:
 *
 *   ops       a watch on a key that does not exist reports READY with no value; get says
 *             REIGN_ENOENT; set creates it (CREATED, the version the answer carried), a
 *             compare-and-set on that version changes it (CHANGED, a greater version); a
 *             stale version (REIGN_EBADVERSION), set-if-absent on it (REIGN_EEXIST) and a
 *             delete with a stale version (REIGN_EBADVERSION) are refused, write nothing and
 *             report nothing; the watch's current value is the last write; delete (DELETED),
 *             then get, delete and compare-and-set say REIGN_ENOENT; set-if-absent makes it
 *             again (CREATED); a watch on another key heard nothing of all this
 *   payloads  no bytes, every byte value, and REIGN_VALUE_DATA_MAX bytes come back as written;
 *             one byte more is refused at once (REIGN_E2BIG); so are illegal keys
 *             (REIGN_ENAME) and versions (REIGN_EINVAL), and refused calls never call back
 *   burst     100 writes sent without waiting are answered in order with growing versions;
 *             the watcher reports CREATED then CHANGEs with growing versions, and the last
 *             write last (a store may fold writes: not every one need be reported)
 *   race      two clients race compare-and-sets, creates and deletes on one key, 20 rounds:
 *             each time exactly one wins, the other is refused, and the winner's write is
 *             what get reads
 *
 * The stores' own (ZooKeeper's hierarchy, data written by other tools, session expiry; the SQL
 * stores' data centers, zxids, foreign rows) stay in tests/integration/it_value.c and
 * tests/sql/test_sql_recipes.c.  Every wait is for an event, bounded by H_WAIT_MS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* ---- one-shot calls, waited for ----------------------------------------------------------- */

typedef struct result {
    int done;
    int err;
    size_t len;
    char *data; /* a copy of the payload (get) */
    int64_t version;
} result;

static void on_result(reign_client *c, int err, const reign_value *v, void *ud)
{
    result *r = ud;
    (void)c;
    r->done = 1;
    r->err = err;
    if (v) {
        r->version = v->version;
        r->len = v->data_len;
        r->data = malloc(v->data_len + 1);
        H_CHECK(r->data != NULL);
        if (v->data_len)
            memcpy(r->data, v->data, v->data_len);
        r->data[v->data_len] = '\0';
    }
}

static int pred_done(void *arg)
{
    return ((result *)arg)->done;
}

static result wait_result(result *r, const char *what)
{
    H_WAIT(pred_done, r, what);
    return *r;
}

static result do_get(h_cand *c, const char *key)
{
    result r = {0};
    H_OK(reign_value_get(c->client, key, on_result, &r));
    return wait_result(&r, "get");
}

static result do_setn(h_cand *c, const char *key, const void *data, size_t len, int64_t version)
{
    result r = {0};
    H_OK(reign_value_set(c->client, key, data, len, version, on_result, &r));
    return wait_result(&r, "set");
}

static result do_set(h_cand *c, const char *key, const char *text, int64_t version)
{
    return do_setn(c, key, text, strlen(text), version);
}

static result do_del(h_cand *c, const char *key, int64_t version)
{
    result r = {0};
    H_OK(reign_value_delete(c->client, key, version, on_result, &r));
    return wait_result(&r, "delete");
}

/* The answer's error, its copy freed. */
static int err_of(result r)
{
    free(r.data);
    return r.err;
}

static void key_in(char *out, size_t len, const char *base, const char *name)
{
    snprintf(out, len, "%s/%s", base, name);
}

/* ---- the cases ---------------------------------------------------------------------------- */

static void case_ops(const char *base)
{
    h_log("---- ops");
    h_cand *c = h_cand_new("writer", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", h_uri(NULL), NULL, NULL, NULL);
    char key[256], other[256];
    key_in(key, sizeof(key), base, "root_table");
    key_in(other, sizeof(other), base, "safemode");
    h_vwatch x = {0}, y = {0};
    h_vwatch_start(&x, o, key);
    h_vwatch_start(&y, o, other);
    h_vwatch_expect(&x, 1, REIGN_VALUE_READY, NULL);
    h_vwatch_expect(&y, 1, REIGN_VALUE_READY, NULL);
    reign_value cur;
    H_RC(reign_value_watch_get(x.w, &cur), REIGN_ENOENT);
    H_RC(err_of(do_get(c, key)), REIGN_ENOENT);

    result r = do_set(c, key, "ts1:2200", REIGN_VALUE_ANY);
    H_OK(err_of(r));
    int64_t v0 = r.version;
    H_CHECK(v0 >= 0);
    H_CHECK(h_vwatch_expect(&x, 2, REIGN_VALUE_CREATED, "ts1:2200")->version == v0);
    r = do_set(c, key, "ts2:2200", v0);
    H_OK(err_of(r));
    int64_t v1 = r.version;
    H_CHECK(v1 > v0);
    H_CHECK(h_vwatch_expect(&x, 3, REIGN_VALUE_CHANGED, "ts2:2200")->version == v1);

    /* Refused: nothing written, nothing reported. */
    H_RC(err_of(do_set(c, key, "stale", v0)), REIGN_EBADVERSION);
    H_RC(err_of(do_set(c, key, "again", REIGN_VALUE_ABSENT)), REIGN_EEXIST);
    H_RC(err_of(do_del(c, key, v0)), REIGN_EBADVERSION);
    r = do_get(c, key);
    H_CHECK(r.err == 0 && !strcmp(r.data, "ts2:2200") && r.version == v1);
    free(r.data);
    H_OK(reign_value_watch_get(x.w, &cur));
    H_CHECK(cur.version == v1 && cur.data_len == 8 && !memcmp(cur.data, "ts2:2200", 8));

    /* Deleted: DELETED, then it is gone for every call. */
    H_OK(err_of(do_del(c, key, v1)));
    h_vwatch_expect(&x, 4, REIGN_VALUE_DELETED, NULL);
    H_RC(err_of(do_get(c, key)), REIGN_ENOENT);
    H_RC(err_of(do_del(c, key, REIGN_VALUE_ANY)), REIGN_ENOENT);
    H_RC(err_of(do_set(c, key, "x", v1)), REIGN_ENOENT);

    /* Made again. */
    H_OK(err_of(do_set(c, key, "ts4:2200", REIGN_VALUE_ABSENT)));
    h_vwatch_expect(&x, 5, REIGN_VALUE_CREATED, "ts4:2200");
    H_CHECKF(x.n == 5, "%zu events, want 5: the refused writes reported something", x.n);

    /* The other key's watch heard nothing of it; now it hears its own. */
    H_CHECK(y.n == 1);
    H_OK(err_of(do_set(c, other, "on", REIGN_VALUE_ANY)));
    h_vwatch_expect(&y, 2, REIGN_VALUE_CREATED, "on");
    H_CHECK(x.n == 5);
    h_vwatch_free(&x);
    h_vwatch_free(&y);
    h_cand_close(o);
    h_cand_close(c);
}

static int calls_back;

static void counting_cb(reign_client *c, int err, const reign_value *v, void *ud)
{
    (void)c;
    (void)err;
    (void)v;
    (void)ud;
    calls_back++;
}

static void case_payloads(const char *base)
{
    h_log("---- payloads");
    h_cand *c = h_cand_new("writer", h_uri(NULL), NULL, NULL, NULL);
    char key[256];
    key_in(key, sizeof(key), base, "empty");
    H_OK(err_of(do_setn(c, key, NULL, 0, REIGN_VALUE_ANY)));
    result r = do_get(c, key);
    H_CHECK(r.err == 0 && r.len == 0);
    free(r.data);

    unsigned char bytes[512];
    for (size_t i = 0; i < sizeof(bytes); i++)
        bytes[i] = (unsigned char)(i * 7 + (i >> 8));
    bytes[0] = 0;
    key_in(key, sizeof(key), base, "bytes");
    H_OK(err_of(do_setn(c, key, bytes, sizeof(bytes), REIGN_VALUE_ANY)));
    r = do_get(c, key);
    H_CHECK(r.err == 0 && r.len == sizeof(bytes) && !memcmp(r.data, bytes, sizeof(bytes)));
    free(r.data);

    unsigned char *big = malloc(REIGN_VALUE_DATA_MAX + 1);
    H_CHECK(big != NULL);
    for (size_t i = 0; i <= REIGN_VALUE_DATA_MAX; i++)
        big[i] = (unsigned char)(i % 251);
    key_in(key, sizeof(key), base, "big");
    H_RC(reign_value_set(c->client, key, big, REIGN_VALUE_DATA_MAX + 1, REIGN_VALUE_ANY,
                         counting_cb, NULL),
         REIGN_E2BIG);
    H_OK(err_of(do_setn(c, key, big, REIGN_VALUE_DATA_MAX, REIGN_VALUE_ANY)));
    r = do_get(c, key);
    H_CHECK(r.err == 0 && r.len == REIGN_VALUE_DATA_MAX && !memcmp(r.data, big, r.len));
    free(r.data);
    free(big);

    static const char *const bad_keys[] = {"", "a//b", "/a", "a/", ".", "a/../b", "a b"};
    for (size_t i = 0; i < sizeof(bad_keys) / sizeof(bad_keys[0]); i++) {
        H_RC(reign_value_get(c->client, bad_keys[i], counting_cb, NULL), REIGN_ENAME);
        H_RC(reign_value_set(c->client, bad_keys[i], "x", 1, REIGN_VALUE_ANY, counting_cb, NULL),
             REIGN_ENAME);
        H_RC(reign_value_delete(c->client, bad_keys[i], REIGN_VALUE_ANY, counting_cb, NULL),
             REIGN_ENAME);
    }
    H_RC(reign_value_set(c->client, key, "x", 1, -3, counting_cb, NULL), REIGN_EINVAL);
    H_RC(reign_value_delete(c->client, key, REIGN_VALUE_ABSENT, counting_cb, NULL), REIGN_EINVAL);
    /* A get after them all is answered; none of the refused ones called back meanwhile. */
    H_OK(err_of(do_get(c, key)));
    H_CHECKF(calls_back == 0, "%d refused calls called back", calls_back);
    h_cand_close(c);
}

#define BURST 100

static void case_burst(const char *base)
{
    h_log("---- burst");
    h_cand *c = h_cand_new("writer", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", h_uri(NULL), NULL, NULL, NULL);
    char key[256];
    key_in(key, sizeof(key), base, "burst");
    h_vwatch x = {0};
    h_vwatch_start(&x, o, key);
    h_vwatch_expect(&x, 1, REIGN_VALUE_READY, NULL);
    static result rs[BURST];
    char text[BURST][16];
    for (int i = 0; i < BURST; i++) {
        snprintf(text[i], sizeof(text[i]), "write-%d", i);
        H_OK(reign_value_set(c->client, key, text[i], strlen(text[i]), REIGN_VALUE_ANY, on_result,
                             &rs[i]));
    }
    wait_result(&rs[BURST - 1], "the last write's answer");
    for (int i = 0; i < BURST; i++) {
        H_CHECKF(rs[i].done && rs[i].err == 0, "write %d: %s", i, reign_err_name(rs[i].err));
        H_CHECK(i == 0 || rs[i].version > rs[i - 1].version);
        free(rs[i].data);
    }
    h_vwatch_wait_last(&x, text[BURST - 1]);
    H_CHECK(x.ev[1].type == REIGN_VALUE_CREATED);
    for (size_t i = 2; i < x.n; i++)
        H_CHECK(x.ev[i].type == REIGN_VALUE_CHANGED && x.ev[i].version > x.ev[i - 1].version);
    H_CHECK(x.ev[x.n - 1].version == rs[BURST - 1].version);
    h_log("%d writes reported in %zu events", BURST, x.n - 1);
    h_vwatch_free(&x);
    h_cand_close(o);
    h_cand_close(c);
}

#define ROUNDS 20

static int pred_both(void *arg)
{
    result *r = arg;
    return r[0].done && r[1].done;
}

/* Both answered; exactly one with 0, the other with `loser`.  Returns the winner. */
static int one_wins(result r[2], int loser, const char *what, int round)
{
    H_WAIT(pred_both, r, what);
    int won = r[0].err == 0 ? 0 : 1;
    H_CHECKF(r[won].err == 0 && r[1 - won].err == loser, "round %d: %s answered %s and %s", round,
             what, reign_err_name(r[0].err), reign_err_name(r[1].err));
    return won;
}

static void case_race(const char *base)
{
    h_log("---- race");
    h_cand *c[2] = {h_cand_new("racer1", h_uri(NULL), NULL, NULL, NULL),
                    h_cand_new("racer2", h_uri(NULL), NULL, NULL, NULL)};
    char key[256];
    key_in(key, sizeof(key), base, "counter");
    result r = do_set(c[0], key, "start", REIGN_VALUE_ABSENT);
    H_OK(err_of(r));
    int64_t version = r.version;
    int wins[2] = {0, 0};
    for (int round = 0; round < ROUNDS; round++) {
        result a[2];
        char text[2][32];
        memset(a, 0, sizeof(a));
        for (int k = 0; k < 2; k++) {
            snprintf(text[k], sizeof(text[k]), "%d:%d", round, k);
            H_OK(reign_value_set(c[k]->client, key, text[k], strlen(text[k]), version, on_result,
                                 &a[k]));
        }
        int won = one_wins(a, REIGN_EBADVERSION, "both compare-and-sets", round);
        wins[won]++;
        H_CHECK(a[won].version > version);
        version = a[won].version;
        free(a[0].data);
        free(a[1].data);
        r = do_get(c[0], key);
        H_CHECK(r.err == 0 && r.version == version && !strcmp(r.data, text[won]));
        free(r.data);

        char made[256];
        snprintf(made, sizeof(made), "%s/made-%d", base, round);
        memset(a, 0, sizeof(a));
        for (int k = 0; k < 2; k++)
            H_OK(reign_value_set(c[k]->client, made, "m", 1, REIGN_VALUE_ABSENT, on_result, &a[k]));
        one_wins(a, REIGN_EEXIST, "both creates", round);
        int64_t made_version = a[0].err == 0 ? a[0].version : a[1].version;
        free(a[0].data);
        free(a[1].data);
        memset(a, 0, sizeof(a));
        for (int k = 0; k < 2; k++)
            H_OK(reign_value_delete(c[k]->client, made, made_version, on_result, &a[k]));
        one_wins(a, REIGN_ENOENT, "both deletes", round);
        free(a[0].data);
        free(a[1].data);
    }
    h_log("%d rounds: racer1 won %d compare-and-sets, racer2 %d", ROUNDS, wins[0], wins[1]);
    h_cand_close(c[0]);
    h_cand_close(c[1]);
}

/* A client that starts a watch and writes the key in the same turn of its loop hears its own
 * write: the watch's first read and the write may reach the store together, and the watch must
 * start from what the read saw, not from after the write. */
static void case_own_write(const char *base)
{
    h_log("---- own write");
    h_cand *o = h_cand_new("own", h_uri(NULL), NULL, NULL, NULL);
    for (int i = 0; i < 5; i++) {
        char key[160], text[32];
        snprintf(text, sizeof(text), "own-%d", i);
        key_in(key, sizeof(key), base, text);
        h_vwatch x = {0};
        h_vwatch_start(&x, o, key);
        result r = {0};
        H_OK(reign_value_set(o->client, key, text, strlen(text), REIGN_VALUE_ANY, on_result, &r));
        H_OK(err_of(wait_result(&r, "the set")));
        h_vwatch_wait_last(&x, text);
        /* and a change made after the first read, again in the turn the watch re-reads in */
        H_OK(err_of(do_set(o, key, "again", REIGN_VALUE_ANY)));
        h_vwatch_wait_last(&x, "again");
        h_vwatch_free(&x);
    }
    h_cand_close(o);
}

int main(void)
{
    h_contract_init("contract_value", NULL);
    char base[128];
    h_unique_name(base, sizeof(base), "value");
    case_ops(base);
    case_payloads(base);
    case_burst(base);
    case_race(base);
    case_own_write(base);
    return h_finish();
}
