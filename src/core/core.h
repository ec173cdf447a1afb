/*
 * core.h - what every part of libreign uses: the allocator, logging,
 * monotonic time, growable buffers, a timer heap and small string helpers.
 * Private to the library (src/ only).
 */
#ifndef REIGN_CORE_H
#define REIGN_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <reign/common.h>

#define REIGN__NS_PER_MS INT64_C(1000000)

#ifdef __GNUC__
#define REIGN__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define REIGN__PRINTF(a, b)
#endif

/* ---- allocator (alloc.c): every allocation of libreign goes through it -- */
void *reign__malloc(size_t n);
void *reign__calloc(size_t count, size_t n);
void *reign__realloc(void *p, size_t n);
void reign__free(void *p);
char *reign__strdup(const char *s);
char *reign__strndup(const char *s, size_t n);
void *reign__memdup(const void *p, size_t n);

/*
 * Held allocations: the arguments of requests in flight whose callbacks an
 * owner may drop (reign__zk_forget) before they run, which would otherwise
 * have freed them.  The owner keeps them in a list and frees what is left
 * when it forgets.  `tag` is the caller's (a life epoch, say).
 */
typedef struct reign__held reign__held;
/* n zeroed bytes linked into *list; dtor (may be NULL) runs on free. */
void *reign__held_new(reign__held **list, size_t n, void (*dtor)(void *p), uintptr_t tag);
uintptr_t reign__held_tag(const void *p);
/* Unlinks p (NULL: nothing), runs its dtor and frees it. */
void reign__held_free(reign__held **list, void *p);
void reign__held_free_all(reign__held **list);

/* ---- logging (log.c) ---------------------------------------------------- */
typedef struct reign__logger {
    reign_log_fn *fn; /* NULL: the process-wide sink */
    void *userdata;
    reign_log_level level;
} reign__logger;

/* Logs through `lg` (NULL: the process-wide sink). */
void reign__log(const reign__logger *lg, reign_log_level level, const char *fmt, ...)
    REIGN__PRINTF(3, 4);
void reign__vlog(const reign__logger *lg, reign_log_level level, const char *fmt, va_list ap)
    REIGN__PRINTF(3, 0);
bool reign__log_enabled(const reign__logger *lg, reign_log_level level);

/* ---- time (time.c) ------------------------------------------------------ */
int64_t reign__now_ns(void);  /* CLOCK_MONOTONIC */
int64_t reign__wall_ms(void); /* CLOCK_REALTIME, Unix ms */

/* ---- random (random.c) -------------------------------------------------- */
/* Fills buf with n random bytes from getrandom(2); 0 or a negative code. */
int reign__random_bytes(void *buf, size_t n);
/* Writes 2*n lower-case hex digits of n random bytes and a NUL into out. */
int reign__random_hex(char *out, size_t n);

/* ---- ids (ident.c) ------------------------------------------------------ */
/* "<hostname>-<pid>", allocated; 0 or REIGN_ENOMEM. */
int reign__default_id(char **out);
/* 1 to max bytes, no control characters. */
bool reign__id_ok(const char *id, size_t max);

/* ---- growable byte buffer (buf.c) --------------------------------------- */
typedef struct reign__buf {
    char *data; /* always NUL-terminated when non-NULL */
    size_t len;
    size_t cap;
    bool oom; /* an append failed: the buffer is incomplete */
} reign__buf;

void reign__buf_init(reign__buf *b);
void reign__buf_free(reign__buf *b);
/* As reign__buf_free(), its bytes zeroed first: it held a secret (a password, a token). */
void reign__buf_wipe(reign__buf *b);
void reign__buf_reset(reign__buf *b);
int reign__buf_append(reign__buf *b, const void *p, size_t n);
int reign__buf_puts(reign__buf *b, const char *s);
int reign__buf_printf(reign__buf *b, const char *fmt, ...) REIGN__PRINTF(2, 3);

/* ---- a set of strings (strset.c) --------------------------------------- */
/* Zeroed is empty.  v[0..n-1] are the strings (copies), in the order they were added. */
typedef struct reign__strset {
    char **v;
    size_t n;
    size_t *slots; /* cap of them: 0 empty, else an index into v plus one */
    size_t cap;
} reign__strset;

/* FNV-1a, 64 bits, of a string (without its NUL). */
uint64_t reign__hash_str(const char *s);

/* 1 if s was added, 0 if it was there, REIGN_ENOMEM. */
int reign__strset_add(reign__strset *set, const char *s);
bool reign__strset_has(const reign__strset *set, const char *s);
void reign__strset_free(reign__strset *set);

/* A set of 64-bit keys (strset.c), 8 bytes a key at most twice over: for many small keys, such
 * as hashes.  Zeroed is empty. */
typedef struct reign__u64set {
    uint64_t *slots; /* cap of them: 0 empty, else the key + 1 (a key of UINT64_MAX: 0) */
    size_t n, cap;
    bool has_max; /* UINT64_MAX, which has no slot */
} reign__u64set;

/* 1 if k was added, 0 if it was there, REIGN_ENOMEM. */
int reign__u64set_add(reign__u64set *set, uint64_t k);
bool reign__u64set_has(const reign__u64set *set, uint64_t k);
void reign__u64set_free(reign__u64set *set);

/* "dir/name", allocated; NULL on OOM. */
char *reign__path_join(const char *dir, const char *name);

/* snprintf into a fixed buffer, always terminated, never failing. */
void reign__strlcpy(char *dst, const char *src, size_t n);
void reign__errf(char *buf, size_t n, const char *fmt, ...) REIGN__PRINTF(3, 4);

/* ---- timers (timer.c): a binary min-heap ordered by due time ------------ */
typedef struct reign__timer reign__timer;
typedef void reign__timer_fn(reign__timer *t, void *arg);

struct reign__timer {
    int64_t due_ns;
    size_t index; /* position in the heap, SIZE_MAX when not armed */
    reign__timer_fn *fn;
    void *arg;
};

typedef struct reign__timers {
    reign__timer **heap;
    size_t n;
    size_t cap;
} reign__timers;

void reign__timer_init(reign__timer *t, reign__timer_fn *fn, void *arg);
bool reign__timer_armed(const reign__timer *t);
/* (Re)arms t at due_ns. */
int reign__timer_start(reign__timers *ts, reign__timer *t, int64_t due_ns);
void reign__timer_stop(reign__timers *ts, reign__timer *t);
/* Due time of the earliest timer, or -1. */
int64_t reign__timers_next(const reign__timers *ts);
/* Runs every timer due at or before now (each disarmed before its call). */
void reign__timers_run(reign__timers *ts, int64_t now_ns);
void reign__timers_free(reign__timers *ts);

#endif
