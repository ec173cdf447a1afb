/*
 * election.c - the public election API: checks the arguments once, keeps
 * what every backend shares (name, id, payload, callbacks, the current
 * leadership), and hands the rest to the backend of the client: ZooKeeper
 * (election_zk.c) or SQL leases (election_lease.c).
 */
#include <string.h>

#include "election_internal.h"

/* ---- names ---------------------------------------------------------------------------------- */

const char *reign_strategy_name(reign_strategy s)
{
    return s == REIGN_STRATEGY_LOCK ? "lock" : "queue";
}

int reign_strategy_parse(const char *s)
{
    if (s && strcmp(s, "queue") == 0)
        return REIGN_STRATEGY_QUEUE;
    if (s && strcmp(s, "lock") == 0)
        return REIGN_STRATEGY_LOCK;
    return REIGN_EINVAL;
}

const char *reign_demote_reason_name(reign_demote_reason r)
{
    switch (r) {
    case REIGN_DEMOTE_RESIGNED:
        return "resigned";
    case REIGN_DEMOTE_CEDED:
        return "ceded";
    case REIGN_DEMOTE_SUSPENDED:
        return "suspended";
    case REIGN_DEMOTE_SESSION_LOST:
        return "session_lost";
    case REIGN_DEMOTE_NODE_DELETED:
        return "node_deleted";
    case REIGN_DEMOTE_STALLED:
        return "stalled";
    case REIGN_DEMOTE_ERROR:
        return "error";
    case REIGN_DEMOTE_HANDOFF:
        return "handoff";
    }
    return "unknown";
}

int reign__election_name_check(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > REIGN_NAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
        return REIGN_ENAME;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '-';
        if (!ok)
            return REIGN_ENAME;
    }
    return 0;
}

/* ---- joining ----------------------------------------------------------------------------------
 */

int reign__election_base_init(reign_election *e, reign_client *client, const char *name,
                              const reign_election_options *o)
{
    e->client = client;
    e->log = reign__client_log(client);
    e->observer = o->observer != 0;
    e->follow = o->observer || o->follow_leader;
    e->listed = o->listed && !o->observer;
    e->cede_delay_ms = o->cede_delay_ms ? o->cede_delay_ms : 1000;
    e->cb = o->cb;
    e->userdata = o->userdata;
    e->name = reign__strdup(name);
    e->id = reign__strdup(o->id);
    e->data_len = o->data_len;
    if (o->data_len)
        e->data = reign__memdup(o->data, o->data_len);
    if (!e->name || !e->id || (o->data_len && !e->data)) {
        reign__election_base_free(e);
        return REIGN_ENOMEM;
    }
    return 0;
}

void reign__leader_view_clear(reign__leader_view *v)
{
    reign__free(v->id);
    reign__free(v->data);
    reign__free(v->node);
    memset(v, 0, sizeof(*v));
}

void reign__leader_view_public(const reign__leader_view *v, reign_leader *out)
{
    out->id = v->id ? v->id : "";
    out->data = v->data;
    out->data_len = v->data_len;
    out->term = v->term;
    out->token = v->token;
    out->since_ms = v->since_ms;
}

void reign__election_base_free(reign_election *e)
{
    reign__leader_view_clear(&e->lv);
    reign__free(e->name);
    reign__free(e->id);
    reign__free(e->data);
    e->name = e->id = NULL;
    e->data = NULL;
}

int reign_election_join(reign_election **ret, reign_client *client, const char *name,
                        const reign_election_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_election_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = reign__election_name_check(name);
    if (rc < 0)
        return rc;
    if (o.id && !reign__id_ok(o.id, REIGN_ID_MAX))
        return REIGN_EINVAL;
    if (o.data_len > REIGN_DATA_MAX)
        return REIGN_E2BIG;
    if (o.data_len && !o.data)
        return REIGN_EINVAL;
    if (o.strategy != REIGN_STRATEGY_DEFAULT && o.strategy != REIGN_STRATEGY_QUEUE &&
        o.strategy != REIGN_STRATEGY_LOCK)
        return REIGN_EINVAL;
    if (o.cede_delay_ms < 0 || o.priority < 0 || o.priority > REIGN_PRIORITY_MAX ||
        o.preempt_delay_ms < 0)
        return REIGN_EINVAL;
    if (o.priority && o.strategy == REIGN_STRATEGY_LOCK)
        return REIGN_ENOTSUP; /* the lock strategy has no order to rank in */
    if ((o.priority || o.no_preempt || o.preempt_delay_ms) && !reign__client_zk(client))
        return REIGN_ENOTSUP;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    char *id = NULL;
    if (!o.id) {
        if ((rc = reign__default_id(&id)) < 0)
            return rc;
        o.id = id;
    }
    rc = reign__client_zk(client) ? reign__zk_election_join(ret, client, name, &o)
                                  : reign__lease_election_join(ret, client, name, &o);
    reign__free(id);
    return rc;
}

/* ---- the rest of the API -------------------------------------------------------------------- */

int reign_election_resign(reign_election *e)
{
    return e ? e->impl->resign(e) : REIGN_EINVAL;
}

int reign_election_cede(reign_election *e, int delay_ms)
{
    if (!e)
        return REIGN_EINVAL;
    if (!e->leader)
        return REIGN_ESTATE;
    return e->impl->cede(e, delay_ms);
}

int reign_election_is_leader(const reign_election *e)
{
    /* Local state, but never stale: past the bound we are not leader, even
     * if the loop has not run the deadline yet. */
    return e && e->leader && reign__now_ns() < e->impl->valid_until(e);
}

int64_t reign_election_valid_until_ns(const reign_election *e)
{
    return e && e->leader ? e->impl->valid_until(e) : 0;
}

uint64_t reign_election_term(const reign_election *e)
{
    return e && e->leader ? e->term : 0;
}

uint64_t reign_election_token(const reign_election *e)
{
    return e && e->leader ? e->token : 0;
}

int reign_election_leader(const reign_election *e, reign_leader *out)
{
    if (!e || !out)
        return REIGN_EINVAL;
    if (e->lv.known) {
        reign__leader_view_public(&e->lv, out);
        return 0;
    }
    if (e->leader) {
        out->id = e->id;
        out->data = e->data;
        out->data_len = e->data_len;
        out->term = e->term;
        out->token = e->token;
        out->since_ms = 0;
        return 0;
    }
    return REIGN_ENOENT;
}

const char *reign_election_name(const reign_election *e)
{
    return e->name;
}

const char *reign_election_id(const reign_election *e)
{
    return e->id;
}

void *reign_election_userdata(const reign_election *e)
{
    return e->userdata;
}

reign_client *reign_election_client(const reign_election *e)
{
    return e ? e->client : NULL;
}

reign_election *reign_election_free(reign_election *e)
{
    return e ? e->impl->free(e) : NULL;
}
