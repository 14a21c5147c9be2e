/* The index kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/index.ct"

CT_CPU_KERNEL_FAMILY(index, CT_INDEX_KERNELS)
