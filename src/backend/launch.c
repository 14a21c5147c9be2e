#include <stdatomic.h>

#include "backend/backend.h"
#include "core/core_internal.h"

/* Launches per device and kernel, for the conformance test's "every kernel ran on every device"
 * check: one relaxed atomic increment per launch (a few ns, no lock). */
static atomic_ulong launch_counts[CT_DEVICE_TYPE_COUNT][CT_LAUNCH_COUNTED_DEVICES][CT_KERNEL_COUNT];

ct_status ct_backend_launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                            const ct_kparams *params, long work_per_item)
{
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return ct_error(CT_ERR_INTERNAL, "launch of an empty or unknown kernel id %d", (int)kernel);
    if (params->n <= 0) return CT_OK;
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    if (device.index >= 0 && device.index < CT_LAUNCH_COUNTED_DEVICES)
        atomic_fetch_add_explicit(&launch_counts[device.type][device.index][kernel], 1,
                                  memory_order_relaxed);
    return backend->launch(device.index, ct_current_stream_handle(device), kernel, buffers, params,
                           work_per_item);
}

ct_status ct_backend_gemm(ct_device device, const ct_gemm_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    return backend->gemm(device.index, ct_current_stream_handle(device), args);
}

uint64_t ct_backend_launch_count(ct_device device, ct_kernel_id kernel)
{
    if (device.type < 0 || device.type >= CT_DEVICE_TYPE_COUNT || device.index < 0 ||
        device.index >= CT_LAUNCH_COUNTED_DEVICES || kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return 0;
    return atomic_load_explicit(&launch_counts[device.type][device.index][kernel], memory_order_relaxed);
}
