/* torch.nn.functional.embedding: the rows of weight [V, C] that the indices name, [..., C]. The
 * indices are checked on the device and their range read back before any row is read, as
 * ct_index_select does (indexing.c), whose gather this is. The weight's gradient has an owner
 * per row (ct_select_rows_backward): each row adds the output's gradient rows that picked it in
 * the order of the indices, with no atomics, so the sums are the same bits run to run and on
 * every device. The row at padding_idx gets no gradient. */
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

/* saved[0] = the indices, flat and contiguous; ints[0] = padding_idx. */
static ct_status embedding_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    const ct_tensor *flat = node->saved[0];
    int64_t padding_idx = node->ints[0], count = ct_numel(flat);
    ct_tensor *grad_w = ct_zeros(in->shape, in->ndim, in->dtype, in->device);
    int64_t rows_shape[2] = {count, in->shape[1]};
    ct_tensor *rows = grad_w ? ct_reshape(grad, rows_shape, 2) : NULL;
    ct_status status = rows ? CT_OK : ct_last_error();
    if (status == CT_OK && count > 0 && in->shape[1] > 0)
        status = ct_select_rows_backward(grad_w, rows, flat);
    if (status == CT_OK && padding_idx >= 0) {
        ct_tensor *row = ct_narrow(grad_w, 0, padding_idx, 1);
        status = row ? ct_tensor_fill(row, 0.0) : ct_last_error();
        ct_release(row);
    }
    ct_release(rows);
    if (status != CT_OK) {
        ct_release(grad_w);
        return status;
    }
    grads[0] = grad_w;
    return CT_OK;
}

ct_tensor *ct_embedding(const ct_tensor *weight, const ct_tensor *indices, int64_t padding_idx)
{
    CT_API_ENTER;
    if (check_arguments(weight, indices, padding_idx) != CT_OK) return ct_api_return(NULL);
    int64_t count = ct_numel(indices), c = weight->shape[1];
    int64_t shape[CT_MAX_DIMS];
    for (int k = 0; k < indices->ndim; k++) shape[k] = indices->shape[k];
    shape[indices->ndim] = c;
    ct_no_grad_push();
    ct_tensor *flat = ct_reshape(indices, &count, 1);
    ct_tensor *contiguous = flat ? ct_contiguous(flat) : NULL;
    ct_tensor *picked = contiguous ? ct_index_select(weight, 0, contiguous) : NULL;
    ct_tensor *out = picked ? ct_reshape(picked, shape, indices->ndim + 1) : NULL;
    ct_no_grad_pop();
    ct_release(picked);
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
