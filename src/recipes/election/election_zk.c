/*
 * election_zk.c - leader election on ZooKeeper, both strategies (see
 * <reign/election.h> for what users get and src/core/layout.h for the node
 * layout): the backend's face.  It joins, resigns, cedes and frees, takes
 * the client's news (the connection, the deadline), and makes the request
 * each step of the table names (act_request()).
 *
 * The life of a candidate is the table of election_zk_fsm.c (states,
 * inputs, guards, the events each row emits, the request each row makes,
 * and why); the files below this one (election_zk.h draws them) turn
 * ZooKeeper's results and events into its inputs.  Every attempt has an
 * epoch; results of requests made by an older epoch are ignored, so a late
 * answer can never act on a newer state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "election_zk.h"

static const reign__recipe_ops election_ops;
static const reign__election_impl zk_impl;
static void act_request(reign_election *pub, unsigned rq, const zk_news *n);

/* The table's own actions are the base's; its requests are made here. */
static const reign__election_acts zk_acts = {reign__zke_act_demote, reign__zke_act_drop,
                                             reign__zke_act_elect, act_request};

#define RQ(x) REIGN__ZKE_RQ_##x

/* A row's request (election_zk_fsm.h), made after the step's events. */
static void act_request(reign_election *pub, unsigned rq, const zk_news *n)
{
    zk_election *e = (zk_election *)pub;
    reign__timers *ts = reign__client_timers(e->base.client);
    switch ((reign__zke_request)rq) {
    case RQ(SETUP):
        reign__zke_setup(e);
        break;
    case RQ(COLD):
        reign__zke_send_cold(e);
        break;
    case RQ(CREATE):
        reign__zke_send_create(e);
        break;
    case RQ(FIND_OWN):
        reign__zke_find_own(e);
        break;
    case RQ(LIST):
        reign__zke_list(e);
        break;
    case RQ(READ_LEADER):
        reign__zke_read_leader(e);
        break;
    case RQ(CLAIM):
        reign__zke_send_claim(e, -1);
        break;
    case RQ(TAKE_OVER):
        reign__zke_send_claim(e, n ? n->version : -1);
        break;
    case RQ(HAND_OVER):
        if (n && n->to)
            reign__zke_hand_over(e, n->to);
        break;
    case RQ(RETRY):
        reign__timer_start(ts, &e->timer, reign__now_ns() + 1000 * REIGN__NS_PER_MS);
        break;
    case RQ(PAUSE):
        reign__timer_start(ts, &e->timer,
                           reign__now_ns() + (int64_t)e->base.cede_delay_ms * REIGN__NS_PER_MS);
        break;
    case RQ(FOLLOW): /* observers, and follow_leader candidates */
        if (e->base.follow && !e->watch.following)
            reign__zke_follow_leader(e);
        break;
    case RQ(RENEW):
        /* Demoted by a stall, still connected: the claim is a write and renews the proof.  It
         * is a new term: let go of the leader node first. */
        reign__life_bump(&e->base.life);
        reign__zke_release_leader_node(e);
        reign__zke_check(e);
        break;
    default:
        break;
    }
}

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    zk_election *e = (zk_election *)rp;
    ENTER(e);
    switch (st) {
    case REIGN_CONN_SUSPENDED:
        if (e->base.leader &&
            reign__client_suspend_policy(e->base.client) == REIGN_SUSPEND_IMMEDIATE)
            reign__zke_step(e, IN(SUSPENDED), NULL);
        break;
    case REIGN_CONN_RECONNECTED:
        reign__zke_history_resume(e, true); /* an end written while away: first */
        /* Same session: our node and watches survive.  Look again in case
         * we were demoted by the deadline meanwhile, or missed an answer. */
        if (e->state != ST_LEFT && e->state != ST_FAILED && e->state != ST_RESIGNING &&
            e->state != ST_PAUSED && !e->base.observer) {
            if (e->state == ST_NOSESSION || e->state == ST_SETUP)
                reign__zke_start(e);
            else if (!e->base.leader && e->own.node && e->state != ST_CREATING)
                reign__zke_check(e);
        }
        if (e->watch.following)
            reign__zke_follow_leader(e);
        break;
    case REIGN_CONN_LOST:
        /* Either expired (a new session follows: CONNECTED) or suspended
         * past the deadline (the deadline hook demoted already). */
        reign__zke_step(e, IN(SESSION_LOST), NULL); /* demoted if leading */
        break;
    case REIGN_CONN_CONNECTED:
        /* A new session: nothing of the old one is ours any more. */
        reign__life_bump(&e->base.life);
        reign__zke_history_resume(e, false);
        reign__zke_own_reset(e);
        reign__zke_watches_reset(e); /* the term's watch too: followers follow anew */
        reign__zke_rank_reset(e);
        reign__zke_handover_reset(e);
        /* Demoted if leading; LEFT if resigning; SETUP unless paused or done. */
        reign__zke_step(e, IN(NEW_SESSION), NULL);
        break;
    case REIGN_CONN_CLOSED:
        reign__life_bump(&e->base.life);
        reign__zke_history_resume(e, false);
        reign__zke_step(e, IN(CLOSED),
                        NULL); /* demoted if leading; LEFT (announced if resigning) */
        break;
    default:
        break;
    }
    LEAVE(e);
}

static void on_deadline(reign__recipe *rp, int64_t now)
{
    zk_election *e = (zk_election *)rp;
    if (!e->base.leader)
        return;
    int64_t until = reign__client_valid_until(e->base.client);
    if (now < until) {
        e->valid_until = until;
        return;
    }
    ENTER(e);
    bool connected = reign__zk_connected(e->zk);
    /* Demote before the server could expire the session: a successor can
     * only be elected after that. */
    reign__zke_step(e, connected ? IN(DEADLINE) : IN(DEADLINE_SUSPENDED),
                    NULL); /* DEMOTED: renew */
    LEAVE(e);
}

static void destroy(zk_election *e)
{
    reign__timers *ts = reign__client_timers(e->base.client);
    reign__timer_stop(ts, &e->timer);
    reign__timer_stop(ts, &e->preempt);
    reign__timer_stop(ts, &e->relook);
    reign__zk_forget(e->zk, e);
    reign__held_free_all(&e->views);
    reign__client_detach(e->base.client, &e->base.recipe);
    if (e->base.leader) {
        e->base.leader = false;
        reign__client_hold_validity(e->base.client, -1);
    }
    reign__buf_free(&e->record);
    reign__election_base_free(&e->base);
    reign__free(e->dir);
    reign__free(e->term_path);
    reign__free(e->lock_path);
    reign__free(e->leader_path);
    reign__free(e->history_path);
    reign__free(e->hist.path);
    reign__buf_free(&e->hist.pending);
    reign__free(e->rank.holder_node);
    reign__free(e->rank.designated);
    reign__free(e->rank.designation_done);
    reign__free(e->rank.designation);
    reign__free(e->handover.to);
    reign__free(e->setup.cold_node);
    reign__free(e->own.node);
    reign__free(e->watch.pred);
    reign__free(e->watch.pred2);
    reign__free(e->watch.leader_node);
    reign__free(e->pred);
    for (size_t i = 0; i < e->n_impostors; i++)
        reign__free(e->impostors[i]);
    reign__free(e->impostors);
    reign__free(e);
}

static void on_destroy(reign__recipe *rp)
{
    destroy((zk_election *)rp);
}

static const reign__recipe_ops election_ops = {
    .conn = on_conn,
    .deadline = on_deadline,
    .destroy = on_destroy,
};

int reign__zk_election_join(reign_election **ret, reign_client *client, const char *name,
                            const reign_election_options *o)
{
    zk_election *e = reign__calloc(1, sizeof(*e));
    if (!e)
        return REIGN_ENOMEM;
    e->base.recipe.ops = &election_ops;
    e->base.impl = &zk_impl;
    e->acts = &zk_acts;
    e->zk = reign__client_zk(client);
    e->strategy = o->strategy;
    reign__timer_init(&e->timer, reign__zke_timer_cb, e);
    reign__timer_init(&e->preempt, reign__zke_preempt_cb, e);
    reign__timer_init(&e->relook, reign__zke_relook_cb, e);
    e->cfg_prio = e->rank.prio = (unsigned)o->priority;
    e->no_preempt = o->no_preempt != 0;
    e->preempt_delay_ms = o->preempt_delay_ms;
    reign__buf_init(&e->record);
    reign__buf_init(&e->hist.pending);
    int rc = reign__election_base_init(&e->base, client, name, o);
    if (rc == 0) {
        e->dir = reign__election_path(name, NULL);
        e->term_path = reign__election_path(name, "/" REIGN__N_TERM);
        e->lock_path = reign__election_path(name, "/" REIGN__N_LOCK);
        e->leader_path = reign__election_path(name, "/" REIGN__N_LEADER);
        e->history_path = reign__election_path(name, "/" REIGN__N_HISTORY);
        if (!e->dir || !e->term_path || !e->lock_path || !e->leader_path || !e->history_path)
            rc = REIGN_ENOMEM;
    }
    if (rc == 0) {
        /* guid: known before the create, so a retried create is recognised */
        rc = reign__election_guid(e->guid, e->base.id);
    }
    if (rc == 0) {
        const char *kv[] = {REIGN__K_ID, e->base.id, REIGN__K_GUID, e->guid};
        rc = reign__record_build(&e->record, kv, 4, e->base.data, e->base.data_len);
    }
    if (rc < 0) {
        reign__buf_free(&e->record);
        reign__election_base_free(&e->base);
        reign__free(e->dir);
        reign__free(e->term_path);
        reign__free(e->lock_path);
        reign__free(e->leader_path);
        reign__free(e->history_path);
        reign__free(e);
        return rc;
    }
    reign__client_attach(client, &e->base.recipe);
    e->state = ST_NOSESSION;
    if (reign__zk_connected(e->zk))
        reign__zke_start(e);
    *ret = &e->base;
    return 0;
}

/* Stops standing: demote now, delete our node.  `then` is the next state. */
static int step_down(zk_election *e, estate then)
{
    reign__timers *ts = reign__client_timers(e->base.client);
    reign__timer_stop(ts, &e->timer);
    reign__timer_stop(ts, &e->preempt);
    reign__timer_stop(ts, &e->relook);
    reign__life_bump(&e->base.life);
    bool was_leader = e->base.leader;
    if (!reign__zke_step(e, then == ST_RESIGNING ? IN(RESIGN) : IN(CEDE),
                         NULL)) /* demoted, announced later */
        return REIGN_ESTATE;
    if (was_leader || e->handover.to)
        reign__zke_release_leader_node(
            e); /* before our node: the next one's claim needs both gone */
    set_str(&e->handover.to, NULL);
    set_str(&e->rank.designated, NULL);
    e->rank.prio = e->cfg_prio; /* a designation ends when its candidate stops standing */
    e->rank.preempt_at = 0;
    char *node = e->own.node;
    e->own.node = NULL;
    e->watch.own = false;
    int rc = 0;
    if (node) {
        rc = reign__zk_delete(e->zk, node, -1, REIGN__ZK_RETRY, then == ST_RESIGNING ? e : NULL,
                              then == ST_RESIGNING ? reign__zke_on_resign_deleted : NULL, NULL);
    } else if (then == ST_RESIGNING && !e->own.creating) {
        /* Nothing stands: LEFT on the next turn, never from inside the call. */
        reign__election_owe_left(&e->base, 0);
    }
    reign__free(node);
    reign__client_wake(e->base.client);
    return rc < 0 ? rc : 0;
}

static int zk_resign(reign_election *pub)
{
    zk_election *e = (zk_election *)pub;
    if (e->state == ST_LEFT || e->state == ST_RESIGNING)
        return REIGN_ESTATE;
    e->watch.following = false;
    return step_down(e, ST_RESIGNING);
}

static int zk_cede(reign_election *pub, int delay_ms)
{
    zk_election *e = (zk_election *)pub;
    int rc = step_down(e, ST_PAUSED);
    if (rc == REIGN_ESTATE)
        return rc;
    int64_t d = delay_ms < 0 ? e->base.cede_delay_ms : delay_ms;
    reign__timer_start(reign__client_timers(e->base.client), &e->timer,
                       reign__now_ns() + d * REIGN__NS_PER_MS);
    return rc;
}

/* An owed LEFT (resigned with nothing standing) comes due. */
static void zk_left(reign_election *pub, int err)
{
    reign__zke_finish_resign((zk_election *)pub, err);
}

static int64_t zk_valid_until(const reign_election *pub)
{
    /* Local answer, but never stale: the session's bound, even if the loop
     * has not run the deadline yet. */
    return reign__client_valid_until(pub->client);
}

static reign_election *zk_free(reign_election *pub)
{
    zk_election *e = (zk_election *)pub;
    if (reign__life_live(&e->base.life)) {
        bool was_leader = e->base.leader, left = e->state == ST_LEFT;
        if (was_leader) /* silently for the program, not for the history: before the delete */
            reign__zke_history_end(e, REIGN_DEMOTE_RESIGNED);
        reign__zke_step(e, IN(FREE), NULL); /* a leadership ends silently */
        reign__life_request_free(&e->base.life);
        /* Leave without waiting: the delete goes out, no callback follows. */
        if (was_leader) {
            if (e->strategy != REIGN_STRATEGY_LOCK)
                reign__zk_delete(e->zk, e->leader_path, e->leader_version, REIGN__ZK_RETRY, NULL,
                                 NULL, NULL);
        }
        if (e->own.node && !left)
            reign__zk_delete(e->zk, e->own.node, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
        if (e->setup.cold_node) {
            /* A new election's multi may be on its way (if not sent yet,
             * forgetting drops it): undo it after it, should it land.  Our
             * candidate node, by the name the multi gives it, proves that the
             * leader node at version 0 is the one it made. */
            reign__zk_mop ops[] = {
                {.type = REIGN__ZK_MDELETE, .path = e->setup.cold_node, .version = -1},
                {.type = REIGN__ZK_MDELETE, .path = e->leader_path, .version = 0},
            };
            reign__zk_multi(e->zk, ops, 2, NULL, NULL, NULL);
        }
        reign__zk_forget(e->zk, e); /* destroy() frees the views it held */
    }
    if (reign__life_busy(&e->base.life))
        return NULL; /* inside one of our callbacks: LEAVE frees it */
    destroy(e);
    return NULL;
}

static const reign__election_impl zk_impl = {
    .resign = zk_resign,
    .cede = zk_cede,
    .valid_until = zk_valid_until,
    .free = zk_free,
    .left = zk_left,
};
