/*
 * reign/adapters/libuv.h - runs a reign_client inside a libuv loop.
 *
 * Header-only: include it in a program that links libuv.  The adapter polls
 * the client's descriptor and keeps a timer at the client's next deadline,
 * so every callback of the client runs on the libuv loop thread.
 *
 *     reign_uv *a;
 *     reign_uv_attach(&a, loop, client);
 *     ...
 *     reign_uv_detach(a);          // before reign_client_free()
 *
 * Call reign_uv_update() after calling into libreign from outside a client
 * callback (such a call may move the next deadline); after each
 * reign_client_process() the adapter does it itself.
 */
#ifndef REIGN_ADAPTERS_LIBUV_H
#define REIGN_ADAPTERS_LIBUV_H

#include <stdlib.h>
#include <uv.h>

#include <reign/client.h>

typedef struct reign_uv {
    uv_poll_t poll;
    uv_timer_t timer;
    reign_client *client;
    int closing;
    int pending_closes;
} reign_uv;

static inline void reign_uv_update(reign_uv *a);

static inline void reign_uv__process(reign_uv *a)
{
    reign_client_process(a->client);
    reign_uv_update(a);
}

static inline void reign_uv__on_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    reign_uv__process((reign_uv *)h->data);
}

static inline void reign_uv__on_timer(uv_timer_t *h)
{
    reign_uv__process((reign_uv *)h->data);
}

/* Re-arms the timer at the client's next deadline. */
static inline void reign_uv_update(reign_uv *a)
{
    if (a->closing)
        return;
    int64_t ms = reign_client_get_timeout_ms(a->client);
    if (ms < 0)
        uv_timer_stop(&a->timer);
    else
        uv_timer_start(&a->timer, reign_uv__on_timer, (uint64_t)ms, 0);
}

/* Attaches `client` to `loop`.  Returns 0 or a negative libuv error. */
static inline int reign_uv_attach(reign_uv **ret, uv_loop_t *loop, reign_client *client)
{
    reign_uv *a = (reign_uv *)calloc(1, sizeof(*a));
    if (!a)
        return UV_ENOMEM;
    a->client = client;
    int r = uv_poll_init(loop, &a->poll, reign_client_get_fd(client));
    if (r < 0) {
        free(a);
        return r;
    }
    uv_timer_init(loop, &a->timer);
    a->poll.data = a;
    a->timer.data = a;
    uv_poll_start(&a->poll, UV_READABLE, reign_uv__on_poll);
    reign_uv_update(a);
    *ret = a;
    return 0;
}

static inline void reign_uv__on_close(uv_handle_t *h)
{
    reign_uv *a = (reign_uv *)h->data;
    if (--a->pending_closes == 0)
        free(a);
}

/* Stops watching the client; the adapter is freed once libuv closed its handles. */
static inline void reign_uv_detach(reign_uv *a)
{
    if (!a || a->closing)
        return;
    a->closing = 1;
    a->pending_closes = 2;
    uv_close((uv_handle_t *)&a->poll, reign_uv__on_close);
    uv_close((uv_handle_t *)&a->timer, reign_uv__on_close);
}

#endif
