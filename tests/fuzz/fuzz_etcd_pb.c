/*
 * fuzz_etcd_pb.c - libFuzzer target for the codec between the gateway's JSON and gRPC's protobuf
 * (src/etcd/etcd_pb.c).  The first byte chooses a method (its low seven bits, modulo their
 * number) and a direction (its high bit):
 *
 *   - clear: the rest is a member's answer, one message's bytes, read as the method's answer
 *     type (what reign__pb_answer() parses from the network): EBACKEND, or JSON that cJSON
 *     reads as an object (a stream's {"result":{...}} and a newline);
 *   - set: the rest is a request body, the JSON the layers above write: EINVAL with a reason,
 *     or gRPC messages, each of which protobuf-c unpacks as the method's request type.
 *
 * Either way out keeps what it held before, plus the result only on success.  Nothing may
 * crash or leak.  protobuf-c and cJSON are not instrumented: coverage guides the fuzzer through
 * etcd_pb.c's own branches, so the seeds carry every message type and the dictionary the names.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "etcd/etcd_internal.h"
#include "etcd_rpc.pb-c.h"
#include "fuzz_common.h"

/* The gateway's paths, in the order the first byte counts them, and their request types. */
static const struct {
    const char *path;
    const ProtobufCMessageDescriptor *in;
} methods[] = {
    {"/v3/kv/range", &etcdserverpb__range_request__descriptor},
    {"/v3/kv/put", &etcdserverpb__put_request__descriptor},
    {"/v3/kv/deleterange", &etcdserverpb__delete_range_request__descriptor},
    {"/v3/kv/txn", &etcdserverpb__txn_request__descriptor},
    {"/v3/watch", &etcdserverpb__watch_request__descriptor},
    {"/v3/lease/grant", &etcdserverpb__lease_grant_request__descriptor},
    {"/v3/lease/revoke", &etcdserverpb__lease_revoke_request__descriptor},
    {"/v3/lease/keepalive", &etcdserverpb__lease_keep_alive_request__descriptor},
    {"/v3/auth/authenticate", &etcdserverpb__authenticate_request__descriptor},
};
#define N_METHODS (sizeof(methods) / sizeof(methods[0]))

static const char before[] = "held";

static void answer(const reign__pb_method *m, const uint8_t *p, size_t n, reign__buf *out)
{
    int rc = reign__pb_answer(m, p, n, out);
    CHECK(rc == 0 || rc == REIGN_EBACKEND);
    CHECK(!out->oom && !memcmp(out->data, before, sizeof(before) - 1));
    if (rc) {
        CHECK(out->len == sizeof(before) - 1);
        return;
    }
    const char *json = out->data + sizeof(before) - 1;
    size_t len = out->len - (sizeof(before) - 1);
    CHECK(len == strlen(json)); /* no NUL inside: strings are escaped */
    if (reign__pb_streaming(m)) {
        CHECK(len > 12 && !strncmp(json, "{\"result\":{", 11) && json[len - 1] == '\n');
        len--;
    }
    for (size_t i = 0; i < len; i++) /* one line: a string's newlines are escaped */
        CHECK(json[i] != '\n');
    cJSON *root = cJSON_ParseWithLength(json, len);
    CHECK(cJSON_IsObject(root));
    cJSON_Delete(root);
}

static void request(const reign__pb_method *m, const ProtobufCMessageDescriptor *in,
                    const uint8_t *p, size_t n, reign__buf *out)
{
    /* A copy of exactly n bytes, with no NUL after it: the parser must keep to the length. */
    char *json = malloc(n ? n : 1);
    CHECK(json != NULL);
    memcpy(json, p, n);
    char why[256] = "unset";
    int rc = reign__pb_request(m, json, n, out, why, sizeof(why));
    free(json);
    CHECK(rc == 0 || rc == REIGN_EINVAL);
    CHECK(!out->oom && !memcmp(out->data, before, sizeof(before) - 1));
    if (rc) {
        CHECK(out->len == sizeof(before) - 1);
        CHECK(why[0] && strcmp(why, "unset") && strlen(why) < sizeof(why));
        return;
    }
    size_t at = sizeof(before) - 1, count = 0;
    const uint8_t *d = (const uint8_t *)out->data;
    while (at < out->len) {
        CHECK(out->len - at >= 5 && d[at] == 0);
        size_t len =
            (size_t)d[at + 1] << 24 | (size_t)d[at + 2] << 16 | (size_t)d[at + 3] << 8 | d[at + 4];
        CHECK(out->len - at - 5 >= len);
        ProtobufCMessage *msg = protobuf_c_message_unpack(in, NULL, len, d + at + 5);
        CHECK(msg != NULL);
        protobuf_c_message_free_unpacked(msg, NULL);
        at += 5 + len;
        count++;
    }
    CHECK(count == 1 || (count > 1 && reign__pb_streaming(m)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t which = (data[0] & 0x7f) % N_METHODS;
    const reign__pb_method *m = reign__pb_method_of(methods[which].path);
    CHECK(m != NULL);
    reign__buf out;
    reign__buf_init(&out);
    CHECK(reign__buf_puts(&out, before) == 0);
    if (data[0] & 0x80)
        request(m, methods[which].in, data + 1, size - 1, &out);
    else
        answer(m, data + 1, size - 1, &out);
    reign__buf_free(&out);
    return 0;
}
