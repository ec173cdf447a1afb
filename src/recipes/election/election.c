/*
 * election.c - the public election API: checks the arguments once and
 * hands the rest to the backend of the client: ZooKeeper (election_zk.c) or
 * SQL leases (election_lease.c).  What every backend shares is in
 * election_base.c, which the backends call; they never call this file.
 */
#include <string.h>

#include "election_base.h"

/* ---- joining ----------------------------------------------------------------------------------
 */

int reign_election_join(reign_election **ret, reign_client *client, const char *name,
                        const reign_election_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_election_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = reign__name_check(name);
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
