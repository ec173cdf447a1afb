/*
 * value_internal.h - the value recipe's limits (value.c); its names, paths and the segment
 * check the other recipes share are in src/core/layout.h.
 *
 *   /reign/value/SEG[/SEG...]   persistent; a record (the value) or empty
 *                               (only a parent of other values)
 */
#ifndef REIGN_VALUE_INTERNAL_H
#define REIGN_VALUE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include <reign/value.h>

#include "client/client_internal.h"

#define REIGN__KEY_SEGMENTS 16

#endif
