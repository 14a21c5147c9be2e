/* The stand-in CUDA driver's streams (standin_internal.h) and what is queued on them besides
 * copies and kernels: host functions, and events, which are points in a stream. */
#include "standin_internal.h"

#include <stdlib.h>

struct CUevent_st {
    CUcontext ctx;
    unsigned generation;
    timeline *line; /* NULL until recorded */
    uint64_t seq;
    struct CUevent_st *next;
};

static CUevent events;

static bool stream_live(CUstream s)
{
    for (CUstream t = standin_streams; t; t = t->next)
        if (t == s) return !s->destroyed && standin_context_live(s->ctx, s->generation);
    return false;
}

CUresult standin_resolve_stream(CUstream handle, CUcontext ctx, CUstream *out)
{
    if (handle == NULL || handle == CU_STREAM_LEGACY || handle == CU_STREAM_PER_THREAD) {
        if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;
        *out = ctx->null_stream;
        return CUDA_SUCCESS;
    }
    if (!stream_live(handle)) return CUDA_ERROR_INVALID_HANDLE;
    *out = handle;
    return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    standin_call_counts.stream_creates++;
    if (!phStream || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s = standin_stream_new(ctx, false, !(flags & CU_STREAM_NON_BLOCKING));
    if (!s) return standin_leave(CUDA_ERROR_OUT_OF_MEMORY);
    *phStream = s;
    return standin_leave(CUDA_SUCCESS);
}

/* Returns at once; the stream's queued work still runs, then its worker ends. */
CUresult cuStreamDestroy(CUstream handle)
{
    ENTER();
    if (!handle || !stream_live(handle)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    handle->destroyed = true;
    pthread_cond_broadcast(&standin_changed);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuStreamSynchronize(CUstream handle)
{
    ENTER();
    standin_call_counts.synchronizes++;
    CUstream s;
    CUresult r = standin_resolve_stream(handle, standin_live_current(), &s);
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_INVALID_CONTEXT) standin_complain("cuStreamSynchronize(NULL) without a current context");
        return standin_leave(r);
    }
    if (s->capture) return standin_leave(standin_capture_refuse_sync(s->ctx, s, "cuStreamSynchronize"));
    CUcontext ctx = s->ctx; /* s may be destroyed and freed while this waits */
    timeline *line = standin_timeline_ref(s->line);
    if (s->is_null) {
        /* The NULL stream's point after the blocking streams' work, as a marker there. */
        standin_enqueue(s, standin_op_new(OP_MARKER));
    }
    standin_wait_for(line, line->queued);
    standin_timeline_unref(line);
    /* A kernel's fault shows at the next synchronisation. */
    return standin_leave(ctx->failure);
}

CUresult cuStreamWaitEvent(CUstream handle, CUevent event, unsigned int flags)
{
    ENTER();
    standin_call_counts.stream_waits++;
    if (flags != 0) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, standin_live_current(), &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    bool found = false;
    for (CUevent e = events; e; e = e->next) found = found || e == event;
    if (!found || !standin_context_live(event->ctx, event->generation)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    op *o = standin_op_new(OP_MARKER);
    /* The event may be another device's. */
    if (event->line) standin_op_wait(o, event->line, event->seq);
    standin_enqueue(s, o);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuLaunchHostFunc(CUstream handle, CUhostFn fn, void *userData)
{
    ENTER();
    standin_call_counts.host_funcs++;
    if (!fn) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, standin_live_current(), &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    op *o = standin_op_new(OP_HOST_FUNCTION);
    o->u.host.fn = fn;
    o->u.host.data = userData;
    standin_enqueue(s, o);
    return standin_leave(CUDA_SUCCESS);
}

/* ---- events ---- */

static bool event_live(CUevent event)
{
    for (CUevent e = events; e; e = e->next)
        if (e == event) return standin_context_live(event->ctx, event->generation);
    return false;
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int flags)
{
    ENTER_CONTEXT(ctx);
    const unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
    if (!phEvent || (flags & ~known)) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (flags & CU_EVENT_INTERPROCESS) return standin_leave(CUDA_ERROR_NOT_SUPPORTED);
    CUevent e = standin_checked_calloc(1, sizeof *e);
    e->ctx = ctx;
    e->generation = ctx->generation;
    e->next = events;
    events = e;
    *phEvent = e;
    return standin_leave(CUDA_SUCCESS);
}

/* Returns at once, recorded work pending or not. */
CUresult cuEventDestroy(CUevent event)
{
    ENTER();
    for (CUevent *link = &events; *link; link = &(*link)->next)
        if (*link == event) {
            *link = event->next;
            standin_timeline_unref(event->line);
            free(event);
            return standin_leave(CUDA_SUCCESS);
        }
    return standin_leave(CUDA_ERROR_INVALID_HANDLE);
}

CUresult cuEventRecord(CUevent event, CUstream handle)
{
    ENTER();
    standin_call_counts.event_records++;
    if (!event_live(event)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, standin_live_current(), &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (s->ctx != event->ctx) {
        standin_complain("cuEventRecord: an event of device %d recorded on a stream of device %d",
                         event->ctx->device, s->ctx->device);
        return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    }
    if (s->capture) { /* a real driver makes it a node of the graph; ctorch records none there */
        standin_complain("cuEventRecord on a capturing stream: the stand-in does not capture events");
        return standin_leave(CUDA_ERROR_NOT_SUPPORTED);
    }
    uint64_t seq = standin_enqueue(s, standin_op_new(OP_MARKER));
    standin_timeline_unref(event->line);
    event->line = standin_timeline_ref(s->line);
    event->seq = seq;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuEventQuery(CUevent event)
{
    ENTER();
    if (!event_live(event)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    bool done = !event->line || event->line->completed >= event->seq;
    if (event->ctx->failure != CUDA_SUCCESS) return standin_leave(event->ctx->failure);
    return standin_leave(done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY);
}

CUresult cuEventSynchronize(CUevent event)
{
    ENTER();
    standin_call_counts.synchronizes++;
    if (!event_live(event)) return standin_leave(CUDA_ERROR_INVALID_HANDLE);
    CUcontext ctx = event->ctx; /* the event may be destroyed while this waits */
    if (event->line) {
        timeline *line = standin_timeline_ref(event->line);
        standin_wait_for(line, event->seq);
        standin_timeline_unref(line);
    }
    return standin_leave(ctx->failure);
}
