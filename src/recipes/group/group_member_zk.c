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
    reign__timer_start(reign__client_timers(g->client), &g->timer,
                       reign__now_ns() + REIGN__GROUP_RETRY_NS);
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
    reign_group_event ev = {.type = REIGN_GROUP_REGISTERED, .node = reign__group_basename(path)};
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
    int rc = reign__group_name_check(name);
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
    g->dir = reign__group_path(name, NULL);
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
    return g && g->state == G_REGISTERED && g->my_node ? reign__group_basename(g->my_node) : NULL;
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
