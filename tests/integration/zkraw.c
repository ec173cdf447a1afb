/*
 * zkraw.c - a raw ZooKeeper client for the end-to-end tests (reign_it_zkraw).
 *
 * The Python tests drive the `reign` binary; to look at the nodes it made, or to do what an
 * operator, an intruder or a foreign tool might do to them, they run this program, which
 * talks to ZooKeeper through the plain C client, with or without digest credentials:
 *
 *   reign_it_zkraw [--auth USER:PASSWORD] HOSTS COMMAND ARGS...
 *     get PATH            one JSON object: data (hex), version, mzxid, ephemeral_owner, ...
 *     exists PATH         the same without data
 *     children PATH       the children's names, sorted, one per line
 *     set PATH DATA       DATA as given, or "hex:..." (any bytes), or "file:PATH" (its bytes)
 *     create PATH DATA    a persistent node
 *     delete PATH         any version
 *     getacl PATH         one line per entry: "SCHEME ID PERMS"
 *     watch-gone PATH     poll PATH: "present sent_ns=N" for each answer that found it (N:
 *                         CLOCK_MONOTONIC when the request was sent), then "gone sent_ns=N"
 *                         and exit once it is gone
 *
 * Exit status: 0 done; 3 ZNOAUTH; 4 ZNONODE; 5 ZNODEEXISTS; 6 ZBADVERSION; 7 ZNOTEMPTY; 1 any
 * other failure; 2 usage.  A failure is also named on stderr ("zkraw: delete /x: ZNOAUTH").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

#define DATA_CAP (2 * 1024 * 1024)

static int exit_code(int zrc)
{
    switch (zrc) {
    case ZOK:
        return 0;
    case ZNOAUTH:
        return 3;
    case ZNONODE:
        return 4;
    case ZNODEEXISTS:
        return 5;
    case ZBADVERSION:
        return 6;
    case ZNOTEMPTY:
        return 7;
    default:
        return 1;
    }
}

static int report(const char *cmd, const char *path, int zrc)
{
    if (zrc != ZOK)
        fprintf(stderr, "zkraw: %s %s: %s (%s)\n", cmd, path, h_zerr_name(zrc), zerror(zrc));
    return exit_code(zrc);
}

static void print_stat(const struct Stat *st)
{
    printf("\"version\":%d,\"cversion\":%d,\"czxid\":%lld,\"mzxid\":%lld,\"ctime\":%lld,"
           "\"mtime\":%lld,\"ephemeral_owner\":%lld,\"data_length\":%d,\"num_children\":%d",
           st->version, st->cversion, (long long)st->czxid, (long long)st->mzxid,
           (long long)st->ctime, (long long)st->mtime, (long long)st->ephemeralOwner,
           st->dataLength, st->numChildren);
}

/* "hex:0aff" to bytes, "file:PATH" to the file's bytes (at most DATA_CAP); anything else as
 * it is.  Returns the length, or -1. */
static int decode(const char *arg, char **out)
{
    if (strncmp(arg, "file:", 5) == 0) {
        FILE *f = fopen(arg + 5, "rb");
        char *b = malloc(DATA_CAP);
        size_t n = f && b ? fread(b, 1, DATA_CAP, f) : 0;
        if (f)
            fclose(f);
        if (!f || !b) {
            free(b);
            return -1;
        }
        *out = b;
        return (int)n;
    }
    if (strncmp(arg, "hex:", 4) != 0) {
        *out = strdup(arg);
        return *out ? (int)strlen(arg) : -1;
    }
    const char *h = arg + 4;
    size_t n = strlen(h);
    if (n % 2)
        return -1;
    char *b = malloc(n / 2 + 1);
    if (!b)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned v;
        if (sscanf(h + 2 * i, "%2x", &v) != 1) {
            free(b);
            return -1;
        }
        b[i] = (char)v;
    }
    *out = b;
    return (int)(n / 2);
}

static int usage(void)
{
    fprintf(stderr, "usage: reign_it_zkraw [--auth USER:PASSWORD] HOSTS "
                    "get|exists|children|set|create|delete|getacl|watch-gone PATH [DATA]\n");
    return 2;
}

static int cmd_get(zhandle_t *zh, const char *path, int with_data)
{
    struct Stat st;
    int rc;
    char *buf = NULL;
    int len = DATA_CAP;
    if (with_data) {
        buf = malloc(DATA_CAP);
        if (!buf)
            return 1;
        rc = zoo_get(zh, path, 0, buf, &len, &st);
    } else {
        rc = zoo_exists(zh, path, 0, &st);
    }
    if (rc != ZOK) {
        free(buf);
        return report(with_data ? "get" : "exists", path, rc);
    }
    printf("{\"path\":\"%s\",", path);
    if (with_data) {
        printf("\"data_hex\":\"");
        for (int i = 0; i < len; i++)
            printf("%02x", (unsigned char)buf[i]);
        printf("\",");
    }
    print_stat(&st);
    printf("}\n");
    free(buf);
    return 0;
}

static int cmd_children(zhandle_t *zh, const char *path)
{
    static char names[4096][H_NODE_MAX];
    int n = h_raw_children(zh, path, names, 4096);
    if (n < 0)
        return report("children", path, n);
    for (int i = 0; i < n; i++)
        printf("%s\n", names[i]);
    return 0;
}

static int cmd_getacl(zhandle_t *zh, const char *path)
{
    struct ACL_vector acl = {0, NULL};
    struct Stat st;
    int rc = zoo_get_acl(zh, path, &acl, &st);
    if (rc != ZOK)
        return report("getacl", path, rc);
    for (int i = 0; i < acl.count; i++)
        printf("%s %s %d\n", acl.data[i].id.scheme, acl.data[i].id.id, acl.data[i].perms);
    deallocate_ACL_vector(&acl);
    return 0;
}

static int cmd_watch_gone(zhandle_t *zh, const char *path)
{
    for (;;) {
        int64_t sent = reign_now_ns();
        struct Stat st;
        int rc = zoo_exists(zh, path, 0, &st);
        if (rc == ZNONODE) {
            printf("gone sent_ns=%lld\n", (long long)sent);
            return 0;
        }
        if (rc != ZOK)
            return report("exists", path, rc);
        printf("present sent_ns=%lld\n", (long long)sent);
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

int main(int argc, char **argv)
{
    const char *auth = NULL;
    int i = 1;
    if (i + 1 < argc && !strcmp(argv[i], "--auth")) {
        auth = argv[i + 1];
        i += 2;
    }
    if (argc - i < 3)
        return usage();
    const char *hosts = argv[i], *cmd = argv[i + 1], *path = argv[i + 2];
    const char *arg = argc - i > 3 ? argv[i + 3] : NULL;
    setvbuf(stdout, NULL, _IOLBF, 0);
    h_init("zkraw");
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zhandle_t *zh = h_raw_connect(hosts, auth);
    int code;
    if (!strcmp(cmd, "get")) {
        code = cmd_get(zh, path, 1);
    } else if (!strcmp(cmd, "exists")) {
        code = cmd_get(zh, path, 0);
    } else if (!strcmp(cmd, "children")) {
        code = cmd_children(zh, path);
    } else if (!strcmp(cmd, "getacl")) {
        code = cmd_getacl(zh, path);
    } else if (!strcmp(cmd, "delete")) {
        code = report("delete", path, zoo_delete(zh, path, -1));
    } else if (!strcmp(cmd, "watch-gone")) {
        code = cmd_watch_gone(zh, path);
    } else if (!strcmp(cmd, "set") || !strcmp(cmd, "create")) {
        char *data = NULL;
        int len = arg ? decode(arg, &data) : -1;
        if (len < 0) {
            h_raw_close(zh);
            return usage();
        }
        if (!strcmp(cmd, "set"))
            code = report("set", path, zoo_set(zh, path, data, len, -1));
        else
            code = report("create", path,
                          zoo_create(zh, path, data, len, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0));
        free(data);
    } else {
        code = usage();
    }
    h_raw_close(zh);
    return code;
}
