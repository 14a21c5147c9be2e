/* The OpenCL backend's entry in the backend table (see backend_interface.h). */
#include "backend/opencl/opencl_internal.h"

const ct_backend ct_opencl_backend = {
    .type = CT_OPENCL,
    .init = ct_opencl_init,
    .device_count = ct_opencl_get_device_count,
    .get_properties = ct_opencl_get_properties,
    .mem_get_info = ct_opencl_mem_get_info,
    .raw_alloc = ct_opencl_raw_alloc,
    .raw_free = ct_opencl_raw_free,
    .copy_host_to_device = ct_opencl_copy_host_to_device,
    .copy_device_to_host = ct_opencl_copy_device_to_host,
    .copy_device_to_device = ct_opencl_copy_device_to_device,
    .copy_peer = ct_opencl_copy_peer,
    .launch = ct_opencl_launch,
    .gemm = ct_opencl_gemm,
    .synchronize = ct_opencl_synchronize,
};
