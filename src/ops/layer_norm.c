/* torch.nn.functional.layer_norm (kernels/layer_norm.ct). x is seen as contiguous [R, N], N the
 * product of normalized_shape. The forward is one kernel, a group per row, that writes y and
 * each row's mean and reciprocal std into a table `aux` (which also holds the weight and bias,
 * as the kernels take four buffers). The backward is one kernel over chunks of rows, writing dx
 * and each chunk's partial sums of the weight's and bias's gradients, and a combine kernel that
 * adds the partials in chunk order: no atomics, and the same bits run to run. The chunks are cut
 * the same way on every device (CHUNKS), so those sums add in the same order everywhere. float16
 * and bfloat16 compute in float32 (the table is float32), as PyTorch; under autocast layer_norm
 * runs in float32. */
#include "ops/autocast.h"
#include "ops/nn_internal.h"
#include "ops/work_split.h"

static const char *const FN = "ct_layer_norm";

/* The backward's row chunks: at most this many, whatever the device, so that the weight's
 * gradient adds in the same order on every device. */
#define CHUNKS 256

typedef struct ln_shape {
    int64_t rows, n;
} ln_shape;

static ct_status check_affine(const ct_tensor *x, const ct_tensor *t, const char *name,
                              const int64_t *normalized_shape, int ndim)
{
    if (!t) return CT_OK;
    char sn[256], st[256];
    bool same = t->ndim == ndim;
    for (int k = 0; same && k < ndim; k++) same = t->shape[k] == normalized_shape[k];
    if (!same)
        return ct_error(CT_ERR_SHAPE, "%s: %s has shape %s, but it must have normalized_shape %s",
                        FN, name, ct_shape_format(t->shape, t->ndim, st, sizeof st),
                        ct_shape_format(normalized_shape, ndim, sn, sizeof sn));
    if (t->dtype != x->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: x is %s but %s is %s; they must have the same dtype "
                        "(convert one with ct_to_dtype)", FN, ct_dtype_name(x->dtype), name,
                        ct_dtype_name(t->dtype));
    return CT_OK;
}

static ct_status check_arguments(const ct_tensor *x, const int64_t *normalized_shape, int ndim,
                                 const ct_tensor *weight, const ct_tensor *bias, double eps,
                                 ln_shape *s)
{
    if (!x) return ct_null_argument(FN, "x"), ct_last_error();
    const ct_tensor *all[3] = {x, weight, bias};
    const char *names[3] = {"x", "weight", "bias"};
    const ct_tensor *given[3];
    const char *given_names[3];
    int count = 0;
    for (int i = 0; i < 3; i++)
        if (all[i]) given[count] = all[i], given_names[count++] = names[i];
    ct_status status = ct_check_operands(FN, given, given_names, count);
    if (status != CT_OK) return status;
    if (!ct_dtype_is_floating(x->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: layer_norm needs a floating x (float32, float64, "
                        "float16 or bfloat16), but x is %s; convert with ct_to_dtype first", FN,
                        ct_dtype_name(x->dtype));
    if (!normalized_shape) return ct_null_argument(FN, "normalized_shape"), ct_last_error();
    if (ndim < 1)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: normalized_shape must name at least one "
                        "dim (got %d dims)", FN, ndim);
    char sx[256], sn[256];
    ct_shape_format(x->shape, x->ndim, sx, sizeof sx);
    bool matches = ndim <= x->ndim;
    for (int k = 0; matches && k < ndim; k++)
        matches = normalized_shape[k] == x->shape[x->ndim - ndim + k];
    if (!matches)
        return ct_error(CT_ERR_SHAPE, "%s: normalized_shape %s must match the last dims of x, "
                        "but x has shape %s", FN,
                        ct_shape_format(normalized_shape, ndim, sn, sizeof sn), sx);
    if (!(eps >= 0))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: eps must be >= 0, but it is %g", FN, eps);
    status = check_affine(x, weight, "weight", normalized_shape, ndim);
    if (status == CT_OK) status = check_affine(x, bias, "bias", normalized_shape, ndim);
    if (status != CT_OK) return status;
    s->n = 1;
    for (int k = 0; k < ndim; k++) s->n *= normalized_shape[k];
    s->rows = s->n > 0 ? ct_numel(x) / s->n : 0;
    return CT_OK;
}

/* A view of elements [start, start + length) of the 1-D table t. */
static ct_tensor *table_part(const ct_tensor *t, int64_t start, int64_t length)
{
    int64_t stride = 1;
    return ct_tensor_view_of(t, 1, &length, &stride, t->offset + start);
}

/* Part [start, start + n) of aux = t flattened (converted to aux's dtype), or value if t is NULL. */
static ct_status fill_table_part(ct_tensor *aux, int64_t start, int64_t n, const ct_tensor *t,
                                 double value)
{
    ct_tensor *part = table_part(aux, start, n);
    if (!part) return ct_last_error();
    ct_status status;
    if (!t) {
        status = ct_tensor_fill(part, value);
    } else {
        ct_tensor *flat = ct_reshape(t, &n, 1);
        ct_tensor *converted = !flat ? NULL : flat->dtype == aux->dtype ? ct_retain(flat)
                                                                         : ct_to_dtype(flat, aux->dtype);
        status = converted ? ct_copy_(part, converted) : ct_last_error();
        ct_release(converted);
        ct_release(flat);
    }
    ct_release(part);
    return status;
}

static ct_status launch(ct_kernel_id kernel, ct_kparams *p, const ct_tensor *const *tensors,
                        int count, long work, int group_size)
{
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {NULL};
    for (int i = 0; i < count; i++) {
        buffers[i] = ct_tensor_handle(tensors[i]);
        p->off[i] = (long)tensors[i]->offset;
    }
    ct_device device = tensors[0]->storage->device;
    if (group_size > 0) return ct_backend_launch_groups(device, kernel, buffers, p, work, group_size);
    return ct_backend_launch(device, kernel, buffers, p, work);
}

/* y for contiguous x; *aux_out the table [2N + 2R] (weight, bias, mean, rstd). */
static ct_tensor *layer_norm_forward(const ct_tensor *x, const ln_shape *s, const ct_tensor *weight,
                                     const ct_tensor *bias, double eps, ct_tensor **aux_out)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(layer_norm);
    ct_device device = x->storage->device;
    int64_t aux_size = 2 * s->n + 2 * s->rows;
    ct_tensor *aux = ct_tensor_alloc(FN, device, ct_nn_accumulate_dtype(x->dtype), &aux_size, 1);
    ct_tensor *y = aux ? ct_tensor_alloc(FN, device, x->dtype, x->shape, x->ndim) : NULL;
    ct_status status = y ? CT_OK : ct_last_error();
    if (status == CT_OK) status = fill_table_part(aux, 0, s->n, weight, 1.0);
    if (status == CT_OK) status = fill_table_part(aux, s->n, s->n, bias, 0.0);
    if (status == CT_OK && s->rows > 0 && s->n > 0) {
        int group_size = 1;
        status = ct_split_row_groups(device, s->n, &group_size);
        ct_kparams p = {0};
        p.n = (long)s->rows;
        p.l[0] = (long)s->n;
        p.l[1] = (long)s->rows;
        p.s[0] = eps;
        const ct_tensor *operands[3] = {y, x, aux};
        if (status == CT_OK)
            status = launch(kernels[x->dtype], &p, operands, 3, (long)(3 * s->n), group_size);
    }
    if (status != CT_OK) {
        ct_release(aux);
        ct_release(y);
        return NULL;
    }
    *aux_out = aux;
    return y;
}

/* ---- the backward: saved[0] = contiguous x, saved[1] = the table; ints[0..1] = R, N ---- */

static ct_status layer_norm_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    static const ct_kernel_id backward_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(layer_norm_backward);
    static const ct_kernel_id combine_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(layer_norm_backward_combine);
    const char *function = "NativeLayerNormBackward";
    const ct_tensor *x = node->saved[0], *aux = node->saved[1];
    ln_shape s = {node->ints[0], node->ints[1]};
    ct_device device = x->storage->device;
    int64_t rows_per_chunk = s.rows > 0 ? (s.rows + CHUNKS - 1) / CHUNKS : 1;
    int64_t chunks = s.rows > 0 ? (s.rows + rows_per_chunk - 1) / rows_per_chunk : 0;
    int64_t work_size = 2 * s.n + 2 * s.rows + 2 * s.n * chunks, sums_size = 2 * s.n;
    ct_tensor *g = ct_contiguous(grad);
    ct_tensor *work = g ? ct_tensor_alloc(function, device, aux->dtype, &work_size, 1) : NULL;
    ct_tensor *prefix = work ? table_part(work, 0, 2 * s.n + 2 * s.rows) : NULL;
    ct_tensor *dx = prefix ? ct_tensor_alloc(function, device, x->dtype, x->shape, x->ndim) : NULL;
    ct_tensor *sums = dx ? ct_tensor_alloc(function, device, x->dtype, &sums_size, 1) : NULL;
    ct_status status = sums ? ct_copy_(prefix, aux) : ct_last_error();
    if (status == CT_OK && chunks == 0) status = ct_tensor_fill(sums, 0.0);
    if (status == CT_OK && chunks > 0 && s.n > 0) {
        int group_size = 1;
        status = ct_split_row_groups(device, s.n, &group_size);
        ct_kparams p = {0};
        p.n = (long)chunks;
        p.l[0] = (long)s.n;
        p.l[1] = (long)s.rows;
        p.l[2] = (long)rows_per_chunk;
        p.l[3] = (long)chunks;
        const ct_tensor *operands[4] = {dx, g, x, work};
        if (status == CT_OK)
            status = launch(backward_kernels[x->dtype], &p, operands, 4,
                            (long)(6 * s.n * rows_per_chunk), group_size);
        p.n = (long)s.n;
        const ct_tensor *combine_operands[2] = {sums, work};
        if (status == CT_OK)
            status = launch(combine_kernels[x->dtype], &p, combine_operands, 2, (long)(2 * chunks), 0);
    }
    /* the weight's and bias's gradients, in their shape (the trailing dims of x) */
    const ct_input_meta *w = &node->inputs[1], *b = &node->inputs[2];
    if (status == CT_OK && ct_node_needs_grad(node, 0)) {
        grads[0] = dx;
        dx = NULL;
    }
    if (status == CT_OK && ct_node_needs_grad(node, 1)) {
        ct_tensor *part = table_part(sums, 0, s.n);
        grads[1] = part ? ct_reshape(part, w->shape, w->ndim) : NULL;
        ct_release(part);
        if (!grads[1]) status = ct_last_error();
    }
    if (status == CT_OK && ct_node_needs_grad(node, 2)) {
        ct_tensor *part = table_part(sums, s.n, s.n);
        grads[2] = part ? ct_reshape(part, b->shape, b->ndim) : NULL;
        ct_release(part);
        if (!grads[2]) status = ct_last_error();
    }
    ct_release(sums);
    ct_release(dx);
    ct_release(prefix);
    ct_release(work);
    ct_release(g);
    if (status != CT_OK)
        for (int i = 0; i < 3; i++) {
            ct_release(grads[i]);
            grads[i] = NULL;
        }
    return status;
}

ct_tensor *ct_layer_norm(const ct_tensor *x, const int64_t *normalized_shape, int ndim,
                         const ct_tensor *weight, const ct_tensor *bias, double eps)
{
    CT_API_ENTER;
    CT_AUTOCAST3(CT_AUTOCAST_FLOAT32,
                 ct_layer_norm(c_[0], normalized_shape, ndim, c_[1], c_[2], eps), x, weight, bias)
    ln_shape s = {0, 0};
    if (check_arguments(x, normalized_shape, ndim, weight, bias, eps, &s) != CT_OK)
        return ct_api_return(NULL);
    ct_no_grad_push();
    ct_tensor *xc = ct_contiguous(x), *aux = NULL;
    ct_tensor *out = xc ? layer_norm_forward(xc, &s, weight, bias, eps, &aux) : NULL;
    ct_no_grad_pop();
    const ct_tensor *inputs[3] = {x, weight, bias};
    ct_node *node;
    out = ct_record(out, "NativeLayerNormBackward", layer_norm_backward, inputs, 3, &node);
    if (node) {
        node->ints[0] = s.rows;
        node->ints[1] = s.n;
        if (ct_node_save(node, xc) != CT_OK || ct_node_save(node, aux) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(aux);
    ct_release(xc);
    return ct_api_return(out);
}
