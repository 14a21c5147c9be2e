/* Size classes: 512 bytes and below share one class; above, each power of two is split into 4
 * classes, so a request wastes at most a quarter of its block and a pool lookup is O(1). Each
 * stream of a device has its own pools (stream_pools.c); blocks used on other streams wait for
 * them when freed (stream_uses.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/alloc_internal.h"
#include "alloc/graph_pool.h"
#include "core/core_internal.h"
#include "device/capture.h"
#include "device/device_internal.h"

#define CT_MIN_BLOCK 512

static ct_device_allocator allocators[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];
static pthread_once_t allocators_once = PTHREAD_ONCE_INIT;

static void init_allocators(void)
{
    for (int t = 0; t < CT_DEVICE_TYPE_COUNT; t++)
        for (int i = 0; i < CT_MAX_DEVICES_PER_TYPE; i++)
            pthread_mutex_init(&allocators[t][i].lock, NULL);
    ct_stream_set_destroy_hook(ct_stream_pools_forget_stream);
}

ct_device_allocator *ct_allocator_of(ct_device device)
{
    if (device.type < 0 || device.type >= CT_DEVICE_TYPE_COUNT || device.index < 0 ||
        device.index >= CT_MAX_DEVICES_PER_TYPE)
        return NULL;
    pthread_once(&allocators_once, init_allocators);
    return &allocators[device.type][device.index];
}

/* The class of a request and the block size it rounds up to; -1 when it cannot be represented. */
static int size_class_of(size_t bytes, size_t *class_size)
{
    if (bytes <= CT_MIN_BLOCK) {
        *class_size = CT_MIN_BLOCK;
        return 0;
    }
    int top = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^top < bytes <= 2^(top+1) */
    size_t quarter = (size_t)1 << (top - 2);
    size_t steps = (bytes - ((size_t)1 << top) + quarter - 1) / quarter; /* 1..4 */
    if (top >= 62) return -1;
    *class_size = ((size_t)1 << top) + steps * quarter;
    return (top - 9) * 4 + (int)steps; /* 513 bytes (top 9, step 1) is class 1 */
}

static void note_allocation(ct_memory_stats *s, size_t size)
{
    s->allocated += size;
    if (s->allocated > s->max_allocated) s->max_allocated = s->allocated;
    if (s->reserved > s->max_reserved) s->max_reserved = s->reserved;
}

static void release_pool(ct_device_allocator *a, ct_stream_pool *pool, ct_device device,
                         const ct_backend *backend)
{
    for (int c = 0; c < CT_SIZE_CLASSES; c++) {
        ct_block *block;
        while ((block = ct_stream_pool_take(pool, c))) {
            backend->raw_free(device.index, block->handle);
            a->stats.reserved -= block->size;
            a->stats.device_frees++;
            free(block->uses);
            free(block);
        }
    }
}

/* Frees every cached block of one device, of every stream, the pending ones once their streams'
 * work is done; the caller holds the lock. */
static void release_cache_locked(ct_device_allocator *a, ct_device device, const ct_backend *backend)
{
    ct_pending_frees_collect(a, device, true);
    release_pool(a, &a->default_pool, device, backend);
    for (int i = 0; i < a->stream_pool_count; i++)
        if (!(a->stream_pools[i]->stream_id & CT_GRAPH_POOL_BIT)) /* the graphs' stay theirs */
            release_pool(a, a->stream_pools[i], device, backend);
    ct_spare_events_release(a, device);
}


ct_block *ct_caching_allocator_malloc(ct_device device, size_t bytes)
{
    char asked[32], total_text[32], free_text[32], held[32], reserved[32], name[CT_DEVICE_STRING_MAX];
    ct_device_allocator *a = ct_allocator_of(device);
    const ct_backend *backend = ct_backend_of(device);
    if (!a || !backend) return NULL;
    size_t size;
    int size_class = size_class_of(bytes, &size);
    if (size_class < 0 || size_class >= CT_SIZE_CLASSES) goto out_of_memory;

    pthread_mutex_lock(&a->lock);
    uint64_t stream_id = ct_graph_pool_redirect(a, ct_current_stream_id(device));
    bool capturing = stream_id & CT_GRAPH_POOL_BIT;
    if (a->pending) ct_pending_frees_collect(a, device, false);
    ct_stream_pool *pool = ct_stream_pool_get(a, stream_id, ct_current_stream_handle(device));
    if (!pool) {
        pthread_mutex_unlock(&a->lock);
        return NULL;
    }
    ct_block *block = ct_stream_pool_take(pool, size_class);
    void *handle = NULL;
    ct_status status = block ? CT_OK : backend->raw_alloc(device.index, size, &handle);
    if (status == CT_ERR_OUT_OF_MEMORY && a->pending) {
        /* Memory pressure: a block waiting for another stream may be of this size. */
        ct_pending_frees_collect(a, device, true);
        block = ct_stream_pool_take(pool, size_class);
    }
    if (block) {
        a->stats.cache_hits++;
        note_allocation(&a->stats, block->size);
        pthread_mutex_unlock(&a->lock);
        return block;
    }
    if (status == CT_ERR_OUT_OF_MEMORY && capturing) {
        /* Freeing the cache would free device memory while the device captures (a driver call
         * that waits for the device): the capture ends instead. */
        pthread_mutex_unlock(&a->lock);
        char what[64];
        snprintf(what, sizeof what, "an allocation of %s", ct_format_bytes((double)bytes, asked, sizeof asked));
        return ct_capture_refuse(device, false, what, "needs memory that neither the graph's pool nor "
                                 "the device has free, and a capture cannot empty the cache to make room"),
               NULL;
    }
    if (status == CT_ERR_OUT_OF_MEMORY) {
        release_cache_locked(a, device, backend);
        status = backend->raw_alloc(device.index, size, &handle);
    }
    if (status != CT_OK && status != CT_ERR_OUT_OF_MEMORY) {
        pthread_mutex_unlock(&a->lock);
        return NULL; /* not a matter of room (a lost device, a driver error): its message stands */
    }
    block = handle ? calloc(1, sizeof *block) : NULL;
    if (!block) {
        if (handle) backend->raw_free(device.index, handle);
        pthread_mutex_unlock(&a->lock);
        goto out_of_memory;
    }
    block->handle = handle;
    block->size = size;
    block->device = device;
    block->size_class = size_class;
    block->stream_id = stream_id;
    if (ct_graph_pool_note_block(a, block) != CT_OK) {
        backend->raw_free(device.index, handle);
        free(block);
        pthread_mutex_unlock(&a->lock);
        return NULL;
    }
    a->stats.device_allocations++;
    a->stats.reserved += size;
    note_allocation(&a->stats, size);
    pthread_mutex_unlock(&a->lock);
    return block;

out_of_memory:;
    size_t free_bytes = 0, total_bytes = 0;
    backend->mem_get_info(device.index, &free_bytes, &total_bytes);
    ct_memory_stats stats = {0};
    ct_memory_stats_get(device, &stats);
    return ct_error_null(CT_ERR_OUT_OF_MEMORY,
                         "out of memory on %s: tried to allocate %s; the device has %s in total, "
                         "%s free; ctorch holds %s in tensors and %s reserved",
                         ct_device_format(device, name, sizeof name),
                         ct_format_bytes((double)bytes, asked, sizeof asked),
                         ct_format_bytes((double)total_bytes, total_text, sizeof total_text),
                         ct_format_bytes((double)free_bytes, free_text, sizeof free_text),
                         ct_format_bytes((double)stats.allocated, held, sizeof held),
                         ct_format_bytes((double)stats.reserved, reserved, sizeof reserved));
}

void ct_caching_allocator_free(ct_block *block)
{
    if (!block) return;
    if (block->device.type == CT_CPU && block->pinned_handle) {
        ct_pinned_free(block);
        return;
    }
    ct_device_allocator *a = ct_allocator_of(block->device);
    pthread_mutex_lock(&a->lock);
    /* Freed by a capture: the graph may read it at every replay, so it stays the graph's. */
    uint64_t freeing_stream = ct_current_stream_id(block->device);
    uint64_t pool_id = ct_graph_pool_redirect(a, freeing_stream);
    if (pool_id != freeing_stream) block->stream_id = pool_id;
    a->stats.allocated -= block->size;
    if (block->use_count == 0 || !ct_pending_free_start(a, block->device, block)) ct_stream_pool_put(a, block);
    pthread_mutex_unlock(&a->lock);
}

/* ---- the public statistics ---- */

ct_status ct_memory_stats_get(ct_device device, ct_memory_stats *stats)
{
    if (!stats) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_memory_stats_get: stats is NULL");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    ct_device_allocator *a = ct_allocator_of(device);
    pthread_mutex_lock(&a->lock);
    *stats = a->stats;
    pthread_mutex_unlock(&a->lock);
    return CT_OK;
}

static ct_memory_stats stats_or_zero(ct_device device)
{
    ct_memory_stats stats = {0};
    ct_memory_stats_get(device, &stats);
    return stats;
}

size_t ct_memory_allocated(ct_device device) { return stats_or_zero(device).allocated; }
size_t ct_max_memory_allocated(ct_device device) { return stats_or_zero(device).max_allocated; }
size_t ct_memory_reserved(ct_device device) { return stats_or_zero(device).reserved; }
size_t ct_max_memory_reserved(ct_device device) { return stats_or_zero(device).max_reserved; }

void ct_reset_peak_memory_stats(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return;
    ct_device_allocator *a = ct_allocator_of(device);
    pthread_mutex_lock(&a->lock);
    a->stats.max_allocated = a->stats.allocated;
    a->stats.max_reserved = a->stats.reserved;
    pthread_mutex_unlock(&a->lock);
}

void ct_empty_cache(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return;
    ct_device_allocator *a = ct_allocator_of(device);
    pthread_mutex_lock(&a->lock);
    /* Not while the device captures: freeing device memory waits for the device. */
    if (!a->capturing) release_cache_locked(a, device, ct_backend_table[device.type]);
    pthread_mutex_unlock(&a->lock);
}
