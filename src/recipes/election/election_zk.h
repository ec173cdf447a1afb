/*
 * election_zk.h - what the files of the ZooKeeper candidate share: its
 * struct, the guard and epoch macros, and each layer's functions.
 *
 * The candidate is built in layers, and a file calls only the files below
 * it (the ctest tools_no_cycles checks there is no circle):
 *
 *   election_zk.c         the backend's face: the table's requests, the
 *                         client's hooks (connection, deadline), join,
 *                         resign, cede, free
 *   election_zk_stand.c   standing: the election node, a new election in
 *                         one multi, our candidate node
 *   election_zk_line.c    our place in line: the listing, our node's and
 *                         the predecessor's watches, a designation read
 *                         from our node
 *   election_zk_claim.c   the claim and the leader node: contending,
 *                         preempting, taking over, handing over
 *   election_zk_follow.c  the leader view of observers and followers
 *   election_zk_base.c    the table step, events, retries, the inputs that
 *                         are plain steps, records, releasing the leader node
 *
 * A layer reaches a higher one only through the table: it takes a step, and
 * the row's request is made by election_zk.c (through e->acts), so the
 * order of what happens is the table's, whichever file noticed the input.
 * Each part of the state that lives as long as a session (our node, the
 * watches, the rank, a handover) is one sub-struct that resets itself.
 */
#ifndef REIGN_ELECTION_ZK_H
#define REIGN_ELECTION_ZK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "election_base.h"
#include "election_zk_fsm.h"
#include "layout.h"

typedef reign__zke_state estate;
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
static inline bool waiting_like(estate s)
{
    return s == ST_WAITING || s == ST_OBSERVING || reign__zke_contending(s);
}

static inline bool claiming(estate s)
{
    return s == ST_CLAIMING || s == ST_TAKING_OVER;
}

static inline bool checking(estate s)
{
    return s == ST_CHECKING || s == ST_LEADER_CHECKING;
}

typedef struct zk_election {
    reign_election base;              /* first: the client and the API call us through it */
    const reign__election_acts *acts; /* election_zk.c's: the table's requests */
    reign__zk *zk;
    char *dir;
    char *term_path;
    char *lock_path;
    char *leader_path;  /* queue: the node the leader holds */
    char *history_path; /* the election's history: a record per leadership */
    reign__buf record;  /* what our node holds */
    reign__held *views; /* leader views read, while their node is checked */
    reign_strategy strategy;
    unsigned cfg_prio; /* as configured */
    bool no_preempt;
    int preempt_delay_ms;

    estate state;
    char guid[2 * REIGN__GUID_BYTES + 1];
    int64_t valid_until;
    int32_t leader_version; /* our leader node's version as last seen (leading) */

    /* Setting up the election node, once per attempt from the top. */
    struct {
        int tries;
        bool dir_ours;      /* our create made the election node (we know its strategy) */
        bool need_parents;  /* its parents are missing */
        bool parents_tried; /* and we made them in this attempt */
        int cold_tries;     /* attempts at making a new election in one multi */
        char *cold_node;    /* the candidate node that multi makes, while it is in flight */
    } setup;

    /* Our candidate node: one session's (own_reset()). */
    struct {
        char *node;      /* its full path, once known */
        bool creating;   /* a create is in flight */
        int32_t version; /* queue: its version as we last read it */
    } own;

    /* Watches registered on the server, at most one each, since ZooKeeper fires every
     * registration: one session's (watches_reset()). */
    struct {
        char *pred;         /* queue: the predecessor we watch */
        bool pred_is_first; /* ... and it was first in line */
        char *pred2;        /* queue: the one ahead of it (it going may make pred first) */
        bool own;           /* queue: our node; lock: the lock node */
        bool term;
        bool leader; /* queue: the leader node */
        char *leader_node;
        bool following; /* leader-view maintenance started */
    } watch;

    /* Where we rank: priority, designation, preemption (rank_reset() for a new session). */
    struct {
        unsigned prio;     /* as we stand now (higher once designated) */
        char *designated;  /* queue: designated, under this leader ("-": none), until we lead */
        char *designation; /* ... which one: "<that leader's node>@<its term>" */
        char *designation_done; /* the last one we led by (our node still says so) */
        bool leader_seen;       /* designated: we read the leader node at leader_seen_version */
        int32_t leader_seen_version;
        int64_t preempt_at; /* when we may ask a lower-priority leader to hand over */
        char *holder_node;  /* the candidate node it names (a contender's) */
        bool may_preempt;   /* we outrank it and may ask it to hand over */
    } rank;

    /* Handing the leader node to a successor (handover_reset() for a new session). */
    struct {
        char *to;     /* queue: the node we handed the leader node to, until it takes it */
        bool watched; /* ... and its exists watch is registered */
    } handover;

    /* What we saw in line. */
    /* Our leadership's record in the history (docs/history.md), while we lead. */
    struct {
        char *path;         /* its node, as the claim's answer named it */
        bool designated;    /* the handover under way is to a designated candidate */
        bool made_parent;   /* we made the history node after a claim found it missing */
        int64_t started_ms; /* our clock when the claim was sent (etcd keys carry no time) */
        reign__buf pending; /* an end waiting for the connection to come back */
    } hist;

    char **impostors; /* queue-named nodes that are not ephemeral: never candidates */
    size_t n_impostors;
    char *pred; /* the predecessor last looked at */

    reign__timer timer;   /* pause (cede) and error back-off */
    reign__timer preempt; /* the preemption delay */
    reign__timer relook;  /* a look at the line after the one ahead of our predecessor went */

} zk_election;

typedef reign__election_news zk_news;

static inline const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Replaces an owned string with a copy of v (NULL: none). */
static inline void set_str(char **slot, const char *v)
{
    reign__free(*slot);
    *slot = v ? reign__strdup(v) : NULL;
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

/* ---- election_zk_base.c ---- */

/* The table's actions that are not requests (reign__election_acts). */
void reign__zke_act_demote(reign_election *pub, reign_demote_reason reason, bool owed);
void reign__zke_act_drop(reign_election *pub);
void reign__zke_act_elect(reign_election *pub, const zk_news *n);
bool reign__zke_is_impostor(const zk_election *e, const char *name);
int reign__zke_add_impostor(zk_election *e, const char *name);
void reign__zke_own_reset(zk_election *e);
void reign__zke_watches_reset(zk_election *e);
void reign__zke_rank_reset(zk_election *e);
void reign__zke_handover_reset(zk_election *e);
void reign__zke_drop_stray(zk_election *e, const char *path);
void reign__zke_issue_failed(zk_election *e, int rc, const char *what);
void reign__zke_timer_cb(reign__timer *t, void *arg);
void reign__zke_retry_later(zk_election *e, int err, const char *what);
void reign__zke_fail(zk_election *e, int err, const char *fmt, ...) REIGN__PRINTF(3, 4);
bool reign__zke_step(zk_election *e, reign__zke_input in, const zk_news *n);
void reign__zke_become_leader(zk_election *e, uint64_t term, uint64_t token);
int reign__zke_claim_records(zk_election *e, const char *node, reign__buf *t, reign__buf *l);
void reign__zke_claim(zk_election *e);
void reign__zke_release_if_ours(zk_election *e);
void reign__zke_release_leader_node(zk_election *e);
void reign__zke_contend(zk_election *e);
void reign__zke_take_over(zk_election *e, int32_t version);
void reign__zke_check(zk_election *e);
void reign__zke_finish_resign(zk_election *e, int err);
void reign__zke_on_resign_deleted(void *owner, void *arg, const reign__zk_result *r);
int reign__zke_candidate_record(zk_election *e);
void reign__zke_create_node(zk_election *e);
int reign__zke_dir_record(zk_election *e, reign__buf *b);
void reign__zke_cold_start(zk_election *e);
void reign__zke_start(zk_election *e);

/* ---- election_zk_follow.c ---- */

void reign__zke_follow_leader(zk_election *e);

/* ---- election_zk_claim.c ---- */

void reign__zke_send_claim(zk_election *e, int32_t takeover);
void reign__zke_read_leader(zk_election *e);
void reign__zke_preempt_cb(reign__timer *t, void *arg);
void reign__zke_relook_cb(reign__timer *t, void *arg);
void reign__zke_hand_over(zk_election *e, const char *to);
void reign__zke_hand_off_if_asked(zk_election *e, const char *to, unsigned asked);
void reign__zke_handle_node_gone(zk_election *e);
void reign__zke_designated(zk_election *e, const char *leader, const char *id);

/* ---- election_zk_history.c ---- */

int reign__zke_history_record(zk_election *e, const char *node, reign__buf *h);
void reign__zke_history_end(zk_election *e, reign_demote_reason reason);
void reign__zke_history_resume(zk_election *e, bool same_session);
void reign__zke_history_claimed(zk_election *e, const char *record, uint64_t term, uint64_t token);

/* ---- election_zk_line.c ---- */

void reign__zke_watch_own(zk_election *e);
void reign__zke_list(zk_election *e);

/* ---- election_zk_stand.c ---- */

void reign__zke_find_own(zk_election *e);
void reign__zke_send_create(zk_election *e);
void reign__zke_send_cold(zk_election *e);
void reign__zke_setup(zk_election *e);

#endif
