/*
 * fmt.c - see fmt.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

int fmt_group_refused(cli *c, int err, const char *group, const char *id, size_t data_len)
{
    char qg[512], qi[600];
    cli_quote(group, qg, sizeof(qg));
    switch (err) {
    case REIGN_ENAME:
        cli_error(c,
                  "illegal group name '%s' (1 to %d characters of A-Z a-z 0-9 . _ : -, not '.' "
                  "or '..')",
                  qg, REIGN_GROUP_NAME_MAX);
        break;
    case REIGN_EINVAL:
        cli_error(c, "invalid member id '%s' (1 to %d bytes, no control characters)",
                  cli_quote(id ? id : "", qi, sizeof(qi)), REIGN_MEMBER_ID_MAX);
        break;
    case REIGN_E2BIG:
        cli_error(c, "payload too large: %s%zu bytes (at most %d)",
                  data_len > REIGN_MEMBER_DATA_MAX ? "at least " : "", data_len,
                  REIGN_MEMBER_DATA_MAX);
        break;
    case REIGN_EFOREIGN:
        cli_error(c, "group '%s' holds data reign did not write", qg);
        break;
    case REIGN_ENOENT:
        cli_error(c, "no such group '%s'", qg);
        break;
    default:
        cli_error(c, "group '%s': %s", qg, reign_strerror(err));
    }
    return CLI_EXIT_FAIL;
}

int fmt_value_failed(cli *c, int err, const char *key, int64_t version)
{
    char qk[1200];
    cli_quote(key, qk, sizeof(qk));
    switch (err) {
    case REIGN_ENAME:
        cli_error(c,
                  "illegal key '%s' (1 to 16 segments separated by '/', each 1 to 200 "
                  "characters of A-Z a-z 0-9 . _ : -, not '.' or '..'; at most %d bytes)",
                  qk, REIGN_KEY_MAX);
        break;
    case REIGN_ENOENT:
        cli_error(c, "no such value '%s'", qk);
        break;
    case REIGN_EEXIST:
        cli_error(c, "value '%s' exists already", qk);
        break;
    case REIGN_EBADVERSION:
        cli_error(c, "value '%s' is not at version %lld (someone wrote it meanwhile)", qk,
                  (long long)version);
        break;
    case REIGN_EFOREIGN:
        cli_error(c, "value '%s' holds data reign did not write", qk);
        break;
    case REIGN_ECONNLOSS:
        cli_error(c,
                  "value '%s': the connection was lost before the answer: the write may or "
                  "may not have happened",
                  qk);
        break;
    case REIGN_ENOTSUP:
        cli_error(c, "this store keeps no values");
        break;
    case REIGN_E2BIG:
        cli_error(c, "value too large (at most %d bytes)", REIGN_VALUE_DATA_MAX);
        break;
    default:
        cli_error(c, "value '%s': %s", qk, reign_strerror(err));
    }
    return CLI_EXIT_FAIL;
}

char *fmt_data(const void *data, size_t len)
{
    if (!data)
        len = 0;
    long shown = cli_data_line_len(data, len);
    int text = shown >= 0;
    char *enc = text ? NULL : cli_base64(data, len);
    if (!text && !enc)
        return NULL;
    const char *body = text ? (const char *)data : enc;
    size_t blen = text ? (size_t)shown : strlen(enc);
    char *out = malloc(blen + sizeof("data_base64="));
    if (out)
        snprintf(out, blen + sizeof("data_base64="), "%s=%.*s", text ? "data" : "data_base64",
                 (int)blen, body ? body : "");
    free(enc);
    return out;
}

cJSON *fmt_json_member(const reign_member *m)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "id", m->id ? m->id : "");
    cli_json_add_data(o, m->data, m->data_len);
    cJSON_AddStringToObject(o, "node", m->node ? m->node : "");
    cli_json_add_u64(o, "seq", m->seq);
    cli_json_add_i64(o, "joined_ms", m->joined_ms);
    cli_json_add_i64(o, "version", m->version);
    return o;
}

cJSON *fmt_json_value(const reign_value *v)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    cJSON_AddStringToObject(o, "key", v->key ? v->key : "");
    cli_json_add_data(o, v->data, v->data_len);
    cli_json_add_i64(o, "version", v->version);
    cli_json_add_i64(o, "created_ms", v->created_ms);
    cli_json_add_i64(o, "modified_ms", v->modified_ms);
    return o;
}
