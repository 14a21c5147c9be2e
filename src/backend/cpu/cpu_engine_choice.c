/* Which library runs each of the CPU's products, convolutions and poolings, chosen by
 * measurement (the figures below; `ctorch bench` measures the same rows against both libraries
 * and PyTorch).
 *
 * - float32 products, on a CPU with AVX-512: oneDNN's matmul primitive (brgemm kernels for
 *   AVX-512 and AMX) from CT_ONEDNN_GEMM_MIN_WORK multiply-adds up to CT_ONEDNN_GEMM_MAX_WORK;
 *   below, OpenBLAS on one thread, whose call costs less than finding and running a primitive;
 *   above, oneDNN's dnnl_sgemm, whose large products keep the cores busier than its matmul
 *   primitive's (and run as fast as OpenBLAS's or faster). Without AVX-512, OpenBLAS: oneDNN's
 *   AVX2 kernels are slower than OpenBLAS's Haswell/Zen ones at every size measured (below).
 * - float64 products: OpenBLAS (oneDNN has none).
 * - bfloat16 and float16 products: oneDNN where the CPU has a kernel for them (AMX or
 *   AVX512-BF16 for bfloat16, AVX512-FP16 for float16), else OpenBLAS's sbgemm/shgemm where it was
 *   built with them, else the ops layer multiplies in float32 (src/ops/gemm_any.c).
 * - float32 convolutions: oneDNN's primitives, forward and backward, with no im2col buffer
 *   (cpu_conv.c says why the 16-bit ones keep im2col). The digits cnn's two convolutions forward
 *   and backward at batch 512: 21.6k samples/s as im2col + OpenBLAS, 101k as primitives (PyTorch
 *   84k, the same run).
 *
 * - float32 and float64 pooling: the CPU's own loops (cpu_pool.c says why not oneDNN's). The
 *   digits cnn's first max pooling, [512, 16, 8, 8] by 2x2, on one thread of a busy 2-core AMD
 *   EPYC (Zen 3, AVX2), CPU time: forward 2.65-2.8 ms as the dialect kernel, 0.52 ms as the
 *   loops; forward and backward (with the sum and gradient accumulation around them) 5.0-5.2 ms
 *   and 1.3-1.5 ms. The second, [512, 32, 4, 4]: forward 1.3-1.4 ms and 0.24-0.37 ms.
 *
 * CTORCH_CPU_ENGINE=openblas puts everything back on OpenBLAS, im2col and the dialect's pooling
 * kernels (a comparison, or a machine where oneDNN misbehaves); =onednn sends every float32
 * product to oneDNN.
 *
 * Under a tight limit on the address space (ulimit -v, ulimit -d: less than 4 GiB left at start,
 * ct_startup_address_space_tight), unless CTORCH_CPU_ENGINE says
 * otherwise, products and convolutions run on OpenBLAS (and im2col): oneDNN's threads allocate as
 * they run a primitive and throw when that fails, and an exception thrown in an OpenMP thread ends
 * the process (abort, status 134), where OpenBLAS's one buffer is checked before each product
 * (cpu_blas_workspace.c) and everything else goes through ctorch's allocator, which answers with
 * an out-of-memory error. Pooling keeps its own loops. */
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_engine_choice.h"
#include "core/core_internal.h"
#include "startup/before_libraries.h"
#include "startup/cpu_features.h"

/* Measured on 2 cores of a Xeon (AVX-512 + VNNI, family 6 model 85, OpenBLAS on its SkylakeX
 * kernels), quiet, GFLOP/s of oneDNN's matmul primitive / OpenBLAS's sgemm, m x n x k:
 *   one thread:  64^3 52 / 86, 32x256x64 60 / 76, 512x10x256 53 / 32, 128^3 128 / 99,
 *                512x256x64 79 / 55, 2048x384x128 124 / 82, 256^3 140 / 101;
 *   two threads: 256^3 231 / 189, 512^3 240 / 205, 768^3 225 / 216, 1024^3 185 / 205,
 *                1536^3 102-122 / 221-227, 2048^3 127-134 / 237;
 *   dnnl_sgemm, two threads: 512^3 161, 1024^3 219, 2048^3 250 (OpenBLAS 211, 232, 229 in the
 *   same run); in `ctorch bench` 1024^3 dnnl_sgemm 129 against the primitive's 109-112 on a busy
 *   machine.
 * (oneDNN's figures include making three memory objects a call, which ctorch's cache does not.)
 * On 2 cores of an AMD EPYC (Zen 3, AVX2 + FMA, OpenBLAS's Zen kernels), quiet, `ctorch bench`
 * two threads, ctorch's product through oneDNN (primitive; dnnl_sgemm at 2048) / OpenBLAS:
 *   256^3 118-130 / 111-147, 512^3 105-127 / 144-177, 1024^3 135-170 / 163-181,
 *   2048^3 170-174 / 177-181; `ctorch train` mlp b32 178k / 227k samples/s, b512 336k / 384k;
 *   the transformer block and the GPT the same within noise. */
#define CT_ONEDNN_GEMM_MIN_WORK ((int64_t)1 << 20)
#define CT_ONEDNN_GEMM_MAX_WORK ((int64_t)1 << 28)

typedef enum { CHOICE_AUTO, CHOICE_OPENBLAS, CHOICE_ONEDNN } choice;

static _Atomic int read; /* 0 not read, else choice + 1 */

static choice user_choice(void)
{
    if (read == 0) {
        const char *text = getenv("CTORCH_CPU_ENGINE");
        choice c = CHOICE_AUTO;
        if (text && strcmp(text, "openblas") == 0) c = CHOICE_OPENBLAS;
        else if (text && strcmp(text, "onednn") == 0) c = CHOICE_ONEDNN;
        else if (text && *text && strcmp(text, "auto") != 0)
            ct_log_message(CT_LOG_WARN, "CTORCH_CPU_ENGINE='%s' is not auto, openblas or onednn; "
                           "using auto", text);
        read = (int)c + 1;
    }
    return (choice)(read - 1);
}

/* The choice for products and convolutions: the user's, else OpenBLAS under a limit on the
 * address space, else auto. */
static choice product_choice(void)
{
    choice c = user_choice();
    if (c != CHOICE_AUTO) return c;
    return ct_startup_address_space_tight() ? CHOICE_OPENBLAS : CHOICE_AUTO;
}

void ct_cpu_engine_set_for_testing(const char *name)
{
    read = name == NULL ? 0 : strcmp(name, "openblas") == 0 ? CHOICE_OPENBLAS + 1
                            : strcmp(name, "onednn") == 0   ? CHOICE_ONEDNN + 1
                                                            : CHOICE_AUTO + 1;
}

ct_cpu_engine ct_cpu_gemm_engine(const ct_gemm_args *g)
{
#ifdef CTORCH_HAVE_ONEDNN
    choice c = product_choice();
    if (c == CHOICE_OPENBLAS || g->dtype == CT_F64 || g->k == 0) return CT_CPU_ENGINE_OPENBLAS;
    if (g->dtype != CT_F32) return ct_onednn_gemm_takes(g->dtype) ? CT_CPU_ENGINE_ONEDNN : CT_CPU_ENGINE_OPENBLAS;
    if (c == CHOICE_AUTO && !ct_cpu_features_get()->has.avx512f) return CT_CPU_ENGINE_OPENBLAS;
    int64_t work = (int64_t)g->m * g->n * g->k;
    if (work >= CT_ONEDNN_GEMM_MAX_WORK) return CT_CPU_ENGINE_ONEDNN_SGEMM;
    if (c == CHOICE_ONEDNN || work >= CT_ONEDNN_GEMM_MIN_WORK) return CT_CPU_ENGINE_ONEDNN;
#else
    (void)g;
    (void)user_choice;
#endif
    return CT_CPU_ENGINE_OPENBLAS;
}

bool ct_cpu_onednn_multiplies(ct_dtype dtype)
{
#ifdef CTORCH_HAVE_ONEDNN
    return product_choice() != CHOICE_OPENBLAS && ct_onednn_gemm_takes(dtype);
#else
    (void)dtype;
    return false;
#endif
}

bool ct_cpu_conv_in_onednn(void)
{
#ifdef CTORCH_HAVE_ONEDNN
    return product_choice() != CHOICE_OPENBLAS;
#else
    return false;
#endif
}

bool ct_cpu_pool_own_loops(void) { return user_choice() != CHOICE_OPENBLAS; }
