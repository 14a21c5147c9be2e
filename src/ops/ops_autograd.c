#include "ops/ops_autograd.h"

ct_tensor *ct_record(ct_tensor *out, const char *name, ct_backward_fn backward,
                     const ct_tensor *const *inputs, int count, ct_node **node)
{
    *node = NULL;
    if (!out || !ct_autograd_needed(inputs, count)) return out;
    if (!ct_dtype_is_floating(out->dtype)) return out; /* integer and bool results carry no gradient */
    *node = ct_autograd_record(out, name, backward, inputs, count);
    if (!*node) {
        ct_release(out);
        return NULL;
    }
    return out;
}

bool ct_node_needs_grad(const ct_node *node, int input)
{
    return node->next_nodes[input] || node->next_leaves[input];
}

ct_tensor *ct_sum_to_shape(const ct_tensor *grad, const int64_t *shape, int ndim)
{
    int dims[CT_MAX_DIMS], ndims = 0;
    int lead = grad->ndim - ndim;
    for (int d = 0; d < grad->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && grad->shape[d] != 1)) dims[ndims++] = d;
    ct_tensor *summed = ndims ? ct_sum(grad, dims, ndims, false) : ct_retain((ct_tensor *)grad);
    if (!summed) return NULL;
    ct_tensor *shaped = ct_reshape(summed, shape, ndim); /* restores the size-1 dims */
    ct_release(summed);
    return shaped;
}

ct_tensor *ct_grad_unbroadcast(const ct_tensor *grad, const ct_node *node, int input)
{
    const ct_input_meta *meta = &node->inputs[input];
    ct_tensor *shaped = ct_sum_to_shape(grad, meta->shape, meta->ndim);
    if (!shaped) return NULL;
    ct_tensor *typed = ct_to_dtype(shaped, meta->dtype);
    ct_release(shaped);
    return typed;
}
