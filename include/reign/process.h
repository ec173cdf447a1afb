/*
 * reign/process.h - the process-group helper libreign offers programs that
 * run commands while they lead, independent of any client: what the
 * guardian does with each group it is given (reign_client_guard_pgid() in
 * <reign/client.h>, which includes this header).
 */
#ifndef REIGN_PROCESS_H
#define REIGN_PROCESS_H

#include <sys/types.h>

#include <reign/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Sends SIGKILL to every process of group `pgid` and says whether any of
 * them still runs: 1 (call again a little later), 0 (none: the group is
 * empty, or holds only zombies awaiting their parent's wait), or a negative
 * code (REIGN_EINVAL for pgid <= 1, -EPERM).  Never blocks.  What the
 * guardian does with each group, for programs that run commands and must
 * make sure that all of a command is gone (reign run, after its command
 * exits, before it resigns).
 */
REIGN_EXPORT int reign_kill_group(pid_t pgid);

#ifdef __cplusplus
}
#endif

#endif
