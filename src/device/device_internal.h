/* The device layer's services to the layers above: current streams and transfer counters. */
#ifndef CT_DEVICE_INTERNAL_H
#define CT_DEVICE_INTERNAL_H

#include "ctorch/stream.h"

/* The backend queue of this thread's current stream on a resolved device (NULL: default). */
void *ct_current_stream_handle(ct_device device);

/* Streams by number, for records that outlive a stream (the caching allocator's pools): every
 * stream gets a number never given again in the process; a device's default stream is 0. */
uint64_t ct_current_stream_id(ct_device device);
uint64_t ct_stream_id(const ct_stream *stream);
void *ct_stream_handle(const ct_stream *stream);
/* Called by ct_stream_destroy once the stream's work is done and before the backend frees it.
 * One hook (the allocator's); set it before any stream can be destroyed with records of it. */
typedef void (*ct_stream_destroy_hook)(ct_device device, uint64_t stream_id);
void ct_stream_set_destroy_hook(ct_stream_destroy_hook hook);

typedef enum ct_transfer_kind {
    CT_TRANSFER_HOST_TO_DEVICE,
    CT_TRANSFER_DEVICE_TO_HOST,
    CT_TRANSFER_DEVICE_TO_DEVICE
} ct_transfer_kind;

/* Counts bytes moved for a resolved device; the CPU moves nothing across a bus, so it counts
 * nothing. */
void ct_transfer_count(ct_device device, ct_transfer_kind kind, size_t bytes);
/* Counts one wait of the host for the device. */
void ct_transfer_count_sync(ct_device device);

#endif
