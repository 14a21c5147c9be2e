/* Gradients of leaky_relu, silu, softplus, elu, log1p, sin, cos, rsqrt, reciprocal and erf,
 * composed of ops (each runs a few times per step at most, so a kernel of its own would not pay),
 * and the zero gradients of sign, floor and round. The piecewise ones pick their branch as
 * PyTorch's backward kernels do, so that a NaN input gives the same gradient. */
#include <math.h>

#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

/* x > 0 ? grad : grad * negative_slope; saved: x, scalars[0] the slope. */
ct_status ct_leaky_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *positive = ct_gt_scalar(x, 0.0);
    ct_tensor *scaled = ct_mul_scalar(grad, node->scalars[0]);
    ct_tensor *out = positive && scaled ? ct_where(positive, grad, scaled) : NULL;
    ct_release(scaled);
    ct_release(positive);
    return ct_grad_store(node, 0, out, grads);
}

/* grad * s (1 + x (1 - s)), s = sigmoid(x); saved: x. */
ct_status ct_silu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *s = ct_sigmoid(x);
    ct_tensor *negated = ct_neg(s);
    ct_tensor *one_minus = ct_add_scalar(negated, 1.0);
    ct_tensor *product = ct_mul(x, one_minus);
    ct_tensor *inner = ct_add_scalar(product, 1.0);
    ct_tensor *slope = ct_mul(s, inner);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(inner);
    ct_release(product);
    ct_release(one_minus);
    ct_release(negated);
    ct_release(s);
    return status;
}

/* beta x > threshold ? grad : grad * sigmoid(beta x); saved: x, scalars beta, threshold. */
ct_status ct_softplus_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *bx = ct_mul_scalar(x, node->scalars[0]);
    ct_tensor *linear = ct_gt_scalar(bx, node->scalars[1]);
    ct_tensor *s = ct_sigmoid(bx);
    ct_tensor *scaled = ct_mul(grad, s);
    ct_tensor *out = linear && scaled ? ct_where(linear, grad, scaled) : NULL;
    ct_release(scaled);
    ct_release(s);
    ct_release(linear);
    ct_release(bx);
    return ct_grad_store(node, 0, out, grads);
}

/* x <= 0 ? grad * alpha * exp(x) : grad; saved: x, scalars[0] alpha. */
ct_status ct_elu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *negative = ct_le_scalar(x, 0.0);
    ct_tensor *ex = ct_exp(x);
    ct_tensor *e = ct_mul_scalar(ex, node->scalars[0]);
    ct_tensor *scaled = ct_mul(grad, e);
    ct_tensor *out = negative && scaled ? ct_where(negative, scaled, grad) : NULL;
    ct_release(scaled);
    ct_release(e);
    ct_release(ex);
    ct_release(negative);
    return ct_grad_store(node, 0, out, grads);
}

/* grad / (1 + x); saved: x. */
ct_status ct_log1p_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *shifted = ct_add_scalar(node->saved[0], 1.0);
    ct_status status = ct_grad_store(node, 0, ct_div(grad, shifted), grads);
    ct_release(shifted);
    return status;
}

/* grad * cos(x); saved: x. */
ct_status ct_sin_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *c = ct_cos(node->saved[0]);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, c), grads);
    ct_release(c);
    return status;
}

/* -grad * sin(x); saved: x. */
ct_status ct_cos_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *s = ct_sin(node->saved[0]);
    ct_tensor *negated = ct_neg(s);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, negated), grads);
    ct_release(negated);
    ct_release(s);
    return status;
}

/* -grad * out^3 / 2 with out = x^(-1/2); saved: out. */
ct_status ct_rsqrt_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *r = node->saved[0];
    ct_tensor *square = ct_mul(r, r);
    ct_tensor *cube = ct_mul(square, r);
    ct_tensor *slope = ct_mul_scalar(cube, -0.5);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(cube);
    ct_release(square);
    return status;
}

/* -grad * out^2 with out = 1 / x; saved: out. */
ct_status ct_reciprocal_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *r = node->saved[0];
    ct_tensor *square = ct_mul(r, r);
    ct_tensor *slope = ct_neg(square);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(square);
    return status;
}

/* grad * 2 / sqrt(pi) * exp(-x^2); saved: x. */
ct_status ct_erf_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *square = ct_mul(x, x);
    ct_tensor *negated = ct_neg(square);
    ct_tensor *e = ct_exp(negated);
    ct_tensor *slope = ct_mul_scalar(e, 1.12837916709551257390);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(e);
    ct_release(negated);
    ct_release(square);
    return status;
}

static ct_status zero_gradient(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0,
                         ct_zeros(ct_tensor_shape(grad), ct_tensor_ndim(grad), ct_tensor_dtype(grad),
                                  ct_tensor_device(grad)),
                         grads);
}

ct_status ct_sign_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return zero_gradient(node, grad, grads);
}

ct_status ct_floor_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return zero_gradient(node, grad, grads);
}

ct_status ct_round_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return zero_gradient(node, grad, grads);
}
