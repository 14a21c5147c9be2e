/* The elementwise kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/elementwise.ct"

CT_CPU_KERNEL_FAMILY_ROWS(elementwise, CT_ELEMENTWISE_KERNELS)
