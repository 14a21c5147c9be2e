/* Gradients of the reductions. A reduction's node keeps, in ints[0..ndim), which input dims it
 * reduced (1) or kept (0), and in scalars[0] how many elements each output folded. */
#include "ops/reduce_backward.h"

void ct_reduce_node_setup(ct_node *node, const bool *reduced, int ndim, int64_t reduced_count)
{
    for (int d = 0; d < ndim; d++) node->ints[d] = reduced[d] ? 1 : 0;
    node->scalars[0] = (double)reduced_count;
}

ct_tensor *ct_grad_expand_reduced(const ct_tensor *grad, const ct_node *node)
{
    const ct_input_meta *in = &node->inputs[0];
    int64_t kept_shape[CT_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) kept_shape[d] = node->ints[d] ? 1 : in->shape[d];
    ct_tensor *kept = ct_reshape(grad, kept_shape, in->ndim);
    ct_tensor *expanded = kept ? ct_expand(kept, in->shape, in->ndim) : NULL;
    ct_tensor *out = expanded ? ct_contiguous(expanded) : NULL;
    ct_release(expanded);
    ct_release(kept);
    return out;
}

ct_status ct_sum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    grads[0] = ct_grad_expand_reduced(grad, node);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_mean_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *scaled = ct_div_scalar(grad, node->scalars[0]);
    grads[0] = scaled ? ct_grad_expand_reduced(scaled, node) : NULL;
    ct_release(scaled);
    return grads[0] ? CT_OK : ct_last_error();
}
