/*
 * page_render.c - the status page's pure parts on standard input and output, for
 * test_page_render.py:
 *
 *   page_render svg  < {"terms":[{reign_term's fields, "end":"resigned", "id" or "id_b64"}...],
 *                       "now_ms":N, "width":N, "id":"...", "title":"...", "ids":["..."...]}
 *   page_render html < {"view":{reignd_ops.view's shape}, "width":N, "note":"..."}
 *   page_render json < the same
 *
 * writes timeline_svg()'s drawing, or reignd_page_render()'s page or status.json.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <nettle/base64.h>

#include "page.h"
#include "timeline_svg.h"

static char *read_all(FILE *f)
{
    size_t len = 0, cap = 65536;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (buf)
        buf[len] = '\0';
    return buf;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A term's id: "id", or the bytes of "id_b64" (any bytes, invalid UTF-8 too). */
static const char *id_of(const cJSON *j, char *buf, size_t len)
{
    const char *b64 = str(j, "id_b64");
    if (!b64)
        return str(j, "id") ? str(j, "id") : "";
    struct base64_decode_ctx ctx;
    size_t out = len - 1;
    base64_decode_init(&ctx);
    if (!base64_decode_update(&ctx, &out, (uint8_t *)buf, strlen(b64), b64) ||
        !base64_decode_final(&ctx))
        out = 0;
    buf[out] = '\0';
    return buf;
}

static reign_term_end end_named(const char *name)
{
    for (int e = REIGN_TERM_LEADING; e <= REIGN_TERM_LOST; e++)
        if (name && strcmp(name, reign_term_end_name((reign_term_end)e)) == 0)
            return (reign_term_end)e;
    return REIGN_TERM_LEADING;
}

static int draw_svg(const cJSON *in)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(in, "terms"), *j;
    size_t n = 0, count = (size_t)cJSON_GetArraySize(arr);
    reign_term *t = calloc(count ? count : 1, sizeof(*t));
    char(*ids)[1024] = calloc(count ? count : 1, sizeof(*ids));
    cJSON_ArrayForEach(j, arr)
    {
        reign_term *x = &t[n];
        x->term = (uint64_t)num(j, "term");
        x->token = (uint64_t)num(j, "token");
        x->id = id_of(j, ids[n], sizeof(ids[n]));
        x->started_ms = (int64_t)num(j, "started_ms");
        x->ended_ms = (int64_t)num(j, "ended_ms");
        x->ended_estimated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ended_estimated"));
        x->end = end_named(str(j, "end"));
        n++;
    }
    const cJSON *extra = cJSON_GetObjectItemCaseSensitive(in, "ids");
    size_t n_ids = 0;
    const char **extra_ids = calloc((size_t)cJSON_GetArraySize(extra) + 1, sizeof(*extra_ids));
    cJSON_ArrayForEach(j, extra) extra_ids[n_ids++] = cJSON_IsString(j) ? j->valuestring : NULL;
    timeline_svg_options o = {
        .width = (int)num(in, "width"),
        .now_ms = (int64_t)num(in, "now_ms"),
        .id = str(in, "id"),
        .title = str(in, "title"),
        .ids = extra_ids,
        .n_ids = n_ids,
    };
    char *svg = timeline_svg(t, n, &o, NULL);
    free(extra_ids);
    if (svg)
        fputs(svg, stdout);
    free(svg);
    free(t);
    free(ids);
    return svg ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2 ||
        (strcmp(argv[1], "svg") && strcmp(argv[1], "html") && strcmp(argv[1], "json"))) {
        fprintf(stderr, "usage: page_render svg|html|json < INPUT.json\n");
        return 2;
    }
    char *text = read_all(stdin);
    cJSON *in = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!in) {
        fprintf(stderr, "page_render: the input is not JSON\n");
        return 2;
    }
    int r;
    if (strcmp(argv[1], "svg") == 0) {
        r = draw_svg(in);
    } else {
        char *page = reignd_page_render(cJSON_GetObjectItemCaseSensitive(in, "view"),
                                        strcmp(argv[1], "json") == 0, (int)num(in, "width"),
                                        str(in, "note"), NULL);
        if (page)
            fputs(page, stdout);
        r = page ? 0 : 1;
        free(page);
    }
    cJSON_Delete(in);
    return r;
}
