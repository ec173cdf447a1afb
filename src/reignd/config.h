/*
 * config.h - reignd's configuration: one INI file (man reign.conf(5)),
 * parsed with inih into a reignd_config.
 *
 * The file has one [daemon] section and one or more [service NAME]
 * sections.  Every problem is reported as "FILE:LINE: message" (the line
 * of the offending key, or of the section header for a missing key), and a
 * configuration with any problem is refused as a whole.  Values are checked
 * here, so the rest of the daemon can trust them: durations are positive
 * milliseconds, counts are >= 1, addresses are "host:port" with a port in
 * 1..65535, and the election URI holds no inline password.
 *
 * Commands (health checks, hooks, shell fence methods) are written by the
 * administrator and run as `/bin/sh -c COMMAND`; the daemon never splices
 * data into them: the service, state, term, token and fence target reach a
 * command only through REIGN_* environment variables (hooks.h).
 *
 * Everything in a reignd_config is owned by it and freed by
 * reignd_config_free().  It is read once at start and then only read.
 */
#ifndef REIGND_CONFIG_H
#define REIGND_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include <reign/common.h>

/*
 * Result codes besides 0, REIGN_EINVAL (any other error in the file),
 * REIGN_ENOMEM and -errno (the file cannot be read).  A service without a
 * fence method gets its own code, so that the daemon can refuse to start
 * with a message saying what to do and an exit code of its own (ZKFC's
 * "no fencing configured").  It is returned only when that is the sole
 * problem of the file.
 */
#define REIGND_ENOFENCE (-2001)

/* Longest line the parser accepts, newline excluded (inih's limit). */
#define REIGND_CONFIG_MAX_LINE 197

typedef enum reignd_log_level {
    REIGND_LOG_ERROR,
    REIGND_LOG_WARNING,
    REIGND_LOG_NOTICE,
    REIGND_LOG_INFO,
    REIGND_LOG_DEBUG,
} reignd_log_level;

/* How a service's health is checked (key check_type). */
typedef enum reignd_check_type {
    REIGND_CHECK_COMMAND, /* /bin/sh -c TARGET: exit status 0 is healthy */
    REIGND_CHECK_TCP,     /* connect to TARGET (host:port): accepted is healthy */
    REIGND_CHECK_HTTP,    /* GET TARGET (http://host:port/path): a 2xx status is healthy */
} reignd_check_type;

typedef enum reignd_fence_kind {
    REIGND_FENCE_GRACEFUL, /* ask the old active's reignd (its peer_address) to go standby */
    REIGND_FENCE_SHELL,    /* run a command (hooks.h) with the target in its environment */
} reignd_fence_kind;

/* A command the daemon runs, with the time it may take. */
typedef struct reignd_command {
    char *command;      /* text for /bin/sh -c; NULL when not configured */
    int64_t timeout_ms; /* after this the command's process group is killed */
} reignd_command;

/* One fence method, in the order of the configuration. */
typedef struct reignd_fence_method {
    reignd_fence_kind kind;
    char *command;      /* REIGND_FENCE_SHELL: text for /bin/sh -c; else NULL */
    int64_t timeout_ms; /* graceful: the whole request; shell: the command */
    unsigned line;      /* line of its "fence =" key */
} reignd_fence_method;

/* Worst cases derived from a service's settings (reignd_config_timing()). */
typedef struct reignd_timing {
    /* From the service failing to reignd declaring it failed: up to one
     * interval until the next check starts, `fall` failing checks started an
     * interval apart, the last one taking up to its timeout:
     * check_interval_ms * fall + check_timeout_ms. */
    int64_t detection_ms;
    /* All fence methods failing slowly, one after the other: the sum of
     * their timeouts. */
    int64_t fence_ms;
    /* From the service failing until the new active's become_active command
     * has finished, when the old active's reignd is alive (it resigns at
     * once): detection + fence + become_active timeout. */
    int64_t takeover_on_failure_ms;
    /* The same when the old active's whole node dies (nobody resigns; the
     * election moves when its session expires): session timeout + fence +
     * become_active timeout. */
    int64_t takeover_on_crash_ms;
} reignd_timing;

/* One [service NAME] section. */
typedef struct reignd_service_config {
    char *name;    /* NAME from the section header: [A-Za-z0-9._-]{1,64} */
    unsigned line; /* line of the section header */

    /* Where the election is held.  Any URI reign_client_new() accepts
     * (zk://..., sqlite://, mysql://, postgres://); a password only through
     * the URI's password_file= parameter or REIGN_PASSWORD, never inline. */
    char *election_uri;
    unsigned election_uri_line; /* for messages about the store (reignd --check) */
    char *election_name;        /* election name in the store; default: NAME */
    char *node_id;              /* this node's id in the election; default: hostname */
    char *service_address;      /* host:port of the managed service, given to fence commands */
    char *peer_address;         /* host:port where other reignds reach this one; default:
                                   [daemon] peer_listen when its host is not a wildcard */
    int64_t session_timeout_ms; /* requested session timeout (ZooKeeper) / lease (SQL);
                                   default 10000 */

    /* Health check. */
    reignd_check_type check_type;
    char *check_target;        /* command, host:port or http://host:port/path */
    int64_t check_interval_ms; /* from the start of one check to the next; default 1000 */
    int64_t check_timeout_ms;  /* a check running longer is "not responding" and killed;
                                  default: check_interval_ms; never above it */
    int check_rise;            /* consecutive successes to become healthy; default 2 */
    int check_fall;            /* consecutive failures to become unhealthy; default 3 */

    /* Hooks, run one at a time in order (hooks.h).  become_active and
     * become_standby are required; notify is optional (command NULL).
     * Default timeout of each: 30000 ms. */
    reignd_command become_active;
    reignd_command become_standby;
    reignd_command notify;

    /* Fence methods, in order; the first success wins.  At least one. */
    reignd_fence_method *fence;
    size_t n_fence;

    reignd_timing timing; /* derived from the above when the file is loaded */
} reignd_service_config;

/* The whole file. */
typedef struct reignd_config {
    char *path; /* the file as named to reignd_config_load() */

    /* [daemon] */
    char *control_socket;       /* Unix socket of `reign ctl`; default /run/reign/reignd.sock for
                                   root, else $XDG_RUNTIME_DIR/reign/reignd.sock */
    char *peer_listen;          /* host:port of the reignd-to-reignd endpoint; NULL: none (then no
                                   service may use graceful fencing) */
    char *peer_secret_file;     /* file whose first line is the peers' shared secret; required with
                                   peer_listen or graceful fencing */
    char *metrics_listen;       /* host:port of the Prometheus endpoint; NULL: none */
    reignd_log_level log_level; /* default REIGND_LOG_INFO */
    /* The lines of those keys (0: not in the file), and of [daemon] (0: none),
     * for the checks made outside the parser (reignd --check). */
    unsigned daemon_line, control_socket_line, peer_listen_line, peer_secret_file_line,
        metrics_listen_line;

    reignd_service_config *services; /* in file order; at least one */
    size_t n_services;
} reignd_config;

/*
 * Reads and checks the file at `path`.  On success *ret is the
 * configuration and 0 is returned.  On failure *ret is NULL, a negative code
 * is returned (see REIGND_ENOFENCE above), and `err` holds one line,
 * "PATH:LINE: message" (or "PATH: message" for the file as a whole).
 * Messages never hold a password.
 */
int reignd_config_load(const char *path, reignd_config **ret, char *err, size_t errlen);

/*
 * The same for text already in memory (`len` bytes, NUL bytes refused);
 * `name` stands for the path in messages and in config->path.  For tests
 * and the fuzzer.
 */
int reignd_config_parse(const char *text, size_t len, const char *name, reignd_config **ret,
                        char *err, size_t errlen);

/* Frees everything.  NULL-safe; returns NULL. */
reignd_config *reignd_config_free(reignd_config *config);

/* The service called `name`, or NULL. */
const reignd_service_config *reignd_config_service(const reignd_config *config, const char *name);

/*
 * One sentence on a service's timing for the start-up log, e.g. "a failed
 * service is detected within 3.5 s; a new active runs within 9.5 s after a
 * failure, 41.5 s after a crash of its node".  Returns the length needed
 * (like snprintf).
 */
size_t reignd_config_timing_text(const reignd_service_config *svc, char *out, size_t outlen);

/*
 * A warning about the timing of a service, or NULL if none: a failed
 * service noticed later than a dead node (detection above the session
 * timeout).  Not an error: the settings are safe, only slow.
 */
const char *reignd_config_timing_warning(const reignd_service_config *svc);

/*
 * Parses a duration: a positive whole number followed by a unit, "ms", "s",
 * "m" or "h" ("500ms", "2s"), into milliseconds.  A bare number is refused
 * (is 10000 milliseconds or seconds?).  Returns 0 or REIGN_EINVAL.
 */
int reignd_parse_duration_ms(const char *s, int64_t *ms);

/*
 * Splits "host:port" or "[v6address]:port" (port 1..65535; host non-empty,
 * letters, digits, '.', '-', '_', or an IPv6 address in brackets, given
 * back without them).  Returns 0 or REIGN_EINVAL (host too long for
 * `hostlen` included).
 */
int reignd_parse_hostport(const char *s, char *host, size_t hostlen, int *port);

/*
 * Splits "http://host[:port][/path]" (port default 80, path default "/",
 * no spaces or control characters).  *path points into `url`.  Returns 0
 * or REIGN_EINVAL.
 */
int reignd_parse_http_url(const char *url, char *host, size_t hostlen, int *port,
                          const char **path);

/* Names: "error", "warning", ...; "command", "tcp", "http"; "graceful", "shell". */
const char *reignd_log_level_name(reignd_log_level level);
const char *reignd_check_type_name(reignd_check_type type);
const char *reignd_fence_kind_name(reignd_fence_kind kind);

#endif
