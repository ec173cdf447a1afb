/*
 * call.c - reignd_call: one request to the daemon's operations, answered
 * once whether the operation finishes at once or later (see control.h for
 * the contract the daemon follows, call.h for the servers' side).
 *
 * An operation may finish its call from inside itself even when it then
 * returns REIGND_PENDING (a hook queue that completes synchronously, say);
 * `running` defers the delivery until it has returned, so the server never
 * sees its call freed under it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"

reignd_call *reignd__call_new(reignd__call_complete_fn *complete, void *owner, const char *origin)
{
    reignd_call *call = calloc(1, sizeof(*call));
    if (!call)
        return NULL;
    call->complete = complete;
    call->owner = owner;
    call->running = 1; /* until reignd__call_run() has the operation's return */
    snprintf(call->origin, sizeof(call->origin), "%s", origin ? origin : "?");
    return call;
}

const char *reignd_call_origin(const reignd_call *call)
{
    return call->origin;
}

void reignd_call_fail(reignd_call *call, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(call->msg, sizeof(call->msg), fmt, ap);
    va_end(ap);
}

void reignd_call_set_result(reignd_call *call, cJSON *result)
{
    cJSON_Delete(call->result);
    call->result = result;
}

static void deliver(reignd_call *call)
{
    if (call->complete) {
        const char *msg = call->msg[0] ? call->msg : reign_strerror(call->err);
        call->complete(call->owner, call->err, call->err < 0 ? msg : "",
                       call->err < 0 ? NULL : call->result);
    }
    cJSON_Delete(call->result);
    free(call);
}

void reignd_call_done(reignd_call *call, int err, const char *msg, cJSON *result)
{
    if (!call)
        return;
    call->err = err > 0 ? 0 : err;
    if (msg)
        snprintf(call->msg, sizeof(call->msg), "%s", msg);
    if (result)
        reignd_call_set_result(call, result);
    if (call->running)
        call->finished = 1;
    else
        deliver(call);
}

void reignd__call_run(reignd_call *call, int r)
{
    call->running = 0;
    if (r == REIGND_PENDING) {
        if (call->finished)
            deliver(call);
        return;
    }
    /* A finished call's own outcome wins over a confused return value. */
    if (!call->finished)
        call->err = r > 0 ? 0 : r;
    deliver(call);
}

void reignd__call_detach(reignd_call *call)
{
    call->complete = NULL;
    call->owner = NULL;
}

char *reignd__answer_line(int err, const char *msg, const cJSON *result, size_t *len)
{
    cJSON *o = cJSON_CreateObject();
    if (!o)
        return NULL;
    int ok = 1;
    if (err == 0) {
        cJSON *r = result ? cJSON_Duplicate(result, 1) : cJSON_CreateObject();
        ok = cJSON_AddBoolToObject(o, "ok", 1) != NULL;
        if (!r || !cJSON_AddItemToObject(o, "result", r)) {
            cJSON_Delete(r);
            ok = 0;
        }
    } else {
        ok = cJSON_AddBoolToObject(o, "ok", 0) &&
             cJSON_AddStringToObject(o, "error", reign_err_name(err)) &&
             cJSON_AddStringToObject(o, "message", msg && *msg ? msg : reign_strerror(err));
    }
    char *text = ok ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    if (len)
        *len = n + 1;
    return line;
}
