/*
 * zk.h - the ZooKeeper backend: one session through the multi-threaded C
 * client, asynchronous operations with retries, and watches, all delivered
 * on the loop thread.
 *
 * Hand-off: the C client's completion thread only copies a result into the
 * operation (which it owns until then) or a small record, pushes it on a
 * mutex-protected queue and writes an eventfd.  reign__zk_dispatch(), on the
 * loop thread, pops and calls back.  Each ZooKeeper handle has a generation;
 * results and watch events of an older generation (an expired session) are
 * never delivered as if they were current.
 *
 * The node tree this contract describes is kept on etcd too (src/etcd/etcd.h): a handle made
 * with cfg.etcd_members passes each call to the etcd backend, and the recipes never know.
 *
 * Owners: every operation and watch names an owner (the recipe object).
 * reign__zk_forget(owner) guarantees none of its callbacks runs afterwards,
 * which lets recipes be freed with requests in flight.
 *
 * Private to the library.
 */
#ifndef REIGN_ZK_H
#define REIGN_ZK_H

#include <stdbool.h>
#include <stdint.h>

#include "core.h"

typedef struct reign__zk reign__zk;

typedef struct reign__zk_stat {
    int64_t czxid;
    int64_t mzxid;
    int64_t ctime_ms;
    int64_t mtime_ms;
    int32_t version;
    int32_t cversion;
    int64_t ephemeral_owner;
    int32_t data_length;
    int32_t num_children;
} reign__zk_stat;

typedef struct reign__zk_result {
    int rc;  /* 0 or REIGN_E*: ENOENT, EEXIST, EBADVERSION, ENOTEMPTY, EACCES,
                ECONNLOSS (retries exhausted), ETIMEDOUT, ESESSION, ECLOSED, ... */
    int zrc; /* the ZooKeeper code, for messages */
    bool has_stat;
    reign__zk_stat stat;
    const char *value; /* get: the data (NUL-terminated copy); create: the created path */
    size_t value_len;
    char **children; /* children: names, sorted by nothing (as the server sent them) */
    size_t n_children;
    int64_t sent_ns;          /* when the (last) attempt was sent */
    int failed_op;            /* multi: the index of the part that failed, else -1 */
    const char *last_created; /* multi: the path made by the last create (value: the first) */
    /* The version of the node the first create made: 0, but on etcd a multi that deletes a node
     * and makes it again puts it over the old key, whose version goes on. */
    int32_t made_version;
} reign__zk_result;

typedef void reign__zk_cb(void *owner, void *arg, const reign__zk_result *r);

typedef enum reign__zk_event {
    REIGN__ZK_CREATED = 1,
    REIGN__ZK_DELETED,
    REIGN__ZK_CHANGED,
    REIGN__ZK_CHILD
} reign__zk_event;

typedef void reign__zk_watch_cb(void *owner, void *arg, reign__zk_event ev, const char *path);

/* What the backend tells the client. */
typedef enum reign__zk_state {
    REIGN__ZK_CONNECTED = 1, /* a new session */
    REIGN__ZK_SUSPENDED,
    REIGN__ZK_RECONNECTED,
    REIGN__ZK_EXPIRED, /* the session is gone; a new one is being made */
    REIGN__ZK_FATAL    /* auth failed or cannot continue; see errmsg */
} reign__zk_state;

/* etcds://'s files, each NULL when the URI names none (libcurl's defaults then): the CA that
 * signed the members' certificates, the client's certificate and its key. */
typedef struct reign__zk_tls {
    const char *ca, *cert, *key;
} reign__zk_tls;

typedef struct reign__zk_config {
    const char *hosts; /* "h:p,h:p" plus optional chroot "/x" */
    int session_timeout_ms;
    int op_timeout_ms;
    int retry_period_ms;
    int retry_max;
    const char *user; /* NULL: no auth */
    const char *password;
    const reign__logger *log;
    reign__timers *timers; /* the client's timer heap */
    void (*on_state)(void *arg, reign__zk_state st);
    /* Called once, on the loop thread, before the first ephemeral node is asked for (a create,
     * or a multi that creates one): from then on the session holds something (may be NULL). */
    void (*on_ephemeral)(void *arg);
    void *state_arg;
    int wake_fd; /* eventfd to write when there is work */
    /* etcd:// (src/etcd/etcd.h keeps this contract on etcd): the members "h:p,h:p", the key
     * prefix, TLS and its files.  NULL members: ZooKeeper. */
    const char *etcd_members;
    const char *etcd_prefix;
    bool tls;
    bool etcd_gateway; /* etcd: the JSON gateway (api=gateway), not gRPC */
    reign__zk_tls tls_files;
    int epoll_fd; /* etcd: the client's epoll set, which the backend's own joins */
} reign__zk_config;

int reign__zk_new(reign__zk **ret, const reign__zk_config *cfg, char *err, size_t errlen);
/* Closes the session (blocking briefly), fails what is pending with
 * REIGN_ECLOSED without calling back, and frees. */
void reign__zk_free(reign__zk *zk);
/* Closes the session now; pending operations complete with REIGN_ECLOSED. */
void reign__zk_close(reign__zk *zk);

/* Drains the hand-off queue: callbacks run here. */
void reign__zk_dispatch(reign__zk *zk);

int64_t reign__zk_session_id(const reign__zk *zk);
/* The session's id and password (what another process needs to end it), 0 if none. */
int64_t reign__zk_session_credentials(const reign__zk *zk, unsigned char passwd[16]);
int reign__zk_session_timeout_ms(const reign__zk *zk);
bool reign__zk_connected(const reign__zk *zk);
const char *reign__zk_errmsg(const reign__zk *zk);
/* Is the tree kept on etcd (else ZooKeeper)? */
bool reign__zk_is_etcd(const reign__zk *zk);

/*
 * The latest moment the server is known to have heard from this session:
 * the send time of the latest write or sync it answered (reads are not
 * proof: a follower cut off from its leader may still answer them).
 * 0 if none in this session.
 */
int64_t reign__zk_last_ack_ns(const reign__zk *zk);
/* Sends a sync now (a liveness proof); no callback. */
void reign__zk_heartbeat(reign__zk *zk);

/* The ACL every created node gets (digest owner + world read, or open). */

/* Flags for operations. */
#define REIGN__ZK_EPHEMERAL 1
#define REIGN__ZK_SEQUENCE  2
#define REIGN__ZK_RETRY     4 /* retry on connection loss (only for idempotent requests) */
#define REIGN__ZK_CONTAINER 8 /* create: a container node (the server deletes it once empty) */

/* Operations: 0 if issued (the callback will run exactly once, unless the
 * owner is forgotten), else a negative code and no callback. */
int reign__zk_create(reign__zk *zk, const char *path, const void *data, size_t len, int flags,
                     void *owner, reign__zk_cb *cb, void *arg);
int reign__zk_delete(reign__zk *zk, const char *path, int version, int flags, void *owner,
                     reign__zk_cb *cb, void *arg);
int reign__zk_exists(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                     void *owner, reign__zk_cb *cb, void *arg);
int reign__zk_get(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags, void *owner,
                  reign__zk_cb *cb, void *arg);
int reign__zk_children(reign__zk *zk, const char *path, reign__zk_watch_cb *wcb, int flags,
                       void *owner, reign__zk_cb *cb, void *arg);
int reign__zk_set(reign__zk *zk, const char *path, const void *data, size_t len, int version,
                  int flags, void *owner, reign__zk_cb *cb, void *arg);
/* One part of a multi: the paths and data are copied. */
typedef enum reign__zk_mop_type {
    REIGN__ZK_MCHECK = 1, /* path exists, at `version` (-1: any) */
    REIGN__ZK_MCREATE,    /* create path with data; flags: EPHEMERAL, SEQUENCE */
    REIGN__ZK_MSET,       /* set path's data at `version` (-1: any) */
    REIGN__ZK_MDELETE,    /* delete path at `version` (-1: any) */
} reign__zk_mop_type;

typedef struct reign__zk_mop {
    reign__zk_mop_type type;
    const char *path;
    const void *data;
    size_t len;
    int version;
    int flags;
} reign__zk_mop;

#define REIGN__ZK_MULTI_MAX 16

/*
 * All of `ops` or none, in order.  On success the result's stat is that of
 * the last set (if any) and its value the path made by the first create (if
 * any); on failure failed_op is the index of the part that failed.  Never
 * retried (a multi that landed must not be applied twice): the caller
 * decides what a lost answer means.
 */
int reign__zk_multi(reign__zk *zk, const reign__zk_mop *ops, size_t n, void *owner,
                    reign__zk_cb *cb, void *arg);
/*
 * The same, but the multi may travel with the other batched multis of this
 * loop turn as one request, which costs the server far less than one each.
 * reign__zk_flush() sends them (the client calls it at the end of every
 * process(); the first one batched wakes the loop).  Each stays
 * all-or-nothing on its own: when the combined request is refused, the
 * multi whose part failed gets the error, those before it are sent again,
 * and those after it (never judged) fail with REIGN_ECANCELED, not applied.
 * Use it only where order does not
 * matter: a batched multi goes out at the flush, after requests issued
 * later in the same turn.  Batched multis not sent when the session ends
 * fail with ESESSION (never sent in the next session).
 */
int reign__zk_multi_batched(reign__zk *zk, const reign__zk_mop *ops, size_t n, void *owner,
                            reign__zk_cb *cb, void *arg);
/*
 * Waits for room in the batch: cb(owner, arg, 0) runs on the loop thread, from
 * reign__zk_flush(), when the owner's batched multi would go out at once (it then calls
 * reign__zk_multi_batched(), or nothing); cb(owner, arg, REIGN_ESESSION or REIGN_ECLOSED) if
 * the session ends first.  Owners are called in the order they asked, never after
 * reign__zk_forget().  What waits costs a few words, where a batched multi holds its parts:
 * thousands of elections joined at once build their multis only as the server takes them.
 */
typedef void reign__zk_ready_cb(void *owner, void *arg, int rc);
int reign__zk_batch_wait(reign__zk *zk, void *owner, reign__zk_ready_cb *cb, void *arg);
/*
 * Sends the batched multis, as carriers of up to 512 parts, a few at a time: the rest wait
 * for an answer to make room (a server handed a hundred thousand multis at once holds them
 * all, and a client all their copies).
 */
void reign__zk_flush(reign__zk *zk);
/*
 * Atomically: `check_path` exists (any version), then set `path` to data at
 * `version`, or create it (persistent) when version is -2.  The result's
 * stat is that of the set/created node.  On failure, failed_op says which
 * part failed (ENOENT with failed_op 0: check_path is gone).
 */
int reign__zk_check_and_set(reign__zk *zk, const char *check_path, const char *path,
                            const void *data, size_t len, int version, void *owner,
                            reign__zk_cb *cb, void *arg);

/* No callback of `owner` runs after this. */
void reign__zk_forget(reign__zk *zk, void *owner);

/* A sequential create under `dir` is coming soon (a waiter first in line will claim, and number
 * its history record): on etcd, whose sequence numbers come from a counter the client must have
 * seen, read the counter now, off the claim's path; on ZooKeeper, nothing. */
void reign__zk_seq_hint(reign__zk *zk, const char *dir);

/* A write the end of a session makes first, in the session: data at `path` (under the end's
 * root), only if the node is at version 0. */
typedef struct reign__zk_end_write {
    const char *path;
    const void *data;
    size_t len;
    int rc; /* out: 0 written, a REIGN_E* code (REIGN_EBADVERSION: not at version 0, or the
               session had expired), or 1: no answer */
} reign__zk_end_write;

/* What another process (the guardian) needs, besides the session, to write to the tree and end
 * the session as its client would: each NULL when there is none. */
typedef struct reign__zk_access {
    const char *root;            /* the chroot or key prefix the writes' paths are under */
    const char *auth;            /* ZooKeeper's digest credentials "user:password" */
    const char *user, *password; /* etcd's user, which logs in for a token, and its password */
    reign__zk_tls tls;           /* etcd's TLS files, for https:// members */
    const char *api;             /* etcd: "gateway" (the URI's api=gateway), or NULL: gRPC */
} reign__zk_access;

/* A session to end from outside the process that made it. */
typedef struct reign__zk_end {
    const char *hosts; /* as for the config ("etcd:http://h:p,..." for etcd's lease) */
    int64_t session;
    unsigned char passwd[16];
    int timeout_ms;
    reign__zk_access access;
    reign__zk_end_write *writes;
    size_t n_writes;
} reign__zk_end;

/*
 * Ends session `e->session` from outside the process that made it (zk_end.c):
 * attaches with its password, makes the writes, and closes it, so that its
 * ephemeral nodes go at once.  Sent at once, in that order, on one
 * connection: a write that fails never holds the close back.  Blocks up to
 * timeout_ms, trying each server in turn.  1 if it was closed here, 0 if it
 * had expired already, or REIGN_ETIMEDOUT, REIGN_ECONNECT... with err.
 */
int reign__zk_end_session(reign__zk_end *e, char *err, size_t errlen);

/* Maps a ZooKeeper return code to a REIGN_E* code. */
int reign__zk_error(int zrc);

#endif
