/*
 * expire.c - see expire.h.  The wrappers run on the thread that calls into libreign (the
 * test's loop thread), as does h_expire_session(), so the table needs no lock.  The expiring
 * itself is done by reign_it_expire (expire_tool.c), in a process of its own.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

extern char **environ;

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
    const char *tool = getenv("REIGN_IT_EXPIRE");
    H_CHECKF(tool && *tool, "$REIGN_IT_EXPIRE is not set (run the test through ctest)");
    char id[32], pw[2 * sizeof(cid.passwd) + 1];
    snprintf(id, sizeof(id), "%llx", (unsigned long long)sid);
    for (size_t i = 0; i < sizeof(cid.passwd); i++)
        snprintf(pw + 2 * i, 3, "%02x", (unsigned char)cid.passwd[i]);
    char *args[] = {(char *)tool, (char *)h_hosts(), id, pw, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, tool, NULL, NULL, args, environ);
    H_CHECKF(rc == 0, "cannot run %s: %s", tool, strerror(rc));
    int status;
    while (waitpid(pid, &status, 0) < 0)
        H_CHECK(errno == EINTR);
    H_CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s failed (status %d)", tool, status);
}
