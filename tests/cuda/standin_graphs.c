/* The stand-in CUDA driver's stream capture and graphs (standin_internal.h), as the driver
 * documents them:
 * - cuStreamBeginCapture turns a stream (never the legacy NULL stream) into a capturing one: the
 *   operations queued on it (kernels, copies, host functions, the stand-in cuBLAS's products,
 *   waits) are recorded into a graph instead of running;
 * - a synchronisation of a capturing stream (cuStreamSynchronize on it, cuCtxSynchronize of its
 *   context) is not permitted (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and invalidates the
 *   capture: cuStreamIsCapturing then says CU_STREAM_CAPTURE_STATUS_INVALIDATED and
 *   cuStreamEndCapture returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED with no graph, after which
 *   the stream runs work again;
 * - cuStreamEndCapture must come from the thread that began a capture not begun in
 *   CU_STREAM_CAPTURE_MODE_RELAXED (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
 * - cuGraphInstantiateWithFlags makes an executable graph, and cuGraphLaunch queues all of its
 *   operations on a stream, in their captured order, as one launch.
 * What it does not: dependencies between streams inside a capture (events are refused on a
 * capturing stream), graphs built by hand, launching a graph into another capture, updates. */
#include "standin_internal.h"

#include <stdlib.h>

/* The operations of a capture, shared by its graph and the executable graphs made from it, and
 * held by every copy of one queued by a launch. */
typedef struct captured_ops {
    int refs;
    op **ops;
    int count, capacity;
} captured_ops;

struct CUgraph_st {
    CUcontext ctx;
    captured_ops *ops;
};

struct CUgraphExec_st {
    CUcontext ctx;
    captured_ops *ops;
};

static captured_ops *captured_new(void)
{
    captured_ops *ops = standin_checked_calloc(1, sizeof *ops);
    ops->refs = 1;
    return ops;
}

void standin_captured_unref(captured_ops *ops)
{
    if (--ops->refs > 0) return;
    for (int i = 0; i < ops->count; i++) {
        op *o = ops->ops[i];
        if (o->kind == OP_CALL && o->u.call.finish) o->u.call.finish(o->u.call.arg);
        standin_op_free(o);
    }
    free(ops->ops);
    free(ops);
}

void standin_capture_append(CUstream s, op *o)
{
    /* What it waited for outside the capture is no part of the graph. */
    for (int i = 0; i < o->wait_count; i++) standin_timeline_unref(o->waits[i].line);
    free(o->waits);
    o->waits = NULL;
    o->wait_count = o->wait_capacity = 0;
    captured_ops *ops = s->capture->ops;
    if (ops->count == ops->capacity) {
        ops->capacity = ops->capacity ? 2 * ops->capacity : 16;
        op **grown = realloc(ops->ops, (size_t)ops->capacity * sizeof *grown);
        if (!grown) {
            standin_complain("host out of memory");
            abort();
        }
        ops->ops = grown;
    }
    ops->ops[ops->count++] = o;
}

CUresult standin_capture_refuse_sync(CUcontext ctx, CUstream s, const char *call)
{
    bool refused = false;
    for (CUstream t = standin_streams; t; t = t->next)
        if (t->capture && (s ? t == s : t->ctx == ctx)) {
            t->capture_invalidated = true;
            refused = true;
        }
    if (!refused) return CUDA_SUCCESS;
    standin_complain("%s while a stream captures: not permitted, the capture is invalidated", call);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult cuStreamBeginCapture(CUstream handle, CUstreamCaptureMode mode)
{
    ENTER_CONTEXT(ctx);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return standin_leave(CUDA_ERROR_INVALID_VALUE);
    if (s->is_null) {
        standin_complain("cuStreamBeginCapture on the legacy NULL stream: not permitted");
        return standin_leave(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    }
    if (s->capture) return standin_leave(CUDA_ERROR_ILLEGAL_STATE);
    standin_call_counts.captures++;
    s->capture = standin_checked_calloc(1, sizeof *s->capture);
    s->capture->ctx = ctx;
    s->capture->ops = captured_new();
    s->capture_mode = mode;
    s->capture_thread = pthread_self();
    s->capture_invalidated = false;
    return standin_leave(CUDA_SUCCESS);
}

static void graph_free(CUgraph graph)
{
    standin_captured_unref(graph->ops);
    free(graph);
}

CUresult cuStreamEndCapture(CUstream handle, CUgraph *phGraph)
{
    ENTER_CONTEXT(ctx);
    if (!phGraph) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (!s->capture) return standin_leave(CUDA_ERROR_ILLEGAL_STATE);
    if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(s->capture_thread, pthread_self()))
        return standin_leave(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    CUgraph graph = s->capture;
    s->capture = NULL;
    *phGraph = NULL;
    if (s->capture_invalidated) {
        graph_free(graph);
        return standin_leave(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    }
    *phGraph = graph;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuStreamIsCapturing(CUstream handle, CUstreamCaptureStatus *captureStatus)
{
    ENTER_CONTEXT(ctx);
    if (!captureStatus) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    *captureStatus = !s->capture ? CU_STREAM_CAPTURE_STATUS_NONE
                     : s->capture_invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuGraphDestroy(CUgraph graph)
{
    ENTER();
    if (!graph) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    graph_free(graph);
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph graph, unsigned long long flags)
{
    ENTER_CONTEXT(ctx);
    if (!phGraphExec || !graph || flags != 0) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUgraphExec exec = standin_checked_calloc(1, sizeof *exec);
    exec->ctx = graph->ctx;
    exec->ops = graph->ops;
    exec->ops->refs++;
    *phGraphExec = exec;
    return standin_leave(CUDA_SUCCESS);
}

/* A copy of a captured operation to queue; what it points into stays the graph's. */
static op *op_copy(const op *template, captured_ops *owner)
{
    op *o = standin_op_new(template->kind);
    o->u = template->u;
    o->owner = owner;
    owner->refs++;
    if (o->kind == OP_COPY) o->u.copy.staging = NULL; /* src may point into the template's */
    if (o->kind == OP_CALL) o->u.call.finish = NULL;  /* the graph's to finish, once */
    if (o->kind == OP_KERNEL && template->u.kernel.buffers[0] == (void *)template->u.kernel.wide)
        o->u.kernel.buffers[0] = o->u.kernel.wide;
    return o;
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream handle)
{
    ENTER_CONTEXT(ctx);
    if (!exec) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    CUstream s;
    CUresult r = standin_resolve_stream(handle, ctx, &s);
    if (r != CUDA_SUCCESS) return standin_leave(r);
    if (s->ctx != exec->ctx) return standin_leave(CUDA_ERROR_INVALID_CONTEXT);
    if (s->capture) {
        standin_complain("cuGraphLaunch into a capture: the stand-in does not nest graphs");
        return standin_leave(CUDA_ERROR_NOT_SUPPORTED);
    }
    standin_call_counts.graph_launches++;
    for (int i = 0; i < exec->ops->count; i++) standin_enqueue(s, op_copy(exec->ops->ops[i], exec->ops));
    return standin_leave(CUDA_SUCCESS);
}

CUresult cuGraphExecDestroy(CUgraphExec exec)
{
    ENTER();
    if (!exec) return standin_leave(CUDA_ERROR_INVALID_VALUE);
    standin_captured_unref(exec->ops);
    free(exec);
    return standin_leave(CUDA_SUCCESS);
}
