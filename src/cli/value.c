/*
 * value.c - `reign value get|set|del|watch KEY [VALUE]`: watched values.
 *
 *   get KEY                 prints the value's payload and a newline (--json: an object with
 *                           its version and times)
 *   set KEY VALUE           writes it; --version V writes only if the value is at version V
 *                           (compare-and-set), --version absent only if there is none; prints
 *                           "set KEY version=V"
 *   del KEY                 deletes it (--version V: only that version); prints "deleted KEY"
 *   watch KEY               until SIGINT or SIGTERM, a line per change:
 *                             ready|created|changed KEY version=V monotonic_ns=NS data=DATA
 *                             ready|deleted KEY none monotonic_ns=NS
 *
 * A refused compare-and-set and a missing value exit with 1 and say so on stderr.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

typedef enum vcmd { V_GET, V_SET, V_DEL, V_WATCH } vcmd;

typedef struct vstate {
    vcmd cmd;
    const char *key;
    int64_t version;
    int json;
    reign_value_watch *w;
} vstate;

static void usage(FILE *f)
{
    fprintf(f, "Usage: reign [GLOBAL OPTIONS] value get KEY [--json]\n"
               "       reign [GLOBAL OPTIONS] value set KEY VALUE [--version V]\n"
               "       reign [GLOBAL OPTIONS] value set KEY --data-file FILE [--version V]\n"
               "       reign [GLOBAL OPTIONS] value del KEY [--version V]\n"
               "       reign [GLOBAL OPTIONS] value watch KEY [--json]\n"
               "\n"
               "Read, write, delete or follow the value of KEY (segments of A-Z a-z 0-9 . _ : -\n"
               "separated by '/', e.g. tera/root_table).  'get' prints the payload; 'watch'\n"
               "prints a line per change until SIGINT or SIGTERM:\n"
               "  ready|created|changed KEY version=V monotonic_ns=NS data=DATA\n"
               "  ready|deleted KEY none monotonic_ns=NS\n"
               "(data_base64=B64 for a payload that is not printable UTF-8 or holds a line\n"
               "break before its end; line ends at its end are left out).\n"
               "\n"
               "Options:\n"
               "      --version V         set/del: only if the value is at version V (from\n"
               "                          'get --json'); set: 'absent' = only if there is none\n"
               "      --data-file FILE    set: read the payload from FILE ('-': stdin)\n"
               "      --json              get: {\"key\",\"data\",\"version\",\"created_ms\","
               "\"modified_ms\"};\n"
               "                          watch: {\"event\",\"key\",\"value\",\"monotonic_ns\"} "
               "per line\n"
               "  -h, --help              show this help\n");
}

static int print_value(cli *c, const vstate *s, const reign_value *v)
{
    if (s->json)
        return cli_json_print(c, fmt_json_value(v));
    if (v->data_len && fwrite(v->data, 1, v->data_len, stdout) != v->data_len) {
        cli_error(c, "cannot write the value to stdout");
        return CLI_EXIT_FAIL;
    }
    cli_print("%s", "");
    return CLI_EXIT_OK;
}

static void on_done(reign_client *client, int err, const reign_value *v, void *ud)
{
    cli *c = ud;
    vstate *s = c->cmd_data;
    (void)client;
    if (err < 0) {
        cli_exit(c, fmt_value_failed(c, err, s->key, s->version));
        return;
    }
    if (s->cmd == V_GET) {
        cli_exit(c, print_value(c, s, v));
    } else if (s->cmd == V_SET) {
        cli_print("set %s version=%lld", s->key, (long long)v->version);
        cli_exit(c, CLI_EXIT_OK);
    } else {
        cli_print("deleted %s", s->key);
        cli_exit(c, CLI_EXIT_OK);
    }
}

static void on_watch(reign_value_watch *w, const reign_value_event *ev, void *ud)
{
    cli *c = ud;
    vstate *s = c->cmd_data;
    const char *name = reign_value_event_name(ev->type);
    if (ev->type == REIGN_VALUE_ERROR) {
        cli_log(c, REIGN_LOG_WARN, "%s", ev->message ? ev->message : reign_strerror(ev->error));
        return;
    }
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        if (o) {
            cJSON_AddStringToObject(o, "event", name);
            cJSON_AddStringToObject(o, "key", s->key);
            cJSON_AddItemToObject(o, "value",
                                  ev->value ? fmt_json_value(ev->value) : cJSON_CreateNull());
            cli_json_add_i64(o, "monotonic_ns", ev->at_ns);
        }
        if (cli_json_print(c, o))
            cli_exit(c, CLI_EXIT_FAIL);
    } else if (ev->value) {
        char *d = fmt_data(ev->value->data, ev->value->data_len);
        cli_print("%s %s version=%lld monotonic_ns=%lld %s", name, s->key,
                  (long long)ev->value->version, (long long)ev->at_ns, d ? d : "");
        free(d);
    } else {
        cli_print("%s %s none monotonic_ns=%lld", name, s->key, (long long)ev->at_ns);
    }
}

static void on_signal(cli *c, int signum)
{
    vstate *s = c->cmd_data;
    (void)signum;
    if (s->cmd == V_WATCH) {
        cli_exit(c, CLI_EXIT_OK);
    } else {
        cli_error(c, "interrupted");
        cli_exit(c, CLI_EXIT_FAIL);
    }
}

static int parse_version(cli *c, const char *val, int64_t *out)
{
    if (strcmp(val, "absent") == 0) {
        *out = REIGN_VALUE_ABSENT;
        return 0;
    }
    long v;
    if (cli_parse_int(c, "--version", val, 0, 2147483647L, &v))
        return CLI_EXIT_USAGE;
    *out = v;
    return 0;
}

/* The subcommand, KEY and (set) VALUE from the positional arguments. */
static int positionals(cli *c, vstate *s, int argc, char **argv, int have_data_file,
                       const char **value)
{
    static const char *const names[] = {"get", "set", "del", "watch"};
    char q[256];
    int n = argc - optind;
    if (n < 1)
        return cli_usage_error(c, "missing get, set, del or watch");
    const char *sub = argv[optind];
    size_t i = 0;
    while (i < 4 && strcmp(sub, names[i]) != 0)
        i++;
    if (i == 4)
        return cli_usage_error(c, "unknown value command '%s' (expected get, set, del or watch)",
                               cli_quote(sub, q, sizeof(q)));
    s->cmd = (vcmd)i;
    if (n < 2)
        return cli_usage_error(c, "missing KEY");
    s->key = argv[optind + 1];
    int want = s->cmd == V_SET && !have_data_file ? 3 : 2;
    if (n < want)
        return cli_usage_error(c, "missing VALUE (or --data-file FILE)");
    if (n > want)
        return cli_usage_error(c, "unexpected argument '%s'",
                               cli_quote(argv[optind + want], q, sizeof(q)));
    if (want == 3)
        *value = argv[optind + 2];
    if (s->version != REIGN_VALUE_ANY && s->cmd != V_SET && s->cmd != V_DEL)
        return cli_usage_error(c, "--version goes with set or del");
    if (s->version == REIGN_VALUE_ABSENT && s->cmd == V_DEL)
        return cli_usage_error(c, "--version absent goes with set");
    if (have_data_file && s->cmd != V_SET)
        return cli_usage_error(c, "--data-file goes with set");
    return 0;
}

/* Sends the request (or starts the watch); 0 or the exit code after a refusal. */
static int start(cli *c, vstate *s, const cli_data *data)
{
    int err;
    switch (s->cmd) {
    case V_GET:
        err = reign_value_get(c->client, s->key, on_done, c);
        break;
    case V_SET:
        err = reign_value_set(c->client, s->key, data->data, data->len, s->version, on_done, c);
        break;
    case V_DEL:
        err = reign_value_delete(c->client, s->key, s->version, on_done, c);
        break;
    default:
        err = reign_value_watch_start(&s->w, c->client, s->key, on_watch, c);
        break;
    }
    return err < 0 ? fmt_value_failed(c, err, s->key, s->version) : 0;
}

int cli_value_main(cli *c, int argc, char **argv)
{
    enum { OPT_JSON = 256, OPT_VERSION, OPT_DATA_FILE };
    static const struct option opts[] = {
        {"version", required_argument, NULL, OPT_VERSION},
        {"data-file", required_argument, NULL, OPT_DATA_FILE},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* static: callbacks may still see it during cleanup, after we return */
    static vstate s;
    s.version = REIGN_VALUE_ANY;
    cli_data data = {0};
    int have_file = 0, o, rc;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case OPT_VERSION:
            if ((rc = parse_version(c, optarg, &s.version)))
                goto out;
            break;
        case OPT_DATA_FILE:
            if ((rc = cli_data_read(c, &data, optarg)))
                goto out;
            have_file = 1;
            break;
        case OPT_JSON:
            s.json = 1;
            break;
        case 'h':
            usage(stdout);
            rc = CLI_EXIT_OK;
            goto out;
        default:
            rc = cli_bad_option(c, o, argv);
            goto out;
        }
    }
    const char *value = NULL;
    if ((rc = positionals(c, &s, argc, argv, have_file, &value)))
        goto out;
    if (value)
        cli_data_set(&data, value);
    if (s.json && s.cmd != V_GET && s.cmd != V_WATCH) {
        rc = cli_usage_error(c, "--json goes with get or watch");
        goto out;
    }
    c->cmd_data = &s;
    /* A bad key is reported at once, whether or not the store answers. */
    int err = reign_value_key_check(s.key);
    if (err < 0) {
        rc = fmt_value_failed(c, err, s.key, s.version);
        goto out;
    }
    if ((rc = cli_client_new(c)) || (rc = cli_connect(c)) || (rc = start(c, &s, &data)))
        goto out;
    c->on_signal = on_signal;
    cli_update(c);
    rc = cli_run(c);
out:
    s.w = reign_value_watch_free(s.w);
    cli_data_free(&data);
    return rc;
}
