/*
 * peer.h - the network endpoint between reignds: one node's daemon asks
 * another's to make a service standby (the graceful fence, fence.c) or to
 * report a service's state (before a failover --to that node).
 *
 * HTTP/1.1 on libmicrohttpd, driven from the daemon's libuv loop (no thread
 * of its own).  The nodes share a secret, read from a file named in the
 * configuration, that never crosses the wire: every request is signed with
 * it (HMAC-SHA256 over method, path, body, time and a nonce, peer_auth.h),
 * and the server refuses with 401 a request unsigned, wrongly signed, signed
 * more than 30 s away from its clock, or seen before; every answer is signed
 * too, for the request's nonce, and the client takes an answer it cannot
 * check as a failure.  So whoever sees the traffic can neither send a
 * request of their own, nor send one seen again, nor fake an answer.  It
 * authenticates, it does not encrypt: service names, node ids and states
 * are readable on the network.  The secret is never logged.
 *
 *   GET  /v1/services/NAME            200 {"ok":true,"result":{one entry of
 *                                     reignd_ops.status's "services"}}
 *   POST /v1/services/NAME/standby    body {"from":"ID","term":N}
 *                                     200 {"ok":true,"result":{...}}
 *
 * Failures answer {"ok":false,"error":"REIGN_E...","message":"..."} with 400
 * (bad request), 401 (secret), 404 (no such service or path), 409 (refused
 * in the current state), 500 (anything else) or 503 (timed out).
 *
 * The client side is a plain socket client on the loop with a hard timeout
 * covering resolution, connection, request and answer.  Every callback runs
 * on the loop thread.
 */
#ifndef REIGND_PEER_H
#define REIGND_PEER_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include <reign/reign.h>

#include "control.h"

/* The longest secret accepted, and the shortest (a guessable one is refused). */
#define REIGND_PEER_SECRET_MAX 1024
#define REIGND_PEER_SECRET_MIN 16

/* The longest answer body the client reads. */
#define REIGND_PEER_BODY_MAX 65536

/* ---- the secret ------------------------------------------------------------ */

typedef struct reignd_secret {
    unsigned char bytes[REIGND_PEER_SECRET_MAX];
    size_t len;
} reignd_secret;

/*
 * Reads the secret from `path`: the whole file, one trailing newline (\n or
 * \r\n) dropped; REIGND_PEER_SECRET_MIN..MAX bytes of printable ASCII
 * without spaces (so that it can be typed and copied).  The file must be a
 * regular file not readable or writable by group or others.  Returns 0, or
 * a negative REIGN_E* code with the reason in err (never the secret).
 */
int reignd_secret_load(const char *path, reignd_secret *secret, char *err, size_t errlen);

/* Overwrites the secret (before freeing memory that held it). */
void reignd_secret_wipe(reignd_secret *secret);

/* ---- the server ------------------------------------------------------------ */

typedef struct reignd_peer_server reignd_peer_server;

typedef struct reignd_peer_server_options {
    size_t size;        /* sizeof(reignd_peer_server_options) */
    const char *listen; /* "HOST:PORT", "[V6]:PORT" or ":PORT" (any address); port 0 picks one */
    const reignd_secret *secret; /* copied */
    const reignd_ops *ops;       /* standby and status are used */
    reign_log_fn *log_fn;        /* refusals and errors; NULL: silent */
    void *log_userdata;
} reignd_peer_server_options;

/* Starts listening on `loop`.  0 and *ret, or a negative REIGN_E* with err. */
int reignd_peer_server_start(uv_loop_t *loop, const reignd_peer_server_options *opts,
                             reignd_peer_server **ret, char *err, size_t errlen);

/* The port actually bound (for port 0). */
int reignd_peer_server_port(const reignd_peer_server *srv);

/* Stops the server; memory is released in close callbacks (run the loop).
 * Pending calls stay valid; their answers are dropped.  NULL-safe. */
void reignd_peer_server_close(reignd_peer_server *srv);

/* ---- the client ------------------------------------------------------------ */

typedef struct reignd_peer_request reignd_peer_request;

/*
 * The answer to a request, called exactly once unless the request could not
 * be started: err 0 and result (borrowed for the call; may be NULL) on
 * success; else a negative REIGN_E* code and msg, a sentence naming the
 * peer: REIGN_ETIMEDOUT (no complete answer within the timeout),
 * REIGN_ECONNECT (cannot connect or resolve), REIGN_EAUTH (our request
 * refused, or an answer not signed with our secret),
 * REIGN_ENOENT (no such service there), REIGN_ESTATE (refused in its state),
 * REIGN_EBACKEND (a malformed answer or another failure),
 * REIGN_ECANCELED (reignd_peer_cancel).  The request is freed after the callback.
 */
typedef void reignd_peer_cb(int err, const char *msg, const cJSON *result, void *userdata);

typedef struct reignd_peer_target {
    const char *address;         /* the peer's "HOST:PORT" */
    const reignd_secret *secret; /* copied */
    uint64_t timeout_ms;         /* the whole exchange; 0: 5000 */
} reignd_peer_target;

/* Asks the peer to make `service` standby for node `from` at term `term`. */
int reignd_peer_standby(uv_loop_t *loop, const reignd_peer_target *target, const char *service,
                        const char *from, uint64_t term, reignd_peer_cb *cb, void *userdata,
                        reignd_peer_request **ret);

/* Asks the peer for the state of `service` (result: its status entry). */
int reignd_peer_state(uv_loop_t *loop, const reignd_peer_target *target, const char *service,
                      reignd_peer_cb *cb, void *userdata, reignd_peer_request **ret);

/* Both return 0 (ret, if not NULL, names the request until its callback),
 * or a negative REIGN_E* code (REIGN_EINVAL for a bad address or name,
 * REIGN_ENOMEM) and then never call back. */

/* Ends a request early: its callback runs at once with REIGN_ECANCELED. */
void reignd_peer_cancel(reignd_peer_request *req);

#endif
