/*
 * etcd_txn.c - a node operation of zk.h as one etcd txn, and its answer read back as
 * ZooKeeper's (etcd_internal.h; etcd_ops.c sends them).
 *
 * Every write is a multi: a create, set or delete alone is a multi of one part.  A multi
 * becomes one txn whose comparisons are the conditions ZooKeeper would check part by part
 * (the node absent or present, its version, its parent present, no children left), whose
 * success branch is the writes, and whose failure branch reads back every key compared.  When
 * the txn fails, the parts are replayed in order over what the failure branch read, so the
 * caller learns which part failed and why, as a ZooKeeper multi tells.  Conditions on what an
 * earlier part of the same multi makes or removes are decided here, since etcd compares
 * before it writes, and a node the multi writes twice (made, then set; deleted, then made
 * again) is one put: etcd writes a key once in a txn.
 *
 * Sequential nodes: a parent's children are numbered by a counter kept in the key
 * "PARENT/." (a name ZooKeeper forbids, so no node has it).  A sequential create compares the
 * counter's version with the one last seen and moves it past the number it used; when someone
 * else moved it first the txn fails, the failure branch says where it is, and the create is
 * sent again with the next number.  Creates of the same multi under one parent count from
 * there in order, the way ZooKeeper's child count does.
 *
 * Reads are read-only txns (linearizable): a node and the count of its children, or a node
 * and the keys under it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_internal.h"

#define SEQ_TRIES    64 /* sequential creates beaten to the counter before giving up */
#define SEQ_BUCKETS  4096
#define CHILD_RANGES 2 /* a node's children: the keys below it but its counter */

/* A parent's sequence counter as last seen. */
typedef struct seqc {
    struct seqc *next;
    int64_t version, value;
    char key[];
} seqc;

/* ---- keys ---------------------------------------------------------------------------------- */

static char *key_of(const reign__etcd *e, const char *path)
{
    size_t pl = strlen(path);
    char *k = reign__malloc(e->prefix_len + pl + 1);
    if (k) {
        memcpy(k, e->prefix, e->prefix_len);
        memcpy(k + e->prefix_len, path, pl + 1);
    }
    return k;
}

/* The prefix of the keys of path's children: key + "/" (the root's: prefix + "/"). */
static char *kids_of(const reign__etcd *e, const char *path)
{
    bool root = !strcmp(path, "/");
    size_t pl = root ? 0 : strlen(path);
    char *k = reign__malloc(e->prefix_len + pl + 2);
    if (k) {
        memcpy(k, e->prefix, e->prefix_len);
        memcpy(k + e->prefix_len, path, pl);
        memcpy(k + e->prefix_len + pl, "/", 2);
    }
    return k;
}

static bool is_root(const char *path)
{
    return !strcmp(path, "/");
}

bool reign__et_implicit(const char *path)
{
    size_t names = 0;
    for (const char *c = path; *c; c++)
        names += *c == '/' && c[1];
    return names < REIGN__ETCD_SCOPE_NAMES;
}

/* path's parent into out ("/" for a top-level node); false if path has none. */
static bool parent_of(const char *path, char *out, size_t n)
{
    const char *s = strrchr(path, '/');
    if (!s || s[1] == '\0')
        return false;
    size_t l = s == path ? 1 : (size_t)(s - path);
    if (l >= n)
        return false;
    memcpy(out, path, l);
    out[l] = '\0';
    return true;
}

static void put_key(reign__buf *b, const char *field, const char *key, size_t len)
{
    reign__buf_printf(b, "\"%s\":", field);
    reign__ej_b64(b, key, len);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The keys below a node (kp: its key + "/") but its counter and what parts before part i of
 * the multi delete, as ranges between them: "is there anything below it" is "every range is
 * empty".  Writes each range to b as {"key":..,"range_end":.. + tail} (b NULL: only counts);
 * comma: put one before the first.  The number of ranges, or 0 out of memory.
 */
static size_t below(const etxn *op, size_t i, const char *kp, reign__buf *b, const char *head,
                    const char *tail, bool comma)
{
    size_t kl = strlen(kp);
    char *skip[2 * REIGN__ZK_MULTI_MAX + 1];
    size_t ns = 0;
    char counter[1100];
    if (kl + 2 > sizeof(counter))
        return 0;
    snprintf(counter, sizeof(counter), "%s.", kp);
    skip[ns++] = counter;
    for (size_t j = 0; j < i && op->parts; j++) {
        if (op->parts[j].type != REIGN__ZK_MDELETE)
            continue;
        char *k = key_of(op->e, op->parts[j].path);
        if (!k || strncmp(k, kp, kl) || !strcmp(k, counter)) {
            reign__free(k);
            continue;
        }
        /* A node deleted before, and its own counter, which its delete takes with it. */
        char *kc = reign__malloc(strlen(k) + 3);
        skip[ns++] = k;
        if (kc) {
            sprintf(kc, "%s/.", k);
            skip[ns++] = kc;
        }
    }
    qsort(skip, ns, sizeof(skip[0]), by_str);
    char lo[1100], hi[1100];
    size_t lol = kl, n = 0;
    memcpy(lo, kp, kl);
    for (size_t k = 0; k <= ns; k++) {
        size_t hil;
        if (k < ns) {
            hil = strlen(skip[k]);
            memcpy(hi, skip[k], hil);
        } else {
            hil = kl;
            memcpy(hi, kp, kl);
            reign__ej_prefix_end(hi, kl);
        }
        if (b) {
            reign__buf_puts(b, comma || n ? "," : "");
            reign__buf_puts(b, head);
            put_key(b, "key", lo, lol);
            reign__buf_puts(b, ",");
            put_key(b, "range_end", hi, hil);
            reign__buf_puts(b, tail);
        }
        n++;
        if (k < ns) { /* the next range starts just past the key skipped */
            memcpy(lo, skip[k], hil);
            lo[hil] = '\0';
            lol = hil + 1;
        }
    }
    for (size_t k = 0; k < ns; k++)
        if (skip[k] != counter)
            reign__free(skip[k]);
    return n;
}

/* ---- sequence counters ---------------------------------------------------------------------- */

static seqc **seq_slot(reign__etcd *e, const char *key)
{
    if (!e->seqs) {
        e->seqs = reign__calloc(SEQ_BUCKETS, sizeof(seqc *));
        if (!e->seqs)
            return NULL;
    }
    seqc **b = (seqc **)e->seqs + (reign__hash_str(key) & (SEQ_BUCKETS - 1));
    while (*b && strcmp((*b)->key, key))
        b = &(*b)->next;
    return b;
}

static void seq_get(reign__etcd *e, const char *key, int64_t *version, int64_t *value)
{
    seqc **s = seq_slot(e, key);
    *version = s && *s ? (*s)->version : 0;
    *value = s && *s ? (*s)->value : 0;
}

static void seq_set(reign__etcd *e, const char *key, int64_t version, int64_t value)
{
    seqc **s = seq_slot(e, key);
    if (!s)
        return;
    if (!*s) {
        size_t n = strlen(key) + 1;
        if (!(*s = reign__calloc(1, sizeof(seqc) + n)))
            return;
        memcpy((*s)->key, key, n);
    }
    (*s)->version = version;
    (*s)->value = value;
}

char *reign__et_counter_key(const reign__etcd *e, const char *dir)
{
    char *k = kids_of(e, dir);
    size_t n = k ? strlen(k) : 0;
    char *c = k ? reign__malloc(n + 2) : NULL;
    if (c) {
        memcpy(c, k, n);
        memcpy(c + n, ".", 2);
    }
    reign__free(k);
    return c;
}

void reign__et_seq_seen(reign__etcd *e, const cJSON *kv)
{
    size_t kl, vl;
    char *k = reign__ej_bytes(kv, "key", &kl);
    char *v = reign__ej_bytes(kv, "value", &vl);
    int64_t nver = reign__ej_i64(kv, "version"), nval = v ? strtoll(v, NULL, 10) : 0;
    int64_t ver, val;
    if (k && strlen(k) == kl && kl > e->prefix_len && !strcmp(k + kl - 2, "/.")) {
        seq_get(e, k, &ver, &val);
        if (nver > ver)
            seq_set(e, k, nver, nval > val ? nval : val);
    }
    reign__free(k);
    reign__free(v);
}

void reign__et_seq_free(reign__etcd *e)
{
    if (!e->seqs)
        return;
    seqc **b = (seqc **)e->seqs;
    for (size_t i = 0; i < SEQ_BUCKETS; i++)
        for (seqc *s = b[i], *next; s; s = next) {
            next = s->next;
            reign__free(s);
        }
    reign__free(e->seqs);
    e->seqs = NULL;
}

/* ---- reads ---------------------------------------------------------------------------------- */

static void fill_stat(const reign__etcd *e, reign__zk_stat *st, const cJSON *kv, size_t len)
{
    memset(st, 0, sizeof(*st));
    st->czxid = reign__ej_i64(kv, "create_revision");
    st->mzxid = reign__ej_i64(kv, "mod_revision");
    st->ctime_ms = reign__eh_time_of(e, st->czxid);
    st->mtime_ms = reign__eh_time_of(e, st->mzxid);
    int64_t v = reign__ej_i64(kv, "version"); /* ZooKeeper's is etcd's - 1, an int32 */
    st->version = v < 1 ? -1 : v > INT32_MAX ? INT32_MAX : (int32_t)(v - 1);
    st->ephemeral_owner = reign__ej_i64(kv, "lease");
    st->data_length = (int32_t)len;
}

static const cJSON *response(const cJSON *root, size_t i, const char *kind)
{
    const cJSON *r =
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "responses"), (int)i);
    return cJSON_GetObjectItemCaseSensitive(r, kind);
}

static const cJSON *first_kv(const cJSON *range)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(range, "kvs"), 0);
}

static void build_read(etxn *op, reign__buf *b)
{
    reign__etcd *e = op->e;
    char *key = key_of(e, op->path), *kp = kids_of(e, op->path);
    if (!key || !kp) {
        b->oom = true;
        goto out;
    }
    reign__buf_puts(b, "{\"success\":[");
    if (!is_root(op->path)) {
        reign__buf_puts(b, "{\"request_range\":{");
        put_key(b, "key", key, strlen(key));
        reign__buf_puts(b, op->type == EO_GET ? "}}," : ",\"keys_only\":true}},");
    }
    if (op->type == EO_CHILDREN) {
        reign__buf_puts(b, "{\"request_range\":{");
        put_key(b, "key", kp, strlen(kp));
        reign__ej_prefix_end(kp, strlen(kp));
        reign__buf_puts(b, ",");
        put_key(b, "range_end", kp, strlen(kp));
        reign__buf_puts(b, ",\"keys_only\":true}}]}");
    } else {
        below(op, 0, kp, b, "{\"request_range\":{", ",\"count_only\":true}}", false);
        reign__buf_puts(b, "]}");
    }
out:
    reign__free(key);
    reign__free(kp);
}

/* The direct children of path among the keys below it (its counter left out). */
static int children_of(etxn *op, const cJSON *range, reign__zk_result *r)
{
    reign__etcd *e = op->e;
    char *kp = kids_of(e, op->path);
    if (!kp)
        return REIGN_ENOMEM;
    size_t kl = strlen(kp);
    const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(range, "kvs"), *kv;
    size_t cap = (size_t)cJSON_GetArraySize(kvs);
    r->children = cap ? reign__calloc(cap, sizeof(char *)) : NULL;
    int rc = cap && !r->children ? REIGN_ENOMEM : 0;
    cJSON_ArrayForEach(kv, kvs)
    {
        if (rc < 0)
            break;
        size_t len;
        char *k = reign__ej_bytes(kv, "key", &len);
        if (!k) {
            rc = REIGN_ENOMEM;
            break;
        }
        const char *name = k + kl;
        if (len > kl && !memcmp(k, kp, kl) && !strchr(name, '/') && strcmp(name, ".") &&
            strlen(k) == len) {
            if (!(r->children[r->n_children] = reign__strdup(name)))
                rc = REIGN_ENOMEM;
            else
                r->n_children++;
        }
        reign__free(k);
    }
    reign__free(kp);
    return rc;
}

int64_t reign__et_read(etxn *op, const cJSON *root, reign__zk_result *r, bool *present)
{
    int64_t rev = reign__ej_i64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision");
    size_t vlen = 0;
    bool root_node = is_root(op->path);
    const cJSON *kv = root_node ? NULL : first_kv(response(root, 0, "response_range"));
    *present = kv || reign__et_implicit(op->path);
    if (kv) {
        op->value = reign__ej_bytes(kv, "value", &vlen);
        r->has_stat = true;
        fill_stat(op->e, &r->stat, kv, vlen);
    } else if (*present) {
        r->has_stat = true; /* a directory above every scope: there, empty */
    }
    size_t at = root_node ? 0 : 1;
    if (!*present) {
        r->rc = REIGN_ENOENT;
    } else if (op->type == EO_CHILDREN) {
        r->rc = children_of(op, response(root, at, "response_range"), r);
        r->stat.num_children = (int32_t)r->n_children;
    } else {
        int64_t kids = 0;
        for (size_t part = 0; part < CHILD_RANGES; part++) {
            int64_t c = reign__ej_i64(response(root, at + part, "response_range"), "count");
            kids += c < 0 ? 0 : c > INT32_MAX ? INT32_MAX : c; /* never overflows */
        }
        r->stat.num_children = kids < 0 ? 0 : kids > INT32_MAX ? INT32_MAX : (int32_t)kids;
        if (op->type == EO_GET) {
            r->value = op->value ? op->value : "";
            r->value_len = vlen;
        }
    }
    return rev;
}

void reign__et_result_free(etxn *op, reign__zk_result *r)
{
    for (size_t i = 0; i < r->n_children; i++)
        reign__free(r->children[i]);
    reign__free(r->children);
    r->children = NULL;
    r->n_children = 0;
    reign__free(op->value);
    op->value = NULL;
}

/* ---- writes: the plan ----------------------------------------------------------------------- */

/* What the parts before part i of a multi did to path: made it (1), removed it (-1), nothing. */
static int made_before(const etxn *op, size_t i, const char *path)
{
    int state = 0;
    for (size_t j = 0; j < i; j++) {
        const char *p = op->made[j] ? op->made[j] : op->parts[j].path;
        if (strcmp(p, path))
            continue;
        if (op->parts[j].type == REIGN__ZK_MCREATE)
            state = 1;
        else if (op->parts[j].type == REIGN__ZK_MDELETE)
            state = -1;
    }
    return state;
}

/* Does a part after i create path (a multi that deletes a node and makes it again)? */
static bool made_after(const etxn *op, size_t i, const char *path)
{
    for (size_t j = i + 1; j < op->n; j++)
        if (op->parts[j].type == REIGN__ZK_MCREATE && !strcmp(op->parts[j].path, path))
            return true;
    return false;
}

/* Creates before part i under parent (for the sequence number). */
static int64_t creates_under(const etxn *op, size_t i, const char *parent)
{
    int64_t n = 0;
    char pp[1024];
    for (size_t j = 0; j < i; j++)
        if (op->parts[j].type == REIGN__ZK_MCREATE &&
            parent_of(op->parts[j].path, pp, sizeof(pp)) && !strcmp(pp, parent))
            n++;
    return n;
}

/* Sets of path between the part that created it (before i) and part i. */
static int sets_since_create(const etxn *op, size_t i, const char *path)
{
    int n = 0;
    for (size_t j = 0; j < i; j++) {
        const char *p = op->made[j] ? op->made[j] : op->parts[j].path;
        if (!strcmp(p, path))
            n = op->parts[j].type == REIGN__ZK_MCREATE ? 0
                                                       : n + (op->parts[j].type == REIGN__ZK_MSET);
    }
    return n;
}

/* The part whose data create j's put carries: the last set of its node in the multi, or j. */
static const reign__zk_mop *last_set(const etxn *op, size_t j)
{
    const reign__zk_mop *last = &op->parts[j];
    for (size_t k = j + 1; k < op->n; k++)
        if (op->parts[k].type == REIGN__ZK_MSET && !strcmp(op->parts[k].path, op->parts[j].path))
            last = &op->parts[k];
    return last;
}

static void cmp(reign__buf *b, bool *first, const char *key, const char *target, const char *result,
                const char *field, int64_t v)
{
    reign__buf_puts(b, *first ? "{" : ",{");
    *first = false;
    put_key(b, "key", key, strlen(key));
    reign__buf_printf(b, ",\"target\":\"%s\",\"result\":\"%s\",\"%s\":\"%lld\"}", target, result,
                      field, (long long)v);
}

/*
 * The txn of a write.  Returns 0, or a code decided here with *bad the part (a condition on
 * what the multi itself does that ZooKeeper would refuse).
 */
static int build_write(etxn *op, reign__buf *b, size_t *bad)
{
    reign__etcd *e = op->e;
    reign__buf cmps, succ, fail;
    reign__buf_init(&cmps);
    reign__buf_init(&succ);
    reign__buf_init(&fail);
    bool fc = true, fs = true, ff = true;
    int rc = 0, puts = 0;
    if (op->e->session_key[0]) {
        /* ZooKeeper refuses every request of an expired session; etcd would take a write of a
         * client whose lease is gone.  The session's key is on the lease: no key, no write (a
         * leader stopped past its lease must not delete its successor's leader node). */
        const char *sk = op->e->session_key;
        cmp(&cmps, &fc, sk, "CREATE", "GREATER", "create_revision", 0);
        reign__buf_puts(&fail, "{\"request_range\":{");
        put_key(&fail, "key", sk, strlen(sk));
        reign__buf_puts(&fail, ",\"keys_only\":true}}");
        ff = false;
    }
    char parent[1024];
    /* Sequence counters moved by this multi: one put each, after its last create. */
    char cparents[REIGN__ZK_MULTI_MAX][1024];
    int64_t cnext[REIGN__ZK_MULTI_MAX];
    size_t nc = 0;
    for (size_t i = 0; i < op->n && rc == 0; i++) {
        const reign__zk_mop *p = &op->parts[i];
        reign__free(op->made[i]);
        op->made[i] = NULL;
        op->put_index[i] = -1;
        bool has_parent = parent_of(p->path, parent, sizeof(parent));
        int self = made_before(op, i, p->path);
        char *key = NULL, *kp = NULL, *pkey = NULL;
        switch (p->type) {
        case REIGN__ZK_MCREATE: {
            const char *path = p->path;
            char seqpath[1100];
            int pstate = has_parent ? made_before(op, i, parent) : 0;
            if (!has_parent || pstate < 0) {
                rc = REIGN_ENOENT;
                break;
            }
            if (p->flags & REIGN__ZK_SEQUENCE) {
                char *ckey = kids_of(e, parent);
                if (!ckey) {
                    rc = REIGN_ENOMEM;
                    break;
                }
                size_t cl = strlen(ckey);
                char cbuf[1100];
                snprintf(cbuf, sizeof(cbuf), "%s.", ckey);
                reign__free(ckey);
                (void)cl;
                int64_t ver, val;
                seq_get(e, cbuf, &ver, &val);
                int64_t seq = val + creates_under(op, i, parent);
                snprintf(seqpath, sizeof(seqpath), "%s%010lld", p->path, (long long)seq);
                path = seqpath;
                size_t c = 0;
                while (c < nc && strcmp(cparents[c], parent))
                    c++;
                if (c == nc) {
                    cmp(&cmps, &fc, cbuf, "VERSION", "EQUAL", "version", ver);
                    reign__buf_puts(&fail, ff ? "{\"request_range\":{" : ",{\"request_range\":{");
                    ff = false;
                    put_key(&fail, "key", cbuf, strlen(cbuf));
                    reign__buf_puts(&fail, "}}");
                    reign__strlcpy(cparents[nc], parent, sizeof(cparents[nc]));
                    nc++;
                }
                cnext[c] = val + creates_under(op, op->n, parent);
            }
            if (!(op->made[i] = reign__strdup(path)) || !(key = key_of(e, path))) {
                rc = REIGN_ENOMEM;
                break;
            }
            if (self > 0 || reign__et_implicit(path)) {
                rc = REIGN_EEXIST; /* made by this multi, or a directory that always is */
                break;
            }
            if (self == 0)
                cmp(&cmps, &fc, key, "CREATE", "EQUAL", "create_revision", 0);
            if (!reign__et_implicit(parent) && pstate == 0) {
                if (!(pkey = key_of(e, parent))) {
                    rc = REIGN_ENOMEM;
                    break;
                }
                cmp(&cmps, &fc, pkey, "CREATE", "GREATER", "create_revision", 0);
            }
            reign__buf_puts(&succ, fs ? "{\"request_put\":{" : ",{\"request_put\":{");
            fs = false;
            put_key(&succ, "key", key, strlen(key));
            reign__buf_puts(&succ, ",\"value\":");
            const reign__zk_mop *last = last_set(op, i);
            reign__ej_b64(&succ, last->data ? last->data : "", last->len);
            if ((p->flags & REIGN__ZK_EPHEMERAL) && !e->lease) {
                rc = REIGN_ESESSION; /* never a lasting node in its place */
                break;
            }
            if (p->flags & REIGN__ZK_EPHEMERAL)
                reign__buf_printf(&succ, ",\"lease\":\"%lld\"", (long long)e->lease);
            reign__buf_puts(&succ, self < 0 ? ",\"prev_kv\":true}}" : "}}");
            op->put_index[i] = puts++;
            break;
        }
        case REIGN__ZK_MSET:
        case REIGN__ZK_MCHECK:
        case REIGN__ZK_MDELETE: {
            if (self < 0) {
                rc = REIGN_ENOENT;
                break;
            }
            if (self > 0) {
                /* A node this multi made: judged here, and a set's data goes into the create's
                 * put (etcd writes a key once in a txn). */
                if (p->type == REIGN__ZK_MDELETE)
                    rc = REIGN_ENOTSUP;
                else if (p->version >= 0 && p->version != sets_since_create(op, i, p->path))
                    rc = REIGN_EBADVERSION;
                break;
            }
            if (!(key = key_of(e, p->path))) {
                rc = REIGN_ENOMEM;
                break;
            }
            cmp(&cmps, &fc, key, "CREATE", "GREATER", "create_revision", 0);
            if (p->version >= 0)
                cmp(&cmps, &fc, key, "VERSION", "EQUAL", "version", (int64_t)p->version + 1);
            if (p->type == REIGN__ZK_MSET) {
                reign__buf_puts(&succ, fs ? "{\"request_put\":{" : ",{\"request_put\":{");
                fs = false;
                put_key(&succ, "key", key, strlen(key));
                reign__buf_puts(&succ, ",\"value\":");
                reign__ej_b64(&succ, p->data ? p->data : "", p->len);
                reign__buf_puts(&succ, ",\"ignore_lease\":true,\"prev_kv\":true}}");
                op->put_index[i] = puts++;
            } else if (p->type == REIGN__ZK_MDELETE) {
                if (!(kp = kids_of(e, p->path))) {
                    rc = REIGN_ENOMEM;
                    break;
                }
                /* Nothing below it, but what earlier parts delete. */
                if (!below(op, i, kp, &cmps, "{",
                           ",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}",
                           !fc)) {
                    rc = REIGN_ENOMEM;
                    break;
                }
                fc = false;
                if (made_after(op, i, p->path))
                    break; /* made again later in the multi: that put replaces it */
                reign__buf_puts(&succ, fs ? "{\"request_delete_range\":{"
                                          : ",{\"request_delete_range\":{");
                fs = false;
                put_key(&succ, "key", key, strlen(key));
                reign__buf_puts(&succ, "}},{\"request_delete_range\":{");
                char cbuf[1100];
                snprintf(cbuf, sizeof(cbuf), "%s.", kp);
                put_key(&succ, "key", cbuf, strlen(cbuf));
                reign__buf_puts(&succ, "}}");
                puts += 2;
            }
            break;
        }
        }
        /* The failure branch reads what this part's conditions looked at. */
        if (rc == 0) {
            const char *path = op->made[i] ? op->made[i] : p->path;
            char *k2 = key ? NULL : key_of(e, path);
            reign__buf_puts(&fail, ff ? "{\"request_range\":{" : ",{\"request_range\":{");
            ff = false;
            put_key(&fail, "key", key ? key : k2, strlen(key ? key : k2 ? k2 : ""));
            reign__buf_puts(&fail, ",\"keys_only\":true}}");
            reign__free(k2);
            if (p->type == REIGN__ZK_MCREATE && !reign__et_implicit(parent)) {
                char *pk = pkey ? NULL : key_of(e, parent);
                reign__buf_puts(&fail, ",{\"request_range\":{");
                put_key(&fail, "key", pkey ? pkey : pk, strlen(pkey ? pkey : pk ? pk : ""));
                reign__buf_puts(&fail, ",\"keys_only\":true}}");
                reign__free(pk);
            }
            if (p->type == REIGN__ZK_MDELETE)
                below(op, i, kp, &fail, "{\"request_range\":{", ",\"count_only\":true}}", true);
        }
        if (rc < 0)
            *bad = i;
        reign__free(key);
        reign__free(kp);
        reign__free(pkey);
    }
    /* The counters' moves. */
    for (size_t c = 0; c < nc && rc == 0; c++) {
        char *ckey = kids_of(e, cparents[c]);
        if (!ckey) {
            rc = REIGN_ENOMEM;
            break;
        }
        char cbuf[1100], val[32];
        snprintf(cbuf, sizeof(cbuf), "%s.", ckey);
        reign__free(ckey);
        snprintf(val, sizeof(val), "%lld", (long long)cnext[c]);
        reign__buf_puts(&succ, fs ? "{\"request_put\":{" : ",{\"request_put\":{");
        fs = false;
        put_key(&succ, "key", cbuf, strlen(cbuf));
        reign__buf_puts(&succ, ",\"value\":");
        reign__ej_b64(&succ, val, strlen(val));
        reign__buf_puts(&succ, "}}");
    }
    if (rc == 0) {
        reign__buf_puts(b, "{\"compare\":[");
        reign__buf_append(b, cmps.data ? cmps.data : "", cmps.len);
        reign__buf_puts(b, "],\"success\":[");
        reign__buf_append(b, succ.data ? succ.data : "", succ.len);
        reign__buf_puts(b, "],\"failure\":[");
        reign__buf_append(b, fail.data ? fail.data : "", fail.len);
        reign__buf_puts(b, "]}");
        if (cmps.oom || succ.oom || fail.oom)
            rc = REIGN_ENOMEM;
    }
    reign__buf_free(&cmps);
    reign__buf_free(&succ);
    reign__buf_free(&fail);
    return rc;
}

/* ---- writes: the answer --------------------------------------------------------------------- */

/* Is there a sequential create under parent before part i (its counter counted already)? */
static bool seq_before(const etxn *op, size_t i, const char *parent)
{
    char pp[1024];
    for (size_t j = 0; j < i; j++)
        if (op->parts[j].type == REIGN__ZK_MCREATE && (op->parts[j].flags & REIGN__ZK_SEQUENCE) &&
            parent_of(op->parts[j].path, pp, sizeof(pp)) && !strcmp(pp, parent))
            return true;
    return false;
}

void reign__et_write_ok(etxn *op, const cJSON *root, reign__zk_result *out)
{
    reign__etcd *e = op->e;
    int64_t rev = reign__ej_i64(cJSON_GetObjectItemCaseSensitive(root, "header"), "revision");
    reign__zk_result r = {.failed_op = -1};
    const char *first = NULL, *last = NULL;
    char parent[1024];
    for (size_t i = 0; i < op->n; i++) {
        const reign__zk_mop *p = &op->parts[i];
        if (p->type == REIGN__ZK_MCREATE) {
            if (!first) {
                first = op->made[i];
                /* Deleted and made again by this multi: etcd put it over the old key, whose
                 * version went on (the caller reads it here; ZooKeeper's would be 0). */
                const cJSON *prev =
                    op->put_index[i] < 0
                        ? NULL
                        : cJSON_GetObjectItemCaseSensitive(
                              response(root, (size_t)op->put_index[i], "response_put"), "prev_kv");
                r.made_version = prev ? (int32_t)reign__ej_i64(prev, "version") : 0;
            }
            last = op->made[i];
            if (!r.has_stat || op->parts[op->n - 1].type == REIGN__ZK_MCREATE) {
                memset(&r.stat, 0, sizeof(r.stat));
                r.has_stat = true;
                r.stat.czxid = r.stat.mzxid = rev;
                r.stat.ctime_ms = r.stat.mtime_ms = reign__eh_time_of(op->e, rev);
                r.stat.ctime_ms = r.stat.mtime_ms = reign__eh_time_of(op->e, rev);
                r.stat.ephemeral_owner = (p->flags & REIGN__ZK_EPHEMERAL) ? e->lease : 0;
                r.stat.data_length = (int32_t)p->len;
            }
            if ((p->flags & REIGN__ZK_SEQUENCE) && parent_of(p->path, parent, sizeof(parent)) &&
                !seq_before(op, i, parent)) {
                char *ck = kids_of(e, parent);
                char cbuf[1100];
                if (ck) {
                    snprintf(cbuf, sizeof(cbuf), "%s.", ck);
                    int64_t ver, val;
                    seq_get(e, cbuf, &ver, &val);
                    seq_set(e, cbuf, ver + 1, val + creates_under(op, op->n, parent));
                    reign__free(ck);
                }
            }
        } else if (p->type == REIGN__ZK_MSET && made_before(op, i, p->path) > 0) {
            memset(&r.stat, 0, sizeof(r.stat));
            r.has_stat = true;
            r.stat.czxid = r.stat.mzxid = rev;
            r.stat.ctime_ms = r.stat.mtime_ms = reign__eh_time_of(op->e, rev);
            r.stat.version = 0; /* one put made it: etcd counts one write (see build_write) */
            r.stat.data_length = (int32_t)p->len;
            for (size_t j = 0; j < i; j++)
                if (op->parts[j].type == REIGN__ZK_MCREATE && !strcmp(op->parts[j].path, p->path))
                    r.stat.ephemeral_owner =
                        (op->parts[j].flags & REIGN__ZK_EPHEMERAL) ? e->lease : 0;
        } else if (p->type == REIGN__ZK_MSET && op->put_index[i] >= 0) {
            const cJSON *prev = cJSON_GetObjectItemCaseSensitive(
                response(root, (size_t)op->put_index[i], "response_put"), "prev_kv");
            r.has_stat = true;
            fill_stat(op->e, &r.stat, prev, p->len);
            if (r.stat.version < INT32_MAX)
                r.stat.version++;
            r.stat.mzxid = rev;
            r.stat.mtime_ms = reign__eh_time_of(op->e, rev);
        }
    }
    r.value = first;
    r.value_len = first ? strlen(first) : 0;
    r.last_created = last;
    *out = r;
}

/* A node as the failure branch read it. */
typedef struct seen {
    bool there;
    int64_t version; /* etcd's */
    int64_t kids;
} seen;

static seen seen_at(const cJSON *root, size_t i)
{
    const cJSON *rr = response(root, i, "response_range");
    const cJSON *kv = first_kv(rr);
    return (seen){.there = kv != NULL, .version = reign__ej_i64(kv, "version")};
}

/* Replays the parts over what the failure branch read: which failed first, and why. */
/* Is part i a sequence create whose counter the failed txn found moved? */
static bool seq_moved(const etxn *op, size_t i, char (*cparents)[1024], size_t nc,
                      const bool *cmoved)
{
    char parent[1024];
    const reign__zk_mop *p = &op->parts[i];
    if (p->type != REIGN__ZK_MCREATE || !(p->flags & REIGN__ZK_SEQUENCE) ||
        !parent_of(p->path, parent, sizeof(parent)))
        return false;
    for (size_t c = 0; c < nc; c++)
        if (!strcmp(cparents[c], parent))
            return cmoved[c];
    return false;
}

bool reign__et_write_failed(etxn *op, const cJSON *root, reign__zk_result *out)
{
    reign__etcd *e = op->e;
    size_t at = 0;
    if (e->session_key[0] && !seen_at(root, at++).there) {
        *out = (reign__zk_result){.rc = REIGN_ESESSION, .failed_op = -1};
        return false; /* the session's lease is gone: nothing of it is written any more */
    }
    char parent[1024];
    /* The counters come first in the failure branch, in the order of their first create. */
    char cparents[REIGN__ZK_MULTI_MAX][1024];
    size_t nc = 0;
    bool moved = false, cmoved[REIGN__ZK_MULTI_MAX] = {false};
    for (size_t i = 0; i < op->n; i++) {
        const reign__zk_mop *p = &op->parts[i];
        if (p->type != REIGN__ZK_MCREATE || !(p->flags & REIGN__ZK_SEQUENCE) ||
            !parent_of(p->path, parent, sizeof(parent)))
            continue;
        size_t c = 0;
        while (c < nc && strcmp(cparents[c], parent))
            c++;
        if (c == nc)
            reign__strlcpy(cparents[nc++], parent, sizeof(cparents[0]));
    }
    /* The failure branch interleaves: counters where their first create came. */
    int result = 0;
    size_t failed = 0;
    size_t counters_seen = 0;
    for (size_t i = 0; i < op->n && !result; i++) {
        const reign__zk_mop *p = &op->parts[i];
        bool has_parent = parent_of(p->path, parent, sizeof(parent));
        if (p->type == REIGN__ZK_MCREATE && (p->flags & REIGN__ZK_SEQUENCE) && has_parent) {
            size_t c = 0;
            while (c < nc && strcmp(cparents[c], parent))
                c++;
            if (c == counters_seen) { /* its counter's read is here */
                counters_seen++;
                const cJSON *kv = first_kv(response(root, at++, "response_range"));
                char *ck = has_parent ? kids_of(e, parent) : NULL;
                if (ck) {
                    char cbuf[1100];
                    snprintf(cbuf, sizeof(cbuf), "%s.", ck);
                    int64_t ver, val;
                    seq_get(e, cbuf, &ver, &val);
                    size_t vlen;
                    char *v = reign__ej_bytes(kv, "value", &vlen);
                    int64_t nver = reign__ej_i64(kv, "version");
                    int64_t nval = v ? strtoll(v, NULL, 10) : 0;
                    reign__free(v);
                    if (nver != ver) {
                        moved = cmoved[c] = true;
                        seq_set(e, cbuf, nver, nval > val ? nval : val);
                    }
                    reign__free(ck);
                }
            }
        }
        seen self = seen_at(root, at++);
        switch (p->type) {
        case REIGN__ZK_MCREATE:
            if (has_parent && !reign__et_implicit(parent)) {
                seen par = seen_at(root, at++);
                if (!par.there && made_before(op, i, parent) <= 0) {
                    result = REIGN_ENOENT;
                    break;
                }
            }
            /* A sequence number from a counter that moved names a node made since: not this
             * create's failure, the next number's try. */
            if (self.there && made_before(op, i, op->made[i]) >= 0 &&
                !seq_moved(op, i, cparents, nc, cmoved))
                result = REIGN_EEXIST;
            break;
        case REIGN__ZK_MSET:
        case REIGN__ZK_MCHECK:
        case REIGN__ZK_MDELETE:
            if (made_before(op, i, p->path) > 0)
                break; /* judged when the txn was made */
            if (!self.there)
                result = REIGN_ENOENT;
            else if (p->version >= 0 && self.version != (int64_t)p->version + 1)
                result = REIGN_EBADVERSION;
            if (p->type == REIGN__ZK_MDELETE) {
                int64_t kids = 0;
                char *kp = kids_of(op->e, p->path);
                size_t ranges = kp ? below(op, i, kp, NULL, "", "", false) : 0;
                reign__free(kp);
                for (size_t part = 0; part < ranges; part++)
                    kids += reign__ej_i64(response(root, at++, "response_range"), "count");
                if (!result && kids > 0)
                    result = REIGN_ENOTEMPTY;
            }
            break;
        }
        if (result)
            failed = i;
    }
    if (!result && moved && ++op->seq_tries < SEQ_TRIES)
        return true; /* beaten to a sequence number: the next one */
    if (!result) {
        reign__log(e->log, REIGN_LOG_WARN, "etcd: a txn failed and no part says why");
        result = REIGN_EBACKEND;
        failed = 0;
    }
    *out = (reign__zk_result){.rc = result, .failed_op = (int)failed};
    return false;
}

int reign__et_build(etxn *op, reign__buf *b, size_t *bad)
{
    if (op->type == EO_WRITE)
        return build_write(op, b, bad);
    build_read(op, b);
    return 0;
}
