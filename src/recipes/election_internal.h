/*
 * election_internal.h - what election.c and election_query.c share: the
 * node layout and the parsing of what reign writes into election nodes.
 *
 *   /reign/election/NAME          persistent; record kind=election strategy=...
 *   /reign/election/NAME/term     persistent; its version is the term, the
 *                                 zxid of its last write the fencing token;
 *                                 record id=, node=, guid= + leader's payload
 *   /reign/election/NAME/n_<guid>_<seq>   queue candidates (ephemeral)
 *   /reign/election/NAME/lock     lock strategy (ephemeral)
 *   candidate records: id=, guid= + payload
 */
#ifndef REIGN_ELECTION_INTERNAL_H
#define REIGN_ELECTION_INTERNAL_H

#include <reign/election.h>

#include "client_internal.h"
#include "record.h"

#define REIGN__ELECTION_DIR REIGN__ZK_ROOT "/election"
#define REIGN__GUID_BYTES   8 /* 16 hex digits */

/* A queue candidate's node name "n_<16 hex>_<10 digits>". */
typedef struct reign__qnode {
    const char *name;
    char guid[2 * REIGN__GUID_BYTES + 1];
    uint64_t seq;
} reign__qnode;

/* Parses a child name; false for anything that is not a queue node. */
bool reign__qnode_parse(const char *name, reign__qnode *out);
/* Sorts by sequence (the order in which they lead). */
void reign__qnode_sort(reign__qnode *v, size_t n);

/* A child name reign may act on ("lock" or a queue node): data read from
 * the store names nodes, and must never lead us outside the election. */
bool reign__election_node_ok(const char *name);

/* Checks an election name; 0 or REIGN_ENAME. */
int reign__election_name_check(const char *name);

/* "/reign/election/NAME" + suffix, or NULL on OOM. */
char *reign__election_path(const char *name, const char *suffix);

#endif
