/*
 * test_sql_recipes.c - reign's values (<reign/value.h>) and the listed candidates of lease
 * elections (<reign/election.h>'s options.listed) on real SQL stores, through the public API,
 * as a program would use them.
 *
 * Usage: test_sql_recipes BACKEND SCENARIO, BACKEND one of sqlite, mariadb, postgres (the shared
 * servers of $REIGN_TEST_MARIADB_DIR and $REIGN_TEST_PG_DIR; SQLite files under
 * $REIGN_TEST_STATE_DIR), each run in a table of its own:
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
 *
 * What every store promises (the values' operations, refusals, payloads, bursts and races; the
 * elections' listing order and payloads, resign and cede hand-overs, ...) is
 * tests/contract/contract_value.c and contract_election.c; the scenarios here are the SQL
 * stores' own.
 *
 * Every wait is for a condition, bounded generously (WAIT_MS): only a hang reaches the bound.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <reign/reign.h>

#include "check.h"
#include "sql.h"

#define WAIT_MS 60000

static int64_t now_ms(void)
{
    return reign_now_ns() / 1000000;
}

/* ---- the store ------------------------------------------------------------------------------- */

static char backend[16];
static char table[64];
static char base_uri[PATH_MAX + 64]; /* the store, without parameters */
static char password[128];           /* MariaDB, PostgreSQL */
static char password_file[PATH_MAX];
static reign__sql_target raw;  /* for rows written behind reign's back */
static const char *extra = ""; /* more URI parameters, "&name=value..." */
static const char *exe;        /* this program, for the candidates scenario's child */

static void setup(const char *name, const char *scenario)
{
    snprintf(backend, sizeof backend, "%s", name);
    const char *state = need_env("REIGN_TEST_STATE_DIR");
    /* ctest makes neither the state dir nor, in a fresh build tree, its parent. */
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", state);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        mkdir(parent, 0755);
    }
    mkdir(state, 0755);
    snprintf(table, sizeof table, "tv_%s_%ld", scenario, (long)getpid());
    memset(&raw, 0, sizeof raw);
    raw.table = table;
    if (!strcmp(name, "sqlite")) {
        static char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/values-%s.db", state, scenario);
        unlink(path);
        snprintf(base_uri, sizeof base_uri, "sqlite://%s", path);
        raw.kind = REIGN__SQL_SQLITE;
        raw.path = path;
        return;
    }
    bool maria = !strcmp(name, "mariadb");
    if (!maria && strcmp(name, "postgres"))
        fail(__FILE__, __LINE__, "unknown backend %s", name);
    const char *dir = need_env(maria ? "REIGN_TEST_MARIADB_DIR" : "REIGN_TEST_PG_DIR");
    char port[16];
    read_file(dir, "password", password, sizeof password);
    read_file(dir, "port", port, sizeof port);
    snprintf(password_file, sizeof password_file, "%s/password", dir);
    snprintf(base_uri, sizeof base_uri, "%s://reign@127.0.0.1:%s/reign",
             maria ? "mysql" : "postgres", port);
    raw.kind = maria ? REIGN__SQL_MARIADB : REIGN__SQL_POSTGRES;
    raw.host = "127.0.0.1";
    raw.port = atoi(port);
    raw.user = "reign";
    raw.password = password;
    raw.database = "reign";
}

static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    if (level <= REIGN_LOG_WARN || getenv("TEST_VERBOSE"))
        fprintf(stderr, "  [%s] [%s] %s\n", (const char *)userdata, reign_log_level_name(level),
                msg);
}

/* The URI of a client of the store, in data center `dc` (NULL: the default). */
static void client_uri(char *uri, size_t n, const char *dc)
{
    snprintf(uri, n, "%s?table=%s&poll_ms=100%s%s%s%s%s", base_uri, table, extra,
             password_file[0] ? "&password_file=" : "", password_file, dc ? "&data_center=" : "",
             dc ? dc : "");
}

/* A client of the store, in data center `dc` (NULL: the default). */
static reign_client *client_new(const char *label, const char *dc)
{
    char uri[3 * PATH_MAX];
    client_uri(uri, sizeof uri, dc);
    reign_client_options o = {.size = sizeof o,
                              .log_fn = log_sink,
                              .log_level = REIGN_LOG_DEBUG,
                              .guardian = REIGN_GUARDIAN_OFF,
                              .userdata = (void *)label};
    reign_client *c = NULL;
    CHECK_RC(reign_client_new(&c, uri, &o, err, sizeof err), 0);
    CHECK_RC(reign_client_wait_connected(c), 0);
    return c;
}

/* Runs the clients' loops until pred(arg) holds. */
#define MAX_CLIENTS 8
static reign_client *clients[MAX_CLIENTS];
static size_t n_clients;

static void run_until(int (*pred)(void *), void *arg, const char *what)
{
    int64_t deadline = now_ms() + WAIT_MS;
    while (!pred(arg)) {
        if (now_ms() > deadline)
            fail(__FILE__, __LINE__, "timed out waiting for %s", what);
        struct pollfd p[MAX_CLIENTS];
        int timeout = 50;
        for (size_t i = 0; i < n_clients; i++) {
            p[i] = (struct pollfd){.fd = reign_client_get_fd(clients[i]), .events = POLLIN};
            int64_t t = reign_client_get_timeout_ms(clients[i]);
            if (t >= 0 && t < timeout)
                timeout = (int)t;
        }
        poll(p, n_clients, timeout);
        for (size_t i = 0; i < n_clients; i++)
            reign_client_process(clients[i]);
    }
}

/* ---- one-shot calls, waited for ----------------------------------------------------------- */

typedef struct answer {
    int done;
    int err;
    char data[64];
    size_t len;
    void *big; /* a copy of a long payload */
    reign_value v;
} answer;

static void on_answer(reign_client *client, int e, const reign_value *v, void *ud)
{
    answer *a = ud;
    a->done = 1;
    a->err = e;
    if (v) {
        a->v = *v;
        a->v.key = NULL;
        a->v.data = NULL;
        a->len = v->data_len;
        snprintf(a->data, sizeof a->data, "%.*s", (int)(v->data_len < 63 ? v->data_len : 63),
                 v->data ? (const char *)v->data : "");
        if (v->data_len) {
            a->big = malloc(v->data_len);
            CHECK(a->big);
            memcpy(a->big, v->data, v->data_len);
        }
    }
}

static int answered(void *arg)
{
    return ((answer *)arg)->done;
}

static void answer_free(answer *a)
{
    free(a->big);
    a->big = NULL;
}

static answer do_get(reign_client *c, const char *key)
{
    answer a = {0};
    CHECK_RC(reign_value_get(c, key, on_answer, &a), 0);
    run_until(answered, &a, "get");
    return a;
}

static answer do_set(reign_client *c, const char *key, const void *data, size_t len,
                     int64_t version)
{
    answer a = {0};
    CHECK_RC(reign_value_set(c, key, data, len, version, on_answer, &a), 0);
    run_until(answered, &a, "set");
    return a;
}

static answer do_sets(reign_client *c, const char *key, const char *text, int64_t version)
{
    return do_set(c, key, text, strlen(text), version);
}

static answer do_delete(reign_client *c, const char *key, int64_t version)
{
    answer a = {0};
    CHECK_RC(reign_value_delete(c, key, version, on_answer, &a), 0);
    run_until(answered, &a, "delete");
    return a;
}

#define EXPECT_ERR(expr, want)                                                                     \
    do {                                                                                           \
        answer a_ = (expr);                                                                        \
        if (a_.err != (want))                                                                      \
            fail(__FILE__, __LINE__, "%s answered %s, want %s", #expr, reign_err_name(a_.err),     \
                 reign_err_name(want));                                                            \
        answer_free(&a_);                                                                          \
    } while (0)

/* ---- rows behind reign's back ---------------------------------------------------------------- */

static void raw_sql(const char *what, const char *sql, const reign__sqlv *args, size_t n)
{
    reign__sqlconn *c = NULL;
    CHECK_RC(reign__sql_connect(&c, &raw, err, sizeof err), 0);
    int rc = reign__sql_query(c, what, sql, args, n, NULL, err, sizeof err);
    if (rc < 0)
        fail(__FILE__, __LINE__, "%s: %s", what, err);
    reign__sql_close(c);
}

/* ---- ops ------------------------------------------------------------------------------------- */

static void scenario_ops(void)
{
    reign_client *c = client_new("ops", NULL);
    clients[n_clients++] = c;

    EXPECT_ERR(do_get(c, "app/leader"), REIGN_ENOENT); /* before the table exists */
    EXPECT_ERR(do_delete(c, "app/leader", REIGN_VALUE_ANY), REIGN_ENOENT);
    EXPECT_ERR(do_sets(c, "app/leader", "x", 0), REIGN_ENOENT);

    answer a = do_sets(c, "app/leader", "one", REIGN_VALUE_ANY);
    CHECK_RC(a.err, 0);
    CHECK(a.v.version == 0);
    CHECK(a.v.zxid > 0);
    CHECK(a.v.created_ms > 1600000000000LL && a.v.modified_ms == a.v.created_ms);
    uint64_t z1 = a.v.zxid;
    a = do_get(c, "app/leader");
    CHECK_RC(a.err, 0);
    CHECK(!strcmp(a.data, "one") && a.len == 3 && a.v.version == 0 && a.v.zxid == z1);
    answer_free(&a);

    a = do_sets(c, "app/leader", "two", 0); /* compare-and-set */
    CHECK_RC(a.err, 0);
    CHECK(a.v.version == 1 && a.v.zxid > z1);
    uint64_t z2 = a.v.zxid;
    EXPECT_ERR(do_sets(c, "app/leader", "stale", 0), REIGN_EBADVERSION);
    EXPECT_ERR(do_sets(c, "app/leader", "again", REIGN_VALUE_ABSENT), REIGN_EEXIST);
    EXPECT_ERR(do_delete(c, "app/leader", 0), REIGN_EBADVERSION);
    a = do_get(c, "app/leader");
    CHECK(!strcmp(a.data, "two") && a.v.version == 1 && a.v.zxid == z2);
    answer_free(&a);

    /* Another key: its own versions, the zxids go on growing. */
    a = do_sets(c, "app", "parent", REIGN_VALUE_ABSENT);
    CHECK_RC(a.err, 0);
    CHECK(a.v.version == 0 && a.v.zxid > z2);
    uint64_t z3 = a.v.zxid;
    a = do_sets(c, "app/leader", "three", REIGN_VALUE_ANY);
    CHECK(a.err == 0 && a.v.version == 2 && a.v.zxid > z3);

    /* Delete by version; "app" stays. */
    a = do_delete(c, "app/leader", 2);
    CHECK_RC(a.err, 0);
    CHECK(a.v.version == 2);
    EXPECT_ERR(do_get(c, "app/leader"), REIGN_ENOENT);
    EXPECT_ERR(do_delete(c, "app/leader", REIGN_VALUE_ANY), REIGN_ENOENT);
    a = do_get(c, "app");
    CHECK(a.err == 0 && !strcmp(a.data, "parent"));
    answer_free(&a);

    /* Made again: version 0, a new czxid (seen by watches: see the watch scenario). */
    a = do_sets(c, "app/leader", "four", REIGN_VALUE_ABSENT);
    CHECK(a.err == 0 && a.v.version == 0 && a.v.zxid > z3);
    a = do_delete(c, "app/leader", REIGN_VALUE_ANY);
    CHECK(a.err == 0 && a.v.version == 0);

    answer dummy;

    /* Another data center has values of its own. */
    reign_client *other = client_new("other-dc", "dc2");
    clients[n_clients++] = other;
    EXPECT_ERR(do_get(other, "app"), REIGN_ENOENT);
    a = do_sets(other, "app", "theirs", REIGN_VALUE_ABSENT);
    CHECK(a.err == 0 && a.v.version == 0);
    a = do_get(c, "app");
    CHECK(a.err == 0 && !strcmp(a.data, "parent"));
    answer_free(&a);

    /* A closing client answers what is pending with REIGN_ECLOSED, and takes nothing new. */
    answer late = {0};
    CHECK_RC(reign_value_get(other, "app", on_answer, &late), 0);
    reign_client_close(other);
    run_until(answered, &late, "the pending get");
    CHECK(late.err == 0 || late.err == REIGN_ECLOSED);
    answer_free(&late);
    CHECK_RC(reign_value_get(other, "app", on_answer, &dummy), REIGN_ECLOSED);
    n_clients--;
    reign_client_free(other);
    say("%s: ops passed", backend);
}

/* ---- watch ----------------------------------------------------------------------------------- */

#define MAX_EV 4096

typedef struct vev {
    reign_value_event_type type;
    int has_value;
    char data[32];
    int64_t version;
    int error;
} vev;

typedef struct watcher {
    reign_value_watch *w;
    vev ev[MAX_EV];
    size_t n;
} watcher;

static void on_watch(reign_value_watch *w, const reign_value_event *ev, void *ud)
{
    watcher *x = ud;
    CHECK(x->n < MAX_EV);
    vev *e = &x->ev[x->n++];
    memset(e, 0, sizeof *e);
    e->type = ev->type;
    e->error = ev->error;
    if (ev->value) {
        e->has_value = 1;
        snprintf(e->data, sizeof e->data, "%.*s", (int)ev->value->data_len,
                 (const char *)ev->value->data);
        e->version = ev->value->version;
    }
    if (getenv("TEST_VERBOSE"))
        say("watch %s: %s %s", reign_value_watch_key(w), reign_value_event_name(ev->type),
            e->has_value ? e->data : "-");
}

typedef struct nth_arg {
    watcher *x;
    size_t n;
} nth_arg;

static int has_n(void *arg)
{
    nth_arg *a = arg;
    return a->x->n >= a->n;
}

/* Event number n (1-based), waited for. */
static const vev *nth(watcher *x, size_t n)
{
    nth_arg a = {x, n};
    run_until(has_n, &a, "a watch event");
    return &x->ev[n - 1];
}

static void expect(watcher *x, size_t n, reign_value_event_type type, const char *data)
{
    const vev *e = nth(x, n);
    if (e->type != type || (data && (!e->has_value || strcmp(e->data, data))) ||
        (!data && e->has_value))
        fail(__FILE__, __LINE__, "event %zu is %s '%s', want %s '%s'", n,
             reign_value_event_name(e->type), e->has_value ? e->data : "-",
             reign_value_event_name(type), data ? data : "-");
}

typedef struct last_arg {
    watcher *x;
    const char *data;
} last_arg;

static int last_is(void *arg)
{
    last_arg *a = arg;
    return a->x->n && a->x->ev[a->x->n - 1].has_value &&
           !strcmp(a->x->ev[a->x->n - 1].data, a->data);
}

static watcher wa, wb;

static void scenario_watch(void)
{
    reign_client *writer = client_new("writer", NULL), *watching = client_new("watcher", NULL);
    clients[n_clients++] = writer;
    clients[n_clients++] = watching;
    CHECK_RC(reign_value_watch_start(&wa.w, watching, "cfg/master", on_watch, &wa), 0);
    CHECK_RC(reign_value_watch_start(&wb.w, watching, "cfg/other", on_watch, &wb), 0);
    expect(&wa, 1, REIGN_VALUE_READY, NULL);
    expect(&wb, 1, REIGN_VALUE_READY, NULL);
    reign_value none;
    CHECK_RC(reign_value_watch_get(wa.w, &none), REIGN_ENOENT);

    CHECK_RC(do_sets(writer, "cfg/master", "m1", REIGN_VALUE_ABSENT).err, 0);
    expect(&wa, 2, REIGN_VALUE_CREATED, "m1");
    CHECK_RC(do_sets(writer, "cfg/master", "m2", 0).err, 0);
    expect(&wa, 3, REIGN_VALUE_CHANGED, "m2");
    CHECK(wa.ev[2].version == 1);
    reign_value cur;
    CHECK_RC(reign_value_watch_get(wa.w, &cur), 0);
    CHECK(cur.version == 1 && cur.data_len == 2 && !memcmp(cur.data, "m2", 2));
    CHECK_RC(do_delete(writer, "cfg/master", 1).err, 0);
    expect(&wa, 4, REIGN_VALUE_DELETED, NULL);
    CHECK_RC(do_sets(writer, "cfg/master", "m3", REIGN_VALUE_ABSENT).err, 0);
    expect(&wa, 5, REIGN_VALUE_CREATED, "m3");

    /* Deleted and made again while the watcher's loop stood still: DELETED, then CREATED. */
    size_t before = wa.n;
    n_clients = 1; /* the writer's loop only */
    CHECK_RC(do_delete(writer, "cfg/master", REIGN_VALUE_ANY).err, 0);
    CHECK_RC(do_sets(writer, "cfg/master", "m4", REIGN_VALUE_ABSENT).err, 0);
    n_clients = 2;
    expect(&wa, before + 1, REIGN_VALUE_DELETED, NULL);
    expect(&wa, before + 2, REIGN_VALUE_CREATED, "m4");

    /* The other key's watch heard nothing of all this; now it hears its own. */
    CHECK(wb.n == 1);
    CHECK_RC(do_sets(writer, "cfg/other", "o1", REIGN_VALUE_ANY).err, 0);
    expect(&wb, 2, REIGN_VALUE_CREATED, "o1");
    CHECK(wa.n == before + 2);

    reign_value_watch_free(wb.w);
    wb.w = NULL;
    reign_value_watch_free(wa.w);
    wa.w = NULL;
    say("%s: watch passed", backend);
}

/* ---- foreign --------------------------------------------------------------------------------- */

static void scenario_foreign(void)
{
    reign_client *c = client_new("foreign", NULL);
    clients[n_clients++] = c;
    CHECK_RC(do_sets(c, "ok", "fine", REIGN_VALUE_ANY).err, 0); /* makes the table */
    CHECK_RC(reign_value_watch_start(&wa.w, c, "bad", on_watch, &wa), 0);
    expect(&wa, 1, REIGN_VALUE_READY, NULL);

    static const struct {
        const char *what;
        const char *values;
    } rows[] = {
        {"a negative version", "-5, NULL, 7, 7"},
        {"zxids out of order", "0, NULL, 9, 3"},
        {"no zxid", "0, NULL, 0, 0"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "INSERT INTO {V} (data_center, value_key, version, data, czxid, mzxid, "
                 "created_ms, modified_ms) VALUES ('default', 'bad', %s, 0, 0)",
                 rows[i].values);
        size_t n = wa.n + 1;
        raw_sql("a foreign row", sql, NULL, 0);
        EXPECT_ERR(do_get(c, "bad"), REIGN_EFOREIGN);
        /* Read at the next change's notice (or poll): an ERROR, once, the watch going on. */
        CHECK_RC(do_sets(c, "ok", rows[i].what, REIGN_VALUE_ANY).err, 0);
        const vev *e = nth(&wa, n);
        if (e->type != REIGN_VALUE_ERROR || e->error != REIGN_EFOREIGN)
            fail(__FILE__, __LINE__, "%s: the watch reported %s (%s)", rows[i].what,
                 reign_value_event_name(e->type), reign_err_name(e->error));
        /* A write on it is refused too (its row is read first), and so is nothing else. */
        EXPECT_ERR(do_sets(c, "bad", "mine", REIGN_VALUE_ANY), REIGN_EFOREIGN);
        raw_sql("removing it", "DELETE FROM {V} WHERE value_key = 'bad'", NULL, 0);
        CHECK_RC(do_sets(c, "bad", "mine", REIGN_VALUE_ABSENT).err, 0);
        char want[8];
        snprintf(want, sizeof want, "mine");
        last_arg la = {&wa, want};
        run_until(last_is, &la, "the watch to see the value made again");
        /* Counted before: the DELETED may come in the same loop turn as the delete's answer. */
        size_t deleted = wa.n + 1;
        CHECK_RC(do_delete(c, "bad", REIGN_VALUE_ANY).err, 0);
        expect(&wa, deleted, REIGN_VALUE_DELETED, NULL);
    }

    /* A payload larger than reign writes. */
    unsigned char *big = calloc(1, REIGN_VALUE_DATA_MAX + 10);
    CHECK(big);
    reign__sqlv args[1] = {REIGN__SQLV_B((const char *)big, REIGN_VALUE_DATA_MAX + 10)};
    raw_sql("an oversized payload",
            "INSERT INTO {V} (data_center, value_key, version, data, czxid, mzxid, created_ms, "
            "modified_ms) VALUES ('default', 'huge', 0, {1}, 1, 1, 0, 0)",
            args, 1);
    free(big);
    EXPECT_ERR(do_get(c, "huge"), REIGN_EFOREIGN);

    /* The counter removed by hand: made again by the next write, from the write numbers its
     * values carry, so that they still only grow. */
    raw_sql("removing the counter", "DELETE FROM {V} WHERE value_key = ''", NULL, 0);
    answer a = do_get(c, "ok");
    uint64_t zxid = a.v.zxid;
    answer_free(&a);
    a = do_sets(c, "ok", "after", REIGN_VALUE_ANY);
    CHECK_RC(a.err, 0);
    CHECK(a.v.zxid > zxid);

    reign_value_watch_free(wa.w);
    wa.w = NULL;
    n_clients = 0;
    reign_client_free(c);

    /* A values table of another layout: refused, never changed. */
    size_t tl = strlen(table);
    CHECK(tl + 3 <= sizeof table);
    memcpy(table + tl, "_x", 3);
    raw.table = table;
    raw_sql("a foreign values table", "CREATE TABLE {V} (data_center varchar(128), stuff int)",
            NULL, 0);
    c = client_new("foreign-table", NULL);
    clients[n_clients++] = c;
    answer f = do_sets(c, "k", "v", REIGN_VALUE_ANY);
    if (f.err != REIGN_EFOREIGN)
        fail(__FILE__, __LINE__, "a write with a foreign values table answered %s",
             reign_err_name(f.err));
    EXPECT_ERR(do_get(c, "k"), REIGN_EFOREIGN);
    say("%s: foreign passed", backend);
}

/* ---- candidates --------------------------------------------------------------------------------
 */

typedef struct cand {
    reign_client *client;
    reign_election *e;
    char id[16];
    int elected;
} cand;

static void on_election(reign_election *e, const reign_election_event *ev, void *ud)
{
    cand *c = ud;
    if (ev->type == REIGN_ELECTION_ELECTED)
        c->elected = 1;
    else if (ev->type == REIGN_ELECTION_DEMOTED)
        c->elected = 0;
}

static void cand_join(cand *c, const char *name, const char *id, int listed, int observer)
{
    snprintf(c->id, sizeof c->id, "%s", id);
    if (!c->client) {
        c->client = client_new(id, NULL);
        CHECK(n_clients < MAX_CLIENTS);
        clients[n_clients++] = c->client;
    }
    char data[32];
    snprintf(data, sizeof data, "payload of %s", id);
    reign_election_options o = {.size = sizeof o,
                                .id = id,
                                .data = data,
                                .data_len = strlen(data),
                                .observer = observer,
                                .listed = listed,
                                .cb = on_election,
                                .userdata = c};
    CHECK_RC(reign_election_join(&c->e, c->client, name, &o), 0);
}

typedef struct view_copy {
    int done, err;
    char leader[32];
    size_t n;
    char ids[8][32];
    int64_t joined[8];
} view_copy;

static void on_view(reign_client *client, int e, const reign_election_view *v, void *ud)
{
    view_copy *x = ud;
    x->done = 1;
    x->err = e;
    if (!v)
        return;
    snprintf(x->leader, sizeof x->leader, "%s", v->has_leader ? v->leader.id : "");
    for (size_t i = 0; i < v->n_candidates && i < 8; i++) {
        snprintf(x->ids[i], sizeof x->ids[i], "%s", v->candidates[i].id);
        x->joined[i] = v->candidates[i].joined_ms;
    }
    x->n = v->n_candidates < 8 ? v->n_candidates : 8;
}

static view_copy query(reign_client *c, const char *name)
{
    view_copy x = {0};
    CHECK_RC(reign_election_query(c, name, on_view, &x), 0);
    run_until(answered, &x, "a query"); /* done is the first member, as answer's */
    CHECK_RC(x.err, 0);
    return x;
}

/* "ids" as the view lists them, e.g. "c1 c2 c3". */
static void ids_of(const view_copy *x, char *out, size_t n)
{
    out[0] = '\0';
    for (size_t i = 0; i < x->n; i++)
        snprintf(out + strlen(out), n - strlen(out), "%s%s", i ? " " : "", x->ids[i]);
}

typedef struct list_wait {
    reign_client *c;
    const char *name, *want;
    char got[256];
} list_wait;

static int list_is(void *arg)
{
    list_wait *w = arg;
    view_copy x = {0};
    if (reign_election_query(w->c, w->name, on_view, &x) < 0)
        return 0;
    int64_t deadline = now_ms() + WAIT_MS;
    while (!x.done && now_ms() < deadline) {
        struct pollfd p = {.fd = reign_client_get_fd(w->c), .events = POLLIN};
        poll(&p, 1, 20);
        for (size_t i = 0; i < n_clients; i++)
            reign_client_process(clients[i]);
    }
    ids_of(&x, w->got, sizeof w->got);
    return x.done && !x.err && !strcmp(w->got, w->want);
}

static void wait_list(reign_client *c, const char *name, const char *want)
{
    list_wait w = {c, name, want, ""};
    int64_t deadline = now_ms() + WAIT_MS;
    while (!list_is(&w)) {
        if (now_ms() > deadline)
            fail(__FILE__, __LINE__, "the candidates are \"%s\", want \"%s\"", w.got, want);
        struct pollfd p = {.fd = reign_client_get_fd(c), .events = POLLIN};
        poll(&p, 1, 50);
    }
}

static int is_elected(void *arg)
{
    return ((cand *)arg)->elected;
}

static cand cs[4];

/* reign rm, waited for: its error. */
typedef struct removal {
    int done, err;
} removal;

static void on_removed(reign_client *client, int e, const char *const *standing, size_t n, void *ud)
{
    removal *r = ud;
    r->done = 1;
    r->err = e;
}

static int removed(void *arg)
{
    return ((removal *)arg)->done;
}

static int store_rm(reign_client *c, const char *name)
{
    removal r = {0};
    CHECK_RC(reign_store_remove(c, REIGN_ENTRY_ELECTION, name, on_removed, &r), 0);
    run_until(removed, &r, "reign rm's answer");
    return r.err;
}

/* The rows of election `name` in the candidates table, live or expired. */
static size_t candidate_rows(const char *name)
{
    reign__sqlconn *c = NULL;
    CHECK_RC(reign__sql_connect(&c, &raw, err, sizeof err), 0);
    reign__sqlv arg = REIGN__SQLV_S(name);
    reign__sql_rows rows = {0};
    if (reign__sql_query(c, "reading the candidates rows",
                         "SELECT guid FROM {C} WHERE lock_name = {1}", &arg, 1, &rows, err,
                         sizeof err) < 0)
        fail(__FILE__, __LINE__, "reading the candidates rows: %s", err);
    size_t n = rows.n_rows;
    reign__sql_rows_free(&rows);
    reign__sql_close(c);
    return n;
}

static void scenario_candidates(void)
{
    char name[64];
    snprintf(name, sizeof name, "cands-%ld", (long)getpid());
    extra = "&lease_ms=4000"; /* a row that is not refreshed is gone 4 s later */
    cand_join(&cs[0], name, "c1", 1, 0);
    run_until(is_elected, &cs[0], "c1 elected");
    /* Listed before c5 joins: each client's row goes in from its own worker, in either order
     * when two join at once. */
    wait_list(cs[0].client, name, "c1");
    cand_join(&cs[1], name, "c3", 0, 0);  /* not listed */
    cand_join(&cs[2], name, "obs", 1, 1); /* an observer is never listed */
    cand_join(&cs[3], name, "c5", 1, 0);
    wait_list(cs[0].client, name, "c1 c5");
    view_copy x = query(cs[3].client, name);
    CHECK(!strcmp(x.leader, "c1"));
    CHECK(x.joined[0] > 1600000000000LL && x.joined[0] <= x.joined[1]);

    /* The leader cedes (for longer than the test): gone while out; whoever leads next is
     * first. */
    CHECK_RC(reign_election_cede(cs[0].e, 600000), 0);
    char got[256];
    int64_t deadline = now_ms() + WAIT_MS;
    for (;;) {
        x = query(cs[3].client, name);
        ids_of(&x, got, sizeof got);
        /* c3 leads unlisted (first), or c5 does; wait for one of them to lead, or c1, joining
         * again below, could take the lease first. */
        if (x.leader[0] && (!strcmp(got, "c3 c5") || !strcmp(got, "c5")))
            break;
        if (now_ms() > deadline)
            fail(__FILE__, __LINE__, "after the cede the candidates are \"%s\"", got);
    }
    /* It stands again (a new standing): listed after c5. */
    cs[0].e = reign_election_free(cs[0].e);
    cand_join(&cs[0], name, "c1", 1, 0);
    const char *back = !strcmp(x.leader, "c3") ? "c3 c5 c1" : "c5 c1";
    wait_list(cs[3].client, name, back);
    x = query(cs[3].client, name);
    CHECK(x.joined[x.n - 1] >= x.joined[x.n - 2]);

    /* A process that dies without a word (SIGKILL, no guardian): its row is gone once it
     * expired, one lease later; nobody else's goes.  The process is this program again
     * (listed_child()): a fork of this one, whose threads hold locks, could hang. */
    char uri[3 * PATH_MAX];
    client_uri(uri, sizeof uri, NULL);
    char *const child_argv[] = {(char *)exe, "listed-child", uri, name, NULL};
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        execv(exe, child_argv);
        _exit(127);
    }
    char want[64];
    snprintf(want, sizeof want, "%s dead", back);
    wait_list(cs[3].client, name, want);
    kill(pid, SIGKILL);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    wait_list(cs[3].client, name, back);

    /* reign rm: refused while they stand.  Once all have left, the lease row goes, and with it
     * every row of the election in the candidates table, the dead one's expired row too. */
    CHECK(store_rm(cs[3].client, name) == REIGN_EBUSY);
    CHECK(candidate_rows(name) > 0);
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++)
        cs[i].e = reign_election_free(cs[i].e);
    /* Each client releases and unlists from its own worker: refused until the last is done. */
    int rc;
    deadline = now_ms() + WAIT_MS;
    while ((rc = store_rm(cs[3].client, name)) == REIGN_EBUSY && now_ms() < deadline)
        ;
    CHECK_RC(rc, 0);
    CHECK(candidate_rows(name) == 0);
    say("%s: candidates passed", backend);
}

/* The child of the candidates scenario: a listed candidate "dead" of election `name`, until
 * it is killed. */
static int listed_child(const char *uri, const char *name)
{
    reign_client_options o = {.size = sizeof o,
                              .log_fn = log_sink,
                              .log_level = REIGN_LOG_DEBUG,
                              .guardian = REIGN_GUARDIAN_OFF,
                              .userdata = (void *)"dead"};
    reign_client *c = NULL;
    reign_election *e = NULL;
    const char *data = "payload of dead";
    reign_election_options eo = {
        .size = sizeof eo, .id = "dead", .data = data, .data_len = strlen(data), .listed = 1};
    if (reign_client_new(&c, uri, &o, err, sizeof err) < 0 || reign_client_wait_connected(c) < 0 ||
        reign_election_join(&e, c, name, &eo) < 0) {
        fprintf(stderr, "listed-child: cannot stand: %s\n", err[0] ? err : reign_client_errmsg(c));
        return 1;
    }
    for (;;) {
        struct pollfd p = {.fd = reign_client_get_fd(c), .events = POLLIN};
        poll(&p, 1, 100);
        reign_client_process(c);
    }
}

int main(int argc, char **argv)
{
    exe = "/proc/self/exe"; /* whatever argv[0] is */
    if (argc == 4 && !strcmp(argv[1], "listed-child"))
        return listed_child(argv[2], argv[3]);
    if (argc != 3) {
        fprintf(stderr, "usage: %s sqlite|mariadb|postgres ops|foreign|watch|candidates\n",
                argv[0]);
        return 2;
    }
    setup(argv[1], argv[2]);
    if (!strcmp(argv[2], "ops"))
        scenario_ops();
    else if (!strcmp(argv[2], "watch"))
        scenario_watch();
    else if (!strcmp(argv[2], "foreign"))
        scenario_foreign();
    else if (!strcmp(argv[2], "candidates"))
        scenario_candidates();
    else {
        fprintf(stderr, "unknown scenario %s\n", argv[2]);
        return 2;
    }
    for (size_t i = 0; i < n_clients; i++)
        reign_client_free(clients[i]);
    printf("PASS %s %s\n", argv[1], argv[2]);
    return 0;
}
