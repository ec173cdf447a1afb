/*
 * contract_group.c - what <reign/group.h> promises, on every store.
 *
 * One program, run once per store (contract_group_zk, _sqlite, _postgres, _mariadb: see
 * tests/contract/tests.cmake).  A store that lacked groups would prove the refusal the header
 * documents (REIGN_ENOTSUP, never a callback) and report Skipped.  The cases:
 *
 *   members   a watch started before anyone registers reports READY with no member; two
 *             members register with payloads (REGISTERED, is_registered); the watch reports
 *             each ADDED once, with its id and payload, in registration order, and its view
 *             and a one-shot list say the same; a new payload is reported as CHANGED with the
 *             old one beside it; a member that leaves is REMOVED, and the list follows
 *   closed    a member whose client is freed without leaving is REMOVED (its session goes
 *             with the client)
 *   same id   a member restarted with the same id while the old registration counts: both
 *             are listed, in registration order; a newest_per_id watch keeps the newest (the
 *             old one REMOVED when the new one is ADDED, in one change)
 *   refusals  illegal group names (REIGN_ENAME), ids (REIGN_EINVAL) and payloads
 *             (REIGN_E2BIG) are refused and never call back; listing a group that does not
 *             exist answers REIGN_ENOENT
 *
 * ZooKeeper's own (bursts, session expiry, deleted nodes) stay in tests/integration/it_group.c;
 * the SQL stores' faults (a killed or stopped member, the database restarted) are
 * tests/e2e_sql/test_group_faults.py.  Every wait is for an event, bounded by H_WAIT_MS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static int calls_back;

static void count_register(reign_group *g, const reign_group_event *ev, void *ud)
{
    (void)g;
    (void)ev;
    (void)ud;
    calls_back++;
}

static void count_watch(reign_group_watch *w, const reign_group_watch_event *ev, void *ud)
{
    (void)w;
    (void)ev;
    (void)ud;
    calls_back++;
}

static void count_list(reign_client *c, int err, const reign_member *m, size_t n, void *ud)
{
    (void)c;
    (void)err;
    (void)m;
    (void)n;
    (void)ud;
    calls_back++;
}

/* On a store without groups: every entry point says REIGN_ENOTSUP and calls nothing back. */
static void refused(void)
{
    h_cand *c = h_cand_new("member", h_uri(NULL), NULL, NULL, NULL);
    reign_group_options o = {.size = sizeof(o), .id = "m1", .cb = count_register};
    reign_group *g = NULL;
    H_RC(reign_group_register(&g, c->client, "group", &o), REIGN_ENOTSUP);
    H_CHECK(g == NULL);
    reign_group_watch_options wo = {.size = sizeof(wo), .cb = count_watch};
    reign_group_watch *w = NULL;
    H_RC(reign_group_watch_start(&w, c->client, "group", &wo), REIGN_ENOTSUP);
    H_CHECK(w == NULL);
    H_RC(reign_group_list(c->client, "group", count_list, NULL), REIGN_ENOTSUP);
    H_CHECK(calls_back == 0);
    h_cand_close(c);
}

/* ---- a watch that records the members' events --------------------------------------------- */

#define MAX_EV 64

typedef struct gev {
    reign_group_watch_event_type type;
    char id[H_ID_MAX];
    char data[H_DATA_MAX];
    char old_data[H_DATA_MAX];
} gev;

typedef struct gwatch {
    reign_group_watch *w;
    gev ev[MAX_EV];
    size_t n;
} gwatch;

static void text_of(char out[H_DATA_MAX], const reign_member *m)
{
    snprintf(out, H_DATA_MAX, "%.*s", m ? (int)m->data_len : 0, m ? (const char *)m->data : "");
}

static void on_members(reign_group_watch *w, const reign_group_watch_event *ev, void *ud)
{
    gwatch *x = ud;
    (void)w;
    H_CHECK(x->n < MAX_EV);
    gev *e = &x->ev[x->n++];
    memset(e, 0, sizeof(*e));
    e->type = ev->type;
    if (ev->member)
        snprintf(e->id, sizeof(e->id), "%s", ev->member->id);
    text_of(e->data, ev->member);
    text_of(e->old_data, ev->old);
    h_log("members: %s %s %s", reign_group_watch_event_name(ev->type), e->id, e->data);
}

typedef struct gwait {
    gwatch *x;
    size_t n;
} gwait;

static int pred_gevents(void *arg)
{
    gwait *a = arg;
    return a->x->n >= a->n;
}

/* Event number n (1-based), waited for: of `type`, for member `id` with payload `data` (both
 * NULL for READY). */
static const gev *expect(gwatch *x, size_t n, reign_group_watch_event_type type, const char *id,
                         const char *data)
{
    gwait a = {x, n};
    H_WAIT(pred_gevents, &a, "a members event");
    const gev *e = &x->ev[n - 1];
    H_CHECKF(e->type == type && (!id || !strcmp(e->id, id)) && (!data || !strcmp(e->data, data)),
             "members event %zu is %s %s '%s', want %s %s '%s'", n,
             reign_group_watch_event_name(e->type), e->id, e->data,
             reign_group_watch_event_name(type), id ? id : "-", data ? data : "-");
    return e;
}

/* Starts x watching `group` on o's client (every registration, or the newest per id) and
 * waits for its READY. */
static void watch(gwatch *x, h_cand *o, const char *group, int newest_per_id)
{
    reign_group_watch_options wo = {
        .size = sizeof(wo), .newest_per_id = newest_per_id, .cb = on_members, .userdata = x};
    H_OK(reign_group_watch_start(&x->w, o->client, group, &wo));
    expect(x, 1, REIGN_MEMBERS_READY, NULL, NULL);
}

typedef struct reg {
    reign_group *g;
    int registered;
} reg;

static void on_registered(reign_group *g, const reign_group_event *ev, void *ud)
{
    reg *r = ud;
    (void)g;
    H_CHECKF(ev->type == REIGN_GROUP_REGISTERED, "%s: group event %d", reign_group_id(g),
             (int)ev->type);
    r->registered++;
}

static int pred_registered(void *arg)
{
    return ((reg *)arg)->registered > 0;
}

static void join(reg *r, h_cand *c, const char *group, const char *id, const char *data)
{
    reign_group_options o = {.size = sizeof(o),
                             .id = id,
                             .data = data,
                             .data_len = strlen(data),
                             .cb = on_registered,
                             .userdata = r};
    H_OK(reign_group_register(&r->g, c->client, group, &o));
    H_WAIT(pred_registered, r, "REGISTERED");
    H_CHECK(reign_group_is_registered(r->g));
}

/* ---- one-shot listing --------------------------------------------------------------------- */

typedef struct listing {
    int done, err;
    char ids[512];
} listing;

static void on_list(reign_client *c, int err, const reign_member *m, size_t n, void *ud)
{
    listing *l = ud;
    (void)c;
    l->done = 1;
    l->err = err;
    for (size_t i = 0; i < n; i++)
        snprintf(l->ids + strlen(l->ids), sizeof(l->ids) - strlen(l->ids), "%s%s=%.*s",
                 i ? " " : "", m[i].id, (int)m[i].data_len, (const char *)m[i].data);
}

static int pred_listed(void *arg)
{
    return ((listing *)arg)->done;
}

/* "id=payload ..." as reign_group_list() answers, or its error. */
static listing list(h_cand *c, const char *group)
{
    listing l;
    memset(&l, 0, sizeof(l));
    H_OK(reign_group_list(c->client, group, on_list, &l));
    H_WAIT(pred_listed, &l, "a listing");
    return l;
}

/* ---- the cases ---------------------------------------------------------------------------- */

static void case_members(void)
{
    h_log("---- members");
    char group[128];
    h_unique_name(group, sizeof(group), "group");
    h_cand *a = h_cand_new("a", h_uri(NULL), NULL, NULL, NULL);
    h_cand *b = h_cand_new("b", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", h_uri(NULL), NULL, NULL, NULL);
    static gwatch x;
    watch(&x, o, group, 0);

    reg ra = {0}, rb = {0};
    join(&ra, a, group, "ts-a", "10.0.0.1:2200");
    expect(&x, 2, REIGN_MEMBER_ADDED, "ts-a", "10.0.0.1:2200");
    join(&rb, b, group, "ts-b", "10.0.0.2:2200");
    expect(&x, 3, REIGN_MEMBER_ADDED, "ts-b", "10.0.0.2:2200");
    const reign_member *m;
    size_t n;
    reign_group_watch_members(x.w, &m, &n);
    H_CHECK(n == 2 && !strcmp(m[0].id, "ts-a") && !strcmp(m[1].id, "ts-b"));
    H_CHECK(m[0].seq < m[1].seq);
    listing l = list(o, group);
    H_CHECKF(l.err == 0 && !strcmp(l.ids, "ts-a=10.0.0.1:2200 ts-b=10.0.0.2:2200"),
             "listed '%s' (%s)", l.ids, reign_err_name(l.err));

    H_OK(reign_group_set_data(ra.g, "10.0.0.9:2200", 13));
    const gev *e = expect(&x, 4, REIGN_MEMBER_CHANGED, "ts-a", "10.0.0.9:2200");
    H_CHECKF(!strcmp(e->old_data, "10.0.0.1:2200"), "CHANGED's old payload is '%s'", e->old_data);

    rb.g = reign_group_free(rb.g);
    expect(&x, 5, REIGN_MEMBER_REMOVED, "ts-b", NULL);
    l = list(o, group);
    H_CHECKF(l.err == 0 && !strcmp(l.ids, "ts-a=10.0.0.9:2200"), "listed '%s'", l.ids);
    H_CHECK(x.n == 5);
    ra.g = reign_group_free(ra.g);
    x.w = reign_group_watch_free(x.w);
    h_cand_close(o);
    h_cand_close(b);
    h_cand_close(a);
}

static void case_closed(void)
{
    h_log("---- closed");
    char group[128];
    h_unique_name(group, sizeof(group), "group");
    h_cand *a = h_cand_new("a", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", h_uri(NULL), NULL, NULL, NULL);
    static gwatch x;
    watch(&x, o, group, 0);
    reg ra = {0};
    join(&ra, a, group, "ts-a", "10.0.0.1:2200");
    expect(&x, 2, REIGN_MEMBER_ADDED, "ts-a", "10.0.0.1:2200");
    h_cand_close(a); /* frees the group with the client: no reign_group_free() */
    expect(&x, 3, REIGN_MEMBER_REMOVED, "ts-a", "10.0.0.1:2200");
    listing l = list(o, group);
    H_CHECKF(l.err == 0 && !strcmp(l.ids, ""), "listed '%s' (%s)", l.ids, reign_err_name(l.err));
    x.w = reign_group_watch_free(x.w);
    h_cand_close(o);
}

static void case_same_id(void)
{
    h_log("---- same id");
    char group[128];
    h_unique_name(group, sizeof(group), "group");
    h_cand *old = h_cand_new("old", h_uri(NULL), NULL, NULL, NULL);
    h_cand *restarted = h_cand_new("restarted", h_uri(NULL), NULL, NULL, NULL);
    h_cand *o = h_cand_new("watcher", h_uri(NULL), NULL, NULL, NULL);
    static gwatch all, newest;
    watch(&all, o, group, 0);
    watch(&newest, o, group, 1);

    reg r1 = {0}, r2 = {0};
    join(&r1, old, group, "ts-1", "old");
    expect(&all, 2, REIGN_MEMBER_ADDED, "ts-1", "old");
    expect(&newest, 2, REIGN_MEMBER_ADDED, "ts-1", "old");
    join(&r2, restarted, group, "ts-1", "new");
    expect(&all, 3, REIGN_MEMBER_ADDED, "ts-1", "new");
    expect(&newest, 3, REIGN_MEMBER_REMOVED, "ts-1", "old");
    expect(&newest, 4, REIGN_MEMBER_ADDED, "ts-1", "new");
    listing l = list(o, group);
    H_CHECKF(l.err == 0 && !strcmp(l.ids, "ts-1=old ts-1=new"), "listed '%s'", l.ids);
    const reign_member *m;
    size_t n;
    reign_group_watch_members(newest.w, &m, &n);
    H_CHECK(n == 1 && m[0].data_len == 3 && !memcmp(m[0].data, "new", 3));

    /* The old one goes at last: the newest view does not change. */
    r1.g = reign_group_free(r1.g);
    expect(&all, 4, REIGN_MEMBER_REMOVED, "ts-1", "old");
    l = list(o, group);
    H_CHECKF(l.err == 0 && !strcmp(l.ids, "ts-1=new"), "listed '%s'", l.ids);
    H_CHECKF(newest.n == 4, "the newest_per_id watch reported %zu events", newest.n);
    r2.g = reign_group_free(r2.g);
    all.w = reign_group_watch_free(all.w);
    newest.w = reign_group_watch_free(newest.w);
    h_cand_close(o);
    h_cand_close(restarted);
    h_cand_close(old);
}

static void case_refusals(void)
{
    h_log("---- refusals");
    h_cand *c = h_cand_new("member", h_uri(NULL), NULL, NULL, NULL);
    static char big[REIGN_MEMBER_DATA_MAX + 1];
    reign_group_options o = {.size = sizeof(o), .id = "m1", .cb = count_register};
    reign_group *g = NULL;
    static const char *const bad_names[] = {"", ".", "..", "a/b", "a b"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
        H_RC(reign_group_register(&g, c->client, bad_names[i], &o), REIGN_ENAME);
    o.id = "";
    H_RC(reign_group_register(&g, c->client, "ok", &o), REIGN_EINVAL);
    o.id = "a\nb";
    H_RC(reign_group_register(&g, c->client, "ok", &o), REIGN_EINVAL);
    o.id = "m1";
    o.data = big;
    o.data_len = sizeof(big);
    H_RC(reign_group_register(&g, c->client, "ok", &o), REIGN_E2BIG);
    H_CHECK(g == NULL);

    char nobody[128];
    h_unique_name(nobody, sizeof(nobody), "nobody");
    listing l = list(c, nobody);
    H_CHECKF(l.err == REIGN_ENOENT, "listing a group that does not exist: %s",
             reign_err_name(l.err));
    H_CHECKF(calls_back == 0, "a refused call called back");
    h_cand_close(c);
}

int main(void)
{
    h_contract_init("contract_group", refused);
    case_members();
    case_closed();
    case_same_id();
    case_refusals();
    return h_finish();
}
