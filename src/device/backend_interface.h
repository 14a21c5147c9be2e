/* The interface every device type implements (the CPU, OpenCL, CUDA). This is the only place
 * that dispatches on the device type: the layers above call through ct_backend_of(). */
#ifndef CT_BACKEND_INTERFACE_H
#define CT_BACKEND_INTERFACE_H

#include "ctorch/device.h"

struct ct_kparams;

/* Per-device tables (allocators, generators, streams) have this many slots per device type;
 * backends report at most this many devices. */
#define CT_MAX_DEVICES_PER_TYPE 64

/* C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C, row-major, for `batch` matrices at
 * constant batch strides (0 repeats one matrix). Offsets, leading dims and strides in elements. */
typedef struct ct_gemm_args {
    ct_dtype dtype;
    bool trans_a, trans_b;
    long m, n, k, batch;
    double alpha, beta;
    void *a; long a_offset, lda, a_batch_stride;
    void *b; long b_offset, ldb, b_batch_stride;
    void *c; long c_offset, ldc, c_batch_stride;
} ct_gemm_args;

/* A 2-D convolution of contiguous tensors: x [n, c, h, w], weight [o, c / groups, kh, kw], y [n, o,
 * out_h, out_w]; offsets in elements. The forward writes y = conv(x, weight) (+ bias [o] when
 * bias is not NULL); the backward of the data writes x from y's gradient (in y); the backward of
 * the weight writes weight from x and y's gradient. Dilation 1 is a dense kernel, as PyTorch's. */
typedef enum ct_conv_pass { CT_CONV_FORWARD, CT_CONV_BACKWARD_DATA, CT_CONV_BACKWARD_WEIGHT } ct_conv_pass;

typedef struct ct_conv2d_args {
    ct_conv_pass pass;
    ct_dtype dtype;
    long n, c, h, w, o, kh, kw, out_h, out_w, groups;
    long stride[2], padding[2], dilation[2];
    void *x; long x_offset;
    void *weight; long weight_offset;
    void *bias; long bias_offset;
    void *y; long y_offset;
} ct_conv2d_args;

/* 2-D max or average pooling of contiguous planes (one per sample and channel): x [planes, h, w],
 * y [planes, out_h, out_w], with ct_max_pool2d's and ct_avg_pool2d's semantics (include/ctorch/
 * nn_functional.h); offsets in elements. A forward writes y from x (max pooling also indices,
 * int64 of y's shape: each maximum's position h * w_size + w in its plane); a backward writes x's
 * gradient (in x) from y's gradient (in y), through indices for max pooling. */
typedef enum ct_pool_pass {
    CT_POOL_MAX_FORWARD, CT_POOL_MAX_BACKWARD, CT_POOL_AVG_FORWARD, CT_POOL_AVG_BACKWARD
} ct_pool_pass;

typedef struct ct_pool2d_args {
    ct_pool_pass pass;
    ct_dtype dtype;
    long planes, h, w, out_h, out_w;
    long kernel[2], stride[2], padding[2];
    int count_include_pad;
    void *x; long x_offset;
    void *y; long y_offset;
    void *indices; long indices_offset;
} ct_pool2d_args;
/* Fused scaled-dot-product attention (FlashAttention-2) over bh = batch x heads matrices of
 * [T, D]: the forward writes out [T, dv] and lse [bh, tq] (the log-sum-exp of each query's scaled
 * scores) from q, k, v; the backward writes dq, dk, dv from q, k, v, dout, lse and delta [bh, tq]
 * (rowsum(dout * out)). causal: query i sees keys j <= i (PyTorch's top-left alignment). A row
 * that sees no key gives 0. Offsets in elements; lse and delta contiguous, in the dtype's real
 * type. Each other operand's matrix of (batch b, head h), bh = b * heads + h, starts at
 * offset + b * batch + h * head and its rows are `row` apart, each row's elements adjacent: so
 * q, k and v can be read where one Linear wrote them side by side ([B, T, 3, H, D]), and out
 * written with its heads joined ([B, T, H, D]), with no copies between. */
typedef enum ct_attention_pass { CT_ATTENTION_FORWARD, CT_ATTENTION_BACKWARD } ct_attention_pass;

typedef struct ct_attention_layout {
    long batch, head, row;
} ct_attention_layout;

typedef struct ct_attention_args {
    ct_attention_pass pass;
    ct_dtype dtype;
    long bh, tq, tk, d, dv;
    long heads; /* bh = batch x heads; 1 where each matrix is one [T, D] block of its own */
    bool causal;
    double scale;
    /* q, k, v, out, dout, dq, dk, dv_grad */
    ct_attention_layout q_at, k_at, v_at, out_at, dout_at, dq_at, dk_at, dv_at;
    void *q; long q_offset;
    void *k; long k_offset;
    void *v; long v_offset;
    void *out; long out_offset;
    void *lse; long lse_offset;
    void *dout; long dout_offset;
    void *delta; long delta_offset;
    void *dq; long dq_offset;
    void *dk; long dk_offset;
    void *dv_grad; long dv_grad_offset;
} ct_attention_args;

/* How a device wants work split. The op layer plans its launches from this (src/ops/work_split.c):
 * a CPU wants a few long work items per core, each a group of one that walks a long vector loop;
 * a GPU wants blocks of cooperating threads, enough of them to keep every multiprocessor busy,
 * each thread walking a few elements. */
typedef struct ct_work_shape {
    int group_size;      /* work items per cooperating group, a power of 2: 1 on a CPU */
    int min_group_size;  /* the smallest group worth launching: a warp on a GPU */
    int lanes_per_item;  /* CT_ITEM_LANES of the device's kernel build (see dialect.h) */
    long target_items;   /* work items in flight that fill the device */
    long min_per_item;   /* elements an item should walk at least, to amortise it */
    long max_per_item;   /* and at most: past that, more items */
    /* Elements per item of a flat elementwise, copy or fill launch whose operands are aligned:
     * CT_DEVICE_VECTOR_WIDTH for items moved as vectors (CT_FLAT_VECTOR, see dialect.h), 1 for
     * single elements (a CPU, whose simd loop over items vectorises by itself). */
    int elementwise_width;
} ct_work_shape;

/* Called by a backend when a queued copy has finished (from any thread). */
typedef void (*ct_backend_done)(void *arg);

typedef struct ct_backend {
    ct_device_type type;
    /* Finds the devices, once. false with a reason when there are none. */
    bool (*init)(char *reason, size_t reason_size);
    int (*device_count)(void);
    ct_status (*get_properties)(int index, ct_device_props *props);
    ct_status (*mem_get_info)(int index, size_t *free_bytes, size_t *total_bytes);

    /* Device memory, uncached (the allocator layer caches). CT_ERR_OUT_OF_MEMORY when the device
     * has no room: the allocator then releases its cache, retries and reports the sizes. Any
     * other failure (a lost device, a driver error) sets its own message, which the caller keeps. */
    ct_status (*raw_alloc)(int index, size_t bytes, void **handle);
    void (*raw_free)(int index, void *handle);

    /* Blocking copies; offsets in bytes. */
    ct_status (*copy_host_to_device)(int index, void *dst, size_t dst_offset, const void *src,
                                     size_t bytes);
    ct_status (*copy_device_to_host)(int index, void *dst, const void *src, size_t src_offset,
                                     size_t bytes);
    ct_status (*copy_device_to_device)(int index, void *dst, size_t dst_offset, const void *src,
                                       size_t src_offset, size_t bytes);

    /* Two devices of this backend (NULL, or CT_ERR_UNAVAILABLE, when it cannot: the caller then
     * goes through the host). */
    ct_status (*copy_peer)(int dst_index, void *dst, size_t dst_offset, int src_index,
                           const void *src, size_t src_offset, size_t bytes);

    /* Queued copies between pinned host memory and the device on `stream` (NULL: the default
     * stream). done(done_arg) runs once the copy has finished; when event_out is not NULL it
     * receives an event (see event_*) that completes with the copy. */
    ct_status (*copy_host_to_device_async)(int index, void *stream, void *dst, size_t dst_offset,
                                           const void *src, size_t bytes, ct_backend_done done,
                                           void *done_arg, void **event_out);
    ct_status (*copy_device_to_host_async)(int index, void *stream, void *dst, const void *src,
                                           size_t src_offset, size_t bytes, ct_backend_done done,
                                           void *done_arg, void **event_out);
    /* Page-locked host memory; *handle is what pinned_free needs besides the pointer. NULL (the
     * function itself may be NULL) when the backend has none. */
    void *(*pinned_alloc)(int index, size_t bytes, void **handle);
    void (*pinned_free)(int index, void *host, void *handle);

    /* Runs kernel `kernel` (a ct_kernel_id) on `stream` (NULL: the default stream): with
     * group_size 0, over params->n independent work items, grouped as the backend likes; with
     * group_size > 0 (a cooperative kernel), as params->n groups of group_size items, a power of
     * 2 between the work shape's min_group_size and group_size. work_per_item is a hint of how
     * many elements each item (or group) touches, so that small launches stay on one thread. */
    ct_status (*launch)(int index, void *stream, int kernel, void *const buffers[],
                        const struct ct_kparams *params, long work_per_item, int group_size);
    void (*work_shape)(int index, ct_work_shape *shape);
    ct_status (*gemm)(int index, void *stream, const ct_gemm_args *args);
    /* Does gemm multiply this dtype itself? float32 and float64 always; float16 and bfloat16
     * where the device's BLAS has a 16-bit product (the ops layer multiplies the others in float32
     * and rounds the result once, see src/ops/gemm_any.c). NULL: float32 and float64 only. */
    bool (*gemm_takes)(int index, ct_dtype dtype);
    /* Convolution by the device's own DNN library (oneDNN on the CPU, as cuDNN under PyTorch on a
     * GPU). conv2d_takes says whether it runs this one; NULL, or false: the ops layer convolves as
     * im2col + gemm. */
    ct_status (*conv2d)(int index, void *stream, const ct_conv2d_args *args);
    bool (*conv2d_takes)(int index, const ct_conv2d_args *args);
    /* Pooling by the device's own code (the CPU's vectorised loops); pool2d_takes says whether it
     * runs this one; NULL, or false: the ops layer launches the dialect's kernels (kernels/nn.ct). */
    ct_status (*pool2d)(int index, void *stream, const ct_pool2d_args *args);
    bool (*pool2d_takes)(int index, const ct_pool2d_args *args);
    /* Fused attention by the device's own code (the CPU's, over its BLAS: cpu_attention.c);
     * attention_takes says whether it runs this one; NULL, or false: the ops layer launches the
     * portable kernels (kernels/attention.ct). */
    ct_status (*attention)(int index, void *stream, const ct_attention_args *args);
    bool (*attention_takes)(int index, const ct_attention_args *args);
    /* Waits for all the device's streams. */
    ct_status (*synchronize)(int index);

    /* Streams: in-order queues besides the default one. Events: points in a stream. */
    ct_status (*stream_create)(int index, void **stream);
    void (*stream_destroy)(int index, void *stream);
    ct_status (*stream_synchronize)(int index, void *stream);
    ct_status (*event_create)(int index, void **event);
    void (*event_destroy)(int index, void *event);
    ct_status (*event_record)(int index, void *event, void *stream);
    ct_status (*stream_wait_event)(int index, void *stream, void *event);
    ct_status (*event_synchronize)(int index, void *event);
    /* Asks without waiting: *complete is true once the event has happened (one never recorded
     * has). An error status when the device reports the work before it failed. */
    ct_status (*event_query)(int index, void *event, bool *complete);

    /* Graph capture of the backend's own (CUDA's stream capture); NULL where it has none, and the
     * backend layer then records launches and products itself and replays them through launch
     * and gemm (src/backend/launch_record.h). capture_begin: the work queued on stream from then
     * on joins the capture instead of running, until capture_end, which gives back an executable
     * graph, or capture_abandon, which discards it; either leaves the stream as before.
     * graph_launch queues a whole graph on stream; graph_destroy frees one. */
    ct_status (*capture_begin)(int index, void *stream);
    ct_status (*capture_end)(int index, void *stream, void **graph);
    void (*capture_abandon)(int index, void *stream);
    ct_status (*graph_launch)(int index, void *graph, void *stream);
    void (*graph_destroy)(int index, void *graph);
} ct_backend;

/* The backend compiled in for a type, or NULL. Filled by the backend layer. */
extern const ct_backend *ct_backend_table[CT_DEVICE_TYPE_COUNT];

/* Tests only: puts `backend` in the slot of `type` (before anything asked for that type), so
 * that multi-device behaviour can be tested where there is one real device. */
void ct_backend_install_for_testing(ct_device_type type, const ct_backend *backend);

/* The backend of a resolved device, initialised; NULL with an error when it is not usable. */
const ct_backend *ct_backend_of(ct_device device);

#endif
