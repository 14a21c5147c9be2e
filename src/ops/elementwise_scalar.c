/* Elementwise ops of a tensor and a scalar. The scalar acts as a Python float: a floating tensor
 * keeps its dtype (the scalar is rounded to the type the kernel computes in: float32 for float16
 * and bfloat16, as PyTorch's opmath), an integer or bool tensor computes in float32.
 * The scalar travels in the kernel's parameters, so nothing is allocated for it. */
#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

typedef struct scalar_op {
    const char *name;
    ct_kernel_id kernels[CT_DTYPE_COUNT]; /* floating dtypes only */
    bool compare;                         /* returns bool */
    long work_per_item;
    /* autograd (none for comparisons): the node's name, its backward, whether it saves a; the
     * scalar goes to node->scalars[0] */
    const char *backward_name;
    ct_backward_fn backward;
    bool saves_input;
} scalar_op;

static ct_tensor *scalar(const scalar_op *op, const ct_tensor *a, double s)
{
    if (!a) return ct_null_argument(op->name, "a");
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

#define CT_DEFINE_SCALAR_OP(name, compare, work, backward_name, backward, saves_input)            \
    ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s)                                  \
    {                                                                                            \
        CT_API_ENTER;                                                                            \
        static const scalar_op op = {"ct_" #name "_scalar", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(name##_scalar), \
                                     compare, work, backward_name, backward, saves_input};        \
        return ct_api_return(scalar(&op, a, s));                                                 \
    }

CT_DEFINE_SCALAR_OP(add, false, 2, "AddBackward", ct_add_scalar_backward, false)
CT_DEFINE_SCALAR_OP(mul, false, 2, "MulBackward", ct_mul_scalar_backward, false)
CT_DEFINE_SCALAR_OP(div, false, 2, "DivBackward", ct_div_scalar_backward, false)
CT_DEFINE_SCALAR_OP(pow, false, 16, "PowBackward", ct_pow_scalar_backward, true)
CT_DEFINE_SCALAR_OP(eq, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(ne, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(lt, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(le, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(gt, true, 2, NULL, NULL, false)
CT_DEFINE_SCALAR_OP(ge, true, 2, NULL, NULL, false)

/* PyTorch refuses subtraction with a bool tensor, even of a float scalar. */
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s)
{
    CT_API_ENTER;
    static const scalar_op op = {"ct_sub_scalar", CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(sub_scalar), false, 2,
                                 "SubBackward", ct_sub_scalar_backward, false};
    if (a && a->dtype == CT_BOOL)
        return ct_api_return(ct_elementwise_dtype_error(
            "ct_sub_scalar", "subtraction", CT_BOOL,
            "to invert a mask use ct_eq_scalar(mask, 0); or convert with ct_to_dtype first"));
    return ct_api_return(scalar(&op, a, s));
}
