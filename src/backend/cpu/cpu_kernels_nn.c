/* The nn kernels (convolution, pooling, cross-entropy), compiled as C for the CPU. */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/nn.ct"

CT_CPU_KERNEL_FAMILY(nn, CT_NN_KERNELS)
