/*
 * slot_late.c - what a copy that comes late for a slot costs, once connected: the time from
 * reign_slot_start() to its DONE (the slot had succeeded), N times on one client.
 *
 *   slot-late URI NAME KEY N [--every DURATION]
 *
 * The client connects first (not timed).  Each round starts the slot and runs the client until
 * DONE, then frees it; the outcome must be "already_done" (the harness, bench/slots.py, has
 * run the slot before).  Stdout gets one JSON line:
 *
 *   {"rounds": N, "ms": [...], "outcome": "already_done"}
 *
 * The server's request counters are read by the harness around the whole run, so that the
 * requests of one round are (delta - connect and close) / N.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <reign/reign.h>

typedef struct round {
    int done;
    reign_slot_outcome outcome;
    int error;
} round;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void on_slot(reign_slot *s, const reign_slot_event *ev, void *userdata)
{
    round *r = userdata;
    (void)s;
    if (ev->type == REIGN_SLOT_DONE) {
        r->done = 1;
        r->outcome = ev->outcome;
    } else if (ev->type == REIGN_SLOT_ERROR) {
        r->done = 1;
        r->error = ev->error;
        fprintf(stderr, "slot-late: %s\n", ev->message ? ev->message : "error");
    }
}

/* Runs the client until the round is done (poll on its descriptor). */
static void run_until(reign_client *c, const round *r)
{
    while (!r->done) {
        int64_t t = reign_client_get_timeout_ms(c);
        struct pollfd p = {.fd = reign_client_get_fd(c), .events = POLLIN};
        poll(&p, 1, t < 0 || t > 1000 ? 1000 : (int)t);
        reign_client_process(c);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5 && !(argc == 7 && !strcmp(argv[5], "--every"))) {
        fprintf(stderr, "usage: slot-late URI NAME KEY N [--every DURATION]\n");
        return 2;
    }
    const char *uri = argv[1], *name = argv[2], *key = argv[3];
    long n = strtol(argv[4], NULL, 10);
    int64_t every = 0;
    if (argc == 7 && reign_slot_duration_parse(argv[6], &every) < 0) {
        fprintf(stderr, "slot-late: bad duration\n");
        return 2;
    }
    char err[256];
    reign_client *c;
    if (reign_client_new(&c, uri, NULL, err, sizeof err) < 0 || reign_client_wait_connected(c)) {
        fprintf(stderr, "slot-late: cannot connect: %s\n", err);
        return 1;
    }
    double *ms = calloc((size_t)n, sizeof *ms);
    const char *outcome = "?";
    for (long i = 0; i < n; i++) {
        round r = {0};
        reign_slot_options o = {.size = sizeof o, .cb = on_slot, .userdata = &r};
        if (every)
            o.every_ms = every;
        else
            o.key = key;
        reign_slot *s;
        int64_t t0 = now_ns();
        int rc = reign_slot_start(&s, c, name, &o);
        if (rc < 0) {
            fprintf(stderr, "slot-late: %s\n", reign_strerror(rc));
            return 1;
        }
        run_until(c, &r);
        ms[i] = (double)(now_ns() - t0) / 1e6;
        reign_slot_free(s);
        if (r.error)
            return 1;
        outcome = reign_slot_outcome_name(r.outcome);
    }
    printf("{\"rounds\": %ld, \"outcome\": \"%s\", \"ms\": [", n, outcome);
    for (long i = 0; i < n; i++)
        printf("%s%.3f", i ? ", " : "", ms[i]);
    printf("]}\n");
    fflush(stdout);
    free(ms);
    reign_client_free(c);
    return 0;
}
