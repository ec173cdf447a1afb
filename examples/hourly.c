/*
 * hourly.c - a C service that runs a piece of periodic work once per hour across all its
 * copies, with <reign/slot.h>: the work is done in-process, by whichever copy gets to it, and
 * is stopped should that copy lose its leadership meanwhile.
 *
 *   hourly URI [NAME]
 *
 * Every copy starts a slot for the current hour of the store's clock.  The copy told to START
 * does the work (here: counts to a million in steps, one step per loop turn, so that a STOP is
 * heard between steps) and reports how it ended; the others learn the outcome (DONE) and,
 * like the runner, exit, each saying in words what became of the slot.  After ten past the
 * hour no copy starts it (the deadline).  A real service would start a new slot at each hour
 * instead.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include <reign/reign.h>

typedef struct job {
    int running;      /* the work is in progress */
    long progress;    /* the work: one step per loop turn */
    int64_t stop_by;  /* CLOCK_MONOTONIC ns: the work must be gone by then */
    int done, status; /* the program's outcome */
} job;

/* What this copy did or learnt, in words (the outcome of a DONE event). */
static const char *outcome_words(reign_slot_outcome o)
{
    switch (o) {
    case REIGN_SLOT_RAN_OK:
        return "done here";
    case REIGN_SLOT_RAN_FAILED:
        return "ran here and failed";
    case REIGN_SLOT_UNRECORDED:
        return "ran here, but a later leader had declared the attempt lost: it may run again";
    case REIGN_SLOT_ALREADY_DONE:
        return "already done";
    case REIGN_SLOT_GAVE_UP:
        return "given up: no attempts left";
    case REIGN_SLOT_WAS_ABANDONED:
        return "abandoned: it started once and did not succeed";
    case REIGN_SLOT_LATE:
        return "not started: it is more than ten minutes past the hour";
    case REIGN_SLOT_SKIPPED:
        return "skipped: another copy is running it";
    }
    return reign_slot_outcome_name(o);
}

/* The slot's state after its latest attempt, in words (the verdict). */
static const char *verdict_words(reign_slot_verdict v)
{
    switch (v) {
    case REIGN_SLOT_OPEN:
        return "nobody has run it";
    case REIGN_SLOT_BUSY:
        return "an attempt is running";
    case REIGN_SLOT_SUCCEEDED:
        return "it succeeded";
    case REIGN_SLOT_RETRY:
        return "its last attempt failed; another may run";
    case REIGN_SLOT_FAILED:
        return "it failed for good";
    case REIGN_SLOT_ABANDONED:
        return "it started once and is not known to have succeeded";
    }
    return reign_slot_verdict_name(v);
}

static void on_slot(reign_slot *s, const reign_slot_event *ev, void *userdata)
{
    job *j = userdata;
    switch (ev->type) {
    case REIGN_SLOT_START:
        /* The token goes with whatever the work writes elsewhere: a store that remembers the
         * highest one it saw refuses a copy whose leadership has ended. */
        printf("slot %s: attempt %u, fencing token %llu: working\n", ev->key, ev->attempt,
               (unsigned long long)ev->token);
        j->running = 1;
        j->progress = 0;
        j->stop_by = ev->valid_until_ns;
        break;
    case REIGN_SLOT_STOP:
        /* The leadership ended: stop now (or before stop_by); the attempt will be recorded
         * as stopped and another copy may retry it. */
        printf("slot %s: the leadership ended; stopping\n", ev->key);
        j->running = 0;
        reign_slot_finish_stopped(s, 0, 15);
        break;
    case REIGN_SLOT_DONE:
        /* e.g. "slot 2026-11-29T06: not started: it is more than ten minutes past the hour
         * (nobody has run it)", or "slot ...: done here (it succeeded): attempt 1 by ..." */
        printf("slot %s: %s (%s)", ev->key, outcome_words(ev->outcome), verdict_words(ev->verdict));
        if (ev->run)
            printf(": attempt %u by %s on %s", ev->run->attempt, ev->run->owner, ev->run->host);
        printf("\n");
        j->done = 1;
        j->status = ev->outcome == REIGN_SLOT_RAN_OK || ev->outcome == REIGN_SLOT_ALREADY_DONE ||
                            ev->outcome == REIGN_SLOT_LATE || ev->outcome == REIGN_SLOT_SKIPPED
                        ? 0
                        : 1;
        break;
    case REIGN_SLOT_ERROR:
        fprintf(stderr, "hourly: %s\n", ev->message ? ev->message : reign_strerror(ev->error));
        j->running = 0;
        j->done = 1;
        j->status = 1;
        break;
    default:
        break;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: hourly URI [NAME]\n");
        return 2;
    }
    char err[256];
    reign_client *client;
    if (reign_client_new(&client, argv[1], NULL, err, sizeof err) < 0) {
        fprintf(stderr, "hourly: %s\n", err);
        return 1;
    }
    if (reign_client_wait_connected(client) < 0) {
        fprintf(stderr, "hourly: %s\n", reign_client_errmsg(client));
        reign_client_free(client);
        return 1;
    }
    job j = {0};
    reign_slot_options o = {.size = sizeof o,
                            .every_ms = 3600 * 1000,   /* the slot: this hour, by the store */
                            .deadline_ms = 600 * 1000, /* not started after ten past */
                            .retries = 2,
                            .cb = on_slot,
                            .userdata = &j};
    reign_slot *slot;
    int rc = reign_slot_start(&slot, client, argc > 2 ? argv[2] : "hourly", &o);
    if (rc < 0) {
        fprintf(stderr, "hourly: %s\n", reign_strerror(rc));
        reign_client_free(client);
        return 1;
    }
    while (!j.done) {
        int64_t t = reign_client_get_timeout_ms(client);
        struct pollfd p = {.fd = reign_client_get_fd(client), .events = POLLIN};
        /* While working, turn the loop without sleeping: the work is done a step per turn. */
        poll(&p, 1, j.running ? 0 : t < 0 || t > 1000 ? 1000 : (int)t);
        reign_client_process(client);
        if (j.running && ++j.progress == 1000000) {
            j.running = 0;
            reign_slot_finish(slot, 0, 0); /* done: recorded as exited 0 */
        }
    }
    reign_slot_free(slot);
    reign_client_free(client);
    return j.status;
}
