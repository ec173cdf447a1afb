/*
 * stmt_cache.c - the statement texts a connection sends again (stmt_cache.h).
 */
#include <string.h>

#include "core.h"
#include "stmt_cache.h"

/* FNV-1a. */
static uint64_t hash_bytes(const void *data, size_t n, uint64_t h)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

reign__stmt *reign__stmt_find(reign__stmt_cache *c, const char *text, const void *extra,
                              size_t extra_len)
{
    size_t tlen = strlen(text) + 1, len = tlen + extra_len;
    uint64_t h = hash_bytes(extra, extra_len, hash_bytes(text, tlen, 14695981039346656037ULL));
    for (size_t i = 0; i < c->n; i++) {
        reign__stmt *e = &c->v[i];
        if (e->hash == h && e->key_len == len && !memcmp(e->key, text, tlen) &&
            (!extra_len || !memcmp(e->key + tlen, extra, extra_len)))
            return e;
    }
    if (c->n == REIGN__STMT_MAX || c->bytes + len > REIGN__STMT_BYTES)
        return NULL;
    bool again = false;
    for (size_t i = 0; i < REIGN__STMT_SEEN && !again; i++)
        again = c->seen[i] == h && h;
    if (!again) {
        c->seen[c->n_seen++ % REIGN__STMT_SEEN] = h;
        return NULL;
    }
    char *key = reign__malloc(len);
    if (!key)
        return NULL;
    memcpy(key, text, tlen);
    if (extra_len)
        memcpy(key + tlen, extra, extra_len);
    reign__stmt *e = &c->v[c->n++];
    *e = (reign__stmt){.hash = h, .key = key, .key_len = len};
    c->bytes += len;
    return e;
}

void reign__stmt_unready(reign__stmt_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        c->v[i].ready = false;
}

void reign__stmt_cache_free(reign__stmt_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        reign__free(c->v[i].key);
    memset(c, 0, sizeof *c);
}
