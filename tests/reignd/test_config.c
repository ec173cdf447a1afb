/*
 * test_config.c - reign.conf parsing (src/reignd/config.c): the example
 * file, defaults, every value type, and each kind of error with the
 * "FILE:LINE: message" it must give.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <reign/client.h>

#include "config.h"

/* A service section that is complete (lines 1-8 of every text below that
 * starts with it). */
#define GOOD_SERVICE                                                                               \
    "[service web]\n"                                                                              \
    "election_uri = zk://127.0.0.1:2181/reign\n"                                                   \
    "service_address = 127.0.0.1:8080\n"                                                           \
    "check_type = tcp\n"                                                                           \
    "check_target = 127.0.0.1:8080\n"                                                              \
    "become_active = /bin/true\n"                                                                  \
    "become_standby = /bin/true\n"                                                                 \
    "fence = shell:/bin/true\n"

static char err[512];

static int parse(const char *text, reignd_config **cfg)
{
    err[0] = '\0';
    return reignd_config_parse(text, strlen(text), "t.conf", cfg, err, sizeof(err));
}

/* Parses text, expects failure `code` with a message starting "t.conf:LINE: "
 * and containing `needle`. */
static void expect_error(const char *text, int code, unsigned line, const char *needle)
{
    reignd_config *cfg = (reignd_config *)&cfg;
    int rc = parse(text, &cfg);
    char prefix[64];
    if (line)
        snprintf(prefix, sizeof(prefix), "t.conf:%u: ", line);
    else
        snprintf(prefix, sizeof(prefix), "t.conf: ");
    if (rc != code || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, needle))
        fail_msg("want %d '%s...%s', got %d '%s'", code, prefix, needle, rc, err);
    assert_null(cfg);
    assert_null(strchr(err, '\n'));
}

static void test_example_file(void **state)
{
    reignd_config *cfg = NULL;
    int rc = reignd_config_load(REIGND_EXAMPLE_CONF, &cfg, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(cfg->n_services, 2);
    assert_string_equal(cfg->peer_listen, "0.0.0.0:7480");
    assert_string_equal(cfg->metrics_listen, "127.0.0.1:9480");
    assert_int_equal(cfg->log_level, REIGND_LOG_INFO);
    const reignd_service_config *nn = reignd_config_service(cfg, "nn");
    assert_non_null(nn);
    assert_string_equal(nn->election_name, "hdfs-nn");
    assert_int_equal(nn->check_type, REIGND_CHECK_HTTP);
    assert_int_equal(nn->check_timeout_ms, 500);
    assert_int_equal(nn->n_fence, 2);
    assert_int_equal(nn->fence[0].kind, REIGND_FENCE_GRACEFUL);
    assert_int_equal(nn->fence[0].timeout_ms, 5000);
    assert_null(nn->fence[0].command);
    assert_int_equal(nn->fence[1].kind, REIGND_FENCE_SHELL);
    assert_int_equal(nn->fence[1].timeout_ms, 20000);
    assert_string_equal(nn->fence[1].command, "/usr/local/sbin/fence-node --kill-service");
    assert_int_equal(nn->notify.timeout_ms, 10000);
    const reignd_service_config *cache = reignd_config_service(cfg, "cache");
    assert_non_null(cache);
    assert_string_equal(cache->election_name, "cache");
    assert_null(cache->notify.command);
    assert_null(reignd_config_service(cfg, "nope"));
    reignd_config_free(cfg);
}

/* The EXAMPLE section of reign.conf(5) is a valid file too. */
static void test_man_page_example(void **state)
{
    FILE *f = fopen(REIGND_MAN_PAGE, "r");
    assert_non_null(f);
    static char text[8192];
    char line[512];
    size_t len = 0;
    bool in_example = false;
    while (fgets(line, sizeof(line), f)) {
        if (strcmp(line, ".EX\n") == 0 || strcmp(line, ".EE\n") == 0) {
            in_example = line[2] == 'X';
            continue;
        }
        if (!in_example)
            continue;
        for (const char *c = line; *c; c++) {
            if (c[0] == '\\' && c[1] == '-')
                c++; /* roff's \- is a plain '-' */
            assert_true(len + 1 < sizeof(text));
            text[len++] = *c;
        }
    }
    fclose(f);
    text[len] = '\0';
    assert_non_null(strstr(text, "[service nn]"));
    reignd_config *cfg = NULL;
    if (parse(text, &cfg) != 0)
        fail_msg("%s", err);
    assert_int_equal(cfg->services[0].n_fence, 2);
    assert_string_equal(cfg->services[0].fence[1].command,
                        "/usr/local/sbin/fence-node --kill-service");
    reignd_config_free(cfg);
}

static void test_defaults(void **state)
{
    reignd_config *cfg = NULL;
    assert_int_equal(parse(GOOD_SERVICE, &cfg), 0);
    const reignd_service_config *s = &cfg->services[0];
    assert_string_equal(s->name, "web");
    assert_int_equal(s->line, 1);
    assert_string_equal(s->election_name, "web");
    char host[256] = "";
    gethostname(host, sizeof(host) - 1);
    assert_string_equal(s->node_id, host);
    assert_null(s->peer_address);
    assert_int_equal(s->session_timeout_ms, 10000);
    assert_int_equal(s->check_interval_ms, 1000);
    assert_int_equal(s->check_timeout_ms, 1000);
    assert_int_equal(s->check_rise, 2);
    assert_int_equal(s->check_fall, 3);
    assert_int_equal(s->become_active.timeout_ms, 30000);
    assert_int_equal(s->become_standby.timeout_ms, 30000);
    assert_null(s->notify.command);
    assert_int_equal(s->fence[0].timeout_ms, 30000);
    assert_int_equal(s->fence[0].line, 8);
    assert_int_equal(cfg->log_level, REIGND_LOG_INFO);
    assert_null(cfg->peer_listen);
    assert_null(cfg->metrics_listen);
    assert_non_null(cfg->control_socket);
    if (geteuid() == 0)
        assert_string_equal(cfg->control_socket, "/run/reign/reignd.sock");
    reignd_config_free(cfg);
    assert_null(reignd_config_free(NULL));
}

/* What a user's (not root's) default control socket is; 0 if all holds,
 * else the number of the check that failed.  Plain checks: it may run in
 * a child process. */
static int user_socket_checks(void)
{
    reignd_config *cfg = NULL;
    setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
    if (parse(GOOD_SERVICE, &cfg) != 0 ||
        strcmp(cfg->control_socket, "/run/user/4242/reign/reignd.sock") != 0)
        return 1;
    reignd_config_free(cfg);
    unsetenv("XDG_RUNTIME_DIR");
    if (parse("[daemon]\n" GOOD_SERVICE, &cfg) != REIGN_EINVAL ||
        strncmp(err, "t.conf:1: ", 10) != 0 || !strstr(err, "XDG_RUNTIME_DIR"))
        return 2;
    /* Other problems of the file come first. */
    if (parse("[daemon]\n" GOOD_SERVICE "check_rise = x\n", &cfg) != REIGN_EINVAL ||
        strncmp(err, "t.conf:10: ", 11) != 0)
        return 3;
    return 0;
}

static void test_control_socket_default_for_users(void **state)
{
    char *saved = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    if (geteuid() != 0) {
        assert_int_equal(user_socket_checks(), 0);
    } else {
        /* As root: the same as nobody, in a child. */
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            if (setgid(65534) < 0 || setuid(65534) < 0)
                _exit(100);
            _exit(user_socket_checks());
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
    }
    if (saved)
        setenv("XDG_RUNTIME_DIR", saved, 1);
    free(saved);
}

static void test_timing(void **state)
{
    reignd_config *cfg = NULL;
    assert_int_equal(parse(GOOD_SERVICE "check_interval = 2s\n"
                                        "check_timeout = 500ms\n"
                                        "check_fall = 4\n"
                                        "session_timeout = 6s\n"
                                        "become_active_timeout = 3s\n"
                                        "fence = shell(timeout=7s):/bin/false\n",
                           &cfg),
                     0);
    const reignd_service_config *s = &cfg->services[0];
    assert_int_equal(s->timing.detection_ms, 2000 * 4 + 500);
    assert_int_equal(s->timing.fence_ms, 30000 + 7000);
    assert_int_equal(s->timing.takeover_on_failure_ms, 8500 + 37000 + 3000);
    assert_int_equal(s->timing.takeover_on_crash_ms, 6000 + 37000 + 3000);
    /* 8.5 s to notice a failure, 6 s for a dead node: worth a warning. */
    assert_non_null(reignd_config_timing_warning(s));
    char text[512];
    size_t n = reignd_config_timing_text(s, text, sizeof(text));
    assert_true(n < sizeof(text));
    assert_non_null(strstr(text, "detected within 8500 ms"));
    assert_non_null(strstr(text, "within 48500 ms of a failure"));
    assert_non_null(strstr(text, "within 46000 ms of its node's crash"));
    reignd_config_free(cfg);

    assert_int_equal(parse(GOOD_SERVICE, &cfg), 0);
    assert_null(reignd_config_timing_warning(&cfg->services[0]));
    reignd_config_free(cfg);
}

static void test_durations(void **state)
{
    static const struct {
        const char *s;
        int64_t ms;
    } good[] = {{"500ms", 500},  {"2s", 2000},      {"1m", 60000},
                {"1h", 3600000}, {"24h", 86400000}, {"86400000ms", 86400000},
                {"007s", 7000}};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t ms = -1;
        assert_int_equal(reignd_parse_duration_ms(good[i].s, &ms), 0);
        assert_int_equal(ms, good[i].ms);
    }
    static const char *const bad[] = {"",   "5",    "0s",   "-1s", "1.5s", "s",
                                      "2S", "2 s",  " 2s",  "25h", "2sec", "99999999999999999999s",
                                      "1d", "2ms ", "1441m"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = -1;
        if (reignd_parse_duration_ms(bad[i], &ms) != REIGN_EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_int_equal(ms, -1);
    }
}

static void test_hostport(void **state)
{
    char host[64];
    int port = 0;
    assert_int_equal(reignd_parse_hostport("db-1.example.com:5432", host, sizeof(host), &port), 0);
    assert_string_equal(host, "db-1.example.com");
    assert_int_equal(port, 5432);
    assert_int_equal(reignd_parse_hostport("[::1]:80", host, sizeof(host), &port), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    static const char *const bad[] = {"host", "host:",    ":80",     "host:0",  "host:65536",
                                      "h:8x", "[::1]",    "[::1]80", "[zz]:80", "a b:80",
                                      "h:-1", "h:123456", "[::1:80", "$(x):1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (reignd_parse_hostport(bad[i], host, sizeof(host), &port) == 0)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(reignd_parse_hostport("abcdefgh:1", host, 8, &port), REIGN_EINVAL);

    const char *path;
    assert_int_equal(reignd_parse_http_url("http://h:81/a/b?c", host, sizeof(host), &port, &path),
                     0);
    assert_string_equal(host, "h");
    assert_int_equal(port, 81);
    assert_string_equal(path, "/a/b?c");
    assert_int_equal(reignd_parse_http_url("http://h", host, sizeof(host), &port, &path), 0);
    assert_int_equal(port, 80);
    assert_string_equal(path, "/");
    static const char *const bad_urls[] = {"https://h/",   "http://", "http://h:0/",
                                           "http://h/a b", "h:80/",   "http://h:x/"};
    for (size_t i = 0; i < sizeof(bad_urls) / sizeof(bad_urls[0]); i++)
        if (reignd_parse_http_url(bad_urls[i], host, sizeof(host), &port, &path) == 0)
            fail_msg("'%s' accepted", bad_urls[i]);
}

static void test_values(void **state)
{
    reignd_config *cfg = NULL;
    int rc = parse("; comment\n"
                   "# comment\n"
                   "[daemon]\n"
                   "peer_listen = 10.0.0.1:7480\n"
                   "peer_secret_file = /etc/reign/secret ; inline comment\n"
                   "log_level = warn\n"
                   "\n" GOOD_SERVICE "check_type = http\n",
                   &cfg);
    /* check_type twice. */
    assert_int_equal(rc, REIGN_EINVAL);
    assert_string_equal(err, "t.conf:16: duplicate key 'check_type' (first at line 11)");

    rc = parse("[daemon]\n"
               "peer_listen = 10.0.0.1:7480\n"
               "peer_secret_file = /etc/reign/secret ; inline comment\n"
               "log_level = warn\n"
               "[service a]\n"
               "election_uri = zk://u@127.0.0.1:2181?password_file=/etc/pw\n"
               "service_address = [::1]:8080\n"
               "check_type = command\n"
               "check_target = test -e /tmp/x && curl -sf http://127.0.0.1/\n"
               "become_active = /bin/true\n"
               "become_standby = /bin/true\n"
               "notify = logger -t reign \"$REIGN_STATE\"\n"
               "fence = graceful\n"
               "fence = shell:  kill-it --now\n"
               "fence = graceful(timeout=1500ms)\n"
               "check_rise = 1\n"
               "check_fall = 1000\n"
               "[service b]\n"
               "election_uri = zk://127.0.0.1:2181,127.0.0.2:2181/b\n"
               "peer_address = b.example:7480\n"
               "node_id = node-2.example:x\n"
               "service_address = b:1\n"
               "check_type = http\n"
               "check_target = http://[::1]:8080/health\n"
               "become_active = x\n"
               "become_standby = y\n"
               "fence = graceful\n",
               &cfg);
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg->peer_secret_file, "/etc/reign/secret");
    assert_int_equal(cfg->log_level, REIGND_LOG_WARNING);
    const reignd_service_config *a = &cfg->services[0], *b = &cfg->services[1];
    assert_string_equal(a->peer_address, "10.0.0.1:7480"); /* from peer_listen */
    assert_string_equal(a->check_target, "test -e /tmp/x && curl -sf http://127.0.0.1/");
    assert_string_equal(a->notify.command, "logger -t reign \"$REIGN_STATE\"");
    assert_int_equal(a->n_fence, 3);
    assert_int_equal(a->fence[0].timeout_ms, 5000);
    assert_string_equal(a->fence[1].command, "kill-it --now");
    assert_int_equal(a->fence[2].kind, REIGND_FENCE_GRACEFUL);
    assert_int_equal(a->fence[2].timeout_ms, 1500);
    assert_int_equal(a->check_rise, 1);
    assert_int_equal(a->check_fall, 1000);
    assert_int_equal(b->line, 18);
    assert_string_equal(b->peer_address, "b.example:7480");
    assert_string_equal(b->node_id, "node-2.example:x");
    assert_int_equal(b->check_type, REIGND_CHECK_HTTP);
    reignd_config_free(cfg);

    assert_string_equal(reignd_log_level_name(REIGND_LOG_DEBUG), "debug");
    assert_string_equal(reignd_check_type_name(REIGND_CHECK_TCP), "tcp");
    assert_string_equal(reignd_fence_kind_name(REIGND_FENCE_SHELL), "shell");
}

static void test_crlf_and_bom(void **state)
{
    reignd_config *cfg = NULL;
    const char *text = "\xEF\xBB\xBF[service w]\r\n"
                       "election_uri = zk://h:1\r\n"
                       "service_address = h:2\r\n"
                       "check_type = tcp\r\n"
                       "check_target = h:3\r\n"
                       "become_active = a\r\n"
                       "become_standby = b\r\n"
                       "fence = shell:c\r\n";
    int rc = parse(text, &cfg);
    if (rc != 0)
        fail_msg("%s", err);
    assert_string_equal(cfg->services[0].fence[0].command, "c");
    reignd_config_free(cfg);
}

/* Errors in one line added to a good service (lines 1-8). */
static const struct {
    const char *extra;
    unsigned line;
    const char *needle;
} after_good[] = {
    {"check_interval = 5\n", 9, "'5' is not a duration"},
    {"check_timeout = 1.5s\n", 9, "'1.5s' is not a duration"},
    {"check_fall = 0\n", 9, "'0' is not a count"},
    {"check_rise = 3x\n", 9, "'3x' is not a count"},
    {"check_rise = 99999999999\n", 9, "is not a count"},
    {"check_type = ping\n", 9, "duplicate key 'check_type' (first at line 4)"},
    {"bogus = 1\n", 9, "unknown key 'bogus'"},
    {"notify =\n", 9, "empty value for 'notify'"},
    {"node_id = a b\n", 9, "not a valid name"},
    {"election_name = ..\n", 9, "not a valid name"},
    {"check_interval = 1s\ncheck_timeout = 2s\n", 10,
     "check_timeout (2000 ms) is longer than check_interval (1000 ms)"},
    {"fence = sshfence\n", 9, "'sshfence' is not a fence method"},
    {"fence = shell\n", 9, "needs a command"},
    {"fence = shell:   \n", 9, "needs a command"},
    {"fence = shell():x\n", 9, "(timeout=DURATION)"},
    {"fence = shell(timeout=5):x\n", 9, "(timeout=DURATION)"},
    {"fence = graceful now\n", 9, "takes no argument"},
    {"fence = graceful\n", 9, "graceful fencing needs peer_listen and peer_secret_file"},
    {"notify = a\n  b\n", 10, "indented line"},
};

/* Each kind of error, with its line. */
static void test_errors(void **state)
{
    for (size_t i = 0; i < sizeof(after_good) / sizeof(after_good[0]); i++) {
        char text[1024];
        snprintf(text, sizeof(text), "%s%s", GOOD_SERVICE, after_good[i].extra);
        expect_error(text, REIGN_EINVAL, after_good[i].line, after_good[i].needle);
    }
    expect_error("[daemon]\nlog_level = info\n[nonsense]\n", REIGN_EINVAL, 3,
                 "unknown section '[nonsense]'");
    expect_error("[daemon]\nlog_level = loud\n", REIGN_EINVAL, 2, "'loud' is not a log level");
    expect_error("[daemon]\nfoo = 1\n", REIGN_EINVAL, 2, "unknown key 'foo' in [daemon]");
    expect_error("[daemon]\n[daemon]\n", REIGN_EINVAL, 2,
                 "duplicate [daemon] section (first at line 1)");
    expect_error("log_level = info\n", REIGN_EINVAL, 1, "outside of any section");
    expect_error("[daemon]\nthis is not a key\n", REIGN_EINVAL, 2, "syntax error");
    expect_error("[daemon\n", REIGN_EINVAL, 1, "syntax error");
    expect_error("[daemon]\ncontrol_socket = relative/path\n", REIGN_EINVAL, 2,
                 "not an absolute path");
    expect_error("[daemon]\nmetrics_listen = 9100\n", REIGN_EINVAL, 2, "'9100' is not an address");
    expect_error("[daemon]\n", REIGN_EINVAL, 0, "no [service NAME] section");
    expect_error("", REIGN_EINVAL, 0, "no [service NAME] section");
    expect_error("[daemon]\npeer_listen = 127.0.0.1:7480\n" GOOD_SERVICE, REIGN_EINVAL, 2,
                 "peer_listen needs peer_secret_file");

    expect_error(GOOD_SERVICE GOOD_SERVICE, REIGN_EINVAL, 9,
                 "duplicate service 'web' (first at line 1)");
    expect_error("[service we/b]\n", REIGN_EINVAL, 1, "not a service name");
    expect_error("[service ]\n", REIGN_EINVAL, 1, "not a service name");

    /* Missing required keys: reported at the section header. */
    expect_error("[daemon]\n[service x]\nelection_uri = zk://h:1\n", REIGN_EINVAL, 2,
                 "[service x]: missing required key 'service_address'");
    expect_error("[service x]\n", REIGN_EINVAL, 1, "missing required key 'election_uri'");

    /* The check target must suit the check type, whichever comes first. */
    expect_error("[service web]\n"
                 "check_target = 127.0.0.1\n"
                 "election_uri = zk://127.0.0.1:2181/reign\n"
                 "service_address = 127.0.0.1:8080\n"
                 "check_type = tcp\n"
                 "become_active = /bin/true\n"
                 "become_standby = /bin/true\n"
                 "fence = shell:/bin/true\n",
                 REIGN_EINVAL, 2, "check_target '127.0.0.1' is not host:port");

    /* Fence methods. */
    expect_error("[daemon]\npeer_listen = 0.0.0.0:7480\npeer_secret_file = /s\n" GOOD_SERVICE,
                 REIGN_EINVAL, 4, "[service web]: set peer_address");

    /* Two services on one election. */
    expect_error(GOOD_SERVICE "[service web2]\n"
                              "election_uri = zk://127.0.0.1:2181/reign\n"
                              "election_name = web\n"
                              "service_address = 127.0.0.1:8080\n"
                              "check_type = command\n"
                              "check_target = true\n"
                              "become_active = /bin/true\n"
                              "become_standby = /bin/true\n"
                              "fence = shell:/bin/true\n",
                 REIGN_EINVAL, 9, "same election as [service web] (line 1)");

    /* What inih would take silently. */
    expect_error("[service web]\nelection_uri = zk://h:1\n  service_address = h:2\n", REIGN_EINVAL,
                 3, "indented line");
    char longline[400];
    snprintf(longline, sizeof(longline), "[daemon]\ncontrol_socket = /%0198d\n", 0);
    expect_error(longline, REIGN_EINVAL, 2, "line longer than 197 characters");
    static const char with_nul[] = "[daemon]\nlog_level = info\0\n";
    reignd_config *cfg = NULL;
    assert_int_equal(
        reignd_config_parse(with_nul, sizeof(with_nul) - 1, "t.conf", &cfg, err, sizeof(err)),
        REIGN_EINVAL);
    assert_string_equal(err, "t.conf:2: NUL byte in the file");
    expect_error("[daemon]\nlog_level = in\x01"
                 "fo\n",
                 REIGN_EINVAL, 2, "'in?fo' is not a log level");
}

/* A password never sits in the file, and never in a message. */
static void test_uri(void **state)
{
    expect_error("[service w]\nelection_uri = zk://user:Hunter2pw@h:2181/x\n", REIGN_EINVAL, 2,
                 "password written in the URI is refused");
    assert_null(strstr(err, "Hunter2pw"));
    expect_error("[service w]\nelection_uri = mysql://u:Hunter2pw@h/db\n", REIGN_EINVAL, 2,
                 "password_file");
    assert_null(strstr(err, "Hunter2pw"));
    expect_error("[service w]\nelection_uri = http://h:2181/x\n", REIGN_EINVAL, 2,
                 "not a store URI");
    expect_error("[service w]\nelection_uri = zk://h:2181/x y\n", REIGN_EINVAL, 2,
                 "space or control character");
    /* '@' and ':' after the authority are no password. */
    reignd_config *cfg = NULL;
    assert_int_equal(parse("[service w]\n"
                           "election_uri = zk://h:2181/x?password_file=/a:b@c\n"
                           "service_address = h:1\n"
                           "check_type = command\n"
                           "check_target = true\n"
                           "become_active = a\n"
                           "become_standby = b\n"
                           "fence = shell:c\n",
                           &cfg),
                     0);
    assert_int_equal(cfg->services[0].election_uri_line, 2);
    reignd_config_free(cfg);
    /* The SQL stores keep the breadcrumb, the pause and the candidates too: accepted. */
    const char *sql[] = {"sqlite:///var/lib/reign/r.db", "mysql://u@h/db", "postgres://u@h/db"};
    for (size_t i = 0; i < sizeof(sql) / sizeof(sql[0]); i++) {
        char text[512];
        snprintf(text, sizeof(text),
                 "[service w]\nservice_address = h:1\ncheck_type = command\n"
                 "check_target = true\nbecome_active = a\nbecome_standby = b\n"
                 "election_uri = %s\nfence = shell:c\n",
                 sql[i]);
        if (parse(text, &cfg) != 0)
            fail_msg("%s: %s", sql[i], err);
        assert_string_equal(cfg->services[0].election_uri, sql[i]);
        reignd_config_free(cfg);
    }
}

/* The election URI as the preflight reads it: the library's own check (reign_uri_check()), with
 * what each store's client library takes passed through. */
static void test_election_uri(void **state)
{
    (void)state;
    char e[600];
    unsetenv("REIGN_PASSWORD");
    unsetenv("PGPASSWORD");
    unsetenv("MYSQL_PWD");
    const char *good[] = {
        "zk://h:2181",
        "zk://h1:1,h2:2/c?retry_max=0&suspend_policy=deadline",
        "sqlite:///var/lib/r.db?table=t&lease_ms=2000&poll_ms=100",
        /* libpq's own: sslmode, a user and password from PGUSER, ~/.pgpass, a service file */
        "postgres://h:5432/db?sslmode=verify-full&sslrootcert=/etc/ca.pem&data_center=a",
        "postgresql://bob@h/db?application_name=reignd",
        /* MariaDB Connector/C's: TLS options and option files, the password from them */
        "mariadb://bob@h/db?ssl=1&ssl_ca=/etc/ca.pem&option_file=/etc/my.cnf",
        "mysql://h/db?option_group=reign",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (reign_uri_check(good[i], NULL, e, sizeof(e)) != 0)
            fail_msg("%s: refused: %s", good[i], e);
    struct {
        const char *uri;
        int code;
        const char *needle;
    } bad[] = {
        {"zk://@h:1", REIGN_EURI, "empty user"},
        {"zk://u@h:1", REIGN_EAUTH, "no password for user 'u'"},
        {"zk://u@h:1?password_file=/nonexistent/p", REIGN_EAUTH, "cannot read password_file"},
        {"zk://h:1?session_timeout_ms=99", REIGN_EURI, "session_timeout_ms"},
        {"zk://h:1?connect_timeout_ms=1x", REIGN_EURI, "connect_timeout_ms"},
        {"zk://h:1?suspend_policy=never", REIGN_EURI, "'deadline' or 'immediate'"},
        {"zk://h:1?lease_ms=2000", REIGN_EURI, "unknown parameter"},
        {"zk://h:1?sslmode=require", REIGN_ENOTSUP, "TLS to ZooKeeper"},
        {"zk://h:1?noequals", REIGN_EURI, ""},
        {"http://h:1", REIGN_EURI, "unknown URI scheme"},
        {"sqlite://h/x.db", REIGN_EURI, "no host"},
        {"sqlite:///", REIGN_EURI, "absolute file path"},
        {"sqlite:///x.db?session_timeout_ms=1000", REIGN_EURI, "unknown parameter"},
        {"sqlite:///x.db?lease_ms=0", REIGN_EURI, "lease_ms"},
        {"sqlite:///x.db?lease_ms=1000&renew_ms=900", REIGN_EINVAL, "renew three times"},
        {"postgres://u@h", REIGN_EURI, "database name"},
        {"postgres://u@h/db?sslmod=require", REIGN_EURI, "unknown parameter 'sslmod'"},
        {"mysql://u@h1,h2/db", REIGN_EURI, "exactly one host"},
        {"mariadb://u@h/db?ssl_bogus=1", REIGN_EURI, "unknown parameter 'ssl_bogus'"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        e[0] = '\0';
        int r = reign_uri_check(bad[i].uri, NULL, e, sizeof(e));
        if (r != bad[i].code || !strstr(e, bad[i].needle) || !e[0])
            fail_msg("%s: want %d '%s', got %d '%s'", bad[i].uri, bad[i].code, bad[i].needle, r, e);
    }
}

/* No fence method: a code of its own, unless the file has other problems. */
static void test_no_fence(void **state)
{
    const char *no_fence = "[service web]\n"
                           "election_uri = zk://127.0.0.1:2181/reign\n"
                           "service_address = 127.0.0.1:8080\n"
                           "check_type = tcp\n"
                           "check_target = 127.0.0.1:8080\n"
                           "become_active = /bin/true\n"
                           "become_standby = /bin/true\n";
    expect_error(no_fence, REIGND_ENOFENCE, 1, "[service web]: no fence method");
    char both[1024];
    snprintf(both, sizeof(both), "%s[service other]\n", no_fence);
    expect_error(both, REIGN_EINVAL, 8, "missing required key");
    snprintf(both, sizeof(both), "%scheck_interval = soon\n", no_fence);
    expect_error(both, REIGN_EINVAL, 8, "is not a duration");
}

static void test_load_errors(void **state)
{
    reignd_config *cfg = (reignd_config *)&cfg;
    assert_int_equal(reignd_config_load("/nonexistent/reign.conf", &cfg, err, sizeof(err)),
                     -ENOENT);
    assert_null(cfg);
    assert_string_equal(err, "/nonexistent/reign.conf: cannot read: No such file or directory");
    assert_int_equal(reignd_config_load("/", &cfg, err, sizeof(err)), -EINVAL);
    assert_non_null(strstr(err, "not a regular file"));

    char path[] = "/tmp/reignd-test-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    static const char text[] = "[daemon]\nlog_level = info\nwhat = ever\n";
    assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
    close(fd);
    assert_int_equal(reignd_config_load(path, &cfg, err, sizeof(err)), REIGN_EINVAL);
    char want[128];
    snprintf(want, sizeof(want), "%s:3: unknown key 'what' in [daemon]", path);
    assert_string_equal(err, want);
    unlink(path);

    /* A short buffer gets a cut message, never an overflow. */
    char tiny[8];
    assert_int_equal(reignd_config_parse("[x]\n", 4, "t.conf", &cfg, tiny, sizeof(tiny)),
                     REIGN_EINVAL);
    assert_string_equal(tiny, "t.conf:");
    assert_int_equal(reignd_config_parse("[x]\n", 4, "t.conf", &cfg, NULL, 0), REIGN_EINVAL);
}

int main(void)
{
    /* A user's default control socket needs XDG_RUNTIME_DIR (tested
     * above); the other tests are about other things. */
    if (geteuid() != 0 && !getenv("XDG_RUNTIME_DIR"))
        setenv("XDG_RUNTIME_DIR", "/run/user/reignd-test", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_file),
        cmocka_unit_test(test_man_page_example),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_control_socket_default_for_users),
        cmocka_unit_test(test_timing),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_hostport),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_crlf_and_bom),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_uri),
        cmocka_unit_test(test_election_uri),
        cmocka_unit_test(test_no_fence),
        cmocka_unit_test(test_load_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
