/*
 * expire_tool.c - reign_it_expire HOSTS SESSION_ID PASSWORD_HEX: ends a ZooKeeper session on
 * the server (see expire.h).  A program of its own, so that the test process never holds a
 * second ZooKeeper handle: the C client formats endpoint names into one static buffer shared by
 * every handle of a process, which ThreadSanitizer rightly reports.
 *
 * It attaches to the session (its id and password) and closes it, and the server ends it.  The
 * session's owner may reconnect between the attach and the close (it lost its connection to
 * us), and the server refuses a close from a connection that no longer owns the session: so it
 * attaches again until the server answers that the session is gone.  Exit status 0 done, 1
 * failure (named on stderr), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define WAIT_S 60

static int unhex(const char *s, char *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (char)v;
    }
    return 0;
}

int main(int argc, char **argv)
{
    clientid_t cid;
    memset(&cid, 0, sizeof(cid));
    char *end;
    if (argc != 4 || !(cid.client_id = (int64_t)strtoull(argv[2], &end, 16)) || *end ||
        unhex(argv[3], cid.passwd, sizeof(cid.passwd)) < 0) {
        fprintf(stderr, "usage: reign_it_expire HOSTS SESSION_ID_HEX PASSWORD_HEX\n");
        return 2;
    }
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    time_t deadline = time(NULL) + WAIT_S;
    for (int closes = 0;; closes++) {
        zhandle_t *zh = zookeeper_init(argv[1], NULL, 30000, &cid, NULL, 0);
        if (!zh) {
            perror("expire: zookeeper_init");
            return 1;
        }
        int st;
        while ((st = zoo_state(zh)) != ZOO_CONNECTED_STATE && st != ZOO_EXPIRED_SESSION_STATE) {
            if (time(NULL) > deadline) {
                fprintf(stderr, "expire: timed out on session 0x%llx\n",
                        (unsigned long long)cid.client_id);
                return 1;
            }
            struct timespec ts = {0, 5 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        zookeeper_close(zh);
        if (st == ZOO_EXPIRED_SESSION_STATE) {
            if (closes == 0)
                fprintf(stderr, "expire: session 0x%llx had expired already\n",
                        (unsigned long long)cid.client_id);
            return closes > 0 ? 0 : 1;
        }
    }
}
