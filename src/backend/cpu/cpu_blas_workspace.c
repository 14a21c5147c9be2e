/* Making sure OpenBLAS can map its work buffer before a product is handed to it.
 *
 * OpenBLAS maps a work buffer of BUFFER_SIZE for each of its threads when they start, and one for
 * the thread that calls it the first time that thread's product runs beside fewer buffers than
 * callers in flight (the first product of the process, and each time more callers than ever before
 * are in flight at once); it keeps them for reuse. When that mapping fails (the address space is
 * limited, as by ulimit -v, or memory is exhausted), blas_memory_alloc retries it forever: the
 * program hung in cblas_sgemm instead of failing. So before a product that may make OpenBLAS map a
 * buffer, ctorch maps as much itself, the same way (private anonymous memory, read and write),
 * gives it back, and answers with an out-of-memory error when that fails. Once OpenBLAS holds a
 * buffer for every caller in flight, products ask for nothing more and nothing is checked. */
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/mman.h>

#include "backend/cpu/cpu_blas_workspace.h"
#include "core/core_internal.h"

/* Callers in flight now, and the most there have been at once: OpenBLAS holds a buffer for each. */
static atomic_int callers_in_flight;
static atomic_int callers_held;

/* Can the process map bytes more of private memory now? */
static bool can_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    munmap(p, bytes);
    return true;
}

ct_status ct_cpu_blas_workspace_enter(void)
{
    int in_flight = atomic_fetch_add(&callers_in_flight, 1) + 1;
    int held = atomic_load(&callers_held);
    if (in_flight <= held) return CT_OK;
    size_t bytes = (size_t)(in_flight - held) * CT_OPENBLAS_BUFFER_BYTES;
    if (can_map(bytes)) return CT_OK;
    atomic_fetch_sub(&callers_in_flight, 1);
    return ct_error(CT_ERR_OUT_OF_MEMORY,
                    "cpu matmul: out of memory for OpenBLAS's work buffer: it maps %zu MiB for each "
                    "thread that calls it at once, on first use, and the process cannot map %zu MiB "
                    "more: its address space or data segment is limited (ulimit -v, ulimit -d) or "
                    "memory is exhausted; free memory or raise the limit",
                    CT_OPENBLAS_BUFFER_BYTES >> 20, bytes >> 20);
}

void ct_cpu_blas_workspace_leave(void)
{
    int in_flight = atomic_fetch_sub(&callers_in_flight, 1);
    int held = atomic_load(&callers_held);
    while (in_flight > held && !atomic_compare_exchange_weak(&callers_held, &held, in_flight)) {
    }
}
