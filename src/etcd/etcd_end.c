/*
 * etcd_end.c - ends a lease from another process (etcd.h): the guardian writes the end of each
 * leadership's history record its dead client held, then revokes the client's lease, so that
 * etcd deletes the keys on it at once instead of when its TTL runs out.
 *
 * A write is one POST to /v3/kv/txn: the key (prefix + path) put, with its lease kept, if its
 * etcd version is 1 (ZooKeeper's version 0: one put made it, nobody wrote it since; etcd_txn.c)
 * and the client's session key (PREFIX/reign/./LEASE, on the lease) still exists, as a write of
 * the session would require on ZooKeeper.  The writes come first, within a small part of the
 * time (WRITES_MS), each member in turn until one answers: a failed one never holds the revoke
 * back by more.  The revoke is one POST of {"ID":"..."} to /v3/lease/revoke, each member in
 * turn until one answers, the whole list again until the deadline.  A lease that is already
 * gone answers 404 "requested lease not found": nothing left to do.  Blocking, with libcurl's
 * easy interface, one handle for all (one connection when the member answers): the guardian
 * does nothing else meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_internal.h"
#include "layout.h"

/* The writes' share of the time: at most this, and a quarter of the session's. */
#define WRITES_MS 1000

typedef struct answer {
    char buf[1024];
    size_t len;
} answer;

static size_t keep(char *p, size_t size, size_t n, void *userp)
{
    answer *a = userp;
    size_t take = size * n;
    if (take > sizeof(a->buf) - 1 - a->len)
        take = sizeof(a->buf) - 1 - a->len;
    memcpy(a->buf + a->len, p, take);
    a->len += take;
    a->buf[a->len] = '\0';
    return size * n;
}

/* POSTs body to member's `api` before `until`: the HTTP status, or 0 for no answer. */
static long post(CURL *h, const char *member, size_t mlen, const char *api, const char *body,
                 int64_t until, answer *a)
{
    int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
    if (left <= 0)
        return 0;
    char url[512];
    snprintf(url, sizeof(url), "%.*s%s", (int)mlen, member, api);
    struct curl_slist *hd = reign__cu.curl_slist_append(NULL, "Content-Type: application/json");
    a->len = 0;
    a->buf[0] = '\0';
    reign__cu.curl_easy_setopt(h, CURLOPT_URL, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    reign__cu.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    reign__cu.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
    CURLcode cc = reign__cu.curl_easy_perform(h);
    long status = 0;
    reign__cu.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    reign__cu.curl_slist_free_all(hd);
    return cc == CURLE_OK ? status : 0;
}

/* One member: 1 revoked, 0 already gone, -1 no answer (try another). */
static int revoke_at(CURL *h, const char *member, size_t mlen, int64_t lease, int64_t until)
{
    char body[64];
    snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)lease);
    answer a;
    long status = post(h, member, mlen, "/v3/lease/revoke", body, until, &a);
    if (status == 200)
        return 1;
    if (status == 404 && strstr(a.buf, "lease not found"))
        return 0;
    return -1; /* no leader, timed out: another member may do */
}

/* The txn of write w: put if at version 0 and the session's key exists.  NULL: no memory. */
static char *txn_body(const reign__zk_end *e, const reign__zk_end_write *w)
{
    const char *root = e->root ? e->root : "";
    reign__buf key, skey, b;
    reign__buf_init(&key);
    reign__buf_init(&skey);
    reign__buf_init(&b);
    reign__buf_printf(&key, "%s%s", root, w->path);
    reign__buf_printf(&skey, "%s%s/./%llx", root, REIGN__ZK_ROOT, (unsigned long long)e->session);
    reign__buf_puts(&b, "{\"compare\":[{\"key\":");
    reign__ej_b64(&b, key.data, key.len);
    reign__buf_puts(&b, ",\"target\":\"VERSION\",\"result\":\"EQUAL\",\"version\":\"1\"},"
                        "{\"key\":");
    reign__ej_b64(&b, skey.data, skey.len);
    reign__buf_puts(&b, ",\"target\":\"CREATE\",\"result\":\"GREATER\",\"create_revision\":\"0\"}],"
                        "\"success\":[{\"request_put\":{\"key\":");
    reign__ej_b64(&b, key.data, key.len);
    reign__buf_puts(&b, ",\"value\":");
    reign__ej_b64(&b, w->data, w->len);
    reign__buf_puts(&b, ",\"ignore_lease\":true}}]}");
    bool oom = key.oom || skey.oom || b.oom;
    reign__buf_free(&key);
    reign__buf_free(&skey);
    if (oom) {
        reign__buf_free(&b);
        return NULL;
    }
    return b.data;
}

/* Write w at one member: 0 written, REIGN_EBADVERSION (not at version 0, or the lease gone),
 * or 1 (no answer: try another). */
static int write_at(CURL *h, const char *member, size_t mlen, const char *body, int64_t until)
{
    answer a;
    long status = post(h, member, mlen, "/v3/kv/txn", body, until, &a);
    if (status != 200 || !strstr(a.buf, "\"header\""))
        return 1;
    return strstr(a.buf, "\"succeeded\":true") ? 0 : REIGN_EBADVERSION;
}

static void write_all(CURL *h, const char *members, reign__zk_end *e, int64_t until)
{
    for (size_t i = 0; i < e->n_writes; i++) {
        reign__zk_end_write *w = &e->writes[i];
        char *body = txn_body(e, w);
        if (!body) {
            w->rc = REIGN_ENOMEM;
            continue;
        }
        for (const char *m = members; *m && w->rc == 1 && reign__now_ns() < until;) {
            size_t l = strcspn(m, ",");
            if (l)
                w->rc = write_at(h, m, l, body, until);
            m += l + (m[l] == ',');
        }
        reign__free(body);
    }
}

int reign__etcd_end_lease(const char *members, reign__zk_end *e, char *err, size_t errlen)
{
    int rc = reign__eh_load(err, errlen);
    if (rc < 0)
        return rc;
    CURL *h = reign__cu.curl_easy_init();
    if (!h) {
        reign__errf(err, errlen, "curl_easy_init failed");
        return REIGN_ENOMEM;
    }
    int64_t now = reign__now_ns();
    int64_t until = now + (int64_t)e->timeout_ms * REIGN__NS_PER_MS;
    int wms = e->timeout_ms / 4 < WRITES_MS ? e->timeout_ms / 4 : WRITES_MS;
    if (e->n_writes)
        write_all(h, members, e, now + (int64_t)wms * REIGN__NS_PER_MS);
    rc = -1;
    for (;;) {
        for (const char *m = members; *m && rc < 0;) {
            size_t l = strcspn(m, ",");
            if (l)
                rc = revoke_at(h, m, l, e->session, until);
            m += l + (m[l] == ',');
        }
        if (rc >= 0 || (until - reign__now_ns()) / REIGN__NS_PER_MS <= 50)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    reign__cu.curl_easy_cleanup(h);
    if (rc < 0) {
        reign__errf(err, errlen, "no etcd member at '%s' revoked lease %llx within %d ms", members,
                    (unsigned long long)e->session, e->timeout_ms);
        return REIGN_ETIMEDOUT;
    }
    return rc;
}

int reign__etcd_end_prepare(char *err, size_t errlen)
{
    return reign__eh_load(err, errlen);
}
