/*
 * group_internal.h - the pure parts of the group recipe (group.c), for the
 * unit tests: member node names, ordering, keeping the newest registration
 * per id, and the difference between two views.
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

#include "client_internal.h"

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
