/*
 * group_member_zk.c - a member's registration on ZooKeeper (reign_group, see
 * <reign/group.h> for what users get and group_internal.h for the layout).
 *
 * A registration creates its ephemeral sequential node, then watches it:
 * deleted by someone else, it registers again after a delay; on a new
 * session (the old one expired, taking the node with it) it registers again
 * at once.  A create whose answer was lost is recognised by the guid in the
 * node's name, so a retry never leaves a second node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group_internal.h"
#include "recipes/life.h"
#include "record.h"

static void g_free(reign_group *base);

typedef enum gstate {
    G_NOSESSION = 1,
    G_CREATING,
    G_REGISTERED,
    G_PROBING, /* our node's deletion was notified: is our session still alive? */
    G_PAUSED,
    G_FAILED
} gstate;

typedef struct zgroup {
    struct reign_group head; /* first: name, id, payload, callback */
    reign_client *client;
    reign__zk *zk;
    const reign__logger *log;
    char *dir;

    gstate state;
    char guid[2 * REIGN__GROUP_GUID_BYTES + 1];
    reign__buf record; /* what our node holds (id, guid, payload) */
    char *my_node;     /* full path, once registered */
    bool announced;    /* REGISTERED told, UNREGISTERED not yet */
    bool own_watched;
    int setup_tries;
    reign__timer timer;
} zgroup;

#define EPOCH_ARG(g)  REIGN__LIFE_ARG(&(g)->head.life, 0, 0)
#define G_STALE(g, a) reign__life_stale(&(g)->head.life, (a), 0)

static void g_create(zgroup *g);

static void g_leave(zgroup *g)
{
    if (reign__life_leave(&g->head.life))
        g_free(&g->head);
}

static void g_fail(zgroup *g, int err, const char *what)
{
    char msg[512];
    snprintf(msg, sizeof(msg), "group '%s': %s: %s", g->head.name, what, reign_strerror(err));
    reign__life_bump(&g->head.life);
    g->state = G_FAILED;
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign_group_event ev = {.type = REIGN_GROUP_ERROR, .error = err, .message = msg};
    reign__group_emit(&g->head, &ev);
}

/* Tries again later from the top, unless the session is gone (a new one
 * registers by itself). */
static void g_retry(zgroup *g, int err, const char *what)
{
    reign__life_bump(&g->head.life);
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED) {
        g->state = G_NOSESSION;
        return;
    }
    reign__log(g->log, REIGN_LOG_WARN, "group %s: %s: %s; retrying", g->head.name, what,
               reign_strerror(err));
    g->state = G_PAUSED;
    reign__timer_start(reign__client_timers(g->client), &g->timer,
                       reign__now_ns() + REIGN__GROUP_RETRY_NS);
}

static void g_timer_cb(reign__timer *t, void *arg)
{
    zgroup *g = arg;
    reign__life_enter(&g->head.life);
    if (g->state == G_PAUSED)
        g_create(g);
    g_leave(g);
}

/* Our node is gone while the session lives (an operator, `zkCli delete`):
 * register again after the delay, so a deliberate removal is visible. */
static void g_node_gone(zgroup *g)
{
    reign__log(g->log, REIGN_LOG_NOTICE, "group %s: our node %s was deleted", g->head.name,
               g->my_node ? g->my_node : "?");
    reign__life_bump(&g->head.life);
    reign__free(g->my_node);
    g->my_node = NULL;
    g->own_watched = false;
    g->state = G_PAUSED;
    reign__timer_start(reign__client_timers(g->client), &g->timer,
                       reign__now_ns() + (int64_t)g->head.retry_delay_ms * REIGN__NS_PER_MS);
    if (g->announced) {
        g->announced = false;
        reign_group_event ev = {.type = REIGN_GROUP_UNREGISTERED,
                                .reason = REIGN_GROUP_NODE_DELETED};
        reign__group_emit(&g->head, &ev);
    }
}

static void g_on_probe(void *owner, void *arg, const reign__zk_result *r)
{
    zgroup *g = owner;
    reign__life_enter(&g->head.life);
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
static void g_probe(zgroup *g)
{
    reign__life_bump(&g->head.life);
    g->own_watched = false;
    g->state = G_PROBING;
    if (reign__zk_exists(g->zk, g->dir, NULL, REIGN__ZK_RETRY, g, g_on_probe, EPOCH_ARG(g)) < 0)
        g_node_gone(g);
}

static void g_on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path);

static void g_on_own_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zgroup *g = owner;
    reign__life_enter(&g->head.life);
    if (r->rc != 0 && r->rc != REIGN_ENOENT)
        g->own_watched = false;
    if (r->rc == REIGN_ENOENT && !G_STALE(g, arg) && g->state == G_REGISTERED)
        g_node_gone(g);
    g_leave(g);
}

static void g_watch_own(zgroup *g)
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
    zgroup *g = owner;
    reign__life_enter(&g->head.life);
    if (g->my_node && !strcmp(path, g->my_node) && g->state == G_REGISTERED) {
        g->own_watched = false;
        if (ev == REIGN__ZK_DELETED)
            g_probe(g);
        else
            g_watch_own(g); /* our own set_data: keep watching */
    }
    g_leave(g);
}

static void g_registered(zgroup *g, const char *path)
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
    reign__log(g->log, REIGN_LOG_INFO, "group %s: %s registered as %s", g->head.name, g->head.id,
               path);
    g_watch_own(g);
    reign_group_event ev = {.type = REIGN_GROUP_REGISTERED, .node = reign__group_basename(path)};
    reign__group_emit(&g->head, &ev);
}

static void g_on_find_own(void *owner, void *arg, const reign__zk_result *r)
{
    zgroup *g = owner;
    reign__life_enter(&g->head.life);
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

static void g_make_path(zgroup *g)
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
    zgroup *g = owner;
    reign__life_enter(&g->head.life);
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

static int g_build_record(zgroup *g)
{
    reign__buf_reset(&g->record);
    const char *kv[] = {REIGN__K_ID, g->head.id, REIGN__K_GUID, g->guid};
    return reign__record_build(&g->record, kv, 4, g->head.data, g->head.data_len);
}

static void g_create(zgroup *g)
{
    reign__life_bump(&g->head.life);
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
    zgroup *g = (zgroup *)rp;
    reign__life_enter(&g->head.life);
    if (st == REIGN_CONN_CONNECTED && g->state != G_FAILED) {
        /* A new session: our old node went with the old one. */
        bool was = g->announced;
        g->announced = false;
        reign__life_bump(&g->head.life);
        reign__free(g->my_node);
        g->my_node = NULL;
        g->own_watched = false;
        reign__timer_stop(reign__client_timers(g->client), &g->timer);
        if (was) {
            reign_group_event ev = {.type = REIGN_GROUP_UNREGISTERED,
                                    .reason = REIGN_GROUP_SESSION_LOST};
            reign__group_emit(&g->head, &ev);
        }
        if (reign__life_live(&g->head.life))
            g_create(g);
    } else if (st == REIGN_CONN_RECONNECTED && g->state == G_NOSESSION) {
        g_create(g);
    } else if (st == REIGN_CONN_RECONNECTED && g->state == G_REGISTERED) {
        g_watch_own(g); /* re-arm if a registration failed while suspended */
    }
    g_leave(g);
}

static void g_destroy(zgroup *g)
{
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign__zk_forget(g->zk, g);
    reign__client_detach(g->client, &g->head.recipe);
    reign__buf_free(&g->record);
    reign__group_head_clear(&g->head);
    reign__free(g->dir);
    reign__free(g->my_node);
    reign__free(g);
}

static void g_on_destroy(reign__recipe *rp)
{
    g_destroy((zgroup *)rp);
}

static const reign__recipe_ops group_ops = {.conn = g_conn, .destroy = g_on_destroy};

static int g_set_data(reign_group *base, const void *data, size_t len)
{
    zgroup *g = (zgroup *)base;
    int rc = reign__group_head_data(base, data, len);
    if (rc == 0)
        rc = g_build_record(g);
    if (rc < 0 || g->state != G_REGISTERED || !g->my_node)
        return rc; /* the next registration carries it */
    /* No callback: if the node is gone meanwhile, its re-creation carries
     * the new payload. */
    return reign__zk_set(g->zk, g->my_node, g->record.data, g->record.len, -1, REIGN__ZK_RETRY,
                         NULL, NULL, NULL);
}

static int g_is_registered(const reign_group *base)
{
    return ((const zgroup *)base)->state == G_REGISTERED;
}

static const char *g_node(const reign_group *base)
{
    const zgroup *g = (const zgroup *)base;
    return g->state == G_REGISTERED && g->my_node ? reign__group_basename(g->my_node) : NULL;
}

static void g_free(reign_group *base)
{
    zgroup *g = (zgroup *)base;
    if (reign__life_request_free(&g->head.life)) {
        if (g->my_node)
            reign__zk_delete(g->zk, g->my_node, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
        reign__zk_forget(g->zk, g);
    }
    if (reign__life_busy(&g->head.life))
        return; /* inside one of our callbacks: freed when it returns */
    g_destroy(g);
}

static const reign__group_ops zk_ops = {
    .set_data = g_set_data, .is_registered = g_is_registered, .node = g_node, .free = g_free};

int reign__group_zk_register(reign_group **ret, reign_client *client, const char *name,
                             const reign_group_options *o)
{
    zgroup *g = reign__calloc(1, sizeof(*g));
    if (!g)
        return REIGN_ENOMEM;
    int rc = reign__group_head_init(&g->head, &zk_ops, name, o);
    if (rc == 0 && !(g->dir = reign__group_path(name, NULL))) {
        reign__group_head_clear(&g->head);
        rc = REIGN_ENOMEM;
    }
    if (rc < 0) {
        reign__free(g);
        return rc;
    }
    g->head.recipe.ops = &group_ops;
    g->client = client;
    g->zk = reign__client_zk(client);
    g->log = reign__client_log(client);
    reign__timer_init(&g->timer, g_timer_cb, g);
    reign__buf_init(&g->record);
    reign__client_attach(client, &g->head.recipe);
    g->state = G_NOSESSION;
    if (reign__zk_connected(g->zk))
        g_create(g);
    *ret = &g->head;
    return 0;
}
