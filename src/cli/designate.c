/*
 * designate.c - `reign designate NAME ID`: an operator names the leader of
 * an election.  The candidate standing with id ID is asked to take over
 * (reign_election_designate); the current leader hands over to it, and the
 * command waits until ID leads, then prints
 *
 *   designated ID term=TERM token=TOKEN (was OLD_ID term=OLD_TERM)
 *
 * Like cede, it reads the election first, so that one that does not exist
 * is reported and left alone, then follows it as an observer to see the
 * takeover.  If ID does not stand, nothing changes and it fails.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum designate_phase { DES_LOADING, DES_ASKING, DES_DONE };

typedef struct designate {
    const char *name;
    const char *id;
    long wait_ms;
    int json;
    enum designate_phase phase;
    uint64_t old_term;
    char old_id[REIGN_ID_MAX + 1];
    uv_timer_t timer;
} designate;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] designate NAME ID [OPTIONS]\n"
               "\n"
               "Make the candidate standing with id ID the leader of election NAME: the\n"
               "current leader hands over to it (ZooKeeper's queue strategy, or a SQL store,\n"
               "where ID must be listed: reign campaign and reignd list their candidates).\n"
               "ID outranks every other candidate until it leaves; then automatic failover\n"
               "goes on as before.  Waits until ID leads and prints:\n"
               "  designated ID term=TERM token=TOKEN (was OLD_ID term=OLD_TERM)\n"
               "Fails (exit 1), changing nothing, if no candidate with id ID stands.\n"
               "\n"
               "Options:\n"
               "  -w, --wait-ms N         how long to wait for ID to lead (default 10000)\n"
               "  -j, --json              print the result as one JSON object\n"
               "  -h, --help              show this help\n");
}

static void fail(cli *c, const char *what)
{
    designate *s = c->cmd_data;
    s->phase = DES_DONE;
    cli_election_fail(c, s->name, what);
}

static void succeed(cli *c, const reign_leader *l)
{
    designate *s = c->cmd_data;
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "election", s->name);
        cJSON_AddStringToObject(o, "leader", l->id ? l->id : "");
        cJSON_AddNumberToObject(o, "term", (double)l->term);
        cJSON_AddNumberToObject(o, "token", (double)l->token);
        cJSON_AddStringToObject(o, "previous", s->old_id);
        cJSON_AddNumberToObject(o, "previous_term", (double)s->old_term);
        char *text = cJSON_PrintUnformatted(o);
        if (text)
            cli_print("%s", text);
        cJSON_free(text);
        cJSON_Delete(o);
    } else {
        cli_print("designated %s term=%llu token=%llu (was %s term=%llu)", cli_line_id(l->id),
                  (unsigned long long)l->term, (unsigned long long)l->token, cli_line_id(s->old_id),
                  (unsigned long long)s->old_term);
    }
    s->phase = DES_DONE;
    cli_exit(c, CLI_EXIT_OK);
}

static void on_timeout(uv_timer_t *t)
{
    cli *c = t->data;
    designate *s = c->cmd_data;
    char msg[512];
    if (s->phase == DES_LOADING)
        snprintf(msg, sizeof(msg), "could not load the election within %ld ms", s->wait_ms);
    else
        snprintf(msg, sizeof(msg), "'%s' did not take over within %ld ms", s->id, s->wait_ms);
    fail(c, msg);
}

static void on_designated(reign_client *client, int err, void *userdata)
{
    cli *c = userdata;
    designate *s = c->cmd_data;
    char msg[512];
    (void)client;
    if (s->phase != DES_ASKING || err == 0)
        return;
    if (err == REIGN_ENOENT)
        snprintf(msg, sizeof(msg), "no candidate with id '%s' stands; nothing changed", s->id);
    else if (err == REIGN_ENOTSUP)
        snprintf(msg, sizeof(msg), "designation needs the queue strategy");
    else
        snprintf(msg, sizeof(msg), "cannot designate '%s': %s", s->id, reign_strerror(err));
    fail(c, msg);
}

static void on_event(reign_election *e, const reign_election_event *ev, void *userdata)
{
    cli *c = userdata;
    designate *s = c->cmd_data;
    switch (ev->type) {
    case REIGN_ELECTION_READY: {
        if (s->phase != DES_LOADING)
            break;
        const reign_leader *l = ev->leader;
        if (l) {
            s->old_term = l->term;
            snprintf(s->old_id, sizeof(s->old_id), "%s", l->id ? l->id : "");
        }
        s->phase = DES_ASKING;
        int r =
            reign_election_designate(c->client, reign_election_name(e), s->id, on_designated, c);
        if (r < 0) {
            on_designated(c->client, r, c);
            break;
        }
        cli_log(c, REIGN_LOG_INFO, "asked '%s' to take over from '%s'", s->id,
                cli_line_id(s->old_id));
        /* --wait-ms counts from the request */
        uv_timer_start(&s->timer, on_timeout, (uint64_t)s->wait_ms, 0);
        break;
    }
    case REIGN_ELECTION_LEADER_CHANGED:
        if (s->phase == DES_ASKING && ev->leader && ev->leader->id &&
            !strcmp(ev->leader->id, s->id))
            succeed(c, ev->leader);
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
    /* Designating the leader itself: it leads already, nothing to wait for. */
    if (ev->type == REIGN_ELECTION_READY && s->phase == DES_ASKING && ev->leader &&
        ev->leader->id && !strcmp(ev->leader->id, s->id))
        succeed(c, ev->leader);
}

int cli_designate_main(cli *c, int argc, char **argv)
{
    static const struct option opts[] = {
        {"wait-ms", required_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static designate s;
    int o, r;
    char q[512];

    s.wait_ms = 10000;
    while ((o = getopt_long(argc, argv, ":w:jh", opts, NULL)) != -1) {
        switch (o) {
        case 'w':
            if (cli_parse_int(c, "--wait-ms", optarg, 0, 2147483647L, &s.wait_ms))
                return CLI_EXIT_USAGE;
            break;
        case 'j':
            s.json = 1;
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    /* NAME ID: the id is the last operand. */
    if (optind + 2 != argc) {
        return optind + 2 > argc
                   ? cli_usage_error(c, "expected an election NAME and a candidate ID")
                   : cli_usage_error(c, "unexpected argument '%s'",
                                     cli_quote(argv[optind + 2], q, sizeof(q)));
    }
    s.id = argv[optind + 1];
    if ((r = cli_election_name(c, argv, argc - 1, "", &s.name)))
        return r;
    c->cmd_data = &s;
    uv_timer_init(&c->loop, &s.timer);
    s.timer.data = c;

    if ((r = cli_follow_existing(c, s.name, on_event, NULL)))
        return r;
    if (s.phase == DES_LOADING)
        uv_timer_start(&s.timer, on_timeout, (uint64_t)s.wait_ms, 0);
    return cli_run(c);
}
