/* Gradients of the views (src/ops/views.c). Each gives the input a gradient of its own shape:
 * views that keep the element order reshape it back, the reorderings apply the inverse order,
 * expand sums over the expanded dims, and the parts of a tensor put the gradient into the same
 * part of a zero tensor. */
#ifndef CT_OPS_VIEW_BACKWARD_H
#define CT_OPS_VIEW_BACKWARD_H

#include "ops/ops_autograd.h"
#include "tensor/view_internal.h"

/* What a part's node keeps in ints[]: its kind, then the view's arguments as the forward got
 * them (so that the same view of a zero tensor of the input's shape picks the same part). */
enum ct_part_kind {
    CT_PART_NARROW, /* ints[1..3] = dim, start, length */
    CT_PART_SLICE,  /* ints[1..4] = dim, start, end, step */
    CT_PART_SELECT, /* ints[1..2] = dim, index */
};

/* reshape, view, flatten, squeeze, unsqueeze: the gradient in the input's shape. */
ct_status ct_view_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* ints[0], ints[1] = the two dims (a transpose is its own inverse). */
ct_status ct_transpose_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* ints[0..ndim) = the inverse permutation. */
ct_status ct_permute_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_expand_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
/* narrow, slice, select and each part of chunk and split (see enum ct_part_kind). */
ct_status ct_part_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

#endif
