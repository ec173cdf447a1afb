/*
 * fuzz_record.c - libFuzzer target for the node data format
 * (src/core/record.c).  Each input is used twice:
 *
 *   1. as node data: a parse either fails with REIGN_EFOREIGN or gives
 *      valid fields and a payload inside the input; rebuilt and parsed
 *      again it gives the same fields and payload, and building that again
 *      gives the same bytes (the builder's output is a fixed point);
 *   2. as arguments to the builder: the input split at NUL bytes into keys,
 *      values and a payload.  The builder refuses exactly the calls with a
 *      bad key, a repeated key or too many fields, and what it builds
 *      parses back to what it was given.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz_common.h"
#include "record.h"

static bool valid_key(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > 32)
        return false;
    for (; *k; k++)
        if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_'))
            return false;
    return true;
}

static void check_fields(const reign__record *r)
{
    CHECK(r->n_fields <= REIGN__RECORD_MAX_FIELDS);
    for (size_t i = 0; i < r->n_fields; i++) {
        CHECK(valid_key(r->fields[i].key));
        CHECK(r->fields[i].value);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(r->fields[i].key, r->fields[j].key) != 0);
        CHECK(reign__record_get(r, r->fields[i].key) == r->fields[i].value);
        uint64_t v;
        int rc = reign__record_get_u64(r, r->fields[i].key, &v);
        CHECK(rc == 0 || rc == REIGN_EFOREIGN);
    }
}

/* Builds r back into b. */
static int rebuild(const reign__record *r, reign__buf *b)
{
    const char *kv[2 * REIGN__RECORD_MAX_FIELDS];
    for (size_t i = 0; i < r->n_fields; i++) {
        kv[2 * i] = r->fields[i].key;
        kv[2 * i + 1] = r->fields[i].value;
    }
    return reign__record_build(b, kv, 2 * r->n_fields, r->payload, r->payload_len);
}

static void check_same(const reign__record *a, const reign__record *b)
{
    CHECK(a->n_fields == b->n_fields);
    for (size_t i = 0; i < a->n_fields; i++) {
        CHECK(strcmp(a->fields[i].key, b->fields[i].key) == 0);
        CHECK(strcmp(a->fields[i].value, b->fields[i].value) == 0);
    }
    CHECK(a->payload_len == b->payload_len);
    CHECK(a->payload_len == 0 || memcmp(a->payload, b->payload, a->payload_len) == 0);
}

static void as_node_data(const uint8_t *data, size_t size)
{
    reign__record r, r2, r3;
    int rc = reign__record_parse(data, size, &r);
    if (rc != 0) {
        CHECK(rc == REIGN_EFOREIGN);
        CHECK(r.n_fields == 0 && r.payload == NULL);
        return;
    }
    check_fields(&r);
    CHECK((const uint8_t *)r.payload >= data && r.payload_len <= size);
    CHECK((const uint8_t *)r.payload + r.payload_len == data + size);

    reign__buf b1, b2;
    reign__buf_init(&b1);
    reign__buf_init(&b2);
    CHECK(rebuild(&r, &b1) == 0);
    CHECK(b1.len <= size); /* each byte as short as it was, or shorter */
    CHECK(reign__record_parse(b1.data, b1.len, &r2) == 0);
    check_same(&r, &r2);
    CHECK(rebuild(&r2, &b2) == 0);
    CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
    CHECK(reign__record_parse(b2.data, b2.len, &r3) == 0);
    check_same(&r, &r3);
    reign__record_clear(&r3);
    reign__record_clear(&r2);
    reign__record_clear(&r);
    reign__buf_free(&b1);
    reign__buf_free(&b2);
}

static void as_build_args(const uint8_t *data, size_t size)
{
    enum { MAX_KV = 2 * REIGN__RECORD_MAX_FIELDS + 2 };
    char *copy = malloc(size + 1);
    CHECK(copy);
    memcpy(copy, data, size);
    copy[size] = '\0';

    /* Up to MAX_KV NUL-terminated strings, then the rest as the payload;
     * an odd last string is dropped. */
    const char *kv[MAX_KV];
    size_t n = 0, pos = 0;
    while (n < MAX_KV && pos < size) {
        const char *nul = memchr(copy + pos, '\0', size - pos);
        if (!nul)
            break;
        kv[n++] = copy + pos;
        pos = (size_t)(nul - copy) + 1;
    }
    n -= n % 2;
    const char *payload = copy + pos;
    size_t payload_len = size - pos;

    bool want_ok = n / 2 <= REIGN__RECORD_MAX_FIELDS;
    for (size_t i = 0; i < n && want_ok; i += 2) {
        want_ok = valid_key(kv[i]);
        for (size_t j = 0; j < i && want_ok; j += 2)
            want_ok = strcmp(kv[i], kv[j]) != 0;
    }

    reign__buf b;
    reign__buf_init(&b);
    int rc = reign__record_build(&b, kv, n, payload, payload_len);
    CHECK(want_ok ? rc == 0 : rc == REIGN_EINVAL);
    if (rc == 0) {
        reign__record r;
        CHECK(reign__record_parse(b.data, b.len, &r) == 0);
        CHECK(r.n_fields == n / 2);
        for (size_t i = 0; i < n; i += 2) {
            CHECK(strcmp(r.fields[i / 2].key, kv[i]) == 0);
            CHECK(strcmp(r.fields[i / 2].value, kv[i + 1]) == 0);
        }
        CHECK(r.payload_len == payload_len);
        CHECK(payload_len == 0 || memcmp(r.payload, payload, payload_len) == 0);
        reign__record_clear(&r);
    } else {
        CHECK(b.len == 0);
    }
    reign__buf_free(&b);
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_node_data(data, size);
    as_build_args(data, size);
    return 0;
}
