/*
 * election_fsm.c - the lookup the candidates' tables share (election_fsm.h).
 */
#include <stdio.h>

#include "election_fsm.h"

int reign__efsm_guard_holds(unsigned g, unsigned facts)
{
    switch (g) {
    case REIGN__EFSM_G_FRESH:
        return (facts & REIGN__EFSM_F_FRESH) != 0;
    case REIGN__EFSM_G_STALE:
        return (facts & REIGN__EFSM_F_FRESH) == 0;
    case REIGN__EFSM_G_NODE:
        return (facts & REIGN__EFSM_F_NODE) != 0;
    case REIGN__EFSM_G_NO_NODE:
        return (facts & REIGN__EFSM_F_NODE) == 0;
    case REIGN__EFSM_G_HANDING:
        return (facts & REIGN__EFSM_F_HANDING) != 0;
    default:
        return 1;
    }
}

void reign__efsm_index_build(const reign__efsm *m)
{
    /* backwards, so that each list is in table order: the first row that matches wins */
    for (size_t i = m->n_rows; i-- > 0;) {
        unsigned short *head = &m->index.first[m->rows[i].from * m->n_inputs + m->rows[i].input];
        m->index.next[i] = *head;
        *head = (unsigned short)(i + 1);
    }
}

reign__efsm_step reign__efsm_next(const reign__efsm *m, unsigned state, unsigned input,
                                  unsigned facts)
{
    reign__efsm_step r = {state, 0, 0, NULL, 0, 0};
    if (state >= m->n_states || input >= m->n_inputs) {
        r.refused = 1;
        r.reason = "unknown state or input";
        return r;
    }
    pthread_once(m->index.once, m->index.build);
    for (unsigned i = m->index.first[state * m->n_inputs + input]; i; i = m->index.next[i - 1]) {
        const reign__efsm_row *t = &m->rows[i - 1];
        if (reign__efsm_guard_holds(t->guard, facts)) {
            r.to = t->to;
            r.actions = t->actions;
            r.request = t->request;
            r.reason = t->reason;
            return r;
        }
    }
    if (m->moot(state, input)) {
        r.moot = 1;
        r.reason = "moot: the state it was meant for is already left";
        return r;
    }
    r.refused = 1;
    r.reason = "not allowed in this state";
    return r;
}

const char *reign__efsm_state_name(const reign__efsm *m, unsigned s)
{
    return s < m->n_states ? m->state_names[s] : "?";
}

const char *reign__efsm_input_name(const reign__efsm *m, unsigned in)
{
    return in < m->n_inputs ? m->input_names[in] : "?";
}

const char *reign__efsm_request_name(const reign__efsm *m, unsigned rq)
{
    return rq < m->n_requests ? m->request_names[rq] : "?";
}

const char *reign__efsm_guard_name(unsigned g)
{
    static const char *const names[] = {"",        " [fresh]",   " [stale]",
                                        " [node]", " [no node]", " [handing]"};
    return g < sizeof(names) / sizeof(names[0]) ? names[g] : "?";
}

void reign__efsm_actions_format(unsigned actions, char *buf, size_t len)
{
    static const char *const names[REIGN__EFSM_A__COUNT] = {
        "demote", "demote_later", "drop_lead", "elect", "emit_left",
    };
    size_t used = 0;
    if (len == 0)
        return;
    buf[0] = '\0';
    for (unsigned i = 0; i < REIGN__EFSM_A__COUNT; i++) {
        if (!(actions & (1u << i)))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "+" : "", names[i]);
        if (n < 0 || (size_t)n >= len - used)
            return;
        used += (size_t)n;
    }
}
