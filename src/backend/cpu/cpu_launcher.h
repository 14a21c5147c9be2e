/* The CPU side of the kernel dialect. Each family's kernel source is compiled as C in its own
 * file (cpu_kernels_<family>.c), with one launcher per kernel that calls it from an OpenMP loop:
 * the kernel is inlined there, so the loop vectorises. */
#ifndef CT_CPU_LAUNCHER_H
#define CT_CPU_LAUNCHER_H

#include <stdbool.h>

#include "kernels/dialect.h"
#include "kernels/kernel_ids.h"

/* Below this many touched elements a launch stays on the calling thread: waking the OpenMP team
 * costs more than the work. With sleeping workers (OMP_WAIT_POLICY=passive) on 2 busy cores a
 * wake-up took ~25 us, while a 16K-element add takes 2 us on one thread: an SGD step over a
 * 256 x 64 weight (32K touched) cost more than the rest of a small MLP's training step. Past
 * 128K touched (a 44K-element add, ~5 us on one thread) the second core pays off when it is free. */
#define CT_CPU_PARALLEL_MIN_WORK 131072

typedef void (*ct_cpu_kernel_launcher)(void *const *buffers, const ct_kparams *params, bool parallel);

/* Kernels with a contiguous fast path flag it with l[0] = 1 (CT_FLAT_ONE, the only flat launch a
 * CPU asks for). The loop runs in two copies, one where l[0] is the constant 1, so that the
 * compiler drops the strided and vector-item branches there and vectorises the flat one (a
 * branch on a run-time flag inside the loop stops gcc's vectoriser). The copy is made inside the
 * parallel region, where the constant is visible. The work-sharing loops end without a barrier
 * of their own (nowait): the region's end joins the team once, where a barrier after the loop
 * made every launch meet twice, and on busy cores waited twice for a thread to be scheduled. */
#define CT_CPU_LOOP(name, q, simd_pragma)                                                        \
    if (q.l[0] == 1) {                                                                           \
        q.l[0] = 1;                                                                              \
        _Pragma(simd_pragma) for (long i = 0; i < q.n; i++) name(i, b0, b1, b2, b3, q);          \
    } else {                                                                                     \
        _Pragma(simd_pragma) for (long i = 0; i < q.n; i++) name(i, b0, b1, b2, b3, q);          \
    }

/* A launcher whose loops take the given pragmas, in the team and on the calling thread alone. */
#define CT_CPU_LAUNCHER_PRAGMAS(launcher, name, team_pragma, alone_pragma)                       \
    static void launcher(void *const *b, const ct_kparams *params, bool parallel)                \
    {                                                                                            \
        void *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];                                     \
        if (parallel) {                                                                          \
            _Pragma("omp parallel")                                                              \
            {                                                                                    \
                ct_kparams q = *params;                                                          \
                CT_CPU_LOOP(name, q, team_pragma)                                                \
            }                                                                                    \
        } else {                                                                                 \
            ct_kparams q = *params;                                                              \
            CT_CPU_LOOP(name, q, alone_pragma)                                                   \
        }                                                                                        \
    }
#define CT_CPU_LAUNCHER_OF(launcher, name)                                                       \
    CT_CPU_LAUNCHER_PRAGMAS(launcher, name, "omp for simd schedule(static) nowait", "omp simd")
#define CT_CPU_LAUNCHER(name) CT_CPU_LAUNCHER_OF(cpu_launch_##name, name)
#define CT_CPU_TABLE_SET(name) table[CT_K_##name] = cpu_launch_##name;

/* Strided launches of the elementwise and copy kernels (whose strided branch finds its elements
 * only through ct_strided_offsets(i, ...)) run row by row: each task is a piece of one row of
 * the innermost dim, handed to the kernel as a 1-dim space that starts at the piece's offsets,
 * where finding an element divides nothing. Divisions per element made broadcasting ops (a bias
 * add, a where with a scalar) and strided copies several times slower than their flat form. */
#define CT_CPU_ROW_PIECE 4096
/* The serial loop's hint, in each compiler's words (clang builds the fuzzer). */
#if defined(__clang__)
#define CT_CPU_SERIAL_ROWS_PRAGMA "clang loop vectorize(enable)"
#else
#define CT_CPU_SERIAL_ROWS_PRAGMA "GCC ivdep"
#endif
#define CT_CPU_ROWS_LOOP(name, params, q, for_pragma)                                            \
    {                                                                                            \
        long nd = params->ndim, inner = params->size[nd - 1];                                    \
        long pieces = (inner + CT_CPU_ROW_PIECE - 1) / CT_CPU_ROW_PIECE;                         \
        long tasks = params->n / inner * pieces;                                                 \
        q.ndim = 1;                                                                              \
        q.l[0] = 0; /* strided: the kernels' flat branches drop out of the row loop */           \
        for (int k = 0; k < CT_KERNEL_MAX_BUFFERS; k++)                                          \
            q.stride[k][0] = params->stride[k][nd - 1];                                          \
        _Pragma(for_pragma) for (long t = 0; t < tasks; t++) {                                   \
            long start = t % pieces * CT_CPU_ROW_PIECE, first = t / pieces * inner + start;      \
            long o[CT_KERNEL_MAX_BUFFERS];                                                       \
            ct_strided_offsets(first, params, CT_KERNEL_MAX_BUFFERS, o);                         \
            for (int k = 0; k < CT_KERNEL_MAX_BUFFERS; k++) q.off[k] = o[k];                     \
            q.n = inner - start < CT_CPU_ROW_PIECE ? inner - start : CT_CPU_ROW_PIECE;            \
            q.size[0] = q.n;                                                                     \
            for (long i = 0; i < q.n; i++) name(i, b0, b1, b2, b3, q);                           \
        }                                                                                        \
    }

/* A launcher that runs index spaces of 2 or more dims row by row, the others as CT_CPU_LAUNCHER
 * does (a flat launch has l[0] = 1, or at most 1 dim: so l[0], which these families read only as
 * the flat flag, is 0 in the rows). */
#define CT_CPU_LAUNCHER_ROWS(name)                                                               \
    CT_CPU_LAUNCHER_OF(cpu_launch_flat_##name, name)                                             \
    static void cpu_launch_##name(void *const *b, const ct_kparams *params, bool parallel)       \
    {                                                                                            \
        if (params->ndim < 2 || params->l[0] == 1) {                                             \
            cpu_launch_flat_##name(b, params, parallel);                                         \
            return;                                                                              \
        }                                                                                        \
        void *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3];                                     \
        if (parallel) {                                                                          \
            _Pragma("omp parallel")                                                              \
            {                                                                                    \
                ct_kparams q = *params;                                                          \
                CT_CPU_ROWS_LOOP(name, params, q, "omp for schedule(static) nowait")             \
            }                                                                                    \
        } else {                                                                                 \
            ct_kparams q = *params;                                                              \
            CT_CPU_ROWS_LOOP(name, params, q, CT_CPU_SERIAL_ROWS_PRAGMA)                         \
        }                                                                                        \
    }

/* The same without simd: for kernels whose items each walk loops of their own (windows, rows of
 * a reduction), which the vectoriser would run lanes abreast with gathers and masks: the digits
 * cnn's 2x2 max pooling of [512, 16, 8, 8] forward took 3.2 ms as a simd loop over items, 2.2 ms
 * item by item (on a busy machine). The serial loop is an orphaned `omp for`: this thread alone. */
#define CT_CPU_LAUNCHER_ITEMS(name)                                                              \
    CT_CPU_LAUNCHER_PRAGMAS(cpu_launch_##name, name, "omp for schedule(static) nowait",            \
                            "omp for schedule(static) nowait")

/* Defines the launchers of a family and ct_cpu_register_<family>, which enters them in table. */
#define CT_CPU_KERNEL_FAMILY(family, LIST)                                                       \
    LIST(CT_CPU_LAUNCHER)                                                                        \
    void ct_cpu_register_##family(ct_cpu_kernel_launcher *table)                                 \
    {                                                                                            \
        (void)table;                                                                             \
        LIST(CT_CPU_TABLE_SET)                                                                   \
    }

/* The same for a family whose every kernel may run row by row (see CT_CPU_LAUNCHER_ROWS). */
#define CT_CPU_KERNEL_FAMILY_ROWS(family, LIST)                                                  \
    LIST(CT_CPU_LAUNCHER_ROWS)                                                                   \
    void ct_cpu_register_##family(ct_cpu_kernel_launcher *table)                                 \
    {                                                                                            \
        (void)table;                                                                             \
        LIST(CT_CPU_TABLE_SET)                                                                   \
    }

#define CT_CPU_DECLARE_REGISTER(family) void ct_cpu_register_##family(ct_cpu_kernel_launcher *table);
CT_KERNEL_SOURCES(CT_CPU_DECLARE_REGISTER)
#undef CT_CPU_DECLARE_REGISTER

#endif
