/* The backends built into this library, one slot per device type. */
#include "device/backend_interface.h"

extern const ct_backend ct_cpu_backend;

const ct_backend *ct_backend_table[CT_DEVICE_TYPE_COUNT] = {
    [CT_CPU] = &ct_cpu_backend,
    [CT_CUDA] = NULL,   /* the CUDA backend comes with its own issue */
    [CT_OPENCL] = NULL, /* the OpenCL backend comes with its own issue */
};

void ct_backend_install_for_testing(ct_device_type type, const ct_backend *backend)
{
    ct_backend_table[type] = backend;
}
