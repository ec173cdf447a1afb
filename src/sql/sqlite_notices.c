/*
 * sqlite_notices.c - the notice file of a SQLite database (sqlite_notices.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sqlite_notices.h"

int reign__notices_init(reign__notices *n, const char *db_path, mode_t mode)
{
    memset(n, 0, sizeof(*n));
    n->fd = -1;
    n->mode = mode & 0666;
    reign__buf_init(&n->held);
    reign__buf b;
    reign__buf_init(&b);
    reign__buf_printf(&b, "%s%s", db_path, REIGN__NOTICES_SUFFIX);
    if (b.oom)
        return REIGN_ENOMEM;
    n->path = b.data;
    return 0;
}

void reign__notices_free(reign__notices *n)
{
    if (n->fd >= 0)
        close(n->fd);
    reign__free(n->path);
    reign__u64set_free(&n->chans);
    reign__buf_free(&n->held);
    n->fd = -1;
    n->path = NULL;
}

static int open_file(reign__notices *n, char *err, size_t errlen);

int reign__notices_reopen(reign__notices *n)
{
    if (n->fd >= 0)
        close(n->fd);
    n->fd = -1;
    n->gen = 0;
    n->off = 0;
    return open_file(n, NULL, 0);
}

bool reign__notices_moved(const reign__notices *n)
{
    struct stat fst, pst;
    if (n->fd < 0 || fstat(n->fd, &fst) < 0)
        return false;
    return fst.st_nlink == 0 || stat(n->path, &pst) < 0 || pst.st_ino != fst.st_ino ||
           pst.st_dev != fst.st_dev;
}

static int sys_err(const char *what, const char *path, char *err, size_t errlen)
{
    int e = errno;
    if (err)
        reign__errf(err, errlen, "%s %s: %s", what, path, strerror(e));
    return e == ENOMEM                               ? REIGN_ENOMEM
           : e == EACCES || e == EPERM || e == EROFS ? REIGN_EACCES
                                                     : REIGN_EBACKEND;
}

/* Opens the file, made with the database's mode if missing (whatever the umask: every process
 * that may write the database must be able to append here). */
static int open_file(reign__notices *n, char *err, size_t errlen)
{
    if (n->fd >= 0)
        return 0;
    int fd = open(n->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, n->mode);
    if (fd >= 0) {
        (void)fchmod(fd, n->mode);
    } else if (errno == EEXIST) {
        fd = open(n->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && (errno == EACCES || errno == EROFS))
            fd = open(n->path, O_RDONLY | O_CLOEXEC); /* listen only */
    }
    if (fd < 0)
        return sys_err("opening", n->path, err, errlen);
    n->fd = fd;
    return 0;
}

/* The generation in the header; 0 if there is none (a new file, or not ours). */
static uint64_t read_gen(int fd)
{
    char h[REIGN__NOTICES_HDR + 1];
    ssize_t r = pread(fd, h, REIGN__NOTICES_HDR, 0);
    if (r != REIGN__NOTICES_HDR || memcmp(h, "reign-notices 1 ", 16) ||
        h[REIGN__NOTICES_HDR - 1] != '\n')
        return 0;
    h[REIGN__NOTICES_HDR - 1] = '\0';
    char *end;
    uint64_t g = strtoull(h + 16, &end, 16);
    return *end ? 0 : g;
}

static int write_all(int fd, const char *p, size_t len, off_t at)
{
    while (len) {
        ssize_t w = pwrite(fd, p, len, at);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
        at += w;
    }
    return 0;
}

/* Under the lock: a header with generation gen, the file cut to it. */
static int reset(int fd, uint64_t gen)
{
    char h[REIGN__NOTICES_HDR + 1];
    snprintf(h, sizeof(h), "reign-notices 1 %016" PRIx64 "\n", gen);
    /* The header first: a reader that sees the shorter file sees the new generation too. */
    if (write_all(fd, h, REIGN__NOTICES_HDR, 0) < 0 || ftruncate(fd, REIGN__NOTICES_HDR) < 0)
        return -1;
    return 0;
}

/* Appends the lines in one write, under the writers' lock. */
static int append(reign__notices *n, const char *lines, size_t len, char *err, size_t errlen)
{
    int rc = open_file(n, err, errlen);
    if (rc < 0)
        return rc;
    for (int attempt = 0;; attempt++) {
        while (flock(n->fd, LOCK_EX) < 0)
            if (errno != EINTR)
                return sys_err("locking", n->path, err, errlen);
        struct stat st;
        if (fstat(n->fd, &st) < 0) {
            rc = sys_err("reading", n->path, err, errlen);
            break;
        }
        if (attempt == 0 && reign__notices_moved(n)) {
            /* Removed or replaced under us: append to the file the path names now. */
            if (n->fd >= 0)
                close(n->fd);
            n->fd = -1;
            if ((rc = open_file(n, err, errlen)) < 0)
                return rc;
            continue;
        }
        off_t at = st.st_size;
        uint64_t gen = read_gen(n->fd);
        if (!gen || at > REIGN__NOTICES_CAP) {
            /* New (or not ours): generation 1, which a listener that saw no header yet reads
             * from its start; a cut: the next. */
            if (reset(n->fd, gen + 1) < 0) {
                rc = sys_err("writing", n->path, err, errlen);
                break;
            }
            at = REIGN__NOTICES_HDR;
        }
        /* A line left torn (a writer that died in its write, a full disk) ends here, so that
         * ours is read as a line of its own. */
        char last = '\n';
        if (at > REIGN__NOTICES_HDR && pread(n->fd, &last, 1, at - 1) == 1 && last != '\n' &&
            write_all(n->fd, "\n", 1, at++) < 0) {
            rc = sys_err("writing", n->path, err, errlen);
            break;
        }
        if (write_all(n->fd, lines, len, at) < 0)
            rc = sys_err("writing", n->path, err, errlen);
        break;
    }
    (void)flock(n->fd, LOCK_UN);
    return rc;
}

/* "<chan> <payload, escaped>\n" onto b. */
static void format_line(reign__buf *b, const char *chan, const char *payload)
{
    reign__buf_printf(b, "%s ", chan);
    for (const char *p = payload ? payload : ""; *p; p++) {
        if (*p == '\\')
            reign__buf_puts(b, "\\\\");
        else if (*p == '\n')
            reign__buf_puts(b, "\\n");
        else
            reign__buf_append(b, p, 1);
    }
    reign__buf_puts(b, "\n");
}

int reign__notices_post(reign__notices *n, const char *chan, const char *payload, bool held,
                        char *err, size_t errlen)
{
    if (held) {
        format_line(&n->held, chan, payload);
        return n->held.oom ? REIGN_ENOMEM : 0;
    }
    reign__buf b;
    reign__buf_init(&b);
    format_line(&b, chan, payload);
    int rc = b.oom ? REIGN_ENOMEM : append(n, b.data, b.len, err, errlen);
    reign__buf_free(&b);
    return rc;
}

int reign__notices_commit(reign__notices *n, bool committed, char *err, size_t errlen)
{
    int rc = 0;
    if (n->held.oom)
        rc = REIGN_ENOMEM;
    else if (committed && n->held.len)
        rc = append(n, n->held.data, n->held.len, err, errlen);
    reign__buf_reset(&n->held);
    n->held.oom = false;
    return rc;
}

int reign__notices_listen(reign__notices *n, const char (*chans)[64], size_t k, char *err,
                          size_t errlen)
{
    for (size_t i = 0; i < k; i++)
        if (reign__u64set_add(&n->chans, reign__hash_str(chans[i])) < 0)
            return REIGN_ENOMEM;
    if (n->listening)
        return 0;
    int rc = open_file(n, err, errlen);
    if (rc < 0)
        return rc;
    struct stat st;
    if (fstat(n->fd, &st) < 0)
        return sys_err("reading", n->path, err, errlen);
    n->gen = read_gen(n->fd);
    n->off = st.st_size > REIGN__NOTICES_HDR ? st.st_size : REIGN__NOTICES_HDR;
    n->listening = true;
    return 0;
}

/* One line (without its newline): its payload to heard() if its channel is listened to. */
static int take_line(reign__notices *n, char *line, void (*heard)(void *, const char *), void *arg)
{
    char *sp = strchr(line, ' ');
    if (!sp)
        return 0;
    *sp = '\0';
    if (!reign__u64set_has(&n->chans, reign__hash_str(line)))
        return 0; /* another's (a hash that matches by chance: a needless read, no more) */
    char *w = sp + 1;
    for (const char *r = sp + 1; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 'n' ? '\n' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    heard(arg, sp[1] ? sp + 1 : NULL);
    return 1;
}

int reign__notices_read(reign__notices *n, void (*heard)(void *arg, const char *payload), void *arg)
{
    if (!n->listening)
        return 0;
    if (n->fd < 0 && open_file(n, NULL, 0) < 0) {
        heard(arg, NULL);
        return REIGN_EBACKEND;
    }
    int any = 0;
    uint64_t gen = read_gen(n->fd);
    struct stat st;
    if (fstat(n->fd, &st) < 0) {
        heard(arg, NULL);
        return REIGN_EBACKEND;
    }
    if (!gen && !n->gen)
        return 0; /* nothing written yet: a writer's header comes with the first notice */
    if (!n->gen && gen == 1) {
        /* The first header, never cut since we listened: every line after it is new to us. */
        n->gen = gen;
        if (n->off < REIGN__NOTICES_HDR)
            n->off = REIGN__NOTICES_HDR;
    } else if (gen != n->gen || st.st_size < n->off) {
        /* Cut (or new) since we read: what came before the cut is lost to us. */
        n->gen = gen;
        n->off = REIGN__NOTICES_HDR;
        heard(arg, NULL);
        any = 1;
    }
    char buf[16384];
    size_t have = 0;
    for (;;) {
        ssize_t r = pread(n->fd, buf + have, sizeof(buf) - 1 - have, n->off + (off_t)have);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = '\0';
        char *p = buf, *nl;
        while ((nl = memchr(p, '\n', (size_t)(buf + have - p)))) {
            *nl = '\0';
            any |= take_line(n, p, heard, arg);
            p = nl + 1;
        }
        size_t used = (size_t)(p - buf);
        if (!used && have == sizeof(buf) - 1) {
            used = have; /* a line longer than any notice: not ours, skipped */
        }
        n->off += (off_t)used;
        memmove(buf, p, have - used);
        have -= used;
    }
    /* Cut while we read: the lines read may be of the next generation, or torn. */
    if (read_gen(n->fd) != n->gen) {
        n->gen = read_gen(n->fd);
        n->off = REIGN__NOTICES_HDR;
        heard(arg, NULL);
        any = 1;
    }
    return any;
}
