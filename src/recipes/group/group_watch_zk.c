/*
 * group_watch_zk.c - watching a group's members on ZooKeeper
 * (reign_group_watch and reign_group_list(), see <reign/group.h>).
 *
 * A watch is the ZooKeeper book's ChildrenCache: it keeps the members it
 * reported and, on every notification, makes a "round": list the children
 * (re-arming the children watch with the listing itself), read the data of
 * every member that is new or whose data watch fired (re-arming that watch
 * with the read), then report the difference against the previous view.
 * One round runs at a time; a notification during a round marks it dirty
 * and another round follows, so a change made between a notification and
 * the re-read always triggers another round.  One watch per node and
 * purpose is registered at a time, since the C client would fire every
 * registration.  reign_group_list() is a round without watches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"
#include "recipes/life.h"
#include "record.h"

/* What the cache knows of one child node.  Immutable once published,
 * except for the watch flags (never shown to users). */
static void w_free(reign_group_watch *base);

typedef struct entry {
    reign_member m; /* m.node, m.id, m.data point into this entry's allocations */
    bool member;    /* an ephemeral node holding a reign record; else ignored */
    bool watched;   /* our data watch is registered on it */
    bool stale;     /* its data watch fired: read it again */
} entry;

/* One child in the round under way. */
typedef struct slot {
    char *node;
    uint64_t seq;
    entry *old;  /* what the cache had, or NULL */
    entry *next; /* what this round found (old itself if not re-read), or NULL: gone */
    bool read;   /* a read is in flight */
} slot;

typedef struct zwatch {
    struct reign_group_watch head; /* first: name, userdata, the view */
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *dir;
    bool newest_per_id;
    reign_group_watch_cb *cb;
    reign_group_list_cb *list_cb; /* a one-shot listing (no watches) */

    reign__life life; /* the epoch bumped per session: older answers are ignored */
    bool children_watched;
    bool dir_watched;
    bool round_active;
    bool dirty;
    bool ready_sent;
    bool dir_known; /* the group node existed at the last round */
    slot *slots;
    size_t n_slots;
    size_t pending;
    reign__timer retry;

    entry **cache; /* by seq */
    size_t n_cache;
} zwatch;

/* A request's arg: epoch, slot index and whether it carries a watch. */
#define SLOT_BITS       24
#define W_ARG(w, i, wt) REIGN__LIFE_ARG(&(w)->life, SLOT_BITS + 1, ((uintptr_t)(i) << 1) | (wt))
#define W_WATCH(a)      (reign__life_low((a), SLOT_BITS + 1) & 1u)
#define W_SLOT(a)       (reign__life_low((a), SLOT_BITS + 1) >> 1)
#define W_STALE(w, a)   reign__life_stale(&(w)->life, (a), SLOT_BITS + 1)

static void kick(zwatch *w);

static void entry_free(entry *e)
{
    if (!e)
        return;
    reign__free((char *)e->m.node);
    reign__free((char *)e->m.id);
    reign__free((void *)e->m.data);
    reign__free(e);
}

static void w_leave(zwatch *w)
{
    if (reign__life_leave(&w->life))
        w_free(&w->head);
}

static void w_emit(zwatch *w, reign_group_watch_event *ev)
{
    reign__group_watch_emit(&w->head, &w->life, w->cb, ev);
}

static void clear_slots(zwatch *w)
{
    for (size_t i = 0; i < w->n_slots; i++) {
        reign__free(w->slots[i].node);
        if (w->slots[i].next != w->slots[i].old)
            entry_free(w->slots[i].next);
    }
    reign__free(w->slots);
    w->slots = NULL;
    w->n_slots = w->pending = 0;
}

static void finish_list(zwatch *w, int err)
{
    if (w->list_cb && reign__life_live(&w->life)) {
        reign__life_enter(&w->life);
        w->list_cb(w->client, err, err == 0 ? w->head.view : NULL, err == 0 ? w->head.n_view : 0,
                   w->head.userdata);
        (void)reign__life_leave(&w->life);
    }
    w->list_cb = NULL;
    w_free(&w->head);
}

/* A round failed: report it and try again later (or, for a listing, end). */
static void round_failed(zwatch *w, int err, const char *what)
{
    w->round_active = false;
    clear_slots(w);
    if (w->list_cb) {
        finish_list(w, err);
        return;
    }
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED)
        return; /* a new session (CONNECTED) starts a round */
    char msg[512];
    snprintf(msg, sizeof(msg), "group '%s': %s: %s; retrying", w->head.name, what,
             reign_strerror(err));
    reign__log(w->log, REIGN_LOG_WARN, "%s", msg);
    reign_group_watch_event ev = {.type = REIGN_MEMBERS_ERROR, .error = err, .message = msg};
    w_emit(w, &ev);
    if (reign__life_live(&w->life))
        reign__timer_start(reign__client_timers(w->client), &w->retry,
                           reign__now_ns() + REIGN__GROUP_RETRY_NS);
}

/* Every slot is settled: the new cache and view replace the old, and the
 * difference is reported. */
static void complete_round(zwatch *w, bool dir_exists)
{
    size_t n = 0;
    entry **cache = reign__calloc(w->n_slots ? w->n_slots : 1, sizeof(*cache));
    reign_member *view = reign__calloc(w->n_slots ? w->n_slots : 1, sizeof(*view));
    if (!cache || !view) {
        reign__free(cache);
        reign__free(view);
        round_failed(w, REIGN_ENOMEM, "building the view");
        return;
    }
    for (size_t i = 0; i < w->n_slots; i++)
        if (w->slots[i].next)
            cache[n++] = w->slots[i].next;
    size_t nv = 0;
    for (size_t i = 0; i < n; i++)
        if (cache[i]->member)
            view[nv++] = cache[i]->m;
    if (w->newest_per_id)
        nv = reign__members_newest_per_id(view, nv);

    /* Old entries no longer in the cache stay alive until the report is
     * over: the REMOVED and CHANGED events point into them. */
    entry **old_cache = w->cache;
    size_t n_old_cache = w->n_cache;
    reign_member *old_view = w->head.view;
    size_t n_old_view = w->head.n_view;
    for (size_t i = 0; i < w->n_slots; i++)
        w->slots[i].next = w->slots[i].old; /* owned by the new cache now */
    w->cache = cache;
    w->n_cache = n;
    w->head.view = view;
    w->head.n_view = nv;
    clear_slots(w);
    w->round_active = false;
    bool was_known = w->dir_known;
    w->dir_known = dir_exists;

    reign__life_enter(&w->life);
    if (w->list_cb) {
        finish_list(w, dir_exists ? 0 : REIGN_ENOENT);
    } else {
        reign__group_watch_report(&w->head, &w->life, w->cb, old_view, n_old_view, was_known,
                                  dir_exists, &w->ready_sent);
    }
    for (size_t i = 0; i < n_old_cache; i++) {
        bool kept = false;
        for (size_t j = 0; j < n && !kept; j++)
            kept = cache[j] == old_cache[i];
        if (!kept)
            entry_free(old_cache[i]);
    }
    reign__free(old_cache);
    reign__free(old_view);
    if (w->dirty && reign__life_live(&w->life))
        kick(w);
    w_leave(w);
}

static void settle_slot(zwatch *w)
{
    if (--w->pending == 0)
        complete_round(w, true);
}

static entry *entry_from(const char *node, uint64_t seq, const reign__zk_result *r)
{
    entry *e = reign__calloc(1, sizeof(*e));
    if (!e || !(e->m.node = reign__strdup(node))) {
        reign__free(e);
        return NULL;
    }
    e->m.seq = seq;
    e->m.joined_ms = r->stat.ctime_ms;
    e->m.version = r->stat.version;
    reign__record rec;
    /* Only an ephemeral node holding a reign record is a member: a
     * persistent one named like it has no session behind it. */
    if (r->stat.ephemeral_owner == 0 || reign__record_parse(r->value, r->value_len, &rec) < 0)
        return e;
    const char *id = reign__record_get(&rec, REIGN__K_ID);
    e->m.id = reign__strdup(id ? id : "");
    e->m.data = reign__memdup(rec.payload, rec.payload_len);
    e->m.data_len = rec.payload_len;
    reign__record_clear(&rec);
    if (!e->m.id || (rec.payload_len && !e->m.data)) {
        entry_free(e);
        return NULL;
    }
    e->member = true;
    return e;
}

static void on_data_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    const char *node = reign__group_basename(path);
    /* The entry may be in the cache, or just read by the round under way. */
    for (size_t i = 0; i < w->n_cache; i++)
        if (!strcmp(w->cache[i]->m.node, node)) {
            w->cache[i]->watched = false;
            w->cache[i]->stale = true;
        }
    for (size_t i = 0; i < w->n_slots; i++)
        if (w->slots[i].next && !strcmp(w->slots[i].node, node)) {
            w->slots[i].next->watched = false;
            w->slots[i].next->stale = true;
        }
    kick(w);
    w_leave(w);
}

static void on_member_read(void *owner, void *arg, const reign__zk_result *r)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    if (W_STALE(w, arg) || !w->round_active || W_SLOT(arg) >= w->n_slots)
        goto out;
    slot *s = &w->slots[W_SLOT(arg)];
    s->read = false;
    if (r->rc == REIGN_ENOENT) {
        /* Gone since the listing, which armed the children watch: the next
         * round reports it. */
        s->next = NULL;
        settle_slot(w);
    } else if (r->rc != 0) {
        round_failed(w, r->rc, "reading a member");
    } else if (!(s->next = entry_from(s->node, s->seq, r))) {
        round_failed(w, REIGN_ENOMEM, "reading a member");
    } else {
        /* get() registered our watch if we asked; else the old one stands */
        s->next->watched = W_WATCH(arg) || (s->old && s->old->watched);
        settle_slot(w);
    }
out:
    w_leave(w);
}

static void on_dir_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    w->dir_watched = false;
    kick(w);
    w_leave(w);
}

static void on_dir_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    if (W_WATCH(arg) && r->rc != 0 && r->rc != REIGN_ENOENT)
        w->dir_watched = false;
    if (!W_STALE(w, arg) && r->rc == 0)
        kick(w); /* created between the listing and this */
    w_leave(w);
}

static void on_children_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    w->children_watched = false;
    kick(w);
    w_leave(w);
}

/* Reads slot i's data, arming its data watch with the read unless armed. */
static int read_slot(zwatch *w, size_t i)
{
    slot *s = &w->slots[i];
    bool watch = !w->list_cb && !(s->old && s->old->watched);
    char *path = reign__path_join(w->dir, s->node);
    if (!path)
        return REIGN_ENOMEM;
    int rc = reign__zk_get(w->zk, path, watch ? on_data_event : NULL, REIGN__ZK_RETRY, w,
                           on_member_read, W_ARG(w, i, watch));
    reign__free(path);
    if (rc == 0) {
        s->read = true;
        w->pending++;
    }
    return rc;
}

static entry *cache_find(const zwatch *w, const char *node)
{
    for (size_t i = 0; i < w->n_cache; i++)
        if (!strcmp(w->cache[i]->m.node, node))
            return w->cache[i];
    return NULL;
}

static int slot_cmp(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void on_children(void *owner, void *arg, const reign__zk_result *r)
{
    zwatch *w = owner;
    reign__life_enter(&w->life);
    if (W_WATCH(arg) && r->rc != 0)
        w->children_watched = false;
    if (W_STALE(w, arg) || !w->round_active)
        goto out;
    if (r->rc == REIGN_ENOENT) {
        /* No group: an empty view; watch for the group to appear (exists()
         * registers on a missing node). */
        if (!w->list_cb && !w->dir_watched) {
            w->dir_watched = true;
            if (reign__zk_exists(w->zk, w->dir, on_dir_event, REIGN__ZK_RETRY, w, on_dir_exists,
                                 W_ARG(w, 0, 1)) < 0)
                w->dir_watched = false;
        }
        complete_round(w, false);
        goto out;
    }
    if (r->rc != 0) {
        round_failed(w, r->rc, "listing members");
        goto out;
    }
    if (r->n_children >= (1u << SLOT_BITS)) {
        round_failed(w, REIGN_E2BIG, "listing members");
        goto out;
    }
    w->slots = reign__calloc(r->n_children ? r->n_children : 1, sizeof(*w->slots));
    if (!w->slots) {
        round_failed(w, REIGN_ENOMEM, "listing members");
        goto out;
    }
    for (size_t i = 0; i < r->n_children; i++) {
        uint64_t seq;
        if (!reign__member_node_parse(r->children[i], NULL, &seq))
            continue; /* not a member's node: never read, never reported */
        slot *s = &w->slots[w->n_slots++];
        s->seq = seq;
        s->old = cache_find(w, r->children[i]);
        if (!(s->node = reign__strdup(r->children[i]))) {
            round_failed(w, REIGN_ENOMEM, "listing members");
            goto out;
        }
    }
    qsort(w->slots, w->n_slots, sizeof(*w->slots), slot_cmp);
    /* Guard the count while reads are issued: one answering at once
     * must not complete the round early. */
    w->pending = 1;
    for (size_t i = 0; i < w->n_slots; i++) {
        slot *s = &w->slots[i];
        if (s->old && !s->old->stale && s->old->watched) {
            s->next = s->old; /* its data watch stands: nothing changed */
            continue;
        }
        int rc = read_slot(w, i);
        if (rc < 0) {
            round_failed(w, rc, "reading members");
            goto out;
        }
    }
    settle_slot(w);
out:
    w_leave(w);
}

/* Starts a round, or marks one under way dirty.  A negative code if the
 * listing could not be sent (the caller reports it). */
static int start_round(zwatch *w)
{
    if (!reign__life_live(&w->life))
        return 0;
    if (w->round_active) {
        w->dirty = true;
        return 0;
    }
    w->round_active = true;
    w->dirty = false;
    reign__life_bump(&w->life); /* answers of an abandoned round never count in this one */
    bool watch = !w->list_cb && !w->children_watched;
    if (watch)
        w->children_watched = true;
    int rc = reign__zk_children(w->zk, w->dir, watch ? on_children_event : NULL, REIGN__ZK_RETRY, w,
                                on_children, W_ARG(w, 0, watch));
    if (rc < 0) {
        if (watch)
            w->children_watched = false;
        w->round_active = false;
    }
    return rc;
}

static void kick(zwatch *w)
{
    int rc = start_round(w);
    if (rc < 0)
        round_failed(w, rc, "listing members");
}

static void w_retry_cb(reign__timer *t, void *arg)
{
    zwatch *w = arg;
    reign__life_enter(&w->life);
    kick(w);
    w_leave(w);
}

static void w_conn(reign__recipe *rp, reign_conn_state st)
{
    zwatch *w = (zwatch *)rp;
    reign__life_enter(&w->life);
    if (st == REIGN_CONN_CONNECTED) {
        /* A new session: none of our watches survived; read everything. */
        reign__life_bump(&w->life);
        w->children_watched = w->dir_watched = false;
        w->round_active = false;
        clear_slots(w);
        for (size_t i = 0; i < w->n_cache; i++) {
            w->cache[i]->watched = false;
            w->cache[i]->stale = true;
        }
        kick(w);
    } else if (st == REIGN_CONN_RECONNECTED) {
        kick(w); /* cheap: catches a round that failed while suspended */
    } else if (st == REIGN_CONN_CLOSED && w->list_cb) {
        finish_list(w, REIGN_ECLOSED);
    } else if (st == REIGN_CONN_LOST && w->list_cb && reign_client_session_id(w->client) == 0) {
        finish_list(w, REIGN_ESESSION);
    }
    w_leave(w);
}

static void w_destroy(zwatch *w)
{
    reign__timer_stop(reign__client_timers(w->client), &w->retry);
    reign__zk_forget(w->zk, w);
    reign__client_detach(w->client, &w->head.recipe);
    clear_slots(w);
    for (size_t i = 0; i < w->n_cache; i++)
        entry_free(w->cache[i]);
    reign__free(w->cache);
    reign__free(w->head.view);
    reign__free(w->head.name);
    reign__free(w->dir);
    reign__free(w);
}

static void w_on_destroy(reign__recipe *rp)
{
    w_destroy((zwatch *)rp);
}

static const reign__recipe_ops watch_ops = {.conn = w_conn, .destroy = w_on_destroy};

static void w_free(reign_group_watch *base)
{
    zwatch *w = (zwatch *)base;
    (void)reign__life_request_free(&w->life);
    reign__zk_forget(w->zk, w);
    if (reign__life_busy(&w->life))
        return; /* inside one of our callbacks: freed when it returns */
    w_destroy(w);
}

int reign__group_watch_zk(reign_group_watch **ret, reign_client *client, const char *name,
                          const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                          void *userdata)
{
    zwatch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->head.recipe.ops = &watch_ops;
    w->head.free = w_free;
    w->client = client;
    w->zk = reign__client_zk(client);
    w->log = reign__client_log(client);
    w->newest_per_id = o && o->newest_per_id;
    w->cb = o ? o->cb : NULL;
    w->list_cb = list_cb;
    w->head.userdata = o ? o->userdata : userdata;
    reign__timer_init(&w->retry, w_retry_cb, w);
    w->head.name = reign__strdup(name);
    w->dir = reign__group_path(name, NULL);
    if (!w->head.name || !w->dir) {
        reign__free(w->head.name);
        reign__free(w->dir);
        reign__free(w);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &w->head.recipe);
    int rc;
    if (reign__zk_connected(w->zk) && (rc = start_round(w)) < 0) {
        w_destroy(w);
        return rc;
    }
    *ret = &w->head;
    return 0;
}
