/* Gradients of softmax and log_softmax from their saved output y, along the dim d:
 *     softmax:      grad_a = y * (grad - sum_d(grad * y))
 *     log_softmax:  grad_a = grad - exp(y) * sum_d(grad)
 * The row sums keep d (size 1) and broadcast back over the row. float16 and bfloat16 run
 * them in float32 and round the gradient once (ops/backward_in_float32.c). */
#include "ops/softmax_backward.h"

#include "ops/backward_in_float32.h"

/* sum of t along the node's dim, keeping it (a 0-dim tensor sums to itself). */
static ct_tensor *row_sum(const ct_tensor *t, const ct_node *node)
{
    int dim = (int)node->ints[0];
    return t->ndim > 0 ? ct_sum(t, &dim, 1, true) : ct_sum(t, NULL, 0, true);
}

static ct_status softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *y = node->saved[0];
    ct_tensor *weighted = ct_mul(grad, y);
    ct_tensor *total = weighted ? row_sum(weighted, node) : NULL;
    ct_tensor *difference = total ? ct_sub(grad, total) : NULL;
    grads[0] = difference ? ct_mul(y, difference) : NULL;
    ct_release(difference);
    ct_release(total);
    ct_release(weighted);
    return grads[0] ? CT_OK : ct_last_error();
}

static ct_status log_softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *y = node->saved[0];
    ct_tensor *total = row_sum(grad, node);
    ct_tensor *probabilities = total ? ct_exp(y) : NULL;
    ct_tensor *spread = probabilities ? ct_mul(probabilities, total) : NULL;
    grads[0] = spread ? ct_sub(grad, spread) : NULL;
    ct_release(spread);
    ct_release(probabilities);
    ct_release(total);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, softmax_backward);
}

ct_status ct_log_softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, log_softmax_backward);
}
