/* The fused attention kernels, compiled as C for the CPU: a group is one item that owns a whole
 * tile of rows (CT_ATTENTION_ROWS in attention.ct); the items run side by side on the cores,
 * never lanes abreast (each walks loops of its own, which vectorise). The launcher finds the
 * kernels' buffer table in buffer 0 (cpu_kernels.c). */
#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/attention.ct"

#define CT_CPU_ATTENTION_LAUNCHER(name)                                                          \
    CT_CPU_LAUNCHER_PRAGMAS(cpu_launch_##name, name, "omp for schedule(dynamic, 1) nowait",      \
                            "omp for schedule(static) nowait")

CT_ATTENTION_KERNELS(CT_CPU_ATTENTION_LAUNCHER)

void ct_cpu_register_attention(ct_cpu_kernel_launcher *table)
{
    CT_ATTENTION_KERNELS(CT_CPU_TABLE_SET)
}
