/* ctorch graphs: capture work once, replay it many times (torch.cuda.CUDAGraph, torch.cuda.graph).
 *
 *     ct_graph *g = ct_graph_new();
 *     ct_graph_begin(g, device, NULL);    // from here, work on the device's capture stream is recorded
 *     ... forward, loss, backward, optimizer step on static input tensors ...
 *     ct_graph_end(g);
 *     for each batch: ct_copy_(static_x, x); ct_copy_(static_y, y); ct_graph_replay(g);
 *
 * Capturing records the work instead of running it: the kernels, matrix products and their
 * operands, not the ops' host work (checks, broadcasting, choice of kernel, allocation, autograd),
 * which a replay skips. Every device does it: CUDA by the driver's stream capture (cuBLAS
 * included), replayed by one graph launch; the CPU and OpenCL record their launches and products
 * and a replay issues them again. A replay runs on the thread's current stream of the device,
 * after the work queued there before it, and computes the same bits as running the ops would.
 *
 * Tensors: a capture reads and writes the memory its tensors had at capture time, and a replay
 * reads and writes that memory again. The graph keeps a reference to every tensor made before the
 * capture whose memory the captured work reads or writes (static inputs, parameters, gradients,
 * optimizer state) until ct_graph_free, so releasing one after the capture never lets another
 * tensor take its memory under a replay; and a replay after one of them has moved (ct_module_to)
 * is refused with CT_ERR_CAPTURE naming it, instead of updating the memory it left: capture again
 * after moving. Inputs are tensors made before the capture and refilled
 * (ct_copy_) before each replay; outputs (a loss, the parameters, their gradients) are tensors that
 * each replay overwrites. Shapes are fixed by construction: a batch of another size needs another
 * graph, or runs without one. Host values an op computes at capture time are replayed as they were
 * (an optimizer's learning rate, SGD's momentum after its first step): warm up with a step or more
 * before capturing, as PyTorch does, so that the captured step is the steady one.
 *
 * Memory allocated during the capture comes from a pool private to the graph and stays the
 * graph's until ct_graph_free: replays allocate nothing, and tensors freed during the capture go
 * back to that pool, never to memory other work may take. ct_graph_free waits for the graph's
 * work and hands the pool's memory back to the cache.
 *
 * What a capture cannot hold fails with CT_ERR_CAPTURE and a message naming the op and why: a
 * host synchronisation (ct_item, ct_tensor_to_array, a copy between the device and the host,
 * ct_synchronize, ct_stream_synchronize, ct_event_synchronize), random numbers (drawn at capture
 * time), Adam's and AdamW's step (their bias correction is a host value of the step count), and an
 * allocation that neither the pool nor the device can serve. The capture is then abandoned: the
 * stream runs work as before, the allocator serves as before, and ct_graph_end reports the reason.
 * Calls of another thread (or another stream) that would wait for the device fail with
 * CT_ERR_CAPTURE while the device captures, and the capture goes on. One capture per device at a
 * time. */
#ifndef CTORCH_GRAPH_H
#define CTORCH_GRAPH_H

#include "ctorch/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_graph ct_graph;

/* An empty graph; NULL when the host has no memory. */
ct_graph *ct_graph_new(void);
/* Begins capturing work of this thread on device, on stream (NULL: the current stream, or, when
 * that is the default stream, a stream of the graph's own, as torch.cuda.graph does), which
 * becomes this thread's current stream until ct_graph_end. A graph is captured once. */
ct_status ct_graph_begin(ct_graph *graph, ct_device device, ct_stream *stream);
/* Ends the capture and makes the graph ready to replay; the thread's current stream is again the
 * one it was at ct_graph_begin. CT_ERR_CAPTURE, with the reason, when the capture was abandoned. */
ct_status ct_graph_end(ct_graph *graph);
/* Runs the captured work once more, on the current stream of the graph's device. */
ct_status ct_graph_replay(ct_graph *graph);
/* Waits for the graph's work, frees it and gives its pool back. NULL-safe; a graph still capturing
 * is abandoned first. */
void ct_graph_free(ct_graph *graph);

/* The device it was captured on (the CPU for an empty graph). */
ct_device ct_graph_device(const ct_graph *graph);
/* Bytes of device memory its private pool holds (tensors made during the capture). */
size_t ct_graph_pool_bytes_held(const ct_graph *graph);

#ifdef __cplusplus
}
#endif
#endif
