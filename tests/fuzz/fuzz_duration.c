/*
 * fuzz_duration.c - libFuzzer target for the durations of `reign run --every / --deadline`
 * (reign_slot_duration_parse(), src/recipes/slot/slot_model.c).  The input, cut at its first
 * NUL, as a string:
 *
 *   - parses or fails with REIGN_EINVAL, leaving the output alone on failure;
 *   - a parse gives 1 ms .. REIGN_SLOT_DURATION_MAX_MS, made only of digits and units;
 *   - the result written back as "<ms>ms" (and, when whole, as seconds, minutes...) parses to
 *     the same value;
 *   - input followed by a unit-less number never parses (a bare number is whole input only).
 */
#include <stdio.h>
#include <string.h>

#include "fuzz_common.h"
#include "recipes/slot/slot_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[256];
    size_t n = size < sizeof s - 1 ? size : sizeof s - 1;
    memcpy(s, data, n);
    s[n] = '\0';
    n = strlen(s);
    int64_t ms = -7;
    int rc = reign_slot_duration_parse(s, &ms);
    CHECK(rc == 0 || rc == REIGN_EINVAL);
    if (rc != 0) {
        CHECK(ms == -7);
        return 0;
    }
    CHECK(ms >= 1 && ms <= REIGN_SLOT_DURATION_MAX_MS);
    CHECK(strspn(s, "0123456789mshd") == strlen(s));
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ms % units[i].ms)
            continue;
        char back[64];
        int64_t again = 0;
        snprintf(back, sizeof back, "%lld%s", (long long)(ms / units[i].ms), units[i].unit);
        CHECK(reign_slot_duration_parse(back, &again) == 0 && again == ms);
    }
    if (n + 2 < sizeof s && n > 0 && strchr("mshd", s[n - 1])) {
        strcat(s, "7");
        int64_t x = 0;
        CHECK(reign_slot_duration_parse(s, &x) == REIGN_EINVAL);
    }
    return 0;
}
