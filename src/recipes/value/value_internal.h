/*
 * value_internal.h - the pure parts of the value recipe (value.c) that the
 * group recipe shares and the unit tests reach: name and key checks and the
 * node a key lives in.
 *
 *   /reign/value/SEG[/SEG...]   persistent; a record (the value) or empty
 *                               (only a parent of other values)
 */
#ifndef REIGN_VALUE_INTERNAL_H
#define REIGN_VALUE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <reign/value.h>

#include "client_internal.h"

#define REIGN__VALUE_DIR    REIGN__ZK_ROOT "/value"
#define REIGN__SEGMENT_MAX  200
#define REIGN__KEY_SEGMENTS 16

/* One path segment: 1..REIGN__SEGMENT_MAX of [A-Za-z0-9._:-], not "." or "..". */
bool reign__segment_ok(const char *s, size_t n);

/* "/reign/value/" + key, or NULL on OOM. */
char *reign__value_path(const char *key);

#endif
