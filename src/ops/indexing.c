/* Indexing with integer tensors: index_select, gather, one_hot. Index values are checked on
 * the device (a kernel reduces them to a few per-chunk ranges that are read back) before any
 * kernel reads through them, so an index out of range is an error and never a bad read. The
 * gradients of index_select and gather sum the output's gradient back where the index points
 * (scatter_add); the index gets none. */
#include <stdlib.h>

#include "device/capture.h"
#include "ops/ops_autograd.h"
#include "ops/work_split.h"

static bool is_index_dtype(ct_dtype dtype) { return dtype == CT_I64 || dtype == CT_I32; }

static ct_status check_index_dtype(const char *function, const ct_tensor *index)
{
    if (is_index_dtype(index->dtype)) return CT_OK;
    return ct_error(CT_ERR_DTYPE, "%s: index must be int64 or int32, but it is %s", function,
                    ct_dtype_name(index->dtype));
}

/* The smallest and largest value of a non-empty int32/int64 index, computed where it lives. */
ct_status ct_index_value_range(const char *function, const ct_tensor *index, int64_t *lo, int64_t *hi)
{
    int64_t n = ct_numel(index);
    /* chunks by the device's shape: a group of items per chunk (one item on a CPU) */
    ct_device device = index->storage->device;
    ct_status status = ct_capture_refuse(device, true, function, "checks its index values on the host");
    if (status != CT_OK) return status;
    ct_reduce_split split;
    status = ct_split_rows(device, 1, n, &split);
    if (status != CT_OK) return status;
    int64_t chunks = split.chunks;
    int64_t ranges_shape = 2 * chunks;
    ct_tensor *ranges = ct_tensor_alloc(function, device, CT_I64, &ranges_shape, 1);
    int64_t *host = malloc((size_t)ranges_shape * sizeof *host);
    if (!ranges) status = ct_last_error();
    else if (!host)
        status = ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %lld index ranges",
                          function, (long long)chunks);
    if (status == CT_OK) {
        ct_kparams p = {0};
        const int64_t zeros[CT_MAX_DIMS] = {0};
        const int64_t *strides[2] = {zeros, index->strides};
        ct_kparams_index_space(&p, index->shape, index->ndim, 2, strides);
        p.n = chunks;
        p.off[0] = ranges->offset;
        p.off[1] = index->offset;
        p.l[0] = split.chunk;
        p.l[1] = n;
        p.l[2] = ct_is_contiguous(index);
        void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(ranges), ct_tensor_handle(index)};
        ct_kernel_id kernel = index->dtype == CT_I64 ? CT_K_index_range_i64 : CT_K_index_range_i32;
        status = ct_backend_launch_groups(device, kernel, buffers, &p, split.chunk, split.group_size);
    }
    if (status == CT_OK)
        status = ct_tensor_to_array(ranges, host, (size_t)ranges_shape * sizeof *host);
    if (status == CT_OK) {
        *lo = host[0];
        *hi = host[1];
        for (int64_t c = 1; c < chunks; c++) {
            if (host[2 * c] < *lo) *lo = host[2 * c];
            if (host[2 * c + 1] > *hi) *hi = host[2 * c + 1];
        }
    }
    free(host);
    ct_release(ranges);
    return status;
}

/* Every value of a non-empty index in [0, size), or CT_ERR_INDEX naming the bad value. */
static ct_status check_index_values(const char *function, const ct_tensor *index, int dim,
                                    int64_t size)
{
    int64_t lo = 0, hi = 0;
    ct_status status = ct_index_value_range(function, index, &lo, &hi);
    if (status != CT_OK) return status;
    if (lo < 0)
        return ct_error(CT_ERR_INDEX, "%s: index %lld is negative; indices into dim %d must be in "
                        "[0, %lld) (negative indices are not accepted)", function, (long long)lo,
                        dim, (long long)size);
    if (hi >= size)
        return ct_error(CT_ERR_INDEX, "%s: index %lld is out of bounds for dim %d with size %lld "
                        "(valid indices are in [0, %lld))", function, (long long)hi, dim,
                        (long long)size, (long long)size);
    return CT_OK;
}

/* out[...] = a[... index[...] ...] along dim over out's shape; a_strides has 0 at dim. */
static ct_status launch_gather(ct_tensor *out, const ct_tensor *a, int dim,
                               const int64_t *a_strides, const ct_tensor *index,
                               const int64_t *index_strides)
{
    static const ct_kernel_id by_int64[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(gather);
    static const ct_kernel_id by_int32[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(gather_idx32);
    ct_kparams p = {0};
    const int64_t *strides[3] = {out->strides, a_strides, index_strides};
    ct_kparams_index_space(&p, out->shape, out->ndim, 3, strides);
    p.off[0] = out->offset;
    p.off[1] = a->offset;
    p.off[2] = index->offset;
    p.l[0] = a->ndim > 0 ? a->strides[dim] : 0;
    p.l[1] = p.ndim <= 1;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a),
                                            ct_tensor_handle(index)};
    ct_kernel_id kernel = index->dtype == CT_I64 ? by_int64[a->dtype] : by_int32[a->dtype];
    return ct_backend_launch(out->storage->device, kernel, buffers, &p, 1);
}

/* Checks index values against a's size along dim, then gathers into out (released on error). */
static ct_tensor *gather_into(const char *function, ct_tensor *out, const ct_tensor *a, int dim,
                              const int64_t *a_strides, const ct_tensor *index,
                              const int64_t *index_strides)
{
    if (!out || ct_numel(out) == 0) return out;
    int64_t size = a->ndim > 0 ? a->shape[dim] : 1;
    ct_status status = check_index_values(function, index, dim, size);
    if (status == CT_OK) status = launch_gather(out, a, dim, a_strides, index, index_strides);
    if (status != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

static ct_tensor *gather(const ct_tensor *a, int dim, const ct_tensor *index)
{
    const char *function = "ct_gather";
    const ct_tensor *operands[2] = {a, index};
    const char *names[2] = {"a", "index"};
    if (ct_check_operands(function, operands, names, 2) != CT_OK) return NULL;
    if (check_index_dtype(function, index) != CT_OK) return NULL;
    int d = 0;
    if (ct_normalize_dim(function, dim, a->ndim, false, &d) != CT_OK) return NULL;
    char sa[256], si[256];
    ct_shape_format(a->shape, a->ndim, sa, sizeof sa);
    ct_shape_format(index->shape, index->ndim, si, sizeof si);
    if (index->ndim != a->ndim)
        return ct_error_null(CT_ERR_SHAPE, "%s: index has shape %s and a has shape %s; they must "
                             "have the same number of dims", function, si, sa);
    for (int k = 0; k < a->ndim; k++)
        if (k != d && index->shape[k] > a->shape[k])
            return ct_error_null(CT_ERR_SHAPE, "%s: index has shape %s and a has shape %s; the "
                                 "index may not be larger than a in dim %d (%lld > %lld), except "
                                 "in the gathered dim %d", function, si, sa, k,
                                 (long long)index->shape[k], (long long)a->shape[k], d);
    int64_t a_strides[CT_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++) a_strides[k] = k == d ? 0 : a->strides[k];
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, index->shape, index->ndim);
    return gather_into(function, out, a, d, a_strides, index, index->strides);
}

static ct_tensor *index_select(const ct_tensor *a, int dim, const ct_tensor *index)
{
    const char *function = "ct_index_select";
    const ct_tensor *operands[2] = {a, index};
    const char *names[2] = {"a", "index"};
    if (ct_check_operands(function, operands, names, 2) != CT_OK) return NULL;
    if (check_index_dtype(function, index) != CT_OK) return NULL;
    char si[256];
    if (index->ndim > 1)
        return ct_error_null(CT_ERR_SHAPE, "%s: index must be 1-D (or 0-d), but it has shape %s",
                             function, ct_shape_format(index->shape, index->ndim, si, sizeof si));
    int d = 0;
    if (ct_normalize_dim(function, dim, a->ndim, false, &d) != CT_OK) return NULL;
    int64_t count = ct_numel(index);
    if (a->ndim == 0 && count != 1)
        return ct_error_null(CT_ERR_SHAPE, "%s: a is 0-d, so index must have one element, but it "
                             "has shape %s", function,
                             ct_shape_format(index->shape, index->ndim, si, sizeof si));
    /* out has a's shape with `count` in dim d; the index moves along d only. */
    int64_t shape[CT_MAX_DIMS], a_strides[CT_MAX_DIMS], index_strides[CT_MAX_DIMS];
    for (int k = 0; k < a->ndim; k++) {
        shape[k] = k == d ? count : a->shape[k];
        a_strides[k] = k == d ? 0 : a->strides[k];
        index_strides[k] = k == d && index->ndim == 1 ? index->strides[0] : 0;
    }
    ct_tensor *out = ct_tensor_alloc(function, a->storage->device, a->dtype, shape, a->ndim);
    return gather_into(function, out, a, d, a_strides, index, index_strides);
}

static ct_tensor *one_hot(const ct_tensor *index, int64_t num_classes)
{
    const char *function = "ct_one_hot";
    if (!index) return ct_null_argument(function, "index");
    if (check_index_dtype(function, index) != CT_OK) return NULL;
    if (num_classes < -1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: num_classes is %lld; it must be >= 0, "
                             "or -1 to use max(index) + 1", function, (long long)num_classes);
    if (index->ndim + 1 > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_SHAPE, "%s: a %d-d index gives %d dims; ctorch tensors have "
                             "at most %d", function, index->ndim, index->ndim + 1, CT_MAX_DIMS);
    int64_t n = ct_numel(index);
    if (n == 0 && num_classes == -1)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "%s: cannot infer the number of classes "
                             "from an empty index; give num_classes", function);
    if (n > 0) {
        int64_t lo = 0, hi = 0;
        if (ct_index_value_range(function, index, &lo, &hi) != CT_OK) return NULL;
        if (lo < 0)
            return ct_error_null(CT_ERR_INDEX, "%s: class value %lld is negative; class values "
                                 "must be non-negative", function, (long long)lo);
        if (num_classes == -1 && hi == INT64_MAX) /* max(index) + 1 would overflow int64 */
            return ct_error_null(CT_ERR_INDEX, "%s: class value %lld would need %lld + 1 classes, "
                                 "more than a tensor can hold", function, (long long)hi, (long long)hi);
        if (num_classes == -1) num_classes = hi + 1;
        if (hi >= num_classes)
            return ct_error_null(CT_ERR_INDEX, "%s: class value %lld is out of range for "
                                 "num_classes %lld (values must be in [0, %lld))", function,
                                 (long long)hi, (long long)num_classes, (long long)num_classes);
    }
    int64_t shape[CT_MAX_DIMS];
    for (int k = 0; k < index->ndim; k++) shape[k] = index->shape[k];
    shape[index->ndim] = num_classes;
    ct_tensor *out = ct_tensor_alloc(function, index->storage->device, CT_I64, shape, index->ndim + 1);
    if (!out || ct_numel(out) == 0) return out;

    ct_kparams p = {0};
    const int64_t zeros[CT_MAX_DIMS] = {0};
    const int64_t *strides[2] = {zeros, index->strides};
    ct_kparams_index_space(&p, index->shape, index->ndim, 2, strides);
    p.n = ct_numel(out);
    p.off[0] = out->offset;
    p.off[1] = index->offset;
    p.l[0] = num_classes;
    p.l[1] = ct_is_contiguous(index);
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(index)};
    ct_kernel_id kernel = index->dtype == CT_I64 ? CT_K_one_hot_i64 : CT_K_one_hot_i32;
    if (ct_backend_launch(out->storage->device, kernel, buffers, &p, 1) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

/* ---- autograd ----
 * The node saves the index and keeps the gathered dim of a in ints[0] (ints[1] = 1 for
 * index_select, whose index is 1-D and moves along that dim only). */

/* grad_a[...] over `region` (grad_a itself, or the part of it that gather's index reaches) =
 * the sum of grad over the positions along dim whose index value is the element's position
 * there. index and grad strides are given with 0 along dim; the kernel walks it. */
static ct_status launch_scatter_add(ct_tensor *region, int dim, const ct_tensor *grad,
                                    const int64_t *grad_strides, const ct_tensor *index,
                                    const int64_t *index_strides, int64_t count,
                                    int64_t index_step)
{
    static const ct_kernel_id by_int64[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(scatter_add);
    static const ct_kernel_id by_int32[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(scatter_add_idx32);
    ct_kernel_id kernel = (index->dtype == CT_I64 ? by_int64 : by_int32)[region->dtype];
    if (kernel == CT_K_NONE)
        return ct_error(CT_ERR_DTYPE, "ct_backward: the gradient of gathering is computed in float32, "
                        "float64, float16 or bfloat16, not %s", ct_dtype_name(region->dtype));
    int64_t position[CT_MAX_DIMS] = {0};
    if (region->ndim > 0) position[dim] = 1;
    ct_kparams p = {0};
    const int64_t *strides[4] = {region->strides, grad_strides, index_strides, position};
    ct_kparams_index_space(&p, region->shape, region->ndim, 4, strides);
    p.off[0] = region->offset;
    p.off[1] = grad->offset;
    p.off[2] = index->offset;
    p.l[0] = p.ndim <= 1;
    p.l[1] = count;
    p.l[2] = grad->ndim > 0 ? grad->strides[dim] : 0;
    p.l[3] = index_step;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(region), ct_tensor_handle(grad),
                                            ct_tensor_handle(index)};
    return ct_backend_launch(region->storage->device, kernel, buffers, &p, count > 0 ? count : 1);
}

/* index_select's gradient along dim 0 into grad_a (new, contiguous): an item per row of grad_a and
 * the device's lanes of columns (select_rows_backward; the sums scatter_add makes). */
static ct_status launch_select_rows_backward(ct_tensor *grad_a, const ct_tensor *grad, const ct_tensor *index)
{
    static const ct_kernel_id by_int64[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(select_rows_backward);
    static const ct_kernel_id by_int32[CT_DTYPE_COUNT] =
        CT_KERNELS_BY_FLOAT_OR_HALF_DTYPE(select_rows_backward_idx32);
    ct_kernel_id kernel = (index->dtype == CT_I64 ? by_int64 : by_int32)[grad_a->dtype];
    if (kernel == CT_K_NONE)
        return ct_error(CT_ERR_DTYPE, "ct_backward: the gradient of gathering is computed in float32, "
                        "float64, float16 or bfloat16, not %s", ct_dtype_name(grad_a->dtype));
    ct_device device = grad_a->storage->device;
    ct_work_shape shape;
    ct_status status = ct_backend_work_shape(device, &shape);
    ct_tensor *g = status == CT_OK ? ct_contiguous(grad) : NULL;
    if (!g) return ct_last_error();
    int64_t rows = grad_a->shape[0], cols = rows > 0 ? ct_numel(grad_a) / rows : 0;
    int64_t lanes = shape.lanes_per_item > 0 ? shape.lanes_per_item : 1;
    ct_kparams p = {0};
    p.n = (long)(rows * ((cols + lanes - 1) / lanes));
    p.off[0] = (long)grad_a->offset;
    p.off[1] = (long)g->offset;
    p.off[2] = (long)index->offset;
    p.l[0] = (long)index->shape[0];
    p.l[1] = (long)cols;
    p.l[3] = (long)index->strides[0];
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(grad_a), ct_tensor_handle(g), ct_tensor_handle(index)};
    status = p.n > 0 ? ct_backend_launch(device, kernel, buffers, &p, (long)index->shape[0]) : CT_OK;
    ct_release(g);
    return status;
}

static ct_status gathering_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    const ct_input_meta *in = &node->inputs[0];
    const ct_tensor *index = node->saved[0];
    int d = (int)node->ints[0];
    bool selecting = node->ints[1];
    ct_tensor *grad_a = ct_zeros(in->shape, in->ndim, in->dtype, in->device);
    if (!grad_a) return ct_last_error();
    if (selecting && d == 0 && in->ndim >= 1 && index->ndim == 1) {
        ct_status status = launch_select_rows_backward(grad_a, grad, index);
        if (status != CT_OK) {
            ct_release(grad_a);
            return status;
        }
        grads[0] = grad_a;
        return CT_OK;
    }
    /* gather's index may be smaller than a in the other dims: only that part gets gradient. */
    int64_t region_shape[CT_MAX_DIMS], grad_strides[CT_MAX_DIMS], index_strides[CT_MAX_DIMS];
    for (int k = 0; k < in->ndim; k++) {
        region_shape[k] = k == d || selecting ? in->shape[k] : index->shape[k];
        grad_strides[k] = k == d ? 0 : grad->strides[k];
        index_strides[k] = k == d || selecting ? 0 : index->strides[k];
    }
    int64_t count = in->ndim == 0 ? 1 : grad->shape[d];
    int64_t index_step = selecting ? (index->ndim == 1 ? index->strides[0] : 0)
                                   : (index->ndim > 0 ? index->strides[d] : 0);
    ct_tensor *region = ct_tensor_view_of(grad_a, in->ndim, region_shape, grad_a->strides, grad_a->offset);
    ct_status status = region ? CT_OK : ct_last_error();
    if (status == CT_OK && ct_numel(region) > 0)
        status = launch_scatter_add(region, d, grad, grad_strides, index, index_strides, count, index_step);
    ct_release(region);
    if (status != CT_OK) {
        ct_release(grad_a);
        return status;
    }
    grads[0] = grad_a;
    return CT_OK;
}

/* out's node (a's gradient only), saving the index. */
static ct_tensor *record_gathering(ct_tensor *out, const char *name, const ct_tensor *a, int dim,
                                   const ct_tensor *index, bool selecting)
{
    ct_node *node;
    const ct_tensor *inputs[1] = {a};
    out = ct_record(out, name, gathering_backward, inputs, 1, &node);
    if (!node) return out;
    node->ints[0] = a->ndim == 0 ? 0 : (dim < 0 ? dim + a->ndim : dim);
    node->ints[1] = selecting;
    if (ct_node_save(node, index) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

ct_tensor *ct_gather(const ct_tensor *a, int dim, const ct_tensor *index)
{
    CT_API_ENTER;
    ct_tensor *out = gather(a, dim, index);
    return ct_api_return(record_gathering(out, "GatherBackward", a, dim, index, false));
}

ct_tensor *ct_index_select(const ct_tensor *a, int dim, const ct_tensor *index)
{
    CT_API_ENTER;
    ct_tensor *out = index_select(a, dim, index);
    return ct_api_return(record_gathering(out, "IndexSelectBackward", a, dim, index, true));
}

ct_tensor *ct_one_hot(const ct_tensor *index, int64_t num_classes)
{
    CT_API_ENTER;
    return ct_api_return(one_hot(index, num_classes));
}
