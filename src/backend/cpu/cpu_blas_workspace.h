/* Checks that OpenBLAS's work buffers can be mapped before a product (cpu_blas_workspace.c). */
#ifndef CT_CPU_BLAS_WORKSPACE_H
#define CT_CPU_BLAS_WORKSPACE_H

#include "ctorch/core.h"

/* What OpenBLAS maps for one work buffer (its BUFFER_SIZE and a page): 128 MiB in Debian's
 * x86-64 builds (0.3.21). tests/backend/test_blas_out_of_memory.c checks it against the OpenBLAS
 * in use. */
#define CT_OPENBLAS_BUFFER_BYTES ((size_t)128 << 20)

/* Before a product: CT_OK when OpenBLAS already holds the buffers it may use for it or the process
 * can map them now, otherwise CT_ERR_OUT_OF_MEMORY with a message (and no call to leave). */
ct_status ct_cpu_blas_workspace_enter(void);
/* After a product that entered. */
void ct_cpu_blas_workspace_leave(void);

#endif
