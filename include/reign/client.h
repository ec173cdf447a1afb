/*
 * reign/client.h - a connection to a coordination store, and how it runs.
 *
 * A reign_client is made from a URI and owns one session with the store
 * (for ZooKeeper: one ZooKeeper session through the multi-threaded C client).
 * Recipes (elections, ...) are attached to a client and share its session.
 *
 * Execution model
 * ---------------
 * libreign owns no event loop.  A client exposes one file descriptor
 * (reign_client_get_fd(): becomes readable when there is work), the time
 * until its next deadline (reign_client_get_timeout_ms()), and
 * reign_client_process(), which does the work.  Every state change of every
 * recipe and every user callback runs inside reign_client_process(), on the
 * thread that calls it (the "loop thread").  The ZooKeeper client's own
 * threads only copy results into a queue and wake the descriptor; no user
 * code and no blocking call ever runs on them.
 *
 * Programs without a loop call reign_client_run(); libuv programs use
 * <reign/adapters/libuv.h>.
 *
 * Thread safety: a client and everything attached to it must be used from
 * one thread at a time (normally the loop thread).  Callbacks may call any
 * libreign function on the same client, including the *_free() functions of
 * the object that is calling back (freeing is deferred safely); they must not
 * block, since leadership validity is only extended while the loop turns.
 * No callback is ever invoked while a libreign lock is held.
 *
 * URIs
 * ----
 *   zk://[user[:password]@]host:port[,host:port...][/chroot][?param=value&...]
 *
 * Parameters (each may also be set in reign_client_options, which wins):
 *   session_timeout_ms  requested ZooKeeper session timeout (default 10000);
 *                       the server may negotiate it within its bounds
 *   connect_timeout_ms  how long reign_client_wait_connected() and the first
 *                       connection may take (default 5000)
 *   op_timeout_ms       total time an operation may take across retries
 *                       (default 10000; Tera's tera_zk_timeout)
 *   retry_period_ms     pause between retries (default 1000;
 *                       tera_zk_retry_period)
 *   retry_max           retries after the first attempt (default 10;
 *                       tera_zk_retry_max_times)
 *   suspend_policy      "deadline" (default) or "immediate", see below
 *   password_file       a file whose first line is the password of `user`
 *   guardian            "on" or "off": a helper process that ends this
 *                       client's leaderships at once if its process dies
 *                       ("The guardian" below)
 *
 * SQL leases (SOFARegistry's distribute_lock table; docs/sql-leases.md):
 *
 *   sqlite:///absolute/path/file.db[?param=value&...]
 *   mysql://user[:password]@host[:port]/database[?...]      (or mariadb://)
 *   postgres://user[:password]@host[:port]/database[?...]   (or postgresql://)
 *
 * Parameters:
 *   lease_ms            lease length (default 10000; session_timeout_ms in
 *                       the options sets it too)
 *   renew_ms            a leader renews its lease this often (default
 *                       lease/5)
 *   poll_ms             followers read the lease (or, while it is held in
 *                       a session, the session keeper looks) this often
 *                       (default renew_ms; the first poll at a random
 *                       point of the period, to spread candidates); on
 *                       SQLite and PostgreSQL, which tell followers of a
 *                       release or a takeover (a notice file beside the
 *                       database, LISTEN/NOTIFY), they also read when told
 *   statement_timeout_ms  (default renew/2, at most 5000)
 *   connect_timeout_ms, retry_period_ms (between reconnections),
 *   suspend_policy, password_file, guardian   as for ZooKeeper
 *   table               the lease table (default distribute_lock), created
 *                       or upgraded by the client
 *   data_center         the rows' data_center column (default "default")
 *
 * A leader holds its lease until the send time of its last successful
 * renewal + lease - margin (margin = lease/10, at least 50 ms), on its own
 * monotonic clock, and is demoted then if no renewal succeeded meanwhile;
 * expiry is judged by the database's clock alone, and no follower can take
 * the lease before the database's clock passes renewal + lease.  Settings
 * that would break that rule are refused by reign_client_new()
 * (REIGN_EINVAL, the message says why): renew_ms * 3 must fit in
 * lease - margin, statement_timeout_ms must be shorter than renew_ms,
 * poll_ms no longer than the lease.  The connection state is SUSPENDED
 * while the store cannot be reached and RECONNECTED when it is back; there
 * is no session to lose, so never LOST - except on SQLite, whose file
 * deleted or replaced under the client takes every lease held in it: LOST
 * (leaders demoted with REIGN_DEMOTE_SESSION_LOST), then, after the retry
 * period, CONNECTED on the file the path names by then, where the recipes
 * stand again (docs/sql-leases.md says how to replace a file safely).
 * A wrong password, a missing database or a table with a foreign layout
 * close the client
 * (reign_client_wait_connected() returns REIGN_EAUTH, REIGN_ENOENT,
 * REIGN_EFOREIGN..., and reign_client_errmsg() says why); so does a server
 * host name that does not exist, before the first connection
 * (REIGN_ECONNECT, "host 'NAME' does not resolve: ...", as on ZooKeeper).
 *
 * Credentials: with a user in the URI, libreign authenticates with
 * ZooKeeper's digest scheme (SQL stores: as that database user) and every
 * node it creates gets the ACL
 * "digest user: all, world: read" - anyone can read an election, only holders
 * of the credentials can change it.  The password comes from the URI, else
 * the REIGN_PASSWORD environment variable, else password_file; a user with no
 * password anywhere is an error (REIGN_EAUTH).  Without a user, nodes are
 * created world-writable.  Passwords are never logged: reign_uri_redact()
 * gives a URI fit for printing.
 *
 * Connection states and safety
 * ----------------------------
 * CONNECTED    a new session is established (the first one, or a new one
 *              after LOST); recipes stand (again) by themselves.
 * SUSPENDED    the connection is gone; the session may still be alive.
 * RECONNECTED  the same session is back.
 * LOST         the session expired, or the suspension outlived the safety
 *              deadline, after which the server may have expired it.
 * CLOSED       reign_client_close() finished, or a fatal error (see errmsg).
 *
 * The safety deadline: the client sends a cheap round trip (a sync) from the
 * loop thread every session_timeout/5 while it holds any leadership.  A round
 * trip answered proves the server heard from the session no earlier than the
 * moment it was sent, and the server cannot expire the session less than a
 * session timeout after that.  Leadership is therefore valid until
 * send_time + 3/4 of the negotiated session timeout (the last quarter covers
 * an ensemble's ping forwarding, at most tickTime/2 <= timeout/4, and clock
 * rate differences).  A leader that cannot renew that bound - connection
 * suspended, server silent, or its own loop stalled - is demoted when it
 * passes, before any other candidate could have been elected.  With
 * suspend_policy=immediate a leader is demoted as soon as the connection is
 * suspended.
 */
#ifndef REIGN_CLIENT_H
#define REIGN_CLIENT_H

#include <sys/types.h>

#include <reign/common.h>
#include <reign/process.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct reign_client reign_client;

typedef enum reign_conn_state {
    REIGN_CONN_CONNECTING = 0,
    REIGN_CONN_CONNECTED,
    REIGN_CONN_SUSPENDED,
    REIGN_CONN_RECONNECTED,
    REIGN_CONN_LOST,
    REIGN_CONN_CLOSED
} reign_conn_state;

/* The lower-case name of a state ("suspended"). */
REIGN_EXPORT const char *reign_conn_state_name(reign_conn_state state);

typedef enum reign_suspend_policy {
    REIGN_SUSPEND_DEFAULT = 0, /* take it from the URI, else DEADLINE */
    REIGN_SUSPEND_DEADLINE,    /* demote when the safety deadline passes */
    REIGN_SUSPEND_IMMEDIATE    /* demote as soon as the connection is suspended */
} reign_suspend_policy;

/* Whether a client runs a guardian (see "The guardian" below). */
typedef enum reign_guardian_mode {
    REIGN_GUARDIAN_DEFAULT = 0, /* the URI's guardian=on|off, else off */
    REIGN_GUARDIAN_OFF,         /* off, unless the URI says guardian=on */
    REIGN_GUARDIAN_ON           /* on, unless the URI says guardian=off */
} reign_guardian_mode;

/*
 * Called on every connection state change, inside reign_client_process().
 * Recipes have already been told when it runs.
 */
typedef void reign_client_state_cb(reign_client *client, reign_conn_state state, void *userdata);

/*
 * Options for reign_client_new().  Zero-initialise, set `size` to
 * sizeof(reign_client_options), then set what you need: zero means "from the
 * URI, else the default".
 */
typedef struct reign_client_options {
    size_t size;
    int session_timeout_ms;
    int connect_timeout_ms;
    int op_timeout_ms;
    int retry_period_ms;
    int retry_max; /* 0 = default; -1 = no retries */
    reign_suspend_policy suspend_policy;
    reign_client_state_cb *on_state;
    reign_log_fn *log_fn;      /* NULL: the process-wide sink */
    reign_log_level log_level; /* with log_fn: most verbose level passed */
    void *userdata;            /* for on_state and log_fn */
    /* Since 0.1: the program's choice; the URI's guardian= parameter overrides it. */
    reign_guardian_mode guardian;
} reign_client_options;

/*
 * Creates a client for `uri` and starts connecting, without blocking.
 * `opts` may be NULL.  On success *ret is the client and 0 is returned; on
 * failure *ret is NULL and a negative code is returned: REIGN_EURI for a
 * malformed URI, REIGN_EAUTH for missing credentials, REIGN_ENOTSUP for a
 * scheme this build does not support.  `errbuf`, if not NULL, receives a
 * one-line explanation of the failure (at most errlen bytes, NUL-terminated).
 */
REIGN_EXPORT int reign_client_new(reign_client **ret, const char *uri,
                                  const reign_client_options *opts, char *errbuf, size_t errlen);

/*
 * Runs the client until its first session is established or its connect
 * timeout passes, processing events meanwhile (callbacks may run).  Returns 0,
 * REIGN_ETIMEDOUT (nothing answered in time: the message names the servers),
 * REIGN_EAUTH, or REIGN_ECLOSED.  For programs that need a connection before
 * going on; event-driven programs watch for REIGN_CONN_CONNECTED instead.
 */
REIGN_EXPORT int reign_client_wait_connected(reign_client *client);

/* The descriptor to poll for reading; stable for the client's life. */
REIGN_EXPORT int reign_client_get_fd(const reign_client *client);

/* Milliseconds until reign_client_process() must run even if the descriptor
 * stays quiet (0: now), or -1 for no deadline. */
REIGN_EXPORT int64_t reign_client_get_timeout_ms(const reign_client *client);

/*
 * Does all pending work: hand-offs from the store's threads, timers,
 * deadlines, and the callbacks they cause.  Never blocks.  Returns 0, or
 * REIGN_ECLOSED once the client is closed.
 */
REIGN_EXPORT int reign_client_process(reign_client *client);

/*
 * A plain poll(2) loop around get_fd/get_timeout/process, until
 * reign_client_stop() is called (from a callback) or the client closes.
 * Returns 0 after reign_client_stop(), REIGN_ECLOSED after a close.
 */
REIGN_EXPORT int reign_client_run(reign_client *client);

/* Makes reign_client_run() return after the current iteration. */
REIGN_EXPORT void reign_client_stop(reign_client *client);

/*
 * Starts an orderly close: every attached recipe resigns (its nodes are
 * deleted) and the session is closed, so that other candidates take over at
 * once.  Completes asynchronously: the state becomes CLOSED.  Operations
 * still pending then complete with REIGN_ECLOSED.
 */
REIGN_EXPORT void reign_client_close(reign_client *client);

/*
 * Frees the client.  Recipes still attached are freed with it (without
 * further callbacks).  If the session is open it is closed.  On ZooKeeper
 * and etcd the call returns once the store has ended it: every other client
 * that reads after that finds the session's nodes gone.  On ZooKeeper it
 * waits for the answers to the requests still out (at most the operation
 * timeout, and 2 s), then for the server's answer to the close (at most
 * 1.5 s); on etcd the lease is revoked (at most 1 s).  A server that does
 * not answer costs those bounds, no more.  NULL-safe; returns NULL.
 */
REIGN_EXPORT reign_client *reign_client_free(reign_client *client);

/* The current connection state. */
REIGN_EXPORT reign_conn_state reign_client_state(const reign_client *client);

/* The session timeout the server granted, in ms (0 before the first
 * connection); on SQL, the lease length. */
REIGN_EXPORT int reign_client_session_timeout_ms(const reign_client *client);

/* The store's session id (ZooKeeper: the 64-bit session id), 0 if none. */
REIGN_EXPORT int64_t reign_client_session_id(const reign_client *client);

/* "zookeeper", "etcd", "sqlite", "mariadb" or "postgres". */
REIGN_EXPORT const char *reign_client_backend(const reign_client *client);

/*
 * The worst case, in ms, from a leader's crash until another candidate can
 * be elected with this client's settings: the session timeout on
 * ZooKeeper; on SQL the lease plus a poll period plus three statements (a
 * follower sees the leader's session's last beat within a poll period, counts
 * a whole lease from then on its own monotonic clock, then reaps the session,
 * reads and takes; with leases=row two: no session to reap).
 * A leader that resigns is replaced at once.
 */
REIGN_EXPORT int64_t reign_client_takeover_ms(const reign_client *client);

/* The detail of the client's last error, or "" if none.  Valid until the next call. */
REIGN_EXPORT const char *reign_client_errmsg(const reign_client *client);

/* The userdata given in the options. */
REIGN_EXPORT void *reign_client_userdata(const reign_client *client);

/*
 * The guardian
 * ------------
 * A process killed by SIGKILL or the OOM killer, or one that crashes, runs
 * no code: without help its leaderships end only when the store times them
 * out (the ZooKeeper session or the SQL lease: 10 s by default), and
 * whatever it started runs on beside the next leader's.  A client with a
 * guardian spawns, when it first holds something a dead process must give
 * up (it stands in an election, joins a group, registers a worker, takes a
 * lease or is given a process group; a client that only reads never does),
 * a small helper process, reign-guardian (installed in
 * LIBEXECDIR/reign/; the environment variable REIGN_GUARDIAN_PATH names
 * another), which outlives the client's process and acts only when that
 * process has exited (a pidfd tells it):
 *
 *   1. it SIGKILLs every process group given to reign_client_guard_pgid()
 *      and waits until none of their processes runs;
 *   2. it ends every leadership at once: on ZooKeeper it attaches to the
 *      session and closes it (its ephemeral nodes go and the successor's
 *      watch fires); on SQL it releases each lease the client held, by
 *      compare-and-set on owner, guid and term, so a lease someone else has
 *      taken meanwhile is never touched (PostgreSQL and SQLite followers are
 *      told at once; MariaDB followers see it at their next poll).
 *
 * So when a process dies on a host that lives on, a successor is elected in
 * milliseconds instead of a session timeout (docs/benchmarks.md has the
 * figures).  When the host dies, or loses the network, or the process only
 * stops (SIGSTOP, a debugger: it is alive, nothing happens), the session or
 * lease times out as before: the guardian speeds up takeover after a
 * process's death, it is never needed for safety.
 *
 * A clean end (reign_client_free()) tells the guardian to leave without
 * acting.  It never acts on its socket's end of file alone: a process that
 * closed it and lives keeps leading (and its client starts a new guardian).
 * If the guardian dies, the client logs it once and starts another.  If one
 * cannot be started (no helper, spawning refused, no pidfd: Linux before
 * 5.3), the client logs one warning and works as without.  Secrets reach
 * the guardian only over its socket, never in its argv or environment.
 * It runs in a session and process group of its own and ignores SIGINT,
 * SIGTERM and SIGHUP, so a Ctrl-C or a `kill 0` aimed at the client's group
 * spares it.  Under systemd it is in the unit's control group; when the unit
 * is stopped or its main process dies, KillMode=control-group sends SIGTERM
 * (ignored) to what is left and SIGKILL only after TimeoutStopSec, long
 * after the guardian has acted; only a SIGKILL of the whole group at once
 * takes it down with its client (then the session or lease times out).
 *
 * Takeover time, by what happened to a leader (the successor's wait, on
 * top of its own claim, one or two round trips):
 *
 *   resigned, closed, freed, exited cleanly     none: its nodes or row go now
 *   process died, guardian running               none: the guardian ends it
 *                                                (SQL on MariaDB: up to one
 *                                                poll_ms, followers poll)
 *   process died, no guardian                    the session timeout (ZooKeeper)
 *   process stopped (SIGSTOP), host died,        or lease + poll + 3 statements
 *   host cut off from the store                  (SQL): reign_client_takeover_ms()
 *
 * Which clients run one: reign_client_options.guardian sets the program's
 * default (off for the library; the reign tool and reignd turn it on), and a
 * guardian=on|off parameter in the URI overrides it, so that an operator
 * decides per deployment.  REIGN_GUARDIAN=off in the environment turns it
 * off everywhere.
 */

/* The guardian's process id, or 0 if the client runs none (or it is starting). */
REIGN_EXPORT pid_t reign_client_guardian_pid(const reign_client *client);

/*
 * Asks the client's guardian to SIGKILL process group `pgid` (and wait until
 * it is gone) before it ends the client's leaderships, should the client's
 * process die: for a command run while leading.  Register the group before
 * the command can run (e.g. fork, setpgid, register, then let the child
 * exec) and unregister it once the group is gone, before the group's leader
 * is reaped, so that the id cannot have been reused.  0; REIGN_ENOTSUP if the
 * client runs no guardian (the call still succeeds if one is started later:
 * it is told); REIGN_EINVAL for pgid <= 1.
 */
REIGN_EXPORT int reign_client_guard_pgid(reign_client *client, pid_t pgid);
/* Forgets a process group given to reign_client_guard_pgid().  0 or REIGN_EINVAL. */
REIGN_EXPORT int reign_client_unguard_pgid(reign_client *client, pid_t pgid);

/* reign_kill_group(): <reign/process.h>. */

/*
 * Checks `uri` and `opts` as reign_client_new() would, without contacting
 * the store or starting anything: the scheme, hosts and path, every
 * parameter (reign's own, and for MariaDB and PostgreSQL those their client
 * library takes, which loads that library), numbers within their ranges, the
 * lease timing's safety rule, and the credentials (a password from the URI,
 * REIGN_PASSWORD or a readable password_file where the store needs one).
 * For programs that check a configuration before they use it (reignd
 * --check).  Returns 0, or the code reign_client_new() would return
 * (REIGN_EURI, REIGN_EINVAL, REIGN_EAUTH, REIGN_ENOTSUP, REIGN_ENOMEM) with
 * one line in `errbuf`, which may be NULL.
 */
REIGN_EXPORT int reign_uri_check(const char *uri, const reign_client_options *opts, char *errbuf,
                                 size_t errlen);

/*
 * Copies `uri` into `out` with any password replaced by "***", for logs and
 * messages.  Returns the length it needed (like snprintf).
 */
REIGN_EXPORT size_t reign_uri_redact(const char *uri, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
