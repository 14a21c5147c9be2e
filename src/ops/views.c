/* The public views: each makes its view with the tensor layer's mechanics (src/tensor/view.c,
 * view_slice.c), then records its backward (src/ops/view_backward.c) when t requires grad. */
#include "ops/view_backward.h"

/* out's node when t requires grad (NULL otherwise); releases out on failure. */
static ct_tensor *record_view(ct_tensor *out, const ct_tensor *t, const char *name,
                              ct_backward_fn backward, ct_node **node)
{
    const ct_tensor *inputs[1] = {t};
    return ct_record(out, name, backward, inputs, 1, node);
}

/* A reshape that had to copy is a reshape of a contiguous copy: the same gradient, reshaped
 * back (the copy's own gradient is the identity). */
static ct_tensor *record_reshape(ct_tensor *out, const ct_tensor *t)
{
    ct_node *node;
    bool copied = out && out->storage != t->storage;
    return record_view(out, t, copied ? "ReshapeBackward" : "ViewBackward", ct_view_backward, &node);
}

ct_tensor *ct_reshape(const ct_tensor *t, const int64_t *shape, int ndim)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_reshape_view("ct_reshape", t, shape, ndim, true);
    return ct_api_return(record_reshape(out, t));
}

ct_tensor *ct_view(const ct_tensor *t, const int64_t *shape, int ndim)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_reshape_view("ct_view", t, shape, ndim, false);
    return ct_api_return(record_reshape(out, t));
}

ct_tensor *ct_flatten(const ct_tensor *t, int start_dim, int end_dim)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_flatten_view(t, start_dim, end_dim);
    return ct_api_return(record_reshape(out, t));
}

ct_tensor *ct_squeeze(const ct_tensor *t)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_squeeze_view("ct_squeeze", t, 0, true);
    return ct_api_return(record_view(out, t, "SqueezeBackward", ct_view_backward, &node));
}

ct_tensor *ct_squeeze_dim(const ct_tensor *t, int dim)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_squeeze_view("ct_squeeze_dim", t, dim, false);
    return ct_api_return(record_view(out, t, "SqueezeBackward", ct_view_backward, &node));
}

ct_tensor *ct_unsqueeze(const ct_tensor *t, int dim)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_unsqueeze_view(t, dim);
    return ct_api_return(record_view(out, t, "UnsqueezeBackward", ct_view_backward, &node));
}

ct_tensor *ct_expand(const ct_tensor *t, const int64_t *shape, int ndim)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_expand_view(t, shape, ndim);
    return ct_api_return(record_view(out, t, "ExpandBackward", ct_expand_backward, &node));
}

ct_tensor *ct_transpose(const ct_tensor *t, int dim0, int dim1)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_transpose_view(t, dim0, dim1);
    out = record_view(out, t, "TransposeBackward", ct_transpose_backward, &node);
    if (node) {
        node->ints[0] = dim0;
        node->ints[1] = dim1;
    }
    return ct_api_return(out);
}

ct_tensor *ct_permute(const ct_tensor *t, const int *dims, int ndim)
{
    CT_API_ENTER;
    ct_node *node;
    ct_tensor *out = ct_tensor_permute_view(t, dims, ndim);
    out = record_view(out, t, "PermuteBackward", ct_permute_backward, &node);
    /* Output dim i is input dim dims[i]: the gradient's dim i goes back to dims[i]. */
    for (int i = 0; node && i < ndim; i++) node->ints[dims[i] < 0 ? dims[i] + ndim : dims[i]] = i;
    return ct_api_return(out);
}

/* ---- parts along one dim ---- */

static ct_tensor *record_part(ct_tensor *out, const ct_tensor *t, const char *name,
                              const int64_t *arguments, int count)
{
    ct_node *node;
    out = record_view(out, t, name, ct_part_backward, &node);
    for (int k = 0; node && k < count; k++) node->ints[k] = arguments[k];
    return out;
}

ct_tensor *ct_narrow(const ct_tensor *t, int dim, int64_t start, int64_t length)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_narrow_view("ct_narrow", t, dim, start, length);
    const int64_t arguments[4] = {CT_PART_NARROW, dim, start, length};
    return ct_api_return(record_part(out, t, "NarrowBackward", arguments, 4));
}

ct_tensor *ct_slice(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_slice_view(t, dim, start, end, step);
    const int64_t arguments[5] = {CT_PART_SLICE, dim, start, end, step};
    return ct_api_return(record_part(out, t, "SliceBackward", arguments, 5));
}

ct_tensor *ct_select(const ct_tensor *t, int dim, int64_t index)
{
    CT_API_ENTER;
    ct_tensor *out = ct_tensor_select_view(t, dim, index);
    const int64_t arguments[3] = {CT_PART_SELECT, dim, index};
    return ct_api_return(record_part(out, t, "SelectBackward", arguments, 3));
}

/* The parts of a plan into out, each recorded as a narrow of t, and each recorded in the
 * caller's scope. */
static ct_status split_parts(const ct_tensor *t, const ct_split_plan *plan, ct_tensor **out, int *count)
{
    ct_api_enter();
    for (int64_t i = 0; i < plan->count; i++) {
        ct_tensor *part = ct_tensor_split_part(t, plan, i);
        const int64_t arguments[4] = {CT_PART_NARROW, plan->dim, i * plan->split_size,
                                      part ? part->shape[plan->dim] : 0};
        out[i] = record_part(part, t, "SplitBackward", arguments, 4);
        if (!out[i]) {
            for (int64_t k = 0; k < i; k++) ct_release(out[k]);
            ct_api_return(NULL);
            return ct_last_error();
        }
    }
    ct_api_return(NULL);
    for (int64_t i = 0; i < plan->count; i++) {
        ct_api_enter();
        out[i] = ct_api_return(out[i]);
    }
    *count = (int)plan->count;
    return CT_OK;
}

ct_status ct_split(const ct_tensor *t, int64_t split_size, int dim, ct_tensor **out, int capacity,
                   int *count)
{
    ct_split_plan plan;
    ct_status status = ct_tensor_split_plan(t, split_size, dim, out, capacity, count, &plan);
    return status == CT_OK ? split_parts(t, &plan, out, count) : status;
}

ct_status ct_chunk(const ct_tensor *t, int chunks, int dim, ct_tensor **out, int capacity,
                   int *count)
{
    ct_split_plan plan;
    ct_status status = ct_tensor_chunk_plan(t, chunks, dim, out, capacity, count, &plan);
    return status == CT_OK ? split_parts(t, &plan, out, count) : status;
}
