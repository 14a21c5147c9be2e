/* The copy kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/copy.ct"

CT_CPU_KERNEL_FAMILY_ROWS(copy, CT_COPY_KERNELS)
