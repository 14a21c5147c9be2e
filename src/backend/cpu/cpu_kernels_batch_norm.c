/* The batch normalisation kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/batch_norm.ct"

CT_CPU_KERNEL_FAMILY(batch_norm, CT_BATCH_NORM_KERNELS)
