/*
 * test_sql_recipes.c - reign's values (<reign/value.h>) and the listed candidates of lease
 * elections (<reign/election.h>'s options.listed) on real SQL stores, through the public API,
 * as a program would use them.
 *
 * Usage: test_sql_recipes SCENARIO, on the store $REIGN_TEST_STORE names (sqlite, mariadb or
 * postgres: tests/integration/harness.h's h_uri()), each run in a table of its own:
 *
 *   ops      what the SQL stores add to values: before the table exists every call says
 *            REIGN_ENOENT; the version starts at 0 and grows by one; zxids grow with every
 *            write, across keys; a value made again has a new czxid; "a" and "a/b" are two
 *            values; another data center does not see them; a closing client answers what is
 *            pending with REIGN_ECLOSED
 *   foreign  rows reign did not write (a negative version, zxids out of order, an oversized
 *            payload, a counter gone) are refused by get (REIGN_EFOREIGN) and reported by a
 *            watch as ERROR; deleted, the value is usable again; a values table of a foreign
 *            layout is refused, never changed
 *   watch    a watch on a missing key reports READY with none, then CREATED, CHANGED, DELETED
 *            and CREATED as another client writes, with the versions; a value deleted and made
 *            again while the watcher's loop was not running is reported as DELETED then
 *            CREATED; a watch on another key hears nothing of these
 *   candidates  two listed candidates, one unlisted and an observer on one election:
 *            reign_election_query() lists the leader and the listed ones with the times they
 *            joined (never the observer; the unlisted one only if it leads); one that cedes is
 *            gone from the list at once, and back with a later join time when it stands
 *            again; one whose process stops without a word
 *            (its client freed with no guardian) is gone once its row expired, one lease later;
 *            reign rm refuses the election while they stand, and once all have left removes
 *            its lease row with all its candidates rows, expired ones too
 *   tasks    the task queue's statements (src/sql/tasks.h, sql_tasks.c has the list)
 *   tasks_api  submit, status, wait, list and delete through the public API (sql_tasks.c)
 *   group_foreign  rows of the members table reign did not write are no members: a group's
 *            watch and listing show the real ones and hear their joins and leaves, the rows
 *            stay (sql_groups.c)
 *   history  the election history's rows reign did not write are left out, reign rm deletes
 *            it, a history table of a foreign layout is refused (sql_history.c)
 *
 * What every store promises (the values' operations, refusals, payloads, bursts and races; the
 * elections' listing order and payloads, resign and cede hand-overs, ...) is
 * tests/contract/contract_value.c and contract_election.c; the scenarios here are the SQL
 * stores' own.
 *
 * The clients, their loop, the watches and the election events are the C harness's
 * (tests/integration/harness.h); what is here is the SQL stores' own: statements on their
 * tables behind reign's back, data centers, the candidates rows.  Every wait is for a
 * condition, bounded generously (H_WAIT_MS): only a hang reaches the bound.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/config.h"
#include "harness.h"
#include "recipes.h"
#include "sql.h"

/* Clients without a guardian, as before the harness: the candidates scenario's child must die
 * without a word, and the others need no process to stand by them. */
static const reign_client_options no_guardian = {.size = sizeof(reign_client_options),
                                                 .guardian = REIGN_GUARDIAN_OFF};

/* A client of the store, in data center `dc` (NULL: the default). */
static h_cand *client_new(const char *label, const char *dc)
{
    char query[64];
    snprintf(query, sizeof(query), "data_center=%s", dc ? dc : "");
    return h_cand_new(label, h_uri(dc ? query : NULL), &no_guardian, NULL, NULL);
}

/* ---- rows behind reign's back ---------------------------------------------------------------- */

reign__sqlconn *raw_connect(void)
{
    reign__client_config cfg;
    char err[512] = "";
    H_CHECKF(reign__client_config_read(&cfg, h_uri(NULL), NULL, err, sizeof(err)) == 0, "%s", err);
    reign__sqlconn *c = NULL;
    int rc = reign__sql_connect(&c, &cfg.sql.target, err, sizeof(err));
    reign__client_config_clear(&cfg);
    H_CHECKF(rc == 0, "connecting behind reign's back: %s", err);
    return c;
}

void raw_query(const char *what, const char *sql, const reign__sqlv *args, size_t n,
               reign__sql_rows *rows)
{
    reign__sqlconn *c = raw_connect();
    char err[512] = "";
    H_CHECKF(reign__sql_query(c, what, sql, args, n, rows, err, sizeof(err)) >= 0, "%s: %s", what,
             err);
    reign__sql_close(c);
}

static void raw_sql(const char *what, const char *sql, const reign__sqlv *args, size_t n)
{
    raw_query(what, sql, args, n, NULL);
}

/* ---- ops ------------------------------------------------------------------------------------- */

static void scenario_ops(void)
{
    h_cand *c = client_new("ops", NULL);

    H_RC(h_value_get(c, "app/leader").err, REIGN_ENOENT); /* before the table exists */
    H_RC(h_value_delete(c, "app/leader", REIGN_VALUE_ANY).err, REIGN_ENOENT);
    H_RC(h_value_set(c, "app/leader", "x", 0).err, REIGN_ENOENT);

    h_vans a = h_value_set(c, "app/leader", "one", REIGN_VALUE_ANY);
    H_OK(a.err);
    H_CHECK(a.v.version == 0);
    H_CHECK(a.v.zxid > 0);
    H_CHECK(a.v.created_ms > 1600000000000LL && a.v.modified_ms == a.v.created_ms);
    uint64_t z1 = a.v.zxid;
    a = h_value_get(c, "app/leader");
    H_OK(a.err);
    H_CHECK(!strcmp(a.data, "one") && a.v.data_len == 3 && a.v.version == 0 && a.v.zxid == z1);

    a = h_value_set(c, "app/leader", "two", 0); /* compare-and-set */
    H_OK(a.err);
    H_CHECK(a.v.version == 1 && a.v.zxid > z1);
    uint64_t z2 = a.v.zxid;
    H_RC(h_value_set(c, "app/leader", "stale", 0).err, REIGN_EBADVERSION);
    H_RC(h_value_set(c, "app/leader", "again", REIGN_VALUE_ABSENT).err, REIGN_EEXIST);
    H_RC(h_value_delete(c, "app/leader", 0).err, REIGN_EBADVERSION);
    a = h_value_get(c, "app/leader");
    H_CHECK(!strcmp(a.data, "two") && a.v.version == 1 && a.v.zxid == z2);

    /* Another key: its own versions, the zxids go on growing. */
    a = h_value_set(c, "app", "parent", REIGN_VALUE_ABSENT);
    H_OK(a.err);
    H_CHECK(a.v.version == 0 && a.v.zxid > z2);
    uint64_t z3 = a.v.zxid;
    a = h_value_set(c, "app/leader", "three", REIGN_VALUE_ANY);
    H_CHECK(a.err == 0 && a.v.version == 2 && a.v.zxid > z3);

    /* Delete by version; "app" stays. */
    a = h_value_delete(c, "app/leader", 2);
    H_OK(a.err);
    H_CHECK(a.v.version == 2);
    H_RC(h_value_get(c, "app/leader").err, REIGN_ENOENT);
    H_RC(h_value_delete(c, "app/leader", REIGN_VALUE_ANY).err, REIGN_ENOENT);
    a = h_value_get(c, "app");
    H_CHECK(a.err == 0 && !strcmp(a.data, "parent"));

    /* Made again: version 0, a new czxid (seen by watches: see the watch scenario). */
    a = h_value_set(c, "app/leader", "four", REIGN_VALUE_ABSENT);
    H_CHECK(a.err == 0 && a.v.version == 0 && a.v.zxid > z3);
    a = h_value_delete(c, "app/leader", REIGN_VALUE_ANY);
    H_CHECK(a.err == 0 && a.v.version == 0);

    /* Another data center has values of its own. */
    h_cand *other = client_new("other-dc", "dc2");
    H_RC(h_value_get(other, "app").err, REIGN_ENOENT);
    a = h_value_set(other, "app", "theirs", REIGN_VALUE_ABSENT);
    H_CHECK(a.err == 0 && a.v.version == 0);
    a = h_value_get(c, "app");
    H_CHECK(a.err == 0 && !strcmp(a.data, "parent"));

    /* A closing client answers what is pending with REIGN_ECLOSED, and takes nothing new. */
    h_vans late = {0}, dummy = {0};
    H_OK(reign_value_get(other->client, "app", h_vans_cb, &late));
    reign_client_close(other->client);
    H_WAIT(h_pred_answered, &late, "the pending get");
    H_CHECK(late.err == 0 || late.err == REIGN_ECLOSED);
    H_RC(reign_value_get(other->client, "app", h_vans_cb, &dummy), REIGN_ECLOSED);
    h_cand_close(other);
    h_cand_close(c);
}

/* ---- watch ----------------------------------------------------------------------------------- */

static void scenario_watch(void)
{
    h_cand *writer = client_new("writer", NULL), *watching = client_new("watcher", NULL);
    h_vwatch wa = {0}, wb = {0};
    h_vwatch_start(&wa, watching, "cfg/master");
    h_vwatch_start(&wb, watching, "cfg/other");
    h_vwatch_expect(&wa, 1, REIGN_VALUE_READY, NULL);
    h_vwatch_expect(&wb, 1, REIGN_VALUE_READY, NULL);
    reign_value none;
    H_RC(reign_value_watch_get(wa.w, &none), REIGN_ENOENT);

    H_OK(h_value_set(writer, "cfg/master", "m1", REIGN_VALUE_ABSENT).err);
    h_vwatch_expect(&wa, 2, REIGN_VALUE_CREATED, "m1");
    H_OK(h_value_set(writer, "cfg/master", "m2", 0).err);
    H_CHECK(h_vwatch_expect(&wa, 3, REIGN_VALUE_CHANGED, "m2")->version == 1);
    reign_value cur;
    H_OK(reign_value_watch_get(wa.w, &cur));
    H_CHECK(cur.version == 1 && cur.data_len == 2 && !memcmp(cur.data, "m2", 2));
    H_OK(h_value_delete(writer, "cfg/master", 1).err);
    h_vwatch_expect(&wa, 4, REIGN_VALUE_DELETED, NULL);
    H_OK(h_value_set(writer, "cfg/master", "m3", REIGN_VALUE_ABSENT).err);
    h_vwatch_expect(&wa, 5, REIGN_VALUE_CREATED, "m3");

    /* Deleted and made again while the watcher's loop stood still: DELETED, then CREATED. */
    size_t before = wa.n;
    h_cand_pause(watching, 1);
    H_OK(h_value_delete(writer, "cfg/master", REIGN_VALUE_ANY).err);
    H_OK(h_value_set(writer, "cfg/master", "m4", REIGN_VALUE_ABSENT).err);
    h_cand_pause(watching, 0);
    h_vwatch_expect(&wa, before + 1, REIGN_VALUE_DELETED, NULL);
    h_vwatch_expect(&wa, before + 2, REIGN_VALUE_CREATED, "m4");

    /* The other key's watch heard nothing of all this; now it hears its own. */
    H_CHECK(wb.n == 1);
    H_OK(h_value_set(writer, "cfg/other", "o1", REIGN_VALUE_ANY).err);
    h_vwatch_expect(&wb, 2, REIGN_VALUE_CREATED, "o1");
    H_CHECK(wa.n == before + 2);

    h_vwatch_free(&wb);
    h_vwatch_free(&wa);
    h_cand_close(watching);
    h_cand_close(writer);
}

/* ---- foreign --------------------------------------------------------------------------------- */

static void scenario_foreign(void)
{
    h_cand *c = client_new("foreign", NULL);
    H_OK(h_value_set(c, "ok", "fine", REIGN_VALUE_ANY).err); /* makes the table */
    h_vwatch wa = {0};
    h_vwatch_start(&wa, c, "bad");
    h_vwatch_expect(&wa, 1, REIGN_VALUE_READY, NULL);

    static const struct {
        const char *what;
        const char *values;
    } rows[] = {
        {"a negative version", "-5, NULL, 7, 7"},
        {"zxids out of order", "0, NULL, 9, 3"},
        {"no zxid", "0, NULL, 0, 0"},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        char sql[512];
        snprintf(sql, sizeof(sql),
                 "INSERT INTO {V} (data_center, value_key, version, data, czxid, mzxid, "
                 "created_ms, modified_ms) VALUES ('default', 'bad', %s, 0, 0)",
                 rows[i].values);
        size_t n = wa.n + 1;
        raw_sql("a foreign row", sql, NULL, 0);
        H_RC(h_value_get(c, "bad").err, REIGN_EFOREIGN);
        /* Read at the next change's notice (or poll): an ERROR, once, the watch going on. */
        H_OK(h_value_set(c, "ok", rows[i].what, REIGN_VALUE_ANY).err);
        const h_vev *e = h_vwatch_expect(&wa, n, REIGN_VALUE_ERROR, NULL);
        H_CHECKF(e->error == REIGN_EFOREIGN, "%s: the watch reported %s", rows[i].what,
                 reign_err_name(e->error));
        /* A write on it is refused too (its row is read first), and so is nothing else. */
        H_RC(h_value_set(c, "bad", "mine", REIGN_VALUE_ANY).err, REIGN_EFOREIGN);
        raw_sql("removing it", "DELETE FROM {V} WHERE value_key = 'bad'", NULL, 0);
        H_OK(h_value_set(c, "bad", "mine", REIGN_VALUE_ABSENT).err);
        h_vwatch_wait_last(&wa, "mine");
        /* Counted before: the DELETED may come in the same loop turn as the delete's answer. */
        size_t deleted = wa.n + 1;
        H_OK(h_value_delete(c, "bad", REIGN_VALUE_ANY).err);
        h_vwatch_expect(&wa, deleted, REIGN_VALUE_DELETED, NULL);
    }

    /* A payload larger than reign writes. */
    unsigned char *big = calloc(1, REIGN_VALUE_DATA_MAX + 10);
    H_CHECK(big != NULL);
    reign__sqlv args[1] = {REIGN__SQLV_B((const char *)big, REIGN_VALUE_DATA_MAX + 10)};
    raw_sql("an oversized payload",
            "INSERT INTO {V} (data_center, value_key, version, data, czxid, mzxid, created_ms, "
            "modified_ms) VALUES ('default', 'huge', 0, {1}, 1, 1, 0, 0)",
            args, 1);
    free(big);
    H_RC(h_value_get(c, "huge").err, REIGN_EFOREIGN);

    /* The counter removed by hand: made again by the next write, from the write numbers its
     * values carry, so that they still only grow. */
    raw_sql("removing the counter", "DELETE FROM {V} WHERE value_key = ''", NULL, 0);
    uint64_t zxid = h_value_get(c, "ok").v.zxid;
    h_vans a = h_value_set(c, "ok", "after", REIGN_VALUE_ANY);
    H_OK(a.err);
    H_CHECK(a.v.zxid > zxid);

    h_vwatch_free(&wa);
    h_cand_close(c);

    /* A values table of another layout: refused, never changed. */
    char table[128];
    snprintf(table, sizeof(table), "%s_x", h_table());
    h_set_table(table);
    raw_sql("a foreign values table", "CREATE TABLE {V} (data_center varchar(128), stuff int)",
            NULL, 0);
    c = client_new("foreign-table", NULL);
    int err = h_value_set(c, "k", "v", REIGN_VALUE_ANY).err;
    H_CHECKF(err == REIGN_EFOREIGN, "a write with a foreign values table answered %s",
             reign_err_name(err));
    H_RC(h_value_get(c, "k").err, REIGN_EFOREIGN);
    h_cand_close(c);
}

/* ---- candidates ------------------------------------------------------------------------------ */

/* The candidates' store: a row that is not refreshed is gone 4 s later. */
#define LEASE "lease_ms=4000"

/* Candidate `id` of election `name`, on a client of its own unless `c` is given. */
static h_cand *stand(h_cand *c, const char *name, const char *id, int listed, int observer)
{
    char data[32];
    snprintf(data, sizeof(data), "payload of %s", id);
    reign_election_options o = {.size = sizeof(o),
                                .data = data,
                                .data_len = strlen(data),
                                .observer = observer,
                                .listed = listed};
    if (!c)
        return h_cand_new(id, h_uri(LEASE), &no_guardian, name, &o);
    h_cand_join(c, name, &o);
    return c;
}

/* "ids" as the view lists them, e.g. "c1 c2 c3". */
static void ids_of(const h_view *v, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < v->n; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", v->ids[i]);
}

/* A query of election `name` through c's client, with the listed ids in `got`; a wait's
 * predicate asks again after every turn of the loops. */
typedef struct list_wait {
    h_cand *c;
    const char *name, *want;
    h_view v;
    char got[256];
} list_wait;

static void ask(list_wait *w)
{
    h_query(w->c, w->name, &w->v);
    H_OK(w->v.err);
    ids_of(&w->v, w->got, sizeof(w->got));
}

static int pred_list_is(void *arg)
{
    list_wait *w = arg;
    ask(w);
    return !strcmp(w->got, w->want);
}

static void wait_list(h_cand *c, const char *name, const char *want)
{
    list_wait w = {.c = c, .name = name, .want = want};
    if (!h_run_until(pred_list_is, &w, H_WAIT_MS))
        h_fail(__FILE__, __LINE__, "the candidates are \"%s\", want \"%s\"", w.got, want);
}

/* c3 leads unlisted (first), or c5 does. */
static int pred_ceded(void *arg)
{
    list_wait *w = arg;
    ask(w);
    return w->v.has_leader && (!strcmp(w->got, "c3 c5") || !strcmp(w->got, "c5"));
}

/* reign rm, waited for: its error. */
typedef struct removal {
    h_cand *c;
    const char *name;
    int done, err;
} removal;

static void on_removed(reign_client *client, int e, const char *const *standing, size_t n, void *ud)
{
    removal *r = ud;
    (void)client;
    (void)standing;
    (void)n;
    r->done = 1;
    r->err = e;
}

static int pred_removed(void *arg)
{
    return ((removal *)arg)->done;
}

int store_rm(h_cand *c, const char *name)
{
    removal r = {.c = c, .name = name};
    H_OK(reign_store_remove(c->client, REIGN_ENTRY_ELECTION, name, on_removed, &r));
    H_WAIT(pred_removed, &r, "reign rm's answer");
    return r.err;
}

/* reign rm answered other than REIGN_EBUSY (asked again after every refusal). */
static int pred_rm_not_busy(void *arg)
{
    removal *r = arg;
    r->err = store_rm(r->c, r->name);
    return r->err != REIGN_EBUSY;
}

/* The rows of election `name` in the candidates table, live or expired. */
static size_t candidate_rows(const char *name)
{
    reign__sqlconn *c = raw_connect();
    reign__sqlv arg = REIGN__SQLV_S(name);
    reign__sql_rows rows = {0};
    char err[512] = "";
    H_CHECKF(reign__sql_query(c, "reading the candidates rows",
                              "SELECT guid FROM {C} WHERE lock_name = {1}", &arg, 1, &rows, err,
                              sizeof(err)) >= 0,
             "reading the candidates rows: %s", err);
    size_t n = rows.n_rows;
    reign__sql_rows_free(&rows);
    reign__sql_close(c);
    return n;
}

static void scenario_candidates(const char *exe)
{
    char name[64];
    snprintf(name, sizeof(name), "cands-%ld", (long)getpid());
    h_cand *cs[4];
    cs[0] = stand(NULL, name, "c1", 1, 0);
    H_WAIT(h_pred_leader, cs[0], "c1 elected");
    /* Listed before c5 joins: each client's row goes in from its own worker, in either order
     * when two join at once. */
    wait_list(cs[0], name, "c1");
    cs[1] = stand(NULL, name, "c3", 0, 0);  /* not listed */
    cs[2] = stand(NULL, name, "obs", 1, 1); /* an observer is never listed */
    cs[3] = stand(NULL, name, "c5", 1, 0);
    wait_list(cs[0], name, "c1 c5");
    list_wait w = {.c = cs[3], .name = name};
    ask(&w);
    H_CHECK(w.v.has_leader && !strcmp(w.v.leader_id, "c1"));
    H_CHECK(w.v.joined_ms[0] > 1600000000000LL && w.v.joined_ms[0] <= w.v.joined_ms[1]);

    /* The leader cedes (for longer than the test): gone while out; whoever leads next is
     * first.  Wait for c3 or c5 to lead, or c1, joining again below, could take the lease
     * first. */
    H_OK(reign_election_cede(cs[0]->election, 600000));
    if (!h_run_until(pred_ceded, &w, H_WAIT_MS))
        h_fail(__FILE__, __LINE__, "after the cede the candidates are \"%s\"", w.got);
    /* It stands again (a new standing): listed after c5. */
    cs[0]->election = reign_election_free(cs[0]->election);
    stand(cs[0], name, "c1", 1, 0);
    const char *back = !strcmp(w.v.leader_id, "c3") ? "c3 c5 c1" : "c5 c1";
    wait_list(cs[3], name, back);
    ask(&w);
    H_CHECK(w.v.joined_ms[w.v.n - 1] >= w.v.joined_ms[w.v.n - 2]);

    /* A process that dies without a word (SIGKILL, no guardian): its row is gone once it
     * expired, one lease later; nobody else's goes.  The process is this program again
     * (listed_child()): a fork of this one, whose threads hold locks, could hang. */
    char *const child_argv[] = {(char *)exe, "listed-child", (char *)h_uri(LEASE), name, NULL};
    pid_t pid = fork();
    H_CHECK(pid >= 0);
    if (pid == 0) {
        execv(exe, child_argv);
        _exit(127);
    }
    char want[64];
    snprintf(want, sizeof(want), "%s dead", back);
    wait_list(cs[3], name, want);
    kill(pid, SIGKILL);
    int status;
    H_CHECK(waitpid(pid, &status, 0) == pid);
    wait_list(cs[3], name, back);

    /* reign rm: refused while they stand.  Once all have left, the lease row goes, and with it
     * every row of the election in the candidates table, the dead one's expired row too. */
    H_CHECK(store_rm(cs[3], name) == REIGN_EBUSY);
    H_CHECK(candidate_rows(name) > 0);
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
        cs[i]->election = reign_election_free(cs[i]->election);
    /* Each client releases and unlists from its own worker: refused until the last is done. */
    removal r = {.c = cs[3], .name = name};
    if (!h_run_until(pred_rm_not_busy, &r, H_WAIT_MS))
        h_fail(__FILE__, __LINE__,
               "reign rm still refused the election after every candidate left");
    H_OK(r.err);
    H_CHECK(candidate_rows(name) == 0);
}

/* The child of the candidates scenario: a listed candidate "dead" of election `name` on the
 * store `uri`, until it is killed. */
static __attribute__((noreturn)) void listed_child(const char *uri, const char *name)
{
    h_init("listed-child");
    const char *data = "payload of dead";
    reign_election_options eo = {
        .size = sizeof(eo), .data = data, .data_len = strlen(data), .listed = 1};
    h_cand_new("dead", uri, &no_guardian, name, &eo);
    for (;;)
        h_run_for(H_WAIT_MS);
}

int main(int argc, char **argv)
{
    const char *exe = "/proc/self/exe"; /* whatever argv[0] is */
    if (argc == 4 && !strcmp(argv[1], "listed-child"))
        listed_child(argv[2], argv[3]);
    if (argc != 2) {
        fprintf(stderr,
                "usage: %s ops|foreign|watch|candidates|tasks|tasks_api|group_foreign|history\n",
                argv[0]);
        return 2;
    }
    const char *scenario = argv[1];
    static char test[64], table[64];
    snprintf(test, sizeof(test), "sql_recipes_%s", scenario);
    h_init(test);
    H_CHECKF(h_store_is_sql(), "%s: a SQL store's test, on %s", test, h_store_name());
    /* A table of this run's own: the ops scenario begins before the table exists. */
    snprintf(table, sizeof(table), "tv_%s_%ld", scenario, (long)getpid());
    h_set_table(table);
    if (!strcmp(scenario, "ops"))
        scenario_ops();
    else if (!strcmp(scenario, "watch"))
        scenario_watch();
    else if (!strcmp(scenario, "foreign"))
        scenario_foreign();
    else if (!strcmp(scenario, "candidates"))
        scenario_candidates(exe);
    else if (!strcmp(scenario, "tasks"))
        scenario_tasks();
    else if (!strcmp(scenario, "tasks_api"))
        scenario_tasks_api();
    else if (!strcmp(scenario, "group_foreign"))
        scenario_group_foreign();
    else if (!strcmp(scenario, "history"))
        scenario_history();
    else {
        fprintf(stderr, "unknown scenario %s\n", scenario);
        return 2;
    }
    return h_finish();
}
