/*
 * election_base.c - what every election backend shares: names and checks,
 * the common part of an election, and the event contract (READY once,
 * ELECTED and DEMOTED in turn, events an API call owes emitted on the next
 * loop turn, nothing after a free), written once for ZooKeeper
 * (election_zk.c) and SQL leases (election_lease.c).  It calls no backend
 * by name: only through reign__election_impl.
 */
#include <stdio.h>
#include <string.h>

#include "election_base.h"

/* ---- names ---------------------------------------------------------------------------------- */

const char *reign_strategy_name(reign_strategy s)
{
    return s == REIGN_STRATEGY_LOCK ? "lock" : "queue";
}

int reign_strategy_parse(const char *s)
{
    if (s && strcmp(s, "queue") == 0)
        return REIGN_STRATEGY_QUEUE;
    if (s && strcmp(s, "lock") == 0)
        return REIGN_STRATEGY_LOCK;
    return REIGN_EINVAL;
}

const char *reign_demote_reason_name(reign_demote_reason r)
{
    switch (r) {
    case REIGN_DEMOTE_RESIGNED:
        return "resigned";
    case REIGN_DEMOTE_CEDED:
        return "ceded";
    case REIGN_DEMOTE_SUSPENDED:
        return "suspended";
    case REIGN_DEMOTE_SESSION_LOST:
        return "session_lost";
    case REIGN_DEMOTE_NODE_DELETED:
        return "node_deleted";
    case REIGN_DEMOTE_STALLED:
        return "stalled";
    case REIGN_DEMOTE_ERROR:
        return "error";
    case REIGN_DEMOTE_HANDOFF:
        return "handoff";
    }
    return "unknown";
}

/* ---- the common part ------------------------------------------------------------------------ */

static void owed_cb(reign__timer *t, void *arg);

int reign__election_base_init(reign_election *e, reign_client *client, const char *name,
                              const reign_election_options *o)
{
    e->client = client;
    e->log = reign__client_log(client);
    e->observer = o->observer != 0;
    e->follow = o->observer || o->follow_leader;
    e->listed = o->listed && !o->observer;
    e->cede_delay_ms = o->cede_delay_ms ? o->cede_delay_ms : 1000;
    e->cb = o->cb;
    e->userdata = o->userdata;
    reign__timer_init(&e->owed, owed_cb, e);
    e->name = reign__strdup(name);
    e->id = reign__strdup(o->id);
    e->data_len = o->data_len;
    if (o->data_len)
        e->data = reign__memdup(o->data, o->data_len);
    if (!e->name || !e->id || (o->data_len && !e->data)) {
        reign__election_base_free(e);
        return REIGN_ENOMEM;
    }
    return 0;
}

void reign__leader_view_clear(reign__leader_view *v)
{
    reign__free(v->id);
    reign__free(v->data);
    reign__free(v->node);
    memset(v, 0, sizeof(*v));
}

void reign__leader_view_public(const reign__leader_view *v, reign_leader *out)
{
    out->id = v->id ? v->id : "";
    out->data = v->data;
    out->data_len = v->data_len;
    out->term = v->term;
    out->token = v->token;
    out->since_ms = v->since_ms;
}

void reign__election_base_free(reign_election *e)
{
    reign__timer_stop(reign__client_timers(e->client), &e->owed);
    reign__leader_view_clear(&e->lv);
    reign__free(e->name);
    reign__free(e->id);
    reign__free(e->data);
    e->name = e->id = NULL;
    e->data = NULL;
}

/* ---- the event contract ------------------------------------------------------------------- */

void reign__election_enter(reign_election *e)
{
    reign__life_enter(&e->life);
}

void reign__election_leave(reign_election *e)
{
    if (reign__life_leave(&e->life))
        e->impl->free(e);
}

void reign__election_emit(reign_election *e, reign_election_event *ev)
{
    if (!reign__life_live(&e->life) || !e->cb)
        return;
    reign__life_enter(&e->life);
    e->cb(e, ev, e->userdata);
    (void)reign__life_leave(&e->life); /* an entry of ours is around every emit: it frees */
}

void reign__election_error(reign_election *e, int err, const char *msg)
{
    reign__log(e->log, REIGN_LOG_DEBUG, "election %s: error: %s", e->name, msg);
    reign_election_event ev = {
        .type = REIGN_ELECTION_ERROR, .at_ns = reign__now_ns(), .error = err, .message = msg};
    reign__election_emit(e, &ev);
}

static void emit_view(reign_election *e, reign_election_event_type type)
{
    reign_leader pub;
    if (e->lv.known)
        reign__leader_view_public(&e->lv, &pub);
    reign_election_event ev = {
        .type = type, .at_ns = reign__now_ns(), .leader = e->lv.known ? &pub : NULL};
    reign__election_emit(e, &ev);
}

void reign__election_ready(reign_election *e)
{
    if (e->ready_sent)
        return;
    e->ready_sent = true;
    emit_view(e, REIGN_ELECTION_READY);
}

void reign__election_view(reign_election *e, bool changed)
{
    if (!e->ready_sent)
        reign__election_ready(e);
    else if (changed)
        emit_view(e, REIGN_ELECTION_LEADER_CHANGED);
}

/* A DEMOTED an API call owes goes out on the next loop turn (owed_cb), but never after what
 * happened later: an answer that comes due first (the resign's delete, a new claim) tells the
 * owed DEMOTED before its own LEFT or ELECTED, so the application sees them in their order. */
static void emit_owed_demoted(reign_election *e)
{
    if (!e->owe_demoted)
        return;
    e->owe_demoted = false;
    reign_election_event ev = {.type = REIGN_ELECTION_DEMOTED,
                               .at_ns = e->owed_at,
                               .term = e->owed_term,
                               .token = e->owed_token,
                               .reason = e->owed_reason};
    reign__election_emit(e, &ev);
}

void reign__election_lead(reign_election *e, uint64_t term, uint64_t token)
{
    e->leader = true;
    e->term = term;
    e->token = token;
    reign__log(e->log, REIGN_LOG_NOTICE, "election %s: %s elected, term %llu token %llu", e->name,
               e->id, (unsigned long long)term, (unsigned long long)token);
}

void reign__election_elected(reign_election *e, int64_t at, int64_t valid_until)
{
    emit_owed_demoted(e); /* an earlier leadership's, owed by a cede */
    if (!reign__life_live(&e->life) || !e->leader)
        return; /* freed, or demoted by a callback meanwhile */
    reign_election_event ev = {.type = REIGN_ELECTION_ELECTED,
                               .at_ns = at,
                               .term = e->term,
                               .token = e->token,
                               .valid_until_ns = valid_until};
    reign_trace("election.elected", "%s term=%llu", e->name, (unsigned long long)e->term);
    reign__election_emit(e, &ev);
}

bool reign__election_demote(reign_election *e, reign_demote_reason reason, int64_t bound, bool owed)
{
    if (!e->leader)
        return false;
    int64_t now = reign__now_ns();
    if (bound > 0 && bound < now)
        now = bound;
    e->leader = false;
    reign_trace("election.demoted", "%s %s", e->name, reign_demote_reason_name(reason));
    reign__log(e->log, REIGN_LOG_NOTICE, "election %s: %s demoted (%s), term %llu", e->name, e->id,
               reign_demote_reason_name(reason), (unsigned long long)e->term);
    if (owed) {
        e->owe_demoted = true;
        e->owed_reason = reason;
        e->owed_term = e->term;
        e->owed_token = e->token;
        e->owed_at = now;
        reign__timer_start(reign__client_timers(e->client), &e->owed, reign__now_ns());
        reign__client_wake(e->client);
        return true;
    }
    reign_election_event ev = {.type = REIGN_ELECTION_DEMOTED,
                               .at_ns = now,
                               .term = e->term,
                               .token = e->token,
                               .reason = reason};
    reign__election_emit(e, &ev);
    return true;
}

void reign__election_left(reign_election *e, int err)
{
    emit_owed_demoted(e);
    reign_election_event ev = {.type = REIGN_ELECTION_LEFT,
                               .at_ns = reign__now_ns(),
                               .error = err,
                               .message = err ? reign_strerror(err) : NULL};
    reign__election_emit(e, &ev);
}

void reign__election_owe_left(reign_election *e, int err)
{
    e->owe_left = true;
    e->owed_err = err;
    reign__timer_start(reign__client_timers(e->client), &e->owed, reign__now_ns());
    reign__client_wake(e->client);
}

void reign__election_flush(reign_election *e)
{
    emit_owed_demoted(e);
    if (e->owe_left && reign__life_live(&e->life)) {
        e->owe_left = false;
        e->impl->left(e, e->owed_err);
    }
}

bool reign__election_step(reign_election *e, const reign__efsm *m, const reign__election_acts *acts,
                          unsigned *state, unsigned in, unsigned facts,
                          const reign__election_news *n)
{
    reign__efsm_step s =
        reign__efsm_next(m, *state, in, facts | (n && n->fresh ? REIGN__EFSM_F_FRESH : 0));
    if (s.refused || s.moot) {
        reign__log(e->log, s.refused ? REIGN_LOG_WARN : REIGN_LOG_DEBUG,
                   "election %s: %s in %s %s: %s", e->name, reign__efsm_input_name(m, in),
                   reign__efsm_state_name(m, *state), s.refused ? "refused" : "ignored", s.reason);
        return false;
    }
    if (s.to != *state || s.actions || s.request)
        reign__log(e->log, REIGN_LOG_DEBUG, "election %s: %s -> %s on %s%s%s (%s)", e->name,
                   reign__efsm_state_name(m, *state), reign__efsm_state_name(m, s.to),
                   reign__efsm_input_name(m, in), s.request ? ", then " : "",
                   s.request ? reign__efsm_request_name(m, s.request) : "", s.reason);
    reign_trace("election.step", "%s %s %s->%s", e->name, reign__efsm_input_name(m, in),
                reign__efsm_state_name(m, *state), reign__efsm_state_name(m, s.to));
    *state = s.to;
    unsigned mine = ++e->steps;
    reign_demote_reason why = m->demote_reason(in);
    if (s.actions & REIGN__EFSM_A_DEMOTE)
        acts->demote(e, why, false);
    if (s.actions & REIGN__EFSM_A_DEMOTE_LATER)
        acts->demote(e, why, true);
    if (s.actions & REIGN__EFSM_A_DROP_LEAD)
        acts->drop(e);
    if (s.actions & REIGN__EFSM_A_ELECT)
        acts->elect(e, n);
    if (s.actions & REIGN__EFSM_A_EMIT_LEFT)
        reign__election_left(e, n ? n->err : 0);
    if (s.request && e->steps == mine && reign__life_live(&e->life))
        acts->request(e, s.request, n);
    return e->steps == mine && reign__life_live(&e->life);
}

static void owed_cb(reign__timer *t, void *arg)
{
    reign_election *e = arg;
    reign__election_enter(e);
    reign__election_flush(e);
    reign__election_leave(e);
}

/* ---- how a leadership ended, for the history (reign_election_history()) ---- */

static const char *const end_names[] = {"leading",   "resigned", "ceded",   "deposed", "designated",
                                        "preempted", "guardian", "expired", "lost"};

const char *reign_term_end_name(reign_term_end end)
{
    return (unsigned)end < sizeof(end_names) / sizeof(end_names[0]) ? end_names[end] : "?";
}

reign_term_end reign__term_end_parse(const char *word, reign_term_end otherwise)
{
    for (size_t i = 1; word && i < sizeof(end_names) / sizeof(end_names[0]); i++)
        if (!strcmp(word, end_names[i]))
            return (reign_term_end)i;
    return otherwise;
}
