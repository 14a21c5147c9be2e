/* Choosing the device of `ctorch train` and `ctorch eval`, and saying which it is. */
#include "tool.h"

bool ct_tool_choose_device(const char *command, const char *text, ct_device *out)
{
    if (text) {
        if (ct_device_parse(text, out) == CT_OK) return true;
        fprintf(stderr, "ctorch %s: --device: %s\n", command, ct_last_error_message());
        return false;
    }
    if (ct_best_device(out) == CT_OK) return true;
    fprintf(stderr, "ctorch %s: choosing the device: %s\n", command, ct_last_error_message());
    return false;
}

void ct_tool_print_using(FILE *out, ct_device device)
{
    if (device.type == CT_CPU) {
        fprintf(out, "Using CPU\n");
        return;
    }
    char name[CT_DEVICE_STRING_MAX];
    ct_device_format(device, name, sizeof name);
    ct_device_props props;
    if (ct_get_device_properties(device, &props) == CT_OK)
        fprintf(out, "Using %s (%s)\n", name, props.name);
    else
        fprintf(out, "Using %s\n", name);
}
