/*
 * etcd_pb.c - the gateway's JSON as gRPC's protobuf and back (etcd_internal.h), for the transport
 * that talks gRPC to etcd (etcd_h2.c): the layers above go on writing and reading the JSON of
 * etcd's gateway, and this file does what the gateway did with it.
 *
 * The conversion knows no message: it walks the descriptors protoc-c made of etcd_rpc.proto
 * (each field's name, number, type, label, oneof), filling the generated structs from the JSON
 * and writing the structs an answer unpacks to as JSON.  protobuf-c reads and writes the wire
 * format: it is what parses the bytes a member sends (once shallow() has seen that they nest no
 * deeper than protobuf-c's recursion bears).
 *
 * The JSON is the gateway's (grpc-gateway's JSONPb with the .proto's own field names, defaults
 * left out): 64-bit integers as decimal strings, 32-bit ones as numbers, an enum as its value's
 * name, bytes as standard base64, a oneof's member under its own name.  A field at its zero value
 * is left out (a failed txn has no "succeeded", a PUT event no "type"), except a oneof's member,
 * which the gateway writes whenever it is the one set (a compare's "create_revision":"0").
 * Strings are escaped as Go escapes them (<, >, & and U+2028/9 too; a byte that is not UTF-8
 * as U+FFFD).  Only proto3's kinds of fields are converted: singular, repeated, oneof.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base64.h>
#include <protobuf-c/protobuf-c.h>

#include "etcd_internal.h"
#include "etcd_rpc.pb-c.h"

/* Far deeper than anything reign sends or is answered (a batch's txns inside a txn: the key-values
 * of their answer are 6 messages deep): a bound on the recursion, whatever a body or an answer
 * holds. */
#define DEPTH_MAX 32
/* From 2^53 on, a JSON number may have lost digits in a double: such an integer is a string. */
#define EXACT_MAX 9007199254740992.0

struct reign__pb_method {
    const char *gateway; /* "/v3/kv/txn" */
    const char *path;    /* "/etcdserverpb.KV/Txn" */
    const ProtobufCMessageDescriptor *in, *out;
    bool streaming;
};

#define PB(x) &etcdserverpb__##x##__descriptor
static const reign__pb_method methods[] = {
    {"/v3/kv/range", "/etcdserverpb.KV/Range", PB(range_request), PB(range_response), false},
    {"/v3/kv/put", "/etcdserverpb.KV/Put", PB(put_request), PB(put_response), false},
    {"/v3/kv/deleterange", "/etcdserverpb.KV/DeleteRange", PB(delete_range_request),
     PB(delete_range_response), false},
    {"/v3/kv/txn", "/etcdserverpb.KV/Txn", PB(txn_request), PB(txn_response), false},
    {"/v3/watch", "/etcdserverpb.Watch/Watch", PB(watch_request), PB(watch_response), true},
    {"/v3/lease/grant", "/etcdserverpb.Lease/LeaseGrant", PB(lease_grant_request),
     PB(lease_grant_response), false},
    {"/v3/lease/revoke", "/etcdserverpb.Lease/LeaseRevoke", PB(lease_revoke_request),
     PB(lease_revoke_response), false},
    {"/v3/lease/keepalive", "/etcdserverpb.Lease/LeaseKeepAlive", PB(lease_keep_alive_request),
     PB(lease_keep_alive_response), true},
    {"/v3/auth/authenticate", "/etcdserverpb.Auth/Authenticate", PB(authenticate_request),
     PB(authenticate_response), false},
};

const reign__pb_method *reign__pb_method_of(const char *gateway_path)
{
    for (size_t i = 0; gateway_path && i < sizeof(methods) / sizeof(methods[0]); i++)
        if (!strcmp(methods[i].gateway, gateway_path))
            return &methods[i];
    return NULL;
}

const char *reign__pb_path(const reign__pb_method *m)
{
    return m->path;
}

bool reign__pb_streaming(const reign__pb_method *m)
{
    return m->streaming;
}

/* ---- what a conversion carries ------------------------------------------------------------- */

/* protobuf-c allocates through reign's allocator (which tests make fail), and says so when it
 * fails: an unpack that returns NULL then ran out of memory, rather than met bad bytes. */
typedef struct pbctx {
    ProtobufCAllocator alloc;
    bool oom;
    char *why; /* a request's: what is wrong, and where ("success[0].request_put.lease: ...") */
    size_t whylen;
} pbctx;

static void *ctx_alloc(void *data, size_t n)
{
    void *p = reign__malloc(n);
    if (!p)
        ((pbctx *)data)->oom = true;
    return p;
}

static void ctx_free(void *data, void *p)
{
    reign__free(p);
}

static void ctx_init(pbctx *c, char *why, size_t whylen)
{
    memset(c, 0, sizeof(*c));
    c->alloc.alloc = ctx_alloc;
    c->alloc.free = ctx_free;
    c->alloc.allocator_data = c;
    c->why = whylen ? why : NULL;
    c->whylen = c->why ? whylen : 0;
    if (c->why)
        c->why[0] = '\0';
}

/* What is wrong with the value at hand, as ": PROBLEM": the names of the fields it sits in come
 * before it as the error goes up (blame()).  Never a string's value: it may be a password. */
static int bad(pbctx *c, const char *fmt, ...) REIGN__PRINTF(2, 3);
static int bad(pbctx *c, const char *fmt, ...)
{
    if (c->why) {
        char msg[160];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        reign__errf(c->why, c->whylen, ": %s", msg);
    }
    return REIGN_EINVAL;
}

/* Puts text before what the error says so far; "..." once it fills why, so that what is wrong
 * stays (a path that long is one nested deeper than DEPTH_MAX). */
static void prepend(pbctx *c, const char *text)
{
    if (!c->why || c->whylen < 8 || !strncmp(c->why, "...", 3))
        return;
    size_t plen = strlen(text), wlen = strlen(c->why);
    if (plen + wlen > c->whylen - 1) {
        text = "...";
        plen = 3;
    }
    if (wlen > c->whylen - 1 - plen)
        wlen = c->whylen - 1 - plen;
    memmove(c->why + plen, c->why, wlen);
    memcpy(c->why, text, plen);
    c->why[plen + wlen] = '\0';
}

/* An error rc of the field name (element idx of it, unless idx < 0) goes up: its name first. */
static int blame(pbctx *c, const char *name, long idx, int rc)
{
    if (rc != REIGN_EINVAL || !c->why)
        return rc;
    const char *dot = c->why[0] == ':' ? "" : ".";
    char pre[96];
    if (idx < 0)
        snprintf(pre, sizeof(pre), "%s%s", name, dot);
    else
        snprintf(pre, sizeof(pre), "%s[%ld]%s", name, idx, dot);
    prepend(c, pre);
    return rc;
}

/* The size of one value of type t in a struct, and of an element of its repeated arrays. */
static size_t slot_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return sizeof(uint64_t);
    case PROTOBUF_C_TYPE_DOUBLE:
        return sizeof(double);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING:
        return sizeof(char *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(ProtobufCMessage *);
    default: /* the 32-bit integers, enums (protobuf-c makes them int-sized), float */
        return sizeof(uint32_t);
    }
}

/* ---- a request: the gateway's JSON into a message ------------------------------------------ */

/* Everything a message being filled points to is allocated as protobuf-c allocates what it
 * unpacks, and is in place before what it holds is read: protobuf_c_message_free_unpacked()
 * frees whatever was made, however far the reading got. */

/* A new message of type d at *slot. */
static int new_message(const ProtobufCMessageDescriptor *d, ProtobufCMessage **slot)
{
    ProtobufCMessage *m = reign__malloc(d->sizeof_message);
    if (!m)
        return REIGN_ENOMEM;
    protobuf_c_message_init(d, m);
    *slot = m;
    return 0;
}

static bool starts_digit(const char *s)
{
    return *s >= '0' && *s <= '9';
}

/* An integer in [lo, hi]: a string of decimal digits (how the gateway writes 64-bit ones), or a
 * JSON number that is an integer a double holds exactly. */
static int read_int(pbctx *c, const cJSON *j, int64_t lo, int64_t hi, int64_t *v)
{
    if (cJSON_IsString(j) && j->valuestring) {
        const char *s = j->valuestring;
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (!starts_digit(s[0] == '-' ? s + 1 : s) || *end || errno)
            return bad(c, "not a decimal integer");
        *v = x;
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (!(d > -EXACT_MAX && d < EXACT_MAX) || d != (double)(int64_t)d)
            return bad(c, "not an integer (one past 2^53 goes as a string)");
        *v = (int64_t)d;
    } else {
        return bad(c, "not an integer");
    }
    return *v < lo || *v > hi ? bad(c, "out of range") : 0;
}

static int read_uint(pbctx *c, const cJSON *j, uint64_t hi, uint64_t *v)
{
    if (cJSON_IsString(j) && j->valuestring) {
        const char *s = j->valuestring;
        char *end;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 10);
        if (!starts_digit(s) || *end || errno)
            return bad(c, "not a decimal integer of no sign");
        *v = x;
    } else if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (!(d >= 0 && d < EXACT_MAX) || d != (double)(uint64_t)d)
            return bad(c, "not an integer of no sign (one past 2^53 goes as a string)");
        *v = (uint64_t)d;
    } else {
        return bad(c, "not an integer");
    }
    return *v > hi ? bad(c, "out of range") : 0;
}

/* An enum: its value's name, or a number (proto3's enums take values they do not name). */
static int read_enum(pbctx *c, const ProtobufCEnumDescriptor *ed, const cJSON *j, int *v)
{
    if (cJSON_IsString(j) && j->valuestring) {
        const ProtobufCEnumValue *ev =
            protobuf_c_enum_descriptor_get_value_by_name(ed, j->valuestring);
        if (!ev)
            return bad(c, "%s has no value \"%.40s\"", ed->short_name, j->valuestring);
        *v = ev->value;
        return 0;
    }
    int64_t x;
    if (!cJSON_IsNumber(j))
        return bad(c, "not a value of %s", ed->short_name);
    int rc = read_int(c, j, INT32_MIN, INT32_MAX, &x);
    if (!rc)
        *v = (int)x;
    return rc;
}

/* Bytes: standard base64, padded (nettle's, as etcd_json.c decodes them). */
static int read_bytes(pbctx *c, const cJSON *j, ProtobufCBinaryData *bd)
{
    if (!cJSON_IsString(j) || !j->valuestring)
        return bad(c, "not a base64 string");
    size_t n = strlen(j->valuestring), got = 0;
    if (!n)
        return 0;
    uint8_t *p = reign__malloc(BASE64_DECODE_LENGTH(n));
    if (!p)
        return REIGN_ENOMEM;
    struct base64_decode_ctx ctx;
    base64_decode_init(&ctx);
    if (!base64_decode_update(&ctx, &got, p, n, j->valuestring) || !base64_decode_final(&ctx)) {
        reign__free(p);
        return bad(c, "not base64");
    }
    if (!got) {
        reign__free(p);
        return 0;
    }
    bd->data = p;
    bd->len = got;
    return 0;
}

static int read_object(pbctx *c, ProtobufCMessage *m, const cJSON *obj, int depth);

/* One value of field f from j into slot (zeroed, or the field's default). */
static int read_value(pbctx *c, const ProtobufCFieldDescriptor *f, const cJSON *j, void *slot,
                      int depth)
{
    int64_t i;
    uint64_t u;
    int rc;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        if ((rc = read_int(c, j, INT32_MIN, INT32_MAX, &i)) == 0)
            *(int32_t *)slot = (int32_t)i;
        return rc;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        if ((rc = read_uint(c, j, UINT32_MAX, &u)) == 0)
            *(uint32_t *)slot = (uint32_t)u;
        return rc;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return read_int(c, j, INT64_MIN, INT64_MAX, (int64_t *)slot);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return read_uint(c, j, UINT64_MAX, (uint64_t *)slot);
    case PROTOBUF_C_TYPE_BOOL:
        if (!cJSON_IsBool(j))
            return bad(c, "not true or false");
        *(protobuf_c_boolean *)slot = cJSON_IsTrue(j);
        return 0;
    case PROTOBUF_C_TYPE_ENUM:
        return read_enum(c, f->descriptor, j, (int *)slot);
    case PROTOBUF_C_TYPE_STRING: {
        if (!cJSON_IsString(j) || !j->valuestring)
            return bad(c, "not a string");
        char *s = reign__strdup(j->valuestring);
        if (!s)
            return REIGN_ENOMEM;
        *(char **)slot = s;
        return 0;
    }
    case PROTOBUF_C_TYPE_BYTES:
        return read_bytes(c, j, slot);
    case PROTOBUF_C_TYPE_MESSAGE:
        if (!cJSON_IsObject(j))
            return bad(c, "not an object");
        if ((rc = new_message(f->descriptor, slot)) < 0)
            return rc;
        return read_object(c, *(ProtobufCMessage **)slot, j, depth + 1);
    default:
        return bad(c, "of a type etcd_pb.c does not convert");
    }
}

/* Member j of obj into its field f of m. */
static int read_field(pbctx *c, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f,
                      const cJSON *obj, const cJSON *j, int depth)
{
    char *base = (char *)m;
    void *slot = base + f->offset;
    for (const cJSON *p = obj->child; p != j; p = p->next)
        if (!cJSON_IsNull(p) && p->string && !strcmp(p->string, j->string))
            return blame(c, f->name, -1, bad(c, "given twice"));
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (!cJSON_IsArray(j))
            return blame(c, f->name, -1, bad(c, "not an array"));
        size_t n = (size_t)cJSON_GetArraySize(j), size = slot_size(f->type), i = 0;
        if (!n)
            return 0;
        char *arr = reign__calloc(n, size);
        if (!arr)
            return REIGN_ENOMEM;
        /* Every element counted at once: free_unpacked skips the ones still zeroed. */
        *(void **)slot = arr;
        *(size_t *)(base + f->quantifier_offset) = n;
        for (const cJSON *e = j->child; e; e = e->next, i++) {
            int rc = cJSON_IsNull(e) ? bad(c, "null") : read_value(c, f, e, arr + i * size, depth);
            if (rc < 0)
                return blame(c, f->name, (long)i, rc);
        }
        return 0;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
        /* Its members share the storage: one set, the others must stay out. */
        uint32_t *which = (uint32_t *)(base + f->quantifier_offset);
        if (*which)
            return blame(c, f->name, -1, bad(c, "a second member of its oneof"));
        memset(slot, 0, slot_size(f->type));
        *which = f->id;
    } else if (f->label != PROTOBUF_C_LABEL_NONE) {
        return blame(c, f->name, -1, bad(c, "not a proto3 field"));
    }
    return blame(c, f->name, -1, read_value(c, f, j, slot, depth));
}

/* The members of JSON object obj into message m (null ones are absent, as for the gateway). */
static int read_object(pbctx *c, ProtobufCMessage *m, const cJSON *obj, int depth)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    if (depth > DEPTH_MAX)
        return bad(c, "nested deeper than %d messages", DEPTH_MAX);
    for (const cJSON *j = obj->child; j; j = j->next) {
        if (cJSON_IsNull(j))
            continue;
        const ProtobufCFieldDescriptor *f =
            j->string ? protobuf_c_message_descriptor_get_field_by_name(d, j->string) : NULL;
        if (!f) {
            reign__errf(c->why, c->whylen, "%.64s: no such field in %s", j->string ? j->string : "",
                        d->short_name);
            return REIGN_EINVAL;
        }
        int rc = read_field(c, m, f, obj, j, depth);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* protobuf-c's output, appended to a reign__buf (which notes a failed append: out->oom). */
typedef struct sink {
    ProtobufCBuffer base;
    reign__buf *b;
} sink;

static void sink_append(ProtobufCBuffer *pb, size_t len, const uint8_t *data)
{
    reign__buf_append(((sink *)pb)->b, data, len);
}

/* m packed after gRPC's prefix: 0 (not compressed), then its length, 4 bytes big-endian. */
static int frame(pbctx *c, const ProtobufCMessage *m, reign__buf *out)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n > UINT32_MAX) {
        reign__errf(c->why, c->whylen, "a message of %zu bytes", n);
        return REIGN_EINVAL;
    }
    uint8_t prefix[5] = {0, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
    reign__buf_append(out, prefix, sizeof(prefix));
    sink s = {.base = {.append = sink_append}, .b = out};
    protobuf_c_message_pack_to_buffer(m, &s.base);
    return out->oom ? REIGN_ENOMEM : 0;
}

/* out as it was before a call that failed. */
static void restore(reign__buf *out, size_t len)
{
    out->len = len;
    if (out->data)
        out->data[len] = '\0';
    out->oom = false;
}

static bool json_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int reign__pb_request(const reign__pb_method *m, const char *json, size_t len, reign__buf *out,
                      char *why, size_t whylen)
{
    pbctx c;
    ctx_init(&c, why, whylen);
    if (out->oom)
        return REIGN_ENOMEM;
    size_t start = out->len, at = 0, count = 0;
    int rc = 0;
    for (;;) {
        while (at < len && json_space(json[at]))
            at++;
        if (at == len)
            break;
        if (count && !m->streaming) {
            reign__errf(why, whylen, "more than one JSON object");
            rc = REIGN_EINVAL;
            break;
        }
        /* One value, where the next may follow (cJSON allocates with malloc: should that fail,
         * the body reads as no JSON, and is refused all the same). */
        const char *end = NULL;
        cJSON *root = cJSON_ParseWithLengthOpts(json + at, len - at, &end, false);
        if (!cJSON_IsObject(root)) {
            cJSON_Delete(root);
            reign__errf(why, whylen, "not a JSON object at byte %zu", at);
            rc = REIGN_EINVAL;
            break;
        }
        ProtobufCMessage *msg = NULL;
        rc = new_message(m->in, &msg);
        if (!rc)
            rc = read_object(&c, msg, root, 0);
        if (!rc)
            rc = frame(&c, msg, out);
        protobuf_c_message_free_unpacked(msg, &c.alloc);
        cJSON_Delete(root);
        if (rc < 0)
            break;
        at = (size_t)(end - json);
        count++;
    }
    if (!rc && !count) {
        reign__errf(why, whylen, "no JSON object");
        rc = REIGN_EINVAL;
    }
    if (rc < 0) {
        restore(out, start);
        char pre[80];
        if (m->streaming && count)
            snprintf(pre, sizeof(pre), "%s, message %zu: ", m->path, count + 1);
        else
            snprintf(pre, sizeof(pre), "%s: ", m->path);
        if (rc == REIGN_EINVAL)
            prepend(&c, pre);
    }
    return rc;
}

/* ---- an answer: a message as the gateway's JSON -------------------------------------------- */

/* The length of the UTF-8 character at p, as Go reads one (nothing overlong, no surrogate,
 * nothing past U+10FFFF), or 0 when p starts none. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char lo = 0x80, hi = 0xbf;
    size_t n;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        n = 2;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        n = 3;
        lo = p[0] == 0xe0 ? 0xa0 : lo;
        hi = p[0] == 0xed ? 0x9f : hi;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        n = 4;
        lo = p[0] == 0xf0 ? 0x90 : lo;
        hi = p[0] == 0xf4 ? 0x8f : hi;
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return n;
}

/* A string as Go's encoding/json writes it (the gateway's): ", \ and control bytes escaped,
 * and <, >, &, U+2028 and U+2029 too; a byte that starts no UTF-8 character as U+FFFD. */
static void write_string(reign__buf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    reign__buf_puts(b, "\"");
    while (*p) {
        unsigned char ch = *p;
        size_t n = ch < 0x80 ? 1 : utf8_len(p);
        if (ch == '"' || ch == '\\') {
            reign__buf_printf(b, "\\%c", ch);
        } else if (ch == '\n' || ch == '\r' || ch == '\t') {
            reign__buf_puts(b, ch == '\n' ? "\\n" : ch == '\r' ? "\\r" : "\\t");
        } else if (ch < 0x20 || ch == '<' || ch == '>' || ch == '&') {
            char esc[] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
            reign__buf_append(b, esc, sizeof(esc));
        } else if (!n) {
            reign__buf_puts(b, "\\ufffd");
            n = 1;
        } else if (n == 3 && ch == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
            reign__buf_puts(b, p[2] == 0xa8 ? "\\u2028" : "\\u2029");
        } else {
            reign__buf_append(b, p, n);
        }
        p += n;
    }
    reign__buf_puts(b, "\"");
}

/* Does the gateway write field f of m?  Not at its zero value, unless it is a oneof's member. */
static bool present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const char *base = (const char *)m;
    const void *p = base + f->offset;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)(base + f->quantifier_offset) == f->id &&
               (f->type != PROTOBUF_C_TYPE_MESSAGE || *(void *const *)p);
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        return *(const size_t *)(base + f->quantifier_offset) > 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
        return *(void *const *)p != NULL;
    case PROTOBUF_C_TYPE_STRING:
        return *(char *const *)p && **(char *const *)p;
    case PROTOBUF_C_TYPE_BYTES:
        return ((const ProtobufCBinaryData *)p)->len > 0;
    case PROTOBUF_C_TYPE_BOOL:
        return *(const protobuf_c_boolean *)p != 0;
    default:
        return slot_size(f->type) == 8 ? *(const uint64_t *)p != 0 : *(const uint32_t *)p != 0;
    }
}

static int write_message(reign__buf *b, const ProtobufCMessage *m, int depth);

/* One value of field f, at p. */
static int write_value(reign__buf *b, const ProtobufCFieldDescriptor *f, const void *p, int depth)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        reign__buf_printf(b, "%" PRId32, *(const int32_t *)p);
        return 0;
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        reign__buf_printf(b, "%" PRIu32, *(const uint32_t *)p);
        return 0;
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        reign__buf_printf(b, "\"%" PRId64 "\"", *(const int64_t *)p);
        return 0;
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        reign__buf_printf(b, "\"%" PRIu64 "\"", *(const uint64_t *)p);
        return 0;
    case PROTOBUF_C_TYPE_BOOL:
        reign__buf_puts(b, *(const protobuf_c_boolean *)p ? "true" : "false");
        return 0;
    case PROTOBUF_C_TYPE_ENUM: {
        /* A value the enum does not name goes as its number, unquoted, as the gateway's. */
        int v = *(const int *)p;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        if (ev)
            reign__buf_printf(b, "\"%s\"", ev->name);
        else
            reign__buf_printf(b, "%d", v);
        return 0;
    }
    case PROTOBUF_C_TYPE_STRING:
        write_string(b, *(char *const *)p);
        return 0;
    case PROTOBUF_C_TYPE_BYTES: {
        const ProtobufCBinaryData *bd = p;
        reign__ej_b64(b, bd->data, bd->len);
        return 0;
    }
    case PROTOBUF_C_TYPE_MESSAGE:
        return write_message(b, *(const ProtobufCMessage *const *)p, depth + 1);
    default:
        return REIGN_EBACKEND; /* no such field in etcd_rpc.proto */
    }
}

/* m's fields in their numbers' order, which etcd_rpc.proto's order is, as the gateway's. */
static int write_message(reign__buf *b, const ProtobufCMessage *m, int depth)
{
    if (depth > DEPTH_MAX)
        return REIGN_EBACKEND;
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *sep = "";
    reign__buf_puts(b, "{");
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!present(m, f))
            continue;
        reign__buf_printf(b, "%s\"%s\":", sep, f->name);
        sep = ",";
        const char *p = (const char *)m + f->offset;
        int rc = 0;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)((const char *)m + f->quantifier_offset);
            size_t size = slot_size(f->type);
            const char *arr = *(const char *const *)p;
            reign__buf_puts(b, "[");
            for (size_t k = 0; k < n && !rc; k++) {
                if (k)
                    reign__buf_puts(b, ",");
                rc = write_value(b, f, arr + k * size, depth);
            }
            reign__buf_puts(b, "]");
        } else {
            rc = write_value(b, f, p, depth);
        }
        if (rc < 0)
            return rc;
    }
    reign__buf_puts(b, "}");
    return 0;
}

/* A varint at *at (moved past it); false when the bytes end inside it or it is over 10 long. */
static bool varint(const uint8_t *p, size_t len, size_t *at, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64 && *at < len; shift += 7) {
        uint8_t b = p[(*at)++];
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return true;
    }
    return false;
}

/*
 * Do the messages inside message p (of type d, depth deep) stay within DEPTH_MAX?  protobuf-c
 * unpacks a message inside a message by recursion, and bounds it nowhere: 75 KB of txn answers
 * inside txn answers, 10,000 deep, overflow the stack in protobuf_c_message_unpack().  So the
 * bytes are walked first, as far as protobuf-c would follow them: each field's tag, then its
 * value passed over, except a field of a message type, which is walked in turn.  Nothing else
 * is judged here: bytes that are no message (true here) are protobuf-c's to refuse, which it
 * does before it follows any message inside them.
 */
static bool shallow(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t len, int depth)
{
    if (depth > DEPTH_MAX)
        return false;
    size_t at = 0;
    uint64_t tag, v;
    while (at < len) {
        if (!varint(p, len, &at, &tag))
            return true;
        switch (tag & 7) {
        case PROTOBUF_C_WIRE_TYPE_VARINT:
            if (!varint(p, len, &at, &v))
                return true;
            break;
        case PROTOBUF_C_WIRE_TYPE_64BIT:
            at += 8;
            break;
        case PROTOBUF_C_WIRE_TYPE_32BIT:
            at += 4;
            break;
        case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED: {
            if (!varint(p, len, &at, &v) || v > len - at || tag >> 3 > UINT32_MAX)
                return true;
            const ProtobufCFieldDescriptor *f =
                protobuf_c_message_descriptor_get_field(d, (unsigned)(tag >> 3));
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                !shallow(f->descriptor, p + at, (size_t)v, depth + 1))
                return false;
            at += (size_t)v;
            break;
        }
        default: /* groups, which protobuf-c does not take, or no wire type */
            return true;
        }
    }
    return true;
}

int reign__pb_answer(const reign__pb_method *m, const uint8_t *msg, size_t len, reign__buf *out)
{
    pbctx c;
    ctx_init(&c, NULL, 0);
    if (out->oom)
        return REIGN_ENOMEM;
    if (!shallow(m->out, msg, len, 0))
        return REIGN_EBACKEND;
    ProtobufCMessage *pm = protobuf_c_message_unpack(m->out, &c.alloc, len, msg);
    if (!pm)
        return c.oom ? REIGN_ENOMEM : REIGN_EBACKEND;
    size_t start = out->len;
    if (m->streaming)
        reign__buf_puts(out, "{\"result\":");
    int rc = write_message(out, pm, 0);
    if (m->streaming)
        reign__buf_puts(out, "}\n");
    protobuf_c_message_free_unpacked(pm, &c.alloc);
    if (!rc && out->oom)
        rc = REIGN_ENOMEM;
    if (rc < 0)
        restore(out, start);
    return rc;
}
