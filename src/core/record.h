/*
 * record.h - the format of the data reign keeps in its nodes:
 *
 *   "reign 1\n" ( key "=" value "\n" )* "\n" payload
 *
 * Keys are [a-z0-9_]{1,32}; values are percent-encoded so they hold no
 * '\n', '%' or control characters; the payload after the blank line is
 * opaque bytes.  Text, so `zkCli get` shows it to a person; versioned, so
 * it can grow.  Anything else in a node is foreign data (REIGN_EFOREIGN),
 * which callers report and never trust.  Private to the library.
 */
#ifndef REIGN_RECORD_H
#define REIGN_RECORD_H

#include <stddef.h>

#include "core.h"

#define REIGN__RECORD_MAX_FIELDS 32

typedef struct reign__record_field {
    char key[33];
    char *value; /* decoded, NUL-terminated */
} reign__record_field;

typedef struct reign__record {
    reign__record_field fields[REIGN__RECORD_MAX_FIELDS];
    size_t n_fields;
    const void *payload; /* points into the parsed buffer */
    size_t payload_len;
} reign__record;

/*
 * Parses buf[0..len).  0 on success; REIGN_EFOREIGN if it is not a reign
 * record (bad magic, malformed line, bad escape, duplicate key, too many
 * fields); REIGN_ENOMEM.  On failure *r holds nothing to free.
 */
int reign__record_parse(const void *buf, size_t len, reign__record *r);
void reign__record_clear(reign__record *r);

/* The value of `key`, or NULL. */
const char *reign__record_get(const reign__record *r, const char *key);
/* Reads `key` as an unsigned decimal; 0 if read, REIGN_ENOENT if absent,
 * REIGN_EFOREIGN if malformed. */
int reign__record_get_u64(const reign__record *r, const char *key, uint64_t *out);

/*
 * Appends a record to `out`: the magic line, then pairs kv[0]=kv[1],
 * kv[2]=kv[3], ... (n_kv strings, even), then the payload.
 * REIGN_EINVAL for a bad key, REIGN_ENOMEM.
 */
int reign__record_build(reign__buf *out, const char *const *kv, size_t n_kv, const void *payload,
                        size_t payload_len);

/* Appends `r` again with `key` set to `value` (replaced, or added last):
 * how one process adds a request to a record another one wrote. */
int reign__record_build_with(reign__buf *out, const reign__record *r, const char *key,
                             const char *value);
/* The same with several: set[0]=set[1], set[2]=set[3], ... (n_set strings). */
int reign__record_build_set(reign__buf *out, const reign__record *r, const char *const *set,
                            size_t n_set);

#endif
