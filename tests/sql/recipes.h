/*
 * recipes.h - what the sources of test_sql_recipes share: a connection behind reign's back
 * (test_sql_recipes.c) and the scenarios kept in files of their own (sql_tasks.c: the task
 * queue's statements; sql_groups.c: foreign rows among a group's members; sql_history.c: the
 * election history).
 */
#ifndef REIGN_TEST_SQL_RECIPES_H
#define REIGN_TEST_SQL_RECIPES_H

#include "harness.h"
#include "sql.h"

/* A connection to the store and table of h_uri(), as reign's clients read that URI. */
reign__sqlconn *raw_connect(void);
/* A statement on it (rows into *rows when given, to free); any failure fails the test. */
void raw_query(const char *what, const char *sql, const reign__sqlv *args, size_t n,
               reign__sql_rows *rows);
/* `reign rm` of election `name` through c's client, its answer waited for: its error. */
int store_rm(h_cand *c, const char *name);

/* The statements of the task queue (src/sql/tasks.h) on the store (sql_tasks.c). */
void scenario_tasks(void);
/* The one-shot requests of <reign/tasks.h> on the store (sql_tasks.c). */
void scenario_tasks_api(void);
/* Rows of the members table reign did not write are no members (sql_groups.c). */
void scenario_group_foreign(void);
/* Foreign rows and tables of the election history, and reign rm of it (sql_history.c). */
void scenario_history(void);

#endif
