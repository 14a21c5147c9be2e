#ifndef CT_OPS_REDUCE_BACKWARD_H
#define CT_OPS_REDUCE_BACKWARD_H

#include "ops/ops_autograd.h"

/* Stores which dims a reduction folded and how many elements each output took. */
void ct_reduce_node_setup(ct_node *node, const bool *reduced, int ndim, int64_t reduced_count);
/* The output's gradient laid back over the input's shape (each output's gradient repeated over
 * the elements it folded), contiguous. */
ct_tensor *ct_grad_expand_reduced(const ct_tensor *grad, const ct_node *node);

ct_status ct_sum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_mean_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

#endif
