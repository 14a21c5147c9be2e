/* The table from kernel id to CPU launcher, filled once from every family. */
#include <pthread.h>
#include <stdio.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_launcher.h"
#include "core/core_internal.h"

/* CT_CPU_PARALLEL_MIN_WORK: see cpu_launcher.h. */

static ct_cpu_kernel_launcher launchers[CT_KERNEL_COUNT];
static pthread_once_t launchers_once = PTHREAD_ONCE_INIT;

/* Kernel outputs of this many bytes or more are written with non-temporal stores
 * (kernels/stream_store.h): half the last-level cache, where the output and an input as large
 * as it no longer fit there together. 16 MiB where the cache's size is not reported. */
long ct_cpu_streaming_min_bytes = 16L << 20;

/* The size of one instance of CPU 0's last-level cache, from sysfs; 0 where it is not there.
 * Not sysconf(_SC_LEVEL3_CACHE_SIZE): on an AMD EPYC glibc reports the whole socket's L3 (256 MiB
 * of 8 separate 32 MiB caches). */
static long last_level_cache_bytes(void)
{
    long best_level = 0, bytes = 0;
    for (int index = 0; index < 8; index++) {
        char path[96];
        long level = 0, kib = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", index);
        FILE *f = fopen(path, "r");
        if (!f) break;
        int read_level = fscanf(f, "%ld", &level);
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", index);
        f = fopen(path, "r");
        if (!f) continue;
        int read_size = fscanf(f, "%ldK", &kib);
        fclose(f);
        if (read_level == 1 && read_size == 1 && level > best_level) best_level = level, bytes = kib * 1024;
    }
    return bytes;
}

static void register_all(void)
{
    long last_level_cache = last_level_cache_bytes();
    if (last_level_cache > 0) ct_cpu_streaming_min_bytes = last_level_cache / 2;
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
