/* The CPU side of the kernel dialect. Each family's kernel source is compiled as C in its own
 * file (cpu_kernels_<family>.c), with one launcher per kernel that calls it from an OpenMP loop:
 * the kernel is inlined there, so the loop vectorises. */
#ifndef CT_CPU_LAUNCHER_H
#define CT_CPU_LAUNCHER_H

#include <stdbool.h>

#include "kernels/dialect.h"
#include "kernels/kernel_ids.h"

typedef void (*ct_cpu_kernel_launcher)(void *const *buffers, const ct_kparams *params, bool parallel);

#define CT_CPU_LAUNCHER(name)                                                                    \
    static void cpu_launch_##name(void *const *b, const ct_kparams *params, bool parallel)       \
    {                                                                                            \
        const ct_kparams p = *params;                                                            \
        void *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];                                     \
        if (parallel) {                                                                          \
            _Pragma("omp parallel for simd schedule(static)")                                    \
            for (long i = 0; i < p.n; i++) name(i, b0, b1, b2, b3, p);                           \
        } else {                                                                                 \
            _Pragma("omp simd")                                                                  \
            for (long i = 0; i < p.n; i++) name(i, b0, b1, b2, b3, p);                           \
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
