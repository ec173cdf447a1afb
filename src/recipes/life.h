/*
 * life.h - the lifecycle every recipe shares: entering and leaving its callbacks, a free
 * deferred while one of them is on the stack, and an epoch that makes the answers of
 * requests sent before it stale.  Elections (in their reign_election base), groups,
 * values, the task queue and slots keep one `reign__life` each; the client's reign__recipe
 * (client_internal.h) is the other half, how the client reaches a recipe.
 *
 * The rules a recipe follows with it:
 *
 *  - Every entry from outside (a store's answer or watch, a timer, a connection change) is
 *    bracketed by reign__life_enter() and reign__life_leave(); when leave returns true the
 *    application freed the recipe meanwhile and the caller frees it now, last.
 *  - The application is called only while reign__life_live(), inside enter/leave.
 *  - The public free: reign__life_request_free() is true the first time (cancel what is
 *    pending then); free the memory at once unless reign__life_busy().
 *  - A request carries the epoch it was sent in: packed into its callback argument with
 *    REIGN__LIFE_ARG (with `bits` low bits left to the recipe: a watch flag, an index), or
 *    kept in the request's own memory.  reign__life_bump() makes every answer in flight stale
 *    (a new session, a new attempt, a demotion); reign__life_stale() or reign__life_current()
 *    tells an answer to drop.
 *
 * Private to the library; header-only (each helper is a line).
 */
#ifndef REIGN_LIFE_H
#define REIGN_LIFE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct reign__life {
    uintptr_t epoch;     /* bumped to make the answers of requests in flight stale */
    int busy;            /* frames of ours on the stack (callbacks in, or out to the user) */
    bool free_requested; /* freed by the application: no more callbacks, memory goes last */
} reign__life;

/* A callback argument: the epoch shifted left by `bits`, or'ed with `low` (< 1 << bits). */
#define REIGN__LIFE_ARG(l, bits, low)                                                              \
    ((void *)(((uintptr_t)(l)->epoch << (bits)) | (uintptr_t)(low)))

/* The low bits of such an argument. */
static inline uintptr_t reign__life_low(const void *arg, unsigned bits)
{
    return (uintptr_t)arg & (((uintptr_t)1 << bits) - 1);
}

/* Whether the answer of a request sent with `arg` (REIGN__LIFE_ARG with `bits`) is to be
 * dropped: sent in an earlier epoch, or the recipe is being freed. */
static inline bool reign__life_stale(const reign__life *l, const void *arg, unsigned bits)
{
    return ((uintptr_t)arg >> bits) != l->epoch || l->free_requested;
}

/* Whether an epoch kept in a request's own memory is the current one. */
static inline bool reign__life_current(const reign__life *l, uintptr_t epoch)
{
    return epoch == l->epoch;
}

/* Makes every answer in flight stale. */
static inline void reign__life_bump(reign__life *l)
{
    l->epoch++;
}

static inline void reign__life_enter(reign__life *l)
{
    l->busy++;
}

/* true: the last frame is gone and the recipe was freed meanwhile; the caller frees it now. */
static inline bool reign__life_leave(reign__life *l)
{
    return --l->busy == 0 && l->free_requested;
}

/* Whether the application may still be called back. */
static inline bool reign__life_live(const reign__life *l)
{
    return !l->free_requested;
}

/* The public free: true the first time (the recipe cancels its requests then). */
static inline bool reign__life_request_free(reign__life *l)
{
    bool first = !l->free_requested;
    l->free_requested = true;
    return first;
}

/* Whether a frame of ours is on the stack: the memory must stay until it leaves. */
static inline bool reign__life_busy(const reign__life *l)
{
    return l->busy > 0;
}

#endif
