/* Backward functions of the elementwise ops (see ops_autograd.h): the binary ops, where and the
 * scalar forms in elementwise_backward.c, the one-tensor ops in unary_backward.c. */
#ifndef CT_OPS_ELEMENTWISE_BACKWARD_H
#define CT_OPS_ELEMENTWISE_BACKWARD_H

#include "ops/ops_autograd.h"

/* Two tensors; saved: a, b (mul, div, pow, maximum, minimum) and out (pow). */
ct_status ct_add_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sub_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_mul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_div_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_pow_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_maximum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_minimum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* Inputs cond, a, b; saved: cond. */
ct_status ct_where_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

/* A tensor and the scalar in node->scalars[0]; saved: a (pow). */
ct_status ct_add_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sub_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_mul_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_div_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_pow_scalar_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

/* One tensor; saved: the input (abs, log, gelu, clamp) or the output (exp, sqrt, relu, sigmoid,
 * tanh); clamp's bounds in node->scalars[0..1]. */
ct_status ct_neg_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_abs_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_exp_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_log_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sqrt_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sigmoid_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_tanh_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_gelu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_gelu_tanh_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_clamp_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* activation_backward.c; saved: the input (leaky_relu, silu, softplus, elu, log1p, sin, cos,
 * erf) or the output (rsqrt, reciprocal); the parameters in node->scalars[0..1]. */
ct_status ct_leaky_relu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_silu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_softplus_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_elu_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_log1p_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sin_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_cos_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_rsqrt_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_reciprocal_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_erf_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* zeros of grad's shape and dtype */
ct_status ct_sign_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_floor_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_round_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

/* where(keep, grad, 0) and where(drop, 0, grad): grad with the other places zeroed, in grad's
 * dtype over the broadcast shape (masked_fill's pattern: an inf or NaN grad there still gives
 * 0). They release keep / drop, which may be NULL (an error then passes on). */
ct_tensor *ct_grad_keep_where(const ct_tensor *grad, ct_tensor *keep);
ct_tensor *ct_grad_zero_where(ct_tensor *drop, const ct_tensor *grad);

/* Stores grads[input] = grad reduced to the input's shape and dtype, and releases grad (which
 * may be NULL after an error in the formula). */
ct_status ct_grad_store(ct_node *node, int input, ct_tensor *grad, ct_tensor **grads);

#endif
