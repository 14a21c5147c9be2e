/* The backends built into this library, one slot per device type. */
#include "device/backend_interface.h"

extern const ct_backend ct_cpu_backend;
#ifdef CTORCH_HAVE_CUDA
extern const ct_backend ct_cuda_backend;
#endif
#ifdef CTORCH_HAVE_OPENCL
extern const ct_backend ct_opencl_backend;
#endif

const ct_backend *ct_backend_table[CT_DEVICE_TYPE_COUNT] = {
    [CT_CPU] = &ct_cpu_backend,
#ifdef CTORCH_HAVE_CUDA
    [CT_CUDA] = &ct_cuda_backend, /* the driver is opened at run time: see cuda_libraries.h */
#else
    [CT_CUDA] = NULL,   /* built without CUDA (CTORCH_WITH_CUDA) */
#endif
#ifdef CTORCH_HAVE_OPENCL
    [CT_OPENCL] = &ct_opencl_backend,
#else
    [CT_OPENCL] = NULL, /* built without OpenCL (CTORCH_WITH_OPENCL) */
#endif
};

void ct_backend_install_for_testing(ct_device_type type, const ct_backend *backend)
{
    ct_backend_table[type] = backend;
}
