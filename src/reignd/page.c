/*
 * page.c - the status page of page.h: its HTML, its JSON, and the requests
 * that wait for a view of the stores.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/base64.h>
#include <nettle/sha2.h>

#include "call.h"
#include "markup.h"
#include "page.h"
#include "timeline_svg.h"

#define PAGE_FRESH_MS     1000 /* a view younger than this is served again */
#define PAGE_WAIT_MS      2000 /* the longest a request waits for the stores */
#define PAGE_TERMS_LISTED 10   /* the latest leaderships listed below the timeline */
#define DEFAULT_WIDTH     960

/* ---- the page's fixed parts ----------------------------------------------------- */

static const char page_style[] =
    ":root{--line:#d0d7de;--muted:#57606a}"
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
    "color:#1f2328;background:#f6f8fa}"
    "header{background:#24292f;color:#fff;padding:10px 16px}"
    "header h1{font-size:18px;margin:0}"
    "main{max-width:1400px;margin:0 auto;padding:12px 16px;overflow-wrap:anywhere}"
    ".meta{margin:0 0 8px;color:var(--muted);overflow-wrap:anywhere}"
    "#conn{margin:0;padding:6px 16px;background:#ffebe9;color:#a40e26}"
    "section.svc{margin-bottom:24px}"
    "h2{font-size:18px;margin:8px 0;display:flex;flex-wrap:wrap;gap:6px;align-items:center;"
    "overflow-wrap:anywhere}"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px;"
    "margin-bottom:12px}.cards .card{margin-bottom:0}"
    ".card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:10px 12px;"
    "min-width:0;margin-bottom:12px}"
    ".card h3{font-size:14px;margin:0 0 8px}.card h3 small{color:var(--muted);font-weight:400}"
    "dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 12px;margin:0}"
    "dt{color:var(--muted)}dd{margin:0;overflow-wrap:anywhere}"
    ".leader{margin:0 0 8px;overflow-wrap:anywhere}"
    ".scroll{overflow-x:auto;max-width:100%}"
    "table{border-collapse:collapse;width:100%;font-size:13px;white-space:nowrap}"
    "th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eaeef2}"
    "th{color:var(--muted);font-weight:600}"
    "tr.is-leader td{font-weight:600}"
    ".pill{font-size:12px;padding:1px 8px;border-radius:10px;background:#eaeef2;font-weight:500}"
    ".good{background:#dafbe1;color:#116329}.bad{background:#ffebe9;color:#a40e26}"
    ".warn{background:#fff8c5;color:#7d4e00}"
    ".timeline{margin-bottom:8px}.timeline svg{display:block;max-width:100%;height:auto}"
    ".err{color:#a40e26;margin:0}.none{color:var(--muted);margin:0}"
    "@media (max-width:600px){main{padding:8px}.cards{grid-template-columns:minmax(0,1fr)}"
    "header{padding:8px}}";

/* Fetches status.json every 2 s (the timeline drawn at the width it has) and puts its html in
 * place; says so when the daemon does not answer.  No data in here: it only moves markup that
 * reignd escaped. */
static const char page_script[] =
    "(function(){var main=document.getElementById('main'),"
    "conn=document.getElementById('conn');"
    "function width(){var t=main.querySelector('.timeline');"
    "return Math.round(t?t.clientWidth:main.clientWidth-26);}"
    "function load(){fetch('status.json?width='+width(),{cache:'no-store'})"
    ".then(function(r){if(!r.ok)throw new Error(r.status);return r.json();})"
    ".then(function(j){main.innerHTML=j.html;conn.hidden=true;},"
    "function(){conn.hidden=false;})"
    ".then(function(){setTimeout(load,2000);});}"
    "load();})();";

/* Content-Security-Policy: only the page's own style and script (by their hashes), fetches to
 * this server, nothing else. */
static char csp[400];

static void hash_of(const char *text, char *out, size_t len)
{
    struct sha256_ctx ctx;
    uint8_t digest[SHA256_DIGEST_SIZE];
    char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
    sha256_init(&ctx);
    sha256_update(&ctx, strlen(text), (const uint8_t *)text);
    sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
    base64_encode_raw((void *)b64, SHA256_DIGEST_SIZE, digest);
    b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE)] = '\0';
    snprintf(out, len, "'sha256-%s'", b64);
}

static void make_csp(void)
{
    char style[80], script[80];
    if (csp[0])
        return;
    hash_of(page_style, style, sizeof(style));
    hash_of(page_script, script, sizeof(script));
    snprintf(csp, sizeof(csp),
             "default-src 'none'; style-src %s; script-src %s; connect-src 'self'; "
             "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
             style, script);
}

/* ---- reading the view ----------------------------------------------------------- */

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int flag(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *obj(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsObject(v) ? v : NULL;
}

static reign_term_end end_of(const char *name)
{
    for (int e = REIGN_TERM_LEADING; e <= REIGN_TERM_LOST; e++)
        if (name && strcmp(name, reign_term_end_name((reign_term_end)e)) == 0)
            return (reign_term_end)e;
    return REIGN_TERM_LEADING;
}

/* The history's terms as reign_term (ids borrowed from the view); NULL if none. */
static reign_term *terms_of(const cJSON *history, size_t *n)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(history, "terms"), *j;
    *n = 0;
    int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    reign_term *t = count > 0 ? calloc((size_t)count, sizeof(*t)) : NULL;
    if (!t)
        return NULL;
    cJSON_ArrayForEach(j, arr)
    {
        reign_term *x = &t[(*n)++];
        x->term = (uint64_t)num(j, "term");
        x->token = (uint64_t)num(j, "token");
        x->id = str(j, "id") ? str(j, "id") : "";
        x->started_ms = (int64_t)num(j, "started_ms");
        x->ended_ms = (int64_t)num(j, "ended_ms");
        x->ended_estimated = flag(j, "ended_estimated");
        x->end = end_of(str(j, "end"));
    }
    return t;
}

/* ---- rendering ------------------------------------------------------------------ */

static const char *clock_time(int64_t ms, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    if (!ms || !localtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "-");
    return buf;
}

static const char *ago(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms / 1000;
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(buf, len, "%lld s", (long long)s);
    else if (s < 7200)
        snprintf(buf, len, "%lld min", (long long)(s / 60));
    else if (s < 172800)
        snprintf(buf, len, "%lld h", (long long)(s / 3600));
    else
        snprintf(buf, len, "%lld d", (long long)(s / 86400));
    return buf;
}

/* A pill's class for a controller state or a health. */
static const char *tone(const char *word)
{
    static const char *const good[] = {"active", "healthy"};
    static const char *const calm[] = {"standby", "initializing", "starting", "ceded"};
    for (size_t i = 0; word && i < sizeof(good) / sizeof(good[0]); i++)
        if (strcmp(word, good[i]) == 0)
            return "good";
    for (size_t i = 0; word && i < sizeof(calm) / sizeof(calm[0]); i++)
        if (strcmp(word, calm[i]) == 0)
            return "";
    return word && strncmp(word, "paused", 6) == 0 ? "warn" : "bad";
}

static void pill(markup *m, const char *word, const char *cls)
{
    markup_printf(m, "<span class=\"pill %s %s\">", cls, tone(word));
    markup_escape(m, word ? word : "-");
    markup_printf(m, "</span>");
}

/* <dt>label</dt><dd>text</dd>, the text escaped. */
static void item(markup *m, const char *label, const char *text)
{
    markup_printf(m, "<dt>%s</dt><dd>", label);
    markup_escape(m, text && text[0] ? text : "-");
    markup_printf(m, "</dd>");
}

static void this_node(markup *m, const cJSON *s)
{
    const cJSON *check = obj(s, "check");
    char buf[160];
    markup_printf(m, "<div class=\"card node\"><h3>This node</h3><dl>");
    item(m, "node", str(s, "node"));
    item(m, "state", str(s, "state"));
    markup_printf(m, "<dt>health</dt><dd>");
    markup_escape(m, str(s, "health"));
    if (check) {
        markup_printf(m, "<br><small>");
        markup_escape(m, str(check, "type") ? str(check, "type") : "?");
        markup_printf(m, " check");
        if (str(check, "target")) {
            markup_printf(m, " of ");
            markup_escape(m, str(check, "target"));
        }
        markup_printf(m, " every %g s, healthy after %g, unhealthy after %g</small>",
                      num(check, "interval_ms") / 1000, num(check, "rise"), num(check, "fall"));
    }
    markup_printf(m, "</dd>");
    if (num(s, "term") > 0) {
        snprintf(buf, sizeof(buf), "%.0f, token %.0f", num(s, "term"), num(s, "token"));
        item(m, "leads: term", buf);
    }
    snprintf(buf, sizeof(buf), "%.0f", num(s, "failovers"));
    item(m, "became active", buf);
    if (flag(s, "paused"))
        item(m, "paused by", str(s, "paused_by"));
    if (str(s, "failover_to"))
        item(m, "failing over to", str(s, "failover_to"));
    if (str(s, "conflict"))
        item(m, "conflict", str(s, "conflict"));
    item(m, "last change", str(s, "reason"));
    markup_printf(m, "</dl></div>");
}

static void candidates(markup *m, const cJSON *store, const char *leader, int64_t now)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(store, "candidates"), *c;
    char a[40], b[24];
    int i = 0;
    if (!cJSON_GetArraySize(arr)) {
        markup_printf(m, "<p class=\"none\">no candidates listed</p>");
        return;
    }
    markup_printf(m, "<div class=\"scroll\"><table class=\"candidates\"><thead><tr><th>#</th>"
                     "<th>candidate</th><th>priority</th><th>joined</th><th>service address</th>"
                     "</tr></thead><tbody>");
    cJSON_ArrayForEach(c, arr)
    {
        const char *id = str(c, "id");
        int lead = leader && id && strcmp(id, leader) == 0;
        markup_printf(m, "<tr class=\"candidate%s\" data-id=\"", lead ? " is-leader" : "");
        markup_escape(m, id);
        markup_printf(m, "\"><td>%d</td><td>", ++i);
        markup_escape_cut(m, id && id[0] ? id : "(unknown)", 64);
        markup_printf(m, "%s</td><td>%.0f</td><td>", lead ? " (leader)" : "", num(c, "priority"));
        if (num(c, "joined_ms") > 0)
            markup_printf(m, "%s (%s ago)", clock_time((int64_t)num(c, "joined_ms"), a, sizeof(a)),
                          ago(now - (int64_t)num(c, "joined_ms"), b, sizeof(b)));
        else
            markup_printf(m, "-");
        markup_printf(m, "</td><td>");
        markup_escape(m, str(c, "service_address"));
        markup_printf(m, "</td></tr>");
    }
    markup_printf(m, "</tbody></table></div>");
}

static void election(markup *m, const cJSON *s, const char *note, int64_t now)
{
    const cJSON *store = obj(s, "store");
    const cJSON *leader = store ? obj(store, "leader") : NULL;
    char a[40], b[24];
    markup_printf(m, "<div class=\"card election\"><h3>Election ");
    markup_escape(m, str(s, "election"));
    markup_printf(m, " <small>on ");
    markup_escape(m, str(s, "backend") && str(s, "backend")[0] ? str(s, "backend") : "its store");
    markup_printf(m, "</small></h3>");
    if (!store) {
        markup_printf(m, "<p class=\"err\">");
        markup_escape(m, note ? note : "the store was not read");
        markup_printf(m, "</p></div>");
        return;
    }
    if (str(store, "error")) {
        markup_printf(m, "<p class=\"err\">");
        markup_escape(m, str(store, "error"));
        markup_printf(m, "</p></div>");
        return;
    }
    if (leader) {
        markup_printf(m, "<p class=\"leader\">active: <strong class=\"leader-id\" data-leader=\"");
        markup_escape(m, str(leader, "id"));
        markup_printf(m, "\">");
        markup_escape_cut(m, str(leader, "id") && str(leader, "id")[0] ? str(leader, "id") : "?",
                          64);
        markup_printf(m, "</strong>, term %.0f, token %.0f", num(leader, "term"),
                      num(leader, "token"));
        if (num(leader, "since_ms") > 0)
            markup_printf(m, ", since %s (%s ago)",
                          clock_time((int64_t)num(leader, "since_ms"), a, sizeof(a)),
                          ago(now - (int64_t)num(leader, "since_ms"), b, sizeof(b)));
        markup_printf(m, "</p>");
    } else {
        markup_printf(m, "<p class=\"leader none\" data-leader=\"\">no leader now</p>");
    }
    candidates(m, store, leader ? str(leader, "id") : NULL, now);
    if (num(store, "takeover_ms") > 0)
        markup_printf(m, "<p class=\"none\">takeover after a leader's crash: at most %g s</p>",
                      num(store, "takeover_ms") / 1000);
    markup_printf(m, "</div>");
}

/* The latest leaderships, newest first. */
static void terms_table(markup *m, const reign_term *t, size_t n, int64_t now)
{
    char a[40], d[24], g[24];
    markup_printf(m, "<div class=\"scroll\"><table class=\"terms\"><thead><tr><th>term</th>"
                     "<th>token</th><th>leader</th><th>started</th><th>held</th><th>end</th>"
                     "<th>no leader after</th></tr></thead><tbody>");
    for (size_t k = 0; k < n && k < PAGE_TERMS_LISTED; k++) {
        size_t i = n - 1 - k;
        const reign_term *x = &t[i];
        int64_t held = (x->ended_ms ? x->ended_ms : now) - x->started_ms;
        markup_printf(m, "<tr><td>%llu</td><td>%llu</td><td>", (unsigned long long)x->term,
                      (unsigned long long)x->token);
        markup_escape_cut(m, x->id[0] ? x->id : "(unknown)", 64);
        markup_printf(m, "</td><td>%s</td><td>%s%s</td><td>%s</td><td>",
                      clock_time(x->started_ms, a, sizeof(a)), x->ended_estimated ? "~" : "",
                      timeline_svg_duration(held, d, sizeof(d)), reign_term_end_name(x->end));
        if (i + 1 < n && x->ended_ms)
            markup_printf(m, "%s%s", x->ended_estimated ? "~" : "",
                          timeline_svg_duration(t[i + 1].started_ms - x->ended_ms, g, sizeof(g)));
        else
            markup_printf(m, "-");
        markup_printf(m, "</td></tr>");
    }
    markup_printf(m, "</tbody></table></div>");
}

static void history(markup *m, const cJSON *s, int index, int width, const char *note, int64_t now)
{
    const cJSON *h = obj(s, "history");
    markup_printf(m, "<div class=\"card history\"><h3>Leaderships");
    if (h && !str(h, "error"))
        markup_printf(m, " <small>the last %d of %.0f kept</small>",
                      cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(h, "terms")),
                      num(h, "total"));
    markup_printf(m, "</h3>");
    if (!h || str(h, "error")) {
        markup_printf(m, "<p class=\"%s\">",
                      h && flag(h, "unsupported") ? "none nohistory" : "err");
        markup_escape(m, h ? str(h, "error") : note ? note : "the store was not read");
        markup_printf(m, "</p></div>");
        return;
    }
    size_t n;
    reign_term *t = terms_of(h, &n);
    char id[32];
    snprintf(id, sizeof(id), "timeline-%d", index);
    /* A lane for each candidate too: one that never led is seen standing. */
    const cJSON *cands = cJSON_GetObjectItemCaseSensitive(obj(s, "store"), "candidates");
    int n_ids = cJSON_GetArraySize(cands), k = 0;
    const char **ids = n_ids > 0 ? calloc((size_t)n_ids, sizeof(*ids)) : NULL;
    for (const cJSON *c = ids ? cands->child : NULL; c && k < n_ids; c = c->next)
        ids[k++] = str(c, "id");
    timeline_svg_options o = {.width = width,
                              .now_ms = now,
                              .id = id,
                              .title = str(s, "election"),
                              .ids = ids,
                              .n_ids = ids ? (size_t)k : 0};
    char *svg = timeline_svg(t, n, &o, NULL);
    free(ids);
    markup_printf(m, "<div class=\"timeline\">");
    if (svg)
        markup_raw(m, svg, strlen(svg));
    else
        m->oom = 1;
    markup_printf(m, "</div>");
    if (n)
        terms_table(m, t, n, now);
    free(svg);
    free(t);
    markup_printf(m, "</div>");
}

/* The page's main part: what status.json's "html" holds. */
static void main_part(markup *m, const cJSON *view, int width, const char *note)
{
    int64_t now = (int64_t)num(view, "generated_ms");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(view, "services"), *s;
    char a[40];
    markup_printf(m, "<p class=\"meta\">reign ");
    markup_escape(m, str(view, "version"));
    if (cJSON_GetArraySize(list) > 0) {
        markup_printf(m, " &middot; node ");
        markup_escape(m, str(cJSON_GetArrayItem(list, 0), "node"));
    }
    time_t t = (time_t)(now / 1000);
    struct tm tm;
    char zone[16] = "";
    if (localtime_r(&t, &tm))
        strftime(zone, sizeof(zone), " %Z", &tm);
    markup_printf(m, " &middot; read %s", clock_time(now, a, sizeof(a)));
    markup_escape(m, zone);
    markup_printf(m, "</p>");
    if (note) {
        markup_printf(m, "<p class=\"err\">");
        markup_escape(m, note);
        markup_printf(m, "</p>");
    }
    int index = 0;
    cJSON_ArrayForEach(s, list)
    {
        markup_printf(m, "<section class=\"svc\" data-service=\"");
        markup_escape(m, str(s, "name"));
        markup_printf(m, "\"><h2>");
        markup_escape(m, str(s, "name"));
        pill(m, str(s, "state"), "state");
        pill(m, str(s, "health"), "health");
        if (flag(s, "paused"))
            pill(m, "paused", "paused");
        markup_printf(m, "</h2><div class=\"cards\">");
        this_node(m, s);
        election(m, s, note, now);
        markup_printf(m, "</div>");
        history(m, s, index++, width, note, now);
        markup_printf(m, "</section>");
    }
    if (index == 0)
        markup_printf(m, "<p class=\"none\">no services</p>");
}

char *reignd_page_render(const cJSON *view, int json, int width, const char *note, size_t *len)
{
    markup m = {0};
    if (width <= 0)
        width = DEFAULT_WIDTH;
    if (width > 2400)
        width = 2400;
    if (json) {
        markup part = {0};
        main_part(&part, view, width, note);
        char *html = markup_take(&part, NULL);
        cJSON *out = html ? cJSON_Duplicate(view, 1) : NULL;
        int ok = out && cJSON_AddStringToObject(out, "html", html) &&
                 (note ? cJSON_AddStringToObject(out, "note", note) != NULL
                       : cJSON_AddNullToObject(out, "note") != NULL);
        char *text = ok ? cJSON_PrintUnformatted(out) : NULL;
        cJSON_Delete(out);
        free(html);
        if (text && len)
            *len = strlen(text);
        return text;
    }
    make_csp();
    markup_printf(&m,
                  "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                  "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
                  "<title>reignd status</title><style>%s</style></head><body>"
                  "<header><h1>reignd status</h1></header>"
                  "<p id=\"conn\" hidden>reignd does not answer: the page is not current</p>"
                  "<main id=\"main\">",
                  page_style);
    main_part(&m, view, width, note);
    markup_printf(&m, "</main><script>%s</script></body></html>\n", page_script);
    return markup_take(&m, len);
}

/* ---- the endpoint ---------------------------------------------------------------- */

typedef struct page_req {
    reignd_page *p;
    struct MHD_Connection *conn;
    struct page_req *next, **pprev; /* on p->waiting while it waits */
    int json, width;
    int ready;     /* the view (or the note) is there: answer */
    int suspended; /* its connection is suspended */
    cJSON *view;   /* what to show (owned) */
    char note[200];
} page_req;

struct reignd_page {
    reignd_ops ops;
    uv_loop_t *loop;
    reignd_httpd *httpd;
    uv_timer_t *timer; /* PAGE_WAIT_MS after a read began; NULL when none */
    reignd_call *inflight;
    int slow;          /* the read under way took longer than PAGE_WAIT_MS */
    int stopping;      /* the server stops: no more reads */
    cJSON *last;       /* the latest view */
    uint64_t last_at;  /* uv_now() when it came */
    page_req *waiting; /* suspended requests */
};

int reignd_page_handles(const char *url)
{
    return strcmp(url, "/status") == 0 || strcmp(url, "/status.json") == 0;
}

reignd_page *reignd_page_new(uv_loop_t *loop, const reignd_ops *ops)
{
    reignd_page *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->ops = *ops;
    p->loop = loop;
    make_csp();
    return p;
}

void reignd_page_attach(reignd_page *p, reignd_httpd *httpd)
{
    p->httpd = httpd;
}

static void unlink_waiting(page_req *r)
{
    if (!r->pprev)
        return;
    *r->pprev = r->next;
    if (r->next)
        r->next->pprev = r->pprev;
    r->pprev = NULL;
    r->next = NULL;
}

/* This node's own state, for when the stores are slow: status, with the time. */
static cJSON *local_view(reignd_page *p)
{
    cJSON *v = p->ops.status ? p->ops.status(p->ops.ctx) : NULL;
    if (v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        cJSON_AddNumberToObject(v, "generated_ms",
                                (double)((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000));
        cJSON_AddStringToObject(v, "version", reign_version());
    }
    return v;
}

/* Answers every waiting request: with the latest view, or (slow) this node's own state. */
static void wake_all(reignd_page *p, const char *note)
{
    while (p->waiting) {
        page_req *r = p->waiting;
        unlink_waiting(r);
        r->view = note ? local_view(p) : cJSON_Duplicate(p->last, 1);
        if (note)
            snprintf(r->note, sizeof(r->note), "%s", note);
        r->ready = 1;
        if (r->suspended) {
            r->suspended = 0;
            MHD_resume_connection(r->conn);
        }
    }
    reignd_httpd_kick(p->httpd);
}

static void timer_closed(uv_handle_t *h)
{
    free(h);
}

static void stop_timer(reignd_page *p)
{
    if (p->timer) {
        uv_close((uv_handle_t *)p->timer, timer_closed);
        p->timer = NULL;
    }
}

static void on_slow(uv_timer_t *t)
{
    reignd_page *p = t->data;
    stop_timer(p);
    p->slow = 1;
    wake_all(p, "the stores did not answer within 2 s: this node's own state only");
}

static void on_view(void *owner, int err, const char *msg, const cJSON *result)
{
    reignd_page *p = owner;
    char note[200];
    p->inflight = NULL;
    p->slow = 0;
    stop_timer(p);
    cJSON *v = err == 0 && result ? cJSON_Duplicate(result, 1) : NULL;
    if (v) {
        cJSON_Delete(p->last);
        p->last = v;
        p->last_at = uv_now(p->loop);
        wake_all(p, NULL);
    } else {
        snprintf(note, sizeof(note), "cannot read the stores: %s", msg ? msg : "out of memory");
        wake_all(p, note);
    }
}

/* Starts a read of the stores (the view); 0, or -1 when none could start. */
static int start_read(reignd_page *p)
{
    if (p->inflight)
        return 0;
    reignd_call *call = p->ops.view ? reignd__call_new(on_view, p, "status page") : NULL;
    if (!call)
        return -1;
    p->timer = malloc(sizeof(*p->timer));
    if (p->timer && uv_timer_init(p->loop, p->timer) == 0) {
        p->timer->data = p;
        uv_timer_start(p->timer, on_slow, PAGE_WAIT_MS, 0);
    } else {
        free(p->timer);
        p->timer = NULL;
    }
    p->inflight = call;
    reignd__call_run(call, p->ops.view(p->ops.ctx, call));
    return 0;
}

static enum MHD_Result answer(page_req *r)
{
    static const char *const headers[] = {MHD_HTTP_HEADER_CACHE_CONTROL,
                                          "no-store",
                                          "X-Content-Type-Options",
                                          "nosniff",
                                          "Content-Security-Policy",
                                          csp,
                                          NULL};
    size_t len = 0;
    char *body =
        r->view ? reignd_page_render(r->view, r->json, r->width, r->note[0] ? r->note : NULL, &len)
                : NULL;
    return reignd__httpd_reply_taken(
        r->conn, r->json ? "application/json" : "text/html; charset=utf-8", body, len, headers);
}

enum MHD_Result reignd_page_request(reignd_page *p, struct MHD_Connection *conn, const char *url,
                                    const char *method, void **con_cls)
{
    page_req *r = *con_cls;
    if (!r) { /* the headers are in */
        if (!(r = calloc(1, sizeof(*r))))
            return MHD_NO;
        r->p = p;
        r->conn = conn;
        r->json = strcmp(url, "/status.json") == 0;
        const char *w = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "width");
        r->width = w ? atoi(w) : 0;
        *con_cls = r;
        return MHD_YES;
    }
    if (r->ready)
        return answer(r);
    if (r->pprev) /* resumed spuriously: keep waiting */
        return MHD_YES;
    if (p->stopping)
        return MHD_NO;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return reignd__httpd_reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
                                   "method not allowed\n", 19, "Allow", "GET, HEAD");
    if (p->last && uv_now(p->loop) - p->last_at < PAGE_FRESH_MS) {
        r->view = cJSON_Duplicate(p->last, 1);
        return answer(r);
    }
    if (p->slow || start_read(p) < 0) {
        r->view = local_view(p);
        snprintf(r->note, sizeof(r->note), "%s",
                 p->slow ? "the stores have not answered yet: this node's own state only"
                         : "the stores cannot be read now: this node's own state only");
        return answer(r);
    }
    if (!p->inflight) { /* the read ended inside start_read(): its view is the latest */
        r->view = p->last ? cJSON_Duplicate(p->last, 1) : local_view(p);
        return answer(r);
    }
    r->next = p->waiting;
    if (p->waiting)
        p->waiting->pprev = &r->next;
    r->pprev = &p->waiting;
    p->waiting = r;
    r->suspended = 1;
    MHD_suspend_connection(conn);
    return MHD_YES;
}

void reignd_page_completed(reignd_page *p, void *con_cls)
{
    page_req *r = con_cls;
    (void)p;
    if (!r)
        return;
    unlink_waiting(r);
    cJSON_Delete(r->view);
    free(r);
}

void reignd_page_stop(reignd_page *p)
{
    if (!p)
        return;
    p->stopping = 1;
    while (p->waiting) { /* libmicrohttpd must not stop with suspended connections */
        page_req *r = p->waiting;
        unlink_waiting(r);
        r->suspended = 0;
        MHD_resume_connection(r->conn);
    }
}

void reignd_page_free(reignd_page *p)
{
    if (!p)
        return;
    if (p->inflight)
        reignd__call_detach(p->inflight);
    stop_timer(p);
    cJSON_Delete(p->last);
    free(p);
}
