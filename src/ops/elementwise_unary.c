/* Elementwise ops of one tensor. neg, abs, relu, clamp, sign, floor and round keep the dtype
 * (bool is refused, as in PyTorch); exp, log, sqrt, sigmoid, tanh, gelu, gelu_tanh, log1p, sin,
 * cos, rsqrt, reciprocal and erf compute integers and bool in float32; silu, leaky_relu,
 * softplus and elu take floating tensors only (PyTorch's are not implemented for integers). */
#include <math.h>

#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

/* Elements' worth of work of one libm call, for the backend's threading choice. */
#define CT_LIBM_WORK 16

typedef struct unary_op {
    const char *name;
    const char *what;                     /* "negation", for messages */
    ct_kernel_id kernels[CT_DTYPE_COUNT];
    bool to_float;                        /* integers and bool compute in float32 */
    long work_per_item;
    const char *hint;                     /* what to do instead, for a refused dtype */
    /* autograd: the node's name, its backward, and what it saves for it */
    const char *backward_name;
    ct_backward_fn backward;
    enum { SAVES_NOTHING, SAVES_INPUT, SAVES_OUTPUT } saves;
} unary_op;

#define CT_CONVERT_HINT "convert with ct_to_dtype first"

static ct_tensor *unary(const unary_op *op, const ct_tensor *a, const double s[2], const long l[2])
{
    if (ct_tensor_unusable(op->name, "a", a)) return NULL;
    ct_dtype dtype = a->dtype;
    if (op->to_float && !ct_dtype_is_floating(dtype)) dtype = CT_F32;
    if (op->kernels[dtype] == CT_K_NONE)
        return ct_elementwise_dtype_error(op->name, op->what, dtype, op->hint);
    ct_elementwise_launch launch = {
        .function = op->name,
        .count = 1,
        .inputs = {a},
        .input_dtypes = {dtype},
        .out_dtype = dtype,
        .kernel = op->kernels[dtype],
        .work_per_item = op->work_per_item,
    };
    if (s) launch.s[0] = s[0], launch.s[1] = s[1];
    if (l) launch.l[0] = l[0], launch.l[1] = l[1];
    ct_node *node;
    ct_tensor *out = ct_record(ct_elementwise_run(&launch), op->backward_name, op->backward, &a, 1, &node);
    if (!node) return out;
    if (s) node->scalars[0] = s[0], node->scalars[1] = s[1];
    if ((op->saves == SAVES_INPUT && ct_node_save(node, a) != CT_OK) ||
        (op->saves == SAVES_OUTPUT && ct_node_save(node, out) != CT_OK)) {
        ct_release(out);
        return NULL;
    }
    return out;
}

#define CT_DEFINE_UNARY_OP(name, what, table, to_float, work, hint, backward_name, saves)       \
    ct_tensor *ct_##name(const ct_tensor *a)                                                     \
    {                                                                                            \
        CT_API_ENTER;                                                                            \
        static const unary_op op = {"ct_" #name, what, table(name), to_float, work, hint,       \
                                    backward_name, ct_##name##_backward, saves};                 \
        return ct_api_return(unary(&op, a, NULL, NULL));                                         \
    }

CT_DEFINE_UNARY_OP(neg, "negation", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2,
                   "to invert a mask use ct_eq_scalar(mask, 0)", "NegBackward", SAVES_NOTHING)
CT_DEFINE_UNARY_OP(abs, "abs", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2, CT_CONVERT_HINT,
                   "AbsBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(relu, "relu", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2, CT_CONVERT_HINT,
                   "ReluBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(exp, "exp", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "ExpBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(log, "log", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "LogBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(sqrt, "sqrt", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "SqrtBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(sigmoid, "sigmoid", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "SigmoidBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(tanh, "tanh", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "TanhBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(gelu, "gelu", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "GeluBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(gelu_tanh, "gelu_tanh", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK,
                   NULL, "GeluTanhBackward", SAVES_INPUT)

CT_DEFINE_UNARY_OP(silu, "silu", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, false, CT_LIBM_WORK,
                   CT_CONVERT_HINT, "SiluBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(log1p, "log1p", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "Log1pBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(sin, "sin", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "SinBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(cos, "cos", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "CosBackward", SAVES_INPUT)
CT_DEFINE_UNARY_OP(rsqrt, "rsqrt", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "RsqrtBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(reciprocal, "reciprocal", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, 3, NULL,
                   "ReciprocalBackward", SAVES_OUTPUT)
CT_DEFINE_UNARY_OP(erf, "erf", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE, true, CT_LIBM_WORK, NULL,
                   "ErfBackward", SAVES_INPUT)
/* Piecewise constant: their gradient is zero (PyTorch records them all the same). */
CT_DEFINE_UNARY_OP(sign, "sign", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2, CT_CONVERT_HINT,
                   "SignBackward", SAVES_NOTHING)
CT_DEFINE_UNARY_OP(floor, "floor", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2, CT_CONVERT_HINT,
                   "FloorBackward", SAVES_NOTHING)
CT_DEFINE_UNARY_OP(round, "round", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE, false, 2, CT_CONVERT_HINT,
                   "RoundBackward", SAVES_NOTHING)

/* ---- activations with parameters (floating tensors only, as PyTorch) ---- */

ct_tensor *ct_leaky_relu(const ct_tensor *a, double negative_slope)
{
    CT_API_ENTER;
    static const unary_op op = {"ct_leaky_relu", "leaky_relu", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(leaky_relu),
                                false, 2, CT_CONVERT_HINT, "LeakyReluBackward",
                                ct_leaky_relu_backward, SAVES_INPUT};
    return ct_api_return(unary(&op, a, (const double[2]){negative_slope, 0.0}, NULL));
}

ct_tensor *ct_softplus(const ct_tensor *a, double beta, double threshold)
{
    CT_API_ENTER;
    static const unary_op op = {"ct_softplus", "softplus", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(softplus),
                                false, CT_LIBM_WORK, CT_CONVERT_HINT, "SoftplusBackward",
                                ct_softplus_backward, SAVES_INPUT};
    if (!(beta != 0.0) || isnan(threshold))
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_softplus: beta is %g and "
                                           "threshold %g; beta must be nonzero and neither NaN",
                                           beta, threshold));
    return ct_api_return(unary(&op, a, (const double[2]){beta, threshold}, NULL));
}

ct_tensor *ct_elu(const ct_tensor *a, double alpha)
{
    CT_API_ENTER;
    static const unary_op op = {"ct_elu", "elu", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(elu), false,
                                CT_LIBM_WORK, CT_CONVERT_HINT, "EluBackward", ct_elu_backward,
                                SAVES_INPUT};
    return ct_api_return(unary(&op, a, (const double[2]){alpha, 0.0}, NULL));
}

/* ---- clamp ----
 * Floating tensors take the bounds as they are (rounded to the dtype; a NaN bound gives NaN).
 * Integer tensors keep their dtype and are clamped to the integers inside [min, max]: the bounds
 * become ceil(min) and floor(max), saturated to the dtype's range. */

/* The integer range of an integer dtype, as doubles that convert exactly. */
static void integer_range(ct_dtype dtype, double *lowest, double *highest)
{
    switch (dtype) {
    case CT_U8: *lowest = 0.0, *highest = 255.0; break;
    case CT_I32: *lowest = -2147483648.0, *highest = 2147483647.0; break;
    default: *lowest = -9223372036854775808.0, *highest = 9223372036854775807.0; break;
    }
}

static long saturate(double value, double lowest, double highest, ct_dtype dtype)
{
    if (value <= lowest) return dtype == CT_I64 ? INT64_MIN : (long)lowest;
    /* 9223372036854775807.0 rounds to 2^63, which does not convert to long */
    if (value >= highest) return dtype == CT_I64 ? INT64_MAX : (long)highest;
    return (long)value;
}

static ct_tensor *clamp(const char *function, const ct_tensor *a, double min, double max)
{
    static const unary_op op_template = {NULL, "clamp", CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(clamp), false, 2,
                                           CT_CONVERT_HINT, "ClampBackward", ct_clamp_backward,
                                           SAVES_INPUT};
    unary_op op = op_template;
    op.name = function;
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    if (!ct_dtype_is_integral(a->dtype)) return unary(&op, a, (const double[2]){min, max}, NULL);
    if (isnan(min) || isnan(max))
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: a NaN bound (min %g, max %g) cannot clamp "
                             "a tensor of %s; give numbers", function, min, max,
                             ct_dtype_name(a->dtype));
    double lowest, highest;
    integer_range(a->dtype, &lowest, &highest);
    long bounds[2] = {saturate(ceil(min), lowest, highest, a->dtype),
                      saturate(floor(max), lowest, highest, a->dtype)};
    return unary(&op, a, NULL, bounds);
}

ct_tensor *ct_clamp(const ct_tensor *a, double min, double max)
{
    CT_API_ENTER;
    return ct_api_return(clamp("ct_clamp", a, min, max));
}

ct_tensor *ct_clamp_min(const ct_tensor *a, double min)
{
    CT_API_ENTER;
    return ct_api_return(clamp("ct_clamp_min", a, min, INFINITY));
}

ct_tensor *ct_clamp_max(const ct_tensor *a, double max)
{
    CT_API_ENTER;
    return ct_api_return(clamp("ct_clamp_max", a, -INFINITY, max));
}
