/*
 * election_zk_history.c - the candidate's part of an election's history on the node tree
 * (docs/history.md): the record its claim makes, the end it writes when it lets go (at once, or
 * when a lost connection comes back), what its guardian is told to write should it die, and the
 * bound on the records kept.  The claim (election_zk_claim.c) makes the history node when an
 * election from before history lacks it.
 *
 *   /reign/election/NAME/history          persistent
 *   /reign/election/NAME/history/h_<seq>  persistent sequential, one per leadership: made by
 *                                         the claim's multi (its czxid is the token, its ctime
 *                                         the start), rewritten once, at version 0, with the end
 *                                         (its mtime the end; a late end carries its own time)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "election_zk.h"

static const char *end_word(zk_election *e, reign_demote_reason reason)
{
    switch (reason) {
    case REIGN_DEMOTE_RESIGNED:
        return "resigned";
    case REIGN_DEMOTE_CEDED:
        return "ceded";
    case REIGN_DEMOTE_NODE_DELETED:
        return "deposed";
    case REIGN_DEMOTE_HANDOFF:
        return e->hist.designated ? "designated" : "preempted";
    default:
        return "lost";
    }
}

/* What the history keeps of our leadership: who, with what (cut), and with `end` how it ended,
 * with the term and token the reader would otherwise have to work out.  Our clock's time of the
 * claim or of the end too, for etcd, whose keys carry no time (ZooKeeper's ctime and mtime, the
 * store's own clock, are read there). */
static int build(zk_election *e, const char *node, const char *end, uint64_t t, uint64_t tok,
                 bool late, reign__buf *h)
{
    char prio[12], session[16], full[24], term[24], token[24], at[24];
    snprintf(prio, sizeof(prio), "%u", e->rank.prio);
    snprintf(session, sizeof(session), "%d", reign__client_session_timeout_ms(e->base.client));
    snprintf(full, sizeof(full), "%zu", e->base.data_len);
    snprintf(term, sizeof(term), "%llu", (unsigned long long)t);
    snprintf(token, sizeof(token), "%llu", (unsigned long long)tok);
    char started[24];
    if (!end)
        e->hist.started_ms = reign__wall_ms();
    snprintf(started, sizeof(started), "%lld", (long long)e->hist.started_ms);
    snprintf(at, sizeof(at), "%lld", (long long)reign__wall_ms());
    const char *kv[24];
    size_t n = 0;
    kv[n++] = REIGN__K_ID, kv[n++] = e->base.id;
    kv[n++] = REIGN__K_NODE, kv[n++] = node;
    kv[n++] = REIGN__K_GUID, kv[n++] = e->guid;
    kv[n++] = REIGN__K_PRIORITY, kv[n++] = prio;
    kv[n++] = REIGN__K_SESSION_MS, kv[n++] = session;
    kv[n++] = REIGN__K_STARTED_MS, kv[n++] = started;
    size_t len = e->base.data_len;
    if (len > REIGN_HISTORY_DATA_MAX) {
        len = REIGN_HISTORY_DATA_MAX;
        kv[n++] = REIGN__K_DATA_LEN, kv[n++] = full;
    }
    if (end) {
        kv[n++] = REIGN__K_TERM, kv[n++] = term;
        kv[n++] = REIGN__K_TOKEN, kv[n++] = token;
        kv[n++] = REIGN__K_END, kv[n++] = end;
        kv[n++] = REIGN__K_ENDED_MS, kv[n++] = at;
        if (late)
            kv[n++] = REIGN__K_LATE, kv[n++] = "1";
    }
    return reign__record_build(h, kv, n, e->base.data, len);
}

/* The record a claim of ours makes, naming our candidate node `node`. */
int reign__zke_history_record(zk_election *e, const char *node, reign__buf *h)
{
    return build(e, node, NULL, 0, 0, false, h);
}

/* Sends the end built into `h` and lets the guardian forget the record. */
static void send_end(zk_election *e, const reign__buf *h)
{
    reign__zk_set(e->zk, e->hist.path, h->data, h->len, 0, 0, NULL, NULL, NULL);
    reign__client_guard_term(e->base.client, false, e->hist.path, NULL, 0);
    set_str(&e->hist.path, NULL);
}

/*
 * Our leadership ends (demote(), before anything lets go of the leader node or of our node): the
 * end goes into our record first.  Not waited for: requests on one session are applied in the
 * order sent, so it lands before the release that lets a successor claim, and a successor's
 * first read of the history sees it.  Demoted while the connection is down (suspended, or past
 * the deadline), the end waits for the connection to come back in the same session
 * (reign__zke_history_resume()), marked late: its time is ours, not the store's.  If the session
 * is gone it is never written, and the history reads the end from what came after
 * (docs/history.md).
 */
void reign__zke_history_end(zk_election *e, reign_demote_reason reason)
{
    if (!e->hist.path)
        return;
    bool late = !reign__zk_connected(e->zk);
    const char *node = e->own.node ? basename_of(e->own.node) : "";
    reign__buf_free(&e->hist.pending);
    reign__buf_init(&e->hist.pending);
    if (build(e, node, end_word(e, reason), e->base.term, e->base.token, late, &e->hist.pending) ==
            0 &&
        !late)
        send_end(e, &e->hist.pending);
    if (!late) {
        reign__buf_free(&e->hist.pending);
        reign__buf_init(&e->hist.pending);
    }
    e->hist.designated = false;
}

/* The connection is back in the same session (before anything else is sent), or a new session
 * or the end came: an end that waited goes out now, or never. */
void reign__zke_history_resume(zk_election *e, bool same_session)
{
    if (!e->hist.pending.len)
        return;
    if (same_session && e->hist.path)
        send_end(e, &e->hist.pending);
    else if (e->hist.path) {
        reign__client_guard_term(e->base.client, false, e->hist.path, NULL, 0);
        set_str(&e->hist.path, NULL);
    }
    reign__buf_free(&e->hist.pending);
    reign__buf_init(&e->hist.pending);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The history's records, oldest first by their sequence: those past the bound go. */
static void on_listed(void *owner, void *arg, const reign__zk_result *r)
{
    zk_election *e = owner;
    if (r->rc != 0)
        return; /* the next prune tries again */
    char **v = reign__calloc(r->n_children + 1, sizeof(*v));
    if (!v)
        return;
    size_t n = 0;
    for (size_t i = 0; i < r->n_children; i++)
        if (!strncmp(r->children[i], REIGN__N_TERM_REC, strlen(REIGN__N_TERM_REC)))
            v[n++] = r->children[i];
    qsort(v, n, sizeof(*v), by_name);
    size_t keep = (size_t)reign__client_history_max(e->base.client);
    for (size_t i = 0; n > keep && i < n - keep; i++) {
        char *path = reign__path_join(e->history_path, v[i]);
        if (path)
            reign__zk_delete(e->zk, path, -1, 0, NULL, NULL, NULL);
        reign__free(path);
    }
    reign__free(v);
}

/*
 * A claim of ours landed and made `record` for term `term`.  Every tenth of the bound's terms
 * the new leader drops the records past the bound: off the handoff's path, one listing and the
 * deletes, so the history never holds more than the bound and a tenth of it.
 */
void reign__zke_history_claimed(zk_election *e, const char *record, uint64_t term, uint64_t token)
{
    set_str(&e->hist.path, record);
    e->hist.designated = false;
    e->hist.made_parent = false;
    if (e->hist.path) { /* should our process die, its guardian writes the end */
        reign__buf h;
        reign__buf_init(&h);
        const char *node = e->own.node ? basename_of(e->own.node) : "";
        if (build(e, node, "guardian", term, token, false, &h) == 0)
            reign__client_guard_term(e->base.client, true, e->hist.path, h.data, h.len);
        reign__buf_free(&h);
    }
    uint64_t every = (uint64_t)reign__client_history_max(e->base.client) / 10 + 1;
    if (record && term % every == 0)
        reign__zk_children(e->zk, e->history_path, NULL, 0, e, on_listed, NULL);
}
