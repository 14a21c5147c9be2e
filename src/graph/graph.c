/* Graphs: capture and replay (ctorch/graph.h). The device layer knows which stream captures
 * (device/capture.h) and refuses what cannot join; the backend layer records launches where the
 * backend has no capture of its own (backend/launch_record.h), and the allocator gives the capture
 * a private pool (alloc/graph_pool.h). This file ties them together. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc/graph_pool.h"
#include "backend/launch_record.h"
#include "core/core_internal.h"
#include "ctorch/alloc.h"
#include "ctorch/graph.h"
#include "device/capture.h"
#include "device/device_internal.h"
#include "tensor/tensor_internal.h"

typedef enum { GRAPH_EMPTY, GRAPH_CAPTURING, GRAPH_READY, GRAPH_ABANDONED } graph_state;

struct ct_graph {
    ct_capture capture; /* first: the device layer hands it back to abandon() */
    graph_state state;
    ct_device device;
    const ct_backend *backend;
    ct_stream *stream;     /* the captured stream */
    ct_stream *own_stream; /* the graph's own, when it made one (freed with it) */
    ct_stream *previous;   /* the thread's current stream before the capture (NULL: default) */
    ct_graph_pool *pool;
    void *native;          /* the backend's executable graph, where it captures itself */
    ct_status abandoned_status;
    char abandoned_message[600];
    /* The tensors from before the capture that its work reads or writes, kept (a reference each)
     * with the storage each had: a replay refuses when one has moved (ct_module_to). An open
     * addressing set over held[0..held_count), slot_count a power of two (or 0). */
    struct held_tensor {
        ct_tensor *tensor;
        ct_storage *storage;
    } *held;
    size_t held_count, held_capacity, *slots, slot_count;
    bool hold_failed;
};

static size_t pointer_slot(const void *p, size_t slot_count)
{
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= UINT64_C(0xed5ad4bb);
    x ^= x >> 11;
    return (size_t)x & (slot_count - 1);
}

/* The set's slots: indices + 1 into held, 0 for empty. */
static bool grow_held(ct_graph *graph)
{
    size_t capacity = graph->held_capacity ? 2 * graph->held_capacity : 32;
    struct held_tensor *held = realloc(graph->held, capacity * sizeof *held);
    if (!held) return false;
    graph->held = held;
    graph->held_capacity = capacity;
    size_t slot_count = 2 * capacity, *slots = calloc(slot_count, sizeof *slots);
    if (!slots) return false;
    free(graph->slots);
    graph->slots = slots;
    graph->slot_count = slot_count;
    for (size_t i = 0; i < graph->held_count; i++) {
        size_t s = pointer_slot(held[i].tensor, slot_count);
        while (slots[s]) s = (s + 1) & (slot_count - 1);
        slots[s] = i + 1;
    }
    return true;
}

static void hold(ct_capture *capture, void *tensor)
{
    ct_graph *graph = (ct_graph *)capture;
    ct_tensor *t = tensor;
    if (graph->slot_count) {
        size_t s = pointer_slot(t, graph->slot_count);
        for (; graph->slots[s]; s = (s + 1) & (graph->slot_count - 1))
            if (graph->held[graph->slots[s] - 1].tensor == t) return;
    }
    if (graph->held_count == graph->held_capacity && !grow_held(graph)) {
        graph->hold_failed = true;
        return;
    }
    atomic_fetch_add(&t->refcount, 1); /* released by ct_graph_free */
    graph->held[graph->held_count] = (struct held_tensor){t, t->storage};
    size_t s = pointer_slot(t, graph->slot_count);
    while (graph->slots[s]) s = (s + 1) & (graph->slot_count - 1);
    graph->slots[s] = ++graph->held_count;
}

static void release_held(ct_graph *graph)
{
    ct_api_enter(); /* the graph's own references: a user's scope that records a tensor keeps its own */
    for (size_t i = 0; i < graph->held_count; i++) ct_release(graph->held[i].tensor);
    ct_api_return(NULL);
    free(graph->held);
    free(graph->slots);
    graph->held = NULL;
    graph->slots = NULL;
    graph->held_count = graph->held_capacity = graph->slot_count = 0;
}

ct_graph *ct_graph_new(void)
{
    ct_graph *graph = calloc(1, sizeof *graph);
    if (!graph) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_graph_new: no host memory");
    graph->device = CT_DEVICE_CPU;
    return graph;
}

/* The capture is over, captured or not: the stream and the allocator serve as before. */
static void stop_capturing(ct_graph *graph)
{
    ct_capture_remove(&graph->capture);
    ct_graph_pool_end_capture(graph->pool);
    if (graph->previous)
        ct_set_stream(graph->previous);
    else
        ct_set_default_stream(graph->device);
}

static void abandon(ct_capture *capture, ct_status status, const char *message)
{
    ct_graph *graph = (ct_graph *)capture;
    if (graph->state != GRAPH_CAPTURING) return;
    if (graph->backend->capture_abandon)
        graph->backend->capture_abandon(graph->device.index, graph->capture.stream);
    stop_capturing(graph);
    graph->state = GRAPH_ABANDONED;
    graph->abandoned_status = status;
    snprintf(graph->abandoned_message, sizeof graph->abandoned_message, "%s", message);
}

/* The stream to capture on: the given one, the current one, or one of the graph's own. */
static ct_status choose_stream(ct_graph *graph, ct_stream *stream)
{
    char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
    graph->previous = ct_current_stream(graph->device);
    if (stream && !ct_device_equal(ct_stream_device(stream), graph->device))
        return ct_error(CT_ERR_DEVICE, "ct_graph_begin: the stream belongs to %s, not to %s; capture "
                        "on a stream of the graph's device", ct_device_format(ct_stream_device(stream), a, sizeof a),
                        ct_device_format(graph->device, b, sizeof b));
    if (!stream) stream = graph->previous;
    if (!stream) { /* the default stream cannot be captured (CUDA's legacy stream) */
        graph->own_stream = ct_stream_create(graph->device);
        if (!graph->own_stream) return ct_last_error();
        stream = graph->own_stream;
    }
    graph->stream = stream;
    return ct_set_stream(stream);
}

ct_status ct_graph_begin(ct_graph *graph, ct_device device, ct_stream *stream)
{
    if (!graph) return ct_null_argument("ct_graph_begin", "graph"), ct_last_error();
    if (graph->state != GRAPH_EMPTY)
        return ct_error(CT_ERR_CAPTURE, "ct_graph_begin: this graph has been captured already; a graph "
                        "is captured once (make another with ct_graph_new)");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    graph->backend = ct_backend_of(device);
    if (!graph->backend) return ct_last_error();
    graph->device = device;
    /* As torch.cuda.graph does on entering: memory the cache holds goes back to the device, which
     * the capture's pool and cuBLAS's workspace may need (a capture cannot empty the cache). */
    ct_empty_cache(device);
    if ((status = choose_stream(graph, stream)) != CT_OK) goto failed;
    graph->capture = (ct_capture){.device = device, .stream_id = ct_stream_id(graph->stream),
                                  .stream = ct_stream_handle(graph->stream), .abandon = abandon,
                                  .hold = hold};
    if (!graph->backend->capture_begin && !(graph->capture.record = ct_launch_record_new())) goto failed_status;
    if ((status = ct_capture_install(&graph->capture)) != CT_OK) goto failed;
    graph->pool = ct_graph_pool_begin(device, graph->capture.stream_id, graph->capture.stream);
    if (!graph->pool) {
        ct_capture_remove(&graph->capture);
        goto failed_status;
    }
    if (graph->backend->capture_begin &&
        (status = graph->backend->capture_begin(device.index, graph->capture.stream)) != CT_OK) {
        ct_capture_remove(&graph->capture);
        ct_graph_pool_release(graph->pool);
        graph->pool = NULL;
        goto failed;
    }
    graph->state = GRAPH_CAPTURING;
    return CT_OK;

failed_status:
    status = ct_last_error();
failed:
    ct_launch_record_free(graph->capture.record);
    graph->capture.record = NULL;
    if (graph->previous) ct_set_stream(graph->previous); else ct_set_default_stream(device);
    ct_stream_destroy(graph->own_stream);
    graph->own_stream = NULL;
    return status;
}

ct_status ct_graph_end(ct_graph *graph)
{
    if (!graph) return ct_null_argument("ct_graph_end", "graph"), ct_last_error();
    if (graph->state == GRAPH_ABANDONED)
        return ct_error(graph->abandoned_status, "ct_graph_end: the capture was abandoned: %s",
                        graph->abandoned_message);
    if (graph->state != GRAPH_CAPTURING)
        return ct_error(CT_ERR_CAPTURE, "ct_graph_end: the graph is not capturing (%s)",
                        graph->state == GRAPH_EMPTY ? "call ct_graph_begin first" : "it was ended already");
    ct_status status = CT_OK;
    if (graph->backend->capture_end)
        status = graph->backend->capture_end(graph->device.index, graph->capture.stream, &graph->native);
    stop_capturing(graph);
    if (status != CT_OK) {
        graph->state = GRAPH_ABANDONED;
        graph->abandoned_status = status;
        snprintf(graph->abandoned_message, sizeof graph->abandoned_message, "%s", ct_last_error_message());
        return status;
    }
    if (graph->hold_failed) {
        graph->state = GRAPH_ABANDONED;
        graph->abandoned_status = CT_ERR_OUT_OF_MEMORY;
        snprintf(graph->abandoned_message, sizeof graph->abandoned_message, "no host memory to keep the "
                 "tensors the captured work reads and writes");
        return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_graph_end: %s", graph->abandoned_message);
    }
    graph->state = GRAPH_READY;
    return CT_OK;
}

ct_status ct_graph_replay(ct_graph *graph)
{
    if (!graph) return ct_null_argument("ct_graph_replay", "graph"), ct_last_error();
    if (graph->state == GRAPH_ABANDONED)
        return ct_error(CT_ERR_CAPTURE, "ct_graph_replay: the graph's capture was abandoned (%s); "
                        "there is nothing to replay", graph->abandoned_message);
    if (graph->state != GRAPH_READY)
        return ct_error(CT_ERR_CAPTURE, "ct_graph_replay: the graph is %s; replay a graph after "
                        "ct_graph_end", graph->state == GRAPH_EMPTY ? "empty" : "still capturing");
    if (ct_capture_joined(graph->device))
        return ct_error(CT_ERR_CAPTURE, "ct_graph_replay: the current stream is capturing another "
                        "graph; replaying a graph inside a capture is not supported");
    for (size_t i = 0; i < graph->held_count; i++) {
        const struct held_tensor *h = &graph->held[i];
        if (h->tensor->storage == h->storage) continue;
        char shape[128] = "[", device[CT_DEVICE_STRING_MAX];
        for (int d = 0; d < h->tensor->ndim; d++) {
            size_t used = strlen(shape);
            snprintf(shape + used, sizeof shape - used, d ? ", %lld" : "%lld", (long long)h->tensor->shape[d]);
        }
        size_t used = strlen(shape);
        snprintf(shape + used, sizeof shape - used, "]");
        return ct_error(CT_ERR_CAPTURE, "ct_graph_replay: a tensor the graph reads or writes (%s %s) has moved "
                        "since the capture (to %s: ct_module_to, or its data was replaced); a replay would "
                        "update the memory it left; capture a new graph after moving", shape,
                        ct_dtype_name(h->tensor->dtype), ct_device_format(h->tensor->storage->device, device,
                                                                          sizeof device));
    }
    void *stream = ct_current_stream_handle(graph->device);
    ct_status status = CT_OK; /* a backend's empty capture */
    if (graph->native) {
        ct_backend_count_graph_launch(graph->device);
        status = graph->backend->graph_launch(graph->device.index, graph->native, stream);
    } else if (graph->capture.record) {
        status = ct_launch_record_replay(graph->capture.record, graph->device, stream);
    }
    if (status == CT_OK) ct_capture_replayed(&graph->capture); /* counts kept on the host (SGD's steps) */
    return status;
}

void ct_graph_free(ct_graph *graph)
{
    if (!graph) return;
    if (graph->state == GRAPH_CAPTURING)
        abandon(&graph->capture, CT_ERR_CAPTURE, "the graph was freed while capturing");
    if (graph->state != GRAPH_EMPTY && !ct_capture_of(graph->device))
        graph->backend->synchronize(graph->device.index); /* its replays are done with the pool */
    ct_graph_pool_release(graph->pool);
    release_held(graph); /* none is the pool's: each goes back to the stream it came from */
    if (graph->native) graph->backend->graph_destroy(graph->device.index, graph->native);
    ct_launch_record_free(graph->capture.record);
    ct_capture_release_counters(&graph->capture);
    ct_stream_destroy(graph->own_stream);
    free(graph);
}

ct_device ct_graph_device(const ct_graph *graph)
{
    if (!graph) return ct_null_argument("ct_graph_device", "graph"), CT_DEVICE_CPU;
    return graph->device;
}

size_t ct_graph_pool_bytes_held(const ct_graph *graph)
{
    if (!graph) return ct_null_argument("ct_graph_pool_bytes_held", "graph"), 0;
    return ct_graph_pool_bytes(graph->pool);
}
