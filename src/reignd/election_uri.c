/*
 * election_uri.c - reads an election URI's user and parameters
 * (election_uri.h).
 */
#include <ctype.h>
#include <stdbool.h>
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

typedef struct uri_param {
    const char *name;
    long min, max; /* min > max: not a number */
} uri_param;

/* <reign/client.h>'s parameters of a zk:// URI. */
static const uri_param zk_params[] = {
    {"session_timeout_ms", 100, 3600000},
    {"connect_timeout_ms", 1, 3600000},
    {"op_timeout_ms", 1, 3600000},
    {"retry_period_ms", 0, 3600000},
    {"retry_max", 0, 1000},
    {"suspend_policy", 1, 0},
    {"password_file", 1, 0},
    {NULL, 0, 0},
};

/* And of the SQL stores' URIs (sqlite://, mysql://, mariadb://, postgres://). */
static const uri_param sql_params[] = {
    {"lease_ms", 1, 3600000},
    {"renew_ms", 10, 3600000},
    {"poll_ms", 10, 3600000},
    {"statement_timeout_ms", 10, 3600000},
    {"connect_timeout_ms", 1, 3600000},
    {"retry_period_ms", 10, 3600000},
    {"table", 1, 0},
    {"data_center", 1, 0},
    {"suspend_policy", 1, 0},
    {"password_file", 1, 0},
    {NULL, 0, 0},
};

typedef struct scheme {
    const char *name;
    const uri_param *params;
    const char *takes; /* for the message naming an unknown parameter */
} scheme;

static const scheme schemes[] = {
    {"zk", zk_params,
     "session_timeout_ms, connect_timeout_ms, op_timeout_ms, retry_period_ms, retry_max, "
     "suspend_policy, password_file"},
    {"sqlite", sql_params, NULL},
    {"mysql", sql_params, NULL},
    {"mariadb", sql_params, NULL},
    {"postgres", sql_params, NULL},
    {"postgresql", sql_params, NULL},
};

#define SQL_TAKES                                                                                  \
    "lease_ms, renew_ms, poll_ms, statement_timeout_ms, connect_timeout_ms, retry_period_ms, "     \
    "table, data_center, suspend_policy, password_file"

static int check_param(const scheme *sc, const char *name, const char *value, reignd_uri_info *info,
                       char *err, size_t errlen)
{
    for (const uri_param *p = sc->params; p->name; p++) {
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
        } else if (!value[0]) {
            snprintf(err, errlen, "parameter %s is empty", name);
            return REIGN_EINVAL;
        } else if (strcmp(name, "password_file") == 0) {
            snprintf(info->password_file, sizeof(info->password_file), "%s", value);
        }
        return 0;
    }
    snprintf(err, errlen, "unknown parameter (a %s:// URI takes %s)", sc->name,
             sc->takes ? sc->takes : SQL_TAKES);
    return REIGN_EINVAL;
}

static int check_query(const scheme *sc, const char *q, reignd_uri_info *info, char *err,
                       size_t errlen)
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
        int r = check_param(sc, name, value, info, err, errlen);
        if (r < 0)
            return r;
        a += n;
    }
    return 0;
}

/* sqlite:///absolute/path.db: a local file, no host, no user. */
static int check_sqlite(const char *auth, size_t alen, char *err, size_t errlen)
{
    const char *path = auth + alen;
    size_t plen = strcspn(path, "?#");
    if (alen || plen < 2 || path[0] != '/' || path[plen - 1] == '/') {
        snprintf(err, errlen,
                 "a sqlite:// URI names a local file by its absolute path, and no "
                 "host: write sqlite:///absolute/path/file.db");
        return REIGN_EINVAL;
    }
    return 0;
}

int reignd_uri_check(const char *uri, reignd_uri_info *info, char *err, size_t errlen)
{
    memset(info, 0, sizeof(*info));
    const char *sep = strstr(uri, "://");
    const scheme *sc = NULL;
    for (size_t i = 0; sep && !sc && i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (strlen(schemes[i].name) == (size_t)(sep - uri) &&
            strncmp(uri, schemes[i].name, (size_t)(sep - uri)) == 0)
            sc = &schemes[i];
    if (!sc) {
        snprintf(err, errlen,
                 "not a store URI (zk://, sqlite://, mysql://, mariadb://, "
                 "postgres://)");
        return REIGN_EINVAL;
    }
    bool zk = sc->params == zk_params;
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    int r = !strcmp(sc->name, "sqlite") ? check_sqlite(auth, alen, err, errlen) : 0;
    if (r < 0)
        return r;
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
    if (hosts == auth + alen && strcmp(sc->name, "sqlite") != 0) {
        snprintf(err, errlen, zk ? "no ZooKeeper host" : "no database host");
        return REIGN_EINVAL;
    }
    if (!zk && strcmp(sc->name, "sqlite") != 0) {
        /* mysql://USER@HOST[:PORT]/DB, postgres://USER@HOST[:PORT]/DB */
        const char *db = auth + alen;
        size_t dlen = strcspn(db, "?#");
        if (memchr(hosts, ',', (size_t)(auth + alen - hosts))) {
            snprintf(err, errlen, "a %s:// URI names one database host", sc->name);
            return REIGN_EINVAL;
        }
        if (dlen < 2 || db[0] != '/' || memchr(db + 1, '/', dlen - 1)) {
            snprintf(err, errlen,
                     "a %s:// URI needs a database name as its path: %s://USER@HOST/DB", sc->name,
                     sc->name);
            return REIGN_EINVAL;
        }
        if (!at) {
            snprintf(err, errlen, "a %s:// URI needs a user: %s://USER@HOST/DB", sc->name,
                     sc->name);
            return REIGN_EAUTH;
        }
    }
    const char *q = strchr(auth + alen, '?');
    const char *frag = strchr(auth + alen, '#');
    return q && (!frag || q < frag) ? check_query(sc, q + 1, info, err, errlen) : 0;
}
