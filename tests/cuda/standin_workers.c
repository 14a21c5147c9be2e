/* The stand-in CUDA driver's streams at work (standin_internal.h): operations queued on a stream,
 * each run in order by the stream's worker thread once what it waits for has completed. */
#include "standin_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

CUstream standin_streams;

static timeline *timeline_new(void)
{
    timeline *t = standin_checked_calloc(1, sizeof *t);
    t->refs = 1;
    return t;
}
timeline *standin_timeline_ref(timeline *t)
{
    t->refs++;
    return t;
}
void standin_timeline_unref(timeline *t)
{
    if (t && --t->refs == 0) free(t);
}

op *standin_op_new(op_kind kind)
{
    op *o = standin_checked_calloc(1, sizeof *o);
    o->kind = kind;
    return o;
}

void standin_op_wait(op *o, timeline *line, uint64_t seq)
{
    if (line->completed >= seq) return;
    if (o->wait_count == o->wait_capacity) {
        o->wait_capacity = o->wait_capacity ? 2 * o->wait_capacity : 4;
        wait_on *grown = realloc(o->waits, (size_t)o->wait_capacity * sizeof *o->waits);
        if (!grown) {
            standin_complain("host out of memory");
            abort();
        }
        o->waits = grown;
    }
    o->waits[o->wait_count++] = (wait_on){standin_timeline_ref(line), seq};
}

void standin_op_free(op *o)
{
    for (int i = 0; i < o->wait_count; i++) standin_timeline_unref(o->waits[i].line);
    free(o->waits);
    if (o->kind == OP_COPY) free(o->u.copy.staging);
    if (o->owner) standin_captured_unref(o->owner);
    free(o);
}

static void run_kernel_items(const standin_grid *grid, long first, long end)
{
    const op *o = grid->job;
    o->u.kernel.run(first, end, o->u.kernel.buffers, &o->u.kernel.params);
}

/* false when a kernel failed (with a complaint). */
static bool op_execute(op *o)
{
    switch (o->kind) {
    case OP_MARKER: break;
    case OP_COPY:
        if (o->u.copy.bytes) memmove(o->u.copy.dst, o->u.copy.src, o->u.copy.bytes);
        break;
    case OP_KERNEL: {
        standin_grid grid = {o->u.kernel.name, run_kernel_items, o, o->u.kernel.blocks,
                             o->u.kernel.block_size, o->u.kernel.repeats};
        if (!o->u.kernel.run) {
            grid.run = standin_run_body_items;
            grid.job = &o->u.kernel.body;
        }
        return standin_run_grid(&grid);
    }
    case OP_HOST_FUNCTION:
        standin_set_in_host_function(true);
        o->u.host.fn(o->u.host.data);
        standin_set_in_host_function(false);
        break;
    case OP_CALL:
        o->u.call.run(o->u.call.arg);
        if (o->u.call.finish) o->u.call.finish(o->u.call.arg);
        break;
    }
    return true;
}

static bool op_ready(const op *o)
{
    for (int i = 0; i < o->wait_count; i++)
        if (o->waits[i].line->completed < o->waits[i].seq) return false;
    return true;
}

/* Runs s's operations in order, each once what it waits for has completed, until s is destroyed
 * and drained; then frees s. Called with the lock held. */
static void serve(CUstream s)
{
    for (;;) {
        while (!s->head && !s->destroyed) pthread_cond_wait(&standin_changed, &standin_lock);
        if (!s->head) break;
        op *o = s->head;
        while (!op_ready(o)) pthread_cond_wait(&standin_changed, &standin_lock);
        long delay = standin_delay_us;
        pthread_mutex_unlock(&standin_lock);
        if (delay > 0) {
            struct timespec pause = {delay / 1000000, (delay % 1000000) * 1000};
            nanosleep(&pause, NULL);
        }
        bool ok = op_execute(o);
        pthread_mutex_lock(&standin_lock);
        /* A kernel that failed fails its context, as on a GPU. */
        if (!ok && s->ctx->failure == CUDA_SUCCESS) s->ctx->failure = CUDA_ERROR_LAUNCH_FAILED;
        s->head = o->next;
        if (!s->head) s->tail = NULL;
        s->line->completed = o->seq;
        standin_op_free(o);
        pthread_cond_broadcast(&standin_changed);
    }
    for (CUstream *link = &standin_streams; *link; link = &(*link)->next)
        if (*link == s) {
            *link = s->next;
            break;
        }
    standin_timeline_unref(s->line);
    free(s);
    pthread_cond_broadcast(&standin_changed);
}

/* Worker threads: one per live stream, kept (idle) once their stream is gone and given the next
 * new stream, so that no thread ends while the process runs (LeakSanitizer's check at exit
 * fails when a thread ends under it). Detached. */
static CUstream unserved; /* new streams waiting for a worker (linked by next_unserved) */
static int idle_workers;  /* workers waiting for a stream, not yet promised to one */

static void *stream_worker(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&standin_lock);
    for (;;) {
        while (!unserved) pthread_cond_wait(&standin_changed, &standin_lock);
        CUstream s = unserved;
        unserved = s->next_unserved;
        serve(s);
        idle_workers++;
    }
    return NULL;
}

CUstream standin_stream_new(CUcontext ctx, bool is_null, bool blocking)
{
    if (idle_workers > 0) {
        idle_workers--; /* promised to this stream */
    } else {
        pthread_t thread;
        pthread_attr_t attributes;
        pthread_attr_init(&attributes);
        pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&thread, &attributes, stream_worker, NULL);
        pthread_attr_destroy(&attributes);
        if (failed) return NULL;
    }
    CUstream s = standin_checked_calloc(1, sizeof *s);
    s->ctx = ctx;
    s->generation = ctx->generation;
    s->is_null = is_null;
    s->blocking = blocking;
    s->line = timeline_new();
    s->next = standin_streams;
    standin_streams = s;
    s->next_unserved = unserved;
    unserved = s;
    pthread_cond_broadcast(&standin_changed);
    return s;
}

uint64_t standin_enqueue(CUstream s, op *o)
{
    if (s->capture) { /* recorded, not run: number 0, which every wait has reached */
        standin_capture_append(s, o);
        return 0;
    }
    CUcontext ctx = s->ctx;
    if (s->is_null) {
        for (CUstream t = standin_streams; t; t = t->next)
            if (t != s && t->ctx == ctx && t->blocking)
                standin_op_wait(o, t->line, t->line->queued);
    } else if (s->blocking && ctx->null_stream) {
        standin_op_wait(o, ctx->null_stream->line, ctx->null_stream->line->queued);
    }
    o->seq = ++s->line->queued;
    if (s->tail)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    pthread_cond_broadcast(&standin_changed);
    return o->seq;
}

void standin_wait_for(timeline *line, uint64_t seq)
{
    while (line->completed < seq) pthread_cond_wait(&standin_changed, &standin_lock);
}

void standin_drain_context(CUcontext ctx)
{
    for (;;) {
        bool busy = false;
        for (CUstream t = standin_streams; t && !busy; t = t->next)
            if (t->ctx == ctx && t->line->completed < t->line->queued) busy = true;
        if (!busy) return;
        pthread_cond_wait(&standin_changed, &standin_lock);
    }
}

void standin_drain_all(void)
{
    for (int d = 0; d < standin_device_count; d++)
        standin_drain_context(&standin_devices[d].primary);
}
