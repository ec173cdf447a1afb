/*
 * it_create_connloss.c - a candidate's create whose outcome is unknown.
 *
 *     it_create_connloss queue-lost-reply | lock-lost-reply | queue-failed | lock-failed |
 *                        new-lost-reply | new-failed
 *
 * Linked with zk_fault.c, which sees every create and multi libreign sends.  For the first
 * create of a candidate node in this test's election (queue: .../n_<guid>_, lock: .../lock) it
 * injects a fault.  queue-* and lock-* join an election that exists (a first candidate made it and
 * left), so the candidate node is a create of its own; new-* join a new election, whose node, term
 * and candidate node are made by one multi, and the fault hits that multi:
 *
 *   *-lost-reply  the create is sent and applied by the server, but the reply is replaced by
 *                 ZCONNECTIONLOSS: the node exists, and the candidate does not know it.  The
 *                 candidate must adopt it - queue: find it by the guid in its name, lock:
 *                 confirm that its ephemeral owner is our session - and must not create a
 *                 second node (an orphan ahead of itself would block it forever, a duplicate
 *                 would stand twice).  It must lead with that very node.
 *   *-failed      the create never reaches the server and ZCONNECTIONLOSS is reported (from
 *                 another thread, as the C client's completion thread would): the candidate
 *                 must find nothing, create again, and stand with exactly one node.
 *
 * (new-failed: the election node is not there either, so the candidate sets it up the ordinary
 * way, then creates its node.)
 *
 * Afterwards a second candidate joins and the first resigns: the second must take over, which
 * it only can if no stray node of the first is left in front of it.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "zk_fault.h"

/* ---- what the fault may hit (zk_fault.c calls these on the loop thread) ------------------- */

#define MAX_CREATES 16

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char dir[256];     /* "/reign/election/NAME": only its candidate creates count */
static int lock_strategy; /* count ".../lock" rather than ".../n_" */
static int drop_reply;    /* lost-reply (1) or failed (0) */
static int fresh;         /* new-*: the election is new */
static int n_creates;     /* candidate creates sent */
static char create_path[MAX_CREATES][256]; /* the path each asked for */

static int is_candidate_create(const char *path)
{
    size_t n = strlen(dir);
    if (!n || strncmp(path, dir, n) != 0)
        return 0;
    return lock_strategy ? !strcmp(path + n, "/lock") : !strncmp(path + n, "/n_", 3);
}

/* Called with mu held. */
static void count_create(const char *path)
{
    if (n_creates < MAX_CREATES)
        snprintf(create_path[n_creates], sizeof(create_path[0]), "%s", path);
    n_creates++;
}

/* An existing election's candidate node is a create of its own. */
static int choose_create(const char *path)
{
    pthread_mutex_lock(&mu);
    int cand = is_candidate_create(path);
    if (cand)
        count_create(path);
    pthread_mutex_unlock(&mu);
    return cand && !fresh;
}

/* Only a new election's multi creates a candidate node (an existing one's fails). */
static int choose_multi(int count, const zoo_op_t *ops)
{
    int cand = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; fresh && i < count; i++)
        if (ops[i].type == ZOO_CREATE_OP && is_candidate_create(ops[i].create_op.path)) {
            count_create(ops[i].create_op.path);
            cand = i;
        }
    pthread_mutex_unlock(&mu);
    return cand;
}

/* ---- the test ------------------------------------------------------------------------------ */

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The candidate nodes (n_...) among the election's children. */
static int queue_nodes(zhandle_t *zh, char out[][H_NODE_MAX], int max)
{
    char all[64][H_NODE_MAX];
    int n = h_raw_children(zh, dir, all, 64);
    H_CHECKF(n >= 0, "listing %s: %s", dir, h_zerr_name(n));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!strncmp(all[i], "n_", 2) && k < max)
            memcpy(out[k++], all[i], H_NODE_MAX);
    return k;
}

static int64_t lock_owner(zhandle_t *zh)
{
    char path[300];
    struct Stat st;
    snprintf(path, sizeof(path), "%s/lock", dir);
    int rc = zoo_exists(zh, path, 0, &st);
    H_CHECKF(rc == ZOK, "%s: %s", path, h_zerr_name(rc));
    return st.ephemeralOwner;
}

typedef struct takeover {
    h_cand *from, *to;
} takeover;

static int taken_over(void *arg)
{
    takeover *t = arg;
    return h_pred_left(t->from) && h_is_leader(t->to);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    if (!strcmp(scenario, "queue-lost-reply")) {
        drop_reply = 1;
    } else if (!strcmp(scenario, "lock-lost-reply")) {
        drop_reply = lock_strategy = 1;
    } else if (!strcmp(scenario, "queue-failed")) {
    } else if (!strcmp(scenario, "lock-failed")) {
        lock_strategy = 1;
    } else if (!strcmp(scenario, "new-lost-reply")) {
        drop_reply = fresh = 1;
    } else if (!strcmp(scenario, "new-failed")) {
        fresh = 1;
    } else {
        fprintf(stderr, "usage: it_create_connloss queue-lost-reply|lock-lost-reply|"
                        "queue-failed|lock-failed|new-lost-reply|new-failed\n");
        return 2;
    }
    char test[96];
    snprintf(test, sizeof(test), "it_create_connloss_%s", scenario);
    h_init(test);

    char name[128];
    h_unique_name(name, sizeof(name), "connloss");
    pthread_mutex_lock(&mu);
    snprintf(dir, sizeof(dir), "/reign/election/%s", name);
    pthread_mutex_unlock(&mu);
    h_fault_setup(drop_reply ? H_FAULT_REPLY_LOST : H_FAULT_NEVER_SENT, choose_create,
                  choose_multi);

    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    eo.strategy = lock_strategy ? REIGN_STRATEGY_LOCK : REIGN_STRATEGY_QUEUE;
    const char *uri = h_uri("session_timeout_ms=4000");
    if (!fresh) {
        /* The election exists: a first candidate made it, and leaves. */
        h_cand *pre = h_cand_new("pre", uri, NULL, name, &eo);
        H_WAIT(h_pred_leader, pre, "the first candidate to lead");
        H_OK(reign_election_resign(pre->election));
        H_WAIT(h_pred_left, pre, "the first candidate to leave");
    }
    pthread_mutex_lock(&mu);
    n_creates = 0;
    pthread_mutex_unlock(&mu);
    h_fault_arm();
    h_cand *a = h_cand_new("a", uri, NULL, name, &eo);
    H_WAIT(h_pred_fault_injected, NULL, "the injected fault");
    H_WAIT(h_pred_leader, a, "the candidate to lead after the fault");

    zhandle_t *raw = h_raw_connect(h_hosts(), NULL);
    pthread_mutex_lock(&mu);
    int creates = n_creates;
    pthread_mutex_unlock(&mu);
    h_log("%d candidate create(s) sent", creates);
    if (lock_strategy) {
        int64_t owner = lock_owner(raw);
        H_CHECKF(owner == reign_client_session_id(a->client),
                 "the lock's owner 0x%llx is not the leader's session 0x%llx",
                 (unsigned long long)owner, (unsigned long long)reign_client_session_id(a->client));
        if (drop_reply)
            H_CHECKF(creates == 1, "%d creates of the lock: the applied one was not adopted",
                     creates);
        else
            H_CHECKF(creates == 2, "%d creates of the lock, want 2 (the failed one and a retry)",
                     creates);
    } else {
        char nodes[8][H_NODE_MAX];
        int n = queue_nodes(raw, nodes, 8);
        H_CHECKF(n == 1, "%d candidate nodes for one candidate (orphan or duplicate)", n);
        if (drop_reply) {
            H_CHECKF(creates == 1, "%d creates: the candidate created again instead of adopting",
                     creates);
            char applied[256];
            h_fault_applied(applied, sizeof(applied));
            H_CHECKF(!strcmp(nodes[0], basename_of(applied)),
                     "the candidate stands with %s, but the lost create made %s", nodes[0],
                     applied);
        } else {
            H_CHECKF(creates == 2, "%d creates, want 2 (the failed one and a retry)", creates);
            /* The retry asked for ".../n_<new guid>_": the node must carry that prefix. */
            const char *want = basename_of(create_path[1]);
            H_CHECKF(!strncmp(nodes[0], want, strlen(want)), "node %s is not the retry's %s*",
                     nodes[0], want);
        }
    }
    h_view v;
    h_query(a, name, &v);
    H_CHECK(v.err == 0 && v.has_leader && !strcmp(v.leader_id, "a"));
    H_CHECKF(v.n == 1, "%zu candidates in the snapshot, want 1", v.n);

    /* A second candidate, then a hand-over: nothing of the first may stand in its way. */
    h_cand *b = h_cand_new("b", uri, NULL, name, &eo);
    H_WAIT(h_pred_ready, b, "the second candidate to be ready");
    H_CHECK(h_is_leader(a) && !h_is_leader(b));
    if (!lock_strategy) {
        char nodes[8][H_NODE_MAX];
        int n = queue_nodes(raw, nodes, 8);
        H_CHECKF(n == 2, "%d candidate nodes for two candidates", n);
    }
    H_OK(reign_election_resign(a->election));
    takeover t = {a, b};
    H_WAIT(taken_over, &t, "the second candidate to take over");
    if (lock_strategy) {
        H_CHECK(lock_owner(raw) == reign_client_session_id(b->client));
    } else {
        char nodes[8][H_NODE_MAX];
        int n = queue_nodes(raw, nodes, 8);
        H_CHECKF(n == 1, "%d candidate nodes after the first resigned, want 1", n);
    }
    h_raw_close(raw);
    return h_finish();
}
