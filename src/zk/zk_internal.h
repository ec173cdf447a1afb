/*
 * zk_internal.h - what the files of the ZooKeeper backend share (zk.h is
 * its contract with the recipes): an operation, a watch, a multi, the
 * handle, and each file's functions.  Three files, each calling only the
 * ones below it:
 *
 *   zk.c         the handle: sessions and their states, the chroot's
 *                preparation, draining the queue on the loop thread, close
 *   zk_ops.c     operations on the loop thread: issuing, retrying, batching
 *                multis, delivering results to their owners
 *   zk_thread.c  the C client's completion thread: results and watch
 *                events copied into their records and queued for the loop
 *
 * Private to the library.
 */
#ifndef REIGN_ZK_INTERNAL_H
#define REIGN_ZK_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>

#include "etcd/etcd.h"
#include "zk.h"

/* An operation of the chroot's preparation (beside the REIGN__ZK_* flags). */
#define PREP_OP 0x100

enum item_kind { ITEM_OP = 1, ITEM_WATCH, ITEM_STATE, ITEM_WAITER };

/*
 * What an owner has in the backend (an operation, a watch, a waiter), chained in the bucket of
 * zk->owners its owner hashes to: reign__zk_forget() looks at one owner's things, not at all
 * of them (freeing each of 100,000 elections used to walk 100,000 watches).
 */
typedef struct owned {
    struct owned *prev, *next;
    void *owner;
    enum item_kind kind;
} owned;

typedef struct item {
    struct item *next;
    enum item_kind kind;
} item;

enum op_type { OP_CREATE, OP_DELETE, OP_EXISTS, OP_GET, OP_CHILDREN, OP_SET, OP_MULTI, OP_SYNC };

typedef struct zk_watch zk_watch;

typedef struct zk_op {
    item it; /* must be first */
    reign__zk *zk;
    enum op_type type;
    int flags;
    char *path;
    char *data;
    size_t len;
    int version;
    owned own;
    reign__zk_cb *cb; /* NULL once forgotten */
    void *arg;
    reign__zk_watch_cb *wcb;
    uint64_t gen; /* generation of the attempt in flight */
    int attempts;
    int64_t deadline_ns;
    int64_t sent_ns;
    bool in_flight; /* the C client owns it until it calls back */
    bool parked;    /* waiting for a retry */
    reign__timer retry_timer;
    struct zk_op *prev, *next; /* zk->ops: every op not yet delivered */
    zk_watch *watch;           /* the watch this attempt registers */
    /* result, written by the completion thread */
    int zrc;
    int failed_op;
    bool oom;
    bool has_stat;
    struct Stat stat;
    char *value;
    size_t value_len;
    char **children;
    size_t n_children;
    struct zk_multi *multi; /* OP_MULTI */
    bool batched;           /* a batched multi: waits in zk->batch until the flush */
    bool carried;           /* ... sent inside a carrier, which owns the attempt */
    bool flow;              /* sent by a flush: counted in zk->batch_out until freed */
    struct zk_op *bnext;    /* zk->batch */
} zk_op;

/*
 * A multi's parts, owned copies (allocated apart: most requests are not
 * multis), in one block sized to them.  A carrier (see "batched multis")
 * owns no parts: its zops point into its members' copies, and it keeps the
 * members in order.
 */
typedef struct zk_multi {
    size_t n;
    reign__zk_mop *ops;
    zoo_op_t *zops;
    zoo_op_result_t *zres;
    struct Stat *stats;
    char **created; /* creates: the path made (path + sequence) */
    size_t *created_len;
    struct zk_op **members; /* a carrier's batched multis */
    size_t n_members;
} zk_multi;

struct zk_watch {
    item it; /* queued when it fires (it fires at most once) */
    reign__zk *zk;
    uint64_t gen;
    owned own;
    reign__zk_watch_cb *cb; /* NULL once forgotten */
    void *arg;
    char *path;
    int ev_type;     /* set by the completion thread */
    bool registered; /* the server may fire it */
    bool op_pending; /* still referenced by the request that registers it */
    zk_watch *prev, *next;
};

/* An owner waiting for room in the batch (reign__zk_batch_wait()). */
typedef struct zk_waiter {
    struct zk_waiter *next;
    owned own;
    reign__zk_ready_cb *cb; /* NULL once forgotten */
    void *arg;
} zk_waiter;

/* One per ZooKeeper handle: the global watcher's context. */
#define STATE_RING 16
typedef struct handle_ctx {
    item it;
    reign__zk *zk;
    uint64_t gen;
    bool queued;          /* under zk->mu */
    int ring[STATE_RING]; /* states not yet seen by the loop, under zk->mu */
    unsigned head, count;
} handle_ctx;

struct reign__zk {
    reign__zk_config cfg;
    struct reign__etcd *etcd; /* etcd://: every call goes there (etcd.h) */
    char *hosts;
    char *auth; /* "user:password" or NULL */
    const reign__logger *log;
    zhandle_t *zh;
    handle_ctx *hctx;
    uint64_t gen;
    bool connected;
    bool had_session; /* this generation has been connected once */
    bool closed;
    bool ephemeral_told; /* cfg.on_ephemeral was called */
    bool sweep;         /* watches of a closed handle may await freeing (see the end of dispatch) */
    bool auth_added;    /* credentials handed to this handle */
    char *root_hosts;   /* hosts without the chroot, NULL if there is none */
    const char *chroot; /* inside hosts: "/app/x", or NULL */
    bool preparing;     /* the handle is the root one, making the chroot */
    size_t prep_len;    /* the prefix of chroot being made, 0: check it whole */
    bool prep_busy;     /* a request of the preparation is out */
    reign__timer prep_timer;
    int64_t session_id;
    int timeout_ms;
    int64_t last_ack_ns;
    pthread_mutex_t mu;
    item *q_head, *q_tail;
    int out;               /* under mu: requests the C client took and has not called back */
    pthread_cond_t out_cv; /* under mu: out fell to 0 */
    zk_op *ops;
    zk_op *batch, **batch_tail;         /* batched multis not sent yet, in order */
    size_t batch_parts;                 /* ... their parts */
    int batch_out;                      /* flushed requests of this handle not answered yet */
    zk_waiter *waiters, **waiters_tail; /* owners waiting for room in the batch, in order */
    zk_watch *watches;
    owned **owners; /* buckets of what owners have, by owner (at most one thing each on average) */
    unsigned owners_bits;
    size_t n_owned;
    handle_ctx *dead_ctx; /* closed handle whose context awaits the drain */
    reign__timer reinit_timer;
    struct ACL acl_entries[2];
    struct ACL_vector acl;
    char errmsg[256];
};

/* ---- zk_thread.c: the completion thread and the hand-off ---- */

void reign__zki_push(reign__zk *zk, item *it);
item *reign__zki_pop(reign__zk *zk);
const char *reign__zki_op_name(const zk_op *op);
void reign__zki_on_void(int rc, const void *data);
void reign__zki_on_stat(int rc, const struct Stat *stat, const void *data);
void reign__zki_on_data(int rc, const char *value, int len, const struct Stat *stat,
                        const void *data);
void reign__zki_on_string_stat(int rc, const char *value, const struct Stat *stat,
                               const void *data);
void reign__zki_on_string(int rc, const char *value, const void *data);
void reign__zki_on_children(int rc, const struct String_vector *sv, const struct Stat *stat,
                            const void *data);
void reign__zki_on_node_event(zhandle_t *zh, int type, int state, const char *path, void *ctx);
void reign__zki_on_session_event(zhandle_t *zh, int type, int state, const char *path, void *ctx);
void reign__zki_log_cb(const char *msg);

/* ---- zk_ops.c: operations (loop thread) ---- */

void reign__zki_free_watch(reign__zk *zk, zk_watch *w);
void reign__zki_free_op(reign__zk *zk, zk_op *op);
void reign__zki_finish_op(reign__zk *zk, zk_op *op);
void reign__zki_resend_parked(reign__zk *zk);
void reign__zki_fail_parked(reign__zk *zk);
void reign__zki_free_waiters(reign__zk *zk);
void reign__zki_own(reign__zk *zk, owned *o, void *owner, enum item_kind kind);
void reign__zki_disown(reign__zk *zk, owned *o);

#endif
