/*
 * breadcrumb.h - the persistent record naming a service's last active node
 * (HDFS's ActiveBreadCrumb), and the layout `reignd --format` prepares.
 *
 * The election's lock is ephemeral and goes with its holder's session; the
 * breadcrumb is a reign value (<reign/value.h>) that stays.  A node that wins
 * the election reads it first: if it names another node, that node may still
 * run its service as active (its reignd died, or lost its session while the
 * service kept going), so the winner fences it before anything else.  Then
 * the winner writes its own breadcrumb by compare-and-set on the version it
 * read, so two winners in a row (an old leadership's late write, a fast
 * re-election) cannot overwrite each other unseen: the loser of the CAS
 * steps down and retries, reading what the other wrote.  A node that stops
 * cleanly (cede, shutdown) deletes its breadcrumb, by version too, once its
 * service is standby, so that nobody fences it.
 *
 * Keys (values live under /reign/value/ on ZooKeeper):
 *   reignd/ELECTION/layout       "reignd layout 1": written by --format; a
 *                                daemon refuses to start without it
 *   reignd/ELECTION/breadcrumb   the record below
 *   reignd/ELECTION/pause        present while the election is paused
 *                                (`reign ctl pause`, Patroni's pause): every
 *                                daemon of the election watches it and makes
 *                                no automatic decision while it is there;
 *                                "reignd pause 1\nby=NODE\n" (who paused it,
 *                                for status only: presence alone decides)
 * Nodes are created by libreign, which gives them the ACL of the URI's
 * credentials ("digest user: all, world: read") when the URI names a user.
 *
 * Record (text, one key=value per line, after a first line of its own):
 *   reignd breadcrumb 1
 *   id=NODE
 *   service_address=HOST:PORT
 *   peer_address=HOST:PORT        (empty if the node has no peer endpoint)
 *   instance=HEX                  the writing daemon's instance (a random id
 *                                 drawn at each start; "" if absent)
 *   term=N
 *   token=N
 * The id alone never tells whose record it is: two daemons may be given the
 * same node_id (a cloned VM, a copied configuration), and a daemon restarted
 * is not the one that wrote it.  Only the instance says "this very daemon".
 * Data read back is checked like any input from the store: a record that
 * does not parse is foreign (REIGN_EFOREIGN) and never trusted.
 *
 * All callbacks run on the loop thread, inside reign_client_process().
 */
#ifndef REIGND_BREADCRUMB_H
#define REIGND_BREADCRUMB_H

#include <stddef.h>
#include <stdint.h>

#include <reign/client.h>
#include <reign/election.h>
#include <reign/value.h>

#define REIGND_ADDRESS_MAX  262 /* "[" 253-byte host "]:" 5-digit port, and a NUL */
#define REIGND_INSTANCE_MAX 65  /* a daemon instance id ([0-9a-f], 16 written), and a NUL */

typedef struct reignd_breadcrumb {
    char id[REIGN_ID_MAX + 1];
    char service_address[REIGND_ADDRESS_MAX];
    char peer_address[REIGND_ADDRESS_MAX]; /* "" if none */
    char instance[REIGND_INSTANCE_MAX];    /* "" if none (a record not written by reignd) */
    uint64_t term;
    uint64_t token;
} reignd_breadcrumb;

/* The longest encoded record. */
#define REIGND_BREADCRUMB_MAX                                                                      \
    (80 + REIGN_ID_MAX + 2 * REIGND_ADDRESS_MAX + REIGND_INSTANCE_MAX + 2 * 24)

/*
 * Encodes `b` into `out`.  Returns the length written (NUL-terminated), or
 * REIGN_EINVAL if a field is empty (id, service_address) or holds a control
 * character, REIGN_E2BIG if `out` is too small.
 */
int reignd_breadcrumb_encode(const reignd_breadcrumb *b, char *out, size_t outlen);

/*
 * Decodes a record read from the store.  Returns 0, or REIGN_EFOREIGN with
 * the reason in `err` (the data is never quoted: it may be anything).
 */
int reignd_breadcrumb_decode(const void *data, size_t len, reignd_breadcrumb *b, char *err,
                             size_t errlen);

/* The value keys of an election's layout, breadcrumb and pause.  0 or REIGN_ENAME. */
int reignd_layout_key(const char *election, char *out, size_t outlen);
int reignd_breadcrumb_key(const char *election, char *out, size_t outlen);
int reignd_pause_key(const char *election, char *out, size_t outlen);

/* The pause record naming who paused (REIGND_PAUSE_MAX bytes at most). */
#define REIGND_PAUSE_MAX (32 + REIGN_ID_MAX)
int reignd_pause_encode(const char *by, char *out, size_t outlen);
/* Who paused, from a pause record, into by ("?" if it does not say). */
void reignd_pause_decode(const void *data, size_t len, char *by, size_t bylen);

/*
 * A fresh daemon instance id: 16 lower-case hex digits from the kernel's
 * random source, into out (at least 17 bytes).  0, or a negative code.
 */
int reignd_instance_new(char *out, size_t outlen);

/* ---- on the store --------------------------------------------------------- */

/*
 * The breadcrumb as read: err 0 and b (NULL if there is none; version is
 * then REIGN_VALUE_ABSENT, the version to write the first one), or a
 * negative code (REIGN_EFOREIGN: it does not parse; msg says why).
 */
typedef void reignd_breadcrumb_read_cb(int err, const char *msg, const reignd_breadcrumb *b,
                                       int64_t version, void *userdata);

/* err 0 and the version now stored (write), or a negative code. */
typedef void reignd_breadcrumb_done_cb(int err, int64_t version, void *userdata);

/* Each returns 0 and calls back once, or a negative code and never calls back. */
int reignd_breadcrumb_read(reign_client *client, const char *election,
                           reignd_breadcrumb_read_cb *cb, void *userdata);

/* Writes `b` if the stored version is still `version` (REIGN_VALUE_ABSENT:
 * only if there is none).  REIGN_EBADVERSION / REIGN_EEXIST / REIGN_ENOENT
 * when someone else wrote (or deleted) it meanwhile. */
int reignd_breadcrumb_write(reign_client *client, const char *election, const reignd_breadcrumb *b,
                            int64_t version, reignd_breadcrumb_done_cb *cb, void *userdata);

/* Deletes the breadcrumb if it is still at `version` (one we wrote). */
int reignd_breadcrumb_delete(reign_client *client, const char *election, int64_t version,
                             reignd_breadcrumb_done_cb *cb, void *userdata);

/*
 * The layout: reignd_layout_check() calls back with 0 if `--format` was run
 * for the election, REIGN_ENOENT if not.  reignd_layout_format() writes it:
 * REIGN_EEXIST if it exists and !force; with force, rewrites it and deletes
 * any breadcrumb (nobody will be fenced for a leadership from before).
 */
typedef void reignd_layout_cb(int err, const char *msg, void *userdata);
int reignd_layout_check(reign_client *client, const char *election, reignd_layout_cb *cb,
                        void *userdata);
int reignd_layout_format(reign_client *client, const char *election, int force,
                         reignd_layout_cb *cb, void *userdata);

#endif
