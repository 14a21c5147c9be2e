/* The layer normalisation kernels, compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/layer_norm.ct"

CT_CPU_KERNEL_FAMILY(layer_norm, CT_LAYER_NORM_KERNELS)
