/*
 * cede.c - `reign cede NAME`: make the current leader of an election step
 * down (its node is deleted: reign_election_depose) and wait until another
 * leadership begins, then print
 *
 *   ceded <old id> term=<old term> -> <new id> term=<new term>
 *
 * It first reads the election, so that an election that does not exist is
 * reported and left alone (joining, even as an observer, would create it).
 * Then it follows the election as an observer, so it knows the leader it
 * deposes and sees the next one: any leader with a higher term than the
 * deposed one is the successor (possibly the same candidate, standing again
 * after its cede delay).  If none comes within --wait-ms it fails.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum cede_phase { CEDE_LOADING, CEDE_DEPOSING, CEDE_DONE };

typedef struct cede {
    const char *name;
    long wait_ms;
    enum cede_phase phase;
    int depose_answered;
    uint64_t old_term;
    char old_id[REIGN_ID_MAX + 1];
    uv_timer_t timer;
} cede;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] cede NAME [OPTIONS]\n"
               "\n"
               "Make the leader of election NAME step down, wait for the next leadership\n"
               "and print:\n"
               "  ceded OLD_ID term=TERM -> NEW_ID term=NEW_TERM\n"
               "Fails (exit 1) if there is no leader, or if no one takes over in time.\n"
               "\n"
               "Options:\n"
               "  -w, --wait-ms N         how long to wait for the next leader (default 10000)\n"
               "  -h, --help              show this help\n");
}

static void fail(cli *c, const char *what)
{
    cede *s = c->cmd_data;
    s->phase = CEDE_DONE;
    cli_election_fail(c, s->name, what);
}

static void on_deposed(reign_client *client, int err, void *userdata)
{
    cli *c = userdata;
    cede *s = c->cmd_data;
    char msg[512];
    (void)client;
    s->depose_answered = 1;
    if (s->phase != CEDE_DEPOSING || err == 0)
        return;
    if (err == REIGN_ENOENT)
        fail(c, "no leader to cede (it left before it could be deposed)");
    else {
        snprintf(msg, sizeof(msg), "cannot depose the leader '%s': %s", cli_line_id(s->old_id),
                 reign_strerror(err));
        fail(c, msg);
    }
}

static void on_timeout(uv_timer_t *t)
{
    cli *c = t->data;
    cede *s = c->cmd_data;
    char msg[512];
    if (s->phase == CEDE_LOADING)
        snprintf(msg, sizeof(msg), "could not load the election within %ld ms", s->wait_ms);
    else if (!s->depose_answered)
        snprintf(msg, sizeof(msg), "no answer to deposing leader '%s' within %ld ms",
                 cli_line_id(s->old_id), s->wait_ms);
    else
        snprintf(msg, sizeof(msg),
                 "leader '%s' (term %llu) stepped down, but no one has taken over within %ld ms",
                 cli_line_id(s->old_id), (unsigned long long)s->old_term, s->wait_ms);
    fail(c, msg);
}

static void start_depose(cli *c, reign_election *e, const reign_leader *l)
{
    cede *s = c->cmd_data;
    char msg[256];
    if (!l) {
        fail(c, "no leader to cede");
        return;
    }
    s->old_term = l->term;
    snprintf(s->old_id, sizeof(s->old_id), "%s", l->id ? l->id : "");
    s->phase = CEDE_DEPOSING;
    int r = reign_election_depose(c->client, reign_election_name(e), on_deposed, c);
    if (r < 0) {
        snprintf(msg, sizeof(msg), "cannot depose the leader: %s", reign_strerror(r));
        fail(c, msg);
        return;
    }
    cli_log(c, REIGN_LOG_INFO, "deposing leader '%s' (term %llu)", cli_line_id(s->old_id),
            (unsigned long long)s->old_term);
    /* --wait-ms counts from the request */
    uv_timer_start(&s->timer, on_timeout, (uint64_t)s->wait_ms, 0);
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    cede *s = c->cmd_data;
    switch (ev->type) {
    case REIGN_ELECTION_READY:
        if (s->phase == CEDE_LOADING)
            start_depose(c, e, ev->leader);
        break;
    case REIGN_ELECTION_LEADER_CHANGED:
        /* A higher term is a new leadership; whoever holds it took over. */
        if (s->phase == CEDE_DEPOSING && ev->leader && ev->leader->term > s->old_term) {
            cli_print("ceded %s term=%llu -> %s term=%llu", cli_line_id(s->old_id),
                      (unsigned long long)s->old_term, cli_line_id(ev->leader->id),
                      (unsigned long long)ev->leader->term);
            s->phase = CEDE_DONE;
            cli_exit(c, CLI_EXIT_OK);
        }
        break;
    case REIGN_ELECTION_ERROR: {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ev->message ? ev->message : reign_strerror(ev->error));
        fail(c, msg);
        break;
    }
    default:
        break;
    }
}

static int has_leader(cli *c, const reign_election_view *view)
{
    if (view->has_leader)
        return 0; /* follow it; READY deposes the leader it finds */
    fail(c, "no leader to cede");
    return 1;
}

int cli_cede_main(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"wait-ms", required_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static cede s;
    int o, r;

    s.wait_ms = 10000;
    while ((o = getopt_long(argc, argv, ":w:h", opts, NULL)) != -1) {
        switch (o) {
        case 'w':
            if (cli_parse_int(c, "--wait-ms", optarg, 0, 2147483647L, &s.wait_ms))
                return CLI_EXIT_USAGE;
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    if ((r = cli_election_name(c, argv, argc, "", &s.name)))
        return r;
    c->cmd_data = &s;
    uv_timer_init(&c->loop, &s.timer);
    s.timer.data = c;

    if ((r = cli_follow_existing(c, s.name, on_event, has_leader)))
        return r;
    /* Loading the election is bounded too. */
    if (s.phase == CEDE_LOADING)
        uv_timer_start(&s.timer, on_timeout, (uint64_t)s.wait_ms, 0);
    return cli_run(c);
}
