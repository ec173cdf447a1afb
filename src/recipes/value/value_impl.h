/*
 * value_impl.h - what the files of the value recipe share: value.c (the API and its checks),
 * value_watch.c (the part of a watch that decides what to report), value_zk.c (values as
 * ZooKeeper nodes) and value_sql.c (values as rows of a SQL store's values table,
 * src/sql/values.h).
 *
 * value.c checks every argument, then hands a request to the backend of the client.  A watch
 * is a reign_value_watch (below) at the head of a backend's own struct; the backend reads the
 * value, by its own means, whenever it may have changed, and hands each read to
 * reign__value_watch_apply(), which reports what differs from the last one.
 */
#ifndef REIGN_VALUE_IMPL_H
#define REIGN_VALUE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <reign/value.h>

#include "client/client_internal.h"
#include "recipes/life.h"
#include "value_internal.h"

/* A value's metadata, as either store gives it. */
typedef struct reign__value_stat {
    int64_t version;
    int64_t czxid; /* the write that made it: a new one when made again */
    int64_t mzxid; /* the write that made this version */
    int64_t ctime_ms, mtime_ms;
} reign__value_stat;

/* Fills *v (data may be NULL). */
void reign__value_fill(reign_value *v, const char *key, const reign__value_stat *st,
                       const void *data, size_t len);

/* ---- one-shot requests ------------------------------------------------------------------- */

typedef enum reign__value_op {
    REIGN__VALUE_GET,
    REIGN__VALUE_SET,
    REIGN__VALUE_DELETE
} reign__value_op;

/* A checked request (value.c): everything is the caller's until the call returns. */
typedef struct reign__value_req {
    reign__value_op op;
    const char *key;
    const void *data; /* SET */
    size_t len;
    int64_t version; /* SET, DELETE */
    reign_value_cb *cb;
    void *userdata;
} reign__value_req;

/* Each sends the request and returns 0 (the callback follows, once), or a negative code (it
 * never does). */
int reign__value_zk_request(reign_client *client, const reign__value_req *r);
int reign__value_sql_request(reign_client *client, const reign__value_req *r);

/* ---- watches ----------------------------------------------------------------------------- */

typedef struct reign__value_watch_ops {
    void (*stop)(reign_value_watch *w);    /* freed by the user: no callback any more */
    void (*destroy)(reign_value_watch *w); /* frees the backend's part, then w */
} reign__value_watch_ops;

struct reign_value_watch {
    reign__recipe recipe; /* first: the client calls us through it */
    const reign__value_watch_ops *ops;
    reign_client *client;
    const reign__logger *log;
    char *key;
    reign_value_watch_cb *cb;
    void *userdata;

    bool ready_sent;
    /* the value as last reported */
    bool present;
    void *data;
    size_t data_len;
    reign__value_stat stat;

    reign__life life; /* the backend's epoch (ZooKeeper sessions) and a free deferred while
                       * one of its callbacks is on the stack */
};

/* Sets up the common part of a watch the backend allocated (zeroed); 0 or REIGN_ENOMEM. */
int reign__value_watch_init(reign_value_watch *w, const reign__value_watch_ops *ops,
                            reign_client *client, const char *key, reign_value_watch_cb *cb,
                            void *userdata);
/* Frees the common part (not w itself). */
void reign__value_watch_clear(reign_value_watch *w);

/* Around every callback of the backend into a watch: reign__life_enter(&w->life), then this,
 * which frees the watch if it was freed meanwhile. */
void reign__value_watch_leave(reign_value_watch *w);

/*
 * A read's outcome: the value (present, with st and its payload) or none.  Reports READY the
 * first time, then CREATED, CHANGED or DELETED (then CREATED, for a value made again between
 * two reads) as it differs from the last read; nothing if it does not.
 */
void reign__value_watch_apply(reign_value_watch *w, bool present, const reign__value_stat *st,
                              const void *data, size_t len);
/* Reports an ERROR event (the watch goes on). */
void reign__value_watch_error(reign_value_watch *w, int err, const char *msg);

int reign__value_zk_watch(reign_value_watch **ret, reign_client *client, const char *key,
                          reign_value_watch_cb *cb, void *userdata);
int reign__value_sql_watch(reign_value_watch **ret, reign_client *client, const char *key,
                           reign_value_watch_cb *cb, void *userdata);

#endif
