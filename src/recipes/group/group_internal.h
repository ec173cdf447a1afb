/*
 * group_internal.h - what the group recipe's files share: the pure parts
 * (group.c, unit-tested): names, ordering, keeping the newest registration
 * per id, and the difference between two views; and what a member
 * (group_member_zk.c, group_member_sql.c) and a watch (group_watch_zk.c, group_watch_sql.c)
 * share, and the head of each, through which group.c's public functions reach either store.
 *
 *   /reign/group/GROUP                 persistent; record kind=group
 *   /reign/group/GROUP/m_<guid>_<seq>  ephemeral sequential; record id=, guid=
 *                                      + the member's payload
 */
#ifndef REIGN_GROUP_INTERNAL_H
#define REIGN_GROUP_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <reign/group.h>

#include <string.h>

#include "client/client_internal.h"
#include "recipes/life.h"

/* ---- the public objects: a head that either store's object starts with ------------------- */

typedef struct reign__group_ops {
    int (*set_data)(reign_group *g, const void *data, size_t len); /* arguments checked */
    int (*is_registered)(const reign_group *g);
    const char *(*node)(const reign_group *g);
    void (*free)(reign_group *g); /* the whole of reign_group_free() */
} reign__group_ops;

/* A member: group_member_zk.c's or group_member_sql.c's, which starts with this. */
struct reign_group {
    reign__recipe recipe; /* first: the client calls us through it */
    const reign__group_ops *ops;
    char *name;
    char *id;
    void *data; /* our payload, used by every (re-)registration */
    size_t data_len;
    int retry_delay_ms;
    reign_group_cb *cb;
    void *userdata;
    reign__life life; /* the backend's epoch per attempt, and a free deferred in a callback */
};

/* Fills the head from checked options (the id defaulted); 0 or REIGN_ENOMEM (then cleared). */
int reign__group_head_init(reign_group *g, const reign__group_ops *ops, const char *name,
                           const reign_group_options *o);
void reign__group_head_clear(reign_group *g);
/* Calls the member's callback (not after a free was asked), stamping at_ns. */
void reign__group_emit(reign_group *g, reign_group_event *ev);
/* Replaces the head's payload with a copy; 0 or REIGN_ENOMEM. */
int reign__group_head_data(reign_group *g, const void *data, size_t len);

/* Each backend's constructor: arguments checked, the client of its store. */
int reign__group_zk_register(reign_group **ret, reign_client *client, const char *name,
                             const reign_group_options *o);
int reign__group_sql_register(reign_group **ret, reign_client *client, const char *name,
                              const reign_group_options *o);

/* A watch (or a one-shot listing: list_cb), group_watch_zk.c's or group_watch_sql.c's. */
struct reign_group_watch {
    reign__recipe recipe;               /* first: the client calls us through it */
    void (*free)(reign_group_watch *w); /* the whole of reign_group_watch_free() */
    char *name;
    void *userdata;
    reign_member *view; /* published, by seq */
    size_t n_view;
};

/* Calls the watch's callback (not after a free was asked: `life`), stamping at_ns. */
void reign__group_watch_emit(reign_group_watch *w, reign__life *life, reign_group_watch_cb *cb,
                             reign_group_watch_event *ev);

/*
 * Reports a new view (already published in w) against the old one: the difference, then
 * GROUP_DELETED if the group was known and is gone, then READY the first time (*ready_sent).
 * Stops early once a free is asked.
 */
void reign__group_watch_report(reign_group_watch *w, reign__life *life, reign_group_watch_cb *cb,
                               const reign_member *old_view, size_t n_old, bool was_known,
                               bool known, bool *ready_sent);

int reign__group_watch_zk(reign_group_watch **ret, reign_client *client, const char *name,
                          const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                          void *userdata);
int reign__group_watch_sql(reign_group_watch **ret, reign_client *client, const char *name,
                           const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                           void *userdata);

/* A failed attempt is tried again after this long. */
#define REIGN__GROUP_RETRY_NS (1000 * REIGN__NS_PER_MS)

/* 0 or REIGN_ENAME: a group name is one path segment. */
int reign__group_name_check(const char *name);
/* "/reign/group/NAME" + suffix, or NULL on OOM. */
char *reign__group_path(const char *name, const char *suffix);

static inline const char *reign__group_basename(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Sorts by seq (registration order). */
void reign__members_sort(reign_member *v, size_t n);

/* Keeps, of members sorted by seq, only the last of each id; returns the
 * new count (order kept). */
size_t reign__members_newest_per_id(reign_member *v, size_t n);

typedef enum reign__member_change {
    REIGN__MEMBER_REMOVED = 1,
    REIGN__MEMBER_CHANGED,
    REIGN__MEMBER_ADDED
} reign__member_change;

typedef void reign__member_diff_fn(void *arg, reign__member_change kind, const reign_member *now,
                                   const reign_member *before);

/*
 * Calls fn for every difference between two views sorted by seq (a member
 * is the same registration when its seq is): all REMOVED (now = the old
 * member, before = NULL), then all CHANGED (version differs), then all
 * ADDED, each in seq order.  Stops early when fn returns with *stop set.
 * Returns the number of differences reported.
 */
size_t reign__members_diff(const reign_member *before, size_t n_before, const reign_member *now,
                           size_t n_now, reign__member_diff_fn *fn, void *arg, const bool *stop);

#endif
