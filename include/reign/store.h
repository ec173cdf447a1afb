/*
 * reign/store.h - what a store holds, for the people who run it: list the
 * elections, groups, values and task queues, and remove one that nobody
 * uses any more (`reign ls`, `reign rm`).
 *
 * Both are one-shot requests attached to the client; their callback runs
 * once, inside reign_client_process(), on the caller's thread; requests
 * still pending when the client closes complete with REIGN_ECLOSED.
 *
 * ZooKeeper: the entries are the nodes under /reign/election, /reign/group,
 * /reign/value and /reign/tasks (below the URI's chroot); a value is listed
 * by its whole key ("app/config"), the nodes above it that hold nothing are
 * not listed.  A SQL store holds elections (one lease row each, in the URI's
 * table and data_center; a row cleared by reign_store_remove() is no
 * election), values (rows of "<table>_values", listed by key), groups (rows
 * of "<table>_members") and task queues: a queue NAME is listed once while it
 * has rows in "<table>_tasks" or its workers' group or its masters' election
 * "tasks.NAME" exists (those two are entries of their own, as on ZooKeeper,
 * where the queue's node is made by whichever comes first).  Its followers
 * are invisible, so "who stands" in a SQL election is the lease holder alone,
 * and the candidates that asked to be listed (reign_election_options.listed).
 */
#ifndef REIGN_STORE_H
#define REIGN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include <reign/client.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum reign_entry_kind {
    REIGN_ENTRY_ELECTION = 1,
    REIGN_ENTRY_GROUP,
    REIGN_ENTRY_VALUE,
    REIGN_ENTRY_QUEUE
} reign_entry_kind;

/* "election", "group", "value", "queue"; NULL for anything else. */
REIGN_EXPORT const char *reign_entry_kind_name(reign_entry_kind kind);
/* The kind named `name` (as above), or 0. */
REIGN_EXPORT reign_entry_kind reign_entry_kind_of(const char *name);

typedef struct reign_entry {
    reign_entry_kind kind;
    const char *name;
    /* Elections: candidates standing (ZooKeeper), or 1 while a live lease is held and 0
     * otherwise (SQL); groups: members; values and queues: 0. */
    size_t standing;
    /* SQL: the holder of a live lease; else NULL. */
    const char *leader;
    /* Elections: the slots of `reign run --slot|--every` on record (<reign/slot.h>). */
    size_t slots;
    /* The node or row is not reign's (its data does not parse as reign's record of that
     * kind): listed, never trusted, never removed. */
    int foreign;
    /* Which of reign's own programs keeps this entry, or NULL (the user's): "reignd" for the
     * values reignd keeps per election, "reignd/ELECTION/breadcrumb", ".../layout" and
     * ".../pause" (reignd(8)). */
    const char *used_by;
} reign_entry;

typedef void reign_store_list_cb(reign_client *client, int err, const reign_entry *entries,
                                 size_t n, void *userdata);

/*
 * Lists the entries whose name starts with `prefix` (NULL or "": all), sorted by kind, then
 * name.  The entries are borrowed for the callback only.
 */
REIGN_EXPORT int reign_store_list(reign_client *client, const char *prefix, reign_store_list_cb *cb,
                                  void *userdata);

/* err 0: removed.  REIGN_EBUSY: somebody stands in it; `standing` names them (ids; "" for a
 * candidate whose data is foreign; none if somebody joined or wrote meanwhile).  REIGN_ENOENT:
 * no such entry.  REIGN_EFOREIGN: not reign's, left alone. */
typedef void reign_store_remove_cb(reign_client *client, int err, const char *const *standing,
                                   size_t n_standing, void *userdata);

/*
 * Removes entry `name` of `kind` if nobody stands in it: an election without candidates (SQL:
 * whose lease has run out or was released, and in which no listed candidate stands; its rows
 * in the candidates table go), a group without members, a value (`name` is its whole key, as
 * listed; on ZooKeeper, as reign_value_delete() at the version read, which also removes the
 * nodes above it left holding nothing), a task queue without workers or masters (its group
 * and election "tasks.NAME"; REIGN_EBUSY names who stands).  Safe against somebody joining
 * meanwhile: ZooKeeper deletes the node only if it has no child but the election's term, in
 * one multi; SQL clears the row only at the term it read expired.  On ZooKeeper a queue's
 * subtree (its tasks, payloads, assignments and results) is deleted deepest first: a task
 * submitted meanwhile makes the removal fail with REIGN_EBUSY, with part of the queue gone;
 * its group and election stay, entries of their own.  On SQL one transaction deletes its
 * task rows and its group's rows and clears its election's lease row (at the term read
 * expired, as an election's), deciding under the group's lock that no worker of a live
 * session stands: a worker that registers, or a master that takes the lease, before it
 * commits makes it change nothing (REIGN_EBUSY); a task submitted after it begins the queue
 * anew.  A queue with a task row reign could not have written is REIGN_EFOREIGN.
 *
 * Fencing tokens never go back for a name: ZooKeeper's tokens are the store's transaction
 * ids, which only grow; on SQL the election's lease row is not deleted but cleared (no
 * holder, released, no payload) and keeps its term, so the next leadership takes the term
 * after it.  The cleared row is no entry to list or remove (REIGN_ENOENT), and
 * reign_election_query() finds no election there until somebody stands again.
 */
REIGN_EXPORT int reign_store_remove(reign_client *client, reign_entry_kind kind, const char *name,
                                    reign_store_remove_cb *cb, void *userdata);

#ifdef __cplusplus
}
#endif
#endif
