/* Backward functions of the elementwise ops (see ops_autograd.h). */
#ifndef CT_OPS_ELEMENTWISE_BACKWARD_H
#define CT_OPS_ELEMENTWISE_BACKWARD_H

#include "ops/ops_autograd.h"

ct_status ct_add_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_sub_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_mul_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);
ct_status ct_div_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads);

#endif
