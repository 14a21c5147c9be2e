/* The mechanics of the views: each makes a tensor that shares t's storage with a new geometry
 * (or, for a reshape that strides cannot express, a contiguous copy). They record nothing: the
 * public, differentiable views are in the ops layer (src/ops/views.c), which calls these and
 * then records the graph; code in the tensor layer calls these directly. `function` names the
 * public call in error messages. */
#ifndef CT_VIEW_INTERNAL_H
#define CT_VIEW_INTERNAL_H

#include "tensor/tensor_internal.h"

/* torch.reshape (copy_allowed) or Tensor.view of t into shape (one size may be -1). */
ct_tensor *ct_tensor_reshape_view(const char *function, const ct_tensor *t, const int64_t *shape,
                                  int ndim, bool copy_allowed);
ct_tensor *ct_tensor_flatten_view(const ct_tensor *t, int start_dim, int end_dim);
ct_tensor *ct_tensor_expand_view(const ct_tensor *t, const int64_t *shape, int ndim);
ct_tensor *ct_tensor_transpose_view(const ct_tensor *t, int dim0, int dim1);
ct_tensor *ct_tensor_permute_view(const ct_tensor *t, const int *dims, int ndim);
/* Without dim `dim` when it has size 1; all_dims drops every size-1 dim (dim is ignored). */
ct_tensor *ct_tensor_squeeze_view(const char *function, const ct_tensor *t, int dim, bool all_dims);
ct_tensor *ct_tensor_unsqueeze_view(const ct_tensor *t, int dim);

ct_tensor *ct_tensor_narrow_view(const char *function, const ct_tensor *t, int dim, int64_t start,
                                 int64_t length);
ct_tensor *ct_tensor_slice_view(const ct_tensor *t, int dim, int64_t start, int64_t end, int64_t step);
ct_tensor *ct_tensor_select_view(const ct_tensor *t, int dim, int64_t index);

/* How chunk and split cut t: `count` parts along dim `dim` (non-negative), each split_size
 * long but the last, which is last_size long. Part i starts at i * split_size. */
typedef struct ct_split_plan {
    int dim;
    int64_t split_size, last_size, count;
} ct_split_plan;

/* The plan of torch.split(t, split_size, dim) / torch.chunk(t, chunks, dim), after checking
 * every argument (NULLs, the dim, the sizes, and that out has room for the parts). */
ct_status ct_tensor_split_plan(const ct_tensor *t, int64_t split_size, int dim, ct_tensor **out,
                               int capacity, int *count, ct_split_plan *plan);
ct_status ct_tensor_chunk_plan(const ct_tensor *t, int chunks, int dim, ct_tensor **out,
                               int capacity, int *count, ct_split_plan *plan);
/* Part i of a plan, as a view of t. */
ct_tensor *ct_tensor_split_part(const ct_tensor *t, const ct_split_plan *plan, int64_t i);

#endif
