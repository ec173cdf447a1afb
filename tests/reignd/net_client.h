/*
 * net_client.h - one blocking client exchange on a thread of its own while
 * the test's libuv loop serves it (the servers under test run on that
 * loop): connect to a Unix socket or to 127.0.0.1:PORT, send some bytes,
 * read the answer, then stop the loop.  Used by test_control.c,
 * test_peer.c and test_metrics.c.
 */
#ifndef REIGND_TEST_NET_CLIENT_H
#define REIGND_TEST_NET_CLIENT_H

#include <stddef.h>

#include <uv.h>

typedef struct net_job {
    const char *unix_path; /* the Unix socket, or NULL for TCP */
    int tcp_port;          /* on 127.0.0.1 */
    const char *send;
    size_t send_len; /* 0: strlen(send) */
    int lines;       /* read until this many newlines; 0: until EOF */
    int leave_early; /* close right after sending */

    char answer[16384]; /* what came back, NUL-terminated */
    size_t len;
    int eof;           /* the server closed the connection */
    int connect_errno; /* connect() failed with this */
    uv_async_t async;
} net_job;

/* Runs the exchange; the loop runs until the client thread is done. */
void net_exchange(uv_loop_t *loop, net_job *job);

#endif
