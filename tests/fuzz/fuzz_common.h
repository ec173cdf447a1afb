/*
 * fuzz_common.h - what the fuzz targets share: the libFuzzer entry point's
 * prototype and CHECK(), which aborts (a crash to libFuzzer and to the
 * replay driver alike) when an invariant does not hold.
 */
#ifndef REIGN_FUZZ_COMMON_H
#define REIGN_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
