/*
 * guardian.h - a client's guardian, as the client sees it.
 *
 * A process that dies without running any code (SIGKILL, the OOM killer, a
 * crash) leaves its leaderships to time out: the ZooKeeper session or the SQL
 * lease, 10 s by default, while the host that saw it die knew within a
 * millisecond.  And whatever it started (the command of `reign run`) runs on.
 * The guardian is a small process (reign-guardian, src/guardian/main.c)
 * spawned for one client, which outlives the client's process by design and
 * acts only once that process has exited: it kills the process groups it was
 * given, then ends every leadership at once (it writes the end of each
 * leadership's history record and closes the ZooKeeper session, or releases
 * each lease by compare-and-set).
 *
 * The client keeps it told, over a SOCK_SEQPACKET socket pair (proto.h):
 * the session's id and password, the SQL store and each election joined,
 * the process groups to kill.  It is spawned with posix_spawn() (no fork of
 * a threaded process), its own session, the signals reset, descriptors 0 and
 * 1 on /dev/null and nothing else open but its socket and a pidfd of the
 * client's process; it then forks once, so it is never the client's child.
 *
 * If the guardian dies, the client notices (the socket's end of file wakes
 * the client's descriptor), logs once and starts another with everything
 * told again.  If it cannot be started at all (helper missing, spawning
 * refused, no pidfd), the client logs one warning and goes on without:
 * takeover after a crash then waits for the session or lease, as before.
 *
 * Loop thread only.  Private to the library.
 */
#ifndef REIGN_GUARDIAN_H
#define REIGN_GUARDIAN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"
#include "sql/sql.h"
#include "zk/zk.h"

typedef struct reign__guardian reign__guardian;

/*
 * Makes a guardian that will register its socket with `epoll_fd` (the
 * client's descriptor) once it runs.  0, or REIGN_ENOMEM.  Nothing is
 * spawned yet: a client that never holds anything (a one-shot read, a late
 * copy that finds its slot done) never pays for a process.
 */
int reign__guardian_new(reign__guardian **ret, int epoll_fd, const reign__logger *log,
                        reign__timers *timers);

/*
 * The client is about to hold something a dead process must give up (an
 * ephemeral node, a lease, a process group): spawns the helper, once, and
 * tells it everything known so far.  A helper that cannot be started is
 * logged once (a warning) and tried again later, with a growing pause.
 * Adding a lease or a process group calls it too.
 */
void reign__guardian_need(reign__guardian *g);

/* Tells the guardian to leave without acting, and frees.  NULL-safe. */
void reign__guardian_free(reign__guardian *g);

/*
 * Where the node tree is, once, before the first reign__guardian_zk(): `root` what the paths of
 * reign__guardian_term() are under (ZooKeeper's chroot, etcd's key prefix; "" or NULL: none),
 * and ZooKeeper's digest credentials (user NULL: none), which the nodes reign makes with them
 * need for a write.  0, or REIGN_ENOMEM.
 */
int reign__guardian_zk_tree(reign__guardian *g, const char *root, const char *user,
                            const char *password);
/*
 * Where the node tree is on etcd, instead: `prefix` the key prefix, as root above; etcd's user
 * and password (user NULL: none), which the guardian logs in with; the TLS files of an etcds://
 * URI (each NULL: none), made absolute here; gateway: the client speaks to etcd's JSON gateway
 * (api=gateway), and so does the guardian.  0, or REIGN_ENOMEM.
 */
int reign__guardian_etcd_tree(reign__guardian *g, const char *prefix, const char *user,
                              const char *password, const reign__zk_tls *tls, bool gateway);
/* The ZooKeeper session to close (session 0: none any more). */
void reign__guardian_zk(reign__guardian *g, const char *hosts, int64_t session,
                        const unsigned char passwd[16], int timeout_ms);
/* The SQL store whose leases it releases. */
void reign__guardian_sql(reign__guardian *g, const reign__sql_target *t, const char *dc,
                         int lease_ms);
/* A lease the client may hold (add), or no longer (remove).  The name REIGN__GUARDIAN_SESSION
 * (never an election's: it has a '/') stands for the client's SQL session (sessions.h), guid
 * its id: the guardian deletes it, and every row that lives in it. */
#define REIGN__GUARDIAN_SESSION "/session"
void reign__guardian_lease(reign__guardian *g, bool add, const char *name, const char *owner,
                           const char *guid);
/* A leadership's history record to end (add: `rec` as it is to be written, ended_ms added)
 * before the session if the process dies, or no longer (the leadership ended). */
void reign__guardian_term(reign__guardian *g, bool add, const char *path, const void *rec,
                          size_t len);
/* A process group to kill first.  0, or REIGN_ENOMEM. */
int reign__guardian_pgid(reign__guardian *g, bool add, pid_t pgid);

/* Reads what the guardian said and restarts it if it is gone (from process()). */
void reign__guardian_check(reign__guardian *g);

/* The guardian's process id, 0 while not known (or none runs). */
pid_t reign__guardian_pid(const reign__guardian *g);

/* The helper's path: $REIGN_GUARDIAN_PATH, else beside the library, else the configured one. */
const char *reign__guardian_helper(char *buf, size_t len);

#endif
