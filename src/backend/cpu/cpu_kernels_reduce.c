/* The reduce kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/reduce.ct"

CT_CPU_KERNEL_FAMILY(reduce, CT_REDUCE_KERNELS)
