/* Writing through an index (torch.scatter, scatter_add, index_add). One work item per element of
 * the output region walks the positions along dim whose index points at it (index.ct's scatter
 * and scatter_add kernels, the latter gather's gradient): no atomics, so sums come out in index
 * order, the same bits run to run and on every device, and duplicate indices in scatter take
 * the last position's value. Index values are checked on the host (one read back), as PyTorch's
 * CPU kernels check them.
 *   scatter_add: a + S(src), S recorded with the backward gather(grad, dim, index)
 *   index_add:   scatter_add with the 1-D index spread along src's other dims
 *   scatter:     a with the reached elements replaced; a's gradient is zero there */
#include <stdio.h>

#include "ops/elementwise_backward.h"
#include "ops/ops_autograd.h"

/* Launches `kernels` (scatter or scatter_add, by index dtype) over region: out's elements reached
 * by index, walking dim. */
static ct_status launch(ct_kernel_id kernel, ct_tensor *region, int dim, const ct_tensor *src,
                        const ct_tensor *index)
{
    int64_t src_strides[CT_MAX_DIMS], index_strides[CT_MAX_DIMS], position[CT_MAX_DIMS] = {0};
    for (int k = 0; k < region->ndim; k++) {
        src_strides[k] = k == dim ? 0 : src->strides[k];
        index_strides[k] = k == dim ? 0 : index->strides[k];
    }
    if (region->ndim > 0) position[dim] = 1;
    int64_t count = region->ndim == 0 ? 1 : index->shape[dim];
    ct_kparams p = {0};
    const int64_t *strides[4] = {region->strides, src_strides, index_strides, position};
    ct_kparams_index_space(&p, region->shape, region->ndim, 4, strides);
    p.off[0] = region->offset;
    p.off[1] = src->offset;
    p.off[2] = index->offset;
    p.l[0] = p.ndim <= 1;
    p.l[1] = count;
    p.l[2] = src->ndim > 0 ? src->strides[dim] : 0;
    p.l[3] = index->ndim > 0 ? index->strides[dim] : 0;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(region), ct_tensor_handle((ct_tensor *)src),
                                            ct_tensor_handle((ct_tensor *)index)};
    return ct_backend_launch(region->storage->device, kernel, buffers, &p, count > 0 ? count : 1);
}

/* Into out (a fresh contiguous tensor of a's shape): the kernel over the part of out the index
 * reaches (index's extent, out's along dim). */
static ct_status run_into(ct_tensor *out, bool add, int dim, const ct_tensor *src, const ct_tensor *index)
{
    static const ct_kernel_id add64[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(scatter_add);
    static const ct_kernel_id add32[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(scatter_add_idx32);
    static const ct_kernel_id put64[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(scatter);
    static const ct_kernel_id put32[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(scatter_idx32);
    bool wide = index->dtype == CT_I64;
    ct_kernel_id kernel = (add ? (wide ? add64 : add32) : (wide ? put64 : put32))[out->dtype];
    int64_t shape[CT_MAX_DIMS];
    for (int k = 0; k < out->ndim; k++) shape[k] = k == dim ? out->shape[k] : index->shape[k];
    ct_tensor *region = ct_tensor_view_of(out, out->ndim, shape, out->strides, out->offset);
    if (!region) return ct_last_error();
    ct_status status = ct_numel(region) > 0 && ct_numel(index) > 0 ? launch(kernel, region, dim, src, index) : CT_OK;
    ct_release(region);
    return status;
}

/* a, index and src fit (PyTorch's rules) and the index's values are in [0, a's size along dim).
 * *dim is made non-negative. */
static ct_status check(const char *function, const ct_tensor *a, int *dim, const ct_tensor *index,
                       const ct_tensor *src, bool floating_only)
{
    if (ct_check_same_device(function, a, index) != CT_OK || ct_check_same_device(function, a, src) != CT_OK)
        return ct_last_error();
    if (index->dtype != CT_I64 && index->dtype != CT_I32)
        return ct_error(CT_ERR_DTYPE, "%s: index is %s; it must be int64 or int32", function,
                        ct_dtype_name(index->dtype));
    if (src->dtype != a->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: self is %s and src %s; they must have the same dtype",
                        function, ct_dtype_name(a->dtype), ct_dtype_name(src->dtype));
    if (floating_only && !ct_dtype_is_floating(a->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: self is %s; sums are made in floating dtypes (float32, "
                        "float64, float16, bfloat16)", function, ct_dtype_name(a->dtype));
    int nd = a->ndim > 0 ? a->ndim : 1;
    if (*dim < -nd || *dim >= nd)
        return ct_error(CT_ERR_INDEX, "%s: dim %d is out of range for a tensor of %d dims", function,
                        *dim, a->ndim);
    if (*dim < 0) *dim += nd;
    char x[256], y[256], z[256];
    const char *as = ct_shape_format(a->shape, a->ndim, x, sizeof x);
    const char *is = ct_shape_format(index->shape, index->ndim, y, sizeof y);
    const char *ss = ct_shape_format(src->shape, src->ndim, z, sizeof z);
    bool fits = index->ndim == a->ndim && src->ndim == a->ndim;
    for (int k = 0; fits && k < a->ndim; k++)
        fits = index->shape[k] <= src->shape[k] && (k == *dim || index->shape[k] <= a->shape[k]);
    if (!fits)
        return ct_error(CT_ERR_SHAPE, "%s: self %s, index %s, src %s: index must have self's number "
                        "of dims, be no larger than src in every dim and no larger than self in "
                        "every dim but %d", function, as, is, ss, *dim);
    if (ct_numel(index) == 0) return CT_OK;
    int64_t lo = 0, hi = 0, size = a->ndim > 0 ? a->shape[*dim] : 1;
    if (ct_index_value_range(function, index, &lo, &hi) != CT_OK) return ct_last_error();
    if (lo < 0 || hi >= size)
        return ct_error(CT_ERR_INDEX, "%s: index %lld is out of range for dim %d of size %lld "
                        "(values must be in [0, %lld))", function, (long long)(lo < 0 ? lo : hi),
                        *dim, (long long)size, (long long)size);
    return CT_OK;
}

/* ---- autograd: the node saves the index (spread to src's shape for index_add); ints[0] dim,
 * ints[1] = 1 for scatter (a's gradient zeroed where replaced). Inputs: a, src. ---- */

/* src's gradient: grad gathered at the index, zero outside the index's extent. */
static ct_tensor *src_gradient(const ct_tensor *grad, int dim, const ct_tensor *index,
                               const ct_input_meta *src)
{
    ct_tensor *picked = ct_gather(grad, dim, index);
    bool same = picked && index->ndim == src->ndim;
    for (int k = 0; same && k < src->ndim; k++) same = index->shape[k] == src->shape[k];
    if (!picked || same) return picked;
    ct_tensor *full = ct_zeros(src->shape, src->ndim, src->dtype, src->device);
    ct_tensor *part = full ? ct_tensor_view_of(full, index->ndim, index->shape, full->strides, full->offset) : NULL;
    ct_status status = part ? ct_copy_(part, picked) : ct_last_error();
    ct_release(part);
    ct_release(picked);
    if (status != CT_OK) {
        ct_release(full);
        return NULL;
    }
    return full;
}

static ct_status scatter_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *index = node->saved[0];
    int dim = (int)node->ints[0];
    if (ct_node_needs_grad(node, 0)) {
        ct_tensor *g;
        if (node->ints[1]) {
            /* zero where scatter replaced a's value: those places, marked by scattering ones */
            ct_tensor *hits = ct_zeros(grad->shape, grad->ndim, grad->dtype, grad->storage->device);
            ct_tensor *ones = hits ? ct_ones(index->shape, index->ndim, grad->dtype, grad->storage->device) : NULL;
            ct_status status = ones ? run_into(hits, false, dim, ones, index) : ct_last_error();
            g = status == CT_OK ? ct_grad_zero_where(ct_ne_scalar(hits, 0.0), grad) : NULL;
            ct_release(ones);
            ct_release(hits);
        } else {
            g = ct_retain((ct_tensor *)grad);
        }
        ct_status status = ct_grad_store(node, 0, g, grads);
        if (status != CT_OK) return status;
    }
    if (ct_node_needs_grad(node, 1))
        return ct_grad_store(node, 1, src_gradient(grad, dim, index, &node->inputs[1]), grads);
    return CT_OK;
}

static ct_tensor *scatter_op(const char *function, const char *node_name, const ct_tensor *a, int dim,
                             const ct_tensor *index, const ct_tensor *src, bool add)
{
    if (!a) return ct_null_argument(function, "self");
    if (!index) return ct_null_argument(function, "index");
    if (!src) return ct_null_argument(function, "src");
    if (check(function, a, &dim, index, src, add) != CT_OK) return NULL;
    bool was = ct_set_grad_enabled(false);
    ct_tensor *out = NULL;
    ct_status status;
    if (add) {
        /* S(src) into zeros, then a + S: a's own values take no part in the order of the sums */
        ct_tensor *sums = ct_zeros(a->shape, a->ndim, a->dtype, a->storage->device);
        status = sums ? run_into(sums, true, dim, src, index) : ct_last_error();
        out = status == CT_OK ? ct_add(a, sums) : NULL;
        if (status == CT_OK && !out) status = ct_last_error();
        ct_release(sums);
    } else {
        /* a fresh copy to write into (ct_contiguous would hand a itself back) */
        out = ct_empty(a->shape, a->ndim, a->dtype, a->storage->device);
        status = out ? ct_copy_(out, a) : ct_last_error();
        if (status == CT_OK) status = run_into(out, false, dim, src, index);
    }
    ct_set_grad_enabled(was);
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    ct_node *node;
    const ct_tensor *inputs[2] = {a, src};
    out = ct_record(out, node_name, scatter_backward, inputs, 2, &node);
    if (!node) return out;
    node->ints[0] = dim;
    node->ints[1] = !add;
    if (ct_node_save(node, index) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_scatter(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src)
{
    CT_API_ENTER;
    return ct_api_return(scatter_op("ct_scatter", "ScatterBackward", a, dim, index, src, false));
}

ct_tensor *ct_scatter_add(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src)
{
    CT_API_ENTER;
    return ct_api_return(scatter_op("ct_scatter_add", "ScatterAddBackward", a, dim, index, src, true));
}

ct_tensor *ct_index_add(const ct_tensor *a, int dim, const ct_tensor *index, const ct_tensor *src,
                        double alpha)
{
    CT_API_ENTER;
    const char *function = "ct_index_add";
    if (!a) return ct_api_return(ct_null_argument(function, "self"));
    if (!index) return ct_api_return(ct_null_argument(function, "index"));
    if (!src) return ct_api_return(ct_null_argument(function, "src"));
    int nd = a->ndim > 0 ? a->ndim : 1;
    if (dim < -nd || dim >= nd)
        return ct_api_return(ct_error_null(CT_ERR_INDEX, "%s: dim %d is out of range for a tensor of "
                                           "%d dims", function, dim, a->ndim));
    if (dim < 0) dim += nd;
    char x[256], y[256], z[256];
    bool fits = index->ndim <= 1 && src->ndim == a->ndim &&
                (src->ndim == 0 ? ct_numel(index) == 1 : src->shape[dim] == ct_numel(index));
    for (int k = 0; fits && k < a->ndim; k++) fits = k == dim || src->shape[k] == a->shape[k];
    if (!fits)
        return ct_api_return(ct_error_null(CT_ERR_SHAPE, "%s: self %s, index %s, src %s: index must be "
                                           "1-D and src self's shape but along dim %d, where it has "
                                           "one slice per index", function,
                                           ct_shape_format(a->shape, a->ndim, x, sizeof x),
                                           ct_shape_format(index->shape, index->ndim, y, sizeof y),
                                           ct_shape_format(src->shape, src->ndim, z, sizeof z), dim));
    /* the index spread over src's shape: its stride along dim, 0 elsewhere */
    int64_t strides[CT_MAX_DIMS] = {0};
    if (src->ndim > 0) strides[dim] = index->ndim == 1 ? index->strides[0] : 0;
    ct_tensor *spread = ct_tensor_view_of(index, src->ndim, src->shape, strides, index->offset);
    ct_tensor *scaled = spread && alpha != 1.0 ? ct_mul_scalar(src, alpha) : NULL;
    ct_tensor *out = spread && (alpha == 1.0 || scaled)
                         ? scatter_op(function, "IndexAddBackward", a, dim, spread, scaled ? scaled : src, true)
                         : NULL;
    ct_release(scaled);
    ct_release(spread);
    return ct_api_return(out);
}
