/*
 * alloc.c - the one allocator of libreign, replaceable by the user so that
 * out-of-memory paths can be tested (every allocation goes through here).
 */
#include <string.h>
#include <stdlib.h>

#include "core.h"

static void *(*g_malloc)(size_t) = malloc;
static void *(*g_realloc)(void *, size_t) = realloc;
static void (*g_free)(void *) = free;

int reign_set_allocator(void *(*malloc_fn)(size_t), void *(*realloc_fn)(void *, size_t),
                        void (*free_fn)(void *))
{
    if (!malloc_fn && !realloc_fn && !free_fn) {
        g_malloc = malloc;
        g_realloc = realloc;
        g_free = free;
        return 0;
    }
    if (!malloc_fn || !realloc_fn || !free_fn)
        return REIGN_EINVAL;
    g_malloc = malloc_fn;
    g_realloc = realloc_fn;
    g_free = free_fn;
    return 0;
}

void *reign__malloc(size_t n)
{
    return g_malloc(n ? n : 1);
}

void *reign__calloc(size_t count, size_t n)
{
    if (n && count > SIZE_MAX / n)
        return NULL;
    void *p = reign__malloc(count * n);
    if (p)
        memset(p, 0, count * n);
    return p;
}

void *reign__realloc(void *p, size_t n)
{
    return g_realloc(p, n ? n : 1);
}

void reign__free(void *p)
{
    if (p)
        g_free(p);
}

void *reign__memdup(const void *p, size_t n)
{
    char *q = reign__malloc(n + 1);
    if (!q)
        return NULL;
    if (n)
        memcpy(q, p, n);
    q[n] = '\0'; /* so that byte strings can be used as C strings too */
    return q;
}

char *reign__strndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    return reign__memdup(s, len);
}

char *reign__strdup(const char *s)
{
    return s ? reign__memdup(s, strlen(s)) : NULL;
}

struct reign__held {
    reign__held *prev, *next;
    void (*dtor)(void *p);
    uintptr_t tag;
};

void *reign__held_new(reign__held **list, size_t n, void (*dtor)(void *p), uintptr_t tag)
{
    reign__held *h = reign__calloc(1, sizeof(*h) + n);
    if (!h)
        return NULL;
    h->dtor = dtor;
    h->tag = tag;
    h->next = *list;
    if (h->next)
        h->next->prev = h;
    *list = h;
    return h + 1;
}

uintptr_t reign__held_tag(const void *p)
{
    return ((const reign__held *)p - 1)->tag;
}

void reign__held_free(reign__held **list, void *p)
{
    if (!p)
        return;
    reign__held *h = (reign__held *)p - 1;
    if (h->prev)
        h->prev->next = h->next;
    else
        *list = h->next;
    if (h->next)
        h->next->prev = h->prev;
    if (h->dtor)
        h->dtor(p);
    reign__free(h);
}

void reign__held_free_all(reign__held **list)
{
    while (*list)
        reign__held_free(list, *list + 1);
}
