/*
 * net_client.c - the thread-side client of net_client.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "net_client.h"

static int connect_to(const net_job *j)
{
    int fd;
    if (j->unix_path) {
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", j->unix_path);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
    } else {
        struct sockaddr_in sa;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)j->tcp_port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
            return fd;
    }
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

static void *client_main(void *arg)
{
    net_job *j = arg;
    int fd = connect_to(j);
    if (fd < 0) {
        j->connect_errno = errno;
        uv_async_send(&j->async);
        return NULL;
    }
    for (size_t off = 0; off < j->send_len;) {
        ssize_t n = send(fd, j->send + off, j->send_len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    int got = 0;
    while (!j->leave_early && (j->lines == 0 || got < j->lines) && j->len < sizeof(j->answer) - 1) {
        ssize_t n = recv(fd, j->answer + j->len, sizeof(j->answer) - 1 - j->len, 0);
        if (n <= 0) {
            j->eof = 1;
            break;
        }
        for (ssize_t i = 0; i < n; i++)
            got += j->answer[j->len + (size_t)i] == '\n';
        j->len += (size_t)n;
    }
    j->answer[j->len] = '\0';
    close(fd);
    uv_async_send(&j->async);
    return NULL;
}

static void on_done(uv_async_t *a)
{
    uv_stop(a->loop);
}

void net_exchange(uv_loop_t *loop, net_job *j)
{
    pthread_t t;
    if (!j->send_len && j->send)
        j->send_len = strlen(j->send);
    uv_async_init(loop, &j->async, on_done);
    if (pthread_create(&t, NULL, client_main, j) != 0)
        abort();
    uv_run(loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
    uv_close((uv_handle_t *)&j->async, NULL);
    uv_run(loop, UV_RUN_NOWAIT); /* the close, while j is still there */
}
