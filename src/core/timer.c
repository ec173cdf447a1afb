/*
 * timer.c - a binary min-heap of timers ordered by due time.  Thousands of
 * elections may each hold a timer, so arming and disarming are O(log n).
 */
#include "core.h"

void reign__timer_init(reign__timer *t, reign__timer_fn *fn, void *arg)
{
    t->due_ns = 0;
    t->index = SIZE_MAX;
    t->fn = fn;
    t->arg = arg;
}

bool reign__timer_armed(const reign__timer *t)
{
    return t->index != SIZE_MAX;
}

static void swap(reign__timers *ts, size_t a, size_t b)
{
    reign__timer *t = ts->heap[a];
    ts->heap[a] = ts->heap[b];
    ts->heap[b] = t;
    ts->heap[a]->index = a;
    ts->heap[b]->index = b;
}

static void sift_up(reign__timers *ts, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (ts->heap[parent]->due_ns <= ts->heap[i]->due_ns)
            break;
        swap(ts, i, parent);
        i = parent;
    }
}

static void sift_down(reign__timers *ts, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < ts->n && ts->heap[l]->due_ns < ts->heap[m]->due_ns)
            m = l;
        if (r < ts->n && ts->heap[r]->due_ns < ts->heap[m]->due_ns)
            m = r;
        if (m == i)
            return;
        swap(ts, i, m);
        i = m;
    }
}

void reign__timer_stop(reign__timers *ts, reign__timer *t)
{
    if (!reign__timer_armed(t))
        return;
    size_t i = t->index;
    ts->n--;
    if (i != ts->n) {
        ts->heap[i] = ts->heap[ts->n];
        ts->heap[i]->index = i;
        sift_up(ts, i);
        sift_down(ts, ts->heap[i]->index);
    }
    t->index = SIZE_MAX;
}

int reign__timer_start(reign__timers *ts, reign__timer *t, int64_t due_ns)
{
    reign__timer_stop(ts, t);
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? ts->cap * 2 : 16;
        reign__timer **h = reign__realloc(ts->heap, cap * sizeof(*h));
        if (!h)
            return REIGN_ENOMEM;
        ts->heap = h;
        ts->cap = cap;
    }
    t->due_ns = due_ns;
    t->index = ts->n;
    ts->heap[ts->n++] = t;
    sift_up(ts, t->index);
    return 0;
}

int64_t reign__timers_next(const reign__timers *ts)
{
    return ts->n ? ts->heap[0]->due_ns : -1;
}

void reign__timers_run(reign__timers *ts, int64_t now_ns)
{
    /* A timer fn may arm or stop timers (itself included); re-read the top each time. */
    while (ts->n && ts->heap[0]->due_ns <= now_ns) {
        reign__timer *t = ts->heap[0];
        reign__timer_stop(ts, t);
        t->fn(t, t->arg);
    }
}

void reign__timers_free(reign__timers *ts)
{
    for (size_t i = 0; i < ts->n; i++)
        ts->heap[i]->index = SIZE_MAX;
    reign__free(ts->heap);
    ts->heap = NULL;
    ts->n = ts->cap = 0;
}
