/* Gradients of the elementwise ops. Each returns, per input, the gradient reduced over the dims
 * where that input was broadcast. */
#include "ops/elementwise_backward.h"

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
    if (ct_node_needs_grad(node, 1)) {
        ct_tensor *negated = ct_neg(grad);
        grads[1] = negated ? ct_grad_unbroadcast(negated, node, 1) : NULL;
        ct_release(negated);
        if (!grads[1]) return ct_last_error();
    }
    return CT_OK;
}

/* d(a*b) = grad*b for a, grad*a for b; saved: a, b. */
ct_status ct_mul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    for (int i = 0; i < 2; i++) {
        if (!ct_node_needs_grad(node, i)) continue;
        ct_tensor *product = ct_mul(grad, node->saved[1 - i]);
        grads[i] = product ? ct_grad_unbroadcast(product, node, i) : NULL;
        ct_release(product);
        if (!grads[i]) return ct_last_error();
    }
    return CT_OK;
}

/* d(a/b) = grad/b for a, -grad*a/b^2 for b; saved: a, b. */
ct_status ct_div_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *a = node->saved[0], *b = node->saved[1];
    ct_tensor *over_b = ct_div(grad, b);
    if (!over_b) return ct_last_error();
    if (ct_node_needs_grad(node, 0) && !(grads[0] = ct_grad_unbroadcast(over_b, node, 0))) {
        ct_release(over_b);
        return ct_last_error();
    }
    if (ct_node_needs_grad(node, 1)) {
        ct_tensor *quotient = ct_div(a, b);
        ct_tensor *product = ct_mul(over_b, quotient);
        ct_tensor *negated = ct_neg(product);
        grads[1] = negated ? ct_grad_unbroadcast(negated, node, 1) : NULL;
        ct_release(negated);
        ct_release(product);
        ct_release(quotient);
    }
    ct_release(over_b);
    return (ct_node_needs_grad(node, 1) && !grads[1]) ? ct_last_error() : CT_OK;
}
