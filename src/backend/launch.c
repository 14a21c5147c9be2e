#include "backend/backend.h"
#include "core/core_internal.h"

ct_status ct_backend_launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                            const ct_kparams *params, long work_per_item)
{
    if (kernel == CT_K_NONE) return ct_error(CT_ERR_INTERNAL, "launch of an empty kernel id");
    if (params->n <= 0) return CT_OK;
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    return backend->launch(device.index, ct_current_stream_handle(device), kernel, buffers, params,
                           work_per_item);
}

ct_status ct_backend_gemm(ct_device device, const ct_gemm_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    return backend->gemm(device.index, ct_current_stream_handle(device), args);
}
