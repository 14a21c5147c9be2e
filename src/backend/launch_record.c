/* Recorded launches and products, replayed (launch_record.h). */
#include <stdlib.h>
#include <string.h>

#include "backend/launch_record.h"
#include "core/core_internal.h"

typedef enum { RECORDED_KERNEL, RECORDED_GEMM, RECORDED_CONV2D, RECORDED_POOL2D, RECORDED_ATTENTION } recorded_kind;

typedef struct recorded {
    recorded_kind kind;
    int group_size;
    ct_kernel_id kernel;
    long work;
    void *buffers[CT_KERNEL_WIDE_BUFFERS];
    ct_kparams params;
    union {
        ct_gemm_args gemm;
        ct_conv2d_args conv2d;
        ct_pool2d_args pool2d;
        ct_attention_args attention;
    };
} recorded;

struct ct_launch_record {
    recorded *calls;
    long count, capacity;
};

ct_launch_record *ct_launch_record_new(void)
{
    ct_launch_record *record = calloc(1, sizeof *record);
    if (!record) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "ct_graph_begin: no host memory for a graph");
    return record;
}

void ct_launch_record_free(ct_launch_record *record)
{
    if (!record) return;
    free(record->calls);
    free(record);
}

static recorded *append(ct_launch_record *record)
{
    if (record->count == record->capacity) {
        long capacity = record->capacity ? 2 * record->capacity : 64;
        recorded *grown = realloc(record->calls, (size_t)capacity * sizeof *grown);
        if (!grown) return ct_error_null(CT_ERR_OUT_OF_MEMORY, "graph capture: no host memory to "
                                         "record launch %ld", record->count + 1);
        record->calls = grown;
        record->capacity = capacity;
    }
    recorded *call = &record->calls[record->count++];
    memset(call, 0, sizeof *call);
    return call;
}

ct_status ct_launch_record_kernel(ct_launch_record *record, ct_kernel_id kernel, void *const buffers[],
                                  const ct_kparams *params, long work, int group_size)
{
    recorded *call = append(record);
    if (!call) return ct_last_error();
    call->kernel = kernel;
    call->work = work;
    call->group_size = group_size;
    memcpy(call->buffers, buffers, (size_t)ct_kernel_buffer_count(kernel) * sizeof *buffers);
    call->params = *params;
    return CT_OK;
}

ct_status ct_launch_record_gemm(ct_launch_record *record, const ct_gemm_args *args)
{
    recorded *call = append(record);
    if (!call) return ct_last_error();
    call->kind = RECORDED_GEMM;
    call->gemm = *args;
    return CT_OK;
}

ct_status ct_launch_record_conv2d(ct_launch_record *record, const ct_conv2d_args *args)
{
    recorded *call = append(record);
    if (!call) return ct_last_error();
    call->kind = RECORDED_CONV2D;
    call->conv2d = *args;
    return CT_OK;
}

ct_status ct_launch_record_pool2d(ct_launch_record *record, const ct_pool2d_args *args)
{
    recorded *call = append(record);
    if (!call) return ct_last_error();
    call->kind = RECORDED_POOL2D;
    call->pool2d = *args;
    return CT_OK;
}

ct_status ct_launch_record_attention(ct_launch_record *record, const ct_attention_args *args)
{
    recorded *call = append(record);
    if (!call) return ct_last_error();
    call->kind = RECORDED_ATTENTION;
    call->attention = *args;
    return CT_OK;
}

long ct_launch_record_length(const ct_launch_record *record) { return record ? record->count : 0; }

ct_status ct_launch_record_replay(const ct_launch_record *record, ct_device device, void *stream)
{
    for (long i = 0; i < record->count; i++) {
        const recorded *call = &record->calls[i];
        ct_status status;
        if (call->kind == RECORDED_GEMM) status = ct_backend_gemm_replayed(device, stream, &call->gemm);
        else if (call->kind == RECORDED_CONV2D) status = ct_backend_conv2d_replayed(device, stream, &call->conv2d);
        else if (call->kind == RECORDED_POOL2D) status = ct_backend_pool2d_replayed(device, stream, &call->pool2d);
        else if (call->kind == RECORDED_ATTENTION)
            status = ct_backend_attention_replayed(device, stream, &call->attention);
        else
            status = ct_backend_launch_replayed(device, stream, call->kernel, call->buffers, &call->params,
                                                call->work, call->group_size);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}
