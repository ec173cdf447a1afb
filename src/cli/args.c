/*
 * args.c - the arguments of `reign`'s subcommands (cli.h): getopt's errors, option values
 * (integers, seconds, the strategy, the rank options, --data and --data-file) and the
 * positional NAME.  Each check prints its own one-line usage error, naming the option and
 * quoting the value, and returns CLI_EXIT_USAGE.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "toollog.h"

bool cli_json_options(cli *c, int argc, char **argv, void (*usage)(FILE *), int *json, int *status)
{
    enum { OPT_JSON = 256 };
    static const struct option opts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (o) {
        case OPT_JSON:
            *json = 1;
            break;
        case 'h':
            usage(stdout);
            *status = CLI_EXIT_OK;
            return true;
        default:
            *status = cli_bad_option(c, o, argv);
            return true;
        }
    }
    return false;
}

int cli_bad_option(cli *c, int ret, char **argv)
{
    char q[256];
    const char *arg = optind > 0 ? argv[optind - 1] : NULL;
    char name[128];

    if (arg && strncmp(arg, "--", 2) == 0) {
        size_t n = strcspn(arg, "=");
        if (n >= sizeof(name))
            n = sizeof(name) - 1;
        memcpy(name, arg, n);
        name[n] = '\0';
    } else if (optopt > 0 && optopt < 128) {
        snprintf(name, sizeof(name), "-%c", optopt);
    } else {
        snprintf(name, sizeof(name), "%s", arg ? arg : "?");
    }
    cli_quote(name, q, sizeof(q));

    if (ret == ':')
        return cli_usage_error(c, "option '%s' needs a value", q);
    if (c->cmd && (strcmp(name, "--uri") == 0 || strcmp(name, "--session-timeout") == 0 ||
                   strcmp(name, "--log-level") == 0))
        return cli_usage_error(c, "option '%s' is a global option: give it before '%s'", q, c->cmd);
    /* getopt_long also lands here for an abbreviation that fits two options */
    return cli_usage_error(c, "unknown %soption '%s'", name[1] == '-' ? "or ambiguous " : "", q);
}

/* ---- option values ------------------------------------------------- */

int cli_parse_int(cli *c, const char *opt, const char *val, long min, long max, long *out)
{
    char q[128];
    char *end;
    errno = 0;
    long v = strtol(val, &end, 10);
    if (errno || end == val || *end || v < min || v > max)
        return cli_usage_error(c, "invalid value '%s' for %s (expected an integer from %ld to %ld)",
                               cli_quote(val, q, sizeof(q)), opt, min, max);
    *out = v;
    return 0;
}

int cli_parse_seconds(cli *c, const char *opt, const char *val, double max_s, int64_t *out_ns)
{
    char q[128];
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    /* v == v rejects NaN; the range check rejects infinities. */
    if (errno || end == val || *end || !(v == v) || v < 0 || v > max_s)
        return cli_usage_error(c, "invalid value '%s' for %s (expected seconds from 0 to %.0f)",
                               cli_quote(val, q, sizeof(q)), opt, max_s);
    *out_ns = (int64_t)(v * 1e9);
    return 0;
}

int cli_parse_strategy(cli *c, const char *val, reign_strategy *out)
{
    char q[128];
    int s = reign_strategy_parse(val);
    if (s < 0)
        return cli_usage_error(c, "invalid strategy '%s' (expected 'queue' or 'lock')",
                               cli_quote(val, q, sizeof(q)));
    *out = (reign_strategy)s;
    return 0;
}

int cli_rank_option(cli *c, int o, const char *val, reign_election_options *eo)
{
    long v = 0;
    switch (o) {
    case CLI_OPT_PRIORITY:
        if (cli_parse_int(c, "--priority", val, 0, REIGN_PRIORITY_MAX, &v))
            return CLI_EXIT_USAGE;
        eo->priority = (int)v;
        return 0;
    case CLI_OPT_NO_PREEMPT:
        eo->no_preempt = 1;
        return 0;
    case CLI_OPT_PREEMPT_DELAY:
        if (cli_parse_int(c, "--preempt-delay", val, 0, 86400000L, &v))
            return CLI_EXIT_USAGE;
        eo->preempt_delay_ms = (int)v;
        return 0;
    default:
        return -1;
    }
}

void cli_data_set(cli_data *d, const char *text)
{
    cli_data_free(d);
    d->data = text;
    d->len = strlen(text);
}

int cli_data_read(cli *c, cli_data *d, const char *path)
{
    char q[512];
    int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cli_error(c, "cannot open --data-file '%s': %s", cli_quote(path, q, sizeof(q)),
                  strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* One byte more than allowed, so that the library, not the tool, decides
     * that the payload is too large (and says so in its own words). */
    size_t cap = (size_t)REIGN_DATA_MAX + 1, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        cli_error(c, "out of memory");
        if (fd != STDIN_FILENO)
            close(fd);
        return CLI_EXIT_FAIL;
    }
    while (len < cap) {
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            cli_error(c, "cannot read --data-file '%s': %s", cli_quote(path, q, sizeof(q)),
                      strerror(errno));
            free(buf);
            if (fd != STDIN_FILENO)
                close(fd);
            return CLI_EXIT_FAIL;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (fd != STDIN_FILENO)
        close(fd);
    cli_data_free(d);
    d->buf = buf;
    d->data = buf;
    d->len = len;
    return 0;
}

void cli_data_free(cli_data *d)
{
    free(d->buf);
    d->buf = NULL;
    d->data = NULL;
    d->len = 0;
}

/* ---- positional arguments ------------------------------------------ */

int cli_election_name(cli *c, char **argv, int end, const char *after, const char **name)
{
    if (optind >= end)
        return cli_usage_error(c, "missing election NAME");
    if (optind + 1 < end) {
        char q[256];
        return cli_usage_error(c, "unexpected argument '%s'%s",
                               cli_quote(argv[optind + 1], q, sizeof(q)), after);
    }
    *name = argv[optind];
    return 0;
}

int cli_one_arg(cli *c, char **argv, int argc, const char *what, const char **out)
{
    char q[256];
    if (optind >= argc)
        return cli_usage_error(c, "missing %s", what);
    if (optind + 1 < argc)
        return cli_usage_error(c, "unexpected argument '%s'",
                               cli_quote(argv[optind + 1], q, sizeof(q)));
    *out = argv[optind];
    return 0;
}
