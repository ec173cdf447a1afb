/*
 * layout.c - the parsers and builders of what reign stores (layout.h): names of nodes, paths,
 * and the records that are not generic (record.c has the generic text form).  Pure: no I/O,
 * unit-tested through tests/tasks/test_tasks_unit.c, tests/unit and the fuzzers.
 */
#include "layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <reign/tasks.h> /* reign_task_info, filled by reign__tasks_status_parse() */

/* ---- names ----------------------------------------------------------------------------- */

bool reign__segment_ok(const char *s, size_t n)
{
    if (n == 0 || n > REIGN__SEGMENT_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '-';
        if (!ok)
            return false;
    }
    return true;
}

int reign__name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n <= REIGN_NAME_MAX && reign__segment_ok(name, n) ? 0 : REIGN_ENAME;
}

bool reign__member_node_parse(const char *name, char *guid, uint64_t *seq)
{
    /* m_ + 16 hex + _ + 10 digits */
    const size_t hex = 2 * REIGN__GROUP_GUID_BYTES;
    if (strlen(name) != 2 + hex + 1 + 10 || strncmp(name, REIGN__N_MEMBER, 2) ||
        name[2 + hex] != '_')
        return false;
    for (size_t i = 0; i < hex; i++) {
        char ch = name[2 + i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
    }
    uint64_t n = 0;
    for (const char *p = name + 3 + hex; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        n = n * 10 + (uint64_t)(*p - '0');
    }
    if (guid) {
        memcpy(guid, name + 2, hex);
        guid[hex] = '\0';
    }
    if (seq)
        *seq = n;
    return true;
}

/* ---- election nodes ---- */

char *reign__election_path(const char *name, const char *suffix)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s%s", REIGN__ELECTION_DIR, name, suffix ? suffix : "");
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

void reign__election_id_tag(char out[9], const char *id)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 16777619u;
    snprintf(out, 9, "%08x", h);
}

int reign__election_guid(char out[2 * REIGN__GUID_BYTES + 1], const char *id)
{
    reign__election_id_tag(out, id);
    return reign__random_hex(out + 8, REIGN__GUID_BYTES / 2);
}

bool reign__qnode_parse(const char *name, reign__qnode *out)
{
    /* n_ + 16 hex + _ + [p + 4 digits + _] + 10 digits */
    size_t len = strlen(name), base = 2 + 2 * REIGN__GUID_BYTES + 1;
    if ((len != base + 10 && len != base + 6 + 10) || name[0] != 'n' || name[1] != '_' ||
        name[2 + 2 * REIGN__GUID_BYTES] != '_')
        return false;
    unsigned prio = 0;
    if (len == base + 6 + 10) {
        if (name[base] != 'p' || name[base + 5] != '_')
            return false;
        for (size_t i = base + 1; i < base + 5; i++) {
            if (name[i] < '0' || name[i] > '9')
                return false;
            prio = prio * 10 + (unsigned)(name[i] - '0');
        }
        if (prio == 0)
            return false; /* priority 0 has the short name: one name per node */
        base += 6;
    }
    for (int i = 0; i < 2 * REIGN__GUID_BYTES; i++) {
        char ch = name[2 + i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
            return false;
        out->guid[i] = ch;
    }
    out->guid[2 * REIGN__GUID_BYTES] = '\0';
    uint64_t seq = 0;
    for (const char *p = name + base; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        seq = seq * 10 + (uint64_t)(*p - '0');
    }
    out->name = name;
    out->prio = prio;
    out->seq = seq;
    return true;
}

bool reign__qnode_before(const reign__qnode *a, const reign__qnode *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

bool reign__election_node_ok(const char *name)
{
    reign__qnode q;
    return !strcmp(name, REIGN__N_LOCK) || reign__qnode_parse(name, &q);
}

static int qnode_cmp(const void *a, const void *b)
{
    const reign__qnode *x = a, *y = b;
    return reign__qnode_before(x, y) ? -1 : reign__qnode_before(y, x);
}

void reign__qnode_sort(reign__qnode *v, size_t n)
{
    qsort(v, n, sizeof(*v), qnode_cmp);
}

int reign__tasks_queue_check(const char *queue)
{
    if (!queue || strlen(queue) > REIGN_TASKS_QUEUE_MAX || !reign__segment_ok(queue, strlen(queue)))
        return REIGN_ENAME;
    return 0;
}

int reign__tasks_worker_check(const char *id)
{
    if (!id || strlen(id) > REIGN_TASKS_WORKER_MAX || !reign__segment_ok(id, strlen(id)))
        return REIGN_ENAME;
    return 0;
}

static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return false;
    return true;
}

bool reign__task_name_parse(const char *name, char *guid, uint64_t *seq)
{
    const size_t g = 2 * REIGN__TASKS_GUID_BYTES;
    if (!name || strlen(name) != 2 + g + 1 + 10 || strncmp(name, REIGN__N_TASK, 2) ||
        name[2 + g] != '_' || !all_of(name + 2, g, "0123456789abcdef") ||
        !all_of(name + 3 + g, 10, "0123456789"))
        return false;
    if (guid) {
        memcpy(guid, name + 2, g);
        guid[g] = '\0';
    }
    if (seq)
        *seq = strtoull(name + 3 + g, NULL, 10);
    return true;
}

int reign__task_name_cmp(const char *a, const char *b)
{
    uint64_t x = 0, y = 0;
    reign__task_name_parse(a, NULL, &x);
    reign__task_name_parse(b, NULL, &y);
    return x < y ? -1 : x > y ? 1 : strcmp(a, b);
}

static int name_cmp(const void *a, const void *b)
{
    return reign__task_name_cmp(*(char *const *)a, *(char *const *)b);
}

void reign__tasks_sort_names(char **names, size_t n)
{
    if (n > 1)
        qsort(names, n, sizeof(*names), name_cmp);
}

/* ---- paths ----------------------------------------------------------------------------- */

char *reign__strf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? reign__malloc((size_t)n + 1) : NULL;
    if (s) {
        va_start(ap, fmt);
        vsnprintf(s, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return s;
}

char *reign__value_path(const char *key)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s/%s", REIGN__VALUE_DIR, key);
    if (b.oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

char *reign__tasks_path(const char *queue, const char *a, const char *b, const char *c)
{
    return reign__strf("%s/%s%s%s%s%s%s%s", REIGN__TASKS_DIR, queue, a ? "/" : "", a ? a : "",
                       a && b ? "/" : "", a && b ? b : "", a && b && c ? "/" : "",
                       a && b && c ? c : "");
}

char *reign__tasks_bucket_path(const char *queue, const char *guid)
{
    return reign__strf("%s/%s/" REIGN__N_DATA "/%.*s", REIGN__TASKS_DIR, queue,
                       REIGN__TASKS_TAG_DIGITS, guid);
}

char *reign__tasks_guid_payload_path(const char *queue, const char *guid)
{
    return reign__strf("%s/%s/" REIGN__N_DATA "/%.*s/%s", REIGN__TASKS_DIR, queue,
                       REIGN__TASKS_TAG_DIGITS, guid, guid);
}

char *reign__tasks_payload_path(const char *queue, const char *task)
{
    char guid[2 * REIGN__TASKS_GUID_BYTES + 1];
    if (!reign__task_name_parse(task, guid, NULL))
        return NULL;
    return reign__tasks_guid_payload_path(queue, guid);
}

char *reign__tasks_group_name(const char *queue)
{
    return reign__strf("%s%s", REIGN__TASKS_PREFIX, queue);
}

/* ---- records --------------------------------------------------------------------------- */

size_t reign__tasks_limits_build(char *buf, int concurrency, int prefetch)
{
    int n = snprintf(buf, REIGN__TASKS_LIMITS_MAX,
                     REIGN__K_CONCURRENCY "=%d\n" REIGN__K_PREFETCH "=%d", concurrency, prefetch);
    return n > 0 && n < REIGN__TASKS_LIMITS_MAX ? (size_t)n : 0;
}

/* The value of "KEY=N" on a line of its own in buf[0..len), or -1 (absent or not a
 * number).  A number of any length is read; one above LIMITS_SATURATE is LIMITS_SATURATE, out
 * of every range the caller accepts, like any other number too large. */
#define LIMITS_SATURATE 10000000L
static long limits_number(const char *buf, size_t len, const char *key)
{
    size_t k = strlen(key);
    for (size_t i = 0; i < len;) {
        const char *line = buf + i, *nl = memchr(line, '\n', len - i);
        size_t n = nl ? (size_t)(nl - line) : len - i;
        if (n > k && !memcmp(line, key, k) && line[k] == '=') {
            long v = 0;
            size_t j = k + 1;
            for (; j < n && line[j] >= '0' && line[j] <= '9'; j++)
                v = v < LIMITS_SATURATE ? v * 10 + (line[j] - '0') : LIMITS_SATURATE;
            return j == n && j > k + 1 ? v : -1;
        }
        i += n + 1;
    }
    return -1;
}

void reign__tasks_limits_parse(const void *data, size_t len, size_t *concurrency, size_t *prefetch)
{
    const char *buf = data ? data : "";
    long c = limits_number(buf, data ? len : 0, REIGN__K_CONCURRENCY);
    long p = limits_number(buf, data ? len : 0, REIGN__K_PREFETCH);
    if (c < 1 || c > 100000)
        c = 1;
    if (p < 0)
        p = 2 * c;
    else if (p < c || p > 400000)
        p = c;
    *concurrency = (size_t)c;
    *prefetch = (size_t)p;
}

int reign__tasks_status_build(reign__buf *out, const char *worker, int exit_code, int signal,
                              const void *output, size_t len)
{
    char ex[16], sig[16];
    snprintf(ex, sizeof(ex), "%d", exit_code);
    snprintf(sig, sizeof(sig), "%d", signal);
    const char *kv[] = {REIGN__K_WORKER, worker, REIGN__K_EXIT, ex, REIGN__K_SIGNAL, sig};
    if (len > REIGN_TASK_OUTPUT_MAX)
        len = REIGN_TASK_OUTPUT_MAX;
    return reign__record_build(out, kv, 6, output, len);
}

int reign__tasks_status_parse(const char *value, size_t len, int64_t done_ms, reign__record *rec,
                              struct reign_task_info *info)
{
    int rc = reign__record_parse(value, len, rec);
    if (rc < 0)
        return rc;
    uint64_t ex = 0, sig = 0;
    const char *ex_s = reign__record_get(rec, REIGN__K_EXIT);
    if (!reign__record_get(rec, REIGN__K_WORKER) || !ex_s ||
        reign__record_get_u64(rec, REIGN__K_SIGNAL, &sig) < 0 || sig > 255) {
        reign__record_clear(rec);
        return REIGN_EFOREIGN;
    }
    char *end;
    long e = strtol(ex_s, &end, 10);
    if (*end || end == ex_s || e < -1 || e > 255) {
        reign__record_clear(rec);
        return REIGN_EFOREIGN;
    }
    (void)ex;
    info->state = REIGN_TASK_DONE;
    info->worker = reign__record_get(rec, REIGN__K_WORKER);
    info->exit_code = (int)e;
    info->signal = (int)sig;
    info->output = rec->payload;
    info->output_len = rec->payload_len;
    info->done_ms = done_ms;
    return 0;
}
