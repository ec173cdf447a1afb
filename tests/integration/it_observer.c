/*
 * it_observer.c - observers see every change of leader, in order.
 *
 * An observer (observer=1: follows without standing) and four candidates, the last of which
 * also follows the leader (follow_leader=1).  The leaders resign one after the other; before
 * each change the test waits until the observer has reported the current leader, so no change
 * can be folded into the next.  The observer's LEADER_CHANGED events (with READY's leader
 * first) must name exactly the leaderships the candidates announced with ELECTED, in term
 * order, with the same ids, terms and tokens - and so must the following candidate's.  When
 * the last candidate resigns the observer reports no leader.  The observer itself never leads.
 */
#include <string.h>

#include "harness.h"

#define N 4

typedef struct lead {
    char id[H_ID_MAX];
    uint64_t term, token;
} lead;

static h_cand *cand[N];
static h_cand *obs;

/* What a follower saw: READY's leader, then every LEADER_CHANGED with a leader. */
static size_t followed(const h_cand *c, lead *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_ev && n < max; i++) {
        const h_event *e = &c->ev[i];
        if ((e->type != REIGN_ELECTION_READY && e->type != REIGN_ELECTION_LEADER_CHANGED) ||
            !e->has_leader)
            continue;
        snprintf(out[n].id, sizeof(out[n].id), "%s", e->leader_id);
        out[n].term = e->leader_term;
        out[n].token = e->leader_token;
        n++;
    }
    return n;
}

/* The leaderships the candidates announced, in term order. */
static size_t announced(lead *out, size_t max)
{
    size_t n = 0;
    for (int k = 0; k < N; k++)
        for (size_t i = 0; i < cand[k]->n_ev && n < max; i++)
            if (cand[k]->ev[i].type == REIGN_ELECTION_ELECTED) {
                snprintf(out[n].id, sizeof(out[n].id), "%s", cand[k]->id);
                out[n].term = cand[k]->ev[i].term;
                out[n].token = cand[k]->ev[i].token;
                n++;
            }
    for (size_t i = 1; i < n; i++) /* insertion sort by term */
        for (size_t j = i; j > 0 && out[j].term < out[j - 1].term; j--) {
            lead tmp = out[j];
            out[j] = out[j - 1];
            out[j - 1] = tmp;
        }
    return n;
}

static int caught_up(void *arg)
{
    h_cand *follower = arg;
    lead a[16], f[16];
    size_t na = announced(a, 16), nf = followed(follower, f, 16);
    return na > 0 && nf > 0 && !strcmp(a[na - 1].id, f[nf - 1].id) &&
           a[na - 1].term == f[nf - 1].term;
}

static int observer_sees_none(void *unused)
{
    (void)unused;
    const h_event *e = h_last(obs, REIGN_ELECTION_LEADER_CHANGED);
    return e && !e->has_leader;
}

static void compare(const h_cand *follower, const char *what)
{
    lead a[16], f[16];
    size_t na = announced(a, 16), nf = followed(follower, f, 16);
    for (size_t i = 0; i < na; i++)
        h_log("announced %zu: %s term=%llu token=%llu", i + 1, a[i].id,
              (unsigned long long)a[i].term, (unsigned long long)a[i].token);
    for (size_t i = 0; i < nf; i++)
        h_log("%s saw %zu: %s term=%llu token=%llu", what, i + 1, f[i].id,
              (unsigned long long)f[i].term, (unsigned long long)f[i].token);
    H_CHECKF(na == nf, "%s saw %zu leaderships, %zu were announced", what, nf, na);
    for (size_t i = 0; i < na; i++)
        H_CHECKF(!strcmp(a[i].id, f[i].id) && a[i].term == f[i].term && a[i].token == f[i].token,
                 "%s saw leadership %zu as %s/%llu/%llu, announced %s/%llu/%llu", what, i + 1,
                 f[i].id, (unsigned long long)f[i].term, (unsigned long long)f[i].token, a[i].id,
                 (unsigned long long)a[i].term, (unsigned long long)a[i].token);
}

int main(void)
{
    h_init("it_observer");
    char name[128];
    h_unique_name(name, sizeof(name), "observer");
    const char *uri = h_uri("session_timeout_ms=4000");
    reign_election_options oo;
    memset(&oo, 0, sizeof(oo));
    oo.observer = 1;
    obs = h_cand_new("observer", uri, NULL, name, &oo);
    H_WAIT(h_pred_ready, obs, "the observer ready");
    H_CHECK(!h_last(obs, REIGN_ELECTION_READY)->has_leader);

    for (int i = 0; i < N; i++) {
        char id[8];
        snprintf(id, sizeof(id), "c%d", i + 1);
        reign_election_options eo;
        memset(&eo, 0, sizeof(eo));
        eo.follow_leader = i == N - 1;
        cand[i] = h_cand_new(id, uri, NULL, name, &eo);
        H_WAIT(h_pred_ready, cand[i], "a candidate ready");
    }
    H_WAIT(caught_up, obs, "the observer to report the first leader");
    for (int round = 0; round < N - 1; round++) {
        h_cand *l = h_leader();
        H_CHECK(l != NULL && l != obs);
        H_OK(reign_election_resign(l->election));
        H_WAIT(h_pred_left, l, "the leader to leave");
        H_WAIT(h_pred_any_leader, NULL, "the next leader");
        H_WAIT(caught_up, obs, "the observer to report the new leader");
        H_WAIT(caught_up, cand[N - 1], "the following candidate to report the new leader");
        h_cand_close(l);
    }
    compare(obs, "observer");
    compare(cand[N - 1], "follower");
    H_CHECK(h_count(obs, REIGN_ELECTION_ELECTED) == 0);

    h_cand *last = h_leader();
    H_CHECK(last == cand[N - 1]);
    H_OK(reign_election_resign(last->election));
    H_WAIT(observer_sees_none, NULL, "the observer to report no leader");
    return h_finish();
}
