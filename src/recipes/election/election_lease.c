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
 *
 * Priorities and designation (docs/sql-leases.md): a candidate with a priority is listed with
 * it.  A follower about to take a free lease first looks at the listed candidates and lets a
 * live one of higher rank (a higher priority; the same, stood earlier, in an election that
 * uses priorities; the row's designee) take it instead; a follower that finds a leader of
 * lower priority designates itself (at once or after its preemption delay).  A designation is
 * a mark on the row (sql.h): the leader learns of it at its next renewal, or at once where
 * the store notifies (then it reads its row), demotes itself (reason handoff), releases the
 * row under the mark and stands again; only the designee takes the released row.  Nothing of
 * this can make two leaders: the take's compare-and-set on the version decides, as ever.
 */
#include <stdio.h>
#include <string.h>

#include "election_base.h"
#include "election_lease_fsm.h"
#include "client/sql_session.h"
#include "election_lease_rank.h"
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
#define ROW_GUID   sizeof(((reign__lease *)0)->owner_guid) /* a guid or a mark, as read */

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

    /* Priorities and designation. */
    int priority;
    bool no_preempt;
    int preempt_delay_ms;
    bool checking; /* leading: a read of our row is out (a refused renewal, a notice) */
    bool refused;  /* ... and a renewal was refused: not ours any more, whatever it says */
    char hand_guid[ROW_GUID];           /* HAND_OVER, LET_IN: the guid to release under */
    bool claim_designee;                /* TAKE: the row is designated to us: no rank to look at */
    char *seen_owner;                   /* the holder of the lease we last read (NULL: none) */
    char seen_guid[ROW_GUID];           /* ... and its guid (or a mark) */
    uint64_t preempt_term;              /* the leader's term we looked at to preempt */
    int64_t preempt_at;                 /* ... when its delay ends */
    bool preempting;                    /* ... a look at the candidates is out */
    bool preempt_done;                  /* ... looked: nothing (more) to do in that term */
    bool preempt_later;                 /* ... looked: to do once the delay is over */
    uint64_t self_designated;           /* ... the term we designated ourselves over */
    bool claim_chosen;                  /* TAKE: an operator's designee (not our preemption) */
    bool handing;                       /* PAUSED by a handoff: still listed, stands at once */
    char prev_guid[2 * GUID_BYTES + 1]; /* the standing before this one */

    char listed_guid[2 * GUID_BYTES + 1]; /* the standing our candidates row is of ("": none) */
    reign__timer list_timer;              /* the row's next refresh */
    bool listed_in_session;               /* the row was made in our session: no refresh */

    reign__timer timer;    /* poll, renew, retry, pause: one purpose per state */
    reign__timer deadline; /* the leader's bound */

    /* Leases in the session (sql_session.h): we claim under our client's session, and follow
     * a lease held in another's by watching that session, not the row. */
    reign__sql_session_user su;
    bool in_session;                    /* su joined */
    bool holding;                       /* counted in the keeper's holders */
    char session[2 * GUID_BYTES + 1];   /* our client's session, "" while none is up */
    reign__sql_session_watch sw;        /* the holder's session we follow */
    char following[2 * GUID_BYTES + 1]; /* ... its guid */
    char gone[2 * GUID_BYTES + 1];      /* the last session the keeper saw go */
    uint64_t released_read;             /* the term of the released row last read */
    bool claim_session;                 /* CLAIMING: the claim is made under session */
} lease_election;

static const reign__recipe_ops lease_recipe_ops;
static const reign__election_impl lease_impl;

static void look(lease_election *e);
static void stand(lease_election *e);
static bool step(lease_election *e, reign__lease_input in, const reign__election_news *n);
static reign_election *lease_free(reign_election *pub);

/* ---- small helpers ------------------------------------------------------------------------ */

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
    cl->session = e->session;
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

/* ---- the candidates row (listed candidates) ----------------------------------------------- */

/* A row made outside a session is refreshed every lease/3; one made in a session lives as long
 * as the session beats, and needs nothing (candidates.h). */
static void list_refresh_later(lease_election *e)
{
    if (e->listed_in_session)
        reign__timer_stop(timers(e), &e->list_timer);
    else
        reign__timer_start(timers(e), &e->list_timer, reign__now_ns() + ms(e->ls->lease_ms / 3));
}

static void on_listed(void *owner, void *arg, const reign__sqlw_result *r);

/* Sends one statement on our row (the guid given; REIGN__LIST_RENAME: from the listed one); no
 * answer is awaited but a refresh's or a rename's. */
static void list_send(lease_election *e, reign__list_op op, const char *guid)
{
    bool answered = op != REIGN__LIST_LEAVE;
    reign__list_call *c = reign__calloc(1, sizeof(*c));
    bool ok =
        c && (c->name = reign__strdup(e->base.name)) && (c->owner = reign__strdup(e->base.id));
    if (ok && op == REIGN__LIST_JOIN && e->base.data_len)
        ok = (c->payload = reign__memdup(e->base.data, e->base.data_len)) != NULL;
    int rc = REIGN_ENOMEM;
    if (ok) {
        c->op = op;
        reign__strlcpy(c->guid, guid, sizeof(c->guid));
        c->payload_len = op == REIGN__LIST_JOIN ? e->base.data_len : 0;
        c->ttl_ms = e->ls->lease_ms;
        c->priority = e->priority;
        reign__strlcpy(c->from, e->listed_guid, sizeof(c->from));
        reign__strlcpy(c->session, e->session, sizeof(c->session));
        if (op == REIGN__LIST_JOIN || op == REIGN__LIST_RENAME)
            e->listed_in_session = e->session[0] != '\0';
        rc = reign__sqlw_call(e->w, "candidate", reign__list_run, c, reign__list_call_free,
                              answered ? e : NULL, answered ? on_listed : NULL, NULL);
    }
    if (rc < 0) {
        if (c)
            reign__list_call_free(c);
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: cannot list the candidate: %s",
                   e->base.name, reign_strerror(rc));
    }
}

/* A refresh or a rename found no row (it expired and someone removed it, after a stall): list
 * again. */
static void on_listed(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    reign__list_call *c = r->ctx;
    if (r->rc < 0)
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: the candidates row: %s", e->base.name,
                   r->err);
    else if ((c->op == REIGN__LIST_REFRESH || c->op == REIGN__LIST_RENAME) && r->rc == 0 &&
             !strcmp(c->guid, e->listed_guid))
        list_send(e, REIGN__LIST_JOIN, e->listed_guid);
}

static void list_timer_cb(reign__timer *t, void *arg)
{
    lease_election *e = arg;
    if (!e->listed_guid[0])
        return;
    list_send(e, REIGN__LIST_REFRESH, e->listed_guid);
    list_refresh_later(e);
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
 * A leader that hands over stays listed through its pause, and a new standing takes over the
 * row of the one before in one statement: a candidate that stands on is never unlisted, so an
 * operator's designation always finds it (a mark naming its previous standing is its own).
 */
static void list_follow(lease_election *e)
{
    bool want = e->base.listed && !e->base.observer &&
                (standing(e->state) || (e->state == L_PAUSED && e->handing)) && e->guid[0];
    if (want && e->listed_guid[0] && strcmp(e->listed_guid, e->guid)) {
        list_send(e, REIGN__LIST_RENAME, e->guid); /* from listed_guid */
        reign__strlcpy(e->listed_guid, e->guid, sizeof(e->listed_guid));
        list_refresh_later(e);
        return;
    }
    if (e->listed_guid[0] && !want) {
        reign__timer_stop(timers(e), &e->list_timer);
        list_send(e, REIGN__LIST_LEAVE, e->listed_guid);
        e->listed_guid[0] = '\0';
    }
    if (want && !e->listed_guid[0]) {
        reign__strlcpy(e->listed_guid, e->guid, sizeof(e->listed_guid));
        list_send(e, REIGN__LIST_JOIN, e->listed_guid);
        list_refresh_later(e);
    }
}

/* ---- rank: priorities and designation (the worker's side: election_lease_rank.c) -------- */

/* A rank call of ours, on the row as last read. */
static reign__rank_call *rank_call_new(lease_election *e)
{
    reign__rank_call *k = reign__calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    if (!(k->name = reign__strdup(e->base.name)) || !(k->owner = reign__strdup(e->base.id)) ||
        (e->base.data_len && !(k->payload = reign__memdup(e->base.data, e->base.data_len)))) {
        reign__rank_call_free(k);
        return NULL;
    }
    k->payload_len = e->base.data_len;
    reign__strlcpy(k->guid, e->guid, sizeof(k->guid));
    reign__strlcpy(k->session, e->session, sizeof(k->session));
    k->priority = e->priority;
    reign__strlcpy(k->holder_owner, e->seen_owner ? e->seen_owner : "", sizeof(k->holder_owner));
    reign__strlcpy(k->holder_guid, e->seen_guid, sizeof(k->holder_guid));
    k->duration_ms = e->ls->lease_ms;
    return k;
}

static void on_preempted(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg))
        return;
    ENTER(e);
    e->preempting = false;
    if (r->rc < 0)
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: preemption: %s", e->base.name,
                   r->err);
    if (r->rc == 1) {
        e->self_designated = e->preempt_term; /* a take of it is ours, not an operator's choice */
        reign__log(e->base.log, REIGN_LOG_INFO,
                   "election %s: designated ourselves over a leader of lower priority",
                   e->base.name);
    }
    if (r->rc == REIGN__OUTRANKED)
        e->preempt_later = true; /* read again when the delay is over (consider_preempt()) */
    else
        e->preempt_done = true; /* looked (and handed to us, or nothing to do) */
    LEAVE(e);
}

/*
 * A follower that reads a live leader of another at `term`: may it preempt?  Looks at the
 * candidates once per leader term, when its priority could outrank a leader (and again when
 * the delay is over), never with no_preempt.  Returns when to read again for it (INT64_MAX:
 * no need).
 */
static int64_t consider_preempt(lease_election *e, uint64_t term, int64_t now)
{
    if (e->base.observer || e->priority <= 0 || e->no_preempt)
        return INT64_MAX;
    if (term != e->preempt_term) {
        e->preempt_term = term; /* first seen now: the delay counts from here */
        e->preempt_at = now + ms(e->preempt_delay_ms);
        e->preempting = e->preempt_done = e->preempt_later = false;
    }
    if (e->preempt_done)
        return INT64_MAX;
    if (e->preempting || (e->preempt_later && now < e->preempt_at))
        return e->preempt_at > now ? e->preempt_at : INT64_MAX;
    reign__rank_call *k = rank_call_new(e);
    if (!k)
        return INT64_MAX;
    k->from = term;
    k->now = now >= e->preempt_at;
    int rc = reign__sqlw_call(e->w, e->base.name, reign__rank_preempt, k, reign__rank_call_free, e,
                              on_preempted, REIGN__LIFE_ARG(&e->base.life, 0, 0));
    if (rc < 0) {
        reign__rank_call_free(k);
        return INT64_MAX;
    }
    e->preempting = true;
    return k->now ? INT64_MAX : e->preempt_at;
}

/* ---- leadership ------------------------------------------------------------------------------ */

static void demote(lease_election *e, reign_demote_reason reason, bool owed)
{
    if (!e->base.leader)
        return;
    reign__lease_history_end(&e->base, e->guid, reason); /* before any release: in order */
    /* Noticed late (a stall, SIGSTOP), a demotion took effect at the bound. */
    int64_t bound = e->valid_until;
    e->valid_until = 0;
    e->renewing = false;
    reign__timer_stop(timers(e), &e->deadline);
    if (e->holding)
        reign__sql_session_hold(e->base.client, -1);
    e->holding = false;
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
    if (e->base.leader && e->holding) {
        /* Renewed by the session's beats: its bound is ours (0 once it is lost). */
        e->valid_until = reign__sql_session_valid_until(e->base.client);
        if (now < e->valid_until)
            reign__timer_start(timers(e), &e->deadline, e->valid_until);
    }
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
    if (e->holding)
        until = reign__sql_session_valid_until(e->base.client); /* see check_bound() */
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
    reign__lease_history_begin(&e->base, e->guid, e->ls->lease_ms); /* after the take landed */
    e->valid_until = 0;
    if (e->claim_session && !e->holding) {
        e->holding = true; /* renewed by the session: no statement of our own */
        reign__sql_session_hold(e->base.client, 1);
    }
    extend(e, sent_ns);
    if (!e->holding)
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
    reign__lease_history_end(pub, ((lease_election *)pub)->guid, REIGN_DEMOTE_RESIGNED);
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
    if (e->claim_session) {
        /* Held in the session, valid while it is: never past its bound. */
        int64_t until = reign__sql_session_valid_until(e->base.client);
        n.until = until < n.until ? until : n.until;
    }
    n.fresh = n.until > n.at;
    step(e, IN(CLAIMED), &n); /* too late to lead on (a stall): given back, stand again */
}

/*
 * A leader reads its row when a renewal is refused or the store notifies a change (a
 * designation wakes it so, where the store notifies): designated to another, it hands over;
 * otherwise, no longer ours (reign cede, changed by hand), it is deposed.
 */
static void check_row(lease_election *e, bool refused);

static void on_checked(void *owner, void *arg, const reign__sqlw_result *r)
{
    lease_election *e = owner;
    if (!reign__life_current(&e->base.life, (uintptr_t)arg) || !e->base.leader)
        return;
    ENTER(e);
    flush_deferred(e);
    e->checking = false;
    const reign__lease *l = r->lease;
    bool ours = r->rc == 0 && l->exists && !l->released && l->term == e->base.term &&
                !strcmp(l->owner, e->base.id) && !strcmp(l->owner_guid, e->guid);
    if (e->base.leader && e->refused && ours) {
        /* Read before the change that refused our renewal: read again, it will show. */
        check_row(e, true);
    } else if (e->base.leader && !check_bound(e, reign__now_ns()) && (!ours || e->refused) &&
               (r->rc == 0 || e->refused)) {
        reign__election_news n = {.term = e->base.term};
        bool handoff = r->rc == 0 && reign__lease_designee(l) && l->term == e->base.term &&
                       !strcmp(l->owner, e->base.id);
        /* Released under the mark read: only that names our row now. */
        reign__strlcpy(e->hand_guid, handoff ? l->owner_guid : REIGN__SQL_DEPOSED,
                       sizeof(e->hand_guid));
        step(e, handoff ? IN(HANDOFF) : IN(DEPOSED), &n); /* demoted, PAUSED */
        e->refused = false;
    }
    LEAVE(e);
}

static void check_row(lease_election *e, bool refused)
{
    e->refused = e->refused || refused;
    if (e->checking)
        return;
    e->checking = submit(e, REIGN__SQLW_READ, NULL, 0, on_checked) == 0;
    if (!e->checking && e->refused) {
        reign__election_news n = {.term = e->base.term};
        reign__strlcpy(e->hand_guid, REIGN__SQL_DEPOSED, sizeof(e->hand_guid));
        e->refused = false;
        step(e, IN(DEPOSED), &n); /* cannot read: as before, deposed */
    }
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
        /* The row is no longer ours at this term: designated to another, deposed (reign
         * cede), or changed by hand.  Which, its row says. */
        check_row(e, true);
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
    if (!check_bound(e, reign__now_ns()) && e->base.leader && !e->holding) {
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
        uint64_t term = r->op == REIGN__SQLW_RENEW  ? e->base.term
                        : r->op == REIGN__SQLW_CALL ? ((const reign__rank_call *)r->ctx)->new_term
                                                    : r->term;
        if (r->rc == 1) {
            /* sent_ns is the call's start, before the take: the bound only comes sooner. */
            become_leader(e, term, r->sent_ns);
        } else if (r->rc == REIGN__OUTRANKED) {
            reign__log(e->base.log, REIGN_LOG_DEBUG,
                       "election %s: a candidate of higher rank stands: letting it take the lease",
                       e->base.name);
            step(e, IN(CLAIM_FAILED), NULL); /* read again at the next poll, or when told */
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
    if (e->in_session && !e->session[0])
        return; /* claims are made under the session: its opening looks again (on_session) */
    e->claim_renewals = renewals;
    e->claim_released = released;
    e->claim_term = op == REIGN__SQLW_INSERT ? 1 : op == REIGN__SQLW_TAKE ? term + 1 : term;
    e->claim_op = op;
    e->claim_from = term;
    step(e, IN(CLAIM), NULL);
}

/* A take, after a look at the candidates' ranks (run_take()). */
static int submit_take(lease_election *e)
{
    reign__rank_call *k = rank_call_new(e);
    if (!k)
        return REIGN_ENOMEM;
    k->designee = e->claim_designee;
    k->chosen = e->claim_designee && e->claim_chosen;
    k->from = e->claim_from;
    k->renewals = e->claim_renewals;
    k->released = e->claim_released;
    reign__strlcpy(k->prev_guid, e->prev_guid, sizeof(k->prev_guid));
    k->self_designated = e->self_designated;
    int rc = reign__sqlw_call_claim(e->w, e->base.name, reign__rank_take, k, reign__rank_call_free,
                                    e, on_claimed, REIGN__LIFE_ARG(&e->base.life, 0, 0));
    if (rc < 0)
        reign__rank_call_free(k);
    return rc;
}

/* The table's CLAIM. */
static void send_claim(lease_election *e)
{
    e->claim_session = e->session[0] != '\0';
    if (e->claim_op == REIGN__SQLW_RENEW)
        e->base.term = e->claim_from; /* the term we hold, should the renewal succeed */
    int rc = e->claim_op == REIGN__SQLW_TAKE
                 ? submit_take(e)
                 : submit(e, e->claim_op, e->guid, e->claim_from, on_claimed);
    if (rc < 0)
        step(e, IN(CLAIM_FAILED), NULL); /* cannot submit */
}

/*
 * When to read again: every poll period, since no store tells of renewals (PostgreSQL and
 * SQLite notify releases and takeovers; MariaDB wakes followers at releases): a follower
 * counts a lease's duration from when it first SAW its last version, so it must see each
 * version within a poll period of its writing for a dead host's lease to be taken over within
 * lease + poll.  The first poll of a standing comes at a random point of the period, so that
 * candidates started together do not read together from then on.
 */
static int64_t next_read(lease_election *e, int64_t free_at)
{
    int64_t wait = ms(e->ls->poll_ms);
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

/* ---- leases in the session ------------------------------------------------------------ */

#define OF(p, field) ((lease_election *)((char *)(p)-offsetof(lease_election, field)))

/* The keeper saw the session we follow go (then sw watches nothing), or a lease released
 * under it: read the row. */
static void on_wake(reign__sql_session_watch *w)
{
    lease_election *e = OF(w, sw);
    if (!w->entry)
        reign__strlcpy(e->gone, e->following, sizeof(e->gone));
    else if (w->released == e->released_read)
        return; /* read released already, and left (an observer, outranked): nothing new */
    if (e->state != L_LOOKING)
        return;
    ENTER(e);
    if (e->reading)
        e->again = true;
    else
        look(e);
    LEAVE(e);
}

static void follow(lease_election *e, const char *session)
{
    if (e->sw.entry && !strcmp(e->following, session))
        return;
    reign__strlcpy(e->following, session, sizeof(e->following));
    e->sw.name = e->base.name;
    e->sw.wake = on_wake;
    if (reign__sql_session_follow(e->base.client, &e->sw, e->following) < 0)
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: cannot follow session %s",
                   e->base.name, session);
}

/* Our client's session is up (guid) or lost (NULL). */
static void on_session(reign__sql_session_user *u, const char *guid)
{
    lease_election *e = OF(u, su);
    ENTER(e);
    if (guid) {
        reign__strlcpy(e->session, guid, sizeof(e->session));
        if (e->listed_guid[0] && !e->listed_in_session) {
            /* Listed before the session was up: the row moves in (renamed to itself). */
            list_send(e, REIGN__LIST_RENAME, e->listed_guid);
            list_refresh_later(e);
        }
        reign_conn_state st = reign_client_state(e->base.client);
        if (e->state == L_IDLE && (st == REIGN_CONN_CONNECTED || st == REIGN_CONN_RECONNECTED))
            stand(e);
        else if (e->state == L_LOOKING && !e->reading)
            look(e); /* a claim waited for it */
    } else {
        e->session[0] = '\0';
        if (standing(e->state)) {
            /* What we hold or claim in it is gone with it: stand again in the next. */
            abandon_claim(e);
            reign__election_news n = {.term = e->base.term};
            step(e, IN(SESSION_LOST), &n); /* demoted if leading; IDLE */
        }
    }
    LEAVE(e);
}

static void on_session_fail(reign__sql_session_user *u, int err, const char *msg)
{
    lease_election *e = OF(u, su);
    ENTER(e);
    emit_error(e, err, "session", msg);
    LEAVE(e);
}

/* A designation or deposal of a lease of our session (stores whose notices name no row). */
static void on_marked(reign__sql_session_user *u, const char *name)
{
    lease_election *e = OF(u, su);
    if (e->state != L_LEADER || strcmp(name, e->base.name))
        return;
    ENTER(e);
    check_row(e, false);
    LEAVE(e);
}

static void join_session(lease_election *e)
{
    if (e->in_session || e->base.observer || e->ls->own_rows)
        return;
    e->su.on_session = on_session;
    e->su.on_fail = on_session_fail;
    e->su.on_marked = on_marked;
    e->in_session = reign__sql_session_join(e->base.client, &e->su) == 0;
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
    const reign__lease *l = r->lease;
    int64_t now = reign__now_ns();
    const char *to = reign__lease_designee(l);
    /* Designated to us, or to our standing before this one (a designation that found our row
     * before it changed hands): ours. */
    bool ours_now = to && (!strcmp(to, e->guid) || (e->prev_guid[0] && !strcmp(to, e->prev_guid)));
    int64_t free_at = reign__lease_free_for(&e->seen, l, r->done_ns, ours_now ? to : e->guid,
                                            ms(e->ls->lease_ms));
    /* Held in a session: free once the session is gone, whatever the time (the keeper
     * watches it, and tells us).  Released under one: still watched, for the next release. */
    bool in_session = l->exists && l->session[0] && !l->released;
    e->released_read = l->exists && l->released ? l->term : 0;
    if (l->exists && l->session[0] && strcmp(e->gone, l->session))
        follow(e, l->session);
    else
        reign__sql_session_unfollow(e->base.client, &e->sw);
    if (in_session)
        free_at = strcmp(e->gone, l->session) ? INT64_MAX : r->done_ns;
    bool free = free_at <= now;
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
    if (l->owner[0] ? !e->seen_owner || strcmp(e->seen_owner, l->owner) : e->seen_owner != NULL) {
        /* Kept on the heap, as rarely as it changes: 10,000 elections must stay small. */
        reign__free(e->seen_owner);
        e->seen_owner = l->owner[0] ? reign__strdup(l->owner) : NULL;
    }
    reign__strlcpy(e->seen_guid, l->owner_guid, sizeof(e->seen_guid));
    publish(e, mine || free || l->released ? NULL : l); /* released: no one leads */
    if (!reign__life_live(&e->base.life) || e->state != L_LOOKING) {
        LEAVE(e);
        return;
    }
    if (!e->base.observer && !l->exists)
        claim(e, REIGN__SQLW_INSERT, 0, 0, false);
    else if (!e->base.observer && free) {
        e->claim_designee = ours_now;
        /* Our own preemption ranks us by our priority; an operator's choice above everyone. */
        e->claim_chosen = ours_now && e->self_designated != l->term;
        claim(e, REIGN__SQLW_TAKE, l->term, l->term_duration, false);
    } else if (!e->base.observer && mine)
        claim(e, REIGN__SQLW_RENEW, l->term, 0, false);
    else if (e->again)
        look(e);
    else {
        /* In a live session the keeper or a notice wakes us; in one gone (a lease nobody took
         * yet, seen by an observer) the poll finds the next holder (MariaDB tells nobody). */
        int64_t at = in_session && !free ? INT64_MAX : next_read(e, free_at);
        /* A live leader of another, not being handed over: a candidate of higher priority
         * may preempt it (and reads again when its delay is over). */
        int64_t p = l->exists && !l->released && !to && !mine ? consider_preempt(e, l->term, now)
                                                              : INT64_MAX;
        if (p < at || at < INT64_MAX)
            reign__timer_start(timers(e), &e->timer, p < at ? p : at);
        else
            reign__timer_stop(timers(e), &e->timer);
    }
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
    e->checking = e->refused = false;
    reign__timer_stop(timers(e), &e->timer);
    join_session(e);
    e->seen_term = 0;
    e->seen = (reign__lease_seen){0};
    e->spread = true;
    guard(e, false);
    e->handing = false;
    reign__strlcpy(e->prev_guid, e->guid, sizeof(e->prev_guid));
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
    if (!e->listening && reign__sqlw_wakes_followers(e->w))
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
    case REIGN__LEASE_RQ_LET_IN:    /* deposed: the others in now, us after the delay */
    case REIGN__LEASE_RQ_HAND_OVER: /* designated: the designee in now, us behind it at once */
        release(e, e->hand_guid[0] ? e->hand_guid : REIGN__SQL_DEPOSED, term);
        e->hand_guid[0] = '\0';
        e->handing = rq == REIGN__LEASE_RQ_HAND_OVER;
        reign__life_bump(&e->base.life);
        e->checking = e->refused = false;
        reign__timer_start(timers(e), &e->timer,
                           reign__now_ns() +
                               (rq == REIGN__LEASE_RQ_LET_IN ? ms(e->base.cede_delay_ms) : 0));
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

static void on_changed(reign__recipe *rp, const reign__sql_heard *heard)
{
    lease_election *e = (lease_election *)rp;
    if (!reign__sql_heard_has(heard, e->base.name))
        return;
    /* A leader told only that the lease was won: its own win (another's, after ours ran out,
     * is for our own deadline to find, not for a notice). */
    bool won_only = heard && !heard->all && reign__strset_has(&heard->won, e->base.name) &&
                    !reign__strset_has(&heard->names, e->base.name);
    if (e->state == L_LEADER && won_only)
        return;
    if (e->state == L_LEADER) {
        ENTER(e);
        check_row(e, false); /* a designation, maybe: the sooner handed over, the better */
        LEAVE(e);
        return;
    }
    if (e->state != L_LOOKING)
        return;
    ENTER(e);
    if (e->reading)
        e->again = true;
    else if (e->seen_term && !e->base.observer &&
             ((heard && !heard->all) || !reign__sqlw_names_changes(e->w)))
    /* A notice of our row (or MariaDB's wake-up) is a release or a takeover: try the lease we
     * saw at once, one round trip sooner than read-then-take, if it is released; it fails
     * harmlessly if it was a takeover.  A notice that names nothing (the notice file cut, say)
     * is read first: it concerns every election of the client. */
    {
        e->claim_designee = false;
        claim(e, REIGN__SQLW_TAKE, e->seen_term, 0, true);
    } else
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
    reign__sql_session_unfollow(e->base.client, &e->sw);
    if (e->holding)
        reign__sql_session_hold(e->base.client, -1);
    if (e->in_session)
        reign__sql_session_leave(e->base.client, &e->su);
    reign__client_detach(e->base.client, &e->base.recipe);
    reign__election_base_free(&e->base);
    reign__free(e->seen_owner);
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
    e->priority = o->priority;
    e->no_preempt = o->no_preempt;
    e->preempt_delay_ms = o->preempt_delay_ms;
    /* Ranks are read from the candidates table: a candidate with one is listed. */
    if (o->priority && !o->observer)
        e->base.listed = true;
    reign__timer_init(&e->timer, timer_cb, e);
    reign__timer_init(&e->deadline, deadline_cb, e);
    reign__timer_init(&e->list_timer, list_timer_cb, e);
    reign__client_attach(client, &e->base.recipe);
    reign__client_name_recipe(client, &e->base.recipe, e->base.name);
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
    const lease_election *e = (const lease_election *)pub;
    /* Held in the session: renewed by its beats, demoted when it is lost (on_session()). */
    return e->holding ? reign__sql_session_valid_until(e->base.client) : e->valid_until;
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
