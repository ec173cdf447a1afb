/*
 * test_slot_unit.c - unit tests of the slot recipe's model (src/recipes/slot/slot_model.c):
 * keys, durations and period keys; the text of a slot node (exact bytes, round trips, "@"
 * times, every kind of foreign data refused); and the decision a copy takes, walked over
 * every state of a record, every option and leading or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "recipes/slot/slot_internal.h"

/* ---- keys and durations --------------------------------------------------------------------- */

static void test_keys(void **state)
{
    (void)state;
    assert_int_equal(reign_slot_key_check("2024-05-01"), 0);
    assert_int_equal(reign_slot_key_check("2024-05-01T02:00:00+00:00"), 0);
    assert_int_equal(reign_slot_key_check("a.b_c:d+e-f"), 0);
    assert_int_equal(reign_slot_key_check("."), 0); /* a node "s_." is a legal name */
    char k[REIGN_SLOT_KEY_MAX + 2];
    memset(k, 'k', sizeof k);
    k[REIGN_SLOT_KEY_MAX] = '\0';
    assert_int_equal(reign_slot_key_check(k), 0);
    k[REIGN_SLOT_KEY_MAX] = 'k';
    k[REIGN_SLOT_KEY_MAX + 1] = '\0';
    assert_int_equal(reign_slot_key_check(k), REIGN_ENAME);
    static const char *const bad[] = {"", "a/b", "a b", "a\nb", "ä", "a%b", "a*b", "a=b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(reign_slot_key_check(bad[i]), REIGN_ENAME);
    assert_int_equal(reign_slot_key_check(NULL), REIGN_ENAME);
}

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t ms;
    } good[] = {
        {"1", 1000},        {"90s", 90000},     {"15m", 900000},
        {"1h", 3600000},    {"1d", 86400000},   {"500ms", 500},
        {"1h30m", 5400000}, {"1m1s1ms", 61001}, {"366d", INT64_C(366) * 86400000},
        {"0h1s", 1000},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        int64_t ms = -1;
        assert_int_equal(reign_slot_duration_parse(good[i].s, &ms), 0);
        assert_int_equal(ms, good[i].ms);
    }
    static const char *const bad[] = {"",    "0",    "0s",  "-1s", "1x",
                                      "s",   "1.5h", "1 h", "1h ", "367d",
                                      "1hm", "ms",   "1s1", "h1",  "99999999999999999999s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t ms = 42;
        if (reign_slot_duration_parse(bad[i], &ms) != REIGN_EINVAL)
            fail_msg("duration '%.40s' accepted", bad[i]);
        assert_int_equal(ms, 42);
    }
    assert_int_equal(reign_slot_duration_parse(NULL, NULL), REIGN_EINVAL);
    /* Many parts adding up past the limit. */
    char many[3 * 400 + 1] = "";
    for (int i = 0; i < 367; i++)
        strcat(many, "1d");
    int64_t ms = 42;
    assert_int_equal(reign_slot_duration_parse(many, &ms), REIGN_EINVAL);
    many[2 * 366] = '\0';
    assert_int_equal(reign_slot_duration_parse(many, &ms), 0);
    assert_int_equal(ms, INT64_C(366) * 86400000);
}

static void test_period_key(void **state)
{
    (void)state;
    char key[REIGN_SLOT_KEY_MAX + 1];
    int64_t start;
    /* 2024-05-01T02:30:15.250Z */
    int64_t t = INT64_C(1714530615250);
    reign__slot_period_key(t, 3600000, &start, key);
    assert_string_equal(key, "2024-05-01T02:00:00Z");
    assert_int_equal(start, INT64_C(1714528800000));
    reign__slot_period_key(t, 86400000, &start, key);
    assert_string_equal(key, "2024-05-01T00:00:00Z");
    reign__slot_period_key(t, 1500, &start, key);
    assert_int_equal(start % 1500, 0);
    assert_true(start <= t && t - start < 1500);
    assert_int_equal(reign_slot_key_check(key), 0);
    assert_non_null(strchr(key, '.')); /* not whole seconds: milliseconds shown */
    /* The first moment of a period is in it; the last one too. */
    reign__slot_period_key(INT64_C(1714528800000), 3600000, &start, key);
    assert_string_equal(key, "2024-05-01T02:00:00Z");
    reign__slot_period_key(INT64_C(1714532399999), 3600000, &start, key);
    assert_string_equal(key, "2024-05-01T02:00:00Z");
}

/* ---- the node's text ------------------------------------------------------------------------ */

static reign__slot_rec two_runs(void)
{
    reign__slot_rec r;
    reign__slot_rec_init(&r, "2024-05-01");
    r.exists = true;
    r.n = 2;
    r.verdict = REIGN_SLOT_BUSY;
    r.runs[0] = (reign__slot_run){.attempt = 1,
                                  .owner = "host a-1",
                                  .host = "host%a",
                                  .term = 3,
                                  .token = 4294967301ULL,
                                  .start_ms = 1000,
                                  .end_ms = 2000,
                                  .result = REIGN_SLOT_LOST};
    r.runs[1] = (reign__slot_run){.attempt = 2,
                                  .owner = "b",
                                  .host = "h",
                                  .term = 4,
                                  .token = 4294967400ULL,
                                  .start_ms = REIGN__SLOT_NOW,
                                  .result = REIGN_SLOT_RUNNING};
    return r;
}

static void test_text_exact(void **state)
{
    (void)state;
    reign__slot_rec r = two_runs();
    reign__buf b;
    reign__buf_init(&b);
    assert_int_equal(reign__slot_rec_build(&b, &r), 0);
    assert_string_equal(b.data, "reign 1\nkind=slot\nslot=2024-05-01\nverdict=running\nruns=2\n"
                                "r1=1 3 4294967301 1000 2000 lost 0 host%2520a-1 host%2525a\n"
                                "r2=2 4 4294967400 @ - running 0 b h\n\n");
    /* Parsed: "@" is the version's mtime, everything else as it was. */
    reign__slot_rec p;
    assert_int_equal(reign__slot_rec_parse(b.data, b.len, 7777, &p), 0);
    assert_true(p.exists);
    assert_string_equal(p.key, "2024-05-01");
    assert_int_equal(p.verdict, REIGN_SLOT_BUSY);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.runs[0].owner, "host a-1");
    assert_string_equal(p.runs[0].host, "host%a");
    assert_int_equal(p.runs[0].token, 4294967301ULL);
    assert_int_equal(p.runs[0].end_ms, 2000);
    assert_int_equal(p.runs[1].start_ms, 7777);
    assert_int_equal(p.runs[1].end_ms, 0);
    assert_int_equal(p.runs[1].result, REIGN_SLOT_RUNNING);
    /* Resolved and built again, then parsed: the same record. */
    reign__slot_rec_resolve(&r, 7777);
    reign__buf b2;
    reign__buf_init(&b2);
    assert_int_equal(reign__slot_rec_build(&b2, &r), 0);
    reign__slot_rec q;
    assert_int_equal(reign__slot_rec_parse(b2.data, b2.len, 1, &q), 0);
    assert_memory_equal(q.runs, p.runs, sizeof(p.runs[0]) * 2);
    reign__buf_free(&b);
    reign__buf_free(&b2);
}

static void test_text_foreign(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "hello",
        "reign 1\n\n",
        "reign 1\nkind=election\nslot=a\nverdict=open\nruns=0\n\n",
        "reign 1\nkind=slot\nslot=a/b\nverdict=open\nruns=0\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=maybe\nruns=0\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=open\nruns=1\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=open\nruns=0\nextra=1\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=open\nruns=0\n\npayload",
        "reign 1\nkind=slot\nslot=a\nverdict=running\nruns=0\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=open\nruns=1\nr1=1 1 1 5 - running 0 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=running\nruns=1\nr1=2 1 1 5 - running 0 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=running\nruns=1\nr1=1 1 1 5 6 running 0 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 - exited 3 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 done 3 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 exited 3 o\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 exited 3 o h x\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1  1 1 5 6 exited 3 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 -1 1 5 6 exited 3 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 exited 3 o%2541 h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 exited 3 o%2 h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=1\nr1=1 1 1 5 6 exited 99999999999 o "
        "h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=2\nr1=1 1 1 5 - running 0 o h\n"
        "r2=2 1 1 5 6 exited 3 o h\n\n",
        "reign 1\nkind=slot\nslot=a\nverdict=retry\nruns=22\n\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        reign__slot_rec r;
        int rc = reign__slot_rec_parse(bad[i], strlen(bad[i]), 1, &r);
        if (rc != REIGN_EFOREIGN)
            fail_msg("case %zu accepted (%d): %s", i, rc, bad[i]);
        assert_false(r.exists);
        assert_int_equal(r.n, 0);
    }
}

/* ---- deciding ------------------------------------------------------------------------------- */

static reign__slot_rec with_runs(const reign_slot_result *res, const int *codes, size_t n,
                                 reign_slot_verdict v)
{
    reign__slot_rec r;
    reign__slot_rec_init(&r, "k");
    r.exists = n > 0;
    r.n = n;
    r.verdict = v;
    for (size_t i = 0; i < n; i++) {
        r.runs[i].attempt = (unsigned)i + 1;
        r.runs[i].term = i + 1;
        r.runs[i].result = res[i];
        r.runs[i].code = codes[i];
        r.runs[i].start_ms = 10;
        r.runs[i].end_ms = res[i] == REIGN_SLOT_RUNNING ? 0 : 20;
    }
    return r;
}

#define ACT(d, a) assert_int_equal((d).action, (a))

static void test_decide_open(void **state)
{
    (void)state;
    reign__slot_policy p = {.retries = 2};
    reign__slot_rec none;
    reign__slot_rec_init(&none, "k");
    reign__slot_decision d = reign__slot_decide(&none, &p, false, 0, 0);
    ACT(d, REIGN__SLOT_DO_STAND);
    d = reign__slot_decide(&none, &p, true, 5, 0);
    ACT(d, REIGN__SLOT_DO_START);
    /* Late: neither stands nor starts. */
    p.deadline_ms = 1000;
    p.slot_start_ms = 5000;
    d = reign__slot_decide(&none, &p, false, 0, 6001);
    ACT(d, REIGN__SLOT_DO_DONE);
    assert_int_equal(d.outcome, REIGN_SLOT_LATE);
    d = reign__slot_decide(&none, &p, true, 5, 6001);
    assert_int_equal(d.outcome, REIGN_SLOT_LATE);
    d = reign__slot_decide(&none, &p, true, 5, 6000); /* exactly the deadline: still in time */
    ACT(d, REIGN__SLOT_DO_START);
    d = reign__slot_decide(&none, &p, true, 5, 0); /* clock unknown: not judged */
    ACT(d, REIGN__SLOT_DO_START);
}

static void test_decide_done(void **state)
{
    (void)state;
    reign__slot_policy p = {.retries = 2};
    reign_slot_result res[] = {REIGN_SLOT_LOST, REIGN_SLOT_EXITED};
    int codes[] = {0, 0};
    reign__slot_rec r = with_runs(res, codes, 2, REIGN_SLOT_SUCCEEDED);
    for (int lead = 0; lead < 2; lead++) {
        reign__slot_decision d = reign__slot_decide(&r, &p, lead, 9, 0);
        ACT(d, REIGN__SLOT_DO_DONE);
        assert_int_equal(d.outcome, REIGN_SLOT_ALREADY_DONE);
        assert_int_equal(d.run, 1);
    }
    /* A success counts even where the verdict says otherwise (foreign hands). */
    r.verdict = REIGN_SLOT_RETRY;
    reign__slot_decision d = reign__slot_decide(&r, &p, true, 9, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_ALREADY_DONE);
    /* Final verdicts. */
    reign_slot_result f[] = {REIGN_SLOT_EXITED};
    int c3[] = {3};
    r = with_runs(f, c3, 1, REIGN_SLOT_FAILED);
    d = reign__slot_decide(&r, &p, false, 0, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_GAVE_UP);
    r.verdict = REIGN_SLOT_ABANDONED;
    d = reign__slot_decide(&r, &p, true, 5, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_WAS_ABANDONED);
}

static void test_decide_running(void **state)
{
    (void)state;
    reign__slot_policy p = {.retries = 1};
    reign_slot_result res[] = {REIGN_SLOT_RUNNING};
    int codes[] = {0};
    reign__slot_rec r = with_runs(res, codes, 1, REIGN_SLOT_BUSY); /* term 1 */
    /* Not leading: wait; with no_wait: skip. */
    reign__slot_decision d = reign__slot_decide(&r, &p, false, 0, 0);
    ACT(d, REIGN__SLOT_DO_STAND);
    p.no_wait = true;
    d = reign__slot_decide(&r, &p, false, 0, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_SKIPPED);
    p.no_wait = false;
    /* Leading under a later term: its runner is gone; marked lost, verdict retry. */
    d = reign__slot_decide(&r, &p, true, 2, 0);
    ACT(d, REIGN__SLOT_DO_MARK);
    assert_int_equal(d.verdict, REIGN_SLOT_RETRY);
    assert_int_equal(d.run, 0);
    /* ... failed when no attempt is left, abandoned at most once. */
    p.retries = 0;
    d = reign__slot_decide(&r, &p, true, 2, 0);
    assert_int_equal(d.verdict, REIGN_SLOT_FAILED);
    p.at_most_once = true;
    d = reign__slot_decide(&r, &p, true, 2, 0);
    assert_int_equal(d.verdict, REIGN_SLOT_ABANDONED);
    /* ... even past the deadline (the record must say the runner is gone). */
    p.at_most_once = false;
    p.deadline_ms = 1;
    p.slot_start_ms = 1;
    d = reign__slot_decide(&r, &p, true, 2, 100);
    ACT(d, REIGN__SLOT_DO_MARK);
    /* A term not later than the run's: never marked. */
    d = reign__slot_decide(&r, &p, true, 1, 0);
    ACT(d, REIGN__SLOT_DO_STAND);
}

static void test_decide_retry(void **state)
{
    (void)state;
    reign__slot_policy p = {.retries = 2};
    reign_slot_result res[] = {REIGN_SLOT_LOST, REIGN_SLOT_EXITED};
    int codes[] = {0, 3};
    reign__slot_rec r = with_runs(res, codes, 2, REIGN_SLOT_RETRY);
    reign__slot_decision d = reign__slot_decide(&r, &p, true, 9, 0);
    ACT(d, REIGN__SLOT_DO_START);
    d = reign__slot_decide(&r, &p, false, 0, 0);
    ACT(d, REIGN__SLOT_DO_STAND);
    /* This copy allows fewer attempts than were made: it gives up. */
    p.retries = 1;
    d = reign__slot_decide(&r, &p, true, 9, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_GAVE_UP);
    /* At most once: an attempt was made. */
    p.retries = 0;
    p.at_most_once = true;
    d = reign__slot_decide(&r, &p, false, 0, 0);
    assert_int_equal(d.outcome, REIGN_SLOT_WAS_ABANDONED);
}

static void test_verdict_after(void **state)
{
    (void)state;
    reign__slot_policy p = {.retries = 1};
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_EXITED, 0), REIGN_SLOT_SUCCEEDED);
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_EXITED, 2), REIGN_SLOT_RETRY);
    assert_int_equal(reign__slot_verdict_after(&p, 2, REIGN_SLOT_KILLED, 9), REIGN_SLOT_FAILED);
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_LOST, 0), REIGN_SLOT_RETRY);
    p = (reign__slot_policy){.at_most_once = true};
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_EXITED, 0), REIGN_SLOT_SUCCEEDED);
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_EXITED, 1), REIGN_SLOT_FAILED);
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_STOPPED, 15),
                     REIGN_SLOT_ABANDONED);
    assert_int_equal(reign__slot_verdict_after(&p, 1, REIGN_SLOT_LOST, 0), REIGN_SLOT_ABANDONED);
}

/* Every record state x options x leading: the decision is one a copy may take there. */
static void test_decide_exhaustive(void **state)
{
    (void)state;
    static const reign_slot_result results[] = {REIGN_SLOT_RUNNING, REIGN_SLOT_EXITED,
                                                REIGN_SLOT_KILLED, REIGN_SLOT_STOPPED,
                                                REIGN_SLOT_LOST};
    for (size_t n = 0; n <= 3; n++) {
        for (size_t last = 0; last < 5; last++) {
            for (int code = 0; code < 2; code++) {
                for (int v = REIGN_SLOT_OPEN; v <= REIGN_SLOT_ABANDONED; v++) {
                    for (int opts = 0; opts < 16; opts++) {
                        for (int lead = 0; lead < 2; lead++) {
                            reign_slot_result res[3] = {REIGN_SLOT_LOST, REIGN_SLOT_LOST,
                                                        REIGN_SLOT_LOST};
                            int codes[3] = {0, 0, 0};
                            if (n) {
                                res[n - 1] = results[last];
                                codes[n - 1] = code;
                            }
                            reign__slot_rec r = with_runs(res, codes, n, (reign_slot_verdict)v);
                            reign__slot_policy p = {.retries = opts & 1 ? 0 : 2,
                                                    .at_most_once = (opts & 2) != 0,
                                                    .no_wait = (opts & 4) != 0,
                                                    .deadline_ms = opts & 8 ? 10 : 0,
                                                    .slot_start_ms = 0};
                            reign__slot_decision d =
                                reign__slot_decide(&r, &p, lead, 10, opts & 8 ? 100 : 0);
                            assert_non_null(d.why);
                            bool succeeded = false;
                            for (size_t i = 0; i < n; i++)
                                succeeded |= res[i] == REIGN_SLOT_EXITED && codes[i] == 0;
                            /* Never start a slot that succeeded, is final, late or running. */
                            if (d.action == REIGN__SLOT_DO_START) {
                                assert_true(lead);
                                assert_false(succeeded);
                                assert_true(n == 0 || v == REIGN_SLOT_OPEN ||
                                            v == REIGN_SLOT_RETRY || v == REIGN_SLOT_BUSY);
                                assert_false(opts & 8);
                                assert_true(n < (size_t)p.retries + 1);
                                assert_false(p.at_most_once && n > 0);
                                assert_false(n && res[n - 1] == REIGN_SLOT_RUNNING);
                            }
                            /* Marks only a running attempt, as leader. */
                            if (d.action == REIGN__SLOT_DO_MARK) {
                                assert_true(lead);
                                assert_true(n && res[n - 1] == REIGN_SLOT_RUNNING);
                            }
                            if (succeeded)
                                assert_int_equal(d.outcome, REIGN_SLOT_ALREADY_DONE);
                            if (d.action == REIGN__SLOT_DO_DONE)
                                assert_true(d.outcome >= REIGN_SLOT_ALREADY_DONE);
                        }
                    }
                }
            }
        }
    }
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(reign_slot_result_name(REIGN_SLOT_LOST), "lost");
    assert_string_equal(reign_slot_verdict_name(REIGN_SLOT_BUSY), "running");
    assert_string_equal(reign_slot_outcome_name(REIGN_SLOT_ALREADY_DONE), "already_done");
    assert_string_equal(reign_slot_result_name((reign_slot_result)99), "?");
    assert_int_equal(reign__slot_result_parse("killed"), REIGN_SLOT_KILLED);
    assert_int_equal(reign__slot_verdict_parse("retry"), REIGN_SLOT_RETRY);
    assert_int_equal(reign__slot_verdict_parse("nope"), -1);
    assert_int_equal(reign__slot_result_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_period_key),
        cmocka_unit_test(test_text_exact),
        cmocka_unit_test(test_text_foreign),
        cmocka_unit_test(test_decide_open),
        cmocka_unit_test(test_decide_done),
        cmocka_unit_test(test_decide_running),
        cmocka_unit_test(test_decide_retry),
        cmocka_unit_test(test_verdict_after),
        cmocka_unit_test(test_decide_exhaustive),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
