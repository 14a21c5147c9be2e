/* Multi-tensor launches (PyTorch's multi_tensor_apply): the kernels of optim.ct that take up to
 * CT_MULTI_MAX_TENSORS tensors of one device and dtype in a launch, and two uses of them over
 * lists of tensors of any devices: scaling in place and sums of |x|^p (the fused optimizer steps,
 * clip_grad_norm_, loss scaling). Callers are inside ct_api_enter. */
#ifndef CT_OPS_MULTI_TENSOR_H
#define CT_OPS_MULTI_TENSOR_H

#include "kernels/kernel_ids.h"
#include "tensor/tensor_internal.h"

/* Roles per tensor: 4 with 8 tensors a launch fill the 32 buffers; a capturable Adam step has a
 * fifth (its step record) and takes 6 tensors a launch. */
#define CT_MULTI_MAX_ROLES 5

/* One launch of a multi-tensor kernel: operands[t][r] is role r of tensor t (roles as the kernel
 * reads them), every one contiguous on one device; role 0 gives each tensor's element count;
 * tensors * roles at most CT_KERNEL_WIDE_BUFFERS (CT_ERR_INTERNAL otherwise). p
 * comes with what the kernel reads besides (scalars, flags in l[1]); this fills n, ndim, size,
 * the offsets (stride), l[0] (1 when l[1] is 0: the branch-free case) and l[2] (roles). */
ct_status ct_multi_tensor_launch(ct_kernel_id kernel, ct_tensor *operands[][CT_MULTI_MAX_ROLES], int tensors,
                                 int roles, ct_kparams *p);

/* Multiplies each floating tensor of the list by factor in place (x * factor in the tensor's
 * type, as ct_mul_scalar), 8 to a launch per device and dtype. NULL and empty tensors are skipped;
 * a strided one goes through a contiguous copy, written back. With a factor_record (a float64
 * tensor on the tensors' one device, as ct_multi_tensor_clip_record makes) the factor is its
 * element 1, read by the kernels as they run: nothing is read back, so a capture can hold it. */
ct_status ct_multi_tensor_scale_(ct_tensor *const *tensors, int64_t count, double factor,
                                 const ct_tensor *factor_record);

/* Sums over every element of every tensor of the list (mode, optim_list.h: x*x, |x|, |x|^power,
 * the largest |x| with a NaN winning, x*0), taken in partials of CT_MULTI_SUM_ITEM elements in
 * each tensor's type on its device, a launch per 8 tensors, and added up in float64 on the host
 * from one read per device and dtype. NULL and empty tensors are skipped (none: 0). */
ct_status ct_multi_tensor_power_sum(ct_tensor *const *tensors, int64_t count, int mode, double power,
                                    double *out);

/* Are the non-empty tensors of the list (at least one) all of one device and dtype? */
bool ct_multi_tensor_one_kind(ct_tensor *const *tensors, int64_t count);

/* clip_grad_norm_ on the device (norm_fold in optim.ct): the sums of ct_multi_tensor_power_sum over
 * tensors of one device and dtype (ct_multi_tensor_one_kind), folded in float64 on that device, as
 * a new float64 tensor [2] there: the norm (the mode's root taken: sqrt for CT_MULTI_SUM_SQUARES,
 * 1/power for CT_MULTI_SUM_POW) and the factor min(1, max_norm / (norm + 1e-6)) (a NaN kept).
 * Nothing is read back. NULL with the error on failure. */
ct_tensor *ct_multi_tensor_clip_record(ct_tensor *const *tensors, int64_t count, int mode, double power,
                                       double max_norm);

#endif
