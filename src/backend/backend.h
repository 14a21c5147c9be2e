/* What the layers above the backends use: launching kernels and BLAS on the current stream. */
#ifndef CT_BACKEND_H
#define CT_BACKEND_H

#include "device/backend_interface.h"
#include "device/device_internal.h"
#include "kernels/kernel_ids.h"
#include "kernels/kernel_params.h"

/* Launches kernel over params->n work items on a resolved device, on this thread's current
 * stream there. buffers holds ct_kernel_buffer_count(kernel) handles: 4, or 32 for a
 * multi-tensor kernel. */
ct_status ct_backend_launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                            const ct_kparams *params, long work_per_item);
/* The same for a cooperative kernel: params->n groups of group_size work items (see the
 * backend's launch). */
ct_status ct_backend_launch_groups(ct_device device, ct_kernel_id kernel,
                                   void *const buffers[CT_KERNEL_MAX_BUFFERS], const ct_kparams *params,
                                   long work_per_group, int group_size);
/* A launch on a given stream (a backend handle), counted but never captured: what a replay of
 * recorded launches runs (launch_record.c). */
ct_status ct_backend_launch_replayed(ct_device device, void *stream, ct_kernel_id kernel,
                                     void *const buffers[], const ct_kparams *params, long work,
                                     int group_size);
/* A product on a given stream, counted but never captured (launch_record.c's replay). */
ct_status ct_backend_gemm_replayed(ct_device device, void *stream, const ct_gemm_args *args);
/* Counts a graph launch of a backend that captures itself among ct_device_kernel_launches'. */
void ct_backend_count_graph_launch(ct_device device);
/* How the device wants its work split. */
ct_status ct_backend_work_shape(ct_device device, ct_work_shape *shape);
/* A matrix product on a resolved device, on the current stream. */
ct_status ct_backend_gemm(ct_device device, const ct_gemm_args *args);
/* Does the device's gemm multiply `dtype` itself (see ct_backend.gemm_takes)? */
bool ct_backend_gemm_takes(ct_device device, ct_dtype dtype);
/* Does the device convolve this itself (its DNN library; see ct_backend.conv2d_takes)? */
bool ct_backend_conv2d_takes(ct_device device, const ct_conv2d_args *args);
/* A convolution by the device's DNN library on the current stream (captured like a product). */
ct_status ct_backend_conv2d(ct_device device, const ct_conv2d_args *args);
/* The same on a given stream, counted but never captured (launch_record.c's replay). */
ct_status ct_backend_conv2d_replayed(ct_device device, void *stream, const ct_conv2d_args *args);
/* Does the device pool this itself (see ct_backend.pool2d_takes)? */
bool ct_backend_pool2d_takes(ct_device device, const ct_pool2d_args *args);
/* Pooling by the device's own code on the current stream (captured like a convolution). */
ct_status ct_backend_pool2d(ct_device device, const ct_pool2d_args *args);
/* The same on a given stream, counted but never captured (launch_record.c's replay). */
ct_status ct_backend_pool2d_replayed(ct_device device, void *stream, const ct_pool2d_args *args);

/* Does the device run this attention itself (see ct_backend.attention_takes)? */
bool ct_backend_attention_takes(ct_device device, const ct_attention_args *args);
/* Fused attention by the device's own code on the current stream (captured like a product). */
ct_status ct_backend_attention(ct_device device, const ct_attention_args *args);
/* The same on a given stream, counted but never captured (launch_record.c's replay). */
ct_status ct_backend_attention_replayed(ct_device device, void *stream, const ct_attention_args *args);
/* How many launches of kernel (with work to do) reached device since the start; devices of
 * index 0 to CT_LAUNCH_COUNTED_DEVICES - 1 are counted. For tests of kernel coverage. */
#define CT_LAUNCH_COUNTED_DEVICES 8
uint64_t ct_backend_launch_count(ct_device device, ct_kernel_id kernel);
/* The launches of every kernel that reached device (the sum of the above; BLAS calls are not
 * kernels: ct_device_kernel_launches counts both). */
uint64_t ct_backend_launch_total(ct_device device);

#endif
