/*
 * reign/common.h - error codes, logging, allocator and version of libreign.
 *
 * Every libreign function that can fail returns 0 on success or a negative
 * REIGN_E* code.  Where a POSIX errno says the same thing the code equals
 * -errno (REIGN_EINVAL == -EINVAL); codes specific to reign are below -1000.
 * reign_strerror() gives a sentence, reign_err_name() the symbolic name.
 * Objects keep the detail of their last error (reign_client_errmsg()).
 *
 * The library never writes to stderr or exits: it reports through the log
 * callback set here, and returns errors.
 */
#ifndef REIGN_COMMON_H
#define REIGN_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(REIGN_BUILDING) && defined(__GNUC__)
#define REIGN_EXPORT __attribute__((visibility("default")))
#else
#define REIGN_EXPORT
#endif

#if defined(__GNUC__)
#define REIGN_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define REIGN_PRINTF(a, b)
#endif

#define REIGN_VERSION_MAJOR  0
#define REIGN_VERSION_MINOR  1
#define REIGN_VERSION_PATCH  0
#define REIGN_VERSION_STRING "0.1.0"

/* The version of the library the program runs with, "MAJOR.MINOR.PATCH". */
REIGN_EXPORT const char *reign_version(void);

/*
 * Error codes: XX(name, value, message).  One table, so that the enum,
 * reign_strerror() and reign_err_name() can never disagree.
 */
#define REIGN_ERRNO_MAP(XX)                                                                        \
    XX(EINVAL, -EINVAL, "invalid argument")                                                        \
    XX(ENOMEM, -ENOMEM, "out of memory")                                                           \
    XX(ETIMEDOUT, -ETIMEDOUT, "timed out")                                                         \
    XX(ENOENT, -ENOENT, "no such node or row")                                                     \
    XX(EEXIST, -EEXIST, "already exists")                                                          \
    XX(E2BIG, -E2BIG, "payload too large")                                                         \
    XX(EACCES, -EACCES, "not authorized by the store's access control")                            \
    XX(ECANCELED, -ECANCELED, "canceled")                                                          \
    XX(EBUSY, -EBUSY, "busy: another operation is in progress")                                    \
    XX(ENOTSUP, -ENOTSUP, "not supported by this backend or strategy")                             \
    XX(EURI, -1001, "malformed URI")                                                               \
    XX(ENAME, -1002, "illegal name")                                                               \
    XX(ECONNLOSS, -1003, "connection lost; the outcome of the operation is unknown")               \
    XX(ESESSION, -1004, "session expired or closed")                                               \
    XX(ECONNECT, -1005, "cannot connect to the store")                                             \
    XX(EAUTH, -1006, "authentication failed or credentials missing")                               \
    XX(EFOREIGN, -1007, "foreign data where reign expects its own")                                \
    XX(ESTATE, -1008, "not allowed in the current state")                                          \
    XX(EBADVERSION, -1009, "version mismatch")                                                     \
    XX(ENOTEMPTY, -1010, "node has children")                                                      \
    XX(EBACKEND, -1011, "unexpected error from the store")                                         \
    XX(ECLOSED, -1012, "object is closing")

typedef enum reign_errno {
#define REIGN__ERR_ENUM(name, value, msg) REIGN_##name = (value),
    REIGN_ERRNO_MAP(REIGN__ERR_ENUM)
#undef REIGN__ERR_ENUM
        REIGN__ERR_DUMMY = 0
} reign_errno;

/* A sentence for an error code ("malformed URI"); never NULL. */
REIGN_EXPORT const char *reign_strerror(int err);
/* The symbolic name of an error code ("REIGN_EURI"); never NULL. */
REIGN_EXPORT const char *reign_err_name(int err);

/* ---- logging ------------------------------------------------------------ */

typedef enum reign_log_level {
    REIGN_LOG_ERROR = 0,
    REIGN_LOG_WARN = 1,
    REIGN_LOG_NOTICE = 2,
    REIGN_LOG_INFO = 3,
    REIGN_LOG_DEBUG = 4
} reign_log_level;

/*
 * A log sink.  `msg` is one line without a trailing newline, borrowed for the
 * call only.  It is called on the thread that logs: normally the thread that
 * runs reign_client_process(), but messages of the ZooKeeper C client itself
 * arrive on its own threads, so a sink must be thread-safe.  Secrets
 * (passwords, digests) are never passed to it.
 */
typedef void reign_log_fn(reign_log_level level, const char *msg, void *userdata);

/*
 * Sets the process-wide log sink and the most verbose level passed to it.
 * With no sink (the default) nothing is logged.  Clients may override the
 * sink with their own (reign_client_options.log_fn).  Call it before creating
 * clients; it is not synchronised with running clients.
 */
REIGN_EXPORT void reign_set_log(reign_log_fn *fn, void *userdata, reign_log_level max_level);

/* Parses "error", "warn", "notice", "info", "debug"; returns the level or REIGN_EINVAL. */
REIGN_EXPORT int reign_log_level_parse(const char *s);
/* The name of a level ("info"). */
REIGN_EXPORT const char *reign_log_level_name(reign_log_level level);

/* ---- tracing ------------------------------------------------------------ */

/*
 * A step trace, for finding where a failover's time goes (docs/benchmarks.md
 * shows one read).  When the environment variable REIGN_TRACE names a file
 * the first time the library is loaded, libreign appends one line per step
 * to it: the CLOCK_MONOTONIC time in nanoseconds, the process id, the thread
 * id, the step and a detail, separated by single spaces:
 *
 *     1234567890123 4242 4242 zk.send create /reign/e/x/n_
 *
 * Steps include the signal seen and the resignation decided (by the tools),
 * each ZooKeeper request sent and answered, each watch event as it arrives
 * on the client library's thread and as the loop takes it, each SQL
 * statement sent and answered and each change notice (sql.send, sql.answer,
 * sql.notice), a claim sent and ELECTED emitted, each group event, and a
 * guardian's acting on a death (guardian.died, guardian.ended).  Several
 * processes may share one file (each line is one write(2) to a file opened
 * with O_APPEND).  Without REIGN_TRACE, nothing is written and a step costs
 * one branch.  Names and paths appear in the file; credentials never do.
 */

/* True when REIGN_TRACE is set and its file could be opened. */
REIGN_EXPORT bool reign_trace_enabled(void);

/*
 * Appends one step (a word without spaces, e.g. "cli.signal") and a detail
 * formatted as printf would (may be NULL) to the trace; a no-op when tracing
 * is off.  Safe from any thread, not from a signal handler.
 */
REIGN_EXPORT void reign_trace(const char *step, const char *fmt, ...) REIGN_PRINTF(2, 3);

/* ---- allocator ---------------------------------------------------------- */

/*
 * Replaces the allocator used for every allocation of libreign (not those of
 * the ZooKeeper C client or SQL client libraries).  All three must be given,
 * or all NULL to restore malloc/realloc/free.  Call it before creating any
 * object.  A failing allocator makes the calling function return
 * REIGN_ENOMEM; the library never exits on allocation failure.
 */
REIGN_EXPORT int reign_set_allocator(void *(*malloc_fn)(size_t),
                                     void *(*realloc_fn)(void *, size_t), void (*free_fn)(void *));

/* ---- time --------------------------------------------------------------- */

/* CLOCK_MONOTONIC now, in nanoseconds: the clock of every deadline in libreign. */
REIGN_EXPORT int64_t reign_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
