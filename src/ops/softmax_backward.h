/* Backward functions of softmax and log_softmax (see ops_autograd.h). Their nodes keep the
 * (normalised) dim in ints[0] and the output in saved[0]. */
#ifndef CT_OPS_SOFTMAX_BACKWARD_H
#define CT_OPS_SOFTMAX_BACKWARD_H

#include "ops/ops_autograd.h"

ct_status ct_softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_log_softmax_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

#endif
