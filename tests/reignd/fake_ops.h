/*
 * fake_ops.h - a reignd_ops table for the tests of the control socket, the
 * peer endpoint and `reign ctl` (test_control.c, test_peer.c,
 * ctl_server.c): it records each call and answers by the service's name,
 * so each test can reach every kind of answer.
 *
 *   "web"     answered at once with success
 *   "db"      pending, completed with success on the next loop turn
 *   "slow"    pending until fake_ops_finish() (a client may leave first)
 *   "busy"    refused: REIGN_ESTATE, "busy is in the middle of a failover"
 *   other     REIGN_ENOENT, "no service 'NAME'"
 *
 * failover --to "n3" is refused (REIGN_ESTATE, "node 'n3' is not healthy
 * (unhealthy)"), as the daemon refuses a target that is not a healthy
 * standby.  pause/resume set the "paused" flag status shows.
 */
#ifndef REIGND_TEST_FAKE_OPS_H
#define REIGND_TEST_FAKE_OPS_H

#include <stdint.h>

#include <uv.h>

#include "control.h"

#define FAKE_PENDING_MAX 16

typedef struct fake_ops {
    reignd_ops ops; /* ctx is the fake_ops */
    uv_loop_t *loop;
    int calls;         /* operations called (status excluded) */
    char op[16];       /* the last one: "cede", "failover", ... */
    char service[256]; /* its arguments */
    char node[300];    /* failover's `to`, standby's `from` */
    char origin[128];
    double delay_s;
    int wait; /* failover's */
    uint64_t term;
    int paused[2]; /* web, db */
    reignd_call *pending[FAKE_PENDING_MAX];
    int npending;
} fake_ops;

void fake_ops_init(fake_ops *f, uv_loop_t *loop);

/* Completes every "slow" call with err (0: success). */
void fake_ops_finish(fake_ops *f, int err);

#endif
