/*
 * test_breadcrumb.c - the breadcrumb record (src/reignd/breadcrumb.c): what
 * is encoded decodes to the same, and anything else read from the store is
 * refused as foreign without being trusted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "breadcrumb.h"

static reignd_breadcrumb sample(void)
{
    reignd_breadcrumb b = {.term = 7, .token = 4294967999ull};
    strcpy(b.id, "node-a");
    strcpy(b.service_address, "127.0.0.1:8080");
    strcpy(b.peer_address, "[::1]:7000");
    strcpy(b.instance, "0123456789abcdef");
    return b;
}

static void round_trip(void **state)
{
    reignd_breadcrumb b = sample(), d;
    char text[REIGND_BREADCRUMB_MAX], err[160];
    int n = reignd_breadcrumb_encode(&b, text, sizeof(text));
    assert_true(n > 0);
    assert_int_equal((size_t)n, strlen(text));
    assert_int_equal(reignd_breadcrumb_decode(text, (size_t)n, &d, err, sizeof(err)), 0);
    assert_string_equal(d.id, "node-a");
    assert_string_equal(d.service_address, "127.0.0.1:8080");
    assert_string_equal(d.peer_address, "[::1]:7000");
    assert_string_equal(d.instance, "0123456789abcdef");
    assert_int_equal(d.term, 7);
    assert_int_equal(d.token, 4294967999ull);

    /* No peer address, no trailing newline, unknown keys: still fine. */
    const char *t = "reignd breadcrumb 1\nid=x\nservice_address=h:1\npeer_address=\nterm=1\n"
                    "future=thing\ntoken=2";
    assert_int_equal(reignd_breadcrumb_decode(t, strlen(t), &d, err, sizeof(err)), 0);
    assert_string_equal(d.peer_address, "");
    assert_int_equal(d.token, 2);
    /* An earlier version's record has no instance: it is nobody's in particular. */
    assert_string_equal(d.instance, "");

    /* The largest record fits its bound. */
    memset(b.id, 'i', REIGN_ID_MAX);
    b.id[REIGN_ID_MAX] = '\0';
    memset(b.service_address, 'a', REIGND_ADDRESS_MAX - 1);
    b.service_address[REIGND_ADDRESS_MAX - 1] = '\0';
    memcpy(b.peer_address, b.service_address, REIGND_ADDRESS_MAX);
    memset(b.instance, 'f', REIGND_INSTANCE_MAX - 1);
    b.instance[REIGND_INSTANCE_MAX - 1] = '\0';
    b.term = b.token = UINT64_MAX;
    n = reignd_breadcrumb_encode(&b, text, sizeof(text));
    assert_true(n > 0);
    assert_int_equal(reignd_breadcrumb_decode(text, (size_t)n, &d, err, sizeof(err)), 0);
    assert_int_equal(d.token, UINT64_MAX);
}

static void encode_refuses_bad_fields(void **state)
{
    reignd_breadcrumb b = sample();
    char text[REIGND_BREADCRUMB_MAX];
    assert_int_equal(reignd_breadcrumb_encode(&b, text, 10), REIGN_E2BIG);
    strcpy(b.id, "a\nterm=99");
    assert_int_equal(reignd_breadcrumb_encode(&b, text, sizeof(text)), REIGN_EINVAL);
    b = sample();
    b.service_address[0] = '\0';
    assert_int_equal(reignd_breadcrumb_encode(&b, text, sizeof(text)), REIGN_EINVAL);
    b = sample();
    b.id[0] = '\0';
    assert_int_equal(reignd_breadcrumb_encode(&b, text, sizeof(text)), REIGN_EINVAL);
    b = sample();
    strcpy(b.instance, "x\nid=other");
    assert_int_equal(reignd_breadcrumb_encode(&b, text, sizeof(text)), REIGN_EINVAL);
}

static void foreign_data_is_refused(void **state)
{
    static const char *bad[] = {
        "",
        "reignd breadcrumb 2\nid=x\nservice_address=h:1\nterm=1\ntoken=2\n",
        "hello",
        "reignd breadcrumb 1\n",
        "reignd breadcrumb 1\nid=x\nservice_address=h:1\nterm=1\n",    /* no token */
        "reignd breadcrumb 1\nservice_address=h:1\nterm=1\ntoken=2\n", /* no id */
        "reignd breadcrumb 1\nid=\nservice_address=h:1\nterm=1\ntoken=2\n",
        "reignd breadcrumb 1\nid=x\nservice_address=h:1\nterm=-1\ntoken=2\n",
        "reignd breadcrumb 1\nid=x\nservice_address=h:1\nterm=1\ntoken=18446744073709551616\n",
        "reignd breadcrumb 1\nid=x\nservice_address=h:1\nterm=1\ntoken=2x\n",
        "reignd breadcrumb 1\nid=x\nid=y\nservice_address=h:1\nterm=1\ntoken=2\n",
        "reignd breadcrumb 1\nid=x\rservice_address=h:1\nterm=1\ntoken=2\n",
        "reignd breadcrumb 1\nnoequals\nid=x\nservice_address=h:1\nterm=1\ntoken=2\n",
        "reignd breadcrumb 1\nid=x\nservice_address=h:1\ninstance=a\tb\nterm=1\ntoken=2\n",
    };
    reignd_breadcrumb d;
    char err[160];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        err[0] = '\0';
        if (reignd_breadcrumb_decode(bad[i], strlen(bad[i]), &d, err, sizeof(err)) !=
            REIGN_EFOREIGN)
            fail_msg("case %zu accepted", i);
        assert_true(err[0] != '\0');
    }
    /* A NUL inside the data is a control character too. */
    const char nul[] = "reignd breadcrumb 1\nid=a\0b\nservice_address=h:1\nterm=1\ntoken=2\n";
    assert_int_equal(reignd_breadcrumb_decode(nul, sizeof(nul) - 1, &d, err, sizeof(err)),
                     REIGN_EFOREIGN);
    /* An id longer than any candidate id is refused, not truncated. */
    char longid[REIGN_ID_MAX + 200];
    int n = snprintf(longid, sizeof(longid), "reignd breadcrumb 1\nid=");
    memset(longid + n, 'x', REIGN_ID_MAX + 1);
    n += REIGN_ID_MAX + 1;
    n += snprintf(longid + n, sizeof(longid) - (size_t)n,
                  "\nservice_address=h:1\nterm=1\ntoken=2\n");
    assert_int_equal(reignd_breadcrumb_decode(longid, (size_t)n, &d, err, sizeof(err)),
                     REIGN_EFOREIGN);
}

static void keys(void **state)
{
    char k[REIGN_KEY_MAX + 1];
    assert_int_equal(reignd_breadcrumb_key("hdfs-nn", k, sizeof(k)), 0);
    assert_string_equal(k, "reignd/hdfs-nn/breadcrumb");
    assert_int_equal(reignd_layout_key("hdfs-nn", k, sizeof(k)), 0);
    assert_string_equal(k, "reignd/hdfs-nn/layout");
    assert_int_equal(reignd_layout_key("a/b", k, sizeof(k)), 0); /* still a legal key */
    assert_int_equal(reignd_layout_key("..", k, sizeof(k)), REIGN_ENAME);
    assert_int_equal(reignd_layout_key("x", k, 8), REIGN_ENAME);
    assert_int_equal(reignd_pause_key("hdfs-nn", k, sizeof(k)), 0);
    assert_string_equal(k, "reignd/hdfs-nn/pause");
}

static void pause_record(void **state)
{
    char text[REIGND_PAUSE_MAX], by[REIGN_ID_MAX + 1];
    int n = reignd_pause_encode("node-b", text, sizeof(text));
    assert_true(n > 0);
    reignd_pause_decode(text, (size_t)n, by, sizeof(by));
    assert_string_equal(by, "node-b");
    assert_int_equal(reignd_pause_encode("a\nb", text, sizeof(text)), REIGN_EINVAL);
    assert_int_equal(reignd_pause_encode("node-b", text, 8), REIGN_E2BIG);
    /* Anything else says nothing of who paused (presence alone decides). */
    static const char *odd[] = {"", "reignd pause 1\n", "reignd pause 1\nby=", "x\nby=y\n",
                                "reignd pause 1\nby=a\x01b\n"};
    for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
        reignd_pause_decode(odd[i], strlen(odd[i]), by, sizeof(by));
        assert_string_equal(by, "?");
    }
}

static void instance_ids(void **state)
{
    char a[REIGND_INSTANCE_MAX], b[REIGND_INSTANCE_MAX];
    assert_int_equal(reignd_instance_new(a, sizeof(a)), 0);
    assert_int_equal(reignd_instance_new(b, sizeof(b)), 0);
    assert_int_equal(strlen(a), 16);
    assert_int_equal(strspn(a, "0123456789abcdef"), 16);
    assert_string_not_equal(a, b);
    assert_int_equal(reignd_instance_new(a, 16), REIGN_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(encode_refuses_bad_fields),
        cmocka_unit_test(foreign_data_is_refused),
        cmocka_unit_test(keys),
        cmocka_unit_test(pause_record),
        cmocka_unit_test(instance_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
