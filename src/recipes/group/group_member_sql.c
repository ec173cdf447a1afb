/*
 * group_member_sql.c - a member's registration on a SQL store (reign_group, see
 * <reign/group.h> for what users get and src/sql/members.h for the table).
 *
 * A registration lives in the client's session (src/client/sql_session.h), as a ZooKeeper
 * member's ephemeral node lives in its session: it is made once a session is up, each a CALL
 * on the client's worker running src/sql/members.c.  A lost session (reaped after a lease
 * without a beat, or past the client's own bound) is UNREGISTERED(session_lost), and the
 * member registers again in the next session at once.  A registration deleted by someone
 * else (`reign rm` of the group) is learnt from the session's check of its rows, or from a
 * set_data that finds no row: UNREGISTERED(node_deleted), then a new registration after
 * retry_delay_ms.  A registration whose answer was lost is sent again with the same guid,
 * which finds the row it may have written instead of standing twice.
 */
#include <stdio.h>
#include <string.h>

#include "client/sql_session.h"
#include "group_internal.h"
#include "recipes/life.h"
#include "sql/members.h"

static void g_free(reign_group *base);

typedef enum sstate {
    S_NOSESSION = 1, /* waiting for a session */
    S_REGISTERING,   /* a registration is out */
    S_REGISTERED,
    S_PAUSED, /* a timer registers again */
    S_FAILED
} sstate;

typedef struct sgroup {
    struct reign_group head; /* first: name, id, payload, callback */
    reign_client *client;
    reign__sqlw *w;
    const reign__logger *log;
    reign__sql_session_user user;
    sstate state;
    char session[2 * REIGN__GUID_BYTES + 1]; /* "" while none is up */
    char guid[2 * REIGN__GUID_BYTES + 1];    /* this registration's */
    char node[96];                           /* "m_<guid>_<seq>", once registered */
    bool announced;                          /* REGISTERED told, UNREGISTERED not yet */
    reign__timer timer;
} sgroup;

#define EPOCH_ARG(g)  REIGN__LIFE_ARG(&(g)->head.life, 0, 0)
#define G_STALE(g, a) reign__life_stale(&(g)->head.life, (a), 0)

/* What travels to the worker and back. */
typedef struct gcall {
    int kind; /* 'r'egister, 'd'ata, 'l'eave */
    char *group, *id;
    char guid[2 * REIGN__GUID_BYTES + 1];
    char session[2 * REIGN__GUID_BYTES + 1];
    void *data;
    size_t len;
    uint64_t seq; /* register: ours */
} gcall;

static void gcall_free(void *p)
{
    gcall *c = p;
    reign__free(c->group);
    reign__free(c->id);
    reign__free(c->data);
    reign__free(c);
}

static int run(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen)
{
    gcall *g = ctx;
    switch (g->kind) {
    case 'r':
        return reign__members_register(c, dc, g->group, g->guid, g->id, g->session, g->data, g->len,
                                       &g->seq, err, errlen);
    case 'd':
        return reign__members_set_data(c, dc, g->group, g->guid, g->data, g->len, err, errlen);
    default:
        return reign__members_leave(c, dc, g->group, g->guid, err, errlen);
    }
}

static int send_call(sgroup *g, int kind, reign__sqlw_cb *cb)
{
    gcall *c = reign__calloc(1, sizeof(*c));
    if (!c)
        return REIGN_ENOMEM;
    c->kind = kind;
    memcpy(c->guid, g->guid, sizeof c->guid);
    memcpy(c->session, g->session, sizeof c->session);
    c->len = kind == 'l' ? 0 : g->head.data_len;
    if (!(c->group = reign__strdup(g->head.name)) || !(c->id = reign__strdup(g->head.id)) ||
        (c->len && !(c->data = reign__memdup(g->head.data, c->len)))) {
        gcall_free(c);
        return REIGN_ENOMEM;
    }
    int rc = reign__sqlw_call(g->w, "group", run, c, gcall_free, cb ? g : NULL, cb,
                              cb ? EPOCH_ARG(g) : NULL);
    if (rc < 0)
        gcall_free(c);
    return rc;
}

static void g_register(sgroup *g, bool fresh);

static void g_leave(sgroup *g)
{
    if (reign__life_leave(&g->head.life))
        g_free(&g->head);
}

static void g_unregistered(sgroup *g, reign_group_loss why)
{
    g->node[0] = '\0';
    if (g->announced) {
        g->announced = false;
        reign_group_event ev = {.type = REIGN_GROUP_UNREGISTERED, .reason = why};
        reign__group_emit(&g->head, &ev);
    }
}

static void g_pause(sgroup *g, int64_t delay_ns, bool fresh)
{
    reign__life_bump(&g->head.life);
    g->state = S_PAUSED;
    if (fresh)
        g->guid[0] = '\0';
    reign__timer_start(reign__client_timers(g->client), &g->timer, reign__now_ns() + delay_ns);
}

/* Our row is gone while our session lives: register again after the delay, so that a
 * deliberate removal is visible. */
static void g_row_gone(sgroup *g)
{
    reign__log(g->log, REIGN_LOG_NOTICE, "group %s: our registration %s was deleted", g->head.name,
               g->node);
    g_pause(g, (int64_t)g->head.retry_delay_ms * REIGN__NS_PER_MS, true);
    g_unregistered(g, REIGN_GROUP_NODE_DELETED);
}

static void g_fail(sgroup *g, int err, const char *detail)
{
    char msg[640];
    snprintf(msg, sizeof(msg), "group '%s': registering: %s", g->head.name, detail);
    reign__life_bump(&g->head.life);
    g->state = S_FAILED;
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign_group_event ev = {.type = REIGN_GROUP_ERROR, .error = err, .message = msg};
    reign__group_emit(&g->head, &ev);
}

static void on_registered(void *owner, void *arg, const reign__sqlw_result *r)
{
    sgroup *g = owner;
    gcall *c = r->ctx;
    reign__life_enter(&g->head.life);
    if (G_STALE(g, arg) || g->state != S_REGISTERING)
        goto out;
    if (r->rc == 0) {
        /* The session was reaped: the keeper learns it with its next renewal and tells us. */
        reign__life_bump(&g->head.life);
        g->state = S_NOSESSION;
    } else if (r->rc == REIGN_EFOREIGN) {
        g_fail(g, r->rc, r->err);
    } else if (r->rc < 0) {
        if (r->rc != REIGN_ECLOSED) {
            reign__log(g->log, REIGN_LOG_WARN, "group %s: registering: %s; retrying", g->head.name,
                       r->err);
            /* Same guid: the row, if the answer alone was lost, is found as ours. */
            g_pause(g, REIGN__GROUP_RETRY_NS, false);
        }
    } else {
        g->state = S_REGISTERED;
        g->announced = true;
        snprintf(g->node, sizeof g->node, REIGN__N_MEMBER "%s_%010llu", g->guid,
                 (unsigned long long)c->seq);
        reign__log(g->log, REIGN_LOG_INFO, "group %s: %s registered as %s", g->head.name,
                   g->head.id, g->node);
        reign_group_event ev = {.type = REIGN_GROUP_REGISTERED, .node = g->node};
        reign__group_emit(&g->head, &ev);
    }
out:
    g_leave(g);
}

static void g_register(sgroup *g, bool fresh)
{
    reign__life_bump(&g->head.life);
    if (!g->session[0]) {
        g->state = S_NOSESSION;
        return;
    }
    if ((fresh || !g->guid[0]) && reign__random_hex(g->guid, REIGN__GROUP_GUID_BYTES) < 0) {
        g_pause(g, REIGN__GROUP_RETRY_NS, true);
        return;
    }
    g->state = S_REGISTERING;
    int rc = send_call(g, 'r', on_registered);
    if (rc < 0 && rc != REIGN_ECLOSED)
        g_pause(g, REIGN__GROUP_RETRY_NS, false);
}

static void g_timer_cb(reign__timer *t, void *arg)
{
    sgroup *g = arg;
    (void)t;
    reign__life_enter(&g->head.life);
    if (g->state == S_PAUSED)
        g_register(g, false);
    g_leave(g);
}

static void on_session(reign__sql_session_user *u, const char *guid)
{
    sgroup *g = (sgroup *)((char *)u - offsetof(sgroup, user));
    reign__life_enter(&g->head.life);
    if (g->state == S_FAILED)
        goto out;
    if (!guid) {
        /* Lost: our row went, or goes, with it. */
        g->session[0] = '\0';
        reign__life_bump(&g->head.life);
        reign__timer_stop(reign__client_timers(g->client), &g->timer);
        g->state = S_NOSESSION;
        g->guid[0] = '\0';
        g_unregistered(g, REIGN_GROUP_SESSION_LOST);
    } else {
        reign__strlcpy(g->session, guid, sizeof g->session);
        if (g->state == S_NOSESSION)
            g_register(g, true);
    }
out:
    g_leave(g);
}

static void on_rows(reign__sql_session_user *u, const reign__sql_rows *guids)
{
    sgroup *g = (sgroup *)((char *)u - offsetof(sgroup, user));
    if (g->state != S_REGISTERED)
        return; /* the check was sent before our registration, on the same worker */
    for (size_t i = 0; i < guids->n_rows; i++) {
        const char *s = reign__sql_cell(guids, i, 0);
        if (s && !strcmp(s, g->guid))
            return;
    }
    reign__life_enter(&g->head.life);
    g_row_gone(g);
    g_leave(g);
}

static void on_fail(reign__sql_session_user *u, int err, const char *msg)
{
    sgroup *g = (sgroup *)((char *)u - offsetof(sgroup, user));
    reign__life_enter(&g->head.life);
    if (g->state != S_FAILED)
        g_fail(g, err, msg);
    g_leave(g);
}

static void on_data_written(void *owner, void *arg, const reign__sqlw_result *r)
{
    sgroup *g = owner;
    reign__life_enter(&g->head.life);
    if (G_STALE(g, arg) || g->state != S_REGISTERED)
        ;
    else if (r->rc == 0)
        g_row_gone(g);
    else if (r->rc < 0)
        reign__log(g->log, REIGN_LOG_WARN, "group %s: writing our payload: %s", g->head.name,
                   r->err);
    g_leave(g);
}

static int g_set_data(reign_group *base, const void *data, size_t len)
{
    sgroup *g = (sgroup *)base;
    int rc = reign__group_head_data(base, data, len);
    if (rc < 0 || g->state != S_REGISTERED)
        return rc; /* the next registration carries it */
    return send_call(g, 'd', on_data_written);
}

static int g_is_registered(const reign_group *base)
{
    return ((const sgroup *)base)->state == S_REGISTERED;
}

static const char *g_node(const reign_group *base)
{
    const sgroup *g = (const sgroup *)base;
    return g->state == S_REGISTERED ? g->node : NULL;
}

static void g_destroy(sgroup *g)
{
    reign__timer_stop(reign__client_timers(g->client), &g->timer);
    reign__sqlw_forget(g->w, g);
    reign__sql_session_leave(g->client, &g->user);
    reign__client_detach(g->client, &g->head.recipe);
    reign__group_head_clear(&g->head);
    reign__free(g);
}

static void g_free(reign_group *base)
{
    sgroup *g = (sgroup *)base;
    if (reign__life_request_free(&g->head.life)) {
        /* A registration out may land after this: the delete follows it on the same worker. */
        if ((g->state == S_REGISTERED || g->state == S_REGISTERING) && g->guid[0])
            (void)send_call(g, 'l', NULL);
        reign__sqlw_forget(g->w, g);
        reign__sql_session_leave(g->client, &g->user);
    }
    if (reign__life_busy(&g->head.life))
        return; /* inside one of our callbacks: freed when it returns */
    g_destroy(g);
}

static void g_on_destroy(reign__recipe *rp)
{
    g_destroy((sgroup *)rp);
}

static void g_conn(reign__recipe *rp, reign_conn_state st)
{
    (void)rp;
    (void)st; /* the session keeper tells us what matters */
}

static const reign__recipe_ops recipe_ops = {.conn = g_conn, .destroy = g_on_destroy};
static const reign__group_ops sql_ops = {
    .set_data = g_set_data, .is_registered = g_is_registered, .node = g_node, .free = g_free};

int reign__group_sql_register(reign_group **ret, reign_client *client, const char *name,
                              const reign_group_options *o)
{
    sgroup *g = reign__calloc(1, sizeof(*g));
    if (!g)
        return REIGN_ENOMEM;
    int rc = reign__group_head_init(&g->head, &sql_ops, name, o);
    if (rc < 0) {
        reign__free(g);
        return rc;
    }
    g->head.recipe.ops = &recipe_ops;
    g->client = client;
    g->w = reign__client_sql(client);
    g->log = reign__client_log(client);
    g->state = S_NOSESSION;
    g->user.on_session = on_session;
    g->user.on_rows = on_rows;
    g->user.on_fail = on_fail;
    reign__timer_init(&g->timer, g_timer_cb, g);
    reign__client_attach(client, &g->head.recipe);
    if ((rc = reign__sql_session_join(client, &g->user)) < 0) {
        g_destroy(g);
        return rc;
    }
    *ret = &g->head;
    return 0;
}
