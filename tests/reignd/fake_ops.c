/*
 * fake_ops.c - the recording reignd_ops of fake_ops.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_ops.h"

static cJSON *service_json(const char *name, const char *state, const char *health, int paused,
                           const char *leader, double term, double token, const char *reason,
                           const char *conflict)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "name", name);
    cJSON_AddStringToObject(s, "node", "n1");
    cJSON_AddStringToObject(s, "state", state);
    cJSON_AddStringToObject(s, "health", health);
    cJSON_AddBoolToObject(s, "paused", paused);
    if (paused)
        cJSON_AddStringToObject(s, "paused_by", "n2");
    else
        cJSON_AddNullToObject(s, "paused_by");
    cJSON_AddStringToObject(s, "leader", leader);
    cJSON_AddNumberToObject(s, "term", term);
    cJSON_AddNumberToObject(s, "token", token);
    cJSON_AddNumberToObject(s, "failovers", term > 0 ? 1 : 0);
    if (conflict)
        cJSON_AddStringToObject(s, "conflict", conflict);
    else
        cJSON_AddNullToObject(s, "conflict");
    cJSON_AddStringToObject(s, "reason", reason);
    return s;
}

static cJSON *fake_status(void *ctx)
{
    fake_ops *f = ctx;
    cJSON *root = cJSON_CreateObject();
    cJSON *list = cJSON_AddArrayToObject(root, "services");
    cJSON_AddItemToArray(list, service_json("web", "active", "healthy", f->paused[0], "n1", 7, 12,
                                            "elected and fenced the old active", NULL));
    cJSON_AddItemToArray(list, service_json("db", "standby", "unhealthy", f->paused[1], "n2", 0, 0,
                                            "health check failed",
                                            "another reignd stands with this node's id n1"));
    return root;
}

static void record(fake_ops *f, reignd_call *call, const char *op, const char *service,
                   const char *node)
{
    f->calls++;
    snprintf(f->op, sizeof(f->op), "%s", op);
    snprintf(f->service, sizeof(f->service), "%s", service);
    snprintf(f->node, sizeof(f->node), "%s", node ? node : "");
    snprintf(f->origin, sizeof(f->origin), "%s", reignd_call_origin(call));
}

static void on_next_turn(uv_timer_t *t)
{
    reignd_call_done(t->data, 0, NULL, NULL);
    uv_close((uv_handle_t *)t, (uv_close_cb)free);
}

/* The answer by service name (see fake_ops.h). */
static int answer(fake_ops *f, reignd_call *call, const char *service)
{
    if (strcmp(service, "web") == 0) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "service", service);
        reignd_call_set_result(call, r);
        return 0;
    }
    if (strcmp(service, "db") == 0) {
        uv_timer_t *t = malloc(sizeof(*t));
        uv_timer_init(f->loop, t);
        t->data = call;
        uv_timer_start(t, on_next_turn, 0, 0);
        return REIGND_PENDING;
    }
    if (strcmp(service, "slow") == 0 && f->npending < FAKE_PENDING_MAX) {
        f->pending[f->npending++] = call;
        return REIGND_PENDING;
    }
    if (strcmp(service, "busy") == 0) {
        reignd_call_fail(call, "busy is in the middle of a failover");
        return REIGN_ESTATE;
    }
    reignd_call_fail(call, "no service '%s'", service);
    return REIGN_ENOENT;
}

static int fake_cede(void *ctx, reignd_call *call, const char *service, double delay_s)
{
    fake_ops *f = ctx;
    record(f, call, "cede", service, NULL);
    f->delay_s = delay_s;
    return answer(f, call, service);
}

static int fake_failover(void *ctx, reignd_call *call, const char *service, const char *to,
                         int wait)
{
    fake_ops *f = ctx;
    record(f, call, "failover", service, to);
    f->wait = wait;
    if (strcmp(to, "n3") == 0) {
        reignd_call_fail(call, "node '%s' is not healthy (unhealthy)", to);
        return REIGN_ESTATE;
    }
    return answer(f, call, service);
}

static int set_paused(fake_ops *f, reignd_call *call, const char *op, const char *service,
                      int paused)
{
    record(f, call, op, service, NULL);
    if (strcmp(service, "web") == 0)
        f->paused[0] = paused;
    else if (strcmp(service, "db") == 0)
        f->paused[1] = paused;
    return answer(f, call, service);
}

static int fake_pause(void *ctx, reignd_call *call, const char *service)
{
    return set_paused(ctx, call, "pause", service, 1);
}

static int fake_resume(void *ctx, reignd_call *call, const char *service)
{
    return set_paused(ctx, call, "resume", service, 0);
}

static int fake_standby(void *ctx, reignd_call *call, const char *service, const char *from,
                        uint64_t term)
{
    fake_ops *f = ctx;
    record(f, call, "standby", service, from);
    f->term = term;
    return answer(f, call, service);
}

void fake_ops_init(fake_ops *f, uv_loop_t *loop)
{
    memset(f, 0, sizeof(*f));
    f->loop = loop;
    f->ops.ctx = f;
    f->ops.status = fake_status;
    f->ops.cede = fake_cede;
    f->ops.failover = fake_failover;
    f->ops.pause = fake_pause;
    f->ops.resume = fake_resume;
    f->ops.standby = fake_standby;
}

void fake_ops_finish(fake_ops *f, int err)
{
    for (int i = 0; i < f->npending; i++)
        reignd_call_done(f->pending[i], err, err ? "finished with an error" : NULL, NULL);
    f->npending = 0;
}
