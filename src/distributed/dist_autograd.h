/* Collectives that autograd records, for layers that communicate inside a model's forward
 * (SyncBatchNorm). Declared without MPI's header, so that callers build with and without MPI
 * (without it, the call fails with CT_ERR_NOT_COMPILED). */
#ifndef CT_DIST_AUTOGRAD_H
#define CT_DIST_AUTOGRAD_H

#include "ctorch/distributed.h"

/* A new tensor: the reduction (CT_REDUCE_SUM or CT_REDUCE_AVG) of every rank's input; input is
 * left as it is. Recorded for autograd when input requires grad: the gradient of rank r's input
 * is the same reduction of every rank's gradient of the output, since with L = sum_k L_k,
 * dL/d input_r = sum_k dL_k/d out (torch.distributed.nn.functional.all_reduce). Its forward and
 * its backward are collectives: every rank calls it, and every rank's backward goes through it.
 * input NULL: this rank cannot take part, for the reason its last error gives; the call still
 * meets the other ranks' (which then fail with that reason instead of waiting) and returns NULL
 * keeping the error. Ops' NULL results can so be passed on unchecked. */
ct_tensor *ct_dist_all_reduce_with_grad(const ct_tensor *input, ct_reduce_op op);

#endif
