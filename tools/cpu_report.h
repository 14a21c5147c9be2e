/* The CPU section of `ctorch info` and of `ctorch bench`'s header: the CPU's extensions and the
 * kernels each matrix engine chose (ct_cpu_get_info). */
#ifndef CT_CPU_REPORT_H
#define CT_CPU_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* "cpu:" and its lines, indented by two spaces. */
void ct_cpu_report_print(FILE *out);
/* The same as an object (model_name, vendor, family, model, extensions, amx_permitted, engines);
 * NULL when out of memory. */
cJSON *ct_cpu_report_json(void);

#endif
