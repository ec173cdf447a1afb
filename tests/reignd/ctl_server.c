/*
 * ctl_server.c - a control socket served by reignd_core's control.c with
 * the fake operations of fake_ops.h, for test_ctl.py to drive the real
 * `reign ctl` against: `reignd_ctl_server SOCKET` prints "ready" once it
 * listens and runs until SIGTERM or SIGINT.  Refusals and errors go to
 * stderr, as the daemon's log would.
 */
#include <stdio.h>
#include <string.h>

#include "fake_ops.h"

static void log_line(reign_log_level level, const char *msg, void *userdata)
{
    (void)userdata;
    fprintf(stderr, "ctl_server: %s: %s\n", reign_log_level_name(level), msg);
}

static reignd_control *ctl;
static uv_signal_t term, intr;

static void on_signal(uv_signal_t *s, int signum)
{
    (void)s;
    (void)signum;
    reignd_control_close(ctl);
    uv_close((uv_handle_t *)&term, NULL);
    uv_close((uv_handle_t *)&intr, NULL);
}

int main(int argc, char **argv)
{
    uv_loop_t loop;
    fake_ops fake;
    char err[256];
    if (argc != 2) {
        fprintf(stderr, "usage: %s SOCKET\n", argv[0]);
        return 2;
    }
    uv_loop_init(&loop);
    fake_ops_init(&fake, &loop);
    reignd_control_options o;
    memset(&o, 0, sizeof(o));
    o.size = sizeof(o);
    o.path = argv[1];
    o.ops = &fake.ops;
    o.log_fn = log_line;
    if (reignd_control_start(&loop, &o, &ctl, err, sizeof(err)) < 0) {
        fprintf(stderr, "ctl_server: %s\n", err);
        return 1;
    }
    uv_signal_init(&loop, &term);
    uv_signal_init(&loop, &intr);
    uv_signal_start(&term, on_signal, SIGTERM);
    uv_signal_start(&intr, on_signal, SIGINT);
    printf("ready\n");
    fflush(stdout);
    uv_run(&loop, UV_RUN_DEFAULT);
    fake_ops_finish(&fake, REIGN_ECANCELED);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 0;
}
