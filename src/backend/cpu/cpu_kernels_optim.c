/* The optimizer kernels, compiled as C for the CPU. */
#include <string.h>

#include "backend/cpu/cpu_launcher.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/optim.ct"

CT_OPTIM_PER_TENSOR_KERNELS(CT_CPU_LAUNCHER)

/* A multi-tensor launch runs its tensors one after the other, each as the per-parameter kernels'
 * flat loop, with its buffers as the 4 buffers and its offsets first in the block: the C build
 * of the kernels then takes every item as an element of tensor 0 (CT_MULTI_LOCATE in optim.ct,
 * CT_WIDE_BUFFER_TABLE in dialect.h) and the loop vectorises as the per-parameter one does.
 * With the search for the tensor in each item, or the buffers read from the table, a fused SGD
 * step over two tensors of 40K floats took 20 times as long.
 * A fifth role is a capturable Adam step's record (optim.ct), which C kernels, with their 4
 * buffers, cannot take: its scalars go into the block, where the host puts those of a step that
 * is not capturable. The record is read as the launch runs, after the launch that advanced it.
 * A scaling whose factor is on the device (CT_OPTIM_FLAG_FACTOR_RECORD, buffer 8) likewise. */
#define CT_CPU_MULTI_LAUNCHER(name)                                                              \
    static void cpu_launch_one_##name(void *const *b, const ct_kparams *one, bool parallel)      \
    {                                                                                            \
        void *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];                                     \
        if (parallel) {                                                                          \
            _Pragma("omp parallel")                                                              \
            {                                                                                    \
                ct_kparams q = *one;                                                             \
                CT_CPU_LOOP(name, q, "omp for simd schedule(static) nowait")                     \
            }                                                                                    \
        } else {                                                                                 \
            ct_kparams q = *one;                                                                 \
            CT_CPU_LOOP(name, q, "omp simd")                                                     \
        }                                                                                        \
    }                                                                                            \
    static void cpu_launch_##name(void *const *b, const ct_kparams *params, bool parallel)       \
    {                                                                                            \
        void *const *table = (void *const *)b[0];                                                \
        long roles = params->l[2];                                                               \
        for (long t = 0; t < params->ndim; t++) {                                                \
            long start = t > 0 ? params->size[t - 1] : 0;                                        \
            ct_kparams one = *params;                                                            \
            void *own[CT_KERNEL_MAX_BUFFERS] = {NULL};                                           \
            for (long r = 0; r < roles && r < CT_KERNEL_MAX_BUFFERS; r++) {                      \
                long k = t * roles + r;                                                          \
                own[r] = table[k];                                                               \
                one.stride[r / 8][r % 8] = params->stride[k / 8][k % 8];                         \
            }                                                                                    \
            if (roles == 5) { /* see below */                                                    \
                long k = t * 5 + 4;                                                              \
                const double *record = (const double *)table[k] + params->stride[k / 8][k % 8];  \
                memcpy(&one.off[1], &record[1], sizeof *record);                                 \
                memcpy(&one.off[2], &record[2], sizeof *record);                                 \
            }                                                                                    \
            if (params->l[0] != 1 && (params->l[1] & CT_OPTIM_FLAG_FACTOR_RECORD)) {             \
                const double *record = (const double *)table[8] + params->stride[1][0];          \
                one.s[0] = record[1];                                                            \
            }                                                                                    \
            one.n = params->size[t] - start;                                                     \
            one.size[0] = one.n;                                                                 \
            one.ndim = 1;                                                                        \
            /* each tensor as a launch of its own would run: a small one on this thread */       \
            bool wide_enough = one.n * roles >= CT_CPU_PARALLEL_MIN_WORK;                        \
            if (one.n > 0) cpu_launch_one_##name(own, &one, parallel && wide_enough);            \
        }                                                                                        \
    }
CT_OPTIM_MULTI_KERNELS(CT_CPU_MULTI_LAUNCHER)
/* The reductions walk many elements per item and read the whole table (CT_WIDE_BUFFER_TABLE_ALL):
 * one loop over the items, as on a device. */
CT_OPTIM_MULTI_REDUCE_KERNELS(CT_CPU_LAUNCHER)

void ct_cpu_register_optim(ct_cpu_kernel_launcher *table)
{
    CT_OPTIM_KERNELS(CT_CPU_TABLE_SET)
}
