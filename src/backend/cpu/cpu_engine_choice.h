/* Which library runs each of the CPU's products, convolutions and poolings (cpu_engine_choice.c says why). */
#ifndef CT_CPU_ENGINE_CHOICE_H
#define CT_CPU_ENGINE_CHOICE_H

#include <stdbool.h>

#include "device/backend_interface.h"

typedef enum ct_cpu_engine {
    CT_CPU_ENGINE_OPENBLAS, /* cblas (and, for convolutions, ctorch's im2col + GEMM) */
    CT_CPU_ENGINE_ONEDNN,       /* oneDNN's primitives (its matmul, its convolutions) */
    CT_CPU_ENGINE_ONEDNN_SGEMM, /* oneDNN's BLAS-like dnnl_sgemm: large float32 products */
} ct_cpu_engine;

/* The engine of a product. */
ct_cpu_engine ct_cpu_gemm_engine(const ct_gemm_args *args);
/* Whether oneDNN multiplies dtype here (the CPU has its kernels, and no setting forbids it). */
bool ct_cpu_onednn_multiplies(ct_dtype dtype);
/* Whether convolutions run as oneDNN primitives (else im2col + GEMM above the backend). */
bool ct_cpu_conv_in_onednn(void);
/* Whether float32 and float64 pooling runs in the CPU's own loops (cpu_pool.c), else in the
 * dialect's kernels: everywhere but CTORCH_CPU_ENGINE=openblas, which puts every op back as it
 * was before the engines (a comparison). */
bool ct_cpu_pool_own_loops(void);

/* Tests: as CTORCH_CPU_ENGINE=name ("auto", "openblas", "onednn"; NULL: read the variable again). */
void ct_cpu_engine_set_for_testing(const char *name);

#ifdef CTORCH_HAVE_ONEDNN
ct_status ct_onednn_gemm(const ct_gemm_args *args);
ct_status ct_onednn_sgemm(const ct_gemm_args *args);
/* Whether this CPU has oneDNN kernels for products of dtype (float32 always). */
bool ct_onednn_gemm_takes(ct_dtype dtype);
ct_status ct_onednn_conv2d(const ct_conv2d_args *args);
#endif

#endif
