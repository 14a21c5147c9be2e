/* Matrix products (placeholder until the cuBLAS path lands). */
#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"

ct_status ct_cuda_gemm(int index, void *stream, const ct_gemm_args *args)
{
    (void)stream; (void)args;
    return ct_error(CT_ERR_BACKEND, "cuda:%d: matrix products are not built yet", index);
}
