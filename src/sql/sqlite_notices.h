/*
 * sqlite_notices.h - LISTEN/NOTIFY for the processes of one host that share a SQLite file.
 *
 * SQLite tells nobody of a commit.  Watching the database file itself (inotify) wakes every
 * process at every write - and every session's beat is a write, so at rest each process would
 * read once per beat of every other.  So reign's writers say what they changed, as they do on
 * PostgreSQL: a notice is one line appended to a file beside the database,
 * "<database>-reign-notices", and listeners watch that file alone (sqlite.c's inotify
 * descriptor), read the lines added since they last looked, and keep those of the channels
 * they listen to (reign__sql_channel()).  A notice is appended after the commit it tells of
 * (one sent in a transaction waits for its COMMIT, and a ROLLBACK drops it), so a listener
 * woken by it reads the change.
 *
 * The file:
 *
 *   reign-notices 1 <generation, 16 hex digits>\n     the header, REIGN__NOTICES_HDR bytes
 *   <channel> <payload>\n                              one per notice; in the payload '\' is
 *   ...                                                "\\" and a newline "\n"
 *
 * Writers append under an exclusive flock(); the first writes the header, generation 1, and the
 * one that finds the file longer than REIGN__NOTICES_CAP writes the header with the next
 * generation and truncates the file to its header before it appends (a line left torn by a
 * writer that died is ended first).  A listener reads the header before and after the lines it
 * reads: a generation that changed means that it may have missed lines, and it hears "something
 * changed" (a NULL payload: its watchers read everything they follow), as it does when the
 * file was removed or replaced, or cannot be read.  Only whole lines are taken; a line still
 * being written is read at the next wake-up.
 *
 * A hint, not a promise: the lease rows decide, and whatever no notice tells (a writer that
 * does not write notices, the file unwritable) the readers still find at their polls.
 */
#ifndef REIGN_SQL_SQLITE_NOTICES_H
#define REIGN_SQL_SQLITE_NOTICES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core.h"

#define REIGN__NOTICES_SUFFIX "-reign-notices"
/* "reign-notices 1 " + 16 hex digits + "\n" */
#define REIGN__NOTICES_HDR 33
#define REIGN__NOTICES_CAP (1 << 20)

typedef struct reign__notices {
    char *path;          /* the notice file's */
    mode_t mode;         /* a new notice file's: the database file's */
    int fd;              /* -1 until opened */
    uint64_t gen;        /* the generation read up to off */
    off_t off;           /* the next byte to read */
    bool listening;      /* off is where this listener has read to */
    reign__u64set chans; /* the channels listened to, by reign__hash_str() */
    reign__buf held;     /* notices of the transaction in progress: appended at its COMMIT */
} reign__notices;

/* The notice file of the database at db_path, whose file mode new notice files get. */
int reign__notices_init(reign__notices *n, const char *db_path, mode_t mode);
void reign__notices_free(reign__notices *n);

/* Listens on the channels; the first call opens the file (made if missing) and starts reading
 * at its end.  0, or a negative code with err set. */
int reign__notices_listen(reign__notices *n, const char (*chans)[64], size_t k, char *err,
                          size_t errlen);

/* Appends a notice now (held: kept for reign__notices_commit()).  0, or a negative code. */
int reign__notices_post(reign__notices *n, const char *chan, const char *payload, bool held,
                        char *err, size_t errlen);
/* The transaction's end: its notices appended (committed) or dropped. */
int reign__notices_commit(reign__notices *n, bool committed, char *err, size_t errlen);

/*
 * Reads what was appended since the last read: heard(arg, payload) for each notice on a
 * channel listened to, heard(arg, NULL) once where lines may have been missed.  1 if anything
 * was heard, 0 if nothing, a negative code if the file could not be read (heard(arg, NULL)
 * then too).
 */
int reign__notices_read(reign__notices *n, void (*heard)(void *arg, const char *payload),
                        void *arg);

/* Whether the path no longer names the file we have open (removed, or another moved over it). */
bool reign__notices_moved(const reign__notices *n);
/* Opens the file the path names now (made if missing), to be read from its start: after
 * reign__notices_moved().  0, or a negative code. */
int reign__notices_reopen(reign__notices *n);

#endif
