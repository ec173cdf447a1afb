/*
 * handoff_floor.c - the floor under a graceful handoff: the same chain of
 * ZooKeeper requests as reign's, made by bare C client code with nothing
 * else around it.  Session A holds an ephemeral node; session B watches it
 * and knows the term's version.  Timed: from A's delete call to the answer
 * of B's claim multi (check the term's version, create the ephemeral leader
 * node, set the term), which B sends from its watch callback's wake-up.
 *
 *   handoff-floor HOST:PORT ROUNDS GAP_MS
 *
 * Built twice by bench/CMakeLists.txt: handoff-floor-mt on libzookeeper_mt
 * (as reign: results handed from the client's completion thread to the
 * caller's thread through an eventfd), and, where Debian's libzookeeper-st2
 * is installed, handoff-floor-st on libzookeeper_st driven by the caller's
 * own poll loop (FLOOR_ST).  GAP_MS of idle before each round is what a real
 * failover meets: a server and clients that were asleep.  Prints one line
 * of JSON: {"mode":..., "gap_ms":..., "ms":[...]}.  Measures, asserts
 * nothing (bench/handoff.py reads it).
 */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

enum { EV_CONNECTED = 1, EV_DELETED = 2, EV_DONE = 4 };

static unsigned g_flags; /* what happened, set by callbacks (FLOOR_ST: this thread) */
#ifndef FLOOR_ST
static int g_efd;
#endif
static zhandle_t *g_h[2];

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void happened(unsigned what)
{
#ifdef FLOOR_ST
    g_flags |= what;
#else
    uint64_t v = what;
    if (write(g_efd, &v, sizeof(v)) != sizeof(v))
        abort();
#endif
}

/* Until `what` has happened: the eventfd, or (FLOOR_ST) the client driven by this thread. */
static void wait_for(unsigned what)
{
    while (!(g_flags & what)) {
#ifdef FLOOR_ST
        struct pollfd p[2];
        int timeout = 1000;
        for (int i = 0; i < 2; i++) {
            int fd = -1, ev = 0;
            struct timeval tv;
            p[i].fd = -1;
            p[i].events = 0;
            if (!g_h[i] || zookeeper_interest(g_h[i], &fd, &ev, &tv) != ZOK)
                continue;
            p[i].fd = fd;
            p[i].events =
                (short)((ev & ZOOKEEPER_READ ? POLLIN : 0) | (ev & ZOOKEEPER_WRITE ? POLLOUT : 0));
            int ms = (int)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
            if (ms < timeout)
                timeout = ms;
        }
        poll(p, 2, timeout);
        for (int i = 0; i < 2; i++) {
            if (!g_h[i])
                continue;
            int ev = (p[i].revents & POLLIN ? ZOOKEEPER_READ : 0) |
                     (p[i].revents & POLLOUT ? ZOOKEEPER_WRITE : 0);
            zookeeper_process(g_h[i], ev);
        }
#else
        uint64_t v;
        struct pollfd p = {.fd = g_efd, .events = POLLIN};
        poll(&p, 1, -1);
        /* a semaphore-less eventfd sums what was written: the flags are distinct bits */
        if (read(g_efd, &v, sizeof(v)) == sizeof(v))
            g_flags |= (unsigned)v;
#endif
    }
    g_flags &= ~what;
}

static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path, (void)ctx;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        happened(EV_CONNECTED);
    else if (type == ZOO_DELETED_EVENT)
        happened(EV_DELETED);
}

static void on_void(int rc, const void *data)
{
    (void)rc, (void)data;
    happened(EV_DONE);
}

static void on_string(int rc, const char *value, const void *data)
{
    (void)rc, (void)value, (void)data;
    happened(EV_DONE);
}

static void on_stat(int rc, const struct Stat *stat, const void *data)
{
    if (rc == ZOK && data)
        *(struct Stat *)data = *stat;
    happened(EV_DONE);
}

static void on_data(int rc, const char *value, int len, const struct Stat *stat, const void *data)
{
    (void)value, (void)len;
    on_stat(rc, stat, data);
}

static void on_ignored(int rc, const void *data)
{
    (void)rc, (void)data;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s HOST:PORT ROUNDS GAP_MS\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[2]), gap_ms = atoi(argv[3]);
    if (rounds < 1 || gap_ms < 0)
        return 2;
#ifndef FLOOR_ST
    g_efd = eventfd(0, EFD_CLOEXEC);
#endif
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    for (int i = 0; i < 2; i++) {
        g_h[i] = zookeeper_init(argv[1], on_watch, 30000, NULL, NULL, 0);
        if (!g_h[i])
            return 1;
        wait_for(EV_CONNECTED);
    }
    zhandle_t *a = g_h[0], *b = g_h[1];
    char dir[64], node[96], term[96], leader[96];
    snprintf(dir, sizeof(dir), "/handoff-floor-%d", (int)getpid());
    snprintf(node, sizeof(node), "%s/a", dir);
    snprintf(term, sizeof(term), "%s/term", dir);
    snprintf(leader, sizeof(leader), "%s/leader", dir);
    const struct ACL_vector *acl = &ZOO_OPEN_ACL_UNSAFE;
    zoo_acreate(a, dir, NULL, -1, acl, 0, on_string, NULL);
    wait_for(EV_DONE);
    zoo_acreate(a, term, "0", 1, acl, 0, on_string, NULL);
    wait_for(EV_DONE);
    int64_t *ns = calloc((size_t)rounds, sizeof(*ns));
    const int warmup = 10;
    for (int r = 0; r < rounds + warmup; r++) {
        struct Stat st, tst;
        zoo_acreate(a, node, NULL, -1, acl, ZOO_EPHEMERAL, on_string, NULL);
        wait_for(EV_DONE);
        zoo_awexists(b, node, on_watch, NULL, on_stat, &st);
        wait_for(EV_DONE);
        zoo_aget(b, term, 0, on_data, &tst);
        wait_for(EV_DONE);
        if (gap_ms)
            usleep((useconds_t)gap_ms * 1000);
        int64_t t0 = now_ns();
        zoo_adelete(a, node, -1, on_ignored, NULL);
        wait_for(EV_DELETED);
        zoo_op_t ops[3];
        zoo_op_result_t res[3];
        zoo_check_op_init(&ops[0], term, tst.version);
        zoo_create_op_init(&ops[1], leader, "b", 1, acl, ZOO_EPHEMERAL, NULL, 0);
        zoo_set_op_init(&ops[2], term, "1", 1, tst.version, NULL);
        zoo_amulti(b, 3, ops, res, on_void, NULL);
        wait_for(EV_DONE);
        int64_t t1 = now_ns();
        zoo_adelete(b, leader, -1, on_void, NULL);
        wait_for(EV_DONE);
        if (r >= warmup)
            ns[r - warmup] = t1 - t0;
    }
    zoo_adelete(a, term, -1, on_void, NULL);
    wait_for(EV_DONE);
    zoo_adelete(a, dir, -1, on_void, NULL);
    wait_for(EV_DONE);
    qsort(ns, (size_t)rounds, sizeof(*ns), cmp_int64);
#ifdef FLOOR_ST
    printf("{\"mode\":\"st\",\"gap_ms\":%d,\"ms\":[", gap_ms);
#else
    printf("{\"mode\":\"mt\",\"gap_ms\":%d,\"ms\":[", gap_ms);
#endif
    for (int i = 0; i < rounds; i++)
        printf("%s%.4f", i ? "," : "", (double)ns[i] / 1e6);
    printf("]}\n");
    zookeeper_close(a);
    zookeeper_close(b);
    free(ns);
    return 0;
}
