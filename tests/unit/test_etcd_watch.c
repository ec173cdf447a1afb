/*
 * test_etcd_watch.c - the watches of the etcd backend (src/etcd/etcd_watch.c), with no
 * server: the request that creates a stream's watchers, each line the gateway streams handed to
 * reign__ew_line(), and the one-shot watches it must fire, or not: a watch hears only of its
 * own watcher's events after its read's revision, a children watch of children coming and going
 * (never of a grandchild, or of the "." counter), an error or a cancel ends the stream, and a
 * compaction fires the one watch it concerns.  test_etcd.c has the parsers and txns of the
 * other files.
 *
 * Each reign__etcd here is made by hand, with only what etcd_watch.c reads; its streams are
 * never sent.  Lines are in the gateway's shapes, written with ' for " and @R for a message's
 * header at revision R.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "etcd/etcd_internal.h"

static reign__timers timers; /* armed, never run: the tests batch by hand */

static reign__etcd *etcd_new(const char *prefix)
{
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    assert_non_null(e);
    e->prefix = reign__strdup(prefix);
    assert_non_null(e->prefix);
    e->prefix_len = strlen(prefix);
    e->gen = 1;
    e->cfg.timers = &timers;
    reign__ew_init(e);
    return e;
}

static void etcd_free(reign__etcd *e)
{
    reign__ew_free(e);
    reign__free(e->prefix);
    reign__free(e);
}

typedef struct heard {
    int n;
    reign__zk_event ev[8];
    char path[8][64];
    const char *tag[8]; /* which watch */
} heard;

static void on_watch(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    heard *h = owner;
    if (h->n < 8) {
        h->ev[h->n] = ev;
        snprintf(h->path[h->n], sizeof(h->path[0]), "%s", path);
        h->tag[h->n] = arg;
    }
    h->n++;
}

static void add(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev, heard *h,
                const char *tag)
{
    assert_int_equal(reign__ew_add(e, kind, path, rev, h, on_watch, (void *)tag), 0);
}

/* One watch on a stream of its own (its watcher's id is 1). */
static estream *watch1(reign__etcd *e, enum ew_kind kind, const char *path, int64_t rev, heard *h,
                       const char *tag)
{
    add(e, kind, path, rev, h, tag);
    estream *s = reign__ew_batch(e);
    assert_non_null(s);
    return s;
}

/* The request of s, in the gateway's text with ' for ", keys decoded into <...>. */
static void request_is(reign__etcd *e, estream *s, const char *want)
{
    reign__buf b;
    reign__buf_init(&b);
    reign__ew_request(e, s, &b);
    assert_false(b.oom);
    char got[2048];
    size_t o = 0;
    for (size_t i = 0; i < b.len && o + 64 < sizeof(got); i++) {
        if (b.data[i] != '"') {
            got[o++] = b.data[i];
            continue;
        }
        size_t j = i + 1;
        while (j < b.len && b.data[j] != '"')
            j++;
        char text[256];
        snprintf(text, sizeof(text), "%.*s", (int)(j - i - 1), b.data + i + 1);
        bool keyish = i >= 6 && (!strncmp(b.data + i - 6, "\"key\":", 6) ||
                                 (i >= 12 && !strncmp(b.data + i - 12, "\"range_end\":", 12)));
        size_t len;
        char *dec = keyish ? reign__ej_unb64(text, &len) : NULL;
        o += (size_t)snprintf(got + o, sizeof(got) - o, dec ? "<%s>" : "'%s'", dec ? dec : text);
        reign__free(dec);
        i = j;
    }
    got[o] = '\0';
    reign__buf_free(&b);
    assert_string_equal(got, want);
}

static estream *cur; /* the stream line() hands its lines to */

/* One line of the stream, in the gateway's text (' for ", @R a header at revision R), handed
 * over in a block of its exact size, without a NUL. */
static bool line(reign__etcd *e, const char *fmt, ...) REIGN__PRINTF(2, 3);
static bool line(reign__etcd *e, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    reign__buf b;
    reign__buf_init(&b);
    for (const char *c = text; *c; c++) {
        if (*c == '\'') {
            reign__buf_append(&b, "\"", 1);
        } else if (*c == '@') {
            size_t n = strspn(c + 1, "0123456789");
            reign__buf_printf(&b,
                              "\"header\":{\"cluster_id\":\"16037725854328852573\",\"member_id\":"
                              "\"10276657743932975437\",\"revision\":\"%.*s\",\"raft_term\":\"2\"}",
                              (int)n, c + 1);
            c += n;
        } else {
            reign__buf_append(&b, c, 1);
        }
    }
    assert_false(b.oom);
    char *exact = reign__malloc(b.len ? b.len : 1);
    assert_non_null(exact);
    memcpy(exact, b.data ? b.data : "", b.len);
    bool keep = reign__ew_line(e, cur, exact, b.len);
    reign__free(exact);
    reign__buf_free(&b);
    return keep;
}

/* A line of one event for watcher `id`, as the gateway streams it: a put at version `version`,
 * or a delete. */
static bool event_line(reign__etcd *e, int id, const char *key, int rev, int version)
{
    reign__buf k;
    reign__buf_init(&k);
    reign__ej_b64(&k, key, strlen(key)); /* quoted */
    bool keep;
    if (version)
        keep = line(e,
                    "{'result':{@%d,'watch_id':'%d','events':[{'kv':{'key':%s,"
                    "'create_revision':'%d','mod_revision':'%d','version':'%d','value':'YQ=='}}]}}",
                    rev, id, k.data, rev - version + 1, rev, version);
    else
        keep = line(e,
                    "{'result':{@%d,'watch_id':'%d','events':[{'type':'DELETE','kv':{'key':%s,"
                    "'mod_revision':'%d'},'prev_kv':{'key':%s,'create_revision':'%d',"
                    "'mod_revision':'%d','version':'1'}}]}}",
                    rev, id, k.data, rev, k.data, rev - 1, rev - 1);
    reign__buf_free(&k);
    return keep;
}

static void test_watch_lines(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    cur = watch1(e, EW_EXISTS, "/w", 20, &h, "exists");
    /* Its watcher: its node's key alone, from the revision after its read's. */
    /* Two watchers: one from the revision after its read's, one from now on. */
    request_is(e, cur,
               "{'create_request':{'key':</w>,'start_revision':'21','watch_id':'1'}}"
               "{'create_request':{'key':</w>,'watch_id':'2'}}");
    /* Created: nothing fires. */
    assert_true(line(e, "{'result':{@21,'watch_id':'1','created':true}}"));
    assert_int_equal(h.n, 0);
    /* The doc's three events of one key: made, changed, deleted. */
    assert_true(line(e, "{'result':{@22,'watch_id':'1','events':[{'kv':{'key':'L3c=',"
                        "'create_revision':'22','mod_revision':'22','version':'1','value':"
                        "'YQ=='}}]}}"));
    assert_int_equal(h.n, 1);
    assert_int_equal(h.ev[0], REIGN__ZK_CREATED);
    assert_string_equal(h.path[0], "/w");
    assert_int_equal(e->n_watches, 0); /* one-shot */
    cur = watch1(e, EW_DATA, "/w", 22, &h, "data");
    assert_true(line(e, "{'result':{@23,'watch_id':'1','events':[{'kv':{'key':'L3c=',"
                        "'create_revision':'22','mod_revision':'23','version':'2','value':'Yg=='},"
                        "'prev_kv':{'key':'L3c=','create_revision':'22','mod_revision':'22',"
                        "'version':'1','value':'YQ=='}}]}}"));
    assert_int_equal(h.n, 2);
    assert_int_equal(h.ev[1], REIGN__ZK_CHANGED);
    assert_string_equal(h.tag[1], "data");
    cur = watch1(e, EW_DATA, "/w", 23, &h, "data2");
    assert_true(line(e, "{'result':{@24,'watch_id':'1','events':[{'type':'DELETE','kv':{'key':"
                        "'L3c=','mod_revision':'24'},'prev_kv':{'key':'L3c=','create_revision':"
                        "'22','mod_revision':'23','version':'2','value':'Yg=='}}]}}"));
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_DELETED);
    assert_int_equal(e->n_watches, 0);
    assert_int_equal(e->n_streams, 3); /* each done with (freed by stream_done, ew_free here) */

    /* An error line ends the stream, in either shape; so does a cancel without compaction. */
    cur = watch1(e, EW_EXISTS, "/v", 30, &h, "v");
    assert_false(line(e, "{'error':{'grpc_code':14,'http_code':503,'message':'etcdserver: no "
                         "leader','http_status':'Service Unavailable'}}"));
    assert_false(line(e, "{'error':'unexpected EOF','message':'unexpected EOF','code':2}"));
    assert_false(line(e, "{'result':{@31,'watch_id':'1','canceled':true,'cancel_reason':"
                         "'permission denied'}}"));
    assert_false(line(e, "{'result':{@31,'canceled':true}}"));
    assert_int_equal(h.n, 3);
    /* A watcher whose start was compacted away: its watch fires (its recipe reads again). */
    assert_true(line(e, "{'result':{'header':{'cluster_id':'16037725854328852573','member_id':"
                        "'10276657743932975437','raft_term':'2'},'watch_id':'1','canceled':true,"
                        "'compact_revision':'35'}}"));
    assert_int_equal(h.n, 4);
    assert_int_equal(h.ev[3], REIGN__ZK_CHANGED);
    assert_string_equal(h.tag[3], "v");

    /* Whatever the line holds: no crash, nothing fired, the stream kept. */
    add(e, EW_EXISTS, "/p/c", 0, &h, "junk");
    add(e, EW_CHILD, "/p", 0, &h, "junk");
    cur = reign__ew_batch(e);
    assert_non_null(cur);
    const char *junk[] = {
        "", "{", "not json", "null", "[1,2]", "'result'", "{'result':5}", "{'result':[]}",
        "{'result':{'events':'x'}}", "{'result':{'canceled':'yes'}}",
        "{'result':{'watch_id':'1','events':[1,null,{},{'kv':5},{'kv':{}},{'type':'DELETE'}]}}",
        "{'result':{'watch_id':'1','events':[{'kv':{'key':'!!','mod_revision':'30'}}]}}",
        "{'result':{'watch_id':'3','events':[{'kv':{'key':7,'mod_revision':'30'}}]}}",
        /* "/p/c\0d": a key with a NUL is none of ours; "p/c", "": not a path */
        "{'result':{'watch_id':'1','events':[{'kv':{'key':'L3AvYwBk','mod_revision':'30',"
        "'version':'1'}}]}}",
        "{'result':{'watch_id':'3','events':[{'kv':{'key':'cC9j','mod_revision':'30',"
        "'version':'1'}}]}}",
        "{'result':{'watch_id':'2','events':[{'kv':{'key':'','mod_revision':'30','version':'1'}}]}"
        "}",
        /* the right key for a watcher this stream does not have */
        "{'result':{'watch_id':'5','events':[{'kv':{'key':'L3AvYw==','mod_revision':'31',"
        "'version':'1'}}]}}",
        "{'result':{'watch_id':'-1','events':[{'kv':{'key':'L3AvYw==','mod_revision':'31',"
        "'version':'1'}}]}}",
        "{'result':{'events':[{'kv':{'key':'L3AvYw==','mod_revision':'31','version':'1'}}]}}"};
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
        if (!line(e, "%s", junk[i]))
            fail_msg("junk line %zu ended the stream: %s", i, junk[i]);
    assert_int_equal(h.n, 4);
    assert_int_equal(e->n_watches, 2);
    /* A line cut short: never read past its end, nothing fired; whole, its watch fires. */
    const char *whole = "{\"result\":{\"watch_id\":\"1\",\"events\":[{\"kv\":{\"key\":"
                        "\"L3AvYw==\",\"mod_revision\":\"31\",\"version\":\"1\"}}]}}";
    for (size_t n = 0; n <= strlen(whole); n++) {
        char *cut = reign__malloc(n ? n : 1);
        memcpy(cut, whole, n);
        assert_true(reign__ew_line(e, cur, cut, n));
        reign__free(cut);
        assert_int_equal(h.n, n < strlen(whole) ? 4 : 5);
    }
    assert_int_equal(h.ev[4], REIGN__ZK_CREATED);
    assert_string_equal(h.path[4], "/p/c");
    /* The children watch hears the same change on its own watcher. */
    assert_true(line(e, "{'result':{'watch_id':'3','events':[{'kv':{'key':'L3AvYw==',"
                        "'mod_revision':'31','version':'1'}}]}}"));
    assert_int_equal(h.n, 6);
    assert_int_equal(h.ev[5], REIGN__ZK_CHILD);
    assert_string_equal(h.path[5], "/p");
    etcd_free(e);
}

static void test_watch_revisions(void **state)
{
    reign__etcd *e = etcd_new("/team");
    heard h = {0};
    /* Two watches of one turn share a stream; each hears only after its read's revision. */
    add(e, EW_DATA, "/a", 30, &h, "at30");
    add(e, EW_DATA, "/a", 31, &h, "at31");
    cur = reign__ew_batch(e);
    assert_non_null(cur);
    assert_null(reign__ew_batch(e)); /* nothing waits */
    request_is(e, cur,
               "{'create_request':{'key':</team/a>,'start_revision':'31','watch_id':'1'}}"
               "{'create_request':{'key':</team/a>,'watch_id':'2'}}"
               "{'create_request':{'key':</team/a>,'start_revision':'32','watch_id':'3'}}"
               "{'create_request':{'key':</team/a>,'watch_id':'4'}}");
    assert_true(event_line(e, 1, "/team/a", 29, 2));
    assert_true(event_line(e, 1, "/team/a", 30, 3));
    assert_true(event_line(e, 3, "/team/a", 31, 4));
    assert_int_equal(h.n, 0);
    assert_true(event_line(e, 1, "/team/a", 31, 4));
    assert_int_equal(h.n, 1);
    assert_string_equal(h.tag[0], "at30");
    assert_string_equal(h.path[0], "/a");            /* without the prefix */
    assert_true(event_line(e, 1, "/team/a", 32, 5)); /* fired: its watcher's events are void */
    assert_int_equal(h.n, 1);
    assert_true(event_line(e, 3, "/team/a", 32, 5));
    assert_int_equal(h.n, 2);
    assert_string_equal(h.tag[1], "at31");
    assert_int_equal(e->n_watches, 0);

    /* Keys of another node: nothing, but a stream started again starts after them. */
    cur = watch1(e, EW_EXISTS, "/a", 40, &h, "exists");
    assert_true(event_line(e, 1, "/teama", 41, 1));
    assert_true(event_line(e, 1, "/other/a", 42, 1));
    assert_true(event_line(e, 1, "/team/a/b", 43, 1));
    assert_true(event_line(e, 1, "/team/ab", 44, 1));
    assert_int_equal(h.n, 2);
    request_is(e, cur,
               "{'create_request':{'key':</team/a>,'start_revision':'44','watch_id':'1'}}"
               "{'create_request':{'key':</team/a>,'watch_id':'2'}}");
    /* What the watcher from now on sends moves nothing: what came before it may be on its way
     * on the other. */
    assert_true(event_line(e, 2, "/team/ac", 50, 1));
    request_is(e, cur,
               "{'create_request':{'key':</team/a>,'start_revision':'44','watch_id':'1'}}"
               "{'create_request':{'key':</team/a>,'watch_id':'2'}}");
    /* What a write waits for: a change that fires a watch not fired yet. */
    assert_true(reign__ew_pending(e, "/a", REIGN__ZK_CREATED, 45));
    assert_false(reign__ew_pending(e, "/a", REIGN__ZK_CREATED, 43)); /* not after its read */
    assert_false(reign__ew_pending(e, "/b", REIGN__ZK_CREATED, 45));
    /* Forgotten: never called, freed, and its stream with it once it has no watch left. */
    heard gone = {0};
    estream *s1 = cur;
    size_t streams = e->n_streams;
    cur = watch1(e, EW_EXISTS, "/a", 40, &gone, "forgotten");
    assert_int_equal(e->n_streams, streams + 1);
    reign__ew_forget(e, &gone);
    assert_int_equal(e->n_streams, streams);
    cur = s1;
    assert_true(event_line(e, 1, "/team/a", 45, 1));
    assert_int_equal(gone.n, 0);
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_CREATED);
    assert_int_equal(e->n_watches, 0);
    assert_false(reign__ew_pending(e, "/a", REIGN__ZK_CREATED, 46));

    /* The watcher from now on fires a watch as well (whichever comes first). */
    heard now = {0};
    cur = watch1(e, EW_DATA, "/a", 32, &now, "now");
    assert_true(event_line(e, 2, "/team/a", 33, 6));
    assert_int_equal(now.n, 1);
    assert_true(event_line(e, 1, "/team/a", 33, 6)); /* the other's copy: void */
    assert_int_equal(now.n, 1);

    /* A session ended: none fires, and the streams close. */
    cur = watch1(e, EW_DATA, "/l", 50, &h, "l");
    streams = e->n_streams;
    reign__ew_drop_all(e);
    assert_int_equal(e->n_watches, 0);
    assert_int_equal(e->n_streams, streams - 1);
    assert_int_equal(h.n, 3);
    etcd_free(e);
}

static void test_watch_children(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    add(e, EW_CHILD, "/p", 10, &h, "kids");
    add(e, EW_DATA, "/p/q", 10, &h, "q's data");
    cur = reign__ew_batch(e);
    /* A children watch: its node and every key under it. */
    request_is(e, cur,
               "{'create_request':{'key':</p>,'range_end':</p0>,'start_revision':'11',"
               "'watch_id':'1'}}"
               "{'create_request':{'key':</p>,'range_end':</p0>,'watch_id':'2'}}"
               "{'create_request':{'key':</p/q>,'start_revision':'11','watch_id':'3'}}"
               "{'create_request':{'key':</p/q>,'watch_id':'4'}}");
    assert_true(reign__ew_pending(e, "/p/c", REIGN__ZK_CREATED, 12));
    assert_true(reign__ew_pending(e, "/p/c", REIGN__ZK_DELETED, 12));
    assert_false(reign__ew_pending(e, "/p/c", REIGN__ZK_CHANGED, 12));
    assert_false(reign__ew_pending(e, "/p/c/d", REIGN__ZK_CREATED, 12));
    assert_true(reign__ew_pending(e, "/p/q", REIGN__ZK_CHANGED, 12));
    /* A grandchild made, the counter made and moved, a child's data changed, a sibling: not
     * a child coming or going. */
    assert_true(event_line(e, 1, "/p/q/r", 11, 1));
    assert_true(event_line(e, 1, "/p/.", 12, 1));
    assert_true(event_line(e, 1, "/p/.", 13, 2));
    assert_true(event_line(e, 1, "/p-x", 13, 1));
    assert_true(event_line(e, 1, "/p/q", 14, 2));
    assert_int_equal(h.n, 0);
    assert_true(event_line(e, 3, "/p/q", 14, 2));
    assert_int_equal(h.n, 1);
    assert_string_equal(h.tag[0], "q's data");
    /* A child made: the children watch, on its node's path. */
    assert_true(event_line(e, 1, "/p/c", 15, 1));
    assert_int_equal(h.n, 2);
    assert_int_equal(h.ev[1], REIGN__ZK_CHILD);
    assert_string_equal(h.path[1], "/p");
    assert_string_equal(h.tag[1], "kids");
    /* A child deleted (not a grandchild, not the counter). */
    cur = watch1(e, EW_CHILD, "/p", 15, &h, "kids2");
    assert_true(event_line(e, 1, "/p/q/r", 16, 0));
    assert_true(event_line(e, 1, "/p/.", 17, 0));
    assert_int_equal(h.n, 2);
    assert_true(event_line(e, 1, "/p/c", 18, 0));
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_CHILD);
    assert_string_equal(h.tag[2], "kids2");
    /* Its node deleted: a children watch hears that too (not its data changing). */
    cur = watch1(e, EW_CHILD, "/p", 18, &h, "kids3");
    assert_true(event_line(e, 1, "/p", 19, 3));
    assert_int_equal(h.n, 3);
    assert_true(event_line(e, 1, "/p", 20, 0));
    assert_int_equal(h.n, 4);
    assert_int_equal(h.ev[3], REIGN__ZK_DELETED);
    /* The root's children: everything under the prefix; two events in one line (a multi's). */
    reign__free(e->prefix);
    e->prefix = reign__strdup("/t");
    e->prefix_len = 2;
    cur = watch1(e, EW_CHILD, "/", 20, &h, "root");
    request_is(e, cur,
               "{'create_request':{'key':</t/>,'range_end':</t0>,'start_revision':'21',"
               "'watch_id':'1'}}{'create_request':{'key':</t/>,'range_end':</t0>,'watch_id':'2'}}");
    assert_true(line(e, "{'result':{@21,'watch_id':'1','events':[{'kv':{'key':'L3QvcC8u',"
                        "'create_revision':'12','mod_revision':'21','version':'3','value':"
                        "'Mg=='}},{'kv':{'key':'L3QveA==','create_revision':'21','mod_revision':"
                        "'21','version':'1'}}]}}"));
    assert_int_equal(h.n, 5);
    assert_string_equal(h.tag[4], "root");
    assert_string_equal(h.path[4], "/");
    assert_int_equal(e->n_watches, 0);
    etcd_free(e);
}

/* A client that would open more than STREAMS_MAX streams folds its smallest into the next. */
static void test_watch_fold(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    char path[32];
    for (int i = 0; i < 40; i++) {
        snprintf(path, sizeof(path), "/n%d", i);
        add(e, EW_EXISTS, path, 100 + i, &h, "n");
        if (i % 8 == 0) { /* a bigger one */
            snprintf(path, sizeof(path), "/m%d", i);
            add(e, EW_EXISTS, path, 100, &h, "m");
        }
        assert_non_null(reign__ew_batch(e));
    }
    assert_int_equal(e->n_streams, 32);
    assert_int_equal(e->n_watches, 45);
    /* The newest has the one of its turn and the one it took in, each from its own start. */
    request_is(e, e->streams,
               "{'create_request':{'key':</n9>,'start_revision':'110','watch_id':'1'}}"
               "{'create_request':{'key':</n9>,'watch_id':'2'}}"
               "{'create_request':{'key':</n39>,'start_revision':'140','watch_id':'3'}}"
               "{'create_request':{'key':</n39>,'watch_id':'4'}}");
    etcd_free(e);
}

/* A big stream is not folded for a few new watches at once: they wait for more, or 50 ms. */
static void test_watch_fold_waits(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    char path[32];
    for (int i = 0; i < 32; i++) { /* 32 streams of 8 */
        for (int j = 0; j < 8; j++) {
            snprintf(path, sizeof(path), "/s%d/n%d", i, j);
            add(e, EW_EXISTS, path, 100, &h, "n");
        }
        assert_non_null(reign__ew_batch(e));
    }
    assert_int_equal(e->n_streams, 32);
    add(e, EW_EXISTS, "/new0", 200, &h, "n");
    assert_null(reign__ew_batch(e)); /* 8 > 4 x 1: it waits */
    assert_true(reign__timer_armed(&e->flush_timer));
    add(e, EW_EXISTS, "/new1", 200, &h, "n");
    assert_non_null(reign__ew_batch(e)); /* 8 <= 4 x 2: the smallest folds in with them */
    assert_int_equal(e->n_streams, 32);
    assert_int_equal(e->n_watches, 32 * 8 + 2);
    add(e, EW_EXISTS, "/late", 300, &h, "n");
    assert_null(reign__ew_batch(e));
    e->pending_ns -= 60 * REIGN__NS_PER_MS; /* waited long enough: folds for one */
    assert_non_null(reign__ew_batch(e));
    assert_int_equal(e->n_streams, 32);
    etcd_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_lines),      cmocka_unit_test(test_watch_revisions),
        cmocka_unit_test(test_watch_children),   cmocka_unit_test(test_watch_fold),
        cmocka_unit_test(test_watch_fold_waits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
