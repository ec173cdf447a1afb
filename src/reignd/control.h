/*
 * control.h - reignd's local control socket, and the table of operations
 * (reignd_ops) through which the control socket and the peer endpoint
 * (peer.h) reach the daemon without knowing its internals.
 *
 * The socket is a Unix stream socket, 0600 in a 0700 directory, on the
 * daemon's libuv loop.  Only a peer with the daemon's uid, or root, may talk
 * to it (SO_PEERCRED); anyone else is logged (uid and pid, never what they
 * sent) and disconnected.  Each way, one JSON object per line:
 *
 *   {"op":"status"}
 *   {"op":"cede","service":"S","delay_s":10}        delay_s optional, >= 0
 *   {"op":"failover","service":"S","to":"NODE"}     "wait":false optional
 *   {"op":"pause","service":"S"}                    the election's, for every node
 *   {"op":"resume","service":"S"}
 *
 * answered by
 *
 *   {"ok":true,"result":{...}}                      result: status, or {}
 *   {"ok":false,"error":"REIGN_ESTATE","message":"S is not active"}
 *
 * A request line longer than REIGND_CONTROL_LINE_MAX, or one that is not
 * such an object, is answered with an error (a too long one also ends the
 * connection); nothing a client sends can crash the daemon.  Answers go out
 * in the order of the requests on a connection.
 *
 * Every callback of this file runs on the loop thread.
 */
#ifndef REIGND_CONTROL_H
#define REIGND_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include <reign/reign.h>

/* REIGND_CONTROL_SOCKET_DEFAULT, REIGND_CEDE_DELAY_MAX_S: shared with reign ctl. */
#include "../common/control_socket.h"

/* The longest request line accepted, newline excluded. */
#define REIGND_CONTROL_LINE_MAX 4096

/* ---- the operations the daemon offers ------------------------------------ */

/*
 * One request being answered.  An operation completes it exactly once:
 *
 *   - at once, by returning 0 (success) or a negative REIGN_E* code; before
 *     a negative return it may call reignd_call_fail() for the message, and
 *     before a 0 return reignd_call_set_result() for a result;
 *   - or later, by returning REIGND_PENDING and then calling
 *     reignd_call_done() on the loop thread (a failover waits for the new
 *     active; a graceful fence waits for the become-standby hook).
 *
 * A call stays valid until completed, even if the client that asked went
 * away or the server was closed meanwhile (then the answer is dropped), so
 * the daemon never needs to know whether anyone still listens.
 */
typedef struct reignd_call reignd_call;

#define REIGND_PENDING 1

/* Sets the message of a failure about to be returned (printf format). */
void reignd_call_fail(reignd_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets the result of a success about to be returned; takes `result`. */
void reignd_call_set_result(reignd_call *call, cJSON *result);

/*
 * Completes a call whose operation returned REIGND_PENDING: err 0 or a
 * negative REIGN_E* code, msg a sentence for a failure (NULL: the code's
 * own), result (taken; may be NULL) for a success.  Frees the call.
 */
void reignd_call_done(reignd_call *call, int err, const char *msg, cJSON *result);

/* Who asked, for the daemon's log: "control (uid 0, pid 123)" or "peer 10.0.0.2:4711". */
const char *reignd_call_origin(const reignd_call *call);

/*
 * The daemon fills this table; the control socket and the peer endpoint
 * only call it.  A NULL operation is answered with REIGN_ENOTSUP.  Names
 * (service, node) are the request's strings, borrowed for the call only;
 * an unknown service is the operation's to refuse (REIGN_ENOENT).
 */
typedef struct reignd_ops {
    void *ctx; /* passed to every operation */

    /*
     * A snapshot of the daemon, new cJSON the caller frees; NULL on out of
     * memory.  `reign ctl status` shows it and the peer endpoint answers a
     * service's state from it, so it has this shape (unknown keys are
     * passed through; missing ones are shown as "-"):
     *
     *   {"services": [
     *      {"name": "S",             the [service NAME] section
     *       "node": "ID",            this node's id for S
     *       "state": "active",       the service's FSM state (fsm.h's name)
     *       "health": "healthy",     initializing, healthy, unhealthy,
     *                                not_responding, monitor_failed
     *       "paused": false,         the election is paused (every node obeys)
     *       "paused_by": "ID" | null, who paused it
     *       "leader": "ID" | null,   the election's leader as last seen
     *       "term": 7, "token": 12,  this node's, while it leads (else 0)
     *       "failovers": 2,          times S became active here
     *       "activated": true,       become-active succeeded for this leadership
     *       "election": "E",
     *       "instance": "HEX",       this daemon run's id (breadcrumb.h)
     *       "conflict": "..." | null, another live daemon stands with this node id
     *       "failover_to": "ID" | null, a failover from here under way
     *       "reason": "..."},        the last transition's reason
     *      ...]}
     */
    cJSON *(*status)(void *ctx);

    /* Give up the active role of `service`, standing again after delay_s. */
    int (*cede)(void *ctx, reignd_call *call, const char *service, double delay_s);

    /* Graceful failover of `service` to node `to` (ZKFC's gracefulFailover):
     * refused, with the reason, unless `to` is a healthy standby.  With
     * `wait`, completed once `to` is active (or failed with the reason it is
     * not); without, once handed over. */
    int (*failover)(void *ctx, reignd_call *call, const char *service, const char *to, int wait);

    /* Maintenance mode for the election of `service` (kept in the store, so
     * every node's daemon obeys it): no automatic failover until resumed. */
    int (*pause)(void *ctx, reignd_call *call, const char *service);
    int (*resume)(void *ctx, reignd_call *call, const char *service);

    /*
     * Graceful fence, asked by another node's reignd through the peer
     * endpoint: make `service` standby here, for node `from` which won the
     * election with term `term`.  Succeed only once the service is standby
     * (the become-standby hook ran successfully) or was not active anyway.
     */
    int (*standby)(void *ctx, reignd_call *call, const char *service, const char *from,
                   uint64_t term);

    /*
     * The status page's data (page.h), read-only: status's snapshot, and in
     * each service also "backend", "check" (what the health check looks at:
     * {"type","target"|null,"interval_ms","rise","fall"}), and what its store
     * says now: "store" {"leader":{"id","term","token","since_ms"}|null,
     * "candidates":[{"id","priority","joined_ms","service_address",
     * "peer_address"}...],"takeover_ms"} and "history" {"total","terms":[
     * {"term","token","id","started_ms","ended_ms","ended_estimated","end"}
     * ...]} (the latest 30), either one {"error","unsupported"} when it cannot
     * be read; and at the top "generated_ms" and "version".  Completed once
     * every store has answered.
     */
    int (*view)(void *ctx, reignd_call *call);
} reignd_ops;

/* ---- requests (pure; the fuzz target drives this) ------------------------ */

typedef enum reignd_op {
    REIGND_OP_STATUS,
    REIGND_OP_CEDE,
    REIGND_OP_FAILOVER,
    REIGND_OP_PAUSE,
    REIGND_OP_RESUME,
} reignd_op;

typedef struct reignd_request {
    reignd_op op;
    char *service; /* malloc'd; NULL for status */
    char *to;      /* malloc'd; failover only */
    double delay_s;
    int no_wait; /* failover: "wait":false */
} reignd_request;

/*
 * Parses one request line (without its newline; need not be NUL-terminated).
 * Returns 0 and fills *req (free with reignd_request_clear), or a negative
 * REIGN_E* code (REIGN_EINVAL, REIGN_E2BIG, REIGN_ENOMEM) with a one-line
 * reason in err.  Names must be 1..REIGN_NAME_MAX printable characters.
 */
int reignd_request_parse(const char *line, size_t len, reignd_request *req, char *err,
                         size_t errlen);
void reignd_request_clear(reignd_request *req);

/* The name of an op in requests ("status", ...). */
const char *reignd_op_name(reignd_op op);

/* ---- the control server -------------------------------------------------- */

typedef struct reignd_control reignd_control;

typedef struct reignd_control_options {
    size_t size;      /* sizeof(reignd_control_options) */
    const char *path; /* the socket; NULL: REIGND_CONTROL_SOCKET_DEFAULT */
    const reignd_ops *ops;
    reign_log_fn *log_fn; /* refusals and errors; NULL: silent */
    void *log_userdata;
} reignd_control_options;

/*
 * Creates the socket's directory if missing (0700; an existing one must be
 * ours and not group/other accessible), replaces a stale socket (one no one
 * answers on; a live one is REIGN_EEXIST: another daemon runs), binds with a
 * umask that keeps the socket 0600 from the start, and listens on `loop`.
 * Ignores SIGPIPE for the process (a client gone before its answer).
 * Returns 0 and *ret, or a negative REIGN_E* code with the reason in err.
 */
int reignd_control_start(uv_loop_t *loop, const reignd_control_options *opts, reignd_control **ret,
                         char *err, size_t errlen);

/*
 * What reignd_control_start() would refuse, checked without creating,
 * binding or removing anything (reignd --check): the path's length, its
 * directory (one that exists must be ours and 0700; a missing one must be
 * creatable: its parent exists and is writable), and a file in the way
 * that is not a socket.  *running is set when a daemon answers on the
 * socket (not an error here: a configuration is checked beside the daemon
 * that runs it).  0, or a negative REIGN_E* code with the reason in err.
 */
int reignd_control_check(const char *path, int *running, char *err, size_t errlen);

/*
 * Stops listening, closes every connection and removes the socket file.
 * Memory is released in libuv close callbacks: run the loop afterwards.
 * Pending calls stay valid (their answers are dropped).  NULL-safe.
 */
void reignd_control_close(reignd_control *ctl);

#endif
