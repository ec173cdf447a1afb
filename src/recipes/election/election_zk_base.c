/*
 * election_zk_base.c - the bottom of the ZooKeeper candidate (election_zk.h):
 * small helpers, events, the table step, retries and failures, the inputs
 * that are plain steps (start, check, claim, ...), the records a claim and
 * a new election write, and letting go of the leader node.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

bool reign__zke_is_impostor(const zk_election *e, const char *name)
{
    for (size_t i = 0; i < e->n_impostors; i++)
        if (!strcmp(e->impostors[i], name))
            return true;
    return false;
}

int reign__zke_add_impostor(zk_election *e, const char *name)
{
    if (e->n_impostors >= 64) /* bounded: forget the newest */
        reign__free(e->impostors[--e->n_impostors]);
    char **v = reign__realloc(e->impostors, (e->n_impostors + 1) * sizeof(*v));
    if (!v)
        return REIGN_ENOMEM;
    e->impostors = v;
    if (!(v[e->n_impostors] = reign__strdup(name)))
        return REIGN_ENOMEM;
    e->n_impostors++;
    return 0;
}

/* A new session: nothing of the old one is ours any more.  Each part of the
 * election's state that lives as long as a session resets itself here. */
void reign__zke_own_reset(zk_election *e)
{
    set_str(&e->own.node, NULL);
    e->own.creating = false;
}

void reign__zke_watches_reset(zk_election *e)
{
    set_str(&e->watch.pred, NULL);
    set_str(&e->watch.pred2, NULL);
    set_str(&e->watch.leader_node, NULL);
    e->watch.own = false;
    e->watch.term = false;
    e->watch.leader = false;
    e->watch.following = false;
}

/* A designation and a preemption end with the session they were made in. */
void reign__zke_rank_reset(zk_election *e)
{
    e->rank.prio = e->cfg_prio;
    e->rank.preempt_at = 0;
    set_str(&e->rank.designated, NULL);
    e->rank.leader_seen = false;
}

void reign__zke_handover_reset(zk_election *e)
{
    set_str(&e->handover.to, NULL);
    e->handover.watched = false;
}

/* A node we made for an attempt given up meanwhile: never leave it in line. */
void reign__zke_drop_stray(zk_election *e, const char *path)
{
    reign__qnode q;
    if (path && reign__qnode_parse(basename_of(path), &q))
        reign__zk_delete(e->zk, path, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
}

static void emit_error(zk_election *e, int err, const char *fmt, ...) REIGN__PRINTF(3, 4);
static void emit_error(zk_election *e, int err, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reign__election_error(&e->base, err, msg);
}

/* Leaves leadership locally (the table's DEMOTE, DEMOTE_LATER).  `owed`:
 * from an API function, so the callback waits for the next process(). */
static void demote(zk_election *e, reign_demote_reason reason, bool owed)
{
    if (!e->base.leader)
        return;
    /* A leadership never outlasts its bound (is_leader() says no past it). */
    int64_t bound = reign__client_valid_until(e->base.client);
    reign__zke_history_end(e, reason);
    e->valid_until = 0;
    e->rank.prio = e->cfg_prio; /* a designation lasts one leadership */
    reign__client_hold_validity(e->base.client, -1);
    reign__election_demote(&e->base, reason, bound, owed);
}

/* A request could not even be issued: only memory or closing. */
void reign__zke_issue_failed(zk_election *e, int rc, const char *what)
{
    if (rc == REIGN_ECLOSED)
        return;
    reign__zke_retry_later(e, rc, what);
}

void reign__zke_timer_cb(reign__timer *t, void *arg)
{
    zk_election *e = arg;
    ENTER(e);
    if (e->state == ST_PAUSED || e->state == ST_SETUP || checking(e->state) ||
        e->state == ST_CREATING) {
        if (e->own.node && e->state != ST_PAUSED)
            reign__zke_check(e);
        else
            reign__zke_start(e);
    }
    LEAVE(e);
}

/* A transient failure (the backend already retried): try again later,
 * from the top, unless the session is gone (then CONNECTED restarts us). */
void reign__zke_retry_later(zk_election *e, int err, const char *what)
{
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED) {
        reign__log(e->base.log, REIGN_LOG_DEBUG, "election %s: %s: no session", e->base.name, what);
        reign__zke_step(e, IN(NO_SESSION), NULL);
        return;
    }
    reign__log(e->base.log, REIGN_LOG_WARN, "election %s: %s: %s; retrying", e->base.name, what,
               reign_strerror(err));
    reign__life_bump(&e->base.life);
    reign__zke_step(e, IN(RETRY), NULL); /* again in a second */
}

void reign__zke_fail(zk_election *e, int err, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reign__life_bump(&e->base.life);
    reign__zke_step(e, IN(ERROR), NULL);
    reign__timer_stop(reign__client_timers(e->base.client), &e->timer);
    if (e->state == ST_FAILED)
        emit_error(e, err, "%s", msg);
}

/* Leadership begins (the table's ELECT, after a fresh claim). */
static void announce_elected(zk_election *e, const zk_news *n)
{
    if (e->rank.designated) { /* done; its priority stays for this leadership */
        set_str(&e->rank.designation_done, e->rank.designation);
        set_str(&e->rank.designated, NULL);
    }
    set_str(&e->handover.to, NULL);
    e->rank.leader_seen = false;
    reign__election_lead(&e->base, n->term, n->token);
    e->valid_until = n->until;
    reign__client_hold_validity(e->base.client, +1);
    reign__election_ready(&e->base);
    reign__election_elected(&e->base, n->at, n->until);
}

/* The table's actions that are the backend's own (reign__election_acts). */
void reign__zke_act_demote(reign_election *pub, reign_demote_reason reason, bool owed)
{
    demote((zk_election *)pub, reason, owed);
}

void reign__zke_act_drop(reign_election *pub)
{
    if (pub->leader) {
        pub->leader = false;
        reign__client_hold_validity(pub->client, -1);
    }
}

void reign__zke_act_elect(reign_election *pub, const zk_news *n)
{
    announce_elected((zk_election *)pub, n);
}

/*
 * One step of the table (election_zk_fsm.c), with the facts its guards read:
 * the new state, then its actions in order, then the row's request (through
 * e->acts, election_zk.c's).  False if the table refused the input or found
 * it moot, or if a callback run by the actions took another step or freed
 * the election: the caller then makes no request for the state it asked for.
 */
bool reign__zke_step(zk_election *e, reign__zke_input in, const zk_news *n)
{
    unsigned facts =
        (e->own.node ? REIGN__EFSM_F_NODE : 0) | (e->handover.to ? REIGN__EFSM_F_HANDING : 0);
    return reign__election_step(&e->base, &reign__zke_machine, e->acts,
                                REIGN__EFSM_STATE(&e->state), in, facts, n);
}

/* A claim (or a takeover, or a new election's multi) landed. */
void reign__zke_become_leader(zk_election *e, uint64_t term, uint64_t token)
{
    zk_news n = {.term = term, .token = token, .at = reign__now_ns()};
    n.until = reign__client_valid_until(e->base.client);
    n.fresh = n.until > n.at;
    if (!n.fresh) {
        /* The proof of our session is already too old (a stall, or a slow
         * answer): announcing now could overlap with a successor. */
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: won term %llu but the session proof is stale; re-checking",
                   e->base.name, (unsigned long long)term);
        reign__life_bump(&e->base.life);
    }
    reign__zke_step(e, IN(CLAIMED), &n); /* LEADER, or CHECKING when stale */
}

/*
 * The claim: "our node still exists", "bump the term" and, with the queue
 * strategy, "make the leader node" in one multi.  If our node was deleted in
 * between (session expiry, an operator) the write does not happen, so the
 * term only ever grows under a live candidate, and the zxid of the write is
 * a fencing token no earlier leader can have.  The leader node makes the
 * claim exclusive whatever each candidate believes about the order: with
 * priorities a newcomer can rank ahead of the leader, and a designated one
 * ahead of everyone, yet none can claim while the leader holds the node -
 * it has to ask for a handoff (through the leader's candidate node, which
 * the leader watches anyway), and the leader demotes itself before it
 * lets go.
 */
/* What a claim writes: the term's record and the leader node's, naming our
 * candidate node `node`. */
int reign__zke_claim_records(zk_election *e, const char *node, reign__buf *t, reign__buf *l)
{
    const char *kv[] = {REIGN__K_ID, e->base.id, REIGN__K_NODE, node, REIGN__K_GUID, e->guid};
    int rc = reign__record_build(t, kv, 6, e->base.data, e->base.data_len);
    if (rc == 0 && l) {
        char prio[12];
        snprintf(prio, sizeof(prio), "%u", e->rank.prio);
        const char *lkv[] = {REIGN__K_ID,   e->base.id, REIGN__K_NODE,     node,
                             REIGN__K_GUID, e->guid,    REIGN__K_PRIORITY, prio};
        rc = reign__record_build(l, lkv, 8, NULL, 0);
    }
    return rc;
}

void reign__zke_claim(zk_election *e)
{
    reign__zke_step(e, IN(FIRST), NULL);
}

/* Our leader node as the release found it: delete it if it is still ours. */
static void on_release_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    if (r->rc == 0 && r->stat.ephemeral_owner == reign_client_session_id(e->base.client) &&
        r->stat.ephemeral_owner != 0) {
        e->leader_version = r->stat.version;
        reign__zke_release_leader_node(e);
    }
}

/* The leader node, if our session holds it (a multi whose outcome we do
 * not know, or no longer want, may have made it): let it go.  Another
 * session's is never touched. */
void reign__zke_release_if_ours(zk_election *e)
{
    if (e->strategy != REIGN_STRATEGY_LOCK)
        reign__zk_get(e->zk, e->leader_path, NULL, REIGN__ZK_RETRY, e, on_release_read, NULL);
}

static void on_released(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    /* Written to meanwhile (a handoff request): read it again and retry,
     * but only while it is ours - never delete another session's. */
    if (r->rc == REIGN_EBADVERSION && (uintptr_t)arg < 3)
        reign__zk_get(e->zk, e->leader_path, NULL, REIGN__ZK_RETRY, e, on_release_read,
                      (void *)((uintptr_t)arg + 1));
}

/* Lets go of the leader node after a demotion, so the next candidate can
 * claim.  Versioned: a node we no longer hold is someone else's. */
void reign__zke_release_leader_node(zk_election *e)
{
    if (e->strategy == REIGN_STRATEGY_LOCK)
        return;
    reign__zk_delete(e->zk, e->leader_path, e->leader_version, REIGN__ZK_RETRY, e, on_released,
                     NULL);
}

/* First in line, but someone holds the leader node: wait for it to go, or
 * (priority, designation) ask it to hand over. */
void reign__zke_contend(zk_election *e)
{
    reign__zke_step(e, IN(LEADER_NODE_HELD), NULL);
}

/*
 * The leader named us next in the leader node (at `version`), demoted
 * already: delete it and make ours, with the claim, in one multi - no one
 * can claim in between, and if anything changed since, nothing happens.
 */
void reign__zke_take_over(zk_election *e, int32_t version)
{
    zk_news n = {.version = version};
    reign__zke_step(e, IN(HANDED_TO_US), &n);
}

void reign__zke_check(zk_election *e)
{
    reign__zke_step(e, IN(CHECK), NULL);
}

void reign__zke_finish_resign(zk_election *e, int err)
{
    zk_news n = {.err = err};
    reign__zke_step(e, IN(RESIGNED), &n); /* LEFT */
}

void reign__zke_on_resign_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    /* ENOENT or a lost session: the node is gone all the same. */
    reign__zke_finish_resign(e, (r->rc == 0 || r->rc == REIGN_ENOENT || r->rc == REIGN_ESESSION ||
                                 r->rc == REIGN_ECLOSED)
                                    ? 0
                                    : r->rc);
    LEAVE(e);
}

/*
 * Our candidate node's record: id, guid, payload, and the session timeout
 * the server granted us ("session_ms"), so that anyone reading the
 * election (`reign status`) can tell how long a takeover takes should we
 * crash while leading: the server expires our session, and so our node,
 * that long after it last heard from us, whatever the reader's own
 * settings.  Rebuilt before each create: a new session may have another.
 */
int reign__zke_candidate_record(zk_election *e)
{
    char session[16] = "";
    int t = reign__zk_session_timeout_ms(e->zk);
    if (t > 0)
        snprintf(session, sizeof(session), "%d", t);
    const char *kv[] = {REIGN__K_ID, e->base.id,          REIGN__K_GUID,
                        e->guid,     REIGN__K_SESSION_MS, session};
    reign__buf_reset(&e->record);
    return reign__record_build(&e->record, kv, session[0] ? 6 : 4, e->base.data, e->base.data_len);
}

void reign__zke_create_node(zk_election *e)
{
    reign__zke_step(e, IN(CREATE), NULL);
}

int reign__zke_dir_record(zk_election *e, reign__buf *b)
{
    const char *kv[] = {REIGN__K_KIND, REIGN__KIND_ELECTION, REIGN__K_STRATEGY,
                        reign_strategy_name(e->strategy)};
    return reign__record_build(b, kv, 4, NULL, 0);
}

void reign__zke_cold_start(zk_election *e)
{
    reign__zke_step(e, IN(COLD), NULL);
}

void reign__zke_start(zk_election *e)
{
    reign__life_bump(&e->base.life);
    reign__zke_step(e, IN(START), NULL);
}
