/*
 * tasks_bucket_zk.c - a client's payload buckets: the tag of its guids, making its bucket, and
 * the waits for results that share a watch on it (see tasks_internal.h and docs/tasks.md,
 * "Waiting for a result").
 *
 * A task's payload node data/<tag>/<guid> exists from its submit until the transaction that
 * records its result, which deletes it.  A client draws the guids of its submits with one tag
 * (a new one every TAG_SPAN guids, so that no bucket lists more than that), so the tasks it
 * waits for share a bucket, data/<tag>, or a few; its waits on a bucket share one child watch
 * and one listing per change (a burst of results), instead of an exists per task.  A wait is
 * over when a listing sent after it began no longer shows its payload; a listing that still
 * shows it covers it with its watch, whenever it was sent.
 *
 * One hub per client (a recipe, found by its ops) holds the tag, the queues the client has
 * made its bucket in, and the buckets waited on.  A bucket waited on is freed once nothing
 * waits on it and no listing of it is in flight; the hub lives as long as the client.
 */
#include <stdlib.h>
#include <string.h>

#include "recipes/life.h"
#include "tasks_internal.h"

#define RECHECK_MS 5000 /* a bucket waited on is listed at least this often */
#define TAG_SPAN   1024 /* guids drawn with one tag: a bucket lists at most that many */

typedef struct hub hub;

typedef struct bucket {
    struct bucket *prev, *next;
    hub *hub;
    char *queue, *path;
    char tag[REIGN__TASKS_TAG_DIGITS + 1];
    reign__tasks_wait *waits;
    reign__tasks_wait *gone; /* ended by the listing being handled, not yet called back */
    char **names;            /* the last listing, sorted */
    size_t n_names;
    uint64_t sent;    /* listings sent */
    bool listing;     /* one is in flight */
    bool watching;    /* our watch is set and has not fired: the names are current */
    bool again;       /* list again once the one in flight is back */
    reign__life life; /* busy while calling back: not freed (its own rule, not a free) */
    reign__timer recheck;
} bucket;

/* A queue the client submits to: its bucket there for the current tag is made (and how many
 * times). */
typedef struct made {
    struct made *next;
    char *queue;
    char tag[REIGN__TASKS_TAG_DIGITS + 1];
    unsigned count;
} made;

struct hub {
    reign__recipe recipe; /* first: the client calls us through it */
    reign_client *client;
    reign__zk *zk;
    char tag[REIGN__TASKS_TAG_DIGITS + 1];
    unsigned drawn; /* guids drawn with the tag */
    bucket *buckets;
    made *mades;
};

static const reign__recipe_ops hub_ops;

static void names_free(bucket *b)
{
    for (size_t i = 0; i < b->n_names; i++)
        reign__free(b->names[i]);
    reign__free(b->names);
    b->names = NULL;
    b->n_names = 0;
}

static void bucket_free(bucket *b)
{
    hub *h = b->hub;
    reign__timer_stop(reign__client_timers(h->client), &b->recheck);
    reign__zk_forget(h->zk, b);
    for (reign__tasks_wait *w = b->waits; w; w = w->next)
        w->bucket = NULL;
    for (reign__tasks_wait *w = b->gone; w; w = w->next)
        w->bucket = NULL;
    if (b->prev)
        b->prev->next = b->next;
    else
        h->buckets = b->next;
    if (b->next)
        b->next->prev = b->prev;
    names_free(b);
    reign__free(b->queue);
    reign__free(b->path);
    reign__free(b);
}

static void bucket_maybe_free(bucket *b)
{
    if (!b->waits && !b->listing && !reign__life_busy(&b->life))
        bucket_free(b);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool listed(const bucket *b, const char *guid)
{
    return b->n_names && bsearch(&guid, b->names, b->n_names, sizeof(char *), name_cmp);
}

static void unlink_wait(bucket *b, reign__tasks_wait *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->ended)
        b->gone = w->next;
    else
        b->waits = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    w->bucket = NULL;
    w->ended = false;
}

/* Puts w at the head of b's waits, or (ended) of those to call back. */
static void link_wait(bucket *b, reign__tasks_wait *w, bool ended)
{
    reign__tasks_wait **head = ended ? &b->gone : &b->waits;
    w->bucket = b;
    w->ended = ended;
    w->prev = NULL;
    w->next = *head;
    if (w->next)
        w->next->prev = w;
    *head = w;
}

static void arm_recheck(bucket *b)
{
    reign__timer_start(reign__client_timers(b->hub->client), &b->recheck,
                       reign__now_ns() + RECHECK_MS * REIGN__NS_PER_MS);
}

static void bucket_list(bucket *b);

static void on_bucket_event(void *owner, void *arg, reign__zk_event ev, const char *path)
{
    bucket *b = owner;
    (void)arg;
    (void)ev;
    (void)path;
    b->watching = false;
    if (b->waits)
        bucket_list(b);
}

/* Keeps the listing's names, sorted; false when out of memory. */
static bool keep_names(bucket *b, const reign__zk_result *r)
{
    names_free(b);
    if (r->rc != 0 || !r->n_children)
        return true; /* ENOENT: no bucket, so no payload in it */
    if (!(b->names = reign__calloc(r->n_children, sizeof(char *))))
        return false;
    for (size_t i = 0; i < r->n_children; i++)
        if ((b->names[b->n_names] = reign__strdup(r->children[i])))
            b->n_names++;
    qsort(b->names, b->n_names, sizeof(char *), name_cmp);
    return b->n_names == r->n_children;
}

static void on_bucket_listed(void *owner, void *arg, const reign__zk_result *r)
{
    bucket *b = owner;
    uint64_t gen = (uint64_t)(uintptr_t)arg;
    bool watched = gen & 1; /* see bucket_list */
    gen >>= 1;
    b->listing = false;
    bool again = b->again;
    b->again = false;
    if (watched && r->rc == 0)
        b->watching = true; /* a node that is not there is not watched by a listing */
    /* Refused for good (not allowed to read it, ...): every wait reads its result instead,
     * which says what is wrong if it is wrong there too. */
    bool refused = r->rc != 0 && r->rc != REIGN_ENOENT && r->rc != REIGN_ECONNLOSS &&
                   r->rc != REIGN_ETIMEDOUT && r->rc != REIGN_ESESSION && r->rc != REIGN_ECLOSED;
    if (refused)
        reign__log(reign__client_log(b->hub->client), REIGN_LOG_WARN,
                   "tasks %s: listing %s: %s; reading each result instead", b->queue, b->path,
                   reign_strerror(r->rc));
    if (!refused && ((r->rc != 0 && r->rc != REIGN_ENOENT) || !keep_names(b, r))) {
        /* Decided later: listed again by the recheck timer, or when a session (re)connects. */
        names_free(b);
        if (again && b->waits)
            bucket_list(b);
        bucket_maybe_free(b);
        return;
    }
    if (refused)
        names_free(b);
    /* The waits this listing ends (their payloads are gone) move to b->gone, then are called
     * back one by one: a callback may stop any other wait. */
    for (reign__tasks_wait *w = b->waits, *next; w; w = next) {
        next = w->next;
        if (listed(b, w->guid))
            continue; /* still pending or assigned: our watch covers it */
        if (gen <= w->after && !refused) {
            again = true; /* sent before the wait began: says nothing of its task */
            continue;
        }
        unlink_wait(b, w);
        link_wait(b, w, true);
    }
    reign__life_enter(&b->life);
    while (b->gone) {
        reign__tasks_wait *w = b->gone;
        unlink_wait(b, w);
        w->gone(w);
    }
    (void)reign__life_leave(&b->life);
    if (again && b->waits)
        bucket_list(b);
    bucket_maybe_free(b);
}

/*
 * Lists the bucket, or once more after the listing in flight.  Only one watch of ours is ever
 * set on it at a time (a listing made while it is set sets none): the C client keeps every
 * watch it is given, and two would fire twice per change for ever after.
 */
static void bucket_list(bucket *b)
{
    hub *h = b->hub;
    if (b->listing) {
        b->again = true;
        return;
    }
    uint64_t gen = b->sent + 1;
    bool watch = !b->watching;
    if (reign__zk_children(h->zk, b->path, watch ? on_bucket_event : NULL, REIGN__ZK_RETRY, b,
                           on_bucket_listed, (void *)(uintptr_t)(gen << 1 | watch)) == 0) {
        b->sent = gen;
        b->listing = true;
    }
    /* else (out of memory, or the client closing): the recheck timer tries again */
    arm_recheck(b);
}

/* Listed at least every RECHECK_MS while waited on: a missed change would not strand a wait. */
static void on_recheck(reign__timer *t, void *arg)
{
    bucket *b = arg;
    (void)t;
    if (!b->waits)
        return;
    if (b->listing)
        arm_recheck(b);
    else
        bucket_list(b);
}

static hub *hub_of(reign_client *c, bool make)
{
    hub *h = (hub *)reign__client_find(c, &hub_ops);
    if (h || !make)
        return h;
    if (!reign__client_zk(c) || !(h = reign__calloc(1, sizeof(*h))))
        return NULL;
    h->recipe.ops = &hub_ops;
    h->client = c;
    h->zk = reign__client_zk(c);
    reign__client_attach(c, &h->recipe);
    return h;
}

int reign__tasks_new_guid(reign_client *c, char *guid)
{
    hub *h = hub_of(c, true);
    if (!h)
        return REIGN_ENOMEM;
    if (!h->drawn || h->drawn == TAG_SPAN) {
        char old[sizeof(h->tag)];
        memcpy(old, h->tag, sizeof(old));
        do { /* a new tag is another bucket */
            int rc = reign__random_hex(h->tag, REIGN__TASKS_TAG_DIGITS / 2);
            if (rc < 0)
                return rc;
        } while (!strcmp(h->tag, old));
        h->drawn = 0;
    }
    h->drawn++;
    memcpy(guid, h->tag, REIGN__TASKS_TAG_DIGITS);
    return reign__random_hex(guid + REIGN__TASKS_TAG_DIGITS,
                             REIGN__TASKS_GUID_BYTES - REIGN__TASKS_TAG_DIGITS / 2);
}

static made *made_of(hub *h, const char *queue)
{
    made *m = h->mades;
    while (m && strcmp(m->queue, queue))
        m = m->next;
    if (m || !(m = reign__calloc(1, sizeof(*m))))
        return m;
    if (!(m->queue = reign__strdup(queue))) {
        reign__free(m);
        return NULL;
    }
    m->next = h->mades;
    h->mades = m;
    return m;
}

static void make_bucket(hub *h, const char *queue, const char *guid)
{
    char *p = reign__tasks_bucket_path(queue, guid);
    if (p)
        reign__zk_create(h->zk, p, NULL, 0, REIGN__ZK_CONTAINER | REIGN__ZK_RETRY, NULL, NULL,
                         NULL);
    reign__free(p);
}

static bool same_tag(const made *m, const char *guid)
{
    return !strncmp(m->tag, guid, REIGN__TASKS_TAG_DIGITS);
}

unsigned reign__tasks_bucket_prepare(reign_client *c, const char *queue, const char *guid)
{
    hub *h = hub_of(c, true);
    made *m = h ? made_of(h, queue) : NULL;
    if (!m)
        return 0; /* out of memory: the multi's ENOENT, if any, makes it */
    if (!same_tag(m, guid)) {
        /* A new tag (or an older one, sent again after a lost answer): its bucket is made. */
        memcpy(m->tag, guid, REIGN__TASKS_TAG_DIGITS);
        m->count = 0;
    }
    if (!m->count) {
        make_bucket(h, queue, guid);
        m->count++;
    }
    return m->count;
}

void reign__tasks_bucket_missing(reign_client *c, const char *queue, const char *guid,
                                 unsigned count)
{
    hub *h = hub_of(c, true);
    made *m = h ? made_of(h, queue) : NULL;
    if (!h || (m && same_tag(m, guid) && m->count != count))
        return; /* made again since that multi was sent */
    reign__tasks_make_dirs(h->zk, queue);
    make_bucket(h, queue, guid);
    if (m && same_tag(m, guid))
        m->count++;
}

int reign__tasks_wait_start(reign_client *c, const char *queue, const char *task,
                            reign__tasks_wait *w, reign__tasks_gone_cb *gone)
{
    if (!reign__task_name_parse(task, w->guid, NULL))
        return REIGN_ENAME;
    hub *h = hub_of(c, true);
    if (!h)
        return REIGN_ENOMEM;
    bucket *b = h->buckets;
    while (b && (strncmp(b->tag, w->guid, REIGN__TASKS_TAG_DIGITS) || strcmp(b->queue, queue)))
        b = b->next;
    if (!b) {
        if (!(b = reign__calloc(1, sizeof(*b))))
            return REIGN_ENOMEM;
        b->hub = h;
        memcpy(b->tag, w->guid, REIGN__TASKS_TAG_DIGITS);
        b->queue = reign__strdup(queue);
        b->path = reign__tasks_bucket_path(queue, w->guid);
        reign__timer_init(&b->recheck, on_recheck, b);
        if (!b->queue || !b->path) {
            reign__free(b->queue);
            reign__free(b->path);
            reign__free(b);
            return REIGN_ENOMEM;
        }
        b->next = h->buckets;
        if (b->next)
            b->next->prev = b;
        h->buckets = b;
    }
    w->after = b->sent;
    w->gone = gone;
    link_wait(b, w, false);
    /* A payload the last listing showed, and no change since: our watch covers the wait.
     * Else a listing sent from now on decides (the one in flight may show it too). */
    if (!b->listing && !(b->watching && listed(b, w->guid)))
        bucket_list(b);
    return 0;
}

void reign__tasks_wait_stop(reign__tasks_wait *w)
{
    bucket *b = w->bucket;
    if (!b)
        return;
    unlink_wait(b, w);
    bucket_maybe_free(b);
}

/* A new session has none of the old watches: every bucket waited on is listed again (and
 * after a reconnection too: cheap, and a change the server fired meanwhile is not missed). */
static void hub_conn(reign__recipe *rp, reign_conn_state st)
{
    hub *h = (hub *)rp;
    if (st != REIGN_CONN_CONNECTED && st != REIGN_CONN_RECONNECTED)
        return;
    for (bucket *b = h->buckets; b; b = b->next) {
        if (st == REIGN_CONN_CONNECTED)
            b->watching = false;
        if (b->waits)
            bucket_list(b);
    }
}

static void hub_destroy(reign__recipe *rp)
{
    hub *h = (hub *)rp;
    while (h->buckets)
        bucket_free(h->buckets);
    for (made *m = h->mades, *next; m; m = next) {
        next = m->next;
        reign__free(m->queue);
        reign__free(m);
    }
    reign__free(h);
}

static const reign__recipe_ops hub_ops = {.conn = hub_conn, .destroy = hub_destroy};

/* ---- the queue's directories ------------------------------------------------------------- */

void reign__tasks_make_dirs(reign__zk *zk, const char *queue)
{
    static const char rec[] = "reign 1\n" REIGN__K_KIND "=" REIGN__KIND_TASKS "\n\n";
    static const char *const subs[] = {NULL, REIGN__N_TASKS, REIGN__N_DATA, REIGN__N_ASSIGN,
                                       REIGN__N_STATUS};
    reign__zk_create(zk, REIGN__ZK_ROOT, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    reign__zk_create(zk, REIGN__TASKS_DIR, NULL, 0, REIGN__ZK_RETRY, NULL, NULL, NULL);
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        char *p = reign__tasks_path(queue, subs[i], NULL, NULL);
        if (p)
            reign__zk_create(zk, p, i ? NULL : rec, i ? 0 : sizeof rec - 1, REIGN__ZK_RETRY, NULL,
                             NULL, NULL);
        reign__free(p);
    }
}
