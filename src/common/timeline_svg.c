/*
 * timeline_svg.c - the leaderships' timeline of timeline_svg.h.
 *
 * The geometry, top to bottom: a legend, one lane per leader id, the time
 * axis.  Left of the lanes their labels; x is linear in time from the first
 * leadership's start to now (or the latest time the terms know).  A bar or a
 * gap too short to see at that scale is drawn a few pixels wide anyway: a
 * 10 ms handover in a day's timeline is still there to hover.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "markup.h"
#include "timeline_svg.h"

#define DEFAULT_WIDTH 960
#define MIN_WIDTH     320
#define LANE_H        26
#define BAR_H         16
#define LEGEND_H      24
#define AXIS_H        34
#define MIN_BAR_W     3.0
#define TICK_MIN_PX   90 /* the least room between two tick labels */

#define COLOR_LEADING "#2e7d32"
#define COLOR_LETGO   "#1565c0"
#define COLOR_FAILED  "#ef6c00"
#define COLOR_UNKNOWN "#9e9e9e"
#define COLOR_GAP     "#c62828"

typedef struct geometry {
    double left, right; /* the plot's x range */
    int64_t t0, t1;     /* the times at left and right */
    int top;            /* the first lane's y */
    char hatch[80];     /* the id of the gaps' pattern */
} geometry;

static double x_of(const geometry *g, int64_t t)
{
    if (t < g->t0)
        t = g->t0;
    if (t > g->t1)
        t = g->t1;
    return g->left + (g->right - g->left) * (double)(t - g->t0) / (double)(g->t1 - g->t0);
}

/* "2026-11-30 03:12:05.120" in local time (or `fmt` of strftime, without the ms). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static const char *local_time(int64_t ms, const char *fmt, char *buf, size_t len)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    char s[40];
    if (!localtime_r(&t, &tm) || !strftime(s, sizeof(s), fmt ? fmt : "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, len, "@%lld", (long long)ms);
    else if (fmt)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "%s.%03d", s, (int)(ms % 1000));
    return buf;
}
#pragma GCC diagnostic pop

const char *timeline_svg_duration(int64_t ms, char *buf, size_t len)
{
    int64_t s = ms / 1000;
    if (ms < 1000)
        snprintf(buf, len, "%lld ms", (long long)(ms < 0 ? 0 : ms));
    else if (ms < 60000)
        snprintf(buf, len, "%.1f s", (double)ms / 1000);
    else if (s < 3600)
        snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
    else if (s < 86400)
        snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
    return buf;
}

/* The colour of a leadership by how it ended; "leading" also for a last one not ended. */
static const char *color_of(const reign_term *t, int last)
{
    switch (t->end) {
    case REIGN_TERM_LEADING:
        return last ? COLOR_LEADING : COLOR_UNKNOWN;
    case REIGN_TERM_GUARDIAN:
    case REIGN_TERM_EXPIRED:
    case REIGN_TERM_LOST:
        return COLOR_FAILED;
    default:
        return COLOR_LETGO;
    }
}

static const char *id_of(const reign_term *t)
{
    return t->id && t->id[0] ? t->id : "";
}

/* The lane of `id` among lanes[0..*k), added at the end if it has none. */
static size_t lane_for(const char **lanes, size_t *k, const char *id)
{
    size_t j = 0;
    while (j < *k && strcmp(lanes[j], id) != 0)
        j++;
    if (j == *k)
        lanes[(*k)++] = id;
    return j;
}

/* The lanes: each distinct id once, in the order they first led, then the other ids given. */
static size_t lanes_of(const reign_term *terms, size_t n, const timeline_svg_options *o,
                       const char **lanes, size_t *lane_of)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        lane_of[i] = lane_for(lanes, &k, id_of(&terms[i]));
    for (size_t i = 0; i < o->n_ids; i++)
        if (o->ids[i])
            lane_for(lanes, &k, o->ids[i]);
    return k;
}

/* When term i's bar ends: its end, else the next one's start (an end not known), else now. */
static int64_t bar_end(const reign_term *terms, size_t i, size_t n, int64_t now)
{
    if (terms[i].ended_ms)
        return terms[i].ended_ms;
    return i + 1 < n ? terms[i + 1].started_ms : now;
}

static const struct {
    const char *color, *label; /* color NULL: the gaps' hatch */
} legend_items[] = {
    {COLOR_LEADING, "leading"},
    {COLOR_LETGO, "let go (resigned, ceded, handed over, deposed)"},
    {COLOR_FAILED, "failed (expired, lost, guardian)"},
    {NULL, "no leader"},
};
#define N_LEGEND (sizeof(legend_items) / sizeof(legend_items[0]))

/* Where each legend item goes at this width (rows wrap); returns the legend's height. */
static int legend_layout(int width, double *xs, int *ys)
{
    double x = 8;
    int y = 6;
    for (size_t i = 0; i < N_LEGEND; i++) {
        double w = 17 + 5.8 * (double)strlen(legend_items[i].label) + 14;
        if (x > 8 && x + w > width) {
            x = 8;
            y += 16;
        }
        xs[i] = x;
        ys[i] = y;
        x += w;
    }
    return y + LEGEND_H - 6;
}

static void legend(markup *m, int width, const char *hatch)
{
    double xs[N_LEGEND];
    int ys[N_LEGEND];
    legend_layout(width, xs, ys);
    markup_printf(m, "<g class=\"legend\" font-size=\"11\">");
    for (size_t i = 0; i < N_LEGEND; i++) {
        if (legend_items[i].color)
            markup_printf(m, "<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>",
                          xs[i], ys[i], legend_items[i].color);
        else
            markup_printf(m,
                          "<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"url(#%s)\" "
                          "stroke=\"" COLOR_GAP "\"/>",
                          xs[i], ys[i], hatch);
        markup_printf(m, "<text x=\"%.1f\" y=\"%d\">%s</text>", xs[i] + 17, ys[i] + 10,
                      legend_items[i].label);
    }
    markup_printf(m, "</g>");
}

/* The legend's height at this width. */
static int legend_height(int width)
{
    double xs[N_LEGEND];
    int ys[N_LEGEND];
    return legend_layout(width, xs, ys);
}

static void term_title(markup *m, const reign_term *terms, size_t i, size_t n, int64_t now)
{
    const reign_term *t = &terms[i];
    char a[48], b[48], d[32];
    markup_printf(m, "<title>");
    if (t->term)
        markup_printf(m, "term %llu", (unsigned long long)t->term);
    else
        markup_printf(m, "term ?");
    markup_printf(m, ", token %llu\nleader: ", (unsigned long long)t->token);
    if (t->id && t->id[0])
        markup_escape(m, t->id);
    else
        markup_printf(m, "(unknown)");
    markup_printf(m, "\nstarted %s", local_time(t->started_ms, NULL, a, sizeof(a)));
    if (t->ended_ms)
        markup_printf(m, "\nended %s%s\nheld %s%s, %s", t->ended_estimated ? "~" : "",
                      local_time(t->ended_ms, NULL, b, sizeof(b)), t->ended_estimated ? "~" : "",
                      timeline_svg_duration(t->ended_ms - t->started_ms, d, sizeof(d)),
                      reign_term_end_name(t->end));
    else if (i + 1 == n)
        markup_printf(m, "\nleading for %s",
                      timeline_svg_duration(now - t->started_ms, d, sizeof(d)));
    else
        markup_printf(m, "\nend not known (the next began %s)",
                      local_time(terms[i + 1].started_ms, NULL, b, sizeof(b)));
    if (t->ended_estimated)
        markup_printf(m, "\n~: its session or lease expired unheard; it ended then at the latest");
    markup_printf(m, "</title>");
}

static void draw_term(markup *m, const geometry *g, const reign_term *terms, size_t i, size_t n,
                      size_t lane, int64_t now)
{
    const reign_term *t = &terms[i];
    double x0 = x_of(g, t->started_ms), x1 = x_of(g, bar_end(terms, i, n, now));
    if (x1 - x0 < MIN_BAR_W)
        x1 = x0 + MIN_BAR_W;
    int y = g->top + (int)lane * LANE_H + (LANE_H - BAR_H) / 2;
    markup_printf(m, "<g class=\"term\" data-term=\"%llu\" data-token=\"%llu\" data-id=\"",
                  (unsigned long long)t->term, (unsigned long long)t->token);
    markup_escape(m, id_of(t));
    markup_printf(m, "\" data-end=\"%s\">",
                  t->end == REIGN_TERM_LEADING && i + 1 < n ? "unknown"
                                                            : reign_term_end_name(t->end));
    term_title(m, terms, i, n, now);
    markup_printf(m,
                  "<rect class=\"bar\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"3\" "
                  "fill=\"%s\"%s/>",
                  x0, y, x1 - x0, BAR_H, color_of(t, i + 1 == n),
                  t->ended_estimated ? " stroke=\"#5d4037\" stroke-dasharray=\"3 2\"" : "");
    if (x1 - x0 > 40) {
        char label[32];
        snprintf(label, sizeof(label), "%llu", (unsigned long long)t->term);
        markup_printf(m,
                      "<text x=\"%.1f\" y=\"%d\" fill=\"#fff\" font-size=\"11\" "
                      "pointer-events=\"none\">%s</text>",
                      x0 + 4, y + BAR_H - 4, t->term ? label : "?");
    }
    markup_printf(m, "</g>");
}

/* The time without a leader from `from` to `to`, after term `after` (0: unknown). */
static void draw_gap(markup *m, const geometry *g, int lanes, int64_t from, int64_t to,
                     const reign_term *after, int estimated, int open)
{
    double x0 = x_of(g, from), x1 = x_of(g, to);
    char a[48], b[48], d[32];
    if (x1 - x0 < MIN_BAR_W) {
        x0 -= (MIN_BAR_W - (x1 - x0)) / 2;
        x1 = x0 + MIN_BAR_W;
    }
    markup_printf(m, "<g class=\"gap\" data-after=\"%llu\"><title>",
                  (unsigned long long)after->term);
    if (open)
        markup_printf(m, "no leader since %s (%s)", local_time(from, NULL, a, sizeof(a)),
                      timeline_svg_duration(to - from, d, sizeof(d)));
    else
        markup_printf(m, "no leader for %s%s\nfrom %s%s\nto %s", estimated ? "~" : "",
                      timeline_svg_duration(to - from, d, sizeof(d)), estimated ? "~" : "",
                      local_time(from, NULL, a, sizeof(a)), local_time(to, NULL, b, sizeof(b)));
    markup_printf(m, "\nafter term %llu ended: %s</title>", (unsigned long long)after->term,
                  reign_term_end_name(after->end));
    markup_printf(m,
                  "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"url(#%s)\" "
                  "stroke=\"" COLOR_GAP "\" stroke-width=\"1\"/></g>",
                  x0, g->top, x1 - x0, lanes * LANE_H, g->hatch);
}

static void draw_axis(markup *m, const geometry *g, int y)
{
    static const int64_t steps[] = {
        1000,
        2000,
        5000,
        10000,
        15000,
        30000,
        60000,
        120000,
        300000,
        600000,
        900000,
        1800000,
        3600000,
        7200000,
        10800000,
        21600000,
        43200000,
        86400000,
        2 * 86400000LL,
        7 * 86400000LL,
        14 * 86400000LL,
        30 * 86400000LL,
        60 * 86400000LL,
        120 * 86400000LL,
        365 * 86400000LL,
    };
    int64_t span = g->t1 - g->t0, step = steps[sizeof(steps) / sizeof(steps[0]) - 1];
    int room = (int)((g->right - g->left) / TICK_MIN_PX);
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
        if (span / steps[i] <= (room > 1 ? room : 1)) {
            step = steps[i];
            break;
        }
    /* Ticks on round local times: the UTC offset at the start shifts them. */
    time_t t0 = (time_t)(g->t0 / 1000);
    struct tm tm;
    int64_t off = localtime_r(&t0, &tm) ? (int64_t)tm.tm_gmtoff * 1000 : 0;
    int64_t first = ((g->t0 + off + step - 1) / step) * step - off;
    const char *fmt = step < 60000 ? "%H:%M:%S" : step < 86400000 ? "%H:%M" : "%m-%d";
    char label[48];
    markup_printf(m,
                  "<g class=\"axis\" font-size=\"11\" fill=\"#444\"><line x1=\"%.1f\" y1=\"%d\" "
                  "x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>",
                  g->left, y, g->right, y);
    for (int64_t t = first; t <= g->t1; t += step) {
        double x = x_of(g, t);
        markup_printf(m,
                      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#888\"/>"
                      "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>"
                      "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
                      x, y, x, y + 4, x, g->top, x, y,
                      /* a label near the right end stays whole inside the drawing */
                      x < g->right + 12 - 26 ? x : g->right + 12 - 26, y + 16,
                      local_time(t, fmt, label, sizeof(label)));
    }
    markup_printf(m, "<text x=\"8\" y=\"%d\">%s</text></g>", y + 16,
                  local_time(g->t0, "%Y-%m-%d", label, sizeof(label)));
}

/* The id, with only [A-Za-z0-9_-] kept. */
static void clean_id(const char *in, char *out, size_t len)
{
    size_t k = 0;
    for (const char *p = in ? in : "timeline"; *p && k + 1 < len; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '-')
            out[k++] = *p;
    if (k == 0)
        k = (size_t)snprintf(out, len, "timeline");
    out[k] = '\0';
}

static void draw(markup *m, const reign_term *terms, size_t n, const char **lanes, size_t n_lanes,
                 const size_t *lane_of, const geometry *g, int64_t now)
{
    /* Lanes, with their labels. */
    for (size_t l = 0; l < n_lanes; l++) {
        int y = g->top + (int)l * LANE_H;
        markup_printf(m, "<g class=\"lane\" data-id=\"");
        markup_escape(m, lanes[l]);
        markup_printf(m,
                      "\"><rect x=\"0\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
                      "<text x=\"8\" y=\"%d\"><title>",
                      y, g->right + 12, LANE_H, l % 2 ? "#ffffff" : "#f5f7fa", y + LANE_H / 2 + 4);
        markup_escape(m, lanes[l][0] ? lanes[l] : "(unknown)");
        markup_printf(m, "</title>");
        markup_escape_cut(m, lanes[l][0] ? lanes[l] : "(unknown)", (size_t)((g->left - 16) / 7.2));
        markup_printf(m, "</text></g>");
    }
    draw_axis(m, g, g->top + (int)n_lanes * LANE_H);
    /* The gaps under the bars: between two leaderships, and after the last if it ended. */
    markup_printf(m, "<g class=\"gaps\">");
    for (size_t i = 0; i < n; i++) {
        if (!terms[i].ended_ms)
            continue;
        if (i + 1 < n && terms[i + 1].started_ms > terms[i].ended_ms)
            draw_gap(m, g, (int)n_lanes, terms[i].ended_ms, terms[i + 1].started_ms, &terms[i],
                     terms[i].ended_estimated, 0);
        else if (i + 1 == n && now > terms[i].ended_ms)
            draw_gap(m, g, (int)n_lanes, terms[i].ended_ms, now, &terms[i], 0, 1);
    }
    markup_printf(m, "</g><g class=\"terms\">");
    for (size_t i = 0; i < n; i++)
        draw_term(m, g, terms, i, n, lane_of[i], now);
    markup_printf(m, "</g>");
}

char *timeline_svg(const reign_term *terms, size_t n, const timeline_svg_options *opts, size_t *len)
{
    timeline_svg_options o = opts ? *opts : (timeline_svg_options){0};
    int width = o.width ? o.width : DEFAULT_WIDTH;
    if (width < MIN_WIDTH)
        width = MIN_WIDTH;
    char id[64];
    clean_id(o.id, id, sizeof(id));
    const char **lanes = calloc(n + o.n_ids + 1, sizeof(*lanes));
    size_t *lane_of = calloc(n ? n : 1, sizeof(*lane_of));
    if (!lanes || !lane_of) {
        free(lanes);
        free(lane_of);
        return NULL;
    }
    size_t n_lanes = lanes_of(terms, n, &o, lanes, lane_of);
    int64_t now = o.now_ms;
    for (size_t i = 0; i < n && !o.now_ms; i++) {
        if (terms[i].started_ms > now)
            now = terms[i].started_ms;
        if (terms[i].ended_ms > now)
            now = terms[i].ended_ms;
    }
    geometry g = {.left = width / 5 < 70    ? 70
                          : width / 5 > 150 ? 150
                                            : width / 5,
                  .right = width - 12,
                  .t0 = n ? terms[0].started_ms : now,
                  .top = legend_height(width)};
    g.t1 = now > g.t0 + 1000 ? now : g.t0 + 1000;
    int height = g.top + (int)(n_lanes ? n_lanes : 1) * LANE_H + AXIS_H;

    markup m = {0};
    markup_printf(&m,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"%s\" class=\"reign-timeline\" "
                  "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
                  "font-size=\"12\" role=\"img\"><title>",
                  id, width, height, width, height);
    if (o.title) {
        markup_escape(&m, o.title);
        markup_printf(&m, ": ");
    }
    markup_printf(&m, "%zu leadership%s</title>", n, n == 1 ? "" : "s");
    markup_printf(&m,
                  "<defs><pattern id=\"%s-hatch\" width=\"6\" height=\"6\" "
                  "patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect "
                  "width=\"6\" height=\"6\" fill=\"#fdecea\"/><line x1=\"0\" y1=\"0\" x2=\"0\" "
                  "y2=\"6\" stroke=\"" COLOR_GAP "\" stroke-width=\"2\"/></pattern></defs>",
                  id);
    snprintf(g.hatch, sizeof(g.hatch), "%s-hatch", id);
    legend(&m, width, g.hatch);
    if (n == 0)
        markup_printf(&m, "<text x=\"%d\" y=\"%d\" fill=\"#666\">no leaderships recorded</text>",
                      width / 2 - 80, g.top + LANE_H / 2 + 4);
    else
        draw(&m, terms, n, lanes, n_lanes, lane_of, &g, now);
    if (n) {
        if (o.now_ms)
            markup_printf(&m,
                          "<line class=\"now\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                          "stroke=\"#333\" stroke-dasharray=\"2 2\"><title>now</title></line>",
                          x_of(&g, now), g.top - 4, x_of(&g, now), g.top + (int)n_lanes * LANE_H);
    }
    markup_printf(&m, "</svg>");
    free(lanes);
    free(lane_of);
    return markup_take(&m, len);
}

int timeline_svg_file(const char *path, const reign_term *terms, size_t n,
                      const timeline_svg_options *opts, char *err, size_t errlen)
{
    size_t len;
    char *svg = timeline_svg(terms, n, opts, &len);
    if (!svg) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int to_stdout = strcmp(path, "-") == 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    int ok = f && fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f) >= 0 &&
             fwrite(svg, 1, len, f) == len && fputc('\n', f) != EOF;
    int e = errno;
    if (f && (to_stdout ? fflush(f) : fclose(f)) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    free(svg);
    if (!ok)
        snprintf(err, errlen, "cannot write %s: %s", to_stdout ? "the standard output" : path,
                 strerror(e));
    return ok ? 0 : -1;
}
