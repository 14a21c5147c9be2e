/* softmax and log_softmax along one dim: a group of work items per row, or an item per tile of
 * rows that lie side by side in memory (see kernels/softmax.ct); the row's max is subtracted before exp so
 * that large inputs do not overflow. */
#include "ops/ops_internal.h"
#include "ops/softmax_backward.h"
#include "ops/work_split.h"
#include "ops/autocast.h"

/* Launches the row kernels of softmax (or log_softmax) of a along d into out. */
static ct_status run_softmax(const ct_tensor *a, int d, bool take_log, ct_tensor *out)
{
    static const ct_kernel_id softmax_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(softmax);
    static const ct_kernel_id log_softmax_kernels[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(log_softmax);
    static const ct_kernel_id softmax_tiles[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(softmax_tile);
    static const ct_kernel_id log_softmax_tiles[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(log_softmax_tile);
    /* The rows: every dim but d (left at size 1, so that the index space skips it). */
    int64_t rows_shape[CT_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++) rows_shape[k] = k == d ? 1 : a->shape[k];
    const int64_t *strides[2] = {out->strides, a->strides};
    ct_kparams p = {0};
    ct_kparams_index_space(&p, rows_shape, a->ndim, 2, strides);
    int64_t length = a->ndim > 0 ? a->shape[d] : 1;
    p.off[0] = out->offset;
    p.off[1] = a->offset;
    p.l[0] = length;
    p.l[1] = length > 1 ? a->strides[d] : 1;
    p.l[2] = length > 1 ? out->strides[d] : 1;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a), NULL, NULL};
    ct_kernel_id kernel = (take_log ? log_softmax_kernels : softmax_kernels)[a->dtype];
    /* Three sweeps of the row, one with an exp per element. */
    long work = 4 * length;
    /* Rows along a dim that is not the innermost, with the innermost row dim contiguous in both
     * tensors: an item takes the device's lanes_per_item adjacent rows, reading and writing
     * contiguous memory. */
    ct_device device = a->storage->device;
    long last = p.ndim - 1;
    if (length > 1 && (p.l[1] != 1 || p.l[2] != 1) && last >= 0 && p.stride[0][last] == 1 &&
        p.stride[1][last] == 1) {
        ct_work_shape shape;
        ct_status status = ct_backend_work_shape(device, &shape);
        if (status != CT_OK) return status;
        long lanes = shape.lanes_per_item;
        kernel = (take_log ? log_softmax_tiles : softmax_tiles)[a->dtype];
        p.n = p.n / p.size[last] * ((p.size[last] + lanes - 1) / lanes);
        return ct_backend_launch(device, kernel, buffers, &p, work * lanes);
    }
    int group_size = 1;
    ct_status status = ct_split_row_groups(device, length, &group_size);
    if (status != CT_OK) return status;
    return ct_backend_launch_groups(device, kernel, buffers, &p, work, group_size);
}

static ct_tensor *softmax_along(const char *function, const ct_tensor *a, int dim, bool take_log)
{
    const char *what = take_log ? "log_softmax" : "softmax";
    if (ct_tensor_unusable(function, "a", a)) return NULL;
    if (!ct_dtype_is_floating(a->dtype))
        return ct_error_null(CT_ERR_DTYPE, "%s: %s is not defined for %s; it needs a floating "
                             "dtype (float32, float64, float16 or bfloat16); convert with "
                             "ct_to_dtype first", function, what, ct_dtype_name(a->dtype));
    int d = 0;
    if (ct_normalize_dim(function, dim, a->ndim, false, &d) != CT_OK) return NULL;
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, a->shape, a->ndim);
    if (out && ct_numel(out) > 0 && run_softmax(a, d, take_log, out) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    ct_node *node;
    out = ct_record(out, take_log ? "LogSoftmaxBackward" : "SoftmaxBackward",
                    take_log ? ct_log_softmax_backward : ct_softmax_backward, &a, 1, &node);
    if (node) {
        node->ints[0] = d;
        if (ct_node_save(node, out) != CT_OK) {
            ct_release(out);
            return NULL;
        }
    }
    return out;
}

ct_tensor *ct_softmax(const ct_tensor *a, int dim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_softmax(c_[0], dim), a)
    return ct_api_return(softmax_along("ct_softmax", a, dim, false));
}

ct_tensor *ct_log_softmax(const ct_tensor *a, int dim)
{
    CT_API_ENTER;
    CT_AUTOCAST1(CT_AUTOCAST_FLOAT32, ct_log_softmax(c_[0], dim), a)
    return ct_api_return(softmax_along("ct_log_softmax", a, dim, true));
}
