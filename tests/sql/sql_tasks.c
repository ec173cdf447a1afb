/*
 * sql_tasks.c - the task queue on a real SQL store, scenarios of test_sql_recipes.
 *
 * `tasks_api`: the one-shot requests through the public API (scenario_tasks_api() says what).
 *
 * `tasks`: the statements (src/sql/tasks.h), through connections behind reign's back (one per
 * actor: submitter, masters, workers):
 *
 *   - before the table exists a task reads as unknown and a queue lists empty;
 *   - a submit sent again with the same guid (its answer lost) finds the first row, never makes
 *     a second; a payload over REIGN_TASK_DATA_MAX is refused;
 *   - the master assigns the oldest pending tasks, at most as many as asked, under its lease;
 *     a master whose lease moved on (another owner, another term, deposed, taken over)
 *     assigns, takes back and sweeps nothing;
 *   - a result is written once, and only by the registration the row names: another
 *     registration's is refused, a second one changes nothing (and says "ours already");
 *   - a worker gone has its tasks taken back once, by the leading master only, and its late
 *     result changes nothing;
 *   - which of many waited tasks are done is read in a few statements, each as long as its
 *     ids make it, and a task is done only in its own queue;
 *   - submits and results in batches answer each row as one at a time would: a guid sent twice
 *     or made before finds its row, a result of another registration is refused; a round gives
 *     several workers their shares in one transaction, the first the oldest;
 *   - delete removes only done tasks; a sweep removes old results;
 *   - a row reign could not have written is skipped by listings and refused by reads;
 *   - PostgreSQL and MariaDB: a pick skips a pending row another transaction holds, rather
 *     than waiting for it (the statement timeout would end the wait with an error);
 *   - PostgreSQL: a round tells each worker it gave tasks to on that worker's own name, and
 *     no other worker; one that gives to more than REIGN__TASKS_TELL_EACH_MAX tells them all
 *     on the workers' common name;
 *   - `reign rm` of the queue (reign__tasks_remove_queue()) changes nothing while a row is
 *     foreign, while the master's lease moved since it was read (a master took it), or while a
 *     worker of a live session is registered; then it deletes the tasks and the group and
 *     clears the lease row, keeping its term (a master that takes it again leads at a term
 *     above), and a second removal finds no queue.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "members.h"
#include "recipes.h"
#include "sessions.h"
#include "tasks.h"

#define DC     "dc1"
#define QUEUE  "jobs"
#define MASTER "tasks.jobs"

static char err[512];

static reign__tasks_fence lead(reign__sqlconn *c, const char *guid, uint64_t expected_term)
{
    reign__lease_claim cl = {
        .dc = DC, .name = MASTER, .owner = guid, .owner_guid = guid, .duration_ms = 60000};
    uint64_t term = 1;
    if (expected_term == 0)
        H_CHECKF(reign__sql_lease_insert(c, &cl, err, sizeof err) == 1, "%s", err);
    else
        H_CHECKF(reign__sql_lease_take(c, &cl, expected_term, &term, err, sizeof err) == 1, "%s",
                 err);
    reign__tasks_fence f = {.name = MASTER, .owner = guid, .term = term};
    return f;
}

static reign__task_row submit(reign__sqlconn *c, const char *guid, const char *data, bool want_made)
{
    reign__task_row r;
    bool made;
    H_CHECKF(reign__tasks_submit(c, DC, QUEUE, guid, data, strlen(data), &r, &made, err,
                                 sizeof err) == 0,
             "submit: %s", err);
    H_CHECK(made == want_made);
    H_CHECK(r.id > 0 && r.state == REIGN_TASK_PENDING && !strcmp(r.guid, guid));
    return r;
}

static reign__task_row read_task(reign__sqlconn *c, const char *name, int want)
{
    reign__task_row r;
    H_RC(reign__tasks_read(c, DC, QUEUE, name, true, &r, err, sizeof err), want);
    return r;
}

/* Assigns up to max to (worker, wguid): the number assigned, or -1 if deposed. */
static int assign(reign__sqlconn *c, const reign__tasks_fence *f, const char *worker,
                  const char *wguid, size_t max, reign__task_rows *out)
{
    int rc = reign__tasks_assign(c, DC, QUEUE, f, worker, wguid, max, out, err, sizeof err);
    H_CHECKF(rc == 0 || rc == REIGN__TASKS_DEPOSED, "assign: %s", err);
    return rc == REIGN__TASKS_DEPOSED ? -1 : (int)out->n;
}

static int requeue(reign__sqlconn *c, const reign__tasks_fence *f, const char *wguid)
{
    bool deposed;
    int n = reign__tasks_requeue(c, DC, QUEUE, f, wguid, &deposed, err, sizeof err);
    H_CHECKF(n >= 0, "requeue: %s", err);
    return deposed ? -1 : n;
}

static int finish(reign__sqlconn *c, const char *name, const char *wguid, const char *out)
{
    return reign__tasks_finish(c, DC, QUEUE, name, wguid, 3, 0, out, strlen(out), err, sizeof err);
}

/*
 * Lists longer than one statement takes: one worker's share of 150 (two UPDATEs of ids),
 * results in batches of 64 (the most rows an UPDATE takes, and on MariaDB the most places, 579),
 * the last batch of 22 (ids repeated to fill 32 places), and one done read of them all.
 */
static void test_many(reign__sqlconn *sub, reign__sqlconn *m, reign__sqlconn *w,
                      const reign__tasks_fence *f)
{
    enum { MANY = 150 };
    reign__task_row *v = calloc(MANY, sizeof *v);
    H_CHECK(v != NULL);
    for (int i = 0; i < MANY; i++) {
        char guid[17];
        snprintf(guid, sizeof guid, "0000000000001%03x", i);
        v[i] = submit(sub, guid, "many", true);
    }
    reign__tasks_give g = {.worker = "w5", .worker_guid = "wg5", .max = MANY};
    H_RC(reign__tasks_assign_many(m, DC, QUEUE, f, &g, 1, err, sizeof err), 0);
    H_CHECK(g.rows.n == MANY);
    for (int i = 0; i < MANY && (size_t)i < g.rows.n; i++)
        H_CHECK(g.rows.v[i].id == v[i].id && !strcmp(g.rows.v[i].worker_guid, "wg5"));
    reign__task_rows_free(&g.rows);
    char out[MANY][8];
    reign__tasks_result r[MANY];
    const reign__tasks_result *rv[MANY];
    int rcs[MANY];
    for (int i = 0; i < MANY; i++) {
        snprintf(out[i], sizeof out[i], "o%d", i);
        r[i] = (reign__tasks_result){.queue = QUEUE,
                                     .name = v[i].name,
                                     .worker_guid = "wg5",
                                     .exit_code = i % 7,
                                     .exit_signal = 0,
                                     .output = out[i],
                                     .output_len = strlen(out[i])};
        rv[i] = &r[i];
    }
    for (int lo = 0; lo < MANY; lo += 64) {
        int n = MANY - lo < 64 ? MANY - lo : 64;
        H_RC(reign__tasks_finish_batch(w, DC, rv + lo, rcs + lo, (size_t)n, err, sizeof err), 0);
        for (int i = lo; i < lo + n; i++)
            H_CHECK(rcs[i] == 0);
    }
    char *names[MANY];
    for (int i = 0; i < MANY; i++)
        names[i] = v[i].name;
    reign__task_rows done;
    H_RC(reign__tasks_done(sub, DC, QUEUE, names, MANY, &done, err, sizeof err), 0);
    H_CHECK(done.n == MANY);
    for (size_t k = 0; k < done.n; k++) {
        int i = (int)(done.v[k].id - v[0].id);
        H_CHECK(i >= 0 && i < MANY && done.v[k].exit_code == i % 7 &&
                done.v[k].output_len == strlen(out[i]) &&
                !memcmp(done.v[k].output, out[i], done.v[k].output_len));
    }
    reign__task_rows_free(&done);
    for (int i = 0; i < MANY; i++)
        reign__task_row_clear(&v[i]);
    free(v);
}

static void test_deposed(reign__sqlconn *c, const reign__tasks_fence *f)
{
    reign__tasks_fence other = *f;
    reign__task_rows rows;
    other.term = f->term + 1;
    H_CHECK(assign(c, &other, "w9", "g9", 5, &rows) == -1);
    other = *f;
    other.owner = "someone-else";
    H_CHECK(assign(c, &other, "w9", "g9", 5, &rows) == -1);
    H_CHECK(requeue(c, &other, "wg1") == -1);
    bool deposed;
    H_CHECK(reign__tasks_sweep(c, DC, QUEUE, &other, -100000, &deposed, err, sizeof err) == 0 &&
            deposed);
}

static void test_skip_locked(reign__sqlconn *sub, reign__sqlconn *m, const reign__tasks_fence *f)
{
    reign__task_row a = submit(sub, "00000000000000a1", "held", true);
    reign__task_row b = submit(sub, "00000000000000a2", "free", true);
    reign__sqlconn *holder = raw_connect();
    reign__sqlv args[1] = {REIGN__SQLV_I(a.id)};
    H_CHECKF(reign__sql_query(holder, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err) >= 0,
             "%s", err);
    H_CHECKF(reign__sql_query(holder, "holding a row",
                              "SELECT id FROM {K} WHERE id = {1} FOR UPDATE", args, 1, NULL, err,
                              sizeof err) >= 0,
             "%s", err);
    reign__task_rows rows;
    H_CHECK(assign(m, f, "w3", "wg3", 1, &rows) == 1);
    H_CHECK(rows.v[0].id == b.id); /* the held one skipped, not waited for */
    reign__task_rows_free(&rows);
    reign__sql_rollback(holder);
    reign__sql_close(holder);
    H_CHECK(assign(m, f, "w3", "wg3", 1, &rows) == 1 && rows.v[0].id == a.id);
    reign__task_rows_free(&rows);
    H_CHECK(finish(m, a.name, "wg3", "") == 0 && finish(m, b.name, "wg3", "") == 0);
    reign__task_row_clear(&a);
    reign__task_row_clear(&b);
}

static reign__lease read_master(reign__sqlconn *c)
{
    reign__lease l = {0};
    H_CHECKF(reign__sql_lease_read(c, DC, MASTER, &l, err, sizeof err) >= 0 && l.exists, "%s", err);
    return l;
}

static size_t pending(reign__sqlconn *c)
{
    reign__task_rows rows;
    H_RC(reign__tasks_list(c, DC, QUEUE, &rows, err, sizeof err), 0);
    size_t n = rows.n;
    reign__task_rows_free(&rows);
    return n;
}

/* `reign rm` of the queue, which holds one reign task and one foreign row, its lease held by
 * guid-m2 (deposed). */
static void test_remove(reign__sqlconn *sub, reign__sqlconn *m, reign__sqlconn *w)
{
    reign__lease l = read_master(sub);
    H_RC(reign__tasks_remove_queue(sub, DC, QUEUE, &l, err, sizeof err), REIGN_EFOREIGN);
    reign__sqlv args[2] = {REIGN__SQLV_S(DC), REIGN__SQLV_S("00000000000000f1")};
    H_CHECKF(reign__sql_query(sub, "the foreign row goes", "DELETE FROM {K} WHERE guid = {2}", args,
                              2, NULL, err, sizeof err) == 1,
             "%s", err);

    /* Read, then a master takes the lease: the removal, at the version read, changes nothing. */
    reign__lease_clear(&l);
    l = read_master(sub);
    reign__tasks_fence f = lead(m, "guid-m3", l.term);
    H_RC(reign__tasks_remove_queue(sub, DC, QUEUE, &l, err, sizeof err), REIGN_EBUSY);
    H_CHECK(pending(sub) == 1);

    /* A worker of a live session: nothing changes either. */
    reign__lease_clear(&l);
    l = read_master(sub);
    uint64_t seq;
    H_CHECKF(reign__sessions_ensure(w, err, sizeof err) == 0 &&
                 reign__sessions_open(w, DC, "sess-w", "w", 60000, err, sizeof err) == 0 &&
                 reign__members_register(w, DC, MASTER, "reg-w", "w", "sess-w", NULL, 0, &seq, err,
                                         sizeof err) == 1,
             "%s", err);
    H_RC(reign__tasks_remove_queue(sub, DC, QUEUE, &l, err, sizeof err), REIGN_EBUSY);
    H_CHECK(pending(sub) == 1);
    reign__lease kept = read_master(sub);
    H_CHECK(!reign__sql_lease_removed(&kept) && kept.term == f.term);
    reign__lease_clear(&kept);

    /* Nobody stands: the tasks and the group go, the lease row is cleared at its term. */
    H_CHECKF(reign__members_leave(w, DC, MASTER, "reg-w", err, sizeof err) == 0, "%s", err);
    H_RC(reign__tasks_remove_queue(sub, DC, QUEUE, &l, err, sizeof err), 1);
    H_CHECK(pending(sub) == 0);
    reign__member_rows members;
    H_RC(reign__members_read(sub, DC, MASTER, &members, err, sizeof err), 0);
    H_CHECK(!members.group_exists && members.n == 0);
    reign__member_rows_free(&members);
    reign__lease cleared = read_master(sub);
    H_CHECK(reign__sql_lease_removed(&cleared) && cleared.term == f.term);
    reign__lease_clear(&cleared);
    H_RC(reign__tasks_remove_queue(sub, DC, QUEUE, NULL, err, sizeof err), 0);

    /* Tokens never go back: the next master leads above the removed term. */
    reign__tasks_fence again = lead(m, "guid-m4", f.term);
    H_CHECK(again.term > f.term);
    reign__lease_clear(&l);
    H_CHECKF(reign__sessions_end(w, DC, "sess-w", -1, err, sizeof err) >= 0, "%s", err);
}

/* Submits and results in batches (one statement for many rows): the same answers, row by row,
 * as one at a time.  t2 is done by "wg2". */
static void test_tell_workers(reign__sqlconn *sub, reign__sqlconn *m, const reign__tasks_fence *f);
static void test_tell_done(reign__sqlconn *sub, reign__sqlconn *m, reign__sqlconn *w,
                           const reign__tasks_fence *f);
static void test_plan_once(reign__sqlconn *c);

static void test_batches(reign__sqlconn *sub, reign__sqlconn *m, reign__sqlconn *w,
                         const reign__tasks_fence *f, const reign__task_row *t2)
{
    reign__tasks_submission s[5] = {
        {.queue = QUEUE, .guid = "0000000000000006", .data = "six", .len = 3},
        {.queue = QUEUE, .guid = "0000000000000007", .data = "seven", .len = 5},
        {.queue = QUEUE, .guid = "0000000000000006", .data = "six", .len = 3}, /* sent twice */
        {.queue = QUEUE, .guid = t2->guid, .data = "two", .len = 3},           /* made before */
        {.queue = QUEUE, .guid = "not-a-guid", .data = "", .len = 0},
    };
    reign__tasks_submission *sv[5] = {&s[0], &s[1], &s[2], &s[3], &s[4]};
    int rcs[5];
    H_RC(reign__tasks_submit_batch(sub, DC, sv, rcs, 5, err, sizeof err), 0);
    H_CHECK(rcs[0] == 0 && rcs[1] == 0 && rcs[2] == 0 && rcs[3] == 0 && rcs[4] == REIGN_EINVAL);
    H_CHECK(s[0].made && s[1].made && !s[2].made && !s[3].made);
    H_CHECK(s[2].row.id == s[0].row.id && s[3].row.id == t2->id && s[1].row.id > s[0].row.id);
    H_CHECK(s[0].row.state == REIGN_TASK_PENDING && !strcmp(s[1].row.guid, s[1].guid));
    reign__task_rows rows;
    H_CHECK(assign(m, f, "w2", "wg2", 5, &rows) == 2);
    reign__task_rows_free(&rows);

    /* One batch: a result of wg2's, one it recorded before, one of a registration the row does
     * not name, and a name that is no task's. */
    reign__tasks_result r[4] = {
        {.queue = QUEUE,
         .name = s[0].row.name,
         .worker_guid = "wg2",
         .exit_code = 6,
         .output = "r6",
         .output_len = 2},
        {.queue = QUEUE,
         .name = t2->name,
         .worker_guid = "wg2",
         .output = "again",
         .output_len = 5},
        {.queue = QUEUE,
         .name = s[1].row.name,
         .worker_guid = "wg-other",
         .output = "no",
         .output_len = 2},
        {.queue = QUEUE, .name = "t_nonsense", .worker_guid = "wg2"},
    };
    const reign__tasks_result *rv[4] = {&r[0], &r[1], &r[2], &r[3]};
    H_RC(reign__tasks_finish_batch(w, DC, rv, rcs, 4, err, sizeof err), 0);
    /* Not all of wg2's changed, so its recorded ones answer 1 (now or before: both recorded). */
    H_CHECK(rcs[0] == 1 && rcs[1] == 1 && rcs[2] == REIGN_ENOENT && rcs[3] == REIGN_ENOENT);
    reign__task_row t = read_task(sub, s[0].row.name, 0);
    H_CHECK(t.state == REIGN_TASK_DONE && t.exit_code == 6 && t.output_len == 2 &&
            !memcmp(t.output, "r6", 2));
    reign__task_row_clear(&t);
    t = read_task(sub, s[1].row.name, 0);
    H_CHECK(t.state == REIGN_TASK_ASSIGNED && !strcmp(t.worker_guid, "wg2"));
    reign__task_row_clear(&t);
    t = read_task(sub, t2->name, 0);
    H_CHECK(t.output_len == 0); /* the first result stands */
    reign__task_row_clear(&t);
    /* All changed: 0. */
    r[2].worker_guid = "wg2";
    H_RC(reign__tasks_finish_batch(w, DC, &rv[2], rcs, 1, err, sizeof err), 0);
    H_CHECK(rcs[0] == 0);

    /* Several workers in one round: each its share in the order given, the first the oldest;
     * fewer than asked when no more is pending. */
    reign__task_row p[3];
    p[0] = submit(sub, "0000000000000008", "8", true);
    p[1] = submit(sub, "0000000000000009", "9", true);
    p[2] = submit(sub, "000000000000000a", "a", true);
    reign__tasks_give g[2] = {{.worker = "w3", .worker_guid = "wg3", .max = 2},
                              {.worker = "w4", .worker_guid = "wg4", .max = 5}};
    H_RC(reign__tasks_assign_many(m, DC, QUEUE, f, g, 2, err, sizeof err), 0);
    H_CHECK(g[0].rows.n == 2 && g[0].rows.v[0].id == p[0].id && g[0].rows.v[1].id == p[1].id);
    H_CHECK(g[1].rows.n == 1 && g[1].rows.v[0].id == p[2].id);
    H_CHECK(!strcmp(g[1].rows.v[0].worker_guid, "wg4") && g[1].rows.v[0].term == f->term);
    t = read_task(sub, p[1].name, 0);
    H_CHECK(t.state == REIGN_TASK_ASSIGNED && !strcmp(t.worker, "w3"));
    reign__task_row_clear(&t);
    reign__task_rows_free(&g[0].rows);
    reign__task_rows_free(&g[1].rows);
    H_RC(reign__tasks_assign_many(m, DC, QUEUE, f, g, 2, err, sizeof err), 0);
    H_CHECK(g[0].rows.n == 0 && g[1].rows.n == 0);
    H_RC(finish(w, p[0].name, "wg3", ""), 0);
    H_RC(finish(w, p[1].name, "wg3", ""), 0);
    H_RC(finish(w, p[2].name, "wg4", ""), 0);
    for (int i = 0; i < 3; i++)
        reign__task_row_clear(&p[i]);
    test_many(sub, m, w, f);
    if (h_store() == H_STORE_POSTGRES)
        test_tell_workers(sub, m, f);
    if (h_store() != H_STORE_MARIADB) /* MariaDB tells nothing: its readers poll */
        test_tell_done(sub, m, w, f);
    if (h_store() == H_STORE_POSTGRES)
        test_plan_once(sub);
    for (int i = 0; i < 5; i++)
        reign__task_row_clear(&s[i].row);
}

/* A connection that listens on the notices of `suffix` (tasks.h's names for QUEUE), with
 * nothing pending. */
static reign__sqlconn *listener(const char *suffix)
{
    reign__sqlconn *c = raw_connect();
    char name[REIGN__TASKS_LISTEN_MAX];
    snprintf(name, sizeof name, REIGN__TASKS_LISTEN QUEUE "%s", suffix);
    H_RC(reign__sql_listen(c, DC, name, err, sizeof err), 0);
    H_CHECK(reign__sql_drain_notify(c) >= 0);
    return c;
}

/* The notices c hears in one drain, once it hears any (bounded by H_WAIT_MS: only a hang
 * reaches it). */
static int heard(reign__sqlconn *c)
{
    struct pollfd p = {.fd = reign__sql_listen_fd(c), .events = POLLIN};
    int got = 0;
    for (int waited = 0; !got && waited < H_WAIT_MS; waited += 1000) {
        if (poll(&p, 1, 1000) < 0 && errno != EINTR)
            break;
        got = reign__sql_drain_notify(c);
        H_CHECK(got >= 0);
    }
    H_CHECKF(got > 0, "no notice within %d ms", H_WAIT_MS);
    return got;
}

/* PostgreSQL's notices of a round (see the list at the top).  A worker not given tasks hears
 * only the probe sent after the round: notices come in commit order, one of the round would
 * have come first, with it. */
static void test_tell_workers(reign__sqlconn *sub, reign__sqlconn *m, const reign__tasks_fence *f)
{
    reign__sqlconn *own3 = listener(REIGN__TASKS_WORKERS "/w3"),
                   *own5 = listener(REIGN__TASKS_WORKERS "/w5"),
                   *all = listener(REIGN__TASKS_WORKERS);
    enum { MANY = REIGN__TASKS_TELL_EACH_MAX + 2 }; /* the first round gives one of them */
    reign__task_row p[MANY];
    for (int i = 0; i < MANY; i++) {
        char guid[17];
        snprintf(guid, sizeof guid, "00000000000001%02x", i);
        p[i] = submit(sub, guid, "t", true);
    }
    reign__tasks_give g[MANY];
    char ids[MANY][8], guids[MANY][8];
    for (int i = 0; i < MANY; i++) {
        snprintf(ids[i], sizeof ids[i], "w%d", i + 3);
        snprintf(guids[i], sizeof guids[i], "wg%d", i + 3);
        g[i] = (reign__tasks_give){.worker = ids[i], .worker_guid = guids[i], .max = i == 0};
    }
    /* One worker given a task: w3 hears it, w5 and the common name do not. */
    H_RC(reign__tasks_assign_many(m, DC, QUEUE, f, g, MANY, err, sizeof err), 0);
    H_CHECK(g[0].rows.n == 1 && g[1].rows.n == 0);
    H_CHECK(heard(own3) == 1);
    H_RC(reign__sql_notify(sub, DC, REIGN__TASKS_LISTEN QUEUE REIGN__TASKS_WORKERS "/w5", err,
                           sizeof err),
         0);
    H_RC(
        reign__sql_notify(sub, DC, REIGN__TASKS_LISTEN QUEUE REIGN__TASKS_WORKERS, err, sizeof err),
        0);
    H_CHECK(heard(own5) == 1);
    H_CHECK(heard(all) == 1);
    for (int i = 0; i < MANY; i++) {
        reign__task_rows_free(&g[i].rows);
        g[i].max = 1;
    }
    /* More than REIGN__TASKS_TELL_EACH_MAX given tasks: all are told at once. */
    H_RC(reign__tasks_assign_many(m, DC, QUEUE, f, g, MANY, err, sizeof err), 0);
    H_CHECK(g[0].rows.n == 1 && g[MANY - 2].rows.n == 1 && g[MANY - 1].rows.n == 0);
    H_CHECK(g[0].rows.v[0].id == p[1].id);
    H_CHECK(heard(all) == 1);
    for (int i = 0; i < MANY; i++) {
        H_RC(finish(m, p[i].name, guids[i == 0 ? 0 : i - 1], ""), 0);
        reign__task_rows_free(&g[i].rows);
        reign__task_row_clear(&p[i]);
    }
    reign__sql_close(own3);
    reign__sql_close(own5);
    reign__sql_close(all);
}

/* A batch of results tells its queue which tasks it finished (PostgreSQL: "name\nid,id" in
 * the notice, which waiters read alone); SQLite's file change tells only that something
 * changed (`all`).  A hint with a newline in it, or too long, is refused. */
static void test_tell_done(reign__sqlconn *sub, reign__sqlconn *m, reign__sqlconn *w,
                           const reign__tasks_fence *f)
{
    reign__sqlconn *waiter = listener("");
    reign__task_row p[2] = {submit(sub, "0000000000000201", "a", true),
                            submit(sub, "0000000000000202", "b", true)};
    reign__task_rows rows;
    H_CHECK(assign(m, f, "w9", "wg9", 2, &rows) == 2);
    reign__task_rows_free(&rows);
    reign__sql_heard h;
    H_CHECK(reign__sql_drain_notify(waiter) >= 0); /* the submits' notices */
    reign__sql_heard_take(waiter, &h);
    reign__sql_heard_free(&h);
    reign__tasks_result r[2] = {{.queue = QUEUE, .name = p[0].name, .worker_guid = "wg9"},
                                {.queue = QUEUE, .name = p[1].name, .worker_guid = "wg9"}};
    const reign__tasks_result *rv[2] = {&r[0], &r[1]};
    int rcs[2];
    H_RC(reign__tasks_finish_batch(w, DC, rv, rcs, 2, err, sizeof err), 0);
    H_CHECK(rcs[0] == 0 && rcs[1] == 0);
    H_CHECK(heard(waiter) == 1);
    reign__sql_heard_take(waiter, &h);
    if (h_store() == H_STORE_POSTGRES || h_store() == H_STORE_SQLITE) {
        char want[256];
        snprintf(want, sizeof want, REIGN__TASKS_LISTEN QUEUE "\n%" PRId64 ",%" PRId64, p[0].id,
                 p[1].id);
        H_CHECKF(!h.all && h.n == 1 && !strcmp(h.v[0], want), "heard %zu: %s", h.n,
                 h.n ? h.v[0] : "-");
    } else {
        H_CHECK(h.all);
    }
    reign__sql_heard_free(&h);
    char hint[REIGN__SQL_HINT_MAX + 2];
    memset(hint, '1', sizeof hint - 1);
    hint[sizeof hint - 1] = '\0';
    H_RC(reign__sql_notify_hint(sub, DC, REIGN__TASKS_LISTEN QUEUE, hint, err, sizeof err),
         REIGN_EINVAL);
    H_RC(reign__sql_notify_hint(sub, DC, REIGN__TASKS_LISTEN QUEUE, "1\n2", err, sizeof err),
         REIGN_EINVAL);
    for (int i = 0; i < 2; i++)
        reign__task_row_clear(&p[i]);
    reign__sql_close(waiter);
}

/* The plan mode a statement on c runs under. */
static void want_plan_mode(reign__sqlconn *c, const char *want)
{
    reign__sql_rows rs;
    H_RC(reign__sql_query(c, "plan mode", "SELECT current_setting('plan_cache_mode')", NULL, 0, &rs,
                          err, sizeof err),
         0);
    H_CHECKF(rs.n_rows == 1 && !strcmp(rs.cells[0] ? rs.cells[0] : "", want),
             "plan mode %s, want %s", rs.n_rows && rs.cells[0] ? rs.cells[0] : "-", want);
    reign__sql_rows_free(&rs);
}

/* PostgreSQL: reign__sql_plan_once() lets the next statement of a transaction keep one plan,
 * and that statement alone: the one after it, and every one outside a transaction, is planned
 * for its values (a submit's INSERTs use it, sent twice here: the text prepared on its second
 * use). */
static void test_plan_once(reign__sqlconn *c)
{
    for (int i = 0; i < 2; i++) {
        H_RC(reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, sizeof err), 0);
        reign__sql_plan_once(c);
        want_plan_mode(c, "force_generic_plan");
        want_plan_mode(c, "force_custom_plan");
        reign__sql_plan_once(c);
        H_RC(reign__sql_query(c, "commit", "COMMIT", NULL, 0, NULL, err, sizeof err), 0);
        want_plan_mode(c, "force_custom_plan");
    }
    reign__sql_plan_once(c); /* outside a transaction: nothing changes, now or after */
    want_plan_mode(c, "force_custom_plan");
    want_plan_mode(c, "force_custom_plan");
}

void scenario_tasks(void)
{
    reign__sqlconn *sub = raw_connect(), *m1 = raw_connect(), *m2 = raw_connect(),
                   *w = raw_connect();
    H_CHECKF(reign__sql_ensure_schema(m1, err, sizeof err) == 0, "%s", err);

    /* Before the table exists. */
    reign__task_rows rows;
    H_RC(reign__tasks_list(sub, DC, QUEUE, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 0);
    read_task(sub, "t_0123456789abcdef_0000000001", REIGN_ENOENT);
    H_RC(reign__tasks_delete(sub, DC, QUEUE, "t_0123456789abcdef_0000000001", err, sizeof err),
         REIGN_ENOENT);

    /* Submit, and a submit sent again: one row. */
    reign__task_row t1 = submit(sub, "0000000000000001", "one", true);
    reign__task_row again = submit(sub, "0000000000000001", "one", false);
    H_CHECK(again.id == t1.id && !strcmp(again.name, t1.name));
    reign__task_row t2 = submit(sub, "0000000000000002", "two", true);
    reign__task_row t3 = submit(sub, "0000000000000003", "three", true);
    H_CHECK(t1.id < t2.id && t2.id < t3.id);
    char *big = calloc(1, REIGN_TASK_DATA_MAX + 1);
    bool made;
    H_RC(reign__tasks_submit(sub, DC, QUEUE, "0000000000000004", big, REIGN_TASK_DATA_MAX + 1,
                             &again, &made, err, sizeof err),
         REIGN_EINVAL);
    free(big);
    H_RC(reign__tasks_list(sub, DC, QUEUE, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 3 && rows.v[0].id == t1.id && rows.v[2].id == t3.id);
    reign__task_rows_free(&rows);
    reign__task_row r = read_task(sub, t2.name, 0);
    H_CHECK(r.state == REIGN_TASK_PENDING && r.data_len == 3 && !memcmp(r.data, "two", 3));
    reign__task_row_clear(&r);

    /* The master assigns the oldest, as many as asked; a stale fence assigns nothing. */
    reign__tasks_fence f1 = lead(m1, "guid-m1", 0);
    test_deposed(m1, &f1);
    H_CHECK(assign(m1, &f1, "w1", "wg1", 2, &rows) == 2);
    H_CHECK(rows.v[0].id == t1.id && rows.v[1].id == t2.id && !strcmp(rows.v[0].name, t1.name));
    reign__task_rows_free(&rows);
    r = read_task(w, t1.name, 0);
    H_CHECK(r.state == REIGN_TASK_ASSIGNED && !strcmp(r.worker, "w1") && r.term == f1.term);
    reign__task_row_clear(&r);

    /* Another master takes over: the first one can no longer assign nor take back. */
    reign__tasks_fence f2 = lead(m2, "guid-m2", f1.term);
    H_CHECK(assign(m1, &f1, "w1", "wg1", 5, &rows) == -1);
    H_CHECK(requeue(m1, &f1, "wg1") == -1);
    test_deposed(m2, &f2);

    /* The worker's results: once, and only by the registration the row names. */
    H_CHECKF(reign__tasks_assigned(w, DC, QUEUE, "wg1", &rows, err, sizeof err) == 0, "%s", err);
    H_CHECK(rows.n == 2 && rows.v[1].data_len == 3 && !memcmp(rows.v[1].data, "two", 3));
    reign__task_rows_free(&rows);
    H_RC(finish(w, t1.name, "wg-other", "no"), REIGN_ENOENT);
    H_RC(finish(w, t1.name, "wg1", "out1"), 0);
    H_RC(finish(w, t1.name, "wg1", "out2"), 1);
    r = read_task(sub, t1.name, 0);
    H_CHECK(r.state == REIGN_TASK_DONE && r.exit_code == 3 && r.output_len == 4 &&
            !memcmp(r.output, "out1", 4) && r.data_len == 0 && r.done_ms > 0);
    reign__task_row_clear(&r);

    /* The worker is gone: its other task is taken back, once. */
    H_CHECK(requeue(m2, &f2, "wg1") == 1);
    H_CHECK(requeue(m2, &f2, "wg1") == 0);
    H_RC(finish(w, t2.name, "wg1", "late"), REIGN_ENOENT);
    r = read_task(sub, t2.name, 0);
    H_CHECK(r.state == REIGN_TASK_PENDING && r.requeued == 1 && !r.worker[0]);
    reign__task_row_clear(&r);
    H_CHECK(assign(m2, &f2, "w2", "wg2", 5, &rows) == 2);
    H_CHECK(rows.v[0].id == t2.id && rows.v[1].id == t3.id);
    reign__task_rows_free(&rows);
    reign__sql_rows load;
    H_CHECKF(reign__tasks_load(m2, DC, QUEUE, &load, err, sizeof err) == 0, "%s", err);
    H_CHECK(load.n_rows == 1 && !strcmp(reign__sql_cell(&load, 0, 0), "wg2") &&
            !strcmp(reign__sql_cell(&load, 0, 1), "2"));
    reign__sql_rows_free(&load);

    /* Delete: done tasks only. */
    H_RC(reign__tasks_delete(sub, DC, QUEUE, t2.name, err, sizeof err), REIGN_ENOENT);
    H_RC(reign__tasks_delete(sub, DC, QUEUE, t1.name, err, sizeof err), 0);
    read_task(sub, t1.name, REIGN_ENOENT);
    H_RC(finish(w, t2.name, "wg2", ""), 0);
    H_RC(finish(w, t3.name, "wg2", ""), 0);
    test_batches(sub, m2, w, &f2, &t2);

    /* Which of many waited tasks are done: ten-digit ids over several statements (none has a
     * length limit), and a task is done only in its own queue. */
    enum { N_WAITED = 2 * REIGN__TASKS_DONE_CHUNK + 1 };
    static char names[N_WAITED][64];
    char *waited[N_WAITED];
    for (int i = 0; i < N_WAITED - 1; i++) {
        snprintf(names[i], sizeof names[i], "t_%016x_%010lld", i + 1, 9999990000LL + i);
        waited[i] = names[i];
    }
    snprintf(names[N_WAITED - 1], sizeof names[0], "%s", t2.name);
    waited[N_WAITED - 1] = names[N_WAITED - 1];
    H_RC(reign__tasks_done(sub, DC, QUEUE, waited, N_WAITED, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 1 && rows.v[0].id == t2.id && rows.v[0].state == REIGN_TASK_DONE);
    reign__task_rows_free(&rows);
    H_RC(reign__tasks_done(sub, DC, "elsewhere", waited, N_WAITED, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 0);
    reign__task_rows_free(&rows);

    if (reign__sql_kind_of(m2) != REIGN__SQL_SQLITE)
        test_skip_locked(sub, m2, &f2);

    /* A sweep removes old results (here: all, by a retention in the future). */
    bool deposed;
    H_CHECK(reign__tasks_sweep(m2, DC, QUEUE, &f2, -100000, &deposed, err, sizeof err) >= 2 &&
            !deposed);
    H_RC(reign__tasks_list(sub, DC, QUEUE, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 0);

    /* Deposed (`reign cede`): the lease keeps its owner and term, and fences all the same. */
    H_CHECKF(reign__sql_lease_depose(m1, DC, MASTER, f2.term, err, sizeof err) == 1, "%s", err);
    reign__task_row t5 = submit(sub, "0000000000000005", "five", true);
    H_CHECK(assign(m2, &f2, "w2", "wg2", 5, &rows) == -1);

    /* A row reign could not have written. */
    reign__sqlv args[3] = {REIGN__SQLV_S(DC), REIGN__SQLV_S(QUEUE),
                           REIGN__SQLV_S("00000000000000f1")};
    H_CHECKF(reign__sql_query(sub, "a foreign row",
                              "INSERT INTO {K} (data_center, queue_name, guid, state, "
                              "submitted_ms) VALUES ({1}, {2}, {3}, 7, 0)",
                              args, 3, NULL, err, sizeof err) == 1,
             "%s", err);
    H_RC(reign__tasks_list(sub, DC, QUEUE, &rows, err, sizeof err), 0);
    H_CHECK(rows.n == 1 && rows.v[0].id == t5.id); /* the foreign row skipped */
    reign__task_rows_free(&rows);
    reign__sql_rows ids;
    H_CHECKF(reign__sql_query(sub, "its id", "SELECT id FROM {K} WHERE guid = {3}", args, 3, &ids,
                              err, sizeof err) >= 0,
             "%s", err);
    char name[64];
    snprintf(name, sizeof name, "t_00000000000000f1_%010lld", atoll(reign__sql_cell(&ids, 0, 0)));
    reign__sql_rows_free(&ids);
    read_task(sub, name, REIGN_EFOREIGN);

    test_remove(sub, m1, w);

    reign__task_row_clear(&t1);
    reign__task_row_clear(&t2);
    reign__task_row_clear(&t3);
    reign__task_row_clear(&again);
    reign__task_row_clear(&t5);
    reign__sql_close(sub);
    reign__sql_close(m1);
    reign__sql_close(m2);
    reign__sql_close(w);
}

/* ---- through the public API ------------------------------------------------------------------ */

typedef struct answer {
    int done, err;
    char task[REIGN_TASKS_TASK_MAX + 1];
    reign_task_state state;
    int exit_code;
    char output[32];
    size_t n;
} answer;

static int pred_answered(void *arg)
{
    return ((answer *)arg)->done;
}

static void on_submitted(reign_client *c, int e, const char *task, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = e;
    snprintf(a->task, sizeof a->task, "%s", task ? task : "");
}

static void on_info(reign_client *c, int e, const reign_task_info *info, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = e;
    if (info) {
        a->state = info->state;
        a->exit_code = info->exit_code;
        snprintf(a->output, sizeof a->output, "%.*s", (int)info->output_len,
                 (const char *)info->output);
    }
}

static void on_listed(reign_client *c, int e, const reign_task_info *v, size_t n, void *ud)
{
    answer *a = ud;
    (void)c;
    (void)v;
    a->done++;
    a->err = e;
    a->n = n;
}

static void on_deleted(reign_client *c, int e, void *ud)
{
    answer *a = ud;
    (void)c;
    a->done++;
    a->err = e;
}

/*
 * Submit, status, wait, list and delete on a client of the store, the master's and the
 * worker's part played behind its back: a wait from another client is called back once the
 * result is written (woken by the store's notice, or its poll), once; a wait for a task done
 * already returns at once; a deleted task is unknown.
 */
void scenario_tasks_api(void)
{
    h_cand *s = h_cand_new("submitter", h_uri("data_center=" DC), NULL, NULL, NULL);
    h_cand *o = h_cand_new("waiter", h_uri("data_center=" DC), NULL, NULL, NULL);
    answer t = {0}, t2 = {0}, st = {0}, wait = {0}, l = {0};
    H_OK(reign_tasks_submit(s->client, QUEUE, "payload", 7, on_submitted, &t));
    H_OK(reign_tasks_submit(s->client, QUEUE, "second", 6, on_submitted, &t2));
    H_WAIT(pred_answered, &t, "submit");
    H_WAIT(pred_answered, &t2, "second submit");
    H_CHECK(t.err == 0 && t2.err == 0 && strcmp(t.task, t2.task));
    H_OK(reign_tasks_status(o->client, QUEUE, t.task, on_info, &st));
    H_WAIT(pred_answered, &st, "status");
    H_CHECK(st.err == 0 && st.state == REIGN_TASK_PENDING);
    H_OK(reign_tasks_wait(o->client, QUEUE, t.task, on_info, &wait));
    H_OK(reign_tasks_list(o->client, QUEUE, on_listed, &l));
    H_WAIT(pred_answered, &l, "list");
    H_CHECK(l.err == 0 && l.n == 2 && !wait.done);

    /* The master's and the worker's writes, behind the clients' back. */
    reign__sqlconn *c = raw_connect();
    H_CHECKF(reign__sql_ensure_schema(c, err, sizeof err) == 0, "%s", err);
    reign__tasks_fence f = lead(c, "m", 0);
    reign__task_rows rows;
    H_CHECK(assign(c, &f, "w", "wg", 1, &rows) == 1 && !strcmp(rows.v[0].name, t.task));
    reign__task_rows_free(&rows);
    H_RC(finish(c, t.task, "wg", "done!"), 0);
    reign__sql_close(c);

    H_WAIT(pred_answered, &wait, "the wait");
    H_CHECK(wait.done == 1 && wait.err == 0 && wait.state == REIGN_TASK_DONE &&
            wait.exit_code == 3 && !strcmp(wait.output, "done!"));
    answer again = {0}, del = {0}, gone = {0};
    H_OK(reign_tasks_wait(s->client, QUEUE, t.task, on_info, &again));
    H_WAIT(pred_answered, &again, "a wait for a task done");
    H_CHECK(again.err == 0 && again.state == REIGN_TASK_DONE);
    H_OK(reign_tasks_delete(s->client, QUEUE, t.task, on_deleted, &del));
    H_WAIT(pred_answered, &del, "delete");
    H_OK(del.err);
    H_OK(reign_tasks_status(s->client, QUEUE, t.task, on_info, &gone));
    H_WAIT(pred_answered, &gone, "status after the delete");
    H_RC(gone.err, REIGN_ENOENT);
    h_run_until(NULL, NULL, 0);
    H_CHECK(wait.done == 1 && t.done == 1);
    h_cand_close(o);
    h_cand_close(s);
}
