/* The optimizer kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/optim.ct"

CT_CPU_KERNEL_FAMILY(optim, CT_OPTIM_KERNELS)
