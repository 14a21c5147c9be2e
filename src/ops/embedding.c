/* torch.nn.functional.embedding: the rows of weight [V, C] that the indices name, [..., C]. The
 * indices are checked on the device and their range read back before any row is read, as
 * ct_index_select does (indexing.c); a kernel then copies the rows, a vector of a row per item. The weight's gradient has an owner
 * per row (kernels/embedding.ct): the indices are sorted stably into rows (a counting sort),
 * then each row adds the output's gradient rows that picked it in the order of the indices,
 * with no atomics, so the sums are the same bits run to run and on every device, in O(N C + V C)
 * work. The row at padding_idx gets no gradient. */
#include "backend/backend.h"
#include "device/capture.h"
#include "ops/ops_autograd.h"

static const char *const FN = "ct_embedding";

static ct_status check_arguments(const ct_tensor *weight, const ct_tensor *indices, int64_t padding_idx)
{
    if (!weight) return ct_null_argument(FN, "weight"), ct_last_error();
    if (!indices) return ct_null_argument(FN, "indices"), ct_last_error();
    const ct_tensor *operands[2] = {weight, indices};
    const char *names[2] = {"weight", "indices"};
    ct_status status = ct_check_operands(FN, operands, names, 2);
    if (status != CT_OK) return status;
    char sw[256];
    if (weight->ndim != 2)
        return ct_error(CT_ERR_SHAPE, "%s: weight must be 2-D [num_embeddings, embedding_dim], but "
                        "it has shape %s", FN, ct_shape_format(weight->shape, weight->ndim, sw, sizeof sw));
    if (!ct_dtype_is_floating(weight->dtype))
        return ct_error(CT_ERR_DTYPE, "%s: weight must be floating (float32, float64, float16 or "
                        "bfloat16), but it is %s", FN, ct_dtype_name(weight->dtype));
    if (indices->dtype != CT_I64 && indices->dtype != CT_I32)
        return ct_error(CT_ERR_DTYPE, "%s: indices must be int64 or int32, but they are %s", FN,
                        ct_dtype_name(indices->dtype));
    if (indices->ndim + 1 > CT_MAX_DIMS)
        return ct_error(CT_ERR_SHAPE, "%s: indices have %d dims; the output adds one, and tensors "
                        "have at most %d", FN, indices->ndim, CT_MAX_DIMS);
    int64_t v = weight->shape[0];
    if (padding_idx != -1 && (padding_idx < 0 || padding_idx >= v))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: padding_idx %lld is not a row of weight: it "
                        "must be in [0, %lld), or -1 for none (PyTorch's negative padding_idx "
                        "counting from the end is written here as %lld + padding_idx)", FN,
                        (long long)padding_idx, (long long)v, (long long)v);
    return CT_OK;
}

static ct_status launch(ct_kernel_id kernel, ct_kparams *p, ct_tensor *const *tensors, long work)
{
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {NULL};
    for (int i = 0; i < CT_KERNEL_MAX_BUFFERS; i++) {
        buffers[i] = ct_tensor_handle(tensors[i]);
        p->off[i] = (long)tensors[i]->offset;
    }
    return ct_backend_launch(tensors[0]->storage->device, kernel, buffers, p, work);
}

/* grad_w [V, C] (new) from the upstream rows g [N, C] (contiguous) and the flat indices: a
 * stable counting sort of the indices into rows, then an item per row and lanes of columns
 * (kernels/embedding.ct). */
static ct_status weight_gradient(ct_tensor *grad_w, const ct_tensor *g, const ct_tensor *flat,
                                 int64_t padding_idx)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(embedding_backward);
    const char *function = "EmbeddingBackward";
    ct_device device = grad_w->storage->device;
    int64_t n = ct_numel(flat), v = grad_w->shape[0], c = grad_w->shape[1], rows = v + 1;
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    if (kernels[grad_w->dtype] == CT_K_NONE)
        return ct_error(CT_ERR_DTYPE, "%s: the gradient is computed in float32, float64, float16 or "
                        "bfloat16, not %s", function, ct_dtype_name(grad_w->dtype));
    ct_tensor *order = ct_tensor_alloc(function, device, CT_I64, n > 0 ? &n : &rows, 1);
    ct_tensor *offsets = order ? ct_tensor_alloc(function, device, CT_I64, &rows, 1) : NULL;
    ct_tensor *cursor = offsets ? ct_tensor_alloc(function, device, CT_I64, &v, 1) : NULL;
    status = cursor ? CT_OK : ct_last_error();
    if (status == CT_OK) {
        ct_kparams p = {0};
        p.n = 1;
        p.l[0] = (long)n;
        p.l[1] = (long)v;
        ct_tensor *sort[4] = {order, (ct_tensor *)flat, offsets, cursor};
        status = launch(flat->dtype == CT_I64 ? CT_K_embedding_sort_i64 : CT_K_embedding_sort_i32,
                        &p, sort, (long)(2 * (n + v)));
    }
    if (status == CT_OK) {
        long lanes = shape.lanes_per_item > 0 ? shape.lanes_per_item : 1;
        ct_kparams p = {0};
        p.n = (long)(v * ((c + lanes - 1) / lanes));
        p.l[0] = (long)c;
        p.l[1] = (long)padding_idx;
        ct_tensor *sums[4] = {grad_w, (ct_tensor *)g, order, offsets};
        /* each row reads its share of the N upstream rows */
        status = launch(kernels[grad_w->dtype], &p, sums, (long)(lanes * (n / (v > 0 ? v : 1) + 1)));
    }
    ct_release(cursor);
    ct_release(offsets);
    ct_release(order);
    return status;
}

/* saved[0] = the indices, flat and contiguous; ints[0] = padding_idx. */
static ct_status embedding_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    const ct_tensor *flat = node->saved[0];
    int64_t count = ct_numel(flat), rows_shape[2] = {count, in->shape[1]};
    ct_tensor *grad_w = in->shape[0] * in->shape[1] > 0 && count > 0
                            ? ct_tensor_alloc("EmbeddingBackward", in->device, in->dtype, in->shape, in->ndim)
                            : ct_zeros(in->shape, in->ndim, in->dtype, in->device);
    ct_tensor *rows = grad_w ? ct_reshape(grad, rows_shape, 2) : NULL;
    ct_tensor *g = rows ? ct_contiguous(rows) : NULL;
    ct_status status = g ? CT_OK : ct_last_error();
    if (status == CT_OK && count > 0 && ct_numel(grad_w) > 0)
        status = weight_gradient(grad_w, g, flat, node->ints[0]);
    ct_release(g);
    ct_release(rows);
    if (status != CT_OK) {
        ct_release(grad_w);
        return status;
    }
    grads[0] = grad_w;
    return CT_OK;
}

/* out [N, C] (new, contiguous) = the rows of weight that the flat contiguous indices name. */
static ct_status gather_rows(ct_tensor *out, const ct_tensor *weight, const ct_tensor *flat)
{
    static const ct_kernel_id by_int64[CT_DTYPE_COUNT] = CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(embedding_forward);
    static const ct_kernel_id by_int32[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(embedding_forward_idx32);
    ct_device device = weight->storage->device;
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    if (status != CT_OK) return status;
    int64_t lo = 0, hi = 0, v = weight->shape[0], c = weight->shape[1];
    /* A graph capture cannot wait for the values: the kernel then gives NaN rows for indices out
     * of range (as cross-entropy's NaN loss) and reads nothing out of bounds. */
    if (!ct_capture_joined(device)) status = ct_index_value_range(FN, flat, &lo, &hi);
    if (status != CT_OK) return status;
    if (lo < 0 || hi >= v)
        return ct_error(CT_ERR_INDEX, "%s: index %lld is out of range for weight with %lld rows "
                        "(valid indices are in [0, %lld))", FN, (long long)(lo < 0 ? lo : hi),
                        (long long)v, (long long)v);
    long lanes = shape.lanes_per_item > 0 ? shape.lanes_per_item : 1;
    ct_kparams p = {0};
    p.n = (long)(ct_numel(flat) * ((c + lanes - 1) / lanes));
    p.l[0] = (long)c;
    p.l[1] = (long)weight->strides[0];
    p.l[2] = (long)weight->strides[1];
    p.l[3] = (long)v;
    ct_tensor *operands[4] = {out, (ct_tensor *)weight, (ct_tensor *)flat, NULL};
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {NULL};
    for (int i = 0; i < 3; i++) {
        buffers[i] = ct_tensor_handle(operands[i]);
        p.off[i] = (long)operands[i]->offset;
    }
    ct_kernel_id kernel = (flat->dtype == CT_I64 ? by_int64 : by_int32)[weight->dtype];
    return ct_backend_launch(device, kernel, buffers, &p, lanes);
}

ct_tensor *ct_embedding(const ct_tensor *weight, const ct_tensor *indices, int64_t padding_idx)
{
    CT_API_ENTER;
    if (check_arguments(weight, indices, padding_idx) != CT_OK) return ct_api_return(NULL);
    int64_t count = ct_numel(indices), c = weight->shape[1];
    int64_t shape[CT_MAX_DIMS], rows_shape[2] = {count, c};
    for (int k = 0; k < indices->ndim; k++) shape[k] = indices->shape[k];
    shape[indices->ndim] = c;
    ct_no_grad_push();
    ct_tensor *flat = ct_reshape(indices, &count, 1);
    ct_tensor *contiguous = flat ? ct_contiguous(flat) : NULL;
    ct_tensor *rows = contiguous ? ct_tensor_alloc(FN, weight->storage->device, weight->dtype, rows_shape, 2)
                                 : NULL;
    if (rows && ct_numel(rows) > 0 && gather_rows(rows, weight, contiguous) != CT_OK) {
        ct_release(rows);
        rows = NULL;
    }
    ct_tensor *out = rows ? ct_reshape(rows, shape, indices->ndim + 1) : NULL;
    ct_no_grad_pop();
    ct_release(rows);
    ct_release(flat);
    ct_node *node;
    out = ct_record(out, "EmbeddingBackward", embedding_backward, &weight, 1, &node);
    if (node) {
        node->ints[0] = padding_idx;
        if (ct_node_save(node, contiguous) != CT_OK) {
            ct_release(out);
            out = NULL;
        }
    }
    ct_release(contiguous);
    return ct_api_return(out);
}
