/* Choosing the devices of DataParallel: a list parsed from text ("opencl:0,opencl:1"), and the
 * devices of a type ordered by free memory (seed 003's get_gpu_memory, whose first is the main
 * device). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "nn/data_parallel_internal.h"

ct_status ct_devices_by_free_memory(ct_device_type type, ct_device *out, int max, int *count)
{
    const char *function = "ct_devices_by_free_memory";
    if (count) *count = 0;
    if (!count) return ct_null_argument(function, "count"), ct_last_error();
    if (max < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: max is %d; it must not be negative", function, max);
    if (max > 0 && !out) return ct_null_argument(function, "out"), ct_last_error();
    if (type < 0 || type >= CT_DEVICE_TYPE_COUNT)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: %d is not a ct_device_type", function, (int)type);
    int n = ct_device_count(type);
    if (n <= 0)
        return ct_error(CT_ERR_UNAVAILABLE, "%s: there is no %s device here (%s)", function,
                        ct_device_type_name(type), ct_backend_unavailable_reason(type));
    if (n > CT_DP_MAX_DEVICES) n = CT_DP_MAX_DEVICES;
    ct_device devices[CT_DP_MAX_DEVICES];
    size_t free_bytes[CT_DP_MAX_DEVICES];
    for (int i = 0; i < n; i++) {
        size_t total = 0;
        devices[i] = (ct_device){type, i};
        ct_status status = ct_mem_get_info(devices[i], &free_bytes[i], &total);
        if (status != CT_OK) return status;
    }
    /* Insertion sort, most free first; stable, so equal devices keep their index order. */
    for (int i = 1; i < n; i++) {
        ct_device d = devices[i];
        size_t f = free_bytes[i];
        int j = i;
        for (; j > 0 && free_bytes[j - 1] < f; j--) {
            devices[j] = devices[j - 1];
            free_bytes[j] = free_bytes[j - 1];
        }
        devices[j] = d;
        free_bytes[j] = f;
    }
    int written = n < max ? n : max;
    for (int i = 0; i < written; i++) out[i] = devices[i];
    *count = written;
    return CT_OK;
}

ct_status ct_device_list_parse(const char *text, ct_device *out, int max, int *count)
{
    const char *function = "ct_device_list_parse";
    if (count) *count = 0;
    if (!count) return ct_null_argument(function, "count"), ct_last_error();
    if (!text) return ct_null_argument(function, "text"), ct_last_error();
    if (max > 0 && !out) return ct_null_argument(function, "out"), ct_last_error();
    int n = 0;
    const char *p = text;
    for (;;) {
        while (isspace((unsigned char)*p)) p++;
        const char *end = strchr(p, ',');
        size_t length = end ? (size_t)(end - p) : strlen(p);
        while (length > 0 && isspace((unsigned char)p[length - 1])) length--;
        char entry[CT_DEVICE_STRING_MAX];
        if (length == 0)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' has an empty entry; list devices as "
                            "\"opencl:0,opencl:1\"", function, text);
        if (length >= sizeof entry)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: entry %d of '%s' is too long to be a device",
                            function, n + 1, text);
        memcpy(entry, p, length);
        entry[length] = '\0';
        if (n >= max)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: '%s' lists more than %d devices (the room "
                            "in out)", function, text, max);
        if (ct_device_parse(entry, &out[n]) != CT_OK) {
            char reason[512];
            snprintf(reason, sizeof reason, "%s", ct_last_error_message());
            return ct_error(ct_last_error(), "%s: entry %d of '%s': %s", function, n + 1, text, reason);
        }
        n++;
        if (!end) break;
        p = end + 1;
    }
    *count = n;
    return CT_OK;
}
