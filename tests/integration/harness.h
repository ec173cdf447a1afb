/*
 * harness.h - a small harness for reign's C integration tests.
 *
 * A test makes candidates (h_cand: one reign_client and at most one
 * election each) on one store, and turns every client's loop with
 * h_run_until() until a predicate holds or a generous timeout passes.  The
 * store is named by $REIGN_TEST_STORE (zk, sqlite, postgres or mariadb; zk
 * when unset) and h_uri() gives its URI; the harness starts no server: the
 * ctest fixtures have (tests/integration/tests.cmake for ZooKeeper, whose
 * connect string is in $REIGN_TEST_ZK_FILE; tests/sql/tests.cmake for the
 * SQL servers, whose state dirs are $REIGN_TEST_PG_DIR and
 * $REIGN_TEST_MARIADB_DIR), and SQLite needs none.  Every election event is recorded, so a test
 * can look at what happened afterwards; h_finish() proves over all of them
 * that leaderships never overlapped and that terms and tokens only grew,
 * then frees everything.
 *
 * There is no timed assertion here: a timeout only bounds how long a test
 * waits for something that must happen, and a failing check ends the
 * program with a message naming the file and line.
 *
 * h_raw_*() open plain ZooKeeper C client handles (synchronous calls: this
 * is test code) to look at, or tamper with, the nodes an election made: for
 * the tests of ZooKeeper alone.
 *
 * A contract test (tests/contract/) starts with h_contract_init() instead of
 * h_init(), and runs once per store.
 */
#ifndef REIGN_TEST_HARNESS_H
#define REIGN_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>

#include <reign/reign.h>

/* How long a test waits for anything that must happen: generous, since a loaded CI machine
 * (or a sanitizer build) may be slow; a correct run never comes near it. */
#define H_WAIT_MS 60000

#define H_ID_MAX   128
#define H_NODE_MAX 128
#define H_DATA_MAX 64

/* ---- checks ------------------------------------------------------------- */

void h_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

#define H_CHECK(cond)                                                                              \
    do {                                                                                           \
        if (!(cond))                                                                               \
            h_fail(__FILE__, __LINE__, "check failed: %s", #cond);                                 \
    } while (0)

#define H_CHECKF(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            h_fail(__FILE__, __LINE__, __VA_ARGS__);                                               \
    } while (0)

/* `expr` must return 0; otherwise the error's name and message are shown. */
#define H_OK(expr)                                                                                 \
    do {                                                                                           \
        int h_rc_ = (expr);                                                                        \
        if (h_rc_ != 0)                                                                            \
            h_fail(__FILE__, __LINE__, "%s returned %d (%s: %s)", #expr, h_rc_,                    \
                   reign_err_name(h_rc_), reign_strerror(h_rc_));                                  \
    } while (0)

/* `expr` must return `want` (an error code, say); otherwise both are named. */
#define H_RC(expr, want)                                                                           \
    do {                                                                                           \
        int h_rc_ = (expr);                                                                        \
        H_CHECKF(h_rc_ == (want), "%s gave %s, want %s", #expr, reign_err_name(h_rc_),             \
                 reign_err_name(want));                                                            \
    } while (0)

/* A line on stderr, prefixed with the time since the test began. */
void h_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- environment -------------------------------------------------------- */

/* Call first: sets up logging (REIGN_TEST_LOG=debug|info|... , default info). */
void h_init(const char *test_name);

/* The stores a test can run on, as $REIGN_TEST_STORE names them. */
typedef enum h_store_kind {
    H_STORE_ZK,
    H_STORE_ETCD,
    H_STORE_SQLITE,
    H_STORE_POSTGRES,
    H_STORE_MARIADB
} h_store_kind;

/* The store of this run ($REIGN_TEST_STORE; H_STORE_ZK when unset), its name ("zk",
 * "sqlite", "postgres", "mariadb"), and whether it is one of the SQL stores.  An unknown name
 * fails the test. */
h_store_kind h_store(void);
const char *h_store_name(void);
int h_store_is_sql(void);

/* The connect string ("127.0.0.1:p,...") from $REIGN_TEST_ZK_FILE; exits if unset. */
const char *h_hosts(void);

/*
 * The URI of the store of this run, plus `query` ("name=value&...", may be NULL); in a static
 * buffer.  zk: "zk://<hosts>".  The SQL stores get a table of the test's own (table=t_<test>,
 * so tests sharing a server never meet), poll_ms=100 (MariaDB's followers poll: a change is
 * seen within 100 ms rather than one renew period) and, for the servers, user reign with
 * password_file=<state dir>/password; SQLite a file under $REIGN_TEST_STATE_DIR, removed by the
 * first call so that every run starts from nothing.
 */
const char *h_uri(const char *query);

/* The table h_uri() names on the SQL stores: "t_<test>" until h_set_table() names another, for
 * every later h_uri() (a test that must start from no table on every run, or that needs a
 * second table).  `table` is copied. */
const char *h_table(void);
void h_set_table(const char *table);

/*
 * The start of a contract test (tests/contract/contract_<capability>.c): h_init(test_name),
 * then, when ctest says the store of this run lacks the capability ($REIGN_TEST_GAP holds
 * why, e.g. "groups need zk"), runs `refused` (may be NULL: it proves that the store refuses
 * the capability as its header documents), prints "<test>: <store>: not supported (<why>)"
 * and exits with H_SKIP, which ctest shows as "Skipped": a gap is visible, never a pass.
 */
#define H_SKIP 77
void h_contract_init(const char *test_name, void (*refused)(void));

/* A fresh election name "<prefix>-<pid>-<random hex>", so that tests sharing a server never
 * meet. */
void h_unique_name(char *buf, size_t len, const char *prefix);

/* ---- candidates --------------------------------------------------------- */

typedef struct h_event {
    reign_election_event_type type;
    int64_t at_ns;
    uint64_t term, token;
    reign_demote_reason reason;
    int error;
    int has_leader; /* LEADER_CHANGED, READY */
    char leader_id[H_ID_MAX];
    uint64_t leader_term, leader_token;
    char leader_data[H_DATA_MAX]; /* the leader's payload, cut to H_DATA_MAX - 1 bytes */
    size_t leader_data_len;       /* its whole length */
} h_event;

typedef struct h_cand {
    char id[H_ID_MAX];
    char election_name[256]; /* the election joined ("" if none) */
    reign_client *client;
    reign_election *election;
    reign_conn_state state; /* the last connection state reported */
    int closed;             /* h_cand_close() called */
    int paused;             /* h_cand_pause() */
    int64_t closed_ns;
    h_event *ev;
    size_t n_ev, cap_ev;
    /* optional hook, called after each event is recorded */
    void (*on_event)(struct h_cand *c, const h_event *ev);
    /* optional hook, called with each line the library logs through this client (set it with
     * h_cand_on_log(): a SQL client's worker thread logs too) */
    void (*on_log)(struct h_cand *c, reign_log_level level, const char *msg);
    void *userdata;
} h_cand;

/*
 * A candidate: a client for `uri` (NULL: h_uri(NULL)) with `copts` (may be NULL), connected
 * (waits for the session), joined to election `name` with `eopts` (may be NULL; its id
 * defaults to `id`, its cb and userdata are the harness's).  With name NULL only the client
 * is made.  Fails the test on any error.  The candidate is registered: h_run_until() turns its
 * loop, h_finish() checks and frees it.
 */
h_cand *h_cand_new(const char *id, const char *uri, const reign_client_options *copts,
                   const char *name, const reign_election_options *eopts);

/* Joins `name` later (a candidate made with name NULL). */
void h_cand_join(h_cand *c, const char *name, const reign_election_options *eopts);

/* Sets c's log hook while its client runs (other threads may be logging). */
void h_cand_on_log(h_cand *c, void (*hook)(h_cand *c, reign_log_level level, const char *msg));

/* Frees the election (if any) and the client; the recorded events stay. */
void h_cand_close(h_cand *c);

/* With paused 1, h_run_until() no longer turns c's loop, as if its program stood still: what
 * the store sends it meanwhile waits unread until h_cand_pause(c, 0). */
void h_cand_pause(h_cand *c, int paused);

/* Local answers. */
int h_is_leader(const h_cand *c);
size_t h_count(const h_cand *c, reign_election_event_type type);
/* The last event of `type`, or NULL. */
const h_event *h_last(const h_cand *c, reign_election_event_type type);

/* ---- running ------------------------------------------------------------ */

typedef int h_pred(void *arg);

/*
 * Turns the loop of every open candidate until pred(arg) is true (checked before waiting and
 * after every turn) or timeout_ms passes.  Returns 1 if pred held, 0 on timeout.
 */
int h_run_until(h_pred *pred, void *arg, int timeout_ms);

/* h_run_until(pred, arg, H_WAIT_MS), failing the test with `what` on timeout. */
#define H_WAIT(pred, arg, what)                                                                    \
    do {                                                                                           \
        if (!h_run_until((pred), (arg), H_WAIT_MS))                                                \
            h_fail(__FILE__, __LINE__, "timed out after %d ms waiting for %s", H_WAIT_MS, (what)); \
    } while (0)

/* Turns the loops for `ms` (an observation window: "nothing happens meanwhile"). */
void h_run_for(int ms);

/* Predicates for the common waits. */
int h_pred_leader(void *cand);       /* the candidate leads */
int h_pred_ready(void *cand);        /* READY seen */
int h_pred_left(void *cand);         /* LEFT seen */
int h_pred_any_leader(void *unused); /* some open candidate leads */

/* The open candidate that leads, or NULL (fails the test if two do). */
h_cand *h_leader(void);

/* ---- snapshots (reign_election_query) ----------------------------------- */

#define H_VIEW_MAX 64

typedef struct h_view {
    int err; /* 0, or the query's error (REIGN_ENOENT: no such election) */
    reign_strategy strategy;
    int has_leader;
    char leader_id[H_ID_MAX];
    uint64_t term, token;
    char leader_data[H_DATA_MAX]; /* payloads: as in h_event */
    size_t n;
    char ids[H_VIEW_MAX][H_ID_MAX];
    char nodes[H_VIEW_MAX][H_NODE_MAX];
    char data[H_VIEW_MAX][H_DATA_MAX];
    int64_t joined_ms[H_VIEW_MAX];
} h_view;

/* Queries `name` through c's client, turning every loop until the answer. */
void h_query(h_cand *c, const char *name, h_view *out);
/* Waits (H_WAIT_MS at most) until c's snapshot of `name` lists a candidate with id `id`. */
void h_wait_listed(h_cand *c, const char *name, const char *id);

/* ---- designation and handoffs ------------------------------------------- */

/* reign_election_designate(name, id) on op's client, its answer waited for: returns the
 * answer's error (0, or REIGN_ENOENT when no such candidate stands); fails the test if the call
 * is refused. */
int h_designate(h_cand *op, const char *name, const char *id);

/* Checks that new_ took over from old_ by a handoff: old_'s last DEMOTED (reason handoff) came
 * before new_'s last ELECTED, whose term and token are greater than old_'s last. */
void h_check_handoff(const h_cand *old_, const h_cand *new_);

/* ---- one-shot values (<reign/value.h>) ---------------------------------- */

/* The answer to a reign_value_get/set/delete(): zero-initialise it, pass h_vans_cb with it as
 * userdata, then H_WAIT(h_pred_answered, &a, ...); or call h_value_*() below. */
typedef struct h_vans {
    int done;
    int err;
    int has_value;
    reign_value v;         /* the answer's value: key and data NULL, see data */
    char data[H_DATA_MAX]; /* its payload as text, cut to H_DATA_MAX - 1 bytes */
} h_vans;

void h_vans_cb(reign_client *client, int err, const reign_value *v, void *vans);
int h_pred_answered(void *vans);

/* The call on c's client, its answer waited for; fails the test if the call is refused.  set
 * writes the text `data` (without its '\0'). */
h_vans h_value_get(h_cand *c, const char *key);
h_vans h_value_set(h_cand *c, const char *key, const char *data, int64_t version);
h_vans h_value_delete(h_cand *c, const char *key, int64_t version);

/* ---- watched values (<reign/value.h>) ------------------------------------ */

typedef struct h_vev {
    reign_value_event_type type;
    int has_value;
    char data[H_DATA_MAX]; /* the payload as text, cut to H_DATA_MAX - 1 bytes */
    int64_t version;
    int error;
} h_vev;

/* A watch that records its events (zero-initialise it, then h_vwatch_start()). */
typedef struct h_vwatch {
    reign_value_watch *w;
    h_vev *ev;
    size_t n, cap;
} h_vwatch;

/* Starts watching `key` on c's client; fails the test on error. */
void h_vwatch_start(h_vwatch *x, h_cand *c, const char *key);

/* Waits for event number n (1-based), checks that it has `type` and the payload `data` (NULL:
 * no value), and returns it. */
const h_vev *h_vwatch_expect(h_vwatch *x, size_t n, reign_value_event_type type, const char *data);

/* Waits until the last event carries the payload `data`. */
void h_vwatch_wait_last(h_vwatch *x, const char *data);

/* Frees the watch and its events. */
void h_vwatch_free(h_vwatch *x);

/* ---- the end ------------------------------------------------------------ */

/*
 * Proves, election by election, over every candidate's recorded events that no two
 * leaderships overlapped and that terms and tokens strictly increased from one to the next (a
 * leadership still held ends now; one whose client was closed while leading ends at the
 * close).  Returns the number of leaderships.  Fails the test on a violation.
 */
size_t h_check_leadership(void);

/* h_check_leadership(), then frees every candidate; prints "PASS <test>".  Returns 0. */
int h_finish(void);

/* ---- raw ZooKeeper access ----------------------------------------------- */

/*
 * A plain ZooKeeper handle to `hosts`, connected (waits up to H_WAIT_MS), with digest
 * credentials `auth` ("user:password") added if not NULL.  Fails the test on error.
 */
zhandle_t *h_raw_connect(const char *hosts, const char *auth);
void h_raw_close(zhandle_t *zh);

/* The children of `path` sorted by name into `out` (at most max); returns how many, or a
 * negative ZooKeeper error (ZNONODE, ...). */
int h_raw_children(zhandle_t *zh, const char *path, char out[][H_NODE_MAX], int max);

/* The symbolic name of a ZooKeeper error code ("ZNOAUTH"). */
const char *h_zerr_name(int zrc);

#endif
