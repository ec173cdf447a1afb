/*
 * timeline_svg.h - an election's leaderships (reign_election_history()'s
 * terms) drawn as an SVG timeline, shared by `reign history NAME --svg FILE`
 * and reignd's status page.
 *
 * One lane per leader id (in the order they first led; then, if given, an
 * empty one per other candidate), each leadership a bar from its start to its
 * end (or to now while it leads), coloured by how it ended; the time without a leader between two
 * leaderships (and after the last one, if it ended) hatched red across the lanes; a time axis in
 * local time.  Every bar and gap carries an SVG <title>, which browsers show on hover: term, token,
 * leader, start, end, how long, how it ended.  Ids and payloads are data: escaped (markup.h), never
 * markup.  The result is one <svg> element, well-formed XML: a file of its own or a part of an HTML
 * page.
 *
 * Classes and data attributes for whoever reads it: <g class="term"
 * data-term data-token data-id data-end> with <rect class="bar">, <g
 * class="gap">, <g class="lane" data-id>.
 */
#ifndef REIGN_TOOLS_TIMELINE_SVG_H
#define REIGN_TOOLS_TIMELINE_SVG_H

#include <stddef.h>
#include <stdint.h>

#include <reign/election.h>

typedef struct timeline_svg_options {
    int width;              /* in px; 0: 960; at least 320 */
    int64_t now_ms;         /* the right end, where a leadership not ended runs to (Unix ms); 0:
                               the latest time in the terms */
    const char *id;         /* the element's id, and the prefix of the ids inside it (only
                               [A-Za-z0-9_-] are kept); NULL: "timeline" */
    const char *title;      /* what it shows, for its <title> ("election web"); NULL: none */
    const char *const *ids; /* lanes for these ids too (the candidates now), after the leaders' */
    size_t n_ids;
} timeline_svg_options;

/*
 * Draws terms[0..n) (oldest first, as reign_election_history() gives them) into a new
 * NUL-terminated string (free()); *len gets its length if len is not NULL.  NULL on out of
 * memory.  No terms: an empty timeline that says so.
 */
char *timeline_svg(const reign_term *terms, size_t n, const timeline_svg_options *opts,
                   size_t *len);

/* How long, for people: "850 ms", "12.3 s", "4m05s", "2h03m", "3d04h" (the titles' spans). */
const char *timeline_svg_duration(int64_t ms, char *buf, size_t len);

/*
 * The same as an SVG file at `path` ("-": standard output), with its XML declaration.  0, or
 * -1 with the reason in err.
 */
int timeline_svg_file(const char *path, const reign_term *terms, size_t n,
                      const timeline_svg_options *opts, char *err, size_t errlen);

#endif
