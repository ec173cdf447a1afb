/*
 * reign/reign.h - the whole public API of libreign.
 *
 * libreign elects one leader among many processes, through a ZooKeeper
 * ensemble, a lease row in PostgreSQL or MariaDB, or a SQLite file on one
 * host.  Start with <reign/client.h> (connections, stores and the execution
 * model), then <reign/election.h>,
 * <reign/group.h> (membership), <reign/value.h> (watched values) and
 * <reign/tasks.h> (a master-worker task queue) and <reign/slot.h> (scheduled
 * work that runs once per slot across every copy); <reign/limits.h> has
 * the longest name, id, key and payload each of them accepts.
 */
#ifndef REIGN_REIGN_H
#define REIGN_REIGN_H

#include <reign/common.h>
#include <reign/limits.h>
#include <reign/process.h>
#include <reign/client.h>
#include <reign/election.h>
#include <reign/group.h>
#include <reign/value.h>
#include <reign/tasks.h>
#include <reign/slot.h>
#include <reign/store.h>

#endif
