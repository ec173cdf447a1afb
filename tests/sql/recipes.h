/*
 * recipes.h - what the sources of test_sql_recipes share: a connection behind reign's back
 * (test_sql_recipes.c) and the scenarios kept in files of their own (sql_tasks.c: the task
 * queue's statements).
 */
#ifndef REIGN_TEST_SQL_RECIPES_H
#define REIGN_TEST_SQL_RECIPES_H

#include "sql.h"

/* A connection to the store and table of h_uri(), as reign's clients read that URI. */
reign__sqlconn *raw_connect(void);

/* The statements of the task queue (src/sql/tasks.h) on the store (sql_tasks.c). */
void scenario_tasks(void);
/* The one-shot requests of <reign/tasks.h> on the store (sql_tasks.c). */
void scenario_tasks_api(void);

#endif
