/*
 * group.c - group membership (<reign/group.h>): the part every store shares, pure: names,
 * ordering of members, the newest registration per id, the difference between two views, the
 * event names; and the head every member starts with.  The public functions are group_api.c;
 * a member's registration is group_member_zk.c or group_member_sql.c, a watch of the members
 * group_watch_zk.c or group_watch_sql.c (group_internal.h has the ZooKeeper layout,
 * src/sql/members.h the SQL one).
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

/* ---- the head of a member (group_internal.h) ---------------------------------------------- */

int reign__group_head_init(reign_group *g, const reign__group_ops *ops, const char *name,
                           const reign_group_options *o)
{
    g->ops = ops;
    g->retry_delay_ms = o->retry_delay_ms ? o->retry_delay_ms : 1000;
    g->cb = o->cb;
    g->userdata = o->userdata;
    int rc = (g->name = reign__strdup(name)) ? 0 : REIGN_ENOMEM;
    if (rc == 0)
        rc =
            o->id ? ((g->id = reign__strdup(o->id)) ? 0 : REIGN_ENOMEM) : reign__default_id(&g->id);
    if (rc == 0)
        rc = reign__group_head_data(g, o->data, o->data_len);
    if (rc < 0)
        reign__group_head_clear(g);
    return rc;
}

void reign__group_head_clear(reign_group *g)
{
    reign__free(g->name);
    reign__free(g->id);
    reign__free(g->data);
    g->name = g->id = NULL;
    g->data = NULL;
}

int reign__group_head_data(reign_group *g, const void *data, size_t len)
{
    void *copy = NULL;
    if (len && !(copy = reign__memdup(data, len)))
        return REIGN_ENOMEM;
    reign__free(g->data);
    g->data = copy;
    g->data_len = len;
    return 0;
}

void reign__group_emit(reign_group *g, reign_group_event *ev)
{
    if (!reign__life_live(&g->life) || !g->cb)
        return;
    ev->at_ns = reign__now_ns();
    reign__life_enter(&g->life);
    g->cb(g, ev, g->userdata);
    (void)reign__life_leave(&g->life);
}

/* ---- reporting a watch's views ------------------------------------------------------------ */

void reign__group_watch_emit(reign_group_watch *w, reign__life *life, reign_group_watch_cb *cb,
                             reign_group_watch_event *ev)
{
    if (!reign__life_live(life) || !cb)
        return;
    ev->at_ns = reign__now_ns();
    reign_trace("group.event", "%s %d", w->name, (int)ev->type);
    reign__life_enter(life);
    cb(w, ev, w->userdata);
    (void)reign__life_leave(life);
}

typedef struct reporting {
    reign_group_watch *w;
    reign__life *life;
    reign_group_watch_cb *cb;
} reporting;

static void report_change(void *arg, reign__member_change kind, const reign_member *now,
                          const reign_member *before)
{
    reporting *r = arg;
    reign_group_watch_event ev = {.member = now, .old = before};
    ev.type = kind == REIGN__MEMBER_REMOVED   ? REIGN_MEMBER_REMOVED
              : kind == REIGN__MEMBER_CHANGED ? REIGN_MEMBER_CHANGED
                                              : REIGN_MEMBER_ADDED;
    reign__group_watch_emit(r->w, r->life, r->cb, &ev);
}

void reign__group_watch_report(reign_group_watch *w, reign__life *life, reign_group_watch_cb *cb,
                               const reign_member *old_view, size_t n_old, bool was_known,
                               bool known, bool *ready_sent)
{
    reporting r = {w, life, cb};
    reign__members_diff(old_view, n_old, w->view, w->n_view, report_change, &r,
                        &life->free_requested);
    if (was_known && !known) {
        reign_group_watch_event ev = {.type = REIGN_MEMBERS_GROUP_DELETED};
        reign__group_watch_emit(w, life, cb, &ev);
    }
    if (!*ready_sent) {
        *ready_sent = true;
        reign_group_watch_event ev = {.type = REIGN_MEMBERS_READY};
        reign__group_watch_emit(w, life, cb, &ev);
    }
}

/* ---- a dead host's session (pure) ----------------------------------------------------------- */

int reign__seen_sessions_update(reign__seen_session **seen, size_t *n_seen,
                                const reign__session_read *read, size_t n_read, int64_t read_ns)
{
    reign__seen_session *next = reign__calloc(n_read ? n_read : 1, sizeof(*next));
    if (!next)
        return REIGN_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < n_read; i++) {
        bool dup = false;
        for (size_t j = 0; j < n && !dup; j++)
            dup = !strcmp(next[j].guid, read[i].guid);
        if (dup)
            continue;
        reign__seen_session *s = &next[n++];
        snprintf(s->guid, sizeof s->guid, "%s", read[i].guid);
        s->beat = read[i].beat;
        s->lease_ms = read[i].lease_ms;
        s->since_ns = read_ns;
        /* Counted from the first read of this beat: the holder sent it before any read saw
         * it, so its own bound (send time + lease - margin) ends before our count does. */
        for (size_t j = 0; j < *n_seen; j++)
            if (!strcmp((*seen)[j].guid, s->guid) && (*seen)[j].beat == s->beat)
                s->since_ns = (*seen)[j].since_ns;
    }
    reign__free(*seen);
    *seen = next;
    *n_seen = n;
    return 0;
}

bool reign__seen_session_due(const reign__seen_session *s, int64_t now)
{
    return s->lease_ms > 0 && now - s->since_ns >= s->lease_ms * REIGN__NS_PER_MS;
}

int64_t reign__seen_sessions_next(const reign__seen_session *seen, size_t n)
{
    int64_t at = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
        int64_t t = seen[i].since_ns + seen[i].lease_ms * REIGN__NS_PER_MS;
        at = t < at ? t : at;
    }
    return at;
}
