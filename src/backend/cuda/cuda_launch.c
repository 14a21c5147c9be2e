/* Launching a kernel (placeholder until the NVRTC path lands). */
#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

ct_status ct_cuda_launch(int index, void *stream, int kernel, void *const buffers[],
                         const struct ct_kparams *params, long work_per_item)
{
    (void)stream; (void)buffers; (void)params; (void)work_per_item;
    return ct_error(CT_ERR_BACKEND, "cuda:%d: kernel %d: kernels are not built yet", index, kernel);
}
