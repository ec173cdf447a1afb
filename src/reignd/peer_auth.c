/*
 * peer_auth.c - the signatures of the peer endpoint (peer_auth.h): HMAC-
 * SHA256 from nettle over a fixed layout of the request or answer, the
 * Authorization header's parser, and the cache of nonces that refuses a
 * request seen before.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "peer_auth.h"

#define REQUEST_CONTEXT "reignd-peer-request-1\n"
#define ANSWER_CONTEXT  "reignd-peer-answer-1\n"

static void to_hex(const uint8_t *in, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[in[i] >> 4];
        out[2 * i + 1] = hex[in[i] & 15];
    }
    out[2 * n] = '\0';
}

static void update_str(struct hmac_sha256_ctx *h, const char *s)
{
    hmac_sha256_update(h, strlen(s), (const uint8_t *)s);
}

/* HMAC(secret, context a "\n" b "\n" c "\n" d "\n" body) as hex; NULL parts are left out. */
static void mac_hex(const reignd_secret *secret, const char *context, const char *const parts[4],
                    const void *body, size_t body_len, char out[REIGND_AUTH_SIG_HEX + 1])
{
    struct hmac_sha256_ctx h;
    uint8_t digest[SHA256_DIGEST_SIZE];
    hmac_sha256_set_key(&h, secret->len, secret->bytes);
    update_str(&h, context);
    for (int i = 0; i < 4; i++) {
        if (!parts[i])
            continue;
        update_str(&h, parts[i]);
        hmac_sha256_update(&h, 1, (const uint8_t *)"\n");
    }
    if (body_len)
        hmac_sha256_update(&h, body_len, body);
    hmac_sha256_digest(&h, sizeof(digest), digest);
    to_hex(digest, sizeof(digest), out);
    explicit_bzero(&h, sizeof(h));
}

static void request_mac(const reignd_secret *secret, const char *method, const char *path,
                        const void *body, size_t body_len, const reignd_auth *a,
                        char out[REIGND_AUTH_SIG_HEX + 1])
{
    char ts[24];
    snprintf(ts, sizeof(ts), "%" PRId64, a->ts_ms);
    const char *parts[4] = {method, path, ts, a->nonce};
    mac_hex(secret, REQUEST_CONTEXT, parts, body, body_len, out);
}

void reignd_auth_sign_request(const reignd_secret *secret, const char *method, const char *path,
                              const void *body, size_t body_len, reignd_auth *a)
{
    request_mac(secret, method, path, body, body_len, a, a->sig);
}

/* Equal hex strings of REIGND_AUTH_SIG_HEX characters, in constant time. */
static bool sig_equal(const char *want, const char *given)
{
    return given && strlen(given) == REIGND_AUTH_SIG_HEX &&
           memeql_sec(want, given, REIGND_AUTH_SIG_HEX);
}

bool reignd_auth_check_request(const reignd_secret *secret, const char *method, const char *path,
                               const void *body, size_t body_len, const reignd_auth *a)
{
    char want[REIGND_AUTH_SIG_HEX + 1];
    if (secret->len == 0)
        return false;
    request_mac(secret, method, path, body, body_len, a, want);
    return sig_equal(want, a->sig);
}

void reignd_auth_sign_answer(const reignd_secret *secret, const char *nonce, unsigned status,
                             const void *body, size_t body_len, char out[REIGND_AUTH_SIG_HEX + 1])
{
    char code[16];
    snprintf(code, sizeof(code), "%u", status);
    const char *parts[4] = {nonce, code, NULL, NULL};
    mac_hex(secret, ANSWER_CONTEXT, parts, body, body_len, out);
}

bool reignd_auth_check_answer(const reignd_secret *secret, const char *nonce, unsigned status,
                              const void *body, size_t body_len, const char *given)
{
    char want[REIGND_AUTH_SIG_HEX + 1];
    if (secret->len == 0)
        return false;
    reignd_auth_sign_answer(secret, nonce, status, body, body_len, want);
    return sig_equal(want, given);
}

int reignd_auth_fresh(reignd_auth *a, int64_t now_ms)
{
    uint8_t raw[REIGND_AUTH_NONCE_HEX / 2];
    size_t got = 0;
    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        got += (size_t)n;
    }
    memset(a, 0, sizeof(*a));
    a->ts_ms = now_ms;
    to_hex(raw, sizeof(raw), a->nonce);
    return 0;
}

size_t reignd_auth_format(const reignd_auth *a, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, REIGND_AUTH_SCHEME " ts=%" PRId64 ", nonce=%s, sig=%s", a->ts_ms,
                     a->nonce, a->sig);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- the parser ------------------------------------------------------------- */

static bool is_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static int bad(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "malformed Authorization header: %s", why);
    return REIGN_EINVAL;
}

int reignd_auth_parse(const char *header, reignd_auth *out, char *err, size_t errlen)
{
    static const char scheme[] = REIGND_AUTH_SCHEME;
    memset(out, 0, sizeof(*out));
    if (!header || strncmp(header, scheme, sizeof(scheme) - 1) != 0 ||
        (header[sizeof(scheme) - 1] != ' ' && header[sizeof(scheme) - 1] != '\0')) {
        snprintf(err, errlen,
                 "the request is not signed (expected \"Authorization: " REIGND_AUTH_SCHEME
                 " ts=..., nonce=..., sig=...\")");
        return REIGN_EINVAL;
    }
    bool have_ts = false, have_nonce = false, have_sig = false;
    const char *p = header + sizeof(scheme) - 1;
    for (;;) {
        p += strspn(p, " ");
        if (!*p)
            break;
        const char *eq = strchr(p, '=');
        if (!eq)
            return bad(err, errlen, "expected name=value");
        size_t nlen = (size_t)(eq - p);
        const char *v = eq + 1;
        size_t vlen = strcspn(v, ", ");
        if (nlen == 2 && strncmp(p, "ts", 2) == 0) {
            if (have_ts)
                return bad(err, errlen, "ts given twice");
            if (vlen == 0 || vlen > 15 || strspn(v, "0123456789") != vlen)
                return bad(err, errlen, "ts is not a time in milliseconds");
            int64_t ts = 0;
            for (size_t i = 0; i < vlen; i++)
                ts = ts * 10 + (v[i] - '0');
            out->ts_ms = ts;
            have_ts = true;
        } else if (nlen == 5 && strncmp(p, "nonce", 5) == 0) {
            if (have_nonce)
                return bad(err, errlen, "nonce given twice");
            if (vlen != REIGND_AUTH_NONCE_HEX || !is_lower_hex(v, vlen))
                return bad(err, errlen, "nonce is not 32 lower-case hex digits");
            memcpy(out->nonce, v, vlen);
            out->nonce[vlen] = '\0';
            have_nonce = true;
        } else if (nlen == 3 && strncmp(p, "sig", 3) == 0) {
            if (have_sig)
                return bad(err, errlen, "sig given twice");
            if (vlen != REIGND_AUTH_SIG_HEX || !is_lower_hex(v, vlen))
                return bad(err, errlen, "sig is not 64 lower-case hex digits");
            memcpy(out->sig, v, vlen);
            out->sig[vlen] = '\0';
            have_sig = true;
        } else {
            return bad(err, errlen, "unknown field (expected ts, nonce and sig)");
        }
        p = v + vlen;
        p += strspn(p, " ");
        if (*p == ',')
            p++;
        else if (*p)
            return bad(err, errlen, "expected a comma between fields");
    }
    if (!have_ts || !have_nonce || !have_sig)
        return bad(err, errlen, "ts, nonce and sig are all required");
    return 0;
}

/* ---- the nonce cache --------------------------------------------------------- */

typedef struct nonce_entry {
    char nonce[REIGND_AUTH_NONCE_HEX];
    int64_t until_ms; /* after this (our clock), its request fails the time check anyway */
} nonce_entry;

struct reignd_nonce_cache {
    nonce_entry *e;
    size_t n;
};

reignd_nonce_cache *reignd_nonce_cache_new(void)
{
    reignd_nonce_cache *c = calloc(1, sizeof(*c));
    if (c && !(c->e = calloc(REIGND_AUTH_CACHE_MAX, sizeof(*c->e)))) {
        free(c);
        return NULL;
    }
    return c;
}

void reignd_nonce_cache_free(reignd_nonce_cache *c)
{
    if (!c)
        return;
    free(c->e);
    free(c);
}

reignd_auth_verdict reignd_nonce_take(reignd_nonce_cache *c, const reignd_auth *a, int64_t now_ms)
{
    if (a->ts_ms < now_ms - REIGND_AUTH_WINDOW_MS || a->ts_ms > now_ms + REIGND_AUTH_WINDOW_MS)
        return REIGND_AUTH_SKEWED;
    /* A linear walk: at most a few thousand entries, and only for signed requests. */
    size_t keep = 0;
    bool seen = false;
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].until_ms < now_ms)
            continue;
        seen |= memcmp(c->e[i].nonce, a->nonce, REIGND_AUTH_NONCE_HEX) == 0;
        c->e[keep++] = c->e[i];
    }
    c->n = keep;
    if (seen)
        return REIGND_AUTH_REPLAYED;
    if (c->n == REIGND_AUTH_CACHE_MAX)
        return REIGND_AUTH_FULL;
    memcpy(c->e[c->n].nonce, a->nonce, REIGND_AUTH_NONCE_HEX);
    c->e[c->n].until_ms = a->ts_ms + REIGND_AUTH_WINDOW_MS;
    c->n++;
    return REIGND_AUTH_OK;
}

int64_t reignd_auth_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
