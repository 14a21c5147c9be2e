/* Shared by the op front ends: operand checks and broadcasting. */
#ifndef CT_OPS_INTERNAL_H
#define CT_OPS_INTERNAL_H

#include "ctorch/ops.h"
#include "tensor/tensor_internal.h"

/* Checks that no operand is NULL (keeping the first error of a chain, naming the argument
 * otherwise) and that all are on one device (an error naming both devices). names[i] names
 * tensors[i] in messages ("a", "b", ...). */
ct_status ct_check_operands(const char *function, const ct_tensor *const *tensors,
                            const char *const *names, int count);

/* ct_batch_norm's operands (input, then any of the others that are not NULL) on one device, as
 * ct_check_operands says; SyncBatchNorm checks so before it communicates. */
ct_status ct_batch_norm_check_devices(const char *function, const ct_tensor *input,
                                      const ct_tensor *running_mean, const ct_tensor *running_var,
                                      const ct_tensor *weight, const ct_tensor *bias);

/* PyTorch's broadcasting of count shapes into out_shape/out_ndim, or CT_ERR_SHAPE naming the
 * shapes and the first dim that does not fit. */
ct_status ct_broadcast_shapes(const char *function, const ct_tensor *const *tensors, int count,
                              int64_t *out_shape, int *out_ndim);
/* t's strides seen through shape (0 where t is broadcast). */
void ct_broadcast_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides);

/* A new tensor with t's values in dtype, on t's device (t retained when it already is). */
ct_tensor *ct_cast_if_needed(const ct_tensor *t, ct_dtype dtype);

/* The smallest and largest value of a non-empty int32/int64 index, computed on its device and
 * read back (indexing.c). */
ct_status ct_index_value_range(const char *function, const ct_tensor *index, int64_t *lo, int64_t *hi);

/* The product g describes, of a's, b's and c's storages (g's handles and offsets are theirs),
 * in any floating dtype: float16 and bfloat16 through float32 where the device's BLAS has no
 * 16-bit product (gemm_any.c). */
struct ct_gemm_args;
ct_status ct_gemm_of(const char *function, const struct ct_gemm_args *g, const ct_tensor *a,
                     const ct_tensor *b, ct_tensor *c);

#endif
