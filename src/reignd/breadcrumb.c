/*
 * breadcrumb.c - the breadcrumb record and the election layout on the store
 * (see breadcrumb.h): a pure encoder/decoder, and thin asynchronous wrappers
 * over reign_value_* that carry the caller's callback in a small request.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <reign/value.h>

#include "breadcrumb.h"

#define RECORD_HEADER "reignd breadcrumb 1"
#define LAYOUT_RECORD "reignd layout 1\n"
#define PAUSE_HEADER  "reignd pause 1"

/* ---- the record ------------------------------------------------------------ */

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 1;
    return 0;
}

int reignd_breadcrumb_encode(const reignd_breadcrumb *b, char *out, size_t outlen)
{
    if (!b->id[0] || !b->service_address[0] || has_control(b->id) ||
        has_control(b->service_address) || has_control(b->peer_address) || has_control(b->instance))
        return REIGN_EINVAL;
    int n = snprintf(out, outlen,
                     RECORD_HEADER
                     "\nid=%s\nservice_address=%s\npeer_address=%s\ninstance=%s\nterm=%" PRIu64
                     "\ntoken=%" PRIu64 "\n",
                     b->id, b->service_address, b->peer_address, b->instance, b->term, b->token);
    if (n < 0 || (size_t)n >= outlen)
        return REIGN_E2BIG;
    return n;
}

/* A strict unsigned decimal: digits only, no sign, no overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;
    if (len == 0 || len > 20)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* Copies a field's value; refuses control characters and what does not fit. */
static int copy_field(char *dst, size_t dstlen, const char *s, size_t len)
{
    if (len >= dstlen)
        return -1;
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -1;
    memcpy(dst, s, len);
    dst[len] = '\0';
    return 0;
}

enum { HAVE_ID = 1, HAVE_ADDR = 2, HAVE_TERM = 4, HAVE_TOKEN = 8, HAVE_ALL = 15 };

/* One "key=value" line into b; returns the HAVE_ bit it filled, 0 for an
 * unknown key (ignored: a later version may add some), -1 if malformed. */
static int decode_line(const char *line, size_t len, reignd_breadcrumb *b)
{
    const char *eq = memchr(line, '=', len);
    if (!eq)
        return -1;
    size_t klen = (size_t)(eq - line), vlen = len - klen - 1;
    const char *v = eq + 1;
#define KEY_IS(k) (klen == sizeof(k) - 1 && memcmp(line, k, klen) == 0)
    if (KEY_IS("id"))
        return vlen > 0 && copy_field(b->id, sizeof(b->id), v, vlen) == 0 ? HAVE_ID : -1;
    if (KEY_IS("service_address"))
        return vlen > 0 && copy_field(b->service_address, sizeof(b->service_address), v, vlen) == 0
                   ? HAVE_ADDR
                   : -1;
    if (KEY_IS("peer_address"))
        return copy_field(b->peer_address, sizeof(b->peer_address), v, vlen) == 0 ? 0 : -1;
    if (KEY_IS("instance"))
        return copy_field(b->instance, sizeof(b->instance), v, vlen) == 0 ? 0 : -1;
    if (KEY_IS("term"))
        return parse_u64(v, vlen, &b->term) == 0 ? HAVE_TERM : -1;
    if (KEY_IS("token"))
        return parse_u64(v, vlen, &b->token) == 0 ? HAVE_TOKEN : -1;
#undef KEY_IS
    return 0;
}

int reignd_breadcrumb_decode(const void *data, size_t len, reignd_breadcrumb *b, char *err,
                             size_t errlen)
{
    const char *p = data, *end = p + len;
    size_t hlen = sizeof(RECORD_HEADER) - 1;
    memset(b, 0, sizeof(*b));
    if (len < hlen + 1 || memcmp(p, RECORD_HEADER "\n", hlen + 1) != 0) {
        snprintf(err, errlen, "not a reignd breadcrumb (no \"%s\" line)", RECORD_HEADER);
        return REIGN_EFOREIGN;
    }
    p += hlen + 1;
    int have = 0, lineno = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        int bit = l ? decode_line(p, l, b) : 0;
        if (bit < 0 || (bit & have)) {
            snprintf(err, errlen, "breadcrumb line %d is malformed or repeated", lineno);
            return REIGN_EFOREIGN;
        }
        have |= bit;
        p += l + (nl ? 1 : 0);
    }
    if (have != HAVE_ALL) {
        snprintf(err, errlen, "breadcrumb lacks %s",
                 !(have & HAVE_ID)     ? "id"
                 : !(have & HAVE_ADDR) ? "service_address"
                 : !(have & HAVE_TERM) ? "term"
                                       : "token");
        return REIGN_EFOREIGN;
    }
    return 0;
}

static int election_key(const char *election, const char *leaf, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "reignd/%s/%s", election, leaf);
    if (n < 0 || (size_t)n >= outlen)
        return REIGN_ENAME;
    return reign_value_key_check(out);
}

int reignd_layout_key(const char *election, char *out, size_t outlen)
{
    return election_key(election, "layout", out, outlen);
}

int reignd_breadcrumb_key(const char *election, char *out, size_t outlen)
{
    return election_key(election, "breadcrumb", out, outlen);
}

int reignd_pause_key(const char *election, char *out, size_t outlen)
{
    return election_key(election, "pause", out, outlen);
}

int reignd_pause_encode(const char *by, char *out, size_t outlen)
{
    if (has_control(by))
        return REIGN_EINVAL;
    int n = snprintf(out, outlen, PAUSE_HEADER "\nby=%s\n", by);
    return n < 0 || (size_t)n >= outlen ? REIGN_E2BIG : n;
}

void reignd_pause_decode(const void *data, size_t len, char *by, size_t bylen)
{
    static const char head[] = PAUSE_HEADER "\nby=";
    const char *p = data;
    snprintf(by, bylen, "?");
    if (len <= sizeof(head) - 1 || memcmp(p, head, sizeof(head) - 1) != 0)
        return;
    p += sizeof(head) - 1;
    len -= sizeof(head) - 1;
    const char *nl = memchr(p, '\n', len);
    size_t l = nl ? (size_t)(nl - p) : len;
    if (l == 0 || copy_field(by, bylen, p, l) < 0)
        snprintf(by, bylen, "?");
}

int reignd_instance_new(char *out, size_t outlen)
{
    unsigned char r[8];
    if (outlen < 2 * sizeof(r) + 1)
        return REIGN_EINVAL;
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
        return REIGN_EBACKEND;
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(out + 2 * i, 3, "%02x", r[i]);
    return 0;
}

/* ---- on the store ---------------------------------------------------------- */

/* One request in flight: whose callback to call, and for --format its
 * second step. */
typedef struct crumb_req {
    reignd_breadcrumb_read_cb *read_cb;
    reignd_breadcrumb_done_cb *done_cb;
    reignd_layout_cb *layout_cb;
    void *userdata;
    char crumb_key[REIGN_KEY_MAX + 1]; /* format --force: deleted after the layout */
} crumb_req;

static crumb_req *req_new(void *userdata)
{
    crumb_req *r = calloc(1, sizeof(*r));
    if (r)
        r->userdata = userdata;
    return r;
}

/* Frees the request if the call failed (a call that fails never calls back). */
static int req_started(crumb_req *r, int err)
{
    if (err < 0)
        free(r);
    return err;
}

static void on_read(reign_client *client, int err, const reign_value *value, void *userdata)
{
    crumb_req *r = userdata;
    char msg[160] = "";
    if (err == REIGN_ENOENT) {
        r->read_cb(0, NULL, NULL, REIGN_VALUE_ABSENT, r->userdata);
    } else if (err < 0) {
        r->read_cb(err, reign_strerror(err), NULL, 0, r->userdata);
    } else {
        reignd_breadcrumb b;
        int e = reignd_breadcrumb_decode(value->data, value->data_len, &b, msg, sizeof(msg));
        r->read_cb(e, e < 0 ? msg : NULL, e < 0 ? NULL : &b, value->version, r->userdata);
    }
    free(r);
}

int reignd_breadcrumb_read(reign_client *client, const char *election,
                           reignd_breadcrumb_read_cb *cb, void *userdata)
{
    char key[REIGN_KEY_MAX + 1];
    int err = reignd_breadcrumb_key(election, key, sizeof(key));
    if (err < 0)
        return err;
    crumb_req *r = req_new(userdata);
    if (!r)
        return REIGN_ENOMEM;
    r->read_cb = cb;
    return req_started(r, reign_value_get(client, key, on_read, r));
}

static void on_done(reign_client *client, int err, const reign_value *value, void *userdata)
{
    crumb_req *r = userdata;
    r->done_cb(err, err == 0 && value ? value->version : 0, r->userdata);
    free(r);
}

int reignd_breadcrumb_write(reign_client *client, const char *election, const reignd_breadcrumb *b,
                            int64_t version, reignd_breadcrumb_done_cb *cb, void *userdata)
{
    char key[REIGN_KEY_MAX + 1], text[REIGND_BREADCRUMB_MAX];
    int err = reignd_breadcrumb_key(election, key, sizeof(key));
    if (err < 0)
        return err;
    int n = reignd_breadcrumb_encode(b, text, sizeof(text));
    if (n < 0)
        return n;
    crumb_req *r = req_new(userdata);
    if (!r)
        return REIGN_ENOMEM;
    r->done_cb = cb;
    return req_started(r, reign_value_set(client, key, text, (size_t)n, version, on_done, r));
}

int reignd_breadcrumb_delete(reign_client *client, const char *election, int64_t version,
                             reignd_breadcrumb_done_cb *cb, void *userdata)
{
    char key[REIGN_KEY_MAX + 1];
    int err = reignd_breadcrumb_key(election, key, sizeof(key));
    if (err < 0)
        return err;
    crumb_req *r = req_new(userdata);
    if (!r)
        return REIGN_ENOMEM;
    r->done_cb = cb;
    return req_started(r, reign_value_delete(client, key, version, on_done, r));
}

/* ---- the layout ------------------------------------------------------------ */

static void layout_finish(crumb_req *r, int err, const char *msg)
{
    r->layout_cb(err, err < 0 ? (msg ? msg : reign_strerror(err)) : NULL, r->userdata);
    free(r);
}

static void on_layout_read(reign_client *client, int err, const reign_value *value, void *userdata)
{
    crumb_req *r = userdata;
    if (err == 0 && (value->data_len != sizeof(LAYOUT_RECORD) - 1 ||
                     memcmp(value->data, LAYOUT_RECORD, value->data_len) != 0))
        layout_finish(r, REIGN_EFOREIGN, "the layout value holds something reignd did not write");
    else
        layout_finish(r, err, NULL);
}

int reignd_layout_check(reign_client *client, const char *election, reignd_layout_cb *cb,
                        void *userdata)
{
    char key[REIGN_KEY_MAX + 1];
    int err = reignd_layout_key(election, key, sizeof(key));
    if (err < 0)
        return err;
    crumb_req *r = req_new(userdata);
    if (!r)
        return REIGN_ENOMEM;
    r->layout_cb = cb;
    return req_started(r, reign_value_get(client, key, on_layout_read, r));
}

static void on_format_crumb_deleted(reign_client *client, int err, const reign_value *value,
                                    void *userdata)
{
    /* No breadcrumb to delete is as good as deleted. */
    layout_finish(userdata, err == REIGN_ENOENT ? 0 : err, NULL);
}

static void on_format_written(reign_client *client, int err, const reign_value *value,
                              void *userdata)
{
    crumb_req *r = userdata;
    if (err == REIGN_EEXIST) {
        layout_finish(r, err,
                      "already formatted (use --force to reset it, which forgets the "
                      "last active node: it will not be fenced)");
        return;
    }
    if (err < 0 || !r->crumb_key[0]) {
        layout_finish(r, err, NULL);
        return;
    }
    err = reign_value_delete(client, r->crumb_key, REIGN_VALUE_ANY, on_format_crumb_deleted, r);
    if (err < 0)
        layout_finish(r, err, NULL);
}

int reignd_layout_format(reign_client *client, const char *election, int force,
                         reignd_layout_cb *cb, void *userdata)
{
    char key[REIGN_KEY_MAX + 1];
    int err = reignd_layout_key(election, key, sizeof(key));
    if (err < 0)
        return err;
    crumb_req *r = req_new(userdata);
    if (!r)
        return REIGN_ENOMEM;
    r->layout_cb = cb;
    if (force && (err = reignd_breadcrumb_key(election, r->crumb_key, sizeof(r->crumb_key))) < 0)
        return req_started(r, err);
    return req_started(r, reign_value_set(client, key, LAYOUT_RECORD, sizeof(LAYOUT_RECORD) - 1,
                                          force ? REIGN_VALUE_ANY : REIGN_VALUE_ABSENT,
                                          on_format_written, r));
}
