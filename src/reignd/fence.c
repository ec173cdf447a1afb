/*
 * fence.c - runs a service's fence methods in order against an old active
 * (see fence.h).  One method at a time: each completion (a peer answer, a
 * hook result) either ends the fence with a success or starts the next
 * method; the last failure ends it with a failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fence.h"

struct reignd_fence {
    reignd_fence_ctx ctx;
    reignd_breadcrumb target;
    reignd_fence_cb *cb;
    void *userdata;
    size_t next;       /* the next method to try */
    unsigned attempts; /* methods tried */
    int abandoned;     /* the caller no longer wants the callback */
    char detail[512];  /* what each method did, for the log */
};

static void try_next(reignd_fence *f);

static void finish(reignd_fence *f, int ok)
{
    if (!f->abandoned)
        f->cb(ok, f->attempts, f->detail, f->userdata);
    free(f);
}

/* Appends "; method N (kind): what" to the detail. */
static void note(reignd_fence *f, const char *what)
{
    size_t used = strlen(f->detail);
    const reignd_fence_method *m = &f->ctx.svc->fence[f->next - 1];
    snprintf(f->detail + used, sizeof(f->detail) - used, "%smethod %zu (%s): %s", used ? "; " : "",
             f->next, reignd_fence_kind_name(m->kind), what);
}

/* A method ended: a success ends the fence, a failure moves on. */
static void method_done(reignd_fence *f, int ok, const char *what)
{
    note(f, what);
    if (ok || f->abandoned)
        finish(f, ok);
    else
        try_next(f);
}

static void on_peer(int err, const char *msg, const cJSON *result, void *userdata)
{
    char what[256];
    snprintf(what, sizeof(what), "%s", err == 0 ? "the old active is standby" : msg);
    method_done(userdata, err == 0, what);
}

static void on_hook(reignd_hooks *hooks, const reignd_hook_result *r, void *userdata)
{
    char what[200];
    reignd_hook_result_text(r, what, sizeof(what));
    method_done(userdata, reignd_hook_succeeded(r), what);
}

/* Starts the graceful method; returns 0, or -1 with the reason noted if it
 * cannot even start (then the next method is tried). */
static int start_graceful(reignd_fence *f, const reignd_fence_method *m)
{
    if (!f->target.peer_address[0]) {
        note(f, "skipped: the breadcrumb names no peer address");
        return -1;
    }
    if (!f->ctx.secret) {
        note(f, "skipped: this daemon has no peer secret");
        return -1;
    }
    reignd_peer_target t = {f->target.peer_address, f->ctx.secret, (uint64_t)m->timeout_ms};
    int err = reignd_peer_standby(f->ctx.loop, &t, f->ctx.svc->name, f->ctx.svc->node_id,
                                  f->ctx.term, on_peer, f, NULL);
    if (err < 0) {
        note(f, reign_strerror(err));
        return -1;
    }
    return 0;
}

static int start_shell(reignd_fence *f, const reignd_fence_method *m)
{
    reignd_hook_env env = {
        .service = f->ctx.svc->name,
        .state = "fencing",
        .node_id = f->ctx.svc->node_id,
        .term = (int64_t)f->ctx.term,
        .token = (int64_t)f->ctx.token,
        .target_id = f->target.id,
        .target_address = f->target.service_address,
        .target_term = (int64_t)f->target.term,
    };
    int err = reignd_hooks_run(f->ctx.hooks, "fence", m->command, m->timeout_ms, &env, on_hook, f);
    if (err < 0) {
        note(f, reign_strerror(err));
        return -1;
    }
    return 0;
}

static void try_next(reignd_fence *f)
{
    while (f->next < f->ctx.svc->n_fence) {
        const reignd_fence_method *m = &f->ctx.svc->fence[f->next++];
        f->attempts++;
        int r = m->kind == REIGND_FENCE_GRACEFUL ? start_graceful(f, m) : start_shell(f, m);
        if (r == 0)
            return; /* its completion carries on */
        if (f->abandoned)
            break;
    }
    finish(f, 0);
}

int reignd_fence_start(reignd_fence **ret, const reignd_fence_ctx *ctx,
                       const reignd_breadcrumb *target, reignd_fence_cb *cb, void *userdata)
{
    if (!ctx->svc->n_fence)
        return REIGN_EINVAL;
    reignd_fence *f = calloc(1, sizeof(*f));
    if (!f)
        return REIGN_ENOMEM;
    f->ctx = *ctx;
    f->target = *target;
    f->cb = cb;
    f->userdata = userdata;
    *ret = f;
    try_next(f);
    return 0;
}

void reignd_fence_abandon(reignd_fence *f)
{
    if (f)
        f->abandoned = 1;
}
