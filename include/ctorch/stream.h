/* ctorch streams, events, pinned host memory and transfer counters.
 *
 * A stream is an in-order queue of work on one device; work on two streams may overlap. Every
 * thread has a current stream per device (the device's default stream until ct_set_stream), and
 * ops and copies on that device are queued there. An event marks a point in a stream: another
 * stream can wait for it, or the host can. On the CPU, work runs when it is called, so streams
 * and events there are trivially complete.
 *
 * Memory and streams (PyTorch's rule for its caching allocator): a tensor's memory belongs to the
 * stream that was current when it was allocated. When the tensor is freed, the memory goes back
 * to that stream's cache and is handed out again only to allocations on that same stream: a
 * stream runs in order, so the next user's kernels start after the last kernel that used it.
 * Work queued on another stream is not ordered with it, so when a tensor is used on a stream
 * other than its own, call ct_tensor_record_stream(t, that stream): when t is freed, ctorch
 * records an event on that stream and reuses the memory only once the event has happened (it
 * asks, it does not wait; under memory pressure and in ct_empty_cache it waits). Without that
 * call, the memory of a tensor freed while another stream still reads it may be overwritten by
 * the next tensor of its own stream. Destroying a stream waits for its work, and its cached
 * memory then serves the default stream.
 *
 * Pinned (page-locked) host memory is what a device copies from and to at full speed, and the
 * only host memory a non-blocking copy uses: ct_to with non_blocking from a pinned CPU tensor to
 * a device, or from a device to the CPU (the result is then pinned), returns once the copy is
 * queued. Reading such a result (ct_tensor_to_array, ct_item, ops on it) waits for exactly that
 * copy. From unpinned memory a non-blocking copy is done blocking (CTORCH_LOG=debug says so). */
#ifndef CTORCH_STREAM_H
#define CTORCH_STREAM_H

#include "ctorch/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ct_stream ct_stream;
typedef struct ct_event ct_event;

ct_stream *ct_stream_create(ct_device device);
/* Waits for the stream's work, then frees it. NULL-safe. A thread whose current stream it was
 * goes back to the default stream, and so does the memory cached for it (and tensors allocated
 * on it return their memory to the default stream's cache when freed). */
void ct_stream_free(ct_stream *stream);
void ct_stream_destroy(ct_stream *stream); /* the same as ct_stream_free (an older name) */
ct_device ct_stream_device(const ct_stream *stream);
/* Makes stream the current stream of its device in this thread. */
ct_status ct_set_stream(ct_stream *stream);
ct_status ct_set_default_stream(ct_device device);
/* This thread's current stream on device; NULL means the device's default stream. */
ct_stream *ct_current_stream(ct_device device);
/* Waits for everything queued on the stream (NULL: device's default stream, see ct_synchronize). */
ct_status ct_stream_synchronize(ct_stream *stream);

ct_event *ct_event_create(ct_device device);
/* Frees the event. NULL-safe. */
void ct_event_free(ct_event *event);
void ct_event_destroy(ct_event *event); /* the same as ct_event_free (an older name) */
/* Marks the current end of stream (NULL: the current stream of the event's device). */
ct_status ct_event_record(ct_event *event, ct_stream *stream);
/* Work queued on stream after this waits until event has happened (NULL: current stream). */
ct_status ct_stream_wait_event(ct_stream *stream, ct_event *event);
/* The host waits until event has happened. */
ct_status ct_event_synchronize(ct_event *event);

/* Marks that work queued on `stream` uses t's memory, though t was allocated on another stream
 * (PyTorch's Tensor.record_stream). When t's memory is freed (its last tensor released), it is
 * not reused until the work queued on `stream` by then has finished; without this, it could be
 * handed to the next tensor of the stream t was allocated on while `stream` still reads it.
 * NULL means the default stream of t's device, so ct_tensor_record_stream(t,
 * ct_current_stream(device)) marks the current stream whichever it is. Marking t's own stream,
 * or a stream again, does nothing. Errors: t NULL; a stream of another device than t's. */
ct_status ct_tensor_record_stream(const ct_tensor *t, ct_stream *stream);

/* ---- pinned host memory ---- */
/* A CPU tensor in page-locked memory, pinned by the first accelerator backend available (CUDA,
 * then OpenCL); where there is none, plain page-aligned memory (ct_is_pinned says false). */
ct_tensor *ct_empty_pinned(const int64_t *shape, int ndim, ct_dtype dtype);
/* A pinned copy of a CPU tensor (t itself, retained, when it is pinned already). */
ct_tensor *ct_pin_memory(const ct_tensor *t);
bool ct_is_pinned(const ct_tensor *t);

/* ---- transfer counters, per device: what crossed between the host and the device ---- */
typedef struct ct_transfer_stats {
    uint64_t host_to_device_bytes;
    uint64_t device_to_host_bytes;
    uint64_t device_to_device_bytes; /* within the device, or arriving from another device */
    uint64_t host_syncs;             /* times the host waited for the device */
} ct_transfer_stats;
ct_status ct_transfer_stats_get(ct_device device, ct_transfer_stats *stats);
void ct_transfer_stats_reset(ct_device device);

#ifdef __cplusplus
}
#endif
#endif
