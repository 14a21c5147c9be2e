/* The NCCL backend's one contact with the CUDA backend (see nccl_cuda.h): its context, its
 * current stream and its device pointers, through what cuda_internal.h offers. */
#include "backend/cuda/cuda_internal.h"
#include "distributed/nccl_cuda.h"

ct_status ct_nccl_cuda_make_current(int index) { return ct_cuda_enter(index); }

CUstream ct_nccl_cuda_stream(int index) { return ct_cuda_current_stream(index); }

CUdeviceptr ct_nccl_cuda_data(const ct_tensor *t)
{
    return ct_cuda_pointer(ct_tensor_handle(t)) + (CUdeviceptr)t->offset * ct_dtype_size(t->dtype);
}
