/*
 * election_base.h - what the election files share: the part of an
 * election every backend has and the event contract they all keep
 * (election_base.c; election.c holds the public API over it and dispatches
 * to election_zk.c or election_lease.c, which never call back into it), the
 * parsing of what reign writes into election nodes (election_zk.c,
 * election_query.c).  The nodes and their record keys are drawn and named in
 * src/core/layout.h, the one place that owns the stored layout.
 */
#ifndef REIGN_ELECTION_INTERNAL_H
#define REIGN_ELECTION_INTERNAL_H

#include <reign/election.h>

#include "client/client_internal.h"
#include "election_fsm.h"
#include "layout.h" /* REIGN__ELECTION_DIR, REIGN__GUID_BYTES */
#include "recipes/life.h"
#include "record.h"

/* ---- every backend ----------------------------------------------------------------------------
 */

typedef struct reign__election_impl reign__election_impl;

/* The leader as an election last saw it (owned copies). */
typedef struct reign__leader_view {
    bool known;
    char *id;
    void *data;
    size_t data_len;
    char *node; /* ZooKeeper: the leader's node name */
    uint64_t term;
    uint64_t token;
    int64_t since_ms;
} reign__leader_view;

void reign__leader_view_clear(reign__leader_view *v);
/* Borrowed pointers into v. */
void reign__leader_view_public(const reign__leader_view *v, reign_leader *out);

/* What every election has; a backend's election starts with it. */
struct reign_election {
    reign__recipe recipe; /* first: the client calls us through it */
    const reign__election_impl *impl;
    reign_client *client;
    const reign__logger *log;
    char *name;
    char *id;
    void *data;
    size_t data_len;
    bool observer;
    bool follow; /* observers, and follow_leader candidates */
    bool listed; /* SQL: keeps a row in the candidates table while standing */
    int cede_delay_ms;
    reign_election_cb *cb;
    void *userdata;
    bool leader; /* kept by reign__election_lead() and reign__election_demote() */
    uint64_t term;
    uint64_t token;
    reign__leader_view lv; /* the backend keeps it current for observers and followers */

    /* The event contract (election_base.c): READY once, ELECTED and DEMOTED in turn, events an
     * API call owes on the next loop turn, none after a free. */
    bool ready_sent;
    reign__life life;  /* entries, callbacks, a free deferred past them, the attempt's epoch */
    reign__timer owed; /* the events an API call owes */
    bool owe_demoted, owe_left;
    reign_demote_reason owed_reason;
    uint64_t owed_term, owed_token;
    int64_t owed_at;
    int owed_err;   /* LEFT's */
    unsigned steps; /* steps of the table taken: a callback's step shows in it */
};

/* A backend's answers to the public API (election.c checks the arguments and the state). */
struct reign__election_impl {
    int (*resign)(reign_election *e);                /* not yet resigning or left */
    int (*cede)(reign_election *e, int delay_ms);    /* leading */
    int64_t (*valid_until)(const reign_election *e); /* leading */
    reign_election *(*free)(reign_election *e);
    /* An owed LEFT comes due: the backend leaves (its state) and calls reign__election_left(). */
    void (*left)(reign_election *e, int err);
};

/* Fills the common part from a checked name and options (o->id set); 0 or REIGN_ENOMEM. */
int reign__election_base_init(reign_election *e, reign_client *client, const char *name,
                              const reign_election_options *o);
/* Frees what base_init allocated, and stops the owed events' timer. */
void reign__election_base_free(reign_election *e);

/* ---- the event contract, once for every backend (election_base.c) ----------------------------
 */

/* Entries from the client: a callback may free the election; the outermost exit frees it. */
void reign__election_enter(reign_election *e);
void reign__election_leave(reign_election *e);

/* Calls the application, unless freed. */
void reign__election_emit(reign_election *e, reign_election_event *ev);
/* ERROR with `msg` (logged at debug: the application decides whether to log it). */
void reign__election_error(reign_election *e, int err, const char *msg);
/* READY with the leader view, once. */
void reign__election_ready(reign_election *e);
/* The leader view was replaced: READY if not sent yet, else LEADER_CHANGED if `changed`. */
void reign__election_view(reign_election *e, bool changed);

/* Leadership begins at (term, token): the state and the log line; then ELECTED. */
void reign__election_lead(reign_election *e, uint64_t term, uint64_t token);
void reign__election_elected(reign_election *e, int64_t at, int64_t valid_until);
/*
 * Leadership ends: DEMOTED now, or (`owed`, from an API call) on the next loop turn, never from
 * inside the call.  A demotion noticed past the leadership's bound (a stall, SIGSTOP) took
 * effect at the bound: that is the time reported.  False if not leading.
 */
bool reign__election_demote(reign_election *e, reign_demote_reason reason, int64_t bound,
                            bool owed);
/* LEFT, with its error. */
void reign__election_left(reign_election *e, int err);
/* A LEFT owed after an API call (impl->left on the next turn). */
void reign__election_owe_left(reign_election *e, int err);
/* Emits what an API call owes, now (before anything newer is told). */
void reign__election_flush(reign_election *e);

/* What an input brings along: a claim's outcome, a resign's error, what a request needs. */
typedef struct reign__election_news {
    uint64_t term, token;
    int64_t at, until;
    bool fresh; /* until > at: the claim's proof (session, lease) is within its bound */
    int err;
    int32_t version; /* ZooKeeper: the leader node's version that names us next (a takeover) */
    const char *to;  /* ZooKeeper: the candidate node to hand the leader node to */
} reign__election_news;

/* How a backend carries out the table's actions that are its own. */
typedef struct reign__election_acts {
    void (*demote)(reign_election *e, reign_demote_reason reason, bool owed);
    void (*drop)(reign_election *e); /* freed while leading: the leadership ends, no event */
    void (*elect)(reign_election *e, const reign__election_news *n);
    /* makes the row's request (never 0), with what the input brought (n may be NULL) */
    void (*request)(reign_election *e, unsigned request, const reign__election_news *n);
} reign__election_acts;

/*
 * One step of a candidate's table (election_fsm.h): the new state in *state, logged with its
 * reason at debug, then the actions in order (DEMOTED and LEFT here, the rest through `acts`),
 * then the row's request through acts->request - unless a callback run by the actions took
 * another step or freed the election.  False if the table refused the input (logged as a
 * warning) or found it moot, or if a callback or the request took another step or freed the
 * election: the caller then does nothing more for the state it asked for.
 */
bool reign__election_step(reign_election *e, const reign__efsm *m, const reign__election_acts *acts,
                          unsigned *state, unsigned in, unsigned facts,
                          const reign__election_news *n);

/* The backends' joins, with a checked name and checked options (o->id set). */
int reign__zk_election_join(reign_election **ret, reign_client *client, const char *name,
                            const reign_election_options *o);
int reign__lease_election_join(reign_election **ret, reign_client *client, const char *name,
                               const reign_election_options *o);

/* The SQL side of reign_election_query(), reign_election_depose() and, with a designee id,
 * reign_election_designate() (name and id checked). */
int reign__lease_query(reign_client *client, const char *name, bool depose, const char *designee,
                       reign_election_query_cb *qcb, reign_election_done_cb *dcb, void *userdata);

/* The SQL side of reign_election_history() (election_lease_history.c; name checked). */
int reign__lease_history(reign_client *client, const char *name, int64_t since_ms,
                         reign_election_history_cb *cb, void *userdata);

/* ---- ZooKeeper ----------------------------------------------------------------------------------
 */

/* Priorities: configured ones are 0..REIGN_PRIORITY_MAX and carried in node
 * names (4 digits); a designated candidate outranks all of them at
 * REIGN__DESIGNATED_MIN, for one leadership, in the leader node's record. */
#define REIGN__DESIGNATED_MIN (REIGN_PRIORITY_MAX + 1)

/* A history record's end word ("resigned", ...), or `otherwise` for none or one unknown. */
reign_term_end reign__term_end_parse(const char *word, reign_term_end otherwise);

#endif
