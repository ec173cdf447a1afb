/*
 * group.c - group membership on ZooKeeper (see <reign/group.h> for what
 * users get and group_internal.h for the layout).
 *
 * A registration (reign_group) creates its ephemeral sequential node, then
 * watches it: deleted by someone else, it registers again after a delay; on
 * a new session (the old one expired, taking the node with it) it registers
 * again at once.  A create whose answer was lost is recognised by the guid
 * in the node's name, so a retry never leaves a second node.
 *
 * A watch (reign_group_watch) is the ZooKeeper book's ChildrenCache: it
 * keeps the members it reported and, on every notification, makes a
 * "round": list the children (re-arming the children watch with the listing
 * itself), read the data of every member that is new or whose data watch
 * fired (re-arming that watch with the read), then report the difference
 * against the previous view.  One round runs at a time; a notification
 * during a round marks it dirty and another round follows, so a change made
 * between a notification and the re-read always triggers another round.
 * One watch per node and purpose is registered at a time, since the C
 * client would fire every registration.  reign_group_list() is a round
 * without watches.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group_internal.h"
#include "recipes/life.h"
#include "record.h"

#define RETRY_NS (1000 * REIGN__NS_PER_MS)

/* ---- names and views (pure) ---------------------------------------------- */

static int group_name_check(const char *name)
{
    return name && reign__segment_ok(name, strlen(name)) ? 0 : REIGN_ENAME;
}

static int member_cmp(const void *a, const void *b)
{
    const reign_member *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void reign__members_sort(reign_member *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), member_cmp);
}

size_t reign__members_newest_per_id(reign_member *v, size_t n)
{
    /* Quadratic, but only over what one group holds; keeps the order. */
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        bool newer_exists = false;
        for (size_t j = i + 1; j < n && !newer_exists; j++)
            newer_exists = strcmp(v[i].id, v[j].id) == 0;
        if (!newer_exists)
            v[out++] = v[i];
    }
    return out;
}

/* The same registration: same sequence number and node (a group deleted
 * and made again restarts its sequence). */
static bool same_member(const reign_member *a, const reign_member *b)
{
    return a->seq == b->seq && strcmp(a->node, b->node) == 0;
}

/* Index of the member of v (sorted by seq) that is m, or SIZE_MAX. */
static size_t find_member(const reign_member *v, size_t n, const reign_member *m)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].seq < m->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && same_member(&v[lo], m) ? lo : SIZE_MAX;
}

size_t reign__members_diff(const reign_member *before, size_t n_before, const reign_member *now,
                           size_t n_now, reign__member_diff_fn *fn, void *arg, const bool *stop)
{
    size_t count = 0;
    for (size_t i = 0; i < n_before && !(stop && *stop); i++)
        if (find_member(now, n_now, &before[i]) == SIZE_MAX) {
            count++;
            fn(arg, REIGN__MEMBER_REMOVED, &before[i], NULL);
        }
    for (size_t i = 0; i < n_now && !(stop && *stop); i++) {
        size_t j = find_member(before, n_before, &now[i]);
        if (j != SIZE_MAX && before[j].version != now[i].version) {
            count++;
            fn(arg, REIGN__MEMBER_CHANGED, &now[i], &before[j]);
        }
    }
    for (size_t i = 0; i < n_now && !(stop && *stop); i++)
        if (find_member(before, n_before, &now[i]) == SIZE_MAX) {
            count++;
            fn(arg, REIGN__MEMBER_ADDED, &now[i], NULL);
        }
    return count;
}

static char *group_path(const char *name, const char *suffix)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s%s", REIGN__GROUP_DIR, name, suffix ? suffix : "");
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *reign_group_loss_name(reign_group_loss r)
{
    switch (r) {
    case REIGN_GROUP_SESSION_LOST:
        return "session_lost";
    case REIGN_GROUP_NODE_DELETED:
        return "node_deleted";
    }
    return "unknown";
}

const char *reign_group_watch_event_name(reign_group_watch_event_type t)
{
    switch (t) {
    case REIGN_MEMBERS_READY:
        return "ready";
    case REIGN_MEMBER_ADDED:
        return "added";
    case REIGN_MEMBER_REMOVED:
        return "removed";
    case REIGN_MEMBER_CHANGED:
        return "changed";
    case REIGN_MEMBERS_GROUP_DELETED:
        return "group_deleted";
    case REIGN_MEMBERS_ERROR:
        return "error";
    }
    return "unknown";
}

/* ---- registering --------------------------------------------------------- */

typedef enum gstate {
    G_NOSESSION = 1,
    G_CREATING,
    G_REGISTERED,
    G_PROBING, /* our node's deletion was notified: is our session still alive? */
    G_PAUSED,
    G_FAILED
} gstate;

struct reign_group {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *name;
    char *dir;
    char *id;
    void *data;
    size_t data_len;
    int retry_delay_ms;
    reign_group_cb *cb;
    void *userdata;

    gstate state;
    reign__life life; /* the epoch bumped per attempt: older answers are ignored */
    char guid[2 * REIGN__GROUP_GUID_BYTES + 1];
    reign__buf record; /* what our node holds (id, guid, payload) */
    char *my_node;     /* full path, once registered */
    bool announced;    /* REGISTERED told, UNREGISTERED not yet */
    bool own_watched;
    int setup_tries;
    reign__timer timer;
};

#define EPOCH_ARG(g)  REIGN__LIFE_ARG(&(g)->life, 0, 0)
#define G_STALE(g, a) reign__life_stale(&(g)->life, (a), 0)

static void g_create(reign_group *g);

static void g_emit(reign_group *g, reign_group_event *ev)
{
    if (!reign__life_live(&g->life) || !g->cb)
        return;
    ev->at_ns = reign__now_ns();
    reign__life_enter(&g->life);
    g->cb(g, ev, g->userdata);
    (void)reign__life_leave(&g->life);
}

static void g_leave(reign_group *g)
{
    if (reign__life_leave(&g->life))
        reign_group_free(g);
}

static void g_fail(reign_group *g, int err, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "group '%s': %s: %s", g->name, what, reign_strerror(err));
    reign__life_bump(&g->life);
    g->state = G_FAILED;
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign_group_event ev = {.type = REIGN_GROUP_ERROR, .error = err, .message = msg};
    g_emit(g, &ev);
}

/* Tries again later from the top, unless the session is gone (a new one
 * registers by itself). */
static void g_retry(reign_group *g, int err, const char *what)
{
    reign__life_bump(&g->life);
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED) {
        g->state = G_NOSESSION;
        return;
    }
    reign__log(g->log, REIGN_LOG_WARN, "group %s: %s: %s; retrying", g->name, what,
               reign_strerror(err));
    g->state = G_PAUSED;
    reign__timer_start(reign__client_timers(g->client), &g->timer, reign__now_ns() + RETRY_NS);
}

static void g_timer_cb(reign__timer *t, void *arg)
{
    reign_group *g = arg;
    reign__life_enter(&g->life);
    if (g->state == G_PAUSED)
        g_create(g);
    g_leave(g);
}

/* Our node is gone while the session lives (an operator, `zkCli delete`):
 * register again after the delay, so a deliberate removal is visible. */
static void g_node_gone(reign_group *g)
{
    reign__log(g->log, REIGN_LOG_NOTICE, "group %s: our node %s was deleted", g->name,
               g->my_node ? g->my_node : "?");
    reign__life_bump(&g->life);
    reign__free(g->my_node);
    g->my_node = NULL;
    g->own_watched = false;
    g->state = G_PAUSED;
    reign__timer_start(reign__client_timers(g->client), &g->timer,
                       reign__now_ns() + (int64_t)g->retry_delay_ms * REIGN__NS_PER_MS);
    if (g->announced) {
        g->announced = false;
        reign_group_event ev = {.type = REIGN_GROUP_UNREGISTERED,
                                .reason = REIGN_GROUP_NODE_DELETED};
        g_emit(g, &ev);
    }
}

static void g_on_probe(void *owner, void *arg, const reign__zk_result *r)
{
    reign_group *g = owner;
    reign__life_enter(&g->life);
    if (G_STALE(g, arg) || g->state != G_PROBING)
        ; /* a new session or attempt took over */
    else if (r->rc == REIGN_ESESSION || r->rc == REIGN_ECLOSED)
        g->state = G_NOSESSION; /* expired: CONNECTED reports it and registers again */
    else
        g_node_gone(g); /* the server answered this session: someone deleted our node */
    g_leave(g);
}

/*
 * Our node's deletion was notified.  When our own session expired the
 * server deletes the node and may still deliver that notification to us
 * before the expiry itself: ask the server something on this session first,
 * so the loss is reported with its true reason.
 */
static void g_probe(reign_group *g)
{
    reign__life_bump(&g->life);
    g->own_watched = false;
    g->state = G_PROBING;
    if (reign__zk_exists(g->zk, g->dir, NULL, REIGN__ZK_RETRY, g, g_on_probe, EPOCH_ARG(g)) < 0)
        g_node_gone(g);
}

static void g_on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path);

static void g_on_own_exists(void *owner, void *arg, const reign__zk_result *r)
{
    reign_group *g = owner;
    reign__life_enter(&g->life);
    if (r->rc != 0 && r->rc != REIGN_ENOENT)
        g->own_watched = false;
    if (r->rc == REIGN_ENOENT && !G_STALE(g, arg) && g->state == G_REGISTERED)
        g_node_gone(g);
    g_leave(g);
}

static void g_watch_own(reign_group *g)
{
    if (g->own_watched || !g->my_node)
        return;
    g->own_watched = true;
    if (reign__zk_exists(g->zk, g->my_node, g_on_own_event, REIGN__ZK_RETRY, g, g_on_own_exists,
                         EPOCH_ARG(g)) < 0)
        g->own_watched = false;
}

static void g_on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    reign_group *g = owner;
    reign__life_enter(&g->life);
    if (g->my_node && !strcmp(path, g->my_node) && g->state == G_REGISTERED) {
        g->own_watched = false;
        if (ev == REIGN__ZK_DELETED)
            g_probe(g);
        else
            g_watch_own(g); /* our own set_data: keep watching */
    }
    g_leave(g);
}

static void g_registered(reign_group *g, const char *path)
{
    reign__free(g->my_node);
    g->my_node = reign__strdup(path);
    if (!g->my_node) {
        g_retry(g, REIGN_ENOMEM, "recording our node");
        return;
    }
    g->state = G_REGISTERED;
    g->announced = true;
    g->setup_tries = 0;
    reign__log(g->log, REIGN_LOG_INFO, "group %s: %s registered as %s", g->name, g->id, path);
    g_watch_own(g);
    reign_group_event ev = {.type = REIGN_GROUP_REGISTERED, .node = basename_of(path)};
    g_emit(g, &ev);
}

static void g_on_find_own(void *owner, void *arg, const reign__zk_result *r)
{
    reign_group *g = owner;
    reign__life_enter(&g->life);
    if (G_STALE(g, arg) || g->state != G_CREATING)
        goto out;
    if (r->rc != 0) {
        g_retry(g, r->rc, "looking for our node");
        goto out;
    }
    /* After a lost answer: did the create land?  Our guid says so. */
    for (size_t i = 0; i < r->n_children; i++) {
        char guid[sizeof(g->guid)];
        if (reign__member_node_parse(r->children[i], guid, NULL) && !strcmp(guid, g->guid)) {
            char *p = reign__path_join(g->dir, r->children[i]);
            if (p)
                g_registered(g, p);
            else
                g_retry(g, REIGN_ENOMEM, "adopting our node");
            reign__free(p);
            goto out;
        }
    }
    g_create(g);
out:
    g_leave(g);
}

static void g_make_path(reign_group *g)
{
    /* Parents first, each tolerating EEXIST; the create that follows on
     * the same session finds them. */
    reign__buf rec;
    reign__buf_init(&rec);
    const char *kv[] = {REIGN__K_KIND, REIGN__KIND_GROUP};
    if (reign__record_build(&rec, kv, 2, NULL, 0) < 0) {
        reign__buf_free(&rec);
        g_retry(g, REIGN_ENOMEM, "creating the group node");
        return;
    }
    reign__zk_create(g->zk, REIGN__ZK_ROOT, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(g->zk, REIGN__GROUP_DIR, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(g->zk, g->dir, rec.data, rec.len, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__buf_free(&rec);
    g_create(g);
}

static void g_on_created(void *owner, void *arg, const reign__zk_result *r)
{
    reign_group *g = owner;
    reign__life_enter(&g->life);
    if (G_STALE(g, arg) || g->state != G_CREATING)
        goto out;
    switch (r->rc) {
    case 0:
        g_registered(g, r->value ? r->value : "");
        break;
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
        if (reign__zk_children(g->zk, g->dir, NULL, REIGN__ZK_RETRY, g, g_on_find_own,
                               EPOCH_ARG(g)) < 0)
            g_retry(g, REIGN_ENOMEM, "looking for our node");
        break;
    case REIGN_ENOENT:
        if (++g->setup_tries > 5)
            g_fail(g, REIGN_ENOENT,
                   "cannot create the group node (was the URI's chroot deleted? A client "
                   "creates it only when it starts)");
        else
            g_make_path(g);
        break;
    case REIGN_EACCES:
        g_fail(g, r->rc, "not allowed to register (the group belongs to other credentials)");
        break;
    case REIGN_E2BIG:
        g_fail(g, r->rc, "the store refused the payload as too large");
        break;
    default:
        g_retry(g, r->rc, "registering");
    }
out:
    g_leave(g);
}

static int g_build_record(reign_group *g)
{
    reign__buf_reset(&g->record);
    const char *kv[] = {REIGN__K_ID, g->id, REIGN__K_GUID, g->guid};
    return reign__record_build(&g->record, kv, 4, g->data, g->data_len);
}

static void g_create(reign_group *g)
{
    reign__life_bump(&g->life);
    g->state = G_CREATING;
    /* A fresh guid per attempt, known before the create is sent, so that a
     * lost answer can be told apart from a node of an earlier attempt. */
    int rc = reign__random_hex(g->guid, REIGN__GROUP_GUID_BYTES);
    if (rc == 0)
        rc = g_build_record(g);
    char *prefix = NULL;
    if (rc == 0) {
        reign__buf b;
        reign__buf_init(&b);
        reign__buf_printf(&b, "%s/" REIGN__N_MEMBER "%s_", g->dir, g->guid);
        prefix = b.data;
        rc = b.oom ? REIGN_ENOMEM : 0;
        if (b.oom)
            reign__buf_free(&b);
    }
    if (rc == 0)
        rc = reign__zk_create(g->zk, prefix, g->record.data, g->record.len,
                              REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE, g, g_on_created,
                              EPOCH_ARG(g));
    reign__free(prefix);
    if (rc < 0)
        g_retry(g, rc, "registering");
}

static void g_conn(reign__recipe *rp, reign_conn_state st)
{
    reign_group *g = (reign_group *)rp;
    reign__life_enter(&g->life);
    if (st == REIGN_CONN_CONNECTED && g->state != G_FAILED) {
        /* A new session: our old node went with the old one. */
        bool was = g->announced;
        g->announced = false;
        reign__life_bump(&g->life);
        reign__free(g->my_node);
        g->my_node = NULL;
        g->own_watched = false;
        reign__timer_stop(reign__client_timers(g->client), &g->timer);
        if (was) {
            reign_group_event ev = {.type = REIGN_GROUP_UNREGISTERED,
                                    .reason = REIGN_GROUP_SESSION_LOST};
            g_emit(g, &ev);
        }
        if (reign__life_live(&g->life))
            g_create(g);
    } else if (st == REIGN_CONN_RECONNECTED && g->state == G_NOSESSION) {
        g_create(g);
    } else if (st == REIGN_CONN_RECONNECTED && g->state == G_REGISTERED) {
        g_watch_own(g); /* re-arm if a registration failed while suspended */
    }
    g_leave(g);
}

static void g_destroy(reign_group *g)
{
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign__zk_forget(g->zk, g);
    reign__client_detach(g->client, &g->recipe);
    reign__buf_free(&g->record);
    reign__free(g->name);
    reign__free(g->dir);
    reign__free(g->id);
    reign__free(g->data);
    reign__free(g->my_node);
    reign__free(g);
}

static void g_on_destroy(reign__recipe *rp)
{
    g_destroy((reign_group *)rp);
}

static const reign__recipe_ops group_ops = {.conn = g_conn, .destroy = g_on_destroy};

int reign_group_register(reign_group **ret, reign_client *client, const char *name,
                         const reign_group_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_group_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = group_name_check(name);
    if (rc < 0)
        return rc;
    if ((o.id && !reign__id_ok(o.id, REIGN_MEMBER_ID_MAX)) || (o.data_len && !o.data) ||
        o.retry_delay_ms < 0)
        return REIGN_EINVAL;
    if (o.data_len > REIGN_MEMBER_DATA_MAX)
        return REIGN_E2BIG;
    if (!reign__client_zk(client))
        return REIGN_ENOTSUP; /* membership needs ZooKeeper's ephemeral nodes */
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    reign_group *g = reign__calloc(1, sizeof(*g));
    if (!g)
        return REIGN_ENOMEM;
    g->recipe.ops = &group_ops;
    g->client = client;
    g->zk = reign__client_zk(client);
    g->log = reign__client_log(client);
    g->retry_delay_ms = o.retry_delay_ms ? o.retry_delay_ms : 1000;
    g->cb = o.cb;
    g->userdata = o.userdata;
    reign__timer_init(&g->timer, g_timer_cb, g);
    reign__buf_init(&g->record);
    g->name = reign__strdup(name);
    g->dir = group_path(name, NULL);
    rc = o.id ? ((g->id = reign__strdup(o.id)) ? 0 : REIGN_ENOMEM) : reign__default_id(&g->id);
    if (rc == 0 && o.data_len && !(g->data = reign__memdup(o.data, o.data_len)))
        rc = REIGN_ENOMEM;
    g->data_len = o.data_len;
    if (rc == 0 && (!g->name || !g->dir))
        rc = REIGN_ENOMEM;
    if (rc < 0) {
        reign__free(g->name);
        reign__free(g->dir);
        reign__free(g->id);
        reign__free(g->data);
        reign__free(g);
        return rc;
    }
    reign__client_attach(client, &g->recipe);
    g->state = G_NOSESSION;
    if (reign__zk_connected(g->zk))
        g_create(g);
    *ret = g;
    return 0;
}

int reign_group_set_data(reign_group *g, const void *data, size_t len)
{
    if (!g || (len && !data))
        return REIGN_EINVAL;
    if (len > REIGN_MEMBER_DATA_MAX)
        return REIGN_E2BIG;
    void *copy = NULL;
    if (len && !(copy = reign__memdup(data, len)))
        return REIGN_ENOMEM;
    reign__free(g->data);
    g->data = copy;
    g->data_len = len;
    int rc = g_build_record(g);
    if (rc < 0 || g->state != G_REGISTERED || !g->my_node)
        return rc; /* the next registration carries it */
    /* No callback: if the node is gone meanwhile, its re-creation carries
     * the new payload. */
    return reign__zk_set(g->zk, g->my_node, g->record.data, g->record.len, -1, REIGN__ZK_RETRY,
                         NULL, NULL, NULL);
}

int reign_group_is_registered(const reign_group *g)
{
    return g && g->state == G_REGISTERED;
}

const char *reign_group_node(const reign_group *g)
{
    return g && g->state == G_REGISTERED && g->my_node ? basename_of(g->my_node) : NULL;
}

const char *reign_group_name(const reign_group *g)
{
    return g->name;
}

const char *reign_group_id(const reign_group *g)
{
    return g->id;
}

void *reign_group_userdata(const reign_group *g)
{
    return g->userdata;
}

reign_group *reign_group_free(reign_group *g)
{
    if (!g)
        return NULL;
    if (reign__life_request_free(&g->life)) {
        if (g->my_node)
            reign__zk_delete(g->zk, g->my_node, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
        reign__zk_forget(g->zk, g);
    }
    if (reign__life_busy(&g->life))
        return NULL; /* inside one of our callbacks: freed when it returns */
    g_destroy(g);
    return NULL;
}

/* ---- watching ------------------------------------------------------------ */

/* What the cache knows of one child node.  Immutable once published,
 * except for the watch flags (never shown to users). */
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

struct reign_group_watch {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *name;
    char *dir;
    bool newest_per_id;
    reign_group_watch_cb *cb;
    reign_group_list_cb *list_cb; /* a one-shot listing (no watches) */
    void *userdata;

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
    reign_member *view; /* published, by seq */
    size_t n_view;
};

/* A request's arg: epoch, slot index and whether it carries a watch. */
#define SLOT_BITS       24
#define W_ARG(w, i, wt) REIGN__LIFE_ARG(&(w)->life, SLOT_BITS + 1, ((uintptr_t)(i) << 1) | (wt))
#define W_WATCH(a)      (reign__life_low((a), SLOT_BITS + 1) & 1u)
#define W_SLOT(a)       (reign__life_low((a), SLOT_BITS + 1) >> 1)
#define W_STALE(w, a)   reign__life_stale(&(w)->life, (a), SLOT_BITS + 1)

static void kick(reign_group_watch *w);

static void entry_free(entry *e)
{
    if (!e)
        return;
    reign__free((char *)e->m.node);
    reign__free((char *)e->m.id);
    reign__free((void *)e->m.data);
    reign__free(e);
}

static void w_leave(reign_group_watch *w)
{
    if (reign__life_leave(&w->life))
        reign_group_watch_free(w);
}

static void w_emit(reign_group_watch *w, reign_group_watch_event *ev)
{
    if (!reign__life_live(&w->life) || !w->cb)
        return;
    ev->at_ns = reign__now_ns();
    reign__life_enter(&w->life);
    w->cb(w, ev, w->userdata);
    (void)reign__life_leave(&w->life);
}

static void clear_slots(reign_group_watch *w)
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

static void finish_list(reign_group_watch *w, int err)
{
    if (w->list_cb && reign__life_live(&w->life)) {
        reign__life_enter(&w->life);
        w->list_cb(w->client, err, err == 0 ? w->view : NULL, err == 0 ? w->n_view : 0,
                   w->userdata);
        (void)reign__life_leave(&w->life);
    }
    w->list_cb = NULL;
    reign_group_watch_free(w);
}

/* A round failed: report it and try again later (or, for a listing, end). */
static void round_failed(reign_group_watch *w, int err, const char *what)
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
    snprintf(msg, sizeof(msg), "group '%s': %s: %s; retrying", w->name, what, reign_strerror(err));
    reign__log(w->log, REIGN_LOG_WARN, "%s", msg);
    reign_group_watch_event ev = {.type = REIGN_MEMBERS_ERROR, .error = err, .message = msg};
    w_emit(w, &ev);
    if (reign__life_live(&w->life))
        reign__timer_start(reign__client_timers(w->client), &w->retry, reign__now_ns() + RETRY_NS);
}

static void report_change(void *arg, reign__member_change kind, const reign_member *now,
                          const reign_member *before)
{
    reign_group_watch *w = arg;
    reign_group_watch_event ev = {.member = now, .old = before};
    ev.type = kind == REIGN__MEMBER_REMOVED   ? REIGN_MEMBER_REMOVED
              : kind == REIGN__MEMBER_CHANGED ? REIGN_MEMBER_CHANGED
                                              : REIGN_MEMBER_ADDED;
    w_emit(w, &ev);
}

/* Every slot is settled: the new cache and view replace the old, and the
 * difference is reported. */
static void complete_round(reign_group_watch *w, bool dir_exists)
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
    reign_member *old_view = w->view;
    size_t n_old_view = w->n_view;
    for (size_t i = 0; i < w->n_slots; i++)
        w->slots[i].next = w->slots[i].old; /* owned by the new cache now */
    w->cache = cache;
    w->n_cache = n;
    w->view = view;
    w->n_view = nv;
    clear_slots(w);
    w->round_active = false;
    bool was_known = w->dir_known;
    w->dir_known = dir_exists;

    reign__life_enter(&w->life);
    if (w->list_cb) {
        finish_list(w, dir_exists ? 0 : REIGN_ENOENT);
    } else {
        reign__members_diff(old_view, n_old_view, view, nv, report_change, w,
                            &w->life.free_requested);
        if (was_known && !dir_exists) {
            reign_group_watch_event ev = {.type = REIGN_MEMBERS_GROUP_DELETED};
            w_emit(w, &ev);
        }
        if (!w->ready_sent) {
            w->ready_sent = true;
            reign_group_watch_event ev = {.type = REIGN_MEMBERS_READY};
            w_emit(w, &ev);
        }
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

static void settle_slot(reign_group_watch *w)
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
    reign_group_watch *w = owner;
    reign__life_enter(&w->life);
    const char *node = basename_of(path);
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
    reign_group_watch *w = owner;
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
    reign_group_watch *w = owner;
    reign__life_enter(&w->life);
    w->dir_watched = false;
    kick(w);
    w_leave(w);
}

static void on_dir_exists(void *owner, void *arg, const reign__zk_result *r)
{
    reign_group_watch *w = owner;
    reign__life_enter(&w->life);
    if (W_WATCH(arg) && r->rc != 0 && r->rc != REIGN_ENOENT)
        w->dir_watched = false;
    if (!W_STALE(w, arg) && r->rc == 0)
        kick(w); /* created between the listing and this */
    w_leave(w);
}

static void on_children_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    reign_group_watch *w = owner;
    reign__life_enter(&w->life);
    w->children_watched = false;
    kick(w);
    w_leave(w);
}

/* Reads slot i's data, arming its data watch with the read unless armed. */
static int read_slot(reign_group_watch *w, size_t i)
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

static entry *cache_find(const reign_group_watch *w, const char *node)
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
    reign_group_watch *w = owner;
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
static int start_round(reign_group_watch *w)
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

static void kick(reign_group_watch *w)
{
    int rc = start_round(w);
    if (rc < 0)
        round_failed(w, rc, "listing members");
}

static void w_retry_cb(reign__timer *t, void *arg)
{
    reign_group_watch *w = arg;
    reign__life_enter(&w->life);
    kick(w);
    w_leave(w);
}

static void w_conn(reign__recipe *rp, reign_conn_state st)
{
    reign_group_watch *w = (reign_group_watch *)rp;
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

static void w_destroy(reign_group_watch *w)
{
    reign__timer_stop(reign__client_timers(w->client), &w->retry);
    reign__zk_forget(w->zk, w);
    reign__client_detach(w->client, &w->recipe);
    clear_slots(w);
    for (size_t i = 0; i < w->n_cache; i++)
        entry_free(w->cache[i]);
    reign__free(w->cache);
    reign__free(w->view);
    reign__free(w->name);
    reign__free(w->dir);
    reign__free(w);
}

static void w_on_destroy(reign__recipe *rp)
{
    w_destroy((reign_group_watch *)rp);
}

static const reign__recipe_ops watch_ops = {.conn = w_conn, .destroy = w_on_destroy};

static int watch_new(reign_group_watch **ret, reign_client *client, const char *name,
                     const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                     void *userdata)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    int rc = group_name_check(name);
    if (rc < 0)
        return rc;
    if (!reign__client_zk(client))
        return REIGN_ENOTSUP;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    reign_group_watch *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->recipe.ops = &watch_ops;
    w->client = client;
    w->zk = reign__client_zk(client);
    w->log = reign__client_log(client);
    w->newest_per_id = o && o->newest_per_id;
    w->cb = o ? o->cb : NULL;
    w->list_cb = list_cb;
    w->userdata = o ? o->userdata : userdata;
    reign__timer_init(&w->retry, w_retry_cb, w);
    w->name = reign__strdup(name);
    w->dir = group_path(name, NULL);
    if (!w->name || !w->dir) {
        reign__free(w->name);
        reign__free(w->dir);
        reign__free(w);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &w->recipe);
    if (reign__zk_connected(w->zk) && (rc = start_round(w)) < 0) {
        w_destroy(w);
        return rc;
    }
    *ret = w;
    return 0;
}

int reign_group_watch_start(reign_group_watch **ret, reign_client *client, const char *name,
                            const reign_group_watch_options *opts)
{
    reign_group_watch_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    return watch_new(ret, client, name, &o, NULL, NULL);
}

int reign_group_list(reign_client *client, const char *name, reign_group_list_cb *cb,
                     void *userdata)
{
    if (!cb)
        return REIGN_EINVAL;
    reign_group_watch *w;
    return watch_new(&w, client, name, NULL, cb, userdata);
}

void reign_group_watch_members(const reign_group_watch *w, const reign_member **members, size_t *n)
{
    *members = w ? w->view : NULL;
    *n = w ? w->n_view : 0;
}

const char *reign_group_watch_name(const reign_group_watch *w)
{
    return w->name;
}

void *reign_group_watch_userdata(const reign_group_watch *w)
{
    return w->userdata;
}

reign_group_watch *reign_group_watch_free(reign_group_watch *w)
{
    if (!w)
        return NULL;
    (void)reign__life_request_free(&w->life);
    reign__zk_forget(w->zk, w);
    if (reign__life_busy(&w->life))
        return NULL; /* inside one of our callbacks: freed when it returns */
    w_destroy(w);
    return NULL;
}
