/*
 * peer_auth.h - how two reignds prove to each other that they hold the
 * shared secret without ever sending it: every request, and every answer,
 * is signed with HMAC-SHA256 keyed by the secret (nettle).  Pure functions
 * and one small cache, no I/O: peer.c puts them on the wire, the unit tests
 * and the fuzzer (fuzz_peer_auth.c) drive them directly.
 *
 * A request carries
 *
 *   Authorization: REIGN-HMAC-SHA256 ts=UNIX_MS, nonce=HEX32, sig=HEX64
 *
 * where sig = HMAC(secret, "reignd-peer-request-1\n" METHOD "\n" PATH "\n"
 * TS "\n" NONCE "\n" BODY): the method, the path, the body, the sender's
 * wall-clock time and 16 random bytes.  The server takes a request whose
 * signature matches, whose time is within REIGND_AUTH_WINDOW_MS of its own
 * clock, and whose nonce it has not taken within that window (the nonce
 * cache below), so a request seen on the network cannot be sent again, and
 * changing any part of it breaks the signature.  Its answer carries
 *
 *   X-Reign-Signature: HEX64
 *
 * = HMAC(secret, "reignd-peer-answer-1\n" NONCE "\n" STATUS "\n" BODY),
 * bound to the request's nonce: the client believes only an answer made by
 * a holder of the secret for this very request (a forged "standby done"
 * would otherwise let the new active start beside an old one that never
 * stopped).  Why HMAC rather than TLS: docs/design.md, "The peer endpoint".
 */
#ifndef REIGND_PEER_AUTH_H
#define REIGND_PEER_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peer.h"

#define REIGND_AUTH_SCHEME    "REIGN-HMAC-SHA256"
#define REIGND_AUTH_ANSWER    "X-Reign-Signature"
#define REIGND_AUTH_WINDOW_MS 30000 /* how far apart the two clocks may be */
#define REIGND_AUTH_NONCE_HEX 32    /* 16 random bytes */
#define REIGND_AUTH_SIG_HEX   64    /* SHA-256 */
/* Requests taken within one window, at most; beyond, requests are refused
 * (only holders of the secret can fill it: a request enters once signed). */
#define REIGND_AUTH_CACHE_MAX 4096

/* The fields of an Authorization header. */
typedef struct reignd_auth {
    int64_t ts_ms; /* the sender's CLOCK_REALTIME, ms */
    char nonce[REIGND_AUTH_NONCE_HEX + 1];
    char sig[REIGND_AUTH_SIG_HEX + 1];
} reignd_auth;

/*
 * Parses the value of an Authorization header: the scheme, then ts, nonce
 * and sig, each once, in any order, separated by commas (and spaces);
 * lower-case hex.  0, or REIGN_EINVAL with a reason in `err` (the header is
 * never quoted).
 */
int reignd_auth_parse(const char *header, reignd_auth *out, char *err, size_t errlen);

/* A fresh nonce (getrandom) and ts = now_ms.  0, or -errno. */
int reignd_auth_fresh(reignd_auth *a, int64_t now_ms);

/* Signs a request: fills a->sig from the other fields. */
void reignd_auth_sign_request(const reignd_secret *secret, const char *method, const char *path,
                              const void *body, size_t body_len, reignd_auth *a);

/* The header value for `a` ("REIGN-HMAC-SHA256 ts=..., nonce=..., sig=...");
 * returns the length needed, like snprintf. */
size_t reignd_auth_format(const reignd_auth *a, char *out, size_t outlen);

/* Whether a->sig is the request's signature (compared in constant time). */
bool reignd_auth_check_request(const reignd_secret *secret, const char *method, const char *path,
                               const void *body, size_t body_len, const reignd_auth *a);

/* The answer's signature (REIGND_AUTH_SIG_HEX hex digits and a NUL in out). */
void reignd_auth_sign_answer(const reignd_secret *secret, const char *nonce, unsigned status,
                             const void *body, size_t body_len, char out[REIGND_AUTH_SIG_HEX + 1]);

/* Whether `given` (a header value, maybe NULL) signs the answer. */
bool reignd_auth_check_answer(const reignd_secret *secret, const char *nonce, unsigned status,
                              const void *body, size_t body_len, const char *given);

/* ---- the nonces taken ------------------------------------------------------ */

typedef struct reignd_nonce_cache reignd_nonce_cache;

reignd_nonce_cache *reignd_nonce_cache_new(void);
void reignd_nonce_cache_free(reignd_nonce_cache *c); /* NULL-safe */

/* What the server makes of a signed request's time and nonce. */
typedef enum reignd_auth_verdict {
    REIGND_AUTH_OK,       /* taken: the nonce is remembered until it could no longer pass */
    REIGND_AUTH_SKEWED,   /* ts farther than the window from now */
    REIGND_AUTH_REPLAYED, /* nonce taken before */
    REIGND_AUTH_FULL,     /* REIGND_AUTH_CACHE_MAX requests within one window */
} reignd_auth_verdict;

/* Checks a's time against now_ms and takes its nonce (a signature already
 * checked).  Expired entries are dropped on the way. */
reignd_auth_verdict reignd_nonce_take(reignd_nonce_cache *c, const reignd_auth *a, int64_t now_ms);

/* The wall clock in ms (CLOCK_REALTIME): what both ends sign and compare. */
int64_t reignd_auth_now_ms(void);

#endif
