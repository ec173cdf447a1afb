/*
 * check.h - what the files of `reign check` share: the messages a candidate process sends its
 * parent (check_candidate.c), the TCP proxy that cuts one candidate off (check_proxy.c), and
 * the parent's record of candidates, leaderships and phases (check.c, check_report.c).
 *
 * The parent re-executes its own binary as `reign check --candidate` (a hidden option), once
 * per candidate, with a pipe on the candidate's stdin that carries its configuration (the URI
 * travels there, never in argv or the environment) and whose end of file tells it to resign
 * and exit, and a pipe on its fd 3 that carries its reports.  Parent and candidates run on one
 * host, so the candidates' CLOCK_MONOTONIC times are comparable with each other and with the
 * parent's.
 */
#ifndef REIGN_CLI_CHECK_H
#define REIGN_CLI_CHECK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli.h"

/* The candidate's report pipe. */
#define CHK_REPORT_FD 3

/* ---- parent -> candidate: the configuration, once, on its stdin ---- */

#define CHK_CONFIG_MAGIC 0x72636b31u /* "rck1" */

typedef struct chk_config {
    uint32_t magic;
    uint32_t index; /* 1, 2, ...: the candidate is "c<index>" */
    int32_t session_timeout_ms;
    int32_t parent_pid;
    uint32_t uri_len; /* then the URI, then the election's name, no NULs */
    uint32_t name_len;
} chk_config;

/* ---- candidate -> parent: fixed-size reports on fd 3 ---------------- */

typedef enum chk_msg_type {
    CHK_MSG_READY = 1, /* standing: the election's first view is loaded */
    CHK_MSG_ELECTED,   /* at_ns, term, token, valid_until_ns */
    CHK_MSG_DEMOTED,   /* at_ns, reason */
    CHK_MSG_VALID      /* at_ns: the candidate's now, leading; valid_until_ns */
} chk_msg_type;

typedef struct chk_msg {
    uint32_t type;
    int32_t reason; /* DEMOTED: reign_demote_reason */
    int64_t at_ns;  /* CLOCK_MONOTONIC, the candidate's own */
    int64_t valid_until_ns;
    uint64_t term;
    uint64_t token;
    int32_t guardian_pid; /* READY: the candidate's guardian, 0 if none yet */
    int32_t pad;
} chk_msg;

/* The hidden candidate mode (check_candidate.c). */
int chk_candidate_main(cli *c);

/* ---- the proxy (check_proxy.c) ------------------------------------------ */

typedef struct chk_proxy chk_proxy;

/*
 * Whether the URI can be proxied: 0 and nothing in `why`, or -1 and the reason in `why` (a
 * SQLite file, no TCP host, TLS that checks the server's name).
 */
int chk_proxy_fit(const char *uri, char *why, size_t whylen);

/*
 * Starts a proxy on 127.0.0.1 for each host of `uri`, on `loop`, and writes into `out` the URI
 * with its hosts replaced by the proxy's ports.  0, or -1 with the reason in `why`.
 */
int chk_proxy_start(chk_proxy **ret, uv_loop_t *loop, const char *uri, char *out, size_t outlen,
                    char *why, size_t whylen);

/* Cuts: closes both sides of every connection, and closes at once every new one. */
void chk_proxy_cut(chk_proxy *p);
/* Forwards again. */
void chk_proxy_heal(chk_proxy *p);
/* Closes everything; the memory goes once the loop has run the close callbacks. NULL-safe. */
void chk_proxy_stop(chk_proxy *p);

/* ---- the parent's record -------------------------------------------- */

typedef enum chk_phase_id {
    CHK_HANDOFF = 0,
    CHK_KILL,
    CHK_KILL_NO_GUARDIAN,
    CHK_STOP,
    CHK_CUT,
    CHK_N_PHASES
} chk_phase_id;

typedef enum chk_result {
    CHK_NOT_RUN = 0,
    CHK_OK,
    CHK_FAILED,  /* a check failed: no new leader, no demotion */
    CHK_ERROR,   /* it could not be run to the end (the store, a candidate that died) */
    CHK_SKIPPED, /* does not apply to this store or setting */
} chk_result;

#define CHK_MAX_ROUNDS 100

typedef struct chk_phase {
    const char *name;
    const char *what;
    int rounds; /* asked for */
    int done;   /* rounds completed */
    int64_t takeover_ns[CHK_MAX_ROUNDS];
    chk_result result;
    char reason[320];
} chk_phase;

/* One leadership, as its candidate reported it. */
typedef struct chk_lead {
    int cand; /* index into chk.cands */
    uint64_t term, token;
    int64_t start;      /* ELECTED's at_ns */
    int64_t demoted;    /* DEMOTED's at_ns, 0 until it comes */
    int reason;         /* DEMOTED's */
    int64_t valid;      /* the last valid_until_ns reported */
    int64_t leading_at; /* the latest time at which it said it led */
    int64_t killed;     /* when the check sent its candidate SIGKILL, 0 if it did not */
} chk_lead;

/* The leadership's end: its DEMOTED (never later than its bound: the library reports a
 * demotion noticed late at the bound), else the last valid_until it reported; in both cases
 * no later than its SIGKILL (a dead process leads nothing, and its guardian, which lets the
 * next one be elected before that valid_until, acts only once the process is dead). */
int64_t chk_lead_end(const chk_lead *l);

typedef struct chk_report {
    /* the setup */
    char uri[1024]; /* redacted */
    const char *backend;
    char election[256];
    int candidates;
    int timeout_ms;         /* granted session timeout, or lease */
    int64_t takeover_bound; /* reign_client_takeover_ms(), ms */
    /* the round trip */
    int64_t rtt_ns[64];
    int n_rtt;
    /* the phases and leaderships */
    chk_phase phases[CHK_N_PHASES];
    const chk_lead *leads;
    int n_leads;
    const char *const *cand_ids;
    /* what went wrong: safety violations, then errors */
    char violations[16][320];
    int n_violations;
    char errors[8][320];
    int n_errors;
    bool interrupted;
    char cleanup_note[1024];
} chk_report;

/* Sorts the leaderships by start and checks them (check_report.c): no two overlap, terms and
 * tokens strictly grow.  Adds what it finds to r->violations. */
void chk_verify(chk_report *r, chk_lead *leads, int n);

/* Prints the summary table and advice, or (json) one JSON object; returns the exit status. */
int chk_print(cli *c, chk_report *r, bool json);

/* p in [0, 100] of n samples (sorted in place); 0 if n is 0. */
int64_t chk_percentile(int64_t *v, int n, int p);

#endif
