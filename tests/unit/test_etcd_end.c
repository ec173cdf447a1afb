/*
 * test_etcd_end.c - the guardian's end of a dead client's lease on etcd (src/etcd/etcd_end.c)
 * as a user, with no etcd: the member is a loopback listener (fake_member.h) whose script
 * answers each POST (one connection each) as etcd's gateway would, and the test reads what was
 * sent.  The user logs in before the first write, every POST carries its token, a token the
 * member does not know is replaced by a login at that member, and nothing more is sent once etcd
 * has refused the credentials; etcd with authentication off wants no token.  (TLS is the same
 * code on libcurl's side of reign__eh_post(): tests/e2e_etcd/test_tls.py.)
 *
 * No timed assertion: the script and the blocking calls meet on the sockets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etcd/etcd.h"
#include "fake_member.h"

#define LEASE   0x694d8f1a2b3cLL
#define LOGIN   "POST /v3/auth/authenticate HTTP/1.1\r\n"
#define TXN     "POST /v3/kv/txn HTTP/1.1\r\n"
#define REVOKE  "POST /v3/lease/revoke HTTP/1.1\r\n"
#define USER    "reign"
#define PASSWD  "p\"w\\d"
#define BODY_OK "{\"name\":\"reign\",\"password\":\"p\\\"w\\\\d\"}"

/* One POST's turn: a connection, its request, an answer, the connection closed. */
#define TURN(a) ACCEPT, READ, a, CLOSE

/* etcd's gateway's refusals, as whole HTTP answers (made by setup()). */
static char invalid_token[512], refused[512], auth_off[512];

static void answer(char *buf, size_t n, const char *status, const char *json)
{
    snprintf(buf, n,
             "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             status, strlen(json), json);
}

typedef struct ent {
    fake srv;
    char members[64];
    reign__zk_end_write w;
    reign__zk_end e;
    char err[256];
} ent;

static int setup(void **state)
{
    ent *t = calloc(1, sizeof(*t));
    fake_init(&t->srv);
    snprintf(t->members, sizeof(t->members), "http://127.0.0.1:%d", t->srv.port);
    static const char rec[] = "reign 1\nend=guardian\n\n";
    t->w = (reign__zk_end_write){
        .path = "/reign/election/e/history/h_1", .data = rec, .len = sizeof(rec) - 1};
    t->e = (reign__zk_end){
        .hosts = "unused",
        .session = LEASE,
        .timeout_ms = 5000,
        /* the fake member is a gateway: the guardian of api=gateway */
        .access = {.root = "/p", .user = USER, .password = PASSWD, .api = "gateway"},
        .writes = &t->w,
        .n_writes = 1};
    answer(invalid_token, sizeof(invalid_token), "401 Unauthorized",
           "{\"error\":\"etcdserver: invalid auth token\",\"code\":16}");
    answer(refused, sizeof(refused), "400 Bad Request",
           "{\"error\":\"etcdserver: authentication failed, invalid user ID or password\","
           "\"code\":3}");
    answer(auth_off, sizeof(auth_off), "400 Bad Request",
           "{\"error\":\"etcdserver: authentication is not enabled\",\"code\":9}");
    char err[256];
    if (reign__etcd_end_prepare(t->members, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    ent *t = *state;
    fake_end(&t->srv);
    free(t);
    return 0;
}

/* Ends the lease through the fake member, whose script must then run to its end (a script
 * waiting in vain gives up after GUARD_MS and says so in `trouble`). */
static int end_lease(ent *t, const step *steps)
{
    t->w.rc = 1;
    fake_start(&t->srv, run_steps, steps);
    int rc = reign__etcd_end_lease(t->members, &t->e, t->err, sizeof(t->err));
    pthread_join(t->srv.th, NULL);
    t->srv.running = false;
    assert_string_equal(t->srv.trouble, "");
    return rc;
}

static void assert_sent(ent *t, int i, const char *line, const char *token, const char *body)
{
    const char *r = t->srv.reqs[i];
    if (strncmp(r, line, strlen(line)))
        fail_msg("request %d: '%.60s', want '%s'", i, r, line);
    char h[64];
    snprintf(h, sizeof(h), "\r\nAuthorization: %s\r\n", token ? token : "");
    if (token ? !strstr(r, h) : strstr(r, "\r\nAuthorization:") != NULL)
        fail_msg("request %d: token %s wanted: '%s'", i, token ? token : "none", r);
    if (body && strcmp(r + t->srv.head_len[i], body))
        fail_msg("request %d: body '%s', want '%s'", i, r + t->srv.head_len[i], body);
}

/* A login, the write and the revoke with its token; a member that does not know the token
 * (another member's, not applied here yet) is logged in at, once, and asked again. */
static void test_login(void **state)
{
    ent *t = *state;
    const char *txn_ok = "{\"header\":{\"revision\":\"9\"},\"succeeded\":true}";
    const step steps[] = {TURN(OK("{\"header\":{},\"token\":\"T1.a\"}")), TURN(SEND(invalid_token)),
                          TURN(OK("{\"header\":{},\"token\":\"T2.b\"}")), TURN(OK(txn_ok)),
                          TURN(OK("{\"header\":{\"revision\":\"10\"}}")), END};
    assert_int_equal(end_lease(t, steps), 1);
    assert_int_equal(atomic_load(&t->srv.n_reqs), 5);
    assert_sent(t, 0, LOGIN, NULL, BODY_OK);
    assert_sent(t, 1, TXN, "T1.a", NULL);
    assert_sent(t, 2, LOGIN, NULL, BODY_OK);
    assert_sent(t, 3, TXN, "T2.b", NULL);
    assert_sent(t, 4, REVOKE, "T2.b", "{\"ID\":\"115781834255164\"}");
    assert_int_equal(t->w.rc, 0);
}

/* Refused credentials: nothing is sent after the login, the write is "not allowed", and the
 * error names the user, never the password. */
static void test_refused(void **state)
{
    ent *t = *state;
    const step steps[] = {TURN(SEND(refused)), END};
    assert_int_equal(end_lease(t, steps), REIGN_EAUTH);
    assert_int_equal(atomic_load(&t->srv.n_reqs), 1);
    assert_int_equal(atomic_load(&t->srv.accepts), 1);
    assert_int_equal(t->w.rc, REIGN_EAUTH);
    assert_non_null(strstr(t->err, "refused the credentials of user 'reign'"));
    assert_null(strstr(t->err, PASSWD));
}

/* etcd's authentication turned off since the client logged in: no token, and one login only. */
static void test_auth_off(void **state)
{
    ent *t = *state;
    const step steps[] = {TURN(SEND(auth_off)), TURN(OK("{\"header\":{},\"succeeded\":false}")),
                          TURN(OK("{\"header\":{}}")), END};
    assert_int_equal(end_lease(t, steps), 1);
    assert_int_equal(atomic_load(&t->srv.n_reqs), 3);
    assert_sent(t, 0, LOGIN, NULL, BODY_OK);
    assert_sent(t, 1, TXN, NULL, NULL);
    assert_sent(t, 2, REVOKE, NULL, NULL);
    assert_int_equal(t->w.rc, REIGN_EBADVERSION);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_login, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_off, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
