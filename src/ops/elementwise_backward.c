/* Gradients of the elementwise ops of two tensors, of where and of the scalar forms. Each
 * returns, per input, the gradient reduced over the dims where that input was broadcast, in the
 * input's dtype. Masks follow PyTorch's masked_fill pattern (where(mask, 0, x)), so that an
 * infinite or NaN gradient in a masked-out place still gives 0 there. */
#include "ops/elementwise_backward.h"

ct_status ct_grad_store(ct_node *node, int input, ct_tensor *grad, ct_tensor **grads)
{
    if (!grad) return ct_last_error();
    grads[input] = ct_grad_unbroadcast(grad, node, input);
    ct_release(grad);
    return grads[input] ? CT_OK : ct_last_error();
}

/* A one-element zero of t's dtype on t's device, that broadcasts anywhere. */
static ct_tensor *zero_like_scalar(const ct_tensor *t)
{
    const int64_t no_dims[1] = {0};
    return ct_zeros(no_dims, 0, ct_tensor_dtype(t), ct_tensor_device(t));
}

ct_tensor *ct_grad_keep_where(const ct_tensor *grad, ct_tensor *keep)
{
    ct_tensor *zero = keep && grad ? zero_like_scalar(grad) : NULL;
    ct_tensor *kept = zero ? ct_where(keep, grad, zero) : NULL;
    ct_release(zero);
    ct_release(keep);
    return kept;
}

ct_tensor *ct_grad_zero_where(ct_tensor *drop, const ct_tensor *x)
{
    ct_tensor *zero = drop && x ? zero_like_scalar(x) : NULL;
    ct_tensor *out = zero ? ct_where(drop, zero, x) : NULL;
    ct_release(zero);
    ct_release(drop);
    return out;
}

ct_status ct_add_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    for (int i = 0; i < 2; i++)
        if (ct_node_needs_grad(node, i) && !(grads[i] = ct_grad_unbroadcast(grad, node, i)))
            return ct_last_error();
    return CT_OK;
}

ct_status ct_sub_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    if (ct_node_needs_grad(node, 0) && !(grads[0] = ct_grad_unbroadcast(grad, node, 0)))
        return ct_last_error();
    if (ct_node_needs_grad(node, 1)) return ct_grad_store(node, 1, ct_neg(grad), grads);
    return CT_OK;
}

/* d(a*b) = grad*b for a, grad*a for b; saved: a, b. */
ct_status ct_mul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    for (int i = 0; i < 2; i++) {
        if (!ct_node_needs_grad(node, i)) continue;
        ct_status status = ct_grad_store(node, i, ct_mul(grad, node->saved[1 - i]), grads);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* d(a/b) = grad/b for a, -grad*a/b^2 for b; saved: a, b. */
ct_status ct_div_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *a = node->saved[0], *b = node->saved[1];
    ct_tensor *over_b = ct_div(grad, b);
    if (!over_b) return ct_last_error();
    ct_status status = CT_OK;
    if (ct_node_needs_grad(node, 0)) status = ct_grad_store(node, 0, ct_retain(over_b), grads);
    if (status == CT_OK && ct_node_needs_grad(node, 1)) {
        ct_tensor *quotient = ct_div(a, b);
        ct_tensor *product = ct_mul(over_b, quotient);
        status = ct_grad_store(node, 1, ct_neg(product), grads);
        ct_release(product);
        ct_release(quotient);
    }
    ct_release(over_b);
    return status;
}

/* d(a^b) = grad * b * a^(b-1) for a (0 where b == 0, so that 0^-1 never turns 0 into NaN) and
 * grad * a^b * log(a) for b (0 where a == 0 and b >= 0). Saved: a, b, out. The operands are
 * first cast to the output's dtype, which also makes bool and integer exponents arithmetic. */
ct_status ct_pow_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_dtype dtype = ct_tensor_dtype(grad);
    ct_tensor *a = ct_to_dtype(node->saved[0], dtype);
    ct_tensor *b = a ? ct_to_dtype(node->saved[1], dtype) : NULL;
    ct_status status = b ? CT_OK : ct_last_error();
    if (status == CT_OK && ct_node_needs_grad(node, 0)) {
        ct_tensor *b_minus_1 = ct_sub_scalar(b, 1.0);
        ct_tensor *power = ct_pow(a, b_minus_1);
        ct_tensor *slope = ct_mul(b, power);
        ct_tensor *product = ct_mul(grad, slope);
        status = ct_grad_store(node, 0, ct_grad_zero_where(ct_eq_scalar(b, 0.0), product), grads);
        ct_release(product);
        ct_release(slope);
        ct_release(power);
        ct_release(b_minus_1);
    }
    if (status == CT_OK && ct_node_needs_grad(node, 1)) {
        ct_tensor *log_a = ct_log(a);
        ct_tensor *slope = ct_mul(node->saved[2], log_a);
        ct_tensor *product = ct_mul(grad, slope);
        ct_tensor *a_zero = ct_eq_scalar(a, 0.0), *b_nonnegative = ct_ge_scalar(b, 0.0);
        ct_tensor *drop = ct_mul(a_zero, b_nonnegative); /* bool * bool is logical and */
        status = ct_grad_store(node, 1, ct_grad_zero_where(drop, product), grads);
        ct_release(b_nonnegative);
        ct_release(a_zero);
        ct_release(product);
        ct_release(slope);
        ct_release(log_a);
    }
    ct_release(b);
    ct_release(a);
    return status;
}

/* maximum / minimum: the gradient goes to the operand that was chosen, split half and half on
 * ties (PyTorch's rule: where(a == b, grad / 2, grad), zeroed for the operand that lost; a NaN
 * operand loses nowhere, so both get the gradient). Saved: a, b. */
static ct_status extremum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads,
                                   bool maximum)
{
    const ct_tensor *a = node->saved[0], *b = node->saved[1];
    ct_tensor *tie = ct_eq(a, b);
    ct_tensor *half = tie ? ct_mul_scalar(grad, 0.5) : NULL;
    ct_tensor *shared = half ? ct_where(tie, half, grad) : NULL;
    ct_status status = shared ? CT_OK : ct_last_error();
    for (int i = 0; i < 2 && status == CT_OK; i++) {
        if (!ct_node_needs_grad(node, i)) continue;
        /* a loses the maximum where a < b; b loses it where a > b */
        bool a_below = maximum == (i == 0);
        ct_tensor *lost = a_below ? ct_lt(a, b) : ct_gt(a, b);
        status = ct_grad_store(node, i, ct_grad_zero_where(lost, shared), grads);
    }
    ct_release(shared);
    ct_release(half);
    ct_release(tie);
    return status;
}

ct_status ct_maximum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return extremum_backward(node, grad, grads, true);
}

ct_status ct_minimum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return extremum_backward(node, grad, grads, false);
}

/* where(cond, a, b): grad where cond holds to a, elsewhere to b; cond gets none. Saved: cond. */
ct_status ct_where_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *cond = node->saved[0];
    if (ct_node_needs_grad(node, 1)) {
        ct_status status = ct_grad_store(node, 1, ct_grad_keep_where(grad, ct_retain((ct_tensor *)cond)), grads);
        if (status != CT_OK) return status;
    }
    if (ct_node_needs_grad(node, 2))
        return ct_grad_store(node, 2, ct_grad_zero_where(ct_retain((ct_tensor *)cond), grad), grads);
    return CT_OK;
}

/* ---- a tensor and a scalar (in node->scalars[0]) ---- */

ct_status ct_add_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_retain((ct_tensor *)grad), grads);
}

ct_status ct_sub_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_retain((ct_tensor *)grad), grads);
}

ct_status ct_mul_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_mul_scalar(grad, node->scalars[0]), grads);
}

ct_status ct_div_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_div_scalar(grad, node->scalars[0]), grads);
}

/* d(a^s) = grad * s * a^(s-1), and 0 for s == 0 (as PyTorch, even at a == 0). Saved: a. */
ct_status ct_pow_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const double exponent = node->scalars[0];
    const ct_input_meta *in = &node->inputs[0];
    if (exponent == 0.0) return ct_grad_store(node, 0, ct_zeros(in->shape, in->ndim, in->dtype, in->device), grads);
    ct_tensor *power = ct_pow_scalar(node->saved[0], exponent - 1.0);
    ct_tensor *slope = ct_mul_scalar(power, exponent);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(power);
    return status;
}
