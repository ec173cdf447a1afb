/*
 * check_proxy.c - the TCP proxy `reign check` puts between one candidate and the store, so
 * that it can cut that candidate off as a broken network would: one listener on 127.0.0.1 per
 * host of the URI, each forwarding every connection it accepts to its host, on the check's own
 * libuv loop.  A cut closes both sides of every connection (with a reset) and, until the heal,
 * closes every new connection as soon as it is accepted.
 *
 * The candidate gets the URI with its host list replaced by the listeners' addresses; the
 * rest (user, password, path, parameters) is kept as it is.  The hosts are resolved once, at
 * the start.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "check.h"

#define MAX_HOSTS    16
#define MAX_QUEUED   (4 << 20) /* bytes written but not yet sent: stop reading the other side */
#define READ_BUFSIZE 65536

typedef struct pconn pconn;

typedef struct listener {
    chk_proxy *p;
    uv_tcp_t tcp;
    struct sockaddr_storage target;
    int port;
} listener;

struct chk_proxy {
    uv_loop_t *loop;
    listener ls[MAX_HOSTS];
    int n;
    bool cut;
    bool stopping;
    pconn *conns; /* live connections */
    int open;     /* handles not yet closed, listeners included */
};

/* One side of a connection. */
typedef struct side {
    pconn *pc;
    uv_tcp_t tcp;
    bool reading;
} side;

struct pconn {
    chk_proxy *p;
    side client, server;
    uv_connect_t connect;
    bool connected;
    bool closing;
    int closed; /* sides whose close callback ran */
    pconn *next;
};

typedef struct wreq {
    uv_write_t req;
    side *to;
    char *data;
} wreq;

/* ---- the URI ------------------------------------------------------------ */

static int default_port(const char *scheme, size_t len)
{
    static const struct {
        const char *s;
        int port;
    } t[] = {{"zk", 2181},         {"etcd", 2379},  {"postgres", 5432},
             {"postgresql", 5432}, {"mysql", 3306}, {"mariadb", 3306}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strlen(t[i].s) == len && !strncmp(t[i].s, scheme, len))
            return t[i].port;
    return 0;
}

/* The parts of a URI: the scheme, and where its host list is ([host_at, host_end)). */
typedef struct uri_parts {
    size_t scheme_len;
    size_t host_at, host_end;
} uri_parts;

static int split(const char *uri, uri_parts *u)
{
    const char *sep = strstr(uri, "://");
    if (!sep)
        return -1;
    u->scheme_len = (size_t)(sep - uri);
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *q = auth; q < auth + alen; q++)
        if (*q == '@')
            at = q;
    const char *hosts = at ? at + 1 : auth;
    u->host_at = (size_t)(hosts - uri);
    u->host_end = (size_t)(auth + alen - uri);
    return 0;
}

/* Does the query hold parameter `name` (its value in val, else "")? */
static bool query_param(const char *uri, const char *name, char *val, size_t vlen)
{
    const char *q = strchr(uri, '?');
    size_t nl = strlen(name);
    while (q && *q) {
        q++;
        if (!strncmp(q, name, nl) && (q[nl] == '=' || q[nl] == '&' || !q[nl])) {
            const char *v = q[nl] == '=' ? q + nl + 1 : q + nl;
            size_t l = strcspn(v, "&#");
            snprintf(val, vlen, "%.*s", (int)l, v);
            return true;
        }
        q = strchr(q, '&');
    }
    return false;
}

int chk_proxy_fit(const char *uri, char *why, size_t whylen)
{
    uri_parts u;
    char v[64];
    if (!strncmp(uri, "sqlite:", 7)) {
        snprintf(why, whylen, "a SQLite store is a file, with no connection to cut");
        return -1;
    }
    if (split(uri, &u) < 0 || u.host_at == u.host_end) {
        snprintf(why, whylen, "the URI names no TCP host (a Unix socket?)");
        return -1;
    }
    if (!strncmp(uri, "etcds:", 6) ||
        (query_param(uri, "sslmode", v, sizeof(v)) && !strcmp(v, "verify-full")) ||
        (query_param(uri, "ssl_verify_server_cert", v, sizeof(v)) && strcmp(v, "off") &&
         strcmp(v, "0") && strcmp(v, "false"))) {
        snprintf(why, whylen,
                 "TLS that checks the server's name cannot go through a proxy on 127.0.0.1");
        return -1;
    }
    return 0;
}

/* ---- forwarding ---------------------------------------------------------- */

static void on_side_closed(uv_handle_t *h)
{
    side *s = h->data;
    pconn *pc = s->pc;
    chk_proxy *p = pc->p;
    p->open--;
    if (++pc->closed < 2)
        return;
    for (pconn **pp = &p->conns; *pp; pp = &(*pp)->next)
        if (*pp == pc) {
            *pp = pc->next;
            break;
        }
    free(pc);
    if (p->stopping && p->open == 0)
        free(p);
}

static void close_side(side *s, bool reset)
{
    uv_handle_t *h = (uv_handle_t *)&s->tcp;
    if (uv_is_closing(h))
        return;
    if (!reset || uv_tcp_close_reset(&s->tcp, on_side_closed) != 0)
        uv_close(h, on_side_closed);
}

static void conn_close(pconn *pc, bool reset)
{
    if (pc->closing)
        return;
    pc->closing = true;
    close_side(&pc->client, reset);
    close_side(&pc->server, reset);
}

static side *other(side *s)
{
    return s == &s->pc->client ? &s->pc->server : &s->pc->client;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    buf->base = malloc(READ_BUFSIZE);
    buf->len = buf->base ? READ_BUFSIZE : 0;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

static void start_reading(side *s)
{
    if (!s->reading && !s->pc->closing) {
        s->reading = true;
        uv_read_start((uv_stream_t *)&s->tcp, on_alloc, on_read);
    }
}

static void on_written(uv_write_t *req, int status)
{
    wreq *w = (wreq *)req;
    side *to = w->to;
    free(w->data);
    free(w);
    if (status < 0) {
        conn_close(to->pc, false);
        return;
    }
    /* The queue drained enough: the side that fills it may read again. */
    if (uv_stream_get_write_queue_size((uv_stream_t *)&to->tcp) < MAX_QUEUED / 2)
        start_reading(other(to));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
    side *s = st->data;
    pconn *pc = s->pc;
    if (n <= 0) {
        free(buf->base);
        if (n < 0)
            conn_close(pc, false); /* end of file or an error: pass it on as a close */
        return;
    }
    side *to = other(s);
    wreq *w = malloc(sizeof(*w));
    if (!w || pc->closing) {
        free(w);
        free(buf->base);
        conn_close(pc, false);
        return;
    }
    w->to = to;
    w->data = buf->base;
    uv_buf_t b = uv_buf_init(buf->base, (unsigned)n);
    if (uv_write(&w->req, (uv_stream_t *)&to->tcp, &b, 1, on_written) < 0) {
        free(w->data);
        free(w);
        conn_close(pc, false);
        return;
    }
    if (uv_stream_get_write_queue_size((uv_stream_t *)&to->tcp) > MAX_QUEUED) {
        uv_read_stop(st);
        s->reading = false;
    }
}

static void on_connected(uv_connect_t *req, int status)
{
    pconn *pc = req->data;
    if (status < 0 || pc->closing) {
        conn_close(pc, false);
        return;
    }
    pc->connected = true;
    start_reading(&pc->client);
    start_reading(&pc->server);
}

static void on_accept(uv_stream_t *server, int status)
{
    listener *l = server->data;
    chk_proxy *p = l->p;
    if (status < 0)
        return;
    pconn *pc = calloc(1, sizeof(*pc));
    if (!pc)
        return;
    pc->p = p;
    pc->client.pc = pc;
    pc->server.pc = pc;
    uv_tcp_init(p->loop, &pc->client.tcp);
    uv_tcp_init(p->loop, &pc->server.tcp);
    pc->client.tcp.data = &pc->client;
    pc->server.tcp.data = &pc->server;
    p->open += 2;
    pc->next = p->conns;
    p->conns = pc;
    if (uv_accept(server, (uv_stream_t *)&pc->client.tcp) < 0 || p->cut) {
        conn_close(pc, true); /* cut: refused */
        return;
    }
    uv_tcp_nodelay(&pc->client.tcp, 1);
    uv_tcp_nodelay(&pc->server.tcp, 1);
    pc->connect.data = pc;
    if (uv_tcp_connect(&pc->connect, &pc->server.tcp, (const struct sockaddr *)&l->target,
                       on_connected) < 0)
        conn_close(pc, true);
}

/* ---- the proxy ----------------------------------------------------------- */

static void on_listener_closed(uv_handle_t *h)
{
    listener *l = h->data;
    chk_proxy *p = l->p;
    p->open--;
    if (p->stopping && p->open == 0)
        free(p);
}

/* host[:port] or [v6][:port] of length len: resolved into *out. */
static int resolve(const char *h, size_t len, int def_port, struct sockaddr_storage *out, char *why,
                   size_t whylen)
{
    char host[256], port[16];
    const char *colon = NULL;
    size_t hl;
    if (len && h[0] == '[') {
        const char *end = memchr(h, ']', len);
        if (!end) {
            snprintf(why, whylen, "a host of the URI is malformed");
            return -1;
        }
        hl = (size_t)(end - h - 1);
        snprintf(host, sizeof(host), "%.*s", (int)hl, h + 1);
        colon = end + 1 < h + len && end[1] == ':' ? end + 1 : NULL;
    } else {
        colon = memchr(h, ':', len);
        hl = colon ? (size_t)(colon - h) : len;
        snprintf(host, sizeof(host), "%.*s", (int)hl, h);
    }
    if (colon)
        snprintf(port, sizeof(port), "%.*s", (int)(h + len - colon - 1), colon + 1);
    else
        snprintf(port, sizeof(port), "%d", def_port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    int r = getaddrinfo(host, port, &hints, &res);
    if (r != 0 || !res) {
        snprintf(why, whylen, "cannot resolve a host of the URI: %s", gai_strerror(r));
        return -1;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

int chk_proxy_start(chk_proxy **ret, uv_loop_t *loop, const char *uri, char *out, size_t outlen,
                    char *why, size_t whylen)
{
    uri_parts u;
    *ret = NULL;
    if (chk_proxy_fit(uri, why, whylen) < 0 || split(uri, &u) < 0)
        return -1;
    int def = default_port(uri, u.scheme_len);
    chk_proxy *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    p->loop = loop;
    size_t o = (size_t)snprintf(out, outlen, "%.*s", (int)u.host_at, uri);
    for (size_t at = u.host_at; at < u.host_end && p->n < MAX_HOSTS;) {
        size_t len = strcspn(uri + at, ",");
        if (at + len > u.host_end)
            len = u.host_end - at;
        listener *l = &p->ls[p->n];
        l->p = p;
        if (resolve(uri + at, len, def, &l->target, why, whylen) < 0)
            goto fail;
        struct sockaddr_in a;
        uv_ip4_addr("127.0.0.1", 0, &a);
        uv_tcp_init(loop, &l->tcp);
        l->tcp.data = l;
        p->open++;
        p->n++;
        int r = uv_tcp_bind(&l->tcp, (const struct sockaddr *)&a, 0);
        if (r == 0)
            r = uv_listen((uv_stream_t *)&l->tcp, 64, on_accept);
        struct sockaddr_storage got;
        int glen = sizeof(got);
        if (r == 0)
            r = uv_tcp_getsockname(&l->tcp, (struct sockaddr *)&got, &glen);
        if (r < 0) {
            snprintf(why, whylen, "cannot listen on 127.0.0.1: %s", uv_strerror(r));
            goto fail;
        }
        l->port = ntohs(((struct sockaddr_in *)&got)->sin_port);
        o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s127.0.0.1:%d",
                              p->n > 1 ? "," : "", l->port);
        at += len + 1;
    }
    o += (size_t)snprintf(out + o, o < outlen ? outlen - o : 0, "%s", uri + u.host_end);
    if (o >= outlen) {
        snprintf(why, whylen, "the URI is too long");
        goto fail;
    }
    *ret = p;
    return 0;
fail:
    chk_proxy_stop(p);
    return -1;
}

void chk_proxy_cut(chk_proxy *p)
{
    p->cut = true;
    for (pconn *pc = p->conns; pc; pc = pc->next)
        conn_close(pc, true);
}

void chk_proxy_heal(chk_proxy *p)
{
    p->cut = false;
}

void chk_proxy_stop(chk_proxy *p)
{
    if (!p)
        return;
    chk_proxy_cut(p);
    p->stopping = true;
    for (int i = 0; i < p->n; i++)
        uv_close((uv_handle_t *)&p->ls[i].tcp, on_listener_closed);
    if (p->open == 0)
        free(p);
}
