/*
 * history.h - the leaderships of SQL lease elections (reign_election_history(), docs/sql-leases.md
 * "History"): the table "<lease table>_history", beside the lease table, one row per term:
 *
 *   data_center, lock_name, term   the primary key: the election and the leadership's term
 *   owner, owner_guid   the leader's candidate id and the standing (guid) that won the term
 *   payload             its payload, cut to REIGN_HISTORY_DATA_MAX bytes (NULL: none)
 *   data_len            the payload's whole length
 *   started_ms          when the take landed, by the database's clock
 *   ended_ms            when it ended (database clock); NULL while the leadership is open
 *   end_reason          how: "resigned", "ceded", "deposed", "designated", "preempted",
 *                       "guardian", "expired", "lost"; NULL while open - but for the word a
 *                       preemptor leaves on an open row ("preempted") for the holder's end
 *   ended_estimated     1: ended_ms is an estimate (the successor closed it: "expired")
 *
 * Written by the leaders themselves, after their take and before their release, on their
 * worker (no statement on the handoff's path); the first write of a term is fenced by the lease
 * row (it inserts only while the row is at that term, won by that standing).  Made on first use
 * like the other side tables; one of a foreign layout is refused (REIGN_EFOREIGN), and a row
 * reign could not have written is skipped by the reader.  The history never decides anything.
 * Everything here blocks (the worker's CALL); private to the library.
 */
#ifndef REIGN_SQL_HISTORY_H
#define REIGN_SQL_HISTORY_H

#include "sql.h"

typedef struct reign__history_row {
    uint64_t term;
    char owner[REIGN_ID_MAX + 1];
    void *payload; /* allocated; NULL when payload_len is 0 */
    size_t payload_len, full_len;
    int64_t started_ms;
    int64_t ended_ms;     /* 0: open */
    char end[16];         /* "" while open */
    bool ended_estimated; /* ended_ms is an estimate */
} reign__history_row;

typedef struct reign__history_rows {
    reign__history_row *v;
    size_t n;
} reign__history_rows;

void reign__history_rows_free(reign__history_rows *r);

/* What a new leader writes once its take has landed (history.c). */
typedef struct reign__history_claim {
    const char *name, *owner, *guid;
    const void *payload;
    size_t payload_len; /* the whole length: the row keeps REIGN_HISTORY_DATA_MAX bytes of it */
    uint64_t term;
    int64_t estimate_ms; /* an unheard predecessor ended at the latest this long before us */
    int keep;            /* history=N: the terms kept */
} reign__history_claim;

/*
 * The row of term h->term, inserted only while the lease row is still at that term and holds
 * h->owner under h->guid (or a mark put over it since: a designation, a depose); then the
 * row of term - 1, if still open, is closed as "expired" (estimated: h->estimate_ms before
 * now, not before it started), and every keep / 10 + 1 terms the rows of terms <= term - keep
 * go.  1 (the row made), 0 (not: the lease moved on, or the row was there), or a negative
 * code.
 */
int reign__history_begin(reign__sqlconn *c, const char *dc, const reign__history_claim *h,
                         char *err, size_t errlen);

/* The end of the leadership of `term` won by `guid`, if still open and nobody has taken the
 * lease since (a leader that stood still while its lease expired and was taken does not say how
 * it ended: its successor closes it as expired): `word` (above), now.  A "designated" end keeps
 * a "preempted" left by the preemptor.  This and the two below write
 * only into a table that is there and reign's: 1, 0 (closed already, no row, no table), or a
 * negative code (REIGN_EFOREIGN: a table of another layout). */
int reign__history_end(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                       const char *guid, const char *word, char *err, size_t errlen);

/* A preemptor's word on the open row of `term` ("preempted"; NULL takes it back), for the
 * holder's end.  1, 0, or a negative code. */
int reign__history_hint(reign__sqlconn *c, const char *dc, const char *name, uint64_t term,
                        const char *word, char *err, size_t errlen);

/* The guardian's end of a dead client's leadership (standing `guid`): "guardian", now, if its
 * row is open.  1, 0, or a negative code. */
int reign__history_guardian(reign__sqlconn *c, const char *dc, const char *name, const char *guid,
                            char *err, size_t errlen);

/* Deletes the election's rows (no table: nothing), for `reign rm`.  0 or a negative code. */
int reign__history_remove(reign__sqlconn *c, const char *dc, const char *name, char *err,
                          size_t errlen);

/* The election's rows, oldest term first (no table: none); rows reign could not have written
 * are skipped (*skipped counts them).  0 or a negative code (REIGN_EFOREIGN: a table of another
 * layout). */
int reign__history_list(reign__sqlconn *c, const char *dc, const char *name,
                        reign__history_rows *out, size_t *skipped, char *err, size_t errlen);

#endif
