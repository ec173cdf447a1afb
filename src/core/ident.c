/* ident.c - the ids candidates and members go by: the default one, and what makes one legal. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

int reign__default_id(char **out)
{
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "host");
    host[sizeof(host) - 1] = '\0';
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s-%ld", host, (long)getpid());
    if (b.oom) {
        reign__buf_free(&b);
        return REIGN_ENOMEM;
    }
    *out = b.data;
    return 0;
}

bool reign__id_ok(const char *id, size_t max)
{
    size_t n = strlen(id);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
            return false;
    return true;
}
