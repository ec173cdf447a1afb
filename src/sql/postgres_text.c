/*
 * postgres_text.c - PostgreSQL's words in text, read for postgres.c: the SQLSTATE in a server
 * message and what it means to reign, a message's first line, a column's type, a bytea in hex.
 * Nothing here talks to the server.  Private to src/sql/.
 */
#include <string.h>

#include "postgres_text.h"

/* The SQLSTATE in a verbose libpq message ("FATAL:  28P01: password ..."), or "". */
void reign__pg_sqlstate_of_message(const char *msg, char out[6])
{
    out[0] = '\0';
    const char *p = strstr(msg, "FATAL:");
    if (!p)
        p = strstr(msg, "ERROR:");
    if (!p)
        return;
    p += 6;
    while (*p == ' ')
        p++;
    for (int i = 0; i < 5; i++) {
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'A' && p[i] <= 'Z')))
            return;
    }
    if (p[5] != ':')
        return;
    memcpy(out, p, 5);
    out[5] = '\0';
}

int reign__pg_code_of_sqlstate(const char *s)
{
    if (!strcmp(s, "28P01") || !strcmp(s, "28000"))
        return REIGN_EAUTH;
    if (!strcmp(s, "3D000") || !strcmp(s, "42P01"))
        return REIGN_ENOENT;
    if (!strcmp(s, "42501"))
        return REIGN_EACCES;
    if (!strcmp(s, "57014") || !strcmp(s, "55P03"))
        return REIGN_ETIMEDOUT; /* statement_timeout, lock_timeout */
    if (!strcmp(s, "53300") || !strcmp(s, "57P03"))
        return REIGN_ECONNECT; /* too many connections, starting up or shutting down */
    if (!strncmp(s, "08", 2) || !strcmp(s, "57P01") || !strcmp(s, "57P02"))
        return REIGN_ECONNLOSS;
    return REIGN_EBACKEND;
}

/*
 * The first line of a libpq message, from the server's own words on: "connection to server
 * at ... failed: FATAL:  28P01: password authentication failed ..." gives "password
 * authentication failed ..." (the store, named in front of every message, says where).
 */
void reign__pg_message_line(const char *msg, char *out, size_t n)
{
    const char *p = msg;
    size_t first = strcspn(msg, "\n");
    static const char *const severities[] = {"FATAL:  ", "ERROR:  ", "PANIC:  "};
    for (size_t i = 0; i < sizeof severities / sizeof severities[0]; i++) {
        const char *sev = strstr(msg, severities[i]);
        if (sev && (size_t)(sev - msg) < first) {
            p = sev + strlen(severities[i]);
            break;
        }
    }
    if (strspn(p, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") >= 5 && p[5] == ':')
        p += 6; /* the SQLSTATE of a verbose message */
    while (*p == ' ')
        p++;
    size_t len = strcspn(p, "\n");
    if (len >= n)
        len = n - 1;
    memcpy(out, p, len);
    out[len] = '\0';
}

reign__sql_coltype reign__pg_kind_of(const char *type, int typmod)
{
    if (!strcmp(type, "int2") || !strcmp(type, "int4") || !strcmp(type, "int8"))
        return REIGN__COL_INT;
    if (!strcmp(type, "varchar") || !strcmp(type, "bpchar") || !strcmp(type, "text"))
        return REIGN__COL_TEXT;
    if (!strcmp(type, "bytea"))
        return REIGN__COL_BLOB;
    if (!strcmp(type, "timestamptz") || !strcmp(type, "timestamp"))
        return typmod < 0 || typmod >= 3 ? REIGN__COL_TIME : REIGN__COL_TIME_COARSE;
    return REIGN__COL_OTHER;
}

static int hex_digit(char ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

/* A bytea in text form (\x and hex digits, PostgreSQL's bytea_output = hex, the default)
 * into *out (allocated, with a NUL after the bytes). */
int reign__pg_unhex(reign__sqlconn *c, const char *what, const char *s, size_t n, char **out,
                    size_t *outlen, char *err, size_t errlen)
{
    if (n < 2 || s[0] != '\\' || s[1] != 'x' || n % 2)
        return reign__sql_err(c, err, errlen, REIGN_EBACKEND,
                              "%s: a byte string not in hex form (is bytea_output 'escape'? "
                              "reign needs 'hex', the default)",
                              what);
    size_t len = (n - 2) / 2;
    char *b = reign__malloc(len + 1);
    if (!b)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    for (size_t i = 0; i < len; i++) {
        int hi = hex_digit(s[2 + 2 * i]), lo = hex_digit(s[3 + 2 * i]);
        if (hi < 0 || lo < 0) {
            reign__free(b);
            return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "%s: a malformed byte string",
                                  what);
        }
        b[i] = (char)(hi << 4 | lo);
    }
    b[len] = '\0';
    *out = b;
    *outlen = len;
    return 0;
}
