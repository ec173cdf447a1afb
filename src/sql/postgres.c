/*
 * postgres.c - the PostgreSQL dialect of the lease layer (dialect.h),
 * through libpq in non-blocking mode.
 *
 * Every wait on the socket - connecting, sending, reading a result - is a
 * poll() bounded by a deadline (the connect or statement timeout), so an
 * unreachable, dead or SIGSTOPped server gives an error in time, never a
 * hang.  The server also cancels a statement itself (statement_timeout at
 * 80% of ours), which keeps the connection usable; when our own deadline
 * passes first, the connection is left in the middle of a statement and is
 * given up (later calls say REIGN_ECONNLOSS until the caller reconnects).
 *
 * Time: clock_timestamp(), the server's clock when the statement runs (now()
 * would be the start of the transaction); the session's TimeZone is UTC.
 *
 * Notification: LISTEN/NOTIFY on a channel per (table, data center, name)
 * (reign__sql_channel()).  libpq keeps notifications that arrive during a
 * statement, where the socket no longer shows them: drain_notify() returns
 * those too, so call it after statements, not only when the fd is readable.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "dialect.h"
#include "dl.h"
#include "postgres_text.h"
#include "stmt_cache.h"

/* The functions of libpq this dialect calls: through a table that dl.c fills
 * when the first postgres:// client is made (dl.h). */
#define POSTGRES_FUNCTIONS(X, t)                                                                   \
    X(t, PQclear)                                                                                  \
    X(t, PQcmdTuples)                                                                              \
    X(t, PQconnectPoll)                                                                            \
    X(t, PQconnectStartParams)                                                                     \
    X(t, PQconndefaults)                                                                           \
    X(t, PQconninfoFree)                                                                           \
    X(t, PQconsumeInput)                                                                           \
    X(t, PQenterPipelineMode)                                                                      \
    X(t, PQerrorMessage)                                                                           \
    X(t, PQexitPipelineMode)                                                                       \
    X(t, PQfinish)                                                                                 \
    X(t, PQflush)                                                                                  \
    X(t, PQfreemem)                                                                                \
    X(t, PQftype)                                                                                  \
    X(t, PQgetResult)                                                                              \
    X(t, PQgetisnull)                                                                              \
    X(t, PQgetlength)                                                                              \
    X(t, PQgetvalue)                                                                               \
    X(t, PQnfields)                                                                                \
    X(t, PQisBusy)                                                                                 \
    X(t, PQnotifies)                                                                               \
    X(t, PQntuples)                                                                                \
    X(t, PQpipelineSync)                                                                           \
    X(t, PQresultErrorField)                                                                       \
    X(t, PQresultErrorMessage)                                                                     \
    X(t, PQresultStatus)                                                                           \
    X(t, PQsendPrepare)                                                                            \
    X(t, PQsendQuery)                                                                              \
    X(t, PQsendQueryParams)                                                                        \
    X(t, PQsendQueryPrepared)                                                                      \
    X(t, PQsetErrorVerbosity)                                                                      \
    X(t, PQsetNoticeProcessor)                                                                     \
    X(t, PQsetnonblocking)                                                                         \
    X(t, PQsocket)                                                                                 \
    X(t, PQstatus)

REIGN__DL_LIBRARY(pq, POSTGRES_FUNCTIONS, reign__sql_postgres_lib, "postgres://", "libpq.so.5",
                  "libpq5", "REIGN_TEST_LIBPQ");

/* Type OIDs of the parameters (pg_type.h's, stable since forever). */
#define BYTEAOID 17
#define INT8OID  20
#define TEXTOID  25

#define MS_OF(c) "round(extract(epoch FROM " c ") * 1000)::bigint"
#define INTERVAL "duration * interval '1 millisecond'"
/* One instant per statement (clock_timestamp() moves within one), the times written from it
 * rounded to whole milliseconds up (a lease never looks renewed before it was) or, for a
 * release, down (expired at once to the seed's readers, whose test is now >= gmt_modified +
 * duration).  For people and those readers only: no clock decides (sql.h). */
#define NOW_FROM "(SELECT clock_timestamp() AS now) n"
/* The leases a session holds, read by its keeper (sessions.h). */
#define SESSION_INDEX                                                                              \
    "CREATE INDEX IF NOT EXISTS \"idx_{T}_session\" ON \"{T}\" (data_center, session_guid)"
#define NOW_UP   "date_trunc('milliseconds', n.now + interval '999 microseconds')"
#define NOW_DOWN "date_trunc('milliseconds', n.now)"
/* LISTENs sent in one statement, at most. */
#define LISTEN_BATCH 512

/*
 * A statement's text (with its parameters' types after it) sent twice on this connection is
 * prepared there on its second use (stmt_cache.h), as "reign_<its index>": the server then
 * parses and analyses it once per connection instead of at every call.  Most of reign's
 * statements repeat thousands of times (a renewal, a batch of task results), and for the long
 * ones, a batch of 64 submits, the parse costs more than the rows.  The plan is still made at
 * every call, for the parameters' values and the table's size then (plan_cache_mode =
 * force_custom_plan, set when connecting): a generic plan is made once, and one made while a
 * queue's table was empty scanned a whole index for ever after (`state = 3 AND id IN (...)`
 * read every done row through the state index, since a scan of an empty index costs less than
 * 64 probes of the primary key).
 */
#define NOTES_MAX 16

typedef struct pg_conn {
    reign__sqlconn base;
    PGconn *pg;
    bool connected;
    reign__u64set channels; /* listened to, by reign__hash_str() (8 bytes a channel) */
    reign__stmt_cache prepared;
    /* A transaction's first and last round trips, saved (see run()): a BEGIN not sent yet, the
     * transaction open on the server, the notices it sends at its COMMIT. */
    bool begin_pending, in_tx;
    /* reign__sql_plan_once(): the next statement, in a transaction, goes after a SET LOCAL of
     * plan_cache_mode to force_generic_plan (plan_generic), and the one after it after a SET
     * LOCAL back to force_custom_plan (plan_custom_owed), each in the statement's flight. */
    bool plan_generic, plan_custom_owed;
    struct {
        char channel[64];
        char *payload;
    } notes[NOTES_MAX];
    size_t n_notes;
    char sqlstate[6]; /* of the last error the server sent */
} pg_conn;

/* ---- errors --------------------------------------------------------------------------------- */

/* The connection is gone (or was given up): mark it and say so. */
static int lost(pg_conn *p, const char *what, const char *why, char *err, size_t errlen)
{
    p->base.broken = true;
    char line[256];
    reign__pg_message_line(why, line, sizeof line);
    return reign__sql_err(&p->base, err, errlen, REIGN_ECONNLOSS,
                          "%s: connection lost, outcome unknown: %s", what, line);
}

static int result_error(pg_conn *p, PGresult *r, const char *what, char *err, size_t errlen)
{
    const char *st = pq.PQresultErrorField(r, PG_DIAG_SQLSTATE);
    const char *msg = pq.PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    reign__strlcpy(p->sqlstate, st ? st : "", sizeof p->sqlstate);
    if (pq.PQstatus(p->pg) == CONNECTION_BAD)
        return lost(p, what, msg ? msg : pq.PQerrorMessage(p->pg), err, errlen);
    int code = st ? reign__pg_code_of_sqlstate(st) : REIGN_EBACKEND;
    if (code == REIGN_ECONNLOSS)
        p->base.broken = true;
    char line[256];
    reign__pg_message_line(msg ? msg : pq.PQresultErrorMessage(r), line, sizeof line);
    return reign__sql_err(&p->base, err, errlen, code, "%s: %s (%s)", what, line,
                          st ? st : "no SQLSTATE");
}

/* ---- waiting -------------------------------------------------------------------------------- */

/* Waits until the socket is ready for `events` or the deadline: 1 ready, 0 timed out, -1. */
static int wait_socket(PGconn *pg, short events, int64_t deadline)
{
    for (;;) {
        int left = reign__sql_left_ms(deadline);
        if (left <= 0)
            return 0;
        struct pollfd pfd = {.fd = pq.PQsocket(pg), .events = events};
        if (pfd.fd < 0)
            return -1;
        int n = poll(&pfd, 1, left);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

/*
 * Waits, until the deadline, for the answers to the n statements just sent (in pipeline mode,
 * with its sync, when `pipelined`: then leaves that mode).  0 with *out set to the last
 * statement's result (PGRES_COMMAND_OK or PGRES_TUPLES_OK), or the first error (in a pipeline
 * the statements after a failed one were not run), or a negative code.
 */
static int answers(pg_conn *p, const char *what, int64_t deadline, size_t n, bool pipelined,
                   PGresult **out, char *err, size_t errlen)
{
    reign__sqlconn *c = &p->base;
    int f, rc = 0;
    while ((f = pq.PQflush(p->pg)) == 1) {
        int w = wait_socket(p->pg, POLLOUT | POLLIN, deadline);
        if (w <= 0)
            goto timed_out;
        if (!pq.PQconsumeInput(p->pg))
            return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
    }
    if (f < 0)
        return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
    PGresult *last = NULL;
    bool got = false; /* statement i has given its (first) result */
    /* Each statement's results, then a NULL; in a pipeline, then the sync. */
    for (size_t i = 0; i < n + pipelined;) {
        while (pq.PQisBusy(p->pg)) {
            int w = wait_socket(p->pg, POLLIN, deadline);
            if (w <= 0) {
                pq.PQclear(last);
                goto timed_out;
            }
            if (!pq.PQconsumeInput(p->pg)) {
                pq.PQclear(last);
                return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
            }
        }
        PGresult *r = pq.PQgetResult(p->pg);
        if (!r) {
            if (i < n && !got && !rc) {
                if (pq.PQstatus(p->pg) == CONNECTION_BAD) {
                    pq.PQclear(last);
                    return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
                }
                rc = reign__sql_err(c, err, errlen, REIGN_EBACKEND, "%s: no result", what);
            }
            got = false;
            i++;
            continue;
        }
        ExecStatusType st = pq.PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            pq.PQclear(r);
            break;
        }
        bool first = !got;
        got = true;
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
            if (first && i == n - 1 && !rc) {
                pq.PQclear(last);
                last = r;
                continue;
            }
        } else if (!rc && st != PGRES_PIPELINE_ABORTED) {
            rc = result_error(p, r, what, err, errlen);
        }
        pq.PQclear(r);
    }
    if (pipelined && !pq.PQexitPipelineMode(p->pg)) {
        pq.PQclear(last);
        return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
    }
    if (rc) {
        pq.PQclear(last);
        return rc;
    }
    *out = last;
    return 0;

timed_out:
    /* The answer may still come, in the middle of the next statement's: give the connection
     * up rather than read it out of step. */
    c->broken = true;
    return reign__sql_err(c, err, errlen, REIGN_ETIMEDOUT,
                          "%s: no answer within %d ms; connection abandoned", what,
                          c->statement_timeout_ms);
}

/* The answer to the one statement just sent (answers()). */
static int answer(pg_conn *p, const char *what, int64_t deadline, PGresult **out, char *err,
                  size_t errlen)
{
    return answers(p, what, deadline, 1, false, out, err, errlen);
}

/* Whether libpq took what was to be sent: 0, or the error. */
static int sent_ok(pg_conn *p, int sent, const char *what, char *err, size_t errlen)
{
    if (sent)
        return 0;
    if (pq.PQstatus(p->pg) == CONNECTION_BAD)
        return lost(p, what, pq.PQerrorMessage(p->pg), err, errlen);
    char line[256];
    reign__pg_message_line(pq.PQerrorMessage(p->pg), line, sizeof line);
    return reign__sql_err(&p->base, err, errlen, REIGN_EBACKEND, "%s: %s", what, line);
}

/* Forgets the notices a transaction was to send. */
static void notes_drop(pg_conn *p)
{
    for (size_t i = 0; i < p->n_notes; i++)
        reign__free(p->notes[i].payload);
    p->n_notes = 0;
}

/*
 * Sends a statement with parameters and waits for its result until the statement deadline
 * (answer()).  From its second use on this connection, the statement is prepared (once) and
 * then only executed.
 *
 * A transaction costs two round trips fewer than its statements: its BEGIN waits (pg_query())
 * and goes with its first statement, and its notices (pg_notify()), which the server sends at
 * the commit anyway, go with its COMMIT, each group in one flight (libpq's pipeline mode).
 * Nothing changes on the server but the number of round trips: the statements run in the same
 * order, the transaction opens no sooner than its first statement arrives, and an error in
 * one skips the rest of its group, as the caller stopping there would.
 */
static int run(pg_conn *p, const char *what, const char *tmpl, int nparams, const Oid *types,
               const char *const *values, const int *lengths, const int *formats, int binary,
               PGresult **out, char *err, size_t errlen)
{
    reign__sqlconn *c = &p->base;
    *out = NULL;
    p->sqlstate[0] = '\0';
    char *sql = reign__sql_splice(tmpl, c->table);
    if (!sql)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    int64_t deadline = reign__sql_deadline(c->statement_timeout_ms);
    bool begin = !strcmp(sql, "BEGIN"), commit = !strcmp(sql, "COMMIT");
    bool end = commit || !strcmp(sql, "ROLLBACK");
    reign__stmt *e =
        reign__stmt_find(&p->prepared, sql, types, types ? (size_t)nparams * sizeof *types : 0);
    char name[32];
    if (e) {
        snprintf(name, sizeof name, "reign_%zu", (size_t)(e - p->prepared.v));
        if (!e->ready) {
            int rc =
                sent_ok(p, pq.PQsendPrepare(p->pg, name, sql, nparams, types), what, err, errlen);
            PGresult *r = NULL;
            if (!rc)
                rc = answer(p, what, deadline, &r, err, errlen);
            pq.PQclear(r);
            if (rc) {
                reign__free(sql);
                return rc;
            }
            e->ready = true;
        }
    }
    /* What goes before it in the same flight: the BEGIN held back, the plan mode of
     * reign__sql_plan_once() (in a transaction: SET LOCAL ends with it), the notices of a
     * COMMIT. */
    bool with_begin = p->begin_pending && !begin;
    bool tx = (p->begin_pending || p->in_tx) && !begin && !end;
    const char *mode = !tx                   ? NULL
                       : p->plan_generic     ? "SET LOCAL plan_cache_mode = force_generic_plan"
                       : p->plan_custom_owed ? "SET LOCAL plan_cache_mode = force_custom_plan"
                                             : NULL;
    p->plan_custom_owed = tx && p->plan_generic;
    p->plan_generic = false;
    size_t notes = commit ? p->n_notes : 0, ahead = with_begin + (mode != NULL) + notes;
    int rc = 0;
    if (ahead && !pq.PQenterPipelineMode(p->pg))
        rc = sent_ok(p, 0, what, err, errlen);
    if (!rc && with_begin)
        rc = sent_ok(p, pq.PQsendQueryParams(p->pg, "BEGIN", 0, NULL, NULL, NULL, NULL, 0), what,
                     err, errlen);
    if (!rc && mode)
        rc = sent_ok(p, pq.PQsendQueryParams(p->pg, mode, 0, NULL, NULL, NULL, NULL, 0), what, err,
                     errlen);
    for (size_t i = 0; !rc && i < notes; i++) {
        const Oid text2[2] = {TEXTOID, TEXTOID};
        const char *v[2] = {p->notes[i].channel, p->notes[i].payload};
        rc = sent_ok(
            p, pq.PQsendQueryParams(p->pg, "SELECT pg_notify($1, $2)", 2, text2, v, NULL, NULL, 0),
            what, err, errlen);
    }
    if (!rc) {
        int sent = e && e->ready ? pq.PQsendQueryPrepared(p->pg, name, nparams, values, lengths,
                                                          formats, binary)
                                 : pq.PQsendQueryParams(p->pg, sql, nparams, types, values, lengths,
                                                        formats, binary);
        rc = sent_ok(p, sent, what, err, errlen);
    }
    if (!rc && ahead && !pq.PQpipelineSync(p->pg))
        rc = sent_ok(p, 0, what, err, errlen);
    /* A flight sent in part cannot be read in step: the connection is given up. */
    if (rc && ahead)
        c->broken = true;
    reign__free(sql);
    if (!rc)
        rc = answers(p, what, deadline, ahead + 1, ahead > 0, out, err, errlen);
    if (with_begin) {
        p->begin_pending = false;
        p->in_tx = !c->broken; /* open, aborted if a statement failed: ROLLBACK ends it */
    }
    if (begin && !rc)
        p->in_tx = true;
    if (end) {
        notes_drop(p);
        /* A COMMIT skipped for a notice that failed leaves the transaction open (aborted):
         * the caller's ROLLBACK ends it. */
        if (!rc || !commit)
            p->in_tx = false;
    }
    /* Our prepared statements gone (something ran DISCARD ALL on the session): this one
     * failed; the next ones are prepared again. */
    if (rc == REIGN_EBACKEND && e && e->ready && !strcmp(p->sqlstate, "26000"))
        reign__stmt_unready(&p->prepared);
    return rc;
}

/* A statement whose result is only its status; returns the rows it affected. */
static int run_count(pg_conn *p, const char *what, const char *tmpl, int nparams, const Oid *types,
                     const char *const *values, const int *lengths, const int *formats, char *err,
                     size_t errlen)
{
    PGresult *r;
    int rc = run(p, what, tmpl, nparams, types, values, lengths, formats, 0, &r, err, errlen);
    if (rc)
        return rc;
    const char *n = pq.PQcmdTuples(r);
    rc = n && *n ? atoi(n) : 0;
    pq.PQclear(r);
    return rc;
}

/* ---- connection ----------------------------------------------------------------------------- */

static void notice_processor(void *arg, const char *message)
{
    pg_conn *p = arg;
    char line[256];
    reign__pg_message_line(message, line, sizeof line);
    /* The library never writes to stderr, which is where libpq would put this. */
    reign__log(p->base.log, REIGN_LOG_DEBUG, "%s: server notice: %s", p->base.store, line);
}

/* The most connection parameters a URI may add (a URI has at most 32 parameters). */
#define PARAMS_MAX 32

/*
 * The URI may add any connection keyword libpq knows, except those reign derives from the URI's
 * form or needs as it sets them, and those that hold a secret (libpq marks them with
 * dispchar "*"): a URI is shown in logs, and a secret belongs in PGPASSWORD or ~/.pgpass.
 */
static int pg_conn_param(const char *key, const char *value, char *err, size_t errlen)
{
    static const char *const own[] = {
        "host",       "port", "dbname", "user", "options", "connect_timeout", "client_encoding",
        "replication"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (!strcmp(key, own[i])) {
            reign__errf(err, errlen,
                        "parameter '%s' is reign's to set (host, port, database and user come "
                        "from the URI's form)",
                        key);
            return REIGN_EURI;
        }
    (void)value; /* libpq judges it when connecting, and says so */
    PQconninfoOption *opts = pq.PQconndefaults();
    if (!opts)
        return REIGN_ENOMEM;
    int found = 0;
    for (const PQconninfoOption *o = opts; o->keyword && !found; o++) {
        if (strcmp(o->keyword, key))
            continue;
        found = 1;
        if (o->dispchar && o->dispchar[0] == '*') {
            reign__errf(err, errlen,
                        "parameter '%s' would put a secret in the URI: use PGPASSWORD, "
                        "~/.pgpass (PGPASSFILE) or password_file instead",
                        key);
            found = REIGN_EURI;
        }
    }
    pq.PQconninfoFree(opts);
    return found;
}

static int pg_connect(reign__sqlconn *c, const reign__sql_target *t, char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    char port[16], connect_s[16], options[224];
    snprintf(port, sizeof port, "%d", t->port ? t->port : 5432);
    /* libpq's own timeout only serves its blocking calls; ours is the poll() deadline below. */
    snprintf(connect_s, sizeof connect_s, "%d", (c->connect_timeout_ms + 999) / 1000);
    /* A transaction left open by a client that stops (SIGSTOP, a debugger) between two of its
     * statements would hold its row locks for as long as it stays stopped: a reaper of its
     * session, a master taking its tasks back would wait on them.  The server ends such a
     * session after two statement timeouts (a renew period) idle in a transaction; ours never
     * idle that long between the statements of one.  Custom plans: see above pg_conn. */
    snprintf(options, sizeof options,
             "-c statement_timeout=%d -c idle_in_transaction_session_timeout=%d -c TimeZone=UTC "
             "-c client_min_messages=warning -c plan_cache_mode=force_custom_plan",
             c->statement_timeout_ms * 4 / 5 > 0 ? c->statement_timeout_ms * 4 / 5 : 1,
             c->statement_timeout_ms * 2);
    const char *pairs[][2] = {
        {"host", t->host},
        {"port", port},
        {"dbname", t->database},
        {"user", t->user},
        {"password", t->password},
        {"connect_timeout", connect_s},
        {"options", options},
        {"application_name", "reign"},
        {"client_encoding", "UTF8"},
        /* reign authenticates by password: no Kerberos probe (libpq's default, "prefer", reads
         * the GSSAPI configuration and keytab before every connection). */
        {"gssencmode", "disable"},
    };
    const char *keys[16 + PARAMS_MAX], *vals[16 + PARAMS_MAX];
    int k = 0;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        if (pairs[i][1]) { /* absent: libpq's default (user: PGUSER, else the login name) */
            keys[k] = pairs[i][0];
            vals[k++] = pairs[i][1];
        }
    }
    /* The URI's own (sslmode, sslrootcert, service, ...) after ours: libpq takes the last
     * value of a keyword, so they may replace application_name and gssencmode. */
    char *params = t->params ? reign__strdup(t->params) : NULL;
    if (t->params && !params)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    if (params)
        k += (int)reign__sql_split_params(params, keys + k, vals + k, PARAMS_MAX);
    keys[k] = vals[k] = NULL;

    int64_t deadline = reign__sql_deadline(c->connect_timeout_ms);
    p->pg = pq.PQconnectStartParams(keys, vals, 0);
    reign__free(params);
    if (!p->pg)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    /* Verbose messages carry the SQLSTATE, the only reliable way to tell a wrong password
     * from a missing database while connecting. */
    pq.PQsetErrorVerbosity(p->pg, PQERRORS_VERBOSE);
    pq.PQsetNoticeProcessor(p->pg, notice_processor, p);

    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    while (pq.PQstatus(p->pg) != CONNECTION_BAD && ps != PGRES_POLLING_OK &&
           ps != PGRES_POLLING_FAILED) {
        int w = wait_socket(p->pg, ps == PGRES_POLLING_READING ? POLLIN : POLLOUT, deadline);
        if (w == 0)
            return reign__sql_err(c, err, errlen, REIGN_ECONNECT, "connect: no answer within %d ms",
                                  c->connect_timeout_ms);
        if (w < 0)
            break;
        ps = pq.PQconnectPoll(p->pg);
    }
    if (pq.PQstatus(p->pg) != CONNECTION_OK) {
        const char *msg = pq.PQerrorMessage(p->pg);
        char st[6], line[256];
        reign__pg_sqlstate_of_message(msg, st);
        reign__pg_message_line(msg, line, sizeof line);
        int code = st[0] ? reign__pg_code_of_sqlstate(st) : REIGN_ECONNECT;
        /* libpq's own refusals, with no SQLSTATE: the server's certificate (or a TLS file, or
         * TLS required of a server without it), or no password at all.  Trying again will not
         * help: say so at once, as for a wrong password. */
        if (!st[0] && (strstr(msg, "certificate") || strstr(msg, "private key") ||
                       strstr(msg, "does not support SSL") || strstr(msg, "fe_sendauth")))
            code = REIGN_EAUTH;
        if (code == REIGN_ECONNLOSS || code == REIGN_EBACKEND)
            code = REIGN_ECONNECT;
        /* The server's words ("FATAL: 3D000: database ... does not exist") say neither which
         * server nor plainly what is missing. */
        if (!strcmp(st, "3D000"))
            return reign__sql_err(c, err, errlen, REIGN_ENOENT,
                                  "database \"%s\" does not exist on %s:%s", t->database, t->host,
                                  port);
        if (st[0])
            return reign__sql_err(c, err, errlen, code, "connect: %s (%s)", line, st);
        return reign__sql_err(c, err, errlen, code, "connect: %s", line);
    }
    pq.PQsetErrorVerbosity(p->pg, PQERRORS_DEFAULT);
    if (pq.PQsetnonblocking(p->pg, 1))
        return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "connect: cannot go non-blocking");
    p->connected = true;
    return 0;
}

static void pg_close(reign__sqlconn *c)
{
    pg_conn *p = (pg_conn *)c;
    if (p->pg)
        pq.PQfinish(p->pg);
    reign__stmt_cache_free(&p->prepared);
    reign__u64set_free(&p->channels);
    notes_drop(p);
}

/* ---- schema --------------------------------------------------------------------------------- */

#define MAX_COLS 64

/* A statement of the schema, whose result is not read. */
static int ddl(pg_conn *p, const char *what, const char *sql, char *err, size_t errlen)
{
    PGresult *r;
    int rc = run(p, what, sql, 0, NULL, NULL, NULL, NULL, 0, &r, err, errlen);
    if (!rc)
        pq.PQclear(r);
    return rc;
}

static int schema_in_tx(pg_conn *p, char *err, size_t errlen)
{
    reign__sqlconn *c = &p->base;
    const Oid text1[1] = {TEXTOID};
    const char *table[1] = {c->table};
    PGresult *r;
    /* Two CREATE TABLE IF NOT EXISTS at once can still collide in the catalogue: callers take
     * turns on an advisory lock (per database and table), released at COMMIT. */
    int rc = run(p, "schema lock", "SELECT pg_advisory_xact_lock(hashtext('reign schema ' || $1))",
                 1, text1, table, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    pq.PQclear(r);
    rc = run(p, "reading the table's columns",
             "SELECT a.attname::text, t.typname::text, a.atttypmod, "
             "format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_type t ON t.oid "
             "= a.atttypid WHERE a.attrelid = to_regclass(quote_ident($1)) AND a.attnum > 0 AND "
             "NOT a.attisdropped ORDER BY a.attnum",
             1, text1, table, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    reign__sql_column cols[MAX_COLS];
    size_t n = 0;
    for (int i = 0; i < pq.PQntuples(r) && n < MAX_COLS; i++, n++) {
        reign__strlcpy(cols[n].name, pq.PQgetvalue(r, i, 0), sizeof cols[n].name);
        reign__strlcpy(cols[n].type, pq.PQgetvalue(r, i, 3), sizeof cols[n].type);
        cols[n].kind = reign__pg_kind_of(pq.PQgetvalue(r, i, 1), atoi(pq.PQgetvalue(r, i, 2)));
    }
    pq.PQclear(r);

    if (!n) {
        rc = run(p, "creating the table",
                 "CREATE TABLE IF NOT EXISTS \"{T}\" ("
                 "id bigserial PRIMARY KEY, "
                 "data_center varchar(128) NOT NULL, "
                 "lock_name varchar(1024) NOT NULL, "
                 "owner varchar(512) NOT NULL, "
                 "duration bigint NOT NULL, "
                 "term bigint NOT NULL DEFAULT 0, "
                 "term_duration bigint NOT NULL DEFAULT 0, "
                 "gmt_create timestamptz(3) NOT NULL DEFAULT clock_timestamp(), "
                 "gmt_modified timestamptz(3) NOT NULL DEFAULT clock_timestamp(), "
                 "owner_guid varchar(64) NOT NULL DEFAULT '', "
                 "payload bytea, "
                 "session_guid varchar(64) NOT NULL DEFAULT '', "
                 "UNIQUE (data_center, lock_name))",
                 0, NULL, NULL, NULL, NULL, 0, &r, err, errlen);
        if (rc)
            return rc;
        pq.PQclear(r);
        if ((rc = ddl(p, "creating the owner index",
                      "CREATE INDEX IF NOT EXISTS \"idx_{T}_owner\" ON \"{T}\" (owner)", err,
                      errlen)) ||
            (rc = ddl(p, "creating the session index", SESSION_INDEX, err, errlen)))
            return rc;
        reign__log(c->log, REIGN_LOG_INFO, "%s: created table %s", c->store, c->table);
        return 0;
    }

    bool need_guid, need_payload, need_session;
    if ((rc = reign__sql_check_columns(c, cols, n, false, &need_guid, &need_payload, &need_session,
                                       err, errlen)))
        return rc;
    rc = run(p, "reading the table's indexes",
             "SELECT i.indexrelid::text, a.attname::text FROM pg_index i LEFT JOIN pg_attribute "
             "a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey::int2[]) WHERE i.indrelid "
             "= to_regclass(quote_ident($1)) AND i.indisunique AND i.indpred IS NULL AND "
             "i.indexprs IS NULL ORDER BY i.indexrelid, a.attname",
             1, text1, table, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    bool unique = false;
    const char *names[16];
    size_t k = 0;
    for (int i = 0; i <= pq.PQntuples(r); i++) {
        bool end = i == pq.PQntuples(r) ||
                   (i > 0 && strcmp(pq.PQgetvalue(r, i, 0), pq.PQgetvalue(r, i - 1, 0)));
        if (end) {
            if (reign__sql_unique_ok(names, k, false))
                unique = true;
            k = 0;
        }
        if (i < pq.PQntuples(r) && k < 16)
            names[k++] = pq.PQgetisnull(r, i, 1) ? NULL : pq.PQgetvalue(r, i, 1);
    }
    pq.PQclear(r);
    if (!unique)
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "table %s has no unique key on (data_center, lock_name)", c->table);
    if (need_guid && (rc = ddl(p, "adding owner_guid",
                               "ALTER TABLE \"{T}\" ADD COLUMN IF NOT EXISTS owner_guid "
                               "varchar(64) NOT NULL DEFAULT ''",
                               err, errlen)))
        return rc;
    if (need_payload &&
        (rc = ddl(p, "adding payload", "ALTER TABLE \"{T}\" ADD COLUMN IF NOT EXISTS payload bytea",
                  err, errlen)))
        return rc;
    if (need_session && ((rc = ddl(p, "adding session_guid",
                                   "ALTER TABLE \"{T}\" ADD COLUMN IF NOT EXISTS session_guid "
                                   "varchar(64) NOT NULL DEFAULT ''",
                                   err, errlen)) ||
                         (rc = ddl(p, "creating the session index", SESSION_INDEX, err, errlen))))
        return rc;
    if (need_guid || need_payload || need_session)
        reign__log(c->log, REIGN_LOG_INFO, "%s: added reign's columns to table %s", c->store,
                   c->table);
    return 0;
}

/*
 * Whether the table is one reign made or already upgraded - every column of a usable type and
 * the unique key - read in one statement outside any transaction: what nearly every connection
 * finds, so that connecting costs one statement rather than a locked transaction of four.
 * 1 if so; 0 if anything is missing or wrong (the locked path then decides, and says what);
 * or a negative code.
 */
static int schema_ready(pg_conn *p, char *err, size_t errlen)
{
    reign__sqlconn *c = &p->base;
    const Oid text1[1] = {TEXTOID};
    const char *table[1] = {c->table};
    PGresult *r;
    int rc = run(p, "reading the table",
                 "SELECT 'c', a.attname::text, t.typname::text, a.atttypmod::text, "
                 "format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_type t ON "
                 "t.oid = a.atttypid WHERE a.attrelid = to_regclass(quote_ident($1)) AND "
                 "a.attnum > 0 AND NOT a.attisdropped UNION ALL SELECT 'i', i.indexrelid::text, "
                 "a.attname::text, NULL, NULL FROM pg_index i LEFT JOIN pg_attribute a ON "
                 "a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey::int2[]) WHERE i.indrelid = "
                 "to_regclass(quote_ident($1)) AND i.indisunique AND i.indpred IS NULL AND "
                 "i.indexprs IS NULL ORDER BY 1, 2",
                 1, text1, table, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    reign__sql_column cols[MAX_COLS];
    size_t n = 0, k = 0;
    const char *names[16];
    bool unique = false;
    int rows = pq.PQntuples(r);
    for (int i = 0; i < rows; i++) {
        if (pq.PQgetvalue(r, i, 0)[0] == 'c') {
            if (n == MAX_COLS)
                continue;
            reign__strlcpy(cols[n].name, pq.PQgetvalue(r, i, 1), sizeof cols[n].name);
            reign__strlcpy(cols[n].type, pq.PQgetvalue(r, i, 4), sizeof cols[n].type);
            cols[n].kind = reign__pg_kind_of(pq.PQgetvalue(r, i, 2), atoi(pq.PQgetvalue(r, i, 3)));
            n++;
            continue;
        }
        /* Index rows, grouped by index: one index's columns in a row. */
        if (k < 16)
            names[k++] = pq.PQgetisnull(r, i, 2) ? NULL : pq.PQgetvalue(r, i, 2);
        bool last = i + 1 == rows || strcmp(pq.PQgetvalue(r, i + 1, 1), pq.PQgetvalue(r, i, 1));
        if (last) {
            unique |= reign__sql_unique_ok(names, k, false);
            k = 0;
        }
    }
    bool need_guid = true, need_payload = true, need_session = true;
    char ignored[256];
    bool ok = n > 0 && unique &&
              reign__sql_check_columns(c, cols, n, false, &need_guid, &need_payload, &need_session,
                                       ignored, sizeof ignored) == 0 &&
              !need_guid && !need_payload && !need_session;
    pq.PQclear(r);
    return ok;
}

static int pg_ensure_schema(reign__sqlconn *c, char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    int ready = schema_ready(p, err, errlen);
    if (ready == 1 || (ready < 0 && c->broken))
        return ready < 0 ? ready : 0;
    PGresult *r;
    /* One transaction: DDL is transactional here, so a refused table is left as it was. */
    int rc = run(p, "schema", "BEGIN", 0, NULL, NULL, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    pq.PQclear(r);
    rc = schema_in_tx(p, err, errlen);
    if (!rc) {
        rc = run(p, "schema", "COMMIT", 0, NULL, NULL, NULL, NULL, 0, &r, err, errlen);
        if (!rc)
            pq.PQclear(r);
    }
    if (rc && !c->broken) {
        char ignored[8];
        if (!run(p, "schema", "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0, &r, ignored,
                 sizeof ignored))
            pq.PQclear(r);
    }
    return rc;
}

/* ---- the lease ------------------------------------------------------------------------------ */

static uint64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return v;
}

static int pg_read(reign__sqlconn *c, const char *dc, const char *name, reign__lease *out,
                   char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    const Oid types[2] = {TEXTOID, TEXTOID};
    const char *vals[2] = {dc, name};
    PGresult *r;
    /* Binary results: integers as 8 bytes, the payload as it is. */
    int rc = run(p, "read",
                 "SELECT owner::text, owner_guid::text, payload, term::bigint, "
                 "term_duration::bigint, duration::bigint, " MS_OF("gmt_create") ", " MS_OF(
                     "gmt_modified") ", floor(extract(epoch FROM n.now) * 1000)::bigint, n.now "
                                     ">= gmt_modified + " INTERVAL ", session_guid::text FROM "
                                     "\"{T}\", " NOW_FROM " WHERE data_center = $1 AND "
                                     "lock_name = $2",
                 2, types, vals, NULL, NULL, 1, &r, err, errlen);
    if (rc)
        return rc;
    if (pq.PQntuples(r) == 0) {
        pq.PQclear(r);
        return 0;
    }
    for (int i = 3; i < 9; i++) {
        if (!pq.PQgetisnull(r, 0, i) && pq.PQgetlength(r, 0, i) != 8) {
            pq.PQclear(r);
            return reign__sql_err(c, err, errlen, REIGN_EBACKEND, "read: unexpected result");
        }
    }
    int olen = pq.PQgetlength(r, 0, 0), glen = pq.PQgetlength(r, 0, 1);
    int slen = pq.PQgetlength(r, 0, 10);
    if (pq.PQgetisnull(r, 0, 0) || olen > REIGN_ID_MAX || glen > REIGN__SQL_GUID_MAX ||
        slen > REIGN__SQL_GUID_MAX || pq.PQgetisnull(r, 0, 7) || pq.PQgetisnull(r, 0, 9)) {
        pq.PQclear(r);
        return reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                              "the row of (%s, %s) in %s has an owner, guid or gmt_modified "
                              "reign cannot use",
                              dc, name, c->table);
    }
    out->exists = true;
    memcpy(out->owner, pq.PQgetvalue(r, 0, 0), (size_t)olen);
    out->owner[olen] = '\0';
    memcpy(out->owner_guid, pq.PQgetvalue(r, 0, 1), (size_t)glen);
    out->owner_guid[glen] = '\0';
    memcpy(out->session, pq.PQgetvalue(r, 0, 10), (size_t)slen);
    out->session[slen] = '\0';
    int plen = pq.PQgetisnull(r, 0, 2) ? 0 : pq.PQgetlength(r, 0, 2);
    if (plen > 0) {
        if (!(out->payload = reign__memdup(pq.PQgetvalue(r, 0, 2), (size_t)plen))) {
            pq.PQclear(r);
            return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
        }
        out->payload_len = (size_t)plen;
    }
    out->term = be64(pq.PQgetvalue(r, 0, 3));
    out->term_duration = be64(pq.PQgetvalue(r, 0, 4));
    out->duration_ms = (int64_t)be64(pq.PQgetvalue(r, 0, 5));
    out->created_ms = pq.PQgetisnull(r, 0, 6) ? 0 : (int64_t)be64(pq.PQgetvalue(r, 0, 6));
    out->modified_ms = (int64_t)be64(pq.PQgetvalue(r, 0, 7));
    out->db_now_ms = (int64_t)be64(pq.PQgetvalue(r, 0, 8));
    out->db_expired = pq.PQgetvalue(r, 0, 9)[0] != 0;
    pq.PQclear(r);
    return 0;
}

/*
 * The claim as parameters $1..$10: data_center, lock_name, owner, owner_guid, payload (binary),
 * duration, term, term_duration (take's expected version), take_released (0 or 1), session_guid;
 * each statement
 * uses those it needs (their types are given, so unused ones are no trouble).
 */
typedef struct claim_params {
    Oid types[10];
    const char *vals[10];
    int lens[10];
    int fmts[10];
    char duration[24], term[24], renewals[24];
} claim_params;

static void claim_params_init(claim_params *cp, const reign__lease_claim *cl, uint64_t term)
{
    static const Oid types[10] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, BYTEAOID,
                                  INT8OID, INT8OID, INT8OID, INT8OID, TEXTOID};
    memcpy(cp->types, types, sizeof types);
    snprintf(cp->duration, sizeof cp->duration, "%" PRId64, cl->duration_ms);
    snprintf(cp->term, sizeof cp->term, "%" PRIu64, term);
    snprintf(cp->renewals, sizeof cp->renewals, "%" PRIu64, cl->expect_renewals);
    const char *vals[10] = {cl->dc,
                            cl->name,
                            cl->owner,
                            cl->owner_guid,
                            cl->payload_len ? cl->payload : NULL, /* empty: NULL */
                            cp->duration,
                            cp->term,
                            cp->renewals,
                            cl->take_released ? "1" : "0",
                            cl->session ? cl->session : ""};
    memcpy(cp->vals, vals, sizeof vals);
    memset(cp->lens, 0, sizeof cp->lens);
    memset(cp->fmts, 0, sizeof cp->fmts);
    cp->lens[4] = (int)cl->payload_len;
    cp->fmts[4] = 1;
}

static int claim_write(pg_conn *p, const char *what, const char *tmpl, const reign__lease_claim *cl,
                       uint64_t term, char *err, size_t errlen)
{
    claim_params cp;
    claim_params_init(&cp, cl, term);
    int rc = run_count(p, what, tmpl, 10, cp.types, cp.vals, cp.lens, cp.fmts, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

static int pg_insert(reign__sqlconn *c, const reign__lease_claim *cl, char *err, size_t errlen)
{
    return claim_write((pg_conn *)c, "insert",
                       "INSERT INTO \"{T}\" (data_center, lock_name, owner, owner_guid, payload, "
                       "duration, session_guid, term, term_duration, gmt_create, gmt_modified) "
                       "SELECT $1, $2, $3, $4, $5, $6, $10, 1, 0, " NOW_UP ", " NOW_UP
                       " FROM " NOW_FROM " "
                       "ON CONFLICT DO NOTHING",
                       cl, 0, err, errlen);
}

static int pg_take(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t expected_term,
                   char *err, size_t errlen)
{
    /* duration too: the lease must run by the new holder's length, which its own deadline
     * (demote before the lease can lapse) is computed from.  The version, not a clock: sql.h. */
    return claim_write(
        (pg_conn *)c, "take",
        "UPDATE \"{T}\" SET owner = $3, owner_guid = $4, payload = $5, duration = "
        "$6, session_guid = $10, term = term + 1, term_duration = 0, gmt_modified = " NOW_UP
        " FROM " NOW_FROM " WHERE data_center = $1 AND lock_name = $2 AND term = $7 AND (($9 = 0 "
        "AND term_duration = $8) OR ($9 = 1 AND duration <= 0 AND owner_guid NOT LIKE "
        "'>%'))",
        cl, expected_term, err, errlen);
}

static int pg_renew(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                    size_t errlen)
{
    return claim_write(
        (pg_conn *)c, "renew",
        "UPDATE \"{T}\" SET term_duration = term_duration + 1, gmt_modified = " NOW_UP
        " FROM " NOW_FROM " WHERE data_center = $1 AND lock_name = $2 AND owner = "
        "$3 AND owner_guid = $4 AND term = $7 AND duration > 0",
        cl, term, err, errlen);
}

static int pg_release(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t term, char *err,
                      size_t errlen)
{
    /* duration := 0: released, anyone may take it at once (and expired to the seed's readers). */
    return claim_write((pg_conn *)c, "release",
                       "UPDATE \"{T}\" SET duration = 0, gmt_modified = " NOW_DOWN " FROM " NOW_FROM
                       " WHERE data_center = $1 AND lock_name = $2 AND owner = $3 AND owner_guid "
                       "= $4 AND term = $7",
                       cl, term, err, errlen);
}

/* The guardian's release: ours if owner and guid match and it is not released, released and
 * notified in one statement (the successor is woken by the NOTIFY at the commit). */
static int pg_release_ours(reign__sqlconn *c, const reign__lease_claim *cl, uint64_t *term,
                           char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    char chan[64];
    reign__sql_channel(chan, c->table, cl->dc, cl->name);
    const Oid types[5] = {TEXTOID, TEXTOID, TEXTOID, TEXTOID, TEXTOID};
    const char *vals[5] = {cl->dc, cl->name, cl->owner, cl->owner_guid, chan};
    PGresult *r;
    c->statements++;
    int rc =
        run(p, "release",
            "WITH r AS (UPDATE \"{T}\" SET duration = 0, gmt_modified = " NOW_DOWN " FROM " NOW_FROM
            " WHERE data_center = $1 AND lock_name = $2 AND owner = $3 AND owner_guid = $4"
            " AND duration > 0 RETURNING term)"
            " SELECT term, pg_notify($5, $2) FROM r",
            5, types, vals, NULL, NULL, 0, &r, err, errlen);
    if (rc)
        return rc;
    rc = pq.PQntuples(r) == 1;
    if (rc)
        *term = strtoull(pq.PQgetvalue(r, 0, 0), NULL, 10);
    pq.PQclear(r);
    return rc;
}

static int pg_depose(reign__sqlconn *c, const char *dc, const char *name, uint64_t term, char *err,
                     size_t errlen)
{
    /* The claim's parameters, of which the statement uses $1, $2, $4 (the guid it writes) and
     * $7.  Only the guid changes: the version stays, so followers count on from where they
     * were. */
    const reign__lease_claim cl = {
        .dc = dc, .name = name, .owner = "", .owner_guid = REIGN__SQL_DEPOSED};
    return claim_write((pg_conn *)c, "depose",
                       "UPDATE \"{T}\" SET owner_guid = $4 WHERE data_center = $1 AND "
                       "lock_name = $2 AND term = $7 AND duration > 0",
                       &cl, term, err, errlen);
}

/* ---- notification --------------------------------------------------------------------------- */

/* LISTENs for up to LISTEN_BATCH channels, in one statement; then they are ours. */
static int listen_batch(pg_conn *p, char (*chans)[64], size_t n, char *err, size_t errlen)
{
    reign__sqlconn *c = &p->base;
    /* LISTEN takes no parameter: the channels are spliced, as the table is, and are made of
     * nothing but [A-Za-z0-9_] (reign__sql_channel()).  Several statements in one text go by
     * the simple protocol, in one transaction: they all take effect at its commit, before
     * the reads that follow them. */
    reign__buf b;
    reign__buf_init(&b);
    for (size_t i = 0; i < n; i++)
        reign__buf_printf(&b, "%sLISTEN \"%s\"", i ? ";" : "", chans[i]);
    if (b.oom) {
        reign__buf_free(&b);
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    }
    c->statements++;
    p->sqlstate[0] = '\0';
    int64_t deadline = reign__sql_deadline(c->statement_timeout_ms);
    PGresult *r = NULL;
    int rc = sent_ok(p, pq.PQsendQuery(p->pg, b.data), "listen", err, errlen);
    reign__buf_free(&b);
    if (!rc)
        rc = answer(p, "listen", deadline, &r, err, errlen);
    pq.PQclear(r);
    for (size_t i = 0; !rc && i < n; i++)
        if (reign__u64set_add(&p->channels, reign__hash_str(chans[i])) < 0)
            rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    return rc;
}

static int pg_listen(reign__sqlconn *c, const char *dc, const char *const *names, size_t n,
                     char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    char(*chans)[64] = reign__malloc((n < LISTEN_BATCH ? n : LISTEN_BATCH) * sizeof(*chans));
    if (!chans)
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    size_t k = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        reign__sql_channel(chans[k], c->table, dc, names[i]);
        bool again = reign__u64set_has(&p->channels, reign__hash_str(chans[k]));
        for (size_t j = 0; j < k && !again; j++)
            again = !strcmp(chans[j], chans[k]);
        if (!again && ++k == LISTEN_BATCH) {
            rc = listen_batch(p, chans, k, err, errlen);
            k = 0;
        }
    }
    if (!rc && k)
        rc = listen_batch(p, chans, k, err, errlen);
    reign__free(chans);
    return rc;
}

static int pg_listen_fd(const reign__sqlconn *c)
{
    const pg_conn *p = (const pg_conn *)c;
    return p->channels.n ? pq.PQsocket(p->pg) : -1;
}

static int pg_drain_notify(reign__sqlconn *c)
{
    pg_conn *p = (pg_conn *)c;
    if (!pq.PQconsumeInput(p->pg)) {
        p->base.broken = true;
        return REIGN_ECONNLOSS;
    }
    int any = 0;
    PGnotify *n;
    while ((n = pq.PQnotifies(p->pg))) {
        if (reign__u64set_has(&p->channels, reign__hash_str(n->relname))) {
            any = 1;
            /* The payload is the name notified (reign__sql_notify()), a hint after it maybe;
             * one of another writer's tells nothing. */
            reign__sql_heard_add(c, n->extra && n->extra[0] ? n->extra : NULL);
        }
        pq.PQfreemem(n);
    }
    return any;
}

static int pg_notify(reign__sqlconn *c, const char *dc, const char *name, const char *hint,
                     char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    char chan[64];
    reign__sql_channel(chan, c->table, dc, name);
    reign__buf pl;
    if (reign__sql_notice_payload(c, &pl, name, hint, err, errlen) < 0) {
        reign__buf_free(&pl);
        return REIGN_ENOMEM;
    }
    /* In a transaction: sent with its COMMIT (run()), when the server would send it anyway. */
    if ((p->begin_pending || p->in_tx) && p->n_notes < NOTES_MAX) {
        memcpy(p->notes[p->n_notes].channel, chan, sizeof chan);
        p->notes[p->n_notes++].payload = pl.data; /* the buffer's, now the note's */
        return 0;
    }
    const Oid types[2] = {TEXTOID, TEXTOID};
    const char *vals[2] = {chan, pl.data};
    PGresult *r;
    c->statements++;
    int rc = run(p, "notify", "SELECT pg_notify($1, $2)", 2, types, vals, NULL, NULL, 0, &r, err,
                 errlen);
    if (!rc)
        pq.PQclear(r);
    reign__buf_free(&pl);
    return rc;
}

/* ---- other statements ------------------------------------------------------------------------ */

static void pg_plan_once(reign__sqlconn *c)
{
    ((pg_conn *)c)->plan_generic = true;
}

static int pg_query(reign__sqlconn *c, const char *what, const char *sql, const reign__sqlv *args,
                    size_t n_args, reign__sql_rows *rows, char *err, size_t errlen)
{
    pg_conn *p = (pg_conn *)c;
    /* reign__sql_plan_once() is this statement's alone, run or not. */
    bool generic = p->plan_generic;
    p->plan_generic = false;
    if (n_args > REIGN__SQL_ARGS_MAX)
        return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many parameters", what);
    /* A BEGIN waits for the transaction's first statement (run()); a transaction that sent
     * nothing has nothing to end. */
    if (!n_args && !strcmp(sql, "BEGIN") && !p->begin_pending && !p->in_tx) {
        p->begin_pending = true;
        return 0;
    }
    if (!n_args && p->begin_pending && !p->n_notes &&
        (!strcmp(sql, "COMMIT") || !strcmp(sql, "ROLLBACK"))) {
        p->begin_pending = false;
        return 0;
    }
    if (!n_args && p->begin_pending && !strcmp(sql, "ROLLBACK")) {
        p->begin_pending = false;
        notes_drop(p);
        return 0;
    }
    Oid types[REIGN__SQL_ARGS_MAX];
    const char *vals[REIGN__SQL_ARGS_MAX];
    int lens[REIGN__SQL_ARGS_MAX], fmts[REIGN__SQL_ARGS_MAX];
    char ints[REIGN__SQL_ARGS_MAX][24];
    for (size_t i = 0; i < n_args; i++) {
        types[i] = args[i].kind == REIGN__SQLV_INT    ? INT8OID
                   : args[i].kind == REIGN__SQLV_BLOB ? BYTEAOID
                                                      : TEXTOID;
        vals[i] = NULL;
        lens[i] = 0;
        fmts[i] = 0;
        if (args[i].kind == REIGN__SQLV_INT) {
            snprintf(ints[i], sizeof ints[i], "%" PRId64, args[i].i);
            vals[i] = ints[i];
        } else if (args[i].kind == REIGN__SQLV_TEXT) {
            vals[i] = args[i].s;
        } else if (args[i].kind == REIGN__SQLV_BLOB && args[i].len) {
            if (args[i].len > INT32_MAX)
                return reign__sql_err(c, err, errlen, REIGN_E2BIG, "%s: parameter too long", what);
            vals[i] = args[i].s; /* binary: as it is */
            lens[i] = (int)args[i].len;
            fmts[i] = 1;
        }
    }
    PGresult *r;
    /* run() splices {T} again: the text holds none any more. */
    p->plan_generic = generic;
    int rc = run(p, what, sql, (int)n_args, types, vals, lens, fmts, 0, &r, err, errlen);
    if (rc)
        return rc;
    if (pq.PQresultStatus(r) == PGRES_TUPLES_OK) {
        reign__sql_rows got = {.n_cols = (size_t)pq.PQnfields(r)};
        const char *cells[32];
        size_t lens_out[32];
        char *bytes[32] = {NULL};
        if (got.n_cols > 32) {
            pq.PQclear(r);
            return reign__sql_err(c, err, errlen, REIGN_EINVAL, "%s: too many columns", what);
        }
        for (int i = 0; rows && i < pq.PQntuples(r) && rc == 0; i++) {
            for (size_t k = 0; k < got.n_cols && rc == 0; k++) {
                bool null = pq.PQgetisnull(r, i, (int)k);
                cells[k] = null ? NULL : pq.PQgetvalue(r, i, (int)k);
                lens_out[k] = null ? 0 : (size_t)pq.PQgetlength(r, i, (int)k);
                /* Text results: a byte string comes as \x and hex digits. */
                if (!null && pq.PQftype(r, (int)k) == BYTEAOID) {
                    rc = reign__pg_unhex(c, what, cells[k], lens_out[k], &bytes[k], &lens_out[k],
                                         err, errlen);
                    cells[k] = bytes[k];
                }
            }
            if (rc == 0 && reign__sql_rows_add(&got, cells, lens_out) < 0)
                rc = reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
            for (size_t k = 0; k < got.n_cols; k++) {
                reign__free(bytes[k]);
                bytes[k] = NULL;
            }
        }
        pq.PQclear(r);
        if (rc < 0 || !rows) {
            reign__sql_rows_free(&got);
            return rc;
        }
        *rows = got;
        return 0;
    }
    const char *n = pq.PQcmdTuples(r);
    rc = n && *n ? atoi(n) : 0;
    pq.PQclear(r);
    return rc;
}

const reign__sql_dialect reign__sql_postgres = {
    .name = "postgres",
    .size = sizeof(pg_conn),
    .connect = pg_connect,
    .conn_param = pg_conn_param,
    .close = pg_close,
    .ensure_schema = pg_ensure_schema,
    .read = pg_read,
    .insert = pg_insert,
    .take = pg_take,
    .renew = pg_renew,
    .release = pg_release,
    .depose = pg_depose,
    .listen = pg_listen,
    .listen_fd = pg_listen_fd,
    .drain_notify = pg_drain_notify,
    .notify = pg_notify,
    .notices_named = true,
    .plan_once = pg_plan_once,
    .release_ours = pg_release_ours,
    .query = pg_query,
    .now_ms = "floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    .begin = "BEGIN",
    .for_update = " FOR UPDATE",
    .on_conflict = " ON CONFLICT DO NOTHING",
    .id_column = "id bigserial PRIMARY KEY",
    .placeholder = '$',
    .table_options = "",
    .blob_type = "bytea",
    .quote = '"',
};
