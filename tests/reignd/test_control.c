/*
 * test_control.c - the control socket (src/reignd/control.c): the request
 * parser; the socket's directory and mode; a stale socket replaced and a
 * live one respected; every operation reaching the (fake) daemon and its
 * answer coming back; malformed and too long requests; answers in request
 * order; a client leaving while its operation is pending; and, as root, a
 * peer of another uid refused (SO_PEERCRED) and logged without payload.
 *
 * Clients run on a thread with blocking sockets, the server on the test's
 * libuv loop, which the client stops (uv_async) once it has its answers.
 */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "control.h"
#include "fake_ops.h"
#include "net_client.h"

/* ---- the parser ------------------------------------------------------------ */

static int parse(const char *line, reignd_request *req, char *err)
{
    return reignd_request_parse(line, strlen(line), req, err, 256);
}

static void test_parse_valid(void **state)
{
    reignd_request req;
    char err[256];
    (void)state;
    assert_int_equal(parse("{\"op\":\"status\"}", &req, err), 0);
    assert_int_equal(req.op, REIGND_OP_STATUS);
    assert_null(req.service);
    reignd_request_clear(&req);

    assert_int_equal(parse(" {\"op\":\"cede\",\"service\":\"web\",\"delay_s\":2.5} \r", &req, err),
                     0);
    assert_int_equal(req.op, REIGND_OP_CEDE);
    assert_string_equal(req.service, "web");
    assert_true(req.delay_s == 2.5);
    reignd_request_clear(&req);

    assert_int_equal(parse("{\"service\":\"web\",\"op\":\"failover\",\"to\":\"n2\"}", &req, err),
                     0);
    assert_int_equal(req.op, REIGND_OP_FAILOVER);
    assert_string_equal(req.to, "n2");
    assert_int_equal(req.no_wait, 0); /* waits for the new active by default */
    reignd_request_clear(&req);

    assert_int_equal(
        parse("{\"op\":\"failover\",\"service\":\"web\",\"to\":\"n2\",\"wait\":false}", &req, err),
        0);
    assert_int_equal(req.no_wait, 1);
    reignd_request_clear(&req);
    assert_int_equal(
        parse("{\"op\":\"failover\",\"service\":\"web\",\"to\":\"n2\",\"wait\":true}", &req, err),
        0);
    assert_int_equal(req.no_wait, 0);
    reignd_request_clear(&req);

    assert_int_equal(parse("{\"op\":\"pause\",\"service\":\"a b\"}", &req, err), 0);
    assert_int_equal(req.op, REIGND_OP_PAUSE);
    assert_string_equal(req.service, "a b");
    reignd_request_clear(&req);

    assert_int_equal(parse("{\"op\":\"resume\",\"service\":\"db\"}", &req, err), 0);
    assert_int_equal(req.op, REIGND_OP_RESUME);
    assert_string_equal(reignd_op_name(req.op), "resume");
    reignd_request_clear(&req);
}

static void test_parse_invalid(void **state)
{
    static const struct {
        const char *line;
        const char *why;
    } bad[] = {
        {"", "malformed JSON"},
        {"garbage", "malformed JSON"},
        {"{\"op\":\"status\"", "malformed JSON"},
        {"[\"status\"]", "must be a JSON object"},
        {"\"status\"", "must be a JSON object"},
        {"{}", "missing \"op\""},
        {"{\"op\":7}", "\"op\" must be a string"},
        {"{\"op\":\"reboot\"}", "unknown op"},
        {"{\"op\":\"status\"} {}", "text after"},
        {"{\"op\":\"status\",\"service\":\"web\"}", "unexpected key \"service\""},
        {"{\"op\":\"cede\"}", "missing \"service\""},
        {"{\"op\":\"cede\",\"service\":5}", "\"service\" must be a string"},
        {"{\"op\":\"cede\",\"service\":\"\"}", "\"service\" must be 1 to"},
        {"{\"op\":\"cede\",\"service\":\"a\\nb\"}", "without control characters"},
        {"{\"op\":\"cede\",\"service\":\"web\",\"delay_s\":-1}", "\"delay_s\" must be"},
        {"{\"op\":\"cede\",\"service\":\"web\",\"delay_s\":1e999}", "\"delay_s\" must be"},
        {"{\"op\":\"cede\",\"service\":\"web\",\"delay_s\":\"5\"}", "\"delay_s\" must be"},
        {"{\"op\":\"cede\",\"service\":\"web\",\"delay_s\":86401}", "\"delay_s\" must be"},
        {"{\"op\":\"failover\",\"service\":\"web\"}", "missing \"to\""},
        {"{\"op\":\"failover\",\"service\":\"web\",\"to\":null}", "\"to\" must be a string"},
        {"{\"op\":\"failover\",\"service\":\"web\",\"to\":\"n2\",\"wait\":0}", "\"wait\" must be"},
        {"{\"op\":\"cede\",\"service\":\"web\",\"wait\":false}", "unexpected key \"wait\""},
        {"{\"op\":\"pause\",\"service\":\"web\",\"service\":\"db\"}", "duplicate key"},
        {"{\"op\":\"resume\",\"service\":\"web\",\"to\":\"n2\"}", "unexpected key \"to\""},
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        reignd_request req;
        char err[256] = "";
        int r = parse(bad[i].line, &req, err);
        if (r != REIGN_EINVAL || !strstr(err, bad[i].why))
            fail_msg("'%s': got %d '%s', expected '%s'", bad[i].line, r, err, bad[i].why);
        assert_null(req.service);
    }

    /* A NUL inside the line, and a line over the limit. */
    reignd_request req;
    char err[256];
    assert_int_equal(reignd_request_parse("{\"op\":\0\"status\"}", 17, &req, err, sizeof(err)),
                     REIGN_EINVAL);
    assert_non_null(strstr(err, "NUL"));
    size_t n = REIGND_CONTROL_LINE_MAX + 1;
    char *big = malloc(n);
    memset(big, ' ', n);
    assert_int_equal(reignd_request_parse(big, n, &req, err, sizeof(err)), REIGN_E2BIG);
    free(big);

    /* A name one byte over the limit. */
    char line[REIGN_NAME_MAX + 64];
    snprintf(line, sizeof(line), "{\"op\":\"pause\",\"service\":\"%0*d\"}", REIGN_NAME_MAX + 1, 0);
    assert_int_equal(parse(line, &req, err), REIGN_EINVAL);
    snprintf(line, sizeof(line), "{\"op\":\"pause\",\"service\":\"%0*d\"}", REIGN_NAME_MAX, 0);
    assert_int_equal(parse(line, &req, err), 0);
    reignd_request_clear(&req);
}

/* ---- a server on a loop, clients on a thread ------------------------------ */

typedef struct fixture {
    char dir[64];
    char path[100];
    uv_loop_t loop;
    fake_ops fake;
    reignd_control *ctl;
    char log[8192];
} fixture;

static void capture_log(reign_log_level level, const char *msg, void *userdata)
{
    fixture *fx = userdata;
    size_t n = strlen(fx->log);
    (void)level;
    snprintf(fx->log + n, sizeof(fx->log) - n, "%s\n", msg);
}

static int start_server(fixture *fx, const reignd_ops *ops, char *err)
{
    reignd_control_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.path = fx->path;
    o.ops = ops ? ops : &fx->fake.ops;
    o.log_fn = capture_log;
    o.log_userdata = fx;
    return reignd_control_start(&fx->loop, &o, &fx->ctl, err, 256);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof(*fx));
    snprintf(fx->dir, sizeof(fx->dir), "/tmp/reignd-ctl-XXXXXX");
    if (!mkdtemp(fx->dir))
        return -1;
    snprintf(fx->path, sizeof(fx->path), "%s/run/reignd.sock", fx->dir);
    uv_loop_init(&fx->loop);
    fake_ops_init(&fx->fake, &fx->loop);
    *state = fx;
    return 0;
}

/* Runs the loop until nothing is left open (the server closed). */
static void drain(uv_loop_t *loop)
{
    while (uv_run(loop, UV_RUN_NOWAIT))
        ;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    reignd_control_close(fx->ctl);
    fake_ops_finish(&fx->fake, 0);
    drain(&fx->loop);
    assert_int_equal(uv_loop_close(&fx->loop), 0);
    char sub[128];
    snprintf(sub, sizeof(sub), "%s/run", fx->dir);
    rmdir(sub);
    rmdir(fx->dir);
    free(fx);
    return 0;
}

/* One client exchange on the fixture's socket. */
static void run_client(fixture *fx, net_job *j)
{
    j->unix_path = fx->path;
    net_exchange(&fx->loop, j);
}

/* Sends one request line and returns its answer, parsed. */
static cJSON *ask(fixture *fx, const char *line)
{
    net_job *j = calloc(1, sizeof(*j));
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s\n", line);
    j->send = buf;
    j->lines = 1;
    run_client(fx, j);
    assert_int_equal(j->connect_errno, 0);
    cJSON *a = cJSON_Parse(j->answer);
    if (!a)
        fail_msg("no JSON answer to %s: '%s'", line, j->answer);
    free(j);
    return a;
}

static void assert_ok(cJSON *a)
{
    if (!cJSON_IsTrue(cJSON_GetObjectItem(a, "ok"))) {
        char *s = cJSON_PrintUnformatted(a);
        fail_msg("expected ok, got %s", s);
    }
}

static void assert_error(cJSON *a, const char *code, const char *msg_part)
{
    const cJSON *e = cJSON_GetObjectItem(a, "error"), *m = cJSON_GetObjectItem(a, "message");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(a, "ok")));
    assert_true(cJSON_IsString(e) && cJSON_IsString(m));
    assert_string_equal(e->valuestring, code);
    if (!strstr(m->valuestring, msg_part))
        fail_msg("message '%s' lacks '%s'", m->valuestring, msg_part);
}

/* ---- the socket file ------------------------------------------------------- */

static void test_modes(void **state)
{
    fixture *fx = *state;
    char err[256], sub[128];
    struct stat st;
    assert_int_equal(start_server(fx, NULL, err), 0);
    snprintf(sub, sizeof(sub), "%s/run", fx->dir);
    assert_int_equal(stat(sub, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    assert_int_equal(lstat(fx->path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    /* close removes the socket */
    reignd_control_close(fx->ctl);
    fx->ctl = NULL;
    drain(&fx->loop);
    assert_int_equal(lstat(fx->path, &st), -1);
}

static void test_open_dir_refused(void **state)
{
    fixture *fx = *state;
    char err[256], sub[128];
    snprintf(sub, sizeof(sub), "%s/run", fx->dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    chmod(sub, 0755);
    assert_int_equal(start_server(fx, NULL, err), REIGN_EACCES);
    assert_non_null(strstr(err, "mode 0700"));
    assert_null(fx->ctl);
    drain(&fx->loop);
}

static void test_stale_and_live(void **state)
{
    fixture *fx = *state;
    char err[256], sub[128];
    snprintf(sub, sizeof(sub), "%s/run", fx->dir);
    assert_int_equal(mkdir(sub, 0700), 0);

    /* A regular file where the socket goes is not ours to remove. */
    FILE *f = fopen(fx->path, "w");
    fclose(f);
    assert_int_equal(start_server(fx, NULL, err), REIGN_EEXIST);
    assert_non_null(strstr(err, "not a socket"));
    unlink(fx->path);

    /* A socket left by a dead daemon is replaced. */
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fx->path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd);
    assert_int_equal(start_server(fx, NULL, err), 0);

    /* A live one is another daemon's: refused, and left alone. */
    reignd_control *first = fx->ctl;
    assert_int_equal(start_server(fx, NULL, err), REIGN_EEXIST);
    assert_non_null(strstr(err, "another reignd"));
    fx->ctl = first;
    cJSON *a = ask(fx, "{\"op\":\"status\"}");
    assert_ok(a);
    cJSON_Delete(a);
}

/* ---- operations ------------------------------------------------------------ */

static void test_status(void **state)
{
    fixture *fx = *state;
    char err[256];
    assert_int_equal(start_server(fx, NULL, err), 0);
    cJSON *a = ask(fx, "{\"op\":\"status\"}");
    assert_ok(a);
    const cJSON *list = cJSON_GetObjectItem(cJSON_GetObjectItem(a, "result"), "services");
    assert_int_equal(cJSON_GetArraySize(list), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "name")->valuestring,
                        "web");
    cJSON_Delete(a);
    assert_int_equal(fx->fake.calls, 0);
}

static void test_each_op(void **state)
{
    fixture *fx = *state;
    char err[256], origin[64];
    assert_int_equal(start_server(fx, NULL, err), 0);
    snprintf(origin, sizeof(origin), "control (uid %u, pid ", (unsigned)geteuid());

    cJSON *a = ask(fx, "{\"op\":\"cede\",\"service\":\"web\",\"delay_s\":2.5}");
    assert_ok(a);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(a, "result"), "service")->valuestring, "web");
    cJSON_Delete(a);
    assert_string_equal(fx->fake.op, "cede");
    assert_string_equal(fx->fake.service, "web");
    assert_true(fx->fake.delay_s == 2.5);
    assert_memory_equal(fx->fake.origin, origin, strlen(origin));

    a = ask(fx, "{\"op\":\"failover\",\"service\":\"db\",\"to\":\"n2\"}"); /* pending, then ok */
    assert_ok(a);
    cJSON_Delete(a);
    assert_string_equal(fx->fake.op, "failover");
    assert_string_equal(fx->fake.node, "n2");
    assert_int_equal(fx->fake.wait, 1);
    a = ask(fx, "{\"op\":\"failover\",\"service\":\"web\",\"to\":\"n2\",\"wait\":false}");
    assert_ok(a);
    cJSON_Delete(a);
    assert_int_equal(fx->fake.wait, 0);

    a = ask(fx, "{\"op\":\"failover\",\"service\":\"web\",\"to\":\"n3\"}");
    assert_error(a, "REIGN_ESTATE", "node 'n3' is not healthy");
    cJSON_Delete(a);

    a = ask(fx, "{\"op\":\"pause\",\"service\":\"web\"}");
    assert_ok(a);
    cJSON_Delete(a);
    assert_int_equal(fx->fake.paused[0], 1);
    a = ask(fx, "{\"op\":\"resume\",\"service\":\"web\"}");
    assert_ok(a);
    cJSON_Delete(a);
    assert_int_equal(fx->fake.paused[0], 0);
    assert_string_equal(fx->fake.op, "resume");

    a = ask(fx, "{\"op\":\"pause\",\"service\":\"nosuch\"}");
    assert_error(a, "REIGN_ENOENT", "no service 'nosuch'");
    cJSON_Delete(a);
    a = ask(fx, "{\"op\":\"cede\",\"service\":\"busy\"}");
    assert_error(a, "REIGN_ESTATE", "middle of a failover");
    cJSON_Delete(a);
    assert_int_equal(fx->fake.calls, 8);
}

static void test_missing_ops(void **state)
{
    fixture *fx = *state;
    char err[256];
    reignd_ops none;
    memset(&none, 0, sizeof(none));
    assert_int_equal(start_server(fx, &none, err), 0);
    cJSON *a = ask(fx, "{\"op\":\"status\"}");
    assert_error(a, "REIGN_ENOTSUP", "");
    cJSON_Delete(a);
    a = ask(fx, "{\"op\":\"cede\",\"service\":\"web\"}");
    assert_error(a, "REIGN_ENOTSUP", "");
    cJSON_Delete(a);
}

/* ---- malformed input, order, departures ------------------------------------- */

static void test_malformed_then_usable(void **state)
{
    fixture *fx = *state;
    char err[256];
    assert_int_equal(start_server(fx, NULL, err), 0);
    /* An error, an empty line (ignored), a pending op and an immediate one:
     * three answers, in the order asked. */
    net_job j;
    memset(&j, 0, sizeof(j));
    j.send = "garbage\n\n{\"op\":\"cede\",\"service\":\"db\"}\n{\"op\":\"pause\",\"service\":"
             "\"nosuch\"}\n";
    j.lines = 3;
    run_client(fx, &j);
    char *l1 = j.answer, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    l2[-1] = l3[-1] = '\0';
    cJSON *a = cJSON_Parse(l1);
    assert_error(a, "REIGN_EINVAL", "malformed JSON");
    cJSON_Delete(a);
    a = cJSON_Parse(l2);
    assert_ok(a);
    cJSON_Delete(a);
    a = cJSON_Parse(l3);
    assert_error(a, "REIGN_ENOENT", "nosuch");
    cJSON_Delete(a);
    assert_false(j.eof);
}

static void test_too_long(void **state)
{
    fixture *fx = *state;
    char err[256];
    assert_int_equal(start_server(fx, NULL, err), 0);
    size_t n = 3 * REIGND_CONTROL_LINE_MAX;
    char *big = malloc(n);
    memset(big, 'x', n);
    net_job *j = calloc(1, sizeof(*j));
    j->send = big;
    j->send_len = n;
    j->lines = 2; /* one answer, then the end of the connection */
    run_client(fx, j);
    assert_true(j->eof);
    cJSON *a = cJSON_Parse(j->answer);
    assert_error(a, "REIGN_E2BIG", "longer than 4096");
    cJSON_Delete(a);
    free(j);
    free(big);
    assert_int_equal(fx->fake.calls, 0);
}

static void test_client_leaves_pending(void **state)
{
    fixture *fx = *state;
    char err[256];
    assert_int_equal(start_server(fx, NULL, err), 0);
    net_job j;
    memset(&j, 0, sizeof(j));
    j.send = "{\"op\":\"failover\",\"service\":\"slow\",\"to\":\"n2\"}\n";
    j.leave_early = 1;
    run_client(fx, &j);
    while (fx->fake.npending == 0)
        uv_run(&fx->loop, UV_RUN_ONCE);
    /* The daemon completes a call whose client is gone: dropped quietly. */
    fake_ops_finish(&fx->fake, 0);
    cJSON *a = ask(fx, "{\"op\":\"status\"}");
    assert_ok(a);
    cJSON_Delete(a);
}

static void test_close_with_pending(void **state)
{
    fixture *fx = *state;
    char err[256];
    assert_int_equal(start_server(fx, NULL, err), 0);
    net_job j;
    memset(&j, 0, sizeof(j));
    j.send = "{\"op\":\"cede\",\"service\":\"slow\"}\n";
    j.leave_early = 1;
    run_client(fx, &j);
    while (fx->fake.npending == 0)
        uv_run(&fx->loop, UV_RUN_ONCE);
    reignd_control_close(fx->ctl);
    fx->ctl = NULL;
    drain(&fx->loop);
    fake_ops_finish(&fx->fake, REIGN_ECANCELED); /* after the server is gone */
}

/* ---- peer credentials ------------------------------------------------------- */

static void on_child_gone(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    uv_poll_stop(p);
    uv_stop(p->loop);
}

static void test_other_uid_refused(void **state)
{
    fixture *fx = *state;
    char err[256], sub[128];
    if (geteuid() != 0) {
        print_message("skipped: needs root to connect as another uid\n");
        skip();
    }
    assert_int_equal(start_server(fx, NULL, err), 0);
    /* Open the way through the file modes, so that only the credential check
     * stands between user nobody and the daemon. */
    snprintf(sub, sizeof(sub), "%s/run", fx->dir);
    chmod(fx->dir, 0711);
    chmod(sub, 0711);
    chmod(fx->path, 0666);

    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
            _exit(3);
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fx->path);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
            _exit(4);
        const char req[] = "{\"op\":\"cede\",\"service\":\"web\",\"to\":\"PAYLOAD-MARKER\"}\n";
        send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL);
        char buf[256];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        _exit(n <= 0 ? 0 : 5); /* closed without a word */
    }
    close(pfd[1]);
    uv_poll_t p;
    uv_poll_init(&fx->loop, &p, pfd[0]);
    uv_poll_start(&p, UV_READABLE | UV_DISCONNECT, on_child_gone);
    uv_run(&fx->loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&p, NULL);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    assert_int_equal(fx->fake.calls, 0);
    assert_non_null(strstr(fx->log, "refused a connection from uid 65534"));
    assert_null(strstr(fx->log, "PAYLOAD-MARKER"));
    chmod(fx->dir, 0700);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_invalid),
        cmocka_unit_test_setup_teardown(test_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_dir_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_and_live, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status, setup, teardown),
        cmocka_unit_test_setup_teardown(test_each_op, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_ops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_then_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_long, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_leaves_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_with_pending, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_uid_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
