/* The CPU's convolution entry: oneDNN's primitives where cpu_engine_choice.c sends convolutions,
 * for float32, and for bfloat16 and float16 where the CPU has oneDNN's kernels for them; the ops
 * layer's im2col + GEMM otherwise (float64 among them). */
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_engine_choice.h"
#include "core/core_internal.h"

bool ct_cpu_conv2d_takes(int index, const ct_conv2d_args *args)
{
    (void)index;
    if (!ct_cpu_conv_in_onednn()) return false;
    return args->dtype == CT_F32 || ((args->dtype == CT_BF16 || args->dtype == CT_F16) &&
                                     ct_cpu_onednn_multiplies(args->dtype));
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
