/* The allocator layer's shared state: each device's pools, one set per stream, and the frees
 * that wait for other streams' work. Everything here is touched under the device's lock. */
#ifndef CT_ALLOC_INTERNAL_H
#define CT_ALLOC_INTERNAL_H

#include <pthread.h>

#include "alloc/caching_allocator.h"
#include "device/backend_interface.h"

#define CT_SIZE_CLASSES (64 * 4)

/* The cached blocks of one stream, by size class. */
typedef struct ct_stream_pool {
    uint64_t stream_id; /* 0: the device's default stream */
    void *stream;       /* its backend handle, where the events of blocks used on it are recorded */
    ct_block *classes[CT_SIZE_CLASSES];
} ct_stream_pool;

typedef struct ct_device_allocator {
    pthread_mutex_t lock;
    ct_stream_pool default_pool;
    ct_stream_pool **stream_pools; /* of the live streams that allocated or were recorded */
    int stream_pool_count, stream_pool_capacity;
    ct_block *pending;             /* freed, waiting for their events (linked by next) */
    void **spare_events;           /* events of finished waits, for the next ones */
    int spare_event_count, spare_event_capacity;
    ct_memory_stats stats;
    struct ct_graph_pool *capturing; /* the pool of the graph capturing on the device, or NULL */
} ct_device_allocator;

/* The allocator of a device (checked to be in range), or NULL. */
ct_device_allocator *ct_allocator_of(ct_device device);

/* ---- pools by stream (stream_pools.c) ---- */
/* The pool of a stream, or NULL when it has none (never allocated, or destroyed since). */
ct_stream_pool *ct_stream_pool_find(ct_device_allocator *a, uint64_t stream_id);
/* The pool of a stream, made on first use; NULL (with an error) when host memory runs out. */
ct_stream_pool *ct_stream_pool_get(ct_device_allocator *a, uint64_t stream_id, void *stream);
/* Puts a free block in its stream's pool; in the default stream's when its stream is gone. */
void ct_stream_pool_put(ct_device_allocator *a, ct_block *block);
/* Takes a block of a size class from a pool, or NULL. */
ct_block *ct_stream_pool_take(ct_stream_pool *pool, int size_class);
/* ct_stream_destroy's hook: the stream's cached blocks go to the default stream's pool. */
void ct_stream_pools_forget_stream(ct_device device, uint64_t stream_id);

/* ---- frees that wait for other streams (stream_uses.c) ---- */
/* Starts the free of a block recorded on other streams: records an event on each that is still
 * alive and puts the block in the pending list. false when there is nothing to wait for (the
 * caller pools it). */
bool ct_pending_free_start(ct_device_allocator *a, ct_device device, ct_block *block);
/* Pools the pending blocks whose events have all happened; with `wait`, waits for all of them. */
void ct_pending_frees_collect(ct_device_allocator *a, ct_device device, bool wait);
/* Destroys the spare events (emptying the cache gives the driver everything back). */
void ct_spare_events_release(ct_device_allocator *a, ct_device device);

/* Frees a block from ct_pinned_malloc. */
void ct_pinned_free(ct_block *block);

#endif
