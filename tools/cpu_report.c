/* The CPU section of `ctorch info` and of `ctorch bench`'s header. */
#include <string.h>

#include "cpu_report.h"
#include "ctorch.h"
#include "json_write.h"

void ct_cpu_report_print(FILE *out)
{
    ct_cpu_info info;
    if (ct_cpu_get_info(&info) != CT_OK) {
        fprintf(out, "cpu:\n  error: %s\n", ct_last_error_message());
        return;
    }
    fprintf(out, "cpu:\n  %-11s %s", "model", info.model_name);
    if (info.vendor[0]) fprintf(out, " (%s, family %d model %d)", info.vendor, info.family, info.model);
    fprintf(out, "\n  %-11s %s\n", "extensions",
            info.extensions[0] ? info.extensions : "none that ctorch uses");
    if (info.has.amx_tile)
        fprintf(out, "  %-11s %s\n", "AMX",
                info.amx_permitted ? "tile data permitted by Linux" : "tile data REFUSED by Linux (needs 5.16 or later)");
    for (int i = 0; i < info.engine_count; i++) {
        const ct_cpu_matrix_engine *e = &info.engines[i];
        fprintf(out, "  %-11s %s: %s kernels", e->name, e->version[0] ? e->version : "(version unknown)",
                e->kernel[0] ? e->kernel : "unknown");
        if (e->set_by_ctorch) fprintf(out, " (chosen by ctorch from the extensions)");
        if (e->below_cpu)
            fprintf(out, ", BELOW this CPU (it could run %s)", e->best_kernel[0] ? e->best_kernel : "more");
        fprintf(out, "\n");
    }
}

cJSON *ct_cpu_report_json(void)
{
    ct_cpu_info info;
    cJSON *cpu = ct_json_object();
    if (!cpu) return NULL;
    if (ct_cpu_get_info(&info) != CT_OK) {
        ct_json_add_string(cpu, "error", ct_last_error_message());
        return cpu;
    }
    ct_json_add_string(cpu, "model_name", info.model_name);
    ct_json_add_string(cpu, "vendor", info.vendor);
    ct_json_add_number(cpu, "family", info.family);
    ct_json_add_number(cpu, "model", info.model);
    cJSON *extensions = cJSON_AddArrayToObject(cpu, "extensions");
    for (const char *p = info.extensions; *p;) {
        size_t length = strcspn(p, " ");
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)length, p);
        cJSON_AddItemToArray(extensions, cJSON_CreateString(name));
        p += length + (p[length] == ' ');
    }
    ct_json_add_bool(cpu, "amx_permitted", info.amx_permitted);
    cJSON *engines = cJSON_AddArrayToObject(cpu, "engines");
    for (int i = 0; i < info.engine_count; i++) {
        const ct_cpu_matrix_engine *e = &info.engines[i];
        cJSON *engine = ct_json_object();
        ct_json_add_string(engine, "name", e->name);
        ct_json_add_string(engine, "version", e->version);
        ct_json_add_string(engine, "details", e->details);
        ct_json_add_string(engine, "kernel", e->kernel);
        ct_json_add_string(engine, "best_kernel", e->best_kernel[0] ? e->best_kernel : NULL);
        ct_json_add_bool(engine, "set_by_ctorch", e->set_by_ctorch);
        ct_json_add_bool(engine, "below_cpu", e->below_cpu);
        cJSON_AddItemToArray(engines, engine);
    }
    return cpu;
}
