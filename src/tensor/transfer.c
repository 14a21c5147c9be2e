/* Moving bytes between the host and devices, blocking or queued, with every byte and every host
 * wait counted per device (ct_transfer_stats). */
#include <stdlib.h>

#include "device/capture.h"
#include "tensor/tensor_internal.h"

ct_status ct_transfer_host_to_device(ct_device device, void *dst, size_t dst_offset, const void *src,
                                     size_t bytes)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_status refused = ct_capture_refuse(device, true, "a copy from host memory to the device",
                                          "reads the host now, and a replay would not read it again");
    if (refused != CT_OK) return refused;
    ct_transfer_count(device, CT_TRANSFER_HOST_TO_DEVICE, bytes);
    return backend->copy_host_to_device(device.index, dst, dst_offset, src, bytes);
}

ct_status ct_transfer_device_to_host(ct_device device, void *dst, const void *src, size_t src_offset,
                                     size_t bytes)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_status refused = ct_capture_refuse(device, true, "a copy from the device to host memory",
                                          "waits on the host for values the captured work has not computed");
    if (refused != CT_OK) return refused;
    ct_transfer_count(device, CT_TRANSFER_DEVICE_TO_HOST, bytes);
    ct_transfer_count_sync(device);
    return backend->copy_device_to_host(device.index, dst, src, src_offset, bytes);
}

ct_status ct_transfer_between_devices(ct_device to, void *dst, size_t dst_offset, ct_device from,
                                      const void *src, size_t src_offset, size_t bytes)
{
    if (bytes == 0) return CT_OK;
    const ct_backend *source = ct_backend_of(from), *target = ct_backend_of(to);
    if (!source || !target) return ct_last_error();
    if (from.type == CT_CPU && to.type == CT_CPU)
        return source->copy_device_to_device(0, dst, dst_offset, src, src_offset, bytes);
    if (from.type == CT_CPU)
        return ct_transfer_host_to_device(to, dst, dst_offset, (const char *)src + src_offset, bytes);
    if (to.type == CT_CPU)
        return ct_transfer_device_to_host(from, (char *)dst + dst_offset, src, src_offset, bytes);
    ct_status refused = ct_capture_refuse(from, true, "a copy between devices", "is not a launch a graph can hold");
    if (refused == CT_OK) refused = ct_capture_refuse(to, true, "a copy between devices", "is not a launch a graph can hold");
    if (refused != CT_OK) return refused;
    if (ct_device_equal(from, to)) {
        ct_transfer_count(to, CT_TRANSFER_DEVICE_TO_DEVICE, bytes);
        return source->copy_device_to_device(from.index, dst, dst_offset, src, src_offset, bytes);
    }
    if (from.type == to.type && source->copy_peer) {
        ct_status status = source->copy_peer(to.index, dst, dst_offset, from.index, src, src_offset, bytes);
        if (status == CT_OK) {
            ct_transfer_count(to, CT_TRANSFER_DEVICE_TO_DEVICE, bytes);
            return CT_OK;
        }
        if (status != CT_ERR_UNAVAILABLE) return status;
        ct_clear_error(); /* no direct path between these two: go through the host */
    }
    void *staging = malloc(bytes);
    if (!staging) return ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to stage %zu bytes between devices", bytes);
    ct_status status = ct_transfer_device_to_host(from, staging, src, src_offset, bytes);
    if (status == CT_OK) status = ct_transfer_host_to_device(to, dst, dst_offset, staging, bytes);
    free(staging);
    return status;
}

void ct_storage_wait_ready(ct_storage *storage)
{
    void *event = atomic_exchange_explicit(&storage->pending_event, NULL, memory_order_acq_rel);
    if (!event) return;
    const ct_backend *backend = ct_backend_table[storage->pending_device.type];
    ct_transfer_count_sync(storage->pending_device);
    backend->event_synchronize(storage->pending_device.index, event);
    backend->event_destroy(storage->pending_device.index, event);
}
