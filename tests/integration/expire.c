/*
 * expire.c - see expire.h.  The wrappers run on the thread that calls into libreign (the
 * test's loop thread), as does h_expire_session(), so the table needs no lock.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "expire.h"
#include "harness.h"

zhandle_t *__real_zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout,
                                  const clientid_t *clientid, void *context, int flags,
                                  log_callback_fn log_callback);
zhandle_t *__wrap_zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout,
                                  const clientid_t *clientid, void *context, int flags,
                                  log_callback_fn log_callback);
int __real_zookeeper_close(zhandle_t *zh);
int __wrap_zookeeper_close(zhandle_t *zh);

#define MAX_HANDLES 256

static zhandle_t *handles[MAX_HANDLES];

zhandle_t *__wrap_zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout,
                                  const clientid_t *clientid, void *context, int flags,
                                  log_callback_fn log_callback)
{
    zhandle_t *zh =
        __real_zookeeper_init2(host, fn, recv_timeout, clientid, context, flags, log_callback);
    for (int i = 0; zh && i < MAX_HANDLES; i++)
        if (!handles[i]) {
            handles[i] = zh;
            break;
        }
    return zh;
}

int __wrap_zookeeper_close(zhandle_t *zh)
{
    for (int i = 0; i < MAX_HANDLES; i++)
        if (handles[i] == zh)
            handles[i] = NULL;
    return __real_zookeeper_close(zh);
}

void h_expire_session(reign_client *client)
{
    int64_t sid = reign_client_session_id(client);
    H_CHECKF(sid != 0, "no session to expire");
    clientid_t cid;
    int found = 0;
    for (int i = 0; i < MAX_HANDLES && !found; i++) {
        const clientid_t *c = handles[i] ? zoo_client_id(handles[i]) : NULL;
        if (c && c->client_id == sid) {
            cid = *c;
            found = 1;
        }
    }
    H_CHECKF(found, "no ZooKeeper handle holds session 0x%llx", (unsigned long long)sid);
    h_log("expiring session 0x%llx", (unsigned long long)sid);
    zhandle_t *zh = zookeeper_init(h_hosts(), NULL, 30000, &cid, NULL, 0);
    H_CHECK(zh != NULL);
    /* Connected with the same session: closing it ends the session on the server. */
    int64_t deadline = reign_now_ns() + (int64_t)H_WAIT_MS * 1000000;
    while (zoo_state(zh) != ZOO_CONNECTED_STATE) {
        H_CHECKF(zoo_state(zh) != ZOO_EXPIRED_SESSION_STATE, "session 0x%llx already expired",
                 (unsigned long long)sid);
        H_CHECKF(reign_now_ns() < deadline, "timed out reattaching to session 0x%llx",
                 (unsigned long long)sid);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    __real_zookeeper_close(zh);
}
