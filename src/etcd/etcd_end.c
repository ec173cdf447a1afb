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
 * back by more.  The revoke is one call of {"ID":"..."} to /v3/lease/revoke (LeaseRevoke), each
 * member in turn until one answers, the whole list again until the deadline.  A lease that is
 * already gone answers 404 "requested lease not found": nothing left to do.  Blocking, one
 * connection per call (reign__eh_post(): gRPC over HTTP/2, libnghttp2 for http://, libcurl for
 * https:// with the client's TLS files; the gateway when the client said api=gateway): the
 * guardian does nothing else meanwhile.
 *
 * With a user (etcd's authentication on), the first POST logs in as the client did
 * (/v3/auth/authenticate, the user and password the guardian was told) and every POST carries
 * the token ("Authorization: TOKEN").  A member that does not know the token (one issued by
 * another member and not applied here yet, or expired) answers "invalid auth token": the
 * guardian logs in at that member and asks once more.  A login costs the member a password
 * check (bcrypt), which a dead client's successor waits for; a token kept from before the death
 * would expire while the guardian idles, and is none of its business to keep alive.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "etcd_internal.h"
#include "layout.h"

/* The writes' share of the time: at most this, and a quarter of the session's. */
#define WRITES_MS 1000

/* What every POST of one end takes: the TLS files, the user, and once logged in its token. */
typedef struct end_http {
    const reign__zk_access *access;
    char *token;  /* "Authorization: TOKEN", or NULL */
    bool refused; /* etcd refused the user's credentials: no POST will fare better */
    bool no_auth; /* etcd's authentication is off: no token to ask for */
} end_http;

/* The answer's text ("" when none). */
static const char *text(const reign__buf *a)
{
    return a->data ? a->data : "";
}

/* The client's api=gateway: the guardian speaks to the gateway as it did. */
static bool gateway(const end_http *x)
{
    return x->access->api && !strcmp(x->access->api, "gateway");
}

static void forget_token(end_http *x)
{
    if (x->token)
        explicit_bzero(x->token, strlen(x->token));
    reign__free(x->token);
    x->token = NULL;
}

/* Logs in at member: 0 with x->token, -1 without (no answer; or x->refused).  etcd with its
 * authentication turned off since the client logged in wants no token: none, and 0. */
static int login(end_http *x, const char *member, size_t mlen, int64_t until)
{
    reign__buf body, a;
    reign__buf_init(&body);
    reign__buf_init(&a);
    reign__ej_login(&body, x->access->user, x->access->password);
    char why[256];
    long status = body.oom ? 0
                           : reign__eh_post(&x->access->tls, gateway(x), member, mlen,
                                            "/v3/auth/authenticate", body.data, NULL, until, &a,
                                            why, sizeof(why));
    reign__buf_wipe(&body);
    cJSON *root = status == 200 && !a.oom ? cJSON_ParseWithLength(text(&a), a.len) : NULL;
    x->token = root ? reign__ej_token_header(root) : NULL;
    cJSON_Delete(root);
    x->refused = status && strstr(text(&a), "authentication failed");
    x->no_auth = status && strstr(text(&a), "authentication is not enabled");
    reign__buf_wipe(&a);
    return x->token || x->no_auth ? 0 : -1;
}

/* POSTs body to member's `api` before `until`, logged in first if there is a user: the HTTP
 * status, or 0 for no answer; the answer's body in a. */
static long post(end_http *x, const char *member, size_t mlen, const char *api, const char *body,
                 int64_t until, reign__buf *a)
{
    for (int tries = 0;; tries++) {
        if (x->access->user && !x->token && !x->no_auth && login(x, member, mlen, until) < 0)
            return 0;
        char why[256];
        reign__buf_reset(a);
        long status = reign__eh_post(&x->access->tls, gateway(x), member, mlen, api, body, x->token,
                                     until, a, why, sizeof(why));
        if (a->oom)
            return 0;
        /* A token this member does not know (yet), or one that expired: a login here, once. */
        if (tries || !x->token || status == 200 || !strstr(text(a), "auth token"))
            return status;
        forget_token(x);
    }
}

/* One member: 1 revoked, 0 already gone, -1 no answer (try another). */
static int revoke_at(end_http *x, const char *member, size_t mlen, int64_t lease, int64_t until)
{
    char body[64];
    snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)lease);
    reign__buf a;
    reign__buf_init(&a);
    long status = post(x, member, mlen, "/v3/lease/revoke", body, until, &a);
    int rc = status == 200 ? 1 : status == 404 && strstr(text(&a), "lease not found") ? 0 : -1;
    reign__buf_free(&a);
    return rc; /* -1: no leader, timed out: another member may do */
}

/* The txn of write w: put if at version 0 and the session's key exists.  NULL: no memory. */
static char *txn_body(const reign__zk_end *e, const reign__zk_end_write *w)
{
    const char *root = e->access.root ? e->access.root : "";
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
static int write_at(end_http *x, const char *member, size_t mlen, const char *body, int64_t until)
{
    reign__buf a;
    reign__buf_init(&a);
    long status = post(x, member, mlen, "/v3/kv/txn", body, until, &a);
    int rc = status != 200 || !strstr(text(&a), "\"header\"") ? 1
             : strstr(text(&a), "\"succeeded\":true")         ? 0
                                                              : REIGN_EBADVERSION;
    reign__buf_free(&a);
    return rc;
}

static void write_all(end_http *x, const char *members, reign__zk_end *e, int64_t until)
{
    for (size_t i = 0; i < e->n_writes; i++) {
        reign__zk_end_write *w = &e->writes[i];
        char *body = txn_body(e, w);
        if (!body) {
            w->rc = REIGN_ENOMEM;
            continue;
        }
        for (const char *m = members; *m && w->rc == 1 && !x->refused && reign__now_ns() < until;) {
            size_t l = strcspn(m, ",");
            if (l)
                w->rc = write_at(x, m, l, body, until);
            m += l + (m[l] == ',');
        }
        if (x->refused)
            w->rc = REIGN_EAUTH;
        reign__free(body);
    }
}

int reign__etcd_end_lease(const char *members, reign__zk_end *e, char *err, size_t errlen)
{
    int rc = reign__etcd_end_prepare(members, err, errlen);
    if (rc < 0)
        return rc;
    end_http x = {.access = &e->access};
    int64_t now = reign__now_ns();
    int64_t until = now + (int64_t)e->timeout_ms * REIGN__NS_PER_MS;
    int wms = e->timeout_ms / 4 < WRITES_MS ? e->timeout_ms / 4 : WRITES_MS;
    if (e->n_writes)
        write_all(&x, members, e, now + (int64_t)wms * REIGN__NS_PER_MS);
    rc = -1;
    for (;;) {
        for (const char *m = members; *m && rc < 0 && !x.refused;) {
            size_t l = strcspn(m, ",");
            if (l)
                rc = revoke_at(&x, m, l, e->session, until);
            m += l + (m[l] == ',');
        }
        if (rc >= 0 || x.refused || (until - reign__now_ns()) / REIGN__NS_PER_MS <= 50)
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    forget_token(&x);
    if (x.refused) {
        reign__errf(err, errlen, "etcd refused the credentials of user '%s'", e->access.user);
        return REIGN_EAUTH;
    }
    if (rc < 0) {
        reign__errf(err, errlen, "no etcd member at '%s' revoked lease %llx within %d ms", members,
                    (unsigned long long)e->session, e->timeout_ms);
        return REIGN_ETIMEDOUT;
    }
    return rc;
}

int reign__etcd_end_prepare(const char *members, char *err, size_t errlen)
{
    return reign__eh_load(!strncmp(members, "https://", 8), err, errlen);
}
