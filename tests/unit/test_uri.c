/*
 * test_uri.c - unit tests of the store URI parser (src/core/uri.c): what it
 * accepts and how it decodes it, every rule by which it refuses input and
 * the message it gives (one line, naming the place, never the password),
 * the limits, the parameter helpers, the host string for the ZooKeeper C
 * client, and an out-of-memory loop through reign_set_allocator().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core.h"
#include "uri.h"
#include "oom.h"

#define ERRLEN 256

/* Parses s, which must succeed. */
static reign__uri *parse_ok(const char *s)
{
    reign__uri *u = NULL;
    char err[ERRLEN] = "";
    int rc = reign__uri_parse(s, &u, err, sizeof(err));
    if (rc != 0)
        fail_msg("'%s' was refused: %s", s, err);
    assert_non_null(u);
    return u;
}

/*
 * Parses s, which must fail with REIGN_EURI and a message that contains
 * `want`, is one non-empty line, and contains no `secret` (may be NULL).
 */
static void parse_bad(const char *s, const char *want, const char *secret)
{
    reign__uri *u = (reign__uri *)&u; /* must be reset to NULL */
    char err[ERRLEN] = "";
    int rc = reign__uri_parse(s, &u, err, sizeof(err));
    if (rc != REIGN_EURI)
        fail_msg("'%s': want REIGN_EURI, got %d (%s)", s ? s : "(null)", rc, err);
    assert_null(u);
    assert_true(err[0] != '\0');
    assert_null(strchr(err, '\n'));
    if (!strstr(err, want))
        fail_msg("'%s': message '%s' lacks '%s'", s ? s : "(null)", err, want);
    if (secret && strstr(err, secret))
        fail_msg("'%s': message '%s' shows the password", s, err);
}

/* ---- accepted ----------------------------------------------------------- */

static void test_full_zk(void **state)
{
    reign__uri *u = parse_ok("zk://h1:2181,h2:2182/chroot?a=1&b=2");
    assert_string_equal(u->scheme, "zk");
    assert_null(u->user);
    assert_null(u->password);
    assert_int_equal(u->n_hosts, 2);
    assert_string_equal(u->hosts[0].host, "h1");
    assert_int_equal(u->hosts[0].port, 2181);
    assert_int_equal(u->hosts[0].ipv6, 0);
    assert_string_equal(u->hosts[1].host, "h2");
    assert_int_equal(u->hosts[1].port, 2182);
    assert_string_equal(u->path, "/chroot");
    assert_int_equal(u->n_params, 2);
    assert_string_equal(u->params[0].key, "a");
    assert_string_equal(u->params[0].value, "1");
    assert_string_equal(u->params[1].key, "b");
    assert_string_equal(u->params[1].value, "2");
    assert_string_equal(reign__uri_param(u, "a"), "1");
    assert_string_equal(reign__uri_param(u, "b"), "2");
    assert_null(reign__uri_param(u, "c"));
    assert_null(reign__uri_param(u, NULL));
    assert_null(reign__uri_param(NULL, "a"));
    reign__uri_free(u);
}

static void test_minimal(void **state)
{
    reign__uri *u = parse_ok("zk://h");
    assert_string_equal(u->scheme, "zk");
    assert_int_equal(u->n_hosts, 1);
    assert_string_equal(u->hosts[0].host, "h");
    assert_int_equal(u->hosts[0].port, 0);
    assert_string_equal(u->path, "");
    assert_int_equal(u->n_params, 0);
    assert_null(reign__uri_param(u, "a"));
    reign__uri_free(u);

    u = parse_ok("zk://h/");
    assert_string_equal(u->path, "/");
    reign__uri_free(u);

    /* A query straight after the hosts. */
    u = parse_ok("zk://h:1?x=y/z");
    assert_string_equal(u->path, "");
    assert_string_equal(reign__uri_param(u, "x"), "y/z");
    reign__uri_free(u);
}

static void test_scheme_case(void **state)
{
    reign__uri *u = parse_ok("ZK+Tls.v-1://h");
    assert_string_equal(u->scheme, "zk+tls.v-1");
    reign__uri_free(u);
    u = parse_ok("abcdefghijklmnopqrstuvwxyz012345://h"); /* 32: the longest */
    assert_string_equal(u->scheme, "abcdefghijklmnopqrstuvwxyz012345");
    reign__uri_free(u);
}

static void test_userinfo(void **state)
{
    reign__uri *u = parse_ok("zk://user:p%40ss%3Aw%2F@h:1/x");
    assert_string_equal(u->user, "user");
    assert_string_equal(u->password, "p@ss:w/");
    assert_string_equal(u->hosts[0].host, "h");
    reign__uri_free(u);

    u = parse_ok("zk://u:@h");
    assert_string_equal(u->user, "u");
    assert_string_equal(u->password, "");
    reign__uri_free(u);

    u = parse_ok("zk://u@h");
    assert_string_equal(u->user, "u");
    assert_null(u->password);
    reign__uri_free(u);

    /* The last '@' ends the userinfo: a raw '@' in a password works. */
    u = parse_ok("zk://u:a@b:c@h:5");
    assert_string_equal(u->user, "u");
    assert_string_equal(u->password, "a@b:c");
    assert_string_equal(u->hosts[0].host, "h");
    assert_int_equal(u->hosts[0].port, 5);
    reign__uri_free(u);

    u = parse_ok("zk://%C3%A9l%C3%A8ve:x@h");
    assert_string_equal(u->user, "\xc3\xa9l\xc3\xa8ve");
    reign__uri_free(u);
}

static void test_ipv6(void **state)
{
    reign__uri *u = parse_ok("zk://[::1]:2181,[fe80::1:2],[::ffff:10.0.0.1]:7,h4");
    assert_int_equal(u->n_hosts, 4);
    assert_string_equal(u->hosts[0].host, "::1");
    assert_int_equal(u->hosts[0].port, 2181);
    assert_int_equal(u->hosts[0].ipv6, 1);
    assert_string_equal(u->hosts[1].host, "fe80::1:2");
    assert_int_equal(u->hosts[1].port, 0);
    assert_int_equal(u->hosts[1].ipv6, 1);
    assert_string_equal(u->hosts[2].host, "::ffff:10.0.0.1");
    assert_int_equal(u->hosts[2].port, 7);
    assert_int_equal(u->hosts[3].ipv6, 0);
    reign__uri_free(u);
}

static void test_host_names(void **state)
{
    reign__uri *u = parse_ok("zk://127.0.0.1:1,zk-1.example.com.:65535,under_score,H0ST");
    assert_int_equal(u->n_hosts, 4);
    assert_string_equal(u->hosts[0].host, "127.0.0.1");
    assert_int_equal(u->hosts[0].port, 1);
    assert_string_equal(u->hosts[1].host, "zk-1.example.com.");
    assert_int_equal(u->hosts[1].port, 65535);
    assert_string_equal(u->hosts[2].host, "under_score");
    assert_string_equal(u->hosts[3].host, "H0ST"); /* kept as written */
    reign__uri_free(u);

    u = parse_ok("zk://h:02181"); /* leading zeros, still 5 digits */
    assert_int_equal(u->hosts[0].port, 2181);
    reign__uri_free(u);
}

static void test_sqlite(void **state)
{
    reign__uri *u = parse_ok("sqlite:///abs/path.db");
    assert_string_equal(u->scheme, "sqlite");
    assert_int_equal(u->n_hosts, 0);
    assert_null(u->hosts);
    assert_string_equal(u->path, "/abs/path.db");
    reign__uri_free(u);

    u = parse_ok("sqlite:///var/lib/my%20file%25.db?busy_timeout_ms=5000");
    assert_string_equal(u->path, "/var/lib/my file%.db");
    assert_string_equal(reign__uri_param(u, "busy_timeout_ms"), "5000");
    reign__uri_free(u);

    /* Raw UTF-8 in a path is taken as it is. */
    u = parse_ok("sqlite:///tmp/\xc3\xa9t\xc3\xa9.db");
    assert_string_equal(u->path, "/tmp/\xc3\xa9t\xc3\xa9.db");
    reign__uri_free(u);
}

static void test_params(void **state)
{
    reign__uri *u = parse_ok("zk://h?flag&empty=&eq=b=c&plus=1+2&enc=%2f%2F%26%3d&"
                             "utf=%E2%9C%93&k_9=%20");
    assert_int_equal(u->n_params, 7);
    assert_string_equal(reign__uri_param(u, "flag"), "");
    assert_string_equal(reign__uri_param(u, "empty"), "");
    assert_string_equal(reign__uri_param(u, "eq"), "b=c");
    assert_string_equal(reign__uri_param(u, "plus"), "1+2");
    assert_string_equal(reign__uri_param(u, "enc"), "//&=");
    assert_string_equal(reign__uri_param(u, "utf"), "\xe2\x9c\x93");
    assert_string_equal(reign__uri_param(u, "k_9"), " ");
    /* Order is kept. */
    assert_string_equal(u->params[0].key, "flag");
    assert_string_equal(u->params[6].key, "k_9");
    reign__uri_free(u);

    /* A key may be written with escapes; it is checked once decoded. */
    u = parse_ok("zk://h?%61b=1");
    assert_string_equal(reign__uri_param(u, "ab"), "1");
    reign__uri_free(u);

    /* Path escapes: '%2F' becomes '/', any case of hex. */
    u = parse_ok("zk://h/a%2fb%2Fc");
    assert_string_equal(u->path, "/a/b/c");
    reign__uri_free(u);
}

/* ---- refused ------------------------------------------------------------ */

static void test_bad_start(void **state)
{
    parse_bad(NULL, "empty URI", NULL);
    parse_bad("", "empty URI", NULL);
    parse_bad("h1:2181", "no 'scheme://'", NULL);
    parse_bad("zk:/h", "no 'scheme://'", NULL);
    parse_bad("zk:h", "no 'scheme://'", NULL);
    parse_bad("zk", "no 'scheme://'", NULL);
    parse_bad("z_k://h", "no 'scheme://'", NULL);
    parse_bad("://h", "empty scheme", NULL);
    parse_bad("1zk://h", "bad scheme '1zk': it must start with a letter", NULL);
    parse_bad("+zk://h", "must start with a letter", NULL);
    parse_bad("abcdefghijklmnopqrstuvwxyz0123456://h", "longer than 32", NULL);
    /* Without "://" nothing is quoted: the password could be anywhere. */
    parse_bad("zk//u:Secr3t@h:2181/x://y", "no 'scheme://'", "Secr3t");
}

static void test_bad_chars(void **state)
{
    parse_bad("zk://h 1", "space at offset 6", NULL);
    parse_bad(" zk://h", "space at offset 0", NULL);
    parse_bad("zk://h\t", "control character 0x09 at offset 6", NULL);
    parse_bad("zk://h\n", "control character 0x0a", NULL);
    parse_bad("zk://h/\r", "control character 0x0d", NULL);
    parse_bad("zk://h?a=\x01", "control character 0x01", NULL);
    parse_bad("zk://h\x7f", "control character 0x7f", NULL);
    parse_bad("zk://u:pa\x1bss@h", "control character 0x1b at offset 9", "pa");
    parse_bad("zk://h#frag", "'#' at offset 6", NULL);
    parse_bad("zk://u:pa#ss@h", "'#' at offset 9", "pa#ss");
}

static void test_bad_hosts(void **state)
{
    parse_bad("zk://h1,,h3", "empty host 2", NULL);
    parse_bad("zk://h1,", "empty host 2", NULL);
    parse_bad("zk://,h1", "empty host 1", NULL);
    parse_bad("zk://,", "empty host 1", NULL);
    parse_bad("zk://:2181", "empty host name in host 1 ':2181'", NULL);
    parse_bad("zk://::1", "IPv6 address in host 1 '::1' must be in brackets", NULL);
    parse_bad("zk://h,fe80::1:2181", "in host 2 'fe80::1:2181' must be in brackets", NULL);
    parse_bad("zk://[::1", "no ']' after '[' in host 1 '[::1'", NULL);
    parse_bad("zk://[]:1", "empty IPv6 address '[]' in host 1", NULL);
    parse_bad("zk://[::g]", "bad IPv6 address '::g' in host 1", NULL);
    parse_bad("zk://[127.0.0.1]", "bad IPv6 address '127.0.0.1'", NULL);
    parse_bad("zk://[0000:0000:0000:0000:0000:0000:0000:0000:1]", "bad IPv6 address", NULL);
    parse_bad("zk://[fe80::1%25eth0]", "bad IPv6 address", NULL);
    parse_bad("zk://[::1]x", "unexpected 'x' after ']' in host 1", NULL);
    parse_bad("zk://[::1]]", "unexpected ']' after ']'", NULL);
    parse_bad("zk://h]", "misplaced ']' in host 1", NULL);
    parse_bad("zk://h[1]", "misplaced '[' in host 1", NULL);
    parse_bad("zk://h!x", "bad character '!' in host name 'h!x' in host 1", NULL);
    parse_bad("zk://h%41", "bad character '%'", NULL);
    parse_bad("zk://h\xc3\xa9", "non-ASCII byte in host name", NULL);
    parse_bad("zk://a..b", "empty label in host name 'a..b'", NULL);
    parse_bad("zk://.a", "empty label", NULL);
    parse_bad("zk://a,b,.", "empty label in host name '.' in host 3", NULL);
    parse_bad("zk://999.1.1.1", "bad IPv4 address '999.1.1.1' in host 1", NULL);
    parse_bad("zk://1.2.3", "bad IPv4 address", NULL);
    parse_bad("zk://12345", "bad IPv4 address", NULL);
    parse_bad("zk://1.2.3.4.", "bad IPv4 address", NULL);
    parse_bad("zk://11111111111111111111111111111111111111111111111111", "bad IPv4 address", NULL);

    char name[300];
    memset(name, 'a', sizeof(name));
    memcpy(name, "zk://", 5);
    name[5 + 254] = '\0';
    parse_bad(name, "longer than 253 bytes", NULL);
    name[5 + 253] = '\0';
    reign__uri *u = parse_ok(name);
    assert_int_equal(strlen(u->hosts[0].host), 253);
    reign__uri_free(u);
}

static void test_bad_ports(void **state)
{
    parse_bad("zk://h:", "empty port after ':' in host 1", NULL);
    parse_bad("zk://h:0", "bad port '0' in host 1", NULL);
    parse_bad("zk://h1,h2:99999", "bad port '99999' in host 2", NULL);
    parse_bad("zk://h:65536", "bad port '65536'", NULL);
    parse_bad("zk://h:-1", "bad port '-1'", NULL);
    parse_bad("zk://h:+1", "bad port '+1'", NULL);
    parse_bad("zk://h:21a", "bad port '21a'", NULL);
    parse_bad("zk://h:002181", "bad port '002181'", NULL);
    parse_bad("zk://h:99999999999999999999999", "bad port '99999999999999999999999'", NULL);
    parse_bad("zk://[::1]:", "empty port", NULL);
    parse_bad("zk://[::1]:70000", "bad port '70000' in host 1", NULL);
}

static void test_bad_userinfo(void **state)
{
    parse_bad("zk://u@", "no host after '@'", NULL);
    parse_bad("zk://u:Secr3t@/x", "no host after '@'", "Secr3t");
    parse_bad("zk://@h", "empty user name", NULL);
    parse_bad("zk://:Secr3t@h", "empty user name", "Secr3t");
    parse_bad("zk://u%zz:Secr3t@h", "bad percent escape '%zz' in the user name", "Secr3t");
    parse_bad("zk://u%00:x@h", "encoded NUL '%00' in the user name", NULL);
    /* Nothing of the password is quoted, not even its escapes. */
    parse_bad("zk://u:Secr3t%zz@h", "bad percent escape in the password", "Secr3t");
    parse_bad("zk://u:Secr3t%zz@h", "password", "%zz");
    parse_bad("zk://u:Secr3t%4@h", "bad percent escape in the password", "%4");
    parse_bad("zk://u:Secr3t%@h", "bad percent escape in the password", "Secr3t");
    parse_bad("zk://u:Secr3t%00@h", "encoded NUL in the password", "%00");
    parse_bad("zk://u:Secr3t%0a@h", "encoded control character in the password", "%0a");
    /* A raw '/', '?' in a password would cut the authority short; the '@'
     * that follows is refused without quoting anything around it. */
    parse_bad("zk://u:Se/cr3t@h:2181/x", "'@' at offset 14", "cr3t");
    parse_bad("zk://u:Se?cr3t@h:2181/x", "'@' at offset 14", "cr3t");
    parse_bad("zk://u:Se/cr3t@h:2181/x", "%2F", "Se");
    parse_bad("zk://h/a@b", "'@' at offset 8, after the host list", NULL);
    parse_bad("zk://h?a=b@c", "'@' at offset", NULL);
    /* Errors after the userinfo do not quote it either. */
    parse_bad("zk://u:Secr3t@h:99999", "bad port '99999' in host 1", "Secr3t");
    parse_bad("zk://u:Secr3t@h,,x", "empty host 2", "Secr3t");
    parse_bad("zk://u:Secr3t@h/%zz", "bad percent escape '%zz' in the path", "Secr3t");
    parse_bad("zk://u:Secr3t@h?A=1", "bad parameter name 'A'", "Secr3t");
    parse_bad("zk://u:Secr3t@::1", "must be in brackets", "Secr3t");
}

static void test_bad_path(void **state)
{
    parse_bad("zk://h/p%zz", "bad percent escape '%zz' in the path", NULL);
    parse_bad("zk://h/p%z", "bad percent escape '%z' in the path", NULL);
    parse_bad("zk://h/p%0", "incomplete percent escape '%0' at the end of the path", NULL);
    parse_bad("zk://h/p%", "incomplete percent escape '%' at the end of the path", NULL);
    parse_bad("zk://h/p%00", "encoded NUL '%00' in the path", NULL);
    parse_bad("zk://h/p%1f", "encoded control character '%1f' in the path", NULL);
    parse_bad("zk://h/p%7F", "encoded control character '%7F'", NULL);
    parse_bad("zk://h/p%0Ax", "encoded control character '%0A'", NULL);
    parse_bad("sqlite:///p%g0", "bad percent escape '%g0'", NULL);
}

static void test_bad_params(void **state)
{
    parse_bad("zk://h?", "empty parameter list after '?'", NULL);
    parse_bad("zk://h?a=1&&b=2", "empty parameter 2 (stray '&')", NULL);
    parse_bad("zk://h?a=1&", "empty parameter 2", NULL);
    parse_bad("zk://h?&a=1", "empty parameter 1", NULL);
    parse_bad("zk://h?=1", "empty name in parameter 1 '=1'", NULL);
    parse_bad("zk://h?a=1&=", "empty name in parameter 2", NULL);
    parse_bad("zk://h?A=1", "bad parameter name 'A'", NULL);
    parse_bad("zk://h?a-b=1", "bad parameter name 'a-b'", NULL);
    parse_bad("zk://h?a.b", "bad parameter name 'a.b'", NULL);
    parse_bad("zk://h?%41=1", "bad parameter name '%41'", NULL);
    parse_bad("zk://h?%00=1", "encoded NUL '%00' in a parameter name", NULL);
    parse_bad("zk://h?a%zz=1", "bad percent escape '%zz' in a parameter name", NULL);
    parse_bad("zk://h?a=1&a=2", "parameter 'a' given twice", NULL);
    parse_bad("zk://h?a&b&a=", "parameter 'a' given twice", NULL);
    parse_bad("zk://h?ab=1&%61b=2", "parameter 'ab' given twice", NULL);
    parse_bad("zk://h?a=%zz", "bad percent escape '%zz' in the value of parameter 'a'", NULL);
    parse_bad("zk://h?a=x%", "incomplete percent escape '%' at the end of the value of parameter",
              NULL);
    parse_bad("zk://h?a=%00", "encoded NUL '%00' in the value of parameter 'a'", NULL);
    parse_bad("zk://h?a=%09", "encoded control character '%09'", NULL);

    char key[100] = "zk://h?";
    size_t n = strlen(key);
    memset(key + n, 'k', 65);
    key[n + 65] = '\0';
    parse_bad(key, "bad parameter name", NULL);
    key[n + 64] = '\0';
    reign__uri *u = parse_ok(key);
    assert_int_equal(strlen(u->params[0].key), 64);
    reign__uri_free(u);
}

/* ---- limits ------------------------------------------------------------- */

static void test_limit_length(void **state)
{
    char *s = malloc(REIGN__URI_MAX + 2);
    assert_non_null(s);
    memset(s, 'p', REIGN__URI_MAX + 1);
    memcpy(s, "sqlite:///", 10);
    s[REIGN__URI_MAX] = '\0';
    reign__uri *u = parse_ok(s);
    assert_int_equal(strlen(u->path), REIGN__URI_MAX - 9);
    reign__uri_free(u);
    s[REIGN__URI_MAX] = 'p';
    s[REIGN__URI_MAX + 1] = '\0';
    parse_bad(s, "URI longer than 4096 bytes", NULL);
    free(s);
}

static void test_limit_hosts(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "zk://");
    for (int i = 0; i < REIGN__URI_MAX_HOSTS; i++)
        reign__buf_printf(&b, "%sh%d:%d", i ? "," : "", i, 1000 + i);
    reign__uri *u = parse_ok(b.data);
    assert_int_equal(u->n_hosts, REIGN__URI_MAX_HOSTS);
    assert_string_equal(u->hosts[63].host, "h63");
    assert_int_equal(u->hosts[63].port, 1063);
    reign__uri_free(u);
    reign__buf_puts(&b, ",x");
    parse_bad(b.data, "65 hosts, more than 64", NULL);
    reign__buf_free(&b);
}

static void test_limit_params(void **state)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_puts(&b, "zk://h?");
    for (int i = 0; i < REIGN__URI_MAX_PARAMS; i++)
        reign__buf_printf(&b, "%sp%d=%d", i ? "&" : "", i, i);
    reign__uri *u = parse_ok(b.data);
    assert_int_equal(u->n_params, REIGN__URI_MAX_PARAMS);
    assert_string_equal(reign__uri_param(u, "p31"), "31");
    reign__uri_free(u);
    reign__buf_puts(&b, "&x");
    parse_bad(b.data, "33 parameters, more than 32", NULL);
    reign__buf_free(&b);
}

/* Long pieces are cut in messages, which stay short. */
static void test_quote_cut(void **state)
{
    char s[400] = "zk://h:";
    memset(s + 7, '9', 300);
    s[307] = '\0';
    reign__uri *u = NULL;
    char err[ERRLEN];
    assert_int_equal(reign__uri_parse(s, &u, err, sizeof(err)), REIGN_EURI);
    assert_non_null(strstr(err, "...' in host 1"));
    assert_true(strlen(err) < 120);
}

/* The error buffer may be small or absent. */
static void test_err_buffer(void **state)
{
    reign__uri *u = NULL;
    char err[8];
    memset(err, 'x', sizeof(err));
    assert_int_equal(reign__uri_parse("zk://h:0", &u, err, sizeof(err)), REIGN_EURI);
    assert_int_equal(strlen(err), 7);
    assert_int_equal(reign__uri_parse("zk://h:0", &u, NULL, 0), REIGN_EURI);
    assert_null(u);
    /* On success err is emptied. */
    char err2[ERRLEN] = "stale";
    assert_int_equal(reign__uri_parse("zk://h", &u, err2, sizeof(err2)), 0);
    assert_string_equal(err2, "");
    reign__uri_free(u);
    reign__uri_free(NULL);
}

/* ---- helpers ------------------------------------------------------------ */

static void test_param_int(void **state)
{
    reign__uri *u = parse_ok("zk://h?t=5000&neg=-3&s=abc&e&plus=%2B5&sp=%205&hex=0x10&"
                             "big=99999999999999999999999&hi=11&zero=0&dash=-");
    char err[ERRLEN];
    long v = 77;
    assert_int_equal(reign__uri_param_int(u, "absent", 0, 10, &v, err, sizeof(err)), 0);
    assert_int_equal(v, 77);
    assert_int_equal(reign__uri_param_int(u, "t", 1, 60000, &v, err, sizeof(err)), 1);
    assert_int_equal(v, 5000);
    assert_int_equal(reign__uri_param_int(u, "neg", -10, 10, &v, err, sizeof(err)), 1);
    assert_int_equal(v, -3);
    assert_int_equal(reign__uri_param_int(u, "zero", 0, 0, &v, err, sizeof(err)), 1);
    assert_int_equal(v, 0);

    v = 77;
    assert_int_equal(reign__uri_param_int(u, "s", 0, 10, &v, err, sizeof(err)), REIGN_EURI);
    assert_string_equal(err, "parameter 's' = 'abc' is not a decimal integer");
    const char *not_int[] = {"e", "plus", "sp", "hex", "dash"};
    for (size_t i = 0; i < sizeof(not_int) / sizeof(not_int[0]); i++) {
        assert_int_equal(reign__uri_param_int(u, not_int[i], -100, 100, &v, err, sizeof(err)),
                         REIGN_EURI);
        assert_non_null(strstr(err, "is not a decimal integer"));
    }
    assert_int_equal(reign__uri_param_int(u, "big", 0, 10, &v, err, sizeof(err)), REIGN_EURI);
    assert_non_null(strstr(err, "out of range 0..10"));
    assert_int_equal(reign__uri_param_int(u, "hi", 0, 10, &v, err, sizeof(err)), REIGN_EURI);
    assert_string_equal(err, "parameter 'hi' = '11' is out of range 0..10");
    assert_int_equal(reign__uri_param_int(u, "neg", 0, 10, &v, err, sizeof(err)), REIGN_EURI);
    assert_int_equal(v, 77);
    reign__uri_free(u);
}

static void test_check_params(void **state)
{
    static const char *const known[] = {"session_timeout_ms", "connect_timeout_ms", NULL};
    static const char *const none[] = {NULL};
    char err[ERRLEN];
    reign__uri *u = parse_ok("zk://h?session_timeout_ms=1&connect_timeout_ms=2");
    assert_int_equal(reign__uri_check_params(u, known, err, sizeof(err)), 0);
    reign__uri_free(u);

    u = parse_ok("zk://h?session_timeout_ms=1&sesion_timeout_ms=2");
    assert_int_equal(reign__uri_check_params(u, known, err, sizeof(err)), REIGN_EURI);
    assert_string_equal(err, "unknown parameter 'sesion_timeout_ms' (known: session_timeout_ms, "
                             "connect_timeout_ms)");
    assert_int_equal(reign__uri_check_params(u, none, err, sizeof(err)), REIGN_EURI);
    assert_string_equal(err, "unknown parameter 'session_timeout_ms' (this scheme takes none)");
    assert_int_equal(reign__uri_check_params(u, NULL, err, sizeof(err)), REIGN_EURI);
    reign__uri_free(u);

    u = parse_ok("zk://h");
    assert_int_equal(reign__uri_check_params(u, none, err, sizeof(err)), 0);
    reign__uri_free(u);
}

static void test_hosts_string(void **state)
{
    reign__uri *u = parse_ok("zk://u:pw@h1,[::1],h3:7,[fe80::2]:9/x");
    char *s = reign__uri_hosts_string(u, 2181);
    assert_string_equal(s, "h1:2181,[::1]:2181,h3:7,[fe80::2]:9");
    reign__free(s);
    s = reign__uri_hosts_string(u, 0);
    assert_string_equal(s, "h1,[::1],h3:7,[fe80::2]:9");
    reign__free(s);
    reign__uri_free(u);

    u = parse_ok("sqlite:///x.db");
    s = reign__uri_hosts_string(u, 2181);
    assert_string_equal(s, "");
    reign__free(s);
    reign__uri_free(u);
}

/* ---- out of memory ------------------------------------------------------ */

static void test_oom(void **state)
{
    static const char *const uris[] = {
        "zk://user:p%40ss@h1:2181,[::1]:2182,h3/chroot/x?a=1&b=%20&flag",
        "sqlite:///abs/path.db?busy_timeout_ms=10",
    };
    assert_int_equal(reign_set_allocator(oom_malloc, oom_realloc, oom_free), 0);
    for (size_t k = 0; k < sizeof(uris) / sizeof(uris[0]); k++) {
        bool succeeded = false;
        for (long n = 0; n < 1000 && !succeeded; n++) {
            reign__uri *u = NULL;
            char err[ERRLEN] = "";
            g_fail_at = n;
            g_calls = 0;
            g_live = 0;
            int rc = reign__uri_parse(uris[k], &u, err, sizeof(err));
            if (rc == 0) {
                succeeded = true;
                char *hs = reign__uri_hosts_string(u, 2181);
                /* One more allocation at most may still fail here. */
                if (hs)
                    reign__free(hs);
                reign__uri_free(u);
            } else {
                assert_int_equal(rc, REIGN_ENOMEM);
                assert_string_equal(err, "out of memory");
                assert_null(u);
            }
            assert_int_equal(g_live, 0); /* nothing leaked on either path */
        }
        assert_true(succeeded);
    }
    /* hosts_string alone under failing allocations: NULL, never a partial string. */
    g_fail_at = -1;
    reign__uri *u = parse_ok("zk://h1,h2,h3,h4,h5,h6,h7,h8,h9,h10,h11,h12,h13,h14,h15,h16");
    for (long n = 0; n < 20; n++) {
        g_fail_at = n;
        g_calls = 0;
        char *hs = reign__uri_hosts_string(u, 2181);
        g_fail_at = -1;
        if (hs) {
            assert_int_equal(strncmp(hs, "h1:2181,h2:2181", 15), 0);
            assert_non_null(strstr(hs, ",h16:2181"));
            reign__free(hs);
        }
    }
    reign__uri_free(u);
    g_fail_at = -1;
    assert_int_equal(reign_set_allocator(NULL, NULL, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_zk),      cmocka_unit_test(test_minimal),
        cmocka_unit_test(test_scheme_case),  cmocka_unit_test(test_userinfo),
        cmocka_unit_test(test_ipv6),         cmocka_unit_test(test_host_names),
        cmocka_unit_test(test_sqlite),       cmocka_unit_test(test_params),
        cmocka_unit_test(test_bad_start),    cmocka_unit_test(test_bad_chars),
        cmocka_unit_test(test_bad_hosts),    cmocka_unit_test(test_bad_ports),
        cmocka_unit_test(test_bad_userinfo), cmocka_unit_test(test_bad_path),
        cmocka_unit_test(test_bad_params),   cmocka_unit_test(test_limit_length),
        cmocka_unit_test(test_limit_hosts),  cmocka_unit_test(test_limit_params),
        cmocka_unit_test(test_quote_cut),    cmocka_unit_test(test_err_buffer),
        cmocka_unit_test(test_param_int),    cmocka_unit_test(test_check_params),
        cmocka_unit_test(test_hosts_string), cmocka_unit_test(test_oom),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
