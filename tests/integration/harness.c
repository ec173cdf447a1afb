/*
 * harness.c - the C integration tests' harness (see harness.h): the store of
 * the run and its URI, candidates that record their events, one poll loop
 * over all of them, snapshots, designation and handoffs, one-shot and watched
 * values, the leadership checker, and raw ZooKeeper handles.
 */
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_CANDS 256

static const char *test_name = "test";
static int64_t t0_ns;
static reign_log_level log_level = REIGN_LOG_INFO;
static h_cand *cands[MAX_CANDS];
static size_t n_cands;

static int64_t now_ns(void)
{
    return reign_now_ns();
}

/* ---- checks and logging -------------------------------------------------- */

static void vlog(const char *who, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void vlog(const char *who, const char *fmt, va_list ap)
{
    char msg[2048];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    /* One fprintf per line: the ZooKeeper client's threads log too. */
    fprintf(stderr, "[%8.3f] %s: %s\n", (double)(now_ns() - t0_ns) / 1e9, who, msg);
}

void h_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(test_name, fmt, ap);
    va_end(ap);
}

void h_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "FAIL %s: %s:%d: %s\n", test_name, file, line, msg);
    fflush(stderr);
    /* No cleanup: the server removes our ephemeral nodes when the sessions lapse, and every
     * election name is unique to this run. */
    _exit(1);
}

static void lib_log(reign_log_level level, const char *msg, void *userdata)
{
    h_cand *c = userdata;
    char who[H_ID_MAX + 16];
    snprintf(who, sizeof(who), "%s/%s", c ? c->id : "reign", reign_log_level_name(level));
    fprintf(stderr, "[%8.3f] %s: %s\n", (double)(now_ns() - t0_ns) / 1e9, who, msg);
    /* The SQL worker's thread logs too: the hook is read atomically (h_cand_on_log()). */
    void (*hook)(h_cand *, reign_log_level, const char *) =
        c ? __atomic_load_n(&c->on_log, __ATOMIC_ACQUIRE) : NULL;
    if (hook)
        hook(c, level, msg);
}

void h_cand_on_log(h_cand *c, void (*hook)(h_cand *c, reign_log_level level, const char *msg))
{
    __atomic_store_n(&c->on_log, hook, __ATOMIC_RELEASE);
}

void h_init(const char *name)
{
    test_name = name;
    t0_ns = now_ns();
    const char *lv = getenv("REIGN_TEST_LOG");
    if (lv && *lv) {
        int l = reign_log_level_parse(lv);
        if (l >= 0)
            log_level = (reign_log_level)l;
    }
    reign_set_log(lib_log, NULL, log_level);
    setvbuf(stdout, NULL, _IOLBF, 0);
}

/* ---- environment -------------------------------------------------------- */

static const char *need_env(const char *name)
{
    const char *v = getenv(name);
    H_CHECKF(v && *v, "%s is not set (run me through ctest)", name);
    return v;
}

/* The first line of the file at `path`, which a server script wrote, into out. */
static void read_line(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    H_CHECKF(f, "cannot read '%s' (is the server's fixture up?)", path);
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    H_CHECKF(out[0], "'%s' is empty", path);
}

const char *h_hosts(void)
{
    static char hosts[1024];
    if (!hosts[0])
        read_line(need_env("REIGN_TEST_ZK_FILE"), hosts, sizeof(hosts));
    return hosts;
}

static const char *const store_names[] = {"zk", "etcd", "sqlite", "postgres", "mariadb"};

h_store_kind h_store(void)
{
    const char *s = getenv("REIGN_TEST_STORE");
    if (!s || !*s)
        return H_STORE_ZK;
    for (size_t i = 0; i < sizeof(store_names) / sizeof(store_names[0]); i++)
        if (!strcmp(s, store_names[i]))
            return (h_store_kind)i;
    h_fail(__FILE__, __LINE__,
           "REIGN_TEST_STORE '%s' is none of zk, etcd, sqlite, postgres, mariadb", s);
}

const char *h_store_name(void)
{
    return store_names[h_store()];
}

int h_store_is_sql(void)
{
    return h_store() != H_STORE_ZK && h_store() != H_STORE_ETCD;
}

/* A SQL server's URI, from the state dir its script keeps (see tests/sql/tests.cmake). */
static void server_base(char *out, size_t len, const char *scheme, const char *dir_env)
{
    const char *dir = need_env(dir_env);
    char path[1024], port[32];
    snprintf(path, sizeof(path), "%s/port", dir);
    read_line(path, port, sizeof(port));
    snprintf(out, len, "%s://reign@127.0.0.1:%s/reign?password_file=%s/password&", scheme, port,
             dir);
}

/* mkdir -p: ctest makes no state dir. */
static void make_dirs(const char *dir)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* SQLite's file: under the test's state dir, fresh for each run. */
static void sqlite_base(char *out, size_t len)
{
    const char *dir = need_env("REIGN_TEST_STATE_DIR");
    static char path[1024];
    if (!path[0]) {
        make_dirs(dir);
        snprintf(path, sizeof(path), "%s/%s.db", dir, test_name);
        char side[1100];
        for (const char *const *f = (const char *const[]){"", "-wal", "-shm", NULL}; *f; f++) {
            snprintf(side, sizeof(side), "%s%s", path, *f);
            unlink(side);
        }
    }
    snprintf(out, len, "sqlite://%s?", path);
}

static char table[128];

const char *h_table(void)
{
    if (!table[0])
        snprintf(table, sizeof(table), "t_%s", test_name);
    return table;
}

void h_set_table(const char *name)
{
    H_CHECKF(strlen(name) < sizeof(table), "table name '%s' too long", name);
    snprintf(table, sizeof(table), "%s", name);
}

const char *h_uri(const char *query)
{
    static char uri[2048];
    char base[1536];
    switch (h_store()) {
    case H_STORE_ZK:
        snprintf(uri, sizeof(uri), "zk://%s%s%s", h_hosts(), query ? "?" : "", query ? query : "");
        return uri;
    case H_STORE_ETCD: {
        static char hosts[1024];
        if (!hosts[0])
            read_line(need_env("REIGN_TEST_ETCD_FILE"), hosts, sizeof(hosts));
        snprintf(uri, sizeof(uri), "etcd://%s%s%s", hosts, query ? "?" : "", query ? query : "");
        return uri;
    }
    case H_STORE_SQLITE:
        sqlite_base(base, sizeof(base));
        break;
    case H_STORE_POSTGRES:
        server_base(base, sizeof(base), "postgres", "REIGN_TEST_PG_DIR");
        break;
    case H_STORE_MARIADB:
        server_base(base, sizeof(base), "mysql", "REIGN_TEST_MARIADB_DIR");
        break;
    }
    /* $REIGN_TEST_URI_EXTRA: more parameters for every SQL URI (a variant of a store, such as
     * leases=row). */
    const char *extra = getenv("REIGN_TEST_URI_EXTRA");
    snprintf(uri, sizeof(uri), "%stable=%s&poll_ms=100%s%s%s%s", base, h_table(),
             extra && *extra ? "&" : "", extra && *extra ? extra : "", query ? "&" : "",
             query ? query : "");
    return uri;
}

void h_contract_init(const char *name, void (*refused)(void))
{
    h_init(name);
    const char *why = getenv("REIGN_TEST_GAP");
    if (!why || !*why) {
        h_log("on %s", h_store_name());
        return;
    }
    if (refused)
        refused();
    printf("%s: %s: not supported (%s)\n", name, h_store_name(), why);
    fflush(stdout);
    exit(H_SKIP);
}

void h_unique_name(char *buf, size_t len, const char *prefix)
{
    unsigned long r = (unsigned long)now_ns() ^ ((unsigned long)getpid() << 20);
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(&r, sizeof(r), 1, f) != 1)
            r ^= 0x9e3779b97f4a7c15ul;
        fclose(f);
    }
    snprintf(buf, len, "%s-%ld-%08lx", prefix, (long)getpid(), r & 0xfffffffful);
}

/* ---- candidates --------------------------------------------------------- */

static void record(h_cand *c, const h_event *ev)
{
    if (c->n_ev == c->cap_ev) {
        size_t cap = c->cap_ev ? 2 * c->cap_ev : 16;
        h_event *v = realloc(c->ev, cap * sizeof(*v));
        H_CHECK(v != NULL);
        c->ev = v;
        c->cap_ev = cap;
    }
    c->ev[c->n_ev++] = *ev;
    if (c->on_event)
        c->on_event(c, &c->ev[c->n_ev - 1]);
}

/* A payload as text, cut to H_DATA_MAX - 1 bytes: the tests' payloads are short strings. */
static void copy_data(char out[H_DATA_MAX], const void *data, size_t len)
{
    if (len >= H_DATA_MAX)
        len = H_DATA_MAX - 1;
    if (len)
        memcpy(out, data, len);
    out[len] = '\0';
}

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    h_cand *c = userdata;
    h_event r;
    memset(&r, 0, sizeof(r));
    r.type = ev->type;
    r.at_ns = ev->at_ns;
    r.term = ev->term;
    r.token = ev->token;
    r.reason = ev->reason;
    r.error = ev->error;
    if ((ev->type == REIGN_ELECTION_LEADER_CHANGED || ev->type == REIGN_ELECTION_READY) &&
        ev->leader) {
        r.has_leader = 1;
        snprintf(r.leader_id, sizeof(r.leader_id), "%s", ev->leader->id ? ev->leader->id : "");
        r.leader_term = ev->leader->term;
        r.leader_token = ev->leader->token;
        copy_data(r.leader_data, ev->leader->data, ev->leader->data_len);
        r.leader_data_len = ev->leader->data_len;
    }
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        h_log("%s: ELECTED term=%llu token=%llu", c->id, (unsigned long long)ev->term,
              (unsigned long long)ev->token);
        break;
    case REIGN_ELECTION_DEMOTED:
        h_log("%s: DEMOTED reason=%s term=%llu", c->id, reign_demote_reason_name(ev->reason),
              (unsigned long long)ev->term);
        break;
    case REIGN_ELECTION_LEADER_CHANGED:
    case REIGN_ELECTION_READY:
        h_log("%s: %s leader=%s term=%llu", c->id,
              ev->type == REIGN_ELECTION_READY ? "READY" : "LEADER_CHANGED",
              r.has_leader ? r.leader_id : "(none)", (unsigned long long)r.leader_term);
        break;
    case REIGN_ELECTION_LEFT:
        h_log("%s: LEFT error=%d", c->id, ev->error);
        break;
    case REIGN_ELECTION_ERROR:
        h_log("%s: ERROR %s: %s", c->id, reign_err_name(ev->error), ev->message ? ev->message : "");
        break;
    }
    (void)e;
    record(c, &r);
}

static void on_state(reign_client *client, reign_conn_state state, void *userdata)
{
    h_cand *c = userdata;
    (void)client;
    c->state = state;
    h_log("%s: connection %s", c->id, reign_conn_state_name(state));
}

static int pred_connected(void *arg)
{
    h_cand *c = arg;
    /* A client that closed will not connect: say why now rather than after the wait. */
    H_CHECKF(c->state != REIGN_CONN_CLOSED, "%s: the client closed before its first session: %s",
             c->id, reign_client_errmsg(c->client));
    return c->state == REIGN_CONN_CONNECTED || c->state == REIGN_CONN_RECONNECTED;
}

h_cand *h_cand_new(const char *id, const char *uri, const reign_client_options *copts,
                   const char *name, const reign_election_options *eopts)
{
    H_CHECK(n_cands < MAX_CANDS);
    h_cand *c = calloc(1, sizeof(*c));
    H_CHECK(c != NULL);
    snprintf(c->id, sizeof(c->id), "%s", id);
    reign_client_options o;
    memset(&o, 0, sizeof(o));
    if (copts)
        o = *copts;
    o.size = sizeof(o);
    o.on_state = on_state;
    o.log_fn = lib_log;
    o.log_level = log_level;
    o.userdata = c;
    char err[512] = "";
    const char *u = uri ? uri : h_uri(NULL);
    int rc = reign_client_new(&c->client, u, &o, err, sizeof(err));
    H_CHECKF(rc == 0, "%s: reign_client_new('%s'): %s: %s", id, u, reign_err_name(rc), err);
    cands[n_cands++] = c;
    H_WAIT(pred_connected, c, "the first session");
    if (name)
        h_cand_join(c, name, eopts);
    return c;
}

void h_cand_join(h_cand *c, const char *name, const reign_election_options *eopts)
{
    reign_election_options eo;
    memset(&eo, 0, sizeof(eo));
    if (eopts)
        eo = *eopts;
    eo.size = sizeof(eo);
    if (!eo.id)
        eo.id = c->id;
    eo.cb = on_election;
    eo.userdata = c;
    H_CHECK(c->election == NULL);
    snprintf(c->election_name, sizeof(c->election_name), "%s", name);
    int rc = reign_election_join(&c->election, c->client, name, &eo);
    H_CHECKF(rc == 0, "%s: reign_election_join('%s'): %s", c->id, name, reign_err_name(rc));
}

void h_cand_close(h_cand *c)
{
    if (c->closed)
        return;
    c->closed = 1;
    /* The leadership, if any, ends here: before the session goes. */
    c->closed_ns = now_ns();
    c->election = reign_election_free(c->election);
    c->client = reign_client_free(c->client);
    h_log("%s: closed", c->id);
}

void h_cand_pause(h_cand *c, int paused)
{
    c->paused = paused;
    h_log("%s: loop %s", c->id, paused ? "paused" : "resumed");
}

int h_is_leader(const h_cand *c)
{
    return !c->closed && c->election && reign_election_is_leader(c->election);
}

size_t h_count(const h_cand *c, reign_election_event_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < c->n_ev; i++)
        n += c->ev[i].type == type;
    return n;
}

const h_event *h_last(const h_cand *c, reign_election_event_type type)
{
    for (size_t i = c->n_ev; i-- > 0;)
        if (c->ev[i].type == type)
            return &c->ev[i];
    return NULL;
}

/* ---- running ------------------------------------------------------------ */

int h_run_until(h_pred *pred, void *arg, int timeout_ms)
{
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        if (pred && pred(arg))
            return 1;
        int64_t now = now_ns();
        if (now >= deadline)
            return 0;
        struct pollfd pfd[MAX_CANDS];
        h_cand *who[MAX_CANDS];
        nfds_t n = 0;
        /* Wake at least every 50 ms: predicates may look at things other than events. */
        int64_t wait_ms = (deadline - now) / 1000000;
        if (wait_ms > 50)
            wait_ms = 50;
        for (size_t i = 0; i < n_cands; i++) {
            h_cand *c = cands[i];
            if (c->closed || c->paused)
                continue;
            int64_t t = reign_client_get_timeout_ms(c->client);
            if (t >= 0 && t < wait_ms)
                wait_ms = t;
            pfd[n].fd = reign_client_get_fd(c->client);
            pfd[n].events = POLLIN;
            who[n++] = c;
        }
        if (n == 0) {
            struct timespec ts = {0, wait_ms * 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        poll(pfd, n, (int)wait_ms);
        /* Process every client each turn: cheap, and timers need no readable fd. */
        for (nfds_t i = 0; i < n; i++)
            if (!who[i]->closed)
                reign_client_process(who[i]->client);
    }
}

void h_run_for(int ms)
{
    h_run_until(NULL, NULL, ms);
}

int h_pred_leader(void *arg)
{
    return h_is_leader(arg);
}

int h_pred_ready(void *arg)
{
    return h_count(arg, REIGN_ELECTION_READY) > 0;
}

int h_pred_left(void *arg)
{
    return h_count(arg, REIGN_ELECTION_LEFT) > 0;
}

int h_pred_any_leader(void *unused)
{
    (void)unused;
    return h_leader() != NULL;
}

h_cand *h_leader(void)
{
    h_cand *found = NULL;
    for (size_t i = 0; i < n_cands; i++) {
        if (!h_is_leader(cands[i]))
            continue;
        H_CHECKF(!found, "two candidates lead at once: %s and %s", found->id, cands[i]->id);
        found = cands[i];
    }
    return found;
}

/* ---- snapshots ---------------------------------------------------------- */

typedef struct query_state {
    h_view *out;
    int done;
} query_state;

static void on_query(reign_client *client, int err, const reign_election_view *v, void *userdata)
{
    query_state *q = userdata;
    h_view *out = q->out;
    (void)client;
    q->done = 1;
    memset(out, 0, sizeof(*out));
    out->err = err;
    if (err || !v)
        return;
    out->strategy = v->strategy;
    out->has_leader = v->has_leader;
    if (v->has_leader) {
        snprintf(out->leader_id, sizeof(out->leader_id), "%s", v->leader.id ? v->leader.id : "");
        out->term = v->leader.term;
        out->token = v->leader.token;
        copy_data(out->leader_data, v->leader.data, v->leader.data_len);
    }
    H_CHECKF(v->n_candidates <= H_VIEW_MAX, "too many candidates (%zu)", v->n_candidates);
    out->n = v->n_candidates;
    for (size_t i = 0; i < v->n_candidates; i++) {
        snprintf(out->ids[i], H_ID_MAX, "%s", v->candidates[i].id ? v->candidates[i].id : "");
        snprintf(out->nodes[i], H_NODE_MAX, "%s",
                 v->candidates[i].node ? v->candidates[i].node : "");
        copy_data(out->data[i], v->candidates[i].data, v->candidates[i].data_len);
        out->joined_ms[i] = v->candidates[i].joined_ms;
    }
}

static int pred_done(void *arg)
{
    return ((query_state *)arg)->done;
}

void h_query(h_cand *c, const char *name, h_view *out)
{
    query_state q = {out, 0};
    H_CHECK(!c->closed);
    H_OK(reign_election_query(c->client, name, on_query, &q));
    H_WAIT(pred_done, &q, "the answer to a query");
}

typedef struct listing {
    h_cand *asker;
    const char *name, *id;
} listing;

static int pred_listed(void *arg)
{
    listing *l = arg;
    h_view v;
    h_query(l->asker, l->name, &v);
    for (size_t i = 0; v.err == 0 && i < v.n; i++)
        if (!strcmp(v.ids[i], l->id))
            return 1;
    return 0;
}

void h_wait_listed(h_cand *c, const char *name, const char *id)
{
    listing l = {c, name, id};
    H_WAIT(pred_listed, &l, "the candidate to stand");
}

/* ---- designation and handoffs ------------------------------------------- */

typedef struct done_state {
    int called, err;
} done_state;

static void on_done(reign_client *client, int err, void *userdata)
{
    done_state *d = userdata;
    (void)client;
    d->called = 1;
    d->err = err;
}

static int pred_called(void *arg)
{
    return ((done_state *)arg)->called;
}

int h_designate(h_cand *op, const char *name, const char *id)
{
    done_state d = {0};
    H_OK(reign_election_designate(op->client, name, id, on_done, &d));
    H_WAIT(pred_called, &d, "the designation to be written");
    return d.err;
}

void h_check_handoff(const h_cand *old_, const h_cand *new_)
{
    const h_event *d = h_last(old_, REIGN_ELECTION_DEMOTED);
    const h_event *oe = h_last(old_, REIGN_ELECTION_ELECTED);
    const h_event *ne = h_last(new_, REIGN_ELECTION_ELECTED);
    H_CHECK(d && oe && ne);
    H_CHECKF(d->reason == REIGN_DEMOTE_HANDOFF, "%s demoted with %s", old_->id,
             reign_demote_reason_name(d->reason));
    H_CHECKF(d->at_ns < ne->at_ns, "%s elected before %s stepped down", new_->id, old_->id);
    H_CHECK(ne->term > oe->term && ne->token > oe->token);
}

/* ---- one-shot values ---------------------------------------------------- */

void h_vans_cb(reign_client *client, int err, const reign_value *v, void *vans)
{
    h_vans *a = vans;
    (void)client;
    a->done = 1;
    a->err = err;
    if (v) {
        a->has_value = 1;
        a->v = *v;
        a->v.key = NULL;
        a->v.data = NULL;
        copy_data(a->data, v->data, v->data_len);
    }
}

int h_pred_answered(void *vans)
{
    return ((h_vans *)vans)->done;
}

h_vans h_value_get(h_cand *c, const char *key)
{
    h_vans a = {0};
    H_OK(reign_value_get(c->client, key, h_vans_cb, &a));
    H_WAIT(h_pred_answered, &a, "a get's answer");
    return a;
}

h_vans h_value_set(h_cand *c, const char *key, const char *data, int64_t version)
{
    h_vans a = {0};
    H_OK(reign_value_set(c->client, key, data, strlen(data), version, h_vans_cb, &a));
    H_WAIT(h_pred_answered, &a, "a set's answer");
    return a;
}

h_vans h_value_delete(h_cand *c, const char *key, int64_t version)
{
    h_vans a = {0};
    H_OK(reign_value_delete(c->client, key, version, h_vans_cb, &a));
    H_WAIT(h_pred_answered, &a, "a delete's answer");
    return a;
}

/* ---- watched values ----------------------------------------------------- */

static void on_value(reign_value_watch *w, const reign_value_event *ev, void *userdata)
{
    h_vwatch *x = userdata;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 16;
        h_vev *v = realloc(x->ev, cap * sizeof(*v));
        H_CHECK(v != NULL);
        x->ev = v;
        x->cap = cap;
    }
    h_vev *e = &x->ev[x->n++];
    memset(e, 0, sizeof(*e));
    e->type = ev->type;
    e->error = ev->error;
    if (ev->value) {
        e->has_value = 1;
        copy_data(e->data, ev->value->data, ev->value->data_len);
        e->version = ev->value->version;
    }
    h_log("watch %s: %s %s", reign_value_watch_key(w), reign_value_event_name(ev->type),
          e->has_value ? e->data : "-");
}

void h_vwatch_start(h_vwatch *x, h_cand *c, const char *key)
{
    H_OK(reign_value_watch_start(&x->w, c->client, key, on_value, x));
}

typedef struct vwatch_n {
    h_vwatch *x;
    size_t n;
} vwatch_n;

static int pred_vwatch_n(void *arg)
{
    vwatch_n *a = arg;
    return a->x->n >= a->n;
}

const h_vev *h_vwatch_expect(h_vwatch *x, size_t n, reign_value_event_type type, const char *data)
{
    vwatch_n a = {x, n};
    H_WAIT(pred_vwatch_n, &a, "a watch event");
    const h_vev *e = &x->ev[n - 1];
    H_CHECKF(e->type == type && (data ? e->has_value && !strcmp(e->data, data) : !e->has_value),
             "watch event %zu is %s '%s', want %s '%s'", n, reign_value_event_name(e->type),
             e->has_value ? e->data : "-", reign_value_event_name(type), data ? data : "-");
    return e;
}

typedef struct vwatch_last {
    h_vwatch *x;
    const char *data;
} vwatch_last;

static int pred_vwatch_last(void *arg)
{
    vwatch_last *a = arg;
    const h_vwatch *x = a->x;
    return x->n && x->ev[x->n - 1].has_value && !strcmp(x->ev[x->n - 1].data, a->data);
}

void h_vwatch_wait_last(h_vwatch *x, const char *data)
{
    vwatch_last a = {x, data};
    H_WAIT(pred_vwatch_last, &a, "the watch to report the last write");
}

void h_vwatch_free(h_vwatch *x)
{
    x->w = reign_value_watch_free(x->w);
    free(x->ev);
    memset(x, 0, sizeof(*x));
}

/* ---- leadership checker ------------------------------------------------- */

typedef struct term_iv {
    const h_cand *c;
    uint64_t term, token;
    int64_t start, end;
    const char *how;
} term_iv;

static int iv_cmp(const void *a, const void *b)
{
    const term_iv *x = a, *y = b;
    int by_name = strcmp(x->c->election_name, y->c->election_name);
    if (by_name)
        return by_name;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->term < y->term ? -1 : x->term > y->term;
}

size_t h_check_leadership(void)
{
    size_t cap = 16, n = 0;
    term_iv *v = malloc(cap * sizeof(*v));
    H_CHECK(v != NULL);
    int64_t now = now_ns();
    for (size_t i = 0; i < n_cands; i++) {
        const h_cand *c = cands[i];
        const h_event *open = NULL;
        int64_t last = 0;
        for (size_t k = 0; k < c->n_ev; k++) {
            const h_event *e = &c->ev[k];
            if (e->type != REIGN_ELECTION_ELECTED && e->type != REIGN_ELECTION_DEMOTED)
                continue;
            H_CHECKF(e->at_ns >= last, "%s: event times go backwards", c->id);
            last = e->at_ns;
            if (e->type == REIGN_ELECTION_ELECTED) {
                H_CHECKF(!open, "%s: elected (term %llu) while leading (term %llu)", c->id,
                         (unsigned long long)e->term, (unsigned long long)open->term);
                open = e;
                continue;
            }
            if (!open)
                continue; /* demoted while not leading: not a safety matter */
            if (n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(*v));
                H_CHECK(v != NULL);
            }
            v[n++] = (term_iv){c, open->term, open->token, open->at_ns, e->at_ns, "demoted"};
            open = NULL;
        }
        if (open) {
            if (n == cap) {
                cap *= 2;
                v = realloc(v, cap * sizeof(*v));
                H_CHECK(v != NULL);
            }
            v[n++] = (term_iv){c,
                               open->term,
                               open->token,
                               open->at_ns,
                               c->closed ? c->closed_ns : now,
                               c->closed ? "closed" : "open"};
        }
    }
    qsort(v, n, sizeof(*v), iv_cmp);
    int64_t latest_end = INT64_MIN;
    const term_iv *latest = NULL;
    for (size_t i = 0; i < n; i++) {
        /* Sorted by election first: each election is checked on its own. */
        if (i > 0 && strcmp(v[i].c->election_name, v[i - 1].c->election_name) != 0) {
            latest = NULL;
            latest_end = INT64_MIN;
        }
        if (latest)
            H_CHECKF(v[i].start >= latest_end,
                     "two leaders at once: %s term %llu [%lld, %lld) and %s term %llu from %lld",
                     latest->c->id, (unsigned long long)latest->term, (long long)latest->start,
                     (long long)latest->end, v[i].c->id, (unsigned long long)v[i].term,
                     (long long)v[i].start);
        if (latest) {
            H_CHECKF(v[i].term > v[i - 1].term, "term did not grow: %s %llu then %s %llu",
                     v[i - 1].c->id, (unsigned long long)v[i - 1].term, v[i].c->id,
                     (unsigned long long)v[i].term);
            H_CHECKF(v[i].token > v[i - 1].token, "token did not grow: %s %llu then %s %llu",
                     v[i - 1].c->id, (unsigned long long)v[i - 1].token, v[i].c->id,
                     (unsigned long long)v[i].token);
        }
        if (v[i].end > latest_end) {
            latest_end = v[i].end;
            latest = &v[i];
        }
    }
    for (size_t i = 0; i < n; i++)
        h_log("leadership %zu: %s term=%llu token=%llu %.3f..%.3f s (%s)", i + 1, v[i].c->id,
              (unsigned long long)v[i].term, (unsigned long long)v[i].token,
              (double)(v[i].start - t0_ns) / 1e9, (double)(v[i].end - t0_ns) / 1e9, v[i].how);
    free(v);
    return n;
}

int h_finish(void)
{
    size_t n = h_check_leadership();
    for (size_t i = 0; i < n_cands; i++) {
        h_cand_close(cands[i]);
        free(cands[i]->ev);
        free(cands[i]);
    }
    n_cands = 0;
    printf("PASS %s (%zu leadership(s), no overlap, terms and tokens increasing)\n", test_name, n);
    return 0;
}

/* ---- raw ZooKeeper ------------------------------------------------------ */

typedef struct raw_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int connected;
    int auth_done;
    int auth_rc;
} raw_wait;

static void raw_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    raw_wait *w = ctx;
    (void)zh;
    (void)path;
    if (type != ZOO_SESSION_EVENT || state != ZOO_CONNECTED_STATE)
        return;
    pthread_mutex_lock(&w->mu);
    w->connected = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void raw_auth_done(int rc, const void *data)
{
    raw_wait *w = (raw_wait *)data;
    pthread_mutex_lock(&w->mu);
    w->auth_done = 1;
    w->auth_rc = rc;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static int raw_wait_for(raw_wait *w, int *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += H_WAIT_MS / 1000;
    pthread_mutex_lock(&w->mu);
    while (!*flag)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0)
            break;
    int ok = *flag;
    pthread_mutex_unlock(&w->mu);
    return ok;
}

zhandle_t *h_raw_connect(const char *hosts, const char *auth)
{
    /* The handle's context: freed by h_raw_close(), once the handle's threads are gone. */
    raw_wait *w = calloc(1, sizeof(*w));
    H_CHECK(w != NULL);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    zhandle_t *zh = zookeeper_init(hosts, raw_watcher, 30000, NULL, w, 0);
    H_CHECKF(zh != NULL, "zookeeper_init('%s') failed", hosts);
    H_CHECKF(raw_wait_for(w, &w->connected), "raw client: no session with '%s'", hosts);
    if (auth) {
        int rc = zoo_add_auth(zh, "digest", auth, (int)strlen(auth), raw_auth_done, w);
        H_CHECKF(rc == ZOK, "zoo_add_auth: %s", h_zerr_name(rc));
        H_CHECKF(raw_wait_for(w, &w->auth_done), "raw client: no answer to the credentials");
        H_CHECKF(w->auth_rc == ZOK, "raw client: credentials refused: %s", h_zerr_name(w->auth_rc));
    }
    return zh;
}

void h_raw_close(zhandle_t *zh)
{
    if (!zh)
        return;
    raw_wait *w = (raw_wait *)zoo_get_context(zh);
    zookeeper_close(zh);
    if (w) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
    }
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(a, b);
}

int h_raw_children(zhandle_t *zh, const char *path, char out[][H_NODE_MAX], int max)
{
    struct String_vector sv = {0, NULL};
    int rc = zoo_get_children(zh, path, 0, &sv);
    if (rc != ZOK)
        return rc < 0 ? rc : -rc;
    int n = 0;
    for (int i = 0; i < sv.count && n < max; i++)
        snprintf(out[n++], H_NODE_MAX, "%s", sv.data[i]);
    deallocate_String_vector(&sv);
    qsort(out, (size_t)n, H_NODE_MAX, name_cmp);
    return n;
}

const char *h_zerr_name(int zrc)
{
    switch (zrc) {
    case ZOK:
        return "ZOK";
    case ZSYSTEMERROR:
        return "ZSYSTEMERROR";
    case ZRUNTIMEINCONSISTENCY:
        return "ZRUNTIMEINCONSISTENCY";
    case ZDATAINCONSISTENCY:
        return "ZDATAINCONSISTENCY";
    case ZCONNECTIONLOSS:
        return "ZCONNECTIONLOSS";
    case ZMARSHALLINGERROR:
        return "ZMARSHALLINGERROR";
    case ZUNIMPLEMENTED:
        return "ZUNIMPLEMENTED";
    case ZOPERATIONTIMEOUT:
        return "ZOPERATIONTIMEOUT";
    case ZBADARGUMENTS:
        return "ZBADARGUMENTS";
    case ZINVALIDSTATE:
        return "ZINVALIDSTATE";
    case ZNONODE:
        return "ZNONODE";
    case ZNOAUTH:
        return "ZNOAUTH";
    case ZBADVERSION:
        return "ZBADVERSION";
    case ZNOCHILDRENFOREPHEMERALS:
        return "ZNOCHILDRENFOREPHEMERALS";
    case ZNODEEXISTS:
        return "ZNODEEXISTS";
    case ZNOTEMPTY:
        return "ZNOTEMPTY";
    case ZSESSIONEXPIRED:
        return "ZSESSIONEXPIRED";
    case ZINVALIDCALLBACK:
        return "ZINVALIDCALLBACK";
    case ZINVALIDACL:
        return "ZINVALIDACL";
    case ZAUTHFAILED:
        return "ZAUTHFAILED";
    case ZCLOSING:
        return "ZCLOSING";
    case ZNOTHING:
        return "ZNOTHING";
    case ZSESSIONMOVED:
        return "ZSESSIONMOVED";
    default:
        return "ZUNKNOWN";
    }
}
