/*
 * test_etcd_watch.c - the watch stream of the etcd backend (src/etcd/etcd_watch.c), with no
 * server: each line the gateway streams handed to reign__ew_line(), and the one-shot watches it
 * must fire, or not: a watch hears of events after its read's revision only, a children watch
 * of children coming and going (never of a grandchild, or of the "." counter), and an error or
 * a cancel ends the stream.  test_etcd.c has the parsers and txns of the other files.
 *
 * Each reign__etcd here is made by hand, with only what etcd_watch.c reads; e->stream is a
 * stand-in, never a request.  Lines are in the gateway's shapes, written with ' for " and @R
 * for a message's header at revision R.
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

static ereq stand_in; /* e->stream: a stream is open (etcd_watch.c only compares it) */

static reign__etcd *etcd_new(const char *prefix)
{
    reign__etcd *e = reign__calloc(1, sizeof(*e));
    assert_non_null(e);
    e->prefix = reign__strdup(prefix);
    assert_non_null(e->prefix);
    e->prefix_len = strlen(prefix);
    e->gen = 1;
    reign__timer_init(&e->stream_timer, NULL, NULL);
    e->stream = &stand_in;
    return e;
}

static void etcd_free(reign__etcd *e)
{
    e->stream = NULL;
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
    assert_int_equal(reign__ew_add(e, kind, path, rev, 0, h, on_watch, (void *)tag), 0);
    reign__ew_replay(e, kind, path, rev, 0);
}

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
    bool keep = reign__ew_line(e, exact, b.len);
    reign__free(exact);
    reign__buf_free(&b);
    return keep;
}

/* A line of one event, as the gateway streams it: a put at version `version`, or a delete. */
static bool event_line(reign__etcd *e, const char *key, int rev, int version)
{
    reign__buf k;
    reign__buf_init(&k);
    reign__ej_b64(&k, key, strlen(key)); /* quoted */
    bool keep;
    if (version)
        keep = line(e,
                    "{'result':{@%d,'events':[{'kv':{'key':%s,'create_revision':'%d',"
                    "'mod_revision':'%d','version':'%d','value':'YQ=='}}]}}",
                    rev, k.data, rev - version + 1, rev, version);
    else
        keep = line(e,
                    "{'result':{@%d,'events':[{'type':'DELETE','kv':{'key':%s,'mod_revision':"
                    "'%d'},'prev_kv':{'key':%s,'create_revision':'%d','mod_revision':'%d',"
                    "'version':'1'}}]}}",
                    rev, k.data, rev, k.data, rev - 1, rev - 1);
    reign__buf_free(&k);
    return keep;
}

static void test_watch_lines(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    add(e, EW_EXISTS, "/w", 20, &h, "exists");
    /* Created: the stream delivers. */
    assert_true(line(e, "{'result':{@21,'created':true}}"));
    assert_true(e->stream_live);
    assert_int_equal(h.n, 0);
    /* The doc's three events of one key: made, changed, deleted. */
    assert_true(line(e, "{'result':{@22,'events':[{'kv':{'key':'L3c=','create_revision':'22',"
                        "'mod_revision':'22','version':'1','value':'YQ=='}}]}}"));
    assert_int_equal(h.n, 1);
    assert_int_equal(h.ev[0], REIGN__ZK_CREATED);
    assert_string_equal(h.path[0], "/w");
    assert_true(e->stream_from == 23); /* where a broken stream resumes */
    add(e, EW_DATA, "/w", 22, &h, "data");
    assert_true(line(e, "{'result':{@23,'events':[{'kv':{'key':'L3c=','create_revision':'22',"
                        "'mod_revision':'23','version':'2','value':'Yg=='},'prev_kv':{'key':"
                        "'L3c=','create_revision':'22','mod_revision':'22','version':'1',"
                        "'value':'YQ=='}}]}}"));
    assert_int_equal(h.n, 2);
    assert_int_equal(h.ev[1], REIGN__ZK_CHANGED);
    assert_string_equal(h.tag[1], "data");
    add(e, EW_DATA, "/w", 23, &h, "data2");
    assert_true(line(e, "{'result':{@24,'events':[{'type':'DELETE','kv':{'key':'L3c=',"
                        "'mod_revision':'24'},'prev_kv':{'key':'L3c=','create_revision':'22',"
                        "'mod_revision':'23','version':'2','value':'Yg=='}}]}}"));
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_DELETED);
    assert_true(e->stream_from == 25);
    assert_int_equal(e->n_watches, 0); /* one-shot */

    /* An error line ends the stream, in either shape. */
    assert_false(line(e, "{'error':{'grpc_code':14,'http_code':503,'message':'etcdserver: no "
                         "leader','http_status':'Service Unavailable'}}"));
    assert_false(line(e, "{'error':'unexpected EOF','message':'unexpected EOF','code':2}"));
    assert_false(e->stream_compacted);
    /* Canceled: without a compaction, just ended; with one, every watch must look again. */
    assert_false(line(e, "{'result':{@25,'canceled':true}}"));
    assert_false(e->stream_compacted);
    assert_false(line(e, "{'result':{'header':{'cluster_id':'16037725854328852573','member_id':"
                         "'10276657743932975437','raft_term':'2'},'canceled':true,"
                         "'compact_revision':'25'}}"));
    assert_true(e->stream_compacted);
    e->stream_compacted = false;

    /* Whatever the line holds: no crash, nothing fired, the stream kept. */
    add(e, EW_EXISTS, "/p/c", 0, &h, "junk");
    add(e, EW_CHILD, "/p", 0, &h, "junk");
    const char *junk[] = {
        "", "{", "not json", "null", "[1,2]", "'result'", "{'result':5}", "{'result':[]}",
        "{'result':{'events':'x'}}", "{'result':{'canceled':'yes'}}",
        "{'result':{'events':[1,null,{},{'kv':5},{'kv':{}},{'type':'DELETE'}]}}",
        "{'result':{'events':[{'kv':{'key':'!!','mod_revision':'30'}}]}}",
        "{'result':{'events':[{'kv':{'key':7,'mod_revision':'30'}}]}}",
        /* "/p/c\0d": a key with a NUL is none of ours; "p/c", "": not a path */
        "{'result':{'events':[{'kv':{'key':'L3AvYwBk','mod_revision':'30','version':'1'}}]}}",
        "{'result':{'events':[{'kv':{'key':'cC9j','mod_revision':'30','version':'1'}}]}}",
        "{'result':{'events':[{'kv':{'key':'','mod_revision':'30','version':'1'}}]}}"};
    for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
        if (!line(e, "%s", junk[i]))
            fail_msg("junk line %zu ended the stream: %s", i, junk[i]);
    assert_int_equal(h.n, 3);
    assert_int_equal(e->n_watches, 2);
    /* A line cut short: never read past its end, nothing fired; whole, both watches fire. */
    const char *whole = "{\"result\":{\"events\":[{\"kv\":{\"key\":\"L3AvYw==\","
                        "\"mod_revision\":\"31\",\"version\":\"1\"}}]}}";
    for (size_t n = 0; n <= strlen(whole); n++) {
        char *cut = reign__malloc(n ? n : 1);
        memcpy(cut, whole, n);
        assert_true(reign__ew_line(e, cut, n));
        reign__free(cut);
        assert_int_equal(h.n, n < strlen(whole) ? 3 : 5);
    }
    assert_int_equal(h.ev[3], REIGN__ZK_CREATED);
    assert_int_equal(h.ev[4], REIGN__ZK_CHILD);
    etcd_free(e);
}

static void test_watch_revisions(void **state)
{
    reign__etcd *e = etcd_new("/team");
    heard h = {0};
    /* A watch from a read at 30 hears of 31, not of 30 or before. */
    add(e, EW_DATA, "/a", 30, &h, "at30");
    add(e, EW_DATA, "/a", 31, &h, "at31");
    assert_true(event_line(e, "/team/a", 29, 2));
    assert_true(event_line(e, "/team/a", 30, 3));
    assert_int_equal(h.n, 0);
    assert_true(event_line(e, "/team/a", 31, 4));
    assert_int_equal(h.n, 1);
    assert_string_equal(h.tag[0], "at30");
    assert_string_equal(h.path[0], "/a"); /* without the prefix */
    assert_true(event_line(e, "/team/a", 32, 5));
    assert_int_equal(h.n, 2);
    assert_string_equal(h.tag[1], "at31");
    /* Keys outside the prefix, or of another node: nothing. */
    add(e, EW_EXISTS, "/a", 40, &h, "exists");
    assert_true(event_line(e, "/teama", 41, 1));
    assert_true(event_line(e, "/other/a", 42, 1));
    assert_true(event_line(e, "/team/a/b", 43, 1));
    assert_true(event_line(e, "/team/ab", 44, 1));
    assert_int_equal(h.n, 2);
    /* Forgotten: never called, freed all the same. */
    heard gone = {0};
    add(e, EW_EXISTS, "/a", 40, &gone, "forgotten");
    reign__ew_forget(e, &gone);
    assert_true(event_line(e, "/team/a", 45, 1));
    assert_int_equal(gone.n, 0);
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_CREATED);
    assert_int_equal(e->n_watches, 0);

    /* A watched read in flight: what arrives meanwhile is kept, and a watch registered at the
     * read's revision looks at it. */
    uint64_t from = reign__ew_read_begin(e);
    assert_true(event_line(e, "/team/l", 50, 2));
    assert_int_equal(reign__ew_add(e, EW_DATA, "/l", 49, from, &h, on_watch, "missed"), 0);
    assert_int_equal(h.n, 3); /* the read's answer first: then what it missed */
    reign__ew_replay(e, EW_DATA, "/l", 49, from);
    assert_int_equal(h.n, 4);
    assert_string_equal(h.tag[3], "missed");
    assert_int_equal(reign__ew_add(e, EW_DATA, "/l", 50, from, &h, on_watch, "saw it"), 0);
    reign__ew_replay(e, EW_DATA, "/l", 50, from);
    assert_int_equal(h.n, 4);
    reign__ew_read_end(e);
    /* A read older than where a restarted stream began: it may have missed one, so it fires. */
    e->floor = 60;
    add(e, EW_DATA, "/m", 50, &h, "old");
    assert_int_equal(h.n, 5);
    assert_string_equal(h.tag[4], "old");
    add(e, EW_DATA, "/m", 59, &h, "new enough");
    assert_int_equal(h.n, 5);
    /* A session ended: none fires. */
    reign__ew_drop_all(e);
    assert_int_equal(e->n_watches, 0);
    assert_true(event_line(e, "/team/l", 61, 3));
    assert_true(event_line(e, "/team/m", 62, 3));
    assert_int_equal(h.n, 5);
    etcd_free(e);
}

static void test_watch_children(void **state)
{
    reign__etcd *e = etcd_new("");
    heard h = {0};
    add(e, EW_CHILD, "/p", 10, &h, "kids");
    add(e, EW_DATA, "/p/q", 10, &h, "q's data");
    /* A grandchild made, the counter made and moved, a child's data changed: not a child
     * coming or going. */
    assert_true(event_line(e, "/p/q/r", 11, 1));
    assert_true(event_line(e, "/p/.", 12, 1));
    assert_true(event_line(e, "/p/.", 13, 2));
    assert_int_equal(h.n, 0);
    assert_true(event_line(e, "/p/q", 14, 2));
    assert_int_equal(h.n, 1);
    assert_string_equal(h.tag[0], "q's data");
    /* A child made: the children watch, on its node's path. */
    assert_true(event_line(e, "/p/c", 15, 1));
    assert_int_equal(h.n, 2);
    assert_int_equal(h.ev[1], REIGN__ZK_CHILD);
    assert_string_equal(h.path[1], "/p");
    assert_string_equal(h.tag[1], "kids");
    /* A child deleted (not a grandchild, not the counter). */
    add(e, EW_CHILD, "/p", 15, &h, "kids2");
    assert_true(event_line(e, "/p/q/r", 16, 0));
    assert_true(event_line(e, "/p/.", 17, 0));
    assert_int_equal(h.n, 2);
    assert_true(event_line(e, "/p/c", 18, 0));
    assert_int_equal(h.n, 3);
    assert_int_equal(h.ev[2], REIGN__ZK_CHILD);
    assert_string_equal(h.tag[2], "kids2");
    /* Its node deleted: a children watch hears that too (not its data changing). */
    add(e, EW_CHILD, "/p", 18, &h, "kids3");
    assert_true(event_line(e, "/p", 19, 3));
    assert_int_equal(h.n, 3);
    assert_true(event_line(e, "/p", 20, 0));
    assert_int_equal(h.n, 4);
    assert_int_equal(h.ev[3], REIGN__ZK_DELETED);
    /* The root's children; two events in one line (a multi's): each one heard. */
    add(e, EW_CHILD, "/", 20, &h, "root");
    add(e, EW_EXISTS, "/x", 20, &h, "x");
    assert_true(line(e, "{'result':{@21,'events':[{'kv':{'key':'L3AvLg==','create_revision':"
                        "'12','mod_revision':'21','version':'3','value':'Mg=='}},{'kv':{'key':"
                        "'L3g=','create_revision':'21','mod_revision':'21','version':'1'}}]}}"));
    assert_int_equal(h.n, 6);
    assert_string_equal(h.tag[4], "x");
    assert_int_equal(h.ev[4], REIGN__ZK_CREATED);
    assert_string_equal(h.tag[5], "root");
    assert_string_equal(h.path[5], "/");
    assert_int_equal(e->n_watches, 0);
    etcd_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_lines),
        cmocka_unit_test(test_watch_revisions),
        cmocka_unit_test(test_watch_children),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
