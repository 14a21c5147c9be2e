/* The mechanics of the views of a part of a tensor along one dim: narrow, slice, select, and
 * the plans of the lists of such parts that chunk and split return. All share t's storage. The
 * public, differentiable functions are in src/ops/views.c. */
#include "tensor/view_internal.h"

/* The dim of t that an op on one dim works on; 0-d tensors have none. */
static ct_status dim_of(const char *function, const ct_tensor *t, int dim, int *out)
{
    if (t->ndim == 0)
        return ct_error(CT_ERR_INDEX, "%s: a 0-d tensor has no dim to take part of; it needs at "
                        "least 1 dim", function);
    return ct_normalize_dim(function, dim, t->ndim, false, out);
}

/* t with dim d replaced by `length` elements from `start` every `step`. */
static ct_tensor *part_of(const ct_tensor *t, int d, int64_t start, int64_t length, int64_t step)
{
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) {
        shape[k] = t->shape[k];
        strides[k] = t->strides[k];
    }
    shape[d] = length;
    strides[d] = t->strides[d] * step;
    return ct_tensor_view_of(t, t->ndim, shape, strides, t->offset + start * t->strides[d]);
}

ct_tensor *ct_tensor_narrow_view(const char *function, const ct_tensor *t, int dim, int64_t start,
                                 int64_t length)
{
    if (ct_tensor_unusable(function, "t", t)) return NULL;
    int d;
    if (dim_of(function, t, dim, &d) != CT_OK) return NULL;
    int64_t size = t->shape[d];
    if (start < -size || start > size)
        return ct_error_null(CT_ERR_INDEX, "%s: start %lld is out of range for dim %d of size %lld; "
                             "use %lld to %lld", function, (long long)start, d, (long long)size,
                             (long long)-size, (long long)size);
    if (start < 0) start += size;
    if (length < 0)
        return ct_error_null(CT_ERR_SHAPE, "%s: length %lld is negative; it must be >= 0", function,
                             (long long)length);
    if (length > size - start)
        return ct_error_null(CT_ERR_INDEX, "%s: start %lld + length %lld exceeds the size %lld of "
                             "dim %d", function, (long long)start, (long long)length, (long long)size, d);
    return part_of(t, d, start, length, 1);
}

/* Python's rule for a slice bound: negative counts from the end, then clamp to [0, size]. */
static int64_t clamp_bound(int64_t bound, int64_t size)
{
    if (bound < 0) bound += size;
    if (bound < 0) return 0;
    return bound > size ? size : bound;
}

ct_tensor *ct_tensor_slice_view(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step)
{
    if (ct_tensor_unusable("ct_slice", "t", t)) return NULL;
    int d;
    if (dim_of("ct_slice", t, dim, &d) != CT_OK) return NULL;
    if (step <= 0)
        return ct_error_null(CT_ERR_INVALID_ARGUMENT, "ct_slice: step %lld is not positive; slice "
                             "steps must be > 0", (long long)step);
    int64_t size = t->shape[d];
    start = clamp_bound(start, size);
    end = clamp_bound(end, size);
    int64_t length = end > start ? (end - start - 1) / step + 1 : 0;
    return part_of(t, d, start, length, step);
}

ct_tensor *ct_tensor_select_view(const ct_tensor *t, int dim, int64_t index)
{
    if (ct_tensor_unusable("ct_select", "t", t)) return NULL;
    int d;
    if (dim_of("ct_select", t, dim, &d) != CT_OK) return NULL;
    int64_t size = t->shape[d];
    if (index < -size || index >= size) {
        char shape[256];
        return ct_error_null(CT_ERR_INDEX, "ct_select: index %lld is out of range for dim %d of size "
                             "%lld (tensor shape %s); use %lld to %lld", (long long)index, d,
                             (long long)size, ct_shape_format(t->shape, t->ndim, shape, sizeof shape),
                             (long long)-size, (long long)size - 1);
    }
    if (index < 0) index += size;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int ndim = 0;
    for (int k = 0; k < t->ndim; k++) {
        if (k == d) continue;
        shape[ndim] = t->shape[k];
        strides[ndim++] = t->strides[k];
    }
    return ct_tensor_view_of(t, ndim, shape, strides, t->offset + index * t->strides[d]);
}

/* ---- lists of parts ---- */

/* The plan of `count` parts of split_size (the last one last_size) along dim d, when out has
 * room for them. */
static ct_status make_plan(const char *function, int d, int64_t split_size, int64_t last_size,
                           int64_t count, int capacity, ct_split_plan *plan)
{
    if (count > capacity)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: the result has %lld tensors but out has room "
                        "for %d; pass a capacity of at least %lld", function, (long long)count,
                        capacity, (long long)count);
    *plan = (ct_split_plan){.dim = d, .split_size = split_size, .last_size = last_size, .count = count};
    return CT_OK;
}

ct_tensor *ct_tensor_split_part(const ct_tensor *t, const ct_split_plan *plan, int64_t i)
{
    return part_of(t, plan->dim, i * plan->split_size,
                   i + 1 < plan->count ? plan->split_size : plan->last_size, 1);
}

/* NULL checks and the dim for chunk and split. */
static ct_status list_arguments(const char *function, const ct_tensor *t, int dim, ct_tensor **out,
                                int *count, int *d)
{
    if (count) *count = 0;
    if (ct_tensor_unusable(function, "t", t)) return ct_last_error();
    if (!out) return ct_null_argument(function, "out"), ct_last_error();
    if (!count) return ct_null_argument(function, "count"), ct_last_error();
    if (t->ndim == 0)
        return ct_error(CT_ERR_SHAPE, "%s: expects at least a 1-d tensor, got a 0-d one", function);
    return ct_normalize_dim(function, dim, t->ndim, false, d);
}

ct_status ct_tensor_split_plan(const ct_tensor *t, int64_t split_size, int dim, ct_tensor **out,
                               int capacity, int *count, ct_split_plan *plan)
{
    int d;
    ct_status status = list_arguments("ct_split", t, dim, out, count, &d);
    if (status != CT_OK) return status;
    int64_t size = t->shape[d];
    if (split_size < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_split: split_size %lld is negative; it must be "
                        "> 0", (long long)split_size);
    if (split_size == 0 && size > 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_split: split_size 0 is only allowed when the "
                        "dim has size 0, but dim %d has size %lld", d, (long long)size);
    int64_t parts = 1;
    if (split_size > 0) parts = size > 0 ? (size - 1) / split_size + 1 : 1;
    int64_t last = size - split_size * (parts - 1);
    return make_plan("ct_split", d, split_size, last, parts, capacity, plan);
}

ct_status ct_tensor_chunk_plan(const ct_tensor *t, int chunks, int dim, ct_tensor **out,
                               int capacity, int *count, ct_split_plan *plan)
{
    int d;
    ct_status status = list_arguments("ct_chunk", t, dim, out, count, &d);
    if (status != CT_OK) return status;
    if (chunks <= 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_chunk: chunks must be > 0, got %d", chunks);
    int64_t size = t->shape[d];
    /* An empty dim still gives `chunks` empty parts, as torch.chunk does. */
    if (size == 0) return make_plan("ct_chunk", d, 0, 0, chunks, capacity, plan);
    int64_t split_size = (size + chunks - 1) / chunks;
    int64_t parts = (size - 1) / split_size + 1;
    int64_t last = size - split_size * (parts - 1);
    return make_plan("ct_chunk", d, split_size, last, parts, capacity, plan);
}
