/* What the layers above the backends use: launching kernels and BLAS on the current stream. */
#ifndef CT_BACKEND_H
#define CT_BACKEND_H

#include "device/backend_interface.h"
#include "device/device_internal.h"
#include "kernels/kernel_ids.h"
#include "kernels/kernel_params.h"

/* Launches kernel over params->n work items on a resolved device, on this thread's current
 * stream there. */
ct_status ct_backend_launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                            const ct_kparams *params, long work_per_item);
/* A matrix product on a resolved device, on the current stream. */
ct_status ct_backend_gemm(ct_device device, const ct_gemm_args *args);

#endif
