/*
 * contract_election.c - what <reign/election.h> promises on every store.
 *
 * One program, run once per store (contract_election_zk, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake); the harness gives the store's URI.  Each case stands in an
 * election of its own, and its candidates are listed (options.listed, which ZooKeeper does
 * anyway) with the payload "addr-of-<id>":
 *
 *   one_leader  an observer, then four candidates joining one after the other, the last with
 *               follow_leader: exactly one is elected; its term and token (>= 1) are those of
 *               its ELECTED; a snapshot taken by another client names it, with its term, token
 *               and payload, and lists the four once each, the leader first and the others in
 *               the order they joined, each with its payload
 *   resign      then the leaders resign one after the other: the resigner no longer leads on
 *               return, is DEMOTED (resigned) and then LEFT; exactly one other is elected,
 *               after that demotion, with a greater term and token; the snapshot shows it,
 *               the resigner gone; when the last resigns the observer reports no leader
 *   close       the leader's election and client freed: another is elected; the leader's
 *               client closed (reign_client_close()): another is elected
 *   cede        a candidate that does not lead cannot cede (REIGN_ESTATE); the leader cedes:
 *               no longer leads on return (term 0), DEMOTED (ceded), the other is elected
 *               after that, with a greater term and token, and the ceder stands again (listed
 *               again, behind the new leader); ceding with the default delay hands back
 *   depose      from a client outside the election: without a callback REIGN_EINVAL; the
 *               leader is DEMOTED (node_deleted) and a later leadership follows; an election
 *               nobody leads answers REIGN_ENOENT
 *   many        one client leads MANY elections and another follows them all: a resignation
 *               of any one of them (the first, one in the middle, the last) is taken over
 *               by the follower while the leader's client lives on, i.e. the store tells a
 *               follower of its release however many elections its client watches
 *   names       illegal election names (REIGN_ENAME), ids (REIGN_EINVAL) and payloads
 *               (REIGN_E2BIG) are refused by join, and the refused calls never call back;
 *               query refuses an illegal name, and answers REIGN_ENOENT for an election that
 *               does not exist
 *
 * And after every case, for each of its candidates: the events came in the documented order
 * (READY once and first, ELECTED and DEMOTED alternating, LEFT last, observers never
 * elected); what the observer and the following candidate reported as leaders (READY's and
 * LEADER_CHANGED's) are leaderships that were announced by ELECTED, with the same id, term,
 * token and the leader's payload, in term order, ending on the last one.  A store whose
 * followers poll may fold a short leadership into the next, so not every one need be
 * reported (tests/integration/it_observer.c holds ZooKeeper to every one).  h_finish() proves
 * for each election that no two leaderships overlapped and that terms and fencing tokens
 * strictly grew from one to the next.
 *
 * Every wait is for an event or a condition, bounded by H_WAIT_MS: only a hang reaches it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define MAX_IN_CASE 8

/* The candidates of one case, in the order they joined. */
typedef struct group {
    char name[128];
    h_cand *c[MAX_IN_CASE];
    size_t n;
} group;

static void payload_of(const char *id, char *out, size_t len)
{
    snprintf(out, len, "addr-of-%.32s", id);
}

static void group_begin(group *g, const char *what)
{
    memset(g, 0, sizeof(*g));
    h_unique_name(g->name, sizeof(g->name), what);
    h_log("---- %s (%s)", what, g->name);
}

/* A candidate of g (observer: follows without standing; follow: follow_leader). */
static h_cand *join(group *g, const char *id, int observer, int follow)
{
    H_CHECK(g->n < MAX_IN_CASE);
    char data[H_DATA_MAX];
    payload_of(id, data, sizeof(data));
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.data = data;
    eo.data_len = strlen(data);
    eo.observer = observer;
    eo.follow_leader = follow;
    eo.listed = 1;
    h_cand *c = h_cand_new(id, h_uri(NULL), NULL, g->name, &eo);
    g->c[g->n++] = c;
    return c;
}

/* The candidate of g that leads, or NULL; fails the test if two do. */
static h_cand *leader_of(const group *g)
{
    h_cand *found = NULL;
    for (size_t i = 0; i < g->n; i++) {
        if (!h_is_leader(g->c[i]))
            continue;
        H_CHECKF(!found, "%s and %s lead at once", found->id, g->c[i]->id);
        found = g->c[i];
    }
    return found;
}

static int pred_group_leader(void *arg)
{
    return leader_of(arg) != NULL;
}

static size_t elected_in(const group *g)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++)
        n += h_count(g->c[i], REIGN_ELECTION_ELECTED);
    return n;
}

/* ---- snapshots ---------------------------------------------------------------------------- */

/* "c0 c1 ...": the ids a snapshot lists. */
static void ids_of(const h_view *v, char *out, size_t len)
{
    out[0] = '\0';
    for (size_t i = 0; i < v->n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? " " : "", v->ids[i]);
}

typedef struct listing {
    h_cand *asker;
    const char *name;
    const char *want;
    char got[512];
} listing;

static int pred_listed(void *arg)
{
    listing *l = arg;
    h_view v;
    h_query(l->asker, l->name, &v);
    if (v.err)
        snprintf(l->got, sizeof(l->got), "(%s)", reign_err_name(v.err));
    else
        ids_of(&v, l->got, sizeof(l->got));
    return v.err == 0 && !strcmp(l->got, l->want);
}

/* Waits until a snapshot of `name` taken by `asker` lists exactly `want` ("c0 c1"), in order:
 * a SQL candidate's row is written by its client's own worker, soon after the join. */
static void wait_listed(h_cand *asker, const char *name, const char *want)
{
    listing l = {asker, name, want, ""};
    if (!h_run_until(pred_listed, &l, H_WAIT_MS))
        h_fail(__FILE__, __LINE__, "the snapshot lists \"%s\", want \"%s\"", l.got, want);
}

/* The snapshot names `lead` as leader with its current term, token and payload. */
static void check_view_leader(h_cand *asker, const group *g, const h_cand *lead, h_view *v)
{
    char data[H_DATA_MAX];
    h_query(asker, g->name, v);
    H_CHECKF(v->err == 0, "query: %s", reign_err_name(v->err));
    H_CHECKF(v->has_leader, "the snapshot shows no leader, %s leads", lead->id);
    H_CHECKF(!strcmp(v->leader_id, lead->id), "snapshot leader '%s', elected '%s'", v->leader_id,
             lead->id);
    H_CHECK(v->term == reign_election_term(lead->election));
    H_CHECK(v->token == reign_election_token(lead->election));
    payload_of(lead->id, data, sizeof(data));
    H_CHECKF(!strcmp(v->leader_data, data), "the leader's payload is '%s', want '%s'",
             v->leader_data, data);
    H_CHECKF(v->n > 0 && !strcmp(v->ids[0], lead->id), "the leader is not listed first");
    for (size_t i = 0; i < v->n; i++) {
        payload_of(v->ids[i], data, sizeof(data));
        H_CHECKF(!strcmp(v->data[i], data), "candidate %s's payload is '%s', want '%s'", v->ids[i],
                 v->data[i], data);
    }
}

/* ---- what every case ends with ------------------------------------------------------------ */

/* READY once and first, ELECTED and DEMOTED alternating (never for an observer), LEFT last. */
static void check_order(const h_cand *c, int observer)
{
    int leading = 0, left = 0;
    for (size_t i = 0; i < c->n_ev; i++) {
        const h_event *e = &c->ev[i];
        H_CHECKF(!left, "%s: event %zu (type %d) after LEFT", c->id, i + 1, (int)e->type);
        H_CHECKF((e->type == REIGN_ELECTION_READY) == (i == 0),
                 "%s: event %zu is type %d: READY must come once, first", c->id, i + 1,
                 (int)e->type);
        switch (e->type) {
        case REIGN_ELECTION_ELECTED:
            H_CHECKF(!observer, "%s: an observer was elected", c->id);
            H_CHECKF(!leading, "%s: ELECTED twice without DEMOTED between", c->id);
            leading = 1;
            break;
        case REIGN_ELECTION_DEMOTED:
            H_CHECKF(leading, "%s: DEMOTED while not leading", c->id);
            leading = 0;
            break;
        case REIGN_ELECTION_LEFT:
            H_CHECKF(e->error == 0, "%s: LEFT with %s", c->id, reign_err_name(e->error));
            left = 1;
            break;
        case REIGN_ELECTION_ERROR:
            h_fail(__FILE__, __LINE__, "%s: ERROR %s", c->id, reign_err_name(e->error));
        default:
            break;
        }
    }
}

/* The ELECTED of g with this term, or NULL. */
static const h_event *announced(const group *g, uint64_t term, const h_cand **who)
{
    for (size_t i = 0; i < g->n; i++)
        for (size_t k = 0; k < g->c[i]->n_ev; k++) {
            const h_event *e = &g->c[i]->ev[k];
            if (e->type == REIGN_ELECTION_ELECTED && e->term == term) {
                *who = g->c[i];
                return e;
            }
        }
    return NULL;
}

/* The last leader follower f reported (READY's or LEADER_CHANGED's), or NULL for none. */
static const h_event *last_reported(const h_cand *f)
{
    for (size_t i = f->n_ev; i-- > 0;)
        if (f->ev[i].type == REIGN_ELECTION_LEADER_CHANGED || f->ev[i].type == REIGN_ELECTION_READY)
            return f->ev[i].has_leader ? &f->ev[i] : NULL;
    return NULL;
}

typedef struct follow_wait {
    const h_cand *f;
    const h_cand *lead; /* NULL: no leader */
} follow_wait;

static int pred_reports(void *arg)
{
    follow_wait *w = arg;
    const h_event *e = last_reported(w->f);
    if (!w->lead)
        return e == NULL && h_count(w->f, REIGN_ELECTION_LEADER_CHANGED) > 0;
    return e && !strcmp(e->leader_id, w->lead->id) &&
           e->leader_term == reign_election_term(w->lead->election);
}

/* Waits until follower f reports `lead` (NULL: no leader) as the leader. */
static void wait_reports(const h_cand *f, const h_cand *lead)
{
    follow_wait w = {f, lead};
    H_WAIT(pred_reports, &w, lead ? "the follower to report the leader" : "no leader reported");
}

/* Every leader f reported was announced so, in term order; returns how many it reported. */
static size_t check_followed(const group *g, const h_cand *f)
{
    uint64_t last = 0;
    size_t n = 0;
    for (size_t i = 0; i < f->n_ev; i++) {
        const h_event *e = &f->ev[i];
        if ((e->type != REIGN_ELECTION_LEADER_CHANGED && e->type != REIGN_ELECTION_READY) ||
            !e->has_leader)
            continue;
        const h_cand *who = NULL;
        const h_event *el = announced(g, e->leader_term, &who);
        H_CHECKF(el, "%s reported %s at term %llu, which nobody announced", f->id, e->leader_id,
                 (unsigned long long)e->leader_term);
        H_CHECKF(!strcmp(who->id, e->leader_id) && el->token == e->leader_token,
                 "%s reported %s/%llu at term %llu, announced as %s/%llu", f->id, e->leader_id,
                 (unsigned long long)e->leader_token, (unsigned long long)e->leader_term, who->id,
                 (unsigned long long)el->token);
        char data[H_DATA_MAX];
        payload_of(who->id, data, sizeof(data));
        H_CHECKF(!strcmp(e->leader_data, data), "%s reported %s's payload as '%s'", f->id, who->id,
                 e->leader_data);
        H_CHECKF(e->leader_term > last, "%s reported term %llu after %llu", f->id,
                 (unsigned long long)e->leader_term, (unsigned long long)last);
        last = e->leader_term;
        n++;
    }
    return n;
}

static void group_end(group *g)
{
    for (size_t i = 0; i < g->n; i++) {
        check_order(g->c[i], !strcmp(g->c[i]->id, "observer"));
        h_cand_close(g->c[i]);
    }
}

/* ---- hand-overs --------------------------------------------------------------------------- */

typedef struct handover {
    const group *g;
    h_cand *old;
    size_t elected_before, demoted_before;
} handover;

static handover handover_from(const group *g, h_cand *old)
{
    handover h = {g, old, elected_in(g), h_count(old, REIGN_ELECTION_DEMOTED)};
    return h;
}

/* old was demoted and one other leads now. */
static int pred_handed_over(void *arg)
{
    handover *h = arg;
    h_cand *l = leader_of(h->g);
    return h_count(h->old, REIGN_ELECTION_DEMOTED) > h->demoted_before && l && l != h->old &&
           elected_in(h->g) > h->elected_before;
}

/* Waits for the hand-over from h->old, then checks it: one leadership more, after old's
 * demotion for `reason`, with a greater term and token.  Returns the new leader. */
static h_cand *handed_over(handover *h, reign_demote_reason reason, const char *what)
{
    H_WAIT(pred_handed_over, h, what);
    h_cand *now = leader_of(h->g);
    H_CHECKF(elected_in(h->g) == h->elected_before + 1, "%zu new leaderships, want 1",
             elected_in(h->g) - h->elected_before);
    const h_event *d = h_last(h->old, REIGN_ELECTION_DEMOTED);
    const h_event *e = h_last(now, REIGN_ELECTION_ELECTED);
    H_CHECKF(d->reason == reason, "%s demoted with %s, want %s", h->old->id,
             reign_demote_reason_name(d->reason), reign_demote_reason_name(reason));
    H_CHECKF(d->at_ns < e->at_ns, "%s elected before %s was demoted", now->id, h->old->id);
    H_CHECKF(e->term > d->term && e->token > d->token,
             "%s's term/token %llu/%llu after %s's %llu/%llu", now->id, (unsigned long long)e->term,
             (unsigned long long)e->token, h->old->id, (unsigned long long)d->term,
             (unsigned long long)d->token);
    if (h_store_is_sql()) /* <reign/election.h>: a lease's term is also its fencing token */
        H_CHECKF(e->token == e->term, "token %llu, term %llu", (unsigned long long)e->token,
                 (unsigned long long)e->term);
    h_log("%s leads, term %llu token %llu, after %s (%s)", now->id, (unsigned long long)e->term,
          (unsigned long long)e->token, h->old->id, reign_demote_reason_name(reason));
    return now;
}

/* ---- the cases ---------------------------------------------------------------------------- */

#define N 4

/* one_leader, then resign. */
static void case_one_leader_resign(void)
{
    group g;
    group_begin(&g, "one-leader");
    h_cand *obs = join(&g, "observer", 1, 0);
    H_WAIT(h_pred_ready, obs, "the observer ready");
    H_CHECKF(!h_last(obs, REIGN_ELECTION_READY)->has_leader, "a new election has a leader");
    /* One at a time: c0 leads alone, then each joins once the one before is listed, so the
     * list's order is the join order. */
    h_cand *cand[N];
    char order[512] = "";
    for (int i = 0; i < N; i++) {
        char id[8];
        snprintf(id, sizeof(id), "c%d", i);
        cand[i] = join(&g, id, 0, i == N - 1);
        snprintf(order + strlen(order), sizeof(order) - strlen(order), "%s%s", i ? " " : "", id);
        if (i == 0)
            H_WAIT(h_pred_leader, cand[0], "c0 to lead");
        wait_listed(obs, g.name, order);
    }
    for (int i = 0; i < N; i++)
        H_WAIT(h_pred_ready, cand[i], "a candidate ready");
    h_cand *lead = leader_of(&g);
    H_CHECK(lead == cand[0]);
    H_CHECKF(elected_in(&g) == 1, "%zu ELECTED events for one leadership", elected_in(&g));
    const h_event *el = h_last(lead, REIGN_ELECTION_ELECTED);
    H_CHECK(el->term >= 1 && el->token >= 1);
    H_CHECK(reign_election_term(lead->election) == el->term);
    H_CHECK(reign_election_token(lead->election) == el->token);
    for (int i = 1; i < N; i++)
        H_CHECK(reign_election_term(cand[i]->election) == 0 && !h_is_leader(cand[i]));
    h_view v;
    check_view_leader(obs, &g, lead, &v);
    H_CHECK(v.term == el->term && v.token == el->token);

    /* resign: hand over until one is left. */
    for (int round = 1; round < N; round++) {
        handover h = handover_from(&g, lead);
        H_OK(reign_election_resign(lead->election));
        H_CHECK(!reign_election_is_leader(lead->election));
        h_cand *old = lead;
        lead = handed_over(&h, REIGN_DEMOTE_RESIGNED, "the next leader after a resignation");
        H_WAIT(h_pred_left, old, "LEFT after the resignation");
        /* The resigner is gone from the list; the others keep their order. */
        snprintf(order, sizeof(order), "%s", lead->id);
        for (int i = 0; i < N; i++)
            if (cand[i] != lead && !h_pred_left(cand[i]))
                snprintf(order + strlen(order), sizeof(order) - strlen(order), " %s", cand[i]->id);
        wait_listed(obs, g.name, order);
        check_view_leader(obs, &g, lead, &v);
    }
    wait_reports(obs, lead);
    if (!h_pred_left(cand[N - 1])) /* where the leaders did not go in the order they joined */
        wait_reports(cand[N - 1], lead);
    H_OK(reign_election_resign(lead->election));
    H_WAIT(h_pred_left, lead, "LEFT after the last resignation");
    wait_reports(obs, NULL);
    H_CHECKF(check_followed(&g, obs) >= 1, "the observer reported no leader");
    H_CHECKF(check_followed(&g, cand[N - 1]) >= 1, "the follower reported no leader");
    group_end(&g);
}

static void case_close(void)
{
    group g;
    group_begin(&g, "close");
    h_cand *obs = join(&g, "observer", 1, 0);
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "c%d", i);
        join(&g, id, 0, 0);
    }
    H_WAIT(pred_group_leader, &g, "a leader");
    h_cand *lead = leader_of(&g);

    /* Freed: election and client. */
    handover h = handover_from(&g, lead);
    h_cand_close(lead);
    H_WAIT(pred_group_leader, &g, "a leader after the leader was freed");
    H_CHECK(elected_in(&g) == h.elected_before + 1);
    lead = leader_of(&g);

    /* Closed: the orderly close of the client, the election still attached. */
    h = handover_from(&g, lead);
    reign_client_close(lead->client);
    lead = handed_over(&h, REIGN_DEMOTE_RESIGNED, "a leader after the leader's client closed");
    wait_reports(obs, lead);
    check_followed(&g, obs);
    group_end(&g);
}

static void case_cede(void)
{
    group g;
    group_begin(&g, "cede");
    h_cand *a = join(&g, "a", 0, 0);
    H_WAIT(h_pred_leader, a, "a to lead");
    h_cand *b = join(&g, "b", 0, 0);
    H_WAIT(h_pred_ready, b, "b ready");
    wait_listed(b, g.name, "a b");
    H_CHECK(reign_election_cede(b->election, 0) == REIGN_ESTATE);

    handover h = handover_from(&g, a);
    H_OK(reign_election_cede(a->election, 500));
    H_CHECK(!reign_election_is_leader(a->election));
    H_CHECK(reign_election_term(a->election) == 0);
    H_CHECK(handed_over(&h, REIGN_DEMOTE_CEDED, "b to take over from a") == b);
    wait_listed(b, g.name, "b a"); /* a stands again, behind b */

    h = handover_from(&g, b);
    H_OK(reign_election_cede(b->election, -1));
    H_CHECK(handed_over(&h, REIGN_DEMOTE_CEDED, "a to take over from b") == a);
    wait_listed(a, g.name, "a b");
    group_end(&g);
}

static void on_done(reign_client *client, int err, void *userdata)
{
    (void)client;
    *(int *)userdata = err;
}

static int pred_done(void *rc)
{
    return *(int *)rc != 1;
}

static int depose(h_cand *op, const char *name)
{
    int rc = 1;
    H_OK(reign_election_depose(op->client, name, on_done, &rc));
    H_WAIT(pred_done, &rc, "the depose's answer");
    return rc;
}

static void case_depose(void)
{
    group g;
    group_begin(&g, "depose");
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "c%d", i);
        join(&g, id, 0, 0);
    }
    h_cand *op = h_cand_new("operator", h_uri(NULL), NULL, NULL, NULL);
    H_WAIT(pred_group_leader, &g, "a leader");
    h_cand *lead = leader_of(&g);
    H_CHECK(reign_election_depose(op->client, g.name, NULL, NULL) == REIGN_EINVAL);

    handover h = handover_from(&g, lead);
    H_OK(depose(op, g.name));
    handed_over(&h, REIGN_DEMOTE_NODE_DELETED, "a leader after the depose");

    char nobody[128];
    h_unique_name(nobody, sizeof(nobody), "nobody");
    int rc = depose(op, nobody);
    H_CHECKF(rc == REIGN_ENOENT, "depose of an election nobody leads: %s", reign_err_name(rc));
    h_cand_close(op);
    group_end(&g);
}

/* ---- many elections on one client ---- */

#define MANY 100

typedef struct many_side {
    reign_election *e[MANY];
    int ready[MANY], leads[MANY];
} many_side;

static void many_cb(reign_election *e, const reign_election_event *ev, void *userdata)
{
    many_side *s = userdata;
    for (int i = 0; i < MANY; i++) {
        if (s->e[i] != e)
            continue;
        if (ev->type == REIGN_ELECTION_READY)
            s->ready[i] = 1;
        if (ev->type == REIGN_ELECTION_ELECTED)
            s->leads[i] = 1;
        if (ev->type == REIGN_ELECTION_DEMOTED)
            s->leads[i] = 0;
        H_CHECKF(ev->type != REIGN_ELECTION_ERROR, "election %d: %s", i,
                 ev->message ? ev->message : reign_err_name(ev->error));
    }
}

static int many_all(const int *v)
{
    for (int i = 0; i < MANY; i++)
        if (!v[i])
            return 0;
    return 1;
}

static int pred_many_lead(void *s)
{
    return many_all(((many_side *)s)->leads);
}

static int pred_many_ready(void *s)
{
    return many_all(((many_side *)s)->ready);
}

static int many_at;

static int pred_many_took(void *s)
{
    return ((many_side *)s)->leads[many_at];
}

static void many_join(h_cand *c, many_side *s, const char *prefix, const char *id)
{
    for (int i = 0; i < MANY; i++) {
        char name[160];
        snprintf(name, sizeof(name), "%s-%d", prefix, i);
        reign_election_options eo = {.size = sizeof(eo), .id = id, .cb = many_cb, .userdata = s};
        H_OK(reign_election_join(&s->e[i], c->client, name, &eo));
    }
}

static void case_many(void)
{
    h_log("---- many");
    static many_side a, b;
    char prefix[128];
    h_unique_name(prefix, sizeof(prefix), "many");
    h_cand *ca = h_cand_new("many-a", h_uri(NULL), NULL, NULL, NULL);
    h_cand *cb = h_cand_new("many-b", h_uri(NULL), NULL, NULL, NULL);
    many_join(ca, &a, prefix, "a");
    H_WAIT(pred_many_lead, &a, "a to lead every election");
    many_join(cb, &b, prefix, "b");
    H_WAIT(pred_many_ready, &b, "b ready in every election");
    static const int which[] = {0, MANY / 2, MANY - 1};
    for (size_t k = 0; k < sizeof(which) / sizeof(which[0]); k++) {
        many_at = which[k];
        H_OK(reign_election_resign(a.e[many_at]));
        H_WAIT(pred_many_took, &b, "b to take over an election the other resigned");
        H_CHECK(a.leads[many_at] == 0);
    }
    for (int i = 0; i < MANY; i++) {
        reign_election_free(a.e[i]);
        reign_election_free(b.e[i]);
    }
    h_cand_close(ca);
    h_cand_close(cb);
}

static int calls_back;

static void counting_cb(reign_election *e, const reign_election_event *ev, void *userdata)
{
    (void)e;
    (void)ev;
    (void)userdata;
    calls_back++;
}

/* join's answer for name, id and payload size, which must be refused. */
static int try_join(h_cand *c, const char *name, const char *id, size_t data_len)
{
    static char big[REIGN_DATA_MAX + 1];
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.size = sizeof(eo);
    eo.id = id;
    eo.data = big;
    eo.data_len = data_len;
    eo.cb = counting_cb;
    reign_election *e = NULL;
    int rc = reign_election_join(&e, c->client, name, &eo);
    H_CHECKF(rc == 0 || e == NULL, "a refused join made an election");
    if (rc == 0)
        reign_election_free(e);
    return rc;
}

static void on_query(reign_client *client, int err, const reign_election_view *v, void *ud)
{
    (void)client;
    (void)err;
    (void)v;
    (void)ud;
    calls_back++;
}

static void case_names(void)
{
    h_log("---- names");
    h_cand *c = h_cand_new("names", h_uri(NULL), NULL, NULL, NULL);
    char longest[REIGN_NAME_MAX + 2], long_id[REIGN_ID_MAX + 2];
    memset(longest, 'n', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    memset(long_id, 'i', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';

    static const char *const bad_names[] = {"", ".", "..", "a/b", "a b", "x\ny", "ü"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
        H_RC(try_join(c, bad_names[i], "id", 0), REIGN_ENAME);
    H_RC(try_join(c, longest, "id", 0), REIGN_ENAME); /* one byte over */
    H_RC(try_join(c, "ok-name", "", 0), REIGN_EINVAL);
    H_RC(try_join(c, "ok-name", "a\tb", 0), REIGN_EINVAL);
    H_RC(try_join(c, "ok-name", long_id, 0), REIGN_EINVAL); /* one byte over */
    H_RC(try_join(c, "ok-name", "id", REIGN_DATA_MAX + 1), REIGN_E2BIG);
    H_RC(reign_election_query(c->client, "a/b", on_query, NULL), REIGN_ENAME);

    /* An election that does not exist. */
    char nobody[128];
    h_unique_name(nobody, sizeof(nobody), "nobody");
    h_view v;
    h_query(c, nobody, &v);
    H_CHECKF(v.err == REIGN_ENOENT, "query of an election that does not exist: %s",
             reign_err_name(v.err));
    H_CHECKF(calls_back == 0, "a refused call called back");
    h_cand_close(c);
}

int main(void)
{
    h_contract_init("contract_election", NULL);
    case_one_leader_resign();
    case_close();
    case_cede();
    case_depose();
    case_many();
    case_names();
    return h_finish();
}
