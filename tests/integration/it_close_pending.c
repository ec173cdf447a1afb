/*
 * it_close_pending.c - freeing a client whose answers and watch events are still queued.
 *
 * The contract (client.h): a client may be freed at any time; what is pending is dropped
 * without callbacks.  The dangerous moment is when the answer to a request that registered a
 * watch *and* the event of that watch both sit, unprocessed, in the hand-off queue: freeing
 * drains the queue, and the watch must be released exactly once, after both.
 *
 * For k = 1..8: a leads an election; b joins and its loop is turned only k times, each
 * followed by a pause in which the answers to what it just sent arrive and queue up (b's
 * setup is a chain: read the election, create its node, list the candidates, watch its
 * predecessor - so some k leaves the answer to "watch the predecessor" unprocessed).  Then a
 * leaves (its node goes: b's watch fires and queues its event), and b's client is freed
 * without its loop having run again.  Nothing may be touched after it was freed: a use after
 * free shows as a crash, or as a report under AddressSanitizer (scripts/test.sh runs both).
 */
#include <string.h>
#include <time.h>

#include "harness.h"

static void pause_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

int main(void)
{
    h_init("it_close_pending");
    const char *uri = h_uri("session_timeout_ms=4000");
    for (int k = 1; k <= 8; k++) {
        char name[128];
        h_unique_name(name, sizeof(name), "close-pending");
        h_cand *a = h_cand_new("a", uri, NULL, name, NULL);
        H_WAIT(h_pred_leader, a, "a to lead");
        h_cand *b = h_cand_new("b", uri, NULL, NULL, NULL);
        /* Join without the harness turning b's loop: only the k turns below do. */
        h_cand_join(b, name, NULL);
        for (int i = 0; i < k; i++) {
            pause_ms(60);
            reign_client_process(b->client);
        }
        pause_ms(60); /* the answers to the last turn's requests queue up */
        h_log("k=%d: a leaves, then b is freed with its queue unprocessed", k);
        h_cand_close(a);
        pause_ms(200); /* b's watch on a's node fires; its event queues up */
        h_cand_close(b);
    }
    return h_finish();
}
