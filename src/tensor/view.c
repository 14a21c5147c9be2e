/* The mechanics of the views that change the geometry of a whole tensor: reshape/view, flatten,
 * expand, transpose, permute, squeeze, unsqueeze. Each shares t's storage (reshape and flatten
 * copy only when no strides can express the new shape, as torch.reshape does). The public,
 * differentiable functions are in src/ops/views.c. */
#include <string.h>

#include "tensor/view_internal.h"

/* ---- reshape and view ---- */

/* The shape with its one -1 resolved against numel (PyTorch's infer_size), or an error. */
static ct_status infer_shape(const char *function, const ct_tensor *t, const int64_t *shape,
                             int ndim, int64_t *out)
{
    char asked[256], have[256];
    if (ndim < 0 || ndim > CT_MAX_DIMS)
        return ct_error(CT_ERR_SHAPE, "%s: %d dims asked; ctorch tensors have 0 to %d dims",
                        function, ndim, CT_MAX_DIMS);
    if (ndim > 0 && !shape) return ct_null_argument(function, "shape"), ct_last_error();
    int inferred = -1;
    int64_t known = 1;
    bool overflow = false;
    for (int d = 0; d < ndim; d++) {
        out[d] = shape[d];
        if (shape[d] == -1) {
            if (inferred >= 0)
                return ct_error(CT_ERR_SHAPE, "%s: shape %s has -1 in dims %d and %d; only one "
                                "dimension can be inferred", function,
                                ct_shape_format(shape, ndim, asked, sizeof asked), inferred, d);
            inferred = d;
        } else if (shape[d] < 0) {
            return ct_error(CT_ERR_SHAPE, "%s: shape %s has the invalid size %lld in dim %d; sizes "
                            "must be >= 0 (or -1 once, to infer it)", function,
                            ct_shape_format(shape, ndim, asked, sizeof asked), (long long)shape[d], d);
        } else {
            overflow = overflow || (shape[d] > 0 && known > INT64_MAX / shape[d]);
            known = overflow ? known : known * shape[d];
        }
    }
    int64_t numel = ct_numel(t);
    if (!overflow && inferred >= 0 && known == 0 && numel == 0)
        return ct_error(CT_ERR_SHAPE, "%s: cannot reshape a tensor of %lld elements (shape %s) into "
                        "shape %s because the unspecified size -1 can be any value and is ambiguous",
                        function, (long long)numel, ct_shape_format(t->shape, t->ndim, have, sizeof have),
                        ct_shape_format(shape, ndim, asked, sizeof asked));
    if (!overflow && inferred >= 0 && known > 0 && numel % known == 0) {
        out[inferred] = numel / known;
        return CT_OK;
    }
    if (!overflow && inferred < 0 && known == numel) return CT_OK;
    char count[64] = "more than 2^63";
    if (!overflow) snprintf(count, sizeof count, inferred >= 0 ? "a multiple of %lld" : "%lld", (long long)known);
    return ct_error(CT_ERR_SHAPE, "%s: shape %s is invalid for an input of shape %s: it holds %s "
                    "elements, the input has %lld", function,
                    ct_shape_format(shape, ndim, asked, sizeof asked),
                    ct_shape_format(t->shape, t->ndim, have, sizeof have), count, (long long)numel);
}

/* Strides that show t's elements in `shape` without moving them, when such strides exist
 * (PyTorch's computeStride: each run of dims that is contiguous in t must map onto a run of
 * the new dims with the same number of elements). */
static bool view_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides)
{
    if (t->ndim == 0) {
        for (int d = 0; d < ndim; d++) strides[d] = 1;
        return true;
    }
    int64_t numel = ct_numel(t);
    if (numel == 0) {
        if (ndim == t->ndim && memcmp(shape, t->shape, sizeof(int64_t) * (size_t)ndim) == 0) {
            memcpy(strides, t->strides, sizeof(int64_t) * (size_t)ndim);
        } else {
            ct_contiguous_strides(shape, ndim, strides);
        }
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base_stride = t->strides[t->ndim - 1];
    int64_t tensor_numel = 1, view_numel = 1;
    for (int tensor_d = t->ndim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= t->shape[tensor_d];
        bool chunk_ends = tensor_d == 0 || (t->shape[tensor_d - 1] != 1 &&
                                            t->strides[tensor_d - 1] != tensor_numel * chunk_base_stride);
        if (!chunk_ends) continue;
        while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
            strides[view_d] = view_numel * chunk_base_stride;
            view_numel *= shape[view_d];
            view_d--;
        }
        if (view_numel != tensor_numel) return false;
        if (tensor_d > 0) {
            chunk_base_stride = t->strides[tensor_d - 1];
            tensor_numel = 1;
            view_numel = 1;
        }
    }
    return view_d == -1;
}

ct_tensor *ct_tensor_reshape_view(const char *function, const ct_tensor *t, const int64_t *shape,
                                  int ndim, bool copy_allowed)
{
    if (ct_tensor_unusable(function, "t", t)) return NULL;
    int64_t sizes[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    if (infer_shape(function, t, shape, ndim, sizes) != CT_OK) return NULL;
    if (view_strides(t, sizes, ndim, strides))
        return ct_tensor_view_of(t, ndim, sizes, strides, t->offset);
    if (!copy_allowed) {
        char asked[256], have[256], stride[256];
        return ct_error_null(CT_ERR_SHAPE, "%s: view size %s is not compatible with input tensor's "
                             "size %s and stride %s (at least one dimension spans across two "
                             "contiguous subspaces); use ct_reshape instead, which copies when it must",
                             function, ct_shape_format(sizes, ndim, asked, sizeof asked),
                             ct_shape_format(t->shape, t->ndim, have, sizeof have),
                             ct_shape_format(t->strides, t->ndim, stride, sizeof stride));
    }
    ct_tensor *copy = ct_tensor_alloc(function, t->storage->device, t->dtype, sizes, ndim);
    if (copy) {
        /* A contiguous copy in t's shape, then seen in the new one. */
        int64_t contiguous[CT_MAX_DIMS];
        ct_contiguous_strides(t->shape, t->ndim, contiguous);
        ct_tensor *same_shape = ct_tensor_view_of(copy, t->ndim, t->shape, contiguous, copy->offset);
        ct_status status = same_shape ? ct_tensor_copy_into(same_shape, t) : ct_last_error();
        ct_release(same_shape);
        if (status != CT_OK) {
            ct_release(copy);
            copy = NULL;
        }
    }
    return copy;
}

ct_tensor *ct_tensor_flatten_view(const ct_tensor *t, int start_dim, int end_dim)
{
    if (ct_tensor_unusable("ct_flatten", "t", t)) return NULL;
    int start, end;
    if (ct_normalize_dim("ct_flatten", start_dim, t->ndim, false, &start) != CT_OK ||
        ct_normalize_dim("ct_flatten", end_dim, t->ndim, false, &end) != CT_OK)
        return NULL;
    if (t->ndim == 0) return ct_tensor_reshape_view("ct_flatten", t, (const int64_t[]){1}, 1, true);
    if (start > end)
        return ct_error_null(CT_ERR_INDEX, "ct_flatten: start_dim %d (dim %d) comes after end_dim %d "
                             "(dim %d); start_dim must not come after end_dim", start_dim, start,
                             end_dim, end);
    if (start == end) return ct_tensor_view_of(t, t->ndim, t->shape, t->strides, t->offset);
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < start; d++) shape[ndim++] = t->shape[d];
    shape[ndim++] = ct_shape_numel(t->shape + start, end - start + 1);
    for (int d = end + 1; d < t->ndim; d++) shape[ndim++] = t->shape[d];
    return ct_tensor_reshape_view("ct_flatten", t, shape, ndim, true);
}

/* ---- expand ---- */

ct_tensor *ct_tensor_expand_view(const ct_tensor *t, const int64_t *sizes, int ndim)
{
    if (ct_tensor_unusable("ct_expand", "t", t)) return NULL;
    if (ndim > 0 && !sizes) return ct_null_argument("ct_expand", "shape");
    char asked[256], have[256];
    if (ndim < t->ndim || ndim > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_SHAPE, "ct_expand: %d sizes given for a %d-d tensor of shape %s; "
                             "give %d to %d sizes", ndim, t->ndim,
                             ct_shape_format(t->shape, t->ndim, have, sizeof have), t->ndim, CT_MAX_DIMS);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int i = ndim - 1; i >= 0; i--) {
        int dim = i - (ndim - t->ndim); /* t's dim under new dim i, or < 0 for a new leading dim */
        int64_t size = dim >= 0 ? t->shape[dim] : 1;
        int64_t stride = dim >= 0 ? t->strides[dim] : (i + 1 < ndim ? shape[i + 1] * strides[i + 1] : 1);
        int64_t target = sizes[i];
        if (target == -1 && dim < 0)
            return ct_error_null(CT_ERR_SHAPE, "ct_expand: size -1 in %s is not allowed in the new "
                                 "leading dim %d (it has no size to keep)", ct_shape_format(sizes, ndim,
                                 asked, sizeof asked), i);
        if (target < -1)
            return ct_error_null(CT_ERR_SHAPE, "ct_expand: size %lld in dim %d of %s is negative; sizes "
                                 "must be >= 0 (or -1 to keep one)", (long long)target, i,
                                 ct_shape_format(sizes, ndim, asked, sizeof asked));
        if (target == -1) target = size;
        if (size != target) {
            if (size != 1)
                return ct_error_null(CT_ERR_SHAPE, "ct_expand: the expanded size %lld must match the "
                                     "existing size %lld at non-singleton dim %d; target sizes %s, tensor "
                                     "sizes %s", (long long)target, (long long)size, i,
                                     ct_shape_format(sizes, ndim, asked, sizeof asked),
                                     ct_shape_format(t->shape, t->ndim, have, sizeof have));
            size = target;
            stride = 0;
        }
        shape[i] = size;
        strides[i] = stride;
    }
    return ct_tensor_view_of(t, ndim, shape, strides, t->offset);
}

/* ---- reordering dims ---- */

ct_tensor *ct_tensor_transpose_view(const ct_tensor *t, int dim0, int dim1)
{
    if (ct_tensor_unusable("ct_transpose", "t", t)) return NULL;
    int a, b;
    if (ct_normalize_dim("ct_transpose", dim0, t->ndim, false, &a) != CT_OK ||
        ct_normalize_dim("ct_transpose", dim1, t->ndim, false, &b) != CT_OK)
        return NULL;
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    memcpy(shape, t->shape, sizeof shape);
    memcpy(strides, t->strides, sizeof strides);
    if (t->ndim > 0) {
        shape[a] = t->shape[b], shape[b] = t->shape[a];
        strides[a] = t->strides[b], strides[b] = t->strides[a];
    }
    return ct_tensor_view_of(t, t->ndim, shape, strides, t->offset);
}

ct_tensor *ct_tensor_permute_view(const ct_tensor *t, const int *dims, int ndim)
{
    if (ct_tensor_unusable("ct_permute", "t", t)) return NULL;
    if (ndim > 0 && !dims) return ct_null_argument("ct_permute", "dims");
    if (ndim != t->ndim)
        return ct_error_null(CT_ERR_SHAPE, "ct_permute: %d dims given for a %d-d tensor; the dims must "
                             "be a permutation of all %d", ndim, t->ndim, t->ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    bool seen[CT_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d;
        if (ct_normalize_dim("ct_permute", dims[i], t->ndim, false, &d) != CT_OK) return NULL;
        if (seen[d])
            return ct_error_null(CT_ERR_INDEX, "ct_permute: dim %d appears more than once (as %d at "
                                 "position %d); the dims must be a permutation of 0 to %d", d, dims[i],
                                 i, t->ndim - 1);
        seen[d] = true;
        shape[i] = t->shape[d];
        strides[i] = t->strides[d];
    }
    return ct_tensor_view_of(t, ndim, shape, strides, t->offset);
}

/* ---- adding and removing size-1 dims ---- */

/* t without dim `drop` when it has size 1 (drop < 0: without every size-1 dim). */
static ct_tensor *without_unit_dims(const ct_tensor *t, int drop)
{
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    int ndim = 0;
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 1 && (drop < 0 || drop == d)) continue;
        shape[ndim] = t->shape[d];
        strides[ndim++] = t->strides[d];
    }
    return ct_tensor_view_of(t, ndim, shape, strides, t->offset);
}

ct_tensor *ct_tensor_squeeze_view(const char *function, const ct_tensor *t, int dim, bool all_dims)
{
    if (ct_tensor_unusable(function, "t", t)) return NULL;
    if (all_dims) return without_unit_dims(t, -1);
    int d;
    if (ct_normalize_dim(function, dim, t->ndim, false, &d) != CT_OK) return NULL;
    return without_unit_dims(t, t->ndim == 0 ? 0 : d);
}

ct_tensor *ct_tensor_unsqueeze_view(const ct_tensor *t, int dim)
{
    if (ct_tensor_unusable("ct_unsqueeze", "t", t)) return NULL;
    int at;
    if (ct_normalize_dim("ct_unsqueeze", dim, t->ndim, true, &at) != CT_OK) return NULL;
    if (t->ndim + 1 > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_SHAPE, "ct_unsqueeze: the tensor already has %d dims, the most a "
                             "ctorch tensor can have", t->ndim);
    int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
    for (int d = 0, from = 0; d <= t->ndim; d++) {
        if (d == at) {
            shape[d] = 1;
            /* The stride a contiguous tensor would have there. */
            strides[d] = at < t->ndim ? t->shape[at] * t->strides[at] : 1;
        } else {
            shape[d] = t->shape[from];
            strides[d] = t->strides[from++];
        }
    }
    return ct_tensor_view_of(t, t->ndim + 1, shape, strides, t->offset);
}
