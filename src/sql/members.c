/*
 * members.c - the members of groups in a SQL store (members.h), written once for the three
 * dialects through reign__sql_query().
 */
#include "members.h"

#include <stdlib.h>
#include <string.h>

#include "dialect.h"
#include "layout.h"
#include "side.h"

void reign__member_rows_free(reign__member_rows *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        reign__free(r->v[i].id);
        reign__free(r->v[i].data);
    }
    reign__free(r->v);
    memset(r, 0, sizeof *r);
}

static const char *const required[] = {REIGN__MEMBERS_REQUIRED_COLUMNS};

/* make false: only check (reign__members_check()). */
static int ensure_or_check(reign__sqlconn *c, bool make, char *err, size_t errlen)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS {M} ("
                                 "data_center varchar(128) NOT NULL, "
                                 "group_name varchar(200) NOT NULL, "
                                 "guid varchar(64) NOT NULL, "
                                 "seq bigint NOT NULL, "
                                 "member_id varchar(512) NOT NULL, "
                                 "session_guid varchar(64) NOT NULL, "
                                 "payload {BLOB}, "
                                 "version bigint NOT NULL, "
                                 "joined_ms bigint NOT NULL, "
                                 "PRIMARY KEY (data_center, group_name, guid))"
                                 "{TABLE_OPTIONS}";
    return reign__sql_side_ensure(c, REIGN__SQL_MEMBERS_SUFFIX, "members", required,
                                  sizeof required / sizeof required[0], make ? create : NULL,
                                  &c->members_ready, err, errlen);
}

int reign__members_ensure(reign__sqlconn *c, char *err, size_t errlen)
{
    return ensure_or_check(c, true, err, errlen);
}

int reign__members_check(reign__sqlconn *c, char *err, size_t errlen)
{
    return ensure_or_check(c, false, err, errlen);
}

/* The statements of a registration, in its transaction (members.h says why in this order).
 * 1 and *seq, 0 (no session), or a negative code; the caller commits or rolls back. */
static int register_tx(reign__sqlconn *c, const reign__sqlv *args, uint64_t *seq, char *err,
                       size_t errlen)
{
    int rc = reign__sql_query(c, "beating a session to register in it",
                              "UPDATE {S} SET beat = beat + 1, modified_ms = {NOW} WHERE "
                              "data_center = {1} AND guid = {5}",
                              args, 5, NULL, err, errlen);
    if (rc <= 0)
        return rc;
    reign__sql_rows rs;
    rc = reign__sql_query(c, "looking for a registration",
                          "SELECT seq FROM {M} WHERE data_center = {1} AND group_name = {2} AND "
                          "guid = {3}",
                          args, 3, &rs, err, errlen);
    if (rc < 0)
        return rc;
    int64_t found = 0;
    bool mine = rs.n_rows == 1 && reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &found);
    reign__sql_rows_free(&rs);
    if (mine) { /* written by an attempt whose answer was lost */
        *seq = (uint64_t)found;
        return 1;
    }
    rc = reign__sql_query(c, "making a group",
                          "INSERT INTO {M} (data_center, group_name, guid, seq, member_id, "
                          "session_guid, payload, version, joined_ms) VALUES ({1}, {2}, '', 0, "
                          "'', '', NULL, 0, {NOW}){ON_CONFLICT}",
                          args, 2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_query(c, "counting a registration",
                              "UPDATE {M} SET seq = seq + 1 WHERE data_center = {1} AND "
                              "group_name = {2} AND guid = ''",
                              args, 2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_query(c, "reading a group's count",
                              "SELECT seq FROM {M} WHERE data_center = {1} AND group_name = {2} "
                              "AND guid = ''",
                              args, 2, &rs, err, errlen);
    if (rc < 0)
        return rc;
    int64_t n = 0;
    if (rs.n_rows != 1 || !reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &n) || n <= 0)
        rc = reign__sql_err(c, err, errlen, REIGN_EFOREIGN,
                            "the row of group '%s' in the members table of %s holds no count",
                            args[1].s, c->table);
    reign__sql_rows_free(&rs);
    if (rc < 0)
        return rc;
    reign__sqlv row[7] = {args[0], args[1], args[2], args[3], args[4], args[5], REIGN__SQLV_I(n)};
    rc = reign__sql_query(c, "registering a member",
                          "INSERT INTO {M} (data_center, group_name, guid, seq, member_id, "
                          "session_guid, payload, version, joined_ms) VALUES ({1}, {2}, {3}, {7}, "
                          "{4}, {5}, {6}, 0, {NOW})",
                          row, 7, NULL, err, errlen);
    if (rc == 0)
        rc = REIGN_EEXIST; /* MariaDB's duplicate key: cannot be, the guid is fresh */
    *seq = (uint64_t)n;
    return rc < 0 ? rc : 1;
}

int reign__members_register(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                            const char *id, const char *session, const void *data, size_t len,
                            uint64_t *seq, char *err, size_t errlen)
{
    int rc = reign__members_ensure(c, err, errlen);
    if (rc < 0)
        return rc;
    reign__sqlv args[6] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(group),   REIGN__SQLV_S(guid),
                           REIGN__SQLV_S(id), REIGN__SQLV_S(session), REIGN__SQLV_B(data, len)};
    if ((rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen)) < 0)
        return rc;
    int done = register_tx(c, args, seq, err, errlen);
    if (done <= 0) {
        reign__sql_rollback(c);
        return done;
    }
    rc = reign__sql_side_commit(c, dc, REIGN__MEMBERS_LISTEN, err, errlen);
    return rc < 0 ? rc : 1;
}

int reign__members_set_data(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                            const void *data, size_t len, char *err, size_t errlen)
{
    reign__sqlv args[4] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(group), REIGN__SQLV_S(guid),
                           REIGN__SQLV_B(data, len)};
    int rc = reign__sql_side_write(c, dc, REIGN__MEMBERS_LISTEN, "writing a member's payload",
                                   "UPDATE {M} SET payload = {4}, version = version + 1 WHERE "
                                   "data_center = {1} AND group_name = {2} AND guid = {3}",
                                   args, 4, err, errlen);
    return rc < 0 ? rc : rc > 0;
}

int reign__members_leave(reign__sqlconn *c, const char *dc, const char *group, const char *guid,
                         char *err, size_t errlen)
{
    reign__sqlv args[3] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(group), REIGN__SQLV_S(guid)};
    int rc = reign__sql_side_write(c, dc, REIGN__MEMBERS_LISTEN, "deleting a member",
                                   "DELETE FROM {M} WHERE data_center = {1} AND group_name = {2} "
                                   "AND guid = {3}",
                                   args, 3, err, errlen);
    return rc == REIGN_ENOENT || rc >= 0 ? 0 : rc; /* no table: nothing to delete */
}

/* The columns a registration is read with, in this order. */
#define ROW_COLUMNS                                                                                \
    "m.guid, m.seq, m.member_id, m.session_guid, m.version, m.joined_ms, s.beat, s.lease_ms, "     \
    "m.payload"

/*
 * Row i of a read into *m (cleared first): 1, 0 (its session is gone: no member),
 * REIGN_EFOREIGN (a row reign could not have written, *why saying what it holds; nothing is
 * kept of it), or REIGN_ENOMEM (m->id may be allocated).
 */
static int parse_member(const reign__sql_rows *rs, size_t i, reign__member_row *m, const char **why)
{
    memset(m, 0, sizeof *m);
    const char *guid = reign__sql_cell(rs, i, 0), *id = reign__sql_cell(rs, i, 2);
    const char *session = reign__sql_cell(rs, i, 3);
    int64_t seq;
    if (!reign__sql_cell(rs, i, 6))
        return 0;
    if (!guid || strlen(guid) >= sizeof m->guid || !session ||
        strlen(session) >= sizeof m->session || !id || !reign__id_ok(id, REIGN_MEMBER_ID_MAX))
        return *why = "an id that is no member id", REIGN_EFOREIGN;
    if (!reign__sql_parse_i64(reign__sql_cell(rs, i, 1), &seq) || seq <= 0 ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 4), &m->version) || m->version < 0 ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 5), &m->joined_ms) ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 6), &m->beat) ||
        !reign__sql_parse_i64(reign__sql_cell(rs, i, 7), &m->lease_ms) || m->lease_ms <= 0)
        return *why = "numbers out of range", REIGN_EFOREIGN;
    size_t len = reign__sql_cell_len(rs, i, 8);
    if (len > REIGN_MEMBER_DATA_MAX)
        return *why = "a payload larger than reign writes", REIGN_EFOREIGN;
    m->seq = (uint64_t)seq;
    reign__strlcpy(m->guid, guid, sizeof m->guid);
    reign__strlcpy(m->session, session, sizeof m->session);
    if (!(m->id = reign__strdup(id)) ||
        (len && !(m->data = reign__memdup(reign__sql_cell(rs, i, 8), len))))
        return REIGN_ENOMEM;
    m->data_len = len;
    return 1;
}

/*
 * Every row of rs into out (members.h).  A row reign could not have written is skipped, as a
 * ZooKeeper group watch skips a child that is no member's node: one such row must not hide the
 * members beside it.  It is counted, and out->foreign names the table and what the first holds
 * (never its payload), for the one warning a watch logs.
 */
static int parse_rows(reign__sqlconn *c, const reign__sql_rows *rs, reign__member_rows *out,
                      char *err, size_t errlen)
{
    if (rs->n_rows && !(out->v = reign__calloc(rs->n_rows, sizeof *out->v)))
        return reign__sql_err(c, err, errlen, REIGN_ENOMEM, "out of memory");
    const char *first = NULL;
    for (size_t i = 0; i < rs->n_rows; i++) {
        const char *guid = reign__sql_cell(rs, i, 0), *why = NULL;
        if (guid && !*guid) {
            out->group_exists = true; /* the group's own row */
            continue;
        }
        int rc = parse_member(rs, i, &out->v[out->n], &why);
        if (rc == REIGN_EFOREIGN && !out->n_foreign++)
            first = why;
        if (rc == REIGN_ENOMEM) {
            out->n++; /* the one that failed half-way is freed too */
            reign__member_rows_free(out);
            return reign__sql_err(c, err, errlen, rc, "out of memory");
        }
        if (rc > 0) /* else no member: foreign, or its session is gone (its reaper takes it) */
            out->n++;
    }
    if (out->n_foreign) {
        char name[REIGN__SQL_TABLE_MAX + 16];
        reign__sql_side_table(c, REIGN__SQL_MEMBERS_SUFFIX, name, sizeof name, NULL, 0);
        (void)reign__sql_err(c, out->foreign, sizeof out->foreign, 0,
                             "%zu row(s) of table %s that reign did not write (the first "
                             "holds %s): skipped, they are no members",
                             out->n_foreign, name, first);
    }
    return 0;
}

int reign__members_read(reign__sqlconn *c, const char *dc, const char *group,
                        reign__member_rows *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(group)};
    reign__sql_rows rs;
    /* Read when the store says something changed. */
    int rc =
        reign__sql_side_read(c, "reading a group",
                             "SELECT " ROW_COLUMNS " FROM {M} m LEFT JOIN {S} s ON "
                             "s.data_center = m.data_center AND s.guid = m.session_guid "
                             "WHERE m.data_center = {1} AND m.group_name = {2} ORDER BY m.seq",
                             args, 2, &rs, c->members_ready, reign__members_check, err, errlen);
    if (rc == REIGN_ENOENT)
        return 0; /* no table yet: no group */
    if (rc < 0)
        return rc;
    rc = parse_rows(c, &rs, out, err, errlen);
    reign__sql_rows_free(&rs);
    return rc;
}

int reign__members_of_session(reign__sqlconn *c, const char *dc, const char *session,
                              reign__sql_rows *guids, char *err, size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(session)};
    int rc = reign__sql_query(c, "reading a session's members",
                              "SELECT guid FROM {M} WHERE data_center = {1} AND session_guid = {2}",
                              args, 2, guids, err, errlen);
    if (rc == REIGN_ENOENT) {
        memset(guids, 0, sizeof *guids);
        return 0;
    }
    return rc < 0 ? rc : 0;
}

int reign__members_groups(reign__sqlconn *c, const char *dc, reign__sql_rows *names, char *err,
                          size_t errlen)
{
    return reign__sql_side_list(c, dc, "listing the groups",
                                "SELECT group_name FROM {M} WHERE data_center = {1} AND guid = '' "
                                "ORDER BY group_name",
                                names, err, errlen);
}

/* In the removal's transaction: 1 (the group's row, now locked, exists and no member of a
 * live session stands), 0 (no group), REIGN_EBUSY, or a negative code. */
static int removable(reign__sqlconn *c, const reign__sqlv *args, char *err, size_t errlen)
{
    /* The group's row first: a registration locks it too, so none lands between the count and
     * the delete. */
    int rc = reign__sql_query(c, "locking a group",
                              "UPDATE {M} SET seq = seq WHERE data_center = {1} AND group_name = "
                              "{2} AND guid = ''",
                              args, 2, NULL, err, errlen);
    if (rc <= 0)
        return rc;
    reign__sql_rows rs;
    rc = reign__sql_query(c, "counting a group's members",
                          "SELECT COUNT(*) FROM {M} m JOIN {S} s ON s.data_center = m.data_center "
                          "AND s.guid = m.session_guid WHERE m.data_center = {1} AND m.group_name "
                          "= {2} AND m.guid <> ''",
                          args, 2, &rs, err, errlen);
    if (rc < 0)
        return rc;
    int64_t n = -1;
    (void)reign__sql_parse_i64(reign__sql_cell(&rs, 0, 0), &n);
    reign__sql_rows_free(&rs);
    return n == 0 ? 1 : REIGN_EBUSY;
}

int reign__members_drop_group(reign__sqlconn *c, const char *dc, const char *name, char *err,
                              size_t errlen)
{
    reign__sqlv args[2] = {REIGN__SQLV_S(dc), REIGN__SQLV_S(name)};
    int ok = removable(c, args, err, errlen); /* no table: REIGN_ENOENT, no group */
    if (ok <= 0)
        return ok == REIGN_ENOENT ? 0 : ok;
    /* The rows of dead sessions nobody reaped go too: they are no members. */
    int rc = reign__sql_query(c, "removing a group",
                              "DELETE FROM {M} WHERE data_center = {1} AND group_name = {2}", args,
                              2, NULL, err, errlen);
    if (rc >= 0)
        rc = reign__sql_notify(c, dc, REIGN__MEMBERS_LISTEN, err, errlen);
    return rc < 0 ? rc : 1;
}

int reign__members_remove_group(reign__sqlconn *c, const char *dc, const char *name, char *err,
                                size_t errlen)
{
    int rc = reign__sql_query(c, "begin", "{BEGIN}", NULL, 0, NULL, err, errlen);
    if (rc < 0)
        return rc;
    int ok = reign__members_drop_group(c, dc, name, err, errlen);
    rc = ok > 0 ? reign__sql_query(c, "commit", "COMMIT", NULL, 0, NULL, err, errlen) : ok;
    if (ok <= 0 || rc < 0) {
        reign__sql_rollback(c);
        return rc;
    }
    return 1;
}
