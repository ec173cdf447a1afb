/*
 * preflight.h - everything reignd refuses to start with that this machine
 * can tell before any store is contacted.  `reignd --check` runs exactly
 * this, and the daemon runs it first, so a configuration --check passes is
 * not refused later for a reason --check could have seen, and nothing is
 * created in a store (no lease table, no node) for a daemon that will not
 * run.  The configuration parser (config.h) has checked the file itself;
 * this adds what needs the file system and the environment:
 *
 *   - the peer secret file: readable, a regular file, mode 0600 or 0400,
 *     16 to 1024 printable characters (peer.h);
 *   - the control socket: a path that fits, a directory that is ours and
 *     0700 or that can be created, no file in the way (control.h);
 *   - peer_listen and metrics_listen: hosts that resolve, not one port;
 *   - each store's credentials: a URI naming a user gets its password from
 *     REIGN_PASSWORD or from a readable, non-empty password_file.
 *
 * What it cannot see is left to the start: a port someone else holds, a
 * store that does not answer or refuses the credentials, an election not
 * formatted, another daemon on the control socket (reported as a note).
 */
#ifndef REIGND_PREFLIGHT_H
#define REIGND_PREFLIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "peer.h"

/*
 * Runs the checks.  With `store_only` (reignd --format), only the
 * credentials: formatting needs neither the secret nor the endpoints.
 * `secret` (may be NULL) receives the peer secret when there is one.
 * Returns 0, REIGN_EAUTH for credentials that cannot be used (reignd exits
 * 6), or another negative code for the rest (exit 7), with one line in err,
 * "FILE:LINE: key: reason".  `note` gets a remark that is no error ("" if
 * none), e.g. a daemon already listening on the control socket.
 */
int reignd_preflight(const reignd_config *cfg, bool store_only, reignd_secret *secret, char *note,
                     size_t notelen, char *err, size_t errlen);

#endif
