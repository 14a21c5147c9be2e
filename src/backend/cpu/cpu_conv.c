/* The CPU's convolution entry: oneDNN's primitives for float32 where cpu_engine_choice.c sends
 * convolutions; the ops layer's im2col + GEMM otherwise. float64 has no oneDNN kernels; bfloat16
 * convolutions keep im2col, whose product is oneDNN's bfloat16 one where the CPU has bfloat16
 * instructions: oneDNN 2.6's bfloat16 convolution on plain AVX-512 turned an inf among finite
 * values into NaN where every other device gives inf (the conformance suite's edge values). */
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "core/core_internal.h"

bool ct_cpu_conv2d_takes(int index, const ct_conv2d_args *args)
{
    (void)index;
    return ct_cpu_conv_in_onednn() && args->dtype == CT_F32;
}

ct_status ct_cpu_conv2d(int index, void *stream, const ct_conv2d_args *args)
{
    (void)stream;
    if (!ct_cpu_conv2d_takes(index, args))
        return ct_error(CT_ERR_INTERNAL, "cpu conv2d: no convolution primitive for %s here",
                        ct_dtype_name(args->dtype));
#ifdef CTORCH_HAVE_ONEDNN
    return ct_onednn_conv2d(args);
#else
    return CT_ERR_INTERNAL;
#endif
}
