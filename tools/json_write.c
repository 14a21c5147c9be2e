/* Writing the command's JSON through cJSON (the one place that does), with the rule for numbers
 * JSON cannot hold. */
#include <math.h>
#include <stdlib.h>

#include "json_write.h"

cJSON *ct_json_object(void) { return cJSON_CreateObject(); }

void ct_json_add_number(cJSON *object, const char *name, double value)
{
    if (!object) return;
    if (isfinite(value)) {
        cJSON_AddNumberToObject(object, name, value);
        return;
    }
    cJSON_AddNullToObject(object, name);
    char flag[128];
    snprintf(flag, sizeof flag, "%s_nonfinite", name);
    cJSON_AddStringToObject(object, flag, isnan(value) ? "nan" : value > 0 ? "inf" : "-inf");
}

void ct_json_add_string(cJSON *object, const char *name, const char *value)
{
    if (!object) return;
    if (value)
        cJSON_AddStringToObject(object, name, value);
    else
        cJSON_AddNullToObject(object, name);
}

void ct_json_add_bool(cJSON *object, const char *name, bool value)
{
    if (object) cJSON_AddBoolToObject(object, name, value);
}

bool ct_json_print_line(FILE *out, cJSON *object)
{
    char *text = object ? cJSON_PrintUnformatted(object) : NULL;
    cJSON_Delete(object);
    if (!text) return false;
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return true;
}
