/*
 * store.c - what a store holds (<reign/store.h>): list the entries, remove one nobody stands
 * in.  Each request is a small chain of reads attached to the client as a recipe (closing the
 * client completes it with REIGN_ECLOSED, freeing the client frees it), like
 * election_query.c.
 *
 * ZooKeeper: a listing reads the four directories, then each entry's node (is it reign's
 * record of that kind?) and, for elections and groups, its children (who stands).  A removal
 * reads the node (foreign data is never removed), asks who stands through the recipes' own
 * one-shot reads (reign_election_query, reign_group_list), then deletes with a condition that
 * fails if somebody joined meanwhile: the node's version, and for an election one multi that
 * deletes its history, its term and itself (ZooKeeper refuses to delete a node that has
 * children), after the history's records.
 *
 * SQL: one CALL on the worker thread lists the rows and reads each lease, then the values, then
 * the groups (members.h) and their members, then the queues (tasks.h: those with task rows, and
 * those whose group or election "tasks.NAME" exists); a removal of an election reads the lease
 * and the listed candidates (candidates.h), clears the row only at the term it read expired and
 * no candidate listed (catalog.c: the row, and its term, stay, so that tokens never go back),
 * then deletes the election's rows in the candidates table; a removal of a group deletes its
 * rows only if no member lives (members.c decides in the transaction that deletes); a removal
 * of a queue judges its masters' election as an election's removal does, then tasks.c deletes
 * its tasks and its workers' group and clears that election's row in one transaction.
 */
#include <reign/store.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_internal.h"
#include "sql/candidates.h"
#include "sql/history.h"
#include "sql/members.h"
#include "sql/runs.h"
#include "sql/tasks.h"
#include "sql/values.h"
#include "election/election_base.h"
#include "group/group_internal.h"
#include "record.h"
#include "slot/slot_internal.h"
#include "tasks/tasks_internal.h"
#include "value/value_internal.h"

static const char *const kind_names[] = {NULL, "election", "group", "value", "queue"};

const char *reign_entry_kind_name(reign_entry_kind kind)
{
    return kind >= REIGN_ENTRY_ELECTION && kind <= REIGN_ENTRY_QUEUE ? kind_names[kind] : NULL;
}

reign_entry_kind reign_entry_kind_of(const char *name)
{
    for (int k = REIGN_ENTRY_ELECTION; name && k <= REIGN_ENTRY_QUEUE; k++)
        if (!strcmp(kind_names[k], name))
            return (reign_entry_kind)k;
    return 0;
}

/* The directory of each kind, and the record kind its nodes carry ("" : any record). */
static const char *dir_of(reign_entry_kind k)
{
    return k == REIGN_ENTRY_ELECTION ? REIGN__ELECTION_DIR
           : k == REIGN_ENTRY_GROUP  ? REIGN__GROUP_DIR
           : k == REIGN_ENTRY_VALUE  ? REIGN__VALUE_DIR
                                     : REIGN__TASKS_DIR;
}

static const char *record_kind_of(reign_entry_kind k)
{
    return k == REIGN_ENTRY_ELECTION ? REIGN__KIND_ELECTION
           : k == REIGN_ENTRY_GROUP  ? REIGN__KIND_GROUP
           : k == REIGN_ENTRY_QUEUE  ? REIGN__KIND_TASKS
                                     : "";
}

/* Is this node data reign's record of kind k? */
static bool ours(reign_entry_kind k, const void *data, size_t len)
{
    reign__record rec;
    if (reign__record_parse(data, len, &rec) < 0)
        return false;
    const char *want = record_kind_of(k), *kind = reign__record_get(&rec, REIGN__K_KIND);
    bool ok = !*want || (kind && !strcmp(kind, want));
    reign__record_clear(&rec);
    return ok;
}

/*
 * Which of reign's own programs keeps an entry, if one does: reignd keeps its breadcrumb, its
 * layout and its pause mark of an election as values (layout.h).  NULL: the user's.
 */
static const char *used_by(reign_entry_kind k, const char *name)
{
    static const char *const leaves[] = {REIGN__REIGND_KEY_LEAVES};
    size_t pl = strlen(REIGN__REIGND_KEY_PREFIX);
    if (k != REIGN_ENTRY_VALUE || strncmp(name, REIGN__REIGND_KEY_PREFIX, pl))
        return NULL;
    const char *leaf = strchr(name + pl, '/');
    if (!leaf || leaf == name + pl || strchr(++leaf, '/'))
        return NULL;
    for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++)
        if (!strcmp(leaf, leaves[i]))
            return REIGN__REIGND_USER;
    return NULL;
}

typedef struct ent {
    reign_entry_kind kind;
    char *name;
    size_t standing;
    char *leader;
    size_t slots;
    bool foreign;
    const char *used_by; /* static */
    bool gone;           /* deleted between the listing and the read */
} ent;

typedef struct store_op {
    reign__recipe recipe;
    reign_client *client;
    reign__zk *zk;
    reign__sqlw *sql;
    char *prefix; /* list */
    reign_entry_kind kind;
    char *name; /* remove */
    char *path; /* remove, ZooKeeper: the node */
    int32_t version;
    reign_store_list_cb *lcb;
    reign_store_remove_cb *rcb;
    void *userdata;
    ent *v;
    size_t n, cap;
    size_t pending;
    bool done;
    bool sub_pending; /* a recipe's one-shot read of who stands: it calls back, even on close */
    /* remove a queue: its subtree, deepest first */
    struct tnode *tree;
    size_t tree_pending;
    bool tree_failed;
} store_op;

/* A node of a queue's subtree being removed: deleted once its children are. */
typedef struct tnode {
    struct tnode *parent, *next_alloc;
    char *path;
    size_t kids; /* not deleted yet */
} tnode;

static void op_free(store_op *o)
{
    if (o->zk)
        reign__zk_forget(o->zk, o);
    if (o->sql)
        reign__sqlw_forget(o->sql, o);
    reign__client_detach(o->client, &o->recipe);
    for (size_t i = 0; i < o->n; i++) {
        reign__free(o->v[i].name);
        reign__free(o->v[i].leader);
    }
    reign__free(o->v);
    while (o->tree) {
        tnode *t = o->tree;
        o->tree = t->next_alloc;
        reign__free(t->path);
        reign__free(t);
    }
    reign__free(o->prefix);
    reign__free(o->name);
    reign__free(o->path);
    reign__free(o);
}

static int by_kind_then_name(const void *a, const void *b)
{
    const ent *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void finish_list(store_op *o, int err)
{
    if (o->done)
        return;
    o->done = true;
    reign_entry *out = NULL;
    size_t n = 0;
    if (!err && !(out = reign__calloc(o->n ? o->n : 1, sizeof(*out))))
        err = REIGN_ENOMEM;
    if (!err) {
        if (o->n) /* qsort wants an array, even of none */
            qsort(o->v, o->n, sizeof(*o->v), by_kind_then_name);
        for (size_t i = 0; i < o->n; i++)
            if (!o->v[i].gone)
                out[n++] = (reign_entry){.kind = o->v[i].kind,
                                         .name = o->v[i].name,
                                         .standing = o->v[i].standing,
                                         .leader = o->v[i].leader,
                                         .slots = o->v[i].slots,
                                         .foreign = o->v[i].foreign,
                                         .used_by = o->v[i].used_by};
    }
    if (o->lcb)
        o->lcb(o->client, err, err ? NULL : out, n, o->userdata);
    reign__free(out);
    op_free(o);
}

static void finish_remove(store_op *o, int err, const char *const *standing, size_t n)
{
    if (o->done)
        return;
    o->done = true;
    if (o->rcb)
        o->rcb(o->client, err, standing, n, o->userdata);
    op_free(o);
}

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    store_op *o = (store_op *)rp;
    if (st != REIGN_CONN_CLOSED || o->sub_pending)
        return; /* the read of who stands completes with REIGN_ECLOSED, then this does */
    if (o->prefix)
        finish_list(o, REIGN_ECLOSED);
    else
        finish_remove(o, REIGN_ECLOSED, NULL, 0);
}

static void on_destroy(reign__recipe *rp)
{
    /* The client is being freed: so is the read of who stands, without calling back. */
    op_free((store_op *)rp);
}

static const reign__recipe_ops store_ops = {.conn = on_conn, .destroy = on_destroy};

static store_op *op_new(reign_client *client, void *cb, void *userdata)
{
    if (!client || !cb)
        return NULL;
    store_op *o = reign__calloc(1, sizeof(*o));
    if (!o)
        return NULL;
    o->recipe.ops = &store_ops;
    o->client = client;
    o->zk = reign__client_zk(client);
    o->sql = reign__client_sql(client);
    o->userdata = userdata;
    return o;
}

static ent *add_ent(store_op *o, reign_entry_kind kind, const char *name)
{
    if (o->n == o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 16;
        ent *v = reign__realloc(o->v, cap * sizeof(*v));
        if (!v)
            return NULL;
        o->v = v;
        o->cap = cap;
    }
    ent *e = &o->v[o->n];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    if (!(e->name = reign__strdup(name)))
        return NULL;
    o->n++;
    return e;
}

static char *child_path(reign_entry_kind k, const char *name)
{
    size_t n = strlen(dir_of(k)) + strlen(name) + 2;
    char *p = reign__malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir_of(k), name);
    return p;
}

/* ---- ZooKeeper: list ------------------------------------------------------------------------ */

/* What a read of an entry is for (arg: the entry's index * 3 + this). */
enum { READ_NODE, READ_KIDS, READ_SLOTS };

static void on_entry(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    size_t i = (uintptr_t)arg / 3;
    int what = (int)((uintptr_t)arg % 3);
    ent *e = &o->v[i];
    if (what == READ_SLOTS && r->rc >= 0) {
        for (size_t k = 0; k < r->n_children; k++)
            e->slots += !strncmp(r->children[k], REIGN__N_SLOT, 2);
    } else if (what == READ_SLOTS && r->rc == REIGN_ENOENT) {
        /* no slot on record */
    } else if (r->rc == REIGN_ENOENT) {
        e->gone = true;
    } else if (r->rc < 0) {
        finish_list(o, r->rc);
        return;
    } else if (what == READ_NODE) {
        e->foreign = !ours(e->kind, r->value, r->value_len);
    } else {
        const char *mark = e->kind == REIGN_ENTRY_ELECTION ? REIGN__N_CANDIDATE : REIGN__N_MEMBER;
        for (size_t k = 0; k < r->n_children; k++)
            e->standing += !strncmp(r->children[k], mark, 2);
        /* The lock strategy's one candidate is its lock node. */
        for (size_t k = 0; e->kind == REIGN_ENTRY_ELECTION && k < r->n_children; k++)
            e->standing += !strcmp(r->children[k], REIGN__N_LOCK);
    }
    if (--o->pending == 0)
        finish_list(o, 0);
}

/*
 * Values are listed by key, as `reign value` and `reign rm` take them: the tree below
 * /reign/value is walked and each node read.  A node with data is a value (or foreign data);
 * one without is only the parent of values below it and is no entry.  Only the branches that
 * can hold a key starting with the prefix are walked.
 */
static bool may_hold(const char *key, const char *prefix)
{
    size_t kl = strlen(key), pl = strlen(prefix);
    return !strncmp(key, prefix, kl < pl ? kl : pl);
}

static int walk_value(store_op *o, const char *key);

static void on_value_kids(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    tnode *t = arg;
    int rc = r->rc == REIGN_ENOENT ? 0 : r->rc;
    for (size_t c = 0; rc == 0 && c < r->n_children; c++) {
        char *key = reign__strf("%s/%s", t->path, r->children[c]);
        rc = !key ? REIGN_ENOMEM : may_hold(key, o->prefix) ? walk_value(o, key) : 0;
        reign__free(key);
    }
    if (rc < 0)
        finish_list(o, rc);
    else if (--o->pending == 0)
        finish_list(o, 0);
}

static void on_value_node(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    tnode *t = arg;
    int rc = r->rc == REIGN_ENOENT ? 0 : r->rc;
    if (rc == 0 && r->rc == 0 && r->value_len && !strncmp(t->path, o->prefix, strlen(o->prefix))) {
        ent *e = add_ent(o, REIGN_ENTRY_VALUE, t->path);
        if (e) {
            e->foreign = !ours(REIGN_ENTRY_VALUE, r->value, r->value_len);
            e->used_by = used_by(REIGN_ENTRY_VALUE, t->path);
        }
        rc = e ? 0 : REIGN_ENOMEM;
    }
    if (rc == 0 && r->rc == 0 && r->stat.num_children > 0) {
        char *path = reign__value_path(t->path);
        rc = path ? reign__zk_children(o->zk, path, NULL, REIGN__ZK_RETRY, o, on_value_kids, t)
                  : REIGN_ENOMEM;
        o->pending += rc == 0;
        reign__free(path);
    }
    if (rc < 0)
        finish_list(o, rc);
    else if (--o->pending == 0)
        finish_list(o, 0);
}

/* Reads the node of value `key` (the key kept with the op until it ends). */
static int walk_value(store_op *o, const char *key)
{
    tnode *t = reign__calloc(1, sizeof(*t));
    char *path = reign__value_path(key);
    if (!t || !path || !(t->path = reign__strdup(key))) {
        reign__free(t);
        reign__free(path);
        return REIGN_ENOMEM;
    }
    t->next_alloc = o->tree;
    o->tree = t;
    int rc = reign__zk_get(o->zk, path, NULL, REIGN__ZK_RETRY, o, on_value_node, t);
    o->pending += rc == 0;
    reign__free(path);
    return rc;
}

static void on_dir(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    reign_entry_kind k = (reign_entry_kind)(uintptr_t)arg;
    if (r->rc < 0 && r->rc != REIGN_ENOENT) {
        finish_list(o, r->rc);
        return;
    }
    size_t pl = strlen(o->prefix);
    for (size_t c = 0; r->rc == 0 && c < r->n_children; c++) {
        if (k == REIGN_ENTRY_VALUE) {
            int rc = may_hold(r->children[c], o->prefix) ? walk_value(o, r->children[c]) : 0;
            if (rc < 0) {
                finish_list(o, rc);
                return;
            }
            continue;
        }
        if (strncmp(r->children[c], o->prefix, pl))
            continue;
        size_t i = o->n;
        char *path = NULL, *slots = NULL;
        int rc = add_ent(o, k, r->children[c]) && (path = child_path(k, r->children[c]))
                     ? reign__zk_get(o->zk, path, NULL, REIGN__ZK_RETRY, o, on_entry,
                                     (void *)(uintptr_t)(i * 3 + READ_NODE))
                     : REIGN_ENOMEM;
        o->pending += rc == 0;
        if (rc == 0 && (k == REIGN_ENTRY_ELECTION || k == REIGN_ENTRY_GROUP)) {
            rc = reign__zk_children(o->zk, path, NULL, REIGN__ZK_RETRY, o, on_entry,
                                    (void *)(uintptr_t)(i * 3 + READ_KIDS));
            o->pending += rc == 0;
        }
        if (rc == 0 && k == REIGN_ENTRY_ELECTION) {
            size_t n = sizeof(REIGN__SLOT_DIR) + strlen(r->children[c]) + 1;
            rc = (slots = reign__malloc(n)) ? 0 : REIGN_ENOMEM;
            if (rc == 0) {
                snprintf(slots, n, "%s/%s", REIGN__SLOT_DIR, r->children[c]);
                rc = reign__zk_children(o->zk, slots, NULL, REIGN__ZK_RETRY, o, on_entry,
                                        (void *)(uintptr_t)(i * 3 + READ_SLOTS));
            }
            o->pending += rc == 0;
        }
        reign__free(path);
        reign__free(slots);
        if (rc < 0) {
            finish_list(o, rc);
            return;
        }
    }
    if (--o->pending == 0)
        finish_list(o, 0);
}

/* ---- SQL: list and remove ------------------------------------------------------------------- */

typedef struct sql_ctx {
    char *prefix;          /* list */
    char *name;            /* remove */
    reign_entry_kind kind; /* remove */
    ent *v;
    size_t n;
    char owner[REIGN_ID_MAX + 1]; /* remove: the live lease's holder */
    reign__candidate_rows cands;  /* remove: the listed candidates standing */
    reign__member_rows members;   /* remove: a group's members, a queue's workers */
} sql_ctx;

static void ctx_free(void *p)
{
    sql_ctx *x = p;
    for (size_t i = 0; i < x->n; i++) {
        reign__free(x->v[i].name);
        reign__free(x->v[i].leader);
    }
    reign__free(x->v);
    reign__candidate_rows_free(&x->cands);
    reign__member_rows_free(&x->members);
    reign__free(x->prefix);
    reign__free(x->name);
    reign__free(x);
}

/* The slots of `reign run --slot|--every` on record for `name` (distinct keys of its runs). */
static int count_slots(reign__sqlconn *c, const char *dc, const char *name, size_t *out, char *err,
                       size_t errlen)
{
    reign__run_rows rows = {0};
    int rc = reign__runs_history(c, dc, name, &rows, err, errlen);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < rows.n; i++) {
        size_t j = 0;
        while (j < i && strcmp(rows.v[j].slot, rows.v[i].slot))
            j++;
        *out += j == i;
    }
    reign__run_rows_free(&rows);
    return 0;
}

/* Adds entry `name` of `kind` to x (its name the first n bytes), unless listed already. */
static int add_entry(sql_ctx *x, size_t *cap, reign_entry_kind kind, const char *name, size_t n)
{
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i].kind == kind && strlen(x->v[i].name) == n && !strncmp(x->v[i].name, name, n))
            return 0;
    if (x->n == *cap) {
        size_t c = *cap ? 2 * *cap : 8;
        ent *v = reign__realloc(x->v, c * sizeof(*v));
        if (!v)
            return REIGN_ENOMEM;
        x->v = v;
        *cap = c;
    }
    ent *e = &x->v[x->n];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    if (!(e->name = reign__strndup(name, n)))
        return REIGN_ENOMEM;
    x->n++;
    return 0;
}

/* The values, by key (as on ZooKeeper). */
static int list_values(reign__sqlconn *c, const char *dc, sql_ctx *x, char *err, size_t errlen)
{
    reign__sql_rows keys;
    int rc = reign__values_keys(c, dc, &keys, err, errlen);
    if (rc < 0)
        return rc;
    size_t pl = strlen(x->prefix), cap = x->n;
    for (size_t i = 0; rc == 0 && i < keys.n_rows; i++) {
        const char *key = reign__sql_cell(&keys, i, 0);
        if (key && *key && !strncmp(key, x->prefix, pl) &&
            (rc = add_entry(x, &cap, REIGN_ENTRY_VALUE, key, strlen(key))) == 0)
            x->v[x->n - 1].used_by = used_by(REIGN_ENTRY_VALUE, key);
    }
    reign__sql_rows_free(&keys);
    return rc < 0 ? rc : 1;
}

/* The groups, each with its members counted as standing. */
static int list_groups(reign__sqlconn *c, const char *dc, sql_ctx *x, char *err, size_t errlen)
{
    reign__sql_rows names;
    int rc = reign__members_groups(c, dc, &names, err, errlen);
    if (rc < 0)
        return rc;
    size_t pl = strlen(x->prefix), cap = x->n;
    for (size_t i = 0; rc >= 0 && i < names.n_rows; i++) {
        const char *name = reign__sql_cell(&names, i, 0);
        if (!name || strncmp(name, x->prefix, pl) ||
            (rc = add_entry(x, &cap, REIGN_ENTRY_GROUP, name, strlen(name))) < 0)
            continue;
        ent *e = &x->v[x->n - 1];
        reign__member_rows m;
        if (reign__group_name_check(name) < 0)
            e->foreign = true;
        else if ((rc = reign__members_read(c, dc, name, &m, err, errlen)) == 0) {
            e->standing = m.n;
            e->gone = !m.group_exists;
            reign__member_rows_free(&m);
        }
    }
    reign__sql_rows_free(&names);
    return rc < 0 ? rc : 1;
}

/*
 * The queues, each listed once: those with rows in the tasks table, and those whose workers'
 * group or masters' election ("tasks.NAME", entries of their own as on ZooKeeper) exists, as a
 * ZooKeeper queue's node is made by whichever of them comes first.  A name reign would not
 * give a queue is foreign.
 */
static int list_queues(reign__sqlconn *c, const char *dc, sql_ctx *x, char *err, size_t errlen)
{
    reign__sql_rows rows[3] = {{0}};
    int rc = reign__tasks_queues(c, dc, &rows[0], err, errlen);
    if (rc >= 0)
        rc = reign__members_groups(c, dc, &rows[1], err, errlen);
    if (rc >= 0)
        rc = reign__sql_catalog_list(c, dc, &rows[2], err, errlen);
    size_t pl = strlen(x->prefix), tl = strlen(REIGN__TASKS_PREFIX), cap = x->n;
    for (size_t k = 0; rc >= 0 && k < 3; k++)
        for (size_t i = 0; rc >= 0 && i < rows[k].n_rows; i++) {
            const char *full = reign__sql_cell(&rows[k], i, 0), *name = full;
            if (k && full && strncmp(full, REIGN__TASKS_PREFIX, tl))
                continue;
            if (!name || strncmp(name += k ? tl : 0, x->prefix, pl))
                continue;
            reign__lease l = {0};
            if (k == 2 && reign__name_check(full) == 0 &&
                (rc = reign__sql_lease_read(c, dc, full, &l, err, errlen)) >= 0 &&
                (!l.exists || reign__sql_lease_removed(&l))) {
                reign__lease_clear(&l);
                continue; /* cleared by `reign rm`: no election */
            }
            reign__lease_clear(&l);
            size_t n = x->n;
            if (rc >= 0 && (rc = add_entry(x, &cap, REIGN_ENTRY_QUEUE, name, strlen(name))) == 0 &&
                x->n > n)
                x->v[n].foreign = reign__tasks_queue_check(name) < 0;
        }
    for (size_t k = 0; k < 3; k++)
        reign__sql_rows_free(&rows[k]);
    return rc < 0 ? rc : 1;
}

static int sql_list(reign__sqlconn *c, const char *dc, void *p, char *err, size_t errlen)
{
    sql_ctx *x = p;
    reign__sql_rows rows = {0};
    int rc = reign__sql_catalog_list(c, dc, &rows, err, errlen);
    if (rc < 0)
        return rc;
    size_t pl = strlen(x->prefix);
    x->v = reign__calloc(rows.n_rows ? rows.n_rows : 1, sizeof(*x->v));
    rc = x->v ? 1 : REIGN_ENOMEM;
    for (size_t i = 0; rc > 0 && i < rows.n_rows; i++) {
        const char *name = reign__sql_cell(&rows, i, 0);
        if (!name || strncmp(name, x->prefix, pl))
            continue;
        ent *e = &x->v[x->n];
        e->kind = REIGN_ENTRY_ELECTION;
        if (!(e->name = reign__strdup(name))) {
            rc = REIGN_ENOMEM;
            break;
        }
        x->n++;
        if (reign__name_check(name) < 0) {
            e->foreign = true; /* not a name reign would have written */
            continue;
        }
        reign__lease l = {0};
        rc = reign__sql_lease_read(c, dc, name, &l, err, errlen);
        if (rc < 0 || (rc = count_slots(c, dc, name, &e->slots, err, errlen)) < 0)
            break;
        rc = 1;
        if (!l.exists || reign__sql_lease_removed(&l))
            e->gone = true; /* deleted since the listing, or cleared by `reign rm` */
        else if (!l.released && !l.db_expired && l.owner[0]) {
            e->standing = 1;
            if (!(e->leader = reign__strdup(l.owner)))
                rc = REIGN_ENOMEM;
        }
        reign__lease_clear(&l);
    }
    reign__sql_rows_free(&rows);
    if (rc >= 0)
        rc = list_values(c, dc, x, err, errlen);
    if (rc >= 0)
        rc = list_groups(c, dc, x, err, errlen);
    return rc < 0 ? rc : list_queues(c, dc, x, err, errlen);
}

static void on_sql_list(void *owner, void *arg, const reign__sqlw_result *r)
{
    store_op *o = owner;
    sql_ctx *x = r->ctx;
    if (r->rc < 0) {
        finish_list(o, r->rc);
        return;
    }
    /* Take the entries over: the context is freed after this callback. */
    o->v = x->v;
    o->n = o->cap = x->n;
    x->v = NULL;
    x->n = 0;
    finish_list(o, 0);
}

/* The longest lease `reign rm` waits out to see whether its holder is alive. */
#define RM_WAIT_MAX_MS 60000

/*
 * Whether somebody stands in election `name`, whose lease it reads into *l: 0 (nobody; *l is
 * the row as read, which may be none, or one cleared by `reign rm`), REIGN_EBUSY (x->owner
 * holds the lease, or x->cands stand listed), or a negative code.
 */
static int lease_in_use(reign__sqlconn *c, const char *dc, const char *name, reign__lease *l,
                        sql_ctx *x, char *err, size_t errlen)
{
    int rc = reign__sql_lease_read(c, dc, name, l, err, errlen);
    if (rc < 0 || !l->exists || reign__sql_lease_removed(l))
        return rc < 0 ? rc : 0;
    if (!l->released && l->owner[0] &&
        (!l->db_expired ||
         (rc = reign__sql_lease_still(c, dc, name, l, RM_WAIT_MAX_MS, err, errlen)) <= 0)) {
        /* Held: in use while the database's clock says it has not run out, and, when it says
         * it has, unless it stands still for a whole lease on our own clock (no wall clock
         * decides who leads: a stepped database clock must not let rm clear a live lease). */
        if (rc < 0)
            return rc;
        reign__strlcpy(x->owner, l->owner, sizeof(x->owner));
        return REIGN_EBUSY;
    }
    if ((rc = reign__candidates_list(c, dc, name, &x->cands, err, errlen)) < 0)
        return rc;
    return x->cands.n ? REIGN_EBUSY : 0; /* listed candidates stand, about to claim the lease */
}

/* After a removal refused because the lease moved since it was read: who holds it now. */
static int lease_taken(reign__sqlconn *c, const char *dc, const char *name, sql_ctx *x, char *err,
                       size_t errlen)
{
    reign__lease l = {0};
    int rc = reign__sql_lease_read(c, dc, name, &l, err, errlen);
    if (rc >= 0)
        reign__strlcpy(x->owner, l.exists ? l.owner : "", sizeof(x->owner));
    reign__lease_clear(&l);
    return rc < 0 ? rc : REIGN_EBUSY;
}

/* A queue: nobody masters it (its election "tasks.NAME" is free), then, in one transaction
 * (tasks.h), nobody works for it (its group "tasks.NAME"), and its rows go. */
static int sql_remove_queue(reign__sqlconn *c, const char *dc, sql_ctx *x, char *err, size_t errlen)
{
    char *gname = reign__tasks_group_name(x->name);
    if (!gname)
        return REIGN_ENOMEM;
    reign__lease l = {0};
    int rc = reign__tasks_queue_check(x->name) < 0 ? REIGN_EFOREIGN
                                                   : lease_in_use(c, dc, gname, &l, x, err, errlen);
    bool held = l.exists && !reign__sql_lease_removed(&l);
    if (rc == 0)
        rc = reign__tasks_remove_queue(c, dc, x->name, held ? &l : NULL, err, errlen);
    if (rc > 0 && held && /* the lease row is cleared: its candidates' rows go */
        (rc = reign__candidates_remove(c, dc, gname, err, errlen)) == 0)
        rc = 1;
    if (rc == REIGN_EBUSY) { /* name the workers too, and the master that took the lease */
        if (reign__members_read(c, dc, gname, &x->members, err, errlen) < 0)
            memset(&x->members, 0, sizeof x->members); /* by whom is unknown */
        if (!x->members.n && !x->owner[0] && !x->cands.n && held)
            rc = lease_taken(c, dc, gname, x, err, errlen);
    }
    reign__lease_clear(&l);
    reign__free(gname);
    return rc == 0 ? REIGN_ENOENT : rc;
}

static int sql_remove(reign__sqlconn *c, const char *dc, void *p, char *err, size_t errlen)
{
    sql_ctx *x = p;
    if (x->kind == REIGN_ENTRY_VALUE) { /* a value is never in use: at whatever version */
        int64_t version;
        return reign__values_delete(c, dc, x->name, REIGN_VALUE_ANY, &version, err, errlen);
    }
    if (x->kind == REIGN_ENTRY_QUEUE)
        return sql_remove_queue(c, dc, x, err, errlen);
    if (x->kind == REIGN_ENTRY_GROUP) {
        int rc = reign__members_remove_group(c, dc, x->name, err, errlen);
        if (rc == REIGN_EBUSY && reign__members_read(c, dc, x->name, &x->members, err, errlen) < 0)
            memset(&x->members, 0, sizeof x->members); /* in use, by whom is unknown */
        return rc == 0 ? REIGN_ENOENT : rc;
    }
    reign__lease l = {0};
    int rc = lease_in_use(c, dc, x->name, &l, x, err, errlen);
    if (rc == 0 && (!l.exists || reign__sql_lease_removed(&l)))
        rc = REIGN_ENOENT;
    else if (rc == 0) {
        rc = reign__sql_catalog_clear(c, dc, &l, x->name, err, errlen);
        if (rc > 0) { /* the lease row is cleared: its candidates' rows and history go */
            rc = reign__candidates_remove(c, dc, x->name, err, errlen);
            if (rc == 0)
                rc = reign__history_remove(c, dc, x->name, err, errlen);
        } else if (rc == 0) { /* taken over since the read */
            rc = lease_taken(c, dc, x->name, x, err, errlen);
        }
    }
    reign__lease_clear(&l);
    return rc;
}

static void on_sql_remove(void *owner, void *arg, const reign__sqlw_result *r)
{
    store_op *o = owner;
    sql_ctx *x = r->ctx;
    (void)arg;
    if (r->rc != REIGN_EBUSY) {
        finish_remove(o, r->rc < 0 ? r->rc : 0, NULL, 0);
        return;
    }
    /* Who stands: a group's or a queue's members, an election's listed candidates, or else
     * the holder of its lease (a queue: its master). */
    size_t n = 0, cap = x->members.n + (x->cands.n ? x->cands.n : 1);
    const char **ids = reign__calloc(cap, sizeof(*ids));
    for (size_t i = 0; ids && i < x->members.n; i++)
        ids[n++] = x->members.v[i].id;
    for (size_t i = 0; ids && i < x->cands.n; i++)
        ids[n++] = x->cands.v[i].owner;
    if (ids && !x->cands.n && x->owner[0])
        ids[n++] = x->owner;
    finish_remove(o, ids ? REIGN_EBUSY : REIGN_ENOMEM, ids, n);
    reign__free(ids);
}

static int sql_start(store_op *o, bool list)
{
    sql_ctx *x = reign__calloc(1, sizeof(*x));
    if (!x)
        return REIGN_ENOMEM;
    x->kind = o->kind;
    if (list ? !(x->prefix = reign__strdup(o->prefix)) : !(x->name = reign__strdup(o->name))) {
        ctx_free(x);
        return REIGN_ENOMEM;
    }
    int rc = reign__sqlw_call(o->sql, list ? "listing" : "removing", list ? sql_list : sql_remove,
                              x, ctx_free, o, list ? on_sql_list : on_sql_remove, NULL);
    if (rc < 0)
        ctx_free(x);
    return rc;
}

/* ---- list ----------------------------------------------------------------------------------- */

int reign_store_list(reign_client *client, const char *prefix, reign_store_list_cb *cb,
                     void *userdata)
{
    store_op *o = op_new(client, (void *)cb, userdata);
    if (!o)
        return client && cb ? REIGN_ENOMEM : REIGN_EINVAL;
    o->lcb = cb;
    if (!(o->prefix = reign__strdup(prefix ? prefix : ""))) {
        op_free(o);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &o->recipe);
    int rc = 0;
    if (o->sql) {
        rc = sql_start(o, true);
    } else {
        o->pending = 1; /* until every directory is asked for */
        for (int k = REIGN_ENTRY_ELECTION; k <= REIGN_ENTRY_QUEUE && rc == 0; k++) {
            rc = reign__zk_children(o->zk, dir_of((reign_entry_kind)k), NULL, REIGN__ZK_RETRY, o,
                                    on_dir, (void *)(uintptr_t)k);
            o->pending += rc == 0;
        }
        if (rc == 0 && --o->pending == 0)
            finish_list(o, 0);
    }
    if (rc < 0) {
        o->done = true;
        op_free(o);
    }
    return rc;
}

/* ---- remove (ZooKeeper) --------------------------------------------------------------------- */

/* What an election's removal deletes besides the election node (arg of on_deleted). */
enum { DEL_HISTORY = 1, DEL_TERM = 2, DEL_ELECTION = 4 };

static void delete_election(store_op *o, unsigned parts);

static void on_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    unsigned parts = (unsigned)(uintptr_t)arg;
    if (r->rc == REIGN_ENOENT && (parts & DEL_TERM) &&
        r->failed_op == ((parts & DEL_HISTORY) ? 1 : 0)) {
        delete_election(o, parts & ~(unsigned)DEL_TERM); /* no term: an election never led */
        return;
    }
    /* Somebody joined meanwhile, or changed it: refused all the same. */
    int rc = r->rc == REIGN_ENOTEMPTY || r->rc == REIGN_EBADVERSION ? REIGN_EBUSY : r->rc;
    finish_remove(o, rc, NULL, 0);
}

/* An election: its history node (its records deleted just before), its term and itself, in one
 * multi that fails if somebody joined meanwhile (ZooKeeper deletes no node with children). */
static void delete_election(store_op *o, unsigned parts)
{
    char *term = reign__path_join(o->path, REIGN__N_TERM);
    char *history = reign__path_join(o->path, REIGN__N_HISTORY);
    int rc = REIGN_ENOMEM;
    if (term && history) {
        reign__zk_mop ops[3];
        size_t n = 0;
        if (parts & DEL_HISTORY)
            ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MDELETE, .path = history, .version = -1};
        if (parts & DEL_TERM)
            ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MDELETE, .path = term, .version = -1};
        ops[n++] =
            (reign__zk_mop){.type = REIGN__ZK_MDELETE, .path = o->path, .version = o->version};
        rc = reign__zk_multi(o->zk, ops, n, o, on_deleted,
                             (void *)(uintptr_t)(parts | DEL_ELECTION));
    }
    reign__free(term);
    reign__free(history);
    if (rc < 0)
        finish_remove(o, rc, NULL, 0);
}

/* The history's records go first, each on its own (there may be more than one multi takes). */
static void on_history_listed(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    if (r->rc != 0 && r->rc != REIGN_ENOENT) {
        finish_remove(o, r->rc, NULL, 0);
        return;
    }
    char *history = reign__path_join(o->path, REIGN__N_HISTORY);
    for (size_t i = 0; history && i < r->n_children; i++) {
        char *rec = reign__path_join(history, r->children[i]);
        if (rec)
            reign__zk_delete(o->zk, rec, -1, 0, NULL, NULL, NULL);
        reign__free(rec);
    }
    reign__free(history);
    delete_election(o, DEL_TERM | (r->rc == 0 ? DEL_HISTORY : 0));
}

static void delete_node(store_op *o)
{
    int rc;
    if (o->kind == REIGN_ENTRY_ELECTION) {
        char *history = reign__path_join(o->path, REIGN__N_HISTORY);
        rc = history ? reign__zk_children(o->zk, history, NULL, REIGN__ZK_RETRY, o,
                                          on_history_listed, NULL)
                     : REIGN_ENOMEM;
        reign__free(history);
    } else {
        rc = reign__zk_delete(o->zk, o->path, o->version, 0, o, on_deleted, NULL);
    }
    if (rc < 0)
        finish_remove(o, rc, NULL, 0);
}

/*
 * Who stands, from a recipe's one-shot read: `n` of them, the id of the i-th from id_of().
 * Nobody: delete.  Else refuse, naming them.
 */
static void judge(store_op *o, int err, size_t n, const char *(*id_of)(const void *, size_t),
                  const void *from)
{
    o->sub_pending = false;
    if (err < 0 || n == 0) {
        if (err < 0)
            finish_remove(o, err, NULL, 0);
        else
            delete_node(o);
        return;
    }
    const char **ids = reign__calloc(n, sizeof(*ids));
    if (!ids) {
        finish_remove(o, REIGN_ENOMEM, NULL, 0);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const char *id = id_of(from, i);
        ids[i] = id ? id : "";
    }
    finish_remove(o, REIGN_EBUSY, ids, n);
    reign__free(ids);
}

/* Candidates in order; a leader alone (its node listed no more) stands too. */
static const char *candidate_id(const void *from, size_t i)
{
    const reign_election_view *v = from;
    return v->n_candidates ? v->candidates[i].id : v->leader.id;
}

static void on_election_view(reign_client *client, int err, const reign_election_view *view,
                             void *userdata)
{
    (void)client;
    size_t n = err < 0 ? 0 : view->n_candidates ? view->n_candidates : (size_t)view->has_leader;
    judge(userdata, err, n, candidate_id, view);
}

static const char *member_id(const void *from, size_t i)
{
    return ((const reign_member *)from)[i].id;
}

static void on_group_list(reign_client *client, int err, const reign_member *members, size_t n,
                          void *userdata)
{
    (void)client;
    judge(userdata, err, err < 0 ? 0 : n, member_id, members);
}

/* ---- remove a queue (ZooKeeper): nobody in its group or election, then its subtree ---- */

static int tree_walk(store_op *o, tnode *t);

static void tree_fail(store_op *o, int rc)
{
    if (o->tree_failed)
        return;
    o->tree_failed = true;
    /* A node appeared meanwhile (a task submitted): refused, what was deleted stays deleted. */
    finish_remove(o, rc == REIGN_ENOTEMPTY ? REIGN_EBUSY : rc, NULL, 0);
}

static void on_tree_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    tnode *t = arg;
    /* ENOENT: a container node the server removed once it was empty. */
    if (r->rc < 0 && r->rc != REIGN_ENOENT) {
        tree_fail(o, r->rc);
        return;
    }
    if (!t->parent) {
        finish_remove(o, 0, NULL, 0);
        return;
    }
    if (--t->parent->kids == 0) {
        int rc = reign__zk_delete(o->zk, t->parent->path, -1, REIGN__ZK_RETRY, o, on_tree_deleted,
                                  t->parent);
        if (rc < 0)
            tree_fail(o, rc);
    }
}

static void on_tree_children(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    tnode *t = arg;
    if (r->rc == REIGN_ENOENT && t->parent) {
        on_tree_deleted(o, t, r); /* gone already: as if deleted */
        return;
    }
    if (r->rc < 0) {
        tree_fail(o, r->rc);
        return;
    }
    if (r->n_children == 0) {
        int rc = reign__zk_delete(o->zk, t->path, -1, REIGN__ZK_RETRY, o, on_tree_deleted, t);
        if (rc < 0)
            tree_fail(o, rc);
        return;
    }
    t->kids = r->n_children;
    for (size_t i = 0; i < r->n_children; i++) {
        tnode *k = reign__calloc(1, sizeof(*k));
        size_t n = strlen(t->path) + strlen(r->children[i]) + 2;
        if (!k || !(k->path = reign__malloc(n))) {
            reign__free(k);
            tree_fail(o, REIGN_ENOMEM);
            return;
        }
        snprintf(k->path, n, "%s/%s", t->path, r->children[i]);
        k->parent = t;
        k->next_alloc = o->tree;
        o->tree = k;
        int rc = tree_walk(o, k);
        if (rc < 0) {
            tree_fail(o, rc); /* frees o: return at once */
            return;
        }
    }
}

static int tree_walk(store_op *o, tnode *t)
{
    return reign__zk_children(o->zk, t->path, NULL, REIGN__ZK_RETRY, o, on_tree_children, t);
}

static void remove_queue_tree(store_op *o)
{
    tnode *t = reign__calloc(1, sizeof(*t));
    if (!t || !(t->path = reign__strdup(o->path))) {
        reign__free(t);
        finish_remove(o, REIGN_ENOMEM, NULL, 0);
        return;
    }
    o->tree = t;
    int rc = tree_walk(o, t);
    if (rc < 0)
        tree_fail(o, rc);
}

/* The queue's workers (its group), then its masters (its election): nobody may stand. */
static void on_queue_masters(reign_client *client, int err, const reign_election_view *view,
                             void *userdata)
{
    store_op *o = userdata;
    (void)client;
    o->sub_pending = false;
    if (err == REIGN_ENOENT || (err == 0 && !view->n_candidates && !view->has_leader)) {
        remove_queue_tree(o);
        return;
    }
    size_t n = err < 0 ? 0 : view->n_candidates ? view->n_candidates : 1;
    judge(o, err, n, candidate_id, view);
}

static void on_queue_workers(reign_client *client, int err, const reign_member *members, size_t n,
                             void *userdata)
{
    store_op *o = userdata;
    if (err == REIGN_ENOENT || (err == 0 && n == 0)) {
        char name[sizeof(REIGN__TASKS_PREFIX) + REIGN_NAME_MAX];
        snprintf(name, sizeof(name), "%s%s", REIGN__TASKS_PREFIX, o->name);
        int rc = reign_election_query(client, name, on_queue_masters, o);
        if (rc < 0) {
            o->sub_pending = false;
            finish_remove(o, rc, NULL, 0);
        }
        return;
    }
    judge(o, err, err < 0 ? 0 : n, member_id, members);
}

static void on_value_deleted(reign_client *client, int err, const reign_value *value,
                             void *userdata)
{
    store_op *o = userdata;
    (void)client;
    (void)value;
    o->sub_pending = false;
    /* Written meanwhile: refused all the same, as for the other kinds. */
    finish_remove(o, err == REIGN_EBADVERSION ? REIGN_EBUSY : err, NULL, 0);
}

static void on_node(void *owner, void *arg, const reign__zk_result *r)
{
    store_op *o = owner;
    (void)arg;
    if (r->rc < 0) {
        finish_remove(o, r->rc, NULL, 0);
        return;
    }
    if (o->kind == REIGN_ENTRY_VALUE && r->value_len == 0) {
        finish_remove(o, REIGN_ENOENT, NULL, 0); /* only the parent of other values */
        return;
    }
    if (!ours(o->kind, r->value, r->value_len)) {
        finish_remove(o, REIGN_EFOREIGN, NULL, 0);
        return;
    }
    o->version = r->stat.version;
    if (o->kind == REIGN_ENTRY_VALUE) {
        /* The value recipe's delete, at the version read: it also prunes the parents it
         * leaves empty, and keeps the node (emptied) if values live below it. */
        o->sub_pending = true;
        int rc = reign_value_delete(o->client, o->name, o->version, on_value_deleted, o);
        if (rc < 0) {
            o->sub_pending = false;
            finish_remove(o, rc, NULL, 0);
        }
        return;
    }
    /* A call that fails never calls back. */
    o->sub_pending = true;
    char tq[sizeof(REIGN__TASKS_PREFIX) + REIGN_NAME_MAX];
    snprintf(tq, sizeof(tq), "%s%s", REIGN__TASKS_PREFIX, o->name);
    int rc = o->kind == REIGN_ENTRY_ELECTION
                 ? reign_election_query(o->client, o->name, on_election_view, o)
             : o->kind == REIGN_ENTRY_GROUP ? reign_group_list(o->client, o->name, on_group_list, o)
                                            : reign_group_list(o->client, tq, on_queue_workers, o);
    if (rc < 0) {
        o->sub_pending = false;
        finish_remove(o, rc, NULL, 0);
    }
}

int reign_store_remove(reign_client *client, reign_entry_kind kind, const char *name,
                       reign_store_remove_cb *cb, void *userdata)
{
    /* A value's key may have several segments; every other name has one. */
    if (!reign_entry_kind_name(kind) || !name || !*name ||
        (kind == REIGN_ENTRY_VALUE
             ? reign_value_key_check(name) < 0
             : strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")))
        return REIGN_EINVAL;
    store_op *o = op_new(client, (void *)cb, userdata);
    if (!o)
        return client && cb ? REIGN_ENOMEM : REIGN_EINVAL;
    o->rcb = cb;
    o->kind = kind;
    if (!(o->name = reign__strdup(name)) || !(o->path = child_path(kind, name))) {
        op_free(o);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &o->recipe);
    int rc = o->sql ? sql_start(o, false)
                    : reign__zk_get(o->zk, o->path, NULL, REIGN__ZK_RETRY, o, on_node, NULL);
    if (rc < 0) {
        o->done = true;
        op_free(o);
    }
    return rc;
}
