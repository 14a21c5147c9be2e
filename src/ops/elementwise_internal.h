/* Shared by the elementwise front ends (binary, scalar, unary, where): one routine that casts
 * the operands, broadcasts them, makes the output and launches the kernel. */
#ifndef CT_OPS_ELEMENTWISE_INTERNAL_H
#define CT_OPS_ELEMENTWISE_INTERNAL_H

#include "ops/ops_internal.h"

#define CT_ELEMENTWISE_MAX_INPUTS 3

typedef struct ct_elementwise_launch {
    const char *function;                                /* "ct_add", for messages */
    int count;                                           /* inputs, 1 to 3 */
    const ct_tensor *inputs[CT_ELEMENTWISE_MAX_INPUTS];  /* buffers 1..count of the kernel */
    ct_dtype input_dtypes[CT_ELEMENTWISE_MAX_INPUTS];    /* each input is cast to this first */
    ct_dtype out_dtype;                                  /* buffer 0, a new contiguous tensor */
    ct_kernel_id kernel;
    long work_per_item;                                  /* for the backend's threading choice */
    double s[2];                                         /* kernel scalars, p.s[0..1] */
    long l[2];                                           /* kernel integers, p.l[1..2] */
} ct_elementwise_launch;

/* out = kernel(inputs) over the broadcast shape of the inputs. The inputs must be non-NULL and
 * on one device (see ct_check_operands); shapes that do not broadcast are a CT_ERR_SHAPE error.
 * Returns a new tensor (untracked: the public op returns it through ct_api_return). */
ct_tensor *ct_elementwise_run(const ct_elementwise_launch *launch);

/* A CT_ERR_DTYPE error "<function>: <what> is not supported for <dtype> tensors (<hint>)". */
void *ct_elementwise_dtype_error(const char *function, const char *what, ct_dtype dtype,
                                 const char *hint);

#endif
