/* Which OpenCL devices ctorch shows, and in which order: the physical order (GPUs and
 * accelerators before CPU devices) and CTORCH_OPENCL_VISIBLE_DEVICES on top of it. */
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/opencl_backend.h"

void ct_opencl_order_devices(const bool *is_accelerator, int count, int *order)
{
    int next = 0;
    for (int group = 0; group < 2; group++)
        for (int i = 0; i < count; i++)
            if (is_accelerator[i] == (group == 0)) order[next++] = i;
}

/* One entry of the list, [begin, end): its index, or -1 when it is not a plain number. */
static long parse_entry(const char *begin, const char *end)
{
    while (begin < end && *begin == ' ') begin++;
    while (end > begin && end[-1] == ' ') end--;
    if (begin == end || end - begin > 9) return -1;
    long value = 0;
    for (const char *c = begin; c < end; c++) {
        if (*c < '0' || *c > '9') return -1;
        value = value * 10 + (*c - '0');
    }
    return value;
}

int ct_opencl_parse_visible_devices(const char *text, int physical_count, int *logical_to_physical,
                                    int capacity)
{
    int count = 0;
    const char *entry = text;
    while (*entry && count < capacity) {
        const char *comma = strchr(entry, ',');
        const char *end = comma ? comma : entry + strlen(entry);
        long index = parse_entry(entry, end);
        if (index < 0 || index >= physical_count) break;
        for (int i = 0; i < count; i++)
            if (logical_to_physical[i] == index) return count; /* a repeat ends the list */
        logical_to_physical[count++] = (int)index;
        if (!comma) break;
        entry = comma + 1;
    }
    return count;
}
