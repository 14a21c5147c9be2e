#ifndef CT_CPU_BACKEND_H
#define CT_CPU_BACKEND_H

#include "device/backend_interface.h"

ct_status ct_cpu_launch(int index, void *stream, int kernel, void *const buffers[],
                        const struct ct_kparams *params, long work_per_item, int group_size);
void ct_cpu_work_shape(int index, ct_work_shape *shape);
ct_status ct_cpu_gemm(int index, void *stream, const ct_gemm_args *args);
/* float16/bfloat16 products in OpenBLAS's shgemm/sbgemm, where it has them (cpu_blas_half.c). */
bool ct_cpu_gemm_takes(int index, ct_dtype dtype);
ct_status ct_cpu_half_gemm(const ct_gemm_args *args);
/* Convolutions in oneDNN where it is built in (cpu_conv.c). */
bool ct_cpu_conv2d_takes(int index, const ct_conv2d_args *args);
ct_status ct_cpu_conv2d(int index, void *stream, const ct_conv2d_args *args);
bool ct_cpu_pool2d_takes(int index, const ct_pool2d_args *args);
ct_status ct_cpu_pool2d(int index, void *stream, const ct_pool2d_args *args);
/* Fused float32 attention over the BLAS (cpu_attention.c). */
bool ct_cpu_attention_takes(int index, const ct_attention_args *args);
ct_status ct_cpu_attention(int index, void *stream, const ct_attention_args *args);
/* /proc/cpuinfo's model name, or "CPU". */
void ct_cpu_model_name(char *buf, size_t size);
/* Logs once, at warning level, each matrix engine whose kernels use far less than the CPU offers
 * (cpu_info.c). */
void ct_cpu_warn_slow_matrix_engines(void);

#endif
