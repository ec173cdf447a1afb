/*
 * proto.h - what a client tells its guardian (guardian.h), one message per
 * datagram of a SOCK_SEQPACKET socket pair.
 *
 * A message is a record (record.h) with an "op" key:
 *
 *   op=zk     hosts, session (16 hex digits, 0: none), passwd (32 hex digits),
 *             timeout_ms: the ZooKeeper session to close when the client dies (on etcd,
 *             hosts "etcd:http://h:p,..." or "etcd:https://h:p,...", the session a lease
 *             to revoke); optional (zk.h's reign__zk_access): root, what op=term's paths
 *             are under (ZooKeeper's chroot, etcd's key prefix); auth, ZooKeeper's digest
 *             credentials "user:password" (a secret, as passwd) for writing to nodes reign
 *             made with them; on etcd, user and password (a secret), etcd's user to log in
 *             as, both or neither; on https:// members, cacert, and cert with key, the
 *             TLS files' paths (made absolute by the client); on etcd, api=gateway when the
             client speaks to etcd's JSON gateway (else gRPC)
 *   op=sql    kind (sqlite|mariadb|postgres), path | host, port, database, user,
 *             password; table, dc, params (the client library's), connect_ms,
 *             statement_ms, timeout_ms (the lease): the lease store
 *   op=lease  name, owner, guid: a lease the client may hold in that store; the name
 *             "/session" (guardian.h's REIGN__GUARDIAN_SESSION) is the client's session
 *   op=unlease  name, guid
 *   op=pgid   pgid: a process group to kill first
 *   op=unpgid pgid
 *   op=term   path, and the message's payload a reign record: a leadership's history
 *             record (docs/design.md, the guardian) to rewrite, at version 0, with
 *             ended_ms added, before the session is ended (op=zk's store only)
 *   op=unterm path: that leadership ended while the client lived
 *   op=bye    a clean end: leave without acting
 *
 * and one the other way, once, when the guardian is ready:
 *
 *   op=hello  pid: the guardian's process id (it forked once after the spawn)
 *
 * The guardian trusts nobody but its client, yet parses strictly all the
 * same (the fuzz target tests/fuzz/fuzz_guardian_msg.c): a message that does
 * not parse is dropped with a warning.  Secrets (the session password, the
 * ZooKeeper credentials, etcd's and the SQL password) travel only on this socket,
 * never in argv or the environment, are never logged (nor is a term's record),
 * and are wiped when a parsed message is cleared.
 */
#ifndef REIGN_GUARDIAN_PROTO_H
#define REIGN_GUARDIAN_PROTO_H

#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "record.h"
#include "sql/sql.h"
#include "zk/zk.h"

/* The largest message either side sends or accepts. */
#define REIGN__GMSG_MAX 8192

typedef enum reign__gmsg_op {
    REIGN__GMSG_ZK = 1,
    REIGN__GMSG_SQL,
    REIGN__GMSG_LEASE,
    REIGN__GMSG_UNLEASE,
    REIGN__GMSG_PGID,
    REIGN__GMSG_UNPGID,
    REIGN__GMSG_BYE,
    REIGN__GMSG_HELLO,
    REIGN__GMSG_TERM,
    REIGN__GMSG_UNTERM
} reign__gmsg_op;

/* A parsed message; its strings point into `rec` (valid until reign__gmsg_clear()), a term's
 * data into the parsed buffer. */
typedef struct reign__gmsg {
    reign__gmsg_op op;
    reign__record rec;
    /* zk */
    const char *hosts;
    int64_t session;
    unsigned char passwd[16];
    int timeout_ms;          /* zk: the session timeout; sql: the lease */
    reign__zk_access access; /* zk: each NULL when absent */
    /* sql: the target's strings point into rec */
    reign__sql_target target;
    const char *dc;
    /* lease, unlease */
    const char *name, *owner, *guid;
    /* pgid, unpgid; hello: the guardian's pid */
    pid_t pgid;
    /* term, unterm: the record's path (under root); term: the record (a reign record) */
    const char *path;
    const void *data;
    size_t data_len;
} reign__gmsg;

/* Parses one datagram.  0, REIGN_EFOREIGN (err says what is wrong), REIGN_ENOMEM. */
int reign__gmsg_parse(const void *buf, size_t len, reign__gmsg *m, char *err, size_t errlen);
/* Wipes its secrets and frees it. */
void reign__gmsg_clear(reign__gmsg *m);

/* The encoders append one message to `out` (reset first).  0, REIGN_ENOMEM, REIGN_EINVAL. */
int reign__gmsg_zk(reign__buf *out, const char *hosts, int64_t session,
                   const unsigned char passwd[16], int timeout_ms, const reign__zk_access *a);
int reign__gmsg_sql(reign__buf *out, const reign__sql_target *t, const char *dc, int lease_ms);
int reign__gmsg_lease(reign__buf *out, bool add, const char *name, const char *owner,
                      const char *guid);
int reign__gmsg_pgid(reign__buf *out, bool add, pid_t pgid);
/* A history record to end (add: op=term, rec its bytes), or no longer (op=unterm). */
int reign__gmsg_term(reign__buf *out, bool add, const char *path, const void *rec, size_t len);
int reign__gmsg_bye(reign__buf *out);
int reign__gmsg_hello(reign__buf *out, pid_t pid);

/*
 * What both ends keep besides the store: the leases the client may hold, the
 * process groups to kill and the history records to end.  The client keeps
 * them to tell a new guardian everything again; the guardian keeps them to act.
 */
typedef struct reign__glease {
    struct reign__glease *next;
    char *name, *owner, *guid;
} reign__glease;

typedef struct reign__gterm {
    struct reign__gterm *next;
    char *path;
    void *rec;
    size_t len;
} reign__gterm;

typedef struct reign__gset {
    reign__glease *leases;
    reign__gterm *terms;
    pid_t *pgids;
    size_t n_pgids, cap_pgids;
} reign__gset;

/* Adds (a lease known by name and guid is replaced) or removes.  1 if the set changed, 0 if
 * not, REIGN_ENOMEM. */
int reign__gset_lease(reign__gset *s, bool add, const char *name, const char *owner,
                      const char *guid);
int reign__gset_pgid(reign__gset *s, bool add, pid_t pgid);
/* A term known by its path is replaced (rec NULL with add=false). */
int reign__gset_term(reign__gset *s, bool add, const char *path, const void *rec, size_t len);
void reign__gset_free(reign__gset *s);

/* The access to the tree that op=zk carries, as both ends keep it: every string copied (NULL
 * stays NULL), 0 or REIGN_ENOMEM (dst then empty); freed with the secrets wiped first. */
int reign__gaccess_copy(reign__zk_access *dst, const reign__zk_access *src);
void reign__gaccess_free(reign__zk_access *a);

#endif
