/* ctorch memory: the caching allocator's statistics and cache control, per device. */
#ifndef CTORCH_ALLOC_H
#define CTORCH_ALLOC_H

#include "ctorch/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes held by live tensors (counted in the allocator's block sizes). */
size_t ct_memory_allocated(ct_device device);
size_t ct_max_memory_allocated(ct_device device);
/* Bytes the allocator holds from the device: allocated plus cached. */
size_t ct_memory_reserved(ct_device device);
size_t ct_max_memory_reserved(ct_device device);
/* Sets the peaks to the current values. */
void ct_reset_peak_memory_stats(ct_device device);
/* Returns cached, unused blocks of every stream to the device; blocks freed while a stream they
 * were recorded on (ct_tensor_record_stream) still had work queued are waited for and returned
 * too. */
void ct_empty_cache(ct_device device);

typedef struct ct_memory_stats {
    size_t allocated, max_allocated;
    size_t reserved, max_reserved;
    uint64_t device_allocations; /* calls that reached the device's (or system's) allocator */
    uint64_t device_frees;
    uint64_t cache_hits;         /* requests served from the cache */
} ct_memory_stats;
ct_status ct_memory_stats_get(ct_device device, ct_memory_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
