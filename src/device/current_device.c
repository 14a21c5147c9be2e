/* The current device, per thread and per type, and the guard that sets it for a region. */
#include <stdio.h>
#include <stdlib.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"

/* Index 0 of every type in every new thread: workers must set their own (see device.h). */
static _Thread_local int current_index[CT_DEVICE_TYPE_COUNT];

ct_device ct_current_device(ct_device_type type)
{
    ct_device device = {type, 0};
    if (type >= 0 && type < CT_DEVICE_TYPE_COUNT) device.index = current_index[type];
    return device;
}

ct_status ct_set_device(ct_device device)
{
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    current_index[device.type] = device.index;
    return CT_OK;
}

ct_status ct_device_guard_enter(ct_device_guard *guard, ct_device device)
{
    if (!guard) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_guard_enter: guard is NULL");
    guard->active = false;
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    guard->previous = ct_current_device(device.type);
    current_index[device.type] = device.index;
    guard->active = true;
    return CT_OK;
}

void ct_device_guard_exit(ct_device_guard *guard)
{
    if (!guard || !guard->active) return;
    current_index[guard->previous.type] = guard->previous.index;
    guard->active = false;
}

ct_status ct_best_device(ct_device *out)
{
    if (!out) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_best_device: out is NULL");
    const char *forced = getenv("CTORCH_DEVICE");
    if (forced && *forced) {
        ct_device device;
        if (ct_device_parse(forced, &device) != CT_OK) {
            char reason[512];
            snprintf(reason, sizeof reason, "%s", ct_last_error_message());
            return ct_error(ct_last_error(), "CTORCH_DEVICE='%s' is not usable here: %s", forced,
                            reason);
        }
        return ct_device_resolve(device, out);
    }
    if (ct_device_count(CT_CUDA) > 0) {
        *out = (ct_device){CT_CUDA, 0};
        return CT_OK;
    }
    /* An OpenCL device of CPU type is no faster than ctorch's own CPU backend: only GPUs and
     * accelerators count. */
    for (int i = 0; i < ct_device_count(CT_OPENCL); i++) {
        ct_device_props props;
        if (ct_get_device_properties((ct_device){CT_OPENCL, i}, &props) == CT_OK && props.is_gpu) {
            *out = (ct_device){CT_OPENCL, i};
            return CT_OK;
        }
    }
    *out = CT_DEVICE_CPU;
    return CT_OK;
}
