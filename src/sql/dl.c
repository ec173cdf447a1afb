/*
 * dl.c - loads a store's client library on first use (dl.h).
 *
 * One slot per store: a pthread_once, the outcome and its message.  The
 * first client of a store loads the library; every later one, on any
 * thread, gets the same outcome.  The tables are written only inside
 * pthread_once(), and every caller passes through pthread_once() before it
 * calls a dialect, so no reader can see a half-filled table.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dl.h"
#include "sql.h"

/* POSIX lets dlsym()'s void * stand for a function pointer; the tables rely on that. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers fit in void *");

typedef struct loaded {
    pthread_once_t once;
    int rc;
    char err[400];
} loaded;

/* By kind: sqlite, mariadb, postgres. */
static loaded slots[3] = {
    {PTHREAD_ONCE_INIT, 0, ""}, {PTHREAD_ONCE_INIT, 0, ""}, {PTHREAD_ONCE_INIT, 0, ""}};

static void fail(const reign__sql_library *lib, loaded *st, const char *why)
{
    snprintf(st->err, sizeof st->err, "%s needs %s (Debian package %s): %s", lib->scheme,
             lib->soname, lib->package, why ? why : "unknown dlopen error");
    st->rc = REIGN_ENOTSUP;
}

static void open_library(const reign__sql_library *lib, loaded *st)
{
    const char *file = secure_getenv(lib->test_env);
    /* RTLD_NOW: a library that cannot be bound fails here, not at some later call. */
    void *h = dlopen(file && *file ? file : lib->soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fail(lib, st, dlerror());
        return;
    }
    for (size_t i = 0; i < lib->n_symbols; i++) {
        dlerror();
        void *fn = dlsym(h, lib->symbols[i].name);
        if (!fn) {
            const char *why = dlerror();
            char msg[200];
            snprintf(msg, sizeof msg, "no function %s (%s)", lib->symbols[i].name,
                     why ? why : "a null symbol");
            fail(lib, st, msg);
            dlclose(h);
            return;
        }
        memcpy((char *)lib->table + lib->symbols[i].offset, &fn, sizeof fn);
    }
    st->rc = 0; /* h stays open for the life of the process */
}

static void load_sqlite(void)
{
    open_library(&reign__sql_sqlite_lib, &slots[0]);
}

static void load_mariadb(void)
{
    open_library(&reign__sql_mariadb_lib, &slots[1]);
}

static void load_postgres(void)
{
    open_library(&reign__sql_postgres_lib, &slots[2]);
}

int reign__sql_load(reign__sql_kind kind, char *err, size_t errlen)
{
    static void (*const loaders[])(void) = {load_sqlite, load_mariadb, load_postgres};
    if (kind < REIGN__SQL_SQLITE || kind > REIGN__SQL_POSTGRES) {
        reign__errf(err, errlen, "unknown kind of store %d", (int)kind);
        return REIGN_EINVAL;
    }
    loaded *st = &slots[kind - REIGN__SQL_SQLITE];
    pthread_once(&st->once, loaders[kind - REIGN__SQL_SQLITE]);
    if (st->rc < 0 && err)
        reign__strlcpy(err, st->err, errlen);
    return st->rc;
}
