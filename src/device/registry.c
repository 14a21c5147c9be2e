/* The backend registry: which backends are built in, which found devices, and their devices. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"
#include "device/capture.h"
#include "device/device_internal.h"

typedef struct backend_state {
    pthread_once_t once;
    bool available;
    char reason[256];
} backend_state;

static backend_state states[CT_DEVICE_TYPE_COUNT] = {
    [CT_CPU] = {PTHREAD_ONCE_INIT, false, ""},
    [CT_CUDA] = {PTHREAD_ONCE_INIT, false, ""},
    [CT_OPENCL] = {PTHREAD_ONCE_INIT, false, ""},
};

#define CT_DEFINE_INIT(TYPE)                                                                     \
    static void init_##TYPE(void)                                                                \
    {                                                                                            \
        const ct_backend *b = ct_backend_table[TYPE];                                            \
        states[TYPE].available = b && b->init(states[TYPE].reason, sizeof states[TYPE].reason); \
    }
CT_DEFINE_INIT(CT_CPU)
CT_DEFINE_INIT(CT_CUDA)
CT_DEFINE_INIT(CT_OPENCL)
static void (*const init_functions[CT_DEVICE_TYPE_COUNT])(void) = {
    [CT_CPU] = init_CT_CPU, [CT_CUDA] = init_CT_CUDA, [CT_OPENCL] = init_CT_OPENCL};

static bool valid_type(ct_device_type type) { return type >= 0 && type < CT_DEVICE_TYPE_COUNT; }

const char *ct_device_type_name(ct_device_type type)
{
    switch (type) {
    case CT_CPU: return "cpu";
    case CT_CUDA: return "cuda";
    case CT_OPENCL: return "opencl";
    default: return "invalid";
    }
}

bool ct_backend_is_compiled(ct_device_type type)
{
    return valid_type(type) && ct_backend_table[type] != NULL;
}

bool ct_is_available(ct_device_type type)
{
    if (!ct_backend_is_compiled(type)) return false;
    pthread_once(&states[type].once, init_functions[type]);
    return states[type].available;
}

const char *ct_backend_unavailable_reason(ct_device_type type)
{
    if (!valid_type(type)) return "not a device type";
    if (!ct_backend_is_compiled(type)) return "not compiled in";
    return ct_is_available(type) ? "" : states[type].reason;
}

int ct_device_count(ct_device_type type)
{
    return ct_is_available(type) ? ct_backend_table[type]->device_count() : 0;
}

const ct_backend *ct_backend_of(ct_device device)
{
    if (!ct_is_available(device.type)) {
        ct_device_resolve(device, &device); /* records the precise error */
        return NULL;
    }
    return ct_backend_table[device.type];
}

ct_status ct_get_device_properties(ct_device device, ct_device_props *props)
{
    if (!props) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_get_device_properties: props is NULL");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    memset(props, 0, sizeof *props);
    return ct_backend_table[device.type]->get_properties(device.index, props);
}

ct_status ct_mem_get_info(ct_device device, size_t *free_bytes, size_t *total_bytes)
{
    if (!free_bytes || !total_bytes)
        return ct_error(CT_ERR_NULL_ARGUMENT, "ct_mem_get_info: free_bytes and total_bytes must "
                        "not be NULL");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    return ct_backend_table[device.type]->mem_get_info(device.index, free_bytes, total_bytes);
}

ct_status ct_synchronize(ct_device device)
{
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    status = ct_capture_refuse(device, false, "ct_synchronize", "waits on the host for every stream of the device");
    if (status != CT_OK) return status;
    ct_transfer_count_sync(device);
    return ct_backend_table[device.type]->synchronize(device.index);
}
