/*
 * postgres_text.h - PostgreSQL's words in text (postgres_text.c), for postgres.c.  Private to
 * src/sql/.
 */
#ifndef REIGN_SQL_POSTGRES_TEXT_H
#define REIGN_SQL_POSTGRES_TEXT_H

#include <stddef.h>

#include "dialect.h"

/* The SQLSTATE in a verbose libpq message ("FATAL:  28P01: password ..."), or "". */
void reign__pg_sqlstate_of_message(const char *msg, char out[6]);
/* The reign code a SQLSTATE stands for (REIGN_EBACKEND for the rest). */
int reign__pg_code_of_sqlstate(const char *s);
/* The first line of a libpq message, from the server's own words on. */
void reign__pg_message_line(const char *msg, char *out, size_t n);
/* The kind of a column of type `type` (pg_type.typname) and typmod. */
reign__sql_coltype reign__pg_kind_of(const char *type, int typmod);
/* A bytea in text form (\x and hex digits) into *out (allocated, NUL after the bytes). */
int reign__pg_unhex(reign__sqlconn *c, const char *what, const char *s, size_t n, char **out,
                    size_t *outlen, char *err, size_t errlen);

#endif
