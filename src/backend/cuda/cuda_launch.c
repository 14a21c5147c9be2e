/* Launching a kernel: a 1-D grid of blocks over params->n work items (every kernel returns for
 * i >= p.n) or, for a cooperative kernel, one block per group; the buffers (ct_kernel_buffer_count) as
 * CUdeviceptr values and the parameter block by value, on a stream. The launch is queued, not waited for;
 * work queued after it on the same stream waits for it. */
#include <stdint.h>
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "core/core_internal.h"
#include "kernels/kernel_params.h"

#define CT_CUDA_BLOCK_SIZE 256
/* The grid's x dimension is limited to 2^31 - 1 blocks on every device CUDA 13 supports. */
#define CT_CUDA_MAX_BLOCKS 2147483647L

/* Blocks of 256 (8 warps): up to 8 resident per multiprocessor, the cooperative kernels' local
 * arrays sized for them (CT_GROUP_CAPACITY in the device build). A thread walks 4 to 256
 * elements: past 4 a block amortises its start and its fold; up to 256 the grid still has
 * several blocks per multiprocessor for anything over a few million elements. Groups are at
 * least a warp: a smaller block leaves most of its warp idle. */
void ct_cuda_work_shape(int index, ct_work_shape *shape)
{
    const ct_cuda_device *device = &ct_cuda_devices[index];
    long threads = device->threads_per_multiprocessor > 0 ? device->threads_per_multiprocessor : 2048;
    *shape = (ct_work_shape){.group_size = CT_CUDA_BLOCK_SIZE, .min_group_size = 32,
                             .lanes_per_item = 4,
                             .target_items = (long)device->multiprocessors * threads,
                             .min_per_item = 4, .max_per_item = 256,
                             .elementwise_width = CT_DEVICE_VECTOR_WIDTH};
}

ct_status ct_cuda_launch(int index, void *stream, int kernel, void *const buffers[],
                         const ct_kparams *params, long work_per_item, int group_size)
{
    (void)work_per_item; /* the device spreads blocks over its multiprocessors itself */
    if (params->n <= 0) return CT_OK;
    if (group_size > CT_CUDA_BLOCK_SIZE)
        return ct_error(CT_ERR_INTERNAL, "cuda:%d: kernel '%s' launched in groups of %d; at most %d",
                        index, ct_kernel_name((ct_kernel_id)kernel), group_size, CT_CUDA_BLOCK_SIZE);
    long block = group_size > 0 ? group_size : CT_CUDA_BLOCK_SIZE;
    long blocks = group_size > 0 ? params->n : (params->n + block - 1) / block;
    if (blocks > CT_CUDA_MAX_BLOCKS) /* kernels index with one grid pass: no more items fit */
        return ct_error(CT_ERR_INVALID_ARGUMENT, "cuda:%d: kernel '%s' over %ld work items needs "
                        "more than %ld blocks of %ld", index, ct_kernel_name((ct_kernel_id)kernel),
                        params->n, CT_CUDA_MAX_BLOCKS, block);
    ct_status status = ct_cuda_enter(index);
    CUfunction function = NULL;
    if (status == CT_OK) status = ct_cuda_function(index, kernel, &function);
    if (status != CT_OK) return status;

    /* 4 buffers, or a multi-tensor kernel's 32 (ct_kernel_buffer_count), then the block. */
    int count = ct_kernel_buffer_count((ct_kernel_id)kernel);
    CUdeviceptr pointers[CT_KERNEL_WIDE_BUFFERS];
    void *arguments[CT_KERNEL_WIDE_BUFFERS + 1];
    for (int i = 0; i < count; i++) {
        pointers[i] = ct_cuda_pointer(buffers[i]); /* 0 for an operand the kernel does not use */
        arguments[i] = &pointers[i];
    }
    ct_kparams by_value = *params;
    arguments[count] = &by_value;
    CUresult result = ct_cu->cuLaunchKernel(function, (unsigned)blocks, 1, 1, (unsigned)block, 1, 1,
                                            0, ct_cuda_stream(stream), arguments, NULL);
    if (result != CUDA_SUCCESS) {
        char what[160];
        snprintf(what, sizeof what, "cuLaunchKernel (kernel '%s', %ld blocks of %ld)",
                 ct_kernel_name((ct_kernel_id)kernel), blocks, block);
        return ct_cuda_fail(index, what, result);
    }
    return CT_OK;
}
