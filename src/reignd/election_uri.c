/*
 * election_uri.c - reads an election URI's user and parameters
 * (election_uri.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/common.h>

#include "election_uri.h"

/* Percent-decodes s[0..n) into out; -1 for a bad escape, a control character
 * (it would end up in a message), or no room. */
static int unescape(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (o + 1 >= outlen)
            return -1;
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]))
            return -1;
        char hex[3] = {s[i + 1], s[i + 2], '\0'};
        long c = strtol(hex, NULL, 16);
        if (c < 0x20 || c == 0x7f)
            return -1;
        out[o++] = (char)c;
        i += 2;
    }
    out[o] = '\0';
    return 0;
}

typedef struct zk_param {
    const char *name;
    long min, max; /* min > max: not a number */
} zk_param;

/* <reign/client.h>'s parameters of a zk:// URI. */
static const zk_param zk_params[] = {
    {"session_timeout_ms", 100, 3600000},
    {"connect_timeout_ms", 1, 3600000},
    {"op_timeout_ms", 1, 3600000},
    {"retry_period_ms", 0, 3600000},
    {"retry_max", 0, 1000},
    {"suspend_policy", 1, 0},
    {"password_file", 1, 0},
};

static int check_param(const char *name, const char *value, reignd_uri_info *info, char *err,
                       size_t errlen)
{
    for (size_t i = 0; i < sizeof(zk_params) / sizeof(zk_params[0]); i++) {
        const zk_param *p = &zk_params[i];
        if (strcmp(name, p->name) != 0)
            continue;
        if (p->min <= p->max) {
            char *end;
            errno = 0;
            long v = strtol(value, &end, 10);
            if (errno || end == value || *end || v < p->min || v > p->max) {
                snprintf(err, errlen, "parameter %s must be a whole number from %ld to %ld", name,
                         p->min, p->max);
                return REIGN_EINVAL;
            }
        } else if (strcmp(name, "suspend_policy") == 0 && strcmp(value, "deadline") != 0 &&
                   strcmp(value, "immediate") != 0) {
            snprintf(err, errlen, "parameter suspend_policy must be 'deadline' or 'immediate'");
            return REIGN_EINVAL;
        } else if (strcmp(name, "password_file") == 0) {
            if (!value[0]) {
                snprintf(err, errlen, "parameter password_file is empty");
                return REIGN_EINVAL;
            }
            snprintf(info->password_file, sizeof(info->password_file), "%s", value);
        }
        return 0;
    }
    snprintf(err, errlen,
             "unknown parameter (a zk:// URI takes session_timeout_ms, connect_timeout_ms, "
             "op_timeout_ms, retry_period_ms, retry_max, suspend_policy, password_file)");
    return REIGN_EINVAL;
}

static int check_query(const char *q, reignd_uri_info *info, char *err, size_t errlen)
{
    const char *end = q + strcspn(q, "#");
    for (const char *a = q; a < end;) {
        size_t n = strcspn(a, "&#");
        if (n == 0) {
            a++;
            continue;
        }
        const char *eq = memchr(a, '=', n);
        char name[64], value[1024];
        if (!eq || unescape(a, (size_t)(eq - a), name, sizeof(name)) < 0 ||
            unescape(eq + 1, (size_t)(a + n - eq - 1), value, sizeof(value)) < 0) {
            snprintf(err, errlen, "malformed parameter (expected name=value, percent escapes)");
            return REIGN_EINVAL;
        }
        int r = check_param(name, value, info, err, errlen);
        if (r < 0)
            return r;
        a += n;
    }
    return 0;
}

int reignd_uri_check(const char *uri, reignd_uri_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof(*info));
    if (strncmp(uri, "zk://", 5) != 0) {
        snprintf(err, errlen, "not a zk:// URI");
        return REIGN_EINVAL;
    }
    const char *auth = uri + 5;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *c = auth; c < auth + alen; c++)
        if (*c == '@')
            at = c;
    if (at && unescape(auth, (size_t)(at - auth), info->user, sizeof(info->user)) < 0) {
        snprintf(err, errlen, "malformed user name");
        return REIGN_EINVAL;
    }
    if (at && !info->user[0]) {
        snprintf(err, errlen, "empty user name before '@'");
        return REIGN_EAUTH;
    }
    const char *hosts = at ? at + 1 : auth;
    if (hosts == auth + alen) {
        snprintf(err, errlen, "no ZooKeeper host");
        return REIGN_EINVAL;
    }
    const char *q = strchr(auth + alen, '?');
    const char *frag = strchr(auth + alen, '#');
    return q && (!frag || q < frag) ? check_query(q + 1, info, err, errlen) : 0;
}
