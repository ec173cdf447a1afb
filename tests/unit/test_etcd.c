/*
 * test_etcd.c - the etcd backend's parsers and txn builders (src/etcd/), with no server: the
 * gateway's JSON (base64, 64-bit numbers as strings, both error shapes), the txn each node
 * operation becomes, compared whole with the shapes of docs/etcd-gateway.md (the gateway takes
 * a misspelt field silently), and the gateway's answers read back as ZooKeeper's results.
 * test_etcd_watch.c has the watch stream.
 *
 * Each reign__etcd here is made by hand, with only what these layers read: the key prefix, the
 * lease, the generation.  The canned answers are in the gateway's shapes (64-bit numbers as
 * strings, fields at their zero value left out), written with ' for " and @R for an answer's
 * header at revision R, so that they fit on a line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etcd/etcd_internal.h"

#define LEASE INT64_C(8433168612965232141) /* 19 digits, above 2^62: seen on the wire */

/* ---- helpers ------------------------------------------------------------------------------- */

static reign__etcd *etcd_new(const char *prefix)
{
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    assert_non_null(e);
    e->prefix = reign__strdup(prefix);
    assert_non_null(e->prefix);
    e->prefix_len = strlen(prefix);
    e->gen = 1;
    e->lease = LEASE;
    reign__ew_init(e);
    reign__timer_init(&e->hold_timer, NULL, NULL);
    return e;
}

static void etcd_free(reign__etcd *e)
{
    reign__ew_free(e);
    reign__et_seq_free(e);
    reign__free(e->prefix);
    reign__free(e);
}

/* The gateway's text of fmt: ' for ", @R for {"header":{...,"revision":"R",...}}. */
static void gw_text(reign__buf *out, const char *fmt, va_list ap) REIGN__PRINTF(2, 0);
static void gw_text(reign__buf *out, const char *fmt, va_list ap)
{
    char text[8192];
    vsnprintf(text, sizeof(text), fmt, ap);
    reign__buf_init(out);
    for (const char *c = text; *c; c++) {
        if (*c == '\'') {
            reign__buf_append(out, "\"", 1);
        } else if (*c == '@') {
            size_t n = strspn(c + 1, "0123456789");
            reign__buf_printf(out,
                              "\"header\":{\"cluster_id\":\"16037725854328852573\",\"member_id\":"
                              "\"10276657743932975437\",\"revision\":\"%.*s\",\"raft_term\":\"2\"}",
                              (int)n, c + 1);
            c += n;
        } else {
            reign__buf_append(out, c, 1);
        }
    }
    assert_false(out->oom);
}

static cJSON *gw(const char *fmt, ...) REIGN__PRINTF(1, 2);
static cJSON *gw(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reign__buf b;
    gw_text(&b, fmt, ap);
    va_end(ap);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    if (!j)
        fail_msg("not JSON: %s", b.data);
    reign__buf_free(&b);
    return j;
}

static const cJSON *field(const cJSON *obj, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(obj, name);
}

static void assert_str(const cJSON *obj, const char *name, const char *want)
{
    const cJSON *v = field(obj, name);
    if (!cJSON_IsString(v))
        fail_msg("\"%s\" is not a string, want \"%s\"", name, want);
    assert_string_equal(v->valuestring, want);
}

/* Field `name` of obj is the base64 of the n bytes at want. */
static void assert_bytes(const cJSON *obj, const char *name, const void *want, size_t n)
{
    assert_true(cJSON_IsString(field(obj, name)));
    size_t len = 99;
    char *got = reign__ej_bytes(obj, name, &len);
    assert_non_null(got);
    assert_int_equal(len, n);
    if (n)
        assert_memory_equal(got, want, n);
    reign__free(got);
}

static void assert_key(const cJSON *obj, const char *name, const char *want)
{
    assert_bytes(obj, name, want, strlen(want));
}

/* The number of items of array `name`, which must be there. */
static int count_of(const cJSON *j, const char *name)
{
    const cJSON *a = field(j, name);
    assert_true(cJSON_IsArray(a));
    return cJSON_GetArraySize(a);
}

/* Item i of array `name`: the request or response of kind `kind` it holds. */
static const cJSON *item(const cJSON *j, const char *name, int i, const char *kind)
{
    const cJSON *k = field(cJSON_GetArrayItem(field(j, name), i), kind);
    if (!cJSON_IsObject(k))
        fail_msg("%s[%d] holds no %s", name, i, kind);
    return k;
}

/* Item i of "success" is a put of value at key. */
static const cJSON *assert_put(const cJSON *j, int i, const char *key, const char *value)
{
    const cJSON *put = item(j, "success", i, "request_put");
    assert_key(put, "key", key);
    assert_key(put, "value", value);
    return put;
}

/* prefix + path, in one of a few static buffers. */
static const char *pk(const char *prefix, const char *path)
{
    static char out[4][64];
    static int at;
    char *o = out[at++ % 4];
    snprintf(o, sizeof(out[0]), "%s%s", prefix, path);
    return o;
}

/* compare[i] is {"key":K,"target":T,"result":R,FIELD:"V"}, on one key. */
static void assert_cmp(const cJSON *j, int i, const char *key, const char *target,
                       const char *result, const char *fname, const char *v)
{
    const cJSON *c = cJSON_GetArrayItem(field(j, "compare"), i);
    assert_non_null(c);
    assert_key(c, "key", key);
    assert_null(field(c, "range_end"));
    assert_str(c, "target", target);
    assert_str(c, "result", result);
    assert_str(c, fname, v);
}

/* Is the key in [lo, hi), bytewise as etcd orders keys? */
static bool in_range(const char *k, size_t kl, const char *lo, size_t ll, const char *hi, size_t hl)
{
    int a = memcmp(k, lo, kl < ll ? kl : ll), b = memcmp(k, hi, kl < hl ? kl : hl);
    return (a > 0 || (a == 0 && kl >= ll)) && (b < 0 || (b == 0 && kl < hl));
}

/*
 * The two ranges ra and rb ({"key","range_end"}) are what is below a node but its counter,
 * kp being the node's key and "/": kp + "." is in neither, a child or a grandchild in one, the
 * node and its siblings in none.
 */
static void assert_child_ranges(const cJSON *ra, const cJSON *rb, const char *kp)
{
    const cJSON *r[2] = {ra, rb};
    size_t lo_len[2], hi_len[2], kl = strlen(kp);
    char *lo[2], *hi[2];
    for (int i = 0; i < 2; i++) {
        lo[i] = reign__ej_bytes(r[i], "key", &lo_len[i]);
        hi[i] = reign__ej_bytes(r[i], "range_end", &hi_len[i]);
        assert_non_null(lo[i]);
        assert_non_null(hi[i]);
    }
    /* etcd_txn.c makes them [kp, kp + "."), [kp + ".\0", the end of kp): probe them. */
    struct {
        const char *suffix;
        size_t len;
        int hits;
    } probe[] = {{".", 1, 0},   {"a", 1, 1},   {"-", 1, 1}, {".x", 2, 1},
                 {"a/b", 3, 1}, {"a/.", 3, 1}, {"", 1, 1}}; /* the last: a NUL */
    for (size_t p = 0; p < sizeof(probe) / sizeof(probe[0]); p++) {
        char k[256];
        memcpy(k, kp, kl);
        memcpy(k + kl, probe[p].suffix, probe[p].len);
        int hits = 0;
        for (int i = 0; i < 2; i++)
            hits += in_range(k, kl + probe[p].len, lo[i], lo_len[i], hi[i], hi_len[i]);
        if (hits != probe[p].hits)
            fail_msg("%s + \"%s\": in %d ranges, want %d", kp, probe[p].suffix, hits,
                     probe[p].hits);
    }
    /* The node itself (kp without its slash) and the sibling that sorts right after it. */
    char sib[256];
    memcpy(sib, kp, kl - 1);
    sib[kl - 1] = '0';
    for (int i = 0; i < 2; i++) {
        assert_false(in_range(kp, kl - 1, lo[i], lo_len[i], hi[i], hi_len[i]));
        assert_false(in_range(sib, kl, lo[i], lo_len[i], hi[i], hi_len[i]));
        reign__free(lo[i]);
        reign__free(hi[i]);
    }
}

static etxn txn_of(reign__etcd *e, enum eop_type type, const char *path, reign__zk_mop *parts,
                   size_t n)
{
    etxn t = {.e = e, .type = type, .path = (char *)path, .parts = parts, .n = n};
    for (size_t i = 0; i < REIGN__ZK_MULTI_MAX; i++)
        t.put_index[i] = -1;
    return t;
}

static etxn write_txn(reign__etcd *e, reign__zk_mop *parts, size_t n)
{
    return txn_of(e, EO_WRITE, NULL, parts, n);
}

static etxn read_txn(reign__etcd *e, enum eop_type type, const char *path)
{
    return txn_of(e, type, path, NULL, 0);
}

/* The txn's JSON, which must build. */
static cJSON *build_ok(etxn *t)
{
    reign__buf b;
    reign__buf_init(&b);
    size_t bad = 99;
    assert_int_equal(reign__et_build(t, &b, &bad), 0);
    assert_false(b.oom);
    assert_non_null(b.data);
    cJSON *j = cJSON_ParseWithLength(b.data, b.len);
    if (!j)
        fail_msg("not JSON: %s", b.data);
    reign__buf_free(&b);
    return j;
}

static void txn_done(etxn *t)
{
    for (size_t i = 0; i < REIGN__ZK_MULTI_MAX; i++) {
        reign__free(t->made[i]);
        t->made[i] = NULL;
    }
    reign__free(t->value);
    t->value = NULL;
}

/* The parts of a multi (data: a string literal). */
#define mcreate(p, d, f)                                                                           \
    ((reign__zk_mop){.type = REIGN__ZK_MCREATE,                                                    \
                     .path = p,                                                                    \
                     .data = d,                                                                    \
                     .len = sizeof(d) - 1,                                                         \
                     .version = -1,                                                                \
                     .flags = f})
#define mset(p, d, v)                                                                              \
    ((reign__zk_mop){                                                                              \
        .type = REIGN__ZK_MSET, .path = p, .data = d, .len = sizeof(d) - 1, .version = v})
#define mdelete(p, v) ((reign__zk_mop){.type = REIGN__ZK_MDELETE, .path = p, .version = v})
#define mcheck(p, v)  ((reign__zk_mop){.type = REIGN__ZK_MCHECK, .path = p, .version = v})

static void assert_stat(const reign__zk_stat *st, int64_t czxid, int64_t mzxid, int version,
                        int64_t owner, int data_length, int num_children)
{
    assert_true(st->czxid == czxid);
    assert_true(st->mzxid == mzxid);
    assert_int_equal(st->version, version);
    assert_true(st->ephemeral_owner == owner);
    assert_int_equal(st->data_length, data_length);
    assert_int_equal(st->num_children, num_children);
}

/* ---- etcd_json.c --------------------------------------------------------------------------- */

static void round_trip(const void *data, size_t n)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__ej_b64(&b, data, n);
    assert_false(b.oom);
    assert_non_null(b.data);
    assert_int_equal(b.len, 2 + (n + 2) / 3 * 4); /* quoted, padded */
    assert_int_equal(b.data[0], '"');
    assert_int_equal(b.data[b.len - 1], '"');
    b.data[b.len - 1] = '\0';
    size_t len = 99;
    char *back = reign__ej_unb64(b.data + 1, &len);
    assert_non_null(back);
    assert_int_equal(len, n);
    if (n)
        assert_memory_equal(back, data, n);
    assert_int_equal(back[n], '\0'); /* NUL-terminated, as the header says */
    reign__free(back);
    reign__buf_free(&b);
}

static void test_b64(void **state)
{
    round_trip("", 0);
    round_trip("a", 1); /* tails of 1, 2 and 3 bytes, and after a whole group */
    round_trip("ab", 2);
    round_trip("abc", 3);
    round_trip("abcd", 4);
    round_trip("abcde", 5);
    round_trip("\0a\0\xff\xfe\0", 6);
    static unsigned char big[100000];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (unsigned char)(i * 7 + (i >> 8));
    round_trip(big, 192); /* 256 characters: the encoder's stack buffer, full */
    round_trip(big, 193); /* one group more: from the heap */
    round_trip(big, sizeof(big));

    /* The gateway's own example. */
    reign__buf b;
    reign__buf_init(&b);
    reign__ej_b64(&b, "/reign/a", 8);
    assert_string_equal(b.data, "\"L3JlaWduL2E=\"");
    reign__buf_free(&b);
    size_t len = 0;
    char *s = reign__ej_unb64("L3JlaWduL2E=", &len);
    assert_string_equal(s, "/reign/a");
    assert_int_equal(len, 8);
    reign__free(s);
    s = reign__ej_unb64("YQ==", NULL); /* len may be NULL */
    assert_string_equal(s, "a");
    reign__free(s);

    /* Bad base64 is refused, never half decoded. */
    const char *bad[] = {"!!!", "QUJD!", "QUJD===", "QQ==QQ==", "L3Jl\x01aWdu"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (reign__ej_unb64(bad[i], &len))
            fail_msg("\"%s\" decoded", bad[i]);
}

static void test_i64(void **state)
{
    cJSON *j = gw("{'ID':'8433168612965232141','cluster_id':'16037725854328852573','TTL':'-1',"
                  "'max':'9223372036854775807','code':5,'neg':-3,'revision':'57','word':'x',"
                  "'yes':true,'obj':{},'zero':'0'}");
    assert_true(reign__ej_i64(j, "ID") == LEASE); /* every digit: never through a double */
    assert_true(reign__ej_i64(j, "max") == INT64_MAX);
    /* 20 digits, above 2^63 (a cluster id: unsigned): held at the largest, never wrapped. */
    assert_true(reign__ej_i64(j, "cluster_id") == INT64_MAX);
    assert_true(reign__ej_i64(j, "TTL") == -1);
    assert_true(reign__ej_i64(j, "revision") == 57);
    assert_true(reign__ej_i64(j, "zero") == 0);
    assert_true(reign__ej_i64(j, "code") == 5); /* a number: the error code is one */
    assert_true(reign__ej_i64(j, "neg") == -3);
    /* Absent (the gateway leaves a zero out), or not a number: 0. */
    assert_true(reign__ej_i64(j, "count") == 0);
    assert_true(reign__ej_i64(j, "Revision") == 0);
    assert_true(reign__ej_i64(j, "word") == 0);
    assert_true(reign__ej_i64(j, "yes") == 0);
    assert_true(reign__ej_i64(j, "obj") == 0);
    assert_true(reign__ej_i64(NULL, "ID") == 0);
    cJSON_Delete(j);
}

static void test_bytes(void **state)
{
    /* keys_only, or an empty value: no "value" at all. */
    cJSON *kv =
        gw("{'key':'L3Ivcy9lL2M=','create_revision':'58','mod_revision':'58','version':'1'}");
    size_t len = 99;
    assert_null(reign__ej_bytes(kv, "value", &len));
    assert_int_equal(len, 0);
    len = 99;
    assert_null(reign__ej_bytes(NULL, "key", &len)); /* no key-value at all */
    assert_int_equal(len, 0);
    char *k = reign__ej_bytes(kv, "key", &len);
    assert_string_equal(k, "/r/s/e/c");
    assert_int_equal(len, 8);
    reign__free(k);
    cJSON_Delete(kv);
}

static void test_error(void **state)
{
    struct {
        const char *text, *error;
        int code;
    } cases[] = {
        /* A unary call's. */
        {"{'error':'etcdserver: requested lease not found','message':'etcdserver: requested "
         "lease not found','code':5}",
         "etcdserver: requested lease not found", 5},
        {"{'error':'illegal base64 data at input byte 0','message':'illegal base64 data at "
         "input byte 0','code':3}",
         "illegal base64 data at input byte 0", 3},
        /* A stream's. */
        {"{'error':{'grpc_code':14,'http_code':503,'message':'etcdserver: no leader',"
         "'http_status':'Service Unavailable'}}",
         "etcdserver: no leader", 14},
        /* Without its message, still an error. */
        {"{'error':{'grpc_code':'2'}}", NULL, 2},
        /* None: an answer, a stream's line. */
        {"{@57,'succeeded':true}", NULL, -7},
        {"{'result':{@21,'created':true}}", NULL, -7},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        cJSON *j = gw("%s", cases[i].text);
        int code = -7;
        const char *m = reign__ej_error(j, &code);
        if (cases[i].code == -7) {
            assert_null(m);
        } else {
            assert_non_null(m);
            if (cases[i].error)
                assert_string_equal(m, cases[i].error);
            assert_int_equal(code, cases[i].code);
        }
        cJSON_Delete(j);
    }
}

static void test_prefix_end(void **state)
{
    char a[] = "/team/", b[] = "/r/s/e/c", c[] = "x";
    reign__ej_prefix_end(a, strlen(a));
    assert_string_equal(a, "/team0");
    reign__ej_prefix_end(b, strlen(b));
    assert_string_equal(b, "/r/s/e/d");
    reign__ej_prefix_end(c, 0); /* nothing to end */
    assert_string_equal(c, "x");
}

/* A login's body is JSON whatever the user and password hold (quotes, backslashes, control
 * bytes, UTF-8), and reads back to them; the token of its answer becomes the header, wiped in
 * the answer. */
static void test_login(void **state)
{
    static const struct {
        const char *user, *password;
    } cases[] = {
        {"reign", "s3cret"},
        {"a\"b\\c", "p\"w\\d/x"},
        {"t\tab", "new\nline\x01\x1f"},
        {"r\xc3\xa9ign", "\xe2\x82\xac"},
        {"u", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        reign__buf b;
        reign__buf_init(&b);
        reign__ej_login(&b, cases[i].user, cases[i].password);
        assert_false(b.oom);
        cJSON *j = cJSON_Parse(b.data);
        assert_non_null(j);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "name")->valuestring,
                            cases[i].user);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "password")->valuestring,
                            cases[i].password);
        assert_int_equal(cJSON_GetArraySize(j), 2);
        cJSON_Delete(j);
        reign__buf_free(&b);
    }
    reign__buf b;
    reign__buf_init(&b);
    reign__ej_login(&b, "u", NULL); /* no password: an empty one */
    assert_string_equal(b.data, "{\"name\":\"u\",\"password\":\"\"}");
    reign__buf_free(&b);

    cJSON *j = cJSON_Parse("{\"header\":{\"revision\":\"3\"},\"token\":\"AbC.17\"}");
    char *h = reign__ej_token_header(j);
    assert_string_equal(h, "Authorization: AbC.17");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "token")->valuestring, "");
    reign__free(h);
    cJSON_Delete(j);
    j = cJSON_Parse("{\"header\":{}}");
    assert_null(reign__ej_token_header(j));
    cJSON_Delete(j);
    j = cJSON_Parse("{\"token\":7}");
    assert_null(reign__ej_token_header(j));
    cJSON_Delete(j);
}

/* ---- etcd_txn.c: what is sent -------------------------------------------------------------- */

/* j made readable: every key, range_end and value decoded from base64, a byte that is not
 * printable (or '<') shown as <hh>. */
static void decode_keys(cJSON *j)
{
    for (cJSON *c = j ? j->child : NULL, *next; c; c = next) {
        next = c->next;
        if (!cJSON_IsString(c) || !c->string ||
            (strcmp(c->string, "key") && strcmp(c->string, "range_end") &&
             strcmp(c->string, "value"))) {
            decode_keys(c);
            continue;
        }
        size_t len, o = 0;
        char *raw = reign__ej_unb64(c->valuestring, &len), shown[1024];
        assert_non_null(raw);
        for (size_t i = 0; i < len && o + 5 < sizeof(shown); i++) {
            unsigned char ch = (unsigned char)raw[i];
            if (ch < 0x20 || ch > 0x7e || ch == '<')
                o += (size_t)snprintf(shown + o, 5, "<%02x>", ch);
            else
                shown[o++] = (char)ch;
        }
        shown[o] = '\0';
        reign__free(raw);
        char name[16];
        snprintf(name, sizeof(name), "%s", c->string);
        assert_true(cJSON_ReplaceItemInObjectCaseSensitive(j, name, cJSON_CreateString(shown)));
    }
}

/*
 * t builds into want: the gateway's text (see gw), with ~ for the prefix and every key shown
 * decoded (see decode_keys), compared as JSON (an object's fields in any order, an array's
 * items in theirs), so that a field misspelt or too many is seen: the gateway takes both
 * silently.  The built JSON, as it is, into *raw (NULL: dropped).
 */
static void assert_txn(etxn *t, const char *prefix, const char *want, cJSON **raw)
{
    reign__buf w;
    reign__buf_init(&w);
    for (const char *c = want; *c; c++)
        if (*c == '~')
            reign__buf_puts(&w, prefix);
        else
            reign__buf_append(&w, c, 1);
    cJSON *exp = gw("%s", w.data), *got = build_ok(t), *shown = cJSON_Duplicate(got, true);
    decode_keys(shown);
    if (!cJSON_Compare(shown, exp, true)) {
        char *a = cJSON_PrintUnformatted(shown), *b = cJSON_PrintUnformatted(exp);
        print_error("got:  %s\nwant: %s\n", a, b);
        free(a);
        free(b);
        fail();
    }
    cJSON_Delete(exp);
    cJSON_Delete(shown);
    reign__buf_free(&w);
    if (raw)
        *raw = got;
    else
        cJSON_Delete(got);
}

static void check_create(const char *prefix)
{
    reign__etcd *e = etcd_new(prefix);
    /* A node under another: absent, its parent there. */
    reign__zk_mop p[] = {{.type = REIGN__ZK_MCREATE, .path = "/r/s/e/c", .data = "x\0y", .len = 3}};
    etxn t = write_txn(e, p, 1);
    assert_txn(&t, prefix,
               "{'compare':[{'key':'~/r/s/e/c','target':'CREATE','result':'EQUAL',"
               "'create_revision':'0'},{'key':'~/r/s/e','target':'CREATE','result':'GREATER',"
               "'create_revision':'0'}],'success':[{'request_put':{'key':'~/r/s/e/c','value':"
               "'x<00>y'}}],'failure':[{'request_range':{'key':'~/r/s/e/c','keys_only':true}},"
               "{'request_range':{'key':'~/r/s/e','keys_only':true}}]}",
               NULL);
    assert_string_equal(t.made[0], "/r/s/e/c"); /* paths without the prefix */
    assert_int_equal(t.put_index[0], 0);
    txn_done(&t);

    /* A top-level node: the root is always there, nothing to compare or read back for it;
     * no data: an empty value, still sent. */
    reign__zk_mop top[] = {mcreate("/r/s/e", "", 0)};
    t = write_txn(e, top, 1);
    assert_txn(&t, prefix,
               "{'compare':[{'key':'~/r/s/e','target':'CREATE','result':'EQUAL','create_revision':"
               "'0'}],'success':[{'request_put':{'key':'~/r/s/e','value':''}}],'failure':["
               "{'request_range':{'key':'~/r/s/e','keys_only':true}}]}",
               NULL);
    txn_done(&t);

    /* Ephemeral: on the session's lease, written as a string of every digit. */
    reign__zk_mop eph[] = {mcreate("/r/s/e", "v", REIGN__ZK_EPHEMERAL)};
    t = write_txn(e, eph, 1);
    assert_txn(&t, prefix,
               "{'compare':[{'key':'~/r/s/e','target':'CREATE','result':'EQUAL','create_revision':"
               "'0'}],'success':[{'request_put':{'key':'~/r/s/e','value':'v','lease':"
               "'8433168612965232141'}}],'failure':[{'request_range':{'key':'~/r/s/e',"
               "'keys_only':true}}]}",
               NULL);
    txn_done(&t);
    etcd_free(e);
}

static void test_build_create(void **state)
{
    check_create("");
    check_create("/team");

    /* No session, no ephemeral node: never a lasting node in its place. */
    reign__etcd *e = etcd_new("");
    e->lease = 0;
    reign__zk_mop p[] = {mcheck("/r/s/e", -1), mcreate("/r/s/e/c", "v", REIGN__ZK_EPHEMERAL)};
    etxn t = write_txn(e, p, 2);
    reign__buf b;
    reign__buf_init(&b);
    size_t bad = 99;
    assert_int_equal(reign__et_build(&t, &b, &bad), REIGN_ESESSION);
    assert_int_equal(bad, 1);
    reign__buf_free(&b);
    txn_done(&t);
    etcd_free(e);
}

static void check_sequential(const char *prefix)
{
    reign__etcd *e = etcd_new(prefix);
    /* The counter at the version last seen (none: 0, as an absent key's), moved to the next
     * number; the failure branch reads it with its value, first. */
    reign__zk_mop p[] = {mcreate("/r/s/e/n_", "d", REIGN__ZK_SEQUENCE | REIGN__ZK_EPHEMERAL)};
    etxn t = write_txn(e, p, 1);
    assert_txn(&t, prefix,
               "{'compare':[{'key':'~/r/s/e/.','target':'VERSION','result':'EQUAL','version':'0'},"
               "{'key':'~/r/s/e/n_0000000000','target':'CREATE','result':'EQUAL','create_revision':"
               "'0'},{'key':'~/r/s/e','target':'CREATE','result':'GREATER','create_revision':'0'}],"
               "'success':[{'request_put':{'key':'~/r/s/e/n_0000000000','value':'d','lease':"
               "'8433168612965232141'}},{'request_put':{'key':'~/r/s/e/.','value':'1'}}],"
               "'failure':[{'request_range':{'key':'~/r/s/e/.'}},{'request_range':{'key':"
               "'~/r/s/e/n_0000000000','keys_only':true}},{'request_range':{'key':'~/r/s/e',"
               "'keys_only':true}}]}",
               NULL);
    assert_string_equal(t.made[0], "/r/s/e/n_0000000000");
    assert_int_equal(t.put_index[0], 0);
    txn_done(&t);

    /* Two of one multi under one parent: numbered in order, one counter moved past both. */
    reign__zk_mop two[] = {mcreate("/r/s/e/n_", "a", REIGN__ZK_SEQUENCE),
                           mcreate("/r/s/e/f", "b", 0),
                           mcreate("/r/s/e/n_", "c", REIGN__ZK_SEQUENCE)};
    t = write_txn(e, two, 3);
    cJSON *j = build_ok(&t);
    assert_string_equal(t.made[0], "/r/s/e/n_0000000000");
    assert_string_equal(t.made[1], "/r/s/e/f");
    assert_string_equal(t.made[2], "/r/s/e/n_0000000002"); /* as ZooKeeper's child count */
    int counters = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, field(j, "compare"))
    {
        counters += !strcmp(field(c, "target")->valuestring, "VERSION");
    }
    assert_int_equal(counters, 1);
    assert_int_equal(count_of(j, "success"), 4);
    assert_put(j, 3, pk(prefix, "/r/s/e/."), "3");
    for (int i = 0; i < 3; i++)
        assert_int_equal(t.put_index[i], i);
    cJSON_Delete(j);
    txn_done(&t);
    etcd_free(e);
}

static void test_build_sequential(void **state)
{
    check_sequential("");
    check_sequential("/team");
}

static void check_delete(const char *prefix)
{
    reign__etcd *e = etcd_new(prefix);
    char kp[64];
    snprintf(kp, sizeof(kp), "%s/r/s/e/c/", prefix);
    /* There, and nothing below it but its counter, which goes with it (a key: nothing else can
     * be below); read back: the node, and how many are below. */
    reign__zk_mop p[] = {mdelete("/r/s/e/c", -1)};
    etxn t = write_txn(e, p, 1);
    cJSON *j;
    assert_txn(
        &t, prefix,
        "{'compare':[{'key':'~/r/s/e/c','target':'CREATE','result':'GREATER',"
        "'create_revision':'0'},{'key':'~/r/s/e/c/','range_end':'~/r/s/e/c/.','target':'CREATE',"
        "'result':'EQUAL','create_revision':'0'},{'key':'~/r/s/e/c/.<00>','range_end':"
        "'~/r/s/e/c0','target':'CREATE','result':'EQUAL','create_revision':'0'}],'success':["
        "{'request_delete_range':{'key':'~/r/s/e/c'}},{'request_delete_range':{'key':"
        "'~/r/s/e/c/.'}}],'failure':[{'request_range':{'key':'~/r/s/e/c','keys_only':true}},"
        "{'request_range':{'key':'~/r/s/e/c/','range_end':'~/r/s/e/c/.','count_only':true}},"
        "{'request_range':{'key':'~/r/s/e/c/.<00>','range_end':'~/r/s/e/c0','count_only':true}}]}",
        &j);
    assert_child_ranges(cJSON_GetArrayItem(field(j, "compare"), 1),
                        cJSON_GetArrayItem(field(j, "compare"), 2), kp);
    assert_child_ranges(item(j, "failure", 1, "request_range"),
                        item(j, "failure", 2, "request_range"), kp);
    assert_int_equal(t.put_index[0], -1);
    cJSON_Delete(j);
    txn_done(&t);

    /* At a version: ZooKeeper's + 1. */
    reign__zk_mop v[] = {mdelete("/r/s/e/c", 3)};
    t = write_txn(e, v, 1);
    j = build_ok(&t);
    assert_int_equal(count_of(j, "compare"), 4);
    assert_cmp(j, 1, pk(prefix, "/r/s/e/c"), "VERSION", "EQUAL", "version", "4");
    cJSON_Delete(j);
    txn_done(&t);
    etcd_free(e);
}

static void test_build_delete(void **state)
{
    check_delete("");
    check_delete("/team");
}

static void test_build_set(void **state)
{
    reign__etcd *e = etcd_new("/team");
    /* ignore_lease: an ephemeral node stays one; prev_kv: for the stat. */
    reign__zk_mop p[] = {mset("/r/s/e", "y", 2)};
    etxn t = write_txn(e, p, 1);
    assert_txn(
        &t, "/team",
        "{'compare':[{'key':'~/r/s/e','target':'CREATE','result':'GREATER','create_revision':"
        "'0'},{'key':'~/r/s/e','target':'VERSION','result':'EQUAL','version':'3'}],"
        "'success':[{'request_put':{'key':'~/r/s/e','value':'y','ignore_lease':true,"
        "'prev_kv':true}}],'failure':[{'request_range':{'key':'~/r/s/e','keys_only':true}}]}",
        NULL);
    assert_int_equal(t.put_index[0], 0);
    txn_done(&t);

    /* Any version: only there.  A check: the same comparisons, nothing written. */
    reign__zk_mop any[] = {mset("/r/s/e", "", -1)};
    t = write_txn(e, any, 1);
    assert_txn(
        &t, "/team",
        "{'compare':[{'key':'~/r/s/e','target':'CREATE','result':'GREATER','create_revision':"
        "'0'}],'success':[{'request_put':{'key':'~/r/s/e','value':'','ignore_lease':true,"
        "'prev_kv':true}}],'failure':[{'request_range':{'key':'~/r/s/e','keys_only':true}}]}",
        NULL);
    txn_done(&t);
    reign__zk_mop chk[] = {mcheck("/r/s/e", 0)};
    t = write_txn(e, chk, 1);
    assert_txn(
        &t, "/team",
        "{'compare':[{'key':'~/r/s/e','target':'CREATE','result':'GREATER','create_revision':"
        "'0'},{'key':'~/r/s/e','target':'VERSION','result':'EQUAL','version':'1'}],"
        "'success':[],'failure':[{'request_range':{'key':'~/r/s/e','keys_only':true}}]}",
        NULL);
    txn_done(&t);
    etcd_free(e);
}

static void test_build_multi(void **state)
{
    reign__etcd *e = etcd_new("");
    /* Made, then set (twice): one put, carrying the last set's data; no compare on the sets. */
    reign__zk_mop cs[] = {mcreate("/r/s/e/c", "x", 0), mset("/r/s/e/c", "yy", 0),
                          mset("/r/s/e/c", "zzz", 1)};
    etxn t = write_txn(e, cs, 3);
    assert_txn(
        &t, "",
        "{'compare':[{'key':'/r/s/e/c','target':'CREATE','result':'EQUAL','create_revision':"
        "'0'},{'key':'/r/s/e','target':'CREATE','result':'GREATER','create_revision':'0'}],"
        "'success':[{'request_put':{'key':'/r/s/e/c','value':'zzz'}}],'failure':["
        "{'request_range':{'key':'/r/s/e/c','keys_only':true}},{'request_range':{'key':'/r/s/e',"
        "'keys_only':true}},{'request_range':{'key':'/r/s/e/c','keys_only':true}},"
        "{'request_range':{'key':'/r/s/e/c','keys_only':true}}]}",
        NULL);
    assert_int_equal(t.put_index[0], 0);
    assert_int_equal(t.put_index[1], -1);
    assert_int_equal(t.put_index[2], -1);
    txn_done(&t);

    /* Deleted, then made again: one put over the key (prev_kv: its version), no delete; the
     * node there and without children, not absent, which the delete makes it. */
    reign__zk_mop dc[] = {mdelete("/r/s/e/c", -1), mcreate("/r/s/e/c", "z", REIGN__ZK_EPHEMERAL)};
    t = write_txn(e, dc, 2);
    assert_txn(
        &t, "",
        "{'compare':[{'key':'/r/s/e/c','target':'CREATE','result':'GREATER','create_revision':"
        "'0'},{'key':'/r/s/e/c/','range_end':'/r/s/e/c/.','target':'CREATE','result':'EQUAL',"
        "'create_revision':'0'},{'key':'/r/s/e/c/.<00>','range_end':'/r/s/e/c0','target':"
        "'CREATE','result':'EQUAL','create_revision':'0'},{'key':'/r/s/e','target':'CREATE',"
        "'result':'GREATER','create_revision':'0'}],'success':[{'request_put':{'key':"
        "'/r/s/e/c','value':'z','lease':'8433168612965232141','prev_kv':true}}],'failure':["
        "{'request_range':{'key':'/r/s/e/c','keys_only':true}},{'request_range':{'key':"
        "'/r/s/e/c/','range_end':'/r/s/e/c/.','count_only':true}},{'request_range':{'key':"
        "'/r/s/e/c/.<00>','range_end':'/r/s/e/c0','count_only':true}},{'request_range':{'key':"
        "'/r/s/e/c','keys_only':true}},{'request_range':{'key':'/r/s/e','keys_only':true}}]}",
        NULL);
    assert_int_equal(t.put_index[0], -1);
    assert_int_equal(t.put_index[1], 0);
    txn_done(&t);

    /* A parent made by the multi itself is not compared. */
    reign__zk_mop pc[] = {mcreate("/r/s/e", "", 0), mcreate("/r/s/e/c", "", 0)};
    t = write_txn(e, pc, 2);
    assert_txn(
        &t, "",
        "{'compare':[{'key':'/r/s/e','target':'CREATE','result':'EQUAL','create_revision':"
        "'0'},{'key':'/r/s/e/c','target':'CREATE','result':'EQUAL','create_revision':'0'}],"
        "'success':[{'request_put':{'key':'/r/s/e','value':''}},{'request_put':{'key':"
        "'/r/s/e/c','value':''}}],'failure':[{'request_range':{'key':'/r/s/e','keys_only':true}},"
        "{'request_range':{'key':'/r/s/e/c','keys_only':true}},{'request_range':{'key':'/r/s/e',"
        "'keys_only':true}}]}",
        NULL);
    txn_done(&t);

    /* What ZooKeeper would refuse on what the multi itself does, refused here. */
    struct {
        reign__zk_mop p[2];
        int rc;
    } refused[] = {
        {{mcreate("/r/s/e/c", "", 0), mset("/r/s/e/c", "v", 1)}, REIGN_EBADVERSION},
        {{mcreate("/r/s/e/c", "", 0), mcheck("/r/s/e/c", 2)}, REIGN_EBADVERSION},
        {{mcreate("/r/s/e/c", "", 0), mcreate("/r/s/e/c", "", 0)}, REIGN_EEXIST},
        {{mdelete("/r/s/e/c", -1), mset("/r/s/e/c", "v", -1)}, REIGN_ENOENT},
        {{mdelete("/r/s/e/c", -1), mdelete("/r/s/e/c", -1)}, REIGN_ENOENT},
        {{mdelete("/r/s/e", -1), mcreate("/r/s/e/c", "", 0)}, REIGN_ENOENT},
        {{mcreate("/r/s/e/c", "", 0), mdelete("/r/s/e/c", -1)}, REIGN_ENOTSUP},
        {{mcheck("/r/s/e", -1), mcreate("e", "", 0)}, REIGN_ENOENT}, /* no parent at all */
    };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        t = write_txn(e, refused[i].p, 2);
        reign__buf b;
        reign__buf_init(&b);
        size_t bad = 99;
        int rc = reign__et_build(&t, &b, &bad);
        if (rc != refused[i].rc || bad != 1)
            fail_msg("case %zu: %d at part %zu, want %d at part 1", i, rc, bad, refused[i].rc);
        reign__buf_free(&b);
        txn_done(&t);
    }
    etcd_free(e);
}

static void check_reads(const char *prefix)
{
    reign__etcd *e = etcd_new(prefix);
    /* Read-only txns (no compare: they succeed, linearizable).  exists: the node, and the
     * count of what is below it but its counter; get: the same with the value. */
    static const char *const want[] = {
        [EO_EXISTS] =
            "{'success':[{'request_range':{'key':'~/r/s/e/c','keys_only':true}},"
            "{'request_range':{'key':'~/r/s/e/c/','range_end':'~/r/s/e/c/.','count_only':true}},"
            "{'request_range':{'key':'~/r/s/e/c/.<00>','range_end':'~/r/s/e/c0','count_only':"
            "true}}]}",
        [EO_GET] =
            "{'success':[{'request_range':{'key':'~/r/s/e/c'}},{'request_range':{'key':"
            "'~/r/s/e/c/','range_end':'~/r/s/e/c/.','count_only':true}},{'request_range':{'key':"
            "'~/r/s/e/c/.<00>','range_end':'~/r/s/e/c0','count_only':true}}]}",
        /* the direct children are picked from the keys below on reading */
        [EO_CHILDREN] = "{'success':[{'request_range':{'key':'~/r/s/e/c','keys_only':true}},"
                        "{'request_range':{'key':'~/r/s/e/c/','range_end':'~/r/s/e/c0','keys_only':"
                        "true}}]}"};
    for (int type = EO_EXISTS; type <= EO_CHILDREN; type++) {
        etxn t = read_txn(e, (enum eop_type)type, "/r/s/e/c");
        assert_txn(&t, prefix, want[type], NULL);
        txn_done(&t);
    }
    /* The root is always there: no range for it, only for what is below the prefix. */
    etxn t = read_txn(e, EO_CHILDREN, "/");
    assert_txn(&t, prefix,
               "{'success':[{'request_range':{'key':'~/','range_end':'~0','keys_only':"
               "true}}]}",
               NULL);
    txn_done(&t);
    t = read_txn(e, EO_EXISTS, "/");
    cJSON *j;
    assert_txn(&t, prefix,
               "{'success':[{'request_range':{'key':'~/','range_end':'~/.','count_only':true}},"
               "{'request_range':{'key':'~/.<00>','range_end':'~0','count_only':true}}]}",
               &j);
    char kp[16];
    snprintf(kp, sizeof(kp), "%s/", prefix);
    assert_child_ranges(item(j, "success", 0, "request_range"),
                        item(j, "success", 1, "request_range"), kp);
    cJSON_Delete(j);
    txn_done(&t);
    etcd_free(e);
}

static void test_build_read(void **state)
{
    check_reads("");
    check_reads("/team");
}

/* ---- etcd_txn.c: what is answered ---------------------------------------------------------- */

/* A read's answer for t, parsed from the gateway's text. */
static int64_t read_answer(etxn *t, const char *text, reign__zk_result *r, bool *present)
{
    cJSON *j = gw("%s", text);
    *r = (reign__zk_result){.failed_op = -1};
    int64_t rev = reign__et_read(t, j, r, present);
    cJSON_Delete(j);
    return rev;
}

static void test_read_node(void **state)
{
    reign__etcd *e = etcd_new("");
    reign__zk_result r;
    bool present = false;
    /* get: the value; "count" only where there are keys below. */
    etxn t = read_txn(e, EO_GET, "/r/s/e");
    assert_true(
        read_answer(&t,
                    "{@57,'succeeded':true,'responses':[{'response_range':{@57,'kvs':["
                    "{'key':'L3Ivcy9l','create_revision':'50','mod_revision':'55','version':"
                    "'3','value':'aGVsbG8=','lease':'8433168612965232141'}],'count':'1'}},"
                    "{'response_range':{@57,'count':'2'}},{'response_range':{@57}}]}",
                    &r, &present) == 57);
    assert_true(present);
    assert_int_equal(r.rc, 0);
    assert_true(r.has_stat);
    assert_stat(&r.stat, 50, 55, 2, LEASE, 5, 2); /* version: etcd's - 1 */
    assert_int_equal(r.value_len, 5);
    assert_memory_equal(r.value, "hello", 6);
    reign__et_result_free(&t, &r);
    assert_null(t.value);
    txn_done(&t);

    /* exists: keys_only, no value; no lease: not ephemeral; nothing below: no count. */
    const char *plain = "{@58,'succeeded':true,'responses':[{'response_range':{@58,'kvs':[{'key':"
                        "'L3Ivcy9l','create_revision':'50','mod_revision':'50','version':'1'}],"
                        "'count':'1'}},{'response_range':{@58}},{'response_range':{@58}}]}";
    t = read_txn(e, EO_EXISTS, "/r/s/e");
    assert_true(read_answer(&t, plain, &r, &present) == 58);
    assert_true(present);
    assert_int_equal(r.rc, 0);
    assert_true(r.has_stat);
    assert_stat(&r.stat, 50, 50, 0, 0, 0, 0);
    assert_null(r.value);
    reign__et_result_free(&t, &r);
    txn_done(&t);
    /* get of the same: the empty value, "" and not NULL. */
    t = read_txn(e, EO_GET, "/r/s/e");
    read_answer(&t, plain, &r, &present);
    assert_non_null(r.value);
    assert_int_equal(r.value_len, 0);
    assert_string_equal(r.value, "");
    reign__et_result_free(&t, &r);
    txn_done(&t);

    /* Absent: ENOENT, no stat, and the revision all the same (an exists watch needs it). */
    for (int type = EO_EXISTS; type <= EO_CHILDREN; type++) {
        t = read_txn(e, (enum eop_type)type, "/r/s/e");
        present = true;
        assert_true(read_answer(&t,
                                "{@57,'succeeded':true,'responses':[{'response_range':{@57}},"
                                "{'response_range':{@57}},{'response_range':{@57}}]}",
                                &r, &present) == 57);
        assert_false(present);
        assert_int_equal(r.rc, REIGN_ENOENT);
        assert_false(r.has_stat);
        assert_null(r.value);
        assert_int_equal(r.n_children, 0);
        reign__et_result_free(&t, &r);
        txn_done(&t);
    }
    etcd_free(e);
}

static void test_read_children(void **state)
{
    reign__etcd *e = etcd_new("");
    reign__zk_result r;
    bool present = false;
    /* "/r/s/e/." is the counter, "/r/s/e/a/x" and "/r/s/e/a/." are below a child; ".hid" is a name.
     */
    etxn t = read_txn(e, EO_CHILDREN, "/r/s/e");
    assert_true(
        read_answer(
            &t,
            "{@60,'succeeded':true,'responses':[{'response_range':{@60,'kvs':[{'key':"
            "'L3Ivcy9l','create_revision':'50','mod_revision':'55','version':'3'}],'count':"
            "'1'}},{'response_range':{@60,'kvs':["
            "{'key':'L3Ivcy9lLy4=','create_revision':'51','mod_revision':'59','version':'4'},"
            "{'key':'L3Ivcy9lLy5oaWQ=','create_revision':'52','mod_revision':'52','version':"
            "'1'},{'key':'L3Ivcy9lL2E=','create_revision':'53','mod_revision':'53','version':"
            "'1','lease':'8433168612965232141'},"
            "{'key':'L3Ivcy9lL2EvLg==','create_revision':'54','mod_revision':'54','version':'1'},"
            "{'key':'L3Ivcy9lL2EveA==','create_revision':'56','mod_revision':'56','version':'1'},"
            "{'key':'L3Ivcy9lL2I=','create_revision':'58','mod_revision':'58','version':'1'}"
            "],'count':'6'}}]}",
            &r, &present) == 60);
    assert_true(present);
    assert_int_equal(r.rc, 0);
    assert_true(r.has_stat);
    assert_stat(&r.stat, 50, 55, 2, 0, 0, 3);
    assert_int_equal(r.n_children, 3);
    assert_string_equal(r.children[0], ".hid");
    assert_string_equal(r.children[1], "a");
    assert_string_equal(r.children[2], "b");
    reign__et_result_free(&t, &r);
    assert_null(r.children);
    assert_int_equal(r.n_children, 0);
    txn_done(&t);

    /* A node without children: the range's kvs and count are left out. */
    t = read_txn(e, EO_CHILDREN, "/r/s/e");
    read_answer(
        &t,
        "{@61,'succeeded':true,'responses':[{'response_range':{@61,'kvs':[{'key':'L3Ivcy9l',"
        "'create_revision':'50','mod_revision':'55','version':'3'}],'count':'1'}},"
        "{'response_range':{@61}}]}",
        &r, &present);
    assert_true(present);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.n_children, 0);
    reign__et_result_free(&t, &r);
    txn_done(&t);
    etcd_free(e);

    /* The root's, under a prefix: one range, no node read ("/team/." is its counter). */
    e = etcd_new("/team");
    t = read_txn(e, EO_CHILDREN, "/");
    assert_true(
        read_answer(&t,
                    "{@62,'succeeded':true,'responses':[{'response_range':{@62,'kvs':["
                    "{'key':'L3RlYW0vLg==','create_revision':'3','mod_revision':'9','version':'2'},"
                    "{'key':'L3RlYW0vZQ==','create_revision':'4','mod_revision':'4','version':'1'},"
                    "{'key':'L3RlYW0vcmVpZ24=','create_revision':'5','mod_revision':'5',"
                    "'version':'1'},{'key':'L3RlYW0vcmVpZ24veA==','create_revision':'6',"
                    "'mod_revision':'6','version':'1'}],'count':'4'}}]}",
                    &r, &present) == 62);
    assert_true(present);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.n_children, 2);
    assert_string_equal(r.children[0], "e");
    assert_string_equal(r.children[1], "reign");
    reign__et_result_free(&t, &r);
    txn_done(&t);
    etcd_free(e);
}

/* What the failure branch of a txn read: nothing; "/r/s/e" at etcd's version 3 or 5; "/r/s/e/c" at
 * 1; a count of keys below. */
#define NONE "{'response_range':{@62}}"
#define E_V3                                                                                       \
    "{'response_range':{@62,'kvs':[{'key':'L3Ivcy9l','create_revision':'50','mod_revision':'55',"  \
    "'version':'3'}],'count':'1'}}"
#define E_V5                                                                                       \
    "{'response_range':{@62,'kvs':[{'key':'L3Ivcy9l','create_revision':'50','mod_revision':'60',"  \
    "'version':'5'}],'count':'1'}}"
#define C_V1                                                                                       \
    "{'response_range':{@62,'kvs':[{'key':'L3Ivcy9lL2M=','create_revision':'58','mod_revision':'"  \
    "58',"                                                                                         \
    "'version':'1'}],'count':'1'}}"
#define COUNT1 "{'response_range':{@62,'count':'1'}}"
#define COUNT2 "{'response_range':{@62,'count':'2'}}"

/* A failed txn's answer (its n responses, in the order of its failure branch) read by t: the
 * result, and whether to send it again. */
static bool failed(etxn *t, reign__zk_result *r, int n, ...)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "{@62,'responses':[");
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) {
        reign__buf_puts(&b, i ? "," : "");
        reign__buf_puts(&b, va_arg(ap, const char *));
    }
    va_end(ap);
    reign__buf_puts(&b, "]}");
    cJSON *j = gw("%s", b.data);
    reign__buf_free(&b);
    *r = (reign__zk_result){.rc = 12345, .failed_op = 12345};
    bool again = reign__et_write_failed(t, j, r);
    cJSON_Delete(j);
    return again;
}

static void assert_failed(const reign__zk_result *r, int rc, int failed_op)
{
    if (r->rc != rc || r->failed_op != failed_op)
        fail_msg("failed with %d at part %d, want %d at part %d", r->rc, r->failed_op, rc,
                 failed_op);
}

static void test_write_failed(void **state)
{
    reign__etcd *e = etcd_new("");
    reign__zk_result r;
    reign__zk_mop c[] = {mcreate("/r/s/e/c", "x", 0)};
    etxn t = write_txn(e, c, 1);
    cJSON_Delete(build_ok(&t));
    /* The failure branch read the node and its parent: both absent; the node there. */
    assert_false(failed(&t, &r, 2, NONE, NONE));
    assert_failed(&r, REIGN_ENOENT, 0);
    assert_false(failed(&t, &r, 2, C_V1, E_V3));
    assert_failed(&r, REIGN_EEXIST, 0);
    /* Nothing explains it (a compare no part made?): the store's error, logged. */
    assert_false(failed(&t, &r, 2, NONE, E_V3));
    assert_failed(&r, REIGN_EBACKEND, 0);
    txn_done(&t);

    /* Which part of a multi: the second; the first when both would fail. */
    reign__zk_mop m[] = {mcheck("/r/s/e", -1), mcreate("/r/s/e/c", "x", 0)};
    t = write_txn(e, m, 2);
    cJSON_Delete(build_ok(&t));
    assert_false(failed(&t, &r, 3, E_V3, C_V1, E_V3));
    assert_failed(&r, REIGN_EEXIST, 1);
    assert_false(failed(&t, &r, 3, NONE, NONE, NONE));
    assert_failed(&r, REIGN_ENOENT, 0);
    txn_done(&t);

    /* A set at version 2 (etcd's 3): of a node at etcd's 5; of none; at 3 nothing explains. */
    reign__zk_mop s[] = {mset("/r/s/e", "y", 2)};
    t = write_txn(e, s, 1);
    cJSON_Delete(build_ok(&t));
    assert_false(failed(&t, &r, 1, E_V5));
    assert_failed(&r, REIGN_EBADVERSION, 0);
    assert_false(failed(&t, &r, 1, NONE));
    assert_failed(&r, REIGN_ENOENT, 0);
    assert_false(failed(&t, &r, 1, E_V3));
    assert_failed(&r, REIGN_EBACKEND, 0);
    txn_done(&t);

    /* A delete: children left in either range; gone; a bad version said before children. */
    reign__zk_mop d[] = {mdelete("/r/s/e", -1)};
    t = write_txn(e, d, 1);
    cJSON_Delete(build_ok(&t));
    assert_false(failed(&t, &r, 3, E_V3, NONE, COUNT2));
    assert_failed(&r, REIGN_ENOTEMPTY, 0);
    assert_false(failed(&t, &r, 3, E_V3, COUNT1, NONE));
    assert_failed(&r, REIGN_ENOTEMPTY, 0);
    assert_false(failed(&t, &r, 3, NONE, NONE, NONE));
    assert_failed(&r, REIGN_ENOENT, 0);
    txn_done(&t);
    reign__zk_mop dv[] = {mdelete("/r/s/e", 0)};
    t = write_txn(e, dv, 1);
    cJSON_Delete(build_ok(&t));
    assert_false(failed(&t, &r, 3, E_V3, NONE, COUNT2));
    assert_failed(&r, REIGN_EBADVERSION, 0);
    txn_done(&t);
    etcd_free(e);
}

/* The range of the counter "/r/s/e/." at `version`, saying `next` (base64) is the next number. */
static const char *counter_at(char *out, size_t n, int version, const char *next)
{
    snprintf(out, n,
             "{'response_range':{@62,'kvs':[{'key':'L3Ivcy9lLy4=','create_revision':'40',"
             "'mod_revision':'59','version':'%d','value':'%s'}],'count':'1'}}",
             version, next);
    return out;
}

static void test_sequence_counter(void **state)
{
    reign__etcd *e = etcd_new("");
    reign__zk_result r;
    char ctr[256];
    reign__zk_mop p[] = {mcreate("/r/s/e/n_", "", REIGN__ZK_SEQUENCE)};
    etxn t = write_txn(e, p, 1);
    cJSON *j = build_ok(&t);
    assert_string_equal(t.made[0], "/r/s/e/n_0000000000");
    cJSON_Delete(j);
    /* Someone took numbers meanwhile: the counter, at version 4, says 9 ("OQ==") is next. */
    assert_true(failed(&t, &r, 3, counter_at(ctr, sizeof(ctr), 4, "OQ=="), NONE, E_V3));
    j = build_ok(&t);
    assert_string_equal(t.made[0], "/r/s/e/n_0000000009");
    assert_cmp(j, 0, "/r/s/e/.", "VERSION", "EQUAL", "version", "4");
    assert_put(j, 1, "/r/s/e/.", "10");
    cJSON_Delete(j);
    /* Taken: the next create counts from there without asking. */
    j = gw("{@63,'succeeded':true,'responses':[{'response_put':{@63}},{'response_put':{@63}}]}");
    reign__et_write_ok(&t, j, &r);
    cJSON_Delete(j);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.value, "/r/s/e/n_0000000009");
    assert_string_equal(r.last_created, "/r/s/e/n_0000000009");
    j = build_ok(&t);
    assert_string_equal(t.made[0], "/r/s/e/n_0000000010");
    assert_cmp(j, 0, "/r/s/e/.", "VERSION", "EQUAL", "version", "5");
    assert_put(j, 1, "/r/s/e/.", "11");
    cJSON_Delete(j);
    /* The counter as expected, the node there ("/r/s/e/n_0000000010"): EEXIST, no second try. */
    assert_false(failed(&t, &r, 3, counter_at(ctr, sizeof(ctr), 5, "MTA="),
                        "{'response_range':{@62,'kvs':[{'key':'L3Ivcy9lL25fMDAwMDAwMDAxMA==',"
                        "'create_revision':'61','mod_revision':'61','version':'1'}],'count':'1'}}",
                        E_V3));
    assert_failed(&r, REIGN_EEXIST, 0);
    /* Beaten every time: it gives up, with an error, after a bounded number of tries. */
    int tries = 0;
    while (tries < 1000 &&
           failed(&t, &r, 3, counter_at(ctr, sizeof(ctr), 6 + tries, "OQ=="), NONE, E_V3))
        tries++;
    assert_true(tries > 1 && tries < 1000);
    assert_failed(&r, REIGN_EBACKEND, 0);
    txn_done(&t);
    etcd_free(e);
}

/* A successful txn's answer, read by t. */
static void ok(etxn *t, const char *text, reign__zk_result *r)
{
    cJSON *j = gw("%s", text);
    memset(r, 0x5a, sizeof(*r));
    reign__et_write_ok(t, j, r);
    cJSON_Delete(j);
}

static void test_write_ok(void **state)
{
    reign__etcd *e = etcd_new("");
    reign__zk_result r;
    /* A create: its path, and a stat at the txn's revision. */
    reign__zk_mop c[] = {mcreate("/r/s/e/c", "xyz", REIGN__ZK_EPHEMERAL)};
    etxn t = write_txn(e, c, 1);
    cJSON_Delete(build_ok(&t));
    ok(&t, "{@62,'succeeded':true,'responses':[{'response_put':{@62}}]}", &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.failed_op, -1);
    assert_string_equal(r.value, "/r/s/e/c");
    assert_int_equal(r.value_len, 8);
    assert_string_equal(r.last_created, "/r/s/e/c");
    assert_int_equal(r.made_version, 0);
    assert_true(r.has_stat);
    assert_stat(&r.stat, 62, 62, 0, LEASE, 3, 0);
    assert_null(r.children);
    txn_done(&t);

    /* A set: its stat from the key as it was (prev_kv), one version on. */
    reign__zk_mop s[] = {mset("/r/s/e", "y", 2)};
    t = write_txn(e, s, 1);
    cJSON_Delete(build_ok(&t));
    ok(&t,
       "{@63,'succeeded':true,'responses':[{'response_put':{@63,'prev_kv':{'key':'L3Ivcy9l',"
       "'create_revision':'50','mod_revision':'55','version':'3','value':'aGVsbG8=',"
       "'lease':'8433168612965232141'}}}]}",
       &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.failed_op, -1);
    assert_null(r.value);
    assert_true(r.has_stat);
    assert_stat(&r.stat, 50, 63, 3, LEASE, 1, 0);
    txn_done(&t);

    /* Made then set in one multi: version 0 (one put), the set's data. */
    reign__zk_mop cs[] = {mcreate("/r/s/e/c", "x", 0), mset("/r/s/e/c", "yy", 0)};
    t = write_txn(e, cs, 2);
    cJSON_Delete(build_ok(&t));
    ok(&t, "{@65,'succeeded':true,'responses':[{'response_put':{@65}}]}", &r);
    assert_string_equal(r.value, "/r/s/e/c");
    assert_true(r.has_stat);
    assert_stat(&r.stat, 65, 65, 0, 0, 2, 0);
    txn_done(&t);

    /* Deleted and made again: put over the old key, whose version goes on (made_version). */
    reign__zk_mop dc[] = {mdelete("/r/s/e/c", -1), mcreate("/r/s/e/c", "z", 0)};
    t = write_txn(e, dc, 2);
    cJSON_Delete(build_ok(&t));
    ok(&t,
       "{@64,'succeeded':true,'responses':[{'response_put':{@64,'prev_kv':{'key':'L3Ivcy9lL2M=',"
       "'create_revision':'58','mod_revision':'60','version':'4'}}}]}",
       &r);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.value, "/r/s/e/c");
    assert_int_equal(r.made_version, 4);
    txn_done(&t);
    etcd_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_b64),          cmocka_unit_test(test_i64),
        cmocka_unit_test(test_bytes),        cmocka_unit_test(test_error),
        cmocka_unit_test(test_prefix_end),   cmocka_unit_test(test_login),
        cmocka_unit_test(test_build_create), cmocka_unit_test(test_build_sequential),
        cmocka_unit_test(test_build_delete), cmocka_unit_test(test_build_set),
        cmocka_unit_test(test_build_multi),  cmocka_unit_test(test_build_read),
        cmocka_unit_test(test_read_node),    cmocka_unit_test(test_read_children),
        cmocka_unit_test(test_write_failed), cmocka_unit_test(test_sequence_counter),
        cmocka_unit_test(test_write_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
