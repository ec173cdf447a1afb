/*
 * reign/value.h - watched values: small named pieces of shared state.
 *
 * A value is a key and a payload of bytes, with a version that grows with
 * every write.  Any process can read, write, compare-and-set or delete it,
 * and watch it: a watcher hears when it is created, changed and deleted.
 * This is what Tera keeps in /tera/root_table (an address the master
 * rewrites when it is deleted) and /tera/safemode (a mark whose presence
 * matters), and how an operator designates a master in an SOA
 * framework's service masters.
 *
 * Layout (ZooKeeper): the value of key "a/b" lives in the persistent node
 * /reign/value/a/b as a record ("reign 1\n\n" + payload, see record.h); the
 * nodes above it are made as needed and hold nothing, and a delete removes
 * those it leaves holding nothing and no other value.  A node that holds
 * nothing is no value (so "a" does not exist just because "a/b" does), and
 * a node that holds data reign did not write is refused (REIGN_EFOREIGN).
 *
 * Layout (SQL stores: SQLite, MariaDB, PostgreSQL): one row per value in the
 * table "<lease table>_values" beside the lease table (docs/sql-leases.md),
 * keyed by the client's data_center and the key; there is no hierarchy ("a"
 * and "a/b" are two rows).  The table is made on the first write and
 * upgraded like the lease table; a table of a foreign layout, or a row reign
 * could not have written (a negative version, a payload over
 * REIGN_VALUE_DATA_MAX), is refused with REIGN_EFOREIGN and never changed.
 * Writes are ordered by a per-data-center counter row, which plays
 * ZooKeeper's zxid (reign_value.zxid).  Watches hear of changes through
 * PostgreSQL's LISTEN/NOTIFY, SQLite's file change, and on MariaDB by reading
 * every poll_ms (<reign/client.h>): a MariaDB watcher learns of a change up
 * to one poll period late.
 *
 * Keys: 1 to 16 segments separated by '/', each 1 to 200 characters of
 * [A-Za-z0-9._:-] and not "." or ".."; at most REIGN_KEY_MAX bytes in all.
 * No leading, trailing or doubled '/'.
 *
 * All callbacks run inside reign_client_process() on the loop thread (see
 * <reign/client.h>).  A call that fails never calls back.  Requests still
 * pending when the client closes complete with REIGN_ECLOSED.  Every
 * function here works on every store, ZooKeeper and SQL alike, except where
 * its comment says otherwise.
 */
#ifndef REIGN_VALUE_H
#define REIGN_VALUE_H

#include <stdint.h>

#include <reign/client.h>
#include <reign/common.h>
#include <reign/limits.h>

#ifdef __cplusplus
extern "C" {
#endif

/* REIGN_KEY_MAX, REIGN_VALUE_DATA_MAX, and the versions REIGN_VALUE_ANY and REIGN_VALUE_ABSENT
 * for reign_value_set() and reign_value_delete(): <reign/limits.h>. */

/* A value as read.  Borrowed for the duration of the callback only. */
typedef struct reign_value {
    const char *key;
    const void *data;
    size_t data_len;
    int64_t version;     /* compare-and-set on this (grows with each write) */
    int64_t created_ms;  /* Unix ms, by the store's clock */
    int64_t modified_ms; /* Unix ms, by the store's clock */
    uint64_t zxid;       /* the store's id of the write that made this version */
} reign_value;

/* Checks a key; 0 or REIGN_ENAME. */
REIGN_EXPORT int reign_value_key_check(const char *key);

/*
 * err is 0 or a negative code; value is NULL unless err is 0 (for
 * reign_value_set() it carries the new version and no data).
 */
typedef void reign_value_cb(reign_client *client, int err, const reign_value *value,
                            void *userdata);

/*
 * Reads `key`.  Through the callback: 0 and the value, REIGN_ENOENT if there
 * is no such value, REIGN_EFOREIGN if the node holds data reign did not
 * write.  Returns REIGN_ENAME for an illegal key, REIGN_ECLOSED if the
 * client is closing.
 */
REIGN_EXPORT int reign_value_get(reign_client *client, const char *key, reign_value_cb *cb,
                                 void *userdata);

/*
 * Writes `key` (creating it, and the nodes above it, if needed).
 * `version`: REIGN_VALUE_ANY writes whatever is there; REIGN_VALUE_ABSENT
 * writes only if the value does not exist (else REIGN_EEXIST); a version
 * >= 0 writes only if the value still has that version (compare-and-set:
 * else REIGN_EBADVERSION, or REIGN_ENOENT if it no longer exists).  The
 * callback's value carries the version just written.  Returns REIGN_E2BIG
 * for a payload over REIGN_VALUE_DATA_MAX.  All stores (SQL: one
 * transaction, the compare and the write under the counter row's lock).
 */
REIGN_EXPORT int reign_value_set(reign_client *client, const char *key, const void *data,
                                 size_t len, int64_t version, reign_value_cb *cb, void *userdata);

/*
 * Deletes `key`: any version (REIGN_VALUE_ANY), or only that version
 * (REIGN_EBADVERSION otherwise).  REIGN_ENOENT if there is no such value.
 * A value with values below it (key "a" of "a/b") is emptied, which is the
 * same as deleted for readers and watchers (ZooKeeper; SQL stores delete
 * the row, keys having no hierarchy there).  All stores.
 */
REIGN_EXPORT int reign_value_delete(reign_client *client, const char *key, int64_t version,
                                    reign_value_cb *cb, void *userdata);

/* ---- watching ----------------------------------------------------------- */

typedef struct reign_value_watch reign_value_watch;

typedef enum reign_value_event_type {
    REIGN_VALUE_READY = 1, /* first read done: value is the current one, or NULL */
    REIGN_VALUE_CREATED,   /* value: the new value */
    REIGN_VALUE_CHANGED,   /* value: the new value (a new version) */
    REIGN_VALUE_DELETED,   /* value: NULL */
    REIGN_VALUE_ERROR      /* error, message: a read failed or found foreign data; the
                              watch goes on and reports the next change */
} reign_value_event_type;

/* "ready", "created", "changed", "deleted", "error". */
REIGN_EXPORT const char *reign_value_event_name(reign_value_event_type type);

typedef struct reign_value_event {
    reign_value_event_type type;
    int64_t at_ns;            /* CLOCK_MONOTONIC when it was seen */
    const reign_value *value; /* READY (or NULL: none), CREATED, CHANGED */
    int error;                /* ERROR */
    const char *message;      /* ERROR: detail, or NULL */
} reign_value_event;

/* Event data is borrowed for the duration of the call only. */
typedef void reign_value_watch_cb(reign_value_watch *watch, const reign_value_event *event,
                                  void *userdata);

/*
 * Watches `key`: READY once with the current value, then one event per
 * change seen.  Every notification re-arms the watch with the read that
 * follows it, so no change is ever lost: after any burst of writes the last
 * event reports the latest state.  Writes in quick succession may be folded
 * into one event (ZooKeeper tells that something changed, not each
 * intermediate value); a value deleted and created again between two reads
 * is reported as DELETED then CREATED.  After a session expiry the watch
 * re-reads by itself and reports what changed meanwhile.  All stores:
 * ZooKeeper's watches, PostgreSQL's NOTIFY (sent on the writer's commit),
 * SQLite's file change (same host), MariaDB's poll (every poll_ms, so a
 * change is reported up to one poll period after it was made); on a SQL
 * store a watch re-reads by itself after the connection comes back.
 */
REIGN_EXPORT int reign_value_watch_start(reign_value_watch **ret, reign_client *client,
                                         const char *key, reign_value_watch_cb *cb, void *userdata);

/* The value as last reported: 0 and *out (borrowed until the next
 * reign_client_process()), or REIGN_ENOENT if none. */
REIGN_EXPORT int reign_value_watch_get(const reign_value_watch *watch, reign_value *out);

REIGN_EXPORT const char *reign_value_watch_key(const reign_value_watch *watch);
REIGN_EXPORT void *reign_value_watch_userdata(const reign_value_watch *watch);

/* Stops watching and frees.  NULL-safe; returns NULL.  Safe from inside
 * the watch's own callback (no callback follows). */
REIGN_EXPORT reign_value_watch *reign_value_watch_free(reign_value_watch *watch);

#ifdef __cplusplus
}
#endif
#endif
