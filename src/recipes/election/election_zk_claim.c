/*
 * election_zk_claim.c - the claim and the leader node (election_zk.h):
 * the term's claim, the leader node a queue leader holds, contending with
 * and preempting a lower-priority leader, taking over a node handed to us,
 * handing it over to a designated or higher-priority successor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

static void on_leader_lock_event(void *owner, void *arg, reign__zk_event ev, const char *path);
static void on_taken_over(void *owner, void *arg, const reign__zk_result *r);
static void on_handing_event(void *owner, void *arg, reign__zk_event ev, const char *path);
static void undesignate(zk_election *e);

static void on_term_recheck(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !claiming(e->state))
        goto out;
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "reading the term");
        goto out;
    }
    /* Did our claim land before the connection dropped?  Our guid in the
     * term says so; the zxid of that write is our token. */
    reign__record rec;
    bool ours = false;
    if (reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *g = reign__record_get(&rec, REIGN__K_GUID);
        ours = g && !strcmp(g, e->guid);
        reign__record_clear(&rec);
    }
    if (ours)
        reign__zke_become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
    else
        reign__zke_check(e);
out:
    LEAVE(e);
}

/* A node the claim needs (the term, the history) was missing and is made: claim again. */
static void on_claim_node_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CLAIMING)
        goto out;
    if (r->rc == 0 || r->rc == REIGN_EEXIST)
        reign__zke_claim(e);
    else if (r->rc == REIGN_EACCES)
        reign__zke_fail(e, r->rc, "not allowed to create the nodes of %s (credentials?)", e->dir);
    else
        reign__zke_retry_later(e, r->rc, "creating a node the claim needs");
out:
    LEAVE(e);
}

static void make_for_claim(zk_election *e, const char *path)
{
    if (reign__zk_create(e->zk, path, "reign 1\n\n", 9, REIGN__ZK_RETRY, e, on_claim_node_made,
                         EPOCH_ARG(e)) < 0)
        reign__zke_retry_later(e, REIGN_ENOMEM, "creating a node the claim needs");
}

/* The claim found no history node (an election made before history was kept): make it, once,
 * and claim again. */
static void history_make(zk_election *e)
{
    if (e->hist.made_parent) {
        reign__zke_retry_later(e, REIGN_ENOENT, "claiming: the history node keeps vanishing");
        return;
    }
    e->hist.made_parent = true;
    make_for_claim(e, e->history_path);
}

/* A claim (or takeover) failed otherwise: a lost answer (did it land?
 * our guid in the term says), no right to write, or a transient error. */
static void claim_failed(zk_election *e, int rc, const char *what)
{
    if (rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT) {
        int r = reign__zk_get(e->zk, e->term_path, NULL, REIGN__ZK_RETRY, e, on_term_recheck,
                              EPOCH_ARG(e));
        if (r < 0)
            reign__zke_issue_failed(e, r, "reading the term");
    } else if (rc == REIGN_EACCES) {
        reign__zke_fail(e, rc, "not allowed to write %s (credentials?)", e->term_path);
    } else {
        reign__zke_retry_later(e, rc, what);
    }
}

static void on_claimed(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CLAIMING)
        goto out;
    /* The parts: check our node, [make the leader node,] make our history record, set the term. */
    int history_op = e->strategy == REIGN_STRATEGY_LOCK ? 1 : 2, term_op = history_op + 1;
    switch (r->rc) {
    case 0:
        e->leader_version = r->made_version; /* the leader node, the multi's first create */
        reign__zke_history_claimed(e, r->last_created, (uint64_t)r->stat.version,
                                   (uint64_t)r->stat.mzxid);
        reign__zke_become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    case REIGN_EEXIST: /* the leader node: someone leads */
        reign__zke_contend(e);
        break;
    case REIGN_ENOENT:
        if (r->failed_op == 0) { /* the check: our node is gone */
            reign__zke_handle_node_gone(e);
            break;
        }
        if (r->failed_op == history_op) { /* an election from before history */
            history_make(e);
            break;
        }
        if (r->failed_op != term_op) { /* the election node went: look again */
            reign__zke_check(e);
            break;
        }
        /* The term node is missing (an operator removed it): make it again. */
        make_for_claim(e, e->term_path);
        break;
    case REIGN_EBADVERSION:
        reign__zke_check(e);
        break;
    default:
        claim_failed(e, r->rc, "claiming the term");
    }
out:
    LEAVE(e);
}

/* The claim's multi; a takeover (version >= 0) deletes the leader node at
 * that version first (it names us next). */
void reign__zke_send_claim(zk_election *e, int32_t takeover)
{
    reign__buf t, l, h;
    reign__buf_init(&t);
    reign__buf_init(&l);
    reign__buf_init(&h);
    bool lock = e->strategy == REIGN_STRATEGY_LOCK;
    const char *node = basename_of(e->own.node);
    char *record = reign__path_join(e->history_path, REIGN__N_TERM_REC);
    int rc = record ? reign__zke_claim_records(e, node, &t, lock ? NULL : &l) : REIGN_ENOMEM;
    if (rc == 0)
        rc = reign__zke_history_record(e, node, &h);
    if (rc == 0) {
        reign__zk_mop ops[5];
        size_t n = 0;
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCHECK, .path = e->own.node, .version = -1};
        if (takeover >= 0)
            ops[n++] = (reign__zk_mop){
                .type = REIGN__ZK_MDELETE, .path = e->leader_path, .version = takeover};
        if (!lock)
            ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCREATE,
                                       .path = e->leader_path,
                                       .data = l.data,
                                       .len = l.len,
                                       .flags = REIGN__ZK_EPHEMERAL};
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCREATE,
                                   .path = record,
                                   .data = h.data,
                                   .len = h.len,
                                   .flags = REIGN__ZK_SEQUENCE};
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MSET,
                                   .path = e->term_path,
                                   .data = t.data,
                                   .len = t.len,
                                   .version = -1};
        rc = reign__zk_multi(e->zk, ops, n, e, takeover >= 0 ? on_taken_over : on_claimed,
                             EPOCH_ARG(e));
    }
    reign__free(record);
    reign__buf_free(&t);
    reign__buf_free(&l);
    reign__buf_free(&h);
    if (rc < 0)
        reign__zke_issue_failed(
            e, rc, takeover >= 0 ? "taking over the leader node" : "claiming the term");
}

static void on_handoff_asked(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == 0)
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: asked the leader to hand over",
                   e->base.name);
    else if (r->rc == REIGN_EBADVERSION || r->rc == REIGN_ENOENT)
        reign__zke_contend(e); /* it changed or went meanwhile: look again */
    else
        reign__zke_retry_later(e, r->rc, "asking the leader to hand over");
out:
    LEAVE(e);
}

/*
 * The candidate node of the leader named in the leader node: ask it to
 * hand over if we may, by adding handoff=<our node> to it (compare-and-set;
 * the leader watches its own node, so no watch is added for this).  If it
 * is gone (an operator deposed the leader), wait all the same: the leader
 * lets go of the leader node once it has demoted itself, or its session
 * ends - never sooner, so the two leaderships cannot overlap.
 */
static void on_holder_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT)
        goto out; /* deposed: it lets go when it has stepped down (or its session ends) */
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "reading the leader's node");
        goto out;
    }
    if (!e->rank.may_preempt || reign__now_ns() < e->rank.preempt_at)
        goto out; /* wait: the watch on the leader node tells when it goes */
    reign__record rec;
    if (reign__record_parse(r->value, r->value_len, &rec) < 0)
        goto out; /* foreign: no one to ask */
    const char *mine = basename_of(e->own.node);
    const char *asked = reign__record_get(&rec, REIGN__K_HANDOFF);
    const char *at = reign__record_get(&rec, REIGN__K_HANDOFF_PRIORITY);
    char prio[12];
    snprintf(prio, sizeof(prio), "%u", e->rank.prio);
    const char *set[] = {REIGN__K_HANDOFF, mine, REIGN__K_HANDOFF_PRIORITY, prio};
    reign__buf b;
    reign__buf_init(&b);
    /* Asked already (by us, or by the operator who designated us)? */
    int rc = asked && !strcmp(asked, mine) && at && !strcmp(at, prio)
                 ? 1
                 : reign__record_build_set(&b, &rec, set, 4);
    reign__record_clear(&rec);
    if (rc == 0)
        rc = reign__zk_set(e->zk, e->rank.holder_node, b.data, b.len, r->stat.version, 0, e,
                           on_handoff_asked, EPOCH_ARG(e));
    reign__buf_free(&b);
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "asking the leader to hand over");
out:
    LEAVE(e);
}

static void on_leader_lock_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->watch.leader = false; /* get() registers only on success */
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        set_str(&e->handover.to, NULL); /* taken over and gone, or let go */
        if (e->rank.prio >= REIGN__DESIGNATED_MIN)
            reign__zke_claim(e); /* designated: first by construction */
        else
            reign__zke_check(e); /* gone: claim if still first */
        goto out;
    }
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "reading the leader node");
        goto out;
    }
    reign__record rec;
    const char *node = NULL, *next = NULL;
    bool parsed = reign__record_parse(r->value, r->value_len, &rec) == 0;
    if (parsed) {
        node = reign__record_get(&rec, REIGN__K_NODE);
        next = reign__record_get(&rec, REIGN__K_NEXT);
    }
    if (r->stat.ephemeral_owner == reign_client_session_id(e->base.client)) {
        bool handing = e->handover.to && next && !strcmp(next, basename_of(e->handover.to));
        if (parsed)
            reign__record_clear(&rec);
        if (handing)
            goto out; /* handed over, not taken yet: its takeover deletes it */
        /* Ours from an earlier leadership (demoted by a stall, a handoff
         * that did not finish): let it go and claim a new term. */
        set_str(&e->handover.to, NULL);
        e->leader_version = r->stat.version;
        reign__zke_release_leader_node(e);
        reign__zke_check(e);
        goto out;
    }
    /* Another session's: a handover of ours is over (taken, or let go). */
    set_str(&e->handover.to, NULL);
    if (!reign__zke_step(e, IN(HANDOVER_ENDED), NULL)) {
        if (parsed)
            reign__record_clear(&rec);
        goto out;
    }
    if (!node || !reign__election_node_ok(node) || !strcmp(node, REIGN__N_LOCK)) {
        if (parsed)
            reign__record_clear(&rec);
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: %s holds data reign did not write; waiting for it to go",
                   e->base.name, e->leader_path);
        goto out;
    }
    if (next && !strcmp(next, basename_of(e->own.node))) {
        reign__record_clear(&rec);
        reign__zke_take_over(e, r->stat.version); /* handed to us */
        goto out;
    }
    if (e->rank.designated && !next && !strcmp(e->rank.designated, node)) {
        /* Its leader was asked to hand over to us: once it names us next
         * (its next change), we take over without reading it again. */
        e->rank.leader_seen = true;
        e->rank.leader_seen_version = r->stat.version;
    }
    uint64_t their = 0;
    (void)reign__record_get_u64(&rec, REIGN__K_PRIORITY, &their);
    bool reign__zke_designated = e->rank.prio >= REIGN__DESIGNATED_MIN;
    e->rank.may_preempt =
        reign__zke_designated ? e->rank.prio >= their : e->rank.prio > their && !e->no_preempt;
    reign__free(e->rank.holder_node);
    e->rank.holder_node = reign__path_join(e->dir, node);
    reign__record_clear(&rec);
    if (!e->rank.holder_node) {
        reign__zke_retry_later(e, REIGN_ENOMEM, "reading the leader's node");
        goto out;
    }
    int64_t now = reign__now_ns();
    if (e->rank.may_preempt && !e->rank.preempt_at)
        e->rank.preempt_at =
            now + (reign__zke_designated ? 0 : (int64_t)e->preempt_delay_ms * REIGN__NS_PER_MS);
    if (e->rank.may_preempt && now < e->rank.preempt_at)
        reign__timer_start(reign__client_timers(e->base.client), &e->preempt, e->rank.preempt_at);
    if (!e->rank.may_preempt)
        goto out; /* wait: the watch on the leader node tells when it goes */
    if (reign__zk_get(e->zk, e->rank.holder_node, NULL, REIGN__ZK_RETRY, e, on_holder_read,
                      EPOCH_ARG(e)) < 0)
        reign__zke_issue_failed(e, REIGN_ENOMEM, "reading the leader's node");
out:
    LEAVE(e);
}

/* The table's READ_LEADER: the leader node, read and watched (once). */
void reign__zke_read_leader(zk_election *e)
{
    bool watch = !e->watch.leader;
    int rc = reign__zk_get(e->zk, e->leader_path, watch ? on_leader_lock_event : NULL,
                           REIGN__ZK_RETRY, e, on_leader_lock_read, ARG(e, watch));
    if (rc == 0 && watch)
        e->watch.leader = true;
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "reading the leader node");
    if (!e->base.follow)
        reign__election_ready(&e->base);
}

void reign__zke_preempt_cb(reign__timer *t, void *arg)
{
    zk_election *e = arg;
    ENTER(e);
    if (reign__zke_contending(e->state))
        reign__zke_contend(e);
    LEAVE(e);
}

static void on_leader_lock_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->watch.leader = false;
    bool seen = e->rank.leader_seen;
    e->rank.leader_seen = false;
    if (reign__zke_contending(e->state)) {
        if (ev == REIGN__ZK_DELETED && e->handover.to) {
            set_str(&e->handover.to, NULL); /* taken over (or released): look again */
            reign__zke_check(e);
        } else if (ev == REIGN__ZK_DELETED && e->rank.prio >= REIGN__DESIGNATED_MIN) {
            reign__zke_claim(e); /* designated: first by construction; the claim proves the rest */
        } else if (ev == REIGN__ZK_DELETED) {
            reign__zke_check(e); /* free: claim if first */
        } else if (seen && e->rank.designated) {
            /* The only write to a leader node is its holder naming the next
             * one, after it demoted itself: the change we were told to
             * expect.  Take over at the version it made; if it named
             * someone else (another designation raced ours), the takeover
             * is still exclusive - and it fails if anything else changed. */
            reign__zke_take_over(e, e->rank.leader_seen_version + 1);
        } else {
            reign__zke_contend(e);
        }
    }
    LEAVE(e);
}

static void on_taken_over(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_TAKING_OVER)
        goto out;
    switch (r->rc) {
    case 0:
        e->leader_version = r->made_version; /* the leader node, the multi's first create */
        reign__zke_history_claimed(e, r->last_created, (uint64_t)r->stat.version,
                                   (uint64_t)r->stat.mzxid);
        reign__zke_become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    case REIGN_ENOENT:
        if (r->failed_op == 0)
            reign__zke_handle_node_gone(e); /* our node is gone */
        else if (r->failed_op == 1)
            reign__zke_contend(e); /* the leader node went meanwhile: look again */
        else
            reign__zke_check(e); /* the term node is gone: the ordinary claim makes it again */
        break;
    case REIGN_EBADVERSION:
    case REIGN_EEXIST:
        reign__zke_contend(e); /* it changed meanwhile: look again */
        break;
    default:
        claim_failed(e, r->rc, "taking over the leader node");
    }
out:
    LEAVE(e);
}

/* The handover did not happen (the target left, or the leader node changed
 * under us): let the leader node go if we still hold it, and look again. */
static void abandon_handover(zk_election *e, const char *why)
{
    reign__log(e->base.log, REIGN_LOG_INFO, "election %s: handover to %s abandoned: %s",
               e->base.name, e->handover.to ? e->handover.to : "?", why);
    set_str(&e->handover.to, NULL);
    reign__life_bump(&e->base.life);
    reign__zke_release_if_ours(e);
    reign__zke_check(e);
}

static void on_handing_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->handover.watched = false;
    if (!STALE(e, arg) && e->handover.to && r->rc == REIGN_ENOENT)
        abandon_handover(e, "it is gone");
    LEAVE(e);
}

static void watch_handing(zk_election *e)
{
    if (e->handover.watched || !e->handover.to)
        return;
    e->handover.watched = true;
    if (reign__zk_exists(e->zk, e->handover.to, on_handing_event, REIGN__ZK_RETRY, e,
                         on_handing_exists, EPOCH_ARG(e)) < 0)
        e->handover.watched = false;
}

static void on_handing_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->handover.watched = false;
    if (e->handover.to && !strcmp(path, e->handover.to)) {
        if (ev == REIGN__ZK_DELETED)
            abandon_handover(e, "it left");
        else
            watch_handing(e); /* written to: still there, keep watching */
    }
    LEAVE(e);
}

static void on_handed(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !e->handover.to)
        goto out;
    if (r->rc != 0) {
        abandon_handover(e, reign_strerror(r->rc));
        goto out;
    }
    e->leader_version = r->stat.version;
    /* Until it takes over: watch it (if it leaves, we let go) and the
     * leader node (its takeover deletes ours). */
    watch_handing(e);
    reign__zke_contend(e);
out:
    LEAVE(e);
}

/*
 * Hands the leader node to the candidate `to` (demoted already): rewritten
 * to name it as next, it stays ours, so no one else can claim in between,
 * and `to` takes it over - deletes it and makes its own in one multi with
 * its claim.  Should `to` leave first, we let go of it (abandon_handover);
 * should we die, it goes with our session and the election goes on as
 * after any leader's end.
 */
void reign__zke_hand_over(zk_election *e, const char *to)
{
    char prio[12];
    snprintf(prio, sizeof(prio), "%u", e->rank.prio);
    const char *node = basename_of(e->own.node);
    const char *kv[] = {REIGN__K_ID, e->base.id,        REIGN__K_NODE, node,          REIGN__K_GUID,
                        e->guid,     REIGN__K_PRIORITY, prio,          REIGN__K_NEXT, to};
    reign__buf l;
    reign__buf_init(&l);
    set_str(&e->handover.to, NULL);
    e->handover.to = reign__path_join(e->dir, to);
    e->handover.watched = false;
    int rc = e->handover.to ? reign__record_build(&l, kv, 10, NULL, 0) : REIGN_ENOMEM;
    if (rc == 0)
        rc = reign__zk_set(e->zk, e->leader_path, l.data, l.len, e->leader_version, 0, e, on_handed,
                           EPOCH_ARG(e));
    reign__buf_free(&l);
    if (rc < 0) {
        set_str(&e->handover.to, NULL);
        reign__zke_issue_failed(e, rc, "handing over");
    }
}

/*
 * A handoff asked for `to` (written into our own node, by `to` itself or
 * by an operator designating it), at priority `asked`: the higher of the
 * one its node name carries and the one the request states.  A higher
 * priority always leads first, and a designated asker takes over from an
 * equal (designated) leader - the operator's latest choice wins.  A request
 * from a candidate that does not outrank us is ignored: it would only make
 * the lead bounce.
 */
void reign__zke_hand_off_if_asked(zk_election *e, const char *to, unsigned asked)
{
    reign__qnode them;
    if (!to || !e->own.node || !reign__qnode_parse(to, &them) ||
        !strcmp(to, basename_of(e->own.node))) {
        reign__zke_check(e); /* nothing asked: look again (and re-arm the watch on our node) */
        return;
    }
    unsigned prio = them.prio > asked ? them.prio : asked;
    bool reign__zke_designated = prio >= REIGN__DESIGNATED_MIN;
    if (!(prio > e->rank.prio || (reign__zke_designated && prio >= e->rank.prio))) {
        reign__log(e->base.log, REIGN_LOG_INFO,
                   "election %s: ignoring a handoff request from %s, which does not outrank us",
                   e->base.name, to);
        reign__zke_check(e);
        return;
    }
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: handing over to %s", e->base.name, to);
    reign__life_bump(&e->base.life);
    zk_news n = {.to = to};
    e->hist.designated = reign__zke_designated; /* how the history says this leadership ended */
    reign__zke_step(e, IN(OUTRANKED), &n); /* demoted, HANDING_OVER: the leader node names `to` */
}

void reign__zke_handle_node_gone(zk_election *e)
{
    /* Someone else deleted our node (reign cede, an operator), or it went
     * with a session we no longer have.  Stand again after the cede delay,
     * which lets another candidate take over. */
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: our node %s was deleted", e->base.name,
               e->own.node ? e->own.node : "?");
    reign__life_bump(&e->base.life);
    set_str(&e->own.node, NULL);
    e->watch.own = false;
    bool was_leader = e->base.leader;
    reign__zke_step(e, IN(NODE_GONE), NULL); /* demoted if leading; PAUSED for the cede delay */
    if (was_leader || e->handover.to)
        reign__zke_release_leader_node(e);
    set_str(&e->handover.to, NULL);
    undesignate(e);
}

/*
 * An operator designated us (election_query.c wrote designated=<the
 * leader's node> into ours, and handoff=<ours> into the leader's): outrank
 * everyone until we lead once, and take over from that leader as soon as
 * it names us next.  Should it end otherwise (it dies before handing
 * over), whoever comes next is asked to hand over to us like any leader
 * that does not outrank us.
 */
void reign__zke_designated(zk_election *e, const char *leader, const char *id)
{
    if (e->rank.designation_done && !strcmp(e->rank.designation_done, id))
        return; /* led by it already: our node still says so */
    if (e->rank.designated && e->rank.designation && !strcmp(e->rank.designation, id) &&
        reign__zke_contending(e->state))
        return; /* acting on it already */
    set_str(&e->rank.designation, id);
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: designated (the leader was %s)",
               e->base.name, leader);
    set_str(&e->rank.designated, leader);
    e->rank.prio = REIGN__DESIGNATED_MIN;
    e->rank.preempt_at = 0;
    if (!claiming(e->state)) /* a claim in flight ends in contend() if it fails */
        reign__zke_contend(e);
}

static void undesignate(zk_election *e)
{
    set_str(&e->rank.designated, NULL);
    if (!e->base.leader)
        e->rank.prio = e->cfg_prio;
}
