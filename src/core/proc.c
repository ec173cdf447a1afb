/*
 * proc.c - killing a process group and knowing when it is gone, for the
 * guardian (src/guardian/) and for programs that run commands while they
 * lead (reign run, reign tasks worker).
 *
 * "Gone" means that no member of the group can run again: a member that is a
 * zombie (dead, not yet reaped by its parent) counts as gone, since only its
 * parent's wait() remains.  That is why kill() alone cannot tell: a group
 * whose only members are zombies still accepts signals.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <reign/process.h>

#include "core.h"

/* Whether /proc/PID/stat shows a process of group `pgid` that is not a zombie. */
static bool member_runs(const char *pid, pid_t pgid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so read
     * after the last ')'. */
    char *p = strrchr(buf, ')');
    char state;
    int ppid, pgrp;
    if (!p || sscanf(p + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
        return false;
    return pgrp == pgid && state != 'Z' && state != 'X';
}

static bool group_runs(pid_t pgid)
{
    DIR *d = opendir("/proc");
    if (!d)
        return true; /* cannot tell: assume the worst */
    bool runs = false;
    struct dirent *de;
    while (!runs && (de = readdir(d)))
        if (de->d_name[0] >= '1' && de->d_name[0] <= '9')
            runs = member_runs(de->d_name, pgid);
    closedir(d);
    return runs;
}

int reign_kill_group(pid_t pgid)
{
    if (pgid <= 1)
        return REIGN_EINVAL;
    if (kill(-pgid, SIGKILL) < 0)
        return errno == ESRCH ? 0 : -errno;
    /* Some member exists; SIGKILL is delivered, but a member that has not yet died still
     * counts (it may be inside a system call that must finish first). */
    return group_runs(pgid) ? 1 : 0;
}
