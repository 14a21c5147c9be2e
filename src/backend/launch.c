#include <limits.h>
#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/launch_record.h"
#include "device/capture.h"
#include "core/core_internal.h"

/* Launches per device and kernel, for the conformance test's "every kernel ran on every device"
 * check: one relaxed atomic increment per launch (a few ns, no lock). */
static atomic_ulong launch_counts[CT_DEVICE_TYPE_COUNT][CT_LAUNCH_COUNTED_DEVICES][CT_KERNEL_COUNT];
/* Kernel launches and BLAS calls per device, for ct_device_kernel_launches. */
static atomic_uint_fast64_t issued[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];

static void count_issued(ct_device device)
{
    if ((unsigned)device.type < CT_DEVICE_TYPE_COUNT && (unsigned)device.index < CT_MAX_DEVICES_PER_TYPE)
        atomic_fetch_add_explicit(&issued[device.type][device.index], 1, memory_order_relaxed);
}

static ct_status launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                        const ct_kparams *params, long work, int group_size)
{
    if (kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return ct_error(CT_ERR_INTERNAL, "launch of an empty or unknown kernel id %d", (int)kernel);
    if (params->n <= 0) return CT_OK;
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_capture *capture = ct_capture_joined(device);
    if (capture && capture->record) /* runs at each replay, not now */
        return ct_launch_record_kernel(capture->record, kernel, buffers, params, work, group_size);
    if (capture) /* the driver captures it: not a launch that runs now, so not counted */
        return backend->launch(device.index, capture->stream, kernel, buffers, params, work, group_size);
    return ct_backend_launch_replayed(device, ct_current_stream_handle(device), kernel, buffers, params,
                                      work, group_size);
}

ct_status ct_backend_launch_replayed(ct_device device, void *stream, ct_kernel_id kernel,
                                     void *const buffers[], const ct_kparams *params, long work,
                                     int group_size)
{
    if (device.index >= 0 && device.index < CT_LAUNCH_COUNTED_DEVICES)
        atomic_fetch_add_explicit(&launch_counts[device.type][device.index][kernel], 1,
                                  memory_order_relaxed);
    count_issued(device);
    return ct_backend_table[device.type]->launch(device.index, stream, kernel, buffers, params, work,
                                                 group_size);
}

ct_status ct_backend_launch(ct_device device, ct_kernel_id kernel, void *const buffers[CT_KERNEL_MAX_BUFFERS],
                            const ct_kparams *params, long work_per_item)
{
    return launch(device, kernel, buffers, params, work_per_item, 0);
}

ct_status ct_backend_launch_groups(ct_device device, ct_kernel_id kernel,
                                   void *const buffers[CT_KERNEL_MAX_BUFFERS], const ct_kparams *params,
                                   long work_per_group, int group_size)
{
    if (group_size < 1 || (group_size & (group_size - 1)) != 0)
        return ct_error(CT_ERR_INTERNAL, "launch of kernel '%s' in groups of %d: a group size is a "
                        "power of 2", ct_kernel_name(kernel), group_size);
    return launch(device, kernel, buffers, params, work_per_group, group_size);
}

ct_status ct_backend_work_shape(ct_device device, ct_work_shape *shape)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    backend->work_shape(device.index, shape);
    return CT_OK;
}

/* The BLAS libraries (OpenBLAS's cblas, CLBlast, cuBLAS) take int sizes: larger ones are
 * refused here rather than wrapped. */
static bool fits_int(const ct_gemm_args *g)
{
    long values[] = {g->m, g->n, g->k, g->lda, g->ldb, g->ldc, g->batch};
    for (size_t i = 0; i < CT_ARRAY_LEN(values); i++)
        if (values[i] > INT_MAX) return false;
    return true;
}

ct_status ct_backend_gemm(ct_device device, const ct_gemm_args *g)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    char name[CT_DEVICE_STRING_MAX];
    if (g->m <= 0 || g->n <= 0 || g->batch <= 0) return CT_OK;
    if (g->a_offset < 0 || g->b_offset < 0 || g->c_offset < 0 || g->a_batch_stride < 0 ||
        g->b_batch_stride < 0 || g->c_batch_stride < 0)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "gemm on %s: negative offsets or batch strides",
                        ct_device_format(device, name, sizeof name));
    if (!fits_int(g))
        return ct_error(CT_ERR_INVALID_ARGUMENT, "gemm on %s: %ld x %ld x %ld (batch %ld, leading dims "
                        "%ld, %ld, %ld) exceeds the BLAS libraries' int sizes",
                        ct_device_format(device, name, sizeof name), g->m, g->n, g->k, g->batch, g->lda,
                        g->ldb, g->ldc);
    ct_capture *capture = ct_capture_joined(device);
    if (capture && capture->record) return ct_launch_record_gemm(capture->record, g);
    if (capture) return backend->gemm(device.index, capture->stream, g); /* captured: not issued now */
    return ct_backend_gemm_replayed(device, ct_current_stream_handle(device), g);
}

ct_status ct_backend_gemm_replayed(ct_device device, void *stream, const ct_gemm_args *g)
{
    count_issued(device);
    return ct_backend_table[device.type]->gemm(device.index, stream, g);
}

bool ct_backend_conv2d_takes(ct_device device, const ct_conv2d_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    return backend && backend->conv2d_takes && backend->conv2d && backend->conv2d_takes(device.index, args);
}

ct_status ct_backend_conv2d(ct_device device, const ct_conv2d_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_capture *capture = ct_capture_joined(device);
    if (capture && capture->record) return ct_launch_record_conv2d(capture->record, args);
    if (capture) return backend->conv2d(device.index, capture->stream, args);
    return ct_backend_conv2d_replayed(device, ct_current_stream_handle(device), args);
}

ct_status ct_backend_conv2d_replayed(ct_device device, void *stream, const ct_conv2d_args *args)
{
    count_issued(device);
    return ct_backend_table[device.type]->conv2d(device.index, stream, args);
}

bool ct_backend_pool2d_takes(ct_device device, const ct_pool2d_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    return backend && backend->pool2d_takes && backend->pool2d && backend->pool2d_takes(device.index, args);
}

ct_status ct_backend_pool2d(ct_device device, const ct_pool2d_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_capture *capture = ct_capture_joined(device);
    if (capture && capture->record) return ct_launch_record_pool2d(capture->record, args);
    if (capture) return backend->pool2d(device.index, capture->stream, args);
    return ct_backend_pool2d_replayed(device, ct_current_stream_handle(device), args);
}

ct_status ct_backend_pool2d_replayed(ct_device device, void *stream, const ct_pool2d_args *args)
{
    count_issued(device);
    return ct_backend_table[device.type]->pool2d(device.index, stream, args);
}

bool ct_backend_attention_takes(ct_device device, const ct_attention_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    return backend && backend->attention_takes && backend->attention &&
           backend->attention_takes(device.index, args);
}

ct_status ct_backend_attention(ct_device device, const ct_attention_args *args)
{
    const ct_backend *backend = ct_backend_of(device);
    if (!backend) return ct_last_error();
    ct_capture *capture = ct_capture_joined(device);
    if (capture && capture->record) return ct_launch_record_attention(capture->record, args);
    if (capture) return backend->attention(device.index, capture->stream, args);
    return ct_backend_attention_replayed(device, ct_current_stream_handle(device), args);
}

ct_status ct_backend_attention_replayed(ct_device device, void *stream, const ct_attention_args *args)
{
    count_issued(device);
    return ct_backend_table[device.type]->attention(device.index, stream, args);
}

void ct_backend_count_graph_launch(ct_device device) { count_issued(device); }

uint64_t ct_backend_launch_total(ct_device device)
{
    uint64_t total = 0;
    for (int kernel = CT_K_NONE + 1; kernel < CT_KERNEL_COUNT; kernel++)
        total += ct_backend_launch_count(device, (ct_kernel_id)kernel);
    return total;
}

bool ct_backend_gemm_takes(ct_device device, ct_dtype dtype)
{
    if (dtype == CT_F32 || dtype == CT_F64) return true;
    const ct_backend *backend = ct_backend_of(device);
    return backend && backend->gemm_takes && backend->gemm_takes(device.index, dtype);
}

uint64_t ct_backend_launch_count(ct_device device, ct_kernel_id kernel)
{
    if (device.type < 0 || device.type >= CT_DEVICE_TYPE_COUNT || device.index < 0 ||
        device.index >= CT_LAUNCH_COUNTED_DEVICES || kernel <= CT_K_NONE || kernel >= CT_KERNEL_COUNT)
        return 0;
    return atomic_load_explicit(&launch_counts[device.type][device.index][kernel], memory_order_relaxed);
}

ct_status ct_device_kernel_launches(ct_device device, uint64_t *launches)
{
    if (!launches) return ct_error(CT_ERR_NULL_ARGUMENT, "ct_device_kernel_launches: launches is NULL");
    ct_status status = ct_device_resolve(device, &device);
    if (status != CT_OK) return status;
    *launches = (unsigned)device.index < CT_MAX_DEVICES_PER_TYPE
                    ? atomic_load_explicit(&issued[device.type][device.index], memory_order_relaxed)
                    : 0;
    return CT_OK;
}
