/*
 * sql.c - the common part of the SQL lease layer (sql.h): checks every
 * argument once - the target, the table name, claims, names - then hands
 * the call to the dialect of the connection (sqlite.c, mariadb.c,
 * postgres.c through dialect.h).  What all dialects share is in dialect.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dialect.h"
#include "dl.h"
#include "layout.h"

/* ---- argument checks ------------------------------------------------------------------------ */

static bool table_name_ok(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (!n || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alpha = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_';
        if (!alpha && !(i > 0 && ch >= '0' && ch <= '9'))
            return false;
    }
    return true;
}

/* Well-formed UTF-8 without control characters: what every store accepts in a varchar. */
static bool text_ok(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned ch = *p;
        if (ch < 0x20 || ch == 0x7f)
            return false;
        if (ch < 0x80) {
            p++;
            continue;
        }
        size_t len;
        unsigned cp;
        if (ch >= 0xc2 && ch <= 0xdf) {
            len = 2;
            cp = ch & 0x1f;
        } else if (ch >= 0xe0 && ch <= 0xef) {
            len = 3;
            cp = ch & 0x0f;
        } else if (ch >= 0xf0 && ch <= 0xf4) {
            len = 4;
            cp = ch & 0x07;
        } else {
            return false;
        }
        for (size_t i = 1; i < len; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
        p += len;
    }
    return true;
}

static int check_text(const reign__sqlconn *c, const char *what, const char *s, size_t min,
                      size_t max, char *err, size_t errlen)
{
    if (!s)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "no %s given", what);
    size_t n = strlen(s);
    if (n < min || n > max)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL,
                              "%s is %zu bytes long; it must have %zu to %zu", what, n, min, max);
    if (!text_ok(s))
        return reign__sql_err(c, err, errlen, REIGN_EINVAL,
                              "%s is not UTF-8 text without control characters", what);
    return 0;
}

static int check_key(const reign__sqlconn *c, const char *dc, const char *name, char *err,
                     size_t errlen)
{
    int rc = check_text(c, "data center", dc, 0, REIGN__SQL_DC_MAX, err, errlen);
    if (!rc)
        rc = check_text(c, "lock name", name, 1, REIGN__SQL_NAME_MAX, err, errlen);
    return rc;
}

static int check_claim(const reign__sqlconn *c, const reign__lease_claim *cl, char *err,
                       size_t errlen)
{
    if (!cl)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "no claim given");
    int rc = check_key(c, cl->dc, cl->name, err, errlen);
    if (!rc)
        rc = check_text(c, "owner", cl->owner, 1, REIGN_ID_MAX, err, errlen);
    if (!rc)
        rc = check_text(c, "owner guid", cl->owner_guid, 1, REIGN__SQL_GUID_MAX, err, errlen);
    if (rc)
        return rc;
    if (cl->payload_len > REIGN_DATA_MAX)
        return reign__sql_err(c, err, errlen, REIGN_E2BIG, "payload of %zu bytes is larger than %d",
                              cl->payload_len, REIGN_DATA_MAX);
    if (cl->payload_len && !cl->payload)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "payload length without payload");
    if (cl->duration_ms <= 0 || cl->duration_ms > REIGN__SQL_DURATION_MAX_MS)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL,
                              "lease duration %lld ms is outside 1..%lld",
                              (long long)cl->duration_ms, (long long)REIGN__SQL_DURATION_MAX_MS);
    return 0;
}

/* A claim of a candidate (insert, take, renew): never with the mark of a deposed lease, which
 * would make its lease look deposed - and releasable by any process with its id. */
static int check_candidate(const reign__sqlconn *c, const reign__lease_claim *cl, char *err,
                           size_t errlen)
{
    int rc = check_claim(c, cl, err, errlen);
    if (!rc && !strcmp(cl->owner_guid, REIGN__SQL_DEPOSED))
        rc = reign__sql_err(c, err, errlen, REIGN_EINVAL,
                            "owner guid \"%s\" marks a deposed lease; a candidate cannot use it",
                            REIGN__SQL_DEPOSED);
    if (!rc && cl->owner_guid[0] == REIGN__SQL_DESIGNATED)
        rc = reign__sql_err(c, err, errlen, REIGN_EINVAL,
                            "owner guid \"%s\" marks a designation; a candidate cannot use it",
                            cl->owner_guid);
    return rc;
}

/* Terms live in signed 64-bit columns in PostgreSQL and SQLite. */
static int check_term(const reign__sqlconn *c, uint64_t term, uint64_t max, char *err,
                      size_t errlen)
{
    if (term > max)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "term %llu out of range",
                              (unsigned long long)term);
    return 0;
}

/* A call on a connection that an earlier failure left unusable. */
static int check_conn(reign__sqlconn *c, char *err, size_t errlen)
{
    if (!c)
        return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "no connection");
    if (c->broken)
        return reign__sql_err(c, err, errlen, REIGN_ECONNLOSS,
                              "the connection was lost or abandoned earlier; connect again");
    return 0;
}

/* ---- connection ----------------------------------------------------------------------------- */

static void describe_store(char *out, size_t n, const reign__sql_target *t, const char *dialect)
{
    if (t->kind == REIGN__SQL_SQLITE) {
        snprintf(out, n, "sqlite %s", t->path);
        return;
    }
    const char *host = t->host;
    bool v6 = strchr(host, ':') != NULL;
    char port[16] = "";
    if (t->port)
        snprintf(port, sizeof port, ":%d", t->port);
    snprintf(out, n, "%s %s%s%s%s%s%s/%s", dialect, t->user ? t->user : "", t->user ? "@" : "",
             v6 ? "[" : "", host, v6 ? "]" : "", port, t->database);
}

static const reign__sql_dialect *dialect_of(reign__sql_kind kind)
{
    return kind == REIGN__SQL_SQLITE     ? &reign__sql_sqlite
           : kind == REIGN__SQL_MARIADB  ? &reign__sql_mariadb
           : kind == REIGN__SQL_POSTGRES ? &reign__sql_postgres
                                         : NULL;
}

int reign__sql_load(reign__sql_kind kind, char *err, size_t errlen)
{
    if (kind < REIGN__SQL_SQLITE || kind > REIGN__SQL_POSTGRES) {
        reign__errf(err, errlen, "unknown kind of store %d", (int)kind);
        return REIGN_EINVAL;
    }
    static reign__dl_slot slots[3] = {REIGN__DL_SLOT_INIT, REIGN__DL_SLOT_INIT,
                                      REIGN__DL_SLOT_INIT};
    static const reign__dl_library *const libs[3] = {
        &reign__sql_sqlite_lib, &reign__sql_mariadb_lib, &reign__sql_postgres_lib};
    size_t i = (size_t)(kind - REIGN__SQL_SQLITE);
    return reign__dl_load(libs[i], &slots[i], err, errlen);
}

int reign__sql_conn_param(reign__sql_kind kind, const char *key, const char *value, char *err,
                          size_t errlen)
{
    const reign__sql_dialect *d = dialect_of(kind);
    if (!d || !d->conn_param)
        return 0;
    int rc = reign__sql_load(kind, err, errlen);
    return rc < 0 ? rc : d->conn_param(key, value, err, errlen);
}

bool reign__sql_wakes_followers(const reign__sql_target *t)
{
    const reign__sql_dialect *d = dialect_of(t->kind);
    return d && (!d->wakes_followers || d->wakes_followers(t));
}

void reign__sql_settle(reign__sqlconn *c)
{
    if (c && c->d->settle)
        c->d->settle(c);
}

int reign__sql_connect(reign__sqlconn **ret, const reign__sql_target *t, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!ret || !t)
        return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "no target given");
    *ret = NULL;

    const reign__sql_dialect *d;
    switch (t->kind) {
    case REIGN__SQL_SQLITE:
        d = &reign__sql_sqlite;
        break;
    case REIGN__SQL_MARIADB:
        d = &reign__sql_mariadb;
        break;
    case REIGN__SQL_POSTGRES:
        d = &reign__sql_postgres;
        break;
    default:
        return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "unknown kind of store %d",
                              (int)t->kind);
    }
    if (t->kind == REIGN__SQL_SQLITE) {
        if (!t->path || !*t->path)
            return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "sqlite: no database file");
    } else {
        if (!t->host || !*t->host)
            return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "%s: no host", d->name);
        if (!t->database || !*t->database)
            return reign__sql_err(NULL, err, errlen, REIGN_EINVAL, "%s: no database", d->name);
        if (t->port < 0 || t->port > 65535)
            return reign__sql_err(NULL, err, errlen, REIGN_EINVAL,
                                  "%s: port %d is outside 1..65535", d->name, t->port);
    }
    if (t->connect_timeout_ms < 0 || t->statement_timeout_ms < 0 ||
        t->connect_timeout_ms > REIGN__SQL_TIMEOUT_MAX_MS ||
        t->statement_timeout_ms > REIGN__SQL_TIMEOUT_MAX_MS)
        return reign__sql_err(NULL, err, errlen, REIGN_EINVAL,
                              "%s: timeouts must be within 0..%d ms (0: the default)", d->name,
                              REIGN__SQL_TIMEOUT_MAX_MS);

    const char *table = t->table ? t->table : "distribute_lock";
    /* PostgreSQL would cut a 64-character identifier to 63 and then not find it by name. */
    size_t max = t->kind == REIGN__SQL_POSTGRES ? 63 : REIGN__SQL_TABLE_MAX;
    if (!table_name_ok(table, max))
        return reign__sql_err(NULL, err, errlen, REIGN_EINVAL,
                              "%s: illegal table name \"%.80s\" (want [A-Za-z_][A-Za-z0-9_]*, at "
                              "most %zu characters)",
                              d->name, table, max);

    int rc = reign__sql_load(t->kind, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlconn *c = reign__calloc(1, d->size);
    if (!c)
        return reign__sql_err(NULL, err, errlen, REIGN_ENOMEM, "%s: out of memory", d->name);
    c->d = d;
    reign__strlcpy(c->table, table, sizeof c->table);
    describe_store(c->store, sizeof c->store, t, d->name);
    c->connect_timeout_ms = t->connect_timeout_ms ? t->connect_timeout_ms : REIGN__SQL_DEFAULT_MS;
    c->statement_timeout_ms =
        t->statement_timeout_ms ? t->statement_timeout_ms : REIGN__SQL_DEFAULT_MS;
    if (t->log) {
        c->log_store = *t->log;
        c->log = &c->log_store;
    }

    rc = d->connect(c, t, err, errlen);
    /* Client libraries word their own errors; none should repeat a password, but make sure. */
    reign__sql_scrub(err, t->password);
    if (rc < 0) {
        d->close(c);
        reign__free(c);
        return rc;
    }
    reign__log(c->log, REIGN_LOG_DEBUG, "%s: connected (table %s)", c->store, c->table);
    *ret = c;
    return 0;
}

void reign__sql_close(reign__sqlconn *c)
{
    if (!c)
        return;
    c->d->close(c);
    reign__sql_heard_free(&c->heard);
    reign__free(c);
}

reign__sql_kind reign__sql_kind_of(const reign__sqlconn *c)
{
    if (c->d == &reign__sql_mariadb)
        return REIGN__SQL_MARIADB;
    if (c->d == &reign__sql_postgres)
        return REIGN__SQL_POSTGRES;
    return REIGN__SQL_SQLITE;
}

int reign__sql_ensure_schema(reign__sqlconn *c, char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    return rc ? rc : c->d->ensure_schema(c, err, errlen);
}

/* ---- the lease ------------------------------------------------------------------------------ */

void reign__lease_clear(reign__lease *l)
{
    if (!l)
        return;
    reign__free(l->payload);
    memset(l, 0, sizeof *l);
}

int64_t reign__lease_free_at(reign__lease_seen *seen, const reign__lease *l, int64_t read_ns)
{
    if (!l->exists) {
        *seen = (reign__lease_seen){0};
        return INT64_MAX;
    }
    if (!seen->known || seen->term != l->term || seen->renewals != l->term_duration)
        *seen = (reign__lease_seen){
            .known = true, .term = l->term, .renewals = l->term_duration, .since_ns = read_ns};
    if (l->duration_ms <= 0)
        return read_ns; /* released */
    if (l->duration_ms > REIGN__SQL_DURATION_MAX_MS)
        return INT64_MAX;
    return seen->since_ns + l->duration_ms * REIGN__NS_PER_MS;
}

const char *reign__lease_designee(const reign__lease *l)
{
    return l->exists && l->owner_guid[0] == REIGN__SQL_DESIGNATED && l->owner_guid[1]
               ? l->owner_guid + 1
               : NULL;
}

int64_t reign__lease_free_for(reign__lease_seen *seen, const reign__lease *l, int64_t read_ns,
                              const char *guid, int64_t wait_ns)
{
    int64_t at = reign__lease_free_at(seen, l, read_ns);
    const char *to = reign__lease_designee(l);
    if (!to || !strcmp(to, guid) || !l->released)
        return at;
    /* Handed to another: released for it alone.  Ours only once the version has stood still
     * for a whole lease on our clock, as for any lease (the designee died before taking it). */
    return seen->since_ns + wait_ns;
}

int reign__sql_lease_designate(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                               const char *holder_guid, const char *designee, char *err,
                               size_t errlen)
{
    char mark[REIGN__SQL_GUID_MAX + 1];
    int rc = check_key(c, dc, name, err, errlen);
    if (!rc)
        rc = check_term(c, term, (uint64_t)INT64_MAX, err, errlen);
    if (!rc && (!designee || !*designee || strlen(designee) >= sizeof mark - 1 ||
                designee[0] == REIGN__SQL_DESIGNATED))
        rc = reign__sql_err(c, err, errlen, REIGN_EINVAL, "no guid to designate");
    if (rc)
        return rc;
    snprintf(mark, sizeof mark, "%c%s", REIGN__SQL_DESIGNATED, designee);
    /* term_duration + 1: a new version, so every follower counts a whole lease from the
     * designation before it may take the row without being the designee.  gmt_modified is
     * assigned its own value: a foreign MariaDB table may renew it ON UPDATE. */
    reign__sqlv args[5] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name), REIGN__SQLV_S(mark),
                           REIGN__SQLV_I((int64_t)term), REIGN__SQLV_S(holder_guid)};
    rc = reign__sql_query(c, "designate",
                          "UPDATE {T} SET owner_guid = {3}, term_duration = term_duration + 1, "
                          "gmt_modified = gmt_modified WHERE data_center = {1} AND lock_name = "
                          "{2} AND term = {4} AND owner_guid = {5}",
                          args, 5, NULL, err, errlen);
    if (rc > 0) {
        char nerr[256]; /* wakes the holder (and the designee, should it be released) */
        (void)reign__sql_notify(c, dc, name, nerr, sizeof nerr);
    }
    return rc < 0 ? rc : rc > 0;
}

int reign__sql_lease_read(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                          char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc && !out)
        rc = reign__sql_err(c, err, errlen, REIGN_EINVAL, "no lease to read into");
    if (!rc)
        rc = check_key(c, dc, name, err, errlen);
    if (rc)
        return rc;
    reign__lease_clear(out);
    c->statements++;
    rc = c->d->read(c, dc, name, out, err, errlen);
    if (rc < 0)
        reign__lease_clear(out);
    else
        out->released = out->exists && out->duration_ms <= 0;
    return rc;
}

int reign__sql_lease_insert(reign__sqlconn *c, const reign__lease_claim *cl, char *err,
                            size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_candidate(c, cl, err, errlen);
    if (rc)
        return rc;
    c->statements++;
    return c->d->insert(c, cl, err, errlen);
}

int reign__sql_lease_take(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term,
                          uint64_t *new_term, char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_candidate(c, cl, err, errlen);
    /* Room for the term + 1 the take writes. */
    if (!rc)
        rc = check_term(c, expected_term, (uint64_t)INT64_MAX - 1, err, errlen);
    if (rc)
        return rc;
    c->statements++;
    rc = c->d->take(c, cl, expected_term, err, errlen);
    /* The statement matched the row at expected_term and set term = term + 1. */
    if (rc == 1 && new_term)
        *new_term = expected_term + 1;
    return rc;
}

int reign__sql_lease_renew(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term,
                           char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_candidate(c, cl, err, errlen);
    if (!rc)
        rc = check_term(c, term, (uint64_t)INT64_MAX, err, errlen);
    if (rc)
        return rc;
    c->statements++;
    return c->d->renew(c, cl, term, err, errlen);
}

int reign__sql_lease_release(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term,
                             char *err, size_t errlen)
{
    /* check_claim, not check_candidate: a deposed holder releases with REIGN__SQL_DEPOSED. */
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_claim(c, cl, err, errlen);
    if (!rc)
        rc = check_term(c, term, (uint64_t)INT64_MAX, err, errlen);
    if (rc)
        return rc;
    c->statements++;
    return c->d->release(c, cl, term, err, errlen);
}

int reign__sql_lease_release_ours(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t *term,
                                  char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_key(c, cl->dc, cl->name, err, errlen);
    if (rc)
        return rc;
    if (c->d->release_ours)
        return c->d->release_ours(c, cl, term, err, errlen);
    reign__lease l = {0};
    rc = reign__sql_lease_read(c, cl->dc, cl->name, &l, err, errlen);
    /* Ours only if both owner and guid match: the guid is drawn per join, so no other process,
     * not even one restarted with the same id, ever carries it. */
    bool ours = rc == 0 && l.exists && !l.released && !strcmp(l.owner, cl->owner) &&
                !strcmp(l.owner_guid, cl->owner_guid);
    uint64_t t = l.term;
    reign__lease_claim mine = *cl;
    mine.duration_ms = l.duration_ms;
    reign__lease_clear(&l);
    if (rc < 0 || !ours)
        return rc;
    /* The release is a compare-and-set on owner, guid and term: a take that came between the
     * read and here (the lease ran out meanwhile) makes it match nothing. */
    rc = reign__sql_lease_release(c, &mine, t, err, errlen);
    if (rc == 1) {
        *term = t;
        char nerr[256];
        (void)reign__sql_notify(c, cl->dc, cl->name, nerr, sizeof(nerr)); /* followers still
                                                                            read at expiry */
    }
    return rc;
}

int reign__sql_lease_depose(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                            char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_key(c, dc, name, err, errlen);
    if (!rc)
        rc = check_term(c, term, (uint64_t)INT64_MAX, err, errlen);
    if (rc)
        return rc;
    c->statements++;
    rc = c->d->depose(c, dc, name, term, err, errlen);
    if (rc == 1) {
        char nerr[256]; /* wakes the holder: a lease held in a session renews no row of its own */
        (void)reign__sql_notify(c, dc, name, nerr, sizeof nerr);
    }
    return rc;
}

/* ---- notifications -------------------------------------------------------------------------- */

int reign__sql_listen(reign__sqlconn *c, const char *dc, const char *name, char *err, size_t errlen)
{
    return reign__sql_listen_many(c, dc, &name, 1, err, errlen);
}

int reign__sql_listen_many(reign__sqlconn *c, const char *dc, const char *const *names, size_t n,
                           char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    for (size_t i = 0; !rc && i < n; i++)
        rc = check_key(c, dc, names[i], err, errlen);
    return rc ? rc : n ? c->d->listen(c, dc, names, n, err, errlen) : 0;
}

int reign__sql_listen_fd(const reign__sqlconn *c)
{
    return c && !c->broken ? c->d->listen_fd(c) : -1;
}

int reign__sql_drain_notify(reign__sqlconn *c)
{
    if (!c)
        return REIGN_EINVAL;
    if (c->broken)
        return REIGN_ECONNLOSS;
    int any = c->d->drain_notify(c);
    if (any > 0 && !c->d->notices_named)
        c->heard.all = true;
    return any;
}

int reign__sql_notify_hint(reign__sqlconn *c, const char *dc, const char *name, const char *hint,
                           char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (!rc)
        rc = check_key(c, dc, name, err, errlen);
    if (!rc && hint && (strlen(hint) > REIGN__SQL_HINT_MAX || strchr(hint, '\n')))
        rc = reign__sql_err(c, err, errlen, REIGN_EINVAL, "notify: a hint of %zu bytes",
                            strlen(hint));
    if (rc)
        return rc;
    return c->d->notify(c, dc, name, hint, err, errlen);
}

int reign__sql_notify(reign__sqlconn *c, const char *dc, const char *name, char *err, size_t errlen)
{
    return reign__sql_notify_hint(c, dc, name, NULL, err, errlen);
}

void reign__sql_plan_once(reign__sqlconn *c)
{
    if (c && c->d->plan_once)
        c->d->plan_once(c);
}

uint64_t reign__sql_statements(const reign__sqlconn *c)
{
    return c ? c->statements : 0;
}

/* ---- other statements ------------------------------------------------------------------------ */

const char *reign__sql_table(const reign__sqlconn *c)
{
    return c->table;
}

int reign__sql_side_table(const reign__sqlconn *c, const char *suffix, char *out, size_t outlen,
                          char *err, size_t errlen)
{
    /* PostgreSQL cuts identifiers at 63 bytes, and would then look for another name. */
    size_t max = c->d == &reign__sql_postgres ? 63 : REIGN__SQL_TABLE_MAX;
    int n = snprintf(out, outlen, "%s_%s", c->table, suffix);
    if (n < 0 || (size_t)n >= outlen || (size_t)n > max)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL,
                              "the %s table of table %s would be named %s_%s, longer than %zu "
                              "characters: choose a shorter table",
                              suffix, c->table, c->table, suffix, max);
    return 0;
}

void reign__sql_rollback(reign__sqlconn *c)
{
    char ignored[256];
    if (!c->broken)
        reign__sql_query(c, "rollback", "ROLLBACK", NULL, 0, NULL, ignored, sizeof ignored);
}

int reign__sql_side_columns(reign__sqlconn *c, const char *suffix, reign__sql_rows *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    char side[REIGN__SQL_TABLE_MAX + 16];
    int rc = reign__sql_side_table(c, suffix, side, sizeof side, err, errlen);
    if (rc)
        return rc;
    const char *sql;
    switch (reign__sql_kind_of(c)) {
    case REIGN__SQL_SQLITE:
        sql = "SELECT name FROM pragma_table_info({1})";
        break;
    case REIGN__SQL_POSTGRES:
        sql = "SELECT attname::text FROM pg_attribute WHERE attrelid = "
              "to_regclass(quote_ident({1})) AND attnum > 0 AND NOT attisdropped";
        break;
    default:
        sql = "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
              "DATABASE() AND TABLE_NAME = {1}";
    }
    reign__sqlv arg = REIGN__SQLV_S(side);
    return reign__sql_query(c, "reading a table's columns", sql, &arg, 1, out, err, errlen);
}

int reign__sql_runs_table(const reign__sqlconn *c, char *out, size_t outlen, char *err,
                          size_t errlen)
{
    return reign__sql_side_table(c, REIGN__SQL_RUNS_SUFFIX, out, outlen, err, errlen);
}

int reign__sql_query(reign__sqlconn *c, const char *what, const char *tmpl, const reign__sqlv *args,
                     size_t n_args, reign__sql_rows *rows, char *err, size_t errlen)
{
    int rc = check_conn(c, err, errlen);
    if (rc)
        return rc;
    const reign__sql_dialect *d = c->d;
    reign__buf b;
    reign__buf_init(&b);
    if (n_args > REIGN__SQL_ARGS_MAX)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many parameters", what);
    reign__sqlv *ordered = reign__malloc(REIGN__SQL_PLACES_MAX * sizeof *ordered);
    if (!ordered)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    size_t n_ordered = 0;
    for (const char *p = tmpl; *p;) {
        static const struct {
            const char *tok;
            size_t off;
        } frags[] = {
            {"{NOW}", offsetof(reign__sql_dialect, now_ms)},
            {"{BEGIN}", offsetof(reign__sql_dialect, begin)},
            {"{FOR_UPDATE}", offsetof(reign__sql_dialect, for_update)},
            {"{ON_CONFLICT}", offsetof(reign__sql_dialect, on_conflict)},
            {"{ID}", offsetof(reign__sql_dialect, id_column)},
            {"{TABLE_OPTIONS}", offsetof(reign__sql_dialect, table_options)},
            {"{BLOB}", offsetof(reign__sql_dialect, blob_type)},
        };
        bool done = false;
        size_t digits = 0, k = 0;
        while (*p == '{' && p[1 + digits] >= '0' && p[1 + digits] <= '9' && digits < 4)
            k = k * 10 + (size_t)(p[1 + digits++] - '0');
        if (digits && p[1 + digits] == '}' && k > 0) {
            if (k > n_args || n_ordered == REIGN__SQL_PLACES_MAX) {
                reign__buf_free(&b);
                reign__free(ordered);
                return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: parameter %zu missing",
                                      what, k);
            }
            if (d->placeholder)
                reign__buf_printf(&b, "%c%zu", d->placeholder, k);
            else
                reign__buf_puts(&b, "?");
            ordered[n_ordered++] = args[k - 1];
            p += 2 + digits;
            continue;
        }
        if (!strncmp(p, "{T}", 3)) {
            reign__buf_printf(&b, "%c%s%c", d->quote, c->table, d->quote);
            p += 3;
            continue;
        }
        if (p[0] == '{' && p[1] && strchr("RVCSMKH", p[1]) && p[2] == '}') {
            /* A side table's name, made (and checked) only where a statement names it. */
            char side[REIGN__SQL_TABLE_MAX + 16];
            const char *suffix = p[1] == 'R'   ? REIGN__SQL_RUNS_SUFFIX
                                 : p[1] == 'V' ? REIGN__SQL_VALUES_SUFFIX
                                 : p[1] == 'C' ? REIGN__SQL_CANDIDATES_SUFFIX
                                 : p[1] == 'S' ? REIGN__SQL_SESSIONS_SUFFIX
                                 : p[1] == 'K' ? REIGN__SQL_TASKS_SUFFIX
                                 : p[1] == 'H' ? REIGN__SQL_HISTORY_SUFFIX
                                               : REIGN__SQL_MEMBERS_SUFFIX;
            if ((rc = reign__sql_side_table(c, suffix, side, sizeof side, err, errlen))) {
                reign__buf_free(&b);
                reign__free(ordered);
                return rc;
            }
            reign__buf_printf(&b, "%c%s%c", d->quote, side, d->quote);
            p += 3;
            continue;
        }
        for (size_t i = 0; i < sizeof frags / sizeof frags[0] && !done; i++) {
            size_t n = strlen(frags[i].tok);
            if (!strncmp(p, frags[i].tok, n)) {
                reign__buf_puts(&b, *(const char *const *)((const char *)d + frags[i].off));
                p += n;
                done = true;
            }
        }
        if (!done)
            reign__buf_append(&b, p++, 1);
    }
    if (b.oom) {
        reign__buf_free(&b);
        reign__free(ordered);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    /* With numbered placeholders the arguments keep their numbers; bare '?' take them in order
     * of appearance (built above). */
    const reign__sqlv *use = d->placeholder ? args : ordered;
    size_t n_use = d->placeholder ? n_args : n_ordered;
    if (rows)
        memset(rows, 0, sizeof *rows);
    c->statements++;
    rc = d->query(c, what, b.data, use, n_use, rows, err, errlen);
    if (rc < 0 && rows)
        reign__sql_rows_free(rows);
    reign__buf_free(&b);
    reign__free(ordered);
    return rc;
}
