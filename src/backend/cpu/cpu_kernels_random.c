/* The random kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/random.ct"

CT_CPU_KERNEL_FAMILY(random, CT_RANDOM_KERNELS)
