/* The JSON the command prints (`--json` of train, eval, info and bench): each line is built with
 * cJSON and printed by ct_json_print_line, so that it is always valid JSON. */
#ifndef CT_JSON_WRITE_H
#define CT_JSON_WRITE_H

#include <stdbool.h>
#include <stdio.h>

#include <cjson/cJSON.h>

/* A new empty object (NULL when out of memory; the adders below accept NULL and do nothing). */
cJSON *ct_json_object(void);
/* name: value. JSON has no nan or inf: a value that is not finite is written null, with
 * "<name>_nonfinite": "nan", "inf" or "-inf" beside it. */
void ct_json_add_number(cJSON *object, const char *name, double value);
/* name: "value" (escaped as JSON needs), or null when value is NULL. */
void ct_json_add_string(cJSON *object, const char *name, const char *value);
void ct_json_add_bool(cJSON *object, const char *name, bool value);
/* Prints object on one line of out and frees it; false (and nothing printed) when out of memory. */
bool ct_json_print_line(FILE *out, cJSON *object);

#endif
