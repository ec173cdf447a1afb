/*
 * page.h - reignd's status page: GET /status (HTML) and GET /status.json on
 * the metrics listener (metrics.h), beside /metrics and as open as it: what
 * can scrape the metrics can read the page, and neither changes anything.
 *
 * What it shows, per service: this node's controller state and health (and
 * what the check looks at), the election's leader and candidates as the
 * store has them now, and its last leaderships drawn as a timeline
 * (timeline_svg.h), from reignd_ops.view (control.h).  The page is plain
 * HTML, CSS and SVG made here; a small inline script fetches status.json
 * every 2 s and puts its "html" (the page's main part, rendered by reignd at
 * the width the browser asks for) in place, so it stays current without a
 * reload and works as it is without the script.  Whatever comes from a
 * store is escaped as text and never goes into the script; the answers
 * carry a Content-Security-Policy that lets only that script run.
 *
 * Reads are shared: requests that come while the stores are being read wait
 * for that read, and a view less than a second old is served again, so any
 * number of open pages cost a store at most one read of each election per
 * second.  A store that does not answer within 2 s does not hold the page:
 * it is served with this node's own state and says so.
 */
#ifndef REIGND_PAGE_H
#define REIGND_PAGE_H

#include <stddef.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <uv.h>

#include "control.h"
#include "httpd.h"

typedef struct reignd_page reignd_page;

/* The page for `ops` (its status and view), on `loop`; NULL on out of memory. */
reignd_page *reignd_page_new(uv_loop_t *loop, const reignd_ops *ops);

/* The server the page's connections are on (to wake it after a resume). */
void reignd_page_attach(reignd_page *p, reignd_httpd *httpd);

/* Whether `url` is the page's: "/status" or "/status.json". */
int reignd_page_handles(const char *url);

/*
 * libmicrohttpd's access handler for the page's URLs (the server needs
 * suspend): call it for each call of the request; *con_cls is the page's.
 */
enum MHD_Result reignd_page_request(reignd_page *p, struct MHD_Connection *conn, const char *url,
                                    const char *method, void **con_cls);

/* A request of the page is done (libmicrohttpd's completed callback): frees con_cls. */
void reignd_page_completed(reignd_page *p, void *con_cls);

/* Before the server stops: wakes the requests that wait (they are then completed). */
void reignd_page_stop(reignd_page *p);

/* Frees the page, after the server has stopped; a read under way is left to end alone.
 * NULL-safe. */
void reignd_page_free(reignd_page *p);

/*
 * The page for `view` (reignd_ops.view's shape; a service without "store" or "history"
 * shows `note` there), as HTML (json 0) or as status.json (json 1: the view with the page's
 * main part in "html" and "note"), the timeline `width` px wide (0: 960).  A new string
 * (free()); NULL on out of memory.  Pure: the endpoint and the tests use it.
 */
char *reignd_page_render(const cJSON *view, int json, int width, const char *note, size_t *len);

#endif
