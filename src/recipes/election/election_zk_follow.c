/*
 * election_zk_follow.c - the leader view (election_zk.h): observers, and
 * candidates that follow the leader, read the term node and the leader's
 * candidate node it names, and watch both, so READY and LEADER_CHANGED
 * tell who leads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

static void await_term(zk_election *e);
static void on_term_event(void *owner, void *arg, reign__zk_event ev, const char *path);
static void on_leader_node_event(void *owner, void *arg, reign__zk_event ev, const char *path);

static void publish_leader(zk_election *e, reign__leader_view *nv)
{
    bool same = nv->known == e->base.lv.known &&
                (!nv->known || (nv->token == e->base.lv.token && nv->term == e->base.lv.term));
    reign__leader_view_clear(&e->base.lv);
    e->base.lv = *nv;
    memset(nv, 0, sizeof(*nv));
    reign__election_view(&e->base, !same);
}

static void view_dtor(void *p)
{
    reign__leader_view_clear(p);
}

static void on_leader_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    reign__leader_view *nv = arg;
    ENTER(e);
    if (reign__life_live(&e->base.life) && r->rc != REIGN_ESESSION && r->rc != REIGN_ECLOSED) {
        if (!EXISTS_REGISTERED(r) && e->watch.leader_node && nv->node &&
            !strcmp(e->watch.leader_node, nv->node))
            set_str(&e->watch.leader_node, NULL);
        if (r->rc == REIGN_ENOENT)
            reign__leader_view_clear(nv); /* the named leader is gone: no one leads yet */
        if (r->rc == 0 || r->rc == REIGN_ENOENT)
            publish_leader(e, nv);
    }
    reign__held_free(&e->views, nv); /* clears what publish_leader() did not take */
    LEAVE(e);
}

static void on_term_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->watch.term = false;
    if (!reign__life_live(&e->base.life) || r->rc == REIGN_ESESSION || r->rc == REIGN_ECLOSED)
        goto out;
    if (r->rc == REIGN_ENOENT)
        await_term(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->watch.term = false; /* get() registers only on success */
    /* Held by the election: forgetting it drops on_leader_exists(). */
    reign__leader_view *nv = reign__held_new(&e->views, sizeof(*nv), view_dtor, 0);
    if (!nv)
        goto out;
    reign__record rec;
    if (r->rc == 0 && r->stat.version > 0 &&
        reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *node = reign__record_get(&rec, REIGN__K_NODE);
        if (node && reign__election_node_ok(node)) {
            nv->known = true;
            nv->id = reign__strdup(
                reign__record_get(&rec, REIGN__K_ID) ? reign__record_get(&rec, REIGN__K_ID) : "");
            nv->data = reign__memdup(rec.payload, rec.payload_len);
            nv->data_len = rec.payload_len;
            nv->node = reign__strdup(node);
            nv->term = (uint64_t)r->stat.version;
            nv->token = (uint64_t)r->stat.mzxid;
            nv->since_ms = r->stat.mtime_ms;
        }
        reign__record_clear(&rec);
    } else if (r->rc == 0 && r->stat.version > 0) {
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: %s holds foreign data; ignored",
                   e->base.name, e->term_path);
    }
    if (nv->known && (!nv->id || !nv->node || (nv->data_len && !nv->data))) {
        reign__held_free(&e->views, nv);
        goto out;
    }
    if (!nv->known) {
        publish_leader(e, nv);
        reign__held_free(&e->views, nv);
        goto out;
    }
    /* Is that leader still there?  Watch its node, once. */
    char *path = reign__path_join(e->dir, nv->node);
    bool watch = !e->watch.leader_node || strcmp(e->watch.leader_node, nv->node) != 0;
    if (watch)
        set_str(&e->watch.leader_node, nv->node);
    int rc = !path ? REIGN_ENOMEM
                   : reign__zk_exists(e->zk, path, watch ? on_leader_node_event : NULL,
                                      REIGN__ZK_RETRY, e, on_leader_exists, nv);
    reign__free(path);
    if (rc < 0)
        reign__held_free(&e->views, nv);
out:
    LEAVE(e);
}

static void on_term_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->watch.term = false;
    if (r->rc == 0 && e->watch.following && reign__life_live(&e->base.life))
        reign__zke_follow_leader(e); /* created meanwhile: read it */
    LEAVE(e);
}

/* The election (or its term) does not exist yet: wait for it to appear,
 * without creating anything (observers only read). */
static void await_term(zk_election *e)
{
    if (e->watch.term)
        return;
    e->watch.term = true;
    if (reign__zk_exists(e->zk, e->term_path, on_term_event, REIGN__ZK_RETRY, e, on_term_exists,
                         ARG(e, 1)) < 0)
        e->watch.term = false;
}

void reign__zke_follow_leader(zk_election *e)
{
    e->watch.following = true;
    bool watch = !e->watch.term;
    int rc = reign__zk_get(e->zk, e->term_path, watch ? on_term_event : NULL, REIGN__ZK_RETRY, e,
                           on_term_read, ARG(e, watch));
    if (rc == 0 && watch)
        e->watch.term = true;
    if (rc < 0)
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: cannot read the term: %s",
                   e->base.name, reign_strerror(rc));
}

static void on_term_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->watch.term = false;
    if (e->watch.following && e->state != ST_LEFT && e->state != ST_FAILED)
        reign__zke_follow_leader(e);
    LEAVE(e);
}

static void on_leader_node_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    if (e->watch.leader_node && !strcmp(basename_of(path), e->watch.leader_node)) {
        set_str(&e->watch.leader_node, NULL);
        if (ev == REIGN__ZK_DELETED && e->base.lv.known && e->base.lv.node &&
            !strcmp(e->base.lv.node, basename_of(path))) {
            reign__leader_view none = {0};
            publish_leader(e, &none);
        }
    }
    LEAVE(e);
}
