/*
 * it_group.c - group membership on a real ZooKeeper.
 *
 *     it_group burst | expiry | newest | deleted
 *
 *   burst    a watcher, then three clients that register 30 members at once, then rounds of
 *            bursts: half the members leave, others change their payload, new ones join, all
 *            without waiting.  After each burst the watcher's view must equal the truth (the
 *            registrations alive and their payloads), and its events must replay exactly:
 *            every member that left REMOVED once, every change seen (CHANGED with the final
 *            payload), every newcomer ADDED once, nothing added twice or removed unseen.  A
 *            one-shot reign_group_list() must agree.
 *   expiry   a member's session is expired by the server: it hears UNREGISTERED
 *            (session_lost), registers again by itself under a new node, and a watcher sees
 *            the old node REMOVED and the new one ADDED.  Then the watcher's own session is
 *            expired and a member joins meanwhile: the watcher re-reads by itself and
 *            reports it.
 *   newest   two registrations of one id: a watcher with newest_per_id shows only the newer;
 *            when the newer leaves, the older is ADDED back; without the option both show.
 *   deleted  an operator deletes a member's node: the member hears UNREGISTERED
 *            (node_deleted) and registers again after its retry delay; the group node itself
 *            deleted (when empty) is reported as GROUP_DELETED, and its return as new members.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expire.h"
#include "harness.h"

#define MAX_EV 4096
#define MAX_M  128

/* ---- a watcher that records everything ---------------------------------- */

typedef struct wev {
    reign_group_watch_event_type type;
    char node[H_NODE_MAX];
    char id[H_ID_MAX];
    char data[64];
} wev;

typedef struct watcher {
    reign_group_watch *w;
    wev ev[MAX_EV];
    size_t n;
    int ready;
    int group_deleted;
} watcher;

static void on_watch(reign_group_watch *w, const reign_group_watch_event *ev, void *ud)
{
    watcher *x = ud;
    H_CHECK(x->n < MAX_EV);
    wev *e = &x->ev[x->n++];
    memset(e, 0, sizeof(*e));
    e->type = ev->type;
    if (ev->member) {
        snprintf(e->node, sizeof(e->node), "%s", ev->member->node);
        snprintf(e->id, sizeof(e->id), "%s", ev->member->id);
        snprintf(e->data, sizeof(e->data), "%.*s", (int)ev->member->data_len,
                 (const char *)ev->member->data);
    }
    if (ev->type == REIGN_MEMBERS_READY)
        x->ready = 1;
    if (ev->type == REIGN_MEMBERS_GROUP_DELETED)
        x->group_deleted++;
    if (ev->type == REIGN_MEMBERS_ERROR)
        h_log("watch error: %s", ev->message ? ev->message : reign_strerror(ev->error));
}

static void watcher_start(watcher *x, h_cand *c, const char *group, int newest)
{
    memset(x, 0, sizeof(*x));
    reign_group_watch_options o = {
        .size = sizeof(o), .newest_per_id = newest, .cb = on_watch, .userdata = x};
    H_OK(reign_group_watch_start(&x->w, c->client, group, &o));
}

static int pred_ready(void *arg)
{
    return ((watcher *)arg)->ready;
}

/* ---- members ------------------------------------------------------------ */

typedef struct member {
    reign_group *g;
    h_cand *c;
    char id[H_ID_MAX];
    char data[64];
    char node[H_NODE_MAX]; /* the current node, once registered */
    int registered;
    int unregistered;
    reign_group_loss last_loss;
} member;

static member members[MAX_M];
static size_t n_members;

static void on_member(reign_group *g, const reign_group_event *ev, void *ud)
{
    member *m = ud;
    switch (ev->type) {
    case REIGN_GROUP_REGISTERED:
        snprintf(m->node, sizeof(m->node), "%s", ev->node);
        m->registered++;
        H_CHECK(reign_group_is_registered(g));
        H_CHECK(strcmp(reign_group_node(g), ev->node) == 0);
        break;
    case REIGN_GROUP_UNREGISTERED:
        m->unregistered++;
        m->last_loss = ev->reason;
        m->node[0] = '\0';
        break;
    case REIGN_GROUP_ERROR:
        h_fail(__FILE__, __LINE__, "member %s: %s", m->id, ev->message ? ev->message : "error");
    }
}

static member *member_new(h_cand *c, const char *group, const char *id, const char *data)
{
    H_CHECK(n_members < MAX_M);
    member *m = &members[n_members++];
    memset(m, 0, sizeof(*m));
    m->c = c;
    snprintf(m->id, sizeof(m->id), "%s", id);
    snprintf(m->data, sizeof(m->data), "%s", data);
    reign_group_options o = {.size = sizeof(o),
                             .id = m->id,
                             .data = m->data,
                             .data_len = strlen(m->data),
                             .retry_delay_ms = 100,
                             .cb = on_member,
                             .userdata = m};
    H_OK(reign_group_register(&m->g, c->client, group, &o));
    return m;
}

static void member_leave(member *m)
{
    m->g = reign_group_free(m->g);
    m->node[0] = '\0';
}

static void member_set(member *m, const char *data)
{
    snprintf(m->data, sizeof(m->data), "%s", data);
    H_OK(reign_group_set_data(m->g, m->data, strlen(m->data)));
}

static int pred_all_registered(void *unused)
{
    for (size_t i = 0; i < n_members; i++)
        if (members[i].g && !members[i].node[0])
            return 0;
    return 1;
}

/* ---- the truth and the view ---------------------------------------------- */

/* The watcher's view equals the live registrations and their payloads. */
static int view_is_truth(watcher *x)
{
    const reign_member *v;
    size_t n;
    reign_group_watch_members(x->w, &v, &n);
    size_t live = 0;
    for (size_t i = 0; i < n_members; i++) {
        member *m = &members[i];
        if (!m->g)
            continue;
        if (!m->node[0])
            return 0;
        live++;
        int found = 0;
        for (size_t j = 0; j < n && !found; j++)
            found = !strcmp(v[j].node, m->node) && !strcmp(v[j].id, m->id) &&
                    v[j].data_len == strlen(m->data) && !memcmp(v[j].data, m->data, v[j].data_len);
        if (!found)
            return 0;
    }
    return live == n;
}

static int pred_view_is_truth(void *arg)
{
    return view_is_truth(arg);
}

/*
 * Replays the watcher's events onto an empty set and checks each step: ADDED only for a node
 * not present, REMOVED and CHANGED only for one present.  The result must be the view.
 */
static void check_replay(watcher *x)
{
    static char present[MAX_EV][H_NODE_MAX];
    static char pdata[MAX_EV][64];
    size_t np = 0;
    for (size_t i = 0; i < x->n; i++) {
        const wev *e = &x->ev[i];
        if (e->type != REIGN_MEMBER_ADDED && e->type != REIGN_MEMBER_REMOVED &&
            e->type != REIGN_MEMBER_CHANGED)
            continue;
        size_t k = np;
        for (size_t j = 0; j < np; j++)
            if (!strcmp(present[j], e->node))
                k = j;
        if (e->type == REIGN_MEMBER_ADDED) {
            H_CHECKF(k == np, "event %zu: %s added twice", i, e->node);
            snprintf(present[np], H_NODE_MAX, "%s", e->node);
            snprintf(pdata[np++], 64, "%s", e->data);
        } else {
            H_CHECKF(k < np, "event %zu: %s %s but never added", i, e->node,
                     reign_group_watch_event_name(e->type));
            if (e->type == REIGN_MEMBER_CHANGED) {
                snprintf(pdata[k], 64, "%s", e->data);
            } else {
                memmove(present[k], present[k + 1], (np - k - 1) * H_NODE_MAX);
                memmove(pdata[k], pdata[k + 1], (np - k - 1) * 64);
                np--;
            }
        }
    }
    const reign_member *v;
    size_t n;
    reign_group_watch_members(x->w, &v, &n);
    H_CHECKF(np == n, "replayed %zu members, view has %zu", np, n);
    for (size_t j = 0; j < n; j++) {
        int ok = 0;
        for (size_t k = 0; k < np && !ok; k++)
            ok = !strcmp(present[k], v[j].node) && strlen(pdata[k]) == v[j].data_len &&
                 !memcmp(pdata[k], v[j].data, v[j].data_len);
        H_CHECKF(ok, "view member %s not as replayed", v[j].node);
    }
}

static size_t count_events(const watcher *x, reign_group_watch_event_type t, const char *node)
{
    size_t n = 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->ev[i].type == t && (!node || !strcmp(x->ev[i].node, node)))
            n++;
    return n;
}

/* ---- reign_group_list ---------------------------------------------------- */

typedef struct listing {
    int done;
    int err;
    size_t n;
    char nodes[MAX_M][H_NODE_MAX];
} listing;

static void on_list(reign_client *c, int err, const reign_member *m, size_t n, void *ud)
{
    listing *l = ud;
    l->done = 1;
    l->err = err;
    l->n = n;
    for (size_t i = 0; i < n && i < MAX_M; i++) {
        snprintf(l->nodes[i], H_NODE_MAX, "%s", m[i].node);
        if (i)
            H_CHECKF(m[i - 1].seq < m[i].seq, "listing not in registration order");
    }
}

static int pred_listed(void *arg)
{
    return ((listing *)arg)->done;
}

static void check_listing(h_cand *c, const char *group, watcher *x)
{
    static listing l;
    memset(&l, 0, sizeof(l));
    H_OK(reign_group_list(c->client, group, on_list, &l));
    H_WAIT(pred_listed, &l, "the listing");
    H_OK(l.err);
    const reign_member *v;
    size_t n;
    reign_group_watch_members(x->w, &v, &n);
    H_CHECKF(l.n == n, "listing has %zu members, the watch %zu", l.n, n);
    for (size_t i = 0; i < n; i++)
        H_CHECKF(!strcmp(l.nodes[i], v[i].node), "listing and watch differ at %zu", i);
}

/* ---- scenarios ----------------------------------------------------------- */

static void burst(const char *group)
{
    h_cand *obs = h_cand_new("observer", NULL, NULL, NULL, NULL);
    h_cand *reg[3];
    for (int i = 0; i < 3; i++) {
        char id[16];
        snprintf(id, sizeof(id), "client%d", i);
        reg[i] = h_cand_new(id, NULL, NULL, NULL, NULL);
    }
    static watcher x;
    watcher_start(&x, obs, group, 0);
    H_WAIT(pred_ready, &x, "the first (empty) view");

    char id[32], data[64];
    for (int i = 0; i < 30; i++) {
        snprintf(id, sizeof(id), "ts%02d", i);
        snprintf(data, sizeof(data), "10.0.0.%d:2200", i);
        member_new(reg[i % 3], group, id, data);
    }
    H_WAIT(pred_all_registered, NULL, "30 registrations");
    H_WAIT(pred_view_is_truth, &x, "the watcher to see 30 members");
    check_replay(&x);
    H_CHECK(count_events(&x, REIGN_MEMBER_ADDED, NULL) == 30);

    int next = 30;
    for (int round = 1; round <= 4; round++) {
        size_t before = x.n;
        /* all at once, without turning the loops in between */
        size_t live = 0, left = 0, changed = 0, joined = 0;
        for (size_t i = 0; i < n_members; i++) {
            member *m = &members[i];
            if (!m->g)
                continue;
            size_t k = live++;
            if (k % 3 == 0) {
                member_leave(m);
                left++;
            } else if (k % 3 == 1) {
                snprintf(data, sizeof(data), "10.0.1.%zu:%d", i, round);
                member_set(m, data);
                /* twice: the watcher may fold them, but must end on the last */
                snprintf(data, sizeof(data), "10.0.2.%zu:%d", i, round);
                member_set(m, data);
                changed++;
            }
        }
        for (int k = 0; k < 8; k++, joined++, next++) {
            snprintf(id, sizeof(id), "ts%02d", next);
            snprintf(data, sizeof(data), "10.0.0.%d:2200", next);
            member_new(reg[next % 3], group, id, data);
        }
        H_WAIT(pred_all_registered, NULL, "the newcomers' registrations");
        H_WAIT(pred_view_is_truth, &x, "the watcher to catch up with the burst");
        check_replay(&x);
        size_t removed = 0, added = 0;
        for (size_t i = before; i < x.n; i++) {
            removed += x.ev[i].type == REIGN_MEMBER_REMOVED;
            added += x.ev[i].type == REIGN_MEMBER_ADDED;
        }
        H_CHECKF(removed == left && added == joined,
                 "round %d: %zu left and %zu joined, the watcher saw %zu removed and %zu added",
                 round, left, joined, removed, added);
        h_log("round %d: %zu left, %zu changed, %zu joined; %zu events", round, left, changed,
              joined, x.n - before);
        check_listing(obs, group, &x);
    }
    /* every member whose payload changed was reported CHANGED at least once */
    for (size_t i = 0; i < n_members; i++)
        if (members[i].g && strstr(members[i].data, "10.0.2."))
            H_CHECKF(count_events(&x, REIGN_MEMBER_CHANGED, members[i].node) > 0,
                     "no CHANGED for %s", members[i].id);
    for (size_t i = 0; i < n_members; i++)
        members[i].g = reign_group_free(members[i].g);
    H_WAIT(pred_view_is_truth, &x, "the watcher to see everyone gone");
    check_replay(&x);
    x.w = reign_group_watch_free(x.w);
}

static int pred_reregistered(void *arg)
{
    member *m = arg;
    return m->registered >= 2 && m->node[0];
}

static int pred_watch_has(void *arg)
{
    void **a = arg;
    watcher *x = a[0];
    const char *node = a[1];
    const reign_member *v;
    size_t n;
    reign_group_watch_members(x->w, &v, &n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].node, node))
            return 1;
    return 0;
}

/* An observer watching `group` and a registrar with one member the observer has seen. */
static member *one_member(const char *group, watcher *x, h_cand **obs, h_cand **rc)
{
    *obs = h_cand_new("observer", NULL, NULL, NULL, NULL);
    *rc = h_cand_new("registrar", NULL, NULL, NULL, NULL);
    watcher_start(x, *obs, group, 0);
    member *m = member_new(*rc, group, "ts-a", "10.0.0.1:2200");
    H_WAIT(pred_all_registered, NULL, "registration");
    H_WAIT(pred_view_is_truth, x, "the watcher to see it");
    return m;
}

static void expiry(const char *group)
{
    static watcher x;
    h_cand *obs, *rc;
    member *m = one_member(group, &x, &obs, &rc);
    char old[H_NODE_MAX];
    snprintf(old, sizeof(old), "%s", m->node);

    h_expire_session(rc->client);
    H_WAIT(pred_reregistered, m, "registering again after the expiry");
    H_CHECK(m->unregistered == 1 && m->last_loss == REIGN_GROUP_SESSION_LOST);
    H_CHECKF(strcmp(old, m->node) != 0, "re-registered under the old node %s", old);
    H_WAIT(pred_view_is_truth, &x, "the watcher to see the new registration only");
    H_CHECK(count_events(&x, REIGN_MEMBER_REMOVED, old) == 1);
    H_CHECK(count_events(&x, REIGN_MEMBER_ADDED, m->node) == 1);
    check_replay(&x);
    h_log("re-registered %s as %s after the expiry", old, m->node);

    /* the watcher's own session expires; a member joins meanwhile */
    size_t ready_before = count_events(&x, REIGN_MEMBERS_READY, NULL);
    h_expire_session(obs->client);
    member *m2 = member_new(rc, group, "ts-b", "10.0.0.2:2200");
    H_WAIT(pred_all_registered, NULL, "the second registration");
    void *arg[2] = {&x, m2->node};
    H_WAIT(pred_watch_has, arg, "the watcher to see the member after its own expiry");
    H_WAIT(pred_view_is_truth, &x, "the watcher's view to be exact");
    H_CHECK(count_events(&x, REIGN_MEMBERS_READY, NULL) == ready_before);
    check_replay(&x);
    m->g = reign_group_free(m->g);
    m2->g = reign_group_free(m2->g);
    x.w = reign_group_watch_free(x.w);
}

static int pred_view_n(void *arg)
{
    void **a = arg;
    const reign_member *v;
    size_t n;
    reign_group_watch_members(((watcher *)a[0])->w, &v, &n);
    return n == *(size_t *)a[1];
}

static void newest(const char *group)
{
    h_cand *obs = h_cand_new("observer", NULL, NULL, NULL, NULL);
    h_cand *rc = h_cand_new("registrar", NULL, NULL, NULL, NULL);
    static watcher all, newest_only;
    watcher_start(&all, obs, group, 0);
    watcher_start(&newest_only, obs, group, 1);
    member *a = member_new(rc, group, "10.0.0.1:2200", "old");
    H_WAIT(pred_all_registered, NULL, "the first registration");
    member *b = member_new(rc, group, "10.0.0.1:2200", "new");
    member *c = member_new(rc, group, "10.0.0.2:2200", "other");
    H_WAIT(pred_all_registered, NULL, "the others");
    size_t two = 2, three = 3;
    void *a2[2] = {&newest_only, &two}, *a3[2] = {&all, &three};
    H_WAIT(pred_view_n, a3, "all three registrations");
    H_WAIT(pred_view_n, a2, "the newest per id");
    const reign_member *v;
    size_t n;
    reign_group_watch_members(newest_only.w, &v, &n);
    H_CHECK(!strcmp(v[0].node, b->node) && !strcmp(v[1].node, c->node));
    H_CHECK(count_events(&newest_only, REIGN_MEMBER_ADDED, a->node) <= 1);
    /* the newer leaves: the older is the newest again */
    member_leave(b);
    size_t n_a_added = count_events(&newest_only, REIGN_MEMBER_ADDED, a->node);
    void *has_a[2] = {&newest_only, a->node};
    H_WAIT(pred_watch_has, has_a, "the older registration back in view");
    H_CHECK(count_events(&newest_only, REIGN_MEMBER_ADDED, a->node) == n_a_added + 1);
    check_replay(&newest_only);
    check_replay(&all);
    a->g = reign_group_free(a->g);
    c->g = reign_group_free(c->g);
    all.w = reign_group_watch_free(all.w);
    newest_only.w = reign_group_watch_free(newest_only.w);
}

static int pred_group_deleted(void *arg)
{
    return ((watcher *)arg)->group_deleted > 0;
}

static void deleted(const char *group)
{
    static watcher x;
    h_cand *obs, *rc;
    member *m = one_member(group, &x, &obs, &rc);
    char old[H_NODE_MAX], path[512];
    snprintf(old, sizeof(old), "%s", m->node);
    zhandle_t *zh = h_raw_connect(h_hosts(), NULL);
    snprintf(path, sizeof(path), "/reign/group/%s/%s", group, old);
    H_CHECK(zoo_delete(zh, path, -1) == ZOK);
    H_WAIT(pred_reregistered, m, "registering again after the node was deleted");
    H_CHECK(m->unregistered == 1 && m->last_loss == REIGN_GROUP_NODE_DELETED);
    H_WAIT(pred_view_is_truth, &x, "the watcher to see the new node only");
    H_CHECK(count_events(&x, REIGN_MEMBER_REMOVED, old) == 1);

    /* the group itself, emptied and deleted, then made again by a newcomer */
    member_leave(m);
    H_WAIT(pred_view_is_truth, &x, "the watcher to see the group empty");
    snprintf(path, sizeof(path), "/reign/group/%s", group);
    H_CHECK(zoo_delete(zh, path, -1) == ZOK);
    H_WAIT(pred_group_deleted, &x, "GROUP_DELETED");
    h_raw_close(zh);
    member *m2 = member_new(rc, group, "ts-b", "10.0.0.2:2200");
    H_WAIT(pred_all_registered, NULL, "registration in the new group");
    H_WAIT(pred_view_is_truth, &x, "the watcher to see the new group's member");
    check_replay(&x);
    m2->g = reign_group_free(m2->g);
    x.w = reign_group_watch_free(x.w);
}

int main(int argc, char **argv)
{
    const char *scenario = argc > 1 ? argv[1] : "";
    char name[64];
    snprintf(name, sizeof(name), "it_group_%s", scenario);
    h_init(name);
    char group[128];
    h_unique_name(group, sizeof(group), "it-group");
    if (!strcmp(scenario, "burst"))
        burst(group);
    else if (!strcmp(scenario, "expiry"))
        expiry(group);
    else if (!strcmp(scenario, "newest"))
        newest(group);
    else if (!strcmp(scenario, "deleted"))
        deleted(group);
    else {
        fprintf(stderr, "usage: it_group burst|expiry|newest|deleted\n");
        return 2;
    }
    return h_finish();
}
