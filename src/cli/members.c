/*
 * members.c - `reign members GROUP`: the members of a group, once, or with --watch one line
 * per change as it happens:
 *
 *   member <id> node=<node> seq=<seq> joined_ms=<ms> data=<text>     (once; in join order)
 *   added|removed|changed <id> node=<node> monotonic_ns=<ns> data=<text>     (--watch)
 *   ready members=<n> monotonic_ns=<ns>                     (--watch: first view complete)
 *   group_deleted monotonic_ns=<ns>                         (--watch)
 *
 * A payload is shown without the line ends it ends in; one that is not printable UTF-8, or
 * holds a line break before its end, as data_base64=...  With --json: one JSON
 * object (once) or one per line (--watch).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

typedef struct members {
    const char *name;
    int json;
    int watch;
    int newest;
    reign_group_watch *w;
} members;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] members GROUP [OPTIONS]\n"
               "\n"
               "Show the members of GROUP in the order in which they joined:\n"
               "  member ID node=NODE seq=SEQ joined_ms=MS data=DATA\n"
               "or, with --watch, follow them until SIGINT or SIGTERM, a line per change:\n"
               "  added|removed|changed ID node=NODE monotonic_ns=NS data=DATA\n"
               "  ready members=N monotonic_ns=NS      (after the first view's 'added' lines)\n"
               "  group_deleted monotonic_ns=NS\n"
               "A payload that is not printable UTF-8, or holds a line break before its end,\n"
               "is shown as data_base64=B64 (line ends at its end are left out).\n"
               "\n"
               "Options:\n"
               "  -w, --watch             follow changes\n"
               "      --newest-per-id     of several registrations of one id, only the newest\n"
               "      --json              JSON instead: {\"group\",\"members\":[{\"id\",\"data\","
               "\"node\",\n"
               "                          \"seq\",\"joined_ms\",\"version\"}...]}, or with --watch"
               " one\n"
               "                          {\"event\",\"group\",\"member\",\"monotonic_ns\"} per "
               "line\n"
               "  -h, --help              show this help\n");
}

static int print_list(cli *c, const members *s, const reign_member *m, size_t n)
{
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        if (o)
            cJSON_AddStringToObject(o, "group", s->name);
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "members") : NULL;
        if (!arr) {
            cJSON_Delete(o);
            cli_error(c, "out of memory");
            return CLI_EXIT_FAIL;
        }
        for (size_t i = 0; i < n; i++)
            cJSON_AddItemToArray(arr, fmt_json_member(&m[i]));
        return cli_json_print(c, o);
    }
    for (size_t i = 0; i < n; i++) {
        char *d = fmt_data(m[i].data, m[i].data_len);
        cli_print("member %s node=%s seq=%llu joined_ms=%lld %s", m[i].id, m[i].node,
                  (unsigned long long)m[i].seq, (long long)m[i].joined_ms, d ? d : "");
        free(d);
    }
    return CLI_EXIT_OK;
}

static void on_list(reign_client *client, int err, const reign_member *m, size_t n, void *ud)
{
    cli *c = ud;
    members *s = c->cmd_data;
    (void)client;
    if (err < 0)
        cli_exit(c, fmt_group_refused(c, err, s->name, NULL, 0));
    else
        cli_exit(c, print_list(c, s, m, n));
}

static void on_event(reign_group_watch *w, const reign_group_watch_event *ev, void *ud)
{
    cli *c = ud;
    members *s = c->cmd_data;
    const char *name = reign_group_watch_event_name(ev->type);
    if (ev->type == REIGN_MEMBERS_ERROR) {
        cli_log(c, REIGN_LOG_WARN, "%s", ev->message ? ev->message : reign_strerror(ev->error));
        return;
    }
    const reign_member *all;
    size_t n;
    reign_group_watch_members(w, &all, &n);
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "event", name);
            cJSON_AddStringToObject(o, "group", s->name);
            if (ev->member)
                cJSON_AddItemToObject(o, "member", fmt_json_member(ev->member));
            if (ev->type == REIGN_MEMBERS_READY)
                cli_json_add_u64(o, "members", n);
            cli_json_add_i64(o, "monotonic_ns", ev->at_ns);
        }
        if (cli_json_print(c, o))
            cli_exit(c, CLI_EXIT_FAIL);
    } else if (ev->member) {
        char *d = fmt_data(ev->member->data, ev->member->data_len);
        cli_print("%s %s node=%s monotonic_ns=%lld %s", name, ev->member->id, ev->member->node,
                  (long long)ev->at_ns, d ? d : "");
        free(d);
    } else if (ev->type == REIGN_MEMBERS_READY) {
        cli_print("ready members=%zu monotonic_ns=%lld", n, (long long)ev->at_ns);
    } else {
        cli_print("%s monotonic_ns=%lld", name, (long long)ev->at_ns);
    }
}

static void on_signal(cli *c, int signum)
{
    members *s = c->cmd_data;
    (void)signum;
    if (s->watch) {
        cli_exit(c, CLI_EXIT_OK);
    } else {
        cli_error(c, "interrupted");
        cli_exit(c, CLI_EXIT_FAIL);
    }
}

int cli_members_main(cli *c, int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_NEWEST };
    static const struct option opts[] = {
        {"watch", no_argument, NULL, 'w'},
        {"json", no_argument, NULL, OPT_JSON},
        {"newest-per-id", no_argument, NULL, OPT_NEWEST},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static members s;
    int o, rc;
    while ((o = getopt_long(argc, argv, ":wh", opts, NULL)) != -1) {
        switch (o) {
        case 'w':
            s.watch = 1;
            break;
        case OPT_JSON:
            s.json = 1;
            break;
        case OPT_NEWEST:
            s.newest = 1;
            break;
        case 'h':
            usage(stdout);
            return CLI_EXIT_OK;
        default:
            return cli_bad_option(c, o, argv);
        }
    }
    if (s.newest && !s.watch)
        return cli_usage_error(c, "--newest-per-id needs --watch");
    if ((rc = cli_one_arg(c, argv, argc, "GROUP", &s.name)))
        return rc;
    c->cmd_data = &s;
    if ((rc = cli_client_new(c)))
        return rc;
    int err;
    if (s.watch) {
        reign_group_watch_options wo = {
            .size = sizeof(wo), .newest_per_id = s.newest, .cb = on_event, .userdata = c};
        err = reign_group_watch_start(&s.w, c->client, s.name, &wo);
        if (err < 0)
            return fmt_group_refused(c, err, s.name, NULL, 0);
    }
    if ((rc = cli_connect(c)))
        return rc;
    /* Once connected: what the listing logs (a foreign table named) comes before its error,
     * not held with the connection's warnings. */
    if (!s.watch && (err = reign_group_list(c->client, s.name, on_list, c)) < 0)
        return fmt_group_refused(c, err, s.name, NULL, 0);
    c->on_signal = on_signal;
    rc = cli_run(c);
    s.w = reign_group_watch_free(s.w);
    return rc;
}
