/*
 * fuzz_etcd.c - libFuzzer target for what the etcd backend reads from the gateway
 * (src/etcd/etcd_txn.c, etcd_watch.c, etcd_json.c).  The input is whatever a member, or
 * anything in its place, may answer, read three ways:
 *
 *   - as the answer to a read: by every kind of read, of a node and of the root, whose watch is
 *     then registered at the revision it says, as etcd_ops.c does.  The result's code is one a
 *     read gives, children are names (no '/', never the "." counter), a value is terminated;
 *   - as the answer to a write: by a fixed multi with a part of every kind (built once), as a
 *     failed txn (the part it blames is one of the multi's, the code one ZooKeeper gives) and
 *     as a successful one (the paths it names are the ones the multi made);
 *   - as the lines of a watch stream, with watches of every kind on it: each watch fires at
 *     most once, on its own path, with an event of its kind.
 *
 * Its base64 round-trips too.  Nothing may crash or leak.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "etcd/etcd_internal.h"
#include "fuzz_common.h"

#define PREFIX  "/r"
#define LEASE   INT64_C(8433168612965232141)
#define WATCHES 64

/* Every part of a multi, some on nodes the multi itself makes or removes first. */
static const reign__zk_mop parts[] = {
    {.type = REIGN__ZK_MCHECK, .path = "/s/t/a", .version = 0},
    {.type = REIGN__ZK_MCREATE, .path = "/s/t/a/b", .data = "x", .len = 1},
    {.type = REIGN__ZK_MSET, .path = "/s/t/a/b", .data = "yy", .len = 2, .version = 0},
    {.type = REIGN__ZK_MCREATE,
     .path = "/s/t/a/q/n_",
     .data = "s",
     .len = 1,
     .flags = REIGN__ZK_SEQUENCE | REIGN__ZK_EPHEMERAL},
    {.type = REIGN__ZK_MDELETE, .path = "/s/t/a/d", .version = -1},
    {.type = REIGN__ZK_MCREATE, .path = "/s/t/a/d", .data = "z", .len = 1},
    {.type = REIGN__ZK_MSET, .path = "/s/t/x", .data = "v", .len = 1, .version = 2},
    {.type = REIGN__ZK_MDELETE, .path = "/s/t/y", .version = 3},
};
#define N_PARTS (sizeof(parts) / sizeof(parts[0]))

static reign__etcd *plan_e; /* the plan's: kept from input to input */
static etxn plan;
static reign__zk_mop plan_parts[N_PARTS];
static reign__timers timers; /* armed, never run */

typedef struct wtag {
    enum ew_kind kind;
    char path[64];
    int fired;
} wtag;

typedef struct run {
    reign__etcd *e;
    wtag tags[WATCHES];
    size_t n_tags;
} run;

static reign__etcd *etcd_new(void)
{
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    CHECK(e != NULL);
    e->prefix = reign__strdup(PREFIX);
    CHECK(e->prefix != NULL);
    e->prefix_len = strlen(PREFIX);
    e->gen = 1;
    e->lease = LEASE;
    e->cfg.timers = &timers;
    reign__ew_init(e);
    reign__timer_init(&e->hold_timer, NULL, NULL);
    return e;
}

static void etcd_free(reign__etcd *e)
{
    reign__ew_free(e);
    reign__et_seq_free(e);
    reign__free(e->prefix);
    reign__free(e);
}

static void on_watch(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    (void)owner;
    wtag *t = arg;
    CHECK(t->fired++ == 0); /* one-shot */
    CHECK(!strcmp(path, t->path));
    if (t->kind == EW_CHILD)
        CHECK(ev == REIGN__ZK_CHILD || ev == REIGN__ZK_DELETED);
    else
        CHECK(ev == REIGN__ZK_CREATED || ev == REIGN__ZK_DELETED || ev == REIGN__ZK_CHANGED);
}

static void watch(run *r, enum ew_kind kind, const char *path, int64_t rev)
{
    if (r->n_tags == WATCHES)
        return;
    wtag *t = &r->tags[r->n_tags++];
    t->kind = kind;
    strcpy(t->path, path);
    CHECK(reign__ew_add(r->e, kind, path, rev, r, on_watch, t) == 0);
}

static void setup(void)
{
    if (plan_e)
        return;
    plan_e = etcd_new();
    memcpy(plan_parts, parts, sizeof(parts));
    plan = (etxn){.e = plan_e, .type = EO_WRITE, .parts = plan_parts, .n = N_PARTS};
    for (size_t i = 0; i < REIGN__ZK_MULTI_MAX; i++)
        plan.put_index[i] = -1;
    reign__buf b;
    reign__buf_init(&b);
    size_t bad = 0;
    CHECK(reign__et_build(&plan, &b, &bad) == 0 && !b.oom);
    reign__buf_free(&b);
    CHECK(plan.made[3] && !strcmp(plan.made[3], "/s/t/a/q/n_0000000000"));
    reign__et_seq_free(plan_e); /* counters seen: none, at each input */
}

/* The input as the answer to each read, its watch registered as etcd_ops.c's read_done does. */
static void reads(run *r, const cJSON *root)
{
    static const char *const paths[] = {"/s/t/a", "/"};
    for (int type = EO_EXISTS; type <= EO_CHILDREN; type++)
        for (size_t p = 0; p < 2; p++) {
            etxn t = {.e = r->e, .type = (enum eop_type)type, .path = (char *)paths[p]};
            reign__zk_result res = {.failed_op = -1};
            bool present = false;
            int64_t rev = reign__et_read(&t, root, &res, &present);
            CHECK(res.rc == 0 || res.rc == REIGN_ENOENT || res.rc == REIGN_ENOMEM);
            CHECK(present == (res.rc != REIGN_ENOENT));
            CHECK(res.n_children == 0 || type == EO_CHILDREN);
            for (size_t i = 0; i < res.n_children; i++) {
                const char *name = res.children[i];
                CHECK(name[0] != '\0' && !strchr(name, '/') && strcmp(name, "."));
            }
            if (type == EO_GET && res.rc == 0)
                CHECK(res.value && res.value[res.value_len] == '\0');
            if (present || type == EO_EXISTS)
                watch(r,
                      type == EO_EXISTS ? EW_EXISTS
                      : type == EO_GET  ? EW_DATA
                                        : EW_CHILD,
                      paths[p], rev);
            reign__et_result_free(&t, &res);
            CHECK(t.value == NULL && res.children == NULL);
        }
}

/* The input as the answer to the multi: failed, then done. */
static void writes(const cJSON *root)
{
    reign__zk_result res;
    plan.seq_tries = 0;
    if (!reign__et_write_failed(&plan, root, &res)) {
        CHECK(res.rc == REIGN_ENOENT || res.rc == REIGN_EEXIST || res.rc == REIGN_EBADVERSION ||
              res.rc == REIGN_ENOTEMPTY || res.rc == REIGN_EBACKEND);
        CHECK(res.failed_op >= 0 && res.failed_op < (int)N_PARTS);
    }
    reign__et_write_ok(&plan, root, &res);
    CHECK(res.rc == 0 && res.failed_op == -1);
    CHECK(res.value == plan.made[1] && res.last_created == plan.made[5]);
    CHECK(res.has_stat);
    reign__et_seq_free(plan_e);
}

/* The input as the lines of a watch stream (the last one even without its newline). */
static void lines(run *r, const uint8_t *data, size_t size)
{
    /* Their watchers' ids are 1 and 2 to 11 and 12, in this order. */
    watch(r, EW_EXISTS, "/s/t/a", 0);
    watch(r, EW_DATA, "/s/t/a/b", 5);
    watch(r, EW_CHILD, "/s/t/a", 0);
    watch(r, EW_CHILD, "/", 0);
    watch(r, EW_DATA, "/s/t/x", 100);
    watch(r, EW_EXISTS, "/s/t/a/q/n_0000000000", 0);
    estream *s = reign__ew_batch(r->e);
    CHECK(s != NULL);
    for (size_t at = 0; at < size;) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t n = nl ? (size_t)(nl - (data + at)) : size - at;
        char *copy = malloc(n ? n : 1); /* its exact size: a read past it is seen */
        CHECK(copy != NULL);
        memcpy(copy, data + at, n);
        reign__ew_line(r->e, s, copy, n); /* false: the stream ends; the next lines all the same */
        free(copy);
        at += n + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    run r = {.e = etcd_new()};
    lines(&r, data, size);
    cJSON *root = cJSON_ParseWithLength((const char *)data, size);
    if (root) {
        int code = 0;
        const char *err = reign__ej_error(root, &code);
        CHECK(!err || strlen(err) <= size || !strcmp(err, "unknown error"));
        reads(&r, root);
        writes(root);
        cJSON_Delete(root);
    }
    watch(&r, EW_DATA, "/s/t/a", 0);
    watch(&r, EW_CHILD, "/s/t/a", 0);
    reign__ew_drop_all(r.e);
    CHECK(r.e->n_watches == 0);
    etcd_free(r.e);

    /* Any bytes, encoded and decoded: the same bytes. */
    reign__buf b;
    reign__buf_init(&b);
    reign__ej_b64(&b, data, size);
    CHECK(!b.oom && b.len >= 2 && b.data[0] == '"' && b.data[b.len - 1] == '"');
    b.data[b.len - 1] = '\0';
    size_t len = 0;
    char *back = reign__ej_unb64(b.data + 1, &len);
    CHECK(back && len == size && !memcmp(back, data, size) && back[len] == '\0');
    reign__free(back);
    reign__buf_free(&b);
    return 0;
}
