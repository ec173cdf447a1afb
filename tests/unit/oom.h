/*
 * oom.h - the unit tests' failing allocator, for their out-of-memory loops: installed with
 * reign_set_allocator(oom_malloc, oom_realloc, oom_free), it fails every call from the
 * g_fail_at-th on (g_calls counts them; -1: never fails) and counts the blocks still live
 * (g_live), so that a loop can prove each failure path frees what it took.  For one-file
 * test programs: everything here is static.
 */
#ifndef REIGN_TEST_UNIT_OOM_H
#define REIGN_TEST_UNIT_OOM_H

#include <stdlib.h>

static long g_fail_at = -1;
static long g_calls;
static long g_live;

static void *oom_malloc(size_t n)
{
    if (g_fail_at >= 0 && g_calls++ >= g_fail_at)
        return NULL;
    void *p = malloc(n);
    if (p)
        g_live++;
    return p;
}

static void *oom_realloc(void *p, size_t n)
{
    if (g_fail_at >= 0 && g_calls++ >= g_fail_at)
        return NULL;
    void *q = realloc(p, n);
    if (q && !p)
        g_live++;
    return q;
}

static void oom_free(void *p)
{
    if (p)
        g_live--;
    free(p);
}

#endif
