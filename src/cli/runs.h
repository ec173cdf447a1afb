/*
 * runs.h - the record of a slot (<reign/slot.h>) as `reign runs` and `reign status` show it.
 */
#ifndef REIGN_CLI_RUNS_H
#define REIGN_CLI_RUNS_H

#include "cli.h"

/* {"slot","verdict","runs":[{"attempt","owner","host","term","token","start_ms","end_ms",
 * "result","code"}...]}; NULL on out of memory. */
cJSON *cli_slot_json(const reign_slot_record *r);

/* "2024-05-01  succeeded" then one line per attempt, each after `indent`. */
void cli_slot_print(const reign_slot_record *r, const char *indent);

#endif
