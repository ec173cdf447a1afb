/*
 * fuzz_slot_record.c - libFuzzer target for the text of a slot node (the record of a slot in
 * ZooKeeper, src/recipes/slot/slot_model.c), which anyone with write access to the store may
 * have written.  Each input:
 *
 *   - parses or fails with REIGN_EFOREIGN (or REIGN_ENOMEM), never anything else, and a
 *     failure leaves an empty record;
 *   - parsed, it holds what the builder could write: a valid key, 0 to 21 attempts numbered
 *     1..n, only the last running and exactly then without an end, a verdict that agrees;
 *   - built again and parsed (with another mtime: no "@" is left), it gives the same record,
 *     and building that gives the same bytes (the builder's output is a fixed point);
 *   - the same bytes followed by others, cut back to len, parse the same.
 */
#include <string.h>

#include "fuzz_common.h"
#include "recipes/slot/slot_internal.h"

static void check_valid(const reign__slot_rec *r)
{
    CHECK(r->exists);
    CHECK(reign_slot_key_check(r->key) == 0);
    CHECK(r->n <= REIGN__SLOT_RUNS_MAX);
    CHECK((r->verdict == REIGN_SLOT_OPEN) == (r->n == 0));
    for (size_t i = 0; i < r->n; i++) {
        const reign__slot_run *u = &r->runs[i];
        CHECK(u->attempt == i + 1);
        CHECK((u->result == REIGN_SLOT_RUNNING) == (u->end_ms == 0));
        CHECK(u->result != REIGN_SLOT_RUNNING || i + 1 == r->n);
        CHECK(u->start_ms >= 0 && u->end_ms >= 0);
    }
    CHECK((r->verdict == REIGN_SLOT_BUSY) ==
          (r->n > 0 && r->runs[r->n - 1].result == REIGN_SLOT_RUNNING));
}

static void check_same(const reign__slot_rec *a, const reign__slot_rec *b)
{
    CHECK(!strcmp(a->key, b->key));
    CHECK(a->verdict == b->verdict && a->n == b->n);
    for (size_t i = 0; i < a->n; i++) {
        const reign__slot_run *x = &a->runs[i], *y = &b->runs[i];
        CHECK(x->attempt == y->attempt && x->term == y->term && x->token == y->token);
        CHECK(x->start_ms == y->start_ms && x->end_ms == y->end_ms);
        CHECK(x->result == y->result && x->code == y->code);
        CHECK(!strcmp(x->owner, y->owner) && !strcmp(x->host, y->host));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static reign__slot_rec r, again;
    int rc = reign__slot_rec_parse(data, size, 1234, &r);
    CHECK(rc == 0 || rc == REIGN_EFOREIGN || rc == REIGN_ENOMEM);
    if (rc != 0) {
        CHECK(!r.exists && r.n == 0);
        return 0;
    }
    check_valid(&r);

    reign__buf b, b2;
    reign__buf_init(&b);
    reign__buf_init(&b2);
    CHECK(reign__slot_rec_build(&b, &r) == 0);
    CHECK(reign__slot_rec_parse(b.data, b.len, 999999, &again) == 0);
    check_same(&r, &again);
    CHECK(reign__slot_rec_build(&b2, &again) == 0);
    CHECK(b.len == b2.len && !memcmp(b.data, b2.data, b.len));
    reign__buf_free(&b);
    reign__buf_free(&b2);

    /* Bytes past len are never read. */
    uint8_t *longer = malloc(size + 8);
    CHECK(longer != NULL);
    memcpy(longer, data, size);
    memcpy(longer + size, "r9=xx\n\n", 8);
    CHECK(reign__slot_rec_parse(longer, size, 1234, &again) == 0);
    check_same(&r, &again);
    free(longer);
    return 0;
}
