/*
 * election_zk_stand.c - standing (election_zk.h): setting up the election
 * node and its parents, a new election made and won in one multi, creating
 * our candidate node and finding it again after a lost answer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

static void make_path(zk_election *e, bool parents);
static void on_setup_read(void *owner, void *arg, const reign__zk_result *r);
static void setup_done(zk_election *e, reign_strategy found);

static void on_find_own(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CREATING)
        goto out;
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "looking for our node");
        goto out;
    }
    /* After a connection loss during the create: did it land?  Our guid in
     * a child's name says so; then that node is ours, else create again. */
    for (size_t i = 0; i < r->n_children; i++) {
        reign__qnode q;
        if (reign__qnode_parse(r->children[i], &q) && !strcmp(q.guid, e->guid)) {
            e->rank.prio = q.prio;
            e->own.version = 0; /* unknown: a written node is read once watched */
            char *p = reign__path_join(e->dir, q.name);
            if (p)
                set_str(&e->own.node, p);
            reign__free(p);
            if (!e->own.node) {
                reign__zke_retry_later(e, REIGN_ENOMEM, "adopting our node");
                goto out;
            }
            reign__log(e->base.log, REIGN_LOG_INFO, "election %s: found our node %s after a retry",
                       e->base.name, e->own.node);
            reign__zke_check(e);
            goto out;
        }
    }
    reign__zke_create_node(e);
out:
    LEAVE(e);
}

static void on_created(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    e->own.creating = false;
    if (e->state == ST_RESIGNING) {
        /* resigned while the create was in flight: remove what landed */
        if (r->rc == 0 && r->value &&
            reign__zk_delete(e->zk, r->value, -1, REIGN__ZK_RETRY, e, reign__zke_on_resign_deleted,
                             NULL) == 0)
            goto out;
        reign__zke_finish_resign(e, 0);
        goto out;
    }
    if (STALE(e, arg) || e->state != ST_CREATING) {
        if (r->rc == 0 && e->strategy != REIGN_STRATEGY_LOCK)
            reign__zke_drop_stray(e, r->value); /* given up meanwhile (ceded, restarted) */
        goto out;
    }
    switch (r->rc) {
    case 0:
        set_str(&e->own.node, r->value);
        e->own.version = 0;
        if (!e->own.node) {
            reign__zke_retry_later(e, REIGN_ENOMEM, "recording our node");
            break;
        }
        if (e->strategy == REIGN_STRATEGY_LOCK) {
            e->watch.own = false;
            reign__zke_check(e); /* confirms the owner and arms the lock watch */
        } else {
            reign__zke_check(e);
        }
        break;
    case REIGN_EEXIST: /* lock: someone holds it (maybe our earlier session) */
        reign__zke_check(e);
        break;
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
        reign__zke_step(e, IN(CREATE_UNKNOWN), NULL); /* did it land? */
        break;
    case REIGN_ENOENT: /* the election node vanished: set up again */
        reign__life_bump(&e->base.life);
        reign__zke_start(e);
        break;
    case REIGN_EACCES:
        reign__zke_fail(e, r->rc,
                        "not allowed to create a candidate under %s: the election belongs to other "
                        "credentials",
                        e->dir);
        break;
    case REIGN_E2BIG:
        reign__zke_fail(e, r->rc, "the store refused the payload as too large (%s)", e->dir);
        break;
    default:
        reign__zke_retry_later(e, r->rc, "creating our node");
    }
out:
    LEAVE(e);
}

/* The table's FIND_OWN: a create lost its answer; did it land? */
void reign__zke_find_own(zk_election *e)
{
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        reign__zke_check(e); /* the lock's owner tells whether it was ours */
        return;
    }
    int rc = reign__zk_children(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_find_own, EPOCH_ARG(e));
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "looking for our node");
}

/* The table's CREATE: our candidate node (or the lock). */
void reign__zke_send_create(zk_election *e)
{
    int rc = reign__zke_candidate_record(e);
    if (rc < 0) {
        reign__zke_issue_failed(e, rc, "creating our node");
        return;
    }
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        rc = reign__zk_create(e->zk, e->lock_path, e->record.data, e->record.len,
                              REIGN__ZK_EPHEMERAL, e, on_created, EPOCH_ARG(e));
    } else {
        reign__election_guid(e->guid, e->base.id);
        char *prefix = reign__election_path(e->base.name, "/n_");
        reign__buf b;
        reign__buf_init(&b);
        reign__buf_printf(&b, "%s%s_", prefix ? prefix : "", e->guid);
        if (e->cfg_prio) /* the name carries the configured one; a designation is not kept */
            reign__buf_printf(&b, "p%04u_", e->cfg_prio);
        reign__free(prefix);
        rc = b.oom ? REIGN_ENOMEM
                   : reign__zk_create(e->zk, b.data, e->record.data, e->record.len,
                                      REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE, e, on_created,
                                      EPOCH_ARG(e));
        reign__buf_free(&b);
    }
    if (rc == 0)
        e->own.creating = true;
    else
        reign__zke_issue_failed(e, rc, "creating our node");
}

static void on_dir_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    if (STALE(e, arg))
        return;
    e->setup.dir_ours = r->rc == 0;
    e->setup.need_parents = r->rc == REIGN_ENOENT;
}

static void on_path_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_EACCES) {
        reign__zke_fail(e, r->rc, "not allowed to create %s (credentials?)", e->dir);
        goto out;
    }
    if (e->setup.need_parents && !e->setup.parents_tried) {
        /* The first election under this root: make the parents too. */
        make_path(e, true);
        goto out;
    }
    if (r->rc != 0 && r->rc != REIGN_EEXIST) {
        reign__zke_retry_later(e, r->rc, "creating the election node");
        goto out;
    }
    e->setup.parents_tried = false;
    if (e->setup.dir_ours) {
        /* We wrote its record, so we know its strategy: no need to read it. */
        setup_done(e,
                   e->strategy == REIGN_STRATEGY_LOCK ? REIGN_STRATEGY_LOCK : REIGN_STRATEGY_QUEUE);
        goto out;
    }
    /* Someone else made it meanwhile: read what it says. */
    if (reign__zk_get(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_setup_read, EPOCH_ARG(e)) < 0)
        reign__zke_retry_later(e, REIGN_ENOMEM, "reading the election");
out:
    LEAVE(e);
}

/*
 * Creates the election node and its term node; with `parents`, /reign and
 * /reign/election first (only the first election under a root needs them:
 * trying without saves two writes per new election).  Each create
 * tolerates EEXIST.  Requests on one session are applied in order, so one
 * round trip covers the chain; the election node's answer says whether we
 * made it (and whether the parents were missing), the term's ends it.
 */
static void make_path(zk_election *e, bool parents)
{
    reign__buf rec;
    reign__buf_init(&rec);
    if (reign__zke_dir_record(e, &rec) < 0) { /* the default strategy is recorded as queue */
        reign__buf_free(&rec);
        reign__zke_retry_later(e, REIGN_ENOMEM, "creating the election node");
        return;
    }
    e->setup.dir_ours = e->setup.need_parents = false;
    e->setup.parents_tried = parents;
    const char *chain[] = {REIGN__ZK_ROOT, REIGN__ELECTION_DIR};
    for (size_t i = 0; parents && i < 2; i++)
        reign__zk_create(e->zk, chain[i], NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(e->zk, e->dir, rec.data, rec.len, REIGN__ZK_RETRY, e, on_dir_made,
                     EPOCH_ARG(e));
    int rc = reign__zk_create(e->zk, e->term_path, "reign 1\n\n", 9, REIGN__ZK_RETRY, e,
                              on_path_made, EPOCH_ARG(e));
    reign__buf_free(&rec);
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "creating the election node");
}

static void on_setup_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_ENOENT && e->base.observer) {
        /* Observers read only: follow the term, which tells when it appears. */
        reign__zke_step(e, IN(OBSERVE), NULL); /* follow the term, which tells when it appears */
        goto out;
    }
    if (r->rc == REIGN_ENOENT) {
        if (++e->setup.tries > 5) {
            reign__zke_fail(e, REIGN_ENOENT,
                            "cannot create the election node %s: was the URI's chroot deleted? (a "
                            "client creates it only when it starts)",
                            e->dir);
            goto out;
        }
        make_path(e, false);
        goto out;
    }
    if (r->rc != 0) {
        reign__zke_retry_later(e, r->rc, "reading the election");
        goto out;
    }
    reign__record rec;
    reign_strategy found = REIGN_STRATEGY_DEFAULT;
    if (r->value_len > 0) {
        if (reign__record_parse(r->value, r->value_len, &rec) < 0) {
            reign__zke_fail(e, REIGN_EFOREIGN,
                            "%s holds data reign did not write; refusing to use it", e->dir);
            goto out;
        }
        const char *s = reign__record_get(&rec, REIGN__K_STRATEGY);
        int p = s ? reign_strategy_parse(s) : REIGN_EINVAL;
        if (s && p < 0) {
            reign__record_clear(&rec);
            reign__zke_fail(e, REIGN_EFOREIGN, "unknown strategy recorded in %s", e->dir);
            goto out;
        }
        if (s)
            found = (reign_strategy)p;
        reign__record_clear(&rec);
    }
    setup_done(e, found);
out:
    LEAVE(e);
}

/* The election node is there and says `found` (or nothing): stand. */
static void setup_done(zk_election *e, reign_strategy found)
{
    if (found != REIGN_STRATEGY_DEFAULT) {
        if (e->strategy != REIGN_STRATEGY_DEFAULT && e->strategy != found) {
            reign__zke_fail(e, REIGN_EINVAL, "election '%s' uses strategy '%s', not '%s'",
                            e->base.name, reign_strategy_name(found),
                            reign_strategy_name(e->strategy));
            return;
        }
        e->strategy = found;
    } else if (e->strategy == REIGN_STRATEGY_DEFAULT) {
        e->strategy = REIGN_STRATEGY_QUEUE;
    }
    if (e->base.follow && !e->watch.following)
        reign__zke_follow_leader(e);
    if (e->base.observer) {
        reign__zke_step(e, IN(OBSERVE), NULL);
        return;
    }
    reign__zke_create_node(e);
}

/* ---- a new election in one request --------------------------------------
 *
 * Most elections a process joins for the first time either exist already or
 * are new and stay with it: a service:version that starts.  A new one is
 * set up and won by one multi: the election node, its term node, the leader
 * node, our candidate node, and the term's first claim.  It is batched with
 * those of the other elections joined in the same loop turn, so joining
 * thousands of new elections costs the server one request per few hundred
 * of them plus one watch each, instead of seven requests each.
 *
 * Ours is then the only candidate, so it leads: it is the claim of claim(),
 * made at once.  The candidate node's name is known before the multi runs:
 * a sequence number is the count of the parent's child changes so far, and
 * the election node is new and gets three children in this order (term,
 * leader, ours), so ours ends in 0000000002.  The multi reports the name it
 * made, which we check all the same.  If the election node exists, the
 * multi fails as a whole and we take the ordinary way, reading it first.
 */
#define COLD_SEQ "0000000003" /* after term, history and leader */
/* Its history record: named, not sequential (its name is known), the history's first. */
#define COLD_RECORD REIGN__N_TERM_REC "0000000000"

static void on_cold_parents(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_EACCES)
        reign__zke_fail(e, r->rc, "not allowed to create %s (credentials?)", REIGN__ELECTION_DIR);
    else if (r->rc == 0 || r->rc == REIGN_EEXIST)
        reign__zke_cold_start(e);
    else
        reign__zke_start(e); /* the ordinary way tells what is wrong (a deleted chroot) */
out:
    LEAVE(e);
}

static void on_cold_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    e->own.creating = false;
    set_str(&e->setup.cold_node, NULL);
    if (r->rc == 0 && (e->state == ST_RESIGNING || STALE(e, arg) || e->state != ST_SETUP)) {
        /* Given up meanwhile: let go of the leader node, then of our node. */
        reign__zke_release_if_ours(e);
        reign__zke_drop_stray(e, r->last_created);
    }
    if (e->state == ST_RESIGNING) {
        reign__zke_finish_resign(e, 0);
        goto out;
    }
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    switch (r->rc) {
    case 0: {
        e->strategy = REIGN_STRATEGY_QUEUE;
        set_str(&e->own.node, r->last_created);
        e->own.version = 0;
        e->leader_version = 0;
        if (!e->own.node) {
            reign__zke_retry_later(e, REIGN_ENOMEM, "recording our node");
            break;
        }
        if (e->base.follow && !e->watch.following)
            reign__zke_follow_leader(e);
        reign__zke_watch_own(e);
        const char *name = basename_of(e->own.node);
        size_t len = strlen(name);
        if (len < 10 || strcmp(name + len - 10, COLD_SEQ) != 0) {
            /* Not the name the records carry (never seen): drop the
             * leadership unannounced and claim the ordinary way. */
            reign__log(e->base.log, REIGN_LOG_WARN,
                       "election %s: new node %s, not the expected sequence; claiming again",
                       e->base.name, name);
            reign__zke_release_leader_node(e);
            reign__zke_check(e);
            break;
        }
        char *record = reign__path_join(e->history_path, COLD_RECORD);
        reign__zke_history_claimed(e, record, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        reign__free(record);
        reign__zke_become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    }
    case REIGN_ENOENT:
        if (r->failed_op == 0 && e->setup.cold_tries < 2) {
            /* The first election under this root: make /reign/election. */
            const char *chain[] = {REIGN__ZK_ROOT, REIGN__ELECTION_DIR};
            reign__zk_create(e->zk, chain[0], NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
            if (reign__zk_create(e->zk, chain[1], NULL, 0, REIGN__ZK_RETRY, e, on_cold_parents,
                                 EPOCH_ARG(e)) < 0)
                reign__zke_retry_later(e, REIGN_ENOMEM, "creating the election node");
            break;
        }
        reign__zke_start(e);
        break;
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
        /* Landed or not: our guid in a child's name tells (none: there is
         * no election node, or no node of ours, and we stand again).  A
         * node found is checked and claimed the ordinary way; the leader
         * node, if the multi landed, is ours and is let go first. */
        reign__zke_release_if_ours(e);
        reign__zke_step(e, IN(CREATE_UNKNOWN), NULL);
        break;
    case REIGN_ECANCELED:
        /* Batched with a multi that failed (most likely an election that
         * exists: so may ours, joined with it): once more, then the
         * ordinary way. */
        if (e->setup.cold_tries < 2)
            reign__zke_cold_start(e);
        else
            reign__zke_start(e);
        break;
    case REIGN_EACCES:
        reign__zke_fail(e, r->rc, "not allowed to create %s (credentials?)", e->dir);
        break;
    case REIGN_E2BIG:
        reign__zke_fail(e, r->rc, "the store refused the payload as too large (%s)", e->dir);
        break;
    default:
        reign__zke_start(e); /* EEXIST: the election exists - the ordinary way */
    }
out:
    LEAVE(e);
}

/* The new election's one multi, batched; 0 or a negative code. */
static int send_cold_multi(zk_election *e, void *arg)
{
    reign__buf rec, cand, node, t, l, h, hpath;
    reign__buf_init(&rec);
    reign__buf_init(&cand);
    reign__buf_init(&node);
    reign__buf_init(&t);
    reign__buf_init(&l);
    reign__buf_init(&h);
    reign__buf_init(&hpath);
    int rc = reign__zke_dir_record(e, &rec);
    reign__buf_printf(&hpath, "%s/" COLD_RECORD, e->history_path);
    char *prefix = reign__election_path(e->base.name, "/");
    reign__buf_printf(&node, "n_%s_", e->guid);
    if (e->cfg_prio)
        reign__buf_printf(&node, "p%04u_", e->cfg_prio);
    reign__buf_printf(&cand, "%s%s", prefix ? prefix : "", node.data ? node.data : "");
    reign__buf_printf(&node, COLD_SEQ);
    reign__free(prefix);
    if (rc == 0 && (cand.oom || node.oom || hpath.oom || !prefix))
        rc = REIGN_ENOMEM;
    if (rc == 0)
        rc = reign__zke_claim_records(e, node.data, &t, &l);
    if (rc == 0)
        rc = reign__zke_history_record(e, node.data, &h);
    if (rc == 0)
        rc = reign__zke_candidate_record(e);
    if (rc == 0) {
        reign__zk_mop ops[] = {
            {.type = REIGN__ZK_MCREATE, .path = e->dir, .data = rec.data, .len = rec.len},
            {.type = REIGN__ZK_MCREATE, .path = e->term_path, .data = "reign 1\n\n", .len = 9},
            {.type = REIGN__ZK_MCREATE, .path = e->history_path, .data = "reign 1\n\n", .len = 9},
            {.type = REIGN__ZK_MCREATE,
             .path = e->leader_path,
             .data = l.data,
             .len = l.len,
             .flags = REIGN__ZK_EPHEMERAL},
            {.type = REIGN__ZK_MCREATE, .path = hpath.data, .data = h.data, .len = h.len},
            {.type = REIGN__ZK_MCREATE,
             .path = cand.data,
             .data = e->record.data,
             .len = e->record.len,
             .flags = REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE},
            {.type = REIGN__ZK_MSET,
             .path = e->term_path,
             .data = t.data,
             .len = t.len,
             .version = -1},
        };
        rc = reign__zk_multi_batched(e->zk, ops, 7, e, on_cold_made, arg);
        if (rc == 0) {
            reign__buf_printf(&cand, COLD_SEQ);
            set_str(&e->setup.cold_node, cand.oom ? NULL : cand.data);
        }
    }
    reign__buf_free(&rec);
    reign__buf_free(&cand);
    reign__buf_free(&node);
    reign__buf_free(&t);
    reign__buf_free(&l);
    reign__buf_free(&h);
    reign__buf_free(&hpath);
    return rc;
}

/* The batch has room for our multi (or the session ended first). */
static void on_cold_turn(void *owner, void *arg, int rc)
{
    zk_election *e = owner;
    if (rc == 0 && !STALE(e, arg) && e->state == ST_SETUP) {
        rc = send_cold_multi(e, arg);
        if (rc == 0)
            return;
        ENTER(e);
        e->own.creating = false;
        reign__zke_issue_failed(e, rc, "creating the election");
        LEAVE(e);
        return;
    }
    /* Given up meanwhile, or no session: as if the multi had been sent and canceled. */
    reign__zk_result r = {.rc = rc < 0 ? rc : REIGN_ECANCELED, .failed_op = -1};
    on_cold_made(owner, arg, &r);
}

/*
 * The table's COLD: the new election's one multi.  It waits for room in the batch before it
 * is built: an election joined with a hundred thousand others holds no copy of its records
 * meanwhile, and the server gets them a few carriers at a time.
 */
void reign__zke_send_cold(zk_election *e)
{
    e->setup.cold_tries++;
    int rc = reign__zk_batch_wait(e->zk, e, on_cold_turn, EPOCH_ARG(e));
    if (rc == 0)
        e->own.creating = true;
    else
        reign__zke_issue_failed(e, rc, "creating the election");
}

/* The table's SETUP: stand from the top, in a session. */
void reign__zke_setup(zk_election *e)
{
    if (!reign__zk_connected(e->zk) && reign_client_session_id(e->base.client) == 0) {
        reign__zke_step(e, IN(NO_SESSION), NULL); /* waiting for a session */
        return;
    }
    /* The first attempt of a candidate that did not ask for the lock:
     * perhaps a new election.  Not on etcd: the multi creates the term node and sets it, and
     * etcd writes a key once per txn, so the term would start at 0 there. */
    if (e->setup.cold_tries == 0 && !e->base.observer && e->strategy != REIGN_STRATEGY_LOCK &&
        !reign__zk_is_etcd(e->zk)) {
        reign__zke_cold_start(e);
        return;
    }
    int rc = reign__zk_get(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_setup_read, EPOCH_ARG(e));
    if (rc < 0)
        reign__zke_issue_failed(e, rc, "reading the election");
}
