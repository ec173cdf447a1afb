/*
 * cli.h - what the subcommands of the `reign` tool share.
 *
 * main.c parses the global options into a `cli` and hands it to one subcommand, each in a
 * file of its name (all are declared at the end).  What they share is split by what it
 * is: args.c parses arguments and option values, output.c writes messages, log lines and
 * formatted payloads, times and JSON, client.c sets up the client, the loop and its signal
 * handlers, and resigns before exit.  fmt.h, runs.h, child.h and leash.h are for the few
 * subcommands that need them.
 *
 * Exit codes: 0 success, 1 failure, 2 usage error (run passes its child's on).
 */
#ifndef REIGN_CLI_H
#define REIGN_CLI_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <uv.h>

#include <reign/adapters/libuv.h>
#include <reign/reign.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 2

/* How long `campaign` and `run` wait for their node to be deleted on exit. */
#define CLI_LEAVE_WAIT_MS 5000
/*
 * And how long they keep the session after that, before closing it and
 * exiting: the successor claims within a few round trips of our delete,
 * and our session's close (a write the server orders before that claim)
 * and the process's exit would otherwise compete with it for the server
 * and the CPU (docs/benchmarks.md, "Graceful handoff: where the time goes").
 */
#define CLI_LINGER_MS 10

typedef struct cli cli;

/* A subcommand's entry point: argv[0] is the subcommand's name. */
typedef int cli_main_fn(cli *c, int argc, char **argv);

/* The candidate's payload, from --data or --data-file. */
typedef struct cli_data {
    char *buf; /* owned (--data-file) or NULL */
    const void *data;
    size_t len;
} cli_data;

struct cli {
    /* global options */
    const char *uri;
    char default_uri[3 * 4096 + 32]; /* the embedded SQLite store, when no URI is given */
    int session_timeout_ms;          /* 0: from the URI, else the library's default */
    reign_log_level log_level;

    const char *cmd; /* the running subcommand, for messages */

    uv_loop_t loop;
    int loop_ready;
    reign_client *client;
    reign_uv *adapter;
    reign_election *election; /* the subcommand's, if it joined one */
    /* The subcommand holds what a dead process must give up at once (a candidacy, a member, a
     * worker): its client runs a guardian, unless the URI or REIGN_GUARDIAN=off says no. */
    int guarded;
    /* `reign run` and `reign tasks worker`: the leash of their commands (leash.h), told of
     * every group child.c starts, as the guardian is. */
    struct cli_leash *leash;

    uv_signal_t sig_int;
    uv_signal_t sig_term;
    int signals_ready;
    /* Called on SIGINT/SIGTERM; NULL: exit 0 at once. */
    void (*on_signal)(cli *c, int signum);
    /* Called after every connection state change (already logged).  With
     * it, CLOSED does not end the program by itself: the hook must. */
    void (*on_state)(cli *c, reign_conn_state state);
    void *cmd_data;

    /* cli_follow_existing */
    const char *follow_name;
    reign_election_cb *follow_cb;
    int (*follow_check)(cli *c, const reign_election_view *view);

    /* resign-then-exit (cli_leave) */
    uv_timer_t leave_timer;
    int leave_timer_ready;
    int leaving;
    int leave_code;

    int connected; /* the client reached CONNECTED once */
    int done;
    int exit_code;
};

/* ---- messages (output.c) -------------------------------------------- */

/* The start of a line: "reign: COMMAND: " and "LEVEL: " if level is not NULL. */
void cli_prefix(const cli *c, const char *level, char *out, size_t outlen);

/* An id for a one-line message: "-" when empty. */
const char *cli_line_id(const char *id);

/* "reign: CMD: message" on stderr, whatever the log level. */
void cli_error(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints a usage error and a hint to --help; returns CLI_EXIT_USAGE. */
int cli_usage_error(cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Logs one line on stderr if `level` is within --log-level. */
void cli_log(cli *c, reign_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Makes `s` fit for quoting in a one-line message: control characters,
 * quotes and backslashes escaped, truncated to about outlen.  Returns out.
 */
const char *cli_quote(const char *s, char *out, size_t outlen);

/* Prints one line on stdout and flushes it at once. */
void cli_print(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- arguments (args.c; each prints its own usage error) ----------- */

/*
 * Reports an option error of getopt_long (called with opterr = 0) for
 * the option at argv[optind - 1]; returns CLI_EXIT_USAGE.
 */
int cli_bad_option(cli *c, int ret, char **argv);

/*
 * The options of a command that takes --json and --help only: sets *json;
 * after --help (printed by `usage`) or a bad option returns true with the
 * exit status in *status, else false (go on, arguments from optind).
 */
bool cli_json_options(cli *c, int argc, char **argv, void (*usage)(FILE *), int *json, int *status);

/* A decimal integer in [min, max] for option `opt`; 0 or CLI_EXIT_USAGE. */
int cli_parse_int(cli *c, const char *opt, const char *val, long min, long max, long *out);

/* A number of seconds (fraction allowed) in [0, max_s], as ns; 0 or CLI_EXIT_USAGE. */
int cli_parse_seconds(cli *c, const char *opt, const char *val, double max_s, int64_t *out_ns);

/* --strategy queue|lock; 0 or CLI_EXIT_USAGE. */
int cli_parse_strategy(cli *c, const char *val, reign_strategy *out);

/* --priority N, --no-preempt, --preempt-delay MS: shared by campaign and run. */
enum { CLI_OPT_PRIORITY = 300, CLI_OPT_NO_PREEMPT, CLI_OPT_PREEMPT_DELAY };
/* clang-format off */
#define CLI_RANK_OPTIONS                                                                           \
    {"priority", required_argument, NULL, CLI_OPT_PRIORITY},                                       \
    {"no-preempt", no_argument, NULL, CLI_OPT_NO_PREEMPT},                                         \
    {"preempt-delay", required_argument, NULL, CLI_OPT_PREEMPT_DELAY}
/* clang-format on */
#define CLI_RANK_HELP                                                                              \
    "      --priority N        0 to 255 (default 0): the highest live candidate leads\n"           \
    "      --no-preempt        never take over from a live leader of lower priority\n"             \
    "      --preempt-delay MS  take over from one only after MS milliseconds\n"
/* Handles option `o` if it is one of those: 0 (done), CLI_EXIT_USAGE, or -1 (not one). */
int cli_rank_option(cli *c, int o, const char *val, reign_election_options *eo);

/*
 * After getopt: argv[optind] must be the election NAME and nothing may follow
 * it before argv[end] (argc, or the index of "--").  Returns 0 and sets
 * *name, or a usage error (CLI_EXIT_USAGE); `after` ends the "unexpected
 * argument" message (e.g. " (the command goes after '--')"), or "".
 */
int cli_election_name(cli *c, char **argv, int end, const char *after, const char **name);

/*
 * After getopt: argv[optind] is the one positional argument `what` names ("GROUP"), and
 * nothing follows it.  0 and *out, or CLI_EXIT_USAGE after a usage error.
 */
int cli_one_arg(cli *c, char **argv, int argc, const char *what, const char **out);

/* --data TEXT; never fails. */
void cli_data_set(cli_data *d, const char *text);

/* --data-file FILE ("-" = stdin): reads at most REIGN_DATA_MAX + 1 bytes, so
 * the library can refuse a payload that is too large.  0 or CLI_EXIT_FAIL. */
int cli_data_read(cli *c, cli_data *d, const char *path);

void cli_data_free(cli_data *d);

/* ---- the client and the loop (client.c) ----------------------------- */

/*
 * Creates the client, which starts connecting (without waiting); from here
 * an early signal says "interrupted while connecting to 'URI'" (see
 * cli_catch_signals()).  0, CLI_EXIT_FAIL or CLI_EXIT_USAGE.
 */
int cli_client_new(cli *c);

/*
 * Joins `name` with `opts` (cb and userdata set by the caller) into
 * c->election; on failure prints why, naming the bad value.  0 or
 * CLI_EXIT_FAIL.
 */
int cli_join(cli *c, const char *name, reign_election_options *opts);

/*
 * Waits for the first session (bounded by the client's connect timeout),
 * then plugs the client into the loop and installs the signal handlers.
 * A signal during the wait ends the command at once ("interrupted while
 * connecting to 'URI'", exit status 1).  0 or CLI_EXIT_FAIL.
 */
int cli_connect(cli *c);

/*
 * Until the loop takes the signals over: SIGINT and SIGTERM end the command
 * at once, from the handler, with "reign: COMMAND: interrupted DOING" (DOING
 * may be NULL) and exit status 1; set even if they were inherited ignored.
 * Called only while the process has one thread (before the client exists).
 */
void cli_catch_signals(cli *c, const char *doing);

/* An on_signal for commands that only read: "interrupted", exit 1. */
void cli_interrupted(cli *c, int signum);

/* An on_signal for commands that stand: cli_leave(c, CLI_EXIT_OK); a second signal exits at
 * once. */
void cli_leave_on_signal(cli *c, int signum);

/* An election's ERROR event on stderr: its message, which names the election, else its code. */
void cli_election_error(cli *c, reign_election *e, const reign_election_event *ev);

/* LEFT (cli_left) and ERROR (cli_election_error, then exit 1); other events are left alone. */
void cli_election_end(cli *c, reign_election *e, const reign_election_event *ev);

/* "election 'NAME': WHAT" on stderr, then cli_exit(c, CLI_EXIT_FAIL). */
void cli_election_fail(cli *c, const char *name, const char *what);

/*
 * For commands that act on an election that must exist (cede, designate):
 * makes the client, connects, reads the election - one that does not exist
 * is reported and left alone, since joining even as an observer would
 * create it - and then follows it as an observer, with `cb` getting its
 * events (userdata: c).  `check` (may be NULL) sees the snapshot first; a
 * nonzero return means it reported the problem and called cli_exit().
 * SIGINT/SIGTERM end the command with exit 1.  0, or an exit code to return
 * at once; failures after that end the loop with exit 1.
 */
int cli_follow_existing(cli *c, const char *name, reign_election_cb *cb,
                        int (*check)(cli *c, const reign_election_view *view));

/* Runs the loop until cli_exit(); returns the exit code. */
int cli_run(cli *c);

/* Stops the loop; the program exits with `code`.  The first call wins. */
void cli_exit(cli *c, int code);

/* After calling into libreign outside a client callback. */
void cli_update(cli *c);

/*
 * Resigns c->election and exits with `code` CLI_LINGER_MS after LEFT has
 * arrived (the subcommand's callback passes LEFT to cli_left), or after
 * CLI_LEAVE_WAIT_MS, whichever comes first.
 */
void cli_leave(cli *c, int code);
void cli_left(cli *c, const reign_election_event *ev);

/* Frees everything; safe on a partly set up cli. */
void cli_cleanup(cli *c);

/* ---- formatting (output.c) ------------------------------------------ */

/* 1 if data is valid UTF-8 without control characters but tabs, line feeds and carriage
 * returns (may be empty): what JSON shows as a string. */
int cli_data_is_text(const void *data, size_t len);

/* How much of data a one-line form shows as text: all but its trailing line feeds and
 * carriage returns, if that is valid UTF-8 without control characters but tabs; else -1
 * (show it in base64: a line cannot hold a line break). */
long cli_data_line_len(const void *data, size_t len);

/* Base64 (RFC 4648, padded) of data; malloc'd, NULL on out of memory. */
char *cli_base64(const void *data, size_t len);

/* Unix ms as "2024-05-01T12:00:00.123Z" into buf (at least 32 bytes). */
const char *cli_iso8601(int64_t unix_ms, char *buf, size_t len);

/* Adds an exact integer (cJSON numbers are doubles, tokens may not fit). */
void cli_json_add_u64(cJSON *obj, const char *key, uint64_t v);
void cli_json_add_i64(cJSON *obj, const char *key, int64_t v);

/* Adds a time in Unix ms, or null where the store does not know it (0: a SQL lease row
 * does not say since when its holder leads, nor does it keep when a bare campaign joined). */
void cli_json_add_ms(cJSON *obj, const char *key, int64_t unix_ms);

/* Adds "data" (text) or "data_base64" (anything else). */
void cli_json_add_data(cJSON *obj, const void *data, size_t len);

/* {"id","data"|"data_base64","term","token","since_ms"|null} */
cJSON *cli_json_leader(const reign_leader *l);

/* Prints a JSON value on one line of stdout and frees it; 0 or CLI_EXIT_FAIL. */
int cli_json_print(cli *c, cJSON *v);

/* ---- subcommands ----------------------------------------------------- */

/* Each in the file of its name; main.c's table lists them with a summary for --help. */
cli_main_fn cli_campaign_main;
cli_main_fn cli_run_main;
cli_main_fn cli_runs_main;
cli_main_fn cli_status_main;
cli_main_fn cli_history_main;
cli_main_fn cli_watch_main;
cli_main_fn cli_cede_main;
cli_main_fn cli_ls_main;
cli_main_fn cli_rm_main;
cli_main_fn cli_designate_main;
cli_main_fn cli_register_main;
cli_main_fn cli_members_main;
cli_main_fn cli_value_main;
cli_main_fn cli_tasks_main;
cli_main_fn cli_ctl_main;
cli_main_fn cli_check_main;

#endif
