/* torch.matmul: 1-D to batched N-D with broadcast batch dims. Floating dtypes go to the
 * backend's gemm with the operands' own strides (a transposed matrix is passed with the
 * transpose flag, never copied; float16 and bfloat16 accumulate in float32, see gemm_any.c);
 * integer dtypes run a strided kernel (index.ct). */
#include <limits.h>

#include "ops/ops_autograd.h"
#include "ops/autocast.h"

static const char *const FN = "ct_matmul";

/* One operand seen as a batch of rows x cols matrices (a 1-D `a` is one row, a 1-D `b` one
 * column), with its batch strides broadcast to the output's batch shape. */
typedef struct matrix_view {
    const ct_tensor *t;
    int64_t rows, cols, row_stride, col_stride;
    int batch_ndim;
    int64_t batch_shape[CT_MAX_DIMS];
    int64_t batch_strides[CT_MAX_DIMS]; /* over the output's batch shape, after broadcasting */
} matrix_view;

static void view_matrix(const ct_tensor *t, bool is_left, matrix_view *v)
{
    v->t = t;
    if (t->ndim == 1) {
        v->rows = is_left ? 1 : t->shape[0];
        v->cols = is_left ? t->shape[0] : 1;
        v->row_stride = is_left ? 0 : t->strides[0];
        v->col_stride = is_left ? t->strides[0] : 0;
        v->batch_ndim = 0;
        return;
    }
    int nd = t->ndim;
    v->rows = t->shape[nd - 2];
    v->cols = t->shape[nd - 1];
    v->row_stride = t->strides[nd - 2];
    v->col_stride = t->strides[nd - 1];
    v->batch_ndim = nd - 2;
    for (int d = 0; d < nd - 2; d++) v->batch_shape[d] = t->shape[d];
}

/* The strides of v's batch dims seen through the output's batch shape (0 where broadcast). */
static void broadcast_batch_strides(matrix_view *v, const int64_t *batch, int nbatch)
{
    for (int d = 0; d < nbatch; d++) {
        int vd = v->batch_ndim - nbatch + d;
        bool broadcast = vd < 0 || (v->batch_shape[vd] == 1 && batch[d] != 1);
        v->batch_strides[d] = broadcast ? 0 : v->t->strides[vd];
    }
}

/* Can BLAS read a rows x cols matrix with these strides as it is? Row-major "no transpose"
 * needs a unit column stride and a row stride (the leading dim) >= cols; "transpose" (the
 * matrix stored column-major) needs a unit row stride and a column stride >= rows. A dim of
 * size 1 never moves, so its stride does not matter. */
static bool blas_layout(const matrix_view *v, bool *trans, long *ld)
{
    int64_t r = v->rows, c = v->cols, rs = v->row_stride, cs = v->col_stride;
    if ((c <= 1 || cs == 1) && (r <= 1 || rs >= c)) {
        *trans = false;
        *ld = (long)(r <= 1 ? c : rs);
    } else if ((r <= 1 || rs == 1) && (c <= 1 || cs >= r)) {
        *trans = true;
        *ld = (long)(c <= 1 ? r : cs);
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

/* Makes v BLAS-readable: t as it is when its layout allows, otherwise a contiguous copy of t
 * into *copy (for example a matrix expanded along its rows, or every other column). */
static ct_status blas_ready(const ct_tensor *t, bool is_left, matrix_view *v, ct_tensor **copy)
{
    bool trans;
    long ld;
    if (blas_layout(v, &trans, &ld)) return CT_OK;
    *copy = ct_contiguous(t);
    if (!*copy) return ct_last_error();
    view_matrix(*copy, is_left, v);
    return CT_OK;
}

/* Batch dims merged where every operand (a, b, out) steps evenly across them, as
 * ct_kparams_index_space merges dims. Returns the count of merged dims. */
static int merge_batch_dims(const int64_t *shape, int ndim, const int64_t *const strides[3],
                            int64_t *merged_size, int64_t merged_strides[3][CT_MAX_DIMS])
{
    int merged = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        bool mergeable = merged > 0;
        for (int op = 0; op < 3 && mergeable; op++)
            mergeable = merged_strides[op][merged - 1] == strides[op][d] * shape[d];
        if (mergeable) {
            merged_size[merged - 1] *= shape[d];
            for (int op = 0; op < 3; op++) merged_strides[op][merged - 1] = strides[op][d];
        } else {
            merged_size[merged] = shape[d];
            for (int op = 0; op < 3; op++) merged_strides[op][merged] = strides[op][d];
            merged++;
        }
    }
    return merged;
}

/* out = a @ b through the backend's gemm: one call per run of batch matrices at constant
 * batch strides (all of them, unless the broadcast batch dims do not collapse to one). */
static ct_status gemm_batches(const matrix_view *a, const matrix_view *b, ct_tensor *out,
                              const int64_t *batch, int nbatch)
{
    ct_gemm_args g = {.dtype = out->dtype, .alpha = 1.0, .beta = 0.0};
    if (!blas_layout(a, &g.trans_a, &g.lda) || !blas_layout(b, &g.trans_b, &g.ldb))
        return ct_error(CT_ERR_INTERNAL, "%s: operand layout not accepted by BLAS", FN);
    g.m = (long)a->rows;
    g.n = (long)b->cols;
    g.k = (long)a->cols;
    g.ldc = g.n;
    g.a = ct_tensor_handle(a->t);
    g.b = ct_tensor_handle(b->t);
    g.c = ct_tensor_handle(out);

    int64_t out_batch_strides[CT_MAX_DIMS];
    int64_t stride = (int64_t)g.m * g.n;
    for (int d = nbatch - 1; d >= 0; d--) {
        out_batch_strides[d] = stride;
        stride *= batch[d];
    }
    const int64_t *const strides[3] = {a->batch_strides, b->batch_strides, out_batch_strides};
    int64_t size[CT_MAX_DIMS], merged_strides[3][CT_MAX_DIMS];
    int merged = merge_batch_dims(batch, nbatch, strides, size, merged_strides);

    /* The innermost merged dim is the gemm batch; the outer ones are looped over here. */
    int inner = merged - 1;
    g.batch = merged > 0 ? (long)size[inner] : 1;
    g.a_batch_stride = merged > 0 ? (long)merged_strides[0][inner] : 0;
    g.b_batch_stride = merged > 0 ? (long)merged_strides[1][inner] : 0;
    g.c_batch_stride = merged > 0 ? (long)merged_strides[2][inner] : 0;
    int64_t calls = 1;
    for (int d = 0; d < inner; d++) calls *= size[d];

    for (int64_t call = 0; call < calls; call++) {
        int64_t rest = call, offset[3] = {0, 0, 0};
        for (int d = inner - 1; d >= 0; d--) {
            int64_t coord = rest % size[d];
            rest /= size[d];
            for (int op = 0; op < 3; op++) offset[op] += coord * merged_strides[op][d];
        }
        g.a_offset = (long)(a->t->offset + offset[0]);
        g.b_offset = (long)(b->t->offset + offset[1]);
        g.c_offset = (long)(out->offset + offset[2]);
        ct_status status = ct_gemm_of(FN, &g, a->t, b->t, out);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* out = a @ b for integer dtypes: one work item per output element, any strides. */
static ct_status integer_matmul(matrix_view *a, matrix_view *b, ct_tensor *out,
                                const int64_t *batch, int nbatch)
{
    broadcast_batch_strides(a, batch, nbatch);
    broadcast_batch_strides(b, batch, nbatch);
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = {
        [CT_I32] = CT_K_matmul_i32, [CT_I64] = CT_K_matmul_i64, [CT_U8] = CT_K_matmul_u8};
    int ndim = nbatch + 2;
    int64_t shape[CT_MAX_DIMS + 2], out_strides[CT_MAX_DIMS + 2];
    int64_t a_strides[CT_MAX_DIMS + 2], b_strides[CT_MAX_DIMS + 2];
    for (int d = 0; d < nbatch; d++) {
        shape[d] = batch[d];
        a_strides[d] = a->batch_strides[d];
        b_strides[d] = b->batch_strides[d];
    }
    shape[nbatch] = a->rows;
    shape[nbatch + 1] = b->cols;
    a_strides[nbatch] = a->row_stride;
    a_strides[nbatch + 1] = 0;
    b_strides[nbatch] = 0;
    b_strides[nbatch + 1] = b->col_stride;
    ct_contiguous_strides(shape, ndim, out_strides);

    ct_kparams p = {0};
    const int64_t *strides[3] = {out_strides, a_strides, b_strides};
    ct_kparams_index_space(&p, shape, ndim, 3, strides);
    p.off[0] = out->offset;
    p.off[1] = a->t->offset;
    p.off[2] = b->t->offset;
    p.l[0] = a->cols;
    p.l[1] = a->col_stride;
    p.l[2] = b->row_stride;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a->t),
                                            ct_tensor_handle(b->t)};
    return ct_backend_launch(out->storage->device, kernels[out->dtype], buffers, &p, a->cols);
}

/* out = a @ b for floating dtypes through gemm; only an operand whose layout BLAS cannot take
 * is copied (to a contiguous tensor) first. */
static ct_status blas_matmul(matrix_view *a, matrix_view *b, ct_tensor *out, const int64_t *batch,
                             int nbatch)
{
    if (a->rows > INT_MAX || a->cols > INT_MAX || b->cols > INT_MAX)
        return ct_error(CT_ERR_SHAPE, "%s: a product of %lld x %lld and %lld x %lld matrices is "
                        "too large for BLAS (sizes must be below 2^31)", FN, (long long)a->rows,
                        (long long)a->cols, (long long)b->rows, (long long)b->cols);
    ct_tensor *a_copy = NULL, *b_copy = NULL;
    ct_status status = blas_ready(a->t, true, a, &a_copy);
    if (status == CT_OK) status = blas_ready(b->t, false, b, &b_copy);
    if (status == CT_OK) {
        broadcast_batch_strides(a, batch, nbatch);
        broadcast_batch_strides(b, batch, nbatch);
        status = gemm_batches(a, b, out, batch, nbatch);
    }
    ct_release(a_copy);
    ct_release(b_copy);
    return status;
}

static ct_status check_inputs(const ct_tensor *a, const ct_tensor *b)
{
    const ct_tensor *operands[2] = {a, b};
    const char *names[2] = {"a", "b"};
    ct_status status = ct_check_operands(FN, operands, names, 2);
    if (status != CT_OK) return status;
    char sa[256], sb[256];
    if (a->ndim == 0 || b->ndim == 0)
        return ct_error(CT_ERR_SHAPE, "%s: both arguments need at least 1 dim, but got shapes %s "
                        "and %s", FN, ct_shape_format(a->shape, a->ndim, sa, sizeof sa),
                        ct_shape_format(b->shape, b->ndim, sb, sizeof sb));
    if (a->dtype != b->dtype)
        return ct_error(CT_ERR_DTYPE, "%s: expected a and b to have the same dtype, but got %s "
                        "and %s; convert one with ct_to_dtype", FN, ct_dtype_name(a->dtype),
                        ct_dtype_name(b->dtype));
    if (a->dtype == CT_BOOL)
        return ct_error(CT_ERR_DTYPE, "%s: dtype bool is not supported (use float32, float64, "
                        "float16, bfloat16, int32, int64 or uint8)", FN);
    return CT_OK;
}

/* The output's batch shape: a's and b's batch dims broadcast together. */
static ct_status broadcast_batch(const ct_tensor *at, const ct_tensor *bt, const matrix_view *a,
                                 const matrix_view *b, int64_t *batch, int *nbatch)
{
    int n = a->batch_ndim > b->batch_ndim ? a->batch_ndim : b->batch_ndim;
    for (int d = 0; d < n; d++) {
        int ad = a->batch_ndim - n + d, bd = b->batch_ndim - n + d;
        int64_t sa = ad >= 0 ? a->batch_shape[ad] : 1, sb = bd >= 0 ? b->batch_shape[bd] : 1;
        if (sa != sb && sa != 1 && sb != 1) {
            char ta[256], tb[256];
            return ct_error(CT_ERR_SHAPE, "%s: the batch dims of shapes %s and %s cannot be "
                            "broadcast together (%lld != %lld in batch dim %d)", FN,
                            ct_shape_format(at->shape, at->ndim, ta, sizeof ta),
                            ct_shape_format(bt->shape, bt->ndim, tb, sizeof tb), (long long)sa,
                            (long long)sb, d - n);
        }
        batch[d] = sa == 1 ? sb : sa;
    }
    *nbatch = n;
    return CT_OK;
}

static ct_tensor *matmul(const ct_tensor *at, const ct_tensor *bt)
{
    if (check_inputs(at, bt) != CT_OK) return NULL;
    matrix_view a, b;
    view_matrix(at, true, &a);
    view_matrix(bt, false, &b);
    char sa[256], sb[256];
    if (a.cols != b.rows)
        return ct_error_null(CT_ERR_SHAPE, "%s: shapes %s and %s cannot be multiplied (%lld != "
                             "%lld)", FN, ct_shape_format(at->shape, at->ndim, sa, sizeof sa),
                             ct_shape_format(bt->shape, bt->ndim, sb, sizeof sb),
                             (long long)a.cols, (long long)b.rows);
    int64_t batch[CT_MAX_DIMS];
    int nbatch = 0;
    if (broadcast_batch(at, bt, &a, &b, batch, &nbatch) != CT_OK) return NULL;

    /* The output: batch dims, then m unless a is 1-D, then n unless b is 1-D. */
    int64_t shape[CT_MAX_DIMS];
    int ndim = nbatch;
    for (int d = 0; d < nbatch; d++) shape[d] = batch[d];
    if (at->ndim > 1) shape[ndim++] = a.rows;
    if (bt->ndim > 1) shape[ndim++] = b.cols;
    ct_tensor *out = ct_tensor_alloc(FN, at->storage->device, at->dtype, shape, ndim);
    if (!out || ct_numel(out) == 0) return out;
    if (a.cols == 0) { /* an empty sum */
        if (ct_tensor_fill(out, 0.0) == CT_OK) return out;
        ct_release(out);
        return NULL;
    }

    ct_status status = ct_dtype_is_floating(at->dtype) ? blas_matmul(&a, &b, out, batch, nbatch)
                                                       : integer_matmul(&a, &b, out, batch, nbatch);
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_status matmul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

ct_tensor *ct_matmul(const ct_tensor *a, const ct_tensor *b)
{
    CT_API_ENTER;
    CT_AUTOCAST2(CT_AUTOCAST_LOWER, ct_matmul(c_[0], c_[1]), a, b)
    ct_tensor *out = matmul(a, b);
    const ct_tensor *inputs[2] = {a, b};
    ct_node *node;
    out = ct_record(out, "MatmulBackward", matmul_backward, inputs, 2, &node);
    if (node && (ct_node_save(node, a) != CT_OK || ct_node_save(node, b) != CT_OK)) {
        ct_release(out);
        out = NULL;
    }
    return ct_api_return(out);
}

/* ---- autograd ----
 * For out = a @ b: grad_a = grad @ b^T and grad_b = a^T @ grad, each summed back over the batch
 * dims its operand was broadcast along. 1-D operands are taken as a row (a) or a column (b), as
 * the forward does. */
static ct_tensor *as_matrix(const ct_tensor *t, int insert_at)
{
    return t->ndim == 1 ? ct_unsqueeze(t, insert_at) : ct_retain((ct_tensor *)t);
}

/* Is the matrix (the last two dims) stored column-major, as a transposed view is? */
static bool column_major(const ct_tensor *m)
{
    int nd = m->ndim;
    return m->shape[nd - 2] > 1 && m->shape[nd - 1] > 1 && m->strides[nd - 2] == 1 &&
           m->strides[nd - 1] >= m->shape[nd - 2];
}

/* The gradient of operand i (0: a, 1: b) before summing over broadcast batch dims. For an
 * operand stored column-major it is computed transposed and seen through a transpose, so that
 * it has the operand's layout: the gradient of a transposed view (Linear's x W^T) then arrives
 * at the tensor under the view contiguous, and nothing downstream (an optimizer step) has to
 * copy it. */
static ct_tensor *operand_gradient(int i, const ct_tensor *a2, const ct_tensor *b2, const ct_tensor *g)
{
    if (column_major(i == 0 ? a2 : b2)) {
        ct_tensor *g_t = ct_transpose(g, -1, -2);
        ct_tensor *product_t = g_t ? (i == 0 ? ct_matmul(b2, g_t) : ct_matmul(g_t, a2)) : NULL;
        ct_tensor *product = product_t ? ct_transpose(product_t, -1, -2) : NULL;
        ct_release(product_t);
        ct_release(g_t);
        return product;
    }
    ct_tensor *other_t = ct_transpose(i == 0 ? b2 : a2, -1, -2);
    ct_tensor *product = other_t ? (i == 0 ? ct_matmul(g, other_t) : ct_matmul(other_t, g)) : NULL;
    ct_release(other_t);
    return product;
}

static ct_status matmul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_tensor *a = node->saved[0], *b = node->saved[1];
    ct_tensor *a2 = as_matrix(a, 0), *b2 = as_matrix(b, -1);
    ct_tensor *g1 = a->ndim == 1 ? ct_unsqueeze(grad, grad->ndim - (b->ndim == 1 ? 0 : 1))
                                 : ct_retain((ct_tensor *)grad);
    ct_tensor *g = (g1 && b->ndim == 1) ? ct_unsqueeze(g1, -1) : ct_retain(g1);
    ct_status status = (a2 && b2 && g) ? CT_OK : ct_last_error();
    for (int i = 0; i < 2 && status == CT_OK; i++) {
        if (!ct_node_needs_grad(node, i)) continue;
        const ct_tensor *operand = i == 0 ? a2 : b2;
        ct_tensor *product = operand_gradient(i, a2, b2, g);
        ct_tensor *summed = product ? ct_sum_to_shape(product, operand->shape, operand->ndim) : NULL;
        const ct_input_meta *meta = &node->inputs[i];
        grads[i] = summed ? ct_reshape(summed, meta->shape, meta->ndim) : NULL;
        if (!grads[i]) status = ct_last_error();
        ct_release(summed);
        ct_release(product);
    }
    ct_release(g);
    ct_release(g1);
    ct_release(b2);
    ct_release(a2);
    return status;
}
