/* y = x W^T + b as one op (torch.nn.functional.linear, PyTorch's addmm): the bias is copied into
 * the output and one GEMM adds x W^T to it; the backward makes the three gradients directly, the
 * weight's as g^T x, contiguous in the weight's own layout. Composed of transpose, matmul and add
 * it was three ops and three nodes forward, and more backward, per layer and training step. The
 * product and the backward's two products are shared with the Linear + ReLU op (linear_relu.c). */
#include <limits.h>

#include "ops/nn_internal.h"
#include "ops/autocast.h"

/* Is t (2-D, rows x cols) readable by BLAS as row-major? Its leading dim goes to *ld. */
static bool row_major(const ct_tensor *t, long *ld)
{
    int64_t rows = t->shape[0], cols = t->shape[1];
    if ((cols > 1 && t->strides[1] != 1) || (rows > 1 && t->strides[0] < cols)) return false;
    int64_t lead = rows > 1 ? t->strides[0] : (cols > 1 ? cols : 1);
    *ld = (long)lead;
    return lead <= INT_MAX;
}

/* The cases the fused op takes: floating operands of one dtype on one device, shapes that fit,
 * a weight BLAS reads as it is, sizes BLAS takes. The others go through the composed ops, whose
 * errors say what is wrong. */
bool ct_linear_takes(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b)
{
    long ld;
    if (!x || !w || w->ndim != 2 || x->ndim < 1 || !ct_dtype_is_floating(x->dtype) ||
        x->dtype != w->dtype || !ct_device_equal(x->storage->device, w->storage->device) ||
        x->shape[x->ndim - 1] != w->shape[1] || !row_major(w, &ld))
        return false;
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0] || b->dtype != x->dtype ||
              !ct_device_equal(b->storage->device, x->storage->device)))
        return false;
    int64_t rows = ct_numel(x) / (w->shape[1] > 0 ? w->shape[1] : 1);
    return rows <= INT_MAX && w->shape[0] <= INT_MAX && w->shape[1] <= INT_MAX && w->shape[1] > 0;
}

static ct_tensor *composed(const ct_tensor *x, const ct_tensor *w, const ct_tensor *b)
{
    ct_tensor *wt = ct_transpose(w, 0, 1);
    ct_tensor *y = ct_matmul(x, wt);
    ct_release(wt);
    if (b && y) {
        ct_tensor *with_bias = ct_add(y, b);
        ct_release(y);
        y = with_bias;
    }
    return y;
}

/* y2 [rows, out] = x2 [rows, in] W^T (+ the bias, copied in first). */
static ct_status forward(const char *function, const ct_tensor *x2, const ct_tensor *w,
                         const ct_tensor *b, ct_tensor *y2)
{
    if (b) { /* the bias in every row: a copy of b seen with a zero row stride */
        ct_tensor *bias_rows = ct_tensor_view_of(b, 2, y2->shape, (const int64_t[]){0, b->strides[0]},
                                                 b->offset);
        ct_status status = bias_rows ? ct_tensor_copy_into(y2, bias_rows) : ct_last_error();
        ct_release(bias_rows);
        if (status != CT_OK) return status;
    }
    ct_gemm_args g = {.dtype = y2->dtype, .alpha = 1.0, .beta = b ? 1.0 : 0.0, .batch = 1};
    g.m = (long)x2->shape[0];
    g.n = (long)w->shape[0];
    g.k = (long)x2->shape[1];
    if (!row_major(x2, &g.lda) || !row_major(w, &g.ldb))
        return ct_error(CT_ERR_INTERNAL, "%s: operand layout not accepted by BLAS", function);
    g.trans_b = true; /* W [out, in] row-major is W^T [in, out] stored column-major */
    g.ldc = g.n;
    g.a = ct_tensor_handle(x2);
    g.a_offset = (long)x2->offset;
    g.b = ct_tensor_handle(w);
    g.b_offset = (long)w->offset;
    g.c = ct_tensor_handle(y2);
    g.c_offset = (long)y2->offset;
    if (g.m == 0 || g.n == 0) return CT_OK;
    return ct_gemm_of(function, &g, x2, w, y2);
}

ct_tensor *ct_linear_product(const char *function, const ct_tensor *x, const ct_tensor *w,
                             const ct_tensor *b, ct_tensor **x2_out)
{
    int64_t in = w->shape[1];
    int64_t shape2[2] = {ct_numel(x) / in, in};
    long ld;
    ct_tensor *x2 = x->ndim == 2 ? ct_retain((ct_tensor *)x) : ct_reshape(x, shape2, 2);
    if (x2 && !row_major(x2, &ld)) {
        ct_tensor *copy = ct_contiguous(x2);
        ct_release(x2);
        x2 = copy;
    }
    int64_t out_shape2[2] = {shape2[0], w->shape[0]};
    ct_tensor *y2 = x2 ? ct_tensor_alloc(function, x->storage->device, x->dtype, out_shape2, 2) : NULL;
    if (y2 && forward(function, x2, w, b, y2) != CT_OK) {
        ct_release(y2);
        y2 = NULL;
    }
    if (!y2) {
        ct_release(x2);
        x2 = NULL;
    }
    *x2_out = x2;
    return y2;
}

ct_tensor *ct_linear_output(const ct_tensor *x, ct_tensor *y2)
{
    if (x->ndim == 2) return ct_retain(y2);
    int64_t y_shape[CT_MAX_DIMS];
    for (int d = 0; d < x->ndim - 1; d++) y_shape[d] = x->shape[d];
    y_shape[x->ndim - 1] = y2->shape[1];
    return ct_reshape(y2, y_shape, x->ndim);
}

static ct_status linear_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

ct_tensor *ct_linear_apply(const char *function, const ct_tensor *x, const ct_tensor *w,
                           const ct_tensor *b)
{
    CT_AUTOCAST_INTERNAL3(CT_AUTOCAST_LOWER, ct_linear_apply(function, c_[0], c_[1], c_[2]), x, w, b)
    if (!ct_linear_takes(x, w, b)) return composed(x, w, b);
    /* The pieces are internal: only the result joins the graph, with this op's backward. */
    bool was_enabled = ct_set_grad_enabled(false);
    ct_tensor *x2 = NULL;
    ct_tensor *y2 = ct_linear_product(function, x, w, b, &x2);
    ct_tensor *y = y2 ? ct_linear_output(x, y2) : NULL;
    ct_set_grad_enabled(was_enabled);
    ct_release(y2);

    const ct_tensor *inputs[3] = {x, w, b};
    ct_node *node;
    y = ct_record(y, b ? "AddmmBackward" : "MmBackward", linear_backward, inputs, 3, &node);
    if (node && (ct_node_save(node, x2) != CT_OK || ct_node_save(node, w) != CT_OK)) {
        ct_release(y);
        y = NULL;
    }
    ct_release(x2);
    return y;
}

ct_tensor *ct_linear_grad_rows(const ct_node *node, const ct_tensor *grad)
{
    const ct_tensor *x2 = node->saved[0], *w = node->saved[1];
    int64_t shape2[2] = {x2->shape[0], w->shape[0]};
    return grad->ndim == 2 ? ct_retain((ct_tensor *)grad) : ct_reshape(grad, shape2, 2);
}

ct_status ct_linear_backward_products(ct_node *node, const ct_tensor *g2, ct_tensor **grads)
{
    const ct_tensor *x2 = node->saved[0], *w = node->saved[1];
    if (ct_node_needs_grad(node, 0)) {
        ct_tensor *gx = ct_matmul(g2, w);
        const ct_input_meta *meta = &node->inputs[0];
        grads[0] = !gx ? NULL : meta->ndim != 2 ? ct_reshape(gx, meta->shape, meta->ndim) : ct_retain(gx);
        ct_release(gx);
        if (!grads[0]) return ct_last_error();
    }
    if (ct_node_needs_grad(node, 1)) {
        ct_tensor *gt = ct_transpose(g2, 0, 1);
        grads[1] = gt ? ct_matmul(gt, x2) : NULL;
        ct_release(gt);
        if (!grads[1]) return ct_last_error();
    }
    return CT_OK;
}

/* grad_x = g W, grad_W = g^T x, grad_b = the sum of g over rows (g, x as [rows, features]);
 * saved: x as [rows, in], W. */
static ct_status linear_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    ct_tensor *g2 = ct_linear_grad_rows(node, grad);
    if (!g2) return ct_last_error();
    ct_status status = ct_linear_backward_products(node, g2, grads);
    if (status == CT_OK && ct_node_needs_grad(node, 2)) {
        grads[2] = ct_sum(g2, (const int[]){0}, 1, false);
        if (!grads[2]) status = ct_last_error();
    }
    ct_release(g2);
    return status;
}
