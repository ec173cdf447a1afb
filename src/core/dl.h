/*
 * dl.h - the stores' client libraries (the SQL clients, and libcurl for
 * etcd), loaded when a client of their store is made rather than linked into
 * every program.
 *
 * libreign does not link libpq, MariaDB Connector/C, SQLite or libcurl: linked, they
 * (and OpenSSL, Kerberos, LDAP... behind them) were mapped into every
 * process, so a program that only speaks ZooKeeper paid their resident
 * memory.  Each dialect instead calls its library through a table of
 * function pointers, filled once per process by dlopen() of the Debian
 * runtime library by soname (libsqlite3.so.0, libmariadb.so.3, libpq.so.5)
 * and dlsym() of every function the dialect uses.  The -dev headers still
 * give the types and constants, and each pointer's type is taken from the
 * header's declaration (__typeof__), so a table cannot disagree with the
 * library's prototypes.
 *
 * reign__dl_load() loads a store's library, at most once per
 * process (pthread_once), and remembers the outcome: a missing library or
 * function is the same error every time, worded for people:
 *   "postgres:// needs libpq.so.5 (Debian package libpq5): <dlerror()>".
 * A library once loaded is never unloaded.
 *
 * Test hook (for tests/sql only; not a setting): the environment variable
 * named by test_env (REIGN_TEST_LIBSQLITE3, REIGN_TEST_LIBMARIADB,
 * REIGN_TEST_LIBPQ), when set, is the file dlopen() opens instead of the
 * soname, so that a test can make a library missing.  It is read with
 * secure_getenv(): a set-user-ID or set-group-ID program ignores it.
 *
 * Private to the backends.
 */
#ifndef REIGN_DL_H
#define REIGN_DL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* One function of a table: its name in the library and where its pointer sits. */
typedef struct reign__dl_symbol {
    const char *name;
    size_t offset;
} reign__dl_symbol;

/* A client library and the table a dialect calls it through. */
typedef struct reign__dl_library {
    const char *scheme;   /* "postgres://": the URIs that need it, for the message */
    const char *soname;   /* "libpq.so.5" */
    const char *package;  /* "libpq5": the Debian package that ships it */
    const char *test_env; /* "REIGN_TEST_LIBPQ": see the test hook above */
    const reign__dl_symbol *symbols;
    size_t n_symbols;
    void *table; /* a struct of function pointers, filled by the loader */
} reign__dl_library;

/*
 * A dialect lists its functions once, as X(t, function) items, and defines from that list, with
 * REIGN__DL_LIBRARY(var, LIST, lib, scheme, soname, package, test_env):
 *   - the type var_api: one member per function, named as the function, whose type is
 *     "pointer to the function the header declares";
 *   - the table `var` of that type (static), which the dialect calls through: var.PQclear(r);
 *   - var_symbols, the names and places of its members;
 *   - `lib`, the reign__dl_library that dl.c loads into the table.
 */
#define REIGN__DL_MEMBER(t, f) __typeof__(f) *f;
#define REIGN__DL_SYMBOL(t, f) {#f, offsetof(t, f)},
#define REIGN__DL_LIBRARY(var, LIST, lib, scheme_, soname_, package_, test_env_)                   \
    typedef struct var##_api {                                                                     \
        LIST(REIGN__DL_MEMBER, var##_api)                                                          \
    } var##_api;                                                                                   \
    static var##_api var;                                                                          \
    static const reign__dl_symbol var##_symbols[] = {LIST(REIGN__DL_SYMBOL, var##_api)};           \
    const reign__dl_library lib = {                                                                \
        .scheme = scheme_,                                                                         \
        .soname = soname_,                                                                         \
        .package = package_,                                                                       \
        .test_env = test_env_,                                                                     \
        .symbols = var##_symbols,                                                                  \
        .n_symbols = sizeof(var##_symbols) / sizeof(var##_symbols[0]),                             \
        .table = &var,                                                                             \
    }

/* Where a library's loading is remembered: one per library, its user's (static). */
typedef struct reign__dl_slot {
    pthread_mutex_t mu;
    bool done;
    int rc;
    char err[400];
} reign__dl_slot;
#define REIGN__DL_SLOT_INIT                                                                        \
    {                                                                                              \
        PTHREAD_MUTEX_INITIALIZER, false, 0, ""                                                    \
    }

/* Loads lib into its table, once per slot (the same outcome every time): 0, or REIGN_ENOTSUP
 * with the message "SCHEME needs SONAME (Debian package P): why". */
int reign__dl_load(const reign__dl_library *lib, reign__dl_slot *slot, char *err, size_t errlen);

#endif
