/*
 * config.h - what a store URI and the client options say, read and checked by one function
 * (config.c) for both reign_uri_check() and reign_client_new(), so that the check and the
 * client can never disagree about which URI is good or what it means.
 *
 * A plain value: reading one opens no connection, starts no thread and touches no descriptor
 * (only a password_file is read).  client.c starts its backend from it, adding the hooks that
 * tie the backend to the client (log, timers, wake-up, callbacks).
 */
#ifndef REIGN_CLIENT_CONFIG_H
#define REIGN_CLIENT_CONFIG_H

#include <reign/client.h>

#include "client_internal.h"
#include "uri.h"

typedef struct reign__client_config {
    reign_client_options opts; /* the caller's, copied; size is sizeof(opts) */
    bool is_zk;                /* zk://; else a SQL store, sql.target.kind says which */
    bool guarded; /* run a guardian: the options, the URI's guardian=, REIGN_GUARDIAN */
    reign_suspend_policy policy;
    int session_timeout_ms; /* ZooKeeper: the one requested; SQL: the lease */
    int connect_timeout_ms;
    int history_max;             /* leaderships kept in each election's history (history=) */
    reign__lease_settings lease; /* SQL: the lease timing, checked (client_internal.h) */
    /* zk://: hosts with their chroot, timeouts, retries, user and password. */
    reign__zk_config zk;
    /* SQL: the store's kind and address (path, or host, port and database), user, password,
     * table, the client library's own parameters; the data center; the retry period. */
    reign__sqlw_config sql;
    /* What the fields above point into, owned here. */
    reign__uri *uri;
    char *hosts;    /* zk.hosts */
    char *password; /* zk.password, sql.target.password: wiped when cleared */
    char *params;   /* sql.target.params */
} reign__client_config;

/*
 * Reads `uri` with `opts` (may be NULL) into *cfg: the URI parsed, its scheme one reign speaks,
 * its parameters known and in range, the lease timing safe, the credentials found.  0, or a
 * negative code with the reason in err (never a password) and *cfg left empty.  err must be a
 * buffer (reign__client_errbuf() gives one).
 */
int reign__client_config_read(reign__client_config *cfg, const char *uri,
                              const reign_client_options *opts, char *err, size_t errlen);
/* Frees what *cfg owns, the password wiped first; a cleared or empty config may be cleared. */
void reign__client_config_clear(reign__client_config *cfg);

/* The caller's message buffer, else `scratch`; emptied.  For the public functions that take an
 * optional errbuf. */
void reign__client_errbuf(char **errbuf, size_t *errlen, char *scratch, size_t n);

#endif
