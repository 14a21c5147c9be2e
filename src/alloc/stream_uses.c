/* Blocks used on streams besides their own (ct_tensor_record_stream), as PyTorch's
 * record_stream: such a block's free records an event on each of those streams and keeps the
 * block out of every pool until all the events have happened. Nobody waits for them: each
 * allocation first asks (event_query) and pools what has finished; only memory pressure and
 * emptying the cache wait. */
#include <stdlib.h>

#include "alloc/alloc_internal.h"
#include "core/core_internal.h"
#include "device/device_internal.h"

ct_status ct_caching_allocator_record_stream(ct_block *block, const ct_stream *stream)
{
    /* Pinned host memory is the CPU's, whose streams are done when their calls return (queued
     * copies from it hold its storage until they finish). */
    if (!block || block->pinned_handle) return CT_OK;
    uint64_t stream_id = ct_stream_id(stream);
    ct_device_allocator *a = ct_allocator_of(block->device);
    ct_status status = CT_OK;
    pthread_mutex_lock(&a->lock);
    bool known = stream_id == block->stream_id; /* its own stream: in order already */
    for (int i = 0; i < block->use_count && !known; i++) known = block->uses[i].stream_id == stream_id;
    /* The stream's pool keeps its handle for the event at free time, and is forgotten with it. */
    if (!known && !ct_stream_pool_get(a, stream_id, ct_stream_handle(stream))) status = ct_last_error();
    if (!known && status == CT_OK && block->use_count == block->use_capacity) {
        int capacity = block->use_capacity ? 2 * block->use_capacity : 2;
        ct_stream_use *grown = realloc(block->uses, (size_t)capacity * sizeof *grown);
        if (grown) {
            block->uses = grown;
            block->use_capacity = capacity;
        } else {
            status = ct_error(CT_ERR_OUT_OF_MEMORY, "no host memory to note a stream's use of a block");
        }
    }
    if (!known && status == CT_OK) block->uses[block->use_count++] = (ct_stream_use){stream_id, NULL};
    pthread_mutex_unlock(&a->lock);
    return status;
}

static void *take_event(ct_device_allocator *a, ct_device device)
{
    if (a->spare_event_count > 0) return a->spare_events[--a->spare_event_count];
    void *event = NULL;
    return ct_backend_table[device.type]->event_create(device.index, &event) == CT_OK ? event : NULL;
}

static void give_back_event(ct_device_allocator *a, ct_device device, void *event)
{
    if (a->spare_event_count == a->spare_event_capacity) {
        int capacity = a->spare_event_capacity ? 2 * a->spare_event_capacity : 8;
        void **grown = realloc(a->spare_events, (size_t)capacity * sizeof *grown);
        if (!grown) {
            ct_backend_table[device.type]->event_destroy(device.index, event);
            return;
        }
        a->spare_events = grown;
        a->spare_event_capacity = capacity;
    }
    a->spare_events[a->spare_event_count++] = event;
}

void ct_spare_events_release(ct_device_allocator *a, ct_device device)
{
    for (int i = 0; i < a->spare_event_count; i++)
        ct_backend_table[device.type]->event_destroy(device.index, a->spare_events[i]);
    free(a->spare_events);
    a->spare_events = NULL;
    a->spare_event_count = a->spare_event_capacity = 0;
}

bool ct_pending_free_start(ct_device_allocator *a, ct_device device, ct_block *block)
{
    const ct_backend *backend = ct_backend_table[device.type];
    int waiting = 0;
    for (int i = 0; i < block->use_count; i++) {
        ct_stream_pool *pool = ct_stream_pool_find(a, block->uses[i].stream_id);
        if (!pool) continue; /* destroyed, so finished: nothing of it is left to wait for */
        void *event = take_event(a, device);
        if (event && backend->event_record(device.index, event, pool->stream) == CT_OK) {
            block->uses[waiting++].event = event;
            continue;
        }
        /* No event to wait with: the stream's work is waited for now instead. */
        if (event) give_back_event(a, device, event);
        ct_log_message(CT_LOG_WARN, "caching allocator: no event on a stream that used a freed "
                       "block (%s); waiting for the stream", ct_last_error_message());
        backend->stream_synchronize(device.index, pool->stream);
    }
    block->use_count = waiting;
    if (waiting == 0) return false;
    block->next = a->pending;
    a->pending = block;
    return true;
}

/* Drops the block's events that have happened (all of them with `wait`); true when none is left. */
static bool events_done(ct_device_allocator *a, ct_device device, ct_block *block, bool wait)
{
    const ct_backend *backend = ct_backend_table[device.type];
    int left = 0;
    for (int i = 0; i < block->use_count; i++) {
        void *event = block->uses[i].event;
        bool complete = true;
        ct_status status = wait ? backend->event_synchronize(device.index, event)
                                : backend->event_query(device.index, event, &complete);
        if (status != CT_OK) /* the device failed that work: nothing will use the block any more */
            ct_log_message(CT_LOG_WARN, "caching allocator: a stream that used a freed block "
                           "failed (%s); the block is reused", ct_last_error_message());
        if (complete || status != CT_OK)
            give_back_event(a, device, event);
        else
            block->uses[left++] = block->uses[i];
    }
    block->use_count = left;
    return left == 0;
}

void ct_pending_frees_collect(ct_device_allocator *a, ct_device device, bool wait)
{
    ct_block **link = &a->pending;
    while (*link) {
        ct_block *block = *link;
        if (!events_done(a, device, block, wait)) {
            link = &block->next;
            continue;
        }
        *link = block->next;
        block->next = NULL;
        ct_stream_pool_put(a, block);
    }
}
