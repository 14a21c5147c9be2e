/* Gradients of the reductions. A reduction's node keeps, in ints[0..ndim), which input dims it
 * reduced (1) or kept (0), and in scalars[0] how many elements each output folded. Each gradient
 * is built from the output's gradient seen with the reduced dims kept (size 1), which
 * broadcasts over the input. Those built from arithmetic run in float32 for float16 and
 * bfloat16 inputs and round the gradient once (ops/backward_in_float32.c). */
#include "ops/reduce_backward.h"

#include "ops/backward_in_float32.h"

void ct_reduce_node_setup(ct_node *node, const bool *reduced, int ndim, int64_t reduced_count)
{
    for (int d = 0; d < ndim; d++) node->ints[d] = reduced[d] ? 1 : 0;
    node->scalars[0] = (double)reduced_count;
}

/* An output-shaped tensor seen with the reduced dims kept as size 1 (as keepdim gives), so that
 * it broadcasts against the input. */
static ct_tensor *as_keepdim(const ct_tensor *t, const ct_node *node)
{
    const ct_input_meta *in = &node->inputs[0];
    int64_t kept_shape[CT_MAX_DIMS];
    for (int d = 0; d < in->ndim; d++) kept_shape[d] = node->ints[d] ? 1 : in->shape[d];
    return ct_reshape(t, kept_shape, in->ndim);
}

ct_tensor *ct_grad_expand_reduced(const ct_tensor *grad, const ct_node *node)
{
    const ct_input_meta *in = &node->inputs[0];
    ct_tensor *kept = as_keepdim(grad, node);
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

static ct_status mean_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *scaled = ct_div_scalar(grad, node->scalars[0]);
    grads[0] = scaled ? ct_grad_expand_reduced(scaled, node) : NULL;
    ct_release(scaled);
    return grads[0] ? CT_OK : ct_last_error();
}

/* The reduced dims as a list for ct_sum / ct_mean (none for a 0-dim input). */
static int reduced_dims(const ct_node *node, int *dims)
{
    int count = 0;
    for (int d = 0; d < node->inputs[0].ndim; d++)
        if (node->ints[d]) dims[count++] = d;
    return count;
}

/* d amax(a) / d a = mask / count per output, mask = (a == amax), count = sum of mask: ties share
 * the gradient evenly, as torch.amax does. */
static ct_status max_min_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *a = node->saved[0];
    int dims[CT_MAX_DIMS];
    int ndims = reduced_dims(node, dims);
    ct_tensor *extreme = as_keepdim(node->saved[1], node);
    ct_tensor *hits = extreme ? ct_eq(a, extreme) : NULL;
    ct_tensor *mask = hits ? ct_to_dtype(hits, a->dtype) : NULL;
    ct_tensor *count = mask ? ct_sum(mask, dims, ndims, true) : NULL;
    ct_tensor *grad_kept = count ? as_keepdim(grad, node) : NULL;
    ct_tensor *share = grad_kept ? ct_div(grad_kept, count) : NULL;
    grads[0] = share ? ct_mul(mask, share) : NULL;
    ct_release(share);
    ct_release(grad_kept);
    ct_release(count);
    ct_release(mask);
    ct_release(hits);
    ct_release(extreme);
    return grads[0] ? CT_OK : ct_last_error();
}

/* (a - mean(a)) laid over the input's shape, and grad with the reduced dims kept. */
static ct_status centered_and_grad(const ct_node *node, const ct_tensor *grad, ct_tensor **centered,
                                   ct_tensor **grad_kept)
{
    const ct_tensor *a = node->saved[0];
    int dims[CT_MAX_DIMS];
    int ndims = reduced_dims(node, dims);
    ct_tensor *mean = ct_mean(a, dims, ndims, true);
    *centered = mean ? ct_sub(a, mean) : NULL;
    *grad_kept = *centered ? as_keepdim(grad, node) : NULL;
    ct_release(mean);
    if (*grad_kept) return CT_OK;
    ct_release(*centered);
    *centered = NULL;
    return ct_last_error();
}

/* d var / d a = 2 (a - mean) / divisor. A divisor of 0 (K <= correction) gives inf or NaN, as the
 * forward does. */
static ct_status var_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *centered, *grad_kept;
    ct_status status = centered_and_grad(node, grad, &centered, &grad_kept);
    if (status != CT_OK) return status;
    ct_tensor *scaled = ct_div_scalar(grad_kept, node->scalars[1] * 0.5);
    grads[0] = scaled ? ct_mul(centered, scaled) : NULL;
    ct_release(scaled);
    ct_release(grad_kept);
    ct_release(centered);
    return grads[0] ? CT_OK : ct_last_error();
}

/* d std / d a = (a - mean) / (divisor * std); a zero std gives NaN or inf (as in PyTorch). */
static ct_status std_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *centered, *grad_kept;
    ct_status status = centered_and_grad(node, grad, &centered, &grad_kept);
    if (status != CT_OK) return status;
    ct_tensor *std_kept = as_keepdim(node->saved[1], node);
    ct_tensor *denominator = std_kept ? ct_mul_scalar(std_kept, node->scalars[1]) : NULL;
    ct_tensor *scaled = denominator ? ct_div(grad_kept, denominator) : NULL;
    grads[0] = scaled ? ct_mul(centered, scaled) : NULL;
    ct_release(scaled);
    ct_release(denominator);
    ct_release(std_kept);
    ct_release(grad_kept);
    ct_release(centered);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_status ct_mean_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, mean_backward);
}

ct_status ct_max_min_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, max_min_backward);
}

ct_status ct_var_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, var_backward);
}

ct_status ct_std_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return ct_backward_in_float32(node, grad, grads, std_backward);
}
