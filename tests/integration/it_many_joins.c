/*
 * it_many_joins.c - many elections joined on one client in one loop turn, new ones and
 * existing ones mixed (many elections per session).
 *
 * A candidate's first attempt at an election guesses that it is new, and the guesses of one
 * loop turn travel together as one multi (election_zk.c, reign__zk_multi_batched()).  When one
 * of them meets an existing election the whole request fails: the ones batched before it are
 * sent again, the ones after it come back canceled, guess once more, then go the ordinary way.
 * This test makes that happen and checks the outcome, not the path:
 *
 *   1. client a joins elections 0, 2, 4, ... (new: a leads them all);
 *   2. client b joins 0..N-1 in one turn, existing and new interleaved: b must lead exactly the
 *      odd ones and stand behind a in the even ones;
 *   3. every election has exactly the candidate nodes of its candidates (no stray node left
 *      by a guess that failed or was retried) and one leader node;
 *   4. a closes: b takes over every even election with a higher term.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"

#define N 24

typedef struct side {
    const char *who;
    reign_election *e[N];
    int elected[N], ready[N], demoted[N];
    uint64_t term[N];
} side;

static side A = {.who = "a"}, B = {.who = "b"};
static char names[N][128];

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    side *s = userdata;
    int i = -1;
    for (int k = 0; k < N; k++)
        if (s->e[k] == e)
            i = k;
    H_CHECKF(i >= 0, "%s: an event for an election not joined", s->who);
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        s->elected[i]++;
        H_CHECKF(ev->term > s->term[i], "%s: term %llu after %llu in %s", s->who,
                 (unsigned long long)ev->term, (unsigned long long)s->term[i], names[i]);
        s->term[i] = ev->term;
        break;
    case REIGN_ELECTION_READY:
        s->ready[i]++;
        break;
    case REIGN_ELECTION_DEMOTED:
        s->demoted[i]++;
        break;
    case REIGN_ELECTION_ERROR:
        h_fail(__FILE__, __LINE__, "%s: error in %s: %s", s->who, names[i],
               ev->message ? ev->message : reign_strerror(ev->error));
    default:
        break;
    }
}

static void join(h_cand *c, side *s, int i)
{
    reign_election_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.id = s->who;
    o.cb = on_event;
    o.userdata = s;
    H_OK(reign_election_join(&s->e[i], c->client, names[i], &o));
}

static int a_leads_evens(void *unused)
{
    (void)unused;
    for (int i = 0; i < N; i += 2)
        if (!A.elected[i])
            return 0;
    return 1;
}

static int b_decided(void *unused)
{
    (void)unused;
    for (int i = 0; i < N; i++)
        if (!B.ready[i] || (i % 2 && !B.elected[i]))
            return 0;
    return 1;
}

static int b_leads_all(void *unused)
{
    (void)unused;
    for (int i = 0; i < N; i++)
        if (!reign_election_is_leader(B.e[i]))
            return 0;
    return 1;
}

/* The candidate nodes and the leader node of election i, as the server has them. */
static void count_nodes(zhandle_t *raw, int i, int *candidates, int *leader)
{
    char path[300], kids[16][H_NODE_MAX];
    snprintf(path, sizeof(path), "/reign/election/%s", names[i]);
    int n = h_raw_children(raw, path, kids, 16);
    H_CHECKF(n >= 0, "listing %s", path);
    *candidates = *leader = 0;
    for (int k = 0; k < n; k++) {
        if (!strncmp(kids[k], "n_", 2))
            (*candidates)++;
        else if (!strcmp(kids[k], "leader"))
            (*leader)++;
    }
}

int main(void)
{
    h_init("it_many_joins");
    char base[96];
    h_unique_name(base, sizeof(base), "joins");
    for (int i = 0; i < N; i++)
        snprintf(names[i], sizeof(names[i]), "%s-%02d", base, i);

    h_cand *a = h_cand_new("a", NULL, NULL, NULL, NULL);
    h_cand *b = h_cand_new("b", NULL, NULL, NULL, NULL);

    h_log("a joins the %d even elections (new)", N / 2);
    for (int i = 0; i < N; i += 2)
        join(a, &A, i);
    H_WAIT(a_leads_evens, NULL, "a to lead every even election");

    h_log("b joins all %d in one turn, existing and new interleaved", N);
    for (int i = 0; i < N; i++)
        join(b, &B, i);
    H_WAIT(b_decided, NULL, "b to be decided in every election");
    for (int i = 0; i < N; i++) {
        if (i % 2)
            H_CHECKF(B.elected[i] == 1, "b elected %d times in new election %s", B.elected[i],
                     names[i]);
        else
            H_CHECKF(!B.elected[i] && reign_election_is_leader(A.e[i]),
                     "%s: b elected while a leads", names[i]);
    }

    zhandle_t *raw = h_raw_connect(h_hosts(), NULL);
    for (int i = 0; i < N; i++) {
        int cands, leader;
        count_nodes(raw, i, &cands, &leader);
        H_CHECKF(cands == (i % 2 ? 1 : 2) && leader == 1,
                 "%s: %d candidate nodes and %d leader nodes", names[i], cands, leader);
    }

    h_log("a closes: b takes over the even ones");
    for (int i = 0; i < N; i += 2)
        reign_election_free(A.e[i]);
    memset(A.e, 0, sizeof(A.e));
    h_cand_close(a);
    H_WAIT(b_leads_all, NULL, "b to lead every election");
    for (int i = 0; i < N; i++) {
        int cands, leader;
        count_nodes(raw, i, &cands, &leader);
        H_CHECKF(cands == 1 && leader == 1, "%s: %d candidate nodes and %d leader nodes after a",
                 names[i], cands, leader);
    }
    h_raw_close(raw);
    for (int i = 0; i < N; i++)
        reign_election_free(B.e[i]);
    return h_finish();
}
