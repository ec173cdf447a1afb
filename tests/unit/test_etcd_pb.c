/*
 * test_etcd_pb.c - the gateway's JSON as gRPC's protobuf and back (src/etcd/etcd_pb.c), with no
 * etcd: request bodies as reign writes them, encoded, then unpacked by protobuf-c and checked
 * field by field; answers built as protobuf-c structs, packed, and read back as the JSON the
 * gateway would have written, compared whole.  JSON is written with ' for " so that it fits.
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
#include "etcd_rpc.pb-c.h"
#include "oom.h"

#define LEASE INT64_C(7587869012345678901) /* 19 digits: a double would lose them */

/* ---- helpers ------------------------------------------------------------------------------- */

/* s with each ' made a " (four at a time stay valid). */
static const char *J(const char *s)
{
    static char bufs[4][4096];
    static int k;
    char *b = bufs[k++ & 3];
    size_t n = strlen(s);
    assert_true(n < sizeof(bufs[0]));
    for (size_t i = 0; i <= n; i++)
        b[i] = s[i] == '\'' ? '"' : s[i];
    return b;
}

static const reign__pb_method *method(const char *path)
{
    const reign__pb_method *m = reign__pb_method_of(path);
    assert_non_null(m);
    return m;
}

/* The gRPC body of a gateway body (' for "): 0 or the error, why said. */
static int encode(const char *path, const char *body, reign__buf *out, char *why, size_t whylen)
{
    const char *json = J(body);
    return reign__pb_request(method(path), json, strlen(json), out, why, whylen);
}

/* The message at *at of a gRPC body, whose prefix is checked; *at moves past it. */
static const uint8_t *frame_at(const reign__buf *b, size_t *at, size_t *len)
{
    const uint8_t *d = (const uint8_t *)b->data + *at;
    assert_true(b->len - *at >= 5);
    assert_int_equal(d[0], 0);
    *len = (size_t)d[1] << 24 | (size_t)d[2] << 16 | (size_t)d[3] << 8 | d[4];
    assert_true(b->len - *at - 5 >= *len);
    *at += 5 + *len;
    return d + 5;
}

/* msg packed, then read back through path's method: the JSON must be want (' for "). */
static void answer_is(const char *path, const ProtobufCMessage *msg, const char *want)
{
    size_t n = protobuf_c_message_get_packed_size(msg);
    uint8_t *bytes = malloc(n ? n : 1);
    assert_non_null(bytes);
    assert_int_equal(protobuf_c_message_pack(msg, bytes), n);
    reign__buf out;
    reign__buf_init(&out);
    assert_int_equal(reign__pb_answer(method(path), bytes, n, &out), 0);
    assert_string_equal(out.data, J(want));
    reign__buf_free(&out);
    free(bytes);
}

static ProtobufCBinaryData bin(const char *s)
{
    return (ProtobufCBinaryData){strlen(s), (uint8_t *)s};
}

static bool bin_is(ProtobufCBinaryData b, const char *s)
{
    return b.len == strlen(s) && (!b.len || !memcmp(b.data, s, b.len));
}

/* ---- the methods --------------------------------------------------------------------------- */

static void test_methods(void **state)
{
    static const struct {
        const char *gateway, *path;
        bool streaming;
    } all[] = {
        {"/v3/kv/range", "/etcdserverpb.KV/Range", false},
        {"/v3/kv/put", "/etcdserverpb.KV/Put", false},
        {"/v3/kv/deleterange", "/etcdserverpb.KV/DeleteRange", false},
        {"/v3/kv/txn", "/etcdserverpb.KV/Txn", false},
        {"/v3/watch", "/etcdserverpb.Watch/Watch", true},
        {"/v3/lease/grant", "/etcdserverpb.Lease/LeaseGrant", false},
        {"/v3/lease/revoke", "/etcdserverpb.Lease/LeaseRevoke", false},
        {"/v3/lease/keepalive", "/etcdserverpb.Lease/LeaseKeepAlive", true},
        {"/v3/auth/authenticate", "/etcdserverpb.Auth/Authenticate", false},
    };
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        const reign__pb_method *m = method(all[i].gateway);
        assert_string_equal(reign__pb_path(m), all[i].path);
        assert_int_equal(reign__pb_streaming(m), all[i].streaming);
    }
    assert_null(reign__pb_method_of("/v3/kv/compaction"));
    assert_null(reign__pb_method_of("/v3/kv/txn/"));
    assert_null(reign__pb_method_of(NULL));
}

/* ---- requests ------------------------------------------------------------------------------ */

/* A txn of every part reign's txns have: compares of each target, a txn inside a txn, puts with
 * a lease, ignore_lease and prev_kv, ranges keys_only and count_only, a delete of a range. */
static const char txn_body[] =
    "{'compare':[{'key':'L3IvZS9h','target':'VERSION','result':'EQUAL','version':'1'},"
    "{'key':'L3IvZS9i','target':'CREATE','result':'GREATER','create_revision':'0'}],"
    "'success':[{'request_txn':{'compare':[{'key':'L3IvZS9j','target':'MOD','result':'LESS',"
    "'mod_revision':'12'}],'success':[{'request_put':{'key':'L3IvZS9j','value':'aGVsbG8=',"
    "'lease':'7587869012345678901','prev_kv':true}}],'failure':[{'request_range':"
    "{'key':'L3IvZS9j','keys_only':true}}]}},"
    "{'request_put':{'key':'L3IvZS9h','value':'','ignore_lease':true,'prev_kv':true}},"
    "{'request_delete_range':{'key':'L3IvZS8=','range_end':'L3IvZTA='}}],"
    "'failure':[{'request_range':{'key':'L3IvZS8=','range_end':'L3IvZTA=','count_only':true}},"
    "{'request_range':{'key':'L3IvZS9h','keys_only':true}}]}";

static void test_txn_request(void **state)
{
    reign__buf out;
    reign__buf_init(&out);
    char why[256];
    assert_int_equal(encode("/v3/kv/txn", txn_body, &out, why, sizeof(why)), 0);
    size_t at = 0, len;
    const uint8_t *msg = frame_at(&out, &at, &len);
    assert_int_equal(at, out.len);
    Etcdserverpb__TxnRequest *t = etcdserverpb__txn_request__unpack(NULL, len, msg);
    assert_non_null(t);

    assert_int_equal(t->n_compare, 2);
    Etcdserverpb__Compare *c0 = t->compare[0], *c1 = t->compare[1];
    assert_true(bin_is(c0->key, "/r/e/a"));
    assert_int_equal(c0->target, ETCDSERVERPB__COMPARE__COMPARE_TARGET__VERSION);
    assert_int_equal(c0->result, ETCDSERVERPB__COMPARE__COMPARE_RESULT__EQUAL);
    assert_int_equal(c0->target_union_case, ETCDSERVERPB__COMPARE__TARGET_UNION_VERSION);
    assert_int_equal(c0->version, 1);
    /* A oneof's member at zero is still sent: it is the one set. */
    assert_int_equal(c1->target, ETCDSERVERPB__COMPARE__COMPARE_TARGET__CREATE);
    assert_int_equal(c1->result, ETCDSERVERPB__COMPARE__COMPARE_RESULT__GREATER);
    assert_int_equal(c1->target_union_case, ETCDSERVERPB__COMPARE__TARGET_UNION_CREATE_REVISION);
    assert_int_equal(c1->create_revision, 0);

    assert_int_equal(t->n_success, 3);
    assert_int_equal(t->success[0]->request_case, ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_TXN);
    Etcdserverpb__TxnRequest *in = t->success[0]->request_txn;
    assert_int_equal(in->n_compare, 1);
    assert_int_equal(in->compare[0]->target, ETCDSERVERPB__COMPARE__COMPARE_TARGET__MOD);
    assert_int_equal(in->compare[0]->result, ETCDSERVERPB__COMPARE__COMPARE_RESULT__LESS);
    assert_int_equal(in->compare[0]->mod_revision, 12);
    assert_int_equal(in->n_success, 1);
    assert_int_equal(in->success[0]->request_case, ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_PUT);
    Etcdserverpb__PutRequest *put = in->success[0]->request_put;
    assert_true(bin_is(put->key, "/r/e/c"));
    assert_true(bin_is(put->value, "hello"));
    assert_int_equal(put->lease, LEASE);
    assert_true(put->prev_kv);
    assert_false(put->ignore_lease);
    assert_int_equal(in->n_failure, 1);
    assert_true(in->failure[0]->request_range->keys_only);

    put = t->success[1]->request_put;
    assert_true(bin_is(put->key, "/r/e/a"));
    assert_int_equal(put->value.len, 0);
    assert_int_equal(put->lease, 0);
    assert_true(put->ignore_lease);
    assert_true(put->prev_kv);
    assert_int_equal(t->success[2]->request_case,
                     ETCDSERVERPB__REQUEST_OP__REQUEST_REQUEST_DELETE_RANGE);
    assert_true(bin_is(t->success[2]->request_delete_range->key, "/r/e/"));
    assert_true(bin_is(t->success[2]->request_delete_range->range_end, "/r/e0"));

    assert_int_equal(t->n_failure, 2);
    Etcdserverpb__RangeRequest *r = t->failure[0]->request_range;
    assert_true(bin_is(r->range_end, "/r/e0"));
    assert_true(r->count_only);
    assert_false(r->keys_only);
    r = t->failure[1]->request_range;
    assert_int_equal(r->range_end.len, 0);
    assert_true(r->keys_only);
    etcdserverpb__txn_request__free_unpacked(t, NULL);
    reign__buf_free(&out);
}

/* A watch stream's body: its create_requests one after the other, a message each. */
static void test_watch_stream(void **state)
{
    reign__buf out;
    reign__buf_init(&out);
    reign__buf_puts(&out, "kept");
    char why[256];
    assert_int_equal(
        encode("/v3/watch",
               "{'create_request':{'key':'L3IvZS9h','start_revision':'43','watch_id':'1'}}\n"
               " {'create_request':{'key':'L3IvZS8=','range_end':'L3IvZTA=',"
               "'start_revision':'43','watch_id':'2','filters':['NOPUT',1],'prev_kv':false}}\n",
               &out, why, sizeof(why)),
        0);
    assert_memory_equal(out.data, "kept", 4);
    size_t at = 4, len;
    for (int i = 1; i <= 2; i++) {
        const uint8_t *msg = frame_at(&out, &at, &len);
        Etcdserverpb__WatchRequest *w = etcdserverpb__watch_request__unpack(NULL, len, msg);
        assert_non_null(w);
        assert_int_equal(w->request_union_case,
                         ETCDSERVERPB__WATCH_REQUEST__REQUEST_UNION_CREATE_REQUEST);
        Etcdserverpb__WatchCreateRequest *cr = w->create_request;
        assert_int_equal(cr->start_revision, 43);
        assert_int_equal(cr->watch_id, i);
        assert_true(bin_is(cr->key, i == 1 ? "/r/e/a" : "/r/e/"));
        assert_true(bin_is(cr->range_end, i == 1 ? "" : "/r/e0"));
        assert_int_equal(cr->n_filters, i == 1 ? 0 : 2);
        if (i == 2) {
            assert_int_equal(cr->filters[0],
                             ETCDSERVERPB__WATCH_CREATE_REQUEST__FILTER_TYPE__NOPUT);
            assert_int_equal(cr->filters[1],
                             ETCDSERVERPB__WATCH_CREATE_REQUEST__FILTER_TYPE__NODELETE);
        }
        etcdserverpb__watch_request__free_unpacked(w, NULL);
    }
    assert_int_equal(at, out.len);
    reign__buf_free(&out);
}

/* The session's calls: numbers as strings or as numbers, strings, null as absent. */
static void test_lease_auth_requests(void **state)
{
    reign__buf out;
    reign__buf_init(&out);
    char why[256];
    size_t at = 0, len;
    const uint8_t *msg;

    assert_int_equal(encode("/v3/lease/grant", "{'TTL':'10'}", &out, why, sizeof(why)), 0);
    msg = frame_at(&out, &at, &len);
    Etcdserverpb__LeaseGrantRequest *g = etcdserverpb__lease_grant_request__unpack(NULL, len, msg);
    assert_non_null(g);
    assert_int_equal(g->ttl, 10);
    assert_int_equal(g->id, 0);
    etcdserverpb__lease_grant_request__free_unpacked(g, NULL);

    reign__buf_reset(&out);
    at = 0;
    assert_int_equal(encode("/v3/lease/keepalive", "{'ID':'7587869012345678901'}{'ID':-12}", &out,
                            why, sizeof(why)),
                     0);
    for (int i = 0; i < 2; i++) {
        msg = frame_at(&out, &at, &len);
        Etcdserverpb__LeaseKeepAliveRequest *k =
            etcdserverpb__lease_keep_alive_request__unpack(NULL, len, msg);
        assert_non_null(k);
        assert_int_equal(k->id, i ? -12 : LEASE);
        etcdserverpb__lease_keep_alive_request__free_unpacked(k, NULL);
    }

    reign__buf_reset(&out);
    at = 0;
    assert_int_equal(encode("/v3/auth/authenticate", "{'name':'r\\u00e9ign','password':'p\\'w'}",
                            &out, why, sizeof(why)),
                     0);
    msg = frame_at(&out, &at, &len);
    Etcdserverpb__AuthenticateRequest *a =
        etcdserverpb__authenticate_request__unpack(NULL, len, msg);
    assert_non_null(a);
    assert_string_equal(a->name, "r\xc3\xa9ign");
    assert_string_equal(a->password, "p\"w");
    etcdserverpb__authenticate_request__free_unpacked(a, NULL);

    /* null is absent: only the key is sent. */
    reign__buf_reset(&out);
    at = 0;
    assert_int_equal(encode("/v3/kv/put", "{'key':'L3IvZS9h','lease':null,'value':null}", &out, why,
                            sizeof(why)),
                     0);
    msg = frame_at(&out, &at, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(msg, "\x0a\x06/r/e/a", 8);
    reign__buf_free(&out);
}

/* Each mistake is EINVAL, why naming the field, and out as it was. */
static void refused(const char *path, const char *body, const char *want)
{
    reign__buf out;
    reign__buf_init(&out);
    reign__buf_puts(&out, "kept");
    char why[256] = "";
    const char *json = J(body);
    assert_int_equal(reign__pb_request(method(path), json, strlen(json), &out, why, sizeof(why)),
                     REIGN_EINVAL);
    assert_string_equal(why, J(want));
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "kept");
    assert_false(out.oom);
    reign__buf_free(&out);
}

static void test_request_errors(void **state)
{
    const char *put = "/v3/kv/put", *txn = "/v3/kv/txn";
    refused(put, "{'key':'L3IvZS9h','leas':'1'}",
            "/etcdserverpb.KV/Put: leas: no such field in PutRequest");
    refused(txn, "{'success':[{'request_put':{'key':'L3IvZS9h','lease':true}}]}",
            "/etcdserverpb.KV/Txn: success[0].request_put.lease: not an integer");
    refused(txn, "{'success':[{'request_put':{}},{'request_range':{'kye':'L3IvZS9h'}}]}",
            "/etcdserverpb.KV/Txn: success[1].request_range.kye: no such field in RangeRequest");
    refused(put, "{'key':'L3IvZS9h','prev_kv':'true'}",
            "/etcdserverpb.KV/Put: prev_kv: not true or false");
    refused(put, "{'key':'L3IvZS9h','lease':'12x'}",
            "/etcdserverpb.KV/Put: lease: not a decimal integer");
    refused(put, "{'lease':'9223372036854775808'}",
            "/etcdserverpb.KV/Put: lease: not a decimal integer");
    refused(put, "{'lease':9007199254740993}",
            "/etcdserverpb.KV/Put: lease: not an integer (one past 2^53 goes as a string)");
    refused(put, "{'lease':1.5}",
            "/etcdserverpb.KV/Put: lease: not an integer (one past 2^53 goes as a string)");
    refused(put, "{'key':'***'}", "/etcdserverpb.KV/Put: key: not base64");
    refused(put, "{'key':12}", "/etcdserverpb.KV/Put: key: not a base64 string");
    refused(put, "{'key':'L3IvZS9h','key':'L3IvZS9h'}", "/etcdserverpb.KV/Put: key: given twice");
    refused(txn, "{'compare':[{'target':'CREATED'}]}",
            "/etcdserverpb.KV/Txn: compare[0].target: CompareTarget has no value \"CREATED\"");
    refused(txn, "{'compare':[{'version':'1','create_revision':'0'}]}",
            "/etcdserverpb.KV/Txn: compare[0].create_revision: a second member of its oneof");
    refused(txn, "{'compare':[null]}", "/etcdserverpb.KV/Txn: compare[0]: null");
    refused(txn, "{'compare':{}}", "/etcdserverpb.KV/Txn: compare: not an array");
    refused(txn, "{'success':[{'request_put':[]}]}",
            "/etcdserverpb.KV/Txn: success[0].request_put: not an object");
    refused("/v3/lease/grant", "{'TTL':'10'",
            "/etcdserverpb.Lease/LeaseGrant: not a JSON object "
            "at byte 0");
    refused("/v3/lease/grant", "[]", "/etcdserverpb.Lease/LeaseGrant: not a JSON object at byte 0");
    refused("/v3/lease/grant", "", "/etcdserverpb.Lease/LeaseGrant: no JSON object");
    refused("/v3/lease/grant", " \n", "/etcdserverpb.Lease/LeaseGrant: no JSON object");
    refused("/v3/lease/grant", "{}{}", "/etcdserverpb.Lease/LeaseGrant: more than one JSON object");
    refused("/v3/watch", "{'create_request':{}} {'create_request':{'kye':''}}",
            "/etcdserverpb.Watch/Watch, message 2: create_request.kye: no such field in "
            "WatchCreateRequest");
    refused("/v3/watch", "{'create_request':{}} x",
            "/etcdserverpb.Watch/Watch, message 2: not a JSON object at byte 22");
    refused("/v3/auth/authenticate", "{'name':'u','password':7}",
            "/etcdserverpb.Auth/Authenticate: password: not a string");

    /* Nested past the bound: the path gives way to "...", what is wrong stays. */
    char body[2048] = "", why[256];
    for (int i = 0; i < 40; i++)
        strcat(body, "{'success':[{'request_txn':");
    strcat(body, "{}");
    for (int i = 0; i < 40; i++)
        strcat(body, "}]}");
    reign__buf out;
    reign__buf_init(&out);
    const char *json = J(body);
    assert_int_equal(reign__pb_request(method(txn), json, strlen(json), &out, why, sizeof(why)),
                     REIGN_EINVAL);
    assert_memory_equal(why, "...", 3);
    assert_non_null(strstr(why, ".request_txn.success[0]: nested deeper than 32 messages"));
    assert_int_equal(out.len, 0);
    /* No room for why: the error still comes. */
    assert_int_equal(reign__pb_request(method(txn), J("{'x':1}"), 7, &out, NULL, 0), REIGN_EINVAL);
    reign__buf_free(&out);
}

/* ---- answers ------------------------------------------------------------------------------- */

#define HDR                                                                                        \
    "'header':{'cluster_id':'14841639068965178418','member_id':'10276657743932975437',"            \
    "'revision':'42','raft_term':'3'}"
#define HDR_MIN "'header':{'revision':'42'}"

static Etcdserverpb__ResponseHeader header(int64_t revision, bool full)
{
    Etcdserverpb__ResponseHeader h = ETCDSERVERPB__RESPONSE_HEADER__INIT;
    h.revision = revision;
    if (full) {
        h.cluster_id = UINT64_C(14841639068965178418);
        h.member_id = UINT64_C(10276657743932975437);
        h.raft_term = 3;
    }
    return h;
}

static void test_txn_answer(void **state)
{
    Etcdserverpb__ResponseHeader h = header(42, true), hm = header(42, false);
    Etcdserverpb__KeyValue a = ETCDSERVERPB__KEY_VALUE__INIT, b = ETCDSERVERPB__KEY_VALUE__INIT;
    a.key = bin("/r/e/a");
    a.create_revision = 40;
    a.mod_revision = 41;
    a.version = 2;
    a.value = bin("v1");
    a.lease = LEASE;
    b.key = bin("/r/e/b");
    b.create_revision = b.mod_revision = 5;
    b.version = 1;
    Etcdserverpb__KeyValue *kvs[] = {&a, &b};
    Etcdserverpb__RangeResponse rr = ETCDSERVERPB__RANGE_RESPONSE__INIT;
    rr.header = &hm;
    rr.n_kvs = 2;
    rr.kvs = kvs;
    rr.count = 2;
    Etcdserverpb__PutResponse pr = ETCDSERVERPB__PUT_RESPONSE__INIT;
    pr.header = &hm;
    pr.prev_kv = &b;
    Etcdserverpb__DeleteRangeResponse dr = ETCDSERVERPB__DELETE_RANGE_RESPONSE__INIT;
    dr.header = &hm;
    dr.deleted = 1;
    Etcdserverpb__ResponseOp o[3] = {ETCDSERVERPB__RESPONSE_OP__INIT,
                                     ETCDSERVERPB__RESPONSE_OP__INIT,
                                     ETCDSERVERPB__RESPONSE_OP__INIT};
    o[0].response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_RANGE;
    o[0].response_range = &rr;
    o[1].response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_PUT;
    o[1].response_put = &pr;
    o[2].response_case = ETCDSERVERPB__RESPONSE_OP__RESPONSE_RESPONSE_DELETE_RANGE;
    o[2].response_delete_range = &dr;
    Etcdserverpb__ResponseOp *ops[] = {&o[0], &o[1], &o[2]};
    Etcdserverpb__TxnResponse t = ETCDSERVERPB__TXN_RESPONSE__INIT;
    t.header = &h;
    t.succeeded = true;
    t.n_responses = 3;
    t.responses = ops;
    answer_is("/v3/kv/txn", &t.base,
              "{" HDR ",'succeeded':true,'responses':[{'response_range':{" HDR_MIN ",'kvs':["
              "{'key':'L3IvZS9h','create_revision':'40','mod_revision':'41','version':'2',"
              "'value':'djE=','lease':'7587869012345678901'},{'key':'L3IvZS9i',"
              "'create_revision':'5','mod_revision':'5','version':'1'}],'count':'2'}},"
              "{'response_put':{" HDR_MIN ",'prev_kv':{'key':'L3IvZS9i','create_revision':'5',"
              "'mod_revision':'5','version':'1'}}},{'response_delete_range':{" HDR_MIN
              ",'deleted':'1'}}]}");

    /* A failed txn: no "succeeded"; a range that found nothing: no kvs, no count. */
    rr.n_kvs = 0;
    rr.kvs = NULL;
    rr.count = 0;
    t.succeeded = false;
    t.n_responses = 1;
    answer_is("/v3/kv/txn", &t.base, "{" HDR ",'responses':[{'response_range':{" HDR_MIN "}}]}");

    /* A message that is there but empty is written (the gateway's {}); nothing at all is {}. */
    Etcdserverpb__ResponseHeader h0 = ETCDSERVERPB__RESPONSE_HEADER__INIT;
    t.header = &h0;
    t.n_responses = 0;
    answer_is("/v3/kv/txn", &t.base, "{'header':{}}");
    t.header = NULL;
    answer_is("/v3/kv/txn", &t.base, "{}");
    answer_is("/v3/kv/range", &t.base, "{}");
}

static void test_watch_answer(void **state)
{
    Etcdserverpb__ResponseHeader h = header(42, true);
    Etcdserverpb__WatchResponse w = ETCDSERVERPB__WATCH_RESPONSE__INIT;
    w.header = &h;
    w.watch_id = 3;
    w.created = true;
    answer_is("/v3/watch", &w.base, "{'result':{" HDR ",'watch_id':'3','created':true}}\n");

    /* Events: a DELETE says so, a PUT (the enum's zero) shows no type. */
    Etcdserverpb__KeyValue gone = ETCDSERVERPB__KEY_VALUE__INIT,
                           made = ETCDSERVERPB__KEY_VALUE__INIT;
    gone.key = bin("/r/e/a");
    gone.mod_revision = 50;
    made.key = bin("/r/e/b");
    made.create_revision = made.mod_revision = 51;
    made.version = 1;
    made.value = bin("v1");
    Etcdserverpb__Event ev[2] = {ETCDSERVERPB__EVENT__INIT, ETCDSERVERPB__EVENT__INIT};
    ev[0].type = ETCDSERVERPB__EVENT__EVENT_TYPE__DELETE;
    ev[0].kv = &gone;
    ev[1].kv = &made;
    Etcdserverpb__Event *evs[] = {&ev[0], &ev[1]};
    w.created = false;
    w.n_events = 2;
    w.events = evs;
    answer_is("/v3/watch", &w.base,
              "{'result':{" HDR ",'watch_id':'3','events':[{'type':'DELETE','kv':{'key':'L3IvZS9h',"
              "'mod_revision':'50'}},{'kv':{'key':'L3IvZS9i','create_revision':'51',"
              "'mod_revision':'51','version':'1','value':'djE='}}]}}\n");

    /* A watcher canceled: its start compacted away. */
    Etcdserverpb__WatchResponse c = ETCDSERVERPB__WATCH_RESPONSE__INIT;
    c.header = &h;
    c.watch_id = 4;
    c.canceled = true;
    c.compact_revision = 30;
    c.cancel_reason = "mvcc: required revision has been compacted";
    answer_is("/v3/watch", &c.base,
              "{'result':{" HDR ",'watch_id':'4','canceled':true,'compact_revision':'30',"
              "'cancel_reason':'mvcc: required revision has been compacted'}}\n");

    /* An event type etcd_rpc.proto does not name: its number, as the gateway writes it. */
    ev[0].type = 7;
    w.n_events = 1;
    answer_is("/v3/watch", &w.base,
              "{'result':{" HDR ",'watch_id':'3','events':[{'type':7,'kv':{'key':'L3IvZS9h',"
              "'mod_revision':'50'}}]}}\n");
    Etcdserverpb__WatchResponse none = ETCDSERVERPB__WATCH_RESPONSE__INIT;
    answer_is("/v3/watch", &none.base, "{'result':{}}\n");
}

static void test_lease_auth_answers(void **state)
{
    Etcdserverpb__ResponseHeader h = header(42, true);
    Etcdserverpb__LeaseKeepAliveResponse k = ETCDSERVERPB__LEASE_KEEP_ALIVE_RESPONSE__INIT;
    k.header = &h;
    k.id = LEASE;
    k.ttl = 10;
    answer_is("/v3/lease/keepalive", &k.base,
              "{'result':{" HDR ",'ID':'7587869012345678901','TTL':'10'}}\n");
    k.ttl = -1;
    answer_is("/v3/lease/keepalive", &k.base,
              "{'result':{" HDR ",'ID':'7587869012345678901','TTL':'-1'}}\n");

    Etcdserverpb__LeaseGrantResponse g = ETCDSERVERPB__LEASE_GRANT_RESPONSE__INIT;
    g.header = &h;
    g.id = LEASE;
    g.ttl = 10;
    answer_is("/v3/lease/grant", &g.base, "{" HDR ",'ID':'7587869012345678901','TTL':'10'}");
    Etcdserverpb__LeaseRevokeResponse r = ETCDSERVERPB__LEASE_REVOKE_RESPONSE__INIT;
    r.header = &h;
    answer_is("/v3/lease/revoke", &r.base, "{" HDR "}");

    Etcdserverpb__AuthenticateResponse a = ETCDSERVERPB__AUTHENTICATE_RESPONSE__INIT;
    a.header = &h;
    a.token = "XfGkPtWbkzsjdFSE.27";
    answer_is("/v3/auth/authenticate", &a.base, "{" HDR ",'token':'XfGkPtWbkzsjdFSE.27'}");
    /* Escaped as Go escapes: quotes, controls, <>&, U+2028; not UTF-8 as U+FFFD; UTF-8 kept. */
    a.token = "a\"b\\c\n\x01<&>\xe2\x80\xa8\xc3\xa9\xff\xed\xa0\x80z";
    answer_is("/v3/auth/authenticate", &a.base,
              "{" HDR ",'token':'a\\'b\\\\c\\n\\u0001\\u003c\\u0026\\u003e\\u2028\xc3\xa9"
              "\\ufffd\\ufffd\\ufffd\\ufffdz'}");
}

/* Writes v as a varint ending at buf + end: where it starts. */
static size_t varint_before(uint8_t *buf, size_t end, size_t v)
{
    size_t n = 1;
    for (size_t x = v >> 7; x; x >>= 7)
        n++;
    for (size_t i = 0; i < n; i++, v >>= 7)
        buf[end - n + i] = (uint8_t)((v & 0x7f) | (i + 1 < n ? 0x80 : 0));
    return end - n;
}

/* Bytes that are no such message: EBACKEND, out as it was. */
static void test_garbage(void **state)
{
    static const struct {
        const char *bytes;
        size_t len;
    } bad[] = {
        {"\xff\xff\xff\xff", 4},     /* a tag that never ends */
        {"\x0a\x10\x01", 3},         /* the header: 16 bytes said, 1 there */
        {"\x08\x01", 2},             /* the header as a varint */
        {"\x12\x02\x0a", 3},         /* a range answer's kv cut short */
        {"\x1a\x04\x0a\x02\x08", 5}, /* a txn's response cut short */
        {"\x0f", 1},                 /* wire type 7 */
        {"\x00", 1},                 /* field 0 */
    };
    reign__buf out;
    reign__buf_init(&out);
    reign__buf_puts(&out, "kept");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (const char *p = "/v3/kv/txn\0/v3/kv/range\0/v3/watch\0"; *p; p += strlen(p) + 1)
            assert_int_equal(
                reign__pb_answer(method(p), (const uint8_t *)bad[i].bytes, bad[i].len, &out),
                REIGN_EBACKEND);
        assert_string_equal(out.data, "kept");
        assert_int_equal(out.len, 4);
    }
    /* A txn's answer in a txn's answer, and so on, from the inside out: each turn puts the
     * last one in responses[0].response_txn, two messages deeper.  32 deep is read, 34 not. */
    uint8_t deep[128], in[128];
    size_t n = 0;
    for (int turn = 1; turn <= 17; turn++) {
        memcpy(in, deep, n);
        deep[0] = 0x1a; /* TxnResponse.responses */
        deep[1] = (uint8_t)(n + 2);
        deep[2] = 0x22; /* ResponseOp.response_txn */
        deep[3] = (uint8_t)n;
        memcpy(deep + 4, in, n);
        n += 4;
        int rc = reign__pb_answer(method("/v3/kv/txn"), deep, n, &out);
        assert_int_equal(rc, turn < 17 ? 0 : REIGN_EBACKEND);
        reign__buf_reset(&out);
        reign__buf_puts(&out, "kept");
    }
    /* 10,000 deep (75 KB): refused before protobuf-c, which follows each message inside another
     * by recursion, overflows the stack (it did, unpacking this). */
    size_t cap = 1 << 17, start = cap;
    uint8_t *big = malloc(cap);
    assert_non_null(big);
    for (int turn = 0; turn < 10000; turn++) {
        start = varint_before(big, start, cap - start);
        big[--start] = 0x22;
        start = varint_before(big, start, cap - start);
        big[--start] = 0x1a;
    }
    assert_int_equal(reign__pb_answer(method("/v3/kv/txn"), big + start, cap - start, &out),
                     REIGN_EBACKEND);
    assert_string_equal(out.data, "kept");
    free(big);
    /* Unknown fields are passed over, as the gateway passes them. */
    assert_int_equal(
        reign__pb_answer(method("/v3/kv/txn"), (const uint8_t *)"\xa8\x06\x01", 3, &out), 0);
    assert_string_equal(out.data, "kept{}");
    reign__buf_free(&out);
}

/* Every allocation failing in turn: ENOMEM and nothing kept, or done; never a leak. */
static void test_oom(void **state)
{
    const char *json = J(txn_body);
    Etcdserverpb__ResponseHeader h = header(42, true);
    Etcdserverpb__KeyValue kv = ETCDSERVERPB__KEY_VALUE__INIT;
    kv.key = bin("/r/e/a");
    kv.value = bin("v1");
    Etcdserverpb__Event ev = ETCDSERVERPB__EVENT__INIT, *evs[] = {&ev, &ev};
    ev.kv = ev.prev_kv = &kv;
    Etcdserverpb__WatchResponse w = ETCDSERVERPB__WATCH_RESPONSE__INIT;
    w.header = &h;
    w.cancel_reason = "why";
    w.n_events = 2;
    w.events = evs;
    uint8_t bytes[512];
    size_t n = etcdserverpb__watch_response__pack(&w, bytes);
    assert_true(n < sizeof(bytes));

    assert_int_equal(reign_set_allocator(oom_malloc, oom_realloc, oom_free), 0);
    bool req_done = false, ans_done = false;
    for (g_fail_at = 0; !(req_done && ans_done); g_fail_at++) {
        g_calls = 0;
        reign__buf out;
        reign__buf_init(&out);
        char why[256];
        int rc =
            reign__pb_request(method("/v3/kv/txn"), json, strlen(json), &out, why, sizeof(why));
        assert_true(rc == 0 || rc == REIGN_ENOMEM);
        assert_true(rc == 0 || out.len == 0);
        req_done |= rc == 0;
        reign__buf_free(&out);
        assert_int_equal(g_live, 0);

        g_calls = 0;
        rc = reign__pb_answer(method("/v3/watch"), bytes, n, &out);
        assert_true(rc == 0 || rc == REIGN_ENOMEM);
        assert_true(rc == 0 || out.len == 0);
        ans_done |= rc == 0;
        reign__buf_free(&out);
        assert_int_equal(g_live, 0);
    }
    g_fail_at = -1;
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_methods),        cmocka_unit_test(test_txn_request),
        cmocka_unit_test(test_watch_stream),   cmocka_unit_test(test_lease_auth_requests),
        cmocka_unit_test(test_request_errors), cmocka_unit_test(test_txn_answer),
        cmocka_unit_test(test_watch_answer),   cmocka_unit_test(test_lease_auth_answers),
        cmocka_unit_test(test_garbage),        cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
