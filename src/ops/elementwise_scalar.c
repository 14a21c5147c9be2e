/* Elementwise ops of a tensor and a scalar, typed as PyTorch types a Python number: a floating
 * tensor keeps its dtype (the scalar is rounded to the type the kernel computes in: float32 for
 * float16 and bfloat16, as PyTorch's opmath). An integer tensor plus, minus or times an integral
 * scalar (one an int64 holds) keeps its dtype (a bool tensor gives int64), as a Python int does;
 * any other pairing of an integer or bool tensor computes in float32, as a Python float does.
 * The scalar travels in the kernel's parameters, so nothing is allocated for it. */
#include <math.h>
#include <stdint.h>

#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

typedef struct scalar_op {
    const char *name;
    ct_kernel_id kernels[CT_DTYPE_COUNT]; /* floating dtypes only */
    ct_kernel_id integer_kernels[CT_DTYPE_COUNT]; /* int32, int64, uint8: add, sub, mul */
    bool compare;                         /* returns bool */
    long work_per_item;
    /* autograd (none for comparisons): the node's name, its backward, whether it saves a; the
     * scalar goes to node->scalars[0] */
    const char *backward_name;
    ct_backward_fn backward;
    bool saves_input;
} scalar_op;

/* An integral scalar that an int64 holds acts as a Python int (beyond, as a float). */
static bool python_int(double s) { return isfinite(s) && s == trunc(s) && fabs(s) < 0x1p63; }

/* An integer or bool tensor with an integral scalar: the tensor's dtype (int64 for bool). The
 * scalar wraps into that dtype as PyTorch casts it (int32 + 2^40 adds 0, uint8 + -1 adds 255),
 * which the kernel takes exactly. Integer tensors never require grad, so nothing is recorded. */
static ct_tensor *integer_scalar(const scalar_op *op, const ct_tensor *a, double s)
{
    ct_dtype dtype = a->dtype == CT_BOOL ? CT_I64 : a->dtype;
    if (dtype == CT_I32) s = (double)(int32_t)(uint32_t)(uint64_t)(int64_t)s;
    if (dtype == CT_U8) s = (double)(uint8_t)(uint64_t)(int64_t)s;
    ct_tensor *operand = ct_cast_if_needed(a, dtype);
    if (!operand) return NULL;
    ct_elementwise_launch launch = {
        .function = op->name,
        .count = 1,
        .inputs = {operand},
        .input_dtypes = {dtype},
        .out_dtype = dtype,
        .kernel = op->integer_kernels[dtype],
        .work_per_item = op->work_per_item,
        .s = {s, 0.0},
    };
    ct_tensor *out = ct_elementwise_run(&launch);
    ct_release(operand);
    return out;
}

static ct_tensor *scalar(const scalar_op *op, const ct_tensor *a, double s)
{
    if (ct_tensor_unusable(op->name, "a", a)) return NULL;
    if (!ct_dtype_is_floating(a->dtype) && op->integer_kernels[CT_I64] && python_int(s))
        return integer_scalar(op, a, s);
    ct_dtype compute = ct_dtype_is_floating(a->dtype) ? a->dtype : CT_F32;
    ct_elementwise_launch launch = {
        .function = op->name,
        .count = 1,
        .inputs = {a},
        .input_dtypes = {compute},
        .out_dtype = op->compare ? CT_BOOL : compute,
        .kernel = op->kernels[compute],
        .work_per_item = op->work_per_item,
        .s = {s, 0.0},
    };
    ct_tensor *out = ct_elementwise_run(&launch);
    if (!op->backward) return out;
    ct_node *node;
    out = ct_record(out, op->backward_name, op->backward, &a, 1, &node);
    if (!node) return out;
    node->scalars[0] = s;
    if (op->saves_input && ct_node_save(node, a) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

#define CT_KERNELS_BY_INTEGER_DTYPE(base)                                                        \
    {[CT_I32] = CT_K_##base##_i32, [CT_I64] = CT_K_##base##_i64, [CT_U8] = CT_K_##base##_u8}
#define CT_NO_KERNELS {CT_K_NONE}

#define CT_DEFINE_SCALAR_OP(name, integers, compare, work, backward_name, backward, saves_input)  \
    ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s)                                  \
    {                                                                                            \
        CT_API_ENTER;                                                                            \
        static const scalar_op op = {"ct_" #name "_scalar", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(name##_scalar), \
                                     integers, compare, work, backward_name, backward, saves_input}; \
        return ct_api_return(scalar(&op, a, s));                                                 \
    }

CT_DEFINE_SCALAR_OP(add, CT_KERNELS_BY_INTEGER_DTYPE(add_scalar), false, 2, "AddBackward", ct_add_scalar_backward, false)
CT_DEFINE_SCALAR_OP(mul, CT_KERNELS_BY_INTEGER_DTYPE(mul_scalar), false, 2, "MulBackward", ct_mul_scalar_backward, false)
CT_DEFINE_SCALAR_OP(div, CT_NO_KERNELS, false, 2, "DivBackward", ct_div_scalar_backward, false)
CT_DEFINE_SCALAR_OP(pow, CT_NO_KERNELS, false, 16, "PowBackward", ct_pow_scalar_backward, true)
CT_DEFINE_SCALAR_OP(eq, CT_NO_KERNELS, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(ne, CT_NO_KERNELS, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(lt, CT_NO_KERNELS, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(le, CT_NO_KERNELS, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(gt, CT_NO_KERNELS, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(ge, CT_NO_KERNELS, true, 2, NULL, NULL, false)

/* PyTorch refuses subtraction with a bool tensor, even of a float scalar. */
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s)
{
    CT_API_ENTER;
    static const scalar_op op = {"ct_sub_scalar", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(sub_scalar),
                                 CT_KERNELS_BY_INTEGER_DTYPE(sub_scalar), false, 2,
                                 "SubBackward", ct_sub_scalar_backward, false};
    if (a && a->dtype == CT_BOOL)
        return ct_api_return(ct_elementwise_dtype_error(
            "ct_sub_scalar", "subtraction", CT_BOOL,
            "to invert a mask use ct_eq_scalar(mask, 0); or convert with ct_to_dtype first"));
    return ct_api_return(scalar(&op, a, s));
}
