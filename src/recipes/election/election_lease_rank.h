/*
 * election_lease_rank.h - ranks in a SQL lease election, on the worker: whether a listed
 * candidate should take a free lease before us (priorities, first come, a designation), and
 * whether we may preempt the leader.  The statements run in the client's SQL worker thread
 * (sql/worker.h's CALL); election_lease.c builds the calls and reads their answers.  Ranks
 * order the candidates; only the lease row's compare-and-set decides who leads.
 */
#ifndef REIGN_ELECTION_LEASE_RANK_H
#define REIGN_ELECTION_LEASE_RANK_H

#include <stdbool.h>
#include <stdint.h>

#include <reign/election.h>

#include "sql/sql.h"

#define REIGN__RANK_GUID 17 /* a standing's guid: 16 hex digits */

/*
 * What a take or a preemption looks at on the worker: the listed candidates, against us and
 * the row as we read it.  Ranks are for the order only: the row's compare-and-set decides.
 */
typedef struct reign__rank_call {
    char *name, *owner;
    void *payload;
    size_t payload_len;
    char guid[REIGN__RANK_GUID];    /* ours */
    char session[REIGN__RANK_GUID]; /* TAKE: our client's session (sessions.h) */
    int priority;
    char holder_owner[REIGN_ID_MAX + 1],
        holder_guid[sizeof(((reign__lease *)0)->owner_guid)]; /* the row, as read */
    bool designee;           /* TAKE: the row is designated to us: no one to defer to */
    bool chosen;             /* ... by an operator: recorded, so that no one preempts us */
    bool now;                /* PREEMPT: the delay is over: designate ourselves */
    int64_t duration_ms;     /* TAKE: the claim */
    uint64_t from, renewals; /* TAKE: the version taken over; PREEMPT: the leader's term */
    bool released;           /* TAKE: only a released row: a take on a notice, without a read */
    char prev_guid[REIGN__RANK_GUID]; /* TAKE on a notice: our standing before this one */
    uint64_t self_designated;         /* ... the term our own preemption designated us for */
    uint64_t new_term;
} reign__rank_call;

void reign__rank_call_free(void *p);

/* reign__rank_take(): someone ranks above us; reign__rank_preempt(): not yet (the delay) */
#define REIGN__OUTRANKED 2

/* A take (sql.h's reign__sql_lease_take(), k->new_term set), unless a live listed candidate
 * ranks above us: REIGN__OUTRANKED.  A designee (k->designee) defers to no one; an operator's
 * (k->chosen) first records the term it is to win in its candidates row, so that whoever sees
 * it lead sees that too.  A take on a notice (k->released) first reads the row, as what the
 * candidate last read of it may be a handover ago: 0 if it moved on from k->from or is not
 * released; designated to us, it is taken as a designee.  A reign__sqlw_fn. */
int reign__rank_take(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen);

/* Preemption: designates us over the leader (k->holder_guid at term k->from) if it ranks below
 * us and nobody else above us, once k->now; REIGN__OUTRANKED: it would, but not yet.  1 done, 0
 * nothing to do.  A reign__sqlw_fn. */
int reign__rank_preempt(reign__sqlconn *c, const char *dc, void *ctx, char *err, size_t errlen);

/* A statement on a listed candidate's row (sql/candidates.h), for the worker. */
typedef enum reign__list_op {
    REIGN__LIST_JOIN,
    REIGN__LIST_REFRESH,
    REIGN__LIST_LEAVE,
    REIGN__LIST_RENAME
} reign__list_op;

typedef struct reign__list_call {
    reign__list_op op;
    char *name, *owner;
    char guid[REIGN__RANK_GUID];
    void *payload;
    size_t payload_len;
    int64_t ttl_ms;
    int priority;
    char from[REIGN__RANK_GUID];    /* RENAME: the standing whose row it was */
    char session[REIGN__RANK_GUID]; /* JOIN, RENAME: the client's session, "" if none */
} reign__list_call;

void reign__list_call_free(void *p);
/* Runs it: a reign__sqlw_fn. */
int reign__list_run(reign__sqlconn *conn, const char *dc, void *ctx, char *err, size_t errlen);

/*
 * The history (sql/history.h), written by the leader on its worker, never waited for: the row
 * of a leadership just won (`e`'s term, by standing `guid`), queued once the take has landed;
 * its end, queued when it is demoted (or freed), before the release that lets a successor in -
 * requests run in order, so the end lands first.  election_lease_history.c.
 */
struct reign_election;
void reign__lease_history_begin(const struct reign_election *e, const char *guid, int lease_ms);
void reign__lease_history_end(const struct reign_election *e, const char *guid,
                              reign_demote_reason reason);

#endif
