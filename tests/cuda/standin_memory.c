/* The stand-in CUDA driver's memory (standin_internal.h): device allocations, charged to their
 * device's size, and pinned host allocations, in one table sorted by address. */
#include "standin_internal.h"

#include <stdlib.h>
#include <string.h>

/* Set in a device pointer: not a canonical address, so the host faults on dereferencing one. */
#define DEVICE_BIT ((uintptr_t)1 << 63)

static allocation *allocations; /* sorted by base */
static size_t allocation_count, allocation_capacity;

/* Index of the first allocation whose base is above address. */
static size_t allocation_upper(uintptr_t address)
{
    size_t lo = 0, hi = allocation_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (allocations[mid].base <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

allocation *standin_find_allocation(uintptr_t address, size_t bytes)
{
    size_t i = allocation_upper(address);
    if (i == 0) return NULL;
    allocation *a = &allocations[i - 1];
    if (address - a->base > a->bytes || bytes > a->bytes - (address - a->base)) return NULL;
    if (bytes == 0 && address - a->base == a->bytes && a->bytes > 0) return NULL;
    return a;
}

static void add_allocation(allocation a)
{
    if (allocation_count == allocation_capacity) {
        allocation_capacity = allocation_capacity ? 2 * allocation_capacity : 64;
        allocation *grown = realloc(allocations, allocation_capacity * sizeof *allocations);
        if (!grown) {
            standin_complain("host out of memory");
            abort();
        }
        allocations = grown;
    }
    size_t i = allocation_upper(a.base);
    memmove(&allocations[i + 1], &allocations[i], (allocation_count - i) * sizeof *allocations);
    allocations[i] = a;
    allocation_count++;
}

static void remove_allocation(allocation *a)
{
    size_t i = (size_t)(a - allocations);
    memmove(&allocations[i], &allocations[i + 1], (allocation_count - i - 1) * sizeof *allocations);
    allocation_count--;
}

void *standin_host_of(const allocation *a, uintptr_t address)
{
    return (char *)a->host + (address - a->base);
}

void *standin_device_range(CUdeviceptr pointer, size_t bytes, const char *what, int *device_out)
{
    allocation *a = standin_find_allocation((uintptr_t)pointer, bytes);
    if (!a) {
        standin_complain("%s: [0x%llx, +%zu bytes) is not in any live device allocation", what,
                 (unsigned long long)pointer, bytes);
        return NULL;
    }
    if (device_out) *device_out = a->device;
    return standin_host_of(a, (uintptr_t)pointer);
}

bool standin_host_pointer(const void *p, const char *what)
{
    if (!p) return false;
    if ((uintptr_t)p & DEVICE_BIT) {
        standin_complain("%s: %p is a device pointer, given where the host's memory belongs",
                         what, p);
        return false;
    }
    return true;
}

bool standin_pinned_range(const void *host, size_t bytes)
{
    allocation *a = standin_find_allocation((uintptr_t)host, bytes);
    return a && a->device < 0;
}

void standin_free_device_memory(int dev)
{
    for (size_t i = allocation_count; i-- > 0;)
        if (allocations[i].device == dev) {
            standin_devices[dev].used = 0;
            free(allocations[i].host);
            remove_allocation(&allocations[i]);
        }
}

/* ---- the driver's calls ---- */

CUresult cuMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    ENTER_CONTEXT(ctx);
    if (!free_bytes || !total_bytes) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    device *d = &standin_devices[ctx->device];
    *free_bytes = d->total - d->used;
    *total_bytes = d->total;
    return standin_leave(CUDA_SUCCESS);
}

/* What an allocation takes from the device: rounded up as the driver's pages are. */
static size_t charged(size_t bytes)
{
    return (bytes + 511) & ~(size_t)511;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytes)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.mem_alloc++;
    if (!dptr || bytes == 0) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (standin_next_mem_alloc_failure != CUDA_SUCCESS) {
        CUresult failure = standin_next_mem_alloc_failure;
        standin_next_mem_alloc_failure = CUDA_SUCCESS;
        return standin_leave(failure);
    }
    device *d = &standin_devices[ctx->device];
    if (bytes > d->total - d->used || charged(bytes) > d->total - d->used)
        return standin_leave(CUDA_ERROR_OUT_OF_MEMORY);
    void *host = NULL;
    if (posix_memalign(&host, 256, bytes) != 0) return standin_leave(CUDA_ERROR_OUT_OF_MEMORY);
    memset(host, 0xff, bytes);
    d->used += charged(bytes);
    allocation a = {(uintptr_t)host | DEVICE_BIT, bytes, host, ctx->device};
    add_allocation(a);
    *dptr = (CUdeviceptr)a.base;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuMemFree(CUdeviceptr dptr)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    standin_call_counts.mem_free++;
    if (dptr == 0) return standin_leave(CUDA_SUCCESS);
    allocation *a = standin_find_allocation((uintptr_t)dptr, 0);
    if (!a || a->base != (uintptr_t)dptr || a->device < 0) {
        standin_complain("cuMemFree(0x%llx): not the start of a live device allocation",
                         (unsigned long long)dptr);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* cuMemFree waits for the device's work, which may still use the memory. */
    int dev = a->device;
    uintptr_t base = a->base;
    standin_drain_context(&standin_devices[dev].primary);
    a = standin_find_allocation(base, 0);
    if (!a || a->base != base) return standin_leave(CUDA_ERROR_INVALID_VALUE); /* freed meanwhile */
    standin_devices[dev].used -= charged(a->bytes);
    free(a->host);
    remove_allocation(a);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuMemHostAlloc(void **pp, size_t bytes, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    standin_call_counts.mem_host_alloc++;
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (!pp || bytes == 0 || (flags & ~known)) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    void *host = NULL;
    if (posix_memalign(&host, 4096, bytes) != 0) return standin_leave(CUDA_ERROR_OUT_OF_MEMORY);
    add_allocation((allocation){(uintptr_t)host, bytes, host, -1});
    *pp = host;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER_CONTEXT(ctx);
    (void)ctx;
    standin_call_counts.mem_free_host++;
    allocation *a = standin_find_allocation((uintptr_t)p, 0);
    if (!p || !a || a->base != (uintptr_t)p || a->device >= 0) {
        standin_complain("cuMemFreeHost(%p): not the start of a live cuMemHostAlloc allocation", p);
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    }
    /* Waits for the work that may still copy from or to it. */
    standin_drain_all();
    a = standin_find_allocation((uintptr_t)p, 0);
    if (!a || a->base != (uintptr_t)p) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    free(a->host);
    remove_allocation(a);
    return standin_leave(CUDA_SUCCESS);
}
