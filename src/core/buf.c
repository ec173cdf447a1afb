/*
 * buf.c - a growable byte buffer, and small string helpers that cannot fail.
 * A failed append marks the buffer (oom) so that a sequence of appends can be
 * checked once at the end.
 */
#include <stdio.h>
#include <string.h>

#include "core.h"

void reign__buf_init(reign__buf *b)
{
    memset(b, 0, sizeof(*b));
}

void reign__buf_free(reign__buf *b)
{
    reign__free(b->data);
    reign__buf_init(b);
}

void reign__buf_wipe(reign__buf *b)
{
    if (b->data)
        explicit_bzero(b->data, b->cap);
    reign__buf_free(b);
}

void reign__buf_reset(reign__buf *b)
{
    b->len = 0;
    b->oom = false;
    if (b->data)
        b->data[0] = '\0';
}

static int reserve(reign__buf *b, size_t extra)
{
    if (b->oom)
        return REIGN_ENOMEM;
    if (extra > SIZE_MAX / 2 - b->len) {
        b->oom = true;
        return REIGN_ENOMEM;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = reign__realloc(b->data, cap);
    if (!p) {
        b->oom = true;
        return REIGN_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

int reign__buf_append(reign__buf *b, const void *p, size_t n)
{
    if (reserve(b, n) < 0)
        return REIGN_ENOMEM;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int reign__buf_puts(reign__buf *b, const char *s)
{
    return reign__buf_append(b, s, strlen(s));
}

int reign__buf_printf(reign__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || reserve(b, (size_t)n) < 0)
        return REIGN_ENOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

char *reign__path_join(const char *dir, const char *name)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s", dir, name);
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

void reign__strlcpy(char *dst, const char *src, size_t n)
{
    if (!n)
        return;
    size_t len = strnlen(src, n - 1);
    memcpy(dst, src, len);
    dst[len] = '\0';
}

void reign__errf(char *buf, size_t n, const char *fmt, ...)
{
    if (!buf || !n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}
