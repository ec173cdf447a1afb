/*
 * slot.c - one copy's way through a slot (<reign/slot.h>, docs/slots.md): the public API and
 * the state machine, over the public election API and a store of records (slot_zk.c,
 * slot_sql.c).  What to do with a record is decided by reign__slot_decide() (slot_model.c);
 * this file only moves between states, each move checked against the table below and logged
 * with its reason.
 *
 *   NEW -> CLOCK (every) -> PEEK -> decided: DONE          (one read; no election)
 *                                -> STANDING -> elected -> READING [-> TIMING]
 *   READING -> decided: LEAVING -> DONE
 *           -> MARKING (an attempt whose runner is gone) -> decide again
 *           -> STARTING -> RUNNING -> (reign_slot_finish) -> ENDING [-> PRUNING] -> LEAVING
 *   RUNNING -> demoted: STOPPING -> (reign_slot_finish) -> ENDING -> STANDING or READING
 *
 * Only one request to the store is in flight at a time; `gen` tells its reply from a stale one.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "slot_internal.h"

#define RETRY_MS      500  /* after a transient error of the store */
#define RETRY_MAX     120  /* ... before giving up, but for an end to record */
#define LEAVE_WAIT_MS 5000 /* for the resignation before DONE is delivered anyway */
/* A request of ours that gets no answer at all within this (or twice the session timeout or
 * lease, when that is longer) is taken as lost and tried again.  The stores answer every
 * request, with an error if need be, but a ZooKeeper request sent in the instant its session
 * expires can go unanswered (the C client drops its completion), and a copy must not wait on
 * it for ever. */
#define ANSWER_WAIT_MS 5000

#define S(x) REIGN__SLOT_ST_##x
#define B(x) (1u << REIGN__SLOT_ST_##x)

static const char *const state_names[REIGN__SLOT_ST_COUNT] = {
    "new",     "clock",    "peek",   "standing", "reading", "timing", "marking", "starting",
    "running", "stopping", "ending", "pruning",  "leaving", "done",   "failed",
};

/* The moves each state may make; FAILED is open to all. */
static const unsigned allowed[REIGN__SLOT_ST_COUNT] = {
    [S(NEW)] = B(CLOCK) | B(PEEK),
    [S(CLOCK)] = B(CLOCK) | B(PEEK),
    [S(PEEK)] = B(PEEK) | B(STANDING) | B(DONE),
    [S(STANDING)] = B(READING) | B(LEAVING),
    [S(READING)] = B(READING) | B(TIMING) | B(MARKING) | B(STARTING) | B(LEAVING) | B(STANDING),
    [S(TIMING)] = B(READING) | B(TIMING) | B(MARKING) | B(STARTING) | B(LEAVING) | B(STANDING),
    [S(MARKING)] = B(READING) | B(MARKING) | B(STARTING) | B(LEAVING) | B(STANDING),
    [S(STARTING)] = B(READING) | B(RUNNING) | B(ENDING) | B(STANDING),
    [S(RUNNING)] = B(STOPPING) | B(ENDING),
    [S(STOPPING)] = B(ENDING),
    [S(ENDING)] = B(ENDING) | B(PRUNING) | B(LEAVING) | B(STANDING) | B(READING),
    [S(PRUNING)] = B(LEAVING),
    [S(LEAVING)] = B(DONE),
};

static bool set_state(reign_slot *s, reign__slot_state to, const char *why)
{
    if (to != S(FAILED) && !(allowed[s->state] & (1u << to))) {
        reign__log(s->log, REIGN_LOG_ERROR, "slot %s %s: refused move %s -> %s (%s)", s->name,
                   s->key, state_names[s->state], state_names[to], why);
        return false;
    }
    reign__log(s->log, REIGN_LOG_DEBUG, "slot %s %s: %s -> %s: %s", s->name, s->key,
               state_names[s->state], state_names[to], why);
    s->state = to;
    reign__life_bump(&s->life);
    return true;
}

/* ---- lifetime -------------------------------------------------------------------------------- */

static void destroy(reign_slot *s)
{
    reign__free(s->name);
    reign__free((void *)s->eo.data);
    reign__free(s);
}

/* Lets go of everything that could call back; the memory stays until no call is in progress. */
static void teardown(reign_slot *s)
{
    if (!reign__life_request_free(&s->life))
        return;
    s->cb = NULL;
    s->ecb = NULL;
    reign__timers *ts = reign__client_timers(s->client);
    reign__timer_stop(ts, &s->retry);
    reign__timer_stop(ts, &s->leave_timer);
    reign__timer_stop(ts, &s->answer_timer);
    if (s->be)
        s->be->release(s);
    reign_election *e = s->election;
    s->election = NULL;
    reign_election_free(e);
    reign__client_detach(s->client, &s->recipe);
}

static void enter(reign_slot *s)
{
    reign__life_enter(&s->life);
}

static void leave(reign_slot *s)
{
    if (reign__life_leave(&s->life))
        destroy(s);
}

static void emit(reign_slot *s, reign_slot_event *ev)
{
    if (!reign__life_live(&s->life) || !s->cb)
        return;
    ev->key = s->key;
    s->cb(s, ev, s->userdata);
}

/* ---- endings --------------------------------------------------------------------------------- */

static void fail(reign_slot *s, int err, const char *fmt, ...) REIGN__PRINTF(3, 4);

static void fail(reign_slot *s, int err, const char *fmt, ...)
{
    if (s->state == S(DONE) || s->state == S(FAILED))
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    set_state(s, S(FAILED), msg);
    reign__log(s->log, REIGN_LOG_ERROR, "slot %s %s: %s", s->name, s->key, msg);
    reign__timers *ts = reign__client_timers(s->client);
    reign__timer_stop(ts, &s->retry);
    reign__timer_stop(ts, &s->leave_timer);
    reign__timer_stop(ts, &s->answer_timer);
    reign_slot_event ev = {.type = REIGN_SLOT_ERROR, .error = err, .message = msg};
    emit(s, &ev);
}

static void deliver_done(reign_slot *s)
{
    if (!set_state(s, S(DONE), reign_slot_outcome_name(s->outcome)))
        return;
    reign__timer_stop(reign__client_timers(s->client), &s->leave_timer);
    reign_slot_run run;
    if (s->has_run)
        reign__slot_run_public(&s->done_run, &run);
    reign_slot_event ev = {.type = REIGN_SLOT_DONE,
                           .outcome = s->outcome,
                           .verdict = s->verdict,
                           .run = s->has_run ? &run : NULL,
                           .term = s->has_run ? s->done_run.term : 0,
                           .token = s->has_run ? s->done_run.token : 0,
                           .attempt = s->has_run ? s->done_run.attempt : 0};
    emit(s, &ev);
}

static void on_leave_timer(reign__timer *t, void *arg)
{
    reign_slot *s = arg;
    enter(s);
    if (s->state == S(LEAVING)) {
        reign__log(s->log, REIGN_LOG_WARN,
                   "slot %s %s: the resignation did not finish within %d ms; done all the same",
                   s->name, s->key, LEAVE_WAIT_MS);
        deliver_done(s);
    }
    leave(s);
}

/* The slot is decided for this copy: resign (the next copy in line reads the record), then
 * DONE. */
static void conclude(reign_slot *s, reign_slot_outcome outcome, reign_slot_verdict verdict,
                     const reign__slot_run *run, const char *why)
{
    s->outcome = outcome;
    s->verdict = verdict;
    s->has_run = run != NULL;
    if (run)
        s->done_run = *run;
    reign__log(s->log, REIGN_LOG_INFO, "slot %s %s: %s: %s", s->name, s->key,
               reign_slot_outcome_name(outcome), why);
    if (!s->election) {
        deliver_done(s); /* decided before standing */
        return;
    }
    if (!set_state(s, S(LEAVING), why))
        return;
    reign__timer_start(reign__client_timers(s->client), &s->leave_timer,
                       reign__now_ns() + (int64_t)LEAVE_WAIT_MS * REIGN__NS_PER_MS);
    int rc = reign_election_resign(s->election);
    if (rc < 0 && reign__life_live(&s->life)) /* already resigning or left: nothing will come */
        deliver_done(s);
}

/* ---- talking to the store -------------------------------------------------------------------- */

static void issue(reign_slot *s, reign__slot_op op);

static bool transient(int rc)
{
    return rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT || rc == REIGN_ESESSION ||
           rc == REIGN_ECONNECT || rc == REIGN_EBUSY || rc == REIGN_EBACKEND ||
           rc == REIGN_ENOMEM || rc == REIGN_ECANCELED;
}

static void on_retry(reign__timer *t, void *arg);

/* A request failed on something that may pass: try again after a while (an end for ever,
 * anything else up to RETRY_MAX times). */
static void retry_later(reign_slot *s, int rc, const char *what, const char *msg)
{
    s->failures++;
    if (s->state != S(ENDING) && s->failures > RETRY_MAX) {
        fail(s, rc, "%s: %s (gave up after %d tries)", what, msg ? msg : reign_strerror(rc),
             s->failures);
        return;
    }
    reign__log(s->log, s->failures == 1 || s->failures % 20 == 0 ? REIGN_LOG_WARN : REIGN_LOG_DEBUG,
               "slot %s %s: %s: %s; trying again", s->name, s->key, what,
               msg ? msg : reign_strerror(rc));
    reign__life_bump(&s->life); /* whatever else comes back is stale */
    reign__timer_start(reign__client_timers(s->client), &s->retry,
                       reign__now_ns() + (int64_t)RETRY_MS * REIGN__NS_PER_MS);
}

static void issue(reign_slot *s, reign__slot_op op)
{
    int64_t wait_ms = 2 * (int64_t)reign_client_session_timeout_ms(s->client);
    if (wait_ms < ANSWER_WAIT_MS)
        wait_ms = ANSWER_WAIT_MS;
    reign__timer_start(reign__client_timers(s->client), &s->answer_timer,
                       reign__now_ns() + wait_ms * REIGN__NS_PER_MS);
    int rc = s->be->issue(s, op, s->fence, s->life.epoch);
    if (rc < 0) {
        reign__timer_stop(reign__client_timers(s->client), &s->answer_timer);
        if (transient(rc))
            retry_later(s, rc, "sending a request", NULL);
        else
            fail(s, rc, "cannot send a request to the store: %s", reign_strerror(rc));
    }
}

static void refresh_valid(reign_slot *s)
{
    if (s->election && s->leading) {
        int64_t v = reign_election_valid_until_ns(s->election);
        if (v > 0)
            s->valid_until_ns = v;
    }
}

static bool leads_still(reign_slot *s)
{
    refresh_valid(s);
    return s->leading && s->election && reign_election_is_leader(s->election) &&
           reign_election_term(s->election) == s->term;
}

/* ---- deciding -------------------------------------------------------------------------------- */

static void join(reign_slot *s);
static void read_again(reign_slot *s, const char *why);

static void act(reign_slot *s, const reign__slot_decision *d)
{
    const reign__slot_run *run = d->run >= 0 ? &s->rec.runs[d->run] : NULL;
    switch (d->action) {
    case REIGN__SLOT_DO_DONE:
        conclude(s, d->outcome, d->verdict, run, d->why);
        return;
    case REIGN__SLOT_DO_STAND:
        if (!s->election) {
            if (set_state(s, S(STANDING), d->why))
                join(s);
        } else if (s->leading) {
            /* A later leadership runs it while we lead: only a stale view can say so. */
            retry_later(s, REIGN_ESTATE, "the record", "names a later leadership; reading again");
        } else {
            set_state(s, S(STANDING), d->why);
        }
        return;
    case REIGN__SLOT_DO_MARK:
        s->next = s->rec;
        s->next.runs[d->run].end_ms = REIGN__SLOT_NOW;
        s->next.runs[d->run].result = REIGN_SLOT_LOST;
        s->next.runs[d->run].code = 0;
        s->next.verdict = d->verdict;
        s->fence = s->term;
        reign__log(s->log, REIGN_LOG_NOTICE,
                   "slot %s %s: attempt %u (owner %s, term %llu) was left running; marking it "
                   "lost (%s)",
                   s->name, s->key, run->attempt, run->owner, (unsigned long long)run->term,
                   reign__slot_verdict_word(d->verdict));
        if (set_state(s, S(MARKING), d->why))
            issue(s, REIGN__SLOT_OP_MARK);
        return;
    case REIGN__SLOT_DO_START: {
        s->next = s->rec;
        reign__slot_run *u = &s->next.runs[s->next.n];
        memset(u, 0, sizeof *u);
        u->attempt = (unsigned)s->next.n + 1;
        reign__strlcpy(u->owner, s->owner, sizeof u->owner);
        reign__strlcpy(u->host, s->host, sizeof u->host);
        u->term = s->term;
        u->token = s->token;
        u->start_ms = REIGN__SLOT_NOW;
        u->result = REIGN_SLOT_RUNNING;
        s->next.n++;
        s->next.verdict = REIGN_SLOT_BUSY;
        s->fence = s->term;
        if (set_state(s, S(STARTING), d->why))
            issue(s, REIGN__SLOT_OP_START);
        return;
    }
    }
}

static void decide(reign_slot *s)
{
    refresh_valid(s);
    reign__slot_decision d = reign__slot_decide(&s->rec, &s->pol, s->leading, s->term, s->now_ms);
    act(s, &d);
}

static void read_again(reign_slot *s, const char *why)
{
    if (!s->leading) {
        set_state(s, S(STANDING), "not leading any more");
        return;
    }
    if (set_state(s, S(READING), why))
        issue(s, REIGN__SLOT_OP_READ);
}

/* ---- our attempt ----------------------------------------------------------------------------- */

/* Our attempt's record as it should end (in next). */
static void prepare_end(reign_slot *s)
{
    s->next = s->rec;
    reign__slot_run *u = &s->next.runs[s->our_run];
    u->end_ms = REIGN__SLOT_NOW;
    u->result = s->our_result;
    u->code = s->our_code;
    /* Only the last attempt's end sets the slot's verdict (a later one may exist already if
     * ours was marked lost: then the compare-and-set fails anyway). */
    if ((size_t)s->our_run + 1 == s->next.n)
        s->next.verdict = reign__slot_verdict_after(&s->pol, u->attempt, u->result, u->code);
}

static void start_work(reign_slot *s)
{
    const reign__slot_run *u = &s->rec.runs[s->our_run];
    set_state(s, S(RUNNING), "recorded");
    reign__log(s->log, REIGN_LOG_NOTICE, "slot %s %s: attempt %u starts (term %llu, token %llu)",
               s->name, s->key, u->attempt, (unsigned long long)u->term,
               (unsigned long long)u->token);
    reign_slot_event ev = {.type = REIGN_SLOT_START,
                           .attempt = u->attempt,
                           .term = u->term,
                           .token = u->token,
                           .valid_until_ns = s->valid_until_ns,
                           .slot_start_ms = s->slot_start_ms};
    emit(s, &ev);
}

/*
 * We ran the slot and this copy is done with it.  A final verdict we wrote may have grown the
 * record past `keep`: on ZooKeeper it is cut first (a SQL store cut it with the end).
 */
static void conclude_final(reign_slot *s, reign_slot_outcome outcome, reign_slot_verdict v,
                           const reign__slot_run *mine, const char *why)
{
    bool final = v == REIGN_SLOT_SUCCEEDED || v == REIGN_SLOT_FAILED || v == REIGN_SLOT_ABANDONED;
    if (final && s->be == &reign__slot_zk && set_state(s, S(PRUNING), why)) {
        s->outcome = outcome;
        s->verdict = v;
        s->has_run = true;
        s->done_run = *mine;
        issue(s, REIGN__SLOT_OP_PRUNE);
        return;
    }
    conclude(s, outcome, v, mine, why);
}

/* Our end is recorded (or refused): what this copy does next. */
static void after_end(reign_slot *s, bool recorded)
{
    const reign__slot_run *u = &s->rec.runs[s->our_run];
    bool ok = s->our_result == REIGN_SLOT_EXITED && s->our_code == 0;
    reign__slot_run mine = *u;
    mine.result = s->our_result;
    mine.code = s->our_code;
    s->our_run = -1;
    if (!recorded && ok) {
        conclude(s, REIGN_SLOT_UNRECORDED, s->rec.verdict, &mine,
                 "the work succeeded, but a later leader had declared the attempt lost");
        return;
    }
    if (ok) {
        conclude_final(s, REIGN_SLOT_RAN_OK, REIGN_SLOT_SUCCEEDED, &mine, "the work succeeded");
        return;
    }
    if (s->led_at_finish || s->standing_down) {
        reign_slot_verdict v = recorded ? s->rec.verdict : REIGN_SLOT_RETRY;
        conclude_final(s, REIGN_SLOT_RAN_FAILED, v, &mine, "the work did not succeed");
        return;
    }
    /* Stopped because the leadership ended: stand on, and look again when elected. */
    if (s->leading)
        read_again(s, "elected again");
    else
        set_state(s, S(STANDING), "the attempt was stopped; standing again");
}

/*
 * Our attempt is recorded as started under `term`.  The work may start only if we still lead
 * under that term: if another leadership came between, a later leader may already have marked
 * it lost and retried.  Otherwise the attempt is ended at once as stopped (it never ran).
 */
static void started(reign_slot *s, uint64_t term)
{
    if (leads_still(s) && s->term == term) {
        start_work(s);
        return;
    }
    s->our_result = REIGN_SLOT_STOPPED;
    s->our_code = 0;
    s->led_at_finish = false;
    prepare_end(s);
    if (set_state(s, S(ENDING), "recorded, but no longer leading: never ran"))
        issue(s, REIGN__SLOT_OP_END);
}

/* ---- replies --------------------------------------------------------------------------------- */

/* Whether the fresh record shows our attempt (the one in next) as started. */
static int find_started(const reign_slot *s)
{
    const reign__slot_run *want = &s->next.runs[s->next.n - 1];
    for (size_t i = 0; i < s->rec.n; i++) {
        const reign__slot_run *u = &s->rec.runs[i];
        if (u->attempt == want->attempt && u->term == want->term && u->token == want->token &&
            !strcmp(u->owner, want->owner))
            return (int)i;
    }
    return -1;
}

static void on_read(reign_slot *s, const reign__slot_reply *r)
{
    s->rec = *r->rec;
    if (r->now_ms > 0)
        s->now_ms = r->now_ms;
    switch (s->state) {
    case S(PEEK):
        decide(s);
        return;
    case S(READING):
        /* A start whose answer was lost (or that landed under a term since left): is it
         * there? */
        if (s->start_unknown) {
            s->start_unknown = false;
            int i = find_started(s);
            s->our_run = i;
            if (i >= 0) {
                if (s->rec.runs[i].result != REIGN_SLOT_RUNNING) {
                    s->our_run = -1; /* already ended (marked lost): nothing ran */
                } else {
                    started(s, s->rec.runs[i].term);
                    return;
                }
            }
        }
        if (s->pol.deadline_ms > 0 && r->now_ms <= 0) {
            if (set_state(s, S(TIMING), "the deadline needs the store's clock"))
                issue(s, REIGN__SLOT_OP_NOW);
            return;
        }
        decide(s);
        return;
    case S(ENDING): {
        /* After an end whose answer was lost, or refused by the compare-and-set. */
        const reign__slot_run *mine = NULL;
        int i = -1;
        for (size_t k = 0; k < s->rec.n; k++) {
            if (s->rec.runs[k].attempt == s->next.runs[s->our_run].attempt &&
                s->rec.runs[k].term == s->next.runs[s->our_run].term) {
                mine = &s->rec.runs[k];
                i = (int)k;
            }
        }
        if (mine && mine->result == REIGN_SLOT_RUNNING) {
            s->our_run = i;
            prepare_end(s);
            issue(s, REIGN__SLOT_OP_END);
            return;
        }
        bool landed = mine && mine->result == s->our_result && mine->code == s->our_code;
        if (i >= 0)
            s->our_run = i;
        if (!mine) {
            /* The slot's record is gone (deleted by hand, or pruned): keep what we knew. */
            s->rec = s->next;
            reign__slot_rec_resolve(&s->rec, 0);
        }
        after_end(s, landed);
        return;
    }
    default:
        return;
    }
}

static void on_written(reign_slot *s, const reign__slot_reply *r)
{
    reign__slot_op op = r->op;
    if (r->rc == 0) {
        s->failures = 0;
        s->rec = s->next;
        reign__slot_rec_resolve(&s->rec, r->now_ms);
        if (r->version >= 0)
            s->rec.version = r->version;
        s->rec.exists = true;
    }
    switch (op) {
    case REIGN__SLOT_OP_MARK:
        if (r->rc == 0 && leads_still(s))
            decide(s);
        else if (r->rc == 0 || r->rc == REIGN_EBADVERSION)
            read_again(s, r->rc ? "the record changed" : "marked; leadership changed");
        else
            set_state(s, S(STANDING), "deposed: another leadership began");
        return;
    case REIGN__SLOT_OP_START:
        if (r->rc == 0) {
            s->our_run = (int)s->rec.n - 1;
            started(s, s->fence);
        } else if (r->rc == REIGN_EBADVERSION) {
            read_again(s, "the record changed");
        } else {
            set_state(s, S(STANDING), "deposed: another leadership began");
        }
        return;
    case REIGN__SLOT_OP_END:
        if (r->rc == 0) {
            after_end(s, true);
        } else {
            /* Refused: read what the record says of our attempt. */
            issue(s, REIGN__SLOT_OP_READ);
        }
        return;
    default:
        return;
    }
}

static void reply_cb(reign_slot *s, uintptr_t gen, const reign__slot_reply *r)
{
    if (!reign__life_live(&s->life) || !reign__life_current(&s->life, gen))
        return;
    enter(s);
    reign__timer_stop(reign__client_timers(s->client), &s->answer_timer);
    refresh_valid(s);
    if (r->rc < 0 && r->rc != REIGN_EBADVERSION && r->rc != REIGN_ESTATE) {
        if (!transient(r->rc)) {
            fail(s, r->rc, "%s", r->message ? r->message : reign_strerror(r->rc));
        } else if (r->op == REIGN__SLOT_OP_PRUNE) {
            conclude(s, s->outcome, s->verdict, s->has_run ? &s->done_run : NULL,
                     "the work is done (the record was not pruned)");
        } else {
            retry_later(s, r->rc, "the store", r->message);
        }
        leave(s);
        return;
    }
    switch (r->op) {
    case REIGN__SLOT_OP_NOW:
        s->failures = 0;
        s->now_ms = r->now_ms;
        if (s->state == S(CLOCK)) {
            if (s->every_ms < reign_client_session_timeout_ms(s->client)) {
                fail(s, REIGN_EINVAL,
                     "a period of %lld ms is shorter than the session timeout or lease (%d ms)",
                     (long long)s->every_ms, reign_client_session_timeout_ms(s->client));
                break;
            }
            reign__slot_period_key(r->now_ms, s->every_ms, &s->slot_start_ms, s->key);
            s->pol.slot_start_ms = s->slot_start_ms;
            reign__slot_rec_init(&s->rec, s->key);
            reign_slot_event ev = {.type = REIGN_SLOT_RESOLVED, .slot_start_ms = s->slot_start_ms};
            emit(s, &ev);
            if (reign__life_live(&s->life) && set_state(s, S(PEEK), "the period is known"))
                issue(s, REIGN__SLOT_OP_READ);
        } else if (s->state == S(TIMING)) {
            decide(s);
        }
        break;
    case REIGN__SLOT_OP_READ:
        s->failures = 0;
        on_read(s, r);
        break;
    case REIGN__SLOT_OP_PRUNE:
        conclude(s, s->outcome, s->verdict, s->has_run ? &s->done_run : NULL, "the work is done");
        break;
    default:
        on_written(s, r);
    }
    leave(s);
}

static void on_answer_timeout(reign__timer *t, void *arg)
{
    reign_slot *s = arg;
    enter(s);
    if (s->state == S(PRUNING)) {
        reign__life_bump(&s->life); /* a late answer changes nothing */
        conclude(s, s->outcome, s->verdict, s->has_run ? &s->done_run : NULL,
                 "the work is done (pruning the record got no answer)");
    } else if (s->state != S(DONE) && s->state != S(FAILED) && s->state != S(LEAVING)) {
        retry_later(s, REIGN_ETIMEDOUT, "a request",
                    "no answer from the store: taken as lost (its outcome is read again)");
    }
    leave(s);
}

static void on_retry(reign__timer *t, void *arg)
{
    reign_slot *s = arg;
    enter(s);
    switch (s->state) {
    case S(CLOCK):
    case S(TIMING):
        issue(s, REIGN__SLOT_OP_NOW);
        break;
    case S(PEEK):
    case S(ENDING):
        issue(s, REIGN__SLOT_OP_READ);
        break;
    case S(READING):
    case S(MARKING):
        read_again(s, "after an error");
        break;
    case S(STARTING):
        /* Did our start land?  The read says (on_read looks for it). */
        s->start_unknown = true;
        read_again(s, "a start's answer was lost");
        break;
    default:
        break;
    }
    leave(s);
}

/* ---- the election ---------------------------------------------------------------------------- */

static bool other_leader(const reign_slot *s, const reign_leader *l)
{
    return l && strcmp(l->id, s->owner) != 0;
}

static void on_election(reign_election *e, const reign_election_event *ev, void *ud)
{
    reign_slot *s = ud;
    enter(s);
    switch (ev->type) {
    case REIGN_ELECTION_READY:
    case REIGN_ELECTION_LEADER_CHANGED:
        if (s->pol.no_wait && s->state == S(STANDING) && !s->leading &&
            other_leader(s, ev->leader)) {
            conclude(s, REIGN_SLOT_SKIPPED, REIGN_SLOT_BUSY, NULL, "another copy leads");
        }
        break;
    case REIGN_ELECTION_ELECTED:
        s->leading = true;
        s->term = ev->term;
        s->token = ev->token;
        s->valid_until_ns = ev->valid_until_ns;
        if (s->state == S(STANDING))
            read_again(s, "elected");
        break;
    case REIGN_ELECTION_DEMOTED:
        s->leading = false;
        switch (s->state) {
        case S(READING):
        case S(TIMING):
        case S(MARKING):
            set_state(s, S(STANDING), "demoted");
            break;
        case S(RUNNING): {
            set_state(s, S(STOPPING), reign_demote_reason_name(ev->reason));
            bool gone =
                ev->reason == REIGN_DEMOTE_NODE_DELETED || ev->reason == REIGN_DEMOTE_SESSION_LOST;
            const reign__slot_run *u = &s->rec.runs[s->our_run];
            reign__log(s->log, REIGN_LOG_NOTICE,
                       "slot %s %s: the leadership ended (%s) while attempt %u runs: stop it",
                       s->name, s->key, reign_demote_reason_name(ev->reason), u->attempt);
            reign_slot_event sev = {.type = REIGN_SLOT_STOP,
                                    .attempt = u->attempt,
                                    .term = u->term,
                                    .token = u->token,
                                    .stop_by_ns = gone ? 0 : s->valid_until_ns,
                                    .reason = ev->reason};
            emit(s, &sev);
            break;
        }
        default:
            break;
        }
        break;
    case REIGN_ELECTION_LEFT:
        if (s->state == S(LEAVING))
            deliver_done(s);
        break;
    case REIGN_ELECTION_ERROR:
        if (s->state == S(LEAVING))
            deliver_done(s);
        else if (s->state != S(RUNNING) && s->state != S(STOPPING) && s->state != S(ENDING))
            fail(s, ev->error, "%s", ev->message ? ev->message : reign_strerror(ev->error));
        break;
    }
    if (reign__life_live(&s->life) && s->ecb)
        s->ecb(e, ev, s->eud);
    leave(s);
}

static void join(reign_slot *s)
{
    reign_election_options eo = s->eo;
    eo.size = sizeof eo;
    eo.id = s->owner;
    eo.cb = on_election;
    eo.userdata = s;
    if (s->pol.no_wait)
        eo.follow_leader = 1;
    int rc = reign_election_join(&s->election, s->client, s->name, &eo);
    if (rc < 0)
        fail(s, rc, "cannot join election %s: %s", s->name, reign_strerror(rc));
}

/* ---- the client's hooks ---------------------------------------------------------------------- */

static void slot_conn(reign__recipe *r, reign_conn_state st)
{
    reign_slot *s = (reign_slot *)r;
    enter(s);
    if (st == REIGN_CONN_CLOSED) {
        if (s->state == S(LEAVING))
            deliver_done(s);
        else
            fail(s, REIGN_ECLOSED, "the client closed");
    } else if ((st == REIGN_CONN_RECONNECTED || st == REIGN_CONN_CONNECTED) &&
               reign__timer_armed(&s->retry)) {
        reign__timer_start(reign__client_timers(s->client), &s->retry, reign__now_ns());
    }
    leave(s);
}

static void slot_destroy(reign__recipe *r)
{
    reign_slot *s = (reign_slot *)r;
    s->election = NULL; /* freed by the client with it */
    teardown(s);
    if (!reign__life_busy(&s->life))
        destroy(s);
}

static const reign__recipe_ops slot_ops = {.conn = slot_conn, .destroy = slot_destroy};

/* ---- the public API -------------------------------------------------------------------------- */

static int check_options(reign_client *client, const char *name, const reign_slot_options *o)
{
    if (!client || !o || o->size < sizeof(*o))
        return REIGN_EINVAL;
    if (reign__name_check(name) < 0)
        return REIGN_ENAME;
    bool has_key = o->key != NULL, has_every = o->every_ms > 0;
    if (has_key == has_every || o->every_ms < 0)
        return REIGN_EINVAL;
    if (has_key && reign_slot_key_check(o->key) < 0)
        return REIGN_ENAME;
    if (has_every && o->every_ms > REIGN_SLOT_DURATION_MAX_MS)
        return REIGN_EINVAL;
    /* A period shorter than the lease: the slot could change before a crashed runner's
     * successor may take over. */
    int lease = reign_client_session_timeout_ms(client);
    if (has_every && lease > 0 && o->every_ms < lease)
        return REIGN_EINVAL;
    if (o->deadline_ms < 0 || o->deadline_ms > REIGN_SLOT_DURATION_MAX_MS ||
        (o->deadline_ms > 0 && !has_every))
        return REIGN_EINVAL;
    if (o->retries < 0 || o->retries > REIGN_SLOT_RETRIES_MAX ||
        (o->at_most_once && o->retries > 0))
        return REIGN_EINVAL;
    if (o->keep < 0 || o->keep > REIGN_SLOT_KEEP_MAX)
        return REIGN_EINVAL;
    const reign_election_options *eo = o->election;
    if (eo) {
        if (eo->size < sizeof(*eo) || eo->observer)
            return REIGN_EINVAL;
        if (eo->id && !reign__id_ok(eo->id, REIGN_ID_MAX))
            return REIGN_EINVAL;
        if (eo->data_len > REIGN_DATA_MAX)
            return REIGN_E2BIG;
        if (eo->data_len && !eo->data)
            return REIGN_EINVAL;
    }
    return 0;
}

int reign_slot_start(reign_slot **ret, reign_client *client, const char *name,
                     const reign_slot_options *o)
{
    if (!ret)
        return REIGN_EINVAL;
    *ret = NULL;
    int rc = check_options(client, name, o);
    if (rc < 0)
        return rc;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    reign_slot *s = reign__calloc(1, sizeof *s);
    if (!s)
        return REIGN_ENOMEM;
    s->client = client;
    s->log = reign__client_log(client);
    s->be = reign__client_zk(client) ? &reign__slot_zk : &reign__slot_sql;
    s->reply = reply_cb;
    s->recipe.ops = &slot_ops;
    s->every_ms = o->every_ms;
    s->pol = (reign__slot_policy){.retries = o->retries,
                                  .at_most_once = o->at_most_once != 0,
                                  .no_wait = o->no_wait != 0,
                                  .deadline_ms = o->deadline_ms};
    s->keep = o->keep ? o->keep : REIGN_SLOT_KEEP_DEFAULT;
    s->our_run = -1;
    s->cb = o->cb;
    s->userdata = o->userdata;
    if (o->key)
        reign__strlcpy(s->key, o->key, sizeof s->key);
    reign__slot_rec_init(&s->rec, s->key);
    reign__timer_init(&s->retry, on_retry, s);
    reign__timer_init(&s->leave_timer, on_leave_timer, s);
    reign__timer_init(&s->answer_timer, on_answer_timeout, s);
    if (o->election) {
        s->eo = *o->election;
        s->ecb = o->election->cb;
        s->eud = o->election->userdata;
        s->eo.data = NULL;
        if (o->election->data_len &&
            !(s->eo.data = reign__memdup(o->election->data, o->election->data_len))) {
            destroy(s);
            return REIGN_ENOMEM;
        }
    }
    char *id = NULL;
    if (o->election && o->election->id)
        reign__strlcpy(s->owner, o->election->id, sizeof s->owner);
    else if ((rc = reign__default_id(&id)) == 0) {
        reign__strlcpy(s->owner, id, sizeof s->owner);
        reign__free(id);
    }
    if (gethostname(s->host, sizeof s->host) < 0)
        s->host[0] = '\0';
    s->host[sizeof s->host - 1] = '\0';
    if (rc < 0 || !(s->name = reign__strdup(name))) {
        destroy(s);
        return REIGN_ENOMEM;
    }
    if ((rc = s->be->init(s)) < 0) {
        destroy(s);
        return rc;
    }
    reign__client_attach(client, &s->recipe);
    if (s->every_ms) {
        set_state(s, S(CLOCK), "a period: which one is the store's clock's");
        rc = s->be->issue(s, REIGN__SLOT_OP_NOW, 0, s->life.epoch);
    } else {
        set_state(s, S(PEEK), "a named slot");
        rc = s->be->issue(s, REIGN__SLOT_OP_READ, 0, s->life.epoch);
    }
    if (rc < 0) {
        teardown(s);
        destroy(s);
        return rc;
    }
    reign__timer_start(reign__client_timers(client), &s->answer_timer,
                       reign__now_ns() + (int64_t)ANSWER_WAIT_MS * REIGN__NS_PER_MS);
    *ret = s;
    return 0;
}

static int finish(reign_slot *s, int exit_status, int term_signal, bool stopped_by_caller)
{
    if (!s || !reign__life_live(&s->life))
        return REIGN_EINVAL;
    if (s->state != S(RUNNING) && s->state != S(STOPPING))
        return REIGN_ESTATE;
    enter(s);
    /* The leadership may have lapsed without its DEMOTED delivered yet (a stall): judged by the
     * clock, as reign_election_is_leader() does. */
    bool stopped = stopped_by_caller || s->state == S(STOPPING) || !leads_still(s);
    s->led_at_finish = !stopped;
    if (!term_signal && exit_status == 0) {
        s->our_result = REIGN_SLOT_EXITED; /* a success is one, however the leadership went */
        s->our_code = 0;
    } else if (stopped) {
        s->our_result = REIGN_SLOT_STOPPED;
        s->our_code = term_signal ? term_signal : exit_status;
    } else {
        s->our_result = term_signal ? REIGN_SLOT_KILLED : REIGN_SLOT_EXITED;
        s->our_code = term_signal ? term_signal : exit_status;
    }
    reign__log(s->log, REIGN_LOG_NOTICE, "slot %s %s: attempt %u ended: %s %d", s->name, s->key,
               s->rec.runs[s->our_run].attempt, reign__slot_result_word(s->our_result),
               s->our_code);
    prepare_end(s);
    s->failures = 0;
    if (set_state(s, S(ENDING), "the work ended"))
        issue(s, REIGN__SLOT_OP_END);
    leave(s);
    return 0;
}

int reign_slot_stand_down(reign_slot *s)
{
    if (!s || !reign__life_live(&s->life))
        return REIGN_EINVAL;
    if (s->state != S(RUNNING) && s->state != S(STOPPING) && s->state != S(ENDING))
        return REIGN_ESTATE;
    s->standing_down = true;
    return 0;
}

int reign_slot_finish(reign_slot *s, int exit_status, int term_signal)
{
    return finish(s, exit_status, term_signal, false);
}

int reign_slot_finish_stopped(reign_slot *s, int exit_status, int term_signal)
{
    return finish(s, exit_status, term_signal, true);
}

const char *reign_slot_key(const reign_slot *s)
{
    return s ? s->key : "";
}

int64_t reign_slot_start_ms(const reign_slot *s)
{
    return s ? s->slot_start_ms : 0;
}

reign_election *reign_slot_election(const reign_slot *s)
{
    return s ? s->election : NULL;
}

void *reign_slot_userdata(const reign_slot *s)
{
    return s ? s->userdata : NULL;
}

reign_slot *reign_slot_free(reign_slot *s)
{
    if (!s)
        return NULL;
    teardown(s);
    if (!reign__life_busy(&s->life))
        destroy(s);
    return NULL;
}

int reign_slot_history(reign_client *client, const char *name, unsigned last,
                       reign_slot_history_cb *cb, void *userdata)
{
    if (!client || !cb)
        return REIGN_EINVAL;
    if (reign__name_check(name) < 0)
        return REIGN_ENAME;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    const reign__slot_backend *be = reign__client_zk(client) ? &reign__slot_zk : &reign__slot_sql;
    return be->history(client, name, last, cb, userdata);
}
