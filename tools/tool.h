/* The ctorch command: one file per subcommand. */
#ifndef CT_TOOL_H
#define CT_TOOL_H

#include <stdio.h>

int ct_cmd_info(int argc, char **argv);
int ct_cmd_bench(int argc, char **argv);

/* Writes s as a JSON string literal (quotes and escapes included). */
void ct_json_write_string(FILE *out, const char *s);

#endif
