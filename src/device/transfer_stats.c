/* Counters of the bytes that cross between the host and each device, and of host waits, so a
 * user can see needless transfers (seed 001's advice). */
#include <stdatomic.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"
#include "device/device_internal.h"

typedef struct counters {
    atomic_uint_fast64_t bytes[3];
    atomic_uint_fast64_t syncs;
} counters;

static counters device_counters[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];

static counters *counters_of(ct_device device)
{
    if (device.type <= CT_CPU || device.type >= CT_DEVICE_TYPE_COUNT || device.index < 0 ||
        device.index >= CT_MAX_DEVICES_PER_TYPE)
        return NULL;
    return &device_counters[device.type][device.index];
}

void ct_transfer_count(ct_device device, ct_transfer_kind kind, size_t bytes)
{
    counters *c = counters_of(device);
    if (c) atomic_fetch_add(&c->bytes[kind], bytes);
}

void ct_transfer_count_sync(ct_device device)
{
    counters *c = counters_of(device);
    if (c) atomic_fetch_add(&c->syncs, 1);
}

ct_status ct_transfer_stats_get(ct_device device, ct_transfer_stats *stats)
{
    if (!stats) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_transfer_stats_get: stats is NULL");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    *stats = (ct_transfer_stats){0};
    counters *c = counters_of(device);
    if (!c) return CT_OK;
    stats->host_to_device_bytes = atomic_load(&c->bytes[CT_TRANSFER_HOST_TO_DEVICE]);
    stats->device_to_host_bytes = atomic_load(&c->bytes[CT_TRANSFER_DEVICE_TO_HOST]);
    stats->device_to_device_bytes = atomic_load(&c->bytes[CT_TRANSFER_DEVICE_TO_DEVICE]);
    stats->host_syncs = atomic_load(&c->syncs);
    return CT_OK;
}

void ct_transfer_stats_reset(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return;
    counters *c = counters_of(device);
    if (!c) return;
    for (int k = 0; k < 3; k++) atomic_store(&c->bytes[k], 0);
    atomic_store(&c->syncs, 0);
}
