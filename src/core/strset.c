/*
 * strset.c - sets (core.h): of strings and of 64-bit keys; open addressing, linear probing.
 */
#include <string.h>

#include "core.h"

uint64_t reign__hash_str(const char *s)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    return h;
}

/* The slot of s: where it is, or the empty one where it would go. */
static size_t slot_of(const reign__strset *set, const char *s, uint64_t h)
{
    size_t mask = set->cap - 1, i = (size_t)h & mask;
    while (set->slots[i] && strcmp(set->v[set->slots[i] - 1], s))
        i = (i + 1) & mask;
    return i;
}

/* Twice the slots (or 16), every entry placed again. */
static int grow(reign__strset *set)
{
    size_t cap = set->cap ? set->cap * 2 : 16;
    size_t *slots = reign__calloc(cap, sizeof(*slots));
    char **v = reign__realloc(set->v, cap / 2 * sizeof(*v));
    if (!slots || !v) {
        reign__free(slots);
        if (v)
            set->v = v;
        return REIGN_ENOMEM;
    }
    reign__free(set->slots);
    set->slots = slots;
    set->v = v;
    set->cap = cap;
    for (size_t k = 0; k < set->n; k++)
        set->slots[slot_of(set, set->v[k], reign__hash_str(set->v[k]))] = k + 1;
    return 0;
}

int reign__strset_add(reign__strset *set, const char *s)
{
    if (set->cap && reign__strset_has(set, s))
        return 0;
    /* At most half full: probes stay short. */
    if ((set->n + 1) * 2 > set->cap && grow(set) < 0)
        return REIGN_ENOMEM;
    char *copy = reign__strdup(s);
    if (!copy)
        return REIGN_ENOMEM;
    set->v[set->n++] = copy;
    set->slots[slot_of(set, s, reign__hash_str(s))] = set->n;
    return 1;
}

bool reign__strset_has(const reign__strset *set, const char *s)
{
    return set->cap && set->slots[slot_of(set, s, reign__hash_str(s))] != 0;
}

void reign__strset_free(reign__strset *set)
{
    for (size_t k = 0; k < set->n; k++)
        reign__free(set->v[k]);
    reign__free(set->v);
    reign__free(set->slots);
    memset(set, 0, sizeof(*set));
}

/* ---- 64-bit keys ------------------------------------------------------------------------------
 */

static size_t u64_slot(const reign__u64set *set, uint64_t stored)
{
    size_t mask = set->cap - 1;
    uint64_t h = stored * UINT64_C(0x9e3779b97f4a7c15);
    size_t i = (size_t)(h >> 32) & mask;
    while (set->slots[i] && set->slots[i] != stored)
        i = (i + 1) & mask;
    return i;
}

int reign__u64set_add(reign__u64set *set, uint64_t k)
{
    if (k == UINT64_MAX) {
        int added = !set->has_max;
        set->has_max = true;
        set->n += (size_t)added;
        return added;
    }
    if (reign__u64set_has(set, k))
        return 0;
    if ((set->n + 1) * 2 > set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 16;
        uint64_t *old = set->slots, *slots = reign__calloc(cap, sizeof(*slots));
        if (!slots)
            return REIGN_ENOMEM;
        size_t old_cap = set->cap;
        set->slots = slots;
        set->cap = cap;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i])
                set->slots[u64_slot(set, old[i])] = old[i];
        reign__free(old);
    }
    set->slots[u64_slot(set, k + 1)] = k + 1;
    set->n++;
    return 1;
}

bool reign__u64set_has(const reign__u64set *set, uint64_t k)
{
    if (k == UINT64_MAX)
        return set->has_max;
    return set->cap && set->slots[u64_slot(set, k + 1)] != 0;
}

void reign__u64set_free(reign__u64set *set)
{
    reign__free(set->slots);
    memset(set, 0, sizeof(*set));
}
