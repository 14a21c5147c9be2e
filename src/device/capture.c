/* The active capture of each device (capture.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/core_internal.h"
#include "device/backend_interface.h"
#include "device/capture.h"
#include "device/device_internal.h"

static _Atomic(ct_capture *) active[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];

static bool in_range(ct_device device)
{
    return device.type >= 0 && device.type < CT_DEVICE_TYPE_COUNT && device.index >= 0 &&
           device.index < CT_MAX_DEVICES_PER_TYPE;
}

ct_status ct_capture_install(ct_capture *capture)
{
    char name[CT_DEVICE_STRING_MAX];
    if (!in_range(capture->device))
        return ct_error(CT_ERR_DEVICE, "graph capture: no such device");
    ct_capture *expected = NULL;
    if (!atomic_compare_exchange_strong(&active[capture->device.type][capture->device.index], &expected, capture))
        return ct_error(CT_ERR_CAPTURE, "ct_graph_begin: %s is capturing a graph already; end that "
                        "capture (ct_graph_end) before beginning another on the device",
                        ct_device_format(capture->device, name, sizeof name));
    return CT_OK;
}

void ct_capture_remove(const ct_capture *capture)
{
    if (!in_range(capture->device)) return;
    ct_capture *expected = (ct_capture *)capture;
    atomic_compare_exchange_strong(&active[capture->device.type][capture->device.index], &expected, NULL);
}

ct_capture *ct_capture_of(ct_device device)
{
    if (!in_range(device)) return NULL;
    return atomic_load_explicit(&active[device.type][device.index], memory_order_acquire);
}

ct_capture *ct_capture_joined(ct_device device)
{
    ct_capture *capture = ct_capture_of(device);
    return capture && capture->stream_id == ct_current_stream_id(device) ? capture : NULL;
}

ct_status ct_capture_refuse(ct_device device, bool joined_only, const char *op, const char *why)
{
    ct_capture *capture = ct_capture_of(device);
    bool joined = capture && capture->stream_id == ct_current_stream_id(device);
    if (!capture || (joined_only && !joined)) return CT_OK;
    char name[CT_DEVICE_STRING_MAX], message[600];
    ct_device_format(device, name, sizeof name);
    if (!joined) /* another thread's, or another stream's: refused, the capture goes on */
        return ct_error(CT_ERR_CAPTURE, "%s cannot run now: it %s, and %s is capturing a graph on "
                        "another stream; call it once the capture has ended (ct_graph_end)", op, why, name);
    snprintf(message, sizeof message, "%s cannot be captured in a graph: it %s, and %s is capturing "
             "(the capture is abandoned; run it before ct_graph_begin or after ct_graph_end, and feed "
             "a graph through static tensors refilled with ct_copy_)", op, why, name);
    capture->abandon(capture, CT_ERR_CAPTURE, message);
    return ct_error(CT_ERR_CAPTURE, "%s", message);
}

ct_replay_counter *ct_replay_counter_new(void)
{
    ct_replay_counter *counter = calloc(1, sizeof *counter);
    if (!counter) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "graph capture: no host memory for a replay counter");
    atomic_init(&counter->count, 0);
    atomic_init(&counter->refcount, 1);
    return counter;
}

void ct_replay_counter_release(ct_replay_counter *counter)
{
    if (counter && atomic_fetch_sub(&counter->refcount, 1) == 1) free(counter);
}

ct_status ct_capture_count_replays(ct_device device, ct_replay_counter *counter)
{
    ct_capture *capture = ct_capture_joined(device);
    if (!capture) return CT_OK;
    if (capture->counter_count == capture->counter_capacity) {
        int64_t capacity = capture->counter_capacity ? 2 * capture->counter_capacity : 16;
        ct_replay_counter **grown = realloc(capture->counters, (size_t)capacity * sizeof *grown);
        if (!grown) return ct_error(CT_ERR_OUT_OF_MEMORY, "graph capture: no host memory for a replay counter");
        capture->counters = grown;
        capture->counter_capacity = capacity;
    }
    atomic_fetch_add(&counter->refcount, 1);
    capture->counters[capture->counter_count++] = counter;
    return CT_OK;
}

void ct_capture_replayed(ct_capture *capture)
{
    for (int64_t i = 0; i < capture->counter_count; i++) atomic_fetch_add(&capture->counters[i]->count, 1);
}

void ct_capture_release_counters(ct_capture *capture)
{
    for (int64_t i = 0; i < capture->counter_count; i++) ct_replay_counter_release(capture->counters[i]);
    free(capture->counters);
    capture->counters = NULL;
    capture->counter_count = capture->counter_capacity = 0;
}
