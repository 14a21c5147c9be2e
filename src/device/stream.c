/* Streams and events: thin handles over the backend's queues, and each thread's current stream
 * per device (the default stream until ct_set_stream). */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"
#include "device/capture.h"
#include "device/device_internal.h"
#include "ctorch/stream.h"

struct ct_stream {
    ct_device device;
    void *handle;
    uint64_t id;
};

struct ct_event {
    ct_device device;
    void *handle;
};

static _Thread_local ct_stream *current_streams[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];
static atomic_uint_fast64_t last_stream_id; /* 0 is every device's default stream */
static _Atomic(ct_stream_destroy_hook) destroy_hook;

void *ct_current_stream_handle(ct_device device)
{
    ct_stream *stream = current_streams[device.type][device.index];
    return stream ? stream->handle : NULL;
}

uint64_t ct_current_stream_id(ct_device device)
{
    ct_stream *stream = current_streams[device.type][device.index];
    return stream ? stream->id : 0;
}

uint64_t ct_stream_id(const ct_stream *stream) { return stream ? stream->id : 0; }
void *ct_stream_handle(const ct_stream *stream) { return stream ? stream->handle : NULL; }
void ct_stream_set_destroy_hook(ct_stream_destroy_hook hook) { atomic_store(&destroy_hook, hook); }

ct_stream *ct_stream_create(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return NULL;
    const ct_backend *backend = ct_backend_table[device.type];
    ct_stream *stream = calloc(1, sizeof *stream);
    if (!stream) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_stream_create: no host memory");
    stream->device = device;
    if (backend->stream_create(device.index, &stream->handle) != CT_OK) {
        free(stream);
        return NULL;
    }
    stream->id = atomic_fetch_add(&last_stream_id, 1) + 1;
    return stream;
}

void ct_stream_destroy(ct_stream *stream)
{
    if (!stream) return;
    const ct_backend *backend = ct_backend_table[stream->device.type];
    backend->stream_synchronize(stream->device.index, stream->handle);
    if (current_streams[stream->device.type][stream->device.index] == stream)
        current_streams[stream->device.type][stream->device.index] = NULL;
    ct_stream_destroy_hook hook = atomic_load(&destroy_hook);
    if (hook) hook(stream->device, stream->id);
    backend->stream_destroy(stream->device.index, stream->handle);
    free(stream);
}

ct_device ct_stream_device(const ct_stream *stream)
{
    if (!stream) return ct_null_argument("ct_stream_device", "stream"), CT_DEVICE_CPU;
    return stream->device;
}

ct_status ct_set_stream(ct_stream *stream)
{
    if (!stream) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_set_stream: stream is NULL; use "
                                 "ct_set_default_stream(device) to go back to the default stream");
    current_streams[stream->device.type][stream->device.index] = stream;
    return CT_OK;
}

ct_status ct_set_default_stream(ct_device device)
{
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    current_streams[device.type][device.index] = NULL;
    return CT_OK;
}

ct_stream *ct_current_stream(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return NULL;
    return current_streams[device.type][device.index];
}

ct_status ct_stream_synchronize(ct_stream *stream)
{
    if (!stream) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_stream_synchronize: stream is NULL; "
                                 "use ct_synchronize(device) for a device's default stream");
    ct_capture *capture = ct_capture_of(stream->device);
    if (capture && capture->stream_id == stream->id)
        return ct_capture_refuse(stream->device, false, "ct_stream_synchronize",
                                 "waits on the host for the captured stream, whose work has not run");
    ct_transfer_count_sync(stream->device);
    return ct_backend_table[stream->device.type]->stream_synchronize(stream->device.index, stream->handle);
}

ct_event *ct_event_create(ct_device device)
{
    if (ct_device_resolve(device, &device) != CT_OK) return NULL;
    ct_event *event = calloc(1, sizeof *event);
    if (!event) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_event_create: no host memory");
    event->device = device;
    if (ct_backend_table[device.type]->event_create(device.index, &event->handle) != CT_OK) {
        free(event);
        return NULL;
    }
    return event;
}

void ct_event_destroy(ct_event *event)
{
    if (!event) return;
    ct_backend_table[event->device.type]->event_destroy(event->device.index, event->handle);
    free(event);
}

/* The backend handle of stream for the event's device, or an error when they differ. */
static ct_status stream_handle_for(const char *function, ct_event *event, ct_stream *stream,
                                   void **handle)
{
    if (!event) return ct_error(CT_ERR_NULL_ARGUMENT, "%s: event is NULL", function);
    if (!stream) {
        *handle = ct_current_stream_handle(event->device);
        return CT_OK;
    }
    if (!ct_device_equal(stream->device, event->device)) {
        char a[CT_DEVICE_STRING_MAX], b[CT_DEVICE_STRING_MAX];
        return ct_error(CT_ERR_DEVICE, "%s: the event belongs to %s and the stream to %s; events "
                        "and streams must be of one device", function,
                        ct_device_format(event->device, a, sizeof a), ct_device_format(stream->device, b, sizeof b));
    }
    *handle = stream->handle;
    return CT_OK;
}

ct_status ct_event_record(ct_event *event, ct_stream *stream)
{
    void *handle = NULL;
    ct_status status = stream_handle_for("ct_event_record", event, stream, &handle);
    if (status != CT_OK) return status;
    return ct_backend_table[event->device.type]->event_record(event->device.index, event->handle, handle);
}

ct_status ct_stream_wait_event(ct_stream *stream, ct_event *event)
{
    void *handle = NULL;
    ct_status status = stream_handle_for("ct_stream_wait_event", event, stream, &handle);
    if (status != CT_OK) return status;
    return ct_backend_table[event->device.type]->stream_wait_event(event->device.index, handle, event->handle);
}

ct_status ct_event_synchronize(ct_event *event)
{
    if (!event) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_event_synchronize: event is NULL");
    ct_status refused = ct_capture_refuse(event->device, true, "ct_event_synchronize", "waits on the host for the device");
    if (refused != CT_OK) return refused;
    ct_transfer_count_sync(event->device);
    return ct_backend_table[event->device.type]->event_synchronize(event->device.index, event->handle);
}

/* The `_free` verb of every object that is not refcounted (include/ctorch.h); the `_destroy`
 * names above stay as the same calls. */
void ct_stream_free(ct_stream *stream) { ct_stream_destroy(stream); }
void ct_event_free(ct_event *event) { ct_event_destroy(event); }
