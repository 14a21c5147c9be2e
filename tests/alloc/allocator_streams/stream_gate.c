/* The stream gates of stream_gate.h. */
#include <pthread.h>
#include <stdio.h>

#include "test_common.h"

#include "alloc/allocator_streams/stream_gate.h"
#include "device/device_internal.h"

#ifdef CTORCH_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif
#ifdef CT_TEST_HAVE_CUDA_STANDIN
#include <dlfcn.h>

#include "standin.h"
#endif

struct stream_gate {
    struct stream_gate *next; /* every gate until stream_gates_release */
    ct_device_type type;
    bool opened;
#ifdef CTORCH_HAVE_OPENCL
    cl_event user_event;
#endif
    /* CUDA: the call on the stream waits for `open`; `finished` once it no longer uses the gate. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool open, finished;
};

static pthread_mutex_t gates_lock = PTHREAD_MUTEX_INITIALIZER;
static stream_gate *gates;

bool stream_gate_available(ct_device_type type)
{
#ifdef CTORCH_HAVE_OPENCL
    if (type == CT_OPENCL) return true;
#endif
#ifdef CT_TEST_HAVE_CUDA_STANDIN
    if (type == CT_CUDA) return true;
#endif
    return false;
}

#ifdef CTORCH_HAVE_OPENCL
static void close_opencl(stream_gate *gate, ct_stream *stream)
{
    cl_command_queue queue = ct_stream_handle(stream);
    cl_context context = NULL;
    assert_int_equal(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof context, &context, NULL), CL_SUCCESS);
    cl_int status = CL_SUCCESS;
    gate->user_event = clCreateUserEvent(context, &status);
    assert_int_equal(status, CL_SUCCESS);
    assert_int_equal(clEnqueueBarrierWithWaitList(queue, 1, &gate->user_event, NULL), CL_SUCCESS);
    assert_int_equal(clFlush(queue), CL_SUCCESS);
}
#endif

#ifdef CT_TEST_HAVE_CUDA_STANDIN
static void wait_for_gate(void *arg)
{
    stream_gate *gate = arg;
    pthread_mutex_lock(&gate->lock);
    while (!gate->open) pthread_cond_wait(&gate->changed, &gate->lock);
    pthread_mutex_unlock(&gate->lock);
}

static void gate_passed(void *arg)
{
    stream_gate *gate = arg;
    pthread_mutex_lock(&gate->lock);
    gate->finished = true;
    pthread_cond_broadcast(&gate->changed);
    pthread_mutex_unlock(&gate->lock);
}

/* The stand-in's ctorch_standin_enqueue: the same library ctorch opened (CTORCH_CUDA_DRIVER). */
static void close_cuda(stream_gate *gate, ct_stream *stream)
{
    const char *path = getenv("CTORCH_CUDA_DRIVER");
    if (!path || !path[0]) path = CTORCH_CUDA_STANDIN_DRIVER;
    void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library) fail_msg("dlopen %s: %s", path, dlerror());
    CUresult (*enqueue)(CUstream, void (*)(void *), void (*)(void *), void *);
    *(void **)&enqueue = dlsym(library, "ctorch_standin_enqueue");
    if (!enqueue) fail_msg("%s has no ctorch_standin_enqueue: the gate needs the stand-in driver", path);
    /* The stream's context is current here: ctorch made it so when it created the stream. */
    assert_int_equal(enqueue((CUstream)ct_stream_handle(stream), wait_for_gate, gate_passed, gate), CUDA_SUCCESS);
    dlclose(library);
}
#endif

stream_gate *stream_gate_close(ct_stream *stream)
{
    assert_non_null(stream);
    stream_gate *gate = calloc(1, sizeof *gate);
    assert_non_null(gate);
    gate->type = ct_stream_device(stream).type;
    pthread_mutex_init(&gate->lock, NULL);
    pthread_cond_init(&gate->changed, NULL);
    pthread_mutex_lock(&gates_lock);
    gate->next = gates;
    gates = gate;
    pthread_mutex_unlock(&gates_lock);
#ifdef CTORCH_HAVE_OPENCL
    if (gate->type == CT_OPENCL) {
        close_opencl(gate, stream);
        return gate;
    }
#endif
#ifdef CT_TEST_HAVE_CUDA_STANDIN
    if (gate->type == CT_CUDA) {
        close_cuda(gate, stream);
        return gate;
    }
#endif
    fail_msg("no stream gate for device type %d in this build", (int)gate->type);
    return NULL;
}

void stream_gate_open(stream_gate *gate)
{
    pthread_mutex_lock(&gates_lock);
    bool already = gate->opened;
    gate->opened = true;
    pthread_mutex_unlock(&gates_lock);
    if (already) return;
#ifdef CTORCH_HAVE_OPENCL
    if (gate->type == CT_OPENCL) {
        clSetUserEventStatus(gate->user_event, CL_COMPLETE);
        clReleaseEvent(gate->user_event);
    }
#endif
    if (gate->type == CT_CUDA) {
        pthread_mutex_lock(&gate->lock);
        gate->open = true;
        pthread_cond_broadcast(&gate->changed);
        while (!gate->finished) pthread_cond_wait(&gate->changed, &gate->lock);
        pthread_mutex_unlock(&gate->lock);
    }
}

void stream_gates_release(void)
{
    pthread_mutex_lock(&gates_lock);
    stream_gate *gate = gates;
    gates = NULL;
    pthread_mutex_unlock(&gates_lock);
    while (gate) {
        stream_gate *next = gate->next;
        stream_gate_open(gate);
        pthread_mutex_destroy(&gate->lock);
        pthread_cond_destroy(&gate->changed);
        free(gate);
        gate = next;
    }
}
