/*
 * call.h - the inside of a reignd_call (control.h), shared by the two
 * servers that answer through reignd_ops: the control socket (control.c)
 * and the peer endpoint (peer.c).
 *
 * A server makes a call, runs the operation through reignd__call_run(),
 * and is told the outcome once through its `complete` function, which must
 * not keep the call (it is freed right after).  A server that goes away
 * before then detaches the call: the daemon may still complete it, and the
 * answer is dropped.
 */
#ifndef REIGND_CALL_H
#define REIGND_CALL_H

#include <cjson/cJSON.h>

#include "control.h"

/* err, msg (never NULL) and result (borrowed, may be NULL) of a finished call. */
typedef void reignd__call_complete_fn(void *owner, int err, const char *msg, const cJSON *result);

struct reignd_call {
    reignd__call_complete_fn *complete; /* NULL once detached */
    void *owner;
    char origin[128];
    char msg[512];
    cJSON *result;
    int running;  /* inside the operation */
    int finished; /* completed while running: deliver on return */
    int err;
};

/* A new call answering to owner; NULL on out of memory. */
reignd_call *reignd__call_new(reignd__call_complete_fn *complete, void *owner, const char *origin);

/*
 * Runs op's return value r through the contract: 0 or negative completes
 * the call now; REIGND_PENDING leaves it to reignd_call_done() (which may
 * even have happened inside the operation).  The call may be freed when
 * this returns.
 */
void reignd__call_run(reignd_call *call, int r);

/* Drops the owner: a later completion only frees the call. */
void reignd__call_detach(reignd_call *call);

/* {"ok":true,"result":...} or {"ok":false,"error":...,"message":...} as one
 * line with "\n"; malloc'd, NULL on out of memory. */
char *reignd__answer_line(int err, const char *msg, const cJSON *result, size_t *len);

#endif
