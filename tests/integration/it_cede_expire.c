/*
 * it_cede_expire.c - a candidate that follows the leader keeps following it across a new
 * session, also while it stands aside after a cede.
 *
 * a, b and c follow the leader (follow_leader).  a leads and cedes for 60 s: b takes over.
 * While a stands aside, its session is expired on the server (expire.c), so a gets a new one,
 * still ceded.  Then b cedes and c takes over: a must report c as the leader (LEADER_CHANGED)
 * in its new session, as b does, while it still stands aside (it is not among the candidates
 * when it does).  h_finish() proves no overlap
 * and growing terms and tokens.
 */
#include <string.h>

#include "expire.h"
#include "harness.h"

typedef struct seen {
    h_cand *c;
    const char *id;
} seen;

static int sees_leader(void *arg)
{
    seen *s = arg;
    const h_event *ev = h_last(s->c, REIGN_ELECTION_LEADER_CHANGED);
    return ev && ev->has_leader && !strcmp(ev->leader_id, s->id);
}

typedef struct session {
    h_cand *c;
    int64_t old;
} session;

static int has_new_session(void *arg)
{
    session *s = arg;
    int64_t id = reign_client_session_id(s->c->client);
    return s->c->state == REIGN_CONN_CONNECTED && id != 0 && id != s->old;
}

int main(void)
{
    h_init("it_cede_expire");
    char name[128];
    h_unique_name(name, sizeof(name), "cede-expire");
    const char *uri = h_uri("session_timeout_ms=4000");
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.follow_leader = 1;
    h_cand *a = h_cand_new("a", uri, NULL, name, &eo);
    H_WAIT(h_pred_leader, a, "a to lead");
    h_cand *b = h_cand_new("b", uri, NULL, name, &eo);
    H_WAIT(h_pred_ready, b, "b ready");
    h_cand *c = h_cand_new("c", uri, NULL, name, &eo);
    H_WAIT(h_pred_ready, c, "c ready");

    H_OK(reign_election_cede(a->election, 60000));
    H_WAIT(h_pred_leader, b, "b to take over from a");
    seen a_b = {a, "b"};
    H_WAIT(sees_leader, &a_b, "a, standing aside, to report b");

    session s = {a, reign_client_session_id(a->client)};
    h_expire_session(a->client);
    H_WAIT(has_new_session, &s, "a to get a new session");

    H_OK(reign_election_cede(b->election, 60000));
    H_WAIT(h_pred_leader, c, "c to take over from b");
    seen b_c = {b, "c"}, a_c = {a, "c"};
    H_WAIT(sees_leader, &b_c, "b to report c");
    H_WAIT(sees_leader, &a_c, "a, ceded in its new session, to report c");
    /* ... while it still stands aside, not only once its pause is over and it stands again */
    h_view v;
    h_query(c, name, &v);
    H_CHECK(v.err == 0);
    for (size_t i = 0; i < v.n; i++)
        H_CHECKF(strcmp(v.ids[i], "a") != 0,
                 "a reported c only when it stood again: it did not follow while ceded");
    H_CHECK(!reign_election_is_leader(a->election) && !reign_election_is_leader(b->election));
    return h_finish();
}
