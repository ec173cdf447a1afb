/*
 * dl.c - loads a store's client library on first use (dl.h).
 *
 * One slot per library, its user's: a lock, the outcome and its message.
 * The first client of a store loads the library; every later one, on any
 * thread, gets the same outcome.  The tables are written only under the
 * lock, and every caller takes the lock before it calls the library, so no
 * reader can see a half-filled table.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "dl.h"

/* POSIX lets dlsym()'s void * stand for a function pointer; the tables rely on that. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "function pointers fit in void *");

static void fail(const reign__dl_library *lib, reign__dl_slot *st, const char *why)
{
    snprintf(st->err, sizeof st->err, "%s needs %s (Debian package %s): %s", lib->scheme,
             lib->soname, lib->package, why ? why : "unknown dlopen error");
    st->rc = REIGN_ENOTSUP;
}

static void open_library(const reign__dl_library *lib, reign__dl_slot *st)
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

int reign__dl_load(const reign__dl_library *lib, reign__dl_slot *slot, char *err, size_t errlen)
{
    pthread_mutex_lock(&slot->mu);
    if (!slot->done) {
        open_library(lib, slot);
        slot->done = true;
    }
    int rc = slot->rc;
    if (rc < 0 && err)
        reign__strlcpy(err, slot->err, errlen);
    pthread_mutex_unlock(&slot->mu);
    return rc;
}
