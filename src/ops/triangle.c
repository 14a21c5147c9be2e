/* tril and triu (the triangles of the last two dims, any batch) and masked_fill. A triangle's
 * gradient is the same triangle of the incoming gradient; masked_fill is ct_where with the
 * value as a 0-dim tensor, so its gradient is zero where it filled. */
#include "ops/ops_autograd.h"

static ct_status launch_triangle(ct_tensor *out, const ct_tensor *a, int64_t diagonal, bool upper)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(triangle);
    ct_kparams p = {0};
    const int64_t *strides[2] = {out->strides, a->strides};
    ct_kparams_index_space(&p, a->shape, a->ndim, 2, strides);
    p.off[0] = out->offset;
    p.off[1] = a->offset;
    p.l[0] = a->shape[a->ndim - 1];
    p.l[1] = a->shape[a->ndim - 2];
    p.l[2] = diagonal;
    p.l[3] = upper;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a)};
    return ct_backend_launch(out->storage->device, kernels[a->dtype], buffers, &p, 2);
}

static ct_tensor *triangle(const char *function, const ct_tensor *a, int64_t diagonal, bool upper);

static ct_status triangle_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    bool upper = node->ints[1];
    grads[0] = triangle(upper ? "ct_triu" : "ct_tril", grad, node->ints[0], upper);
    return grads[0] ? CT_OK : ct_last_error();
}

static ct_tensor *triangle(const char *function, const ct_tensor *a, int64_t diagonal, bool upper)
{
    if (!a) return ct_null_argument(function, "a");
    if (a->ndim < 2)
        return ct_error_null(CT_ERR_SHAPE, "%s: a has %d dim%s; it needs at least 2 (the triangle "
                             "is taken over the last two dims)", function, a->ndim,
                             a->ndim == 1 ? "" : "s");
    /* Beyond the matrix every diagonal keeps all or nothing: clamp so that the kernel's
     * column - row comparison cannot overflow. */
    int64_t bound = a->shape[a->ndim - 1] + a->shape[a->ndim - 2];
    if (diagonal > bound) diagonal = bound;
    if (diagonal < -bound) diagonal = -bound;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, a->shape, a->ndim);
    if (out && ct_numel(out) > 0 && launch_triangle(out, a, diagonal, upper) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    ct_node *node;
    out = ct_record(out, upper ? "TriuBackward" : "TrilBackward", triangle_backward, &a, 1, &node);
    if (node) {
        node->ints[0] = diagonal;
        node->ints[1] = upper;
    }
    return out;
}

ct_tensor *ct_tril(const ct_tensor *a, int64_t diagonal)
{
    CT_API_ENTER;
    return ct_api_return(triangle("ct_tril", a, diagonal, false));
}

ct_tensor *ct_triu(const ct_tensor *a, int64_t diagonal)
{
    CT_API_ENTER;
    return ct_api_return(triangle("ct_triu", a, diagonal, true));
}

static ct_tensor *masked_fill(const ct_tensor *a, const ct_tensor *mask, double value)
{
    const char *function = "ct_masked_fill";
    const ct_tensor *operands[2] = {a, mask};
    const char *names[2] = {"a", "mask"};
    if (ct_check_operands(function, operands, names, 2) != CT_OK) return NULL;
    if (mask->dtype != CT_BOOL)
        return ct_error_null(CT_ERR_DTYPE, "%s: mask is %s; it must be bool (make one with a "
                             "comparison, or ct_to_dtype(mask, CT_BOOL))", function,
                             ct_dtype_name(mask->dtype));
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    /* a and mask broadcast together, as PyTorch's out-of-place masked_fill */
    if (ct_broadcast_shapes(function, operands, 2, shape, &ndim) != CT_OK) return NULL;
    if (ct_check_value_fits(function, "value", value, a->dtype) != CT_OK) return NULL;
    ct_tensor *fill = ct_full(NULL, 0, value, a->dtype, a->storage->device);
    ct_tensor *out = fill ? ct_where(mask, fill, a) : NULL;
    ct_release(fill);
    return out;
}

ct_tensor *ct_masked_fill(const ct_tensor *a, const ct_tensor *mask, double value)
{
    CT_API_ENTER;
    return ct_api_return(masked_fill(a, mask, value));
}
