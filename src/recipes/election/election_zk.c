/*
 * election_zk.c - leader election on ZooKeeper, both strategies (see
 * <reign/election.h> for what users get and election_base.h for the
 * node layout).
 *
 * The life of a candidate is the table of election_zk_fsm.c (states,
 * inputs, guards, the events each step emits, the request each step makes,
 * and why).  This file turns ZooKeeper's results and events into its
 * inputs (step()) and carries out what a step names: its events, then its
 * request (act_request()).  The reads a state makes while it stays (a
 * predecessor's exists, the leader's candidate node, the watches) belong
 * to turning results into inputs.
 *
 * Every attempt has an epoch; results of requests made by an older epoch
 * are ignored, so a late answer can never act on a newer state.  Watches
 * are kept at most one per purpose (flags below), since ZooKeeper fires
 * every registration.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "election_base.h"
#include "election_zk_fsm.h"
#include "layout.h"

typedef unsigned estate; /* reign__zke_state */
#define ST_NOSESSION       REIGN__ZKE_NOSESSION
#define ST_SETUP           REIGN__ZKE_SETUP
#define ST_CREATING        REIGN__ZKE_CREATING
#define ST_CHECKING        REIGN__ZKE_CHECKING
#define ST_LEADER_CHECKING REIGN__ZKE_LEADER_CHECKING
#define ST_WAITING         REIGN__ZKE_WAITING
#define ST_OBSERVING       REIGN__ZKE_OBSERVING
#define ST_CONTENDING      REIGN__ZKE_CONTENDING
#define ST_HANDING_OVER    REIGN__ZKE_HANDING_OVER
#define ST_CLAIMING        REIGN__ZKE_CLAIMING
#define ST_TAKING_OVER     REIGN__ZKE_TAKING_OVER
#define ST_LEADER          REIGN__ZKE_LEADER
#define ST_DEMOTED         REIGN__ZKE_DEMOTED
#define ST_RESIGNING       REIGN__ZKE_RESIGNING
#define ST_PAUSED          REIGN__ZKE_PAUSED
#define ST_LEFT            REIGN__ZKE_LEFT
#define ST_FAILED          REIGN__ZKE_FAILED
#define IN(x)              REIGN__ZKE_IN_##x

/* What was the "waiting" of the flag-based machine: behind someone. */
static bool waiting_like(estate s)
{
    return s == ST_WAITING || s == ST_OBSERVING || reign__zke_contending(s);
}

static bool claiming(estate s)
{
    return s == ST_CLAIMING || s == ST_TAKING_OVER;
}

static bool checking(estate s)
{
    return s == ST_CHECKING || s == ST_LEADER_CHECKING;
}

typedef struct zk_election {
    reign_election base; /* first: the client and the API call us through it */
    reign__zk *zk;
    char *dir;
    char *term_path;
    char *lock_path;
    char *leader_path; /* queue: the node the leader holds */
    reign__buf record; /* what our node holds */
    reign_strategy strategy;
    unsigned cfg_prio; /* as configured */
    unsigned prio;     /* as we stand now (higher once designated) */
    bool no_preempt;
    int preempt_delay_ms;

    estate state;
    char guid[2 * REIGN__GUID_BYTES + 1];
    char *my_node; /* full path of our node, once known */
    bool create_inflight;
    int setup_tries;
    bool dir_ours;      /* setup: our create made the election node (we know its strategy) */
    bool need_parents;  /* setup: its parents are missing */
    bool parents_tried; /* setup: and we made them in this attempt */
    int cold_tries;     /* setup: attempts at making a new election in one multi */
    char *cold_node;    /* ... the candidate node that multi makes, while it is in flight */

    int64_t valid_until;

    /* watches registered on the server (at most one each) */
    char **impostors; /* queue-named nodes that are not ephemeral: never candidates */
    size_t n_impostors;
    char *pred_watched; /* queue: the predecessor we watch */
    bool pred_is_first; /* ... and it was first in line */
    char *pred;         /* the predecessor last looked at */
    bool own_watched;   /* queue: our node; lock: the lock node */
    bool term_watched;
    bool leader_lock_watched; /* queue: the leader node */
    char *designated;         /* queue: designated, under this leader ("-": none), until we lead */
    char *designation;        /* ... which one: "<that leader's node>@<its term>" */
    char *designation_done;   /* the last one we led by (our node still says so) */
    char *handing_to;         /* queue: the node we handed the leader node to, until it takes it */
    bool handing_watched;     /* ... and its exists watch is registered */
    bool leader_seen;         /* designated: we read the leader node at leader_seen_version */
    int32_t leader_seen_version;
    int32_t own_version;    /* queue: our node's version as we last read it */
    int32_t leader_version; /* our leader node's version as last seen (leading) */
    int64_t preempt_at;     /* when we may ask a lower-priority leader to hand over */
    char *holder_node;      /* the candidate node it names (a contender's) */
    bool may_preempt;       /* we outrank it and may ask it to hand over */
    char *leader_node_watched;

    bool following; /* leader-view maintenance started */

    reign__timer timer;   /* pause (cede) and error back-off */
    reign__timer preempt; /* the preemption delay */

} zk_election;

typedef reign__election_news zk_news;

static const reign__recipe_ops election_ops;
static reign_election *zk_free(reign_election *pub);
static bool step(zk_election *e, reign__zke_input in, const zk_news *n);

static void start(zk_election *e);
static void check(zk_election *e);
static void claim(zk_election *e);
static void follow_leader(zk_election *e);
static void create_node(zk_election *e);
static void finish_resign(zk_election *e, int err);
static void retry_later(zk_election *e, int err, const char *what);
static void handle_node_gone(zk_election *e);
static void await_term(zk_election *e);
static void contend(zk_election *e);
static void watch_own(zk_election *e);
static void release_leader_node(zk_election *e);
static void release_if_ours(zk_election *e);
static void take_over(zk_election *e, int32_t version);
static void undesignate(zk_election *e);
static void on_term_recheck(void *owner, void *arg, const reign__zk_result *r);

/* ---- names and small helpers -------------------------------------------- */

char *reign__election_path(const char *name, const char *suffix)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s%s", REIGN__ELECTION_DIR, name, suffix ? suffix : "");
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

void reign__election_id_tag(char out[9], const char *id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(out, 9, "%08x", h);
}

int reign__election_guid(char out[2 * REIGN__GUID_BYTES + 1], const char *id)
{
    reign__election_id_tag(out, id);
    return reign__random_hex(out + 8, REIGN__GUID_BYTES / 2);
}

bool reign__qnode_parse(const char *name, reign__qnode *out)
{
    /* n_ + 16 hex + _ + [p + 4 digits + _] + 10 digits */
    size_t len = strlen(name), base = 2 + 2 * REIGN__GUID_BYTES + 1;
    if ((len != base + 10 && len != base + 6 + 10) || name[0] != 'n' || name[1] != '_' ||
        name[2 + 2 * REIGN__GUID_BYTES] != '_')
        return false;
    unsigned prio = 0;
    if (len == base + 6 + 10) {
        if (name[base] != 'p' || name[base + 5] != '_')
            return false;
        for (size_t i = base + 1; i < base + 5; i++) {
            if (name[i] < '0' || name[i] > '9')
                return false;
            prio = prio * 10 + (unsigned)(name[i] - '0');
        }
        if (prio == 0)
            return false; /* priority 0 has the short name: one name per node */
        base += 6;
    }
    for (int i = 0; i < 2 * REIGN__GUID_BYTES; i++) {
        char ch = name[2 + i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
        out->guid[i] = ch;
    }
    out->guid[2 * REIGN__GUID_BYTES] = '\0';
    uint64_t seq = 0;
    for (const char *p = name + base; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        seq = seq * 10 + (uint64_t)(*p - '0');
    }
    out->name = name;
    out->prio = prio;
    out->seq = seq;
    return true;
}

bool reign__qnode_before(const reign__qnode *a, const reign__qnode *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

bool reign__election_node_ok(const char *name)
{
    reign__qnode q;
    return !strcmp(name, REIGN__N_LOCK) || reign__qnode_parse(name, &q);
}

static int qnode_cmp(const void *a, const void *b)
{
    const reign__qnode *x = a, *y = b;
    return reign__qnode_before(x, y) ? -1 : reign__qnode_before(y, x);
}

void reign__qnode_sort(reign__qnode *v, size_t n)
{
    qsort(v, n, sizeof(*v), qnode_cmp);
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool is_impostor(const zk_election *e, const char *name)
{
    for (size_t i = 0; i < e->n_impostors; i++)
        if (!strcmp(e->impostors[i], name))
            return true;
    return false;
}

static int add_impostor(zk_election *e, const char *name)
{
    if (e->n_impostors >= 64) /* bounded: forget the newest */
        reign__free(e->impostors[--e->n_impostors]);
    char **v = reign__realloc(e->impostors, (e->n_impostors + 1) * sizeof(*v));
    if (!v)
        return REIGN_ENOMEM;
    e->impostors = v;
    if (!(v[e->n_impostors] = reign__strdup(name)))
        return REIGN_ENOMEM;
    e->n_impostors++;
    return 0;
}

static void set_str(char **slot, const char *v)
{
    reign__free(*slot);
    *slot = v ? reign__strdup(v) : NULL;
}

/* A node we made for an attempt given up meanwhile: never leave it in line. */
static void drop_stray(zk_election *e, const char *path)
{
    reign__qnode q;
    if (path && reign__qnode_parse(basename_of(path), &q))
        reign__zk_delete(e->zk, path, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
}

/* ---- events ------------------------------------------------------------- */

static void emit_error(zk_election *e, int err, const char *fmt, ...) REIGN__PRINTF(3, 4);
static void emit_error(zk_election *e, int err, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reign__election_error(&e->base, err, msg);
}

/* Leaves leadership locally (the table's DEMOTE, DEMOTE_LATER).  `owed`:
 * from an API function, so the callback waits for the next process(). */
static void demote(zk_election *e, reign_demote_reason reason, bool owed)
{
    if (!e->base.leader)
        return;
    /* A leadership never outlasts its bound (is_leader() says no past it). */
    int64_t bound = reign__client_valid_until(e->base.client);
    e->valid_until = 0;
    e->prio = e->cfg_prio; /* a designation lasts one leadership */
    reign__client_hold_validity(e->base.client, -1);
    reign__election_demote(&e->base, reason, bound, owed);
}

/* ---- entry guard: the election may be freed by a callback ---------------- */

#define ENTER(e) reign__election_enter(&(e)->base)
#define LEAVE(e) reign__election_leave(&(e)->base)

/* A request's arg: the epoch that made it, and whether it carries a watch
 * (so a failed registration can clear its flag even when stale). */
#define ARG(e, watch)  REIGN__LIFE_ARG(&(e)->base.life, 1, (watch) ? 1u : 0u)
#define EPOCH_ARG(e)   ARG(e, 0)
#define HAD_WATCH(arg) (reign__life_low((arg), 1) != 0)
#define STALE(e, arg)  reign__life_stale(&(e)->base.life, (arg), 1)
/* exists() registers its watch when the answer is OK or ENOENT. */
#define EXISTS_REGISTERED(r) ((r)->rc == 0 || (r)->rc == REIGN_ENOENT)

/* A request could not even be issued: only memory or closing. */
static void issue_failed(zk_election *e, int rc, const char *what)
{
    if (rc == REIGN_ECLOSED)
        return;
    retry_later(e, rc, what);
}

/* ---- timers ------------------------------------------------------------- */

static void timer_cb(reign__timer *t, void *arg)
{
    zk_election *e = arg;
    ENTER(e);
    if (e->state == ST_PAUSED || e->state == ST_SETUP || checking(e->state) ||
        e->state == ST_CREATING) {
        if (e->my_node && e->state != ST_PAUSED)
            check(e);
        else
            start(e);
    }
    LEAVE(e);
}

/* A transient failure (the backend already retried): try again later,
 * from the top, unless the session is gone (then CONNECTED restarts us). */
static void retry_later(zk_election *e, int err, const char *what)
{
    if (err == REIGN_ESESSION || err == REIGN_ECLOSED) {
        reign__log(e->base.log, REIGN_LOG_DEBUG, "election %s: %s: no session", e->base.name, what);
        step(e, IN(NO_SESSION), NULL);
        return;
    }
    reign__log(e->base.log, REIGN_LOG_WARN, "election %s: %s: %s; retrying", e->base.name, what,
               reign_strerror(err));
    reign__life_bump(&e->base.life);
    step(e, IN(RETRY), NULL); /* again in a second */
}

static void fail(zk_election *e, int err, const char *fmt, ...) REIGN__PRINTF(3, 4);
static void fail(zk_election *e, int err, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    reign__life_bump(&e->base.life);
    step(e, IN(ERROR), NULL);
    reign__timer_stop(reign__client_timers(e->base.client), &e->timer);
    if (e->state == ST_FAILED)
        emit_error(e, err, "%s", msg);
}
/* ---- leader view (observers, follow_leader candidates) ----------------- */

static void on_leader_node_event(void *owner, void *arg, reign__zk_event ev, const char *path);
static void on_term_event(void *owner, void *arg, reign__zk_event ev, const char *path);

static void publish_leader(zk_election *e, reign__leader_view *nv)
{
    bool same = nv->known == e->base.lv.known &&
                (!nv->known || (nv->token == e->base.lv.token && nv->term == e->base.lv.term));
    reign__leader_view_clear(&e->base.lv);
    e->base.lv = *nv;
    memset(nv, 0, sizeof(*nv));
    reign__election_view(&e->base, !same);
}

static void on_leader_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    reign__leader_view *nv = arg;
    ENTER(e);
    if (!reign__life_live(&e->base.life) || r->rc == REIGN_ESESSION || r->rc == REIGN_ECLOSED) {
        reign__leader_view_clear(nv);
    } else {
        if (!EXISTS_REGISTERED(r) && e->leader_node_watched && nv->node &&
            !strcmp(e->leader_node_watched, nv->node))
            set_str(&e->leader_node_watched, NULL);
        if (r->rc == REIGN_ENOENT)
            reign__leader_view_clear(nv); /* the named leader is gone: no one leads yet */
        if (r->rc == 0 || r->rc == REIGN_ENOENT)
            publish_leader(e, nv);
        else
            reign__leader_view_clear(nv);
    }
    reign__free(nv);
    LEAVE(e);
}

static void on_term_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->term_watched = false;
    if (!reign__life_live(&e->base.life) || r->rc == REIGN_ESESSION || r->rc == REIGN_ECLOSED)
        goto out;
    if (r->rc == REIGN_ENOENT)
        await_term(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->term_watched = false; /* get() registers only on success */
    reign__leader_view *nv = reign__calloc(1, sizeof(*nv));
    if (!nv)
        goto out;
    reign__record rec;
    if (r->rc == 0 && r->stat.version > 0 &&
        reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *node = reign__record_get(&rec, REIGN__K_NODE);
        if (node && reign__election_node_ok(node)) {
            nv->known = true;
            nv->id = reign__strdup(
                reign__record_get(&rec, REIGN__K_ID) ? reign__record_get(&rec, REIGN__K_ID) : "");
            nv->data = reign__memdup(rec.payload, rec.payload_len);
            nv->data_len = rec.payload_len;
            nv->node = reign__strdup(node);
            nv->term = (uint64_t)r->stat.version;
            nv->token = (uint64_t)r->stat.mzxid;
            nv->since_ms = r->stat.mtime_ms;
        }
        reign__record_clear(&rec);
    } else if (r->rc == 0 && r->stat.version > 0) {
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: %s holds foreign data; ignored",
                   e->base.name, e->term_path);
    }
    if (nv->known && (!nv->id || !nv->node || (nv->data_len && !nv->data))) {
        reign__leader_view_clear(nv);
        reign__free(nv);
        goto out;
    }
    if (!nv->known) {
        publish_leader(e, nv);
        reign__free(nv);
        goto out;
    }
    /* Is that leader still there?  Watch its node, once. */
    char *path = reign__path_join(e->dir, nv->node);
    bool watch = !e->leader_node_watched || strcmp(e->leader_node_watched, nv->node) != 0;
    if (watch)
        set_str(&e->leader_node_watched, nv->node);
    int rc = !path ? REIGN_ENOMEM
                   : reign__zk_exists(e->zk, path, watch ? on_leader_node_event : NULL,
                                      REIGN__ZK_RETRY, e, on_leader_exists, nv);
    reign__free(path);
    if (rc < 0) {
        reign__leader_view_clear(nv);
        reign__free(nv);
    }
out:
    LEAVE(e);
}

static void on_term_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->term_watched = false;
    if (r->rc == 0 && e->following && reign__life_live(&e->base.life))
        follow_leader(e); /* created meanwhile: read it */
    LEAVE(e);
}

/* The election (or its term) does not exist yet: wait for it to appear,
 * without creating anything (observers only read). */
static void await_term(zk_election *e)
{
    if (e->term_watched)
        return;
    e->term_watched = true;
    if (reign__zk_exists(e->zk, e->term_path, on_term_event, REIGN__ZK_RETRY, e, on_term_exists,
                         ARG(e, 1)) < 0)
        e->term_watched = false;
}

static void follow_leader(zk_election *e)
{
    e->following = true;
    bool watch = !e->term_watched;
    int rc = reign__zk_get(e->zk, e->term_path, watch ? on_term_event : NULL, REIGN__ZK_RETRY, e,
                           on_term_read, ARG(e, watch));
    if (rc == 0 && watch)
        e->term_watched = true;
    if (rc < 0)
        reign__log(e->base.log, REIGN_LOG_WARN, "election %s: cannot read the term: %s",
                   e->base.name, reign_strerror(rc));
}

static void on_term_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->term_watched = false;
    if (e->following && e->state != ST_LEFT && e->state != ST_FAILED)
        follow_leader(e);
    LEAVE(e);
}

static void on_leader_node_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    if (e->leader_node_watched && !strcmp(basename_of(path), e->leader_node_watched)) {
        set_str(&e->leader_node_watched, NULL);
        if (ev == REIGN__ZK_DELETED && e->base.lv.known && e->base.lv.node &&
            !strcmp(e->base.lv.node, basename_of(path))) {
            reign__leader_view none = {0};
            publish_leader(e, &none);
        }
    }
    LEAVE(e);
}

/* ---- becoming leader ---------------------------------------------------- */

/* Leadership begins (the table's ELECT, after a fresh claim). */
static void announce_elected(zk_election *e, const zk_news *n)
{
    if (e->designated) { /* done; its priority stays for this leadership */
        set_str(&e->designation_done, e->designation);
        set_str(&e->designated, NULL);
    }
    set_str(&e->handing_to, NULL);
    e->leader_seen = false;
    reign__election_lead(&e->base, n->term, n->token);
    e->valid_until = n->until;
    reign__client_hold_validity(e->base.client, +1);
    reign__election_ready(&e->base);
    reign__election_elected(&e->base, n->at, n->until);
}

/*
 * One step of the table (election_zk_fsm.c): the new state, then its
 * actions in order.  False if the table refused the input or found it moot,
 * or if a callback run by the actions took another step or freed the
 * election: the caller then makes no request for the state it asked for.
 */
static void act_demote(reign_election *pub, reign_demote_reason reason, bool owed)
{
    demote((zk_election *)pub, reason, owed);
}

static void act_drop(reign_election *pub)
{
    if (pub->leader) {
        pub->leader = false;
        reign__client_hold_validity(pub->client, -1);
    }
}

static void act_elect(reign_election *pub, const zk_news *n)
{
    announce_elected((zk_election *)pub, n);
}

static void act_request(reign_election *pub, unsigned rq, const zk_news *n);

static const reign__election_acts zk_acts = {act_demote, act_drop, act_elect, act_request};

/* One step of the table (election_zk_fsm.c), with the facts its guards read. */
static bool step(zk_election *e, reign__zke_input in, const zk_news *n)
{
    unsigned facts =
        (e->my_node ? REIGN__EFSM_F_NODE : 0) | (e->handing_to ? REIGN__EFSM_F_HANDING : 0);
    return reign__election_step(&e->base, &reign__zke_machine, &zk_acts, &e->state, in, facts, n);
}

/* A claim (or a takeover, or a new election's multi) landed. */
static void become_leader(zk_election *e, uint64_t term, uint64_t token)
{
    zk_news n = {.term = term, .token = token, .at = reign__now_ns()};
    n.until = reign__client_valid_until(e->base.client);
    n.fresh = n.until > n.at;
    if (!n.fresh) {
        /* The proof of our session is already too old (a stall, or a slow
         * answer): announcing now could overlap with a successor. */
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: won term %llu but the session proof is stale; re-checking",
                   e->base.name, (unsigned long long)term);
        reign__life_bump(&e->base.life);
    }
    step(e, IN(CLAIMED), &n); /* LEADER, or CHECKING when stale */
}

static void on_term_recheck(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !claiming(e->state))
        goto out;
    if (r->rc != 0) {
        retry_later(e, r->rc, "reading the term");
        goto out;
    }
    /* Did our claim land before the connection dropped?  Our guid in the
     * term says so; the zxid of that write is our token. */
    reign__record rec;
    bool ours = false;
    if (reign__record_parse(r->value, r->value_len, &rec) == 0) {
        const char *g = reign__record_get(&rec, REIGN__K_GUID);
        ours = g && !strcmp(g, e->guid);
        reign__record_clear(&rec);
    }
    if (ours)
        become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
    else
        check(e);
out:
    LEAVE(e);
}

static void on_term_created(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CLAIMING)
        goto out;
    if (r->rc == 0 || r->rc == REIGN_EEXIST)
        claim(e);
    else if (r->rc == REIGN_EACCES)
        fail(e, r->rc, "not allowed to create %s (credentials?)", e->term_path);
    else
        retry_later(e, r->rc, "creating the term node");
out:
    LEAVE(e);
}

/* A claim (or takeover) failed otherwise: a lost answer (did it land?
 * our guid in the term says), no right to write, or a transient error. */
static void claim_failed(zk_election *e, int rc, const char *what)
{
    if (rc == REIGN_ECONNLOSS || rc == REIGN_ETIMEDOUT) {
        int r = reign__zk_get(e->zk, e->term_path, NULL, REIGN__ZK_RETRY, e, on_term_recheck,
                              EPOCH_ARG(e));
        if (r < 0)
            issue_failed(e, r, "reading the term");
    } else if (rc == REIGN_EACCES) {
        fail(e, rc, "not allowed to write %s (credentials?)", e->term_path);
    } else {
        retry_later(e, rc, what);
    }
}

static void on_claimed(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CLAIMING)
        goto out;
    int term_op = e->strategy == REIGN_STRATEGY_LOCK ? 1 : 2;
    switch (r->rc) {
    case 0:
        e->leader_version = 0;
        become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    case REIGN_EEXIST: /* the leader node: someone leads */
        contend(e);
        break;
    case REIGN_ENOENT:
        if (r->failed_op == 0) { /* the check: our node is gone */
            handle_node_gone(e);
            break;
        }
        if (r->failed_op != term_op) { /* the election node went: look again */
            check(e);
            break;
        }
        /* The term node is missing (an operator removed it): make it again. */
        if (reign__zk_create(e->zk, e->term_path, "reign 1\n\n", 9, 0, e, on_term_created,
                             EPOCH_ARG(e)) < 0)
            retry_later(e, REIGN_ENOMEM, "creating the term node");
        break;
    case REIGN_EBADVERSION:
        check(e);
        break;
    default:
        claim_failed(e, r->rc, "claiming the term");
    }
out:
    LEAVE(e);
}

static void on_leader_lock_event(void *owner, void *arg, reign__zk_event ev, const char *path);

/*
 * The claim: "our node still exists", "bump the term" and, with the queue
 * strategy, "make the leader node" in one multi.  If our node was deleted in
 * between (session expiry, an operator) the write does not happen, so the
 * term only ever grows under a live candidate, and the zxid of the write is
 * a fencing token no earlier leader can have.  The leader node makes the
 * claim exclusive whatever each candidate believes about the order: with
 * priorities a newcomer can rank ahead of the leader, and a designated one
 * ahead of everyone, yet none can claim while the leader holds the node -
 * it has to ask for a handoff (through the leader's candidate node, which
 * the leader watches anyway), and the leader demotes itself before it
 * lets go.
 */
/* What a claim writes: the term's record and the leader node's, naming our
 * candidate node `node`. */
static int claim_records(zk_election *e, const char *node, reign__buf *t, reign__buf *l)
{
    const char *kv[] = {REIGN__K_ID, e->base.id, REIGN__K_NODE, node, REIGN__K_GUID, e->guid};
    int rc = reign__record_build(t, kv, 6, e->base.data, e->base.data_len);
    if (rc == 0 && l) {
        char prio[12];
        snprintf(prio, sizeof(prio), "%u", e->prio);
        const char *lkv[] = {REIGN__K_ID,   e->base.id, REIGN__K_NODE,     node,
                             REIGN__K_GUID, e->guid,    REIGN__K_PRIORITY, prio};
        rc = reign__record_build(l, lkv, 8, NULL, 0);
    }
    return rc;
}

static void on_taken_over(void *owner, void *arg, const reign__zk_result *r);

/* The claim's multi; a takeover (version >= 0) deletes the leader node at
 * that version first (it names us next). */
static void send_claim(zk_election *e, int32_t takeover)
{
    reign__buf t, l;
    reign__buf_init(&t);
    reign__buf_init(&l);
    bool lock = e->strategy == REIGN_STRATEGY_LOCK;
    int rc = claim_records(e, basename_of(e->my_node), &t, lock ? NULL : &l);
    if (rc == 0 && lock) {
        rc = reign__zk_check_and_set(e->zk, e->my_node, e->term_path, t.data, t.len, -1, e,
                                     on_claimed, EPOCH_ARG(e));
    } else if (rc == 0) {
        reign__zk_mop ops[4];
        size_t n = 0;
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCHECK, .path = e->my_node, .version = -1};
        if (takeover >= 0)
            ops[n++] = (reign__zk_mop){
                .type = REIGN__ZK_MDELETE, .path = e->leader_path, .version = takeover};
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MCREATE,
                                   .path = e->leader_path,
                                   .data = l.data,
                                   .len = l.len,
                                   .flags = REIGN__ZK_EPHEMERAL};
        ops[n++] = (reign__zk_mop){.type = REIGN__ZK_MSET,
                                   .path = e->term_path,
                                   .data = t.data,
                                   .len = t.len,
                                   .version = -1};
        rc = reign__zk_multi(e->zk, ops, n, e, takeover >= 0 ? on_taken_over : on_claimed,
                             EPOCH_ARG(e));
    }
    reign__buf_free(&t);
    reign__buf_free(&l);
    if (rc < 0)
        issue_failed(e, rc, takeover >= 0 ? "taking over the leader node" : "claiming the term");
}

static void claim(zk_election *e)
{
    step(e, IN(FIRST), NULL);
}

/* ---- the leader node: contending, preempting, handing over --------------- */

/* Our leader node as the release found it: delete it if it is still ours. */
static void on_release_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    if (r->rc == 0 && r->stat.ephemeral_owner == reign_client_session_id(e->base.client) &&
        r->stat.ephemeral_owner != 0) {
        e->leader_version = r->stat.version;
        release_leader_node(e);
    }
}

/* The leader node, if our session holds it (a multi whose outcome we do
 * not know, or no longer want, may have made it): let it go.  Another
 * session's is never touched. */
static void release_if_ours(zk_election *e)
{
    if (e->strategy != REIGN_STRATEGY_LOCK)
        reign__zk_get(e->zk, e->leader_path, NULL, REIGN__ZK_RETRY, e, on_release_read, NULL);
}

static void on_released(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    /* Written to meanwhile (a handoff request): read it again and retry,
     * but only while it is ours - never delete another session's. */
    if (r->rc == REIGN_EBADVERSION && (uintptr_t)arg < 3)
        reign__zk_get(e->zk, e->leader_path, NULL, REIGN__ZK_RETRY, e, on_release_read,
                      (void *)((uintptr_t)arg + 1));
}

/* Lets go of the leader node after a demotion, so the next candidate can
 * claim.  Versioned: a node we no longer hold is someone else's. */
static void release_leader_node(zk_election *e)
{
    if (e->strategy == REIGN_STRATEGY_LOCK)
        return;
    reign__zk_delete(e->zk, e->leader_path, e->leader_version, REIGN__ZK_RETRY, e, on_released,
                     NULL);
}

static void on_handoff_asked(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == 0)
        reign__log(e->base.log, REIGN_LOG_INFO, "election %s: asked the leader to hand over",
                   e->base.name);
    else if (r->rc == REIGN_EBADVERSION || r->rc == REIGN_ENOENT)
        contend(e); /* it changed or went meanwhile: look again */
    else
        retry_later(e, r->rc, "asking the leader to hand over");
out:
    LEAVE(e);
}

/*
 * The candidate node of the leader named in the leader node: ask it to
 * hand over if we may, by adding handoff=<our node> to it (compare-and-set;
 * the leader watches its own node, so no watch is added for this).  If it
 * is gone (an operator deposed the leader), wait all the same: the leader
 * lets go of the leader node once it has demoted itself, or its session
 * ends - never sooner, so the two leaderships cannot overlap.
 */
static void on_holder_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT)
        goto out; /* deposed: it lets go when it has stepped down (or its session ends) */
    if (r->rc != 0) {
        retry_later(e, r->rc, "reading the leader's node");
        goto out;
    }
    if (!e->may_preempt || reign__now_ns() < e->preempt_at)
        goto out; /* wait: the watch on the leader node tells when it goes */
    reign__record rec;
    if (reign__record_parse(r->value, r->value_len, &rec) < 0)
        goto out; /* foreign: no one to ask */
    const char *mine = basename_of(e->my_node);
    const char *asked = reign__record_get(&rec, REIGN__K_HANDOFF);
    const char *at = reign__record_get(&rec, REIGN__K_HANDOFF_PRIORITY);
    char prio[12];
    snprintf(prio, sizeof(prio), "%u", e->prio);
    const char *set[] = {REIGN__K_HANDOFF, mine, REIGN__K_HANDOFF_PRIORITY, prio};
    reign__buf b;
    reign__buf_init(&b);
    /* Asked already (by us, or by the operator who designated us)? */
    int rc = asked && !strcmp(asked, mine) && at && !strcmp(at, prio)
                 ? 1
                 : reign__record_build_set(&b, &rec, set, 4);
    reign__record_clear(&rec);
    if (rc == 0)
        rc = reign__zk_set(e->zk, e->holder_node, b.data, b.len, r->stat.version, 0, e,
                           on_handoff_asked, EPOCH_ARG(e));
    reign__buf_free(&b);
    if (rc < 0)
        issue_failed(e, rc, "asking the leader to hand over");
out:
    LEAVE(e);
}

static void on_leader_lock_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && r->rc != 0)
        e->leader_lock_watched = false; /* get() registers only on success */
    if (STALE(e, arg) || !reign__zke_contending(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        set_str(&e->handing_to, NULL); /* taken over and gone, or let go */
        if (e->prio >= REIGN__DESIGNATED_MIN)
            claim(e); /* designated: first by construction */
        else
            check(e); /* gone: claim if still first */
        goto out;
    }
    if (r->rc != 0) {
        retry_later(e, r->rc, "reading the leader node");
        goto out;
    }
    reign__record rec;
    const char *node = NULL, *next = NULL;
    bool parsed = reign__record_parse(r->value, r->value_len, &rec) == 0;
    if (parsed) {
        node = reign__record_get(&rec, REIGN__K_NODE);
        next = reign__record_get(&rec, REIGN__K_NEXT);
    }
    if (r->stat.ephemeral_owner == reign_client_session_id(e->base.client)) {
        bool handing = e->handing_to && next && !strcmp(next, basename_of(e->handing_to));
        if (parsed)
            reign__record_clear(&rec);
        if (handing)
            goto out; /* handed over, not taken yet: its takeover deletes it */
        /* Ours from an earlier leadership (demoted by a stall, a handoff
         * that did not finish): let it go and claim a new term. */
        set_str(&e->handing_to, NULL);
        e->leader_version = r->stat.version;
        release_leader_node(e);
        check(e);
        goto out;
    }
    /* Another session's: a handover of ours is over (taken, or let go). */
    set_str(&e->handing_to, NULL);
    if (!step(e, IN(HANDOVER_ENDED), NULL)) {
        if (parsed)
            reign__record_clear(&rec);
        goto out;
    }
    if (!node || !reign__election_node_ok(node) || !strcmp(node, REIGN__N_LOCK)) {
        if (parsed)
            reign__record_clear(&rec);
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: %s holds data reign did not write; waiting for it to go",
                   e->base.name, e->leader_path);
        goto out;
    }
    if (next && !strcmp(next, basename_of(e->my_node))) {
        reign__record_clear(&rec);
        take_over(e, r->stat.version); /* handed to us */
        goto out;
    }
    if (e->designated && !next && !strcmp(e->designated, node)) {
        /* Its leader was asked to hand over to us: once it names us next
         * (its next change), we take over without reading it again. */
        e->leader_seen = true;
        e->leader_seen_version = r->stat.version;
    }
    uint64_t their = 0;
    (void)reign__record_get_u64(&rec, REIGN__K_PRIORITY, &their);
    bool designated = e->prio >= REIGN__DESIGNATED_MIN;
    e->may_preempt = designated ? e->prio >= their : e->prio > their && !e->no_preempt;
    reign__free(e->holder_node);
    e->holder_node = reign__path_join(e->dir, node);
    reign__record_clear(&rec);
    if (!e->holder_node) {
        retry_later(e, REIGN_ENOMEM, "reading the leader's node");
        goto out;
    }
    int64_t now = reign__now_ns();
    if (e->may_preempt && !e->preempt_at)
        e->preempt_at = now + (designated ? 0 : (int64_t)e->preempt_delay_ms * REIGN__NS_PER_MS);
    if (e->may_preempt && now < e->preempt_at)
        reign__timer_start(reign__client_timers(e->base.client), &e->preempt, e->preempt_at);
    if (!e->may_preempt)
        goto out; /* wait: the watch on the leader node tells when it goes */
    if (reign__zk_get(e->zk, e->holder_node, NULL, REIGN__ZK_RETRY, e, on_holder_read,
                      EPOCH_ARG(e)) < 0)
        issue_failed(e, REIGN_ENOMEM, "reading the leader's node");
out:
    LEAVE(e);
}

/* First in line, but someone holds the leader node: wait for it to go, or
 * (priority, designation) ask it to hand over. */
static void contend(zk_election *e)
{
    step(e, IN(LEADER_NODE_HELD), NULL);
}

/* The table's READ_LEADER: the leader node, read and watched (once). */
static void read_leader(zk_election *e)
{
    bool watch = !e->leader_lock_watched;
    int rc = reign__zk_get(e->zk, e->leader_path, watch ? on_leader_lock_event : NULL,
                           REIGN__ZK_RETRY, e, on_leader_lock_read, ARG(e, watch));
    if (rc == 0 && watch)
        e->leader_lock_watched = true;
    if (rc < 0)
        issue_failed(e, rc, "reading the leader node");
    if (!e->base.follow)
        reign__election_ready(&e->base);
}

static void preempt_cb(reign__timer *t, void *arg)
{
    zk_election *e = arg;
    ENTER(e);
    if (reign__zke_contending(e->state))
        contend(e);
    LEAVE(e);
}

static void on_leader_lock_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->leader_lock_watched = false;
    bool seen = e->leader_seen;
    e->leader_seen = false;
    if (reign__zke_contending(e->state)) {
        if (ev == REIGN__ZK_DELETED && e->handing_to) {
            set_str(&e->handing_to, NULL); /* taken over (or released): look again */
            check(e);
        } else if (ev == REIGN__ZK_DELETED && e->prio >= REIGN__DESIGNATED_MIN) {
            claim(e); /* designated: first by construction; the claim proves the rest */
        } else if (ev == REIGN__ZK_DELETED) {
            check(e); /* free: claim if first */
        } else if (seen && e->designated) {
            /* The only write to a leader node is its holder naming the next
             * one, after it demoted itself: the change we were told to
             * expect.  Take over at the version it made; if it named
             * someone else (another designation raced ours), the takeover
             * is still exclusive - and it fails if anything else changed. */
            take_over(e, e->leader_seen_version + 1);
        } else {
            contend(e);
        }
    }
    LEAVE(e);
}

static void on_taken_over(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_TAKING_OVER)
        goto out;
    switch (r->rc) {
    case 0:
        e->leader_version = 0;
        become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    case REIGN_ENOENT:
        if (r->failed_op == 0)
            handle_node_gone(e); /* our node is gone */
        else if (r->failed_op == 1)
            contend(e); /* the leader node went meanwhile: look again */
        else
            check(e); /* the term node is gone: the ordinary claim makes it again */
        break;
    case REIGN_EBADVERSION:
    case REIGN_EEXIST:
        contend(e); /* it changed meanwhile: look again */
        break;
    default:
        claim_failed(e, r->rc, "taking over the leader node");
    }
out:
    LEAVE(e);
}

/*
 * The leader named us next in the leader node (at `version`), demoted
 * already: delete it and make ours, with the claim, in one multi - no one
 * can claim in between, and if anything changed since, nothing happens.
 */
static void take_over(zk_election *e, int32_t version)
{
    zk_news n = {.version = version};
    step(e, IN(HANDED_TO_US), &n);
}

static void on_handing_event(void *owner, void *arg, reign__zk_event ev, const char *path);

/* The handover did not happen (the target left, or the leader node changed
 * under us): let the leader node go if we still hold it, and look again. */
static void abandon_handover(zk_election *e, const char *why)
{
    reign__log(e->base.log, REIGN_LOG_INFO, "election %s: handover to %s abandoned: %s",
               e->base.name, e->handing_to ? e->handing_to : "?", why);
    set_str(&e->handing_to, NULL);
    reign__life_bump(&e->base.life);
    release_if_ours(e);
    check(e);
}

static void on_handing_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->handing_watched = false;
    if (!STALE(e, arg) && e->handing_to && r->rc == REIGN_ENOENT)
        abandon_handover(e, "it is gone");
    LEAVE(e);
}

static void watch_handing(zk_election *e)
{
    if (e->handing_watched || !e->handing_to)
        return;
    e->handing_watched = true;
    if (reign__zk_exists(e->zk, e->handing_to, on_handing_event, REIGN__ZK_RETRY, e,
                         on_handing_exists, EPOCH_ARG(e)) < 0)
        e->handing_watched = false;
}

static void on_handing_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    e->handing_watched = false;
    if (e->handing_to && !strcmp(path, e->handing_to)) {
        if (ev == REIGN__ZK_DELETED)
            abandon_handover(e, "it left");
        else
            watch_handing(e); /* written to: still there, keep watching */
    }
    LEAVE(e);
}

static void on_handed(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !e->handing_to)
        goto out;
    if (r->rc != 0) {
        abandon_handover(e, reign_strerror(r->rc));
        goto out;
    }
    e->leader_version = r->stat.version;
    /* Until it takes over: watch it (if it leaves, we let go) and the
     * leader node (its takeover deletes ours). */
    watch_handing(e);
    contend(e);
out:
    LEAVE(e);
}

/*
 * Hands the leader node to the candidate `to` (demoted already): rewritten
 * to name it as next, it stays ours, so no one else can claim in between,
 * and `to` takes it over - deletes it and makes its own in one multi with
 * its claim.  Should `to` leave first, we let go of it (abandon_handover);
 * should we die, it goes with our session and the election goes on as
 * after any leader's end.
 */
static void hand_over(zk_election *e, const char *to)
{
    char prio[12];
    snprintf(prio, sizeof(prio), "%u", e->prio);
    const char *node = basename_of(e->my_node);
    const char *kv[] = {REIGN__K_ID, e->base.id,        REIGN__K_NODE, node,          REIGN__K_GUID,
                        e->guid,     REIGN__K_PRIORITY, prio,          REIGN__K_NEXT, to};
    reign__buf l;
    reign__buf_init(&l);
    set_str(&e->handing_to, NULL);
    e->handing_to = reign__path_join(e->dir, to);
    e->handing_watched = false;
    int rc = e->handing_to ? reign__record_build(&l, kv, 10, NULL, 0) : REIGN_ENOMEM;
    if (rc == 0)
        rc = reign__zk_set(e->zk, e->leader_path, l.data, l.len, e->leader_version, 0, e, on_handed,
                           EPOCH_ARG(e));
    reign__buf_free(&l);
    if (rc < 0) {
        set_str(&e->handing_to, NULL);
        issue_failed(e, rc, "handing over");
    }
}

/*
 * A handoff asked for `to` (written into our own node, by `to` itself or
 * by an operator designating it), at priority `asked`: the higher of the
 * one its node name carries and the one the request states.  A higher
 * priority always leads first, and a designated asker takes over from an
 * equal (designated) leader - the operator's latest choice wins.  A request
 * from a candidate that does not outrank us is ignored: it would only make
 * the lead bounce.
 */
static void hand_off_if_asked(zk_election *e, const char *to, unsigned asked)
{
    reign__qnode them;
    if (!to || !e->my_node || !reign__qnode_parse(to, &them) ||
        !strcmp(to, basename_of(e->my_node))) {
        check(e); /* nothing asked: look again (and re-arm the watch on our node) */
        return;
    }
    unsigned prio = them.prio > asked ? them.prio : asked;
    bool designated = prio >= REIGN__DESIGNATED_MIN;
    if (!(prio > e->prio || (designated && prio >= e->prio))) {
        reign__log(e->base.log, REIGN_LOG_INFO,
                   "election %s: ignoring a handoff request from %s, which does not outrank us",
                   e->base.name, to);
        check(e);
        return;
    }
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: handing over to %s", e->base.name, to);
    reign__life_bump(&e->base.life);
    zk_news n = {.to = to};
    step(e, IN(OUTRANKED), &n); /* demoted, HANDING_OVER: the leader node names `to` */
}

/* ---- watching our place ------------------------------------------------- */

static void on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path);
static void on_find_own(void *owner, void *arg, const reign__zk_result *r);

static void handle_node_gone(zk_election *e)
{
    /* Someone else deleted our node (reign cede, an operator), or it went
     * with a session we no longer have.  Stand again after the cede delay,
     * which lets another candidate take over. */
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: our node %s was deleted", e->base.name,
               e->my_node ? e->my_node : "?");
    reign__life_bump(&e->base.life);
    set_str(&e->my_node, NULL);
    e->own_watched = false;
    bool was_leader = e->base.leader;
    step(e, IN(NODE_GONE), NULL); /* demoted if leading; PAUSED for the cede delay */
    if (was_leader || e->handing_to)
        release_leader_node(e);
    set_str(&e->handing_to, NULL);
    undesignate(e);
}

static void on_leader_lock_read(void *owner, void *arg, const reign__zk_result *r);
static void read_own(zk_election *e);

/*
 * An operator designated us (election_query.c wrote designated=<the
 * leader's node> into ours, and handoff=<ours> into the leader's): outrank
 * everyone until we lead once, and take over from that leader as soon as
 * it names us next.  Should it end otherwise (it dies before handing
 * over), whoever comes next is asked to hand over to us like any leader
 * that does not outrank us.
 */
static void designated(zk_election *e, const char *leader, const char *id)
{
    if (e->designation_done && !strcmp(e->designation_done, id))
        return; /* led by it already: our node still says so */
    if (e->designated && e->designation && !strcmp(e->designation, id) &&
        reign__zke_contending(e->state))
        return; /* acting on it already */
    set_str(&e->designation, id);
    reign__log(e->base.log, REIGN_LOG_NOTICE, "election %s: designated (the leader was %s)",
               e->base.name, leader);
    set_str(&e->designated, leader);
    e->prio = REIGN__DESIGNATED_MIN;
    e->preempt_at = 0;
    if (!claiming(e->state)) /* a claim in flight ends in contend() if it fails */
        contend(e);
}

static void undesignate(zk_election *e)
{
    set_str(&e->designated, NULL);
    if (!e->base.leader)
        e->prio = e->cfg_prio;
}

static void on_own_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state == ST_RESIGNING || e->state == ST_LEFT ||
        e->state == ST_CREATING || e->state == ST_PAUSED || !e->my_node)
        goto out;
    if (r->rc == REIGN_ENOENT) {
        handle_node_gone(e);
        goto out;
    }
    if (r->rc == 0)
        e->own_version = r->stat.version;
    uint64_t asked = 0;
    bool restore = false;
    char *to = NULL, *des = NULL;
    reign__buf id;
    reign__buf_init(&id);
    reign__record rec;
    if (r->rc == 0 && reign__record_parse(r->value, r->value_len, &rec) == 0) {
        if (reign__record_get_u64(&rec, REIGN__K_HANDOFF_PRIORITY, &asked) < 0 ||
            asked > REIGN__DESIGNATED_MIN)
            asked = 0;
        const char *h = reign__record_get(&rec, REIGN__K_HANDOFF);
        const char *d = reign__record_get(&rec, REIGN__K_DESIGNATED);
        to = h ? reign__strdup(h) : NULL;
        des = d && (!strcmp(d, "-") || reign__election_node_ok(d)) ? reign__strdup(d) : NULL;
        const char *dt = reign__record_get(&rec, REIGN__K_DESIGNATED_TERM);
        reign__buf_printf(&id, "%s@%s", d ? d : "", dt ? dt : "");
        const char *mine = reign__record_get(&rec, REIGN__K_ID);
        if (!mine || strcmp(mine, e->base.id) != 0 || rec.payload_len != e->base.data_len ||
            (rec.payload_len && memcmp(rec.payload, e->base.data, rec.payload_len) != 0)) {
            /* Written without our payload (a designation found us by the id
             * tag in our name, without reading us): put our record back. */
            restore = true;
        }
        reign__record_clear(&rec);
    }
    if (e->base.leader && e->state == ST_LEADER)
        hand_off_if_asked(e, to, (unsigned)asked); /* one that outranks us asks */
    else if (des && !e->base.leader && !id.oom)
        designated(e, des, id.data);
    else if (!e->designated || e->base.leader)
        check(e); /* (designated: our own write, or news the leader node brings) */
    /* After the request this read decided (a handover's rewrite, a designated candidate's
     * read of the leader node), which is on a designation's critical path: the watch for
     * the next request (a change since this read is read again), and our record. */
    if (r->rc == 0 && e->my_node && reign__life_live(&e->base.life)) {
        watch_own(e);
        if (restore)
            reign__zk_set(e->zk, e->my_node, e->record.data, e->record.len, r->stat.version, 0,
                          NULL, NULL, NULL);
    }
    reign__free(to);
    reign__free(des);
    reign__buf_free(&id);
out:
    LEAVE(e);
}

static void read_own(zk_election *e)
{
    int rc = reign__zk_get(e->zk, e->my_node, NULL, REIGN__ZK_RETRY, e, on_own_read, EPOCH_ARG(e));
    if (rc < 0)
        issue_failed(e, rc, "reading our node");
}

static void on_own_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        e->own_watched = false; /* the lock watch serves leader and waiters alike */
        if (ev == REIGN__ZK_DELETED) {
            if (e->state == ST_LEADER || e->state == ST_DEMOTED || e->state == ST_CLAIMING)
                handle_node_gone(e);
            else if (waiting_like(e->state))
                create_node(e); /* the lock is free: race for it */
        } else if (waiting_like(e->state) || e->state == ST_LEADER || e->state == ST_DEMOTED) {
            check(e); /* data changed: re-arm the watch and look again */
        }
    } else if (e->my_node && !strcmp(path, e->my_node)) {
        e->own_watched = false;
        if (ev == REIGN__ZK_DELETED && e->state != ST_RESIGNING && e->state != ST_LEFT)
            handle_node_gone(e);
        else if (ev != REIGN__ZK_DELETED && e->state != ST_RESIGNING && e->state != ST_LEFT &&
                 e->state != ST_CREATING)
            read_own(e); /* someone wrote to our node: a designation? */
    }
    LEAVE(e);
}

static void on_pred_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    zk_election *e = owner;
    ENTER(e);
    bool was_pred = e->pred_watched && !strcmp(e->pred_watched, path);
    if (was_pred)
        set_str(&e->pred_watched, NULL);
    if (waiting_like(e->state) && was_pred && ev == REIGN__ZK_DELETED && e->pred_is_first) {
        /* Sequence numbers only grow, so without priorities no node can
         * appear ahead of ours: with the first in line gone, we are first.
         * Claim at once (the claim's check still proves our node exists,
         * and the leader node keeps it exclusive if a designated candidate
         * got ahead meanwhile): one round trip. */
        claim(e);
    } else if (waiting_like(e->state) &&
               !(reign__zke_contending(e->state) && ev != REIGN__ZK_DELETED)) {
        check(e);
    }
    /* (A contender no longer minds its old predecessor, and a write to it
     * - our own handoff request, when it leads - is no reason to look.) */
    LEAVE(e);
}

static void on_pred_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && !EXISTS_REGISTERED(r))
        set_str(&e->pred_watched, NULL);
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        check(e); /* gone meanwhile: look again */
    } else if (r->rc == 0 && r->stat.ephemeral_owner == 0) {
        /* A persistent node named like a candidate (written by someone
         * else): no session will ever remove it, so it is no candidate.
         * Leave it out of the order, or the election would stall behind it. */
        const char *name = e->pred ? basename_of(e->pred) : "";
        reign__log(e->base.log, REIGN_LOG_WARN,
                   "election %s: %s is not ephemeral, so not a candidate; ignoring it",
                   e->base.name, name);
        if (*name && add_impostor(e, name) < 0) {
            retry_later(e, REIGN_ENOMEM, "ignoring a foreign node");
            goto out;
        }
        check(e);
    } else if (r->rc == 0) {
        step(e, IN(BEHIND), NULL);
    } else
        retry_later(e, r->rc, "watching the predecessor");
out:
    LEAVE(e);
}

static void on_own_exists(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (!EXISTS_REGISTERED(r))
        e->own_watched = false;
    else if (r->rc == REIGN_ENOENT && !STALE(e, arg) && e->state != ST_RESIGNING &&
             e->state != ST_LEFT && e->state != ST_PAUSED)
        handle_node_gone(e);
    else if (r->rc == 0 && !STALE(e, arg) && e->strategy != REIGN_STRATEGY_LOCK &&
             r->stat.version > e->own_version && e->state != ST_RESIGNING && e->state != ST_LEFT &&
             e->state != ST_PAUSED && e->state != ST_CREATING)
        /* Written to before the watch was in place (we never write to our
         * own node after making it): a request we would otherwise miss. */
        read_own(e);
    LEAVE(e);
}

static void watch_own(zk_election *e)
{
    if (e->own_watched || !e->my_node)
        return;
    e->own_watched = true; /* set now so that one registration is in flight at most */
    int rc = reign__zk_exists(e->zk, e->my_node, on_own_event, REIGN__ZK_RETRY, e, on_own_exists,
                              EPOCH_ARG(e));
    if (rc < 0)
        e->own_watched = false;
}

static void on_children(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc != 0) {
        if (r->rc == REIGN_ENOENT) { /* the election node itself was removed */
            set_str(&e->my_node, NULL);
            e->own_watched = false;
            reign__life_bump(&e->base.life);
            step(e, IN(ELECTION_GONE), NULL); /* demoted if leading; set up again */
        } else {
            retry_later(e, r->rc, "listing candidates");
        }
        goto out;
    }
    reign__qnode *v = reign__calloc(r->n_children ? r->n_children : 1, sizeof(*v));
    if (!v) {
        retry_later(e, REIGN_ENOMEM, "listing candidates");
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->n_children; i++)
        if (reign__qnode_parse(r->children[i], &v[n]) && !is_impostor(e, r->children[i]))
            n++;
    reign__qnode_sort(v, n);
    const char *mine = basename_of(e->my_node);
    size_t me = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].name, mine))
            me = i;
    if (me == SIZE_MAX) {
        reign__free(v);
        handle_node_gone(e);
        goto out;
    }
    if (!e->base.leader && (e->designated || (me == 0 && e->handing_to))) {
        /* Designated: we take over wherever we stand in line.  Handing
         * over: the one we named takes over, not us. */
        reign__free(v);
        contend(e);
        goto out;
    }
    if (me == 0) {
        reign__free(v);
        if (e->base.leader) { /* still first: nothing changed for us */
            step(e, IN(STILL_LEADING), NULL);
            goto out;
        }
        claim(e); /* READY comes with ELECTED */
        goto out;
    }
    if (e->base.leader) {
        /* Not first any more: a candidate of higher priority joined.  We
         * lead until it asks us to hand over (or never, without preemption). */
        reign__free(v);
        step(e, IN(STILL_LEADING), NULL);
        goto out;
    }
    /* The one-round-trip handoff (on_pred_event) holds only while no node
     * can rank ahead of ours, which priorities (or a designation) allow. */
    bool ranked = e->prio != 0;
    for (size_t i = 0; i < n && !ranked; i++)
        ranked = v[i].prio != 0;
    char *pred = reign__path_join(e->dir, v[me - 1].name);
    reign__free(v);
    if (!pred) {
        retry_later(e, REIGN_ENOMEM, "watching the predecessor");
        goto out;
    }
    e->pred_is_first = me == 1 && !ranked;
    reign__free(e->pred);
    e->pred = pred;
    /* One watch per predecessor: ZooKeeper would fire every registration. */
    bool watch = !e->pred_watched || strcmp(e->pred_watched, pred) != 0;
    if (watch)
        set_str(&e->pred_watched, pred);
    int rc = reign__zk_exists(e->zk, pred, watch ? on_pred_event : NULL, REIGN__ZK_RETRY, e,
                              on_pred_exists, ARG(e, watch));
    if (rc < 0 && watch)
        set_str(&e->pred_watched, NULL);
    if (rc < 0)
        issue_failed(e, rc, "watching the predecessor");
    if (!e->base.follow)
        reign__election_ready(&e->base);
out:
    LEAVE(e);
}

static void on_lock_state(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (HAD_WATCH(arg) && !EXISTS_REGISTERED(r))
        e->own_watched = false;
    if (STALE(e, arg) || !checking(e->state))
        goto out;
    if (r->rc == REIGN_ENOENT) {
        set_str(&e->my_node, NULL);
        create_node(e); /* free: try to take it (the watch stays armed) */
        goto out;
    }
    if (r->rc != 0) {
        retry_later(e, r->rc, "reading the lock");
        goto out;
    }
    /* Ours only if its ephemeral owner is our session: never by its data. */
    if (r->stat.ephemeral_owner == reign_client_session_id(e->base.client) &&
        r->stat.ephemeral_owner != 0) {
        set_str(&e->my_node, e->lock_path);
        if (e->base.leader)
            step(e, IN(STILL_LEADING), NULL);
        else
            claim(e);
    } else {
        set_str(&e->my_node, NULL);
        if (!step(e, IN(LOCK_HELD), NULL)) /* demoted if leading */
            goto out;
        if (!e->base.follow)
            reign__election_ready(&e->base);
    }
out:
    LEAVE(e);
}

static void check(zk_election *e)
{
    step(e, IN(CHECK), NULL);
}

/* The table's LIST: the candidates (lock: the lock, watched once). */
static void list(zk_election *e)
{
    int rc;
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        /* One exists watch on the lock, shared by waiting and leading. */
        bool watch = !e->own_watched;
        rc = reign__zk_exists(e->zk, e->lock_path, watch ? on_own_event : NULL, REIGN__ZK_RETRY, e,
                              on_lock_state, ARG(e, watch));
        if (rc == 0 && watch)
            e->own_watched = true;
    } else {
        watch_own(e);
        rc = reign__zk_children(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_children, EPOCH_ARG(e));
    }
    if (rc < 0)
        issue_failed(e, rc, "checking");
}

/* ---- resigning ---------------------------------------------------------- */

static void finish_resign(zk_election *e, int err)
{
    zk_news n = {.err = err};
    step(e, IN(RESIGNED), &n); /* LEFT */
}

static void on_resign_deleted(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    /* ENOENT or a lost session: the node is gone all the same. */
    finish_resign(e, (r->rc == 0 || r->rc == REIGN_ENOENT || r->rc == REIGN_ESESSION ||
                      r->rc == REIGN_ECLOSED)
                         ? 0
                         : r->rc);
    LEAVE(e);
}

/* ---- creating our node -------------------------------------------------- */

static void on_find_own(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_CREATING)
        goto out;
    if (r->rc != 0) {
        retry_later(e, r->rc, "looking for our node");
        goto out;
    }
    /* After a connection loss during the create: did it land?  Our guid in
     * a child's name says so; then that node is ours, else create again. */
    for (size_t i = 0; i < r->n_children; i++) {
        reign__qnode q;
        if (reign__qnode_parse(r->children[i], &q) && !strcmp(q.guid, e->guid)) {
            e->prio = q.prio;
            e->own_version = 0; /* unknown: a written node is read once watched */
            char *p = reign__path_join(e->dir, q.name);
            if (p)
                set_str(&e->my_node, p);
            reign__free(p);
            if (!e->my_node) {
                retry_later(e, REIGN_ENOMEM, "adopting our node");
                goto out;
            }
            reign__log(e->base.log, REIGN_LOG_INFO, "election %s: found our node %s after a retry",
                       e->base.name, e->my_node);
            check(e);
            goto out;
        }
    }
    create_node(e);
out:
    LEAVE(e);
}

static void on_created(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    e->create_inflight = false;
    if (e->state == ST_RESIGNING) {
        /* resigned while the create was in flight: remove what landed */
        if (r->rc == 0 && r->value &&
            reign__zk_delete(e->zk, r->value, -1, REIGN__ZK_RETRY, e, on_resign_deleted, NULL) == 0)
            goto out;
        finish_resign(e, 0);
        goto out;
    }
    if (STALE(e, arg) || e->state != ST_CREATING) {
        if (r->rc == 0 && e->strategy != REIGN_STRATEGY_LOCK)
            drop_stray(e, r->value); /* given up meanwhile (ceded, restarted) */
        goto out;
    }
    switch (r->rc) {
    case 0:
        set_str(&e->my_node, r->value);
        e->own_version = 0;
        if (!e->my_node) {
            retry_later(e, REIGN_ENOMEM, "recording our node");
            break;
        }
        if (e->strategy == REIGN_STRATEGY_LOCK) {
            e->own_watched = false;
            check(e); /* confirms the owner and arms the lock watch */
        } else {
            check(e);
        }
        break;
    case REIGN_EEXIST: /* lock: someone holds it (maybe our earlier session) */
        check(e);
        break;
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
        step(e, IN(CREATE_UNKNOWN), NULL); /* did it land? */
        break;
    case REIGN_ENOENT: /* the election node vanished: set up again */
        reign__life_bump(&e->base.life);
        start(e);
        break;
    case REIGN_EACCES:
        fail(e, r->rc,
             "not allowed to create a candidate under %s: the election belongs to other "
             "credentials",
             e->dir);
        break;
    case REIGN_E2BIG:
        fail(e, r->rc, "the store refused the payload as too large (%s)", e->dir);
        break;
    default:
        retry_later(e, r->rc, "creating our node");
    }
out:
    LEAVE(e);
}

/*
 * Our candidate node's record: id, guid, payload, and the session timeout
 * the server granted us ("session_ms"), so that anyone reading the
 * election (`reign status`) can tell how long a takeover takes should we
 * crash while leading: the server expires our session, and so our node,
 * that long after it last heard from us, whatever the reader's own
 * settings.  Rebuilt before each create: a new session may have another.
 */
static int candidate_record(zk_election *e)
{
    char session[16] = "";
    int t = reign__zk_session_timeout_ms(e->zk);
    if (t > 0)
        snprintf(session, sizeof(session), "%d", t);
    const char *kv[] = {REIGN__K_ID, e->base.id,          REIGN__K_GUID,
                        e->guid,     REIGN__K_SESSION_MS, session};
    reign__buf_reset(&e->record);
    return reign__record_build(&e->record, kv, session[0] ? 6 : 4, e->base.data, e->base.data_len);
}

static void create_node(zk_election *e)
{
    step(e, IN(CREATE), NULL);
}

/* The table's FIND_OWN: a create lost its answer; did it land? */
static void find_own(zk_election *e)
{
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        check(e); /* the lock's owner tells whether it was ours */
        return;
    }
    int rc = reign__zk_children(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_find_own, EPOCH_ARG(e));
    if (rc < 0)
        issue_failed(e, rc, "looking for our node");
}

/* The table's CREATE: our candidate node (or the lock). */
static void send_create(zk_election *e)
{
    int rc = candidate_record(e);
    if (rc < 0) {
        issue_failed(e, rc, "creating our node");
        return;
    }
    if (e->strategy == REIGN_STRATEGY_LOCK) {
        rc = reign__zk_create(e->zk, e->lock_path, e->record.data, e->record.len,
                              REIGN__ZK_EPHEMERAL, e, on_created, EPOCH_ARG(e));
    } else {
        reign__election_guid(e->guid, e->base.id);
        char *prefix = reign__election_path(e->base.name, "/n_");
        reign__buf b;
        reign__buf_init(&b);
        reign__buf_printf(&b, "%s%s_", prefix ? prefix : "", e->guid);
        if (e->cfg_prio) /* the name carries the configured one; a designation is not kept */
            reign__buf_printf(&b, "p%04u_", e->cfg_prio);
        reign__free(prefix);
        rc = b.oom ? REIGN_ENOMEM
                   : reign__zk_create(e->zk, b.data, e->record.data, e->record.len,
                                      REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE, e, on_created,
                                      EPOCH_ARG(e));
        reign__buf_free(&b);
    }
    if (rc == 0)
        e->create_inflight = true;
    else
        issue_failed(e, rc, "creating our node");
}

/* ---- setting up the election node --------------------------------------- */

static void on_setup_read(void *owner, void *arg, const reign__zk_result *r);

static int dir_record(zk_election *e, reign__buf *b)
{
    const char *kv[] = {REIGN__K_KIND, REIGN__KIND_ELECTION, REIGN__K_STRATEGY,
                        reign_strategy_name(e->strategy)};
    return reign__record_build(b, kv, 4, NULL, 0);
}

static void setup_done(zk_election *e, reign_strategy found);

static void on_dir_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    if (STALE(e, arg))
        return;
    e->dir_ours = r->rc == 0;
    e->need_parents = r->rc == REIGN_ENOENT;
}

static void make_path(zk_election *e, bool parents);

static void on_path_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_EACCES) {
        fail(e, r->rc, "not allowed to create %s (credentials?)", e->dir);
        goto out;
    }
    if (e->need_parents && !e->parents_tried) {
        /* The first election under this root: make the parents too. */
        make_path(e, true);
        goto out;
    }
    if (r->rc != 0 && r->rc != REIGN_EEXIST) {
        retry_later(e, r->rc, "creating the election node");
        goto out;
    }
    e->parents_tried = false;
    if (e->dir_ours) {
        /* We wrote its record, so we know its strategy: no need to read it. */
        setup_done(e,
                   e->strategy == REIGN_STRATEGY_LOCK ? REIGN_STRATEGY_LOCK : REIGN_STRATEGY_QUEUE);
        goto out;
    }
    /* Someone else made it meanwhile: read what it says. */
    if (reign__zk_get(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_setup_read, EPOCH_ARG(e)) < 0)
        retry_later(e, REIGN_ENOMEM, "reading the election");
out:
    LEAVE(e);
}

/*
 * Creates the election node and its term node; with `parents`, /reign and
 * /reign/election first (only the first election under a root needs them:
 * trying without saves two writes per new election).  Each create
 * tolerates EEXIST.  Requests on one session are applied in order, so one
 * round trip covers the chain; the election node's answer says whether we
 * made it (and whether the parents were missing), the term's ends it.
 */
static void make_path(zk_election *e, bool parents)
{
    reign__buf rec;
    reign__buf_init(&rec);
    if (dir_record(e, &rec) < 0) { /* the default strategy is recorded as queue */
        reign__buf_free(&rec);
        retry_later(e, REIGN_ENOMEM, "creating the election node");
        return;
    }
    e->dir_ours = e->need_parents = false;
    e->parents_tried = parents;
    const char *chain[] = {REIGN__ZK_ROOT, REIGN__ELECTION_DIR};
    for (size_t i = 0; parents && i < 2; i++)
        reign__zk_create(e->zk, chain[i], NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(e->zk, e->dir, rec.data, rec.len, REIGN__ZK_RETRY, e, on_dir_made,
                     EPOCH_ARG(e));
    int rc = reign__zk_create(e->zk, e->term_path, "reign 1\n\n", 9, REIGN__ZK_RETRY, e,
                              on_path_made, EPOCH_ARG(e));
    reign__buf_free(&rec);
    if (rc < 0)
        issue_failed(e, rc, "creating the election node");
}

static void on_setup_read(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_ENOENT && e->base.observer) {
        /* Observers read only: follow the term, which tells when it appears. */
        step(e, IN(OBSERVE), NULL); /* follow the term, which tells when it appears */
        goto out;
    }
    if (r->rc == REIGN_ENOENT) {
        if (++e->setup_tries > 5) {
            fail(e, REIGN_ENOENT,
                 "cannot create the election node %s: was the URI's chroot deleted? (a "
                 "client creates it only when it starts)",
                 e->dir);
            goto out;
        }
        make_path(e, false);
        goto out;
    }
    if (r->rc != 0) {
        retry_later(e, r->rc, "reading the election");
        goto out;
    }
    reign__record rec;
    reign_strategy found = REIGN_STRATEGY_DEFAULT;
    if (r->value_len > 0) {
        if (reign__record_parse(r->value, r->value_len, &rec) < 0) {
            fail(e, REIGN_EFOREIGN, "%s holds data reign did not write; refusing to use it",
                 e->dir);
            goto out;
        }
        const char *s = reign__record_get(&rec, REIGN__K_STRATEGY);
        int p = s ? reign_strategy_parse(s) : REIGN_EINVAL;
        if (s && p < 0) {
            reign__record_clear(&rec);
            fail(e, REIGN_EFOREIGN, "unknown strategy recorded in %s", e->dir);
            goto out;
        }
        if (s)
            found = (reign_strategy)p;
        reign__record_clear(&rec);
    }
    setup_done(e, found);
out:
    LEAVE(e);
}

/* The election node is there and says `found` (or nothing): stand. */
static void setup_done(zk_election *e, reign_strategy found)
{
    if (found != REIGN_STRATEGY_DEFAULT) {
        if (e->strategy != REIGN_STRATEGY_DEFAULT && e->strategy != found) {
            fail(e, REIGN_EINVAL, "election '%s' uses strategy '%s', not '%s'", e->base.name,
                 reign_strategy_name(found), reign_strategy_name(e->strategy));
            return;
        }
        e->strategy = found;
    } else if (e->strategy == REIGN_STRATEGY_DEFAULT) {
        e->strategy = REIGN_STRATEGY_QUEUE;
    }
    if (e->base.follow && !e->following)
        follow_leader(e);
    if (e->base.observer) {
        step(e, IN(OBSERVE), NULL);
        return;
    }
    create_node(e);
}

/* ---- a new election in one request --------------------------------------
 *
 * Most elections a process joins for the first time either exist already or
 * are new and stay with it: a service:version that starts.  A new one is
 * set up and won by one multi: the election node, its term node, the leader
 * node, our candidate node, and the term's first claim.  It is batched with
 * those of the other elections joined in the same loop turn, so joining
 * thousands of new elections costs the server one request per few hundred
 * of them plus one watch each, instead of seven requests each.
 *
 * Ours is then the only candidate, so it leads: it is the claim of claim(),
 * made at once.  The candidate node's name is known before the multi runs:
 * a sequence number is the count of the parent's child changes so far, and
 * the election node is new and gets three children in this order (term,
 * leader, ours), so ours ends in 0000000002.  The multi reports the name it
 * made, which we check all the same.  If the election node exists, the
 * multi fails as a whole and we take the ordinary way, reading it first.
 */
#define COLD_SEQ "0000000002"

static void cold_start(zk_election *e);

static void on_cold_parents(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    if (r->rc == REIGN_EACCES)
        fail(e, r->rc, "not allowed to create %s (credentials?)", REIGN__ELECTION_DIR);
    else if (r->rc == 0 || r->rc == REIGN_EEXIST)
        cold_start(e);
    else
        start(e); /* the ordinary way tells what is wrong (a deleted chroot) */
out:
    LEAVE(e);
}

static void on_cold_made(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    ENTER(e);
    e->create_inflight = false;
    set_str(&e->cold_node, NULL);
    if (r->rc == 0 && (e->state == ST_RESIGNING || STALE(e, arg) || e->state != ST_SETUP)) {
        /* Given up meanwhile: let go of the leader node, then of our node. */
        release_if_ours(e);
        drop_stray(e, r->last_created);
    }
    if (e->state == ST_RESIGNING) {
        finish_resign(e, 0);
        goto out;
    }
    if (STALE(e, arg) || e->state != ST_SETUP)
        goto out;
    switch (r->rc) {
    case 0: {
        e->strategy = REIGN_STRATEGY_QUEUE;
        set_str(&e->my_node, r->last_created);
        e->own_version = 0;
        e->leader_version = 0;
        if (!e->my_node) {
            retry_later(e, REIGN_ENOMEM, "recording our node");
            break;
        }
        if (e->base.follow && !e->following)
            follow_leader(e);
        watch_own(e);
        const char *name = basename_of(e->my_node);
        size_t len = strlen(name);
        if (len < 10 || strcmp(name + len - 10, COLD_SEQ) != 0) {
            /* Not the name the records carry (never seen): drop the
             * leadership unannounced and claim the ordinary way. */
            reign__log(e->base.log, REIGN_LOG_WARN,
                       "election %s: new node %s, not the expected sequence; claiming again",
                       e->base.name, name);
            release_leader_node(e);
            check(e);
            break;
        }
        become_leader(e, (uint64_t)r->stat.version, (uint64_t)r->stat.mzxid);
        break;
    }
    case REIGN_ENOENT:
        if (r->failed_op == 0 && e->cold_tries < 2) {
            /* The first election under this root: make /reign/election. */
            const char *chain[] = {REIGN__ZK_ROOT, REIGN__ELECTION_DIR};
            reign__zk_create(e->zk, chain[0], NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
            if (reign__zk_create(e->zk, chain[1], NULL, 0, REIGN__ZK_RETRY, e, on_cold_parents,
                                 EPOCH_ARG(e)) < 0)
                retry_later(e, REIGN_ENOMEM, "creating the election node");
            break;
        }
        start(e);
        break;
    case REIGN_ECONNLOSS:
    case REIGN_ETIMEDOUT:
        /* Landed or not: our guid in a child's name tells (none: there is
         * no election node, or no node of ours, and we stand again).  A
         * node found is checked and claimed the ordinary way; the leader
         * node, if the multi landed, is ours and is let go first. */
        release_if_ours(e);
        step(e, IN(CREATE_UNKNOWN), NULL);
        break;
    case REIGN_ECANCELED:
        /* Batched with a multi that failed (most likely an election that
         * exists: so may ours, joined with it): once more, then the
         * ordinary way. */
        if (e->cold_tries < 2)
            cold_start(e);
        else
            start(e);
        break;
    case REIGN_EACCES:
        fail(e, r->rc, "not allowed to create %s (credentials?)", e->dir);
        break;
    case REIGN_E2BIG:
        fail(e, r->rc, "the store refused the payload as too large (%s)", e->dir);
        break;
    default:
        start(e); /* EEXIST: the election exists - the ordinary way */
    }
out:
    LEAVE(e);
}

static void cold_start(zk_election *e)
{
    step(e, IN(COLD), NULL);
}

/* The table's COLD: the new election's one multi. */
static void send_cold(zk_election *e)
{
    e->cold_tries++;
    reign__buf rec, cand, node, t, l;
    reign__buf_init(&rec);
    reign__buf_init(&cand);
    reign__buf_init(&node);
    reign__buf_init(&t);
    reign__buf_init(&l);
    int rc = dir_record(e, &rec);
    char *prefix = reign__election_path(e->base.name, "/");
    reign__buf_printf(&node, "n_%s_", e->guid);
    if (e->cfg_prio)
        reign__buf_printf(&node, "p%04u_", e->cfg_prio);
    reign__buf_printf(&cand, "%s%s", prefix ? prefix : "", node.data ? node.data : "");
    reign__buf_printf(&node, COLD_SEQ);
    reign__free(prefix);
    if (rc == 0 && (cand.oom || node.oom || !prefix))
        rc = REIGN_ENOMEM;
    if (rc == 0)
        rc = claim_records(e, node.data, &t, &l);
    if (rc == 0)
        rc = candidate_record(e);
    if (rc == 0) {
        reign__zk_mop ops[] = {
            {.type = REIGN__ZK_MCREATE, .path = e->dir, .data = rec.data, .len = rec.len},
            {.type = REIGN__ZK_MCREATE, .path = e->term_path, .data = "reign 1\n\n", .len = 9},
            {.type = REIGN__ZK_MCREATE,
             .path = e->leader_path,
             .data = l.data,
             .len = l.len,
             .flags = REIGN__ZK_EPHEMERAL},
            {.type = REIGN__ZK_MCREATE,
             .path = cand.data,
             .data = e->record.data,
             .len = e->record.len,
             .flags = REIGN__ZK_EPHEMERAL | REIGN__ZK_SEQUENCE},
            {.type = REIGN__ZK_MSET,
             .path = e->term_path,
             .data = t.data,
             .len = t.len,
             .version = -1},
        };
        rc = reign__zk_multi_batched(e->zk, ops, 5, e, on_cold_made, EPOCH_ARG(e));
        if (rc == 0) {
            reign__buf_printf(&cand, COLD_SEQ);
            set_str(&e->cold_node, cand.oom ? NULL : cand.data);
        }
    }
    reign__buf_free(&rec);
    reign__buf_free(&cand);
    reign__buf_free(&node);
    reign__buf_free(&t);
    reign__buf_free(&l);
    if (rc == 0)
        e->create_inflight = true;
    else
        issue_failed(e, rc, "creating the election");
}

static void start(zk_election *e)
{
    reign__life_bump(&e->base.life);
    step(e, IN(START), NULL);
}

/* The table's SETUP: stand from the top, in a session. */
static void setup(zk_election *e)
{
    if (!reign__zk_connected(e->zk) && reign_client_session_id(e->base.client) == 0) {
        step(e, IN(NO_SESSION), NULL); /* waiting for a session */
        return;
    }
    /* The first attempt of a candidate that did not ask for the lock:
     * perhaps a new election. */
    if (e->cold_tries == 0 && !e->base.observer && e->strategy != REIGN_STRATEGY_LOCK) {
        cold_start(e);
        return;
    }
    int rc = reign__zk_get(e->zk, e->dir, NULL, REIGN__ZK_RETRY, e, on_setup_read, EPOCH_ARG(e));
    if (rc < 0)
        issue_failed(e, rc, "reading the election");
}

/* ---- the table's requests ------------------------------------------------ */

#define RQ(x) REIGN__ZKE_RQ_##x

/* A row's request (election_zk_fsm.h), made after the step's events. */
static void act_request(reign_election *pub, unsigned rq, const zk_news *n)
{
    zk_election *e = (zk_election *)pub;
    reign__timers *ts = reign__client_timers(e->base.client);
    switch ((reign__zke_request)rq) {
    case RQ(SETUP):
        setup(e);
        break;
    case RQ(COLD):
        send_cold(e);
        break;
    case RQ(CREATE):
        send_create(e);
        break;
    case RQ(FIND_OWN):
        find_own(e);
        break;
    case RQ(LIST):
        list(e);
        break;
    case RQ(READ_LEADER):
        read_leader(e);
        break;
    case RQ(CLAIM):
        send_claim(e, -1);
        break;
    case RQ(TAKE_OVER):
        send_claim(e, n ? n->version : -1);
        break;
    case RQ(HAND_OVER):
        if (n && n->to)
            hand_over(e, n->to);
        break;
    case RQ(RETRY):
        reign__timer_start(ts, &e->timer, reign__now_ns() + 1000 * REIGN__NS_PER_MS);
        break;
    case RQ(PAUSE):
        reign__timer_start(ts, &e->timer,
                           reign__now_ns() + (int64_t)e->base.cede_delay_ms * REIGN__NS_PER_MS);
        break;
    case RQ(FOLLOW): /* observers, and follow_leader candidates */
        if (e->base.follow && !e->following)
            follow_leader(e);
        break;
    case RQ(RENEW):
        /* Demoted by a stall, still connected: the claim is a write and renews the proof.  It
         * is a new term: let go of the leader node first. */
        reign__life_bump(&e->base.life);
        release_leader_node(e);
        check(e);
        break;
    default:
        break;
    }
}

/* ---- connection and deadline hooks -------------------------------------- */

static void on_conn(reign__recipe *rp, reign_conn_state st)
{
    zk_election *e = (zk_election *)rp;
    ENTER(e);
    switch (st) {
    case REIGN_CONN_SUSPENDED:
        if (e->base.leader &&
            reign__client_suspend_policy(e->base.client) == REIGN_SUSPEND_IMMEDIATE)
            step(e, IN(SUSPENDED), NULL);
        break;
    case REIGN_CONN_RECONNECTED:
        /* Same session: our node and watches survive.  Look again in case
         * we were demoted by the deadline meanwhile, or missed an answer. */
        if (e->state != ST_LEFT && e->state != ST_FAILED && e->state != ST_RESIGNING &&
            e->state != ST_PAUSED && !e->base.observer) {
            if (e->state == ST_NOSESSION || e->state == ST_SETUP)
                start(e);
            else if (!e->base.leader && e->my_node && e->state != ST_CREATING)
                check(e);
        }
        if (e->following)
            follow_leader(e);
        break;
    case REIGN_CONN_LOST:
        /* Either expired (a new session follows: CONNECTED) or suspended
         * past the deadline (the deadline hook demoted already). */
        step(e, IN(SESSION_LOST), NULL); /* demoted if leading */
        break;
    case REIGN_CONN_CONNECTED:
        /* A new session: nothing of the old one is ours any more. */
        reign__life_bump(&e->base.life);
        set_str(&e->my_node, NULL);
        set_str(&e->pred_watched, NULL);
        set_str(&e->leader_node_watched, NULL);
        e->own_watched = false;
        e->term_watched = false;
        e->leader_lock_watched = false;
        e->create_inflight = false;
        e->prio = e->cfg_prio;
        e->preempt_at = 0;
        set_str(&e->designated, NULL);
        set_str(&e->handing_to, NULL);
        e->handing_watched = false;
        e->leader_seen = false;
        e->following = false; /* the term's watch went with the session: follow anew */
        /* Demoted if leading; LEFT if resigning; SETUP unless paused or done. */
        step(e, IN(NEW_SESSION), NULL);
        break;
    case REIGN_CONN_CLOSED:
        reign__life_bump(&e->base.life);
        step(e, IN(CLOSED), NULL); /* demoted if leading; LEFT (announced if resigning) */
        break;
    default:
        break;
    }
    LEAVE(e);
}

static void on_deadline(reign__recipe *rp, int64_t now)
{
    zk_election *e = (zk_election *)rp;
    if (!e->base.leader)
        return;
    int64_t until = reign__client_valid_until(e->base.client);
    if (now < until) {
        e->valid_until = until;
        return;
    }
    ENTER(e);
    bool connected = reign__zk_connected(e->zk);
    /* Demote before the server could expire the session: a successor can
     * only be elected after that. */
    step(e, connected ? IN(DEADLINE) : IN(DEADLINE_SUSPENDED), NULL); /* DEMOTED: renew */
    LEAVE(e);
}

/* ---- public API --------------------------------------------------------- */

static void destroy(zk_election *e)
{
    reign__timers *ts = reign__client_timers(e->base.client);
    reign__timer_stop(ts, &e->timer);
    reign__timer_stop(ts, &e->preempt);
    reign__zk_forget(e->zk, e);
    reign__client_detach(e->base.client, &e->base.recipe);
    if (e->base.leader) {
        e->base.leader = false;
        reign__client_hold_validity(e->base.client, -1);
    }
    reign__buf_free(&e->record);
    reign__election_base_free(&e->base);
    reign__free(e->dir);
    reign__free(e->term_path);
    reign__free(e->lock_path);
    reign__free(e->leader_path);
    reign__free(e->holder_node);
    reign__free(e->designated);
    reign__free(e->designation_done);
    reign__free(e->designation);
    reign__free(e->handing_to);
    reign__free(e->cold_node);
    reign__free(e->my_node);
    reign__free(e->pred_watched);
    reign__free(e->leader_node_watched);
    reign__free(e->pred);
    for (size_t i = 0; i < e->n_impostors; i++)
        reign__free(e->impostors[i]);
    reign__free(e->impostors);
    reign__free(e);
}

static void on_destroy(reign__recipe *rp)
{
    destroy((zk_election *)rp);
}

static const reign__recipe_ops election_ops = {
    .conn = on_conn,
    .deadline = on_deadline,
    .destroy = on_destroy,
};

static const reign__election_impl zk_impl;

int reign__zk_election_join(reign_election **ret, reign_client *client, const char *name,
                            const reign_election_options *o)
{
    zk_election *e = reign__calloc(1, sizeof(*e));
    if (!e)
        return REIGN_ENOMEM;
    e->base.recipe.ops = &election_ops;
    e->base.impl = &zk_impl;
    e->zk = reign__client_zk(client);
    e->strategy = o->strategy;
    reign__timer_init(&e->timer, timer_cb, e);
    reign__timer_init(&e->preempt, preempt_cb, e);
    e->cfg_prio = e->prio = (unsigned)o->priority;
    e->no_preempt = o->no_preempt != 0;
    e->preempt_delay_ms = o->preempt_delay_ms;
    reign__buf_init(&e->record);
    int rc = reign__election_base_init(&e->base, client, name, o);
    if (rc == 0) {
        e->dir = reign__election_path(name, NULL);
        e->term_path = reign__election_path(name, "/" REIGN__N_TERM);
        e->lock_path = reign__election_path(name, "/" REIGN__N_LOCK);
        e->leader_path = reign__election_path(name, "/" REIGN__N_LEADER);
        if (!e->dir || !e->term_path || !e->lock_path || !e->leader_path)
            rc = REIGN_ENOMEM;
    }
    if (rc == 0) {
        /* guid: known before the create, so a retried create is recognised */
        rc = reign__election_guid(e->guid, e->base.id);
    }
    if (rc == 0) {
        const char *kv[] = {REIGN__K_ID, e->base.id, REIGN__K_GUID, e->guid};
        rc = reign__record_build(&e->record, kv, 4, e->base.data, e->base.data_len);
    }
    if (rc < 0) {
        reign__buf_free(&e->record);
        reign__election_base_free(&e->base);
        reign__free(e->dir);
        reign__free(e->term_path);
        reign__free(e->lock_path);
        reign__free(e->leader_path);
        reign__free(e);
        return rc;
    }
    reign__client_attach(client, &e->base.recipe);
    e->state = ST_NOSESSION;
    if (reign__zk_connected(e->zk))
        start(e);
    *ret = &e->base;
    return 0;
}

/* Stops standing: demote now, delete our node.  `then` is the next state. */
static int step_down(zk_election *e, estate then)
{
    reign__timers *ts = reign__client_timers(e->base.client);
    reign__timer_stop(ts, &e->timer);
    reign__timer_stop(ts, &e->preempt);
    reign__life_bump(&e->base.life);
    bool was_leader = e->base.leader;
    if (!step(e, then == ST_RESIGNING ? IN(RESIGN) : IN(CEDE), NULL)) /* demoted, announced later */
        return REIGN_ESTATE;
    if (was_leader || e->handing_to)
        release_leader_node(e); /* before our node: the next one's claim needs both gone */
    set_str(&e->handing_to, NULL);
    set_str(&e->designated, NULL);
    e->prio = e->cfg_prio; /* a designation ends when its candidate stops standing */
    e->preempt_at = 0;
    char *node = e->my_node;
    e->my_node = NULL;
    e->own_watched = false;
    int rc = 0;
    if (node) {
        rc = reign__zk_delete(e->zk, node, -1, REIGN__ZK_RETRY, then == ST_RESIGNING ? e : NULL,
                              then == ST_RESIGNING ? on_resign_deleted : NULL, NULL);
    } else if (then == ST_RESIGNING && !e->create_inflight) {
        /* Nothing stands: LEFT on the next turn, never from inside the call. */
        reign__election_owe_left(&e->base, 0);
    }
    reign__free(node);
    reign__client_wake(e->base.client);
    return rc < 0 ? rc : 0;
}

static int zk_resign(reign_election *pub)
{
    zk_election *e = (zk_election *)pub;
    if (e->state == ST_LEFT || e->state == ST_RESIGNING)
        return REIGN_ESTATE;
    e->following = false;
    return step_down(e, ST_RESIGNING);
}

static int zk_cede(reign_election *pub, int delay_ms)
{
    zk_election *e = (zk_election *)pub;
    int rc = step_down(e, ST_PAUSED);
    if (rc == REIGN_ESTATE)
        return rc;
    int64_t d = delay_ms < 0 ? e->base.cede_delay_ms : delay_ms;
    reign__timer_start(reign__client_timers(e->base.client), &e->timer,
                       reign__now_ns() + d * REIGN__NS_PER_MS);
    return rc;
}

/* An owed LEFT (resigned with nothing standing) comes due. */
static void zk_left(reign_election *pub, int err)
{
    finish_resign((zk_election *)pub, err);
}

static int64_t zk_valid_until(const reign_election *pub)
{
    /* Local answer, but never stale: the session's bound, even if the loop
     * has not run the deadline yet. */
    return reign__client_valid_until(pub->client);
}

static reign_election *zk_free(reign_election *pub)
{
    zk_election *e = (zk_election *)pub;
    if (reign__life_live(&e->base.life)) {
        bool was_leader = e->base.leader, left = e->state == ST_LEFT;
        step(e, IN(FREE), NULL); /* a leadership ends silently */
        reign__life_request_free(&e->base.life);
        /* Leave without waiting: the delete goes out, no callback follows. */
        if (was_leader) {
            if (e->strategy != REIGN_STRATEGY_LOCK)
                reign__zk_delete(e->zk, e->leader_path, e->leader_version, REIGN__ZK_RETRY, NULL,
                                 NULL, NULL);
        }
        if (e->my_node && !left)
            reign__zk_delete(e->zk, e->my_node, -1, REIGN__ZK_RETRY, NULL, NULL, NULL);
        if (e->cold_node) {
            /* A new election's multi may be on its way (if not sent yet,
             * forgetting drops it): undo it after it, should it land.  Our
             * candidate node, by the name the multi gives it, proves that the
             * leader node at version 0 is the one it made. */
            reign__zk_mop ops[] = {
                {.type = REIGN__ZK_MDELETE, .path = e->cold_node, .version = -1},
                {.type = REIGN__ZK_MDELETE, .path = e->leader_path, .version = 0},
            };
            reign__zk_multi(e->zk, ops, 2, NULL, NULL, NULL);
        }
        reign__zk_forget(e->zk, e);
    }
    if (reign__life_busy(&e->base.life))
        return NULL; /* inside one of our callbacks: LEAVE frees it */
    destroy(e);
    return NULL;
}

static const reign__election_impl zk_impl = {
    .resign = zk_resign,
    .cede = zk_cede,
    .valid_until = zk_valid_until,
    .free = zk_free,
    .left = zk_left,
};
