/*
 * fmt.h - what `reign register`, `reign members` and `reign value` share: the messages for
 * names the library refuses, and the text and JSON forms of members and values.  (cli.h has
 * the rest; these are specific to groups and values.)
 */
#ifndef REIGN_CLI_FMT_H
#define REIGN_CLI_FMT_H

#include "cli.h"

/* Prints why the library refused a group name or member id (REIGN_ENAME, REIGN_EINVAL,
 * REIGN_E2BIG, REIGN_ENOTSUP, others); returns CLI_EXIT_FAIL. */
int fmt_group_refused(cli *c, int err, const char *group, const char *id, size_t data_len);

/* Prints why a value request failed, naming the key; returns CLI_EXIT_FAIL. */
int fmt_value_failed(cli *c, int err, const char *key, int64_t version);

/* "data=TEXT" for printable UTF-8 (tabs allowed; trailing line ends dropped), else
 * "data_base64=B64" (empty data: "data="); malloc'd, NULL on out of memory. */
char *fmt_data(const void *data, size_t len);

/* {"id","data"|"data_base64","node","seq","joined_ms","version"} */
cJSON *fmt_json_member(const reign_member *m);

/* {"key","data"|"data_base64","version","created_ms","modified_ms"} */
cJSON *fmt_json_value(const reign_value *v);

#endif
