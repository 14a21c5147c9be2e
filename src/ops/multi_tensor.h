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
 * a strided one goes through a contiguous copy, written back. */
ct_status ct_multi_tensor_scale_(ct_tensor *const *tensors, int64_t count, double factor);

/* Sums over every element of every tensor of the list (mode, optim_list.h: x*x, |x|, |x|^power,
 * the largest |x| with a NaN winning, x*0), taken in partials of CT_MULTI_SUM_ITEM elements in
 * each tensor's type on its device, a launch per 8 tensors, and added up in float64 on the host
 * from one read per device and dtype. NULL and empty tensors are skipped (none: 0). */
ct_status ct_multi_tensor_power_sum(ct_tensor *const *tensors, int64_t count, int mode, double power,
                                    double *out);

#endif
