/* Gradients of the views, written with the public ops (they run with grad mode off). */
#include "ops/view_backward.h"

ct_status ct_view_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    grads[0] = ct_reshape(grad, in->shape, in->ndim);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_transpose_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    grads[0] = ct_transpose(grad, (int)node->ints[0], (int)node->ints[1]);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_permute_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    int inverse[CT_MAX_DIMS];
    for (int d = 0; d < grad->ndim; d++) inverse[d] = (int)node->ints[d];
    grads[0] = ct_permute(grad, inverse, grad->ndim);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_expand_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    grads[0] = ct_sum_to_shape(grad, in->shape, in->ndim);
    return grads[0] ? CT_OK : ct_last_error();
}

/* The part of t that the node's forward took (the same arguments on a tensor of its shape). */
static ct_tensor *same_part(const ct_node *node, const ct_tensor *t)
{
    const int64_t *a = node->ints;
    switch ((enum ct_part_kind)a[0]) {
    case CT_PART_NARROW: return ct_tensor_narrow_view("ct_narrow", t, (int)a[1], a[2], a[3]);
    case CT_PART_SLICE: return ct_tensor_slice_view(t, (int)a[1], a[2], a[3], a[4]);
    case CT_PART_SELECT: return ct_tensor_select_view(t, (int)a[1], a[2]);
    }
    return ct_error_null(CT_ERR_INTERNAL, "%s: unknown kind of part %lld", node->name, (long long)a[0]);
}

ct_status ct_part_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    ct_tensor *zeros = ct_zeros(in->shape, in->ndim, in->dtype, in->device);
    ct_tensor *part = zeros ? same_part(node, zeros) : NULL;
    ct_status status = part ? ct_tensor_copy_into(part, grad) : ct_last_error();
    ct_release(part);
    if (status != CT_OK) {
        ct_release(zeros);
        return status;
    }
    grads[0] = zeros;
    return CT_OK;
}
