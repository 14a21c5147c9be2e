/* Joining tensors: cat (along an existing dim) and stack (along a new one). Each input is
 * copied, with the promoted dtype, into its slice of a new output; backward gives each input
 * its slice of the output's gradient. */
#include <stdio.h>
#include <stdlib.h>

#include "ops/ops_autograd.h"

/* NULL list or tensors, an empty list, tensors on different devices. */
static ct_status check_list(const char *function, const ct_tensor *const *tensors, int count)
{
    if (!tensors) return ct_null_argument(function, "tensors"), ct_last_error();
    if (count <= 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "%s: expected a non-empty list of tensors, but "
                        "count is %d", function, count);
    for (int i = 0; i < count; i++)
        if (!tensors[i]) {
            char name[32];
            snprintf(name, sizeof name, "tensors[%d]", i);
            return ct_null_argument(function, name), ct_last_error();
        }
    for (int i = 1; i < count; i++) {
        ct_status status = ct_check_same_device(function, tensors[0], tensors[i]);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

/* PyTorch's legacy rule: a 1-D tensor of size 0 joins any list (it is skipped). */
static bool skipped_in_cat(const ct_tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* cat after check_list; function names the public call in messages. */
static ct_tensor *cat(const char *function, const ct_tensor *const *tensors, int count, int dim)
{
    ct_dtype dtype = tensors[0]->dtype;
    const ct_tensor *ref = NULL;
    int ref_index = 0;
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = tensors[i];
        if (t->ndim == 0)
            return ct_error_null(CT_ERR_SHAPE, "%s: tensors[%d] is 0-d; 0-d tensors cannot be "
                                 "concatenated (use ct_stack, or give it a dim)", function, i);
        dtype = ct_promote_types(dtype, t->dtype);
        if (!ref && !skipped_in_cat(t)) {
            ref = t;
            ref_index = i;
        }
    }
    if (!ref) ref = tensors[0]; /* every input is 1-D and empty */

    int d = 0;
    if (ct_normalize_dim(function, dim, ref->ndim, false, &d) != CT_OK) return NULL;
    int64_t shape[CT_MAX_DIMS];
    for (int k = 0; k < ref->ndim; k++) shape[k] = ref->shape[k];
    shape[d] = 0;
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = tensors[i];
        if (skipped_in_cat(t) && t != ref) continue;
        bool fits = t->ndim == ref->ndim;
        int bad_dim = -1;
        for (int k = 0; k < ref->ndim && fits; k++)
            if (k != d && t->shape[k] != ref->shape[k]) {
                fits = false;
                bad_dim = k;
            }
        if (!fits) {
            char a[256], b[256];
            ct_shape_format(ref->shape, ref->ndim, a, sizeof a);
            ct_shape_format(t->shape, t->ndim, b, sizeof b);
            if (bad_dim < 0)
                return ct_error_null(CT_ERR_SHAPE, "%s: tensors[%d] has shape %s and tensors[%d] "
                                     "has shape %s; they must have the same number of dims",
                                     function, ref_index, a, i, b);
            return ct_error_null(CT_ERR_SHAPE, "%s: tensors[%d] has shape %s and tensors[%d] has "
                                 "shape %s; sizes must match except in dim %d (dim %d has %lld "
                                 "and %lld)", function, ref_index, a, i, b, d, bad_dim,
                                 (long long)ref->shape[bad_dim], (long long)t->shape[bad_dim]);
        }
        shape[d] += t->shape[d];
    }

    ct_tensor *out = ct_tensor_alloc(function, ref->storage->device, dtype, shape, ref->ndim);
    if (!out) return NULL;
    /* Each input goes into its slice of out along d. */
    int64_t start = 0;
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = tensors[i];
        if (ct_numel(t) == 0) {
            if (!skipped_in_cat(t)) start += t->shape[d];
            continue;
        }
        ct_tensor *slice = ct_tensor_view_of(out, out->ndim, t->shape, out->strides,
                                             out->offset + start * out->strides[d]);
        ct_status status = slice ? ct_tensor_copy_into(slice, t) : ct_last_error();
        ct_release(slice);
        if (status != CT_OK) {
            ct_release(out);
            return NULL;
        }
        start += t->shape[d];
    }
    return out;
}

static ct_tensor *stack(const ct_tensor *const *tensors, int count, int dim)
{
    const char *function = "ct_stack";
    if (check_list(function, tensors, count) != CT_OK) return NULL;
    const ct_tensor *first = tensors[0];
    for (int i = 1; i < count; i++) {
        const ct_tensor *t = tensors[i];
        bool same = t->ndim == first->ndim;
        for (int k = 0; k < first->ndim && same; k++) same = t->shape[k] == first->shape[k];
        if (!same) {
            char a[256], b[256];
            return ct_error_null(CT_ERR_SHAPE, "%s: expects tensors of equal shape, but tensors[0] "
                                 "has shape %s and tensors[%d] has shape %s", function,
                                 ct_shape_format(first->shape, first->ndim, a, sizeof a), i,
                                 ct_shape_format(t->shape, t->ndim, b, sizeof b));
        }
    }
    int d = 0;
    if (ct_normalize_dim(function, dim, first->ndim, true, &d) != CT_OK) return NULL;
    if (first->ndim + 1 > CT_MAX_DIMS)
        return ct_error_null(CT_ERR_SHAPE, "%s: stacking %d-d tensors gives %d dims; ctorch "
                             "tensors have at most %d", function, first->ndim, first->ndim + 1,
                             CT_MAX_DIMS);

    /* Each input viewed with a size-1 dim inserted at d, then joined along d. */
    ct_tensor **views = calloc((size_t)count, sizeof *views);
    if (!views) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for %d views",
                                     function, count);
    ct_tensor *out = NULL;
    int made = 0;
    for (; made < count; made++) {
        const ct_tensor *t = tensors[made];
        int64_t shape[CT_MAX_DIMS], strides[CT_MAX_DIMS];
        for (int k = 0, j = 0; k <= t->ndim; k++) {
            if (k == d) {
                shape[k] = 1;
                strides[k] = d < t->ndim ? t->shape[d] * t->strides[d] : 1;
                continue;
            }
            shape[k] = t->shape[j];
            strides[k] = t->strides[j++];
        }
        views[made] = ct_tensor_view_of(t, t->ndim + 1, shape, strides, t->offset);
        if (!views[made]) break;
    }
    if (made == count) out = cat(function, (const ct_tensor *const *)views, count, d);
    for (int i = 0; i < made; i++) ct_release(views[i]);
    free(views);
    return out;
}

/* ---- autograd ----
 * node->ints[0] is the joined dim of the output. Input i's gradient is its slice of the output's
 * gradient (a narrow for cat, a select for stack), contiguous and in the input's dtype (cat and
 * stack promote). */
static ct_status join_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads, bool stacked)
{
    int d = (int)node->ints[0];
    int64_t start = 0;
    for (int i = 0; i < node->ninputs; i++) {
        const ct_input_meta *in = &node->inputs[i];
        bool skipped = !stacked && in->ndim == 1 && in->shape[0] == 0 && grad->ndim != 1;
        int64_t length = stacked || skipped ? 1 : in->shape[d];
        if (ct_node_needs_grad(node, i)) {
            ct_tensor *part = skipped ? ct_zeros(in->shape, in->ndim, in->dtype, in->device)
                              : stacked ? ct_select(grad, d, i) : ct_narrow(grad, d, start, length);
            ct_tensor *dense = part ? ct_contiguous(part) : NULL;
            grads[i] = dense ? ct_to_dtype(dense, in->dtype) : NULL;
            ct_release(dense);
            ct_release(part);
            if (!grads[i]) return ct_last_error();
        }
        if (!skipped) start += length;
    }
    return CT_OK;
}

static ct_status cat_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return join_backward(node, grad, grads, false);
}

static ct_status stack_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    return join_backward(node, grad, grads, true);
}

/* out's node over the inputs, with the joined dim (dim, as given, of out). */
static ct_tensor *record_join(ct_tensor *out, const ct_tensor *const *tensors, int count, int dim,
                              bool stacked)
{
    ct_node *node;
    out = ct_record(out, stacked ? "StackBackward" : "CatBackward",
                    stacked ? stack_backward : cat_backward, tensors, count, &node);
    if (node) node->ints[0] = dim < 0 ? dim + out->ndim : dim;
    return out;
}

ct_tensor *ct_cat(const ct_tensor *const *tensors, int count, int dim)
{
    CT_API_ENTER;
    if (check_list("ct_cat", tensors, count) != CT_OK) return ct_api_return(NULL);
    ct_tensor *out = cat("ct_cat", tensors, count, dim);
    return ct_api_return(record_join(out, tensors, count, dim, false));
}

ct_tensor *ct_stack(const ct_tensor *const *tensors, int count, int dim)
{
    CT_API_ENTER;
    ct_tensor *out = stack(tensors, count, dim);
    return ct_api_return(record_join(out, tensors, count, dim, true));
}
