/* The softmax kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/softmax.ct"

CT_CPU_KERNEL_FAMILY(softmax, CT_SOFTMAX_KERNELS)
