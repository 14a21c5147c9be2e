/* A backward pass built from several ops (softmax's, the reductions') rounds every intermediate
 * result when it runs in a 16-bit dtype; PyTorch's fused backward kernels accumulate in float
 * and round the gradient once. Running the same formula in float32 and rounding its result
 * gives that, and needs no 16-bit form of each op it calls. */
#include "ops/backward_in_float32.h"

static bool is_16_bit(ct_dtype dtype) { return dtype == CT_F16 || dtype == CT_BF16; }

ct_status ct_backward_in_float32(ct_node *node, const ct_tensor *grad, ct_tensor **grads,
                                 ct_backward_fn body)
{
    bool narrow = is_16_bit(grad->dtype);
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++)
        if (node->saved[i] && is_16_bit(node->saved[i]->dtype)) narrow = true;
    if (!narrow) return body(node, grad, grads);

    ct_tensor *kept[CT_NODE_MAX_SAVED], *wide[CT_NODE_MAX_SAVED] = {0};
    ct_status status = CT_OK;
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        kept[i] = node->saved[i];
        if (status == CT_OK && kept[i] && is_16_bit(kept[i]->dtype)) {
            wide[i] = ct_to_dtype(kept[i], CT_F32);
            if (!wide[i]) status = ct_last_error();
            else node->saved[i] = wide[i];
        }
    }
    ct_tensor *wide_grad = status == CT_OK && is_16_bit(grad->dtype) ? ct_to_dtype(grad, CT_F32) : NULL;
    if (status == CT_OK && is_16_bit(grad->dtype) && !wide_grad) status = ct_last_error();
    if (status == CT_OK) status = body(node, wide_grad ? wide_grad : grad, grads);
    for (int i = 0; i < CT_NODE_MAX_SAVED; i++) {
        node->saved[i] = kept[i];
        ct_release(wide[i]);
    }
    ct_release(wide_grad);
    for (int i = 0; i < node->ninputs; i++) {
        if (!grads[i] || grads[i]->dtype == node->inputs[i].dtype) continue;
        ct_tensor *rounded = status == CT_OK ? ct_to_dtype(grads[i], node->inputs[i].dtype) : NULL;
        if (status == CT_OK && !rounded) status = ct_last_error();
        ct_release(grads[i]);
        grads[i] = rounded;
    }
    return status;
}
