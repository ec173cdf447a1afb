/*
 * leader.c - the smallest useful program on libreign: stand in an election
 * and do leader-only work while, and only while, leadership is guaranteed.
 *
 *   leader zk://127.0.0.1:2181 nightly-report node-1
 *
 * It uses reign_client_run(), the plain poll loop; programs with an event
 * loop of their own plug the client into it instead (see
 * <reign/adapters/libuv.h>).
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <reign/reign.h>

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    reign_client *client = userdata;
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        /* Hand the token to whatever you write, so a store can refuse a
         * stale leader; start work only while valid_until is ahead. */
        printf("leading: term %llu, token %llu, guaranteed for %lld ms\n",
               (unsigned long long)ev->term, (unsigned long long)ev->token,
               (long long)((ev->valid_until_ns - reign_now_ns()) / 1000000));
        break;
    case REIGN_ELECTION_DEMOTED:
        printf("stopped leading: %s\n", reign_demote_reason_name(ev->reason));
        break;
    case REIGN_ELECTION_LEFT:
        reign_client_stop(client);
        break;
    case REIGN_ELECTION_ERROR:
        fprintf(stderr, "election failed: %s\n", ev->message ? ev->message : "");
        reign_client_stop(client);
        break;
    default:
        break;
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s URI ELECTION ID\n", argv[0]);
        return 2;
    }
    char err[256];
    reign_client *client;
    int r = reign_client_new(&client, argv[1], NULL, err, sizeof(err));
    if (r < 0) {
        fprintf(stderr, "%s: %s\n", reign_strerror(r), err);
        return 1;
    }
    reign_election_options opts = {
        .size = sizeof(opts), .id = argv[3], .cb = on_event, .userdata = client};
    reign_election *e;
    r = reign_election_join(&e, client, argv[2], &opts);
    if (r < 0) {
        fprintf(stderr, "cannot join: %s\n", reign_strerror(r));
        reign_client_free(client);
        return 1;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    /* The loop: wait for the client's descriptor or its next deadline.  A
     * signal interrupts poll(), so SIGTERM is noticed at once. */
    while (!stopping) {
        struct pollfd pfd = {.fd = reign_client_get_fd(client), .events = POLLIN};
        int64_t ms = reign_client_get_timeout_ms(client);
        poll(&pfd, 1, ms < 0 || ms > 1000 ? 1000 : (int)ms);
        if (reign_client_process(client) < 0)
            break;
    }
    reign_election_resign(e); /* the next candidate takes over at once */
    reign_client_run(client); /* until LEFT stops it */
    reign_election_free(e);
    reign_client_free(client);
    return 0;
}
