/*
 * sql_groups.c - the group_foreign scenario of test_sql_recipes: rows of the members table
 * that reign could not have written (src/sql/members.h) are no members, on every SQL store.
 *
 * A member stands in a group; rows are then written behind reign's back into the members
 * table, in that member's live session (a row whose session is gone is no member anyway):
 * an empty member id, a negative seq, a payload larger than reign writes.  A watch and a
 * one-shot listing show exactly the real member; a second member's registration and its leave
 * reach the watch as ADDED and REMOVED; the watch warns once, naming the table and the group
 * and never a row's payload; the foreign rows are all still there at the end, and the first
 * member still registered.  ZooKeeper's watch ignores a child that is no member's node the
 * same way (src/recipes/group/group_watch_zk.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "recipes.h"
#include "sql.h"

/* The payload of a foreign row: it must never show in a log line. */
#define FORGED "forged-payload-7Qx"

/* What a watch saw, one word pair per event: "added m1 ready added m2 ...". */
typedef struct seen {
    char events[512];
    size_t warnings;   /* WARN lines of the watcher's client that speak of the foreign rows */
    size_t leaks;      /* log lines of any client showing a foreign row's payload */
    char warning[512]; /* the first such warning */
} seen;

static seen saw;

static void on_event(reign_group_watch *w, const reign_group_watch_event *ev, void *ud)
{
    seen *s = ud;
    (void)w;
    size_t n = strlen(s->events);
    snprintf(s->events + n, sizeof(s->events) - n, "%s%s%s%s", n ? " " : "",
             reign_group_watch_event_name(ev->type), ev->member ? " " : "",
             ev->member ? ev->member->id : "");
}

/* Every client's log: never a foreign row's payload. */
static void on_any_log(h_cand *c, reign_log_level level, const char *msg)
{
    (void)c;
    (void)level;
    if (strstr(msg, FORGED))
        saw.leaks++;
}

/* The watcher's: the warning too. */
static void on_log(h_cand *c, reign_log_level level, const char *msg)
{
    on_any_log(c, level, msg);
    if (level == REIGN_LOG_WARN && strstr(msg, "reign did not write") && saw.warnings++ == 0)
        snprintf(saw.warning, sizeof(saw.warning), "%s", msg);
}

static int pred_events(void *arg)
{
    return !strcmp(saw.events, (const char *)arg);
}

static void wait_events(const char *want)
{
    if (!h_run_until(pred_events, (void *)want, H_WAIT_MS))
        h_fail(__FILE__, __LINE__, "the watch saw \"%s\", want \"%s\"", saw.events, want);
}

/* A member hears REGISTERED and nothing else: a foreign row beside it never unregisters it. */
static void on_registered(reign_group *g, const reign_group_event *ev, void *ud)
{
    H_CHECKF(ev->type == REIGN_GROUP_REGISTERED, "%s: group event %d", reign_group_id(g),
             (int)ev->type);
    ++*(int *)ud;
}

static int pred_flag(void *arg)
{
    return *(int *)arg != 0;
}

/* Member `id` of `group` on c's client, registered. */
static reign_group *member(h_cand *c, const char *group, const char *id, int *done)
{
    reign_group_options o = {
        .size = sizeof(o), .id = id, .data = id, .data_len = strlen(id), .cb = on_registered};
    o.userdata = done;
    reign_group *g = NULL;
    H_OK(reign_group_register(&g, c->client, group, &o));
    H_WAIT(pred_flag, done, "REGISTERED");
    return g;
}

/* The ids a one-shot listing gives, space-separated. */
typedef struct listed {
    int done, err;
    char ids[256];
} listed;

static void on_list(reign_client *c, int err, const reign_member *m, size_t n, void *ud)
{
    listed *l = ud;
    (void)c;
    l->done = 1;
    l->err = err;
    for (size_t i = 0; i < n; i++)
        snprintf(l->ids + strlen(l->ids), sizeof(l->ids) - strlen(l->ids), "%s%s", i ? " " : "",
                 m[i].id);
}

static void expect_listed(h_cand *c, const char *group, const char *want)
{
    listed l = {0};
    H_OK(reign_group_list(c->client, group, on_list, &l));
    H_WAIT(pred_flag, &l.done, "the listing");
    H_OK(l.err);
    H_CHECKF(!strcmp(l.ids, want), "the listing gave \"%s\", want \"%s\"", l.ids, want);
}

/* The rows reign did not write, by their guids. */
static size_t forged_rows(const char *group)
{
    reign__sqlv arg = REIGN__SQLV_S(group);
    reign__sql_rows rows = {0};
    raw_query("counting the forged rows",
              "SELECT guid FROM {M} WHERE group_name = {1} AND guid LIKE 'forged-%'", &arg, 1,
              &rows);
    size_t n = rows.n_rows;
    reign__sql_rows_free(&rows);
    return n;
}

void scenario_group_foreign(void)
{
    char group[64];
    h_unique_name(group, sizeof(group), "gf");
    h_cand *holder = h_cand_new("holder", NULL, NULL, NULL, NULL);
    h_cand_on_log(holder, on_any_log); /* its listings warn too */
    int m1_done = 0;
    reign_group *m1 = member(holder, group, "m1", &m1_done);

    /* The holder's session, in which the forged rows live as long as it does. */
    reign__sqlv args[3] = {REIGN__SQLV_S(group)};
    reign__sql_rows rows = {0};
    raw_query("reading the holder's session",
              "SELECT session_guid FROM {M} WHERE group_name = {1} AND guid <> ''", args, 1, &rows);
    H_CHECK(rows.n_rows == 1 && reign__sql_cell(&rows, 0, 0));
    char session[80];
    snprintf(session, sizeof(session), "%s", reign__sql_cell(&rows, 0, 0));
    reign__sql_rows_free(&rows);
    args[1] = REIGN__SQLV_S(session);

    /* Each in the holder's session, with a payload that must never be logged. */
    static const struct {
        const char *what, *row; /* guid, seq, member_id */
        size_t len;
    } forged[] = {
        {"an empty member id", "'forged-id', 90, ''", sizeof(FORGED) - 1},
        {"a negative seq", "'forged-seq', -3, 'x'", sizeof(FORGED) - 1},
        {"an oversized payload", "'forged-big', 91, 'big'", REIGN_MEMBER_DATA_MAX + 10},
    };
    char *payload = calloc(1, REIGN_MEMBER_DATA_MAX + 10);
    H_CHECK(payload != NULL);
    memcpy(payload, FORGED, sizeof(FORGED) - 1);
    for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO {M} (data_center, group_name, guid, seq, member_id, session_guid, "
                 "payload, version, joined_ms) VALUES ('default', {1}, %s, {2}, {3}, 0, 0)",
                 forged[i].row);
        args[2] = REIGN__SQLV_B(payload, forged[i].len);
        raw_query(forged[i].what, sql, args, 3, NULL);
    }
    free(payload);

    /* A watch and a listing see the real member alone. */
    h_cand *watcher = h_cand_new("watcher", NULL, NULL, NULL, NULL);
    h_cand_on_log(watcher, on_log);
    reign_group_watch_options wo = {.size = sizeof(wo), .cb = on_event, .userdata = &saw};
    reign_group_watch *w = NULL;
    H_OK(reign_group_watch_start(&w, watcher->client, group, &wo));
    wait_events("added m1 ready");
    expect_listed(holder, group, "m1");

    /* Another member comes and goes: the watch hears both, the listing follows. */
    h_cand *other = h_cand_new("other", NULL, NULL, NULL, NULL);
    h_cand_on_log(other, on_any_log);
    int m2_done = 0;
    reign_group *m2 = member(other, group, "m2", &m2_done);
    wait_events("added m1 ready added m2");
    expect_listed(holder, group, "m1 m2");
    m2 = reign_group_free(m2);
    wait_events("added m1 ready added m2 removed m2");
    expect_listed(holder, group, "m1");

    /* Said once, naming the table and the group, never a payload. */
    char table[128];
    snprintf(table, sizeof(table), "%s_members", h_table());
    H_CHECKF(saw.warnings == 1, "the watch warned %zu times of the foreign rows", saw.warnings);
    H_CHECKF(strstr(saw.warning, table) && strstr(saw.warning, group),
             "the warning lacks table %s or group %s: %s", table, group, saw.warning);
    H_CHECKF(saw.leaks == 0, "a foreign row's payload shows in %zu log lines", saw.leaks);

    /* Nothing lost: the foreign rows stay, the first member stands. */
    H_CHECKF(forged_rows(group) == 3, "%zu forged rows left, want 3", forged_rows(group));
    H_CHECK(reign_group_is_registered(m1));
    w = reign_group_watch_free(w);
    m1 = reign_group_free(m1);
    h_cand_close(other);
    h_cand_close(watcher);
    h_cand_close(holder);
}
