/* The parameter block every kernel receives by value. Its layout is the same in C, OpenCL C and
 * CUDA (only 64-bit fields), so the host fills it once and any backend passes it on. */
#ifndef CT_KERNEL_PARAMS_H
#define CT_KERNEL_PARAMS_H

#define CT_KERNEL_MAX_DIMS 8
#define CT_KERNEL_MAX_BUFFERS 4
/* Multi-tensor kernels (the fused optimizers, PyTorch's multi_tensor_apply) take this many buffers
 * instead: up to CT_MULTI_MAX_TENSORS tensors of up to 4 roles each (param, grad, state...).
 * OpenCL buffers are handles, not addresses, so a device-side table of pointers is not portable
 * across ctorch's backends; the buffers go as kernel arguments, as PyTorch's chunks do, and the
 * per-tensor sizes and offsets in the parameter block (see optim.ct). 32 handles + the block stay
 * under OpenCL's guaranteed 1024 bytes of kernel arguments. */
#define CT_KERNEL_WIDE_BUFFERS 32
#define CT_MULTI_MAX_TENSORS 8
/* Elements per item of a device's CT_FLAT_VECTOR launches (CT_VECTOR_WIDTH of the OpenCL and
 * CUDA builds of the kernels, dialect.h), as the backends report it (ct_work_shape). */
#define CT_DEVICE_VECTOR_WIDTH 4
/* l[0] of a flat launch of the elementwise, copy and fill kernels (see dialect.h). */
#define CT_FLAT_ONE 1
#define CT_FLAT_VECTOR 2

typedef struct ct_kparams {
    long n;                                             /* work items */
    long ndim;                                          /* dims of the strided index space */
    long off[CT_KERNEL_MAX_BUFFERS];                    /* element offset into each buffer */
    long size[CT_KERNEL_MAX_DIMS];                      /* sizes of the index space */
    long stride[CT_KERNEL_MAX_BUFFERS][CT_KERNEL_MAX_DIMS]; /* per buffer, in elements */
    long l[4];                                          /* integer parameters of the kernel */
    double s[4];                                        /* floating parameters of the kernel */
} ct_kparams;

#endif
