/* ctorch info [--json]: the backends (built in, available, why not), every device, and the CPU with
 * the kernels its matrix engines chose. */
#include <string.h>

#include "cpu_report.h"
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
    cJSON *root = ct_json_object();
    ct_json_add_string(root, "version", CT_VERSION_STRING);
    cJSON *backends = cJSON_AddArrayToObject(root, "backends");
    for (int type = 0; type < CT_DEVICE_TYPE_COUNT; type++) {
        ct_device_type t = (ct_device_type)type;
        cJSON *backend = ct_json_object();
        ct_json_add_string(backend, "type", ct_device_type_name(t));
        ct_json_add_bool(backend, "compiled", ct_backend_is_compiled(t));
        ct_json_add_bool(backend, "available", ct_is_available(t));
        ct_json_add_number(backend, "device_count", ct_device_count(t));
        ct_json_add_string(backend, "reason", ct_backend_unavailable_reason(t));
        cJSON_AddItemToArray(backends, backend);
    }
    cJSON *devices = cJSON_AddArrayToObject(root, "devices");
    for (int i = 0; i < count; i++) {
        const device_row *row = &rows[i];
        char name[CT_DEVICE_STRING_MAX], capability[32];
        cJSON *device = ct_json_object();
        ct_json_add_string(device, "device", ct_device_format(row->device, name, sizeof name));
        ct_json_add_string(device, "name", row->props.name);
        ct_json_add_string(device, "vendor", row->props.vendor);
        snprintf(capability, sizeof capability, "%d.%d", row->props.compute_capability_major,
                 row->props.compute_capability_minor);
        ct_json_add_string(device, "compute_capability", row->props.compute_capability_major > 0 ? capability : NULL);
        ct_json_add_number(device, "total_memory", (double)row->total_memory);
        ct_json_add_number(device, "free_memory", (double)row->free_memory);
        ct_json_add_bool(device, "free_memory_is_estimate", row->props.free_memory_is_estimate);
        ct_json_add_number(device, "max_allocation", (double)row->props.max_allocation);
        ct_json_add_number(device, "compute_units", row->props.compute_units);
        ct_json_add_bool(device, "is_gpu", row->props.is_gpu);
        cJSON_AddItemToArray(devices, device);
    }
    cJSON *cpu = ct_cpu_report_json();
    if (cpu && !cJSON_AddItemToObject(root, "cpu", cpu)) cJSON_Delete(cpu);
    ct_device best = CT_DEVICE_CPU;
    char best_name[CT_DEVICE_STRING_MAX];
    ct_best_device(&best);
    ct_json_add_string(root, "best_device", ct_device_format(best, best_name, sizeof best_name));
    /* The shipped data set train and eval read by default (null, and why, where there is none). */
    const char *data = ct_default_dataset_path();
    ct_json_add_string(root, "data_path", data);
    if (!data) ct_json_add_string(root, "data_error", ct_last_error_message());
    ct_json_print_line(stdout, root);
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
    printf("\n");
    ct_cpu_report_print(stdout);
    ct_device best = CT_DEVICE_CPU;
    char best_name[CT_DEVICE_STRING_MAX];
    if (ct_best_device(&best) != CT_OK)
        printf("\nbest device: error: %s\n", ct_last_error_message());
    else
        printf("\nbest device: %s\n", ct_device_format(best, best_name, sizeof best_name));
    const char *data = ct_default_dataset_path();
    printf("data set:    %s\n", data ? data : ct_last_error_message());
}

int ct_cmd_info(int argc, char **argv)
{
    bool json = false;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: ctorch info [--json]\n\n"
                   "  the backends (compiled in, available, or why not), every device with its memory,\n"
                   "  the CPU's extensions and the kernels its matrix libraries chose, the best device\n"
                   "  (CTORCH_DEVICE overrides it) and the data set train reads\n\n"
                   "  --json    one JSON object\n");
            return 0;
        } else {
            static const char *const options[] = {"--json", "--help", NULL};
            ct_option_unknown("info", "", argv[i], options, "usage: ctorch info [--json]");
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
