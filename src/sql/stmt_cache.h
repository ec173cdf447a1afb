/*
 * stmt_cache.h - the statement texts a connection sends again, so that its driver can have
 * the server prepare each once (postgres.c).
 *
 * A text is entered on its second use: one seen once (a schema check, a LISTEN) is only
 * remembered by its hash among the last REIGN__STMT_SEEN, so one-off texts never take a place.
 * Bounded, since each prepared statement holds memory in the server: at most
 * REIGN__STMT_MAX texts and REIGN__STMT_BYTES of them; later texts simply go unprepared.
 */
#ifndef REIGN_SQL_STMT_CACHE_H
#define REIGN_SQL_STMT_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REIGN__STMT_MAX   64
#define REIGN__STMT_BYTES (256 << 10)
#define REIGN__STMT_SEEN  64

typedef struct reign__stmt {
    uint64_t hash;
    char *key; /* the text, a NUL, the caller's extra bytes (a driver's parameter types) */
    size_t key_len;
    bool ready; /* prepared on the server (the driver's to set and clear) */
} reign__stmt;

typedef struct reign__stmt_cache {
    reign__stmt v[REIGN__STMT_MAX];
    size_t n, bytes;
    uint64_t seen[REIGN__STMT_SEEN]; /* hashes of texts used once, a ring */
    size_t n_seen;
} reign__stmt_cache;

/* The entry of `text` with `extra` (extra_len bytes, may be 0): found, or made (not ready) on
 * its second use.  NULL on its first use, when the cache is full or memory is short.  Its
 * index, v - c->v, names it for good. */
reign__stmt *reign__stmt_find(reign__stmt_cache *c, const char *text, const void *extra,
                              size_t extra_len);
/* Marks every entry not ready (the server forgot them). */
void reign__stmt_unready(reign__stmt_cache *c);
void reign__stmt_cache_free(reign__stmt_cache *c);

#endif
