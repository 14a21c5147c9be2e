/* The row kernels (tril/triu, cumsum, sort, multinomial's search), compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/rows.ct"

CT_CPU_KERNEL_FAMILY(rows, CT_ROWS_KERNELS)
