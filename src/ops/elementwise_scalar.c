/* Elementwise ops of a tensor and a scalar. The scalar acts as a Python float: a floating tensor
 * keeps its dtype (the scalar is rounded to it), an integer or bool tensor computes in float32.
 * The scalar travels in the kernel's parameters, so nothing is allocated for it. */
#include "ops/elementwise_internal.h"

typedef struct scalar_op {
    const char *name;
    ct_kernel_id kernels[CT_DTYPE_COUNT]; /* floating dtypes only */
    bool compare;                         /* returns bool */
    long work_per_item;
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
    return ct_elementwise_run(&launch);
}

#define CT_DEFINE_SCALAR_OP(name, compare, work)                                                 \
    ct_tensor *ct_##name##_scalar(const ct_tensor *a, double s)                                  \
    {                                                                                            \
        CT_API_ENTER;                                                                            \
        static const scalar_op op = {"ct_" #name "_scalar", CT_KERNELS_BY_FLOAT_DTYPE(name##_scalar), \
                                     compare, work};                                             \
        return ct_api_return(scalar(&op, a, s));                                                 \
    }

CT_DEFINE_SCALAR_OP(add, false, 2)
CT_DEFINE_SCALAR_OP(mul, false, 2)
CT_DEFINE_SCALAR_OP(div, false, 2)
CT_DEFINE_SCALAR_OP(pow, false, 16)
CT_DEFINE_SCALAR_OP(eq, true, 2)
CT_DEFINE_SCALAR_OP(ne, true, 2)
CT_DEFINE_SCALAR_OP(lt, true, 2)
CT_DEFINE_SCALAR_OP(le, true, 2)
CT_DEFINE_SCALAR_OP(gt, true, 2)
CT_DEFINE_SCALAR_OP(ge, true, 2)

/* PyTorch refuses subtraction with a bool tensor, even of a float scalar. */
ct_tensor *ct_sub_scalar(const ct_tensor *a, double s)
{
    CT_API_ENTER;
    static const scalar_op op = {"ct_sub_scalar", CT_KERNELS_BY_FLOAT_DTYPE(sub_scalar), false, 2};
    if (a && a->dtype == CT_BOOL)
        return ct_api_return(ct_elementwise_dtype_error(
            "ct_sub_scalar", "subtraction", CT_BOOL,
            "to invert a mask use ct_eq_scalar(mask, 0); or convert with ct_to_dtype first"));
    return ct_api_return(scalar(&op, a, s));
}
