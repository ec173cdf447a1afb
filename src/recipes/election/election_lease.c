/*
 * election_lease.c - leader election on a SQL lease row (SOFARegistry's
 * distribute_lock; docs/sql-leases.md has the model and the
 * safety argument).  The statements run on the client's SQL worker
 * (sql/worker.h); everything here runs on the loop thread.
 *
 * The life of a candidate is the table of election_lease_fsm.c (states,
 * inputs, the events each step emits, and why); this file turns the
 * worker's answers, the timers and the connection's news into its inputs
 * and issues the statements each state needs:
 *
 *   LOOKING    reading the row; then, as the row says:
 *                no row                 INSERT (term 1)
 *                released, or the same  TAKE at its version (term + 1)
 *                version for a whole
 *                duration since we
 *                first saw it
 *                ours (this standing)   RENEW (a claim whose answer was lost)
 *                someone else's, live   wait: read again when it could run
 *                                       out or at the next poll, or at once
 *                                       when the store notifies a change
 *              No clock but our own monotonic one decides when a lease has
 *              run out (sql.h): a database or host whose wall clock steps
 *              can neither end a live lease early nor keep a dead one.
 *   LEADER     renewing every renew_ms; valid until the send time of the last
 *              successful claim or renewal + lease - margin, and demoted at
 *              that moment if nothing renewed it (the deadline timer, and the
 *              client's deadline sweep that runs before anything else after
 *              a stall)
 *
 * Each standing has a fresh guid: a demoted leader never mistakes its old
 * lease for the new standing's, so every leadership takes a new term (the
 * fencing token).  Each standing also has an epoch; answers to requests of
 * an older epoch are ignored.  A claim still out when the candidate gives up
 * is followed by a release of the term it would win (abandon_claim()), so a
 * late success never leaves a lease that no one holds.
 *
 * A listed candidate (options.listed) also keeps a row of its standing in
 * the candidates table (sql/candidates.h) while the table's state says it
 * stands (looking, claiming, leading: list_follow() after each step),
 * refreshed every lease/3, deleted when it stops standing (resign, cede,
 * depose, close, free, a new standing), so that reign_election_query()
 * can name it.  The row never decides anything: the lease row alone does.
 */
#include <stdio.h>
#include <string.h>

#include "election_base.h"
#include "election_lease_fsm.h"
#include "sql/candidates.h"

typedef reign__lease_state lstate;
#define L_IDLE      REIGN__LEASE_IDLE
#define L_LOOKING   REIGN__LEASE_LOOKING
#define L_CLAIMING  REIGN__LEASE_CLAIMING
#define L_LEADER    REIGN__LEASE_LEADER
#define L_PAUSED    REIGN__LEASE_PAUSED
#define L_RESIGNING REIGN__LEASE_RESIGNING
#define L_LEFT      REIGN__LEASE_LEFT
#define IN(x)       REIGN__LEASE_IN_##x

#define GUID_BYTES 8

typedef struct lease_election {
    reign_election base; /* first: the client and the API call us through it */
    reign__sqlw *w;
    const reign__lease_settings *ls;
    lstate state;
    char guid[2 * GUID_BYTES + 1];
    bool reading;            /* a READ of this epoch is out */
    bool again;              /* a change was notified while reading: read once more */
    bool renewing;           /* a RENEW is out */
    bool listening;          /* LISTEN sent */
    uint64_t claim_term;     /* CLAIMING: the term we hold if the claim succeeds */
    reign__sqlw_op claim_op; /* ... the claim to send: insert, take or renew */
    uint64_t claim_from;     /* ... the term it is sent for (the row's as read) */
    uint64_t claim_renewals; /* ... TAKE: the row's term_duration as read */
    bool claim_released;     /* ... TAKE: only if released (a notification's guess) */
    uint64_t seen_term;      /* the term of someone else's live lease, as last read */
    reign__lease_seen seen;  /* the version of the row we count its duration from */
    bool spread;             /* the next poll comes at a random point of the period */
    int64_t valid_until;

    char listed_guid[2 * GUID_BYTES + 1]; /* the standing our candidates row is of ("": none) */
    reign__timer list_timer;              /* the row's next refresh */

    reign__timer timer;    /* poll, renew, retry, pause: one purpose per state */
    reign__timer deadline; /* the leader's bound */
} lease_election;

static const reign__recipe_ops lease_recipe_ops;
static const reign__election_impl lease_impl;

static void look(lease_election *e);
static void stand(lease_election *e);
static bool step(lease_election *e, reign__lease_input in, const reign__election_news *n);
static reign_election *lease_free(reign_election *pub);

/* ---- small helpers ----------------------------------------------------------------------------
 */

#define ENTER(e) reign__election_enter(&(e)->base)
#define LEAVE(e) reign__election_leave(&(e)->base)

static reign__timers *timers(lease_election *e)
{
    return reign__client_timers(e->base.client);
}

static int64_t ms(int v)
{
    return (int64_t)v * REIGN__NS_PER_MS;
}

static void emit_error(lease_election *e, int err, const char *what, const char *msg)
{
    char m[600];
    snprintf(m, sizeof(m), "%s: %s", what, msg ? msg : reign_strerror(err));
    reign__election_error(&e->base, err, m);
}

/* Publishes the leader as the row shows it (NULL lease: no live leader). */
static void publish(lease_election *e, const reign__lease *l)
{
    bool live = l && l->exists;
    bool same =
        live ? e->base.lv.known && e->base.lv.term == l->term && !strcmp(e->base.lv.id, l->owner)
             : !e->base.lv.known;
    if (!same) {
        reign__leader_view_clear(&e->base.lv);
        if (live) {
            e->base.lv.id = reign__strdup(l->owner);
            if (l->payload_len)
                e->base.lv.data = reign__memdup(l->payload, l->payload_len);
            e->base.lv.data_len = l->payload_len;
            e->base.lv.term = l->term;
            e->base.lv.token = l->term;
            e->base.lv.known = e->base.lv.id && (!l->payload_len || e->base.lv.data);
            if (!e->base.lv.known)
                reign__leader_view_clear(
                    &e->base.lv); /* out of memory: forget, the next read tries again */
        }
    }
    reign__election_view(&e->base, !same && e->base.follow);
}

/* Publishes ourselves as the leader, as followers will see us. */
static void publish_self(lease_election *e)
{
    reign__lease l = {.exists = true,
                      .term = e->base.term,
                      .payload = e->base.data,
                      .payload_len = e->base.data_len};
    reign__strlcpy(l.owner, e->base.id, sizeof(l.owner));
    publish(e, &l);
}

static void claim_of(const lease_election *e, reign__lease_claim *cl, const char *guid)
{
    memset(cl, 0, sizeof(*cl));
    cl->owner = e->base.id;
    cl->owner_guid = guid;
    cl->payload = e->base.data;
    cl->payload_len = e->base.data_len;
    cl->duration_ms = e->ls->lease_ms;
    cl->expect_renewals = e->claim_renewals;
    cl->take_released = e->claim_released;
}

static int submit(lease_election *e, reign__sqlw_op op, const char *guid, uint64_t term,
                  reign__sqlw_cb *cb)
{
    reign__lease_claim cl;
    claim_of(e, &cl, guid);
    bool claims = op != REIGN__SQLW_READ && op != REIGN__SQLW_LISTEN && op != REIGN__SQLW_DEPOSE;
    return reign__sqlw_submit(e->w, op, e->base.name, claims ? &cl : NULL, term, cb ? e : NULL, cb,
                              REIGN__LIFE_ARG(&e->base.life, 0, 0));
}

/* Releases a lease held at `term` by `guid` (ours, an older standing's, or the deposed mark);
 * no answer is awaited. */
static void release(lease_election *e, const char *guid, uint64_t term)
{
    int rc = submit(e, REIGN__SQLW_RELEASE, guid, term, NULL);
    if (rc < 0)
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: cannot release term %llu: %s",
                   e->base.name, (unsigned long long)term, reign_strerror(rc));
}

/* ---- the candidates row (listed candidates) ---------------------------------------------------
 */

typedef enum list_op { LIST_JOIN, LIST_REFRESH, LIST_LEAVE } list_op;

/* What a candidates statement takes to the worker. */
typedef struct list_call {
    list_op op;
    char *name, *owner;
    char guid[2 * GUID_BYTES + 1];
    void *payload;
    size_t payload_len;
    int64_t ttl_ms;
} list_call;

static void list_call_free(void *p)
{
    list_call *c = p;
    reign__free(c->name);
    reign__free(c->owner);
    reign__free(c->payload);
    reign__free(c);
}

static int run_list_call(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    list_call *c = ctx;
    switch (c->op) {
    case LIST_JOIN:
        return reign__candidates_join(conn, dc, c->name, c->guid, c->owner, c->payload,
                                      c->payload_len, c->ttl_ms, err, errlen);
    case LIST_REFRESH:
        return reign__candidates_refresh(conn, dc, c->name, c->guid, c->ttl_ms, err, errlen);
    case LIST_LEAVE:
        return reign__candidates_leave(conn, dc, c->name, c->guid, err, errlen);
    }
    return REIGN_EINVAL;
}

static void on_listed(void *owner, void *arg, const reign__sqlw_result *r);

/* Sends one statement on our row (the guid given); no answer is awaited but a refresh's. */
static void list_send(lease_election *e, list_op op, const char *guid)
{
    list_call *c = reign__calloc(1, sizeof(*c));
    bool ok =
        c && (c->name = reign__strdup(e->base.name)) && (c->owner = reign__strdup(e->base.id));
    if (ok && op == LIST_JOIN && e->base.data_len)
        ok = (c->payload = reign__memdup(e->base.data, e->base.data_len)) != NULL;
    int rc = REIGN_ENOMEM;
    if (ok) {
        c->op = op;
        reign__strlcpy(c->guid, guid, sizeof(c->guid));
        c->payload_len = op == LIST_JOIN ? e->base.data_len : 0;
        c->ttl_ms = e->ls->lease_ms;
        rc = reign__sqlw_call(e->w, "candidate", run_list_call, c, list_call_free,
                              op == LIST_LEAVE ? NULL : e, op == LIST_LEAVE ? NULL : on_listed,
                              NULL);
    }
    if (rc < 0) {
        if (c)
            list_call_free(c);
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: cannot list the candidate: %s",
                   e->base.name, reign_strerror(rc));
    }
}

/* A refresh found no row (it expired and someone removed it, after a stall): list again. */
static void on_listed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    list_call *c = r->ctx;
    if (r->rc < 0)
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: the candidates row: %s", e->base.name,
                   r->err);
    else if (c->op == LIST_REFRESH && r->rc == 0 && !strcmp(c->guid, e->listed_guid))
        list_send(e, LIST_JOIN, e->listed_guid);
}

static void list_timer_cb(reign__timer *t, void *arg)
{
    lease_election *e = arg;
    if (!e->listed_guid[0])
        return;
    list_send(e, LIST_REFRESH, e->listed_guid);
    reign__timer_start(timers(e), &e->list_timer, reign__now_ns() + ms(e->ls->lease_ms / 3));
}

/* Whether a candidate in state `s` stands: it looks, claims or leads.  Paused (ceded, deposed),
 * resigning, left or freed, it does not, until it stands again with a fresh guid. */
static bool standing(lstate s)
{
    return s == L_LOOKING || s == L_CLAIMING || s == L_LEADER;
}

/*
 * Brings the candidates row in line with the table's state and the standing's guid: a listed
 * candidate that stands has the row of its current guid, any other none.  Called after every
 * step of the table (step()) and once a new standing has its guid (stand()), so every way in
 * and out of standing (stand, depose, suspend, cede, resign, close, free) lists or unlists.
 */
static void list_follow(lease_election *e)
{
    bool want = e->base.listed && !e->base.observer && standing(e->state) && e->guid[0];
    if (e->listed_guid[0] && (!want || strcmp(e->listed_guid, e->guid))) {
        reign__timer_stop(timers(e), &e->list_timer);
        list_send(e, LIST_LEAVE, e->listed_guid);
        e->listed_guid[0] = '\0';
    }
    if (want && !e->listed_guid[0]) {
        reign__strlcpy(e->listed_guid, e->guid, sizeof(e->listed_guid));
        list_send(e, LIST_JOIN, e->listed_guid);
        reign__timer_start(timers(e), &e->list_timer, reign__now_ns() + ms(e->ls->lease_ms / 3));
    }
}

/* ---- leadership ------------------------------------------------------------------------------ */

static void demote(lease_election *e, reign_demote_reason reason, bool owed)
{
    if (!e->base.leader)
        return;
    /* Noticed late (a stall, SIGSTOP), a demotion took effect at the bound. */
    int64_t bound = e->valid_until;
    e->valid_until = 0;
    e->renewing = false;
    reign__timer_stop(timers(e), &e->deadline);
    reign__election_demote(&e->base, reason, bound, owed);
}

/* The events an API call owed, before anything else is told. */
static void flush_deferred(lease_election *e)
{
    reign__election_flush(&e->base);
}

/* An owed LEFT comes due: the row is released (or there was none). */
static void lease_left(reign_election *pub, int err)
{
    reign__election_news n = {.err = err};
    step((lease_election *)pub, IN(RELEASED), &n); /* LEFT */
}

/* Past the bound: demote, give the row back if it is still ours, and stand anew. */
static bool check_bound(lease_election *e, int64_t now)
{
    if (!e->base.leader || now < e->valid_until)
        return false;
    bool down = reign_client_state(e->base.client) == REIGN_CONN_SUSPENDED;
    reign__election_news n = {.term = e->base.term};
    step(e, down ? IN(LOST) : IN(STALLED), &n); /* demoted; the term given back, stand again */
    return true;
}

static void deadline_cb(reign__timer *t, void *arg)
{
    lease_election *e = arg;
    ENTER(e);
    flush_deferred(e);
    check_bound(e, reign__now_ns());
    LEAVE(e);
}

/* A take, insert or renewal sent at sent_ns succeeded: valid until then + lease - margin. */
static void extend(lease_election *e, int64_t sent_ns)
{
    int64_t until = sent_ns + ms(e->ls->lease_ms - e->ls->margin_ms);
    if (until > e->valid_until)
        e->valid_until = until;
    reign__timer_start(timers(e), &e->deadline, e->valid_until);
}

static void renew_cb(reign__timer *t, void *arg);

/* Leadership begins (the table's ELECT): valid until the claim's send time + lease - margin. */
static void act_elect(reign_election *pub, const reign__election_news *n)
{
    lease_election *e = (lease_election *)pub;
    int64_t sent_ns = n->until - ms(e->ls->lease_ms - e->ls->margin_ms);
    reign__election_lead(&e->base, n->term, n->token);
    e->valid_until = 0;
    extend(e, sent_ns);
    reign__timer_start(timers(e), &e->timer, sent_ns + ms(e->ls->renew_ms));
    reign__election_elected(&e->base, n->at, e->valid_until);
    if (e->base.leader && reign__life_live(&e->base.life))
        publish_self(e);
}

static void act_demote(reign_election *pub, reign_demote_reason reason, bool owed)
{
    demote((lease_election *)pub, reason, owed);
}

static void act_drop(reign_election *pub)
{
    pub->leader = false;
}

static void act_request(reign_election *pub, unsigned rq, const reign__election_news *n);

static const reign__election_acts lease_acts = {act_demote, act_drop, act_elect, act_request};

/* One step of the table (election_lease_fsm.c); the candidates row follows the new state. */
static bool step(lease_election *e, reign__lease_input in, const reign__election_news *n)
{
    bool ok = reign__election_step(&e->base, &reign__lease_machine, &lease_acts,
                                   REIGN__EFSM_STATE(&e->state), in, 0, n);
    list_follow(e);
    return ok;
}

static void become_leader(lease_election *e, uint64_t term, int64_t sent_ns)
{
    reign__election_news n = {.term = term, .token = term, .at = reign__now_ns()};
    n.until = sent_ns + ms(e->ls->lease_ms - e->ls->margin_ms);
    n.fresh = n.until > n.at;
    step(e, IN(CLAIMED), &n); /* too late to lead on (a stall): given back, stand again */
}

static void on_renewed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg) || !e->base.leader)
        return;
    ENTER(e);
    e->renewing = false;
    if (r->rc == 1) {
        extend(e, r->sent_ns);
    } else if (r->rc == 0) {
        /* The row is no longer ours at this term: deposed (reign cede), or changed by hand. */
        reign__election_news n = {.term = e->base.term};
        step(e, IN(DEPOSED), &n); /* demoted, PAUSED: the others let in now */
    } else {
        /* The bound decides; the next tick tries again. */
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: renewal failed: %s", e->base.name,
                   r->err);
    }
    LEAVE(e);
}

static void renew_cb(reign__timer *t, void *arg)
{
    lease_election *e = arg;
    if (!e->base.leader)
        return;
    ENTER(e);
    flush_deferred(e);
    if (!check_bound(e, reign__now_ns()) && e->base.leader) {
        if (!e->renewing) {
            int rc = submit(e, REIGN__SQLW_RENEW, e->guid, e->base.term, on_renewed);
            e->renewing = rc == 0;
        }
        reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms(e->ls->renew_ms));
    }
    LEAVE(e);
}

/* ---- looking and claiming ----------------------------------------------------------------- */

static void on_claimed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg))
        return; /* abandon_claim() queued its release behind it */
    ENTER(e);
    flush_deferred(e);
    if (e->state == L_CLAIMING) {
        uint64_t term = r->op == REIGN__SQLW_RENEW ? e->base.term : r->term;
        if (r->rc == 1) {
            become_leader(e, term, r->sent_ns);
        } else if (r->rc == 0) {
            look(e); /* someone was quicker */
        } else {
            reign__log(e->base.log, REIGN_LOG_INFO, "election %s: claim failed: %s", e->base.name,
                       r->err);
            step(e, IN(CLAIM_FAILED), NULL); /* read again at the next poll */
        }
    }
    LEAVE(e);
}

/*
 * Gives up a claim still out: a release of the term it would win, queued
 * behind it (the worker keeps the order), undoes it if it succeeds.
 */
static void abandon_claim(lease_election *e)
{
    if (e->state == L_CLAIMING)
        release(e, e->guid, e->claim_term);
}

/* The row is missing, free or ours: claim it with `op`, for the row's `term` (and, TAKE, its
 * term_duration `renewals`, or only if released). */
static void claim(lease_election *e, reign__sqlw_op op, uint64_t term, uint64_t renewals,
                  bool released)
{
    e->claim_renewals = renewals;
    e->claim_released = released;
    e->claim_term = op == REIGN__SQLW_INSERT ? 1 : op == REIGN__SQLW_TAKE ? term + 1 : term;
    e->claim_op = op;
    e->claim_from = term;
    step(e, IN(CLAIM), NULL);
}

/* The table's CLAIM. */
static void send_claim(lease_election *e)
{
    if (e->claim_op == REIGN__SQLW_RENEW)
        e->base.term = e->claim_from; /* the term we hold, should the renewal succeed */
    if (submit(e, e->claim_op, e->guid, e->claim_from, on_claimed) < 0)
        step(e, IN(CLAIM_FAILED), NULL); /* cannot submit */
}

/*
 * When to read again.  Where the store notifies every change, renewals included (SQLite), a
 * follower needs to look only when the lease could run out: a renewal, a release or a takeover
 * wakes it before, so at rest it reads once per renewal at most.  Where renewals are not
 * notified (PostgreSQL notifies releases and takeovers only; MariaDB nothing), every poll
 * period: a follower counts a lease's duration from when it first SAW its last version, so it
 * must see each version within a poll period of its writing for a dead host's lease to be
 * taken over within lease + poll.  The first poll of a standing comes at a random point of the
 * period, so that candidates started together do not read together from then on.
 */
static int64_t next_read(lease_election *e, int64_t free_at)
{
    int64_t wait = reign__sqlw_notifies_renewals(e->w) ? ms(e->ls->lease_ms) : ms(e->ls->poll_ms);
    if (e->spread) {
        uint32_t r = 0;
        reign__random_bytes(&r, sizeof(r));
        wait = wait * (int64_t)(r % 1000 + 1) / 1000;
        e->spread = false;
    }
    int64_t at = reign__now_ns() + wait;
    /* Not before it can be taken over (free_at is INT64_MAX when it never can). */
    return free_at < at ? free_at : at;
}

static void on_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg))
        return;
    ENTER(e);
    flush_deferred(e);
    e->reading = false;
    if (e->state != L_LOOKING) {
        LEAVE(e);
        return;
    }
    if (r->rc < 0) {
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: read failed: %s", e->base.name,
                   r->err);
        reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms(e->ls->poll_ms));
        LEAVE(e);
        return;
    }
    const reign__lease *l = &r->lease;
    int64_t free_at = reign__lease_free_at(&e->seen, l, r->done_ns);
    bool free = free_at <= reign__now_ns();
    reign__log(e->base.log, REIGN_LOG_DEBUG,
               "election %s: row %s: owner '%s' term %llu renewals %llu, %s", e->base.name,
               l->exists ? "found" : "missing", l->owner, (unsigned long long)l->term,
               (unsigned long long)l->term_duration,
               !l->exists    ? "-"
               : l->released ? "released"
               : free        ? "run out"
                             : "live");
    bool mine = l->exists && !strcmp(l->owner, e->base.id) && !strcmp(l->owner_guid, e->guid);
    e->seen_term = l->exists && !free && !mine ? l->term : 0;
    publish(e, mine || free ? NULL : l);
    if (!reign__life_live(&e->base.life) || e->state != L_LOOKING) {
        LEAVE(e);
        return;
    }
    if (!e->base.observer && !l->exists)
        claim(e, REIGN__SQLW_INSERT, 0, 0, false);
    else if (!e->base.observer && free)
        claim(e, REIGN__SQLW_TAKE, l->term, l->term_duration, false);
    else if (!e->base.observer && mine)
        claim(e, REIGN__SQLW_RENEW, l->term, 0, false);
    else if (e->again)
        look(e);
    else
        reign__timer_start(timers(e), &e->timer, next_read(e, free_at));
    LEAVE(e);
}

static void look(lease_election *e)
{
    step(e, IN(LOOK), NULL);
}

/* The table's READ. */
static void read_row(lease_election *e)
{
    e->again = false;
    if (e->reading)
        return; /* the read out now is of this epoch: its answer will do */
    int rc = submit(e, REIGN__SQLW_READ, NULL, 0, on_read);
    e->reading = rc == 0;
    if (rc < 0)
        reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms(e->ls->poll_ms));
}

/* Tells the client's guardian of this standing's guid (or that it is over). */
static void guard(lease_election *e, bool add)
{
    if (e->guid[0])
        reign__client_guard_lease(e->base.client, add, e->base.name, e->base.id, e->guid);
}

/* Stands (again) with a fresh identity: an older standing's lease is never taken for ours. */
static void stand(lease_election *e)
{
    abandon_claim(e);
    step(e, IN(STAND), NULL);
}

/* The table's STAND. */
static void stand_fresh(lease_election *e)
{
    reign__life_bump(&e->base.life);
    e->reading = false;
    e->renewing = false;
    reign__timer_stop(timers(e), &e->timer);
    e->seen_term = 0;
    e->seen = (reign__lease_seen){0};
    e->spread = true;
    guard(e, false);
    if (reign__random_hex(e->guid, GUID_BYTES) < 0) {
        e->guid[0] = '\0';
        emit_error(e, REIGN_EBACKEND, "stand", "no randomness for the candidate's guid");
        step(e, IN(NO_GUID), NULL); /* LEFT */
        return;
    }
    /* Before any claim with it: a process that dies holding this standing's lease has it
     * released by its guardian (and its candidates row deleted). */
    guard(e, true);
    list_follow(e); /* the row of the old standing goes, this one's is made */
    if (!e->listening && reign__sqlw_notifies(e->w))
        e->listening = reign__sqlw_submit(e->w, REIGN__SQLW_LISTEN, e->base.name, NULL, 0, NULL,
                                          NULL, NULL) == 0;
    look(e);
}

/* A row's request (election_lease_fsm.h), made after the step's events. */
static void act_request(reign_election *pub, unsigned rq, const reign__election_news *n)
{
    lease_election *e = (lease_election *)pub;
    uint64_t term = n ? n->term : e->base.term;
    switch ((reign__lease_request)rq) {
    case REIGN__LEASE_RQ_STAND:
        stand_fresh(e);
        break;
    case REIGN__LEASE_RQ_READ:
        read_row(e);
        break;
    case REIGN__LEASE_RQ_CLAIM:
        send_claim(e);
        break;
    case REIGN__LEASE_RQ_POLL:
        reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms(e->ls->poll_ms));
        break;
    case REIGN__LEASE_RQ_GIVE_BACK: /* a lease we may still hold but may not lead on */
        release(e, e->guid, term);
        stand(e);
        break;
    case REIGN__LEASE_RQ_LET_IN: /* deposed: the others in now, us after the delay */
        release(e, REIGN__SQL_DEPOSED, term);
        reign__life_bump(&e->base.life);
        reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms(e->base.cede_delay_ms));
        break;
    default:
        break;
    }
}

static void timer_cb(reign__timer *t, void *arg)
{
    lease_election *e = arg;
    ENTER(e);
    flush_deferred(e);
    if (e->state == L_PAUSED)
        stand(e);
    else if (e->state == L_LOOKING)
        look(e);
    else if (e->state == L_LEADER)
        renew_cb(t, arg);
    LEAVE(e);
}

/* ---- the client's hooks ------------------------------------------------------------------- */

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    lease_election *e = (lease_election *)rp;
    ENTER(e);
    switch (st) {
    case REIGN_CONN_CONNECTED:
        if (e->state == L_IDLE)
            stand(e);
        break;
    case REIGN_CONN_SUSPENDED:
        if (e->base.leader &&
            reign__client_suspend_policy(e->base.client) == REIGN_SUSPEND_IMMEDIATE) {
            /* Demoted; the term given back (if the store comes back before the lease ends). */
            reign__election_news n = {.term = e->base.term};
            step(e, IN(SUSPENDED), &n);
        }
        break;
    case REIGN_CONN_LOST: {
        /* The store file was deleted or replaced: the lease went with it.  A claim still out
         * may land in the new file: its release follows it there. */
        abandon_claim(e);
        reign__election_news n = {.term = e->base.term};
        step(e, IN(SESSION_LOST), &n); /* demoted if leading; IDLE: CONNECTED stands us */
        break;
    }
    case REIGN_CONN_RECONNECTED:
        if (e->state == L_LOOKING && !e->reading)
            look(e);
        else if (e->state == L_LEADER)
            renew_cb(&e->timer, e);
        break;
    case REIGN_CONN_CLOSED: {
        /* An orderly close resigns; the worker still sends the release. */
        bool was_leader = e->base.leader;
        uint64_t term = e->base.term;
        abandon_claim(e);
        reign__election_news n = {0};
        if (e->state == L_RESIGNING && e->base.owe_left) { /* the owed LEFT is told now */
            e->base.owe_left = false;
            n.err = e->base.owed_err;
        }
        step(e, IN(CLOSED), &n); /* demoted if leading; LEFT (told if resigning) */
        if (was_leader)
            release(e, e->guid, term);
        reign__life_bump(&e->base.life);
        reign__timer_stop(timers(e), &e->timer);
        break;
    }
    default:
        break;
    }
    LEAVE(e);
}

static void on_deadline(reign__recipe *rp, int64_t now)
{
    lease_election *e = (lease_election *)rp;
    if (!e->base.leader)
        return;
    ENTER(e);
    check_bound(e, now);
    LEAVE(e);
}

static void on_changed(reign__recipe *rp)
{
    lease_election *e = (lease_election *)rp;
    if (e->state != L_LOOKING)
        return;
    ENTER(e);
    if (e->reading)
        e->again = true;
    else if (e->seen_term && !e->base.observer && !reign__sqlw_notifies_renewals(e->w))
        /* PostgreSQL notifies releases and takeovers only: try the lease we saw at once, one
         * round trip sooner than read-then-take, if it is released; it fails harmlessly if it
         * was a takeover. */
        claim(e, REIGN__SQLW_TAKE, e->seen_term, 0, true);
    else
        look(e);
    LEAVE(e);
}

static void destroy(lease_election *e)
{
    reign__timers *ts = timers(e);
    reign__timer_stop(ts, &e->timer);
    reign__timer_stop(ts, &e->deadline);
    reign__timer_stop(ts, &e->list_timer);
    reign__sqlw_forget(e->w, e);
    guard(e, false);
    reign__client_detach(e->base.client, &e->base.recipe);
    reign__election_base_free(&e->base);
    reign__free(e);
}

static void on_destroy(reign__recipe *rp)
{
    destroy((lease_election *)rp);
}

static const reign__recipe_ops lease_recipe_ops = {
    .conn = on_conn,
    .deadline = on_deadline,
    .destroy = on_destroy,
    .changed = on_changed,
};

/* ---- the API ------------------------------------------------------------------------------ */

int reign__lease_election_join(reign_election **ret, reign_client *client, const char *name,
                               const reign_election_options *o)
{
    if (o->strategy == REIGN_STRATEGY_LOCK)
        return REIGN_ENOTSUP; /* a lease table has one row per election: no strategies */
    lease_election *e = reign__calloc(1, sizeof(*e));
    if (!e)
        return REIGN_ENOMEM;
    int rc = reign__election_base_init(&e->base, client, name, o);
    if (rc < 0) {
        reign__free(e);
        return rc;
    }
    e->base.recipe.ops = &lease_recipe_ops;
    e->base.impl = &lease_impl;
    e->w = reign__client_sql(client);
    e->ls = reign__client_lease(client);
    e->state = L_IDLE;
    reign__timer_init(&e->timer, timer_cb, e);
    reign__timer_init(&e->deadline, deadline_cb, e);
    reign__timer_init(&e->list_timer, list_timer_cb, e);
    reign__client_attach(client, &e->base.recipe);
    reign_conn_state st = reign_client_state(client);
    if (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED || st == REIGN_CONN_SUSPENDED)
        stand(e);
    *ret = &e->base;
    return 0;
}

static void on_released(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg) || e->state != L_RESIGNING)
        return;
    ENTER(e);
    e->base.owed_err = r->rc < 0 ? r->rc : 0;
    e->base.owe_left = true;
    flush_deferred(e);
    LEAVE(e);
}

/* Steps down: demoted now (told on the next turn), the row released. */
static int step_down(lease_election *e, lstate then)
{
    bool was_leader = e->base.leader;
    uint64_t term = e->base.term;
    abandon_claim(e);
    if (!step(e, then == L_RESIGNING ? IN(RESIGN) : IN(CEDE), NULL)) /* demoted, told later */
        return REIGN_ESTATE;
    reign__life_bump(&e->base.life);
    e->reading = false;
    reign__timer_stop(timers(e), &e->timer);
    int rc = 0;
    if (was_leader)
        rc =
            submit(e, REIGN__SQLW_RELEASE, e->guid, term, then == L_RESIGNING ? on_released : NULL);
    if (then == L_RESIGNING && (!was_leader || rc < 0)) {
        /* Nothing to release (a claim still out releases itself): LEFT on the next turn. */
        reign__election_owe_left(&e->base, rc);
    }
    return rc;
}

static int lease_resign(reign_election *pub)
{
    lease_election *e = (lease_election *)pub;
    if (e->state == L_LEFT || e->state == L_RESIGNING)
        return REIGN_ESTATE;
    return step_down(e, L_RESIGNING);
}

static int lease_cede(reign_election *pub, int delay_ms)
{
    lease_election *e = (lease_election *)pub;
    int rc = step_down(e, L_PAUSED);
    if (rc == REIGN_ESTATE)
        return rc;
    int64_t d = delay_ms < 0 ? e->base.cede_delay_ms : delay_ms;
    reign__timer_start(timers(e), &e->timer, reign__now_ns() + ms((int)d));
    return rc;
}

static int64_t lease_valid_until(const reign_election *pub)
{
    return ((const lease_election *)pub)->valid_until;
}

static reign_election *lease_free(reign_election *pub)
{
    lease_election *e = (lease_election *)pub;
    if (reign__life_live(&e->base.life)) {
        bool was_leader = e->base.leader;
        abandon_claim(e);
        step(e, IN(FREE), NULL); /* a leadership ends silently */
        reign__life_request_free(&e->base.life);
        /* Leave without waiting: the release goes out, no callback follows. */
        if (was_leader)
            release(e, e->guid, e->base.term);
        reign__life_bump(&e->base.life);
        reign__sqlw_forget(e->w, e);
    }
    if (reign__life_busy(&e->base.life))
        return NULL; /* inside one of our callbacks: LEAVE frees it */
    destroy(e);
    return NULL;
}

static const reign__election_impl lease_impl = {
    .resign = lease_resign,
    .cede = lease_cede,
    .valid_until = lease_valid_until,
    .free = lease_free,
    .left = lease_left,
};

/* ---- one-shot: the snapshot for `reign status`, deposing for `reign cede` ------------------ */

typedef struct lease_query {
    reign__recipe recipe;
    reign_client *client;
    reign__sqlw *w;
    char *name;
    bool depose;
    reign_election_query_cb *qcb;
    reign_election_done_cb *dcb;
    void *userdata;
    bool done;
} lease_query;

static void query_free(lease_query *q)
{
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    reign__free(q->name);
    reign__free(q);
}

/* Calls back once, then frees (the callback may free the client: q is detached first). */
static void query_finish(lease_query *q, int err, const reign_election_view *view)
{
    if (q->done)
        return;
    q->done = true;
    reign__sqlw_forget(q->w, q);
    reign__client_detach(q->client, &q->recipe);
    if (q->qcb)
        q->qcb(q->client, err, err ? NULL : view, q->userdata);
    else
        q->dcb(q->client, err, q->userdata);
    reign__free(q->name);
    reign__free(q);
}

static void on_deposed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    query_finish(q, r->rc < 0 ? r->rc : r->rc == 1 ? 0 : REIGN_ENOENT, NULL);
}

/* The row and the listed candidates, read on the worker in one go. */
typedef struct snapshot {
    char *name;
    reign__lease lease;
    reign__candidate_rows cands;
} snapshot;

static void snapshot_free(void *p)
{
    snapshot *sn = p;
    reign__lease_clear(&sn->lease);
    reign__candidate_rows_free(&sn->cands);
    reign__free(sn->name);
    reign__free(sn);
}

static int read_snapshot(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen)
{
    snapshot *sn = ctx;
    int rc = reign__sql_lease_read(conn, dc, sn->name, &sn->lease, err, errlen);
    if (rc == 0)
        rc = reign__candidates_list(conn, dc, sn->name, &sn->cands, err, errlen);
    return rc;
}

static void on_query_read(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    const reign__lease *l = &r->lease;
    if (r->rc < 0) {
        query_finish(q, r->rc, NULL);
        return;
    }
    bool live = l->exists && !l->released;
    int rc = live ? reign__sqlw_submit(q->w, REIGN__SQLW_DEPOSE, q->name, NULL, l->term, q,
                                       on_deposed, NULL)
                  : REIGN_ENOENT;
    if (rc < 0)
        query_finish(q, rc, NULL);
}

static void on_snapshot(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_query *q = owner;
    snapshot *sn = r->ctx;
    const reign__lease *l = &sn->lease;
    if (r->rc < 0) {
        query_finish(q, r->rc, NULL);
        return;
    }
    /* For people: whether it has run out is the database clock's view here (nothing is
     * decided by it; a follower counts on its own clock). */
    bool live = l->exists && !l->released && !l->db_expired;
    if ((!l->exists || reign__sql_lease_removed(l)) && !sn->cands.n) {
        query_finish(q, REIGN_ENOENT, NULL);
        return;
    }
    /* The leader first (from the lease row: it is the one that leads, listed or not), then
     * the other listed candidates in the order they joined. */
    reign_candidate *cands = reign__calloc(sn->cands.n + 1, sizeof(*cands));
    if (!cands) {
        query_finish(q, REIGN_ENOMEM, NULL);
        return;
    }
    size_t n = 0;
    if (live) {
        cands[n++] = (reign_candidate){.id = l->owner,
                                       .data = l->payload,
                                       .data_len = l->payload_len,
                                       .node = q->name,
                                       .joined_ms = 0};
        for (size_t i = 0; i < sn->cands.n; i++)
            if (!strcmp(sn->cands.v[i].guid, l->owner_guid)) {
                cands[0].node = sn->cands.v[i].guid;
                cands[0].joined_ms = sn->cands.v[i].joined_ms;
            }
    }
    for (size_t i = 0; i < sn->cands.n; i++) {
        const reign__candidate_row *c = &sn->cands.v[i];
        if (live && !strcmp(c->guid, l->owner_guid))
            continue;
        cands[n++] = (reign_candidate){.id = c->owner,
                                       .data = c->payload,
                                       .data_len = c->payload_len,
                                       .node = c->guid,
                                       .joined_ms = c->joined_ms};
    }
    reign_election_view view = {.name = q->name,
                                .strategy = REIGN_STRATEGY_DEFAULT,
                                .has_leader = live,
                                .candidates = n ? cands : NULL,
                                .n_candidates = n};
    /* The row's lease, as its holder set it; the poll period within which a follower sees its
     * last renewal; then the followers' read and take, at the statement timeout a lease that
     * long gets by default (renew/2, poll = renew = lease/5; <= 5 s). */
    if (l->exists && l->duration_ms > 0 && l->duration_ms <= 365LL * 86400000) {
        int64_t statement = l->duration_ms / 5 / 2 < 5000 ? l->duration_ms / 5 / 2 : 5000;
        view.takeover_ms = l->duration_ms + l->duration_ms / 5 + 2 * statement;
        view.takeover_from = REIGN_TAKEOVER_LEASE;
    }
    if (live) {
        view.leader.id = l->owner;
        view.leader.data = l->payload;
        view.leader.data_len = l->payload_len;
        view.leader.term = l->term;
        view.leader.token = l->term;
        view.leader.since_ms = 0;
    }
    query_finish(q, 0, &view);
    reign__free(cands);
}

static void on_query_conn(reign__recipe *rp, reign_conn_state st)
{
    if (st == REIGN_CONN_CLOSED)
        query_finish((lease_query *)rp, REIGN_ECLOSED, NULL);
}

static void on_query_destroy(reign__recipe *rp)
{
    query_free((lease_query *)rp);
}

static const reign__recipe_ops lease_query_ops = {.conn = on_query_conn,
                                                  .destroy = on_query_destroy};

int reign__lease_query(reign_client *client, const char *name, bool depose,
                       reign_election_query_cb *qcb, reign_election_done_cb *dcb, void *userdata)
{
    lease_query *q = reign__calloc(1, sizeof(*q));
    if (!q)
        return REIGN_ENOMEM;
    q->recipe.ops = &lease_query_ops;
    q->client = client;
    q->w = reign__client_sql(client);
    q->depose = depose;
    q->qcb = qcb;
    q->dcb = dcb;
    q->userdata = userdata;
    if (!(q->name = reign__strdup(name))) {
        reign__free(q);
        return REIGN_ENOMEM;
    }
    reign__client_attach(client, &q->recipe);
    int rc;
    if (depose) {
        rc = reign__sqlw_submit(q->w, REIGN__SQLW_READ, name, NULL, 0, q, on_query_read, NULL);
    } else {
        snapshot *sn = reign__calloc(1, sizeof(*sn));
        rc = sn && (sn->name = reign__strdup(name)) ? 0 : REIGN_ENOMEM;
        if (rc == 0)
            rc = reign__sqlw_call(q->w, name, read_snapshot, sn, snapshot_free, q, on_snapshot,
                                  NULL);
        if (rc < 0 && sn)
            snapshot_free(sn);
    }
    if (rc < 0) {
        query_free(q);
        return rc;
    }
    return 0;
}
