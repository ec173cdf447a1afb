/*
 * election_internal.h - what the election files share: the part of an
 * election every backend has (election.c holds the public API over it and
 * dispatches to election_zk.c or election_lease.c), the ZooKeeper node
 * layout and the parsing of what reign writes into election nodes
 * (election_zk.c, election_query.c).
 *
 *   /reign/election/NAME          persistent; record kind=election strategy=...
 *   /reign/election/NAME/term     persistent; its version is the term, the
 *                                 zxid of its last write the fencing token;
 *                                 record id=, node=, guid= + leader's payload
 *   /reign/election/NAME/n_<guid>_<seq>   queue candidates (ephemeral),
 *   /reign/election/NAME/n_<guid>_p<prio>_<seq>   ... with a priority
 *   /reign/election/NAME/leader   queue strategy: held (ephemeral) by the
 *                                 leader, made by its claim; record id=,
 *                                 node=, guid=, priority=
 *   /reign/election/NAME/lock     lock strategy (ephemeral)
 *   candidate records: id=, guid= + payload, and requests others add:
 *                      designate=<prio> (stand again with that priority),
 *                      handoff=<node> (to the leader: that node asks for the lead)
 */
#ifndef REIGN_ELECTION_INTERNAL_H
#define REIGN_ELECTION_INTERNAL_H

#include <reign/election.h>

#include "client_internal.h"
#include "record.h"

/* ---- every backend ----------------------------------------------------------------------------
 */

typedef struct reign__election_impl reign__election_impl;

/* The leader as an election last saw it (owned copies). */
typedef struct reign__leader_view {
    bool known;
    char *id;
    void *data;
    size_t data_len;
    char *node; /* ZooKeeper: the leader's node name */
    uint64_t term;
    uint64_t token;
    int64_t since_ms;
} reign__leader_view;

void reign__leader_view_clear(reign__leader_view *v);
/* Borrowed pointers into v. */
void reign__leader_view_public(const reign__leader_view *v, reign_leader *out);

/* What every election has; a backend's election starts with it. */
struct reign_election {
    reign__recipe recipe; /* first: the client calls us through it */
    const reign__election_impl *impl;
    reign_client *client;
    const reign__logger *log;
    char *name;
    char *id;
    void *data;
    size_t data_len;
    bool observer;
    bool follow; /* observers, and follow_leader candidates */
    bool listed; /* SQL: keeps a row in the candidates table while standing */
    int cede_delay_ms;
    reign_election_cb *cb;
    void *userdata;
    bool leader; /* the backend keeps these three current */
    uint64_t term;
    uint64_t token;
    reign__leader_view lv; /* the backend keeps it current for observers and followers */
};

/* A backend's answers to the public API (election.c checks the arguments and the state). */
struct reign__election_impl {
    int (*resign)(reign_election *e);                          /* not yet resigning or left */
    int (*cede)(reign_election *e, int delay_ms);              /* leading */
    int64_t (*valid_until)(const reign_election *e);           /* leading */
    int (*leader)(const reign_election *e, reign_leader *out); /* REIGN_ENOENT if unknown */
    reign_election *(*free)(reign_election *e);
};

/* Fills the common part from a checked name and options (o->id set); 0 or REIGN_ENOMEM. */
int reign__election_base_init(reign_election *e, reign_client *client, const char *name,
                              const reign_election_options *o);
/* Frees what base_init allocated. */
void reign__election_base_free(reign_election *e);

/* The backends' joins, with a checked name and checked options (o->id set). */
int reign__zk_election_join(reign_election **ret, reign_client *client, const char *name,
                            const reign_election_options *o);
int reign__lease_election_join(reign_election **ret, reign_client *client, const char *name,
                               const reign_election_options *o);

/* The SQL side of reign_election_query() and reign_election_depose() (name checked). */
int reign__lease_query(reign_client *client, const char *name, bool depose,
                       reign_election_query_cb *qcb, reign_election_done_cb *dcb, void *userdata);

/* ---- ZooKeeper ----------------------------------------------------------------------------------
 */

#define REIGN__ELECTION_DIR REIGN__ZK_ROOT "/election"
#define REIGN__GUID_BYTES   8 /* 16 hex digits */

/* Priorities: configured ones are 0..REIGN_PRIORITY_MAX and carried in node
 * names (4 digits); a designated candidate outranks all of them at
 * REIGN__DESIGNATED_MIN, for one leadership, in the leader node's record. */
#define REIGN__DESIGNATED_MIN (REIGN_PRIORITY_MAX + 1)

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

/* Checks an election name; 0 or REIGN_ENAME. */
int reign__election_name_check(const char *name);

/* "/reign/election/NAME" + suffix, or NULL on OOM. */
char *reign__election_path(const char *name, const char *suffix);

#endif
