/*
 * etcd_internal.h - what the files of the etcd backend share (etcd.h is its face to zk.c, and
 * zk.h the contract it keeps).  Its files, each calling only the ones below it (what a lower
 * one must tell a higher one goes through the hooks etcd.c sets in the handle):
 *
 *   etcd.c        the handle: the lease that is the session, its keepalives and states, close
 *   etcd_ops.c    the node operations: order, sending, retries, delivery
 *   etcd_txn.c    each operation's txn, and its answer read back as ZooKeeper's
 *   etcd_watch.c  the one-shot watches: a watcher each, on streams of a loop turn's watches
 *   etcd_http.c   requests on the client's loop: turns, members, errors; its transports:
 *   etcd_h2.c       etcd's gRPC API over HTTP/2 (libnghttp2), for http:// members
 *   etcd_h1.c       HTTP/1.1 of reign's own to the JSON gateway, for the guardian's blocking
 *                   calls (and http:// members with gateway=1)
 *                   (libcurl's multi interface, in etcd_http.c, for https:// ones)
 *   etcd_pb.c     the gateway's JSON as gRPC's protobuf and back (protobuf-c)
 *   etcd_json.c   the JSON of the gateway: base64 keys, 64-bit numbers as strings
 *   etcd_end.c    (apart) the guardian's revoke of a dead client's lease
 *
 * Everything runs on the loop thread: the connections' sockets sit in an epoll set of their own,
 * which is itself in the client's, and their timers are the client's timers.  No thread, no lock.
 *
 * Private to the library.
 */
#ifndef REIGN_ETCD_INTERNAL_H
#define REIGN_ETCD_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>
/* Calls go through reign__cu, not to the functions the header's macros would name. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "dl.h"
#include "etcd.h"

/*
 * libcurl is loaded when the first etcds:// client is made (dl.h), not linked: linked, it and
 * what it needs (OpenSSL, GnuTLS, Kerberos, LDAP...) were mapped into every reign process,
 * whatever its store (6 MB resident more).  Every call goes through this table.  An etcd://
 * client never loads it (etcd_h1.c).
 */
#define REIGN__CURL_FUNCTIONS(X, t)                                                                \
    X(t, curl_global_init)                                                                         \
    X(t, curl_multi_init)                                                                          \
    X(t, curl_multi_setopt)                                                                        \
    X(t, curl_multi_cleanup)                                                                       \
    X(t, curl_multi_add_handle)                                                                    \
    X(t, curl_multi_remove_handle)                                                                 \
    X(t, curl_multi_socket_action)                                                                 \
    X(t, curl_multi_info_read)                                                                     \
    X(t, curl_easy_init)                                                                           \
    X(t, curl_easy_setopt)                                                                         \
    X(t, curl_easy_getinfo)                                                                        \
    X(t, curl_easy_cleanup)                                                                        \
    X(t, curl_easy_perform)                                                                        \
    X(t, curl_easy_strerror)                                                                       \
    X(t, curl_slist_append)                                                                        \
    X(t, curl_slist_free_all)                                                                      \
    X(t, curl_version_info)

typedef struct reign__curl_api {
    REIGN__CURL_FUNCTIONS(REIGN__DL_MEMBER, reign__curl_api)
} reign__curl_api;
extern reign__curl_api reign__cu;

/* ---- etcd_json.c ------------------------------------------------------------------------- */

/* Appends "base64 of data" (with the quotes). */
void reign__ej_b64(reign__buf *b, const void *data, size_t n);
/* Decodes base64 into a new NUL-terminated block; NULL on bad input or no memory. */
char *reign__ej_unb64(const char *s, size_t *len);
/* A 64-bit field that the gateway writes as a string (or a number); 0 when absent. */
int64_t reign__ej_i64(const cJSON *obj, const char *name);
/* The decoded key or value of a key-value (NULL when absent: the empty value). */
char *reign__ej_bytes(const cJSON *kv, const char *name, size_t *len);
/* The error of an answer, either shape ({"error":"..","code":N} or {"error":{...}}), or NULL
 * when there is none; *code is gRPC's status code. */
const char *reign__ej_error(const cJSON *root, int *code);
/* The end of a prefix range: the prefix with its last byte plus one. */
void reign__ej_prefix_end(char *key, size_t len);
/* Appends the body of /v3/auth/authenticate: {"name":USER,"password":PASSWORD}, JSON-escaped.
 * It holds the password: the caller wipes it after use. */
void reign__ej_login(reign__buf *b, const char *user, const char *password);
/* The header that carries the token of a login's answer, "Authorization: TOKEN" (allocated),
 * or NULL (none in it, or no memory); the token in the tree is wiped. */
char *reign__ej_token_header(cJSON *root);

/* ---- etcd_pb.c --------------------------------------------------------------------------- */

/* One gRPC method of etcd's, behind one of the gateway's paths. */
typedef struct reign__pb_method reign__pb_method;
/* The method behind a gateway path ("/v3/kv/txn": /etcdserverpb.KV/Txn), or NULL: the paths of
 * KV's Range, Put, DeleteRange and Txn, of Watch (a stream), of Lease's Grant, Revoke and
 * KeepAlive (a stream), and of Auth's Authenticate. */
const reign__pb_method *reign__pb_method_of(const char *gateway_path);
/* Its gRPC path, "/etcdserverpb.KV/Txn". */
const char *reign__pb_path(const reign__pb_method *m);
/* Are its request and answer streams (Watch, LeaseKeepAlive)? */
bool reign__pb_streaming(const reign__pb_method *m);
/* The gRPC body for a gateway body, appended to out: each JSON object it holds (one; a stream's
 * may hold several, one after another) as one message after gRPC's 5-byte prefix (0, then the
 * length big-endian).  0; REIGN_ENOMEM; REIGN_EINVAL, why saying which field of which message
 * is wrong (not JSON, no object, no such field, a value of the wrong type: a bug of reign's).
 * On failure out is as it was. */
int reign__pb_request(const reign__pb_method *m, const char *json, size_t len, reign__buf *out,
                      char *why, size_t whylen);
/* One message of an answer (the bytes after its 5-byte prefix) as the gateway's JSON, appended
 * to out; a stream's wrapped as {"result":...} and followed by a newline, as the gateway writes
 * a stream's lines.  0; REIGN_ENOMEM; REIGN_EBACKEND when the bytes are no such message.  On
 * failure out is as it was. */
int reign__pb_answer(const reign__pb_method *m, const uint8_t *msg, size_t len, reign__buf *out);

/* ---- etcd_http.c ------------------------------------------------------------------------- */

/* A gRPC call's state, whichever transport carries it (etcd_h2.c). */
typedef struct egrpc {
    const reign__pb_method *m; /* its method */
    reign__buf wire;           /* the request: framed protobuf */
    reign__buf in;             /* the answer's bytes not yet a whole message */
    int status;                /* grpc-status; -1: none came yet */
    char msg[200];             /* grpc-message, decoded, printable */
} egrpc;

typedef struct ereq ereq;
typedef struct econn econn;       /* an HTTP/1.1 connection (etcd_h1.c) */
typedef struct h2conn h2conn;     /* an HTTP/2 connection (etcd_h2.c) */
typedef struct h2stream h2stream; /* ... and a request on it */
/* A request's end: status is the HTTP status (0: no answer, fail says why). */
typedef void ereq_done(ereq *q, void *arg);

struct ereq {
    reign__etcd *e;
    CURL *h; /* https://: its handle while out */
    struct curl_slist *hdrs;
    econn *c;      /* http:// through the gateway: its connection while out */
    h2stream *hs;  /* http:// over gRPC: its stream while out */
    egrpc g;       /* a gRPC call (etcd_h2.c, or libcurl for https://) */
    bool finished; /* ... and ended, on e->h1_done */
    ereq *fnext;
    const char *path; /* "/v3/kv/txn": a literal */
    int timeout_ms;
    reign__buf body;
    reign__buf resp;
    size_t line_at; /* a stream: how much of resp was handed out as lines */
    bool stream;
    bool got_data; /* a stream: bytes came since the last look (then in e->with_data) */
    ereq *dprev, *dnext;
    bool ordinary;     /* an operation: waits its turn when many are out (etcd_http.c) */
    bool waiting_turn; /* ... and waits now, in e->backlog */
    ereq *bprev, *bnext;
    ereq_done *done;
    void *arg;
    long status;
    int fail;                  /* 0, or no answer: REIGN_ECONNLOSS, REIGN_ETIMEDOUT */
    char why[CURL_ERROR_SIZE]; /* ... and why */
    bool tls_refused;          /* ... TLS failed in a way no try fares better (tls_no()) */
    size_t member;
    int64_t sent_ns;
    ereq *prev, *next;
};

/* Loads what the transport needs (once per process): libcurl for https:// (tls), else
 * libhttp_parser: 0, or REIGN_ENOTSUP saying which package is missing. */
int reign__eh_load(bool tls, char *err, size_t errlen);
int reign__eh_init(reign__etcd *e, char *err, size_t errlen);
void reign__eh_free(reign__etcd *e);
/* Sends POST path with q->body to the current member; done runs once (never from inside). */
int reign__eh_send(reign__etcd *e, ereq *q, const char *path, int timeout_ms);
/* A new request; body empty. */
ereq *reign__eh_new(reign__etcd *e, ereq_done *done, void *arg);
/* Stops it (no done) and frees it. */
void reign__eh_drop(ereq *q);
/* Is q still out (a stream's done with a part of the answer, not its end)? */
bool reign__eh_out(const ereq *q);
/* Makes the call behind gateway path `path` with body (the gateway's JSON) to member, blocking
 * until `until` (reign__now_ns()): as gRPC, or with `gateway` as a POST to the gateway itself.
 * The HTTP status (for gRPC the one the gateway answers its status with), or 0 with why; the
 * answer as the gateway's JSON into out (when not NULL).  header: "Authorization: TOKEN", or
 * NULL.  tls: the files for an https:// member (NULL: none), so that a process with no client
 * (the guardian) can call it too. */
long reign__eh_post(const reign__zk_tls *tls, bool gateway, const char *member, size_t mlen,
                    const char *path, const char *body, const char *header, int64_t until,
                    reign__buf *out, char *why, size_t whylen);
/* Makes the client's loop turn soon. */
void reign__eh_wake(reign__etcd *e);
/* Moves later requests to the next member (after this one failed on member `m`). */
void reign__eh_next_member(reign__etcd *e, size_t m);
/* Handles ready sockets and curl's timer, then every request that ended. */
void reign__eh_pump(reign__etcd *e);
/* The JSON of a finished request, or NULL with rc: REIGN_ECONNLOSS (no answer: try another
 * member), REIGN_ETIMEDOUT, or the store's error mapped (errmsg says it). */
cJSON *reign__eh_answer(ereq *q, int *rc, char *msg, size_t msglen);
/* The revision clock: a revision seen now; the wall-clock time (Unix ms) a revision was first
 * seen at, as a key's ctime or mtime. */
void reign__eh_saw(reign__etcd *e, int64_t rev);
int64_t reign__eh_time_of(const reign__etcd *e, int64_t rev);
/* Is this failure one to try again on another member (no answer, no leader, timed out)? */
bool reign__eh_transient(int rc);

/* ---- etcd_h1.c --------------------------------------------------------------------------- */

int reign__h1_load(char *err, size_t errlen); /* libhttp_parser */
/* Sends q (its body, path and timeout set) on a kept-open connection or a new one: 0, or
 * REIGN_ENOMEM.  Its end, whatever it is, comes through reign__h1_take_done(). */
int reign__h1_send(reign__etcd *e, ereq *q);
/* What epoll said of connection c (the data of its event). */
void reign__h1_event(reign__etcd *e, econn *c, uint32_t events);
/* q is not sent any more: its connection closed (half a request on it). */
void reign__h1_withdraw(reign__etcd *e, ereq *q);
/* The oldest request that ended (answered or not), or NULL. */
ereq *reign__h1_take_done(reign__etcd *e);
void reign__h1_free(reign__etcd *e);
/* q ended (fail: 0, or why it got no answer): onto the list reign__h1_take_done() takes from
 * (etcd_h2.c's requests too). */
void reign__h1_ended(reign__etcd *e, ereq *q, int fail);
/* A member's addresses ("http://host:port"; getaddrinfo's list, to free), or NULL with why. */
struct addrinfo *reign__h1_resolve(const char *m, size_t mlen, char *why, size_t whylen);
/* A non-blocking socket connecting to ai: the descriptor, or -1 (errno says why). */
int reign__h1_connect_to(const struct addrinfo *ai);
/* Bytes of q's answer, appended (a stream's: q goes on e->with_data, for the pump): both
 * transports' way in.  -1: no memory. */
int reign__h1_got(ereq *q, const char *p, size_t n);
/* Waits for fd to be ready for `events` until `until` (reign__now_ns()): false when the time
 * ran out. */
bool reign__h1_wait_fd(int fd, short events, int64_t until);
/* A non-blocking socket connected to member "http://host:port" (each of its addresses in turn)
 * by `until`: the descriptor, or -1 with why. */
int reign__h1_dial(const char *member, size_t mlen, int64_t until, char *why, size_t whylen);
/* One POST, blocking: see reign__eh_post(), for http:// members. */
long reign__h1_post(const char *member, size_t mlen, const char *path, const char *body,
                    const char *header, int64_t until, reign__buf *out, char *why, size_t whylen);

/* ---- etcd_h2.c --------------------------------------------------------------------------- */

int reign__h2_init(reign__etcd *e);
void reign__h2_free(reign__etcd *e);
/* Sends q (its body, path and timeout set) as a gRPC call on its member's connection: 0, or
 * REIGN_ENOMEM.  Its end, whatever it is, comes through reign__h1_take_done(). */
int reign__h2_send(reign__etcd *e, ereq *q);
/* What epoll said of connection c (the data of its event). */
void reign__h2_event(reign__etcd *e, h2conn *c, uint32_t events);
/* q is not sent any more (its stream reset) nor ended. */
void reign__h2_withdraw(reign__etcd *e, ereq *q);
/* One gRPC call, blocking, for http:// members: see reign__eh_post(). */
long reign__h2_post(const char *member, size_t mlen, const char *path, const char *body,
                    const char *header, int64_t until, reign__buf *out, char *why, size_t whylen);
/* The HTTP status the gateway answers a gRPC status with (0: 200; 5, not found: 404; ...). */
long reign__eg_http_status(int grpc_status);
/* A gRPC call, whatever carries it: q's body turned into q->g.wire (0; REIGN_ENOMEM;
 * REIGN_EBACKEND with why: no such method, a body that is not its JSON); what came of the answer
 * (false: not gRPC's framing, or no memory), each whole message into q's answer as the gateway's
 * JSON; a header or trailer (grpc-status, grpc-message; others ignored); and its end once the
 * transport saw it whole: 0 (the answer, or the error as the gateway writes it, in q->resp), or
 * why it is none (REIGN_ECONNLOSS, REIGN_EBACKEND).  reign__eg_free() frees what the call held. */
int reign__eg_start(ereq *q, char *why, size_t whylen);
bool reign__eg_got(ereq *q, const uint8_t *p, size_t n);
void reign__eg_header(ereq *q, const char *name, size_t namelen, const char *value,
                      size_t valuelen);
int reign__eg_end(ereq *q, char *why, size_t whylen);
void reign__eg_free(ereq *q);

/* ---- etcd_watch.c ------------------------------------------------------------------------ */

enum ew_kind { EW_EXISTS = 1, EW_DATA, EW_CHILD };

typedef struct estream estream; /* a watch stream: the watches its request created */

typedef struct ewatch {
    struct ewatch *hnext; /* bucket chain */
    struct ewatch *oprev, *onext;
    struct ewatch *pprev, *pnext; /* in e->pending, while it waits for a stream */
    bool pending;
    estream *s; /* its stream, and its place there */
    size_t slot;
    void *owner;
    reign__zk_watch_cb *cb;
    void *arg;
    enum ew_kind kind;
    char *path;
    int64_t rev; /* the read's revision: only later events fire it */
} ewatch;

/* Registers a one-shot watch made by a read answered at revision rev; its watcher starts, with
 * the others of this turn of the loop, on a stream of their own. */
int reign__ew_add(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev, void *owner,
                  reign__zk_watch_cb *cb, void *arg);
/* The watches waiting for a stream, on a new one not sent yet (NULL: none, or no memory). */
estream *reign__ew_batch(reign__etcd *e);
/* The body of s's request: a create_request per watch it still has. */
void reign__ew_request(const reign__etcd *e, const estream *s, reign__buf *b);
/* Would a change (type: REIGN__ZK_CREATED, _DELETED, _CHANGED) of path at rev fire a watch that
 * has not fired yet?  A write's answer waits for it (etcd_ops.c). */
bool reign__ew_pending(const reign__etcd *e, const char *path, int type, int64_t rev);
void reign__ew_forget(reign__etcd *e, void *owner);
void reign__ew_drop_all(reign__etcd *e); /* a session ended: none fires */
void reign__ew_free(reign__etcd *e);
void reign__ew_init(reign__etcd *e);
/* Member m stopped answering: the streams on it start again on the next one. */
void reign__ew_leave_member(reign__etcd *e, size_t m);
void reign__ew_stop(reign__etcd *e); /* closing: every stream ends */
/* One line of stream s: its events handed to its watches; false when the stream ends (an
 * error, a cancel).  Whatever the line holds. */
bool reign__ew_line(reign__etcd *e, estream *s, const char *line, size_t n);

/* ---- etcd_txn.c -------------------------------------------------------------------------- */

enum eop_type { EO_EXISTS = 1, EO_GET, EO_CHILDREN, EO_WRITE };

/* A node operation's txn: what it asks (a read's node, a write's parts), what its plan made. */
typedef struct etxn {
    reign__etcd *e;
    enum eop_type type;
    char *path;           /* a read's node */
    reign__zk_mop *parts; /* a write's parts, owned copies */
    size_t n;
    int seq_tries;
    char *made[REIGN__ZK_MULTI_MAX];    /* each create's path, its sequence number added */
    int put_index[REIGN__ZK_MULTI_MAX]; /* each part's put among the success responses, or -1 */
    char *value;                        /* a read's data, decoded */
} etxn;

/*
 * A scope is a path's first three names (/reign/election/NAME): one election, group, value or
 * queue.  The directories above the scopes (/reign, /reign/election) always exist on etcd:
 * reads find them, creates are told they exist, and no node needs them as a parent.
 */
#define REIGN__ETCD_SCOPE_NAMES 3
bool reign__et_implicit(const char *path);
/* The txn's JSON into b: 0, or a code decided here (*bad the part of a multi it concerns). */
int reign__et_build(etxn *t, reign__buf *b, size_t *bad);
/* A read's answer into r (children and value until reign__et_result_free); its revision, and
 * whether the node is there. */
int64_t reign__et_read(etxn *t, const cJSON *root, reign__zk_result *r, bool *present);
void reign__et_result_free(etxn *t, reign__zk_result *r);
/* A write's answer: done (r), or failed (r says which part and why; true: send it again, a
 * sequence number was taken meanwhile). */
void reign__et_write_ok(etxn *t, const cJSON *root, reign__zk_result *r);
bool reign__et_write_failed(etxn *t, const cJSON *root, reign__zk_result *r);
void reign__et_seq_free(reign__etcd *e);
/* The key of dir's sequence counter, allocated (NULL: no memory). */
char *reign__et_counter_key(const reign__etcd *e, const char *dir);
/* A counter's key-value as a read found it: kept unless the client knows a later one. */
void reign__et_seq_seen(reign__etcd *e, const cJSON *kv);

/* ---- etcd_ops.c -------------------------------------------------------------------------- */

void reign__eo_fail_all(reign__etcd *e, int rc, bool call);
void reign__eo_resume(reign__etcd *e); /* a session is there: send what waited */
void reign__eo_free(reign__etcd *e);
/* Delivers the writes whose own events the stream has delivered (all: every one held). */
void reign__eo_release(reign__etcd *e, bool all);

void reign__eo_init(reign__etcd *e);

/* The handle. */
typedef struct ewait {
    struct ewait *next;
    void *owner;
    reign__zk_ready_cb *cb;
    void *arg;
} ewait;

typedef struct eop eop;

struct reign__etcd {
    reign__zk_config cfg;
    const reign__logger *log;
    /* the members and the key space */
    char **members; /* "http://h:p" or "https://h:p" */
    size_t n_members, cur;
    size_t tls_refusals; /* members in a row whose TLS refused us (etcd.c) */
    bool had_session;    /* a lease was granted once: TLS that worked may work again */
    char *prefix;        /* keys are prefix + path; "" or "/x" */
    char *token_header;  /* "Authorization: TOKEN" once authenticated, or NULL */
    char *user, *password, *tls_ca, *tls_cert, *tls_key; /* copies cfg points to */
    size_t prefix_len;
    /* the transport */
    bool h1;        /* reign's own HTTP/1.1 to the gateway (http://, gateway=1) ... */
    bool h2;        /* ... or gRPC over HTTP/2 (http://), or else libcurl (https://): */
    bool curl_grpc; /* gRPC over HTTP/2 and TLS, or (api=gateway) the gateway */
    int epfd;       /* the connections' sockets */
    CURLM *multi;
    reign__timer curl_timer;
    econn *conns, *idle; /* etcd_h1.c: every connection; those kept open with no request */
    size_t n_idle;
    h2conn **h2conns, *h2all; /* etcd_h2.c: each member's, and every one (draining ones too) */
    struct addrinfo **addrs;  /* each member's, once resolved */
    ereq *h1_done, *h1_done_tail;
    ereq *reqs;
    ereq *backlog, *backlog_tail; /* operations waiting for their turn into curl */
    size_t in_curl;               /* operations out (in curl, or on a connection) */
    /* the session: one lease */
    int64_t lease;
    int64_t marking;       /* a lease granted, its session key being put */
    char session_key[160]; /* PREFIX/reign/./LEASE, on the lease: every write requires it */
    int ttl_s;
    uint64_t gen;
    bool connected, closed, ephemeral_told;
    int64_t last_ack_ns;
    ereq *ka, *grant, *auth;
    reign__timer ka_timer;
    int64_t ka_fail_since;
    /* operations */
    eop *ops, *ops_tail; /* every operation not yet delivered, in the order asked */
    void *scopes;        /* the lines of operations by scope (etcd_ops.c) */
    eop *wide_head, *wide_tail;
    eop *ready, *ready_tail; /* to send at the end of this turn of the loop (etcd_ops.c) */
    bool no_batch;           /* etcd refused a batch: one txn per operation from then on */
    uint64_t op_seq;
    ewait *waiters, **waiters_tail;
    struct seqc *seqs; /* what each parent's sequence counter was last seen at */
    /* watches */
    ewatch **wb;
    size_t wb_n, n_watches;
    ewatch *wall;                   /* every watch, for forget and drop */
    ewatch *pending, *pending_tail; /* registered, waiting for flush_timer to start a stream */
    int64_t pending_ns;             /* when the first of them was registered */
    reign__timer flush_timer;
    estream *streams;
    size_t n_streams;
    estream *ew_busy; /* the stream whose lines are being handled */
    ereq *with_data;  /* streams with bytes not yet handed out (etcd_http.c) */
    size_t n_held;    /* answers of writes waiting for their events */
    eop *held, *held_tail;
    reign__timer hold_timer;
    /* What the layers below tell etcd.c, which sets these (they never call up by name):
     * a request got no answer from member m (maybe suspended); the store said the lease is
     * gone (look now); a stream delivered what held answers may have waited for. */
    void (*trouble)(reign__etcd *e, size_t m, const char *why);
    void (*lease_doubt)(reign__etcd *e);
    void (*reauth)(reign__etcd *e); /* the token expired */
    void (*caught_up)(reign__etcd *e, bool all);
    /* the revision clock (etcd_http.c): revisions seen and when, oldest first, a ring */
    int64_t seen_rev[1024], seen_ms[1024];
    size_t seen_head, seen_n;
    char errmsg[256];
};

#endif
