/*
 * fuzz_uri.c - libFuzzer target for the store URI parser (src/core/uri.c).
 *
 * Each input is parsed twice: as it is, and behind "zk://u:<secret>@" so
 * that the parser's messages can be checked for the password.  Beyond "no
 * crash, no leak", it checks that:
 *   - a failure is REIGN_EURI with a non-empty one-line message that holds
 *     no control character and no part of the password;
 *   - a success gives a well-formed result (lower-case scheme, hosts and
 *     ports in range, path "" or "/...", unique valid parameter names, no
 *     control character in any decoded piece);
 *   - the result, written back as a canonical URI, parses to the same;
 *   - the library's whole check of a URI, reign_uri_check() (src/client/config.c:
 *     schemes, parameters of reign and of the SQL client libraries, lease
 *     timing, credentials), answers 0 or one of its documented codes with a
 *     one-line message without the password, and the same twice.  (Inputs
 *     naming a password_file skip it: the check reads that file, and a
 *     fuzzed path may name a FIFO.)
 */
#include <stdbool.h>
#include <string.h>

#include <reign/client.h>

#include "core.h"
#include "fuzz_common.h"
#include "uri.h"

#define SECRET "Pw7qZx9K"

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            return true;
    return false;
}

static bool unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

static void put_encoded(reign__buf *b, const char *s, bool keep_slash)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (unreserved(c) || (keep_slash && c == '/'))
            reign__buf_append(b, s, 1);
        else
            reign__buf_printf(b, "%%%02X", c);
    }
}

/* u written back with every piece encoded as simply as possible. */
static void canonical(const reign__uri *u, reign__buf *b)
{
    reign__buf_printf(b, "%s://", u->scheme);
    if (u->user) {
        put_encoded(b, u->user, false);
        if (u->password) {
            reign__buf_puts(b, ":");
            put_encoded(b, u->password, false);
        }
        reign__buf_puts(b, "@");
    }
    for (size_t i = 0; i < u->n_hosts; i++) {
        const reign__uri_host *h = &u->hosts[i];
        reign__buf_printf(b, h->ipv6 ? "%s[%s]" : "%s%s", i ? "," : "", h->host);
        if (h->port)
            reign__buf_printf(b, ":%d", h->port);
    }
    put_encoded(b, u->path, true);
    for (size_t i = 0; i < u->n_params; i++) {
        reign__buf_printf(b, "%c%s=", i ? '&' : '?', u->params[i].key);
        put_encoded(b, u->params[i].value, false);
    }
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_same(const reign__uri *a, const reign__uri *b)
{
    CHECK(strcmp(a->scheme, b->scheme) == 0);
    CHECK(same_str(a->user, b->user));
    CHECK(same_str(a->password, b->password));
    CHECK(a->n_hosts == b->n_hosts);
    for (size_t i = 0; i < a->n_hosts; i++) {
        CHECK(strcmp(a->hosts[i].host, b->hosts[i].host) == 0);
        CHECK(a->hosts[i].port == b->hosts[i].port);
        CHECK(a->hosts[i].ipv6 == b->hosts[i].ipv6);
    }
    CHECK(strcmp(a->path, b->path) == 0);
    CHECK(a->n_params == b->n_params);
    for (size_t i = 0; i < a->n_params; i++) {
        CHECK(strcmp(a->params[i].key, b->params[i].key) == 0);
        CHECK(strcmp(a->params[i].value, b->params[i].value) == 0);
    }
}

static void check_valid(const reign__uri *u)
{
    CHECK(u->scheme && u->scheme[0] >= 'a' && u->scheme[0] <= 'z');
    for (const char *c = u->scheme; *c; c++)
        CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || strchr("+-.", *c));
    CHECK(!u->password || u->user);
    CHECK(!u->user || (u->user[0] && !has_control(u->user)));
    CHECK(!u->password || !has_control(u->password));
    CHECK(!u->user || u->n_hosts > 0);
    CHECK(u->n_hosts <= REIGN__URI_MAX_HOSTS);
    for (size_t i = 0; i < u->n_hosts; i++) {
        const reign__uri_host *h = &u->hosts[i];
        CHECK(h->host && h->host[0] && !has_control(h->host));
        CHECK(h->port >= 0 && h->port <= 65535);
        CHECK((h->ipv6 != 0) == (strchr(h->host, ':') != NULL));
        CHECK(!strpbrk(h->host, ",/?@[]%"));
    }
    CHECK(u->path && (u->path[0] == '\0' || u->path[0] == '/'));
    CHECK(!has_control(u->path));
    CHECK(u->n_params <= REIGN__URI_MAX_PARAMS);
    for (size_t i = 0; i < u->n_params; i++) {
        const char *k = u->params[i].key;
        CHECK(k[0]);
        for (const char *c = k; *c; c++)
            CHECK((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_');
        CHECK(!has_control(u->params[i].value));
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(u->params[j].key, k) != 0);
        CHECK(reign__uri_param(u, k) == u->params[i].value);
    }

    char *hs = reign__uri_hosts_string(u, 2181);
    CHECK(hs);
    size_t commas = 0;
    for (const char *c = hs; *c; c++)
        commas += *c == ',';
    CHECK(u->n_hosts ? commas == u->n_hosts - 1 : hs[0] == '\0');
    reign__free(hs);

    /* The helpers take whatever was parsed. */
    char err[256];
    static const char *const known[] = {"timeout", "a", NULL};
    for (size_t i = 0; i < u->n_params; i++) {
        long v = 0;
        int rc = reign__uri_param_int(u, u->params[i].key, -1000, 1000, &v, err, sizeof(err));
        CHECK(rc == 1 || rc == REIGN_EURI);
        CHECK(rc != 1 || (v >= -1000 && v <= 1000));
    }
    int rc = reign__uri_check_params(u, known, err, sizeof(err));
    CHECK(rc == 0 || (rc == REIGN_EURI && !strchr(err, '\n')));
}

static void check_library(const char *s, const char *secret, const char *rest)
{
    if (strstr(s, "password_file") || strstr(s, "password%5f") || strstr(s, "password%5F"))
        return;
    char err[512] = "", err2[512] = "";
    int rc = reign_uri_check(s, NULL, err, sizeof(err));
    CHECK(rc == reign_uri_check(s, NULL, err2, sizeof(err2)) && strcmp(err, err2) == 0);
    if (rc == 0)
        return;
    CHECK(rc == REIGN_EURI || rc == REIGN_EINVAL || rc == REIGN_EAUTH || rc == REIGN_ENOTSUP ||
          rc == REIGN_ENOMEM || rc == REIGN_ENOENT);
    CHECK(err[0] != '\0' && !has_control(err));
    for (size_t i = 0; secret && i + 4 <= strlen(secret); i++) {
        char piece[5];
        memcpy(piece, secret + i, 4);
        piece[4] = '\0';
        CHECK(!strstr(err, piece) || strstr(rest, piece));
    }
}

/* Parses s; `secret` is the password spliced in, or NULL; `rest` is the
 * fuzzer's part of s, where the secret may legitimately appear. */
static void check_one(const char *s, const char *secret, const char *rest)
{
    reign__uri *u = (reign__uri *)&u;
    char err[512] = "";
    int rc = reign__uri_parse(s, &u, err, sizeof(err));
    if (rc != 0) {
        CHECK(rc == REIGN_EURI);
        CHECK(u == NULL);
        CHECK(err[0] != '\0');
        CHECK(!has_control(err));
        if (secret) {
            /* No 4-byte piece of the password, unless the input has it too. */
            size_t n = strlen(secret);
            for (size_t i = 0; i + 4 <= n; i++) {
                char piece[5];
                memcpy(piece, secret + i, 4);
                piece[4] = '\0';
                CHECK(!strstr(err, piece) || strstr(rest, piece));
            }
        }
        return;
    }
    check_valid(u);
    if (secret)
        CHECK(u->password && strncmp(u->password, secret, strlen(secret)) == 0);

    reign__buf b;
    reign__buf_init(&b);
    canonical(u, &b);
    CHECK(!b.oom);
    if (b.len <= REIGN__URI_MAX) {
        reign__uri *u2 = NULL;
        rc = reign__uri_parse(b.data, &u2, err, sizeof(err));
        if (rc != 0)
            fprintf(stderr, "canonical form '%s' refused: %s\n", b.data, err);
        CHECK(rc == 0);
        check_same(u, u2);
        reign__uri_free(u2);
    }
    reign__buf_free(&b);
    reign__uri_free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char prefix[] = "zk://u:" SECRET "@";
    if (size > 2 * REIGN__URI_MAX)
        return 0; /* longer inputs only test the length check */
    char *s = malloc(sizeof(prefix) + size);
    CHECK(s);
    memcpy(s, prefix, sizeof(prefix) - 1);
    memcpy(s + sizeof(prefix) - 1, data, size);
    s[sizeof(prefix) - 1 + size] = '\0';
    const char *rest = s + sizeof(prefix) - 1; /* up to an embedded NUL */

    check_one(rest, NULL, rest);
    check_one(s, SECRET, rest);
    check_library(rest, NULL, rest);
    check_library(s, SECRET, rest);
    free(s);
    return 0;
}
