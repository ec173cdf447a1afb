/*
 * uri.h - parses the URIs that name a store:
 *
 *   zk://[user[:password]@]host[:port][,host[:port]...][/chroot][?k=v&k=v]
 *   sqlite:///absolute/path.db[?k=v]      (later: mysql://, postgres://)
 *
 * Components are percent-decoded.  The parser knows no scheme's meaning
 * beyond syntax; the backend that takes the scheme checks the rest.
 * Private to the library.
 */
#ifndef REIGN_URI_H
#define REIGN_URI_H

#include <stddef.h>

#define REIGN__URI_MAX        4096 /* longest URI accepted */
#define REIGN__URI_MAX_HOSTS  64
#define REIGN__URI_MAX_PARAMS 32

typedef struct reign__uri_host {
    char *host; /* name, IPv4 address, or IPv6 address without brackets */
    int port;   /* 0 if absent */
    int ipv6;   /* was written in brackets */
} reign__uri_host;

typedef struct reign__uri_kv {
    char *key;
    char *value; /* "" for "?flag" */
} reign__uri_kv;

typedef struct reign__uri {
    char *scheme;           /* lower-case: "zk", "sqlite", ... */
    char *user;             /* NULL if absent */
    char *password;         /* NULL if absent (":" with nothing after is "") */
    reign__uri_host *hosts; /* n_hosts may be 0 (sqlite:///path) */
    size_t n_hosts;
    char *path; /* decoded, starts with '/', or "" if absent */
    reign__uri_kv *params;
    size_t n_params;
} reign__uri;

/*
 * Parses `s`.  On success *out is a new reign__uri and 0 is returned; else
 * REIGN_EURI (or REIGN_ENOMEM) and `err` gets one line naming what is wrong
 * and where, quoting the offending part (never the password).
 * Rejects: no "scheme://", an empty or bad host, a port outside 1..65535,
 * bad percent escapes, control characters, repeated parameters, more than
 * the limits above.
 */
int reign__uri_parse(const char *s, reign__uri **out, char *err, size_t errlen);
void reign__uri_free(reign__uri *u);

/* The value of parameter `key`, or NULL. */
const char *reign__uri_param(const reign__uri *u, const char *key);

/*
 * Reads parameter `key` as a decimal integer in [min, max] into *out.
 * Returns 0 if absent (leaving *out), 1 if read, REIGN_EURI if malformed or
 * out of range (err says which).
 */
int reign__uri_param_int(const reign__uri *u, const char *key, long min, long max, long *out,
                         char *err, size_t errlen);

/*
 * Fails with REIGN_EURI naming the first parameter not in `known`
 * (NULL-terminated), so that typos are reported, not ignored.
 */
int reign__uri_check_params(const reign__uri *u, const char *const *known, char *err,
                            size_t errlen);

/*
 * "host:port,host:port" for the ZooKeeper C client (IPv6 in brackets),
 * with default_port where none was given.  Caller frees with reign__free.
 */
char *reign__uri_hosts_string(const reign__uri *u, int default_port);

#endif
