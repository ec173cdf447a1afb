/*
 * etcd_end.c - ends a lease from another process (etcd.h): the guardian revokes its dead
 * client's lease, so that etcd deletes the keys on it at once instead of when its TTL runs out.
 *
 * One POST of {"ID":"..."} to /v3/lease/revoke, each member in turn until one answers, the
 * whole list again until the deadline.  A lease that is already gone answers 404 "requested
 * lease not found": nothing left to do.  Blocking, with libcurl's easy interface: the guardian
 * does nothing else meanwhile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_internal.h"

typedef struct answer {
    char buf[512];
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

/* One member: 1 revoked, 0 already gone, -1 no answer (try another). */
static int revoke_at(const char *member, size_t mlen, int64_t lease, int64_t until)
{
    int64_t left = (until - reign__now_ns()) / REIGN__NS_PER_MS;
    if (left <= 0)
        return -1;
    CURL *h = reign__cu.curl_easy_init();
    if (!h)
        return -1;
    char url[512], body[64];
    snprintf(url, sizeof(url), "%.*s/v3/lease/revoke", (int)mlen, member);
    snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)lease);
    struct curl_slist *hd = reign__cu.curl_slist_append(NULL, "Content-Type: application/json");
    answer a = {.len = 0};
    reign__cu.curl_easy_setopt(h, CURLOPT_URL, url);
    reign__cu.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    reign__cu.curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    reign__cu.curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    reign__cu.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep);
    reign__cu.curl_easy_setopt(h, CURLOPT_WRITEDATA, &a);
    CURLcode cc = reign__cu.curl_easy_perform(h);
    long status = 0;
    reign__cu.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    reign__cu.curl_slist_free_all(hd);
    reign__cu.curl_easy_cleanup(h);
    if (cc != CURLE_OK)
        return -1;
    if (status == 200)
        return 1;
    if (status == 404 && strstr(a.buf, "lease not found"))
        return 0;
    return -1; /* no leader, timed out: another member may do */
}

int reign__etcd_end_lease(const char *members, int64_t lease, int timeout_ms, char *err,
                          size_t errlen)
{
    int rc = reign__eh_load(err, errlen);
    if (rc < 0)
        return rc;
    int64_t until = reign__now_ns() + (int64_t)timeout_ms * REIGN__NS_PER_MS;
    rc = -1;
    for (;;) {
        for (const char *m = members; *m && rc < 0;) {
            size_t l = strcspn(m, ",");
            if (l)
                rc = revoke_at(m, l, lease, until);
            m += l + (m[l] == ',');
        }
        if (rc >= 0 || (until - reign__now_ns()) / REIGN__NS_PER_MS <= 50)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (rc < 0) {
        reign__errf(err, errlen, "no etcd member at '%s' revoked lease %llx within %d ms", members,
                    (unsigned long long)lease, timeout_ms);
        return REIGN_ETIMEDOUT;
    }
    return rc;
}

int reign__etcd_end_prepare(char *err, size_t errlen)
{
    return reign__eh_load(err, errlen);
}
