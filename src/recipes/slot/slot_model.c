/*
 * slot_model.c - a slot's record in memory, its text in a ZooKeeper node, and what a copy
 * decides from it (slot_internal.h).  No I/O: the state machine (slot.c) and the stores
 * (slot_zk.c, slot_sql.c) build on it, and the unit tests walk it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "record.h"
#include "slot_internal.h"

/* ---- names ----------------------------------------------------------------------------------- */

static const char *const result_words[] = {
    [REIGN_SLOT_RUNNING] = "running", [REIGN_SLOT_EXITED] = "exited",
    [REIGN_SLOT_KILLED] = "killed",   [REIGN_SLOT_STOPPED] = "stopped",
    [REIGN_SLOT_LOST] = "lost",
};

static const char *const verdict_words[] = {
    [REIGN_SLOT_OPEN] = "open",           [REIGN_SLOT_BUSY] = "running",
    [REIGN_SLOT_SUCCEEDED] = "succeeded", [REIGN_SLOT_RETRY] = "retry",
    [REIGN_SLOT_FAILED] = "failed",       [REIGN_SLOT_ABANDONED] = "abandoned",
};

static const char *const outcome_words[] = {
    [REIGN_SLOT_RAN_OK] = "ran",
    [REIGN_SLOT_RAN_FAILED] = "ran_failed",
    [REIGN_SLOT_UNRECORDED] = "unrecorded",
    [REIGN_SLOT_ALREADY_DONE] = "already_done",
    [REIGN_SLOT_GAVE_UP] = "gave_up",
    [REIGN_SLOT_WAS_ABANDONED] = "abandoned",
    [REIGN_SLOT_LATE] = "late",
    [REIGN_SLOT_SKIPPED] = "skipped",
};

#define WORD(table, i)                                                                             \
    ((unsigned)(i) < sizeof(table) / sizeof(table[0]) && table[i] ? table[i] : "?")

const char *reign__slot_result_word(reign_slot_result r)
{
    return WORD(result_words, r);
}

const char *reign__slot_verdict_word(reign_slot_verdict v)
{
    return WORD(verdict_words, v);
}

const char *reign_slot_result_name(reign_slot_result r)
{
    return reign__slot_result_word(r);
}

const char *reign_slot_verdict_name(reign_slot_verdict v)
{
    return reign__slot_verdict_word(v);
}

const char *reign_slot_outcome_name(reign_slot_outcome o)
{
    return WORD(outcome_words, o);
}

static int parse_word(const char *const *table, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++)
        if (table[i] && !strcmp(table[i], s))
            return (int)i;
    return -1;
}

int reign__slot_result_parse(const char *s)
{
    return parse_word(result_words, sizeof result_words / sizeof *result_words, s);
}

int reign__slot_verdict_parse(const char *s)
{
    return parse_word(verdict_words, sizeof verdict_words / sizeof *verdict_words, s);
}

/* ---- keys and durations ---------------------------------------------------------------------- */

static bool key_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '+' || c == '-';
}

int reign_slot_key_check(const char *key)
{
    if (!key)
        return REIGN_ENAME;
    size_t n = strlen(key);
    if (n < 1 || n > REIGN_SLOT_KEY_MAX)
        return REIGN_ENAME;
    for (size_t i = 0; i < n; i++)
        if (!key_char((unsigned char)key[i]))
            return REIGN_ENAME;
    return 0;
}

int reign_slot_duration_parse(const char *s, int64_t *ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {{"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {"d", 86400000}};
    if (!s || !*s || !ms)
        return REIGN_EINVAL;
    int64_t total = 0;
    const char *p = s;
    bool bare = true;
    while (*p) {
        if (*p < '0' || *p > '9')
            return REIGN_EINVAL;
        int64_t v = 0;
        while (*p >= '0' && *p <= '9') {
            v = v * 10 + (*p++ - '0');
            if (v > REIGN_SLOT_DURATION_MAX_MS)
                return REIGN_EINVAL;
        }
        int64_t mult = 0;
        if (!*p && bare) {
            mult = 1000; /* a bare number: seconds */
        } else {
            /* The longest unit that matches ("ms" before "m"). */
            for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
                size_t n = strlen(units[i].unit);
                if (!strncmp(p, units[i].unit, n) &&
                    (p[n] == '\0' || (p[n] >= '0' && p[n] <= '9'))) {
                    mult = units[i].ms;
                    p += n;
                    break;
                }
            }
            if (!mult)
                return REIGN_EINVAL;
        }
        bare = false;
        if (v > (REIGN_SLOT_DURATION_MAX_MS - total) / mult)
            return REIGN_EINVAL;
        total += v * mult;
    }
    if (total < 1)
        return REIGN_EINVAL;
    *ms = total;
    return 0;
}

void reign__slot_period_key(int64_t now_ms, int64_t every_ms, int64_t *start_ms,
                            char out[REIGN_SLOT_KEY_MAX + 1])
{
    int64_t start = now_ms - (now_ms % every_ms + every_ms) % every_ms;
    *start_ms = start;
    time_t secs = (time_t)(start >= 0 ? start / 1000 : (start - 999) / 1000);
    int ms = (int)(start - (int64_t)secs * 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
    if (every_ms % 1000)
        snprintf(out, REIGN_SLOT_KEY_MAX + 1, "%s.%03dZ", date, ms);
    else
        snprintf(out, REIGN_SLOT_KEY_MAX + 1, "%sZ", date);
}

/* ---- the record ------------------------------------------------------------------------------ */

void reign__slot_rec_init(reign__slot_rec *r, const char *key)
{
    memset(r, 0, sizeof *r);
    reign__strlcpy(r->key, key ? key : "", sizeof r->key);
    r->verdict = REIGN_SLOT_OPEN;
    r->version = -1;
}

void reign__slot_run_public(const reign__slot_run *r, reign_slot_run *out)
{
    *out = (reign_slot_run){
        .attempt = r->attempt,
        .owner = r->owner,
        .host = r->host,
        .term = r->term,
        .token = r->token,
        .start_ms = r->start_ms > 0 ? r->start_ms : 0,
        .end_ms = r->end_ms > 0 ? r->end_ms : 0,
        .result = r->result,
        .code = r->code,
    };
}

void reign__slot_rec_public(const reign__slot_rec *r, reign_slot_run *buf, reign_slot_record *out)
{
    for (size_t i = 0; i < r->n; i++)
        reign__slot_run_public(&r->runs[i], &buf[i]);
    *out = (reign_slot_record){.key = r->key, .verdict = r->verdict, .runs = buf, .n_runs = r->n};
}

void reign__slot_rec_resolve(reign__slot_rec *r, int64_t now_ms)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->runs[i].start_ms == REIGN__SLOT_NOW)
            r->runs[i].start_ms = now_ms;
        if (r->runs[i].end_ms == REIGN__SLOT_NOW)
            r->runs[i].end_ms = now_ms;
    }
}

/* Percent-encodes what would break the space-separated form. */
static void put_word(reign__buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    if (!*s) {
        reign__buf_puts(b, "%");
        return; /* "%" alone: the empty string */
    }
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p <= ' ' || *p == '%' || *p == 0x7f) {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            reign__buf_append(b, e, 3);
        } else {
            reign__buf_append(b, p, 1);
        }
    }
}

static void put_time(reign__buf *b, int64_t t, bool end)
{
    if (t == REIGN__SLOT_NOW)
        reign__buf_puts(b, "@");
    else if (end && t == 0)
        reign__buf_puts(b, "-");
    else
        reign__buf_printf(b, "%" PRId64, t);
}

int reign__slot_rec_build(reign__buf *out, const reign__slot_rec *r)
{
    if (r->n > REIGN__SLOT_RUNS_MAX)
        return REIGN_EINVAL;
    reign__buf runs[REIGN__SLOT_RUNS_MAX];
    char names[REIGN__SLOT_RUNS_MAX][24];
    char nbuf[16];
    const char *kv[2 * (4 + REIGN__SLOT_RUNS_MAX)];
    size_t k = 0;
    snprintf(nbuf, sizeof nbuf, "%zu", r->n);
    kv[k++] = REIGN__K_KIND;
    kv[k++] = REIGN__KIND_SLOT;
    kv[k++] = REIGN__K_SLOT;
    kv[k++] = r->key;
    kv[k++] = REIGN__K_VERDICT;
    kv[k++] = reign__slot_verdict_word(r->verdict);
    kv[k++] = REIGN__K_RUNS;
    kv[k++] = nbuf;
    int rc = 0;
    for (size_t i = 0; i < r->n; i++) {
        const reign__slot_run *u = &r->runs[i];
        reign__buf *b = &runs[i];
        reign__buf_init(b);
        reign__buf_printf(b, "%u %" PRIu64 " %" PRIu64 " ", u->attempt, u->term, u->token);
        put_time(b, u->start_ms, false);
        reign__buf_puts(b, " ");
        put_time(b, u->end_ms, true);
        reign__buf_printf(b, " %s %d ", reign__slot_result_word(u->result), u->code);
        put_word(b, u->owner);
        reign__buf_puts(b, " ");
        put_word(b, u->host);
        if (b->oom)
            rc = REIGN_ENOMEM;
        snprintf(names[i], sizeof names[i], REIGN__K_RUN_PREFIX "%zu", i + 1);
        kv[k++] = names[i];
        kv[k++] = b->data ? b->data : "";
    }
    if (rc == 0)
        rc = reign__record_build(out, kv, k, NULL, 0);
    for (size_t i = 0; i < r->n; i++)
        reign__buf_free(&runs[i]);
    return rc;
}

/* A decimal number, all of s, in [min, max]. */
static bool parse_num(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    if (n == 0 || n > 20)
        return false;
    bool neg = s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n)
        return false;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
        return false;
    int64_t x = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (x < min || x > max)
        return false;
    *out = x;
    return true;
}

static bool parse_u64(const char *s, size_t n, uint64_t *out)
{
    int64_t v;
    if (!parse_num(s, n, 0, INT64_MAX, &v))
        return false;
    *out = (uint64_t)v;
    return true;
}

static int hexv(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The inverse of put_word: exactly what it could have written. */
static bool parse_word_text(const char *s, size_t n, char *out, size_t outlen)
{
    if (n == 1 && s[0] == '%') {
        out[0] = '\0';
        return true;
    }
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%') {
            if (n - i < 3 || hexv(s[i + 1]) < 0 || hexv(s[i + 2]) < 0)
                return false;
            c = (unsigned char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
            if (!(c <= ' ' || c == '%' || c == 0x7f) || c == 0)
                return false;
            i += 2;
        } else if (c <= ' ' || c == 0x7f) {
            return false;
        }
        if (o + 1 >= outlen)
            return false;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return o > 0;
}

static bool parse_time(const char *s, size_t n, bool end, int64_t mtime_ms, int64_t *out)
{
    if (n == 1 && s[0] == '@') {
        *out = mtime_ms;
        return true;
    }
    if (end && n == 1 && s[0] == '-') {
        *out = 0;
        return true;
    }
    return parse_num(s, n, 0, INT64_MAX, out);
}

static bool parse_run(const char *v, int64_t mtime_ms, reign__slot_run *u)
{
    const char *f[9];
    size_t len[9];
    size_t nf = 0;
    for (const char *p = v;;) {
        const char *sp = strchr(p, ' ');
        size_t n = sp ? (size_t)(sp - p) : strlen(p);
        if (nf == 9 || n == 0)
            return false;
        f[nf] = p;
        len[nf++] = n;
        if (!sp)
            break;
        p = sp + 1;
    }
    if (nf != 9)
        return false;
    int64_t attempt, code;
    char word[16];
    if (!parse_num(f[0], len[0], 1, REIGN__SLOT_RUNS_MAX, &attempt) ||
        !parse_u64(f[1], len[1], &u->term) || !parse_u64(f[2], len[2], &u->token) ||
        !parse_time(f[3], len[3], false, mtime_ms, &u->start_ms) ||
        !parse_time(f[4], len[4], true, mtime_ms, &u->end_ms) || len[5] >= sizeof word ||
        !parse_num(f[6], len[6], INT32_MIN, INT32_MAX, &code))
        return false;
    memcpy(word, f[5], len[5]);
    word[len[5]] = '\0';
    int res = reign__slot_result_parse(word);
    if (res < 0)
        return false;
    u->attempt = (unsigned)attempt;
    u->result = (reign_slot_result)res;
    u->code = (int)code;
    /* A run has an end exactly when it is no longer running. */
    if ((u->result == REIGN_SLOT_RUNNING) != (u->end_ms == 0))
        return false;
    return parse_word_text(f[7], len[7], u->owner, sizeof u->owner) &&
           parse_word_text(f[8], len[8], u->host, sizeof u->host);
}

int reign__slot_rec_parse(const void *data, size_t len, int64_t mtime_ms, reign__slot_rec *out)
{
    reign__slot_rec_init(out, NULL);
    reign__record rec;
    int rc = reign__record_parse(data, len, &rec);
    if (rc < 0)
        return rc;
    rc = REIGN_EFOREIGN;
    const char *kind = reign__record_get(&rec, REIGN__K_KIND);
    const char *key = reign__record_get(&rec, REIGN__K_SLOT);
    const char *verdict = reign__record_get(&rec, REIGN__K_VERDICT);
    uint64_t n;
    int v = reign__slot_verdict_parse(verdict);
    if (!kind || strcmp(kind, REIGN__KIND_SLOT) || reign_slot_key_check(key) < 0 || v < 0 ||
        reign__record_get_u64(&rec, REIGN__K_RUNS, &n) < 0 || n > REIGN__SLOT_RUNS_MAX ||
        rec.payload_len != 0 || rec.n_fields != 4 + n)
        goto out;
    reign__strlcpy(out->key, key, sizeof out->key);
    out->verdict = (reign_slot_verdict)v;
    for (size_t i = 0; i < n; i++) {
        char name[24];
        snprintf(name, sizeof name, REIGN__K_RUN_PREFIX "%zu", i + 1);
        const char *r = reign__record_get(&rec, name);
        if (!r || !parse_run(r, mtime_ms, &out->runs[i]) || out->runs[i].attempt != i + 1)
            goto out;
        /* Only the last attempt may be running. */
        if (i + 1 < n && out->runs[i].result == REIGN_SLOT_RUNNING)
            goto out;
    }
    out->n = (size_t)n;
    if ((out->verdict == REIGN_SLOT_BUSY) !=
            (n > 0 && out->runs[n - 1].result == REIGN_SLOT_RUNNING) ||
        (out->verdict == REIGN_SLOT_OPEN) != (n == 0))
        goto out;
    out->exists = true;
    rc = 0;
out:
    reign__record_clear(&rec);
    if (rc < 0)
        reign__slot_rec_init(out, NULL);
    return rc;
}

/* ---- deciding -------------------------------------------------------------------------------- */

reign_slot_verdict reign__slot_verdict_after(const reign__slot_policy *p, unsigned attempt,
                                             reign_slot_result result, int code)
{
    if (result == REIGN_SLOT_EXITED && code == 0)
        return REIGN_SLOT_SUCCEEDED;
    if (p->at_most_once)
        return result == REIGN_SLOT_EXITED ? REIGN_SLOT_FAILED : REIGN_SLOT_ABANDONED;
    return attempt < (unsigned)p->retries + 1 ? REIGN_SLOT_RETRY : REIGN_SLOT_FAILED;
}

static reign__slot_decision done(reign_slot_outcome o, reign_slot_verdict v, int run,
                                 const char *why)
{
    return (reign__slot_decision){
        .action = REIGN__SLOT_DO_DONE, .outcome = o, .verdict = v, .run = run, .why = why};
}

static reign__slot_decision act(reign__slot_action a, reign_slot_verdict v, int run,
                                const char *why)
{
    return (reign__slot_decision){.action = a, .verdict = v, .run = run, .why = why};
}

reign__slot_decision reign__slot_decide(const reign__slot_rec *r, const reign__slot_policy *p,
                                        bool leading, uint64_t term, int64_t now_ms)
{
    size_t n = r->exists ? r->n : 0;
    int last = (int)n - 1;

    /* A success is final, whatever the verdict says. */
    for (size_t i = 0; i < n; i++)
        if (r->runs[i].result == REIGN_SLOT_EXITED && r->runs[i].code == 0)
            return done(REIGN_SLOT_ALREADY_DONE, REIGN_SLOT_SUCCEEDED, (int)i, "it has succeeded");
    if (r->exists && r->verdict == REIGN_SLOT_SUCCEEDED)
        return done(REIGN_SLOT_ALREADY_DONE, REIGN_SLOT_SUCCEEDED, last, "it has succeeded");
    if (r->exists && r->verdict == REIGN_SLOT_FAILED)
        return done(REIGN_SLOT_GAVE_UP, REIGN_SLOT_FAILED, last, "it has failed for good");
    if (r->exists && r->verdict == REIGN_SLOT_ABANDONED)
        return done(REIGN_SLOT_WAS_ABANDONED, REIGN_SLOT_ABANDONED, last,
                    "it was abandoned (at most once)");

    bool late = p->deadline_ms > 0 && now_ms > 0 && now_ms - p->slot_start_ms > p->deadline_ms;
    bool busy = n > 0 && r->runs[last].result == REIGN_SLOT_RUNNING;
    reign_slot_verdict state = busy ? REIGN_SLOT_BUSY : n ? REIGN_SLOT_RETRY : REIGN_SLOT_OPEN;

    if (busy && leading && r->runs[last].term < term) {
        /* Started under an earlier leadership, and no end: its runner is gone (it was
         * elected, so every leadership before ours has ended, and a runner ends its attempt
         * before it lets go). */
        reign_slot_verdict v =
            reign__slot_verdict_after(p, r->runs[last].attempt, REIGN_SLOT_LOST, 0);
        return act(REIGN__SLOT_DO_MARK, v, last, "its runner is gone");
    }
    if (late)
        return done(REIGN_SLOT_LATE, state, last, "past the deadline after the slot began");
    if (busy && !leading && p->no_wait)
        return done(REIGN_SLOT_SKIPPED, REIGN_SLOT_BUSY, last, "another copy is running it");
    if (busy)
        return act(REIGN__SLOT_DO_STAND, REIGN_SLOT_BUSY, last,
                   leading ? "running under a later leadership" : "another copy is running it");
    if (p->at_most_once && n > 0)
        return done(REIGN_SLOT_WAS_ABANDONED, REIGN_SLOT_ABANDONED, last,
                    "it started before (at most once)");
    if (n >= (size_t)p->retries + 1)
        return done(REIGN_SLOT_GAVE_UP, REIGN_SLOT_FAILED, last, "no attempts left");
    if (!leading)
        return act(REIGN__SLOT_DO_STAND, state, last, n ? "to retry it" : "to run it");
    return act(REIGN__SLOT_DO_START, state, last, n ? "retrying" : "first attempt");
}
