/* A stand-in accelerator over host memory. Its queued copies really are deferred: they run when
 * the host next waits for the device (a blocking copy, a synchronize, an event) or when later
 * work on the device needs them, so that tests show that ctorch waits for exactly the copies it
 * depends on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_backend.h"
#include "support/fake_device.h"

typedef struct queued_copy {
    void *dst;
    const void *src;
    size_t bytes;
    ct_backend_done done;
    void *done_arg;
    struct queued_copy *next;
} queued_copy;

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static queued_copy *queue_head, *queue_tail;
static atomic_size_t bytes_copied;
static atomic_size_t copies_pending;
static char token;

/* Runs every queued copy, in order (the device's queues are in order with each other here). */
static void run_queued_copies(void)
{
    pthread_mutex_lock(&queue_lock);
    queued_copy *c = queue_head;
    queue_head = queue_tail = NULL;
    pthread_mutex_unlock(&queue_lock);
    while (c) {
        queued_copy *next = c->next;
        memcpy(c->dst, c->src, c->bytes);
        if (c->done) c->done(c->done_arg);
        copies_pending--;
        free(c);
        c = next;
    }
}

static ct_status queue_copy(void *dst, const void *src, size_t bytes, ct_backend_done done,
                            void *done_arg, void **event_out)
{
    queued_copy *c = calloc(1, sizeof *c);
    if (!c) return CT_ERR_OUT_OF_MEMORY;
    *c = (queued_copy){dst, src, bytes, done, done_arg, NULL};
    bytes_copied += bytes;
    copies_pending++;
    pthread_mutex_lock(&queue_lock);
    if (queue_tail) queue_tail->next = c; else queue_head = c;
    queue_tail = c;
    pthread_mutex_unlock(&queue_lock);
    if (event_out) *event_out = &token;
    return CT_OK;
}

static bool fake_init(char *reason, size_t size) { (void)reason; (void)size; return true; }
static int fake_count(void) { return CT_FAKE_DEVICE_COUNT; }
static ct_status fake_properties(int index, ct_device_props *props)
{
    snprintf(props->name, sizeof props->name, "fake accelerator %d (host memory)", index);
    snprintf(props->vendor, sizeof props->vendor, "ctorch tests");
    props->total_memory = props->max_allocation = (size_t)1 << 30;
    props->compute_units = 1;
    props->is_gpu = true;
    return CT_OK;
}
static ct_status fake_mem_info(int index, size_t *free_bytes, size_t *total_bytes)
{
    (void)index;
    *free_bytes = *total_bytes = (size_t)1 << 30;
    return CT_OK;
}
static ct_status fake_alloc(int index, size_t bytes, void **handle)
{
    (void)index;
    *handle = bytes <= ((size_t)1 << 30) ? aligned_alloc(64, (bytes + 63) / 64 * 64) : NULL;
    return *handle ? CT_OK : CT_ERR_OUT_OF_MEMORY;
}
static void fake_free(int index, void *handle) { (void)index; run_queued_copies(); free(handle); }
static ct_status fake_h2d(int index, void *dst, size_t off, const void *src, size_t bytes)
{
    (void)index;
    run_queued_copies();
    bytes_copied += bytes;
    memcpy((char *)dst + off, src, bytes);
    return CT_OK;
}
static ct_status fake_d2h(int index, void *dst, const void *src, size_t off, size_t bytes)
{
    (void)index;
    run_queued_copies();
    bytes_copied += bytes;
    memcpy(dst, (const char *)src + off, bytes);
    return CT_OK;
}
static ct_status fake_d2d(int index, void *dst, size_t doff, const void *src, size_t soff, size_t bytes)
{
    (void)index;
    run_queued_copies();
    memmove((char *)dst + doff, (const char *)src + soff, bytes);
    return CT_OK;
}
static ct_status fake_h2d_async(int index, void *stream, void *dst, size_t off, const void *src,
                                size_t bytes, ct_backend_done done, void *arg, void **event_out)
{
    (void)index;
    (void)stream;
    return queue_copy((char *)dst + off, src, bytes, done, arg, event_out);
}
static ct_status fake_d2h_async(int index, void *stream, void *dst, const void *src, size_t off,
                                size_t bytes, ct_backend_done done, void *arg, void **event_out)
{
    (void)index;
    (void)stream;
    return queue_copy(dst, (const char *)src + off, bytes, done, arg, event_out);
}
static void *fake_pinned_alloc(int index, size_t bytes, void **handle)
{
    (void)index;
    *handle = &token;
    return aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
}
static void fake_pinned_free(int index, void *host, void *handle) { (void)index; (void)handle; free(host); }
static ct_status fake_launch(int index, void *stream, int kernel, void *const buffers[],
                             const struct ct_kparams *params, long work, int group_size)
{
    run_queued_copies(); /* kernels come after the copies queued before them */
    return ct_cpu_launch(index, stream, kernel, buffers, params, work, group_size);
}
static ct_status fake_gemm(int index, void *stream, const ct_gemm_args *args)
{
    run_queued_copies();
    return ct_cpu_gemm(index, stream, args);
}
static ct_status fake_wait(int index) { (void)index; run_queued_copies(); return CT_OK; }
static ct_status fake_wait_handle(int index, void *handle) { (void)handle; return fake_wait(index); }
static ct_status fake_create(int index, void **handle) { (void)index; *handle = &token; return CT_OK; }
static void fake_destroy(int index, void *handle) { (void)index; (void)handle; }
static ct_status fake_record(int index, void *event, void *stream) { (void)index; (void)event; (void)stream; return CT_OK; }

static ct_status fake_query(int index, void *event, bool *complete)
{
    (void)index;
    (void)event;
    *complete = copies_pending == 0; /* asking runs nothing: a pending copy may come before it */
    return CT_OK;
}

static const ct_backend fake_backend = {
    .type = CT_OPENCL, .init = fake_init, .device_count = fake_count,
    .get_properties = fake_properties, .mem_get_info = fake_mem_info,
    .raw_alloc = fake_alloc, .raw_free = fake_free,
    .copy_host_to_device = fake_h2d, .copy_device_to_host = fake_d2h,
    .copy_device_to_device = fake_d2d,
    .copy_host_to_device_async = fake_h2d_async, .copy_device_to_host_async = fake_d2h_async,
    .pinned_alloc = fake_pinned_alloc, .pinned_free = fake_pinned_free,
    .launch = fake_launch, .work_shape = ct_cpu_work_shape, .gemm = fake_gemm, .synchronize = fake_wait,
    .stream_create = fake_create, .stream_destroy = fake_destroy,
    .stream_synchronize = fake_wait_handle, .event_create = fake_create,
    .event_destroy = fake_destroy, .event_record = fake_record,
    .stream_wait_event = fake_record, .event_synchronize = fake_wait_handle,
    .event_query = fake_query,
};

void ct_test_install_fake_opencl(void) { ct_backend_install_for_testing(CT_OPENCL, &fake_backend); }

void ct_test_install_fake_cuda(void)
{
    static ct_backend fake_cuda;
    fake_cuda = fake_backend;
    fake_cuda.type = CT_CUDA;
    ct_backend_install_for_testing(CT_CUDA, &fake_cuda);
}

size_t ct_test_fake_bytes_copied(void) { return bytes_copied; }

size_t ct_test_fake_copies_pending(void) { return copies_pending; }
