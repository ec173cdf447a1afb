/*
 * preflight.c - the checks reignd makes before it contacts any store
 * (preflight.h).  Each reports "FILE:LINE: key: reason", the line of the key
 * concerned (of [daemon], or the file, when the key is not written).
 */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <reign/client.h>

#include "control.h"
#include "httpd.h"
#include "preflight.h"

typedef struct where {
    const reignd_config *cfg;
    char *err;
    size_t errlen;
} where;

__attribute__((format(printf, 5, 6))) static int fail(where *w, int code, unsigned line,
                                                      const char *key, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (line)
        snprintf(w->err, w->errlen, "%s:%u: %s: %s", w->cfg->path, line, key, msg);
    else
        snprintf(w->err, w->errlen, "%s: %s: %s", w->cfg->path, key, msg);
    return code;
}

/* ---- the daemon's own files and addresses --------------------------------- */

static int check_listen(where *w, const char *addr, unsigned line, const char *key)
{
    char host[256], port[16];
    if (!addr)
        return 0;
    if (reignd__split_hostport(addr, host, sizeof(host), port, sizeof(port)) < 0)
        return fail(w, REIGN_EINVAL, line, key, "'%s' is not HOST:PORT", addr);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int g = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (g != 0)
        return fail(w, REIGN_EINVAL, line, key, "host '%s' does not resolve: %s", host,
                    g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
    freeaddrinfo(res);
    return 0;
}

/* Whether a wildcard (or empty) host, which takes the port on every address. */
static bool any_host(const char *host)
{
    return !host[0] || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

/* The two endpoints cannot share a port (on one address, or a wildcard). */
static int check_ports(where *w)
{
    const reignd_config *cfg = w->cfg;
    char h1[256], p1[16], h2[256], p2[16];
    if (!cfg->peer_listen || !cfg->metrics_listen ||
        reignd__split_hostport(cfg->peer_listen, h1, sizeof(h1), p1, sizeof(p1)) < 0 ||
        reignd__split_hostport(cfg->metrics_listen, h2, sizeof(h2), p2, sizeof(p2)) < 0)
        return 0;
    if (atol(p1) != 0 && atol(p1) == atol(p2) &&
        (strcmp(h1, h2) == 0 || any_host(h1) || any_host(h2)))
        return fail(w, REIGN_EINVAL, cfg->metrics_listen_line, "metrics_listen",
                    "port %ld is peer_listen's too (line %u)", atol(p1), cfg->peer_listen_line);
    return 0;
}

static int check_daemon(where *w, reignd_secret *secret, char *note, size_t notelen)
{
    const reignd_config *cfg = w->cfg;
    char why[600];
    if (cfg->peer_secret_file) {
        reignd_secret s;
        int r = reignd_secret_load(cfg->peer_secret_file, &s, why, sizeof(why));
        if (r < 0)
            return fail(w, r, cfg->peer_secret_file_line, "peer_secret_file", "%s", why);
        if (secret)
            *secret = s;
        reignd_secret_wipe(&s);
    }
    int running = 0;
    int r = reignd_control_check(cfg->control_socket, &running, why, sizeof(why));
    if (r < 0)
        return fail(w, r, cfg->control_socket_line ? cfg->control_socket_line : cfg->daemon_line,
                    "control_socket", "%s%s", why,
                    cfg->control_socket_line ? "" : " (the default)");
    if (running)
        snprintf(note, notelen, "a reignd is running on %s", cfg->control_socket);
    if ((r = check_listen(w, cfg->peer_listen, cfg->peer_listen_line, "peer_listen")) < 0 ||
        (r = check_listen(w, cfg->metrics_listen, cfg->metrics_listen_line, "metrics_listen")) < 0)
        return r;
    return check_ports(w);
}

/* ---- the election URIs ------------------------------------------------------ */

/* The library's own reading of the URI, with the options the daemon will give it: parameters
 * (those the SQL servers' client libraries take too), the lease timing, the credentials. */
static int check_uri(where *w, const reignd_service_config *svc)
{
    reign_client_options o = {
        .size = sizeof(o),
        .session_timeout_ms = (int)svc->session_timeout_ms,
        .guardian = REIGN_GUARDIAN_ON,
    };
    char why[600];
    int r = reign_uri_check(svc->election_uri, &o, why, sizeof(why));
    return r < 0 ? fail(w, r, svc->election_uri_line, "election_uri", "%s", why) : 0;
}

int reignd_preflight(const reignd_config *cfg, bool store_only, reignd_secret *secret, char *note,
                     size_t notelen, char *err, size_t errlen)
{
    where w = {cfg, err, errlen};
    note[0] = '\0';
    err[0] = '\0';
    if (secret)
        memset(secret, 0, sizeof(*secret));
    int r = store_only ? 0 : check_daemon(&w, secret, note, notelen);
    for (size_t i = 0; r == 0 && i < cfg->n_services; i++)
        r = check_uri(&w, &cfg->services[i]);
    if (r < 0 && secret)
        reignd_secret_wipe(secret);
    return r;
}
