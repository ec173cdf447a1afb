/*
 * config.c - reads reign.conf (config.h, man reign.conf(5)) with inih.
 *
 * inih does the INI syntax; this file feeds it the text one line at a time
 * through its reader hook, which is how we know the line number of every
 * key and section header (the Debian build of inih passes none), and it
 * checks what inih would otherwise take silently: over-long lines (inih
 * would cut them in two), NUL bytes, and indented lines (inih would glue
 * them to the value before).  The first problem found is reported; the
 * checks that need the whole file (required keys, the target of a check of
 * a given type, timing) run after the parse, in file order, and the lack of
 * a fence method is looked for last so that its code, REIGND_ENOFENCE, only
 * ever means that.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"

#define DAY_MS           (24 * 3600 * 1000LL)
#define COUNT_MAX        1000
#define FENCE_MAX        16
#define SERVICE_NAME_MAX 64
#define ID_MAX           200
#define FILE_MAX         (1 << 20)

#define DEFAULT_SESSION_TIMEOUT_MS     10000
#define DEFAULT_INTERVAL_MS            1000
#define DEFAULT_RISE                   2
#define DEFAULT_FALL                   3
#define DEFAULT_HOOK_TIMEOUT_MS        30000
#define DEFAULT_GRACEFUL_TIMEOUT_MS    5000
#define DEFAULT_SHELL_FENCE_TIMEOUT_MS 30000

/* ---- keys ---------------------------------------------------------------- */

struct parse;
typedef int setter(struct parse *p, void *field, const char *value);

typedef struct key {
    const char *name;
    setter *set;
    size_t offset; /* into reignd_config or reignd_service_config */
} key;

static setter set_string, set_path, set_address, set_duration, set_count, set_log_level,
    set_check_type, set_uri, set_ident, set_fence;

#define DAEMON(field) offsetof(reignd_config, field)
enum { D_CONTROL_SOCKET, D_PEER_LISTEN, D_PEER_SECRET_FILE, D_METRICS_LISTEN, D_LOG_LEVEL };
static const key daemon_keys[] = {
    [D_CONTROL_SOCKET] = {"control_socket", set_path, DAEMON(control_socket)},
    [D_PEER_LISTEN] = {"peer_listen", set_address, DAEMON(peer_listen)},
    [D_PEER_SECRET_FILE] = {"peer_secret_file", set_path, DAEMON(peer_secret_file)},
    [D_METRICS_LISTEN] = {"metrics_listen", set_address, DAEMON(metrics_listen)},
    [D_LOG_LEVEL] = {"log_level", set_log_level, DAEMON(log_level)},
};

#define SVC(field) offsetof(reignd_service_config, field)
enum {
    K_ELECTION_URI,
    K_ELECTION_NAME,
    K_NODE_ID,
    K_SERVICE_ADDRESS,
    K_PEER_ADDRESS,
    K_SESSION_TIMEOUT,
    K_CHECK_TYPE,
    K_CHECK_TARGET,
    K_CHECK_INTERVAL,
    K_CHECK_TIMEOUT,
    K_CHECK_RISE,
    K_CHECK_FALL,
    K_BECOME_ACTIVE,
    K_BECOME_ACTIVE_TIMEOUT,
    K_BECOME_STANDBY,
    K_BECOME_STANDBY_TIMEOUT,
    K_NOTIFY,
    K_NOTIFY_TIMEOUT,
    K_FENCE,
    N_SERVICE_KEYS
};
static const key service_keys[N_SERVICE_KEYS] = {
    [K_ELECTION_URI] = {"election_uri", set_uri, SVC(election_uri)},
    [K_ELECTION_NAME] = {"election_name", set_ident, SVC(election_name)},
    [K_NODE_ID] = {"node_id", set_ident, SVC(node_id)},
    [K_SERVICE_ADDRESS] = {"service_address", set_address, SVC(service_address)},
    [K_PEER_ADDRESS] = {"peer_address", set_address, SVC(peer_address)},
    [K_SESSION_TIMEOUT] = {"session_timeout", set_duration, SVC(session_timeout_ms)},
    [K_CHECK_TYPE] = {"check_type", set_check_type, SVC(check_type)},
    [K_CHECK_TARGET] = {"check_target", set_string, SVC(check_target)},
    [K_CHECK_INTERVAL] = {"check_interval", set_duration, SVC(check_interval_ms)},
    [K_CHECK_TIMEOUT] = {"check_timeout", set_duration, SVC(check_timeout_ms)},
    [K_CHECK_RISE] = {"check_rise", set_count, SVC(check_rise)},
    [K_CHECK_FALL] = {"check_fall", set_count, SVC(check_fall)},
    [K_BECOME_ACTIVE] = {"become_active", set_string, SVC(become_active.command)},
    [K_BECOME_ACTIVE_TIMEOUT] = {"become_active_timeout", set_duration,
                                 SVC(become_active.timeout_ms)},
    [K_BECOME_STANDBY] = {"become_standby", set_string, SVC(become_standby.command)},
    [K_BECOME_STANDBY_TIMEOUT] = {"become_standby_timeout", set_duration,
                                  SVC(become_standby.timeout_ms)},
    [K_NOTIFY] = {"notify", set_string, SVC(notify.command)},
    [K_NOTIFY_TIMEOUT] = {"notify_timeout", set_duration, SVC(notify.timeout_ms)},
    [K_FENCE] = {"fence", set_fence, 0},
};
#define N_DAEMON_KEYS (sizeof(daemon_keys) / sizeof(daemon_keys[0]))

/* ---- parse state ------------------------------------------------------- */

/* What the parse remembers of a section beyond the result: the line of
 * each key, for duplicates and for the checks after the parse. */
typedef struct section_lines {
    unsigned header;
    unsigned key[N_SERVICE_KEYS];
} section_lines;

typedef struct parse {
    const char *name; /* the file's name, for messages */
    const char *text;
    size_t len, pos;
    unsigned line; /* the line inih is working on */

    reignd_config *cfg;
    section_lines daemon;     /* daemon.header 0: no [daemon] section yet */
    section_lines *svc_lines; /* parallel to cfg->services */
    bool in_daemon;           /* else the last service, if any */
    bool in_section;

    int err;           /* 0 until the first problem */
    unsigned err_line; /* 0: about the whole file */
    char *msg;
    size_t msglen;
} parse;

/* Records the first problem; later ones are dropped.  Returns err. */
static int fail_at(parse *p, int err, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_at(parse *p, int err, unsigned line, const char *fmt, ...)
{
    if (p->err)
        return p->err;
    p->err = err;
    p->err_line = line;
    int n = line ? snprintf(p->msg, p->msglen, "%s:%u: ", p->name, line)
                 : snprintf(p->msg, p->msglen, "%s: ", p->name);
    if (n >= 0 && (size_t)n < p->msglen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->msg + n, p->msglen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* A piece of the input fit to quote in a message: at most 48 bytes, control
 * characters and quotes as '?'. */
static const char *quoted(const char *s, char *buf, size_t buflen)
{
    size_t n = 0;
    for (; *s && n + 4 < buflen && n < 48; s++)
        buf[n++] = ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\'') ? '?' : *s;
    if (*s && n + 4 <= buflen) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}
#define Q(s) quoted((s), (char[64]){0}, 64)

static bool has_control(const char *s, bool tab_ok)
{
    for (; *s; s++)
        if (((unsigned char)*s < 0x20 && !(tab_ok && *s == '\t')) || *s == 0x7f)
            return true;
    return false;
}

static char *dup_str(parse *p, const char *s)
{
    char *d = strdup(s);
    if (!d)
        fail_at(p, REIGN_ENOMEM, 0, "out of memory");
    return d;
}

/* ---- values -------------------------------------------------------------- */

int reignd_parse_duration_ms(const char *s, int64_t *ms)
{
    int64_t n = 0;
    const char *c = s;
    if (!isdigit((unsigned char)*c))
        return REIGN_EINVAL;
    for (; isdigit((unsigned char)*c); c++) {
        n = n * 10 + (*c - '0');
        if (n > DAY_MS)
            return REIGN_EINVAL;
    }
    int64_t unit;
    if (strcmp(c, "ms") == 0)
        unit = 1;
    else if (strcmp(c, "s") == 0)
        unit = 1000;
    else if (strcmp(c, "m") == 0)
        unit = 60 * 1000;
    else if (strcmp(c, "h") == 0)
        unit = 3600 * 1000;
    else
        return REIGN_EINVAL;
    if (n <= 0 || n > DAY_MS / unit)
        return REIGN_EINVAL;
    *ms = n * unit;
    return 0;
}

static bool host_char(char c)
{
    return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '_';
}

/* Parses a port of 1..65535 from [s, end). */
static int parse_port(const char *s, const char *end, int *port)
{
    int v = 0;
    if (s == end || end - s > 5)
        return REIGN_EINVAL;
    for (; s < end; s++) {
        if (!isdigit((unsigned char)*s))
            return REIGN_EINVAL;
        v = v * 10 + (*s - '0');
    }
    if (v < 1 || v > 65535)
        return REIGN_EINVAL;
    *port = v;
    return 0;
}

/* Splits "host[:port]" in [s, end); with no port, *port is left alone
 * unless one is required. */
static int split_host(const char *s, const char *end, bool port_required, char *host,
                      size_t hostlen, int *port)
{
    const char *h = s, *hend, *colon;
    if (s < end && *s == '[') {
        hend = memchr(s, ']', (size_t)(end - s));
        if (!hend)
            return REIGN_EINVAL;
        h = s + 1;
        for (const char *c = h; c < hend; c++)
            if (!isxdigit((unsigned char)*c) && *c != ':' && *c != '.')
                return REIGN_EINVAL;
        colon = hend + 1 < end ? hend + 1 : NULL;
        if (colon && *colon != ':')
            return REIGN_EINVAL;
    } else {
        colon = memchr(s, ':', (size_t)(end - s));
        hend = colon ? colon : end;
        for (const char *c = h; c < hend; c++)
            if (!host_char(*c))
                return REIGN_EINVAL;
    }
    size_t n = (size_t)(hend - h);
    if (n == 0 || n >= hostlen)
        return REIGN_EINVAL;
    if (colon) {
        if (parse_port(colon + 1, end, port) < 0)
            return REIGN_EINVAL;
    } else if (port_required) {
        return REIGN_EINVAL;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    return 0;
}

int reignd_parse_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    return split_host(s, s + strlen(s), true, host, hostlen, port);
}

int reignd_parse_http_url(const char *url, char *host, size_t hostlen, int *port, const char **path)
{
    static const char scheme[] = "http://";
    if (strncmp(url, scheme, sizeof(scheme) - 1) != 0)
        return REIGN_EINVAL;
    for (const char *c = url; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return REIGN_EINVAL;
    const char *h = url + sizeof(scheme) - 1;
    const char *slash = strchr(h, '/');
    const char *end = slash ? slash : h + strlen(h);
    *port = 80;
    if (split_host(h, end, false, host, hostlen, port) < 0)
        return REIGN_EINVAL;
    *path = slash ? slash : "/";
    return 0;
}

static int set_string(parse *p, void *field, const char *value)
{
    char **f = field;
    if (has_control(value, true))
        return fail_at(p, REIGN_EINVAL, p->line, "control character in the value");
    *f = dup_str(p, value);
    return p->err;
}

static int set_path(parse *p, void *field, const char *value)
{
    if (value[0] != '/')
        return fail_at(p, REIGN_EINVAL, p->line, "'%s' is not an absolute path", Q(value));
    return set_string(p, field, value);
}

static int set_address(parse *p, void *field, const char *value)
{
    char host[256];
    int port;
    if (reignd_parse_hostport(value, host, sizeof(host), &port) < 0)
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not an address (host:port or [ipv6]:port, port 1-65535)", Q(value));
    return set_string(p, field, value);
}

static int set_duration(parse *p, void *field, const char *value)
{
    if (reignd_parse_duration_ms(value, field) < 0)
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not a duration (a whole number above 0 and a unit: 500ms, 2s, "
                       "1m, 1h; at most 24h)",
                       Q(value));
    return 0;
}

static int set_count(parse *p, void *field, const char *value)
{
    int v = 0;
    const char *c = value;
    for (; isdigit((unsigned char)*c) && v <= COUNT_MAX; c++)
        v = v * 10 + (*c - '0');
    if (c == value || *c || v < 1 || v > COUNT_MAX)
        return fail_at(p, REIGN_EINVAL, p->line, "'%s' is not a count (1 to %d)", Q(value),
                       COUNT_MAX);
    *(int *)field = v;
    return 0;
}

static const char *const level_names[] = {"error", "warning", "notice", "info", "debug"};
static const char *const check_names[] = {"command", "tcp", "http"};
static const char *const fence_names[] = {"graceful", "shell"};

/* Index of `value` in names[n], or -1. */
static int lookup(const char *const *names, int n, const char *value)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], value) == 0)
            return i;
    return -1;
}

static int set_log_level(parse *p, void *field, const char *value)
{
    int i = strcmp(value, "warn") == 0 ? REIGND_LOG_WARNING : lookup(level_names, 5, value);
    if (i < 0)
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not a log level (error, warning, notice, info, debug)", Q(value));
    *(reignd_log_level *)field = (reignd_log_level)i;
    return 0;
}

static int set_check_type(parse *p, void *field, const char *value)
{
    int i = lookup(check_names, 3, value);
    if (i < 0)
        return fail_at(p, REIGN_EINVAL, p->line, "'%s' is not a check type (command, tcp, http)",
                       Q(value));
    *(reignd_check_type *)field = (reignd_check_type)i;
    return 0;
}

/* Election and node names, as reign_election_join() takes them. */
static bool valid_ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._:-", *s))
            return false;
    return true;
}

static int set_ident(parse *p, void *field, const char *value)
{
    if (!valid_ident(value, ID_MAX))
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not a valid name (letters, digits, '.', '_', ':', '-'; at most %d)",
                       Q(value), ID_MAX);
    return set_string(p, field, value);
}

/*
 * The election URI.  A password written into it would sit in a file many
 * can read and end up in process listings of tools that copy it, so it is
 * refused: the URI names a password file instead (password_file=), or the
 * daemon gets REIGN_PASSWORD.  Messages quote only the scheme.
 */
static int set_uri(parse *p, void *field, const char *value)
{
    static const char *const schemes[] = {"zk",    "etcd",    "etcds",    "sqlite",
                                          "mysql", "mariadb", "postgres", "postgresql"};
    const char *sep = strstr(value, "://");
    size_t slen = sep ? (size_t)(sep - value) : 0;
    bool known = false;
    for (size_t i = 0; sep && i < sizeof(schemes) / sizeof(schemes[0]); i++)
        known |= strlen(schemes[i]) == slen && strncmp(value, schemes[i], slen) == 0;
    if (!known)
        return fail_at(p, REIGN_EINVAL, p->line,
                       "election_uri: not a store URI (zk://, etcd://, etcds://, sqlite://, "
                       "mysql://, mariadb://, postgres://)");
    for (const char *c = value; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return fail_at(p, REIGN_EINVAL, p->line,
                           "election_uri: space or control character in the URI");
    const char *auth = sep + 3;
    size_t alen = strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *c = auth; c < auth + alen; c++)
        if (*c == '@')
            at = c;
    if (at && memchr(auth, ':', (size_t)(at - auth)))
        return fail_at(p, REIGN_EINVAL, p->line,
                       "election_uri: a password written in the URI is refused; name a file "
                       "holding it with ?password_file=PATH (or set REIGN_PASSWORD)");
    return set_string(p, field, value);
}

/* A fence method's "(timeout=DURATION)" at *c; moves *c past it. */
static int fence_options(const char **c, int64_t *timeout)
{
    static const char prefix[] = "(timeout=";
    const char *close = strchr(*c, ')');
    char opt[32];
    size_t n = close ? (size_t)(close - *c) : 0;
    if (!close || strncmp(*c, prefix, sizeof(prefix) - 1) != 0 || n >= sizeof(opt))
        return REIGN_EINVAL;
    n -= sizeof(prefix) - 1;
    memcpy(opt, *c + sizeof(prefix) - 1, n);
    opt[n] = '\0';
    if (reignd_parse_duration_ms(opt, timeout) < 0)
        return REIGN_EINVAL;
    *c = close + 1;
    return 0;
}

/*
 * One fence method: "graceful", "graceful(timeout=5s)", "shell:COMMAND",
 * "shell(timeout=30s):COMMAND".  Appended in file order.
 */
static int set_fence(parse *p, void *field, const char *value)
{
    reignd_service_config *svc = field;
    size_t nlen = strspn(value, "abcdefghijklmnopqrstuvwxyz");
    char name[16];
    snprintf(name, sizeof(name), "%.*s", (int)(nlen < 15 ? nlen : 15), value);
    int kind = lookup(fence_names, 2, name);
    if (kind < 0 || nlen >= sizeof(name))
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not a fence method (graceful, shell:COMMAND; each with an "
                       "optional (timeout=DURATION) after its name)",
                       Q(value));
    int64_t timeout = kind == REIGND_FENCE_GRACEFUL ? DEFAULT_GRACEFUL_TIMEOUT_MS
                                                    : DEFAULT_SHELL_FENCE_TIMEOUT_MS;
    const char *c = value + nlen;
    if (*c == '(' && fence_options(&c, &timeout) < 0)
        return fail_at(p, REIGN_EINVAL, p->line,
                       "fence method '%s': the only option is (timeout=DURATION), e.g. "
                       "%s(timeout=10s)",
                       name, name);
    const char *command = NULL;
    if (kind == REIGND_FENCE_SHELL) {
        command = *c == ':' ? c + 1 + strspn(c + 1, " \t") : "";
        if (!*command)
            return fail_at(p, REIGN_EINVAL, p->line,
                           "fence method 'shell' needs a command: shell:COMMAND");
        if (has_control(command, true))
            return fail_at(p, REIGN_EINVAL, p->line, "control character in the value");
    } else if (*c) {
        return fail_at(p, REIGN_EINVAL, p->line,
                       "fence method 'graceful' takes no argument (only (timeout=DURATION))");
    }
    if (svc->n_fence >= FENCE_MAX)
        return fail_at(p, REIGN_EINVAL, p->line, "more than %d fence methods", FENCE_MAX);
    reignd_fence_method *f = realloc(svc->fence, (svc->n_fence + 1) * sizeof(*f));
    if (!f)
        return fail_at(p, REIGN_ENOMEM, 0, "out of memory");
    svc->fence = f;
    f += svc->n_fence;
    *f = (reignd_fence_method){(reignd_fence_kind)kind, NULL, timeout, p->line};
    if (command && !(f->command = dup_str(p, command)))
        return p->err;
    svc->n_fence++;
    return 0;
}

/* ---- sections ------------------------------------------------------------ */

static reignd_service_config *current_service(parse *p)
{
    return p->cfg->n_services ? &p->cfg->services[p->cfg->n_services - 1] : NULL;
}

static int begin_service(parse *p, const char *name)
{
    if (!valid_ident(name, SERVICE_NAME_MAX) || strchr(name, ':'))
        return fail_at(p, REIGN_EINVAL, p->line,
                       "'%s' is not a service name (letters, digits, '.', '_', '-'; at most %d)",
                       Q(name), SERVICE_NAME_MAX);
    reignd_config *cfg = p->cfg;
    for (size_t i = 0; i < cfg->n_services; i++)
        if (strcmp(cfg->services[i].name, name) == 0)
            return fail_at(p, REIGN_EINVAL, p->line, "duplicate service '%s' (first at line %u)",
                           name, cfg->services[i].line);
    size_t n = cfg->n_services + 1;
    reignd_service_config *s = realloc(cfg->services, n * sizeof(*s));
    if (s)
        cfg->services = s;
    section_lines *l = realloc(p->svc_lines, n * sizeof(*l));
    if (l)
        p->svc_lines = l;
    if (!s || !l)
        return fail_at(p, REIGN_ENOMEM, 0, "out of memory");
    s += n - 1;
    *s = (reignd_service_config){.line = p->line};
    l[n - 1] = (section_lines){.header = p->line};
    cfg->n_services = n;
    if (!(s->name = dup_str(p, name)))
        return p->err;
    return 0;
}

/* A section header "[NAME]" seen by the reader; `name` is what is between
 * the brackets. */
static int begin_section(parse *p, char *name)
{
    while (isspace((unsigned char)*name))
        name++;
    size_t n = strlen(name);
    while (n && isspace((unsigned char)name[n - 1]))
        name[--n] = '\0';
    p->in_section = true;
    if (strcmp(name, "daemon") == 0) {
        if (p->daemon.header)
            return fail_at(p, REIGN_EINVAL, p->line,
                           "duplicate [daemon] section (first at line %u)", p->daemon.header);
        p->daemon.header = p->line;
        p->in_daemon = true;
        return 0;
    }
    p->in_daemon = false;
    if (strncmp(name, "service", 7) == 0 &&
        (name[7] == '\0' || name[7] == ' ' || name[7] == '\t')) {
        char *svc = name + 7;
        while (*svc == ' ' || *svc == '\t')
            svc++;
        return begin_service(p, svc);
    }
    return fail_at(p, REIGN_EINVAL, p->line,
                   "unknown section '[%s]' (expected [daemon] or [service NAME])", Q(name));
}

/* inih's handler: one "key = value" of the current section. */
static int on_key(void *user, const char *section, const char *name, const char *value)
{
    parse *p = user;
    if (p->err)
        return 0;
    if (!p->in_section) {
        fail_at(p, REIGN_EINVAL, p->line, "key '%s' outside of any section", Q(name));
        return 0;
    }
    const key *keys = p->in_daemon ? daemon_keys : service_keys;
    size_t n = p->in_daemon ? N_DAEMON_KEYS : N_SERVICE_KEYS;
    section_lines *lines = p->in_daemon ? &p->daemon : &p->svc_lines[p->cfg->n_services - 1];
    char *base = p->in_daemon ? (char *)p->cfg : (char *)current_service(p);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(keys[i].name, name) != 0)
            continue;
        if (keys[i].set != set_fence && lines->key[i]) {
            fail_at(p, REIGN_EINVAL, p->line, "duplicate key '%s' (first at line %u)", name,
                    lines->key[i]);
            return 0;
        }
        if (!value[0]) {
            fail_at(p, REIGN_EINVAL, p->line, "empty value for '%s'", name);
            return 0;
        }
        if (!lines->key[i])
            lines->key[i] = p->line;
        return keys[i].set(p, keys[i].set == set_fence ? base : base + keys[i].offset, value) == 0;
    }
    fail_at(p, REIGN_EINVAL, p->line, "unknown key '%s' in %s", Q(name),
            p->in_daemon ? "[daemon]" : "a [service] section");
    return 0;
}

/*
 * inih's reader: the next line of the text.  Checks what inih would take
 * silently, and notices section headers (to know each one's line).
 */
static char *next_line(char *str, int num, void *stream)
{
    parse *p = stream;
    if (p->err || p->pos >= p->len)
        return NULL;
    const char *start = p->text + p->pos;
    const char *nl = memchr(start, '\n', p->len - p->pos);
    size_t n = nl ? (size_t)(nl - start) + 1 : p->len - p->pos;
    p->pos += n;
    p->line++;
    size_t content = n - (nl ? 1 : 0);
    if (content && start[content - 1] == '\r')
        content--;
    if (content > REIGND_CONFIG_MAX_LINE || n + 1 > (size_t)num) {
        fail_at(p, REIGN_EINVAL, p->line, "line longer than %d characters", REIGND_CONFIG_MAX_LINE);
        return NULL;
    }
    memcpy(str, start, n);
    str[n] = '\0';

    char *s = str;
    if (p->line == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
        s += 3; /* a UTF-8 byte order mark, which inih skips too */
    size_t lead = strspn(s, " \t");
    s += lead;
    if (*s == '\0' || *s == '\n' || *s == '\r' || *s == ';' || *s == '#')
        return str;
    if (lead) {
        /* inih would append it to the previous key's value. */
        fail_at(p, REIGN_EINVAL, p->line,
                "indented line: remove the indentation (a value must fit on one line)");
        return NULL;
    }
    if (*s == '[') {
        char *close = strchr(s, ']');
        if (close) {
            char name[REIGND_CONFIG_MAX_LINE + 1];
            snprintf(name, sizeof(name), "%.*s", (int)(close - s - 1), s + 1);
            if (begin_section(p, name) < 0)
                return NULL;
        }
    }
    return str;
}

/* ---- checks after the parse --------------------------------------------- */

static int check_target(parse *p, reignd_service_config *svc, const section_lines *l)
{
    unsigned line = l->key[K_CHECK_TARGET];
    char host[256];
    int port;
    const char *path;
    switch (svc->check_type) {
    case REIGND_CHECK_TCP:
        if (reignd_parse_hostport(svc->check_target, host, sizeof(host), &port) < 0)
            return fail_at(p, REIGN_EINVAL, line,
                           "check_target '%s' is not host:port (check_type is tcp)",
                           Q(svc->check_target));
        break;
    case REIGND_CHECK_HTTP:
        if (reignd_parse_http_url(svc->check_target, host, sizeof(host), &port, &path) < 0)
            return fail_at(p, REIGN_EINVAL, line,
                           "check_target '%s' is not http://host[:port]/path (check_type is http)",
                           Q(svc->check_target));
        break;
    case REIGND_CHECK_COMMAND:
        break;
    }
    return 0;
}

/* The host of an address, and whether it is a wildcard (listen on all). */
static bool wildcard_address(const char *addr)
{
    char host[256];
    int port;
    return reignd_parse_hostport(addr, host, sizeof(host), &port) < 0 ||
           strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0;
}

static int default_node_id(parse *p, reignd_service_config *svc)
{
    char host[256] = "";
    if (gethostname(host, sizeof(host) - 1) < 0 || !valid_ident(host, ID_MAX))
        return fail_at(p, REIGN_EINVAL, svc->line,
                       "[service %s]: node_id is not set and the host name '%s' cannot serve as "
                       "one; set node_id",
                       svc->name, Q(host));
    svc->node_id = dup_str(p, host);
    return p->err;
}

static const char *const required[] = {
    [K_ELECTION_URI] = "election_uri",   [K_SERVICE_ADDRESS] = "service_address",
    [K_CHECK_TYPE] = "check_type",       [K_CHECK_TARGET] = "check_target",
    [K_BECOME_ACTIVE] = "become_active", [K_BECOME_STANDBY] = "become_standby",
};

static void fill_timing(reignd_service_config *svc)
{
    reignd_timing *t = &svc->timing;
    t->detection_ms = svc->check_interval_ms * svc->check_fall + svc->check_timeout_ms;
    t->fence_ms = 0;
    for (size_t i = 0; i < svc->n_fence; i++)
        t->fence_ms += svc->fence[i].timeout_ms;
    t->takeover_on_failure_ms = t->detection_ms + t->fence_ms + svc->become_active.timeout_ms;
    t->takeover_on_crash_ms = svc->session_timeout_ms + t->fence_ms + svc->become_active.timeout_ms;
}

static void fill_defaults(reignd_service_config *svc)
{
    if (!svc->session_timeout_ms)
        svc->session_timeout_ms = DEFAULT_SESSION_TIMEOUT_MS;
    if (!svc->check_interval_ms)
        svc->check_interval_ms = DEFAULT_INTERVAL_MS;
    if (!svc->check_timeout_ms)
        svc->check_timeout_ms = svc->check_interval_ms;
    if (!svc->check_rise)
        svc->check_rise = DEFAULT_RISE;
    if (!svc->check_fall)
        svc->check_fall = DEFAULT_FALL;
    reignd_command *cmds[] = {&svc->become_active, &svc->become_standby, &svc->notify};
    for (size_t i = 0; i < 3; i++)
        if (!cmds[i]->timeout_ms)
            cmds[i]->timeout_ms = DEFAULT_HOOK_TIMEOUT_MS;
}

static bool uses_graceful(const reignd_service_config *svc)
{
    for (size_t i = 0; i < svc->n_fence; i++)
        if (svc->fence[i].kind == REIGND_FENCE_GRACEFUL)
            return true;
    return false;
}

static int check_service(parse *p, size_t idx)
{
    reignd_config *cfg = p->cfg;
    reignd_service_config *svc = &cfg->services[idx];
    const section_lines *l = &p->svc_lines[idx];
    for (size_t k = 0; k < sizeof(required) / sizeof(required[0]); k++)
        if (required[k] && !l->key[k])
            return fail_at(p, REIGN_EINVAL, svc->line, "[service %s]: missing required key '%s'",
                           svc->name, required[k]);
    if (check_target(p, svc, l) < 0)
        return p->err;
    fill_defaults(svc);
    if (svc->check_timeout_ms > svc->check_interval_ms)
        return fail_at(p, REIGN_EINVAL, l->key[K_CHECK_TIMEOUT],
                       "check_timeout (%lld ms) is longer than check_interval (%lld ms): a check "
                       "must end before the next one starts",
                       (long long)svc->check_timeout_ms, (long long)svc->check_interval_ms);
    svc->election_uri_line = l->key[K_ELECTION_URI];
    if (!svc->election_name && !(svc->election_name = dup_str(p, svc->name)))
        return p->err;
    if (!svc->node_id && default_node_id(p, svc) < 0)
        return p->err;
    for (size_t i = 0; i < idx; i++) {
        const reignd_service_config *o = &cfg->services[i];
        if (strcmp(o->election_uri, svc->election_uri) == 0 &&
            strcmp(o->election_name, svc->election_name) == 0)
            return fail_at(p, REIGN_EINVAL, svc->line,
                           "[service %s] uses the same election as [service %s] (line %u): give "
                           "one an election_name of its own",
                           svc->name, o->name, o->line);
    }
    if (uses_graceful(svc)) {
        unsigned fl = svc->fence[0].line;
        for (size_t i = 0; i < svc->n_fence; i++)
            if (svc->fence[i].kind == REIGND_FENCE_GRACEFUL)
                fl = svc->fence[i].line;
        if (!cfg->peer_listen || !cfg->peer_secret_file)
            return fail_at(p, REIGN_EINVAL, fl,
                           "graceful fencing needs peer_listen and peer_secret_file in [daemon] "
                           "(the reignds ask each other to go standby through that endpoint)");
    }
    if (!svc->peer_address && cfg->peer_listen) {
        if (wildcard_address(cfg->peer_listen))
            return fail_at(p, REIGN_EINVAL, svc->line,
                           "[service %s]: set peer_address (how other nodes reach this reignd): "
                           "peer_listen '%s' listens on all addresses",
                           svc->name, Q(cfg->peer_listen));
        if (!(svc->peer_address = dup_str(p, cfg->peer_listen)))
            return p->err;
    }
    fill_timing(svc);
    return 0;
}

static int default_control_socket(parse *p)
{
    if (geteuid() == 0) {
        p->cfg->control_socket = dup_str(p, "/run/reign/reignd.sock");
        return p->err;
    }
    const char *dir = getenv("XDG_RUNTIME_DIR");
    if (!dir || dir[0] != '/')
        return fail_at(p, REIGN_EINVAL, p->daemon.header,
                       "control_socket is not set and neither is $XDG_RUNTIME_DIR; set "
                       "control_socket in [daemon]");
    size_t n = strlen(dir) + sizeof("/reign/reignd.sock");
    if (!(p->cfg->control_socket = malloc(n)))
        return fail_at(p, REIGN_ENOMEM, 0, "out of memory");
    snprintf(p->cfg->control_socket, n, "%s/reign/reignd.sock", dir);
    return 0;
}

static int check_all(parse *p)
{
    reignd_config *cfg = p->cfg;
    cfg->daemon_line = p->daemon.header;
    cfg->control_socket_line = p->daemon.key[D_CONTROL_SOCKET];
    cfg->peer_listen_line = p->daemon.key[D_PEER_LISTEN];
    cfg->peer_secret_file_line = p->daemon.key[D_PEER_SECRET_FILE];
    cfg->metrics_listen_line = p->daemon.key[D_METRICS_LISTEN];
    if (cfg->peer_listen && !cfg->peer_secret_file)
        return fail_at(p, REIGN_EINVAL, p->daemon.key[D_PEER_LISTEN],
                       "[daemon]: peer_listen needs peer_secret_file (the peers' shared secret)");
    if (cfg->n_services == 0)
        return fail_at(p, REIGN_EINVAL, 0, "no [service NAME] section");
    for (size_t i = 0; i < cfg->n_services; i++)
        if (check_service(p, i) < 0)
            return p->err;
    if (!cfg->control_socket && default_control_socket(p) < 0)
        return p->err;
    /* Last, so that REIGND_ENOFENCE is never returned for a file with other
     * problems. */
    for (size_t i = 0; i < cfg->n_services; i++)
        if (cfg->services[i].n_fence == 0)
            return fail_at(p, REIGND_ENOFENCE, cfg->services[i].line,
                           "[service %s]: no fence method; reignd will not start without one: "
                           "add 'fence = graceful' and/or 'fence = shell:COMMAND'",
                           cfg->services[i].name);
    return 0;
}

/* ---- entry points ------------------------------------------------------ */

int reignd_config_parse(const char *text, size_t len, const char *name, reignd_config **ret,
                        char *err, size_t errlen)
{
    char spare[8];
    parse p = {.name = name,
               .text = text,
               .len = len,
               .msg = errlen ? err : spare,
               .msglen = errlen ? errlen : sizeof(spare)};
    p.msg[0] = '\0';
    *ret = NULL;
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        unsigned line = 1;
        for (const char *c = text; c < nul; c++)
            line += *c == '\n';
        return fail_at(&p, REIGN_EINVAL, line, "NUL byte in the file");
    }
    if (!(p.cfg = calloc(1, sizeof(*p.cfg))) || !(p.cfg->path = strdup(name))) {
        free(p.cfg);
        return fail_at(&p, REIGN_ENOMEM, 0, "out of memory");
    }
    p.cfg->log_level = REIGND_LOG_INFO;
    int rc = ini_parse_stream(next_line, &p, on_key, &p);
    if (rc > 0 && (!p.err || (unsigned)rc < p.err_line)) {
        p.err = 0;
        fail_at(&p, REIGN_EINVAL, (unsigned)rc,
                "syntax error: expected '[section]', 'key = value' or a comment");
    } else if (rc < 0 && !p.err) {
        fail_at(&p, REIGN_ENOMEM, 0, "out of memory");
    }
    if (!p.err)
        check_all(&p);
    free(p.svc_lines);
    if (p.err) {
        reignd_config_free(p.cfg);
        return p.err;
    }
    *ret = p.cfg;
    return 0;
}

/* Reads a whole regular file into *text (NULL on entry; the caller frees it
 * on success and failure alike); 0 or -errno (-EINVAL: not a regular file). */
static int read_file(const char *path, char **text, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0)
        rc = -errno;
    else if (!S_ISREG(st.st_mode))
        rc = -EINVAL;
    else if (st.st_size > FILE_MAX)
        rc = -EFBIG;
    else if (!(*text = malloc((size_t)st.st_size + 1)))
        rc = -ENOMEM;
    size_t got = 0;
    while (rc == 0 && got < (size_t)st.st_size) {
        ssize_t n = read(fd, *text + got, (size_t)st.st_size - got);
        if (n < 0 && errno != EINTR)
            rc = -errno;
        else if (n == 0)
            break; /* shrank meanwhile: parse what there is */
        else if (n > 0)
            got += (size_t)n;
    }
    close(fd);
    if (rc == 0)
        *len = got;
    return rc;
}

int reignd_config_load(const char *path, reignd_config **ret, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    *ret = NULL;
    int rc = read_file(path, &text, &len);
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path,
                 rc == -EINVAL ? "not a regular file" : strerror(-rc));
        free(text);
        return rc;
    }
    rc = reignd_config_parse(text, len, path, ret, err, errlen);
    free(text);
    return rc;
}

static void free_service(reignd_service_config *s)
{
    char *strs[] = {s->name,          s->election_uri,          s->election_name,
                    s->node_id,       s->service_address,       s->peer_address,
                    s->check_target,  s->become_active.command, s->become_standby.command,
                    s->notify.command};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        free(strs[i]);
    for (size_t i = 0; i < s->n_fence; i++)
        free(s->fence[i].command);
    free(s->fence);
}

reignd_config *reignd_config_free(reignd_config *cfg)
{
    if (!cfg)
        return NULL;
    for (size_t i = 0; i < cfg->n_services; i++)
        free_service(&cfg->services[i]);
    free(cfg->services);
    free(cfg->path);
    free(cfg->control_socket);
    free(cfg->peer_listen);
    free(cfg->peer_secret_file);
    free(cfg->metrics_listen);
    free(cfg);
    return NULL;
}

const reignd_service_config *reignd_config_service(const reignd_config *cfg, const char *name)
{
    for (size_t i = 0; cfg && i < cfg->n_services; i++)
        if (strcmp(cfg->services[i].name, name) == 0)
            return &cfg->services[i];
    return NULL;
}

size_t reignd_config_timing_text(const reignd_service_config *svc, char *out, size_t outlen)
{
    const reignd_timing *t = &svc->timing;
    int n = snprintf(out, outlen,
                     "a failed service is detected within %lld ms (%d checks %lld ms apart, "
                     "%lld ms timeout); a new active runs within %lld ms of a failure and "
                     "within %lld ms of its node's crash (session timeout %lld ms, fencing up "
                     "to %lld ms, become_active up to %lld ms)",
                     (long long)t->detection_ms, svc->check_fall, (long long)svc->check_interval_ms,
                     (long long)svc->check_timeout_ms, (long long)t->takeover_on_failure_ms,
                     (long long)t->takeover_on_crash_ms, (long long)svc->session_timeout_ms,
                     (long long)t->fence_ms, (long long)svc->become_active.timeout_ms);
    return n < 0 ? 0 : (size_t)n;
}

const char *reignd_config_timing_warning(const reignd_service_config *svc)
{
    if (svc->timing.detection_ms > svc->session_timeout_ms)
        return "a failed service is noticed later than a dead node (check_interval x check_fall "
               "+ check_timeout exceeds session_timeout); lower check_interval or check_fall";
    return NULL;
}

const char *reignd_log_level_name(reignd_log_level level)
{
    return (unsigned)level < 5 ? level_names[level] : "?";
}

const char *reignd_check_type_name(reignd_check_type type)
{
    return (unsigned)type < 3 ? check_names[type] : "?";
}

const char *reignd_fence_kind_name(reignd_fence_kind kind)
{
    return (unsigned)kind < 2 ? fence_names[kind] : "?";
}
