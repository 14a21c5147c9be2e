/* The fill kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/fill.ct"

CT_CPU_KERNEL_FAMILY(fill, CT_FILL_KERNELS)
