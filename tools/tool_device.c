/* Choosing the device of `ctorch train` and `ctorch eval` (or the devices of `ctorch train
 * --data-parallel`), and saying which it is. */
#include <string.h>

#include "tool.h"

bool ct_tool_choose_device(const char *command, const ct_tool_job *job, const char *text, ct_device *out)
{
    bool one_rank = job && job->distributed;
    char rank[64] = "";
    if (one_rank) snprintf(rank, sizeof rank, "rank %d of %d: ", job->rank, job->world_size);
    if (text) {
        if (ct_device_parse(text, out) == CT_OK) return true;
        fprintf(stderr, "ctorch %s: %s--device: %s\n", command, rank, ct_last_error_message());
        return false;
    }
    if ((one_rank ? ct_dist_device(out) : ct_best_device(out)) == CT_OK) return true;
    fprintf(stderr, "ctorch %s: %schoosing the device: %s\n", command, rank, ct_last_error_message());
    return false;
}

/* The library's message without the name of the function that wrote it. */
static const char *message_without(const char *function)
{
    const char *message = ct_last_error_message();
    size_t length = strlen(function);
    if (strncmp(message, function, length) == 0 && strncmp(message + length, ": ", 2) == 0) return message + length + 2;
    return message;
}

bool ct_tool_choose_data_parallel(const char *command, const char *text, const char *device_text, ct_device *out,
                                  int max, int *count)
{
    *count = 0;
    int n = 0;
    if (ct_device_list_parse(text, out, max, &n) != CT_OK) {
        fprintf(stderr, "ctorch %s: --data-parallel: %s\n", command, message_without("ct_device_list_parse"));
        return false;
    }
    char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
    if (n == 1 && out[0].index < 0) { /* "opencl": every visible device of the type */
        ct_device_type type = out[0].type;
        int visible = ct_device_count(type);
        n = visible < max ? visible : max;
        for (int i = 0; i < n; i++) out[i] = (ct_device){type, i};
    }
    for (int i = 0; i < n; i++) {
        if (out[i].index < 0) {
            fprintf(stderr, "ctorch %s: --data-parallel '%s': '%s' (every device of the type) stands alone; "
                    "name the devices, as %s:0,%s:1\n", command, text, ct_device_type_name(out[i].type),
                    ct_device_type_name(out[i].type), ct_device_type_name(out[i].type));
            return false;
        }
        if (out[i].type != out[0].type) {
            fprintf(stderr, "ctorch %s: --data-parallel '%s' mixes device types (%s and %s); list devices of "
                    "one type\n", command, text, ct_device_format(out[0], a, sizeof a),
                    ct_device_format(out[i], b, sizeof b));
            return false;
        }
        for (int j = 0; j < i; j++)
            if (ct_device_equal(out[i], out[j])) {
                fprintf(stderr, "ctorch %s: --data-parallel '%s' lists %s twice; list each device once\n", command,
                        text, ct_device_format(out[i], a, sizeof a));
                return false;
            }
    }
    if (device_text) {
        ct_device device;
        if (!ct_tool_choose_device(command, NULL, device_text, &device)) return false;
        if (ct_device_resolve(device, &device) != CT_OK || !ct_device_equal(device, out[0])) {
            fprintf(stderr, "ctorch %s: --device %s conflicts with --data-parallel '%s', whose first device %s "
                    "holds the model and the batches; leave --device out\n", command, device_text, text,
                    ct_device_format(out[0], a, sizeof a));
            return false;
        }
    }
    *count = n;
    return true;
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

void ct_tool_print_using_data_parallel(FILE *out, const ct_device *devices, int count)
{
    char name[CT_DEVICE_STRING_MAX];
    fprintf(out, "Using DataParallel over");
    for (int i = 0; i < count; i++)
        fprintf(out, "%s %s", i == 0 ? "" : ",", ct_device_format(devices[i], name, sizeof name));
    /* The devices' names, once when they are all the same (as PoCL's are). */
    ct_device_props first, props;
    bool named = devices[0].type != CT_CPU && ct_get_device_properties(devices[0], &first) == CT_OK, same = true;
    for (int i = 1; named && i < count; i++)
        same = same && ct_get_device_properties(devices[i], &props) == CT_OK && strcmp(props.name, first.name) == 0;
    if (named && same) {
        fprintf(out, " (%s)", first.name);
    } else if (named) {
        for (int i = 0; i < count; i++)
            fprintf(out, "%s%s", i == 0 ? " (" : "; ",
                    ct_get_device_properties(devices[i], &props) == CT_OK ? props.name : "?");
        fprintf(out, ")");
    }
    fprintf(out, "\n");
}
