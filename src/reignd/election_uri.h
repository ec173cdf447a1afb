/*
 * election_uri.h - a service's election URI as reign.conf(5) and
 * <reign/client.h> document it, read without contacting the store: what
 * only the library would otherwise find out when the daemon makes its
 * clients, and so after --check had said OK (preflight.h).  A pure
 * function, fuzzed by tests/reignd/fuzz_config.c.
 */
#ifndef REIGND_ELECTION_URI_H
#define REIGND_ELECTION_URI_H

#include <stddef.h>

typedef struct reignd_uri_info {
    char user[256];           /* the user before '@', decoded; "" if none */
    char password_file[1024]; /* the password_file parameter, decoded; "" if none */
} reignd_uri_info;

/*
 * Checks an election URI: zk:// (a user, if any, not empty; at least one
 * host), sqlite:// (an absolute file path, no host), mysql://, mariadb://,
 * postgres:// (a user, one host, a database); the parameters the scheme
 * takes (<reign/client.h>), numbers within their ranges, percent escapes
 * well formed.  (The config parser has refused other schemes, spaces and
 * an inline password.)  Returns 0 with *info, or REIGN_EINVAL / REIGN_EAUTH
 * (empty or missing user) with one line in err that never quotes the URI.
 */
int reignd_uri_check(const char *uri, reignd_uri_info *info, char *err, size_t errlen);

#endif
