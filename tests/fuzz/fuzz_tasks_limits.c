/*
 * fuzz_tasks_limits.c - libFuzzer target for a worker's limits, the group payload
 * "concurrency=N\nprefetch=M" that the task queue's master reads from every member of the
 * workers' group, foreign ones included (reign__tasks_limits_parse(),
 * src/recipes/tasks/tasks_zk.c).
 *
 * The parser never fails, so the checks are on what it gives:
 *   - always 1 <= concurrency <= 100000 and concurrency <= prefetch <= 400000;
 *   - the same as a plain reading of the lines (below), which is the documented contract;
 *   - nothing past len is read: the input followed by other bytes, or cut into a larger
 *     buffer, parses the same; no data (NULL) is 1 and 2 whatever the length;
 *   - lines of unknown keys added before or after change nothing;
 *   - limits built from the input's first bytes (in the ranges a worker may register) parse
 *     back to themselves.
 */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "recipes/tasks/tasks_internal.h"

typedef struct limits {
    size_t c, p;
} limits;

static limits parse(const void *data, size_t len)
{
    limits l = {0, 0};
    reign__tasks_limits_parse(data, len, &l.c, &l.p);
    CHECK(l.c >= 1 && l.c <= 100000);
    CHECK(l.p >= l.c && l.p <= 400000);
    return l;
}

static bool same(limits a, limits b)
{
    return a.c == b.c && a.p == b.p;
}

/*
 * The value of the first line "key=<digits>" in data[0..len), or -1 if no line starts with
 * "key=" or the first that does is not decimal digits.  A value past every bound is any
 * such value (LONG_MAX here), however many digits it has.
 */
static long reference_number(const uint8_t *data, size_t len, const char *key)
{
    size_t k = strlen(key), start = 0;
    while (start <= len) {
        size_t end = start;
        while (end < len && data[end] != '\n')
            end++;
        if (end - start > k && !memcmp(data + start, key, k) && data[start + k] == '=') {
            if (end - start == k + 1)
                return -1;
            long v = 0;
            for (size_t i = start + k + 1; i < end; i++) {
                if (data[i] < '0' || data[i] > '9')
                    return -1;
                v = v > 1000000 ? LONG_MAX : v * 10 + (data[i] - '0');
            }
            return v;
        }
        start = end + 1;
    }
    return -1;
}

/* What docs/tasks.md and tasks_internal.h promise for data[0..len). */
static limits reference(const uint8_t *data, size_t len)
{
    long c = reference_number(data, len, "concurrency");
    long p = reference_number(data, len, "prefetch");
    if (c < 1 || c > 100000)
        c = 1; /* missing or malformed */
    if (p < 0)
        p = 2 * c; /* missing or malformed: what earlier workers were given */
    else if (p < c || p > 400000)
        p = c; /* out of range, however long */
    return (limits){(size_t)c, (size_t)p};
}

static uint32_t take_u32(const uint8_t *data, size_t size, size_t at)
{
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++)
        v = v << 8 | (at + i < size ? data[at + i] : 0);
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0; /* a worker's payload is tens of bytes; longer ones test nothing new */
    limits got = parse(data, size);
    limits want = reference(data, size);
    if (!same(got, want)) {
        fprintf(stderr, "parsed %zu %zu, expected %zu %zu\n", got.c, got.p, want.c, want.p);
        CHECK(same(got, want));
    }
    CHECK(same(parse(NULL, size), (limits){1, 2}));

    /* Other bytes after the input (a digit and a key, which would change it if read), then
     * lines of unknown keys around it. */
    static const char tail[] = "7\nprefetch=9", before[] = "zz=1\n", after[] = "\nzz=2";
    uint8_t *buf = malloc(size + sizeof(tail) + sizeof(before) + sizeof(after));
    CHECK(buf);
    memcpy(buf, data, size);
    memcpy(buf + size, tail, sizeof(tail) - 1);
    CHECK(same(parse(buf, size), got));
    memcpy(buf, before, sizeof(before) - 1);
    memcpy(buf + sizeof(before) - 1, data, size);
    memcpy(buf + sizeof(before) - 1 + size, after, sizeof(after) - 1);
    CHECK(same(parse(buf, sizeof(before) - 1 + size + sizeof(after) - 1), got));
    free(buf);

    /* A round trip of limits a worker may register. */
    int c = (int)(take_u32(data, size, 0) % 100000) + 1;
    int p = c + (int)(take_u32(data, size, 4) % (uint32_t)(400000 - c + 1));
    char payload[REIGN__TASKS_LIMITS_MAX];
    size_t n = reign__tasks_limits_build(payload, c, p);
    CHECK(n > 0 && n < sizeof(payload));
    CHECK(same(parse(payload, n), (limits){(size_t)c, (size_t)p}));
    return 0;
}
