/*
 * zk_end.c - ends a ZooKeeper session from another process (zk.h): the
 * guardian attaches to its dead client's session with the session's id and
 * password and closes it, so that the server deletes the session's ephemeral
 * nodes at once instead of when the session times out.
 *
 * Blocking, with its own short-lived C client handle; never used by a
 * client's loop.  No credentials are needed: closing a session takes only
 * its id and password, and the server removes ephemeral nodes whatever their
 * ACL.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#include "zk.h"

typedef struct attach {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* the latest session state, 0 before any */
} attach;

static void on_event(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    attach *a = ctx;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&a->mu);
    a->state = state;
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

static void quiet(const char *msg)
{
    (void)msg; /* the C client's own chatter: the caller reports the outcome */
}

int reign__zk_end_session(const char *hosts, int64_t session, const unsigned char passwd[16],
                          int timeout_ms, char *err, size_t errlen)
{
    attach a = {.state = 0};
    pthread_mutex_init(&a.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&a.cv, &ca);
    pthread_condattr_destroy(&ca);

    clientid_t cid = {.client_id = session};
    memcpy(cid.passwd, passwd, sizeof(cid.passwd));
    zhandle_t *zh = zookeeper_init2(hosts, on_event, timeout_ms, &cid, &a, 0, quiet);
    explicit_bzero(cid.passwd, sizeof(cid.passwd));
    int rc;
    if (!zh) {
        reign__errf(err, errlen, "cannot start a ZooKeeper client for '%s'", hosts);
        rc = REIGN_ECONNECT;
        goto out;
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&a.mu);
    while (a.state != ZOO_CONNECTED_STATE && a.state != ZOO_EXPIRED_SESSION_STATE &&
           a.state != ZOO_AUTH_FAILED_STATE)
        if (pthread_cond_timedwait(&a.cv, &a.mu, &until) != 0)
            break;
    int state = a.state;
    pthread_mutex_unlock(&a.mu);
    if (state == ZOO_CONNECTED_STATE) {
        /* zookeeper_close() sends closeSession and waits for the server's answer. */
        int zrc = zookeeper_close(zh);
        zh = NULL;
        rc = zrc == ZOK ? 1 : reign__zk_error(zrc);
        if (rc < 0)
            reign__errf(err, errlen, "closing session 0x%llx: %s", (unsigned long long)session,
                        zerror(zrc));
    } else if (state == ZOO_EXPIRED_SESSION_STATE) {
        rc = 0; /* gone already */
    } else {
        reign__errf(err, errlen, "no ZooKeeper server at '%s' answered within %d ms", hosts,
                    timeout_ms);
        rc = REIGN_ETIMEDOUT;
    }
    if (zh)
        zookeeper_close(zh);
out:
    pthread_cond_destroy(&a.cv);
    pthread_mutex_destroy(&a.mu);
    return rc;
}
