/*
 * handoff_floor.c - the floor under a graceful handoff: the same chain of
 * ZooKeeper requests as reign's, made by bare C client code with nothing
 * else around it.  Session A holds an ephemeral node; session B watches it
 * and knows the term's version.  Timed: from A's delete call to the answer
 * of B's claim multi (check the term's version, create the ephemeral leader
 * node, set the term), which B sends from its watch callback's wake-up.
 *
 *   handoff-floor HOST:PORT ROUNDS GAP_MS [designate]
 *
 * With `designate`, the chain of a designation instead, as reign's
 * (election_query.c, election_zk.c), with three sessions: the operator O
 * reads the candidates and the term (one round trip), then one multi
 * writes the designation into the target T's node and the handoff request
 * into the leader L's; L, woken by its node's watch, reads it and rewrites
 * the leader node to name T; T, woken by its own node's watch, reads it,
 * reads (and watches) the leader node, and takes it over the moment it
 * names T (one multi: delete it at that version, create its own, set the
 * term).  Timed from O's first request to the answer of T's takeover.
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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

enum {
    EV_CONNECTED = 1,
    EV_DELETED = 2,
    EV_DONE = 4,
    /* the designation's chain */
    EV_O = 1 << 3,     /* the operator's reads are answered */
    EV_OM = 1 << 4,    /* its multi is answered */
    EV_LOWN = 1 << 5,  /* L's node was written to */
    EV_LREAD = 1 << 6, /* L read it */
    EV_LSET = 1 << 7,  /* L's rewrite of the leader node is answered */
    EV_TOWN = 1 << 8,  /* T's node was written to */
    EV_TREAD = 1 << 9, /* T read it */
    EV_TLN = 1 << 10,  /* T read the leader node */
    EV_LN = 1 << 11,   /* the leader node changed (T's watch) */
    EV_TAKEN = 1 << 12 /* T's takeover is answered */
};

#define N_H 3
static unsigned g_flags; /* what happened, set by callbacks (FLOOR_ST: this thread) */
#ifndef FLOOR_ST
static int g_efd;
#endif
static zhandle_t *g_h[N_H];

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

/* Until one of `mask` has happened (the eventfd, or (FLOOR_ST) the clients driven by this
 * thread): which ones, taken off the flags. */
static unsigned wait_any(unsigned mask)
{
    while (!(g_flags & mask)) {
#ifdef FLOOR_ST
        struct pollfd p[N_H];
        int timeout = 1000;
        for (int i = 0; i < N_H; i++) {
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
        poll(p, N_H, timeout);
        for (int i = 0; i < N_H; i++) {
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
    unsigned got = g_flags & mask;
    g_flags &= ~got;
    return got;
}

static void wait_for(unsigned what)
{
    wait_any(what);
}

/* A watch set with a context says which one fired (the designation's chain). */
static void on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)path;
    if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
        happened(EV_CONNECTED);
    else if (ctx && type != ZOO_SESSION_EVENT)
        happened((unsigned)(uintptr_t)ctx);
    else if (type == ZOO_DELETED_EVENT)
        happened(EV_DELETED);
}

/* A request of the designation's chain: what to signal, and its answer. */
typedef struct answer {
    unsigned bit;
    int rc;
    struct Stat st;
    char value[64];
} answer;

static void on_answer_data(int rc, const char *value, int len, const struct Stat *stat,
                           const void *data)
{
    answer *a = (answer *)data;
    a->rc = rc;
    if (rc == ZOK) {
        a->st = *stat;
        int n = len < 0 ? 0 : len < (int)sizeof(a->value) - 1 ? len : (int)sizeof(a->value) - 1;
        memcpy(a->value, value, (size_t)n);
        a->value[n] = '\0';
    }
    happened(a->bit);
}

static void on_answer_stat(int rc, const struct Stat *stat, const void *data)
{
    answer *a = (answer *)data;
    a->rc = rc;
    if (rc == ZOK && stat)
        a->st = *stat;
    happened(a->bit);
}

static void on_answer_void(int rc, const void *data)
{
    answer *a = (answer *)data;
    a->rc = rc;
    happened(a->bit);
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

static void on_children_ignored(int rc, const struct String_vector *v, const void *data)
{
    (void)rc, (void)v, (void)data;
}

static int cmp_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* One handoff: A's delete of its node, B's claim from its watch's wake-up. */
static int64_t handoff_round(const char *node, const char *term, const char *leader, int gap_ms)
{
    zhandle_t *a = g_h[0], *b = g_h[1];
    const struct ACL_vector *acl = &ZOO_OPEN_ACL_UNSAFE;
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
    return t1 - t0;
}

/* One designation (see the top of the file); -1 if T's takeover failed. */
static int64_t designate_round(const char *dir, const char *term, const char *leader, int gap_ms)
{
    zhandle_t *o = g_h[0], *l = g_h[1], *t = g_h[2];
    const struct ACL_vector *acl = &ZOO_OPEN_ACL_UNSAFE;
    char lnode[128], tnode[128];
    snprintf(lnode, sizeof(lnode), "%s/l", dir);
    snprintf(tnode, sizeof(tnode), "%s/t", dir);
    answer a = {.bit = EV_DONE};
    zoo_acreate(l, lnode, "l", 1, acl, ZOO_EPHEMERAL, on_string, NULL);
    wait_for(EV_DONE);
    zoo_acreate(l, leader, "holder=l", 8, acl, ZOO_EPHEMERAL, on_string, NULL);
    wait_for(EV_DONE);
    zoo_acreate(t, tnode, "t", 1, acl, ZOO_EPHEMERAL, on_string, NULL);
    wait_for(EV_DONE);
    zoo_awexists(l, lnode, on_watch, (void *)(uintptr_t)EV_LOWN, on_answer_stat, &a);
    wait_for(EV_DONE);
    zoo_awexists(t, tnode, on_watch, (void *)(uintptr_t)EV_TOWN, on_answer_stat, &a);
    wait_for(EV_DONE);
    if (gap_ms)
        usleep((useconds_t)gap_ms * 1000);

    answer o_term = {.bit = EV_O}, o_multi = {.bit = EV_OM}, l_read = {.bit = EV_LREAD};
    answer l_set = {.bit = EV_LSET}, t_read = {.bit = EV_TREAD}, t_ln = {.bit = EV_TLN};
    answer taken = {.bit = EV_TAKEN};
    zoo_op_t ops[3], tops[3];
    zoo_op_result_t res[3], tres[3];
    int32_t seen = -1;
    bool sent = false;
    unsigned pending = EV_OM | EV_LSET | EV_TAKEN; /* answers to have before the next round */
    int64_t t0 = now_ns(), t1 = 0;
    zoo_aget_children(o, dir, 0, on_children_ignored, NULL); /* answered before the term */
    zoo_aget(o, term, 0, on_answer_data, &o_term);
    while (pending) {
        unsigned got = wait_any(EV_O | EV_OM | EV_LOWN | EV_LREAD | EV_LSET | EV_TOWN | EV_TREAD |
                                EV_TLN | EV_LN | EV_TAKEN);
        pending &= ~got;
        if (got & EV_O) {
            zoo_set_op_init(&ops[0], tnode, "designated", 10, -1, NULL);
            zoo_set_op_init(&ops[1], lnode, "handoff=t", 9, -1, NULL);
            zoo_amulti(o, 2, ops, res, on_answer_void, &o_multi);
        }
        if (got & EV_LOWN)
            zoo_aget(l, lnode, 0, on_answer_data, &l_read);
        if (got & EV_LREAD)
            zoo_aset(l, leader, "next=t", 6, -1, on_answer_stat, &l_set);
        if (got & EV_TOWN)
            zoo_aget(t, tnode, 0, on_answer_data, &t_read);
        if (got & EV_TREAD)
            zoo_awget(t, leader, on_watch, (void *)(uintptr_t)EV_LN, on_answer_data, &t_ln);
        if ((got & EV_TLN) && t_ln.rc == ZOK)
            seen = strcmp(t_ln.value, "next=t") ? t_ln.st.version + 1 : t_ln.st.version;
        if ((got & (EV_TLN | EV_LN)) && seen >= 0 && !sent &&
            ((got & EV_LN) || !strcmp(t_ln.value, "next=t"))) {
            sent = true; /* named next: take it over at the version that names us */
            zoo_delete_op_init(&tops[0], leader, seen);
            zoo_create_op_init(&tops[1], leader, "holder=t", 8, acl, ZOO_EPHEMERAL, NULL, 0);
            zoo_set_op_init(&tops[2], term, "t", 1, -1, NULL);
            zoo_amulti(t, 3, tops, tres, on_answer_void, &taken);
        }
        if (got & EV_TAKEN)
            t1 = now_ns();
    }
    zoo_adelete(t, leader, -1, on_void, NULL);
    wait_for(EV_DONE);
    zoo_adelete(t, tnode, -1, on_void, NULL);
    wait_for(EV_DONE);
    zoo_adelete(l, lnode, -1, on_void, NULL);
    wait_for(EV_DONE);
    g_flags = 0; /* a watch on what the cleanup deleted */
    return taken.rc == ZOK ? t1 - t0 : -1;
}

int main(int argc, char **argv)
{
    bool designate = argc == 5 && !strcmp(argv[4], "designate");
    if (argc != 4 && !designate) {
        fprintf(stderr, "usage: %s HOST:PORT ROUNDS GAP_MS [designate]\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[2]), gap_ms = atoi(argv[3]);
    if (rounds < 1 || gap_ms < 0)
        return 2;
#ifndef FLOOR_ST
    g_efd = eventfd(0, EFD_CLOEXEC);
#endif
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    int sessions = designate ? 3 : 2;
    for (int i = 0; i < sessions; i++) {
        g_h[i] = zookeeper_init(argv[1], on_watch, 30000, NULL, NULL, 0);
        if (!g_h[i])
            return 1;
        wait_for(EV_CONNECTED);
    }
    zhandle_t *a = g_h[0];
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
    int n = 0;
    for (int r = 0; r < rounds + warmup; r++) {
        int64_t d = designate ? designate_round(dir, term, leader, gap_ms)
                              : handoff_round(node, term, leader, gap_ms);
        if (r >= warmup && d >= 0)
            ns[n++] = d;
    }
    zoo_adelete(a, term, -1, on_void, NULL);
    wait_for(EV_DONE);
    zoo_adelete(a, dir, -1, on_void, NULL);
    wait_for(EV_DONE);
    qsort(ns, (size_t)n, sizeof(*ns), cmp_int64);
#ifdef FLOOR_ST
    const char *mode = "st";
#else
    const char *mode = "mt";
#endif
    printf("{\"mode\":\"%s\",\"chain\":\"%s\",\"gap_ms\":%d,\"failed\":%d,\"ms\":[", mode,
           designate ? "designate" : "handoff", gap_ms, rounds - n);
    for (int i = 0; i < n; i++)
        printf("%s%.4f", i ? "," : "", (double)ns[i] / 1e6);
    printf("]}\n");
    for (int i = 0; i < sessions; i++)
        zookeeper_close(g_h[i]);
    free(ns);
    return 0;
}
