/* Backward passes of float16 and bfloat16 ops run in float32 (see backward_in_float32.c). */
#ifndef CT_OPS_BACKWARD_IN_FLOAT32_H
#define CT_OPS_BACKWARD_IN_FLOAT32_H

#include "ops/ops_autograd.h"

/* Runs body on node; when the incoming gradient or a saved tensor is float16 or bfloat16, body
 * sees them converted to float32, and each gradient it returns is rounded to its input's dtype.
 * Other dtypes go to body as they are. */
ct_status ct_backward_in_float32(ct_node *node, const ct_tensor *grad, ct_tensor **grads,
                                 ct_backward_fn body);

#endif
