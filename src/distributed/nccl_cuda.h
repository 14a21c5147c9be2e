/* What the NCCL backend needs of the CUDA backend, and nothing else: the device's context current
 * on the calling thread (NCCL's calls work in it), the CUDA stream of this thread's current stream
 * on a device, and the device address of a tensor's data. nccl_cuda.c is the only file of the
 * distributed layer that reaches into the CUDA backend (its cuda_internal.h). */
#ifndef CT_DIST_NCCL_CUDA_H
#define CT_DIST_NCCL_CUDA_H

#include <cuda.h>

#include "tensor/tensor_internal.h"

/* Makes the primary context of cuda:index current on this thread, as the CUDA backend's own calls
 * do (CT_ERR_BACKEND with the driver's error when it cannot). */
ct_status ct_nccl_cuda_make_current(int index);
/* The CUstream of this thread's current stream on cuda:index (NULL: the default stream). */
CUstream ct_nccl_cuda_stream(int index);
/* The device address of t's first element (t on a CUDA device). */
CUdeviceptr ct_nccl_cuda_data(const ct_tensor *t);

#endif
