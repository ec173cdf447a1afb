/*
 * record.c - reads and writes the data reign keeps in its nodes and rows
 * (format in record.h):
 *
 *   reign 1\n
 *   owner=host-a%3D1\n
 *   token=42\n
 *   \n
 *   <payload bytes>
 *
 * The parser is strict because what it reads may have been written by
 * anyone with access to the store: every byte of the header must be what
 * reign__record_build() could have written (keys [a-z0-9_]{1,32}, values
 * with '%', '=', and control characters percent-encoded), and the header
 * must end with the blank line.  Only the payload is taken as it is.
 * Escapes may use either case of hex digits; the builder writes upper case.
 */
#include "record.h"

#include <stdbool.h>
#include <string.h>

#define MAGIC     "reign 1\n"
#define MAGIC_LEN (sizeof(MAGIC) - 1)
#define KEY_MAX   (sizeof(((reign__record_field *)0)->key) - 1)

static bool is_key_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The bytes a value never holds as they are. */
static bool needs_escape(unsigned char c)
{
    return c < 0x20 || c == 0x7f || c == '%' || c == '=';
}

static bool valid_key(const char *k, size_t n)
{
    if (n == 0 || n > KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_key_char((unsigned char)k[i]))
            return false;
    return true;
}

/*
 * Decodes the value [v, v+n) into a new string.  REIGN_EFOREIGN for a raw
 * byte that should have been escaped, a bad escape or an encoded NUL (the
 * value is a C string; a NUL would silently cut it).
 */
static int decode_value(const unsigned char *v, size_t n, char **out)
{
    size_t dn = 0;
    for (size_t i = 0; i < n; i++, dn++) {
        if (v[i] == '%') {
            if (n - i < 3 || hex_value(v[i + 1]) < 0 || hex_value(v[i + 2]) < 0)
                return REIGN_EFOREIGN;
            if (hex_value(v[i + 1]) == 0 && hex_value(v[i + 2]) == 0)
                return REIGN_EFOREIGN;
            i += 2;
        } else if (needs_escape(v[i])) {
            return REIGN_EFOREIGN;
        }
    }
    char *d = reign__malloc(dn + 1);
    if (!d)
        return REIGN_ENOMEM;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '%') {
            d[j++] = (char)(hex_value(v[i + 1]) * 16 + hex_value(v[i + 2]));
            i += 2;
        } else {
            d[j++] = (char)v[i];
        }
    }
    d[j] = '\0';
    *out = d;
    return 0;
}

int reign__record_parse(const void *buf, size_t len, reign__record *r)
{
    const unsigned char *p = buf, *end = p + len;
    int rc = REIGN_EFOREIGN;

    memset(r, 0, sizeof(*r));
    if (!buf || len < MAGIC_LEN || memcmp(p, MAGIC, MAGIC_LEN) != 0)
        return REIGN_EFOREIGN;
    p += MAGIC_LEN;
    for (;;) {
        if (p == end)
            goto fail; /* no blank line: truncated */
        if (*p == '\n') {
            p++;
            break;
        }
        const unsigned char *eol = memchr(p, '\n', (size_t)(end - p));
        const unsigned char *eq = memchr(p, '=', eol ? (size_t)(eol - p) : (size_t)(end - p));
        if (!eol || !eq || r->n_fields == REIGN__RECORD_MAX_FIELDS)
            goto fail;
        size_t kn = (size_t)(eq - p);
        if (!valid_key((const char *)p, kn))
            goto fail;
        for (size_t i = 0; i < r->n_fields; i++)
            if (strlen(r->fields[i].key) == kn && memcmp(r->fields[i].key, p, kn) == 0)
                goto fail;
        reign__record_field *f = &r->fields[r->n_fields];
        rc = decode_value(eq + 1, (size_t)(eol - eq - 1), &f->value);
        if (rc < 0)
            goto fail;
        memcpy(f->key, p, kn);
        f->key[kn] = '\0';
        r->n_fields++;
        p = eol + 1;
        rc = REIGN_EFOREIGN;
    }
    r->payload = p;
    r->payload_len = (size_t)(end - p);
    return 0;

fail:
    reign__record_clear(r);
    return rc;
}

void reign__record_clear(reign__record *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_fields; i++)
        reign__free(r->fields[i].value);
    memset(r, 0, sizeof(*r));
}

const char *reign__record_get(const reign__record *r, const char *key)
{
    if (!r || !key)
        return NULL;
    for (size_t i = 0; i < r->n_fields; i++)
        if (strcmp(r->fields[i].key, key) == 0)
            return r->fields[i].value;
    return NULL;
}

int reign__record_get_u64(const reign__record *r, const char *key, uint64_t *out)
{
    const char *v = reign__record_get(r, key);
    if (!v)
        return REIGN_ENOENT;
    if (!*v)
        return REIGN_EFOREIGN;
    uint64_t n = 0;
    for (const char *c = v; *c; c++) {
        if (*c < '0' || *c > '9')
            return REIGN_EFOREIGN;
        unsigned d = (unsigned)(*c - '0');
        if (n > (UINT64_MAX - d) / 10)
            return REIGN_EFOREIGN;
        n = n * 10 + d;
    }
    *out = n;
    return 0;
}

/* Appends value v percent-encoded, copying runs of plain bytes at once. */
static void append_value(reign__buf *out, const char *v)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *run = v;
    for (const char *c = v; *c; c++) {
        unsigned char ch = (unsigned char)*c;
        if (!needs_escape(ch))
            continue;
        char esc[3] = {'%', hex[ch >> 4], hex[ch & 15]};
        reign__buf_append(out, run, (size_t)(c - run));
        reign__buf_append(out, esc, sizeof(esc));
        run = c + 1;
    }
    reign__buf_puts(out, run);
}

int reign__record_build(reign__buf *out, const char *const *kv, size_t n_kv, const void *payload,
                        size_t payload_len)
{
    /* Check everything first, so that a bad call appends nothing. */
    if (!out || n_kv % 2 != 0 || n_kv / 2 > REIGN__RECORD_MAX_FIELDS || (n_kv && !kv) ||
        (payload_len && !payload))
        return REIGN_EINVAL;
    for (size_t i = 0; i < n_kv; i += 2) {
        if (!kv[i] || !kv[i + 1] || !valid_key(kv[i], strlen(kv[i])))
            return REIGN_EINVAL;
        for (size_t j = 0; j < i; j += 2)
            if (strcmp(kv[i], kv[j]) == 0)
                return REIGN_EINVAL;
    }

    size_t start = out->len;
    reign__buf_append(out, MAGIC, MAGIC_LEN);
    for (size_t i = 0; i < n_kv; i += 2) {
        reign__buf_puts(out, kv[i]);
        reign__buf_append(out, "=", 1);
        append_value(out, kv[i + 1]);
        reign__buf_append(out, "\n", 1);
    }
    reign__buf_append(out, "\n", 1);
    reign__buf_append(out, payload, payload_len);
    if (out->oom) {
        /* Take back the partial record; the buffer stays marked. */
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
        return REIGN_ENOMEM;
    }
    return 0;
}

int reign__record_build_set(reign__buf *out, const reign__record *r, const char *const *set,
                            size_t n_set)
{
    const char *kv[2 * REIGN__RECORD_MAX_FIELDS];
    bool done[REIGN__RECORD_MAX_FIELDS] = {false};
    size_t n = 0;
    if (n_set % 2 || n_set / 2 > REIGN__RECORD_MAX_FIELDS)
        return REIGN_EINVAL;
    for (size_t i = 0; i < r->n_fields; i++) {
        kv[n++] = r->fields[i].key;
        kv[n++] = r->fields[i].value;
        for (size_t j = 0; j < n_set; j += 2)
            if (!strcmp(r->fields[i].key, set[j])) {
                kv[n - 1] = set[j + 1];
                done[j / 2] = true;
            }
    }
    for (size_t j = 0; j < n_set; j += 2) {
        if (done[j / 2])
            continue;
        if (n / 2 >= REIGN__RECORD_MAX_FIELDS)
            return REIGN_EINVAL;
        kv[n++] = set[j];
        kv[n++] = set[j + 1];
    }
    return reign__record_build(out, kv, n, r->payload, r->payload_len);
}

int reign__record_build_with(reign__buf *out, const reign__record *r, const char *key,
                             const char *value)
{
    const char *set[] = {key, value};
    return reign__record_build_set(out, r, set, 2);
}
