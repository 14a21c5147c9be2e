/* The caching allocator: one per device, over the backend's raw allocation. Freed blocks go to
 * size-class pools and are reused without calling the driver; a warm training loop makes no
 * device allocations at all.
 *
 * Pools are per stream, as PyTorch's CUDACachingAllocator: a block belongs to the stream it was
 * allocated on (the allocating thread's current stream of the device), goes back to that
 * stream's pool when freed, and a request takes only from the current stream's pool. A stream
 * runs in order, so its next kernel cannot start before the last one that used the block. Work
 * on another stream is not ordered with it: ct_caching_allocator_record_stream names such a
 * stream, and the block's free then waits (without blocking anyone) for an event on each. */
#ifndef CT_CACHING_ALLOCATOR_H
#define CT_CACHING_ALLOCATOR_H

#include "ctorch/alloc.h"
#include "ctorch/stream.h"

/* A stream other than the block's own that uses it, and once the block is freed, an event of
 * that stream's backend marking the end of its work at the time (NULL until then). */
typedef struct ct_stream_use {
    uint64_t stream_id;
    void *event;
} ct_stream_use;

typedef struct ct_block {
    void *handle;           /* what the backend returned: a host pointer, a cl_mem, ... */
    size_t size;            /* the size class, >= what was asked */
    ct_device device;
    int size_class;
    uint64_t stream_id;     /* the stream it was allocated on and is pooled for (0: default) */
    ct_stream_use *uses;    /* record_stream's streams; their events while the free is pending */
    int use_count, use_capacity;
    struct ct_block *next;  /* in its pool while cached, in the pending list while its free waits */
    /* Pinned host blocks (device is the CPU): the backend device that pinned it, and its handle. */
    bool pinned;
    ct_device pinned_by;
    void *pinned_handle;
} ct_block;

/* A block of at least `bytes` on a resolved device, for this thread's current stream there. On
 * out-of-memory: waits for the frees pending on other streams, releases the device's cache,
 * retries once, then records CT_ERR_OUT_OF_MEMORY with the sizes and returns NULL. */
ct_block *ct_caching_allocator_malloc(ct_device device, size_t bytes);
/* Back to the pool of its stream, at once or, when it was recorded on other streams, once their
 * work queued so far has finished (pinned blocks back to their backend). NULL-safe. */
void ct_caching_allocator_free(ct_block *block);
/* Notes that work on `stream` (NULL: the device's default stream) of the block's device uses the
 * block, so that its free waits for that work. The caller has checked the devices. */
ct_status ct_caching_allocator_record_stream(ct_block *block, const ct_stream *stream);

/* Page-locked host memory of at least `bytes`, from the first accelerator backend that has it
 * (CUDA, then OpenCL); page-aligned plain memory, with pinned false, where none has. */
ct_block *ct_pinned_malloc(size_t bytes);

#endif
