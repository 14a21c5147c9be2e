/* Moving and copying tensors: ct_to between devices and dtypes, clones, reading back. */
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_internal.h"

ct_to_options ct_to_options_default(ct_device device)
{
    ct_to_options options = {.device = device, .dtype = -1, .non_blocking = false, .copy = false};
    return options;
}

/* A contiguous tensor with t's values and the given dtype, on t's device (t itself, retained,
 * when nothing needs to change and no copy is forced). */
static ct_tensor *contiguous_as(const ct_tensor *t, ct_dtype dtype, bool force_copy)
{
    if (!force_copy && dtype == t->dtype && ct_is_contiguous(t)) {
        atomic_fetch_add(&((ct_tensor *)t)->refcount, 1);
        return (ct_tensor *)t;
    }
    ct_tensor *out = ct_tensor_alloc("ct_to", t->storage->device, dtype, t->shape, t->ndim);
    if (out && ct_tensor_copy_into(out, t) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}

/* Copies the bytes of contiguous src into contiguous dst (same size) across devices. */
static ct_status copy_between_devices(ct_tensor *dst, const ct_tensor *src)
{
    size_t bytes = (size_t)ct_numel(src) * ct_dtype_size(src->dtype);
    if (bytes == 0) return CT_OK;
    ct_device from = src->storage->device, to = dst->storage->device;
    size_t src_offset = (size_t)src->offset * ct_dtype_size(src->dtype);
    size_t dst_offset = (size_t)dst->offset * ct_dtype_size(dst->dtype);
    const ct_backend *source = ct_backend_of(from), *target = ct_backend_of(to);
    if (!source || !target) return ct_last_error();
    if (ct_device_equal(from, to))
        return source->copy_device_to_device(from.index, ct_tensor_handle(dst), dst_offset,
                                             ct_tensor_handle(src), src_offset, bytes);
    if (from.type == CT_CPU)
        return target->copy_host_to_device(to.index, ct_tensor_handle(dst), dst_offset,
                                           (const char *)ct_tensor_handle(src) + src_offset, bytes);
    if (to.type == CT_CPU)
        return source->copy_device_to_host(from.index, (char *)ct_tensor_handle(dst) + dst_offset,
                                           ct_tensor_handle(src), src_offset, bytes);
    /* Two devices of one backend: directly where the backend can, otherwise through the host. */
    if (from.type == to.type && source->copy_peer) {
        ct_status status = source->copy_peer(to.index, ct_tensor_handle(dst), dst_offset, from.index,
                                             ct_tensor_handle(src), src_offset, bytes);
        if (status != CT_ERR_UNAVAILABLE) return status;
    }
    void *staging = malloc(bytes);
    if (!staging) return ct_error(CT_ERR_OUT_OF_MEMORY, "ct_to: no host memory to stage %zu bytes", bytes);
    ct_status status = source->copy_device_to_host(from.index, staging, ct_tensor_handle(src), src_offset, bytes);
    if (status == CT_OK)
        status = target->copy_host_to_device(to.index, ct_tensor_handle(dst), dst_offset, staging, bytes);
    free(staging);
    return status;
}

static ct_tensor *to_with(const ct_tensor *t, const ct_to_options *options)
{
    if (!t) return ct_null_argument("ct_to", "t");
    if (!options) return ct_null_argument("ct_to", "options");
    ct_device target;
    if (ct_device_resolve(options->device, &target) != CT_OK) return NULL;
    ct_dtype dtype = options->dtype < 0 ? t->dtype : (ct_dtype)options->dtype;
    if (!ct_dtype_is_valid(dtype))
        return ct_error_null(CT_ERR_DTYPE, "ct_to: dtype %d is not a ct_dtype", options->dtype);
    bool same_device = ct_device_equal(target, t->storage->device);
    if (same_device && dtype == t->dtype && !options->copy) {
        atomic_fetch_add(&((ct_tensor *)t)->refcount, 1);
        return (ct_tensor *)t;
    }
    if (same_device) {
        ct_tensor *out = ct_tensor_alloc("ct_to", target, dtype, t->shape, t->ndim);
        if (out && ct_tensor_copy_into(out, t) != CT_OK) {
            ct_release(out);
            return NULL;
        }
        return out;
    }
    /* Convert where the data is, then move the bytes once. */
    ct_tensor *source = contiguous_as(t, dtype, false);
    if (!source) return NULL;
    ct_tensor *out = ct_tensor_alloc("ct_to", target, dtype, t->shape, t->ndim);
    if (out && copy_between_devices(out, source) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    ct_release(source);
    return out;
}

ct_tensor *ct_to_with(const ct_tensor *t, const ct_to_options *options)
{
    CT_API_ENTER;
    return ct_api_return(to_with(t, options));
}

ct_tensor *ct_to(const ct_tensor *t, ct_device device)
{
    CT_API_ENTER;
    ct_to_options options = ct_to_options_default(device);
    return ct_api_return(to_with(t, &options));
}

ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dtype)
{
    CT_API_ENTER;
    if (!t) return ct_api_return(ct_null_argument("ct_to_dtype", "t"));
    ct_to_options options = ct_to_options_default(t->storage->device);
    options.dtype = (int)dtype;
    return ct_api_return(to_with(t, &options));
}

ct_tensor *ct_clone(const ct_tensor *t)
{
    CT_API_ENTER;
    if (!t) return ct_api_return(ct_null_argument("ct_clone", "t"));
    return ct_api_return(contiguous_as(t, t->dtype, true));
}

ct_tensor *ct_contiguous(const ct_tensor *t)
{
    CT_API_ENTER;
    if (!t) return ct_api_return(ct_null_argument("ct_contiguous", "t"));
    return ct_api_return(contiguous_as(t, t->dtype, false));
}

ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src)
{
    if (!dst) return ct_null_argument("ct_copy_", "dst"), ct_last_error();
    if (!src) return ct_null_argument("ct_copy_", "src"), ct_last_error();
    char a[256], b[256];
    if (dst->ndim != src->ndim || memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)dst->ndim))
        return ct_error(CT_ERR_SHAPE, "ct_copy_: destination has shape %s and source %s; they must "
                        "be equal", ct_shape_format(dst->shape, dst->ndim, a, sizeof a),
                        ct_shape_format(src->shape, src->ndim, b, sizeof b));
    if (dst->dtype != src->dtype)
        return ct_error(CT_ERR_DTYPE, "ct_copy_: destination is %s and source %s; convert with "
                        "ct_to_dtype first", ct_dtype_name(dst->dtype), ct_dtype_name(src->dtype));
    ct_api_enter();
    ct_status status;
    if (ct_device_equal(dst->storage->device, src->storage->device)) {
        status = ct_tensor_copy_into(dst, src);
    } else {
        /* Move src to dst's device, then copy into dst's (possibly strided) view there. */
        ct_tensor *moved = to_with(src, &(ct_to_options){dst->storage->device, -1, false, false});
        status = moved ? ct_tensor_copy_into(dst, moved) : ct_last_error();
        ct_release(moved);
    }
    ct_api_return(NULL);
    return status;
}

ct_status ct_tensor_to_array(const ct_tensor *t, void *dst, size_t dst_bytes)
{
    if (!t) return ct_null_argument("ct_tensor_to_array", "t"), ct_last_error();
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(t->dtype);
    if (bytes == 0) return CT_OK;
    if (!dst) return ct_null_argument("ct_tensor_to_array", "dst"), ct_last_error();
    if (dst_bytes < bytes)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_to_array: the tensor has %zu bytes "
                        "(%lld x %s) but dst has room for %zu", bytes, (long long)ct_numel(t),
                        ct_dtype_name(t->dtype), dst_bytes);
    ct_api_enter();
    ct_tensor *c = contiguous_as(t, t->dtype, false);
    ct_status status = c ? CT_OK : ct_last_error();
    if (c) {
        const ct_backend *backend = ct_backend_of(c->storage->device);
        status = backend->copy_device_to_host(c->storage->device.index, dst, ct_tensor_handle(c),
                                              (size_t)c->offset * ct_dtype_size(c->dtype), bytes);
    }
    ct_release(c);
    ct_api_return(NULL);
    return status;
}

static ct_status item_bytes(const ct_tensor *t, const char *function, void *value)
{
    if (!t) return ct_null_argument(function, "t"), ct_last_error();
    if (!value) return ct_null_argument(function, "value"), ct_last_error();
    if (ct_numel(t) != 1) {
        char shape[256];
        return ct_error(CT_ERR_SHAPE, "%s: a tensor of shape %s has %lld elements; only a "
                        "one-element tensor converts to a number", function,
                        ct_shape_format(t->shape, t->ndim, shape, sizeof shape), (long long)ct_numel(t));
    }
    return ct_tensor_to_array(t, value, 8);
}

ct_status ct_item(const ct_tensor *t, double *value)
{
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t u8; } v;
    ct_status status = item_bytes(t, "ct_item", &v);
    if (status != CT_OK) return status;
    switch (t->dtype) {
    case CT_F32: *value = v.f32; break;
    case CT_F64: *value = v.f64; break;
    case CT_I32: *value = v.i32; break;
    case CT_I64: *value = (double)v.i64; break;
    default: *value = v.u8; break;
    }
    return CT_OK;
}

ct_status ct_item_int64(const ct_tensor *t, int64_t *value)
{
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t u8; } v;
    ct_status status = item_bytes(t, "ct_item_int64", &v);
    if (status != CT_OK) return status;
    switch (t->dtype) {
    case CT_F32: *value = (int64_t)v.f32; break;
    case CT_F64: *value = (int64_t)v.f64; break;
    case CT_I32: *value = v.i32; break;
    case CT_I64: *value = v.i64; break;
    default: *value = v.u8; break;
    }
    return CT_OK;
}
