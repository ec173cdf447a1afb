/* random.c - random bytes for the guids that make retried creates recognisable. */
#include <errno.h>
#include <sys/random.h>

#include "core.h"

int reign__random_bytes(void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int reign__random_hex(char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[64];
    if (n > sizeof(raw))
        return REIGN_EINVAL;
    int r = reign__random_bytes(raw, n);
    if (r < 0)
        return r;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[raw[i] >> 4];
        out[2 * i + 1] = hex[raw[i] & 15];
    }
    out[2 * n] = '\0';
    return 0;
}
