/* Graphs' private pools (graph_pool.h). */
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc/graph_pool.h"
#include "core/core_internal.h"

struct ct_graph_pool {
    ct_device device;
    uint64_t id;        /* its number among the stream pools: CT_GRAPH_POOL_BIT | n */
    uint64_t stream_id; /* the captured stream */
    ct_block **blocks;  /* every block it got from the driver */
    int count, capacity;
    size_t bytes;
};

static atomic_uint_fast64_t last_pool_number;

ct_graph_pool *ct_graph_pool_begin(ct_device device, uint64_t stream_id, void *stream)
{
    ct_device_allocator *a = ct_allocator_of(device);
    ct_graph_pool *pool = calloc(1, sizeof *pool);
    if (!a || !pool) {
        free(pool);
        return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_graph_begin: no host memory for a graph's pool");
    }
    pool->device = device;
    pool->id = CT_GRAPH_POOL_BIT | (atomic_fetch_add(&last_pool_number, 1) + 1);
    pool->stream_id = stream_id;
    pthread_mutex_lock(&a->lock);
    bool made = ct_stream_pool_get(a, pool->id, stream) != NULL;
    if (made) a->capturing = pool;
    pthread_mutex_unlock(&a->lock);
    if (!made) {
        free(pool);
        return NULL;
    }
    return pool;
}

void ct_graph_pool_end_capture(ct_graph_pool *pool)
{
    ct_device_allocator *a = ct_allocator_of(pool->device);
    pthread_mutex_lock(&a->lock);
    if (a->capturing == pool) a->capturing = NULL;
    pthread_mutex_unlock(&a->lock);
}

void ct_graph_pool_release(ct_graph_pool *pool)
{
    if (!pool) return;
    ct_graph_pool_end_capture(pool);
    ct_device_allocator *a = ct_allocator_of(pool->device);
    pthread_mutex_lock(&a->lock);
    /* Blocks still in tensors go to the captured stream's pool when those are freed... */
    for (int i = 0; i < pool->count; i++)
        if (pool->blocks[i]->stream_id == pool->id) pool->blocks[i]->stream_id = pool->stream_id;
    /* ...and the cached ones (its own, and those the capture freed) go there now. */
    ct_stream_pool *own = ct_stream_pool_find(a, pool->id);
    if (own) {
        for (int i = 0; i < a->stream_pool_count; i++)
            if (a->stream_pools[i] == own) a->stream_pools[i] = a->stream_pools[--a->stream_pool_count];
        for (int c = 0; c < CT_SIZE_CLASSES; c++) {
            ct_block *block;
            while ((block = ct_stream_pool_take(own, c))) {
                block->stream_id = pool->stream_id;
                ct_stream_pool_put(a, block);
            }
        }
        free(own);
    }
    pthread_mutex_unlock(&a->lock);
    free(pool->blocks);
    free(pool);
}

size_t ct_graph_pool_bytes(const ct_graph_pool *pool) { return pool ? pool->bytes : 0; }

uint64_t ct_graph_pool_redirect(ct_device_allocator *a, uint64_t stream_id)
{
    return a->capturing && a->capturing->stream_id == stream_id ? a->capturing->id : stream_id;
}

ct_status ct_graph_pool_note_block(ct_device_allocator *a, ct_block *block)
{
    ct_graph_pool *pool = a->capturing;
    if (!pool || block->stream_id != pool->id) return CT_OK;
    if (pool->count == pool->capacity) {
        int capacity = pool->capacity ? 2 * pool->capacity : 32;
        ct_block **grown = realloc(pool->blocks, (size_t)capacity * sizeof *grown);
        if (!grown) return ct_error(CT_ERR_OUT_OF_MEMORY, "graph capture: no host memory to note a block");
        pool->blocks = grown;
        pool->capacity = capacity;
    }
    pool->blocks[pool->count++] = block;
    pool->bytes += block->size;
    return CT_OK;
}
