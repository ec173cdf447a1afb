/*
 * layout.h - what reign stores, in one place: the ZooKeeper tree, the names of its nodes, the
 * keys of its records (record.h has their text form) and the names and columns of its SQL side
 * tables (runs, values, candidates, tasks, beside the lease table), as
 * named constants, with the parsers of names and records beside them (layout.c).  Every recipe
 * and backend writes and reads through these; a change here is a change of the stored format,
 * which CHANGELOG.md records and, once released, keeps readable.
 *
 *   /reign/group/NAME                   persistent; record kind=group
 *   /reign/group/NAME/m_<guid>_<seq>    ephemeral sequential; record id=, guid= + payload
 *   /reign/value/KEY                    persistent; the value's record (the nodes above a
 *                                       KEY of several segments hold nothing, and go with
 *                                       the last value below them); reignd keeps
 *                                       reignd/ELECTION/{breadcrumb,layout,pause}
 *   /reign/election/NAME                persistent; record kind=election, strategy=
 *   /reign/election/NAME/term           its version is the leadership's term; record id=,
 *                                       node=, guid= + the leader's payload
 *   /reign/election/NAME/lock           ephemeral (strategy lock): the holder
 *   /reign/election/NAME/n_<guid>_...   ephemeral sequential (strategy queue): a candidate;
 *                                       record id=, guid=, session_ms= + payload; a
 *                                       designation adds designated=, designated_term=
 *   /reign/election/NAME/leader         ephemeral: the leader's record id=, node=, guid=,
 *                                       priority= (next= while it hands over); a designation
 *                                       adds handoff=, handoff_priority=
 *   /reign/tasks/Q                      persistent; record kind=tasks
 *   /reign/tasks/Q/tasks/t_<guid>_<seq> persistent sequential; record guid=, submitted_ms=
 *   /reign/tasks/Q/data/<tag>           container: the payloads of one client's submits
 *                                       (tag: the first 4 hex digits of their guids)
 *   /reign/tasks/Q/data/<tag>/<guid>    the task's record with its payload, made with
 *                                       tasks/T, deleted with assign/W/T
 *   /reign/tasks/Q/assign/W             persistent, made by worker W (or the master)
 *   /reign/tasks/Q/assign/W/<task>      empty
 *   /reign/tasks/Q/status/<task>        record worker=, exit=, signal= + output
 *   group "tasks.Q", election "tasks.Q" the workers and the masters
 *   /reign/slot/NAME                    persistent; record kind=slots, latest=
 *   /reign/slot/NAME/s_<KEY>            the slot's record (kind=slot, slot=, verdict=, runs=,
 *                                       r1..rN: slot_model.c has its text)
 *   /reign/slot/NAME/clock              its mtime is the store's clock
 *
 * Private to the library.
 */
#ifndef REIGN_LAYOUT_H
#define REIGN_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reign/limits.h>

#include "core.h"
#include "record.h"

/* ---- the tree ---------------------------------------------------------------------------- */

/* Where reign keeps its nodes (under the URI's chroot). */
#define REIGN__ZK_ROOT      "/reign"
#define REIGN__GROUP_DIR    REIGN__ZK_ROOT "/group"
#define REIGN__VALUE_DIR    REIGN__ZK_ROOT "/value"
#define REIGN__ELECTION_DIR REIGN__ZK_ROOT "/election"
#define REIGN__TASKS_DIR    REIGN__ZK_ROOT "/tasks"
#define REIGN__SLOT_DIR     REIGN__ZK_ROOT "/slot"

/* Node names and their prefixes. */
#define REIGN__N_MEMBER    "m_"      /* a group's member: m_<guid>_<seq> */
#define REIGN__N_CANDIDATE "n_"      /* a queue candidate: n_<guid>_[p<prio>_]<seq> */
#define REIGN__N_LOCK      "lock"    /* a lock election's holder */
#define REIGN__N_LEADER    "leader"  /* an election's leader record */
#define REIGN__N_TERM      "term"    /* an election's term counter */
#define REIGN__N_HISTORY   "history" /* an election's leaderships, one record each */
#define REIGN__N_TERM_REC  "h_"      /* a leadership's record: h_<seq> */
#define REIGN__N_TASK      "t_"      /* a task: t_<guid>_<seq> */
#define REIGN__N_TASKS     "tasks"   /* a queue's pending tasks */
#define REIGN__N_DATA      "data"    /* a queue's payload buckets */
#define REIGN__N_ASSIGN    "assign"  /* a queue's assignments, per worker */
#define REIGN__N_STATUS    "status"  /* a queue's results */
#define REIGN__N_SLOT      "s_"      /* a slot: s_<KEY> */
#define REIGN__N_CLOCK     "clock"   /* a slot set's clock */

/* reignd's values (src/reignd/breadcrumb.c writes them through <reign/value.h>):
 * "reignd/ELECTION/LEAF", LEAF one of these; `reign ls` tells them apart as reignd's. */
#define REIGN__REIGND_USER       "reignd"
#define REIGN__REIGND_KEY_PREFIX REIGN__REIGND_USER "/"
#define REIGN__REIGND_KEY_LEAVES "breadcrumb", "layout", "pause"

/* The group and election of a task queue: "tasks.Q". */
#define REIGN__TASKS_PREFIX "tasks."

/* Guids in node names: random hex digits. */
#define REIGN__GUID_BYTES       8 /* 16 hex digits */
#define REIGN__GROUP_GUID_BYTES REIGN__GUID_BYTES
#define REIGN__TASKS_GUID_BYTES REIGN__GUID_BYTES
#define REIGN__TASKS_TAG_DIGITS 4 /* a guid's first digits: its payload's bucket */

/* ---- record keys (record.h) -------------------------------------------------------------- */

#define REIGN__K_KIND "kind"
#define REIGN__K_ID   "id"
#define REIGN__K_GUID "guid"
/* elections */
#define REIGN__K_NODE             "node"
#define REIGN__K_NEXT             "next"
#define REIGN__K_PRIORITY         "priority"
#define REIGN__K_STRATEGY         "strategy"
#define REIGN__K_SESSION_MS       "session_ms"
#define REIGN__K_HANDOFF          "handoff"
#define REIGN__K_HANDOFF_PRIORITY "handoff_priority"
#define REIGN__K_DESIGNATED       "designated"
#define REIGN__K_DESIGNATED_TERM  "designated_term"
/* history records (docs/history.md) */
#define REIGN__K_TERM       "term"
#define REIGN__K_TOKEN      "token"
#define REIGN__K_END        "end"
#define REIGN__K_STARTED_MS "started_ms"
#define REIGN__K_ENDED_MS   "ended_ms"
#define REIGN__K_LATE       "late" /* the end was written after a reconnection: ended_ms is its time */
#define REIGN__K_DATA_LEN   "data_len" /* the payload's whole length, when the record cut it */
/* tasks */
#define REIGN__K_SUBMITTED_MS "submitted_ms"
#define REIGN__K_WORKER       "worker"
#define REIGN__K_EXIT         "exit"
#define REIGN__K_SIGNAL       "signal"
/* slots */
#define REIGN__K_LATEST     "latest"
#define REIGN__K_SLOT       "slot"
#define REIGN__K_VERDICT    "verdict"
#define REIGN__K_RUNS       "runs"
#define REIGN__K_RUN_PREFIX "r" /* r1 .. rN: the runs */

/* Values of kind=. */
#define REIGN__KIND_GROUP    "group"
#define REIGN__KIND_ELECTION "election"
#define REIGN__KIND_TASKS    "tasks"
#define REIGN__KIND_SLOTS    "slots"
#define REIGN__KIND_SLOT     "slot"

/* A worker's group payload: "concurrency=N\nprefetch=M" (not a record: lines of KEY=N). */
#define REIGN__K_CONCURRENCY "concurrency"
#define REIGN__K_PREFETCH    "prefetch"

/* ---- the SQL runs table (src/sql/runs.c) ------------------------------------------------- */

/* The columns a row is read with, in this order. */
#define REIGN__RUNS_ROW_COLUMNS                                                                    \
    "slot, attempt, owner, host, term, token, start_ms, end_ms, result, code, verdict, id"
#define REIGN__RUNS_N_ROW_COLUMNS 12
/* The columns a table must have to be used: a table that lacks one is not a runs table. */
#define REIGN__RUNS_REQUIRED_COLUMNS                                                               \
    "data_center", "lock_name", "slot", "attempt", "owner", "host", "term", "token", "start_ms",   \
        "end_ms", "result", "code", "verdict"

/* ---- the SQL side tables: "<lease table>_<suffix>", made on first use ------------------- */

#define REIGN__SQL_RUNS_SUFFIX   "runs"   /* {R}: the runs above */
#define REIGN__SQL_VALUES_SUFFIX "values" /* {V}: values (src/sql/values.c) */
#define REIGN__SQL_CANDIDATES_SUFFIX                                                               \
    "candidates"                              /* {C}: listed candidates (src/sql/candidates.c) */
#define REIGN__SQL_SESSIONS_SUFFIX "sessions" /* {S}: client sessions (src/sql/sessions.c) */
#define REIGN__SQL_MEMBERS_SUFFIX  "members"  /* {M}: group members (src/sql/members.c) */
#define REIGN__SQL_TASKS_SUFFIX    "tasks"    /* {K}: task queues (src/sql/tasks.c) */
#define REIGN__SQL_HISTORY_SUFFIX  "history"  /* {H}: leaderships (src/sql/history.c) */

/* The columns a values table must have to be used. */
#define REIGN__VALUES_REQUIRED_COLUMNS                                                             \
    "data_center", "value_key", "version", "data", "czxid", "mzxid", "created_ms", "modified_ms"
/* The columns a tasks table must have to be used. */
#define REIGN__TASKS_REQUIRED_COLUMNS                                                              \
    "id", "data_center", "queue_name", "guid", "state", "worker", "worker_guid", "term",           \
        "requeued", "data", "exit_code", "exit_signal", "output", "submitted_ms", "assigned_ms",   \
        "done_ms"
/* The columns a candidates table must have to be used. */
#define REIGN__CANDIDATES_REQUIRED_COLUMNS                                                         \
    "data_center", "lock_name", "guid", "owner", "payload", "joined_ms", "expires_ms"

/* The columns a history table must have to be used. */
#define REIGN__HISTORY_REQUIRED_COLUMNS                                                            \
    "data_center", "lock_name", "term", "owner", "owner_guid", "payload", "data_len",              \
        "started_ms", "ended_ms", "end_reason", "ended_estimated"

/* The columns a sessions table must have to be used. */
#define REIGN__SESSIONS_REQUIRED_COLUMNS                                                           \
    "data_center", "guid", "owner", "lease_ms", "beat", "created_ms", "modified_ms"
/* The columns a members table must have to be used. */
#define REIGN__MEMBERS_REQUIRED_COLUMNS                                                            \
    "data_center", "group_name", "guid", "seq", "member_id", "session_guid", "payload", "version", \
        "joined_ms"

/* ---- names ------------------------------------------------------------------------------- */

/* A path segment reign accepts in a name (a group, a value key's segment, a queue, a worker):
 * 1..REIGN__SEGMENT_MAX of [A-Za-z0-9._:-], and neither "." nor "..". */
#define REIGN__SEGMENT_MAX 200
bool reign__segment_ok(const char *s, size_t n);

/* 0 or REIGN_ENAME: an election's name, which is also the name of the slot set that rides on it
 * (one segment of at most REIGN_NAME_MAX).  Here, below both, so that slots need no election
 * file to check one. */
int reign__name_check(const char *name);

/* Parses a member node's name "m_<16 hex>_<10 digits>"; false for anything else.
 * guid (17 bytes) and seq may be NULL. */
bool reign__member_node_parse(const char *name, char *guid, uint64_t *seq);

/* ---- election nodes (ZooKeeper) ---- */

/* A queue candidate's node name: "n_<16 hex>_<10 digits>" (priority 0) or
 * "n_<16 hex>_p<4 digits>_<10 digits>". */
typedef struct reign__qnode {
    const char *name;
    char guid[2 * REIGN__GUID_BYTES + 1];
    unsigned prio;
    uint64_t seq;
} reign__qnode;

/*
 * A queue candidate's guid: 8 hex digits that hash its id (FNV-1a), then 8
 * random ones.  The hash lets `reign designate` find the candidate with an
 * id from the listing alone (no read of every candidate); the random half
 * tells one standing of a process from the next.  Writes 16 digits and a
 * NUL; 0, or what reign__random_hex() returns.
 */
int reign__election_guid(char out[2 * REIGN__GUID_BYTES + 1], const char *id);
/* The id-hash half of a guid made for `id`: 8 hex digits and a NUL. */
void reign__election_id_tag(char out[9], const char *id);

/* Parses a child name; false for anything that is not a queue node. */
bool reign__qnode_parse(const char *name, reign__qnode *out);
/* Sorts in the order in which they lead: higher priority first, then by
 * sequence (first come, first served). */
void reign__qnode_sort(reign__qnode *v, size_t n);
/* Whether a leads before b. */
bool reign__qnode_before(const reign__qnode *a, const reign__qnode *b);

/* A child name reign may act on ("lock" or a queue node): data read from
 * the store names nodes, and must never lead us outside the election. */
bool reign__election_node_ok(const char *name);

/* "/reign/election/NAME" + suffix, or NULL on OOM. */
char *reign__election_path(const char *name, const char *suffix);

/* 0 or REIGN_ENAME: a queue name, or a worker id (one path segment each). */
int reign__tasks_queue_check(const char *queue);
int reign__tasks_worker_check(const char *id);

/* Parses a task name "t_<16 hex>_<10 digits>"; false for anything else.
 * guid (17 bytes) and seq may be NULL. */
bool reign__task_name_parse(const char *name, char *guid, uint64_t *seq);
/* Orders task names by their sequence number (submission order), then by name. */
int reign__task_name_cmp(const char *a, const char *b);
/* Sorts task names by their sequence number (submission order). */
void reign__tasks_sort_names(char **names, size_t n);

/* ---- paths -------------------------------------------------------------------------------- */

/* printf into a new string, or NULL on OOM. */
char *reign__strf(const char *fmt, ...) REIGN__PRINTF(1, 2);

/* "/reign/value/KEY", or NULL on OOM. */
char *reign__value_path(const char *key);

/* "/reign/tasks/Q[/a[/b[/c]]]" (NULL parts end it), or NULL on OOM. */
char *reign__tasks_path(const char *queue, const char *a, const char *b, const char *c);
/* "/reign/tasks/Q/data/<tag>": the bucket of the payloads whose guids start with the tag (a
 * container node: the server deletes it some time after its last child went), or NULL. */
char *reign__tasks_bucket_path(const char *queue, const char *guid);
/* "/reign/tasks/Q/data/<tag>/<guid>": where the payload of a task is kept while the task is
 * pending or assigned; from the task's name (NULL if `task` is not a task name, or on OOM), or
 * from its guid (a task not named yet: its submit). */
char *reign__tasks_payload_path(const char *queue, const char *task);
char *reign__tasks_guid_payload_path(const char *queue, const char *guid);
/* "tasks.Q": the queue's group and election, or NULL on OOM. */
char *reign__tasks_group_name(const char *queue);

/* ---- records ------------------------------------------------------------------------------ */

/*
 * A worker's group payload, "concurrency=N\nprefetch=M": what it runs at once and the most
 * tasks the master may give it.  _build writes it (buf: at least REIGN__TASKS_LIMITS_MAX
 * bytes; returns its length).  _parse reads what any worker registered, foreign data
 * included, and never fails: a missing or malformed concurrency is 1; a missing or malformed
 * prefetch is 2 x concurrency; one below concurrency or above 400000 (however many digits) is
 * concurrency.
 */
#define REIGN__TASKS_LIMITS_MAX 48
size_t reign__tasks_limits_build(char *buf, int concurrency, int prefetch);
void reign__tasks_limits_parse(const void *data, size_t len, size_t *concurrency, size_t *prefetch);

/* The status record of a task's result. */
int reign__tasks_status_build(reign__buf *out, const char *worker, int exit_code, int signal,
                              const void *output, size_t len);
/*
 * Fills info (state DONE, done at done_ms: the status node's creation) from a status node's
 * data; strings point into rec, which the caller clears.  REIGN_EFOREIGN for data that is not
 * a status record.  (The struct is <reign/tasks.h>'s reign_task_info, named here without its
 * header: the recipes' public types are not core's to include.)
 */
struct reign_task_info;
int reign__tasks_status_parse(const char *value, size_t len, int64_t done_ms, reign__record *rec,
                              struct reign_task_info *info);

#endif
