/*
 * zk_fault.c - see zk_fault.h.  The wrappers run on the thread that sends libreign's requests,
 * the answers on the C client's completion thread (or on a thread of our own for a request never
 * sent), the queries on the test's main thread: the state below is under one lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zk_fault.h"

int __real_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data);
int __wrap_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data);
int __real_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);
int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data);

/* Set by h_fault_setup() before any request is sent, read-only afterwards. */
static h_fault fault;
static h_fault_create_fn *create_chooser;
static h_fault_multi_fn *multi_chooser;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int armed, chosen, injected;
static char applied[300];

/* The caller's answer, while the fault stands between it and the server. */
typedef struct pending {
    string_stat_completion_t create_done; /* a create's, or */
    void_completion_t multi_done;         /* a multi's */
    const void *data;
    const zoo_op_result_t *result; /* a multi's: the chosen create's */
    int rc;                        /* REPLY_HELD: the answer kept back */
} pending;

static pending *held;

void h_fault_setup(h_fault f, h_fault_create_fn *on_create, h_fault_multi_fn *on_multi)
{
    H_CHECKF(f != H_FAULT_REPLY_HELD || !on_create, "a create's answer cannot be held back");
    fault = f;
    create_chooser = on_create;
    multi_chooser = on_multi;
}

int h_fault_create_under(int count, const zoo_op_t *ops, const char *prefix)
{
    for (int i = 0; i < count; i++)
        if (ops[i].type == ZOO_CREATE_OP && !strncmp(ops[i].create_op.path, prefix, strlen(prefix)))
            return i;
    return -1;
}

void h_fault_arm(void)
{
    pthread_mutex_lock(&mu);
    armed = 1;
    pthread_mutex_unlock(&mu);
}

int h_fault_chosen(void)
{
    pthread_mutex_lock(&mu);
    int v = chosen;
    pthread_mutex_unlock(&mu);
    return v;
}

int h_fault_injected(void)
{
    pthread_mutex_lock(&mu);
    int v = injected;
    pthread_mutex_unlock(&mu);
    return v;
}

int h_pred_fault_injected(void *unused)
{
    (void)unused;
    return h_fault_injected();
}

void h_fault_applied(char *buf, size_t size)
{
    pthread_mutex_lock(&mu);
    snprintf(buf, size, "%s", applied);
    pthread_mutex_unlock(&mu);
}

int h_fault_held(void)
{
    pthread_mutex_lock(&mu);
    int v = held != NULL;
    pthread_mutex_unlock(&mu);
    return v;
}

void h_fault_release(void)
{
    pthread_mutex_lock(&mu);
    pending *p = held;
    held = NULL;
    pthread_mutex_unlock(&mu);
    H_CHECKF(p != NULL, "no answer was held back");
    p->multi_done(p->rc, p->data);
    free(p);
}

/* Counts a chosen request; whether it is the one to get the fault (the first since armed). */
static int take_armed(void)
{
    pthread_mutex_lock(&mu);
    chosen++;
    int inject = armed;
    armed = 0;
    pthread_mutex_unlock(&mu);
    return inject;
}

static pending *pending_new(const void *data)
{
    pending *p = calloc(1, sizeof(*p));
    H_CHECK(p != NULL);
    p->data = data;
    return p;
}

/* The server applied the request (rc ZOK) and `value` is the path it created. */
static void note_applied(int rc, const char *value, int len)
{
    pthread_mutex_lock(&mu);
    if (rc == ZOK) {
        snprintf(applied, sizeof(applied), "%.*s", value ? len : 0, value ? value : "");
        injected = 1;
    }
    pthread_mutex_unlock(&mu);
}

/* REPLY_LOST: the server answered a create; the caller hears only that the connection was lost.
 * (Any other answer goes through unchanged, and the test fails for want of an injection.) */
static void create_answered(int rc, const char *value, const struct Stat *stat, const void *data)
{
    pending *p = (pending *)data;
    note_applied(rc, value, value ? (int)strlen(value) : 0);
    if (rc == ZOK)
        p->create_done(ZCONNECTIONLOSS, NULL, NULL, p->data);
    else
        p->create_done(rc, value, stat, p->data);
    free(p);
}

/* REPLY_LOST and REPLY_HELD: the server answered a multi. */
static void multi_answered(int rc, const void *data)
{
    pending *p = (pending *)data;
    if (fault == H_FAULT_REPLY_HELD) {
        pthread_mutex_lock(&mu);
        p->rc = rc;
        held = p;
        injected = 1;
        pthread_mutex_unlock(&mu);
        return;
    }
    /* The C client writes the created path into the op's result before it calls back. */
    note_applied(rc, p->result->value, p->result->valuelen);
    p->multi_done(rc == ZOK ? ZCONNECTIONLOSS : rc, p->data);
    free(p);
}

static void *answer_unsent(void *arg)
{
    pending *p = arg;
    pthread_mutex_lock(&mu);
    injected = 1;
    pthread_mutex_unlock(&mu);
    if (p->multi_done)
        p->multi_done(ZCONNECTIONLOSS, p->data);
    else
        p->create_done(ZCONNECTIONLOSS, NULL, NULL, p->data);
    free(p);
    return NULL;
}

/* NEVER_SENT: the answer comes from another thread, never from inside the call that sent. */
static int never_send(pending *p)
{
    pthread_t t;
    H_CHECK(pthread_create(&t, NULL, answer_unsent, p) == 0);
    pthread_detach(t);
    return ZOK;
}

int __wrap_zoo_acreate2(zhandle_t *zh, const char *path, const char *value, int valuelen,
                        const struct ACL_vector *acl, int mode, string_stat_completion_t completion,
                        const void *data)
{
    if (!create_chooser || !create_chooser(path) || !take_armed())
        return __real_zoo_acreate2(zh, path, value, valuelen, acl, mode, completion, data);
    pending *p = pending_new(data);
    p->create_done = completion;
    if (fault == H_FAULT_NEVER_SENT) {
        h_log("injecting: create %s never reaches the server", path);
        return never_send(p);
    }
    h_log("injecting: create %s is sent, its reply will be lost", path);
    int rc = __real_zoo_acreate2(zh, path, value, valuelen, acl, mode, create_answered, p);
    if (rc != ZOK)
        free(p);
    return rc;
}

int __wrap_zoo_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                      void_completion_t completion, const void *data)
{
    int i = multi_chooser ? multi_chooser(count, ops) : -1;
    if (i < 0 || !take_armed())
        return __real_zoo_amulti(zh, count, ops, results, completion, data);
    pending *p = pending_new(data);
    p->multi_done = completion;
    p->result = &results[i];
    const char *path = ops[i].create_op.path;
    if (fault == H_FAULT_NEVER_SENT) {
        h_log("injecting: the multi creating %s never reaches the server", path);
        return never_send(p);
    }
    h_log("injecting: the multi creating %s is sent, its reply will be %s", path,
          fault == H_FAULT_REPLY_HELD ? "held back" : "lost");
    int rc = __real_zoo_amulti(zh, count, ops, results, multi_answered, p);
    if (rc != ZOK)
        free(p);
    return rc;
}
