/* ctorch info [--json]: the backends (built in, available, why not) and every device. */
#include <string.h>

#include "ctorch.h"
#include "tool.h"

typedef struct device_row {
    ct_device device;
    ct_device_props props;
    size_t free_memory, total_memory;
} device_row;

/* Fills rows with every visible device of every available backend; returns how many. */
static int collect_devices(device_row *rows, int capacity)
{
    int count = 0;
    for (int type = 0; type < CT_DEVICE_TYPE_COUNT; type++) {
        for (int i = 0; i < ct_device_count((ct_device_type)type) && count < capacity; i++) {
            device_row *row = &rows[count];
            row->device = (ct_device){(ct_device_type)type, i};
            if (ct_get_device_properties(row->device, &row->props) != CT_OK) continue;
            if (ct_mem_get_info(row->device, &row->free_memory, &row->total_memory) != CT_OK)
                row->free_memory = row->total_memory = 0;
            count++;
        }
    }
    return count;
}

static void print_json(const device_row *rows, int count)
{
    printf("{\"version\": \"%s\", \"backends\": [", CT_VERSION_STRING);
    for (int type = 0; type < CT_DEVICE_TYPE_COUNT; type++) {
        ct_device_type t = (ct_device_type)type;
        printf("%s{\"type\": \"%s\", \"compiled\": %s, \"available\": %s, \"device_count\": %d, "
               "\"reason\": ", type ? ", " : "", ct_device_type_name(t),
               ct_backend_is_compiled(t) ? "true" : "false", ct_is_available(t) ? "true" : "false",
               ct_device_count(t));
        ct_json_write_string(stdout, ct_backend_unavailable_reason(t));
        printf("}");
    }
    printf("], \"devices\": [");
    for (int i = 0; i < count; i++) {
        char name[CT_DEVICE_STRING_MAX];
        printf("%s{\"device\": \"%s\", \"name\": ", i ? ", " : "",
               ct_device_format(rows[i].device, name, sizeof name));
        ct_json_write_string(stdout, rows[i].props.name);
        printf(", \"vendor\": ");
        ct_json_write_string(stdout, rows[i].props.vendor);
        printf(", \"compute_capability\": ");
        if (rows[i].props.compute_capability_major > 0)
            printf("\"%d.%d\"", rows[i].props.compute_capability_major, rows[i].props.compute_capability_minor);
        else
            printf("null");
        printf(", \"total_memory\": %zu, \"free_memory\": %zu, \"free_memory_is_estimate\": %s, "
               "\"max_allocation\": %zu, \"compute_units\": %d, \"is_gpu\": %s}",
               rows[i].total_memory, rows[i].free_memory,
               rows[i].props.free_memory_is_estimate ? "true" : "false",
               rows[i].props.max_allocation, rows[i].props.compute_units,
               rows[i].props.is_gpu ? "true" : "false");
    }
    ct_device best = CT_DEVICE_CPU;
    char best_name[CT_DEVICE_STRING_MAX];
    ct_best_device(&best);
    printf("], \"best_device\": \"%s\"}\n", ct_device_format(best, best_name, sizeof best_name));
}

static void print_table(const device_row *rows, int count)
{
    printf("ctorch %s\n\nbackends:\n", CT_VERSION_STRING);
    for (int type = 0; type < CT_DEVICE_TYPE_COUNT; type++) {
        ct_device_type t = (ct_device_type)type;
        if (ct_is_available(t))
            printf("  %-7s available, %d device%s\n", ct_device_type_name(t), ct_device_count(t),
                   ct_device_count(t) == 1 ? "" : "s");
        else if (ct_backend_is_compiled(t)) /* built in, but no driver or no device here */
            printf("  %-7s compiled in, unavailable: %s\n", ct_device_type_name(t),
                   ct_backend_unavailable_reason(t));
        else
            printf("  %-7s unavailable: %s\n", ct_device_type_name(t), ct_backend_unavailable_reason(t));
    }
    printf("\ndevices:\n");
    for (int i = 0; i < count; i++) {
        char name[CT_DEVICE_STRING_MAX];
        printf("  %-10s %s\n", ct_device_format(rows[i].device, name, sizeof name), rows[i].props.name);
        printf("  %-10s memory %.2f GiB total, %.2f GiB free%s; %d compute units", "",
               (double)rows[i].total_memory / (1 << 30), (double)rows[i].free_memory / (1 << 30),
               rows[i].props.free_memory_is_estimate ? " (estimated: total minus what ctorch holds)" : "",
               rows[i].props.compute_units);
        if (rows[i].props.compute_capability_major > 0)
            printf("; compute capability %d.%d", rows[i].props.compute_capability_major,
                   rows[i].props.compute_capability_minor);
        printf("\n");
    }
    ct_device best = CT_DEVICE_CPU;
    char best_name[CT_DEVICE_STRING_MAX];
    if (ct_best_device(&best) != CT_OK)
        printf("\nbest device: error: %s\n", ct_last_error_message());
    else
        printf("\nbest device: %s\n", ct_device_format(best, best_name, sizeof best_name));
}

int ct_cmd_info(int argc, char **argv)
{
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "ctorch info: unknown option '%s'; usage: ctorch info [--json]\n", argv[i]);
            return 2;
        }
    }
    device_row rows[64];
    int count = collect_devices(rows, 64);
    if (json)
        print_json(rows, count);
    else
        print_table(rows, count);
    return 0;
}
