/* The table from kernel id to CPU launcher, filled once from every family. */
#include <pthread.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_launcher.h"
#include "core/core_internal.h"

/* CT_CPU_PARALLEL_MIN_WORK: see cpu_launcher.h. */

static ct_cpu_kernel_launcher launchers[CT_KERNEL_COUNT];
static pthread_once_t launchers_once = PTHREAD_ONCE_INIT;

static void register_all(void)
{
#define CT_CPU_CALL_REGISTER(family) ct_cpu_register_##family(launchers);
    CT_KERNEL_SOURCES(CT_CPU_CALL_REGISTER)
#undef CT_CPU_CALL_REGISTER
}

/* Reductions split into chunks of 4096 to 32768 elements per work item, about 512 items in all
 * (a sum of 16M floats has 512 chunks of 32768): long enough to amortise an item and keep the
 * vector loop long, enough of them that every core is busy and evenly loaded, and short enough
 * that float32 partial sums stay accurate. A group is one item (CT_GROUP_CAPACITY is 1 in C). */
void ct_cpu_work_shape(int index, ct_work_shape *shape)
{
    (void)index;
    *shape = (ct_work_shape){.group_size = 1, .min_group_size = 1, .lanes_per_item = CT_ITEM_LANES,
                             .target_items = 512, .min_per_item = 4096, .max_per_item = 32768,
                             .elementwise_width = 1};
}

ct_status ct_cpu_launch(int index, void *stream, int kernel, void *const buffers[],
                        const ct_kparams *params, long work_per_item, int group_size)
{
    (void)index;
    if (group_size > 1)
        return ct_error(CT_ERR_INTERNAL, "cpu: kernel '%s' launched in groups of %d; the CPU runs "
                        "groups of 1", ct_kernel_name((ct_kernel_id)kernel), group_size);
    (void)stream; /* CPU work runs now, in call order: every stream is the same queue */
    pthread_once(&launchers_once, register_all);
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT || !launchers[kernel])
        return ct_error(CT_ERR_INTERNAL, "cpu: no kernel with id %d", kernel);
    if (params->n <= 0) return CT_OK;
    long work = params->n * (work_per_item > 0 ? work_per_item : 1);
    /* A multi-tensor kernel's launcher finds its table of buffers in buffer 0 (cpu_kernels_optim.c). */
    void *wide[CT_KERNEL_MAX_BUFFERS] = {(void *)buffers};
    bool is_wide = ct_kernel_buffer_count((ct_kernel_id)kernel) != CT_KERNEL_MAX_BUFFERS;
    launchers[kernel](is_wide ? wide : buffers, params, work >= CT_CPU_PARALLEL_MIN_WORK);
    return CT_OK;
}
