/*
 * client_internal.h - what recipes need from a client: its backend session,
 * its timers and logger, the safety deadline, and hooks for connection
 * changes.  Private to the library.
 */
#ifndef REIGN_CLIENT_INTERNAL_H
#define REIGN_CLIENT_INTERNAL_H

#include <reign/client.h>

#include "core.h"
#include "layout.h"
#include "sql/worker.h"
#include "zk/zk.h"

typedef struct reign__recipe reign__recipe;

typedef struct reign__recipe_ops {
    /* A connection state change (CONNECTED, SUSPENDED, RECONNECTED, LOST,
     * CLOSED), before the application's on_state hears of it. */
    void (*conn)(reign__recipe *r, reign_conn_state st);
    /* The safety deadline may have passed: check validity against `now`. */
    void (*deadline)(reign__recipe *r, int64_t now);
    /* The client is being freed: free without calling back. */
    void (*destroy)(reign__recipe *r);
    /* The SQL store says something changed (a release, a renewal): look again.  `heard` says
     * what, where the store tells it (sql.h's reign__sql_heard: `all`, or the names notified);
     * most recipes look again at all they follow. */
    void (*changed)(reign__recipe *r, const reign__sql_heard *heard);
} reign__recipe_ops;

struct reign__recipe {
    const reign__recipe_ops *ops;
    reign__recipe *prev, *next;
    unsigned visit; /* the client's sweep mark */
    /* The name SQL notices about it carry (an election's: reign__client_name_recipe()), NULL for
     * one that hears every notice; and the next of its bucket in the client's index by it. */
    const char *notice_name;
    reign__recipe *same_next;
};

/* The backend: exactly one of these is not NULL. */
reign__zk *reign__client_zk(reign_client *c);
reign__sqlw *reign__client_sql(reign_client *c);

/*
 * The timing of SQL lease elections (from the URI, checked by the client):
 * a leader holds its lease until the send time of its last successful take
 * or renew + lease_ms - margin_ms (docs/sql-leases.md explains why), renews
 * every renew_ms; followers read every poll_ms, and at once when the store
 * notifies a change.
 */
typedef struct reign__lease_settings {
    int lease_ms, margin_ms, renew_ms, poll_ms, statement_timeout_ms;
    /* leases=row: each lease renews its own row (SOFARegistry's way, gmt_modified kept
     * current); else leases live in the client's session (sql_session.h). */
    bool own_rows;
} reign__lease_settings;
const reign__lease_settings *reign__client_lease(const reign_client *c);

reign__timers *reign__client_timers(reign_client *c);
const reign__logger *reign__client_log(const reign_client *c);
void reign__client_attach(reign_client *c, reign__recipe *r);
void reign__client_detach(reign_client *c, reign__recipe *r);
/* The first attached recipe whose ops are `ops` (a kind with one object per client), or NULL. */
/* Says that SQL notices concern r only when they name `name` (which must outlive r's
 * attachment): a change told of other names is not handed to it, so that a notice costs what
 * it concerns, not every recipe of the client. */
void reign__client_name_recipe(reign_client *c, reign__recipe *r, const char *name);
reign__recipe *reign__client_find(reign_client *c, const reign__recipe_ops *ops);

/*
 * Until when leadership held on this session is safe: the send time of the
 * latest write or sync the server answered + 3/4 of the session timeout
 * (see client.h for why).  0 if nothing proves the session alive.
 */
int64_t reign__client_valid_until(const reign_client *c);
/* Leaderships each election's history keeps (the URI's history=). */
int reign__client_history_max(const reign_client *c);
/* The session timeout in force (ZooKeeper: the negotiated one), ms. */
int reign__client_session_timeout_ms(const reign_client *c);
/* Leaders count themselves in (+1) and out (-1): while any leads, the
 * client renews the proof (heartbeats) and arms the deadline. */
void reign__client_hold_validity(reign_client *c, int delta);
reign_suspend_policy reign__client_suspend_policy(const reign_client *c);
bool reign__client_closing(const reign_client *c);
/* Tells the guardian (if any) of a SQL lease this client may hold from now on (add), or no more:
 * if the process dies, the guardian releases it when it still carries owner and guid. */
void reign__client_guard_lease(reign_client *c, bool add, const char *name, const char *owner,
                               const char *guid);
/* Tells the guardian (if any) of the client's SQL session (sql_session.h), guid, or of none
 * (NULL): if the process dies, the guardian deletes the session and its rows. */
void reign__client_guard_session(reign_client *c, const char *guid);
/*
 * A leadership's history record (docs/history.md) the guardian ends if the process dies while
 * it leads: `rec` is the record as the guardian writes it (end=guardian; it adds ended_ms), at
 * `path`, over the one the claim made (version 0).  add=false when the leadership ends.
 */
void reign__client_guard_term(reign_client *c, bool add, const char *path, const void *rec,
                              size_t len);
/* Makes the loop run process() soon (after a state change outside it). */
void reign__client_wake(reign_client *c);
/* Whether reign_client_process() is running (a call from a callback). */
bool reign__client_processing(const reign_client *c);

#endif
