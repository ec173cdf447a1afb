/*
 * tera_master.c - a Tera-style master on libreign (Tera's MasterZkAdapter).
 *
 * README
 * ------
 * Tera's master takes a ZooKeeper lock, publishes its address in /tera/master, finds the root
 * table's tablet server in /tera/root_table (or places it and writes it there), reads the
 * /tera/safemode mark and follows the tablet servers registered under /tera/ts, keeping only
 * the newest entry per address.  It runs a small state machine (secondary, restoring, waiting
 * for tablet servers, read-only in safe mode, running) and reacts to four deletions: the ts
 * directory (enter safe mode), root_table (write it again), the master node (step down; unlike
 * Tera, which stays down, stand again) and the lock itself (exit with failure).  This program
 * does all of that with one election (lock strategy), three watched values and one group
 * watch on one reign client, run by libuv through <reign/adapters/libuv.h>.  The tablet
 * servers themselves are out of scope: `--tablet-server` registers a stand-in that only
 * holds its place in the ts list (`reign register CLUSTER.ts --id ADDR --data ADDR` does the
 * same).  Try it against any ZooKeeper:
 *
 *   tera-master --uri zk://127.0.0.1:2181 --addr 10.0.0.1:7700 &
 *   tera-master --uri zk://127.0.0.1:2181 --addr 10.0.0.5:2200 --tablet-server &
 *   reign --uri zk://127.0.0.1:2181 value del tera/root_table     # the master writes it again
 *
 * Where Tera's nodes live (cluster "tera", --cluster changes the prefix):
 *
 *   Tera               here                                  ZooKeeper node
 *   /tera/master-lock  election "tera.master-lock" (lock)    /reign/election/tera.master-lock/lock
 *   /tera/master       value "tera/master": our address      /reign/value/tera/master
 *   /tera/root_table   value "tera/root_table"               /reign/value/tera/root_table
 *   /tera/safemode     value "tera/safemode" (present: on)   /reign/value/tera/safemode
 *   /tera/ts/<seq>     group "tera.ts", member id = address  /reign/group/tera.ts/m_<guid>_<seq>
 *
 * Every decision is printed on stdout, one line each, so a person or a test can follow it:
 *
 *   transition FROM -> TO on EVENT: REASON        refused EVENT in STATE
 *   lock ready | elected term=T token=K           lock demoted reason=R
 *   ts added|removed ADDR node=NODE live=N        ts directory deleted ...
 *   master-node written|deleted ...               root_table read|written|deleted|rewritten ...
 *   safemode on|off ...                           exiting ...
 *
 * Exit status: 0 after SIGINT/SIGTERM, 1 when the lock was deleted or on an error, 2 for a
 * usage error.  Library messages go to stderr (--log-level).
 */
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include <reign/adapters/libuv.h>
#include <reign/reign.h>

#define ADDR_MAX 256 /* longest address we keep (a host:port, in practice) */

/* ---- the master state machine -------------------------------------------------------------
 *
 * Pure: (state, event) -> state, one table, a reason per transition.  Anything not in the
 * table is refused and logged, never taken (Tera's MasterStateMachine does the same). */

typedef enum master_state {
    ST_SECONDARY, /* not holding the lock: standing, or stepped down */
    ST_RESTORING, /* holding the lock: reading root_table and safemode */
    ST_WAITING,   /* holding the lock, but no tablet server to load the meta table on */
    ST_READONLY,  /* restored, safe mode: reads only */
    ST_RUNNING    /* restored: reads and writes */
} master_state;

typedef enum master_event {
    EV_GOT_LOCK,
    EV_NO_TS,
    EV_TS_AVAILABLE,
    EV_META_RESTORED,
    EV_ENTER_SAFEMODE,
    EV_LEAVE_SAFEMODE,
    EV_LOST_LOCK
} master_event;

static const char *const state_names[] = {"secondary", "restoring", "waiting_ts", "readonly",
                                          "running"};
static const char *const event_names[] = {"got_lock",      "no_ts",          "ts_available",
                                          "meta_restored", "enter_safemode", "leave_safemode",
                                          "lost_lock"};

typedef struct transition {
    master_state from;
    master_event event;
    master_state to;
    const char *reason;
} transition;

static const transition transitions[] = {
    {ST_SECONDARY, EV_GOT_LOCK, ST_RESTORING, "holding the master lock; restoring the meta table"},
    {ST_RESTORING, EV_NO_TS, ST_WAITING, "no tablet server alive to load the meta table on"},
    {ST_WAITING, EV_TS_AVAILABLE, ST_RESTORING, "a tablet server joined; restoring again"},
    {ST_RESTORING, EV_META_RESTORED, ST_RUNNING, "meta table restored, no safemode mark"},
    {ST_RESTORING, EV_ENTER_SAFEMODE, ST_READONLY, "meta table restored, but safe mode is on"},
    {ST_RUNNING, EV_ENTER_SAFEMODE, ST_READONLY, "safe mode: refusing writes"},
    {ST_READONLY, EV_LEAVE_SAFEMODE, ST_RUNNING, "safe mode left: accepting writes again"},
    {ST_RESTORING, EV_LOST_LOCK, ST_SECONDARY, "no longer the master"},
    {ST_WAITING, EV_LOST_LOCK, ST_SECONDARY, "no longer the master"},
    {ST_READONLY, EV_LOST_LOCK, ST_SECONDARY, "no longer the master"},
    {ST_RUNNING, EV_LOST_LOCK, ST_SECONDARY, "no longer the master"},
};

static const transition *find_transition(master_state from, master_event event)
{
    for (size_t i = 0; i < sizeof(transitions) / sizeof(transitions[0]); i++)
        if (transitions[i].from == from && transitions[i].event == event)
            return &transitions[i];
    return NULL;
}

/* ---- the program's state ------------------------------------------------------------------ */

typedef struct master {
    /* options */
    const char *uri, *id, *addr, *cluster;
    int restand_delay_ms;
    int tablet_server;
    /* names in the store, made from the cluster name */
    char lock_name[REIGN_NAME_MAX + 1];
    char ts_group[REIGN_GROUP_NAME_MAX + 1];
    char master_key[REIGN_KEY_MAX + 1];
    char root_key[REIGN_KEY_MAX + 1];
    char safemode_key[REIGN_KEY_MAX + 1];
    /* the loop */
    uv_loop_t loop;
    uv_signal_t sigint, sigterm;
    reign_uv *uv;
    reign_client *client;
    /* the recipes */
    reign_election *lock;
    reign_group_watch *ts;
    reign_value_watch *master_w, *root_w, *safemode_w;
    reign_group *ts_self; /* --tablet-server: our registration */
    int views_ready;      /* watches that delivered their first view (4: stand for the lock) */
    /* mastership */
    master_state state;
    uint64_t gen;             /* leadership count: completions of an earlier one are ignored */
    int64_t master_version;   /* version of the master node we wrote, -1 if none */
    char root_addr[ADDR_MAX]; /* the root tablet's server, "" until known (Tera's meta addr) */
    int exit_code;
    int stopping; /* a signal asked us to exit: win nothing any more */
    int closing;  /* reign_client_close() called */
} master;

static master M; /* one per process; callbacks reach it through their userdata */

/* One line on stdout, flushed: tests and people read it as it happens. */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("%s\n", line);
    fflush(stdout);
}

/* Copies a payload that should be an address into dst; refuses anything that is not short
 * printable text (values and members can hold any bytes another tool wrote). */
static int copy_addr(char *dst, const void *data, size_t len)
{
    const unsigned char *p = data;
    if (len == 0 || len >= ADDR_MAX)
        return -1;
    for (size_t i = 0; i < len; i++)
        if (p[i] <= 0x20 || p[i] == 0x7f)
            return -1;
    memcpy(dst, data, len);
    dst[len] = '\0';
    return 0;
}

static int is_master(const master *m)
{
    return m->state != ST_SECONDARY;
}

/* Feeds an event to the state machine: takes the transition and logs it, or logs the refusal.
 * Returns 1 if taken. */
static int fire(master *m, master_event event)
{
    const transition *t = find_transition(m->state, event);
    if (!t) {
        say("refused %s in %s", event_names[event], state_names[m->state]);
        return 0;
    }
    say("transition %s -> %s on %s: %s", state_names[t->from], state_names[t->to],
        event_names[event], t->reason);
    m->state = t->to;
    if (t->to == ST_SECONDARY) {
        /* Whatever this leadership still has in flight must not act any more. */
        m->gen++;
        m->master_version = -1;
        m->root_addr[0] = '\0';
    }
    return 1;
}

/* Requests carry the leadership they belong to; the client's userdata is the master. */
static void *gen_arg(const master *m)
{
    return (void *)(uintptr_t)m->gen;
}

static master *current(reign_client *client, void *arg)
{
    master *m = reign_client_userdata(client);
    return (uintptr_t)arg == m->gen && is_master(m) ? m : NULL;
}

/* ---- stepping down --------------------------------------------------------------------- */

/*
 * Leaves mastership and stands again after the restand delay, which lets a secondary take
 * over meanwhile.  Tera stops for good in these cases (its master node was deleted, or it
 * could not write what a master must write); a master that still holds its session can as
 * well try again, and another one wins if it is there.
 */
static void step_down(master *m, const char *why)
{
    if (!is_master(m))
        return;
    say("stepping down: %s; standing again in %d ms", why, m->restand_delay_ms);
    fire(m, EV_LOST_LOCK);
    int r = reign_election_cede(m->lock, m->restand_delay_ms);
    if (r < 0) /* not leading any more: the election stands again by itself */
        say("cede: %s", reign_strerror(r));
}

/* Stops the program: the lock is resigned and every node of ours deleted as the client closes
 * (an orderly close); the loop ends when the client says CLOSED. */
static void shut_down(master *m, int exit_code)
{
    if (m->closing)
        return;
    m->closing = 1;
    m->exit_code = exit_code;
    reign_client_close(m->client);
}

/* ---- restoring (Tera's MasterZkAdapter::Init after LockMasterLock) ------------------------ */

static void on_safemode_read(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m || m->state != ST_RESTORING)
        return;
    if (err == 0) {
        say("safemode on (read at restore)");
        fire(m, EV_ENTER_SAFEMODE);
    } else if (err == REIGN_ENOENT) {
        say("safemode off (read at restore)");
        fire(m, EV_META_RESTORED);
    } else {
        step_down(m, reign_strerror(err));
    }
}

static void read_safemode(master *m)
{
    int r = reign_value_get(m->client, m->safemode_key, on_safemode_read, gen_arg(m));
    if (r < 0)
        step_down(m, reign_strerror(r));
}

static void on_root_written(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m || m->state != ST_RESTORING)
        return;
    if (err < 0) {
        step_down(m, "cannot write root_table");
        return;
    }
    say("root_table written addr=%s version=%lld", m->root_addr, (long long)v->version);
    read_safemode(m);
}

static void on_root_read(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m || m->state != ST_RESTORING)
        return;
    if (err == 0 && copy_addr(m->root_addr, v->data, v->data_len) == 0) {
        /* Tera would now load the meta table from that tablet server. */
        say("root_table read addr=%s", m->root_addr);
        read_safemode(m);
        return;
    }
    if (err != 0 && err != REIGN_ENOENT) {
        step_down(m, reign_strerror(err));
        return;
    }
    /* No root table yet (or no address in it): place it on the oldest live tablet server,
     * as Tera's master assigns the meta tablet, and record where. */
    const reign_member *ts;
    size_t n;
    reign_group_watch_members(m->ts, &ts, &n);
    size_t i = 0;
    while (i < n && copy_addr(m->root_addr, ts[i].id, strlen(ts[i].id)) < 0)
        i++;
    if (i == n) {
        fire(m, EV_NO_TS);
        return;
    }
    say("root_table %s: placing the root tablet on %s", err ? "absent" : "holds no address",
        m->root_addr);
    int r = reign_value_set(m->client, m->root_key, m->root_addr, strlen(m->root_addr),
                            REIGN_VALUE_ANY, on_root_written, gen_arg(m));
    if (r < 0)
        step_down(m, reign_strerror(r));
}

/* With the master node written: needs a live tablet server, then root_table, then safemode. */
static void restore(master *m)
{
    const reign_member *ts;
    size_t n;
    reign_group_watch_members(m->ts, &ts, &n);
    if (n == 0) {
        fire(m, EV_NO_TS);
        return;
    }
    int r = reign_value_get(m->client, m->root_key, on_root_read, gen_arg(m));
    if (r < 0)
        step_down(m, reign_strerror(r));
}

static void on_master_written(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m)
        return;
    if (err < 0) {
        step_down(m, "cannot write the master node");
        return;
    }
    m->master_version = v->version;
    say("master-node written addr=%s version=%lld", m->addr, (long long)v->version);
    restore(m);
}

/* Tera's CreateMasterNode.  Unlike Tera's ephemeral node, a value outlives its writer, so a
 * crashed master's address stays until the next master overwrites it: hence REIGN_VALUE_ANY. */
static void write_master_node(master *m)
{
    int r = reign_value_set(m->client, m->master_key, m->addr, strlen(m->addr), REIGN_VALUE_ANY,
                            on_master_written, gen_arg(m));
    if (r < 0)
        step_down(m, reign_strerror(r));
}

/* ---- the master lock ---------------------------------------------------------------------- */

static void on_lock(reign_election *e, const reign_election_event *ev, void *userdata)
{
    master *m = userdata;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        say("lock elected term=%llu token=%llu", (unsigned long long)ev->term,
            (unsigned long long)ev->token);
        if (!m->stopping && fire(m, EV_GOT_LOCK))
            write_master_node(m);
        break;
    case REIGN_ELECTION_DEMOTED:
        say("lock demoted reason=%s", reign_demote_reason_name(ev->reason));
        if (ev->reason == REIGN_DEMOTE_NODE_DELETED) {
            /* Tera's OnZkLockDeleted: someone took the lock away; stop serving and exit. */
            if (is_master(m))
                fire(m, EV_LOST_LOCK);
            say("exiting: the master lock was deleted");
            shut_down(m, EXIT_FAILURE);
        } else if (is_master(m)) {
            /* Suspended, session lost, stalled: the election stands again by itself. */
            fire(m, EV_LOST_LOCK);
        }
        break;
    case REIGN_ELECTION_READY: /* first look at the lock: we hold it, or wait for it */
        say("lock ready");
        break;
    case REIGN_ELECTION_ERROR:
        say("exiting: the master lock failed: %s", ev->message ? ev->message : "");
        if (is_master(m))
            fire(m, EV_LOST_LOCK);
        shut_down(m, EXIT_FAILURE);
        break;
    default:
        break;
    }
}

static void stand_for_lock(master *m)
{
    reign_election_options o = {.size = sizeof(o),
                                .id = m->id,
                                .data = m->addr,
                                .data_len = strlen(m->addr),
                                .strategy = REIGN_STRATEGY_LOCK,
                                .cede_delay_ms = m->restand_delay_ms,
                                .cb = on_lock,
                                .userdata = m};
    int r = reign_election_join(&m->lock, m->client, m->lock_name, &o);
    if (r < 0) {
        m->lock = NULL;
        say("exiting: cannot stand for the master lock: %s", reign_strerror(r));
        shut_down(m, EXIT_FAILURE);
        return;
    }
    say("standing for the master lock %s as %s", m->lock_name, m->id);
}

/* Like Tera's Setup, every watch is in place before we stand for the lock, so a new master
 * knows the tablet servers at once. */
static void view_ready(master *m)
{
    if (++m->views_ready == 4)
        stand_for_lock(m);
}

/* ---- the watched nodes -------------------------------------------------------------------- */

static void on_master_checked(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m)
        return;
    if (err == REIGN_ENOENT)
        step_down(m, "the master node was deleted");
    /* else: it exists (the deletion seen was of an older node, before our write); or we cannot
     * tell, and the watch reports the next change anyway. */
}

static void on_master_node(reign_value_watch *w, const reign_value_event *ev, void *userdata)
{
    master *m = userdata;
    if (ev->type == REIGN_VALUE_READY) {
        view_ready(m);
    } else if (ev->type == REIGN_VALUE_DELETED && is_master(m) && m->master_version >= 0) {
        /* Tera's OnMasterNodeDeleted.  Confirm first: a watch may report the deletion of a
         * predecessor's node after our own write already replaced it. */
        say("master-node deleted");
        int r = reign_value_get(m->client, m->master_key, on_master_checked, gen_arg(m));
        if (r < 0)
            step_down(m, "the master node was deleted");
    }
}

static void on_root_rewritten(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (!m)
        return;
    if (err < 0) /* Tera: behave as if the lock was lost */
        step_down(m, "cannot rewrite root_table");
    else
        say("root_table rewritten addr=%s version=%lld", m->root_addr, (long long)v->version);
}

static void on_root_table(reign_value_watch *w, const reign_value_event *ev, void *userdata)
{
    master *m = userdata;
    if (ev->type == REIGN_VALUE_READY) {
        view_ready(m);
    } else if (ev->type == REIGN_VALUE_DELETED && is_master(m)) {
        /* Tera's OnRootTabletNodeDeleted: the master knows where the root tablet is. */
        if (!m->root_addr[0]) {
            say("root_table deleted: root tablet not placed yet, not rewriting");
            return;
        }
        say("root_table deleted: rewriting addr=%s", m->root_addr);
        int r = reign_value_set(m->client, m->root_key, m->root_addr, strlen(m->root_addr),
                                REIGN_VALUE_ANY, on_root_rewritten, gen_arg(m));
        if (r < 0)
            step_down(m, "cannot rewrite root_table");
    }
}

static void on_safemode(reign_value_watch *w, const reign_value_event *ev, void *userdata)
{
    master *m = userdata;
    if (ev->type == REIGN_VALUE_READY) {
        view_ready(m);
    } else if (ev->type == REIGN_VALUE_CREATED && is_master(m)) {
        say("safemode on");
        fire(m, EV_ENTER_SAFEMODE); /* refused while restoring waits: read again at restore */
    } else if (ev->type == REIGN_VALUE_DELETED && is_master(m)) {
        say("safemode off");
        fire(m, EV_LEAVE_SAFEMODE);
    }
}

static void on_safemode_marked(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = current(client, arg);
    if (m && err < 0) /* Tera: a master that cannot mark safe mode gives up its place */
        step_down(m, "cannot write the safemode mark");
    /* on success the safemode watch reports the mark, and the state machine moves */
}

/* Tera's MarkSafeMode: the mark is the state; the safemode watch moves the state machine. */
static void mark_safe_mode(master *m)
{
    static const char why[] = "ts directory deleted";
    int r = reign_value_set(m->client, m->safemode_key, why, sizeof(why) - 1, REIGN_VALUE_ANY,
                            on_safemode_marked, gen_arg(m));
    if (r < 0)
        step_down(m, "cannot write the safemode mark");
}

static void on_ts(reign_group_watch *w, const reign_group_watch_event *ev, void *userdata)
{
    master *m = userdata;
    const reign_member *all;
    size_t live;
    reign_group_watch_members(w, &all, &live);
    switch (ev->type) {
    case REIGN_MEMBERS_READY:
        say("ts ready live=%zu", live);
        view_ready(m);
        break;
    case REIGN_MEMBER_ADDED:
        say("ts added %s node=%s live=%zu", ev->member->id, ev->member->node, live);
        if (m->state == ST_WAITING && fire(m, EV_TS_AVAILABLE))
            restore(m);
        break;
    case REIGN_MEMBER_REMOVED:
        /* With newest_per_id, a registration is also removed when a newer one of the same
         * address appears (a restarted tablet server whose old session still lives). */
        say("ts removed %s node=%s live=%zu", ev->member->id, ev->member->node, live);
        break;
    case REIGN_MEMBERS_GROUP_DELETED:
        /* Tera's OnTabletNodeListDeleted.  The directory can only go once it is empty. */
        if (!is_master(m)) {
            say("ts directory deleted");
            break;
        }
        say("ts directory deleted: marking safe mode");
        mark_safe_mode(m);
        break;
    case REIGN_MEMBERS_ERROR:
        fprintf(stderr, "tera-master: ts list: %s\n", ev->message ? ev->message : "");
        break;
    default:
        break;
    }
}

static int start_watches(master *m)
{
    reign_group_watch_options go = {
        .size = sizeof(go), .newest_per_id = 1, .cb = on_ts, .userdata = m};
    int r = reign_group_watch_start(&m->ts, m->client, m->ts_group, &go);
    if (r == 0)
        r = reign_value_watch_start(&m->master_w, m->client, m->master_key, on_master_node, m);
    if (r == 0)
        r = reign_value_watch_start(&m->root_w, m->client, m->root_key, on_root_table, m);
    if (r == 0)
        r = reign_value_watch_start(&m->safemode_w, m->client, m->safemode_key, on_safemode, m);
    return r;
}

/* ---- the stand-in tablet server ----------------------------------------------------------- */

static void on_registration(reign_group *g, const reign_group_event *ev, void *userdata)
{
    master *m = userdata;
    if (ev->type == REIGN_GROUP_REGISTERED) {
        say("ts registered %s node=%s", reign_group_id(g), ev->node);
    } else if (ev->type == REIGN_GROUP_UNREGISTERED) {
        say("ts unregistered %s reason=%s", reign_group_id(g), reign_group_loss_name(ev->reason));
    } else if (ev->type == REIGN_GROUP_ERROR) {
        say("exiting: cannot register: %s", ev->message ? ev->message : "");
        shut_down(m, EXIT_FAILURE);
    }
}

static int start_tablet_server(master *m)
{
    /* The id is the address, as Tera's ts nodes hold theirs: the master keeps the newest
     * registration of each. */
    reign_group_options o = {.size = sizeof(o),
                             .id = m->addr,
                             .data = m->addr,
                             .data_len = strlen(m->addr),
                             .cb = on_registration,
                             .userdata = m};
    return reign_group_register(&m->ts_self, m->client, m->ts_group, &o);
}

/* ---- the loop ----------------------------------------------------------------------------- */

static void on_released(reign_client *client, int err, const reign_value *v, void *arg)
{
    master *m = reign_client_userdata(client);
    if (err < 0) /* changed by someone since (or unreachable): the next master overwrites it */
        say("master-node left in place: %s", reign_strerror(err));
    else
        say("master-node deleted by us");
    shut_down(m, EXIT_SUCCESS);
}

static void on_signal(uv_signal_t *h, int signum)
{
    master *m = h->data;
    if (m->stopping || m->closing)
        return;
    m->stopping = 1;
    say("exiting: %s", signum == SIGINT ? "SIGINT" : "SIGTERM");
    /* Stop serving first, then take our address out of the master node while we still hold
     * the lock (compare-and-set on the version we wrote: an operator's newer write stays),
     * then close, which resigns the lock. */
    int64_t version = m->master_version;
    if (is_master(m))
        fire(m, EV_LOST_LOCK);
    if (version < 0 || reign_value_delete(m->client, m->master_key, version, on_released, NULL) < 0)
        shut_down(m, EXIT_SUCCESS);
    reign_uv_update(m->uv);
}

static void on_client_state(reign_client *client, reign_conn_state state, void *userdata)
{
    master *m = userdata;
    if (state == REIGN_CONN_CLOSED) {
        if (!m->closing) {
            fprintf(stderr, "tera-master: the client closed: %s\n", reign_client_errmsg(client));
            m->exit_code = EXIT_FAILURE;
        }
        /* Nothing more will happen: let the loop end. */
        reign_uv_detach(m->uv);
        m->uv = NULL;
        uv_close((uv_handle_t *)&m->sigint, NULL);
        uv_close((uv_handle_t *)&m->sigterm, NULL);
    } else {
        fprintf(stderr, "tera-master: connection %s\n", reign_conn_state_name(state));
    }
}

static void log_sink(reign_log_level level, const char *msg, void *userdata)
{
    /* Also called from the ZooKeeper client's threads: one fprintf per line. */
    fprintf(stderr, "tera-master: %s: %s\n", reign_log_level_name(level), msg);
}

/* ---- options ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "Usage: tera-master --addr HOST:PORT [OPTIONS]\n"
               "\n"
               "A Tera-style master: waits for the master lock, publishes its address, restores\n"
               "root_table and safemode, follows the tablet servers (see the header of\n"
               "examples/tera-master/tera_master.c).\n"
               "\n"
               "Options:\n"
               "  -u, --uri URI            the ZooKeeper store (default: $REIGN_URI)\n"
               "  -a, --addr HOST:PORT     our address: the master node's value, or the tablet\n"
               "                           server's id\n"
               "  -i, --id ID              candidate id for the lock (default: the address)\n"
               "  -c, --cluster NAME       prefix of every name in the store (default: tera)\n"
               "  -d, --restand-delay MS   after stepping down, stand again after MS (default\n"
               "                           1000)\n"
               "  -t, --tablet-server      be a stand-in tablet server instead: register in\n"
               "                           the ts list until SIGTERM\n"
               "  -l, --log-level LEVEL    library messages on stderr: error, warn, notice,\n"
               "                           info, debug (default: warn)\n"
               "  -h, --help               show this help\n");
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min || v > 3600000)
        return -1;
    *out = (int)v;
    return 0;
}

/* Builds the names from the cluster name; -1 (with a message) if they are not legal. */
static int make_names(master *m)
{
    const char *c = m->cluster;
    int bad = snprintf(m->lock_name, sizeof(m->lock_name), "%s.master-lock", c) >=
                  (int)sizeof(m->lock_name) ||
              snprintf(m->ts_group, sizeof(m->ts_group), "%s.ts", c) >= (int)sizeof(m->ts_group) ||
              snprintf(m->master_key, sizeof(m->master_key), "%s/master", c) >=
                  (int)sizeof(m->master_key) ||
              snprintf(m->root_key, sizeof(m->root_key), "%s/root_table", c) >=
                  (int)sizeof(m->root_key) ||
              snprintf(m->safemode_key, sizeof(m->safemode_key), "%s/safemode", c) >=
                  (int)sizeof(m->safemode_key);
    /* The cluster name is one key segment, which also makes legal election and group names. */
    if (bad || strchr(c, '/') || reign_value_key_check(m->master_key) < 0) {
        fprintf(stderr, "tera-master: illegal cluster name '%s' (1 to 188 of [A-Za-z0-9._:-])\n",
                c);
        return -1;
    }
    return 0;
}

static int parse_options(master *m, int argc, char **argv)
{
    static const struct option opts[] = {
        {"uri", required_argument, NULL, 'u'},
        {"addr", required_argument, NULL, 'a'},
        {"id", required_argument, NULL, 'i'},
        {"cluster", required_argument, NULL, 'c'},
        {"restand-delay", required_argument, NULL, 'd'},
        {"tablet-server", no_argument, NULL, 't'},
        {"log-level", required_argument, NULL, 'l'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o, level = REIGN_LOG_WARN;
    m->uri = getenv("REIGN_URI");
    m->cluster = "tera";
    m->restand_delay_ms = 1000;
    while ((o = getopt_long(argc, argv, "u:a:i:c:d:tl:h", opts, NULL)) != -1) {
        switch (o) {
        case 'u':
            m->uri = optarg;
            break;
        case 'a':
            m->addr = optarg;
            break;
        case 'i':
            m->id = optarg;
            break;
        case 'c':
            m->cluster = optarg;
            break;
        case 'd':
            if (parse_int(optarg, 0, &m->restand_delay_ms) < 0) {
                fprintf(stderr, "tera-master: invalid --restand-delay '%s'\n", optarg);
                return 2;
            }
            break;
        case 't':
            m->tablet_server = 1;
            break;
        case 'l':
            if ((level = reign_log_level_parse(optarg)) < 0) {
                fprintf(stderr, "tera-master: invalid --log-level '%s'\n", optarg);
                return 2;
            }
            break;
        case 'h':
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || !m->uri || !m->addr) {
        fprintf(stderr, "tera-master: %s\n",
                optind != argc ? "unexpected argument"
                : !m->uri      ? "no store: give --uri or set REIGN_URI"
                               : "--addr is required");
        return 2;
    }
    char tmp[ADDR_MAX];
    if (copy_addr(tmp, m->addr, strlen(m->addr)) < 0) {
        fprintf(stderr, "tera-master: invalid --addr (1 to %d printable characters, no spaces)\n",
                ADDR_MAX - 1);
        return 2;
    }
    if (!m->id)
        m->id = m->addr;
    if (make_names(m) < 0)
        return 2;
    reign_set_log(log_sink, NULL, (reign_log_level)level);
    return 0;
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    master *m = &M;
    int r = parse_options(m, argc, argv);
    if (r)
        return r;
    m->master_version = -1;

    char err[512];
    reign_client_options co = {.size = sizeof(co), .on_state = on_client_state, .userdata = m};
    if ((r = reign_client_new(&m->client, m->uri, &co, err, sizeof(err))) < 0) {
        fprintf(stderr, "tera-master: %s: %s\n", reign_strerror(r), err);
        return EXIT_FAILURE;
    }
    /* Tera's Setup fails when ZooKeeper cannot be reached; so do we. */
    if ((r = reign_client_wait_connected(m->client)) < 0) {
        fprintf(stderr, "tera-master: cannot connect: %s\n", reign_strerror(r));
        reign_client_free(m->client);
        return EXIT_FAILURE;
    }
    r = m->tablet_server ? start_tablet_server(m) : start_watches(m);
    if (r < 0) {
        fprintf(stderr, "tera-master: %s\n", reign_strerror(r));
        reign_client_free(m->client);
        return EXIT_FAILURE;
    }

    uv_loop_init(&m->loop);
    if (reign_uv_attach(&m->uv, &m->loop, m->client) < 0) {
        fprintf(stderr, "tera-master: cannot attach the client to the loop\n");
        return EXIT_FAILURE;
    }
    uv_signal_init(&m->loop, &m->sigint);
    uv_signal_init(&m->loop, &m->sigterm);
    m->sigint.data = m->sigterm.data = m;
    uv_signal_start(&m->sigint, on_signal, SIGINT);
    uv_signal_start(&m->sigterm, on_signal, SIGTERM);
    uv_run(&m->loop, UV_RUN_DEFAULT); /* until the client is CLOSED */
    uv_loop_close(&m->loop);

    m->lock = reign_election_free(m->lock);
    m->ts_self = reign_group_free(m->ts_self);
    m->ts = reign_group_watch_free(m->ts);
    m->master_w = reign_value_watch_free(m->master_w);
    m->root_w = reign_value_watch_free(m->root_w);
    m->safemode_w = reign_value_watch_free(m->safemode_w);
    reign_client_free(m->client);
    return m->exit_code;
}
