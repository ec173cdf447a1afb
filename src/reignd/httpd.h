/*
 * httpd.h - a libmicrohttpd server driven from a libuv loop, shared by the
 * peer endpoint (peer.c) and the metrics endpoint (metrics.c).
 *
 * libmicrohttpd runs in its external mode with epoll: it has no thread of
 * its own, and its whole state is one epoll descriptor that a uv_poll
 * watches, plus a uv_timer at its next connection timeout.  So every
 * handler runs on the daemon's loop thread, next to the state it reads,
 * without locks, and the daemon stays one thread (and small).
 */
#ifndef REIGND_HTTPD_H
#define REIGND_HTTPD_H

#include <stddef.h>
#include <sys/socket.h>

#include <microhttpd.h>
#include <uv.h>

#include <reign/reign.h>

typedef struct reignd_httpd reignd_httpd;

typedef struct reignd_httpd_options {
    const char *what;   /* "peer", "metrics": names the server in messages */
    const char *listen; /* "HOST:PORT", "[V6]:PORT" or ":PORT" (every IPv4 address) */
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed; /* may be NULL */
    void *cls;                              /* for both */
    int suspend;                            /* handlers may suspend connections */
    reign_log_fn *log_fn;
    void *log_userdata;
} reignd_httpd_options;

/* Binds, listens and starts serving on `loop`.  0 and *ret, or a negative
 * REIGN_E* code with the reason in err. */
int reignd_httpd_start(uv_loop_t *loop, const reignd_httpd_options *opts, reignd_httpd **ret,
                       char *err, size_t errlen);

int reignd_httpd_port(const reignd_httpd *h);

/* Lets libmicrohttpd run soon (after resuming a suspended connection). */
void reignd_httpd_kick(reignd_httpd *h);

/* Stops the server at once (libmicrohttpd calls `completed` for every open
 * request before this returns); the loop handles are freed in close
 * callbacks.  Resume every suspended connection first.  NULL-safe. */
void reignd_httpd_close(reignd_httpd *h);

/*
 * Splits "HOST:PORT", "[V6]:PORT" or ":PORT" (host "") into host and port
 * strings.  0, or REIGN_EINVAL if there is no port or a part is too long.
 */
int reignd__split_hostport(const char *s, char *host, size_t hostlen, char *port, size_t portlen);

/* Queues an answer (`body` copied) with status `code`, and one more
 * header `header: value` unless they are NULL. */
enum MHD_Result reignd__httpd_reply(struct MHD_Connection *conn, unsigned code, const char *type,
                                    const char *body, size_t len, const char *header,
                                    const char *value);

/* Queues a 200 answer of `body` (malloc'd: taken, and freed once sent; NULL: a 500 "out of
 * memory" instead) with its type and the headers `headers` (name, value, ..., NULL; or NULL). */
enum MHD_Result reignd__httpd_reply_taken(struct MHD_Connection *conn, const char *type, char *body,
                                          size_t len, const char *const *headers);

#endif
