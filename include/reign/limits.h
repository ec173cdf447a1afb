/*
 * reign/limits.h - every bound of libreign's public API in one place: the
 * longest name, id, key and payload each concept accepts, the ranges of
 * its numeric options, and the special values its arguments may take
 * (the versions of a value), which the library's backends need too.
 *
 * Lengths are in bytes, not counting a terminating NUL.  A call given
 * more is refused (REIGN_ENAME for a name or key, REIGN_EINVAL for an id,
 * REIGN_E2BIG for a payload) and changes nothing; data found in the store
 * over these bounds (written by other tools) is refused as REIGN_EFOREIGN.
 * The stores themselves size their columns and nodes to fit.
 *
 * Included by <reign/reign.h> and by each header whose functions take
 * these values, so a program that includes only <reign/election.h> still
 * sees REIGN_NAME_MAX.
 */
#ifndef REIGN_LIMITS_H
#define REIGN_LIMITS_H

#include <stdint.h>

/* ---- elections (<reign/election.h>) ------------------------------------- */

/* Longest election name: [A-Za-z0-9._:-], not "." or "..". */
#define REIGN_NAME_MAX 200
/* Longest candidate id (no control characters). */
#define REIGN_ID_MAX 256
/* Largest candidate payload (its address, say). */
#define REIGN_DATA_MAX 1000000
/* Highest candidate priority (reign_election_options.priority: 0 to this). */
#define REIGN_PRIORITY_MAX 255

/* ---- groups (<reign/group.h>) ------------------------------------------- */

/* Longest group name: [A-Za-z0-9._:-], not "." or "..". */
#define REIGN_GROUP_NAME_MAX 200
/* Longest member id (no control characters). */
#define REIGN_MEMBER_ID_MAX 256
/* Largest member payload. */
#define REIGN_MEMBER_DATA_MAX 1000000

/* ---- values (<reign/value.h>) ------------------------------------------- */

/* Longest key, its '/'-separated segments and separators together. */
#define REIGN_KEY_MAX 512
/* Largest value payload. */
#define REIGN_VALUE_DATA_MAX 1000000
/* The versions reign_value_set() and reign_value_delete() take besides a real one (>= 0): */
#define REIGN_VALUE_ANY    (-1) /* whatever the current version */
#define REIGN_VALUE_ABSENT (-2) /* set: only if the value does not exist yet */

/* ---- task queues (<reign/tasks.h>) -------------------------------------- */

/* Longest queue name: [A-Za-z0-9._:-], not "." or "..". */
#define REIGN_TASKS_QUEUE_MAX 180
/* Longest worker id: [A-Za-z0-9._:-], not "." or "..". */
#define REIGN_TASKS_WORKER_MAX 200
/* Longest task id (the node name the queue gives a task). */
#define REIGN_TASKS_TASK_MAX 40
/* Largest task payload. */
#define REIGN_TASK_DATA_MAX 900000
/* Longest result output kept; more is truncated to this. */
#define REIGN_TASK_OUTPUT_MAX 900000

/* ---- election history (reign_election_history()) ------------------------ */

/* Leaderships an election's history keeps by default (the URI's history=N). */
#define REIGN_HISTORY_DEFAULT 100
/* Most history=N allows. */
#define REIGN_HISTORY_MAX 100000
/* Bytes of the leader's payload a history record keeps; more is cut (and said). */
#define REIGN_HISTORY_DATA_MAX 512

/* ---- slots (<reign/slot.h>) --------------------------------------------- */

/* Longest slot key. */
#define REIGN_SLOT_KEY_MAX 128
/* Most retries of one slot (so at most this + 1 attempts). */
#define REIGN_SLOT_RETRIES_MAX 20
/* Most slots a record keeps (reign_slot_options.keep). */
#define REIGN_SLOT_KEEP_MAX 100000
/* Longest every_ms and deadline_ms (reign run --every, --deadline): a year. */
#define REIGN_SLOT_DURATION_MAX_MS (INT64_C(366) * 24 * 3600 * 1000)

#endif
