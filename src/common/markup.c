/*
 * markup.c - the text buffer and the escaping of markup.h.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "markup.h"

static int grow(markup *m, size_t more)
{
    if (m->oom)
        return -1;
    if (m->len + more < m->cap)
        return 0;
    size_t cap = m->cap ? m->cap : 1024;
    while (cap <= m->len + more)
        cap *= 2;
    char *b = realloc(m->buf, cap);
    if (!b) {
        m->oom = 1;
        return -1;
    }
    m->buf = b;
    m->cap = cap;
    return 0;
}

void markup_raw(markup *m, const char *s, size_t n)
{
    if (grow(m, n) < 0)
        return;
    memcpy(m->buf + m->len, s, n);
    m->len += n;
    m->buf[m->len] = '\0';
}

void markup_printf(markup *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        m->oom = 1;
        return;
    }
    if (grow(m, (size_t)n) < 0)
        return;
    va_start(ap, fmt);
    vsnprintf(m->buf + m->len, m->cap - m->len, fmt, ap);
    va_end(ap);
    m->len += (size_t)n;
}

/* The length of the valid UTF-8 character at s (at most n bytes) that XML may carry, or 0. */
static size_t xml_char(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned long cp;
    if (c < 0x80)
        return c >= 0x20 || c == '\t' || c == '\n' ? 1 : 0;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
        return 0;
    return len;
}

/* Escapes up to `max` characters of s[0..n); 1 if it stopped before the end. */
static int escape(markup *m, const char *s, size_t n, size_t max)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    for (size_t chars = 0; p < end; chars++) {
        if (chars == max)
            return 1;
        size_t len = xml_char(p, (size_t)(end - p));
        if (len == 0) {
            markup_raw(m, "\xef\xbf\xbd", 3); /* U+FFFD */
            p++;
            continue;
        }
        switch (*p) {
        case '&':
            markup_raw(m, "&amp;", 5);
            break;
        case '<':
            markup_raw(m, "&lt;", 4);
            break;
        case '>':
            markup_raw(m, "&gt;", 4);
            break;
        case '"':
            markup_raw(m, "&quot;", 6);
            break;
        case '\'':
            markup_raw(m, "&#39;", 5);
            break;
        default:
            markup_raw(m, (const char *)p, len);
        }
        p += len;
    }
    return 0;
}

void markup_escape_n(markup *m, const char *s, size_t n)
{
    escape(m, s, n, (size_t)-1);
}

void markup_escape(markup *m, const char *s)
{
    if (s)
        escape(m, s, strlen(s), (size_t)-1);
}

void markup_escape_cut(markup *m, const char *s, size_t max)
{
    if (s && escape(m, s, strlen(s), max))
        markup_raw(m, "\xe2\x80\xa6", 3); /* … */
}

char *markup_take(markup *m, size_t *len)
{
    char *out = m->oom ? NULL : m->buf;
    if (!out && !m->oom) /* nothing written: an empty string */
        out = calloc(1, 1);
    if (m->oom)
        free(m->buf);
    if (len)
        *len = out ? m->len : 0;
    memset(m, 0, sizeof(*m));
    return out;
}

void markup_free(markup *m)
{
    free(m->buf);
    memset(m, 0, sizeof(*m));
}
