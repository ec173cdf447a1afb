/*
 * uri.c - parses the URIs that name a store (grammar in uri.h).
 *
 * The parse goes in two passes.  The first looks at the raw string as a
 * whole and refuses what is wrong anywhere: too long, control characters,
 * spaces, a '#', an '@' after the host list.  The second splits scheme,
 * userinfo, hosts, path and query and decodes each piece.  Because the
 * first pass has run, any raw piece can be quoted in an error message and
 * stays on one line.  Two rules keep the password out of every message:
 * nothing inside the userinfo's password is ever quoted, and an '@' is
 * refused outside the authority, since a password with a raw '/' or '?'
 * would otherwise be taken for a host or a path and end up quoted there.
 *
 * Hosts are not percent-decoded: a host name is letters, digits, '-', '.'
 * and '_', an IPv4 address, or an IPv6 address in brackets.  '+' in the
 * query is a plain '+', not a space (this is not a form encoding).
 */
#include "uri.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#define QUOTE_MAX      64  /* longest raw piece quoted in a message */
#define SCHEME_MAX     32  /* longest scheme */
#define HOST_NAME_MAX_ 253 /* longest DNS name */
#define PARAM_KEY_MAX  64  /* longest parameter name */

/* Quoting a raw piece: "'%.*s%s'" with QUOTE(p, n), cut after QUOTE_MAX. */
#define QUOTE(p, n) ((n) > QUOTE_MAX ? QUOTE_MAX : (int)(n)), (p), ((n) > QUOTE_MAX ? "..." : "")

#define FAIL(err, errlen, ...) (reign__errf((err), (errlen), __VA_ARGS__), REIGN_EURI)
#define NOMEM(err, errlen)     (reign__errf((err), (errlen), "out of memory"), REIGN_ENOMEM)

typedef struct parser {
    const char *s; /* the whole URI, checked by check_chars() */
    size_t len;
    char *err;
    size_t errlen;
    reign__uri *u;
} parser;

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static int hex_value(unsigned char c)
{
    if (is_digit(c))
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool is_param_key_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || is_digit(c) || c == '_';
}

static const char *find_char(const char *p, const char *end, char c)
{
    return memchr(p, c, (size_t)(end - p));
}

/* First pass: what may appear nowhere in a URI. */
static int check_chars(parser *p)
{
    for (size_t i = 0; i < p->len; i++) {
        unsigned char c = (unsigned char)p->s[i];
        if (c < 0x20 || c == 0x7f)
            return FAIL(p->err, p->errlen, "control character 0x%02x at offset %zu", c, i);
        if (c == ' ')
            return FAIL(p->err, p->errlen, "space at offset %zu (write it as %%20)", i);
        if (c == '#')
            return FAIL(p->err, p->errlen,
                        "'#' at offset %zu: fragments are not allowed (write it as %%23)", i);
    }
    return 0;
}

/*
 * Decodes the raw piece [raw, raw+n) into a new string in *out.  `what`
 * names the piece in messages; a secret piece is never quoted, not even one
 * escape of it.  Refuses bad escapes and control characters (also encoded
 * ones, so that no decoded piece can break a log line or hide a NUL).
 */
static int decode(parser *p, const char *raw, size_t n, const char *what, bool secret, char **out)
{
    char *d = reign__malloc(n + 1);
    if (!d)
        return NOMEM(p->err, p->errlen);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            int hi = i + 1 < n ? hex_value((unsigned char)raw[i + 1]) : -1;
            int lo = i + 2 < n ? hex_value((unsigned char)raw[i + 2]) : -1;
            size_t avail = n - i < 3 ? n - i : 3;
            if (hi < 0 || lo < 0) {
                reign__free(d);
                if (secret)
                    return FAIL(p->err, p->errlen, "bad percent escape in %s", what);
                if (avail < 3 && (hi >= 0 || i + 1 == n))
                    return FAIL(p->err, p->errlen,
                                "incomplete percent escape '%.*s' at the end of %s", (int)avail,
                                raw + i, what);
                return FAIL(p->err, p->errlen, "bad percent escape '%.*s' in %s", (int)avail,
                            raw + i, what);
            }
            c = (unsigned char)(hi * 16 + lo);
            if (c == 0) {
                reign__free(d);
                if (secret)
                    return FAIL(p->err, p->errlen, "encoded NUL in %s", what);
                return FAIL(p->err, p->errlen, "encoded NUL '%.3s' in %s", raw + i, what);
            }
            if (c < 0x20 || c == 0x7f) {
                reign__free(d);
                if (secret)
                    return FAIL(p->err, p->errlen, "encoded control character in %s", what);
                return FAIL(p->err, p->errlen, "encoded control character '%.3s' in %s", raw + i,
                            what);
            }
            i += 2;
        }
        d[j++] = (char)c;
    }
    d[j] = '\0';
    *out = d;
    return 0;
}

/* "zk://": a letter, then letters, digits, '+', '-', '.'; lower-cased. */
static int parse_scheme(parser *p, size_t *pos)
{
    const char *s = p->s;
    size_t i = 0;
    while (i < p->len && (is_alpha((unsigned char)s[i]) || is_digit((unsigned char)s[i]) ||
                          s[i] == '+' || s[i] == '-' || s[i] == '.'))
        i++;
    /* Nothing beyond valid scheme characters is quoted: without "://" we do
     * not know where a password might be. */
    if (i == p->len || strncmp(s + i, "://", 3) != 0)
        return FAIL(p->err, p->errlen, "no 'scheme://' at the start of the URI");
    if (i == 0)
        return FAIL(p->err, p->errlen, "empty scheme before '://'");
    if (!is_alpha((unsigned char)s[0]))
        return FAIL(p->err, p->errlen, "bad scheme '%.*s%s': it must start with a letter",
                    QUOTE(s, i));
    if (i > SCHEME_MAX)
        return FAIL(p->err, p->errlen, "scheme '%.*s%s' longer than %d characters", QUOTE(s, i),
                    SCHEME_MAX);
    char *scheme = reign__strndup(s, i);
    if (!scheme)
        return NOMEM(p->err, p->errlen);
    for (size_t k = 0; k < i; k++)
        if (scheme[k] >= 'A' && scheme[k] <= 'Z')
            scheme[k] = (char)(scheme[k] - 'A' + 'a');
    p->u->scheme = scheme;
    *pos = i + 3;
    return 0;
}

/* "user[:password]" before the last '@' of the authority. */
static int parse_userinfo(parser *p, const char *ui, const char *end)
{
    const char *colon = find_char(ui, end, ':');
    const char *user_end = colon ? colon : end;
    if (user_end == ui)
        return FAIL(p->err, p->errlen, "empty user name before '@'");
    int rc = decode(p, ui, (size_t)(user_end - ui), "the user name", false, &p->u->user);
    if (rc < 0)
        return rc;
    if (colon)
        rc = decode(p, colon + 1, (size_t)(end - colon - 1), "the password", true, &p->u->password);
    return rc;
}

static int parse_port(parser *p, const char *raw, const char *end, size_t idx, int *port)
{
    size_t n = (size_t)(end - raw);
    if (n == 0)
        return FAIL(p->err, p->errlen, "empty port after ':' in host %zu", idx);
    long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit((unsigned char)raw[i]) || i >= 5) {
            v = -1;
            break;
        }
        v = v * 10 + (raw[i] - '0');
    }
    if (v < 1 || v > 65535)
        return FAIL(p->err, p->errlen, "bad port '%.*s%s' in host %zu (want 1..65535)",
                    QUOTE(raw, n), idx);
    *port = (int)v;
    return 0;
}

/* inet_pton() on a piece that is not NUL-terminated. */
static bool parse_addr(int af, const char *raw, size_t n, void *addr)
{
    char text[INET6_ADDRSTRLEN];
    if (n >= sizeof(text))
        return false;
    memcpy(text, raw, n);
    text[n] = '\0';
    return inet_pton(af, text, addr) == 1;
}

/* A host name: labels of letters, digits, '-' and '_', separated by dots,
 * with one trailing dot allowed; all digits and dots must be IPv4. */
static int check_host_name(parser *p, const char *raw, size_t n, size_t idx)
{
    if (n > HOST_NAME_MAX_)
        return FAIL(p->err, p->errlen, "host name '%.*s%s' in host %zu longer than %d bytes",
                    QUOTE(raw, n), idx, HOST_NAME_MAX_);
    bool numeric = true;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '.') {
            if (i == 0 || raw[i - 1] == '.')
                return FAIL(p->err, p->errlen, "empty label in host name '%.*s%s' in host %zu",
                            QUOTE(raw, n), idx);
            continue;
        }
        if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '_') {
            if (c >= 0x80)
                return FAIL(p->err, p->errlen,
                            "non-ASCII byte in host name '%.*s%s' in host %zu (use its "
                            "punycode form)",
                            QUOTE(raw, n), idx);
            if (c == '[' || c == ']')
                return FAIL(p->err, p->errlen,
                            "misplaced '%c' in host %zu '%.*s%s' (IPv6 is '[addr]:port')", c, idx,
                            QUOTE(raw, n));
            return FAIL(p->err, p->errlen, "bad character '%c' in host name '%.*s%s' in host %zu",
                        c, QUOTE(raw, n), idx);
        }
        if (!is_digit(c))
            numeric = false;
    }
    struct in_addr a4;
    if (numeric && !parse_addr(AF_INET, raw, n, &a4))
        return FAIL(p->err, p->errlen, "bad IPv4 address '%.*s%s' in host %zu", QUOTE(raw, n), idx);
    return 0;
}

/* One element of the host list: "name[:port]" or "[v6]" or "[v6]:port". */
static int parse_host(parser *p, const char *raw, const char *end, size_t idx, reign__uri_host *h)
{
    size_t n = (size_t)(end - raw);
    const char *name = raw, *name_end, *port = NULL;
    int rc;

    if (n == 0)
        return FAIL(p->err, p->errlen, "empty host %zu in the host list (stray ',')", idx);
    if (raw[0] == '[') {
        const char *rb = find_char(raw, end, ']');
        if (!rb)
            return FAIL(p->err, p->errlen, "no ']' after '[' in host %zu '%.*s%s'", idx,
                        QUOTE(raw, n));
        name = raw + 1;
        name_end = rb;
        size_t an = (size_t)(name_end - name);
        struct in6_addr a6;
        if (an == 0)
            return FAIL(p->err, p->errlen, "empty IPv6 address '[]' in host %zu", idx);
        if (!parse_addr(AF_INET6, name, an, &a6))
            return FAIL(p->err, p->errlen, "bad IPv6 address '%.*s%s' in host %zu", QUOTE(name, an),
                        idx);
        if (rb + 1 < end) {
            if (rb[1] != ':')
                return FAIL(p->err, p->errlen, "unexpected '%c' after ']' in host %zu '%.*s%s'",
                            rb[1], idx, QUOTE(raw, n));
            port = rb + 2;
        }
        h->ipv6 = 1;
    } else {
        const char *colon = find_char(raw, end, ':');
        if (colon && find_char(colon + 1, end, ':'))
            return FAIL(p->err, p->errlen,
                        "IPv6 address in host %zu '%.*s%s' must be in brackets, as '[addr]:port'",
                        idx, QUOTE(raw, n));
        name_end = colon ? colon : end;
        if (name_end == name)
            return FAIL(p->err, p->errlen, "empty host name in host %zu '%.*s%s'", idx,
                        QUOTE(raw, n));
        rc = check_host_name(p, name, (size_t)(name_end - name), idx);
        if (rc < 0)
            return rc;
        if (colon)
            port = colon + 1;
    }
    if (port) {
        rc = parse_port(p, port, end, idx, &h->port);
        if (rc < 0)
            return rc;
    }
    h->host = reign__strndup(name, (size_t)(name_end - name));
    if (!h->host)
        return NOMEM(p->err, p->errlen);
    return 0;
}

static int parse_hosts(parser *p, const char *list, const char *end)
{
    size_t n = 1;
    for (const char *c = list; c < end; c++)
        if (*c == ',')
            n++;
    if (n > REIGN__URI_MAX_HOSTS)
        return FAIL(p->err, p->errlen, "%zu hosts, more than %d", n, REIGN__URI_MAX_HOSTS);
    p->u->hosts = reign__calloc(n, sizeof(*p->u->hosts));
    if (!p->u->hosts)
        return NOMEM(p->err, p->errlen);
    const char *h = list;
    for (size_t i = 0; i < n; i++) {
        const char *comma = find_char(h, end, ',');
        const char *h_end = comma ? comma : end;
        int rc = parse_host(p, h, h_end, i + 1, &p->u->hosts[i]);
        if (rc < 0)
            return rc;
        p->u->n_hosts = i + 1;
        h = h_end + 1;
    }
    return 0;
}

/* "k=v&k&k=v" after the '?'. */
static int parse_query(parser *p, const char *q, const char *end)
{
    size_t n = 1;
    for (const char *c = q; c < end; c++)
        if (*c == '&')
            n++;
    if (q == end)
        return FAIL(p->err, p->errlen, "empty parameter list after '?'");
    if (n > REIGN__URI_MAX_PARAMS)
        return FAIL(p->err, p->errlen, "%zu parameters, more than %d", n, REIGN__URI_MAX_PARAMS);
    p->u->params = reign__calloc(n, sizeof(*p->u->params));
    if (!p->u->params)
        return NOMEM(p->err, p->errlen);
    const char *a = q;
    for (size_t i = 0; i < n; i++) {
        const char *amp = find_char(a, end, '&');
        const char *a_end = amp ? amp : end;
        const char *eq = find_char(a, a_end, '=');
        const char *k_end = eq ? eq : a_end;
        size_t kn = (size_t)(k_end - a);
        reign__uri_kv *prm = &p->u->params[i];
        int rc;

        if (a == a_end)
            return FAIL(p->err, p->errlen, "empty parameter %zu (stray '&')", i + 1);
        if (kn == 0)
            return FAIL(p->err, p->errlen, "empty name in parameter %zu '%.*s%s'", i + 1,
                        QUOTE(a, (size_t)(a_end - a)));
        rc = decode(p, a, kn, "a parameter name", false, &prm->key);
        if (rc < 0)
            return rc;
        p->u->n_params = i + 1;
        size_t dn = strlen(prm->key);
        bool ok = dn > 0 && dn <= PARAM_KEY_MAX;
        for (size_t k = 0; ok && k < dn; k++)
            ok = is_param_key_char((unsigned char)prm->key[k]);
        if (!ok)
            return FAIL(p->err, p->errlen,
                        "bad parameter name '%.*s%s' (want 1 to %d of a-z, 0-9, '_')", QUOTE(a, kn),
                        PARAM_KEY_MAX);
        for (size_t k = 0; k < i; k++)
            if (strcmp(p->u->params[k].key, prm->key) == 0)
                return FAIL(p->err, p->errlen, "parameter '%s' given twice", prm->key);
        char what[PARAM_KEY_MAX + 32];
        snprintf(what, sizeof(what), "the value of parameter '%s'", prm->key);
        if (eq)
            rc = decode(p, eq + 1, (size_t)(a_end - eq - 1), what, false, &prm->value);
        else
            rc = decode(p, "", 0, what, false, &prm->value);
        if (rc < 0)
            return rc;
        a = a_end + 1;
    }
    return 0;
}

static int parse(parser *p)
{
    const char *s = p->s, *end = p->s + p->len;
    size_t pos;
    int rc = check_chars(p);
    if (rc < 0)
        return rc;
    rc = parse_scheme(p, &pos);
    if (rc < 0)
        return rc;

    /* The authority runs to the first '/' or '?'. */
    const char *auth = s + pos, *auth_end = auth;
    while (auth_end < end && *auth_end != '/' && *auth_end != '?')
        auth_end++;
    const char *at = find_char(auth_end, end, '@');
    if (at)
        return FAIL(p->err, p->errlen,
                    "'@' at offset %zu, after the host list: write it as %%40 (in a password, "
                    "write '/', '?' and '#' as %%2F, %%3F and %%23)",
                    (size_t)(at - s));

    const char *hosts = auth;
    at = memrchr(auth, '@', (size_t)(auth_end - auth));
    if (at) {
        rc = parse_userinfo(p, auth, at);
        if (rc < 0)
            return rc;
        hosts = at + 1;
        if (hosts == auth_end)
            return FAIL(p->err, p->errlen, "no host after '@'");
    }
    if (hosts < auth_end) {
        rc = parse_hosts(p, hosts, auth_end);
        if (rc < 0)
            return rc;
    }

    const char *q = find_char(auth_end, end, '?');
    const char *path_end = q ? q : end;
    rc = decode(p, auth_end, (size_t)(path_end - auth_end), "the path", false, &p->u->path);
    if (rc < 0)
        return rc;
    if (q)
        return parse_query(p, q + 1, end);
    return 0;
}

int reign__uri_parse(const char *s, reign__uri **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen)
        err[0] = '\0';
    if (!s || !*s)
        return FAIL(err, errlen, "empty URI");
    size_t len = strnlen(s, REIGN__URI_MAX + 1);
    if (len > REIGN__URI_MAX)
        return FAIL(err, errlen, "URI longer than %d bytes", REIGN__URI_MAX);
    parser p = {.s = s, .len = len, .err = err, .errlen = errlen};
    p.u = reign__calloc(1, sizeof(*p.u));
    if (!p.u)
        return NOMEM(err, errlen);
    int rc = parse(&p);
    if (rc < 0) {
        reign__uri_free(p.u);
        return rc;
    }
    *out = p.u;
    return 0;
}

void reign__uri_free(reign__uri *u)
{
    if (!u)
        return;
    reign__free(u->scheme);
    reign__free(u->user);
    if (u->password) {
        /* Not a guarantee against every copy, but the freed block at least
         * does not keep the secret around. */
        volatile char *pw = u->password;
        while (*pw)
            *pw++ = '\0';
        reign__free(u->password);
    }
    for (size_t i = 0; i < u->n_hosts; i++)
        reign__free(u->hosts[i].host);
    reign__free(u->hosts);
    reign__free(u->path);
    for (size_t i = 0; i < u->n_params; i++) {
        reign__free(u->params[i].key);
        reign__free(u->params[i].value);
    }
    reign__free(u->params);
    reign__free(u);
}

const char *reign__uri_param(const reign__uri *u, const char *key)
{
    if (!u || !key)
        return NULL;
    for (size_t i = 0; i < u->n_params; i++)
        if (strcmp(u->params[i].key, key) == 0)
            return u->params[i].value;
    return NULL;
}

int reign__uri_param_int(const reign__uri *u, const char *key, long min, long max, long *out,
                         char *err, size_t errlen)
{
    const char *v = reign__uri_param(u, key);
    if (!v)
        return 0;
    /* strtol alone would take leading spaces, a '+' and "0x". */
    const char *d = v[0] == '-' ? v + 1 : v;
    bool digits = *d != '\0';
    for (const char *c = d; *c; c++)
        digits = digits && is_digit((unsigned char)*c);
    if (!digits)
        return FAIL(err, errlen, "parameter '%s' = '%.*s%s' is not a decimal integer", key,
                    QUOTE(v, strlen(v)));
    errno = 0;
    long n = strtol(v, NULL, 10);
    if (errno == ERANGE || n < min || n > max)
        return FAIL(err, errlen, "parameter '%s' = '%.*s%s' is out of range %ld..%ld", key,
                    QUOTE(v, strlen(v)), min, max);
    *out = n;
    return 1;
}

int reign__uri_check_params(const reign__uri *u, const char *const *known, char *err, size_t errlen)
{
    for (size_t i = 0; u && i < u->n_params; i++) {
        bool found = false;
        for (size_t k = 0; known && known[k] && !found; k++)
            found = strcmp(known[k], u->params[i].key) == 0;
        if (found)
            continue;
        /* Name the ones we know: a typo is then easy to spot. */
        char list[256] = "";
        size_t used = 0;
        for (size_t k = 0; known && known[k] && used < sizeof(list); k++) {
            int w = snprintf(list + used, sizeof(list) - used, "%s%s", k ? ", " : "", known[k]);
            if (w < 0)
                break;
            used += (size_t)w;
        }
        if (used == 0)
            return FAIL(err, errlen, "unknown parameter '%s' (this scheme takes none)",
                        u->params[i].key);
        return FAIL(err, errlen, "unknown parameter '%s' (known: %s)", u->params[i].key, list);
    }
    return 0;
}

char *reign__uri_hosts_string(const reign__uri *u, int default_port)
{
    reign__buf b;
    reign__buf_init(&b);
    /* An empty string, not NULL, for zero hosts: NULL means out of memory. */
    reign__buf_append(&b, "", 0);
    for (size_t i = 0; u && i < u->n_hosts; i++) {
        const reign__uri_host *h = &u->hosts[i];
        int port = h->port ? h->port : default_port;
        reign__buf_printf(&b, h->ipv6 ? "%s[%s]" : "%s%s", i ? "," : "", h->host);
        if (port > 0)
            reign__buf_printf(&b, ":%d", port);
    }
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}
