/*
 * guardian_client.c - a leader that closes its guardian's socket, for
 * tests/e2e/test_guardian.py (scenario socket_closed), which runs it as
 * $REIGN_IT_GUARDIAN_CLIENT and SIGKILLs it at the end.
 *
 *   reign_it_guardian_client NAME SESSION_MS
 *
 * Joins election NAME as "a" on the shared server ($REIGN_TEST_ZK_FILE) with a
 * guardian, and once elected closes the guardian's end of the socket pair as a
 * program that closes every descriptor it does not know would: the one
 * SOCK_SEQPACKET unix socket among /proc/self/fd (getsockopt SO_TYPE).  Then it
 * waits until its client runs a new guardian and goes on leading until it is
 * killed.  stdout, one line each, flushed:
 *
 *   session 0x<id>
 *   elected a term=T token=K monotonic_ns=NS      (and any demoted line, in e2elib's form)
 *   guardian <pid>
 *   closed fd=<fd> guardian=<pid>
 *   new guardian <pid>
 *
 * Only the public API: what it proves is what an application sees.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"

static void print_event(h_cand *c, const h_event *ev)
{
    if (ev->type == REIGN_ELECTION_ELECTED)
        printf("elected %s term=%llu token=%llu monotonic_ns=%lld\n", c->id,
               (unsigned long long)ev->term, (unsigned long long)ev->token, (long long)ev->at_ns);
    else if (ev->type == REIGN_ELECTION_DEMOTED)
        printf("demoted %s reason=%s monotonic_ns=%lld\n", c->id,
               reign_demote_reason_name(ev->reason), (long long)ev->at_ns);
}

/* The descriptors of this process that are SOCK_SEQPACKET sockets; how many. */
static int seqpacket_fds(int *out, int max)
{
    DIR *d = opendir("/proc/self/fd");
    H_CHECKF(d, "opendir /proc/self/fd: %s", strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long fd = strtol(de->d_name, &end, 10);
        if (*end || end == de->d_name || fd == dirfd(d))
            continue;
        int type = 0;
        socklen_t len = sizeof(type);
        if (getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_SEQPACKET &&
            n < max)
            out[n++] = (int)fd;
    }
    closedir(d);
    return n;
}

typedef struct other {
    h_cand *c;
    pid_t skip;
} other;

/* The client runs a guardian (it said hello), and not the one named in `skip`. */
static int has_guardian(void *arg)
{
    other *o = arg;
    pid_t p = reign_client_guardian_pid(o->c->client);
    return p > 0 && p != o->skip;
}

static int never(void *arg)
{
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s NAME SESSION_MS\n", argv[0]);
        return 2;
    }
    h_init("guardian_client");
    char query[64];
    snprintf(query, sizeof(query), "session_timeout_ms=%d", atoi(argv[2]));
    reign_client_options co = {.size = sizeof(co), .guardian = REIGN_GUARDIAN_ON};
    h_cand *a = h_cand_new("a", h_uri(query), &co, NULL, NULL);
    a->on_event = print_event;
    printf("session 0x%llx\n", (unsigned long long)reign_client_session_id(a->client));
    h_cand_join(a, argv[1], NULL);
    H_WAIT(h_pred_leader, a, "a to lead");

    other o = {a, 0};
    H_WAIT(has_guardian, &o, "a guardian's hello");
    pid_t first = reign_client_guardian_pid(a->client);
    printf("guardian %d\n", (int)first);

    int fds[8];
    int n = seqpacket_fds(fds, 8);
    H_CHECKF(n == 1, "%d SOCK_SEQPACKET descriptors, want the guardian's alone", n);
    H_CHECK(close(fds[0]) == 0);
    printf("closed fd=%d guardian=%d\n", fds[0], (int)first);

    o.skip = first;
    H_WAIT(has_guardian, &o, "a new guardian");
    printf("new guardian %d\n", (int)reign_client_guardian_pid(a->client));
    H_CHECK(seqpacket_fds(fds, 8) == 1);

    /* Lead on until the test kills us (it waits for nothing from here but the kill). */
    for (;;)
        h_run_until(never, NULL, H_WAIT_MS);
}
