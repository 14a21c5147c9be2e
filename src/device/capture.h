/* Graph capture as the layers below the graph see it: which stream of a device is capturing, and
 * refusing what a capture cannot hold. A capture belongs to one stream of one device (at most one
 * capture per device at a time); work that a thread queues on that stream, its current stream
 * there, joins the capture instead of running. The graph layer (src/graph/) owns the capture; the
 * layers below only ask whether one is active and refuse what cannot join it: a host
 * synchronisation would wait for work that has not run, and a copy from or to host memory would
 * read or write the host at capture time, not at replay. */
#ifndef CT_DEVICE_CAPTURE_H
#define CT_DEVICE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctorch/device.h"

struct ct_launch_record;
typedef struct ct_capture ct_capture;

/* A count on the host that every replay of a graph advances: what a captured op counts without a
 * kernel (SGD's step count), refcounted by its holders (the op's owner, each graph that counts
 * it). */
typedef struct ct_replay_counter {
    _Atomic int64_t count;
    _Atomic int64_t refcount;
} ct_replay_counter;
/* A new counter at 0 held once, or NULL with CT_ERR_OUT_OF_MEMORY recorded. */
ct_replay_counter *ct_replay_counter_new(void);
/* Drops a reference (NULL-safe). */
void ct_replay_counter_release(ct_replay_counter *counter);
/* Every replay of the graph device is capturing (joined by this thread) advances counter by one;
 * CT_OK and nothing done when no capture is joined there. A counter registered twice advances by
 * two. */
ct_status ct_capture_count_replays(ct_device device, ct_replay_counter *counter);
/* The graph layer's: a successful replay of capture advances its counters; the capture's end of
 * life drops them. */
void ct_capture_replayed(ct_capture *capture);
void ct_capture_release_counters(ct_capture *capture);

struct ct_capture {
    ct_device device;
    /* Where launches and products go when the backend has no capture of its own (the backend
     * layer's launch_record.h); NULL when it has (CUDA: the driver captures the stream). */
    struct ct_launch_record *record;
    uint64_t stream_id; /* the captured stream (ct_stream_id) */
    void *stream;       /* its backend handle */
    /* Ends the capture at once, for what cannot join it (called by ct_capture_refuse, with the
     * message it recorded); the graph layer's. */
    void (*abandon)(ct_capture *capture, ct_status status, const char *message);
    /* Keeps a tensor (a struct ct_tensor) made before the capture whose memory captured work reads
     * or writes, so that it outlives the graph's replays (the graph layer's; the tensor layer calls
     * it as work takes a tensor's memory). NULL: nothing is kept. */
    void (*hold)(ct_capture *capture, void *tensor);
    /* Counters each replay advances (ct_capture_count_replays), held by the capture. */
    ct_replay_counter **counters;
    int64_t counter_count, counter_capacity;
};

/* Makes capture the device's active one: CT_ERR_CAPTURE when the device has one already. */
ct_status ct_capture_install(ct_capture *capture);
/* The device has no active capture any more (capture's, when it is the active one). */
void ct_capture_remove(const ct_capture *capture);
/* The active capture of a resolved device, whichever its stream, or NULL. A relaxed load: cheap
 * enough for every launch. */
ct_capture *ct_capture_of(ct_device device);
/* The active capture that work this thread queues now on device joins (its current stream
 * there is the captured one), or NULL. */
ct_capture *ct_capture_joined(ct_device device);

/* Refuses `op` on device because it `why` (a phrase: "waits on the host for the device"); CT_OK
 * when the device does not capture. When this thread's current stream is the captured one, the
 * capture is abandoned (the stream then runs work as usual) and CT_ERR_CAPTURE recorded with a
 * message naming the op, why and what to do. Another thread's or stream's call is refused with
 * CT_ERR_CAPTURE and the capture goes on, or, with `joined_only`, allowed (work on another stream
 * does not touch the capture). */
ct_status ct_capture_refuse(ct_device device, bool joined_only, const char *op, const char *why);

#endif
