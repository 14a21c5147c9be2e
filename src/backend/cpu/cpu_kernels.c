/* The CPU side of the kernel dialect: every kernel source compiled as C, and one launcher per
 * kernel that calls it from an OpenMP loop (inlined, so that the loop vectorises). */
#include "backend/cpu/cpu_backend.h"
#include "core/core_internal.h"
#include "kernels/dialect.h"
#include "kernels/kernel_ids.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include "kernels/fill.ct"
#include "kernels/copy.ct"
#include "kernels/elementwise.ct"
#include "kernels/random.ct"
#include "kernels/reduce.ct"
#include "kernels/index.ct"
#pragma GCC diagnostic pop

/* Below this many touched elements a launch stays on the calling thread: waking the OpenMP team
 * costs more than the work. */
#define CT_CPU_PARALLEL_MIN_WORK 32768

typedef void (*cpu_kernel_launcher)(void *const *buffers, const ct_kparams *params, bool parallel);

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
CT_KERNEL_LIST(CT_CPU_LAUNCHER)

#define CT_CPU_TABLE_ENTRY(name) [CT_K_##name] = cpu_launch_##name,
static const cpu_kernel_launcher launchers[CT_KERNEL_COUNT] = {CT_KERNEL_LIST(CT_CPU_TABLE_ENTRY)};

ct_status ct_cpu_launch(int index, int kernel, void *const buffers[], const ct_kparams *params,
                        long work_per_item)
{
    (void)index;
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT || !launchers[kernel])
        return ct_error(CT_ERR_INTERNAL, "cpu: no kernel with id %d", kernel);
    if (params->n <= 0) return CT_OK;
    void *b[CT_KERNEL_MAX_BUFFERS];
    for (int i = 0; i < CT_KERNEL_MAX_BUFFERS; i++) b[i] = buffers[i];
    long work = params->n * (work_per_item > 0 ? work_per_item : 1);
    launchers[kernel](b, params, work >= CT_CPU_PARALLEL_MIN_WORK);
    return CT_OK;
}
