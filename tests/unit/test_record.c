/*
 * test_record.c - unit tests of the node data format (src/core/record.c):
 * the exact bytes the builder writes, what the parser accepts, every kind of
 * foreign data it refuses, binary payloads, the limits, build -> parse round
 * trips over every byte value, and an out-of-memory loop.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core.h"
#include "record.h"
#include "oom.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static void parse_foreign_n(const void *buf, size_t len)
{
    reign__record r;
    memset(&r, 0xab, sizeof(r)); /* parse must leave it empty */
    int rc = reign__record_parse(buf, len, &r);
    if (rc != REIGN_EFOREIGN)
        fail_msg("record '%.*s' (%zu bytes): want REIGN_EFOREIGN, got %d", (int)len,
                 buf ? (const char *)buf : "", len, rc);
    assert_int_equal(r.n_fields, 0);
    assert_null(r.payload);
    assert_int_equal(r.payload_len, 0);
}

static void parse_foreign(const char *s)
{
    parse_foreign_n(s, strlen(s));
}

/* ---- build -------------------------------------------------------------- */

static void test_build_exact(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    const char *kv[] = {"owner", "host-a", "token", "42"};
    assert_int_equal(reign__record_build(&b, kv, 4, "payload", 7), 0);
    assert_int_equal(b.len, strlen("reign 1\nowner=host-a\ntoken=42\n\npayload"));
    assert_memory_equal(b.data, "reign 1\nowner=host-a\ntoken=42\n\npayload", b.len);
    reign__buf_free(&b);

    /* Nothing at all: the magic line and the blank line. */
    assert_int_equal(reign__record_build(&b, NULL, 0, NULL, 0), 0);
    assert_string_equal(b.data, "reign 1\n\n");
    reign__buf_free(&b);
}

static void test_build_with(void **state)
{
    const char *src = "reign 1\nid=a\nguid=01\n\npay\nload";
    reign__record r;
    assert_int_equal(reign__record_parse(src, strlen(src), &r), 0);
    reign__buf b;
    reign__buf_init(&b);
    /* Added last, payload kept. */
    assert_int_equal(reign__record_build_with(&b, &r, "handoff", "n_x"), 0);
    assert_string_equal(b.data, "reign 1\nid=a\nguid=01\nhandoff=n_x\n\npay\nload");
    b.len = 0;
    /* Replaced in place. */
    assert_int_equal(reign__record_build_with(&b, &r, "id", "b c"), 0);
    assert_string_equal(b.data, "reign 1\nid=b c\nguid=01\n\npay\nload");
    b.len = 0;
    assert_int_equal(reign__record_build_with(&b, &r, "Bad", "x"), REIGN_EINVAL);
    reign__record_clear(&r);
    reign__buf_free(&b);
}

static void test_build_escapes(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    const char *kv[] = {"v", "a=b%c\nd\re\x01\x1f\x7f end \xc3\xa9~", "empty", ""};
    assert_int_equal(reign__record_build(&b, kv, 4, NULL, 0), 0);
    assert_string_equal(b.data, "reign 1\nv=a%3Db%25c%0Ad%0De%01%1F%7F end \xc3\xa9~\nempty=\n\n");
    reign__buf_free(&b);
}

static void test_build_appends(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "xyz");
    const char *kv[] = {"k", "v"};
    assert_int_equal(reign__record_build(&b, kv, 2, "\0", 1), 0);
    assert_int_equal(b.len, 3 + strlen("reign 1\nk=v\n\n") + 1);
    assert_memory_equal(b.data, "xyzreign 1\nk=v\n\n\0", b.len);
    reign__buf_free(&b);
}

static void test_build_bad(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "keep");
    const char *odd[] = {"k", "v", "x"};
    assert_int_equal(reign__record_build(&b, odd, 3, NULL, 0), REIGN_EINVAL);
    const char *null_key[] = {NULL, "v"};
    assert_int_equal(reign__record_build(&b, null_key, 2, NULL, 0), REIGN_EINVAL);
    const char *null_value[] = {"k", NULL};
    assert_int_equal(reign__record_build(&b, null_value, 2, NULL, 0), REIGN_EINVAL);
    assert_int_equal(reign__record_build(&b, NULL, 2, NULL, 0), REIGN_EINVAL);
    assert_int_equal(reign__record_build(&b, NULL, 0, NULL, 3), REIGN_EINVAL);
    assert_int_equal(reign__record_build(NULL, NULL, 0, NULL, 0), REIGN_EINVAL);

    static const char *const bad_keys[] = {
        "", "K", "a-b", "a=b", "a b", "a\n", "\xc3\xa9", "abcdefghijklmnopqrstuvwxyz0123456",
    };
    for (size_t i = 0; i < ARRAY_LEN(bad_keys); i++) {
        const char *kv[] = {"ok", "1", bad_keys[i], "v"};
        if (reign__record_build(&b, kv, 4, NULL, 0) != REIGN_EINVAL)
            fail_msg("key '%s' accepted", bad_keys[i]);
    }
    const char *dup[] = {"a", "1", "b", "2", "a", "3"};
    assert_int_equal(reign__record_build(&b, dup, 6, NULL, 0), REIGN_EINVAL);

    /* 33 fields. */
    char keys[REIGN__RECORD_MAX_FIELDS + 1][8];
    const char *many[2 * (REIGN__RECORD_MAX_FIELDS + 1)];
    for (size_t i = 0; i <= REIGN__RECORD_MAX_FIELDS; i++) {
        snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
        many[2 * i] = keys[i];
        many[2 * i + 1] = "v";
    }
    assert_int_equal(reign__record_build(&b, many, ARRAY_LEN(many), NULL, 0), REIGN_EINVAL);

    /* A refused call appends nothing. */
    assert_string_equal(b.data, "keep");
    assert_int_equal(b.len, 4);

    /* 32 fields and a 32-character key are fine. */
    assert_int_equal(reign__record_build(&b, many, ARRAY_LEN(many) - 2, NULL, 0), 0);
    const char *longest[] = {"abcdefghijklmnopqrstuvwxyz012345", "v"};
    assert_int_equal(reign__record_build(&b, longest, 2, NULL, 0), 0);
    reign__buf_free(&b);
}

/* ---- parse -------------------------------------------------------------- */

static void test_parse_good(void **state)
{
    static const char rec[] = "reign 1\nowner=host-a\ntoken=42\nempty=\nenc=%3d%3D%25%0a%0A%41\n"
                              "utf=\xc3\xa9 x~\n\npayload\n\nmore";
    reign__record r;
    assert_int_equal(reign__record_parse(rec, sizeof(rec) - 1, &r), 0);
    assert_int_equal(r.n_fields, 5);
    assert_string_equal(r.fields[0].key, "owner");
    assert_string_equal(r.fields[0].value, "host-a");
    assert_string_equal(reign__record_get(&r, "token"), "42");
    assert_string_equal(reign__record_get(&r, "empty"), "");
    assert_string_equal(reign__record_get(&r, "enc"), "==%\n\nA");
    assert_string_equal(reign__record_get(&r, "utf"), "\xc3\xa9 x~");
    assert_null(reign__record_get(&r, "absent"));
    assert_null(reign__record_get(&r, "tok"));
    assert_int_equal(r.payload_len, strlen("payload\n\nmore"));
    assert_memory_equal(r.payload, "payload\n\nmore", r.payload_len);
    /* The payload points into the buffer. */
    assert_ptr_equal(r.payload, rec + sizeof(rec) - 1 - r.payload_len);
    reign__record_clear(&r);
    assert_int_equal(r.n_fields, 0);
    reign__record_clear(&r); /* twice is fine */
    reign__record_clear(NULL);
}

static void test_parse_empty(void **state)
{
    reign__record r;
    assert_int_equal(reign__record_parse("reign 1\n\n", 9, &r), 0);
    assert_int_equal(r.n_fields, 0);
    assert_int_equal(r.payload_len, 0);
    assert_non_null(r.payload);
    reign__record_clear(&r);

    /* The buffer need not be NUL-terminated: parse only reads len bytes. */
    char *exact = malloc(11);
    assert_non_null(exact);
    memcpy(exact, "reign 1\nk=", 10);
    exact[10] = 'v';
    parse_foreign_n(exact, 11); /* no end of line */
    free(exact);
}

static void test_parse_binary_payload(void **state)
{
    unsigned char buf[9 + 256 + 16];
    memcpy(buf, "reign 1\n\n", 9);
    for (int i = 0; i < 256; i++)
        buf[9 + i] = (unsigned char)i;
    memcpy(buf + 9 + 256, "\n\nreign 1\nk=\n\n\0", 16);
    reign__record r;
    assert_int_equal(reign__record_parse(buf, sizeof(buf), &r), 0);
    assert_int_equal(r.n_fields, 0);
    assert_int_equal(r.payload_len, 256 + 16);
    assert_memory_equal(r.payload, buf + 9, r.payload_len);
    reign__record_clear(&r);
}

static void test_parse_foreign_magic(void **state)
{
    parse_foreign_n(NULL, 0);
    parse_foreign_n(NULL, 10);
    parse_foreign("");
    parse_foreign("reign");
    parse_foreign("reign 1");
    parse_foreign("reign 1\n"); /* no blank line */
    parse_foreign("reign 2\n\n");
    parse_foreign("reign 10\n\n");
    parse_foreign("Reign 1\n\n");
    parse_foreign("reign  1\n\n");
    parse_foreign("reign 1\r\n\r\n");
    parse_foreign(" reign 1\n\n");
    parse_foreign("{\"owner\": \"a\"}");
    parse_foreign("host-a");
    parse_foreign_n("\0reign 1\n\n", 10);
    parse_foreign_n("reign 1\0\n", 9);
}

static void test_parse_foreign_lines(void **state)
{
    parse_foreign("reign 1\nk=v\n");          /* no blank line */
    parse_foreign("reign 1\nk=v");            /* no end of line */
    parse_foreign("reign 1\nk\n\n");          /* no '=' */
    parse_foreign("reign 1\nk\n=v\n\n");      /* '=' only on the next line */
    parse_foreign("reign 1\n=v\n\n");         /* empty key */
    parse_foreign("reign 1\nK=v\n\n");        /* upper case */
    parse_foreign("reign 1\nk-x=v\n\n");      /* bad key character */
    parse_foreign("reign 1\n k=v\n\n");       /* leading space */
    parse_foreign("reign 1\nk =v\n\n");       /* space in key */
    parse_foreign("reign 1\n\xc3\xa9=v\n\n"); /* non-ASCII key */
    parse_foreign("reign 1\nk=v\r\n\r\n");    /* CR */
    parse_foreign("reign 1\nk=a=b\n\n");      /* raw '=' in a value */
    parse_foreign("reign 1\nk=a%\n\n");       /* bad escapes */
    parse_foreign("reign 1\nk=a%4\n\n");
    parse_foreign("reign 1\nk=a%4\n");
    parse_foreign("reign 1\nk=%zz\n\n");
    parse_foreign("reign 1\nk=%4g\n\n");
    parse_foreign("reign 1\nk=%g4\n\n");
    parse_foreign("reign 1\nk=%00\n\n");  /* encoded NUL */
    parse_foreign("reign 1\nk=a\tb\n\n"); /* raw control characters */
    parse_foreign("reign 1\nk=a\x7f\n\n");
    parse_foreign("reign 1\nk=a\x1b\n\n");
    parse_foreign_n("reign 1\nk=a\0b\n\n", 15); /* raw NUL */
    parse_foreign("reign 1\nk=1\nk=2\n\n");     /* duplicate */
    parse_foreign("reign 1\nab=1\nb=2\nab=3\n\n");
    parse_foreign("reign 1\nabcdefghijklmnopqrstuvwxyz0123456=v\n\n"); /* 33-byte key */

    /* A failure after some fields were read frees them (checked by ASan). */
    parse_foreign("reign 1\na=1\nb=2\nc=%zz\n\n");

    reign__record r;
    const char *longest = "reign 1\nabcdefghijklmnopqrstuvwxyz012345=v\n\n";
    assert_int_equal(reign__record_parse(longest, strlen(longest), &r), 0);
    assert_string_equal(r.fields[0].key, "abcdefghijklmnopqrstuvwxyz012345");
    reign__record_clear(&r);
}

static void test_parse_max_fields(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "reign 1\n");
    for (int i = 0; i < REIGN__RECORD_MAX_FIELDS; i++)
        reign__buf_printf(&b, "k%d=%d\n", i, i);
    size_t header_len = b.len;
    reign__buf_puts(&b, "\n");
    reign__record r;
    assert_int_equal(reign__record_parse(b.data, b.len, &r), 0);
    assert_int_equal(r.n_fields, REIGN__RECORD_MAX_FIELDS);
    assert_string_equal(reign__record_get(&r, "k31"), "31");
    reign__record_clear(&r);

    b.len = header_len;
    reign__buf_puts(&b, "k32=32\n\n");
    parse_foreign_n(b.data, b.len);
    reign__buf_free(&b);
}

static void test_get_u64(void **state)
{
    static const char rec[] = "reign 1\na=42\nzero=0\nmax=18446744073709551615\n"
                              "over=18446744073709551616\nhuge=99999999999999999999999\nempty=\n"
                              "neg=-1\nplus=+1\nsp=%201\nhex=0x10\ntail=1a\n\n";
    reign__record r;
    uint64_t v = 7;
    assert_int_equal(reign__record_parse(rec, sizeof(rec) - 1, &r), 0);
    assert_int_equal(reign__record_get_u64(&r, "a", &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(reign__record_get_u64(&r, "zero", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(reign__record_get_u64(&r, "max", &v), 0);
    assert_true(v == UINT64_MAX);
    v = 7;
    assert_int_equal(reign__record_get_u64(&r, "absent", &v), REIGN_ENOENT);
    static const char *const bad[] = {"over", "huge", "empty", "neg", "plus", "sp", "hex", "tail"};
    for (size_t i = 0; i < ARRAY_LEN(bad); i++)
        if (reign__record_get_u64(&r, bad[i], &v) != REIGN_EFOREIGN)
            fail_msg("'%s' read as a number", bad[i]);
    assert_int_equal(v, 7);
    reign__record_clear(&r);
}

/* ---- round trips -------------------------------------------------------- */

/* A small deterministic generator: the same cases on every run. */
static uint32_t g_seed = 12345;
static uint32_t next_rand(void)
{
    g_seed = g_seed * 1103515245u + 12345u;
    return g_seed >> 8;
}

static void round_trip(const char *const *kv, size_t n_kv, const void *payload, size_t len)
{
    reign__buf b;
    reign__record r;
    reign__buf_init(&b);
    assert_int_equal(reign__record_build(&b, kv, n_kv, payload, len), 0);
    assert_int_equal(reign__record_parse(b.data, b.len, &r), 0);
    assert_int_equal(r.n_fields, n_kv / 2);
    for (size_t i = 0; i < n_kv; i += 2) {
        assert_string_equal(r.fields[i / 2].key, kv[i]);
        assert_string_equal(r.fields[i / 2].value, kv[i + 1]);
        assert_string_equal(reign__record_get(&r, kv[i]), kv[i + 1]);
    }
    assert_int_equal(r.payload_len, len);
    if (len)
        assert_memory_equal(r.payload, payload, len);
    /* Every byte of the header is printable: zkCli shows it as text. */
    size_t header = b.len - len;
    for (size_t i = 0; i < header; i++) {
        unsigned char c = (unsigned char)b.data[i];
        assert_true(c == '\n' || (c >= 0x20 && c != 0x7f));
    }
    reign__record_clear(&r);
    reign__buf_free(&b);
}

static void test_round_trip_all_bytes(void **state)
{
    /* Every byte 1..255 in one value, and 0..255 in the payload. */
    char value[256];
    unsigned char payload[256];
    for (int i = 1; i < 256; i++)
        value[i - 1] = (char)i;
    value[255] = '\0';
    for (int i = 0; i < 256; i++)
        payload[i] = (unsigned char)i;
    const char *kv[] = {"all", value, "e", "", "nl", "\n\n\n", "pct", "%%%41", "eq", "==="};
    round_trip(kv, ARRAY_LEN(kv), payload, sizeof(payload));
    round_trip(kv, ARRAY_LEN(kv), NULL, 0);
    round_trip(NULL, 0, "\n", 1);
    /* A payload that looks like a record stays a payload. */
    round_trip(kv, 2, "reign 1\nk=v\n\n", 13);
}

static void test_round_trip_random(void **state)
{
    for (int iter = 0; iter < 2000; iter++) {
        size_t n = next_rand() % (REIGN__RECORD_MAX_FIELDS + 1);
        char keys[REIGN__RECORD_MAX_FIELDS][33];
        char values[REIGN__RECORD_MAX_FIELDS][40];
        const char *kv[2 * REIGN__RECORD_MAX_FIELDS];
        for (size_t i = 0; i < n; i++) {
            /* A unique prefix, then random key characters up to 32. */
            int w = snprintf(keys[i], sizeof(keys[i]), "%zu_", i);
            size_t kl = (size_t)w + next_rand() % (33 - (size_t)w);
            for (size_t j = (size_t)w; j < kl; j++)
                keys[i][j] = "abcdefghijklmnopqrstuvwxyz0123456789_"[next_rand() % 37];
            keys[i][kl] = '\0';
            size_t vl = next_rand() % sizeof(values[i]);
            for (size_t j = 0; j < vl; j++)
                values[i][j] = (char)(1 + next_rand() % 255);
            values[i][vl] = '\0';
            kv[2 * i] = keys[i];
            kv[2 * i + 1] = values[i];
        }
        unsigned char payload[64];
        size_t pl = next_rand() % sizeof(payload);
        for (size_t j = 0; j < pl; j++)
            payload[j] = (unsigned char)next_rand();
        round_trip(kv, 2 * n, payload, pl);
    }
}

/* ---- out of memory ------------------------------------------------------ */

static void test_oom(void **state)
{
    char big[300];
    memset(big, '=', sizeof(big) - 1); /* grows to 897 bytes encoded */
    big[sizeof(big) - 1] = '\0';
    const char *kv[] = {"a", "1", "b", big, "c", "\n", "d", ""};
    assert_int_equal(reign_set_allocator(oom_malloc, oom_realloc, oom_free), 0);

    bool built = false, parsed = false;
    for (long n = 0; n < 1000 && !(built && parsed); n++) {
        reign__buf b;
        reign__buf_init(&b);
        g_fail_at = n;
        g_calls = 0;
        g_live = 0;
        int rc = reign__record_build(&b, kv, ARRAY_LEN(kv), "xy", 2);
        if (rc == 0) {
            built = true;
            reign__record r;
            rc = reign__record_parse(b.data, b.len, &r);
            if (rc == 0) {
                parsed = true;
                assert_string_equal(reign__record_get(&r, "b"), big);
                reign__record_clear(&r);
            } else {
                assert_int_equal(rc, REIGN_ENOMEM);
                assert_int_equal(r.n_fields, 0);
            }
        } else {
            assert_int_equal(rc, REIGN_ENOMEM);
            assert_true(b.oom);
            assert_int_equal(b.len, 0); /* the partial record was taken back */
        }
        reign__buf_free(&b);
        assert_int_equal(g_live, 0);
    }
    g_fail_at = -1;
    assert_true(built && parsed);
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_exact),
        cmocka_unit_test(test_build_escapes),
        cmocka_unit_test(test_build_appends),
        cmocka_unit_test(test_build_bad),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_empty),
        cmocka_unit_test(test_parse_binary_payload),
        cmocka_unit_test(test_parse_foreign_magic),
        cmocka_unit_test(test_parse_foreign_lines),
        cmocka_unit_test(test_parse_max_fields),
        cmocka_unit_test(test_get_u64),
        cmocka_unit_test(test_build_with),
        cmocka_unit_test(test_round_trip_all_bytes),
        cmocka_unit_test(test_round_trip_random),
        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
