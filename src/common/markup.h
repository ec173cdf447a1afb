/*
 * markup.h - a growing text buffer and the escaping of text for HTML and XML
 * (SVG), shared by the tools that write markup: reignd's status page and the
 * timeline drawer (timeline_svg.h) that both it and `reign history --svg` use.
 *
 * Whatever comes from a store (ids, payloads) is data: markup_escape() makes
 * it safe as element text and as a quoted attribute value, and keeps the
 * result well-formed XML whatever the bytes (invalid UTF-8 and control
 * characters, which XML cannot carry even as references, become U+FFFD).
 */
#ifndef REIGN_TOOLS_MARKUP_H
#define REIGN_TOOLS_MARKUP_H

#include <stddef.h>

/* A NUL-terminated growing string; start it zeroed.  Out of memory sticks in `oom`. */
typedef struct markup {
    char *buf;
    size_t len, cap;
    int oom;
} markup;

/* Appends printf-style text, as it is (the format's own text is markup). */
void markup_printf(markup *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends n bytes as they are. */
void markup_raw(markup *m, const char *s, size_t n);

/* Appends the NUL-terminated s as text: & < > " ' as references, invalid UTF-8 and control
 * characters (but tab and newline) as U+FFFD. */
void markup_escape(markup *m, const char *s);

/* The same for n bytes (a NUL among them is a control character). */
void markup_escape_n(markup *m, const char *s, size_t n);

/* As markup_escape(), cut after `max` characters with "…" when longer. */
void markup_escape_cut(markup *m, const char *s, size_t max);

/* The text, handed to the caller (free()), and the buffer reset; NULL after out of memory. */
char *markup_take(markup *m, size_t *len);

/* Frees the text and resets the buffer. */
void markup_free(markup *m);

#endif
