/*
 * test_cli_output.c - how `reign` shows payloads and times (src/cli/output.c, fmt.c), no
 * server: what a command printed with a newline at the end is text, not base64 (in JSON
 * exactly, on a one-line form without its trailing line ends); real binary stays base64; a
 * time the store does not know is null in JSON, not 0.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fmt.h"

/* fmt_data() of a string (no NUL inside), compared with `want`. */
static void line_is(const char *data, const char *want)
{
    char *got = fmt_data(data, strlen(data));
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void test_line_form(void **state)
{
    (void)state;
    line_is("", "data=");
    line_is("hello", "data=hello");
    line_is("hello\n", "data=hello");
    line_is("done\r\n", "data=done");
    line_is("a\tb\n\n", "data=a\tb");
    line_is("caf\xc3\xa9\n", "data=caf\xc3\xa9");
    /* a line cannot hold a line break, nor a control character */
    line_is("two\nlines\n", "data_base64=dHdvCmxpbmVzCg==");
    line_is("a\rb", "data_base64=YQ1i");
    line_is("\x1b[31mred", "data_base64=G1szMW1yZWQ=");
    /* not UTF-8 */
    line_is("\xff\xfe\n", "data_base64=//4K");
    line_is("caf\xc3", "data_base64=Y2Fmww==");
    const char nul[] = {'a', '\0', 'b'};
    char *got = fmt_data(nul, sizeof nul);
    assert_string_equal(got, "data_base64=YQBi");
    free(got);
    assert_int_equal(cli_data_line_len("ok\n", 3), 2);
    assert_int_equal(cli_data_line_len("\n", 1), 0);
    assert_int_equal(cli_data_line_len("\x01", 1), -1);
}

/* The JSON reign prints for cli_json_add_data() of data. */
static char *json_of(const void *data, size_t len)
{
    cJSON *o = cJSON_CreateObject();
    cli_json_add_data(o, data, len);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void json_is(const char *data, const char *want)
{
    char *got = json_of(data, strlen(data));
    assert_non_null(got);
    assert_string_equal(got, want);
    cJSON_free(got);
}

static void test_json_form(void **state)
{
    (void)state;
    /* JSON escapes line breaks and tabs: the output, exactly, as text */
    json_is("hello\n", "{\"data\":\"hello\\n\"}");
    json_is("two\nlines\r\n", "{\"data\":\"two\\nlines\\r\\n\"}");
    json_is("a\tb", "{\"data\":\"a\\tb\"}");
    json_is("", "{\"data\":\"\"}");
    json_is("\x1b[0m", "{\"data_base64\":\"G1swbQ==\"}");
    json_is("\xc0\xaf", "{\"data_base64\":\"wK8=\"}"); /* overlong '/' */
    assert_int_equal(cli_data_is_text("x\n", 2), 1);
    assert_int_equal(cli_data_is_text("x\x7f", 2), 0);
    assert_int_equal(cli_data_is_text("\xc2\x85", 2), 0); /* C1 control NEL */
}

static void test_unknown_time(void **state)
{
    (void)state;
    cJSON *o = cJSON_CreateObject();
    cli_json_add_ms(o, "since_ms", 0);
    cli_json_add_ms(o, "joined_ms", INT64_C(1714564800123));
    char *s = cJSON_PrintUnformatted(o);
    assert_string_equal(s, "{\"since_ms\":null,\"joined_ms\":1714564800123}");
    cJSON_free(s);
    cJSON_Delete(o);

    reign_leader l = {.id = "web1", .term = 3, .token = 3, .since_ms = 0};
    cJSON *j = cli_json_leader(&l);
    s = cJSON_PrintUnformatted(j);
    assert_string_equal(s,
                        "{\"id\":\"web1\",\"data\":\"\",\"term\":3,\"token\":3,\"since_ms\":null}");
    cJSON_free(s);
    cJSON_Delete(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_form),
        cmocka_unit_test(test_json_form),
        cmocka_unit_test(test_unknown_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
