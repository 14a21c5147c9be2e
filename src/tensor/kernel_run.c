/* Running the kernels every layer needs over tensors: index spaces, fills and copies. */
#include <stdatomic.h>
#include <string.h>

#include "tensor/tensor_internal.h"

bool ct_kparams_index_space(ct_kparams *p, const int64_t *shape, int ndim, int count,
                            const int64_t *const *strides)
{
    int merged = 0;
    p->n = ct_shape_numel(shape, ndim);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue; /* a size-1 dim moves no operand */
        bool mergeable = merged > 0;
        for (int op = 0; op < count && mergeable; op++)
            mergeable = p->stride[op][merged - 1] == strides[op][d] * shape[d];
        if (mergeable) {
            p->size[merged - 1] *= shape[d];
            for (int op = 0; op < count; op++) p->stride[op][merged - 1] = strides[op][d];
        } else {
            p->size[merged] = shape[d];
            for (int op = 0; op < count; op++) p->stride[op][merged] = strides[op][d];
            merged++;
        }
    }
    p->ndim = merged;
    bool contiguous = merged <= 1;
    for (int op = 0; op < count && merged == 1; op++) contiguous = contiguous && p->stride[op][0] == 1;
    return contiguous;
}

atomic_int ct_elementwise_widths[CT_DEVICE_TYPE_COUNT][CT_MAX_DEVICES_PER_TYPE];

/* Vector items need each operand to start a multiple of W elements into its buffer: with buffers
 * 16-byte aligned (CUDA's start on 256 bytes, OpenCL's on the device's base alignment, the CPU's
 * on 64) that aligns every vector, 16 bytes of 4- and 8-byte types, 4 of uint8 and bool. */
ct_status ct_kparams_flat_asking(ct_kparams *p, ct_device device, long numel, int count)
{
    p->n = numel;
    p->l[0] = CT_FLAT_ONE;
    long width = 1;
    int known = ct_elementwise_width_known(device);
    if (known > 0) {
        width = known;
    } else {
        ct_work_shape shape;
        ct_status status = ct_backend_work_shape(device, &shape);
        if (status != CT_OK) return status;
        width = shape.elementwise_width > 1 ? shape.elementwise_width : 1;
        if (ct_elementwise_width_cached(device))
            atomic_store_explicit(&ct_elementwise_widths[device.type][device.index], (int)width,
                                  memory_order_relaxed);
    }
    if (width == 1) return CT_OK;
    for (int op = 0; op < count; op++)
        if (p->off[op] % width != 0) return CT_OK; /* a view's offset: one element per item */
    p->l[0] = CT_FLAT_VECTOR;
    p->ndim = 1;
    p->size[0] = numel;
    p->n = (numel + width - 1) / width;
    return CT_OK;
}

ct_status ct_tensor_fill(ct_tensor *t, double value)
{
    static const ct_kernel_id fill_kernels[CT_DTYPE_COUNT] = CT_KERNELS_BY_STORED_DTYPE(fill);
    ct_kparams p = {0};
    p.off[0] = t->offset;
    p.s[0] = value;
    ct_status status = ct_kparams_flat(&p, t->storage->device, (long)ct_numel(t), 1);
    if (status != CT_OK) return status;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(t)};
    return ct_backend_launch(t->storage->device, fill_kernels[t->dtype], buffers, &p, 1);
}

#define CT_COPY_ROW(KIND, S)                                                                     \
    {[CT_F32] = CT_K_##KIND##S##_to_f32, [CT_F64] = CT_K_##KIND##S##_to_f64,                     \
     [CT_I32] = CT_K_##KIND##S##_to_i32, [CT_I64] = CT_K_##KIND##S##_to_i64,                     \
     [CT_U8] = CT_K_##KIND##S##_to_u8, [CT_BOOL] = CT_K_##KIND##S##_to_b8,                      \
     [CT_F16] = CT_K_##KIND##S##_to_f16, [CT_BF16] = CT_K_##KIND##S##_to_bf16}
#define CT_COPY_TABLE(KIND)                                                                      \
    {[CT_F32] = CT_COPY_ROW(KIND, f32), [CT_F64] = CT_COPY_ROW(KIND, f64),                       \
     [CT_I32] = CT_COPY_ROW(KIND, i32), [CT_I64] = CT_COPY_ROW(KIND, i64),                       \
     [CT_U8] = CT_COPY_ROW(KIND, u8), [CT_BOOL] = CT_COPY_ROW(KIND, b8),                         \
     [CT_F16] = CT_COPY_ROW(KIND, f16), [CT_BF16] = CT_COPY_ROW(KIND, bf16)}
/* [source dtype][destination dtype] */
static const ct_kernel_id flat_copy_kernels[CT_DTYPE_COUNT][CT_DTYPE_COUNT] = CT_COPY_TABLE(copy_);
static const ct_kernel_id strided_copy_kernels[CT_DTYPE_COUNT][CT_DTYPE_COUNT] = CT_COPY_TABLE(copy_strided_);

ct_status ct_tensor_copy_into(ct_tensor *dst, const ct_tensor *src)
{
    ct_kparams p = {0};
    const int64_t *strides[2] = {dst->strides, src->strides};
    bool flat = ct_kparams_index_space(&p, dst->shape, dst->ndim, 2, strides);
    p.off[0] = dst->offset;
    p.off[1] = src->offset;
    if (flat) {
        ct_status status = ct_kparams_flat(&p, dst->storage->device, p.n, 2);
        if (status != CT_OK) return status;
    }
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(dst), ct_tensor_handle(src)};
    ct_kernel_id kernel = (flat ? flat_copy_kernels : strided_copy_kernels)[src->dtype][dst->dtype];
    return ct_backend_launch(dst->storage->device, kernel, buffers, &p, 1);
}
