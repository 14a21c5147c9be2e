/* The kernels of src/kernels/ compiled as C for the stand-in driver, one runner per kernel that
 * runs work items [first, end) one by one, as the threads of a CUDA grid would: each item is the
 * kernel's CT_IDX, and the kernel checks its own bound against n (so a grid that covers too few
 * items computes too little, and one that covers more runs the extra items, as on a GPU). The
 * sources are generated from standin_kernels.c.in, one per family, by standin.cmake. */
#ifndef CTORCH_STANDIN_KERNELS_H
#define CTORCH_STANDIN_KERNELS_H

#include "kernels/kernel_ids.h"
#include "kernels/kernel_params.h"

typedef void (*ctorch_standin_runner)(long first, long end, void *const *buffers,
                                      const ct_kparams *params);
/* A kernel's name as its source spells it ("add_f32"), and its runner; indexed by kernel id. */
typedef struct ctorch_standin_kernel {
    const char *name;
    ctorch_standin_runner run;
} ctorch_standin_kernel;

#define CTORCH_STANDIN_DECLARE_REGISTER(family)                                                  \
    void ctorch_standin_register_##family(ctorch_standin_kernel *table);
CT_KERNEL_SOURCES(CTORCH_STANDIN_DECLARE_REGISTER)
#undef CTORCH_STANDIN_DECLARE_REGISTER

#endif
