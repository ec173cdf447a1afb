/*
 * election_zk_line.c - our place in line (election_zk.h): the listing
 * of the candidates (queue) or the lock node (lock), the watches on our
 * node and on our predecessor, and what a read of our node says (a
 * designation, a request to hand over).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

static void on_own_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state == ST_RESIGNING || e->state == ST_LEFT ||
        e->state == ST_CREATING || e->state == ST_PAUSED || !e->own.node)
        goto out;
    if (r->rc == REIGN_ENOENT) {
        reign__zke_handle_node_gone(e);
        goto out;
    }
    if (r->rc == 0)
        e->own.version = r->stat.version;
    uint64_t asked = 0;
    bool restore = false;
    char *to = NULL, *des = NULL;
    reign__buf id;
    reign__buf_init(&id);
    reign__record rec;
    if (r->rc == 0 && reign__record_parse(r->value, r->value_len, &rec) == 0) {
        if (reign__record_get_u64(&rec, REIGN__K_HANDOFF_PRIORITY, &asked) < 0 ||
            asked > REIGN__DESIGNATED_MIN)
            asked = 0;
        const char *h = reign__record_get(&rec, REIGN__K_HANDOFF);
        const char *d = reign__record_get(&rec, REIGN__K_DESIGNATED);
        to = h ? reign__strdup(h) : NULL;
        des = d && (!strcmp(d, "-") || reign__election_node_ok(d)) ? reign__strdup(d) : NULL;
        const char *dt = reign__record_get(&rec, REIGN__K_DESIGNATED_TERM);
        reign__buf_printf(&id, "%s@%s", d ? d : "", dt ? dt : "");
        const char *mine = reign__record_get(&rec, REIGN__K_ID);
        if (!mine || strcmp(mine, e->base.id) != 0 || rec.payload_len != e->base.data_len ||
            (rec.payload_len && memcmp(rec.payload, e->base.data, rec.payload_len) != 0)) {
            /* Written without our payload (a designation found us by the id
             * tag in our name, without reading us): put our record back. */
            restore = true;
        }
        reign__record_clear(&rec);
    }
    if (e->base.leader && e->state == ST_LEADER)
        reign__zke_hand_off_if_asked(e, to, (unsigned)asked); /* one that outranks us asks */
    else if (des && !e->base.leader && !id.oom)
        reign__zke_designated(e, des, id.data);
    else if (!e->rank.designated || e->base.leader)
        reign__zke_check(e); /* (designated: our own write, or news the leader node brings) */
    /* After the request this read decided (a handover's rewrite, a designated candidate's
     * read of the leader node), which is on a designation's critical path: the watch for
     * the next request (a change since this read is read again), and our record. */
    if (r->rc == 0 && e->own.node && reign__life_live(&e->base.life)) {
        reign__zke_watch_own(e);
        if (restore)
            reign__zk_set(e->zk, e->own.node, e->record.data, e->record.len, r->stat.version, 0,
                          NULL, NULL, NULL);
    }
    reign__free(to);
    reign__free(des);
    reign__buf_free(&id);
out:
    LEAVE(e);
}

static void read_own(zk_election *e)
{
    int rc = reign__zk_get(e->zk, e->own.node, NULL, REIGN__ZK_RETRY, e, on_own_read, EPOCH_ARG(e));
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "reading our node");
}

static void on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        e->watch.own = false; /* the lock watch serves leader and waiters alike */
        if (ev == REIGN__ZK_DELETED) {
            if (e->state == ST_LEADER || e->state == ST_DEMOTED || e->state == ST_CLAIMING)
                reign__zke_handle_node_gone(e);
            else if (waiting_like(e->state))
                reign__zke_create_node(e); /* the lock is free: race for it */
        } else if (waiting_like(e->state) || e->state == ST_LEADER || e->state == ST_DEMOTED) {
            reign__zke_check(e); /* data changed: re-arm the watch and look again */
        }
    } else if (e->own.node && !strcmp(path, e->own.node)) {
        e->watch.own = false;
        if (ev == REIGN__ZK_DELETED && e->state != ST_RESIGNING && e->state != ST_LEFT)
            reign__zke_handle_node_gone(e);
        else if (ev != REIGN__ZK_DELETED && e->state != ST_RESIGNING && e->state != ST_LEFT &&
                 e->state != ST_CREATING)
            read_own(e); /* someone wrote to our node: a designation? */
    }
    LEAVE(e);
}

static void on_pred_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    bool was_pred = e->watch.pred && !strcmp(e->watch.pred, path);
    if (was_pred)
        set_str(&e->watch.pred, NULL);
    if (waiting_like(e->state) && was_pred && ev == REIGN__ZK_DELETED && e->watch.pred_is_first) {
        /* Sequence numbers only grow, so without priorities no node can
         * appear ahead of ours: with the first in line gone, we are first.
         * Claim at once (the claim's check still proves our node exists,
         * and the leader node keeps it exclusive if a designated candidate
         * got ahead meanwhile): one round trip. */
        reign__zke_claim(e);
    } else if (waiting_like(e->state) &&
               !(reign__zke_contending(e->state) && ev != REIGN__ZK_DELETED)) {
        /* Our predecessor went, and the line will say whether we are first: if we are, the
         * claim numbers a history record, so learn the counter beside the listing rather than
         * from a claim that fails on it (a round trip on the handoff's path). */
        if (was_pred && ev == REIGN__ZK_DELETED && !reign__zke_contending(e->state))
            reign__zk_seq_hint(e->zk, e->history_path);
        reign__zke_check(e);
    }
    /* (A contender no longer minds its old predecessor, and a write to it
     * - our own handoff request, when it leads - is no reason to look.) */
    LEAVE(e);
}

/* How long after the one ahead of our predecessor went we look at the line: once our
 * predecessor has claimed, not beside its claim on the store's critical path. */
#define RELOOK_MS 50

void reign__zke_relook_cb(reign__timer *t, void *arg)
{
    zk_election *e = arg;
    ENTER(e);
    if (waiting_like(e->state) && !reign__zke_contending(e->state))
        reign__zke_check(e);
    LEAVE(e);
}

/* The one ahead of our predecessor went (or changed): our predecessor may be first now.  A look
 * at the line then (off the next handoff's path) makes its departure find us knowing we are
 * next, claiming at once; without it, we would list the line first.  If our predecessor goes
 * before the look, its own event lists the line, as it always did. */
static void on_pred2_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    bool was = e->watch.pred2 && !strcmp(e->watch.pred2, path);
    if (was)
        set_str(&e->watch.pred2, NULL);
    if (was && waiting_like(e->state) && !reign__zke_contending(e->state))
        reign__timer_start(reign__client_timers(e->base.client), &e->relook,
                           reign__now_ns() + RELOOK_MS * REIGN__NS_PER_MS);
    LEAVE(e);
}

static void on_pred2_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        set_str(&e->watch.pred2, NULL); /* a hint: the predecessor's own event still comes */
    else if (r->rc == REIGN_ENOENT && !STALE(e, arg) && waiting_like(e->state) &&
             !reign__zke_contending(e->state))
        reign__zke_check(e); /* gone since the listing */
    LEAVE(e);
}

/* Watches the one ahead of our predecessor, path (NULL: none needed, our predecessor is first
 * or ranks by priority). */
static void watch_pred2(zk_election *e, const char *path)
{
    if (!path || (e->watch.pred2 && !strcmp(e->watch.pred2, path))) {
        if (!path)
            set_str(&e->watch.pred2, NULL); /* an old registration firing is ignored */
        return;
    }
    set_str(&e->watch.pred2, path);
    if (e->watch.pred2 && reign__zk_exists(e->zk, path, on_pred2_event, REIGN__ZK_RETRY, e,
                                           on_pred2_exists, EPOCH_ARG(e)) < 0)
        set_str(&e->watch.pred2, NULL);
}

static void on_pred_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && !EXISTS_REGISTERED(r))
        set_str(&e->watch.pred, NULL);
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        reign__zke_check(e); /* gone meanwhile: look again */
    } else if (r->rc == 0 && r->stat.ephemeral_owner == 0) {
        /* A persistent node named like a candidate (written by someone
         * else): no session will ever remove it, so it is no candidate.
         * Leave it out of the order, or the election would stall behind it. */
        const char *name = e->pred ? basename_of(e->pred) : "";
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: %s is not ephemeral, so not a candidate; ignoring it",
                   e->base.name, name);
        if (*name && reign__zke_add_impostor(e, name) < 0) {
            reign__zke_retry_later(e, REIGN_ENOMEM, "ignoring a foreign node");
            goto out;
        }
        reign__zke_check(e);
    } else if (r->rc == 0 && !e->watch.pred) {
        /* Its watch fired while we looked (a write to it: on_pred_event() leaves a checking
         * candidate be), so nothing watches it now: waiting would wait for ever.  Look again,
         * which watches it again. */
        reign__zke_check(e);
    } else if (r->rc == 0) {
        reign__zke_step(e, IN(BEHIND), NULL);
    } else
        reign__zke_retry_later(e, r->rc, "watching the predecessor");
out:
    LEAVE(e);
}

static void on_own_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->watch.own = false;
    else if (r->rc == REIGN_ENOENT && !STALE(e, arg) && e->state != ST_RESIGNING &&
             e->state != ST_LEFT && e->state != ST_PAUSED)
        reign__zke_handle_node_gone(e);
    else if (r->rc == 0 && !STALE(e, arg) && e->strategy != REIGN_STRATEGY_LOCK &&
             r->stat.version > e->own.version && e->state != ST_RESIGNING && e->state != ST_LEFT &&
             e->state != ST_PAUSED && e->state != ST_CREATING)
        /* Written to before the watch was in place (we never write to our
         * own node after making it): a request we would otherwise miss. */
        read_own(e);
    LEAVE(e);
}

void reign__zke_watch_own(zk_election *e)
{
    if (e->watch.own || !e->own.node)
        return;
    e->watch.own = true; /* set now so that one registration is in flight at most */
    int rc = reign__zk_exists(e->zk, e->own.node, on_own_event, REIGN__ZK_RETRY, e, on_own_exists,
                              EPOCH_ARG(e));
    if (rc < 0)
        e->watch.own = false;
}

static void on_children(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc != 0) {
        if (r->rc == REIGN_ENOENT) { /* the election node itself was removed */
            set_str(&e->own.node, NULL);
            e->watch.own = false;
            reign__life_bump(&e->base.life);
            reign__zke_step(e, IN(ELECTION_GONE), NULL); /* demoted if leading; set up again */
        } else {
            reign__zke_retry_later(e, r->rc, "listing candidates");
        }
        goto out;
    }
    reign__qnode *v = reign__calloc(r->n_children ? r->n_children : 1, sizeof(*v));
    if (!v) {
        reign__zke_retry_later(e, REIGN_ENOMEM, "listing candidates");
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_children; i++)
        if (reign__qnode_parse(r->children[i], &v[n]) && !reign__zke_is_impostor(e, r->children[i]))
            n++;
    reign__qnode_sort(v, n);
    const char *mine = basename_of(e->own.node);
    size_t me = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, mine))
            me = i;
    if (me == SIZE_MAX) {
        reign__free(v);
        reign__zke_handle_node_gone(e);
        goto out;
    }
    if (!e->base.leader && (e->rank.designated || (me == 0 && e->handover.to))) {
        /* Designated: we take over wherever we stand in line.  Handing
         * over: the one we named takes over, not us. */
        reign__free(v);
        reign__zke_contend(e);
        goto out;
    }
    if (me == 0) {
        reign__free(v);
        if (e->base.leader) { /* still first: nothing changed for us */
            reign__zke_step(e, IN(STILL_LEADING), NULL);
            goto out;
        }
        reign__zke_claim(e); /* READY comes with ELECTED */
        goto out;
    }
    if (e->base.leader) {
        /* Not first any more: a candidate of higher priority joined.  We
         * lead until it asks us to hand over (or never, without preemption). */
        reign__free(v);
        reign__zke_step(e, IN(STILL_LEADING), NULL);
        goto out;
    }
    /* The one-round-trip handoff (on_pred_event) holds only while no node
     * can rank ahead of ours, which priorities (or a designation) allow. */
    bool ranked = e->rank.prio != 0;
    for (size_t i = 0; i < n && !ranked; i++)
        ranked = v[i].prio != 0;
    char *pred = reign__path_join(e->dir, v[me - 1].name);
    char *pred2 = me >= 2 && !ranked ? reign__path_join(e->dir, v[me - 2].name) : NULL;
    reign__free(v);
    if (!pred || (me >= 2 && !ranked && !pred2)) {
        reign__free(pred);
        reign__free(pred2);
        reign__zke_retry_later(e, REIGN_ENOMEM, "watching the predecessor");
        goto out;
    }
    bool was_first = e->watch.pred_is_first;
    e->watch.pred_is_first = me == 1 && !ranked;
    reign__free(e->pred);
    e->pred = pred;
    /* One watch per predecessor: ZooKeeper would fire every registration. */
    bool watch = !e->watch.pred || strcmp(e->watch.pred, pred) != 0;
    if (watch)
        set_str(&e->watch.pred, pred);
    if ((watch || !was_first) && e->watch.pred_is_first)
        reign__zk_seq_hint(e->zk, e->history_path); /* our claim numbers a record there */
    int rc = reign__zk_exists(e->zk, pred, watch ? on_pred_event : NULL, REIGN__ZK_RETRY, e,
                              on_pred_exists, ARG(e, watch));
    if (rc < 0 && watch)
        set_str(&e->watch.pred, NULL);
    if (rc == 0)
        watch_pred2(e, pred2);
    reign__free(pred2);
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "watching the predecessor");
    if (!e->base.follow)
        reign__election_ready(&e->base);
out:
    LEAVE(e);
}

static void on_lock_state(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && !EXISTS_REGISTERED(r))
        e->watch.own = false;
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        set_str(&e->own.node, NULL);
        reign__zke_create_node(e); /* free: try to take it (the watch stays armed) */
        goto out;
    }
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "reading the lock");
        goto out;
    }
    /* Ours only if its ephemeral owner is our session: never by its data. */
    if (r->stat.ephemeral_owner == reign_client_session_id(e->base.client) &&
        r->stat.ephemeral_owner != 0) {
        set_str(&e->own.node, e->lock_path);
        if (e->base.leader)
            reign__zke_step(e, IN(STILL_LEADING), NULL);
        else
            reign__zke_claim(e);
    } else {
        set_str(&e->own.node, NULL);
        if (!reign__zke_step(e, IN(LOCK_HELD), NULL)) /* demoted if leading */
            goto out;
        if (!e->base.follow)
            reign__election_ready(&e->base);
    }
out:
    LEAVE(e);
}

/* The table's LIST: the candidates (lock: the lock, watched once). */
void reign__zke_list(zk_election *e)
{
    int rc;
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        /* One exists watch on the lock, shared by waiting and leading. */
        bool watch = !e->watch.own;
        rc = reign__zk_exists(e->zk, e->lock_path, watch ? on_own_event : NULL, REIGN__ZK_RETRY, e,
                              on_lock_state, ARG(e, watch));
        if (rc == 0 && watch)
            e->watch.own = true;
    } else {
        reign__zke_watch_own(e);
        rc = reign__zk_children(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_children, EPOCH_ARG(e));
    }
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "checking");
}
