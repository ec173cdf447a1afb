/*
 * fuzz_notices.c - libFuzzer target for the reader of SQLite's notice file
 * (reign__notices_read(), src/sql/sqlite_notices.c).  The input is the file's content, as
 * another process (or anything else) may have left it:
 *
 *   - the read never fails on it, and hands on only NUL-terminated payloads, or NULL;
 *   - a notice appended after it (a payload with a backslash and a newline) is heard once,
 *     exactly as posted, at the next read, whatever came before.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "sql/sqlite_notices.h"

static const char chan[] = "reign_t_00000000000000aa";
static const char posted[] = "name\nhint \\ with a backslash";

typedef struct got {
    size_t all, exact, other;
} got;

static void heard(void *arg, const char *payload)
{
    got *g = arg;
    if (!payload)
        g->all++;
    else if (!strcmp(payload, posted))
        g->exact++;
    else
        g->other++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char dir[] = "/tmp/reign-fuzz-notices-XXXXXX";
    static char db[sizeof dir + 8];
    if (!db[0]) {
        CHECK(mkdtemp(dir) != NULL);
        snprintf(db, sizeof db, "%s/x.db", dir);
    }
    reign__notices n;
    CHECK(reign__notices_init(&n, db, 0600) == 0);
    unlink(n.path);
    char one[1][64];
    memcpy(one[0], chan, sizeof chan);
    CHECK(reign__notices_listen(&n, (const char(*)[64])one, 1, NULL, 0) == 0);
    CHECK(pwrite(n.fd, data, size, 0) == (ssize_t)size);
    got g = {0};
    CHECK(reign__notices_read(&n, heard, &g) >= 0);
    got g2 = {0};
    CHECK(reign__notices_post(&n, chan, posted, false, NULL, 0) == 0);
    CHECK(reign__notices_read(&n, heard, &g2) == 1);
    CHECK(g2.exact == 1);
    reign__notices_free(&n);
    return 0;
}
