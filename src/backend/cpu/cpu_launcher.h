/* The CPU side of the kernel dialect. Each family's kernel source is compiled as C in its own
 * file (cpu_kernels_<family>.c), with one launcher per kernel that calls it from an OpenMP loop:
 * the kernel is inlined there, so the loop vectorises. */
#ifndef CT_CPU_LAUNCHER_H
#define CT_CPU_LAUNCHER_H

#include <stdbool.h>

#include "kernels/dialect.h"
#include "kernels/kernel_ids.h"

typedef void (*ct_cpu_kernel_launcher)(void *const *buffers, const ct_kparams *params, bool parallel);

/* Kernels with a contiguous fast path flag it with l[0] = 1. The loop runs in two copies, one
 * where l[0] is the constant 1, so that the compiler drops the strided branch there and
 * vectorises the flat one (a branch on a run-time flag inside the loop stops gcc's vectoriser).
 * The copy is made inside the parallel region, where the constant is visible. */
#define CT_CPU_LOOP(name, q, simd_pragma)                                                        \
    if (q.l[0] == 1) {                                                                           \
        q.l[0] = 1;                                                                              \
        _Pragma(simd_pragma) for (long i = 0; i < q.n; i++) name(i, b0, b1, b2, b3, q);          \
    } else {                                                                                     \
        _Pragma(simd_pragma) for (long i = 0; i < q.n; i++) name(i, b0, b1, b2, b3, q);          \
    }

#define CT_CPU_LAUNCHER(name)                                                                    \
    static void cpu_launch_##name(void *const *b, const ct_kparams *params, bool parallel)       \
    {                                                                                            \
        void *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];                                     \
        if (parallel) {                                                                          \
            _Pragma("omp parallel")                                                              \
            {                                                                                    \
                ct_kparams q = *params;                                                          \
                CT_CPU_LOOP(name, q, "omp for simd schedule(static)")                            \
            }                                                                                    \
        } else {                                                                                 \
            ct_kparams q = *params;                                                              \
            CT_CPU_LOOP(name, q, "omp simd")                                                     \
        }                                                                                        \
    }
#define CT_CPU_TABLE_SET(name) table[CT_K_##name] = cpu_launch_##name;

/* Defines the launchers of a family and ct_cpu_register_<family>, which enters them in table. */
#define CT_CPU_KERNEL_FAMILY(family, LIST)                                                       \
    LIST(CT_CPU_LAUNCHER)                                                                        \
    void ct_cpu_register_##family(ct_cpu_kernel_launcher *table)                                 \
    {                                                                                            \
        (void)table;                                                                             \
        LIST(CT_CPU_TABLE_SET)                                                                   \
    }

#define CT_CPU_DECLARE_REGISTER(family) void ct_cpu_register_##family(ct_cpu_kernel_launcher *table);
CT_KERNEL_SOURCES(CT_CPU_DECLARE_REGISTER)
#undef CT_CPU_DECLARE_REGISTER

#endif
