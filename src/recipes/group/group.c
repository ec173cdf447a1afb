/*
 * group.c - group membership (<reign/group.h>): the part every store shares,
 * pure: names, ordering of members, the newest registration per id, the
 * difference between two views, the event names.  A member's registration
 * on ZooKeeper is group_member_zk.c, a watch of the members
 * group_watch_zk.c (group_internal.h has the layout).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "group_internal.h"

/* ---- names and views (pure) ---------------------------------------------- */

int reign__group_name_check(const char *name)
{
    return name && reign__segment_ok(name, strlen(name)) ? 0 : REIGN_ENAME;
}

static int member_cmp(const void *a, const void *b)
{
    const reign_member *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void reign__members_sort(reign_member *v, size_t n)
{
    if (n > 1)
        qsort(v, n, sizeof(*v), member_cmp);
}

size_t reign__members_newest_per_id(reign_member *v, size_t n)
{
    /* Quadratic, but only over what one group holds; keeps the order. */
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        bool newer_exists = false;
        for (size_t j = i + 1; j < n && !newer_exists; j++)
            newer_exists = strcmp(v[i].id, v[j].id) == 0;
        if (!newer_exists)
            v[out++] = v[i];
    }
    return out;
}

/* The same registration: same sequence number and node (a group deleted
 * and made again restarts its sequence). */
static bool same_member(const reign_member *a, const reign_member *b)
{
    return a->seq == b->seq && strcmp(a->node, b->node) == 0;
}

/* Index of the member of v (sorted by seq) that is m, or SIZE_MAX. */
static size_t find_member(const reign_member *v, size_t n, const reign_member *m)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].seq < m->seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && same_member(&v[lo], m) ? lo : SIZE_MAX;
}

size_t reign__members_diff(const reign_member *before, size_t n_before, const reign_member *now,
                           size_t n_now, reign__member_diff_fn *fn, void *arg, const bool *stop)
{
    size_t count = 0;
    for (size_t i = 0; i < n_before && !(stop && *stop); i++)
        if (find_member(now, n_now, &before[i]) == SIZE_MAX) {
            count++;
            fn(arg, REIGN__MEMBER_REMOVED, &before[i], NULL);
        }
    for (size_t i = 0; i < n_now && !(stop && *stop); i++) {
        size_t j = find_member(before, n_before, &now[i]);
        if (j != SIZE_MAX && before[j].version != now[i].version) {
            count++;
            fn(arg, REIGN__MEMBER_CHANGED, &now[i], &before[j]);
        }
    }
    for (size_t i = 0; i < n_now && !(stop && *stop); i++)
        if (find_member(before, n_before, &now[i]) == SIZE_MAX) {
            count++;
            fn(arg, REIGN__MEMBER_ADDED, &now[i], NULL);
        }
    return count;
}

char *reign__group_path(const char *name, const char *suffix)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s%s", REIGN__GROUP_DIR, name, suffix ? suffix : "");
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

const char *reign_group_loss_name(reign_group_loss r)
{
    switch (r) {
    case REIGN_GROUP_SESSION_LOST:
        return "session_lost";
    case REIGN_GROUP_NODE_DELETED:
        return "node_deleted";
    }
    return "unknown";
}

const char *reign_group_watch_event_name(reign_group_watch_event_type t)
{
    switch (t) {
    case REIGN_MEMBERS_READY:
        return "ready";
    case REIGN_MEMBER_ADDED:
        return "added";
    case REIGN_MEMBER_REMOVED:
        return "removed";
    case REIGN_MEMBER_CHANGED:
        return "changed";
    case REIGN_MEMBERS_GROUP_DELETED:
        return "group_deleted";
    case REIGN_MEMBERS_ERROR:
        return "error";
    }
    return "unknown";
}
