/* sort and topk along a dim. A kernel finds each row's stable order (an item per row, a merge
 * sort of the indices: kernels/rows.ct); the values are then gathered through those indices,
 * which records gather's gradient, so the gradient of the values scatters back to the places
 * they came from. NaN is the largest value, as in PyTorch. */
#include "ops/ops_autograd.h"
#include "ops/row_space.h"

/* int64 [a's shape]: the order of each row of a along d (untracked). */
static ct_tensor *sort_order(const char *function, const ct_tensor *a, int d, bool descending)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(sort_indices);
    ct_device device = a->storage->device;
    ct_tensor *order = ct_tensor_alloc(function, device, CT_I64, a->shape, a->ndim);
    if (!order || ct_numel(order) == 0) return order;
    ct_tensor *scratch = ct_tensor_alloc(function, device, CT_I64, a->shape, a->ndim);
    if (!scratch) {
        ct_release(order);
        return NULL;
    }
    ct_kparams p = {0};
    const ct_tensor *operands[3] = {order, a, scratch};
    ct_row_space(&p, operands, 3, d);
    p.l[3] = descending;
    long passes = 1;
    while ((1L << passes) < p.l[0]) passes++;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(order), ct_tensor_handle(a),
                                            ct_tensor_handle(scratch)};
    ct_status status = ct_backend_launch(device, kernels[a->dtype], buffers, &p, 4 * p.l[0] * passes);
    ct_release(scratch);
    if (status != CT_OK) {
        ct_release(order);
        return NULL;
    }
    return order;
}

/* Up to this k, topk selects by insertion (kernels/rows.ct) instead of sorting the whole row:
 * the 50 largest of [16, 50257] float32 took 75 ms sorted, ~6 ms selected (2 busy cores). */
#define CT_TOPK_SELECT_MAX 64

/* int64 [a's shape with k along d]: the first k of each row's order (untracked); k <= size. */
static ct_tensor *topk_order(const char *function, const ct_tensor *a, int d, bool largest, int64_t k)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(topk_indices);
    int64_t shape[CT_MAX_DIMS];
    memcpy(shape, a->shape, (size_t)a->ndim * sizeof *shape);
    shape[d] = k;
    ct_tensor *order = ct_tensor_alloc(function, a->storage->device, CT_I64, shape, a->ndim);
    if (!order || ct_numel(order) == 0) return order;
    /* the row space: every dim but d, where order (k long) and a (size long) differ */
    ct_kparams p = {0};
    int64_t rows_shape[CT_MAX_DIMS];
    for (int j = 0; j < a->ndim; j++) rows_shape[j] = j == d ? 1 : a->shape[j];
    const int64_t *strides[2] = {order->strides, a->strides};
    ct_kparams_index_space(&p, rows_shape, a->ndim, 2, strides);
    p.off[0] = order->offset;
    p.off[1] = a->offset;
    p.l[0] = a->shape[d];
    p.l[1] = a->strides[d];
    p.l[2] = order->strides[d];
    p.l[3] = 2 * k + largest;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(order), ct_tensor_handle(a)};
    if (ct_backend_launch(a->storage->device, kernels[a->dtype], buffers, &p, 4 * p.l[0]) != CT_OK) {
        ct_release(order);
        return NULL;
    }
    return order;
}

/* The dim of a (a 0-dim tensor sorts along its one element, as PyTorch's dim 0 or -1). */
static ct_status sort_dim(const char *function, const ct_tensor *a, int dim, int *d)
{
    if (ct_normalize_dim(function, dim, a->ndim > 0 ? a->ndim : 1, false, d) != CT_OK)
        return ct_last_error();
    if (a->ndim == 0) *d = 0;
    return CT_OK;
}

/* The first k of each row in the order (all of it for k < 0): values gathered from a (with
 * gather's gradient) and, when indices is not NULL, the indices. Untracked. */
static ct_tensor *take_sorted(const char *function, const ct_tensor *a, int d, bool descending,
                              int64_t k, ct_tensor **indices)
{
    int64_t size = a->ndim > 0 ? a->shape[d] : 1;
    if (k >= 0 && k < size && k <= CT_TOPK_SELECT_MAX && a->ndim > 0) {
        ct_tensor *order = topk_order(function, a, d, descending, k);
        ct_tensor *values = order ? ct_gather_trusted(function, a, d, order) : NULL;
        if (values && indices) *indices = order;
        else ct_release(order);
        return values;
    }
    ct_tensor *order = sort_order(function, a, d, descending);
    if (order && k >= 0 && a->ndim > 0) {
        ct_tensor *first = ct_narrow(order, d, 0, k);
        ct_release(order);
        order = first ? ct_contiguous(first) : NULL;
        ct_release(first);
    }
    if (!order) return NULL;
    ct_tensor *values = ct_gather_trusted(function, a, d, order);
    if (values && indices) *indices = order;
    else ct_release(order);
    return values;
}

/* Tracks the second result of a public call in the caller's scope, as ct_api_return tracks the
 * first (only the outermost call records). */
static void return_second(ct_tensor **out, ct_tensor *t)
{
    if (!out) return;
    CT_API_ENTER;
    *out = ct_api_return(t);
}

ct_tensor *ct_sort(const ct_tensor *a, int dim, bool descending, ct_tensor **indices)
{
    CT_API_ENTER;
    const char *function = "ct_sort";
    if (indices) *indices = NULL;
    if (!a) return ct_api_return(ct_null_argument(function, "a"));
    int d = 0;
    if (sort_dim(function, a, dim, &d) != CT_OK) return ct_api_return(NULL);
    ct_tensor *order = NULL;
    ct_tensor *values = ct_api_return(take_sorted(function, a, d, descending, -1, &order));
    return_second(indices, values ? order : NULL);
    if (!indices) ct_release(order);
    return values;
}

ct_tensor *ct_topk(const ct_tensor *a, int64_t k, int dim, bool largest, bool sorted, ct_tensor **indices)
{
    CT_API_ENTER;
    const char *function = "ct_topk";
    (void)sorted; /* always sorted: PyTorch leaves the order unspecified when it is false */
    if (indices) *indices = NULL;
    if (!a) return ct_api_return(ct_null_argument(function, "a"));
    int d = 0;
    if (sort_dim(function, a, dim, &d) != CT_OK) return ct_api_return(NULL);
    int64_t size = a->ndim > 0 ? a->shape[d] : 1;
    if (k < 0 || k > size)
        return ct_api_return(ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: k is %lld; it must be in "
                                           "[0, %lld], the size of dim %d (selected index k out "
                                           "of range)", function, (long long)k, (long long)size, d));
    ct_tensor *order = NULL;
    ct_tensor *values = ct_api_return(take_sorted(function, a, d, largest, k, &order));
    return_second(indices, values ? order : NULL);
    if (!indices) ct_release(order);
    return values;
}
