/*
 * group_api.c - group membership's public functions (<reign/group.h>): each checks its
 * arguments, then hands the request to the client's store (group_member_zk.c,
 * group_member_sql.c, group_watch_zk.c, group_watch_sql.c), or to the object's own through
 * the head it starts with (group_internal.h).  Above the backends: they never call here.
 */
#include <string.h>

#include "group_internal.h"

int reign_group_register(reign_group **ret, reign_client *client, const char *name,
                         const reign_group_options *opts)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    reign_group_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    int rc = reign__group_name_check(name);
    if (rc < 0)
        return rc;
    if ((o.id && !reign__id_ok(o.id, REIGN_MEMBER_ID_MAX)) || (o.data_len && !o.data) ||
        o.retry_delay_ms < 0)
        return REIGN_EINVAL;
    if (o.data_len > REIGN_MEMBER_DATA_MAX)
        return REIGN_E2BIG;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    return reign__client_zk(client) ? reign__group_zk_register(ret, client, name, &o)
                                    : reign__group_sql_register(ret, client, name, &o);
}

int reign_group_set_data(reign_group *g, const void *data, size_t len)
{
    if (!g || (len && !data))
        return REIGN_EINVAL;
    if (len > REIGN_MEMBER_DATA_MAX)
        return REIGN_E2BIG;
    return g->ops->set_data(g, data, len);
}

int reign_group_is_registered(const reign_group *g)
{
    return g && g->ops->is_registered(g);
}

const char *reign_group_node(const reign_group *g)
{
    return g ? g->ops->node(g) : NULL;
}

const char *reign_group_name(const reign_group *g)
{
    return g->name;
}

const char *reign_group_id(const reign_group *g)
{
    return g->id;
}

void *reign_group_userdata(const reign_group *g)
{
    return g->userdata;
}

reign_group *reign_group_free(reign_group *g)
{
    if (g)
        g->ops->free(g);
    return NULL;
}

static int watch_new(reign_group_watch **ret, reign_client *client, const char *name,
                     const reign_group_watch_options *o, reign_group_list_cb *list_cb,
                     void *userdata)
{
    if (!ret || !client)
        return REIGN_EINVAL;
    *ret = NULL;
    int rc = reign__group_name_check(name);
    if (rc < 0)
        return rc;
    if (reign__client_closing(client))
        return REIGN_ECLOSED;
    return reign__client_zk(client)
               ? reign__group_watch_zk(ret, client, name, o, list_cb, userdata)
               : reign__group_watch_sql(ret, client, name, o, list_cb, userdata);
}

int reign_group_watch_start(reign_group_watch **ret, reign_client *client, const char *name,
                            const reign_group_watch_options *opts)
{
    reign_group_watch_options o = {0};
    if (opts)
        memcpy(&o, opts, opts->size && opts->size < sizeof(o) ? opts->size : sizeof(o));
    return watch_new(ret, client, name, &o, NULL, NULL);
}

int reign_group_list(reign_client *client, const char *name, reign_group_list_cb *cb,
                     void *userdata)
{
    if (!cb)
        return REIGN_EINVAL;
    reign_group_watch *w;
    return watch_new(&w, client, name, NULL, cb, userdata);
}

void reign_group_watch_members(const reign_group_watch *w, const reign_member **members, size_t *n)
{
    *members = w ? w->view : NULL;
    *n = w ? w->n_view : 0;
}

const char *reign_group_watch_name(const reign_group_watch *w)
{
    return w->name;
}

void *reign_group_watch_userdata(const reign_group_watch *w)
{
    return w->userdata;
}

reign_group_watch *reign_group_watch_free(reign_group_watch *w)
{
    if (w)
        w->free(w);
    return NULL;
}
