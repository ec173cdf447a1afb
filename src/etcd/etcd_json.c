/*
 * etcd_json.c - the gateway's JSON (etcd_internal.h): keys and values travel as standard
 * base64, every 64-bit number as a string (a double would lose the digits of a lease id), a
 * field at its zero value is left out, and errors come in two shapes: {"error":"..","code":N}
 * from a unary call, {"error":{"grpc_code":N,"message":".."}} on a stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base64.h>

#include "etcd_internal.h"

void reign__ej_b64(reign__buf *b, const void *data, size_t n)
{
    size_t out = BASE64_ENCODE_RAW_LENGTH(n);
    char stack[256];
    char *tmp = out <= sizeof(stack) ? stack : reign__malloc(out);
    if (!tmp) {
        b->oom = true;
        return;
    }
    base64_encode_raw(tmp, n, data);
    reign__buf_append(b, "\"", 1);
    reign__buf_append(b, tmp, out);
    reign__buf_append(b, "\"", 1);
    if (tmp != stack)
        reign__free(tmp);
}

char *reign__ej_unb64(const char *s, size_t *len)
{
    size_t n = strlen(s);
    char *out = reign__malloc(BASE64_DECODE_LENGTH(n) + 1);
    if (!out)
        return NULL;
    struct base64_decode_ctx ctx;
    base64_decode_init(&ctx);
    size_t got = 0;
    if (!base64_decode_update(&ctx, &got, (uint8_t *)out, n, s) || !base64_decode_final(&ctx)) {
        reign__free(out);
        return NULL;
    }
    out[got] = '\0';
    if (len)
        *len = got;
    return out;
}

int64_t reign__ej_i64(const cJSON *obj, const char *name)
{
    /* A string's digits exactly (strtoll holds what is out of range at the limit); a number,
     * which the gateway never sends for these fields, kept inside the range. */
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (cJSON_IsString(v) && v->valuestring)
        return strtoll(v->valuestring, NULL, 10);
    if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble) /* NaN */
        return 0;
    return v->valuedouble >= 9.2e18    ? INT64_MAX
           : v->valuedouble <= -9.2e18 ? INT64_MIN
                                       : (int64_t)v->valuedouble;
}

char *reign__ej_bytes(const cJSON *kv, const char *name, size_t *len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(kv, name);
    if (!cJSON_IsString(v) || !v->valuestring) {
        *len = 0;
        return NULL;
    }
    return reign__ej_unb64(v->valuestring, len);
}

const char *reign__ej_error(const cJSON *root, int *code)
{
    const cJSON *err = cJSON_GetObjectItemCaseSensitive(root, "error");
    if (!err)
        return NULL;
    if (cJSON_IsObject(err)) {
        *code = (int)reign__ej_i64(err, "grpc_code");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
        return cJSON_IsString(m) && m->valuestring ? m->valuestring : "unknown error";
    }
    *code = (int)reign__ej_i64(root, "code");
    return cJSON_IsString(err) && err->valuestring ? err->valuestring : "unknown error";
}

void reign__ej_prefix_end(char *key, size_t len)
{
    /* Every key of ours starts with '/' and has printable bytes: the last one never is 0xff. */
    if (len)
        key[len - 1]++;
}

/* Appends s as a JSON string: '"', '\\' and control bytes escaped, any other byte as it is
 * (UTF-8 passes through, as cJSON would print it).  Written here rather than through cJSON so
 * that a password is not left behind in a tree cJSON frees without wiping. */
static void json_string(reign__buf *b, const char *s)
{
    reign__buf_append(b, "\"", 1);
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            reign__buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            reign__buf_printf(b, "\\u%04x", c);
        else
            reign__buf_append(b, p, 1);
    }
    reign__buf_append(b, "\"", 1);
}

void reign__ej_login(reign__buf *b, const char *user, const char *password)
{
    reign__buf_puts(b, "{\"name\":");
    json_string(b, user);
    reign__buf_puts(b, ",\"password\":");
    json_string(b, password ? password : "");
    reign__buf_puts(b, "}");
}

char *reign__ej_token_header(cJSON *root)
{
    cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "token");
    if (!cJSON_IsString(tok) || !tok->valuestring)
        return NULL;
    size_t need = strlen(tok->valuestring) + 16;
    char *h = reign__malloc(need);
    if (h)
        snprintf(h, need, "Authorization: %s", tok->valuestring);
    explicit_bzero(tok->valuestring, strlen(tok->valuestring));
    return h;
}
