/*
 * fence.h - fencing the old active named by a breadcrumb, before this node's
 * service may become active (ZKFC's doFence / NodeFencer).
 *
 * The service's fence methods run in the configured order, one at a time,
 * until one succeeds:
 *   graceful  ask the old active's reignd, at the breadcrumb's peer address,
 *             to make its service standby (peer.h), within the method's
 *             timeout.  It succeeds only once that node says its service is
 *             standby (or was not active).  Skipped (a failure) when the
 *             breadcrumb has no peer address or this daemon has no secret.
 *   shell     the administrator's command through the service's hook queue
 *             (hooks.h), with the target in REIGN_TARGET_ID,
 *             REIGN_TARGET_ADDRESS (its service address) and
 *             REIGN_TARGET_TERM; exit status 0 is a success.  The command
 *             has a timeout (ZKFC's shell fencer has none and can hang a
 *             failover forever).
 * If every method fails, the fence fails and the caller must not become
 * active (fsm.c: step down and retry later).
 *
 * Everything runs on the daemon's libuv loop; the callback runs there once.
 */
#ifndef REIGND_FENCE_H
#define REIGND_FENCE_H

#include <stdint.h>

#include <uv.h>

#include "breadcrumb.h"
#include "config.h"
#include "hooks.h"
#include "peer.h"

typedef struct reignd_fence reignd_fence;

/* What a fence needs; everything must outlive it. */
typedef struct reignd_fence_ctx {
    uv_loop_t *loop;
    const reignd_service_config *svc; /* name, node_id, fence methods */
    reignd_hooks *hooks;              /* the service's queue, for shell methods */
    const reignd_secret *secret;      /* the peers' secret; NULL: graceful is skipped */
    uint64_t term;                    /* the leadership we fence for */
    uint64_t token;
} reignd_fence_ctx;

/* ok: 1 if a method fenced the target.  attempts: methods tried (for the
 * metrics).  detail: what happened, for the log (borrowed for the call). */
typedef void reignd_fence_cb(int ok, unsigned attempts, const char *detail, void *userdata);

/*
 * Starts fencing `target` (copied).  Returns 0 and *ret (valid until the
 * callback has run or reignd_fence_abandon()), or REIGN_ENOMEM /
 * REIGN_EINVAL (no methods) and never calls back.
 */
int reignd_fence_start(reignd_fence **ret, const reignd_fence_ctx *ctx,
                       const reignd_breadcrumb *target, reignd_fence_cb *cb, void *userdata);

/*
 * Stops caring about a fence in progress: its callback will not run.  What
 * is running (a shell command, a request) finishes by itself within its
 * timeout, then the fence frees itself.  NULL-safe.
 */
void reignd_fence_abandon(reignd_fence *f);

#endif
