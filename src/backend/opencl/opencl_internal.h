/* The OpenCL backend's shared state: the devices found at init, each with its platform's
 * context, its default in-order queue, and its cache of built programs and kernels. */
#ifndef CT_OPENCL_INTERNAL_H
#define CT_OPENCL_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120 /* the 1.2 API: it runs on every OpenCL driver */
#endif
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>

#include "backend/opencl/opencl_backend.h"
#include "device/backend_interface.h"
#include "kernels/kernel_ids.h"

#define CT_OPENCL_MAX_DEVICES CT_MAX_DEVICES_PER_TYPE
#define CT_OPENCL_MAX_PLATFORMS 16

typedef struct ct_opencl_device {
    cl_device_id id;
    cl_context context;     /* the platform's context, shared by its visible devices */
    cl_command_queue queue; /* the default in-order queue */
    int physical_index;     /* in the order GPUs/accelerators first, then CPUs */
    cl_device_type type;
    char name[256], vendor[128], driver_version[64];
    size_t global_memory, max_allocation; /* read once at init: PoCL's figure moves between runs */
    int compute_units;
    size_t max_group_size; /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
    bool has_amd_free_memory; /* CL_DEVICE_GLOBAL_FREE_MEMORY_AMD answers */
    bool has_fp16;            /* cl_khr_fp16: CLBlast's Hgemm runs there */
    atomic_size_t held;       /* bytes of live buffers ctorch created on the device */

    /* A cl_kernel's arguments are shared state: setting them and enqueueing happen under this
     * lock, as do building and dropping this device's programs. */
    pthread_mutex_t lock;
    cl_program programs[CT_KERNEL_FAMILY_COUNT];
    cl_kernel kernels[CT_KERNEL_COUNT];

    /* The streams (extra in-order queues) alive on the device, for synchronize. */
    pthread_mutex_t streams_lock;
    cl_command_queue *streams;
    int stream_count, stream_capacity;
} ct_opencl_device;

/* An event handle: the marker of its last record (NULL: never recorded, so complete). */
typedef struct ct_opencl_event {
    pthread_mutex_t lock;
    cl_event marker;
} ct_opencl_event;

/* Filled by init, read-only afterwards (apart from the per-device caches under their lock). */
extern int ct_opencl_device_count;
extern ct_opencl_device ct_opencl_devices[CT_OPENCL_MAX_DEVICES];

/* "CL_OUT_OF_RESOURCES" for an OpenCL status code, or "unknown OpenCL error". */
const char *ct_opencl_status_name(cl_int status);
/* Records CT_ERR_BACKEND: "opencl:<index>: <what> failed: CL_... (<code>)"; returns it. */
ct_status ct_opencl_fail(int index, const char *what, cl_int status);

/* Backend entry points, one file per idea. */
bool ct_opencl_init(char *reason, size_t reason_size);
int ct_opencl_get_device_count(void);
ct_status ct_opencl_get_properties(int index, ct_device_props *props);
ct_status ct_opencl_mem_get_info(int index, size_t *free_bytes, size_t *total_bytes);
ct_status ct_opencl_raw_alloc(int index, size_t bytes, void **handle);
void ct_opencl_raw_free(int index, void *handle);
ct_status ct_opencl_copy_host_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                        size_t bytes);
ct_status ct_opencl_copy_device_to_host(int index, void *dst, const void *src, size_t src_offset,
                                        size_t bytes);
ct_status ct_opencl_copy_device_to_device(int index, void *dst, size_t dst_offset, const void *src,
                                          size_t src_offset, size_t bytes);
ct_status ct_opencl_copy_peer(int dst_index, void *dst, size_t dst_offset, int src_index,
                              const void *src, size_t src_offset, size_t bytes);
ct_status ct_opencl_launch(int index, void *stream, int kernel, void *const buffers[],
                           const struct ct_kparams *params, long work_per_item, int group_size);
void ct_opencl_work_shape(int index, ct_work_shape *shape);
ct_status ct_opencl_gemm(int index, void *stream, const ct_gemm_args *args);
bool ct_opencl_gemm_takes(int index, ct_dtype dtype);

ct_status ct_opencl_synchronize(int index);
ct_status ct_opencl_stream_create(int index, void **stream);
void ct_opencl_stream_destroy(int index, void *stream);
ct_status ct_opencl_stream_synchronize(int index, void *stream);
ct_status ct_opencl_event_create(int index, void **event);
void ct_opencl_event_destroy(int index, void *event);
ct_status ct_opencl_event_record(int index, void *event, void *stream);
ct_status ct_opencl_stream_wait_event(int index, void *stream, void *event);
ct_status ct_opencl_event_synchronize(int index, void *event);
ct_status ct_opencl_event_query(int index, void *event, bool *complete);
/* An event handle for a cl_event of an enqueued command (retained by the handle). */
ct_status ct_opencl_event_wrap(int index, cl_event marker, void **event);

void *ct_opencl_pinned_alloc(int index, size_t bytes, void **handle);
void ct_opencl_pinned_free(int index, void *host, void *handle);
ct_status ct_opencl_copy_host_to_device_async(int index, void *stream, void *dst, size_t dst_offset,
                                              const void *src, size_t bytes, ct_backend_done done,
                                              void *done_arg, void **event_out);
ct_status ct_opencl_copy_device_to_host_async(int index, void *stream, void *dst, const void *src,
                                              size_t src_offset, size_t bytes, ct_backend_done done,
                                              void *done_arg, void **event_out);

/* The queue of a stream handle on a device (NULL: the default queue). */
static inline cl_command_queue ct_opencl_queue(int index, void *stream)
{
    return stream ? (cl_command_queue)stream : ct_opencl_devices[index].queue;
}
/* The queue of this thread's current stream on the device: blocking copies run there, after
 * the work the thread queued (as PyTorch copies on the current stream). */
cl_command_queue ct_opencl_current_queue(int index);

/* Waits for queue once per `done` flag, then registers the exit handler that waits for every
 * queue: call after the first launch of a kind of work (kernels, CLBlast), whose compile by
 * the driver creates the statics that handler must outlive. */
void ct_opencl_guard_exit(cl_command_queue queue, atomic_bool *done);

/* The cl_kernel of a kernel id on a device, building its family's program on first use. The
 * caller holds device->lock. */
ct_status ct_opencl_kernel_locked(int index, int kernel, cl_kernel *out);

#endif
