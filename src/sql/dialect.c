/*
 * dialect.c - what the SQL dialects (sqlite.c, mariadb.c, postgres.c) share, below both them and
 * sql.c, which calls them: error messages naming the store, deadlines, the check of a table's
 * layout, the PostgreSQL channel names, the rows of a result (dialect.h), and the list of what a
 * connection's drains heard (sql.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dialect.h"

/* ---- messages, deadlines, the table's layout --------------------------------------------------
 */

int reign__sql_err(const reign__sqlconn *c, char *err, size_t errlen, int code, const char *fmt,
                   ...)
{
    if (!err || !errlen)
        return code;
    /* Without a connection, the message names the store itself. */
    int n = c && c->store[0] ? snprintf(err, errlen, "%s: ", c->store) : 0;
    if (n < 0 || (size_t)n >= errlen)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    reign__sql_one_line(err);
    return code;
}

const char *reign__sql_gone(const reign__sqlconn *c)
{
    return c ? c->gone : NULL;
}

char *reign__sql_splice(const char *tmpl, const char *table)
{
    size_t tl = strlen(table), n = 1;
    for (const char *p = tmpl; *p; p++) {
        bool name = !strncmp(p, "{T}", 3);
        n += name ? tl : 1;
        p += name ? 2 : 0;
    }
    char *out = reign__malloc(n), *o = out;
    if (!out)
        return NULL;
    for (const char *p = tmpl; *p;) {
        if (!strncmp(p, "{T}", 3)) {
            memcpy(o, table, tl);
            o += tl;
            p += 3;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

int64_t reign__sql_deadline(int ms)
{
    return reign__now_ns() + (int64_t)ms * REIGN__NS_PER_MS;
}

int reign__sql_left_ms(int64_t deadline_ns)
{
    int64_t left = deadline_ns - reign__now_ns();
    if (left <= 0)
        return 0;
    /* Round up, so that a wait never ends a hair before its deadline and spins. */
    int64_t ms = (left + REIGN__NS_PER_MS - 1) / REIGN__NS_PER_MS;
    return ms > INT32_MAX ? INT32_MAX : (int)ms;
}

void reign__sql_one_line(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
        s[--n] = '\0';
    for (char *p = s; *p; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    }
}

void reign__sql_scrub(char *s, const char *secret)
{
    if (!s || !secret || !*secret)
        return;
    size_t sl = strlen(secret);
    char *p = s;
    /* Search on after each mask, so that a secret made of '*' cannot match its own mask. */
    while ((p = strstr(p, secret))) {
        if (sl >= 3) {
            memcpy(p, "***", 3);
            memmove(p + 3, p + sl, strlen(p + sl) + 1);
            p += 3;
        } else {
            /* A secret shorter than the mask: blank it in place rather than grow the string. */
            memset(p, '*', sl);
            p += sl;
        }
    }
}

/* The seed's columns, reign's two, and the kinds of type each may have. */
static const struct {
    const char *name;
    reign__sql_coltype kind;
    bool coarse_ok; /* a timestamp without milliseconds does no harm here */
} seed_columns[] = {
    {"id", REIGN__COL_INT, false},
    {"data_center", REIGN__COL_TEXT, false},
    {"lock_name", REIGN__COL_TEXT, false},
    {"owner", REIGN__COL_TEXT, false},
    {"duration", REIGN__COL_INT, false},
    {"term", REIGN__COL_INT, false},
    {"term_duration", REIGN__COL_INT, false},
    {"gmt_create", REIGN__COL_TIME, true},
    /* Expiry is gmt_modified + duration: a column that drops the milliseconds of a renewal
     * makes the lease look older than it is, so followers would take over early. */
    {"gmt_modified", REIGN__COL_TIME, false},
};

static const char *coltype_words(reign__sql_coltype k)
{
    switch (k) {
    case REIGN__COL_INT:
        return "an integer";
    case REIGN__COL_TEXT:
        return "a character string";
    case REIGN__COL_TIME:
    case REIGN__COL_TIME_COARSE:
        return "a timestamp with millisecond precision";
    case REIGN__COL_BLOB:
        return "a byte string";
    default:
        return "?";
    }
}

static const reign__sql_column *find_column(const reign__sql_column *cols, size_t n,
                                            const char *name, bool fold)
{
    for (size_t i = 0; i < n; i++) {
        if (fold ? !strcasecmp(cols[i].name, name) : !strcmp(cols[i].name, name))
            return &cols[i];
    }
    return NULL;
}

static bool kind_fits(reign__sql_coltype have, reign__sql_coltype want, bool coarse_ok)
{
    if (have == want)
        return true;
    return want == REIGN__COL_TIME && have == REIGN__COL_TIME_COARSE && coarse_ok;
}

int reign__sql_check_columns(const reign__sqlconn *c, const reign__sql_column *cols, size_t n,
                             bool fold, bool *need_guid, bool *need_payload, bool *need_session,
                             char *err, size_t errlen)
{
    for (size_t i = 0; i < sizeof seed_columns / sizeof seed_columns[0]; i++) {
        const reign__sql_column *col = find_column(cols, n, seed_columns[i].name, fold);
        if (!col)
            return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                  "table %s has no column %s: not a lease table reign can use",
                                  c->table, seed_columns[i].name);
        if (!kind_fits(col->kind, seed_columns[i].kind, seed_columns[i].coarse_ok))
            return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                                  "column %s.%s is of type %s; reign needs %s", c->table, col->name,
                                  col->type, coltype_words(seed_columns[i].kind));
    }
    const reign__sql_column *guid = find_column(cols, n, "owner_guid", fold);
    if (guid && guid->kind != REIGN__COL_TEXT)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "column %s.%s is of type %s; reign needs %s", c->table, guid->name,
                              guid->type, coltype_words(REIGN__COL_TEXT));
    const reign__sql_column *payload = find_column(cols, n, "payload", fold);
    if (payload && payload->kind != REIGN__COL_BLOB)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "column %s.%s is of type %s; reign needs %s", c->table, payload->name,
                              payload->type, coltype_words(REIGN__COL_BLOB));
    const reign__sql_column *session = find_column(cols, n, "session_guid", fold);
    if (session && session->kind != REIGN__COL_TEXT)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "column %s.%s is of type %s; reign needs %s", c->table, session->name,
                              session->type, coltype_words(REIGN__COL_TEXT));
    *need_guid = !guid;
    *need_payload = !payload;
    *need_session = !session;
    return 0;
}

bool reign__sql_unique_ok(const char *const *cols, size_t n, bool fold)
{
    if (!n)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!cols[i])
            return false; /* an expression */
        bool ok = fold ? !strcasecmp(cols[i], "data_center") || !strcasecmp(cols[i], "lock_name")
                       : !strcmp(cols[i], "data_center") || !strcmp(cols[i], "lock_name");
        if (!ok)
            return false;
    }
    return true;
}

void reign__sql_channel(char out[64], const char *table, const char *dc, const char *name)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    const unsigned char *p = (const unsigned char *)dc;
    for (size_t i = 0, n = strlen(dc) + 1; i < n; i++) /* dc with its NUL, then name */
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    for (p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * UINT64_C(0x100000001b3);
    snprintf(out, 64, "reign_%.32s_%016llx", table, (unsigned long long)h);
}

int reign__sql_notice_payload(reign__sqlconn *c, reign__buf *pl, const char *name, const char *hint,
                              char *err, size_t errlen)
{
    reign__buf_init(pl);
    reign__buf_puts(pl, name);
    if (hint)
        reign__buf_printf(pl, "\n%s", hint);
    return pl->oom ? reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory") : 0;
}

size_t reign__sql_split_params(char *params, const char **keys, const char **vals, size_t max)
{
    size_t n = 0;
    for (char *line = params, *next; line && n < max; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = '\0';
        keys[n] = line;
        vals[n++] = eq + 1;
    }
    return n;
}

/* ---- rows -------------------------------------------------------------------------------------
 */

void reign__sql_rows_free(reign__sql_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_rows * r->n_cols; i++)
        reign__free(r->cells[i]);
    reign__free(r->cells);
    reign__free(r->lens);
    memset(r, 0, sizeof *r);
}

const char *reign__sql_cell(const reign__sql_rows *r, size_t row, size_t col)
{
    if (!r || row >= r->n_rows || col >= r->n_cols)
        return NULL;
    return r->cells[row * r->n_cols + col];
}

size_t reign__sql_cell_len(const reign__sql_rows *r, size_t row, size_t col)
{
    if (!r || row >= r->n_rows || col >= r->n_cols)
        return 0;
    return r->lens[row * r->n_cols + col];
}

int reign__sql_rows_add(reign__sql_rows *r, const char *const *cells, const size_t *lens)
{
    size_t n = (r->n_rows + 1) * r->n_cols;
    char **v = reign__realloc(r->cells, n * sizeof *v);
    if (!v)
        return REIGN_ENOMEM;
    r->cells = v;
    size_t *l = reign__realloc(r->lens, n * sizeof *l);
    if (!l)
        return REIGN_ENOMEM; /* cells is larger than needed; freed with the rows */
    r->lens = l;
    char **row = v + r->n_rows * r->n_cols;
    size_t *row_lens = l + r->n_rows * r->n_cols;
    for (size_t i = 0; i < r->n_cols; i++) {
        row[i] = NULL;
        row_lens[i] = 0;
    }
    r->n_rows++; /* counted now, so that a failure below frees what was copied */
    for (size_t i = 0; i < r->n_cols; i++) {
        if (!cells[i])
            continue;
        size_t len = lens ? lens[i] : strlen(cells[i]);
        /* Bytes as they are (a byte string may hold NULs), then a NUL for text's sake. */
        if (!(row[i] = reign__malloc(len + 1)))
            return REIGN_ENOMEM;
        memcpy(row[i], cells[i], len);
        row[i][len] = '\0';
        row_lens[i] = len;
    }
    return 0;
}

bool reign__sql_has_column(const reign__sql_rows *cols, const char *name)
{
    for (size_t i = 0; i < cols->n_rows; i++) {
        const char *n = reign__sql_cell(cols, i, 0);
        if (n && !strcasecmp(n, name))
            return true;
    }
    return false;
}

bool reign__sql_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end)
        return false;
    *out = v;
    return true;
}

/* ---- what the drains heard (sql.h) ----------------------------------------------------------- */

void reign__sql_heard_add(reign__sqlconn *c, const char *payload)
{
    reign__sql_heard *h = &c->heard;
    if (h->all)
        return; /* everybody reads anyway */
    const char *nl = payload ? strchr(payload, '\n') : NULL;
    size_t len = nl ? (size_t)(nl - payload) : payload ? strlen(payload) : 0;
    char name[REIGN_NAME_MAX + 64];
    bool ok = payload && len && len < sizeof name && h->names.n + h->won.n < REIGN__SQL_HEARD_NAMES;
    if (ok) {
        memcpy(name, payload, len);
        name[len] = '\0';
        bool won = nl && !strcmp(nl + 1, REIGN__SQL_HEARD_WON);
        if (won || !nl)
            ok = reign__strset_add(won ? &h->won : &h->names, name) >= 0;
        else {
            /* A hint: kept whole, for the readers that narrow by it. */
            char *p = h->n < REIGN__SQL_HEARD_MAX ? reign__strdup(payload) : NULL;
            char **v = p ? reign__realloc(h->v, (h->n + 1) * sizeof *v) : NULL;
            ok = v != NULL;
            if (ok) {
                h->v = v;
                h->v[h->n++] = p;
            } else {
                reign__free(p);
            }
        }
    }
    if (!ok) {
        reign__sql_heard_free(h);
        h->all = true; /* told nothing, too many, or out of memory: read everything */
    }
}

bool reign__sql_heard_has(const reign__sql_heard *h, const char *name)
{
    if (!h || h->all || reign__strset_has(&h->names, name) || reign__strset_has(&h->won, name))
        return true;
    size_t n = strlen(name);
    for (size_t i = 0; i < h->n; i++)
        if (!strncmp(h->v[i], name, n) && h->v[i][n] == '\n')
            return true;
    return false;
}

void reign__sql_heard_take(reign__sqlconn *c, reign__sql_heard *out)
{
    *out = c->heard;
    memset(&c->heard, 0, sizeof c->heard);
}

void reign__sql_heard_free(reign__sql_heard *h)
{
    for (size_t i = 0; i < h->n; i++)
        reign__free(h->v[i]);
    reign__free(h->v);
    reign__strset_free(&h->names);
    reign__strset_free(&h->won);
    memset(h, 0, sizeof *h);
}
