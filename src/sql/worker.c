/*
 * worker.c - the SQL client's worker thread (worker.h).
 *
 * Two queues under one mutex: `requests` (loop -> worker: requests) and `done`
 * (worker -> loop: results, connection states, change notices).  The worker
 * sleeps in poll() on its own eventfd and, once subscribed, the store's
 * notification descriptor; the loop sleeps on the client's eventfd.  A
 * request is one allocation that travels from requests to done and is freed by
 * dispatch; forget() clears the callback of every request of an owner,
 * wherever it is, so a freed election is never called back.
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "worker.h"

typedef enum item_kind { ITEM_REQUEST, ITEM_STATE, ITEM_CHANGED } item_kind;

typedef struct item {
    struct item *next;
    item_kind kind;
    /* request */
    reign__sqlw_op op;
    char *name;
    char *owner_id, *owner_guid, *session;
    void *payload;
    size_t payload_len;
    int64_t duration_ms;
    uint64_t expect_renewals; /* TAKE: the version's term_duration */
    bool take_released;       /* TAKE: a released lease only */
    uint64_t term;
    void *owner;
    reign__sqlw_cb *cb;
    void *arg;
    reign__sqlw_result res;
    /* call */
    reign__sqlw_fn *fn;
    reign__sqlw_batch_fn *batch; /* or a call that may run with others (worker.h) */
    bool claims;                 /* reign__sqlw_call_claim(): 1 is a lease won */
    void (*ctx_free)(void *);
    /* state */
    reign__sqlw_state st;
    char *msg; /* an error's words (allocated: most items have none, and 10,000 may queue) */
    /* changed */
    reign__sql_heard heard;
} item;

typedef struct queue {
    item *head, *tail;
} queue;

struct reign__sqlw {
    reign__sqlw_config cfg;
    char *path, *host, *user, *password, *database, *table, *params, *dc;
    char store[200];

    pthread_t thread;
    bool started, joined;
    int efd; /* wakes the worker */
    pthread_mutex_t mu;
    queue requests, done;
    item *running; /* the request the worker executes now (a batch: the first, the rest
                      linked by next) */
    bool closing;
    /* Each side writes the other's eventfd only when the other may sleep: the worker waits
     * (worker_idle) or the loop has taken every result (!loop_told).  A syscall each way per
     * statement cost more than the statement's rows on a busy queue. */
    bool worker_idle;
    bool loop_told;
    /* loop thread only: a turn is on (reign__sqlw_hold), and a request of it owes a wake-up */
    bool holding, wake_owed;
    _Atomic uint64_t statements;

    /* worker thread only */
    reign__sqlconn *conn;
    bool ever_connected, fatal;
    int64_t next_connect_ns;
    reign__strset listened; /* names to LISTEN on, again after a reconnect */
};

static void push(queue *q, item *it)
{
    it->next = NULL;
    if (q->tail)
        q->tail->next = it;
    else
        q->head = it;
    q->tail = it;
}

static item *pop(queue *q)
{
    item *it = q->head;
    if (it) {
        q->head = it->next;
        if (!q->head)
            q->tail = NULL;
    }
    return it;
}

static void item_free(item *it)
{
    if (!it)
        return;
    reign__free(it->name);
    reign__free(it->owner_id);
    reign__free(it->owner_guid);
    reign__free(it->session);
    reign__free(it->msg);
    reign__free(it->payload);
    if (it->res.lease) {
        reign__lease_clear(it->res.lease);
        reign__free(it->res.lease);
    }
    reign__sql_heard_free(&it->heard);
    if (it->ctx_free && it->res.ctx)
        it->ctx_free(it->res.ctx);
    reign__free(it);
}

static void wake(int fd)
{
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof(one));
    (void)n; /* a full counter still wakes the reader */
}

/* Worker side: hand an item to the loop. */
static void hand_back(reign__sqlw *w, item *it)
{
    pthread_mutex_lock(&w->mu);
    if (w->running == it)
        w->running = it->next; /* the rest of a batch, or NULL */
    push(&w->done, it);
    bool tell = !w->loop_told;
    w->loop_told = true;
    pthread_mutex_unlock(&w->mu);
    if (tell)
        wake(w->cfg.wake_fd);
}

/* Gives the item the words of its error (res.err points at them). */
static void set_msg(item *it, const char *m)
{
    reign__free(it->msg);
    it->msg = reign__strdup(m);
    it->res.err = it->msg ? it->msg : "out of memory";
}

static void post_state(reign__sqlw *w, reign__sqlw_state st, int err, const char *msg)
{
    item *it = reign__calloc(1, sizeof(*it));
    if (!it)
        return; /* out of memory: the next statement's error tells the loop */
    it->kind = ITEM_STATE;
    it->st = st;
    it->res.rc = err;
    set_msg(it, msg ? msg : "");
    hand_back(w, it);
}

static void post_changed(reign__sqlw *w)
{
    reign__log(w->cfg.log, REIGN_LOG_DEBUG, "sql: change notified");
    item *it = reign__calloc(1, sizeof(*it));
    if (!it)
        return;
    it->kind = ITEM_CHANGED;
    if (w->conn)
        reign__sql_heard_take(w->conn, &it->heard);
    else
        it->heard.all = true;
    hand_back(w, it);
}

/* ---- the worker's connection ---------------------------------------------------------------- */

static bool is_conn_error(int rc)
{
    return rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT || rc == REIGN_ECONNECT;
}

static bool is_fatal_error(int rc)
{
    return rc == REIGN_EAUTH || rc == REIGN_ENOENT || rc == REIGN_EACCES || rc == REIGN_EFOREIGN ||
           rc == REIGN_EINVAL || rc == REIGN_ENOTSUP;
}

static void count_from(reign__sqlw *w, uint64_t before)
{
    if (w->conn)
        atomic_fetch_add(&w->statements, reign__sql_statements(w->conn) - before);
}

static void drop_conn(reign__sqlw *w)
{
    reign__sql_close(w->conn);
    w->conn = NULL;
}

/*
 * After a statement or a change notice found the connection lost (rc, err): drop it.  Where
 * the store is gone (a SQLite file deleted or replaced), the session is lost with it: LOST, and
 * the next connection is a new session (CONNECTED), made after the retry period - a file is
 * rarely replaced in one step (rm removes the database, its -wal and its -shm one after the
 * other), and opening the path before the last of them went would pair the new file with the
 * old one's.  Else SUSPENDED, and connect again at once.
 */
static void conn_lost(reign__sqlw *w, int rc, const char *err)
{
    const char *gone = reign__sql_gone(w->conn);
    char msg[512];
    if (gone)
        snprintf(msg, sizeof(msg), "%s: %s", w->store, gone);
    drop_conn(w);
    w->next_connect_ns = reign__now_ns();
    if (!gone) {
        post_state(w, REIGN__SQLW_SUSPENDED, rc, err);
        return;
    }
    w->next_connect_ns += (int64_t)w->cfg.retry_period_ms * REIGN__NS_PER_MS;
    w->ever_connected = false;
    post_state(w, REIGN__SQLW_LOST, rc, msg);
}

static int listen_all(reign__sqlw *w, char *err, size_t errlen)
{
    return reign__sql_listen_many(w->conn, w->dc, (const char *const *)w->listened.v, w->listened.n,
                                  err, errlen);
}

/*
 * Before the first connection: a server's host name that does not exist fails at once, as it
 * does on ZooKeeper (whose client resolves its hosts as it starts), instead of libpq and
 * Connector/C trying it again until the connect timeout.  A temporary failure (EAI_AGAIN) is
 * left to them, and so is every failure once connected: a name that went missing from DNS
 * for a moment must not stop a running client.  No check for a Unix socket (a path, or
 * PostgreSQL's "@abstract"), nor when libpq is given the address itself (hostaddr=).
 */
static int unknown_host(reign__sqlw *w, char *err, size_t errlen)
{
    const reign__sql_target *t = &w->cfg.target;
    if (w->ever_connected || t->kind == REIGN__SQL_SQLITE || !t->host || t->host[0] == '/' ||
        t->host[0] == '@' || (t->params && strstr(t->params, "hostaddr=")))
        return 0;
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(t->host, NULL, &hints, &res);
    if (g == 0)
        freeaddrinfo(res);
    if (g != EAI_NONAME)
        return 0;
    snprintf(err, errlen, "%s: host '%s' does not resolve: %s", w->store, t->host, gai_strerror(g));
    return REIGN_ECONNECT;
}

static void try_connect(reign__sqlw *w)
{
    char err[512] = "";
    reign__sqlconn *c = NULL;
    int rc = unknown_host(w, err, sizeof(err));
    if (rc < 0) {
        w->fatal = true;
        post_state(w, REIGN__SQLW_FATAL, rc, err);
        return;
    }
    rc = reign__sql_connect(&c, &w->cfg.target, err, sizeof(err));
    if (rc == 0) {
        w->conn = c;
        uint64_t before = reign__sql_statements(c);
        rc = reign__sql_ensure_schema(c, err, sizeof(err));
        if (rc == 0)
            rc = listen_all(w, err, sizeof(err));
        count_from(w, before);
        if (rc < 0)
            drop_conn(w);
    }
    if (rc == 0) {
        post_state(w, w->ever_connected ? REIGN__SQLW_RECONNECTED : REIGN__SQLW_CONNECTED, 0, NULL);
        w->ever_connected = true;
        return;
    }
    w->next_connect_ns = reign__now_ns() + (int64_t)w->cfg.retry_period_ms * REIGN__NS_PER_MS;
    if (is_fatal_error(rc) || rc == REIGN_ENOMEM) {
        w->fatal = true;
        post_state(w, REIGN__SQLW_FATAL, rc, err);
    } else {
        /* The loop logs it (once per outage) and says it in wait_connected()'s message. */
        post_state(w, REIGN__SQLW_SUSPENDED, rc, err);
    }
}

/* Tells the followers of `name` that its row changed, where the store can (PostgreSQL, SQLite;
 * MariaDB's are woken by the leader's lock): released, or (won) taken or made. */
static void notify(reign__sqlw *w, const char *name, bool won)
{
    char err[256];
    if (reign__sql_notify_hint(w->conn, w->dc, name, won ? REIGN__SQL_HEARD_WON : NULL, err,
                               sizeof(err)) < 0)
        reign__log(w->cfg.log, REIGN_LOG_DEBUG, "%s", err); /* they read at expiry anyway */
}

static int run_statement(reign__sqlw *w, item *it, char *err, size_t errlen)
{
    reign__lease_claim cl = {
        .dc = w->dc,
        .name = it->name,
        .owner = it->owner_id,
        .owner_guid = it->owner_guid,
        .payload = it->payload,
        .payload_len = it->payload_len,
        .duration_ms = it->duration_ms,
        .expect_renewals = it->expect_renewals,
        .take_released = it->take_released,
        .session = it->session,
    };
    int rc;
    switch (it->op) {
    case REIGN__SQLW_READ:
        /* Made as the read runs: an item waiting in the queue stays small (10,000 may). */
        if (!it->res.lease && !(it->res.lease = reign__calloc(1, sizeof(*it->res.lease))))
            return REIGN_ENOMEM;
        return reign__sql_lease_read(w->conn, w->dc, it->name, it->res.lease, err, errlen);
    case REIGN__SQLW_INSERT:
        rc = reign__sql_lease_insert(w->conn, &cl, err, errlen);
        if (rc == 1)
            it->res.term = 1;
        return rc;
    case REIGN__SQLW_TAKE:
        return reign__sql_lease_take(w->conn, &cl, it->term, &it->res.term, err, errlen);
    case REIGN__SQLW_RENEW:
        return reign__sql_lease_renew(w->conn, &cl, it->term, err, errlen);
    case REIGN__SQLW_RELEASE:
        rc = reign__sql_lease_release(w->conn, &cl, it->term, err, errlen);
        if (rc == 1)
            notify(w, it->name, false);
        return rc;
    case REIGN__SQLW_DEPOSE:
        return reign__sql_lease_depose(w->conn, w->dc, it->name, it->term, err, errlen);
    case REIGN__SQLW_LISTEN: /* execute_listens() */
        break;
    case REIGN__SQLW_CALL:
        return it->fn(w->conn, w->dc, it->res.ctx, err, errlen);
    }
    return REIGN_EINVAL;
}

/* After a statement that returned rc: a connection lost is handled; true if a change was
 * told meanwhile (to go back after the answer). */
static bool after_statement(reign__sqlw *w, int rc, char *err)
{
    if (is_conn_error(rc)) {
        conn_lost(w, rc, err); /* at once (or, gone, after a period), then every period */
        return false;
    }
    if (reign__sql_listen_fd(w->conn) < 0)
        return false;
    /* libpq keeps what arrived during the statement: look after each one. */
    int any = reign__sql_drain_notify(w->conn);
    if (any < 0 && reign__sql_gone(w->conn))
        conn_lost(w, any, NULL); /* told before this answer */
    return any > 0;
}

static const char *const op_names[] = {"?",       "read",   "insert", "take", "renew",
                                       "release", "depose", "listen", "call"};

static void execute(reign__sqlw *w, item *it)
{
    char err[512] = "";
    int rc;
    bool changed = false;
    if (!w->conn) {
        rc = w->fatal ? REIGN_ECLOSED : REIGN_ECONNLOSS;
        snprintf(err, sizeof(err), "%s: %s", w->store,
                 w->fatal ? "the client stopped on an error" : "not connected");
    } else {
        uint64_t before = reign__sql_statements(w->conn);
        it->res.sent_ns = reign__now_ns();
        reign_trace("sql.send", "%s %s", op_names[it->op], it->name);
        rc = run_statement(w, it, err, sizeof(err));
        it->res.done_ns = reign__now_ns();
        reign_trace("sql.answer", "%s %s %d", op_names[it->op], it->name, rc);
        count_from(w, before);
        changed = after_statement(w, rc, err);
    }
    reign__log(w->cfg.log, REIGN_LOG_DEBUG, "sql: %s %s term=%llu -> %d (%.1f ms)",
               op_names[it->op], it->name, (unsigned long long)it->term, rc,
               it->res.sent_ns ? (double)(reign__now_ns() - it->res.sent_ns) / 1e6 : 0.0);
    it->res.op = it->op;
    it->res.rc = rc;
    if (rc < 0) {
        set_msg(it, err[0] ? err : reign_strerror(rc));
    }
    /* A new leader: observers hear of it at once, but the winner first (its answer goes back
     * before the NOTIFY is sent, so that it is elected a round trip sooner). */
    char *won =
        rc == 1 && (it->op == REIGN__SQLW_TAKE || it->op == REIGN__SQLW_INSERT || it->claims)
            ? reign__strdup(it->name)
            : NULL;
    hand_back(w, it);
    /* A change told during the statement goes back after its answer: the recipe that asked
     * acts on its answer first (an election's own preemption, say, known before the row it
     * changed is seen released). */
    if (changed)
        post_changed(w);
    if (won && w->conn)
        notify(w, won, true);
    reign__free(won);
    reign__sql_settle(w->conn);
}

/*
 * LISTENs (the items linked by next): the names new to the connection in one call, which
 * PostgreSQL sends as one statement.  Not connected, they are listened to when it is back.
 */
static void execute_listens(reign__sqlw *w, item *first)
{
    char err[512] = "";
    size_t n = 0, k = 0;
    for (item *it = first; it; it = it->next)
        n++;
    const char **fresh = reign__malloc(n * sizeof(*fresh));
    int rc = fresh ? 0 : REIGN_ENOMEM;
    for (item *it = first; it && !rc; it = it->next) {
        int added = reign__strset_add(&w->listened, it->name);
        if (added < 0)
            rc = added;
        else if (added)
            fresh[k++] = it->name;
    }
    bool changed = false;
    if (!rc && k && w->conn) {
        uint64_t before = reign__sql_statements(w->conn);
        rc = reign__sql_listen_many(w->conn, w->dc, fresh, k, err, sizeof(err));
        count_from(w, before);
        changed = after_statement(w, rc, err);
        reign__log(w->cfg.log, REIGN_LOG_DEBUG, "sql: listen to %zu names -> %d", k, rc);
    }
    reign__free(fresh);
    for (item *it = first, *next; it; it = next) {
        next = it->next;
        it->res.op = it->op;
        it->res.rc = rc;
        if (rc < 0)
            set_msg(it, err[0] ? err : reign_strerror(rc));
        hand_back(w, it);
    }
    if (changed)
        post_changed(w);
}

/* Moves every LISTEN queued behind first to its chain: listening sooner than asked harms
 * nobody, and 10,000 elections joined at once then cost one statement, not 10,000. */
static void take_listens(queue *q, item *first)
{
    item *last = first, *prev = NULL;
    for (item *it = q->head, *next; it; it = next) {
        next = it->next;
        if (it->op != REIGN__SQLW_LISTEN) {
            prev = it;
            continue;
        }
        if (prev)
            prev->next = next;
        else
            q->head = next;
        if (q->tail == it)
            q->tail = prev;
        it->next = NULL;
        last->next = it;
        last = it;
    }
}

/* Runs a batch (the items linked by next, all of one batch fn) as one call. */
static void execute_batch(reign__sqlw *w, item *first)
{
    void *ctxs[REIGN__SQLW_BATCH_MAX];
    int rcs[REIGN__SQLW_BATCH_MAX];
    size_t n = 0;
    for (item *it = first; it; it = it->next) {
        ctxs[n] = it->res.ctx;
        rcs[n++] = 0;
    }
    char err[512] = "";
    int rc;
    bool changed = false;
    int64_t sent = 0, done = 0;
    if (!w->conn) {
        rc = w->fatal ? REIGN_ECLOSED : REIGN_ECONNLOSS;
        snprintf(err, sizeof(err), "%s: %s", w->store,
                 w->fatal ? "the client stopped on an error" : "not connected");
    } else {
        uint64_t before = reign__sql_statements(w->conn);
        sent = reign__now_ns();
        reign_trace("sql.send", "call %s x%zu", first->name, n);
        rc = first->batch(w->conn, w->dc, ctxs, rcs, n, err, sizeof(err));
        done = reign__now_ns();
        reign_trace("sql.answer", "call %s x%zu %d", first->name, n, rc);
        count_from(w, before);
        changed = after_statement(w, rc, err);
    }
    reign__log(w->cfg.log, REIGN_LOG_DEBUG, "sql: call %s x%zu -> %d (%.1f ms)", first->name, n, rc,
               sent ? (double)(reign__now_ns() - sent) / 1e6 : 0.0);
    size_t i = 0;
    for (item *it = first, *next; it; it = next, i++) {
        next = it->next;
        it->res.op = REIGN__SQLW_CALL;
        it->res.rc = rc < 0 ? rc : rcs[i];
        it->res.sent_ns = sent;
        it->res.done_ns = done;
        if (it->res.rc < 0) {
            set_msg(it, rc < 0 && err[0] ? err : reign_strerror(it->res.rc));
        }
        hand_back(w, it);
    }
    if (changed)
        post_changed(w);
    reign__sql_settle(w->conn);
}

static void idle_wait(reign__sqlw *w)
{
    struct pollfd p[2] = {{.fd = w->efd, .events = POLLIN}, {.fd = -1, .events = POLLIN}};
    if (w->conn)
        p[1].fd = reign__sql_listen_fd(w->conn);
    int timeout = -1;
    if (!w->conn && !w->fatal) {
        int64_t left = w->next_connect_ns - reign__now_ns();
        timeout = left <= 0 ? 0 : (int)((left + REIGN__NS_PER_MS - 1) / REIGN__NS_PER_MS);
    }
    int n = poll(p, 2, timeout);
    if (n <= 0)
        return;
    if (p[0].revents) {
        uint64_t v;
        ssize_t r = read(w->efd, &v, sizeof(v));
        (void)r;
    }
    if (p[1].fd >= 0 && p[1].revents) {
        int any = reign__sql_drain_notify(w->conn);
        reign_trace("sql.notice", "%d", any);
        if (any > 0)
            post_changed(w);
        else if (any < 0)
            conn_lost(w, any, "the notification connection was lost");
    }
}

static void *worker_main(void *arg)
{
    reign__sqlw *w = arg;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        bool closing = w->closing;
        item *it = pop(&w->requests);
        if (it) {
            it->next = NULL;
            if (it->op == REIGN__SQLW_LISTEN)
                take_listens(&w->requests, it);
            /* A batch takes the calls of its kind queued right behind it. */
            item *last = it;
            for (size_t n = 1; it->batch && n < REIGN__SQLW_BATCH_MAX && w->requests.head &&
                               w->requests.head->batch == it->batch;
                 n++) {
                last->next = pop(&w->requests);
                last = last->next;
                last->next = NULL;
            }
            w->running = it;
        }
        w->worker_idle = !it; /* from here until the next pop, a request must wake us */
        pthread_mutex_unlock(&w->mu);
        if (!w->conn && !w->fatal && !closing && reign__now_ns() >= w->next_connect_ns) {
            try_connect(w);
        }
        if (it) {
            if (it->batch)
                execute_batch(w, it);
            else if (it->op == REIGN__SQLW_LISTEN)
                execute_listens(w, it);
            else
                execute(w, it);
            continue;
        }
        if (closing)
            break;
        idle_wait(w);
    }
    drop_conn(w);
    return NULL;
}

/* ---- the loop's side ------------------------------------------------------------------------ */

static char *dup_or_null(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = reign__strdup(s);
    if (!d)
        *oom = true;
    return d;
}

static void describe(reign__sqlw *w)
{
    const reign__sql_target *t = &w->cfg.target;
    if (t->kind == REIGN__SQL_SQLITE) {
        snprintf(w->store, sizeof(w->store), "sqlite %s", t->path ? t->path : "?");
        return;
    }
    snprintf(w->store, sizeof(w->store), "%s %s%s%s:%d/%s",
             t->kind == REIGN__SQL_MARIADB ? "mariadb" : "postgres", t->user ? t->user : "",
             t->user ? "@" : "", t->host ? t->host : "localhost",
             t->port                         ? t->port
             : t->kind == REIGN__SQL_MARIADB ? 3306
                                             : 5432,
             t->database ? t->database : "");
}

int reign__sqlw_new(reign__sqlw **ret, const reign__sqlw_config *cfg, char *err, size_t errlen)
{
    *ret = NULL;
    /* The store's client library loads here, with the client, so that a missing one is
     * reign_client_new()'s error rather than a worker's. */
    int rc = reign__sql_load(cfg->target.kind, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlw *w = reign__calloc(1, sizeof(*w));
    if (!w)
        return REIGN_ENOMEM;
    w->cfg = *cfg;
    w->efd = -1;
    bool oom = false;
    w->path = dup_or_null(cfg->target.path, &oom);
    w->host = dup_or_null(cfg->target.host, &oom);
    w->user = dup_or_null(cfg->target.user, &oom);
    w->password = dup_or_null(cfg->target.password, &oom);
    w->database = dup_or_null(cfg->target.database, &oom);
    w->table = dup_or_null(cfg->target.table, &oom);
    w->params = dup_or_null(cfg->target.params, &oom);
    w->dc = dup_or_null(cfg->dc ? cfg->dc : "default", &oom);
    w->cfg.target.path = w->path;
    w->cfg.target.host = w->host;
    w->cfg.target.user = w->user;
    w->cfg.target.password = w->password;
    w->cfg.target.database = w->database;
    w->cfg.target.table = w->table;
    w->cfg.target.params = w->params;
    w->cfg.target.log = cfg->log;
    w->cfg.dc = w->dc;
    describe(w);
    rc = oom ? REIGN_ENOMEM : 0;
    if (rc == 0 && (w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        rc = -errno;
        reign__errf(err, errlen, "eventfd: %s", strerror(errno));
    }
    if (rc == 0 && (rc = -pthread_mutex_init(&w->mu, NULL)) == 0) {
        rc = -pthread_create(&w->thread, NULL, worker_main, w);
        if (rc < 0) {
            pthread_mutex_destroy(&w->mu);
            reign__errf(err, errlen, "cannot start the SQL worker thread: %s", strerror(-rc));
        }
    }
    if (rc < 0) {
        w->started = false;
        reign__sqlw_free(w);
        return rc;
    }
    w->started = true;
    *ret = w;
    return 0;
}

/* Hands a request to the worker, or frees it (a CALL's ctx excepted: still the caller's) if
 * the worker is closing. */
static int enqueue(reign__sqlw *w, item *it)
{
    pthread_mutex_lock(&w->mu);
    bool closing = w->closing, tell = w->worker_idle;
    if (!closing)
        push(&w->requests, it);
    w->worker_idle = false;
    pthread_mutex_unlock(&w->mu);
    if (closing) {
        it->res.ctx = NULL;
        item_free(it);
        return REIGN_ECLOSED;
    }
    if (tell && w->holding)
        w->wake_owed = true;
    else if (tell)
        wake(w->efd);
    return 0;
}

void reign__sqlw_hold(reign__sqlw *w)
{
    if (w)
        w->holding = true;
}

void reign__sqlw_flush(reign__sqlw *w)
{
    if (!w)
        return;
    w->holding = false;
    if (w->wake_owed) {
        w->wake_owed = false;
        wake(w->efd);
    }
}

int reign__sqlw_submit(reign__sqlw *w, reign__sqlw_op op, const char *name,
                       const reign__lease_claim *cl, uint64_t term, void *owner, reign__sqlw_cb *cb,
                       void *arg)
{
    item *it = reign__calloc(1, sizeof(*it));
    if (!it)
        return REIGN_ENOMEM;
    it->kind = ITEM_REQUEST;
    it->op = op;
    it->term = term;
    it->owner = owner;
    it->cb = cb;
    it->arg = arg;
    bool oom = !(it->name = reign__strdup(name));
    if (cl) {
        it->owner_id = dup_or_null(cl->owner, &oom);
        it->owner_guid = dup_or_null(cl->owner_guid, &oom);
        it->session = dup_or_null(cl->session, &oom);
        it->duration_ms = cl->duration_ms;
        it->expect_renewals = cl->expect_renewals;
        it->take_released = cl->take_released;
        it->payload_len = cl->payload_len;
        if (cl->payload_len && !(it->payload = reign__memdup(cl->payload, cl->payload_len)))
            oom = true;
    }
    if (oom) {
        item_free(it);
        return REIGN_ENOMEM;
    }
    return enqueue(w, it);
}

/* A CALL of fn, or of the batch function batch (one of them). */
static int call_item(reign__sqlw *w, const char *what, reign__sqlw_fn *fn,
                     reign__sqlw_batch_fn *batch, bool claims, void *ctx, void (*ctx_free)(void *),
                     void *owner, reign__sqlw_cb *cb, void *arg)
{
    item *it = reign__calloc(1, sizeof(*it));
    if (!it || !(it->name = reign__strdup(what))) {
        reign__free(it);
        return REIGN_ENOMEM;
    }
    it->kind = ITEM_REQUEST;
    it->op = REIGN__SQLW_CALL;
    it->fn = fn;
    it->batch = batch;
    it->claims = claims;
    it->res.ctx = ctx;
    it->ctx_free = ctx_free;
    it->owner = owner;
    it->cb = cb;
    it->arg = arg;
    return enqueue(w, it);
}

int reign__sqlw_call(reign__sqlw *w, const char *what, reign__sqlw_fn *fn, void *ctx,
                     void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg)
{
    return call_item(w, what, fn, NULL, false, ctx, ctx_free, owner, cb, arg);
}

int reign__sqlw_call_claim(reign__sqlw *w, const char *name, reign__sqlw_fn *fn, void *ctx,
                           void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg)
{
    return call_item(w, name, fn, NULL, true, ctx, ctx_free, owner, cb, arg);
}

int reign__sqlw_call_batch(reign__sqlw *w, const char *what, reign__sqlw_batch_fn *fn, void *ctx,
                           void (*ctx_free)(void *), void *owner, reign__sqlw_cb *cb, void *arg)
{
    return call_item(w, what, NULL, fn, false, ctx, ctx_free, owner, cb, arg);
}

static void forget_in(queue *q, void *owner)
{
    for (item *it = q->head; it; it = it->next)
        if (it->owner == owner)
            it->cb = NULL;
}

void reign__sqlw_forget(reign__sqlw *w, void *owner)
{
    pthread_mutex_lock(&w->mu);
    forget_in(&w->requests, owner);
    forget_in(&w->done, owner);
    for (item *it = w->running; it; it = it->next)
        if (it->owner == owner)
            it->cb = NULL;
    pthread_mutex_unlock(&w->mu);
}

void reign__sqlw_dispatch(reign__sqlw *w)
{
    if (!w)
        return;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        item *it = pop(&w->done);
        w->loop_told = false; /* what comes after this pop wakes the loop again */
        pthread_mutex_unlock(&w->mu);
        if (!it)
            return;
        switch (it->kind) {
        case ITEM_REQUEST:
            if (it->cb)
                it->cb(it->owner, it->arg, &it->res);
            break;
        case ITEM_STATE:
            if (w->cfg.on_state)
                w->cfg.on_state(w->cfg.arg, it->st, it->res.rc, it->res.err);
            break;
        case ITEM_CHANGED:
            if (w->cfg.on_change)
                w->cfg.on_change(w->cfg.arg, &it->heard);
            break;
        }
        item_free(it);
    }
}

void reign__sqlw_close(reign__sqlw *w)
{
    if (!w || !w->started || w->joined)
        return;
    pthread_mutex_lock(&w->mu);
    w->closing = true;
    pthread_mutex_unlock(&w->mu);
    w->holding = w->wake_owed = false;
    wake(w->efd);
    pthread_join(w->thread, NULL);
    w->joined = true;
}

void reign__sqlw_free(reign__sqlw *w)
{
    if (!w)
        return;
    if (w->started) {
        reign__sqlw_close(w);
        pthread_mutex_destroy(&w->mu);
    }
    item *it;
    while ((it = pop(&w->requests)))
        item_free(it);
    while ((it = pop(&w->done)))
        item_free(it);
    reign__strset_free(&w->listened);
    if (w->efd >= 0)
        close(w->efd);
    if (w->password)
        explicit_bzero(w->password, strlen(w->password));
    reign__free(w->path);
    reign__free(w->host);
    reign__free(w->user);
    reign__free(w->password);
    reign__free(w->database);
    reign__free(w->table);
    reign__free(w->params);
    reign__free(w->dc);
    reign__free(w);
}

const char *reign__sqlw_store(const reign__sqlw *w)
{
    return w->store;
}

uint64_t reign__sqlw_statements(const reign__sqlw *w)
{
    return atomic_load(&w->statements);
}

bool reign__sqlw_notifies(const reign__sqlw *w)
{
    return w->cfg.target.kind != REIGN__SQL_MARIADB;
}

bool reign__sqlw_wakes_followers(const reign__sqlw *w)
{
    return reign__sql_wakes_followers(&w->cfg.target);
}

bool reign__sqlw_names_changes(const reign__sqlw *w)
{
    return w->cfg.target.kind != REIGN__SQL_MARIADB;
}
