/*
 * replay.c - a main() for fuzz targets built without libFuzzer (gcc, or a
 * plain build): feeds every file named on the command line, and every
 * regular file in every directory named there, to LLVMFuzzerTestOneInput()
 * once, in name order.  ctest runs it over the corpora, so each crasher
 * once found stays a regression test.  A broken invariant aborts; an empty
 * corpus fails, so that a wrong path cannot pass silently.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    unsigned char *data = malloc(cap);
    for (;;) {
        if (!data) {
            fprintf(stderr, "replay: out of memory reading '%s'\n", path);
            fclose(f);
            return -1;
        }
        len += fread(data + len, 1, cap - len, f);
        if (len < cap)
            break;
        unsigned char *bigger = realloc(data, cap * 2);
        if (!bigger)
            free(data);
        data = bigger;
        cap *= 2;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "replay: cannot read '%s'\n", path);
        free(data);
        return -1;
    }
    /* An exact-size copy, so that ASan sees any read past the input. */
    unsigned char *exact = malloc(len ? len : 1);
    if (!exact) {
        free(data);
        return -1;
    }
    memcpy(exact, data, len);
    free(data);
    LLVMFuzzerTestOneInput(exact, len);
    free(exact);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* Replays path (a file or a directory); adds to *count; -1 on error. */
static int replay_path(const char *path, size_t *count)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        fprintf(stderr, "replay: '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (replay_file(path) < 0)
            return -1;
        (*count)++;
        return 0;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, by_name);
    if (n < 0) {
        fprintf(stderr, "replay: cannot list '%s': %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char full[4096];
        if (rc == 0 && names[i]->d_name[0] != '.') {
            snprintf(full, sizeof(full), "%s/%s", path, names[i]->d_name);
            if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
                rc = replay_file(full);
                (*count)++;
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++)
        if (replay_path(argv[i], &count) < 0)
            return 1;
    if (count == 0) {
        fprintf(stderr, "replay: no input found\n");
        return 1;
    }
    printf("replay: %zu passed, 0 failed\n", count);
    return 0;
}
