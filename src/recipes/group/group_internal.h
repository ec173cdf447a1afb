/*
 * group_internal.h - what the group recipe's files share: the pure parts
 * (group.c, unit-tested): names, ordering, keeping the newest registration
 * per id, and the difference between two views; and what a member
 * (group_member_zk.c) and a watch (group_watch_zk.c) both use.
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
