/*
 * reign/election.h - leader election.
 *
 * Any number of processes on any number of hosts join an election by name;
 * at most one of them leads at any moment.  Every leadership has a term (1,
 * 2, 3, ... as people count) and a fencing token (a number that strictly
 * increases from one leadership of the election to the next: hand it to
 * whatever the leader writes, so a store can refuse a stale leader).
 *
 * All callbacks run inside reign_client_process() on the loop thread (see
 * <reign/client.h>).  From a callback you may call any function here,
 * including reign_election_free() on the election calling back.
 *
 * On a SQL store (sqlite://, mysql://, postgres://; see <reign/client.h>) an
 * election is one row of the lease table: the leader renews its lease, a
 * candidate takes it over when the database's clock says it expired or when
 * it is released, and every takeover increments the row's term, which is both
 * the term and the fencing token.  A leader is valid until the send time of
 * its last successful renewal + lease - margin, and is demoted then if no
 * renewal succeeded (reason stalled, or suspended when the store is
 * unreachable); it then stands again with a fresh identity, so its next
 * leadership has a new term.  There are no strategies (REIGN_STRATEGY_LOCK
 * gives REIGN_ENOTSUP), the snapshot of reign_election_query() lists the
 * leader and the candidates that asked to be listed (options.listed), in
 * the order they joined, priorities are read from the listed candidates
 * (a candidate with a priority is listed; one to be designated must be),
 * a designation is a mark on the lease row that only the designee may take
 * over once the leader has released it (see reign_election_designate()),
 * reign_election_depose() takes up to one renew period (the
 * leader learns of it when its next renewal fails), and observers see
 * leaders in order but may miss one shorter than their poll period.
 *
 * Strategies (ZooKeeper), chosen per election and recorded in the election's
 * node, so candidates cannot mix them:
 *
 *   REIGN_STRATEGY_QUEUE (default)  each candidate creates an ephemeral
 *     sequential node /reign/election/NAME/n_<guid>_<seq>; the lowest leads
 *     and each other candidate watches only its predecessor, so a change
 *     wakes one process whatever the number of candidates.  The random guid
 *     in the name lets a create retried after a connection loss find its own
 *     node instead of leaving an orphan or standing twice.  Candidates are
 *     served in the order they joined.
 *
 *   REIGN_STRATEGY_LOCK  one ephemeral node /reign/election/NAME/lock, the
 *     layout of Tera's master lock, the ZooKeeper book's /master and HDFS's
 *     ActiveStandbyElectorLock; candidates watch it and race to create it
 *     when it goes (every candidate wakes on each change).  Only the holder
 *     is visible to others.
 *
 * In both, a node is ours only if its ephemeral owner is our session: data
 * alone (an id) never confers leadership, so a process restarted with the
 * same id while its old session still holds a node waits for that session
 * to end.  Before announcing ELECTED the winner atomically checks that its
 * node still exists and bumps the persistent node /reign/election/NAME/term;
 * the term is its count, the token the zxid of that write.
 *
 * Safety: a leader is demoted (DEMOTED) before any other candidate could be
 * elected when its connection is suspended past the safety deadline, or at
 * once with suspend_policy=immediate (see <reign/client.h>).  After a
 * session expiry it stands again by itself.  reign_election_valid_until_ns()
 * tells how long the current leadership is guaranteed.
 */
#ifndef REIGN_ELECTION_H
#define REIGN_ELECTION_H

#include <stdint.h>

#include <reign/client.h>
#include <reign/common.h>
#include <reign/limits.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct reign_election reign_election;

/* REIGN_NAME_MAX, REIGN_ID_MAX, REIGN_DATA_MAX, REIGN_PRIORITY_MAX: <reign/limits.h>. */

typedef enum reign_strategy {
    REIGN_STRATEGY_DEFAULT = 0, /* QUEUE, or what the election already uses */
    REIGN_STRATEGY_QUEUE,
    REIGN_STRATEGY_LOCK
} reign_strategy;

/* "queue", "lock"; and the reverse (returns REIGN_EINVAL for others). */
REIGN_EXPORT const char *reign_strategy_name(reign_strategy s);
REIGN_EXPORT int reign_strategy_parse(const char *s);

typedef enum reign_demote_reason {
    REIGN_DEMOTE_RESIGNED = 1, /* reign_election_resign() or free */
    REIGN_DEMOTE_CEDED,        /* reign_election_cede() */
    REIGN_DEMOTE_SUSPENDED,    /* connection suspended (immediate policy, or past the deadline) */
    REIGN_DEMOTE_SESSION_LOST, /* the session expired (SQLite: its file deleted or replaced) */
    REIGN_DEMOTE_NODE_DELETED, /* someone else deleted our node (reign cede, an operator) */
    REIGN_DEMOTE_STALLED,      /* connected, but the loop could not renew validity in time */
    REIGN_DEMOTE_ERROR,        /* an unexpected store error; see the ERROR event */
    REIGN_DEMOTE_HANDOFF       /* handed over to a candidate that preempted us or was designated */
} reign_demote_reason;

/* One lower-case word for a reason: "resigned", "ceded", "suspended",
 * "session_lost", "node_deleted", "stalled", "error". */
REIGN_EXPORT const char *reign_demote_reason_name(reign_demote_reason reason);

/* The leader of an election, as its candidates and observers see it. */
typedef struct reign_leader {
    const char *id;   /* candidate id ("" if the node holds foreign data) */
    const void *data; /* the leader's payload */
    size_t data_len;
    uint64_t term;    /* 1, 2, 3, ... */
    uint64_t token;   /* fencing token: strictly increasing */
    int64_t since_ms; /* when it was elected: Unix ms, by the store's clock; 0: unknown (SQL) */
} reign_leader;

/* One candidate, in the order in which they would lead. */
typedef struct reign_candidate {
    const char *id; /* "" if unknown (foreign data) */
    const void *data;
    size_t data_len;
    const char *node;  /* the store's key for it (a znode name) */
    int64_t joined_ms; /* Unix ms, by the store's clock; 0: unknown (SQL, no candidate row) */
    int priority;      /* as configured (its node's name); a designation is not shown */
} reign_candidate;

typedef enum reign_election_event_type {
    REIGN_ELECTION_ELECTED = 1,    /* we lead: term, token, valid_until_ns */
    REIGN_ELECTION_DEMOTED,        /* we no longer lead: reason, term */
    REIGN_ELECTION_LEADER_CHANGED, /* someone (maybe we) leads, or no one: leader */
    REIGN_ELECTION_READY,          /* first view of the election loaded (observers too) */
    REIGN_ELECTION_LEFT,           /* resign finished: our node is gone (error: 0 or why not) */
    REIGN_ELECTION_ERROR           /* the election stopped on an error it cannot retry */
} reign_election_event_type;

typedef struct reign_election_event {
    reign_election_event_type type;
    int64_t at_ns;              /* CLOCK_MONOTONIC when it took effect */
    uint64_t term;              /* ELECTED, DEMOTED */
    uint64_t token;             /* ELECTED, DEMOTED */
    int64_t valid_until_ns;     /* ELECTED */
    reign_demote_reason reason; /* DEMOTED */
    const reign_leader *leader; /* LEADER_CHANGED (NULL: no leader), READY */
    int error;                  /* ERROR, LEFT */
    const char *message;        /* ERROR, LEFT: detail, or NULL */
} reign_election_event;

/*
 * Order: READY comes once, first, when the election's first view is loaded;
 * its `leader` is the leader found then (observers and follow_leader
 * candidates hear of later ones as LEADER_CHANGED, never of that first one).
 * A candidate that wins at once gets ELECTED right after READY, in the same
 * reign_client_process() turn.  Each ELECTED is followed by exactly one
 * DEMOTED before the next ELECTED; after a resign, LEFT is the last event.
 *
 * Event data is borrowed for the duration of the call only.
 */
typedef void reign_election_cb(reign_election *election, const reign_election_event *event,
                               void *userdata);

typedef struct reign_election_options {
    size_t size;      /* sizeof(reign_election_options) */
    const char *id;   /* candidate id; NULL: "<hostname>-<pid>" */
    const void *data; /* payload, e.g. the candidate's address */
    size_t data_len;
    reign_strategy strategy;
    int observer;      /* follow the leader without standing */
    int follow_leader; /* candidates too get LEADER_CHANGED (costs a watch each) */
    int cede_delay_ms; /* before standing again after our node was deleted by
                          someone else, or after cede with delay < 0; default 1000 */
    reign_election_cb *cb;
    void *userdata;
    /*
     * Priority (ZooKeeper's queue strategy, SQL stores; the lock strategy
     * refuses it with REIGN_ENOTSUP): 0 to REIGN_PRIORITY_MAX, default
     * 0.  The live candidate with the highest priority leads; equal
     * priorities lead in the order they joined.  A candidate that finds a
     * leader of lower priority takes over by a clean handoff (the leader
     * demotes itself with reason handoff, then the newcomer claims), at once
     * or `preempt_delay_ms` after it first saw that leader; with `no_preempt`
     * it waits until the leader leaves.  Give every candidate of an
     * election the same preemption settings.  On a SQL store a candidate
     * with a priority is listed (below), since the others read its priority
     * from its row; a leader learns that it is preempted at once where the
     * store notifies (SQLite, PostgreSQL), at its next renewal on MariaDB.
     */
    int priority;
    int no_preempt;
    int preempt_delay_ms;
    /*
     * SQL stores: keep a row for this candidate in the candidates table
     * ("<lease table>_candidates") while it stands, so that
     * reign_election_query() lists it beside the leader, with its id,
     * payload and when it joined (ZooKeeper lists every candidate anyway).
     * The row lives as long as the client's session beats (with leases=row,
     * it is refreshed every lease/3, one statement each); a process that
     * dies has its row removed by its guardian, or it stops counting one
     * lease later.  Ignored by
     * observers and on ZooKeeper.  Only a listed candidate can be designated
     * (reign_election_designate()); one with a priority is always listed.
     */
    int listed;
} reign_election_options;

/*
 * Joins election `name` ([A-Za-z0-9._:-]{1,200}, not "." or "..") on `client`.
 * Returns at once; the outcome arrives through the callback.  Fails with
 * REIGN_ENAME for an illegal name, REIGN_EINVAL for a bad id (empty, over
 * REIGN_ID_MAX, or with control characters) or options, REIGN_E2BIG for a
 * payload over REIGN_DATA_MAX, REIGN_ENOTSUP for the lock strategy on a SQL
 * store, or with a priority.  A call that fails never calls back.
 */
REIGN_EXPORT int reign_election_join(reign_election **ret, reign_client *client, const char *name,
                                     const reign_election_options *opts);

/*
 * Leaves the election: if leading, demotes at once (DEMOTED with reason
 * resigned, is_leader() false on return), then deletes our node so the next
 * candidate takes over immediately; LEFT follows when the node is gone.
 */
REIGN_EXPORT int reign_election_resign(reign_election *election);

/*
 * Steps down and stands again after `delay_ms` (ZKFC's cedeActive; a delay
 * lets another candidate take over, <0 uses cede_delay_ms).  REIGN_ESTATE if
 * not leading.
 */
REIGN_EXPORT int reign_election_cede(reign_election *election, int delay_ms);

/* 1 if this candidate leads now, else 0.  Local state: no round trip. */
REIGN_EXPORT int reign_election_is_leader(const reign_election *election);

/*
 * Until when (CLOCK_MONOTONIC ns) the current leadership is guaranteed: no
 * other candidate can be elected before then.  0 if not leading.
 */
REIGN_EXPORT int64_t reign_election_valid_until_ns(const reign_election *election);

/* The term and token of the current leadership, or 0 if not leading. */
REIGN_EXPORT uint64_t reign_election_term(const reign_election *election);
REIGN_EXPORT uint64_t reign_election_token(const reign_election *election);

/*
 * The leader as last seen (for observers and follow_leader candidates; for
 * others only while they lead).  Returns 0 and fills *out (borrowed until the
 * next reign_client_process()), or REIGN_ENOENT if no leader is known.
 */
REIGN_EXPORT int reign_election_leader(const reign_election *election, reign_leader *out);

REIGN_EXPORT const char *reign_election_name(const reign_election *election);
REIGN_EXPORT const char *reign_election_id(const reign_election *election);
REIGN_EXPORT void *reign_election_userdata(const reign_election *election);

/*
 * Frees the election.  If it still stands it resigns without waiting (the
 * delete is sent; no further callback).  NULL-safe; returns NULL.  Safe from
 * inside the election's own callback.
 */
REIGN_EXPORT reign_election *reign_election_free(reign_election *election);

/* ---- one-shot operations, for tools ------------------------------------ */

/* Where reign_election_view.takeover_ms comes from. */
typedef enum reign_takeover_source {
    REIGN_TAKEOVER_UNKNOWN = 0, /* the election does not say: nobody stands, or its records
                                   were not written by reign */
    REIGN_TAKEOVER_LEADER,      /* ZooKeeper: the session timeout the leader was granted */
    REIGN_TAKEOVER_CANDIDATES,  /* ZooKeeper, no leader: the longest of the candidates' */
    REIGN_TAKEOVER_LEASE        /* SQL: the lease row's length, a poll, 2 or 3 statements */
} reign_takeover_source;

/* A snapshot of an election. */
typedef struct reign_election_view {
    const char *name;
    reign_strategy strategy;
    int has_leader;
    reign_leader leader;               /* valid if has_leader */
    const reign_candidate *candidates; /* in order; the leader first if it stands */
    size_t n_candidates;
    /*
     * The worst case, in ms, from the leader's crash until another candidate
     * can be elected, for the election's own settings rather than the
     * reader's (reign_client_takeover_ms()): on ZooKeeper the session
     * timeout the leader's server granted it, which each candidate writes in
     * its node; on SQL the lease length in the row plus a poll period and three
     * statements (a lease held in a session: the session reaped, the row read and
     * taken; two for a lease in its own row) at their defaults for that lease
     * (lease/5 and lease/10, at most 5 s).  0 when
     * unknown (takeover_from says which).
     */
    int64_t takeover_ms;
    reign_takeover_source takeover_from;
} reign_election_view;

/* err is 0 or a negative code; view is NULL on error, borrowed for the call. */
typedef void reign_election_query_cb(reign_client *client, int err, const reign_election_view *view,
                                     void *userdata);

/*
 * Reads the leader and the ordered candidates of `name`, without joining.
 * REIGN_ENOENT (through the callback) if the election does not exist.
 * Pending queries complete with REIGN_ECLOSED when the client closes.
 */
REIGN_EXPORT int reign_election_query(reign_client *client, const char *name,
                                      reign_election_query_cb *cb, void *userdata);

/* ---- history: the leaderships an election has had ---------------------- */

/*
 * How a leadership ended, as the election's history records it.  The holder writes its end when
 * it lets go; a leadership that ended without a word from it (its process frozen or its host
 * gone, so its session or lease ran out) is told by what came after it.  docs/history.md.
 */
typedef enum reign_term_end {
    REIGN_TERM_LEADING = 0, /* not ended: the current leader (or its end is not known yet) */
    REIGN_TERM_RESIGNED,    /* it let go: reign_election_resign(), free, its program's exit */
    REIGN_TERM_CEDED,       /* it stepped down for a while: reign_election_cede() */
    REIGN_TERM_DEPOSED,     /* removed from outside: reign cede, reign_election_depose() */
    REIGN_TERM_DESIGNATED,  /* handed over to a designated candidate: reign designate */
    REIGN_TERM_PREEMPTED,   /* handed over to a candidate of higher priority */
    REIGN_TERM_GUARDIAN,    /* its process died and its guardian ended the leadership */
    REIGN_TERM_EXPIRED,     /* its session or lease ran out before anyone heard of its end */
    REIGN_TERM_LOST         /* it demoted itself: connection lost, stalled, or an error */
} reign_term_end;

/* "leading", "resigned", "ceded", "deposed", "designated", "preempted", "guardian", "expired",
 * "lost" ("?" for others). */
REIGN_EXPORT const char *reign_term_end_name(reign_term_end end);

/* One leadership. */
typedef struct reign_term {
    uint64_t term;        /* 1, 2, 3, ...; 0 if the history cannot tell (docs/history.md) */
    uint64_t token;       /* its fencing token */
    const char *id;       /* the leader's candidate id ("" if unknown) */
    const void *data;     /* its payload, at most REIGN_HISTORY_DATA_MAX bytes of it */
    size_t data_len;      /* bytes at data */
    size_t data_full_len; /* the payload's whole length (more than data_len: it was cut) */
    int64_t started_ms;   /* when it was elected: Unix ms, by the store's clock */
    int64_t ended_ms;     /* when it ended, Unix ms by the store's clock; 0: leading */
    int ended_estimated;  /* ended_ms is an estimate: its session or lease expired unheard, and
                             ended_ms is when the store last heard of it at the latest */
    reign_term_end end;
} reign_term;

/* err is 0 or a negative code; terms (oldest first) are borrowed for the call. */
typedef void reign_election_history_cb(reign_client *client, int err, const reign_term *terms,
                                       size_t n, void *userdata);

/*
 * Reads the history of `name`: its last leaderships (the URI's history=N, 100 by default, are
 * kept; older ones are dropped by later leaders), oldest first, those that ended at or after
 * `since_ms` (Unix ms; 0: all).  The gap before a leadership is its started_ms minus the one
 * before's ended_ms.  Needs only read access.  REIGN_ENOENT if the election does not exist; an
 * election that never had a leader, or whose leaders ran a reign without history, has none (n =
 * 0).  Pending reads complete with REIGN_ECLOSED when the client closes.
 */
REIGN_EXPORT int reign_election_history(reign_client *client, const char *name, int64_t since_ms,
                                        reign_election_history_cb *cb, void *userdata);

typedef void reign_election_done_cb(reign_client *client, int err, void *userdata);

/*
 * Asks the current leader of `name` to step down, from any process: deletes
 * the leader's node (SQL: marks its lease deposed), so the leader is demoted
 * (reason node_deleted) and stands again after its cede delay.  REIGN_ENOENT if there is no leader.
 * Needs the election's credentials.
 */
REIGN_EXPORT int reign_election_depose(reign_client *client, const char *name,
                                       reign_election_done_cb *cb, void *userdata);

/*
 * Names the leader of `name` (ZooKeeper's queue strategy, SQL stores): the candidate
 * standing with id `id` is told it is designated, and the current leader is
 * asked, on its behalf, to hand over (one write of both).  The leader
 * demotes itself (reason handoff) and the candidate takes over with the
 * next term; until it has led once it outranks every other candidate (as
 * if it had the highest priority), and for that leadership only.  If
 * several candidates stand with that id, the first in line is designated.
 * The callback runs once the request is written (0), not when the takeover
 * is done: follow the election (an observer) to see it.  REIGN_ENOENT if no
 * candidate with that id stands (then nothing changes); REIGN_ENOTSUP for
 * the lock strategy.  Automatic failover is unaffected: when the designated
 * leader leaves, the next candidate in line takes over.
 *
 * On a SQL store only listed candidates (options.listed) stand for this
 * purpose, and the first of them in the order they stood is designated.  The
 * lease row is marked for its standing at the leader's term; the leader
 * hands over when it hears of it (at once on SQLite and PostgreSQL, at its
 * next renewal on MariaDB), and only the designee may take the lease it
 * releases.  Should the designee die first, another candidate takes over
 * once the lease has stood still for a whole lease, as after any leader's
 * death.
 */
REIGN_EXPORT int reign_election_designate(reign_client *client, const char *name, const char *id,
                                          reign_election_done_cb *cb, void *userdata);

/* The client an election runs on. */
REIGN_EXPORT reign_client *reign_election_client(const reign_election *election);

#ifdef __cplusplus
}
#endif
#endif
