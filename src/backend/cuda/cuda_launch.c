/* Launching a kernel: a 1-D grid of blocks of 256 threads over params->n work items (every
 * kernel returns for i >= p.n), the four buffers as CUdeviceptr values and the parameter block
 * by value, on a stream. The launch is queued, not waited for; work queued after it on the same
 * stream waits for it. */
#include <stdint.h>
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"
#include "kernels/kernel_params.h"

#define CT_CUDA_BLOCK_SIZE 256
/* The grid's x dimension is limited to 2^31 - 1 blocks on every device CUDA 13 supports. */
#define CT_CUDA_MAX_BLOCKS 2147483647L

ct_status ct_cuda_launch(int index, void *stream, int kernel, void *const buffers[],
                         const ct_kparams *params, long work_per_item)
{
    (void)work_per_item; /* the device spreads blocks over its multiprocessors itself */
    if (params->n <= 0) return CT_OK;
    long blocks = (params->n + CT_CUDA_BLOCK_SIZE - 1) / CT_CUDA_BLOCK_SIZE;
    if (blocks > CT_CUDA_MAX_BLOCKS) /* kernels index with one grid pass: no more items fit */
        return ct_error(CT_ERR_INVALID_ARGUMENT, "cuda:%d: kernel '%s' over %ld work items needs "
                        "more than %ld blocks of %d", index, ct_kernel_name((ct_kernel_id)kernel),
                        params->n, CT_CUDA_MAX_BLOCKS, CT_CUDA_BLOCK_SIZE);
    ct_status status = ct_cuda_enter(index);
    CUfunction function = NULL;
    if (status == CT_OK) status = ct_cuda_function(index, kernel, &function);
    if (status != CT_OK) return status;

    CUdeviceptr pointers[CT_KERNEL_MAX_BUFFERS];
    for (int i = 0; i < CT_KERNEL_MAX_BUFFERS; i++)
        pointers[i] = ct_cuda_pointer(buffers[i]); /* 0 for an operand the kernel does not use */
    ct_kparams by_value = *params;
    void *arguments[CT_KERNEL_MAX_BUFFERS + 1] = {&pointers[0], &pointers[1], &pointers[2],
                                                  &pointers[3], &by_value};
    CUresult result = ct_cu->cuLaunchKernel(function, (unsigned)blocks, 1, 1, CT_CUDA_BLOCK_SIZE, 1, 1,
                                            0, ct_cuda_stream(stream), arguments, NULL);
    if (result != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "cuLaunchKernel (kernel '%s', %ld blocks)",
                 ct_kernel_name((ct_kernel_id)kernel), blocks);
        return ct_cuda_fail(index, what, result);
    }
    return CT_OK;
}
