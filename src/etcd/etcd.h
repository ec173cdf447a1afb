/*
 * etcd.h - the etcd backend: the node tree of zk.h kept in an etcd cluster, through its gRPC
 * API (or the JSON gateway every member also serves).  zk.c hands each call of zk.h to the function
 * of the same name here when the client's URI is etcd://, so every recipe written for ZooKeeper
 * runs on etcd unchanged; docs/etcd.md says how each ZooKeeper notion is kept:
 *
 *   session          a lease, kept alive by the client's loop; expired when etcd says so
 *   node             a key: prefix + path, the value the node's data
 *   ephemeral node   a key attached to the lease
 *   sequential node  a name ending in the parent's counter (a key "PARENT/." the txn moves)
 *   version, zxid    the key's version - 1, its create and mod revisions (the cluster's counter)
 *   multi            one txn whose comparisons are every part's conditions
 *   watch            a one-shot watch, fired by the client's one watch stream over the prefix
 *
 * Private to the library.
 */
#ifndef REIGN_ETCD_H
#define REIGN_ETCD_H

#include "zk/zk.h"

typedef struct reign__etcd reign__etcd;

int reign__etcd_new(reign__etcd **ret, const reign__zk_config *cfg, char *err, size_t errlen);
void reign__etcd_free(reign__etcd *e);
void reign__etcd_close(reign__etcd *e);
void reign__etcd_dispatch(reign__etcd *e);
int64_t reign__etcd_session_id(const reign__etcd *e);
int reign__etcd_session_timeout_ms(const reign__etcd *e);
bool reign__etcd_connected(const reign__etcd *e);
const char *reign__etcd_errmsg(const reign__etcd *e);
int64_t reign__etcd_last_ack_ns(const reign__etcd *e);
void reign__etcd_heartbeat(reign__etcd *e);

int reign__etcd_create(reign__etcd *e, const char *path, const void *data, size_t len, int flags,
                       void *owner, reign__zk_cb *cb, void *arg);
int reign__etcd_delete(reign__etcd *e, const char *path, int version, int flags, void *owner,
                       reign__zk_cb *cb, void *arg);
int reign__etcd_exists(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                       void *owner, reign__zk_cb *cb, void *arg);
int reign__etcd_get(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                    void *owner, reign__zk_cb *cb, void *arg);
int reign__etcd_children(reign__etcd *e, const char *path, reign__zk_watch_cb *wcb, int flags,
                         void *owner, reign__zk_cb *cb, void *arg);
int reign__etcd_set(reign__etcd *e, const char *path, const void *data, size_t len, int version,
                    int flags, void *owner, reign__zk_cb *cb, void *arg);
int reign__etcd_multi(reign__etcd *e, const reign__zk_mop *ops, size_t n, void *owner,
                      reign__zk_cb *cb, void *arg);
int reign__etcd_batch_wait(reign__etcd *e, void *owner, reign__zk_ready_cb *cb, void *arg);
void reign__etcd_flush(reign__etcd *e);
void reign__etcd_forget(reign__etcd *e, void *owner);
void reign__etcd_seq_hint(reign__etcd *e, const char *dir);

/*
 * Revokes lease `e->session` from outside the process that holds it (etcd_end.c), for the
 * guardian: `members` as "http://h:p,http://h:p" (or https://, with e->access.tls's files),
 * each tried in turn until the deadline; with e->access.user, logged in as that user first.
 * The writes first, each one txn (the key at version 0 as zk.h counts, the lease alive), within
 * a small part of the time.  1 if revoked here, 0 if it was gone already, or REIGN_ETIMEDOUT
 * or REIGN_EAUTH (etcd refused the user's credentials) with err.  Blocks up to timeout_ms.
 */
int reign__etcd_end_lease(const char *members, reign__zk_end *e, char *err, size_t errlen);
/* Loads what reign__etcd_end_lease() needs for these members (libhttp_parser, or libcurl for
 * https://) ahead, so that a revoke does not wait for it: 0, or REIGN_ENOTSUP with err. */
int reign__etcd_end_prepare(const char *members, char *err, size_t errlen);

#endif
