/*
 * etcd.c - the etcd backend's handle (etcd.h): the lease that is the session, its keepalives,
 * the states the client hears, and close.
 *
 * The session is a lease granted for the session timeout (whole seconds, at least etcd's
 * minimum, the TTL granted is the one used).  It is kept alive by the client's own loop, one
 * keepalive every third of the TTL: a loop that stops turning lets its lease, and its
 * leadership, go.  What the client counts on is the send time of the last keepalive etcd
 * answered with a TTL (the lease cannot end before that time + TTL); a keepalive answered
 * without a TTL means the lease is gone, which is the session expired: a new lease is granted,
 * and nothing of the old one is ever delivered as current.  A keepalive or a request that gets
 * no answer suspends the session; the next keepalive answered reconnects it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "etcd_internal.h"
#include "layout.h"

#define MIN_TTL_S 2

static void grant(reign__etcd *e);
static void reauth(reign__etcd *e);
static void mark_session(reign__etcd *e, int64_t id);
static void session_ready(reign__etcd *e, int64_t id);
static void keepalive(reign__etcd *e);

static void tell(reign__etcd *e, reign__zk_state st)
{
    if (e->cfg.on_state)
        e->cfg.on_state(e->cfg.state_arg, st);
}

static void trouble(reign__etcd *e, size_t m, const char *why)
{
    /* A member that stopped answering (paused, cut off) keeps watch streams open and silent:
     * the streams move too. */
    reign__ew_leave_member(e, m);
    if (!e->connected)
        return;
    e->connected = false;
    reign__log(e->log, REIGN_LOG_NOTICE, "etcd: %s; lease %llx suspended", why,
               (unsigned long long)e->lease);
    tell(e, REIGN__ZK_SUSPENDED);
    /* Prove the lease again as soon as another member answers. */
    if (!e->ka && e->lease)
        keepalive(e);
}

static void lease_doubt(reign__etcd *e)
{
    if (!e->ka && e->lease)
        keepalive(e);
}

static int ka_timeout_ms(const reign__etcd *e)
{
    /* A member without a leader holds a keepalive for 7 s: give up well inside the lease. */
    int t = e->ttl_s * 1000 / 4;
    return t < 300 ? 300 : t;
}

static void ka_timer_cb(reign__timer *t, void *arg)
{
    (void)t;
    reign__etcd *e = arg;
    if (e->closed)
        return;
    if (e->lease)
        keepalive(e);
    else if (e->marking && !e->grant)
        mark_session(e, e->marking);
    else if (!e->grant)
        grant(e);
}

static void schedule(reign__etcd *e, int64_t after_ms)
{
    reign__timer_start(e->cfg.timers, &e->ka_timer, reign__now_ns() + after_ms * REIGN__NS_PER_MS);
}

/* The lease is gone: everything of the session ends, a new one starts. */
static void expired(reign__etcd *e, const char *why)
{
    reign__log(e->log, REIGN_LOG_WARN, "etcd: lease %llx %s; starting a new session",
               (unsigned long long)e->lease, why);
    e->lease = 0;
    e->session_key[0] = '\0';
    e->connected = false;
    e->last_ack_ns = 0;
    e->gen++;
    reign__ew_drop_all(e);
    reign__eo_fail_all(e, REIGN_ESESSION, true);
    tell(e, REIGN__ZK_EXPIRED);
    if (!e->closed && !e->grant)
        grant(e);
}

static void on_keepalive(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    if (reign__eh_out(q)) /* a part of the answer: wait for its end */
        return;
    e->ka = NULL;
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    int64_t sent = q->sent_ns;
    size_t m = q->member;
    reign__eh_drop(q);
    if (e->closed || !e->lease) {
        cJSON_Delete(root);
        return;
    }
    const cJSON *res = root ? cJSON_GetObjectItemCaseSensitive(root, "result") : NULL;
    if (!root || !res) {
        if (root) { /* an error line on the stream shape */
            int code = 0;
            const char *err = reign__ej_error(root, &code);
            snprintf(msg, sizeof(msg), "%s", err ? err : "no result");
            rc = REIGN_ECONNLOSS;
        }
        cJSON_Delete(root);
        reign__log(e->log, REIGN_LOG_INFO, "etcd: keepalive: %s", msg);
        if (rc == REIGN_ESESSION) {
            expired(e, "is gone");
            return;
        }
        if (rc == REIGN_EAUTH && e->cfg.user) {
            reauth(e); /* then the keepalive again */
            return;
        }
        reign__eh_next_member(e, m);
        trouble(e, m, "keepalive unanswered");
        int64_t gap = e->ttl_s * 1000 / 10;
        schedule(e, gap < 100 ? 100 : gap);
        return;
    }
    int64_t ttl = reign__ej_i64(res, "TTL");
    cJSON_Delete(root);
    if (ttl <= 0) {
        expired(e, "expired");
        return;
    }
    if (sent > e->last_ack_ns)
        e->last_ack_ns = sent;
    if (!e->connected) {
        e->connected = true;
        reign__log(e->log, REIGN_LOG_INFO, "etcd: lease %llx reconnected",
                   (unsigned long long)e->lease);
        tell(e, REIGN__ZK_RECONNECTED);
        reign__eo_resume(e);
    }
    schedule(e, e->ttl_s * 1000 / 3);
}

static void keepalive(reign__etcd *e)
{
    if (e->ka || e->closed)
        return;
    ereq *q = reign__eh_new(e, on_keepalive, e);
    if (!q) {
        schedule(e, 100);
        return;
    }
    reign__buf_printf(&q->body, "{\"ID\":\"%lld\"}", (long long)e->lease);
    e->ka = q;
    if (reign__eh_send(e, q, "/v3/lease/keepalive", ka_timeout_ms(e)) < 0) {
        e->ka = NULL;
        reign__eh_drop(q);
        schedule(e, 100);
    }
}

/* A refusal by etcd's access control: true when handled here (an expired token asked for again,
 * or the session given up, errmsg saying why and what to do: no try will fare better). */
static bool refused(reign__etcd *e, int rc, const char *msg)
{
    if (rc == REIGN_EAUTH && e->cfg.user && e->token_header) {
        reauth(e); /* the token expired: a new one, then the session again */
        return true;
    }
    if (rc == REIGN_EAUTH && !e->cfg.user)
        reign__errf(e->errmsg, sizeof(e->errmsg),
                    "%s (etcd has authentication on: give a user in the URI)", msg);
    else if (rc == REIGN_EACCES)
        reign__errf(e->errmsg, sizeof(e->errmsg),
                    "%s (%s%s%s needs a role that may read and write the keys under '%s/')", msg,
                    e->cfg.user ? "user '" : "the client", e->cfg.user ? e->cfg.user : "",
                    e->cfg.user ? "'" : "", e->prefix);
    else if (rc != REIGN_EAUTH)
        return false;
    else
        reign__strlcpy(e->errmsg, msg, sizeof(e->errmsg));
    reign__log(e->log, REIGN_LOG_ERROR, "etcd: %s", e->errmsg);
    tell(e, REIGN__ZK_FATAL);
    return true;
}

/* A member's TLS refused us (or we it): true when every member has, one after the other, before
 * the client's first session, and the client is given up, errmsg saying why (no try with the
 * same files fares better).  Once a session was had, the same files worked: a certificate
 * being changed on the members is waited out, as an unreachable cluster is. */
static bool tls_refused(reign__etcd *e, bool refused_now, const char *msg)
{
    if (!refused_now || e->had_session) {
        e->tls_refusals = 0;
        return false;
    }
    if (++e->tls_refusals < e->n_members)
        return false;
    reign__errf(e->errmsg, sizeof(e->errmsg),
                "%s (TLS with %s: check cacert=, cert= and key=, and that the members speak TLS)",
                msg, e->n_members > 1 ? "every member" : "the member");
    reign__log(e->log, REIGN_LOG_ERROR, "etcd: %s", e->errmsg);
    tell(e, REIGN__ZK_FATAL);
    return true;
}

static void on_grant(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    e->grant = NULL;
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    int64_t sent = q->sent_ns;
    size_t m = q->member;
    bool tls_no = q->tls_refused;
    reign__eh_drop(q);
    if (e->closed) {
        cJSON_Delete(root);
        return;
    }
    int64_t id = root ? reign__ej_i64(root, "ID") : 0, ttl = root ? reign__ej_i64(root, "TTL") : 0;
    cJSON_Delete(root);
    if (!id || ttl <= 0) {
        if (root)
            snprintf(msg, sizeof(msg), "a grant without a lease");
        snprintf(e->errmsg, sizeof(e->errmsg), "%s", msg);
        reign__log(e->log, REIGN_LOG_INFO, "etcd: lease grant: %s", msg);
        if (refused(e, rc, msg) || tls_refused(e, tls_no, msg))
            return;
        reign__eh_next_member(e, m);
        schedule(e, e->n_members > 1 ? 50 : 250);
        return;
    }
    e->tls_refusals = 0;
    e->ttl_s = (int)ttl;
    e->last_ack_ns = sent;
    mark_session(e, id);
}

/* The session's key is on its lease: every write compares it is there (etcd_txn.c). */
static void on_marked(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    e->grant = NULL;
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    size_t m = q->member;
    reign__eh_drop(q);
    cJSON_Delete(root);
    int64_t id = e->marking;
    e->marking = 0;
    if (e->closed)
        return;
    if (!root) {
        reign__log(e->log, REIGN_LOG_INFO, "etcd: the session's key: %s", msg);
        if (rc == REIGN_ESESSION) { /* the lease went meanwhile: another */
            grant(e);
            return;
        }
        /* etcd 3.4 grants leases to anyone: the first write is where its users say no. */
        snprintf(e->errmsg, sizeof(e->errmsg), "%s", msg);
        if (refused(e, rc, msg))
            return;
        reign__eh_next_member(e, m);
        e->marking = id;
        schedule(e, e->n_members > 1 ? 50 : 250);
        return;
    }
    session_ready(e, id);
}

static void mark_session(reign__etcd *e, int64_t id)
{
    ereq *q = reign__eh_new(e, on_marked, e);
    snprintf(e->session_key, sizeof(e->session_key), "%s%s/./%llx", e->prefix, REIGN__ZK_ROOT,
             (unsigned long long)id);
    e->marking = id;
    if (!q) {
        schedule(e, 100);
        return;
    }
    reign__buf_puts(&q->body, "{\"key\":");
    reign__ej_b64(&q->body, e->session_key, strlen(e->session_key));
    reign__buf_printf(&q->body, ",\"value\":\"\",\"lease\":\"%lld\"}", (long long)id);
    e->grant = q;
    if (reign__eh_send(e, q, "/v3/kv/put", e->cfg.op_timeout_ms) < 0) {
        e->grant = NULL;
        reign__eh_drop(q);
        schedule(e, 100);
    }
}

static void session_ready(reign__etcd *e, int64_t id)
{
    e->had_session = true;
    e->lease = id;
    e->connected = true;
    reign__log(e->log, REIGN_LOG_INFO, "etcd: lease %llx granted, TTL %d s", (unsigned long long)id,
               e->ttl_s);
    tell(e, REIGN__ZK_CONNECTED);
    reign__eo_resume(e);
    schedule(e, e->ttl_s * 1000 / 3);
}

/* ---- users: etcd's authentication ------------------------------------------------------------
 * With a user in the URI, the client asks /v3/auth/authenticate for a token before its first
 * request and sends it with every one ("Authorization: TOKEN"); a token that expired
 * ("invalid auth token") is asked for again, and the request that met it tried again.  The
 * password is kept only in the configuration, never logged. */

/* A login's request, its body (the password) and answer (the token) wiped first. */
static void drop_login(ereq *q)
{
    if (q->body.data)
        explicit_bzero(q->body.data, q->body.len);
    if (q->resp.data)
        explicit_bzero(q->resp.data, q->resp.len);
    reign__eh_drop(q);
}

static void on_auth(ereq *q, void *arg)
{
    reign__etcd *e = arg;
    int rc;
    char msg[256];
    e->auth = NULL;
    cJSON *root = reign__eh_answer(q, &rc, msg, sizeof(msg));
    size_t m = q->member;
    bool tls_no = q->tls_refused;
    drop_login(q);
    const cJSON *tok = root ? cJSON_GetObjectItemCaseSensitive(root, "token") : NULL;
    if (e->closed || !cJSON_IsString(tok) || !tok->valuestring) {
        cJSON_Delete(root);
        if (e->closed)
            return;
        if (rc == REIGN_EAUTH || rc == REIGN_EBACKEND || root) {
            if (rc == REIGN_EAUTH)
                reign__errf(e->errmsg, sizeof(e->errmsg),
                            "etcd refused the credentials of user '%s'", e->cfg.user);
            else
                reign__errf(e->errmsg, sizeof(e->errmsg), "etcd did not log user '%s' in: %s",
                            e->cfg.user, root ? "no token in its answer" : msg);
            reign__log(e->log, REIGN_LOG_ERROR, "etcd: %s", e->errmsg);
            tell(e, REIGN__ZK_FATAL);
            return;
        }
        if (tls_refused(e, tls_no, msg))
            return;
        reign__eh_next_member(e, m);
        schedule(e, e->n_members > 1 ? 50 : 250);
        return;
    }
    e->tls_refusals = 0;
    char *h = reign__ej_token_header(root);
    if (h) { /* else no memory: grant() logs in again */
        reign__log(e->log, REIGN_LOG_INFO, "etcd: logged in as user '%s'", e->cfg.user);
        if (e->token_header) {
            explicit_bzero(e->token_header, strlen(e->token_header));
            reign__free(e->token_header);
        }
        e->token_header = h;
    }
    cJSON_Delete(root);
    if (!e->lease && !e->grant)
        grant(e);
    else if (e->lease)
        keepalive(e);
}

static void authenticate(reign__etcd *e)
{
    if (e->auth || e->closed)
        return;
    ereq *q = reign__eh_new(e, on_auth, e);
    if (!q) {
        schedule(e, 100);
        return;
    }
    reign__ej_login(&q->body, e->cfg.user, e->cfg.password);
    e->auth = q;
    if (reign__eh_send(e, q, "/v3/auth/authenticate", e->cfg.op_timeout_ms) < 0) {
        e->auth = NULL;
        drop_login(q);
        schedule(e, 100);
    }
}

/* A request met an expired token: a new one, unless one is on its way. */
static void reauth(reign__etcd *e)
{
    if (!e->cfg.user)
        return;
    if (e->token_header) {
        explicit_bzero(e->token_header, strlen(e->token_header));
        reign__free(e->token_header);
        e->token_header = NULL;
    }
    authenticate(e);
}

static void grant(reign__etcd *e)
{
    if (e->cfg.user && !e->token_header) {
        authenticate(e);
        return;
    }
    ereq *q = reign__eh_new(e, on_grant, e);
    if (!q) {
        schedule(e, 100);
        return;
    }
    int ttl = (e->cfg.session_timeout_ms + 999) / 1000;
    reign__buf_printf(&q->body, "{\"TTL\":\"%d\"}", ttl < MIN_TTL_S ? MIN_TTL_S : ttl);
    e->grant = q;
    if (reign__eh_send(e, q, "/v3/lease/grant", e->cfg.op_timeout_ms) < 0) {
        e->grant = NULL;
        reign__eh_drop(q);
        schedule(e, 100);
    }
}

/* "h:p,h:p" and the scheme into "http://h:p" each. */
static int read_members(reign__etcd *e, const char *s, char *err, size_t errlen)
{
    const char *scheme = e->cfg.tls ? "https://" : "http://";
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    e->members = reign__calloc(n, sizeof(char *));
    if (!e->members)
        return REIGN_ENOMEM;
    while (*s) {
        size_t l = strcspn(s, ",");
        if (l) {
            size_t need = strlen(scheme) + l + 1;
            char *m = reign__malloc(need);
            if (!m)
                return REIGN_ENOMEM;
            snprintf(m, need, "%s%.*s", scheme, (int)l, s);
            e->members[e->n_members++] = m;
        }
        s += l + (s[l] == ',');
    }
    if (!e->n_members) {
        reign__errf(err, errlen, "an etcd:// URI needs at least one host:port");
        return REIGN_EURI;
    }
    return 0;
}

int reign__etcd_new(reign__etcd **ret, const reign__zk_config *cfg, char *err, size_t errlen)
{
    *ret = NULL;
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    if (!e)
        return REIGN_ENOMEM;
    e->cfg = *cfg;
    /* The strings of cfg are the caller's until this returns: copies. */
    e->cfg.etcd_members = e->cfg.etcd_prefix = e->cfg.hosts = NULL;
    const reign__zk_tls *tf = &cfg->tls_files;
    e->user = cfg->user ? reign__strdup(cfg->user) : NULL;
    e->password = cfg->password ? reign__strdup(cfg->password) : NULL;
    e->tls_ca = tf->ca ? reign__strdup(tf->ca) : NULL;
    e->tls_cert = tf->cert ? reign__strdup(tf->cert) : NULL;
    e->tls_key = tf->key ? reign__strdup(tf->key) : NULL;
    e->cfg.user = e->user;
    e->cfg.password = e->password;
    e->cfg.tls_files = (reign__zk_tls){e->tls_ca, e->tls_cert, e->tls_key};
    e->log = cfg->log;
    e->epfd = -1;
    e->waiters_tail = &e->waiters;
    e->gen = 1;
    reign__timer_init(&e->ka_timer, ka_timer_cb, e);
    /* What the layers below tell this one. */
    e->trouble = trouble;
    e->lease_doubt = lease_doubt;
    e->reauth = reauth;
    e->caught_up = reign__eo_release;
    reign__eo_init(e);
    reign__ew_init(e);
    const char *pre = cfg->etcd_prefix ? cfg->etcd_prefix : "";
    e->prefix = reign__strdup(!strcmp(pre, "/") ? "" : pre);
    bool copied = e->prefix && (!cfg->user || e->user) && (!cfg->password || e->password) &&
                  (!tf->ca || e->tls_ca) && (!tf->cert || e->tls_cert) && (!tf->key || e->tls_key);
    int rc = copied ? read_members(e, cfg->etcd_members, err, errlen) : REIGN_ENOMEM;
    if (rc == 0) {
        e->prefix_len = strlen(e->prefix);
        rc = reign__eh_init(e, err, errlen);
    }
    if (rc < 0) {
        reign__etcd_free(e);
        return rc;
    }
    grant(e);
    *ret = e;
    return 0;
}

void reign__etcd_dispatch(reign__etcd *e)
{
    reign__eh_pump(e);
}

/* Revokes the lease, waiting up to a second: its keys go at once, as a closed ZooKeeper
 * session's ephemeral nodes do. */
static void revoke_lease(reign__etcd *e)
{
    if (!e->lease || !e->n_members)
        return;
    char body[64], why[256];
    snprintf(body, sizeof(body), "{\"ID\":\"%lld\"}", (long long)e->lease);
    const char *m = e->members[e->cur];
    long status = reign__eh_post(&e->cfg.tls_files, e->cfg.etcd_gateway, m, strlen(m),
                                 "/v3/lease/revoke", body, e->token_header,
                                 reign__now_ns() + 1000 * REIGN__NS_PER_MS, NULL, why, sizeof(why));
    reign__log(e->log, REIGN_LOG_INFO, "etcd: lease %llx revoked%s%s", (unsigned long long)e->lease,
               status ? "" : ": ", status ? "" : why);
    e->lease = 0;
}

void reign__etcd_close(reign__etcd *e)
{
    if (e->closed)
        return;
    e->closed = true;
    reign__timer_stop(e->cfg.timers, &e->ka_timer);
    reign__eo_release(e, true);
    reign__ew_stop(e);
    reign__eo_fail_all(e, REIGN_ECLOSED, true);
    if (e->ka)
        reign__eh_drop(e->ka);
    if (e->grant)
        reign__eh_drop(e->grant);
    if (e->auth)
        drop_login(e->auth);
    e->ka = e->grant = e->auth = NULL;
    revoke_lease(e);
    e->connected = false;
}

void reign__etcd_free(reign__etcd *e)
{
    if (!e)
        return;
    if (!e->closed) {
        e->closed = true;
        reign__eo_fail_all(e, REIGN_ECLOSED, false);
        revoke_lease(e);
    }
    reign__timer_stop(e->cfg.timers, &e->ka_timer);
    reign__eo_free(e);
    reign__ew_free(e);
    if (e->auth) /* freed before it was closed */
        drop_login(e->auth);
    e->ka = e->grant = e->auth = NULL;
    reign__eh_free(e);
    for (size_t i = 0; i < e->n_members; i++)
        reign__free(e->members[i]);
    reign__free(e->members);
    reign__free(e->prefix);
    reign__free(e->user);
    if (e->password) {
        explicit_bzero(e->password, strlen(e->password));
        reign__free(e->password);
    }
    reign__free(e->tls_ca);
    reign__free(e->tls_cert);
    reign__free(e->tls_key);
    if (e->token_header) {
        explicit_bzero(e->token_header, strlen(e->token_header));
        reign__free(e->token_header);
    }
    reign__free(e);
}

int64_t reign__etcd_session_id(const reign__etcd *e)
{
    return e->lease;
}

int reign__etcd_session_timeout_ms(const reign__etcd *e)
{
    return e->ttl_s * 1000;
}

bool reign__etcd_connected(const reign__etcd *e)
{
    return e->connected;
}

const char *reign__etcd_errmsg(const reign__etcd *e)
{
    return e->errmsg;
}

int64_t reign__etcd_last_ack_ns(const reign__etcd *e)
{
    return e->last_ack_ns;
}

void reign__etcd_heartbeat(reign__etcd *e)
{
    if (e->lease && !e->ka && !e->closed)
        keepalive(e);
}
