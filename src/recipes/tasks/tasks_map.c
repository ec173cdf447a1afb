/*
 * tasks_map.c - a small open-addressing map from task names, for the master and the worker
 * (tasks_internal.h).
 */
#include <stdlib.h>
#include <string.h>

#include "tasks_internal.h"

char reign__tmap_tomb[1];

static size_t hash_of(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

reign__tmap_entry *reign__tmap_get(const reign__tmap *m, const char *key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = hash_of(key) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        reign__tmap_entry *e = &m->v[i];
        if (!e->key)
            return NULL;
        if (e->key != reign__tmap_tomb && !strcmp(e->key, key))
            return e;
    }
}

static int tmap_grow(reign__tmap *m)
{
    size_t cap = m->cap ? m->cap : 16;
    while ((m->n + 1) * 2 > cap)
        cap *= 2;
    reign__tmap_entry *v = reign__calloc(cap, sizeof(*v));
    if (!v)
        return REIGN_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!reign__tmap_live(m, i))
            continue;
        size_t j = hash_of(m->v[i].key) & (cap - 1);
        while (v[j].key)
            j = (j + 1) & (cap - 1);
        v[j] = m->v[i];
    }
    reign__free(m->v);
    m->v = v;
    m->cap = cap;
    m->used = m->n;
    return 0;
}

reign__tmap_entry *reign__tmap_put(reign__tmap *m, const char *key)
{
    reign__tmap_entry *e = reign__tmap_get(m, key);
    if (e)
        return e;
    if ((m->used + 1) * 4 > m->cap * 3 && tmap_grow(m) < 0)
        return NULL;
    size_t i = hash_of(key) & (m->cap - 1);
    while (reign__tmap_live(m, i))
        i = (i + 1) & (m->cap - 1);
    e = &m->v[i];
    char *k = reign__strdup(key);
    if (!k)
        return NULL;
    if (!e->key)
        m->used++;
    memset(e, 0, sizeof(*e));
    e->key = k;
    m->n++;
    return e;
}

void reign__tmap_del(reign__tmap *m, reign__tmap_entry *e)
{
    reign__free(e->key);
    reign__free(e->worker);
    memset(e, 0, sizeof(*e));
    e->key = reign__tmap_tomb;
    m->n--;
}

void reign__tmap_clear(reign__tmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (reign__tmap_live(m, i)) {
            reign__free(m->v[i].key);
            reign__free(m->v[i].worker);
        }
    reign__free(m->v);
    memset(m, 0, sizeof(*m));
}
