/*
 * reign/group.h - group membership: who is alive, with what payload.
 *
 * A process registers in a group by name with an id and a payload (say its
 * address); the registration lives as long as the process's session and
 * comes back by itself after a session expiry.  Anyone can list the members
 * of a group or watch them: a watcher is told each member that was added,
 * removed or changed, computed against the view it reported before.  This
 * is Tera's /tera/ts list of tablet servers and the ZooKeeper book's
 * workers.
 *
 * Every store has groups.  ZooKeeper: a registration is an ephemeral node
 * of the client's session.  SQL stores (SQLite, PostgreSQL, MariaDB): a
 * registration is a row of the table "<lease table>_members" that lives in
 * the client's session, a row of "<lease table>_sessions" the client
 * renews with one statement per renewal period (docs/sql-leases.md).  A
 * session is lost, as ZooKeeper's expires, when its client cannot renew it
 * within its lease (counted on the client's monotonic clock from the send
 * of its last renewal, minus a margin); a dead process's guardian deletes
 * its session and members at once; a dead host's session is deleted by
 * the first watcher that has seen its beat stand still for a whole lease
 * on its own monotonic clock.  Watchers read the group again when the
 * store tells of a change (PostgreSQL NOTIFY, SQLite's file), or every
 * poll_ms (MariaDB).
 *
 * Layout (ZooKeeper): each registration is an ephemeral sequential node
 * /reign/group/GROUP/m_<guid>_<seq> holding a record (id=, guid= and the
 * payload).  The sequence orders registrations: the same id may be
 * registered several times at once (a process restarted while its old
 * session still lives), and a watcher may keep only the newest
 * registration of each id (what Tera does per address).  The random guid
 * lets a registration retried after a connection loss find its own node
 * instead of standing twice.  On SQL stores the row carries the same guid
 * and seq, and its node is named alike ("m_<guid>_<seq>").
 *
 * All callbacks run inside reign_client_process() on the loop thread (see
 * <reign/client.h>).  From a callback you may call any function here,
 * including the *_free() function of the object calling back.  A call that
 * fails never calls back.
 */
#ifndef REIGN_GROUP_H
#define REIGN_GROUP_H

#include <stdint.h>

#include <reign/client.h>
#include <reign/common.h>
#include <reign/limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REIGN_GROUP_NAME_MAX, REIGN_MEMBER_ID_MAX, REIGN_MEMBER_DATA_MAX: <reign/limits.h>. */

/* One member, as registered.  Borrowed: see each place it is given. */
typedef struct reign_member {
    const char *id;   /* the member's id */
    const void *data; /* its payload */
    size_t data_len;
    const char *node;  /* the store's key for this registration: "m_<guid>_<seq>" (ZooKeeper:
                          the znode's name) */
    uint64_t seq;      /* registration order within the group (larger: later) */
    int64_t joined_ms; /* Unix ms, by the store's clock (for display only) */
    int64_t version;   /* grows with each change of the payload */
} reign_member;

/* ---- registering -------------------------------------------------------- */

typedef struct reign_group reign_group;

typedef enum reign_group_event_type {
    REIGN_GROUP_REGISTERED = 1, /* our node exists (node: its name); again after a loss */
    REIGN_GROUP_UNREGISTERED,   /* our node is gone (reason); registering again by itself */
    REIGN_GROUP_ERROR           /* registering stopped on an error it cannot retry */
} reign_group_event_type;

typedef enum reign_group_loss {
    REIGN_GROUP_SESSION_LOST = 1, /* the session expired (a new one is registering) */
    REIGN_GROUP_NODE_DELETED      /* someone deleted our node (registering again after
                                     retry_delay_ms) */
} reign_group_loss;

/* "session_lost", "node_deleted". */
REIGN_EXPORT const char *reign_group_loss_name(reign_group_loss reason);

typedef struct reign_group_event {
    reign_group_event_type type;
    int64_t at_ns;           /* CLOCK_MONOTONIC when it took effect */
    const char *node;        /* REGISTERED: our node's name */
    reign_group_loss reason; /* UNREGISTERED */
    int error;               /* ERROR */
    const char *message;     /* ERROR: detail, or NULL */
} reign_group_event;

typedef void reign_group_cb(reign_group *group, const reign_group_event *event, void *userdata);

typedef struct reign_group_options {
    size_t size;      /* sizeof(reign_group_options) */
    const char *id;   /* member id; NULL: "<hostname>-<pid>" */
    const void *data; /* payload, e.g. the member's address */
    size_t data_len;
    int retry_delay_ms; /* before registering again after our node was deleted by
                           someone else; default 1000 */
    reign_group_cb *cb;
    void *userdata;
} reign_group_options;

/*
 * Registers in group `name` ([A-Za-z0-9._:-]{1,200}, not "." or "..") on
 * `client`; the group is created if needed.  Returns at once; REGISTERED
 * follows.  Fails with REIGN_ENAME for an illegal name, REIGN_EINVAL for a
 * bad id (empty, over REIGN_MEMBER_ID_MAX, control characters) or options,
 * REIGN_E2BIG for a payload over REIGN_MEMBER_DATA_MAX, REIGN_ECLOSED if
 * the client is closing.
 */
REIGN_EXPORT int reign_group_register(reign_group **ret, reign_client *client, const char *name,
                                      const reign_group_options *opts);

/*
 * Replaces our payload.  Watchers see CHANGED.  The new payload is also the
 * one used by later re-registrations.  The write is asynchronous: a failure
 * is logged, not reported (a re-registration carries the new payload).
 */
REIGN_EXPORT int reign_group_set_data(reign_group *group, const void *data, size_t len);

/* 1 if our node is known to exist now, else 0.  Local state. */
REIGN_EXPORT int reign_group_is_registered(const reign_group *group);

/* Our node's name, or NULL while not registered. */
REIGN_EXPORT const char *reign_group_node(const reign_group *group);
REIGN_EXPORT const char *reign_group_name(const reign_group *group);
REIGN_EXPORT const char *reign_group_id(const reign_group *group);
REIGN_EXPORT void *reign_group_userdata(const reign_group *group);

/*
 * Leaves the group and frees: our node's delete is sent (without waiting;
 * closing the client removes it too).  NULL-safe; returns NULL.  Safe from
 * inside the group's own callback (no callback follows).
 */
REIGN_EXPORT reign_group *reign_group_free(reign_group *group);

/* ---- watching the members ----------------------------------------------- */

typedef struct reign_group_watch reign_group_watch;

typedef enum reign_group_watch_event_type {
    REIGN_MEMBERS_READY = 1,     /* the first view is complete (after its ADDED events) */
    REIGN_MEMBER_ADDED,          /* member: the new one */
    REIGN_MEMBER_REMOVED,        /* member: the one that left */
    REIGN_MEMBER_CHANGED,        /* member: as it is now; old: as it was */
    REIGN_MEMBERS_GROUP_DELETED, /* the group's node was deleted (every member was
                                    REMOVED first); watching for it to come back */
    REIGN_MEMBERS_ERROR          /* a read failed; the watch retries (error, message) */
} reign_group_watch_event_type;

/* "ready", "added", "removed", "changed", "group_deleted", "error". */
REIGN_EXPORT const char *reign_group_watch_event_name(reign_group_watch_event_type type);

typedef struct reign_group_watch_event {
    reign_group_watch_event_type type;
    int64_t at_ns;              /* CLOCK_MONOTONIC when it was seen */
    const reign_member *member; /* ADDED, REMOVED, CHANGED */
    const reign_member *old;    /* CHANGED: the member as reported before */
    int error;                  /* ERROR */
    const char *message;        /* ERROR: detail, or NULL */
} reign_group_watch_event;

/* Event data is borrowed for the duration of the call only. */
typedef void reign_group_watch_cb(reign_group_watch *watch, const reign_group_watch_event *event,
                                  void *userdata);

typedef struct reign_group_watch_options {
    size_t size; /* sizeof(reign_group_watch_options) */
    /* Keep only the newest registration (highest seq) of each id: an older
     * one of the same id is REMOVED when a newer one appears (Tera's ts list
     * per address). */
    int newest_per_id;
    reign_group_watch_cb *cb;
    void *userdata;
} reign_group_watch_options;

/*
 * Watches the members of group `name` (which need not exist yet).  The
 * first view arrives as one ADDED per member, then READY; afterwards every
 * change is reported against the view reported before: members REMOVED
 * first, then CHANGED, then ADDED, each kind in registration order.
 *
 * No change is missed: the children watch is re-armed by the very listing
 * that follows a notification, and each member's data watch by the read of
 * its data, so a change made between a notification and the re-read fires
 * again.  A member that came and went between two listings is never seen,
 * which is all ZooKeeper can tell; every change to a view that lasts is
 * reported.  After a session expiry the watch re-reads everything by itself
 * and reports the difference.  On a SQL store a watch reads the whole group
 * whenever the store may have changed (it subscribes before its first
 * read), so the same holds; it also deletes the sessions of dead hosts it
 * sees (see the top of this file).
 */
REIGN_EXPORT int reign_group_watch_start(reign_group_watch **ret, reign_client *client,
                                         const char *name, const reign_group_watch_options *opts);

/*
 * The current view, in registration order: *members (borrowed until the
 * next reign_client_process()) and *n.  Inside the callbacks of one change
 * it is already the view after the whole change.
 */
REIGN_EXPORT void reign_group_watch_members(const reign_group_watch *watch,
                                            const reign_member **members, size_t *n);

REIGN_EXPORT const char *reign_group_watch_name(const reign_group_watch *watch);
REIGN_EXPORT void *reign_group_watch_userdata(const reign_group_watch *watch);

/* Stops watching and frees.  NULL-safe; returns NULL.  Safe from inside
 * the watch's own callback (no callback follows). */
REIGN_EXPORT reign_group_watch *reign_group_watch_free(reign_group_watch *watch);

/* ---- one-shot listing, for tools ----------------------------------------- */

/* err is 0 or a negative code; members (in registration order) borrowed
 * for the call. */
typedef void reign_group_list_cb(reign_client *client, int err, const reign_member *members,
                                 size_t n, void *userdata);

/*
 * Reads the members of group `name` once.  REIGN_ENOENT (through the
 * callback) if the group does not exist.  On a SQL store it shows the
 * members of a dead host until a watcher or the host's own guardian
 * deletes its session (a listing does not wait a lease to judge it), as
 * ZooKeeper shows a dead client's nodes until its session expires.  Pending listings complete with
 * REIGN_ECLOSED when the client closes.
 */
REIGN_EXPORT int reign_group_list(reign_client *client, const char *name, reign_group_list_cb *cb,
                                  void *userdata);

#ifdef __cplusplus
}
#endif
#endif
