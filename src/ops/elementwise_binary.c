/* Elementwise ops of two tensors, and where: PyTorch's broadcasting and type promotion, then one
 * kernel in the promoted dtype (mixed operands are cast to it first). */
#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

/* How an op turns its operands' dtypes into the dtype it computes in and the dtype it returns. */
typedef enum binary_rule {
    RULE_PROMOTE,      /* computes in and returns the promoted dtype */
    RULE_COMPARE,      /* computes in the promoted dtype, returns bool */
    RULE_TRUE_DIVIDE,  /* the promoted dtype if floating, else float32 */
    RULE_NO_BOOL,      /* as RULE_PROMOTE, and no operand may be bool (subtraction) */
    RULE_NUMERIC,      /* as RULE_PROMOTE, and the promoted dtype may not be bool (pow) */
} binary_rule;

typedef struct binary_op {
    const char *name;
    binary_rule rule;
    ct_kernel_id kernels[CT_DTYPE_COUNT];
    long work_per_item; /* elements touched, more for ops that call libm */
    const char *bool_hint; /* for RULE_NO_BOOL and RULE_NUMERIC: what to do instead */
    /* autograd: the node's name, its backward, and what it saves (a and b, then out) */
    const char *backward_name;
    ct_backward_fn backward;
    bool saves_operands;
    bool saves_output;
} binary_op;

static const binary_op op_add = {"ct_add", RULE_PROMOTE, CT_KERNELS_BY_STORED_DTYPE(add), 3, NULL,
                                 "AddBackward", ct_add_backward, false, false};
static const binary_op op_sub = {"ct_sub", RULE_NO_BOOL, CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(sub), 3,
                                 "to invert a mask use ct_eq_scalar(mask, 0), to compare masks "
                                 "ct_ne; or convert with ct_to_dtype first",
                                 "SubBackward", ct_sub_backward, false, false};
static const binary_op op_mul = {"ct_mul", RULE_PROMOTE, CT_KERNELS_BY_STORED_DTYPE(mul), 3, NULL,
                                 "MulBackward", ct_mul_backward, true, false};
static const binary_op op_div = {"ct_div", RULE_TRUE_DIVIDE, CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(div), 3,
                                 NULL, "DivBackward", ct_div_backward, true, false};
static const binary_op op_pow = {"ct_pow", RULE_NUMERIC, CT_KERNELS_BY_NUMERIC_OR_HALF_DTYPE(pow), 16,
                                 "convert one operand with ct_to_dtype first",
                                 "PowBackward", ct_pow_backward, true, true};
static const binary_op op_maximum = {"ct_maximum", RULE_PROMOTE, CT_KERNELS_BY_STORED_DTYPE(maximum), 3,
                                     NULL, "MaximumBackward", ct_maximum_backward, true, false};
static const binary_op op_minimum = {"ct_minimum", RULE_PROMOTE, CT_KERNELS_BY_STORED_DTYPE(minimum), 3,
                                     NULL, "MinimumBackward", ct_minimum_backward, true, false};
static const binary_op op_eq = {"ct_eq", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(eq), 3, NULL,
                                NULL, NULL, false, false};
static const binary_op op_ne = {"ct_ne", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(ne), 3, NULL,
                                NULL, NULL, false, false};
static const binary_op op_lt = {"ct_lt", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(lt), 3, NULL,
                                NULL, NULL, false, false};
static const binary_op op_le = {"ct_le", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(le), 3, NULL,
                                NULL, NULL, false, false};
static const binary_op op_gt = {"ct_gt", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(gt), 3, NULL,
                                NULL, NULL, false, false};
static const binary_op op_ge = {"ct_ge", RULE_COMPARE, CT_KERNELS_BY_STORED_DTYPE(ge), 3, NULL,
                                NULL, NULL, false, false};

static ct_tensor *binary(const binary_op *op, const ct_tensor *a, const ct_tensor *b)
{
    const ct_tensor *operands[2] = {a, b};
    static const char *const names[2] = {"a", "b"};
    if (ct_check_operands(op->name, operands, names, 2) != CT_OK) return NULL;

    ct_dtype compute = ct_promote_types(a->dtype, b->dtype);
    ct_dtype result = compute;
    switch (op->rule) {
    case RULE_PROMOTE: break;
    case RULE_COMPARE: result = CT_BOOL; break;
    case RULE_TRUE_DIVIDE:
        if (!ct_dtype_is_floating(compute)) compute = result = CT_F32;
        break;
    case RULE_NO_BOOL:
        if (a->dtype == CT_BOOL || b->dtype == CT_BOOL)
            return ct_error_null(CT_ERR_DTYPE, "%s: bool operands are not supported (a is %s, b is "
                                 "%s): %s", op->name, ct_dtype_name(a->dtype),
                                 ct_dtype_name(b->dtype), op->bool_hint);
        break;
    case RULE_NUMERIC:
        if (compute == CT_BOOL)
            return ct_error_null(CT_ERR_DTYPE, "%s: two bool operands are not supported (a and b "
                                 "are bool): %s", op->name, op->bool_hint);
        break;
    }
    ct_elementwise_launch launch = {
        .function = op->name,
        .count = 2,
        .inputs = {a, b},
        .input_dtypes = {compute, compute},
        .out_dtype = result,
        .kernel = op->kernels[compute],
        .work_per_item = op->work_per_item,
    };
    ct_tensor *out = ct_elementwise_run(&launch);
    if (!op->backward) return out;
    ct_node *node;
    out = ct_record(out, op->backward_name, op->backward, operands, 2, &node);
    if (node && ((op->saves_operands && (ct_node_save(node, a) != CT_OK || ct_node_save(node, b) != CT_OK)) ||
                 (op->saves_output && ct_node_save(node, out) != CT_OK))) {
        ct_release(out);
        return NULL;
    }
    return out;
}

#define CT_DEFINE_BINARY_OP(name)                                                                \
    ct_tensor *ct_##name(const ct_tensor *a, const ct_tensor *b)                                 \
    {                                                                                            \
        CT_API_ENTER;                                                                            \
        return ct_api_return(binary(&op_##name, a, b));                                          \
    }

CT_DEFINE_BINARY_OP(add)
CT_DEFINE_BINARY_OP(sub)
CT_DEFINE_BINARY_OP(mul)
CT_DEFINE_BINARY_OP(div)
CT_DEFINE_BINARY_OP(pow)
CT_DEFINE_BINARY_OP(maximum)
CT_DEFINE_BINARY_OP(minimum)
CT_DEFINE_BINARY_OP(eq)
CT_DEFINE_BINARY_OP(ne)
CT_DEFINE_BINARY_OP(lt)
CT_DEFINE_BINARY_OP(le)
CT_DEFINE_BINARY_OP(gt)
CT_DEFINE_BINARY_OP(ge)

ct_tensor *ct_where(const ct_tensor *cond, const ct_tensor *a, const ct_tensor *b)
{
    CT_API_ENTER;
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(where);
    const ct_tensor *operands[3] = {cond, a, b};
    static const char *const names[3] = {"cond", "a", "b"};
    if (ct_check_operands("ct_where", operands, names, 3) != CT_OK) return ct_api_return(NULL);
    if (cond->dtype != CT_BOOL)
        return ct_api_return(ct_error_null(
            CT_ERR_DTYPE, "ct_where: cond must be a bool tensor, but it is %s; make one with a "
            "comparison such as ct_gt, or with ct_to_dtype(cond, CT_BOOL)", ct_dtype_name(cond->dtype)));
    ct_dtype dtype = ct_promote_types(a->dtype, b->dtype);
    ct_elementwise_launch launch = {
        .function = "ct_where",
        .count = 3,
        .inputs = {cond, a, b},
        .input_dtypes = {CT_BOOL, dtype, dtype},
        .out_dtype = dtype,
        .kernel = kernels[dtype],
        .work_per_item = 4,
    };
    ct_node *node;
    ct_tensor *out = ct_record(ct_elementwise_run(&launch), "WhereBackward", ct_where_backward, operands, 3, &node);
    if (node && ct_node_save(node, cond) != CT_OK) {
        ct_release(out);
        return ct_api_return(NULL);
    }
    return ct_api_return(out);
}
