/*
 * candidacy.c - a reignd service as a candidate (service_internal.h): it
 * joins and leaves its election, turns the election's news into events, and
 * makes sure that no two live daemons stand with one node id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service_internal.h"

/* Cede delay for a leadership deposed from outside (reign cede). */
#define DEPOSED_DELAY_MS 1000

static void check_ids(service *s, int joining);

/* ---- the leader as this node sees it (the metrics) ------------------------------- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A leader named by the election is this daemon (its node id and this run's instance). */
static int is_us(const service *s, const reign_leader *l)
{
    payload p;
    if (strcmp(l->id, s->cfg->node_id) != 0 || !l->data)
        return 0;
    reignd__payload_parse(l->data, l->data_len, &p);
    return strcmp(p.instance, s->d->instance) == 0;
}

/*
 * Opens or closes a stretch without a known leader, after each of the
 * election's events and when it is left.  A leader is known while we lead,
 * or while the followed view names another node's leadership; a view that
 * still names ours after our demotion is of a leadership that ended (the
 * demotion comes before anyone else could be elected).  Nothing is known of
 * an election we do not stand in: no stretch is counted then.
 */
static void note_leader(service *s)
{
    int leaderless = 0;
    if (s->election && s->observing && !reign_election_is_leader(s->election)) {
        reign_leader l;
        leaderless = reign_election_leader(s->election, &l) < 0 || is_us(s, &l);
    }
    int64_t now = now_ns();
    if (leaderless && !s->leaderless_since_ns) {
        s->leaderless_since_ns = now;
    } else if (!leaderless && s->leaderless_since_ns) {
        s->leaderless_ns += now - s->leaderless_since_ns;
        s->leaderless_since_ns = 0;
    }
}

void reignd__leaderless(const service *s, double *now_s, double *total_s)
{
    int64_t open = s->leaderless_since_ns ? now_ns() - s->leaderless_since_ns : 0;
    *now_s = (double)open / 1e9;
    *total_s = (double)(s->leaderless_ns + open) / 1e9;
}

/* Counts a change of leadership the event tells of. */
static void count_change(service *s, const reign_election_event *ev)
{
    if (ev->type == REIGN_ELECTION_ELECTED)
        s->changes[REIGND_CHANGE_ELECTED]++;
    else if (ev->type == REIGN_ELECTION_DEMOTED)
        s->changes[reignd_change_of_demotion(ev->reason)]++;
    else if (ev->type == REIGN_ELECTION_LEADER_CHANGED && ev->leader && !is_us(s, ev->leader))
        s->changes[REIGND_CHANGE_ELSEWHERE]++;
}

/* Frees the election (left, or leaving): its leader is no longer followed.  A leadership
 * freed ends without a DEMOTED: it counts as `why`. */
static void drop_election(service *s, reignd_change why)
{
    if (s->election && reign_election_is_leader(s->election))
        s->changes[why]++;
    s->election = reign_election_free(s->election);
    s->observing = 0;
    note_leader(s);
}

/* ---- election -------------------------------------------------------------- */

static void on_election(reign_election *e, const reign_election_event *ev, void *userdata)
{
    service *s = userdata;
    if (ev->type == REIGN_ELECTION_READY)
        s->observing = 1;
    count_change(s, ev);
    note_leader(s); /* before the step: it may leave the election */
    switch (ev->type) {
    case REIGN_ELECTION_ELECTED:
        s->term = ev->term;
        s->token = ev->token;
        slog(s, REIGN_LOG_NOTICE, "elected: term %llu, token %llu", (unsigned long long)ev->term,
             (unsigned long long)ev->token);
        reignd__post(s, REIGND_EV_ELECTED);
        break;
    case REIGN_ELECTION_DEMOTED:
        slog(s, REIGN_LOG_NOTICE, "demoted (%s), term %llu", reign_demote_reason_name(ev->reason),
             (unsigned long long)ev->term);
        reignd__post(s, REIGND_EV_DEMOTED);
        break;
    case REIGN_ELECTION_LEFT:
        if (s->leaving) {
            s->leaving = 0;
            drop_election(s, REIGND_CHANGE_RESIGNED); /* LEFT: no longer leading */
            reignd__maybe_finish(s->d);
        }
        break;
    case REIGN_ELECTION_READY:
        check_ids(s, 0); /* another daemon that joined at the same moment stands now too */
        break;
    case REIGN_ELECTION_LEADER_CHANGED:
        slog(s, REIGN_LOG_INFO, "leader: %s", ev->leader ? ev->leader->id : "none");
        break;
    case REIGN_ELECTION_ERROR:
        slog(s, REIGN_LOG_ERROR, "election stopped: %s (%s)", reign_strerror(ev->error),
             ev->message ? ev->message : "");
        reignd__fatal(s->d, "an election stopped on an error");
        break;
    default:
        break;
    }
}

void reignd__payload_parse(const void *data, size_t len, payload *p)
{
    char text[PAYLOAD_MAX] = "";
    memset(p, 0, sizeof(*p));
    if (len < sizeof(text))
        memcpy(text, data, len);
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    char *save = NULL, *f[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++)
        f[i] = strtok_r(i ? NULL : text, " ", &save);
    if (f[0])
        snprintf(p->service_address, sizeof(p->service_address), "%s", f[0]);
    if (f[1] && strcmp(f[1], "-") != 0)
        snprintf(p->peer_address, sizeof(p->peer_address), "%s", f[1]);
    if (f[2])
        snprintf(p->instance, sizeof(p->instance), "%s", f[2]);
}

const char *reignd__own_peer_address(const service *s)
{
    return s->cfg->peer_address ? s->cfg->peer_address : "";
}

static void join_now(service *s);

/* JOIN: first make sure no other live daemon stands with our node id. */
void reignd__join(service *s)
{
    if (s->election)
        return;
    s->join_seq++;
    s->id_unsure = 0;
    check_ids(s, 1);
}

static void join_now(service *s)
{
    if (s->election)
        return;
    char data[PAYLOAD_MAX];
    snprintf(data, sizeof(data), "%s %s %s", s->cfg->service_address,
             s->cfg->peer_address ? s->cfg->peer_address : "-", s->d->instance);
    reign_election_options o = {
        .size = sizeof(o),
        .id = s->cfg->node_id,
        .data = data,
        .data_len = strlen(data),
        .follow_leader = 1,
        /* SQL stores: a row of this standing beside the lease, so that the others see that we
         * stand, with the payload (ZooKeeper lists every candidate anyway). */
        .listed = 1,
        .cede_delay_ms = DEPOSED_DELAY_MS,
        .cb = on_election,
        .userdata = s,
    };
    int err = reign_election_join(&s->election, s->st->client, s->cfg->election_name, &o);
    if (err < 0) {
        s->election = NULL;
        slog(s, REIGN_LOG_ERROR, "cannot join election %s: %s", s->cfg->election_name,
             reign_strerror(err));
        reignd__fatal(s->d, "cannot join an election");
    }
}

void reignd__leave(service *s, reignd_change why)
{
    s->join_seq++; /* a join still looking for our id will not stand */
    s->id_unsure = 0;
    drop_election(s, why);
}

/*
 * Leaving for good (EXIT): resign and keep the election until its node is
 * deleted (LEFT), so that the shutdown closes the session only then.  A
 * session closed with that delete still in flight leaks its completion in
 * the ZooKeeper C client (seen under LeakSanitizer).
 */
void reignd__leave_for_good(service *s)
{
    s->join_seq++;
    s->id_unsure = 0;
    if (s->election && reign_election_resign(s->election) == 0) {
        s->leaving = 1;
        return;
    }
    drop_election(s, REIGND_CHANGE_RESIGNED);
}

/* ---- node ids: one live daemon per id ----------------------------------------- */

/*
 * The breadcrumb names the old active by its node id, so two live daemons
 * with one id (a cloned VM, a copied configuration, a fixed container host
 * name) would each take the other's record for its own.  Fencing never
 * relies on the id alone (on_crumb_read), and a daemon that finds another
 * live one standing with its id before it does not stand (CONFLICT), and
 * says so, until that one is gone.  The one that stands first keeps
 * standing and says so too, when it sees it.  Looked at before each JOIN,
 * once more as soon as it stands (two daemons that joined at the same
 * moment each saw no one, and now each sees the other: the later one steps
 * back), and every ID_CHECK_MS while in CONFLICT, to see the other one go,
 * or after a look that could not tell who stood first.
 * Not at rest otherwise: a look reads every candidate's node.
 */
typedef struct id_check {
    service *s;
    uint64_t seq;
    int joining;
} id_check;

static void on_id_view(reign_client *client, int err, const reign_election_view *view,
                       void *userdata)
{
    id_check *c = userdata;
    service *s = c->s;
    int joining = c->joining, current = c->seq == s->join_seq;
    free(c);
    if (!joining)
        s->id_check_inflight = 0;
    if (s->stopped || err == REIGN_ECLOSED) {
        reignd__maybe_finish(s->d); /* a shutdown waits for this answer */
        return;
    }
    /* No longer wanted: it left meanwhile (NEUTRAL still stands: a connection lost while we
     * looked; the election waits for it); a look from a standing since left is of no use. */
    if (!joining && !current)
        return;
    if (joining && (!current || s->election ||
                    (s->state != REIGND_ST_STANDBY && s->state != REIGND_ST_NEUTRAL)))
        return;
    if (err < 0 && err != REIGN_ENOENT) {
        if (joining) {
            slog(s, REIGN_LOG_INFO, "cannot look for another daemon with node id %s (%s): standing",
                 s->cfg->node_id, reign_strerror(err));
            join_now(s);
        }
        return;
    }
    long mine = -1, other = -1;
    payload p, op = {{0}, {0}, {0}};
    for (size_t i = 0; view && i < view->n_candidates; i++) {
        const reign_candidate *cd = &view->candidates[i];
        if (strcmp(cd->id, s->cfg->node_id) != 0)
            continue;
        reignd__payload_parse(cd->data, cd->data_len, &p);
        if (strcmp(p.instance, s->d->instance) == 0) {
            if (mine < 0)
                mine = (long)i;
        } else if (other < 0) {
            other = (long)i;
            op = p;
        }
    }
    if (!joining)
        s->id_unsure = 0;
    if (other >= 0 && !joining && mine < 0 && s->state != REIGND_ST_CONFLICT) {
        /* It stands, and the view does not list this daemon (read before its own row or node
         * was there): who stood first cannot be told from it.  The next tick looks again. */
        s->id_unsure = 1;
        return;
    }
    if (other < 0) {
        if (s->conflict[0])
            slog(s, REIGN_LOG_NOTICE, "no other live reignd stands with node id %s any more",
                 s->cfg->node_id);
        s->conflict[0] = '\0';
        if (joining)
            join_now(s);
        else if (s->state == REIGND_ST_CONFLICT)
            reignd__post(s, REIGND_EV_ID_CLEAR);
        return;
    }
    int same = strcmp(op.service_address, s->cfg->service_address) == 0 &&
               strcmp(op.peer_address, reignd__own_peer_address(s)) == 0;
    int first = mine < 0 || other < mine; /* it stands before us */
    char text[sizeof(s->conflict)];
    snprintf(text, sizeof(text),
             "another reignd stands in election %s with this node's id %s (instance %s, service "
             "address %s, peer address %s)%s",
             s->cfg->election_name, s->cfg->node_id, op.instance[0] ? op.instance : "unknown",
             op.service_address[0] ? op.service_address : "unknown",
             op.peer_address[0] ? op.peer_address : "none",
             same ? ": an earlier run of this daemon whose session has not expired yet, or a copy "
                    "of this node with the same addresses"
                  : ": give each node its own node_id");
    if (strcmp(text, s->conflict) != 0) {
        slog(s, same ? REIGN_LOG_WARN : REIGN_LOG_ERROR, "%s; %s", text,
             first ? "this daemon does not stand until it is gone"
                   : "it stood after this one, which keeps standing; that one must not");
        snprintf(s->conflict, sizeof(s->conflict), "%s", text);
    }
    if (first && s->state != REIGND_ST_CONFLICT)
        reignd__post(s, REIGND_EV_ID_CONFLICT); /* acted on while standby (fsm.c) */
    else if (!first && joining)
        join_now(s);
}

static void check_ids(service *s, int joining)
{
    if (!joining && s->id_check_inflight)
        return;
    id_check *c = malloc(sizeof(*c));
    if (c)
        *c = (id_check){s, s->join_seq, joining};
    int err = c ? reign_election_query(s->st->client, s->cfg->election_name, on_id_view, c)
                : REIGN_ENOMEM;
    if (err < 0) {
        free(c);
        if (joining)
            join_now(s);
        return;
    }
    if (!joining)
        s->id_check_inflight = 1;
    if (s->st->uv)
        reign_uv_update(s->st->uv);
}

void reignd__on_id_timer(uv_timer_t *t)
{
    service *s = t->data;
    if (!s->stopped && !s->d->shutting_down && (s->state == REIGND_ST_CONFLICT || s->id_unsure))
        check_ids(s, 0);
}
