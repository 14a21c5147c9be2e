/* The caching allocator's pools, one set per stream of a device. A stream's pool is made the
 * first time the stream allocates (or is recorded as a user of a block) and lives until the
 * stream is destroyed; its cached blocks then serve the default stream, since the stream has
 * finished everything it queued. Streams are known by number (ct_stream_id), never by pointer,
 * so a block outliving its stream holds nothing that dangles. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "core/core_internal.h"

/* Where the pool of a stream other than the default one is in a's list, or -1. */
static int stream_pool_index(const ct_device_allocator *a, uint64_t stream_id)
{
    for (int i = 0; i < a->stream_pool_count; i++)
        if (a->stream_pools[i]->stream_id == stream_id) return i;
    return -1;
}

ct_stream_pool *ct_stream_pool_find(ct_device_allocator *a, uint64_t stream_id)
{
    if (stream_id == 0) return &a->default_pool;
    int i = stream_pool_index(a, stream_id);
    return i >= 0 ? a->stream_pools[i] : NULL;
}

ct_stream_pool *ct_stream_pool_get(ct_device_allocator *a, uint64_t stream_id, void *stream)
{
    ct_stream_pool *pool = ct_stream_pool_find(a, stream_id);
    if (pool) return pool;
    if (a->stream_pool_count == a->stream_pool_capacity) {
        int capacity = a->stream_pool_capacity ? 2 * a->stream_pool_capacity : 4;
        ct_stream_pool **grown = realloc(a->stream_pools, (size_t)capacity * sizeof *grown);
        if (!grown) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory to list a stream's pool");
        a->stream_pools = grown;
        a->stream_pool_capacity = capacity;
    }
    pool = calloc(1, sizeof *pool);
    if (!pool) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "no host memory for a stream's pool");
    pool->stream_id = stream_id;
    pool->stream = stream;
    a->stream_pools[a->stream_pool_count++] = pool;
    return pool;
}

void ct_stream_pool_put(ct_device_allocator *a, ct_block *block)
{
    ct_stream_pool *pool = ct_stream_pool_find(a, block->stream_id);
    if (!pool) { /* its stream was destroyed, after finishing its work */
        pool = &a->default_pool;
        block->stream_id = 0;
    }
    block->next = pool->classes[block->size_class];
    pool->classes[block->size_class] = block;
}

ct_block *ct_stream_pool_take(ct_stream_pool *pool, int size_class)
{
    ct_block *block = pool->classes[size_class];
    if (block) {
        pool->classes[size_class] = block->next;
        block->next = NULL;
    }
    return block;
}

void ct_stream_pools_forget_stream(ct_device device, uint64_t stream_id)
{
    ct_device_allocator *a = ct_allocator_of(device);
    if (!a || stream_id == 0) return;
    pthread_mutex_lock(&a->lock);
    int i = stream_pool_index(a, stream_id);
    if (i >= 0) {
        ct_stream_pool *pool = a->stream_pools[i];
        a->stream_pools[i] = a->stream_pools[--a->stream_pool_count];
        for (int c = 0; c < CT_SIZE_CLASSES; c++) {
            ct_block *block;
            while ((block = ct_stream_pool_take(pool, c))) ct_stream_pool_put(a, block); /* to the default pool */
        }
        free(pool);
    }
    /* The stream's events have happened: the frees that waited only for it are done. */
    if (a->pending) ct_pending_frees_collect(a, device, false);
    pthread_mutex_unlock(&a->lock);
}
