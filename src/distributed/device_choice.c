/* Which device a process of the group uses: one per local rank, as llm.c and torchrun's
 * LOCAL_RANK convention do, so that the processes of one machine spread over its devices. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distributed/dist_internal.h"

#define DEVICE_MAP_VARIABLE "CTORCH_DIST_DEVICE"

/* Index local_rank modulo the count of type's devices; CT_ERR_UNAVAILABLE when there are none. */
static ct_status spread(const ct_dist_group *group, ct_device_type type, const char *entry, ct_device *out)
{
    int count = ct_device_count(type);
    if (count <= 0)
        return ct_error(CT_ERR_UNAVAILABLE, "ct_dist_device: entry '%s' of the device map asks for a %s "
                        "device, but there is none here (%s)", entry, ct_device_type_name(type),
                        ct_backend_unavailable_reason(type));
    if (group->local_world_size > count)
        ct_log_message(CT_LOG_INFO, "ct_dist_device: %d processes on this machine share %d %s devices",
                       group->local_world_size, count, ct_device_type_name(type));
    *out = (ct_device){type, group->local_rank % count};
    return CT_OK;
}

/* The device of one map entry (already trimmed). */
static ct_status entry_device(const ct_dist_group *group, const char *entry, const char *map, ct_device *out)
{
    ct_device device;
    if (ct_device_parse_syntax(entry, &device) != CT_OK) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", ct_last_error_message());
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_device: the device map '%s' has an entry that "
                        "is not a device: %s", map, reason);
    }
    if (device.index < 0) return spread(group, device.type, entry, out);
    if (ct_device_resolve(device, out) != CT_OK) {
        char reason[512];
        snprintf(reason, sizeof reason, "%s", ct_last_error_message());
        return ct_error(ct_last_error(), "ct_dist_device: entry '%s' of the device map '%s' (local rank "
                        "%d) is not usable here: %s", entry, map, group->local_rank, reason);
    }
    return CT_OK;
}

ct_status ct_dist_device_from(const char *map, ct_device *out)
{
    if (!map) return ct_null_argument("ct_dist_device_from", "map"), ct_last_error();
    if (!out) return ct_null_argument("ct_dist_device_from", "out"), ct_last_error();
    ct_dist_group *group = ct_dist_group_get("ct_dist_device_from");
    if (!group) return ct_last_error();
    int entries = 1;
    for (const char *c = map; *c; c++) entries += *c == ',';
    /* Entry number local_rank % entries, without its surrounding spaces. */
    int wanted = group->local_rank % entries;
    const char *start = map;
    for (int i = 0; i < wanted; i++) start = strchr(start, ',') + 1;
    const char *end = strchr(start, ',');
    if (!end) end = start + strlen(start);
    while (start < end && *start == ' ') start++;
    while (end > start && end[-1] == ' ') end--;
    char entry[64];
    if ((size_t)(end - start) >= sizeof entry)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_device: entry %d of the device map '%s' is too "
                        "long to be a device", wanted, map);
    memcpy(entry, start, (size_t)(end - start));
    entry[end - start] = '\0';
    if (!entry[0])
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_dist_device: entry %d of the device map '%s' is "
                        "empty; expected devices separated by commas, such as 'opencl:0,opencl:1'",
                        wanted, map);
    return entry_device(group, entry, map, out);
}

ct_status ct_dist_device(ct_device *out)
{
    if (!out) return ct_null_argument("ct_dist_device", "out"), ct_last_error();
    ct_dist_group *group = ct_dist_group_get("ct_dist_device");
    if (!group) return ct_last_error();
    const char *map = getenv(DEVICE_MAP_VARIABLE);
    if (map && *map) {
        if (ct_dist_device_from(map, out) == CT_OK) return CT_OK;
        char reason[768];
        snprintf(reason, sizeof reason, "%s", ct_last_error_message());
        return ct_error(ct_last_error(), "%s='%s': %s", DEVICE_MAP_VARIABLE, map, reason);
    }
    static const ct_device_type preferred[] = {CT_CUDA, CT_OPENCL};
    for (size_t i = 0; i < CT_ARRAY_LEN(preferred); i++)
        if (ct_device_count(preferred[i]) > 0) return spread(group, preferred[i], ct_device_type_name(preferred[i]), out);
    *out = CT_DEVICE_CPU;
    return CT_OK;
}
