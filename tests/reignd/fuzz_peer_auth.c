/*
 * fuzz_peer_auth.c - libFuzzer target for the peer endpoint's signature
 * header (reignd_auth_parse, src/reignd/peer_auth.c), which reads whatever
 * anyone on the network sends to peer_listen, and for what the server does
 * next with a parsed header (the signature check and the nonce cache).
 * Replayed under ctest over corpus/peer_auth/ by tests/fuzz/replay.c
 * (tests/reignd/tests.cmake).
 *
 * Beyond "no crash, no leak", it checks that:
 *   - a failure is REIGN_EINVAL with a one-line reason;
 *   - a success has a time of at most 15 digits, a nonce of 32 and a
 *     signature of 64 lower-case hex digits, and formats back into a header
 *     that parses to the same fields;
 *   - no input's signature passes for a body it was not computed over
 *     (the fuzzer cannot sign: a pass would be a forgery);
 *   - the nonce cache takes a header's nonce once, then calls it replayed;
 *   - parsing is deterministic.
 */
#include <string.h>

#include "fuzz_common.h"
#include "peer_auth.h"

static int lower_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[1024];
    if (size >= sizeof(text))
        return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* a header value is a C string: NULs end it */

    reignd_auth a, again;
    char err[400] = "", err2[400] = "";
    int r = reignd_auth_parse(text, &a, err, sizeof(err));
    int r2 = reignd_auth_parse(text, &again, err2, sizeof(err2));
    CHECK(r == r2);
    if (r < 0) {
        CHECK(r == REIGN_EINVAL);
        CHECK(err[0] != '\0' && strchr(err, '\n') == NULL && strcmp(err, err2) == 0);
        return 0;
    }
    CHECK(memcmp(&a, &again, sizeof(a)) == 0);
    CHECK(a.ts_ms >= 0 && a.ts_ms < 1000000000000000LL);
    CHECK(lower_hex(a.nonce, REIGND_AUTH_NONCE_HEX) && lower_hex(a.sig, REIGND_AUTH_SIG_HEX));

    char formatted[256];
    CHECK(reignd_auth_format(&a, formatted, sizeof(formatted)) < sizeof(formatted));
    reignd_auth back;
    CHECK(reignd_auth_parse(formatted, &back, err, sizeof(err)) == 0);
    CHECK(memcmp(&a, &back, sizeof(a)) == 0);

    static const char secret_text[] = "fuzz-secret-0123456789";
    reignd_secret secret;
    memset(&secret, 0, sizeof(secret));
    memcpy(secret.bytes, secret_text, sizeof(secret_text) - 1);
    secret.len = sizeof(secret_text) - 1;
    CHECK(!reignd_auth_check_request(&secret, "POST", "/v1/services/web/standby", text, size, &a));

    reignd_nonce_cache *c = reignd_nonce_cache_new();
    if (!c)
        return 0;
    reignd_auth_verdict v = reignd_nonce_take(c, &a, a.ts_ms);
    CHECK(v == REIGND_AUTH_OK);
    CHECK(reignd_nonce_take(c, &a, a.ts_ms) == REIGND_AUTH_REPLAYED);
    reignd_nonce_cache_free(c);
    return 0;
}
