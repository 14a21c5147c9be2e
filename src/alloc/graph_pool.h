/* A graph's private memory pool (PyTorch's graph mempool): what a capture allocates comes from a
 * pool of its own, which no allocation outside the capture ever takes from, so the addresses a
 * graph was captured with stay the graph's for as long as it lives and replays allocate nothing.
 * While a capture runs, every block the capturing stream frees (a tensor the captured work is done
 * with, or one from before the capture that it still read) goes to the graph's pool too, never to
 * a pool others draw from. The pool is a stream pool (stream_pools.c) under a number no stream has
 * (CT_GRAPH_POOL_BIT set); emptying the cache leaves it alone. Releasing it (the graph is freed,
 * after its work has finished) hands its cached blocks to the captured stream's pool, and so
 * every block it allocated, when its last tensor is freed. */
#ifndef CT_GRAPH_POOL_H
#define CT_GRAPH_POOL_H

#include "alloc/alloc_internal.h"

#define CT_GRAPH_POOL_BIT (UINT64_C(1) << 63)

typedef struct ct_graph_pool ct_graph_pool;

/* A pool for a capture on stream (number and backend handle) of a resolved device, from now on
 * serving every allocation of that stream there: NULL with an error when host memory runs out. */
ct_graph_pool *ct_graph_pool_begin(ct_device device, uint64_t stream_id, void *stream);
/* The capture is over: the stream allocates from its own pool again; the graph keeps this one. */
void ct_graph_pool_end_capture(ct_graph_pool *pool);
/* Gives the pool up (see above), and frees it. NULL-safe. */
void ct_graph_pool_release(ct_graph_pool *pool);
/* Bytes the pool's blocks hold, cached or in tensors. */
size_t ct_graph_pool_bytes(const ct_graph_pool *pool);

/* For the caching allocator, under the device's lock: the number of the pool that a request, or a
 * free, of stream stream_id goes to (a capturing graph's, or stream_id itself); and noting a block
 * the graph's pool got from the driver (an error when the host has no room to note it). */
uint64_t ct_graph_pool_redirect(ct_device_allocator *a, uint64_t stream_id);
ct_status ct_graph_pool_note_block(ct_device_allocator *a, ct_block *block);

#endif
