/* Gradients of the one-tensor elementwise ops. Only floating inputs require grad, and these ops
 * keep a floating dtype, so grad has the input's shape and dtype. exp, sqrt, relu, sigmoid and
 * tanh save their output, whose derivative is cheapest to write in it. */
#include <math.h>

#include "ops/elementwise_backward.h"
#include "ops/elementwise_internal.h"

ct_status ct_neg_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_neg(grad), grads);
}

/* grad * sign(x), sign(0) = 0; saved: x. */
ct_status ct_abs_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    ct_tensor *negated = ct_neg(grad);
    ct_tensor *below = negated ? ct_grad_keep_where(negated, ct_lt_scalar(x, 0.0)) : NULL;
    ct_tensor *above = below ? ct_gt_scalar(x, 0.0) : NULL;
    ct_tensor *signed_grad = above ? ct_where(above, grad, below) : NULL;
    ct_release(above);
    ct_release(below);
    ct_release(negated);
    return ct_grad_store(node, 0, signed_grad, grads);
}

/* grad * exp(x) = grad * out; saved: out. */
ct_status ct_exp_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_mul(grad, node->saved[0]), grads);
}

/* grad / x; saved: x. */
ct_status ct_log_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_grad_store(node, 0, ct_div(grad, node->saved[0]), grads);
}

/* grad / (2 sqrt(x)) = grad / (2 out); saved: out. */
ct_status ct_sqrt_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *twice = ct_mul_scalar(node->saved[0], 2.0);
    ct_status status = ct_grad_store(node, 0, ct_div(grad, twice), grads);
    ct_release(twice);
    return status;
}

/* 0 where out <= 0, else grad (PyTorch's threshold_backward on the result), in one kernel: it
 * runs once per ReLU per training step; saved: out. */
ct_status ct_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(relu_backward);
    ct_dtype dtype = ct_tensor_dtype(grad);
    ct_elementwise_launch launch = {
        .function = "ReluBackward",
        .count = 2,
        .inputs = {grad, node->saved[0]},
        .input_dtypes = {dtype, dtype},
        .out_dtype = dtype,
        .kernel = kernels[dtype],
        .work_per_item = 3,
    };
    return ct_grad_store(node, 0, ct_elementwise_run(&launch), grads);
}

/* grad * s (1 - s) = grad * (s - s^2) with s = out; saved: out. */
ct_status ct_sigmoid_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *s = node->saved[0];
    ct_tensor *square = ct_mul(s, s);
    ct_tensor *slope = ct_sub(s, square);
    ct_status status = ct_grad_store(node, 0, ct_mul(grad, slope), grads);
    ct_release(slope);
    ct_release(square);
    return status;
}

/* grad * (1 - t^2) = grad - grad * t^2 with t = out; saved: out. */
ct_status ct_tanh_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *t = node->saved[0];
    ct_tensor *square = ct_mul(t, t);
    ct_tensor *scaled = ct_mul(grad, square);
    ct_status status = ct_grad_store(node, 0, ct_sub(grad, scaled), grads);
    ct_release(scaled);
    ct_release(square);
    return status;
}

/* grad * (Phi(x) + x phi(x)): the ops have no erf, so one kernel computes it; saved: x. */
ct_status ct_gelu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(gelu_backward);
    const ct_tensor *x = node->saved[0];
    ct_dtype dtype = ct_tensor_dtype(grad);
    ct_elementwise_launch launch = {
        .function = "GeluBackward",
        .count = 2,
        .inputs = {grad, x},
        .input_dtypes = {dtype, dtype},
        .out_dtype = dtype,
        .kernel = kernels[dtype],
        .work_per_item = 32, /* erf and exp */
    };
    return ct_grad_store(node, 0, ct_elementwise_run(&launch), grads);
}

/* grad * the slope of tanh GELU at x, in one kernel (tanh and a polynomial); saved: x. */
ct_status ct_gelu_tanh_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(gelu_tanh_backward);
    const ct_tensor *x = node->saved[0];
    ct_dtype dtype = ct_tensor_dtype(grad);
    ct_elementwise_launch launch = {
        .function = "GeluTanhBackward",
        .count = 2,
        .inputs = {grad, x},
        .input_dtypes = {dtype, dtype},
        .out_dtype = dtype,
        .kernel = kernels[dtype],
        .work_per_item = 24, /* tanh */
    };
    return ct_grad_store(node, 0, ct_elementwise_run(&launch), grads);
}

/* grad where min <= x <= max (the bounds included), else 0; saved: x, bounds in scalars[0..1]
 * (infinite for clamp_min / clamp_max). A NaN x or bound passes nothing. */
ct_status ct_clamp_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *x = node->saved[0];
    const double min = node->scalars[0], max = node->scalars[1];
    ct_tensor *inside;
    if (min == -INFINITY) {
        inside = ct_le_scalar(x, max);
    } else if (max == INFINITY) {
        inside = ct_ge_scalar(x, min);
    } else {
        ct_tensor *above_min = ct_ge_scalar(x, min), *below_max = ct_le_scalar(x, max);
        inside = ct_mul(above_min, below_max); /* bool * bool is logical and */
        ct_release(below_max);
        ct_release(above_min);
    }
    return ct_grad_store(node, 0, ct_grad_keep_where(grad, inside), grads);
}
