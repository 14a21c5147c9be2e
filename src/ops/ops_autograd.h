/* How an op records itself for autograd, and helpers its backward uses. Each op's backward lives
 * in the op's own file (or a <family>_backward.c beside it) and is written with the ops
 * themselves, so it runs on every device through the same kernels. */
#ifndef CT_OPS_AUTOGRAD_H
#define CT_OPS_AUTOGRAD_H

#include "ctorch/autograd.h"
#include "ops/ops_internal.h"
#include "tensor/autograd_node.h"

/* When an input requires grad (and grad mode is on), records out's node and returns it in *node
 * (NULL when nothing is recorded). On failure releases out and returns NULL. Usage:
 *     ct_node *node;
 *     out = ct_record(out, "MulBackward", mul_backward, inputs, 2, &node);
 *     if (node) { ct_node_save(node, a); ... }                                             */
ct_tensor *ct_record(ct_tensor *out, const char *name, ct_backward_fn backward,
                     const ct_tensor *const *inputs, int count, ct_node **node);

/* grad summed over the dims where input `input` of node was broadcast, in that input's dtype:
 * the gradient of a broadcast operand. Returns a new reference. */
ct_tensor *ct_grad_unbroadcast(const ct_tensor *grad, const ct_node *node, int input);

/* grad summed down to shape (over leading dims it lacks and dims where it has size 1). */
ct_tensor *ct_sum_to_shape(const ct_tensor *grad, const int64_t *shape, int ndim);

/* Does input i of node need a gradient (an edge leads somewhere)? */
bool ct_node_needs_grad(const ct_node *node, int input);

#endif
