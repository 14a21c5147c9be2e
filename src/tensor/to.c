/* Moving and copying tensors: ct_to between devices and dtypes, clones, reading back. */
#include <stdlib.h>
#include <string.h>

#include "device/capture.h"
#include "tensor/autograd_node.h"
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
    return ct_transfer_between_devices(dst->storage->device, ct_tensor_handle(dst),
                                       (size_t)dst->offset * ct_dtype_size(dst->dtype),
                                       src->storage->device, ct_tensor_handle(src),
                                       (size_t)src->offset * ct_dtype_size(src->dtype), bytes);
}

static void release_storage_when_done(void *storage) { ct_storage_release(storage); }

/* A queued copy between pinned host memory and a device. NULL with *failed false when this copy
 * cannot be queued (the caller then copies blocking); NULL with *failed true on an error. */
static ct_tensor *to_non_blocking(const ct_tensor *t, ct_device target, ct_dtype dtype, bool *failed)
{
    *failed = true;
    ct_device from = t->storage->device;
    if (ct_capture_refuse(from, true, "ct_to (non-blocking) between devices", "copies between the host and a device") != CT_OK ||
        ct_capture_refuse(target, true, "ct_to (non-blocking) between devices", "copies between the host and a device") != CT_OK)
        return NULL;
    char name[CT_DEVICE_STRING_MAX];
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(dtype);
    if (from.type == CT_CPU && target.type != CT_CPU) {
        const ct_backend *backend = ct_backend_table[target.type];
        if (!backend->copy_host_to_device_async || !t->storage->block || !t->storage->block->pinned ||
            dtype != t->dtype || !ct_is_contiguous(t)) {
            ct_log_message(CT_LOG_DEBUG, "ct_to(non_blocking) to %s: the source is not a contiguous "
                           "pinned tensor of the target dtype, so the copy is blocking",
                           ct_device_format(target, name, sizeof name));
            *failed = false;
            return NULL;
        }
        ct_tensor *out = ct_tensor_alloc("ct_to", target, dtype, t->shape, t->ndim);
        if (!out) return NULL;
        const char *src = (const char *)ct_tensor_handle(t) + (size_t)t->offset * ct_dtype_size(dtype);
        ct_storage_retain(t->storage); /* until the copy has read it */
        ct_transfer_count(target, CT_TRANSFER_HOST_TO_DEVICE, bytes);
        if (backend->copy_host_to_device_async(target.index, ct_current_stream_handle(target),
                                               ct_tensor_handle(out), 0, src, bytes,
                                               release_storage_when_done, t->storage, NULL) != CT_OK) {
            ct_storage_release(t->storage);
            ct_release(out);
            return NULL;
        }
        return out;
    }
    if (from.type != CT_CPU && target.type == CT_CPU) {
        const ct_backend *backend = ct_backend_table[from.type];
        if (!backend->copy_device_to_host_async) {
            *failed = false;
            return NULL;
        }
        ct_tensor *source = contiguous_as(t, dtype, false); /* queued on the device too */
        if (!source) return NULL;
        ct_tensor *out = ct_tensor_alloc_pinned("ct_to", dtype, t->shape, t->ndim);
        if (out && !out->storage->block->pinned) {
            ct_log_message(CT_LOG_DEBUG, "ct_to(non_blocking) from %s: no pinned host memory here, "
                           "so the copy is blocking", ct_device_format(from, name, sizeof name));
            ct_release(out);
            ct_release(source);
            *failed = false;
            return NULL;
        }
        if (out && bytes > 0) {
            void *event = NULL;
            ct_storage_retain(source->storage);
            ct_transfer_count(from, CT_TRANSFER_DEVICE_TO_HOST, bytes);
            if (backend->copy_device_to_host_async(from.index, ct_current_stream_handle(from),
                                                   ct_tensor_handle(out), ct_tensor_handle(source),
                                                   (size_t)source->offset * ct_dtype_size(dtype), bytes,
                                                   release_storage_when_done, source->storage, &event) != CT_OK) {
                ct_storage_release(source->storage);
                ct_release(out);
                out = NULL;
            } else {
                out->storage->pending_device = from;
                atomic_store_explicit(&out->storage->pending_event, event, memory_order_release);
            }
        }
        ct_release(source);
        return out;
    }
    *failed = false;
    return NULL;
}

static ct_tensor *to_with(const ct_tensor *t, const ct_to_options *options)
{
    if (ct_tensor_unusable("ct_to", "t", t)) return NULL;
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
    if (options->non_blocking && !same_device) {
        bool failed;
        ct_tensor *queued = to_non_blocking(t, target, dtype, &failed);
        if (queued || failed) return queued;
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

/* ---- autograd: a copy carries the graph ---- */

/* The gradient of a copy is the output's gradient moved back to the input's device and cast to
 * its dtype (the identity for a clone). The tensor layer's own calls only: no ops. */
static ct_status copy_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    if (!node->next_nodes[0] && !node->next_leaves[0]) return CT_OK;
    ct_to_options options = ct_to_options_default(node->inputs[0].device);
    options.dtype = (int)node->inputs[0].dtype;
    grads[0] = ct_to_with(grad, &options);
    return grads[0] ? CT_OK : ct_last_error();
}

/* Records out (a new tensor copied from t) in the graph when t requires grad. A result that is
 * t itself records nothing (it is the input); integer and bool results carry no gradient. */
static ct_tensor *record_copy(ct_tensor *out, const ct_tensor *t, const char *name)
{
    if (!out || out == t || !ct_dtype_is_floating(out->dtype) || !ct_autograd_needed(&t, 1)) return out;
    if (ct_autograd_record(out, name, copy_backward, &t, 1)) return out;
    ct_release(out);
    return NULL;
}

ct_tensor *ct_to_with(const ct_tensor *t, const ct_to_options *options)
{
    CT_API_ENTER;
    return ct_api_return(record_copy(to_with(t, options), t, "ToCopyBackward"));
}

ct_tensor *ct_to(const ct_tensor *t, ct_device device)
{
    CT_API_ENTER;
    ct_to_options options = ct_to_options_default(device);
    return ct_api_return(record_copy(to_with(t, &options), t, "ToCopyBackward"));
}

ct_tensor *ct_to_dtype(const ct_tensor *t, ct_dtype dtype)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_to_dtype", "t", t)) return ct_api_return(NULL);
    ct_to_options options = ct_to_options_default(t->storage->device);
    options.dtype = (int)dtype;
    return ct_api_return(record_copy(to_with(t, &options), t, "ToCopyBackward"));
}

ct_tensor *ct_clone(const ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_clone", "t", t)) return ct_api_return(NULL);
    return ct_api_return(record_copy(contiguous_as(t, t->dtype, true), t, "CloneBackward"));
}

ct_tensor *ct_contiguous(const ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_contiguous", "t", t)) return ct_api_return(NULL);
    return ct_api_return(record_copy(contiguous_as(t, t->dtype, false), t, "CloneBackward"));
}

ct_status ct_copy_(ct_tensor *dst, const ct_tensor *src)
{
    if (ct_tensor_unusable("ct_copy_", "dst", dst)) return ct_last_error();
    if (ct_tensor_unusable("ct_copy_", "src", src)) return ct_last_error();
    char a[256], b[256];
    if (dst->ndim != src->ndim || memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)dst->ndim))
        return ct_error(CT_ERR_SHAPE, "ct_copy_: destination has shape %s and source %s; they must "
                        "be equal", ct_shape_format(dst->shape, dst->ndim, a, sizeof a),
                        ct_shape_format(src->shape, src->ndim, b, sizeof b));
    if (dst->dtype != src->dtype)
        return ct_error(CT_ERR_DTYPE, "ct_copy_: destination is %s and source %s; convert with "
                        "ct_to_dtype first", ct_dtype_name(dst->dtype), ct_dtype_name(src->dtype));
    /* An expanded view (stride 0 over a dim of more than one) writes several elements into one
     * place: which value wins would depend on the device's order (PyTorch refuses it too). */
    for (int d = 0; d < dst->ndim; d++)
        if (dst->strides[d] == 0 && dst->shape[d] > 1)
            return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_copy_: more than one element of the "
                            "destination (shape %s, stride 0 in dim %d) refers to a single memory "
                            "location; copy into a contiguous tensor (ct_contiguous or ct_clone "
                            "of it) instead", ct_shape_format(dst->shape, dst->ndim, a, sizeof a), d);
    ct_api_enter();
    ct_status status;
    if (ct_device_equal(dst->storage->device, src->storage->device)) {
        status = ct_tensor_copy_into(dst, src);
    } else if (ct_is_contiguous(dst) && ct_is_contiguous(src)) {
        status = copy_between_devices(dst, src); /* the bytes move once, straight into dst */
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
    if (ct_tensor_unusable("ct_tensor_to_array", "t", t)) return ct_last_error();
    size_t bytes = (size_t)ct_numel(t) * ct_dtype_size(t->dtype);
    if (bytes == 0) return CT_OK;
    if (!dst) return ct_null_argument("ct_tensor_to_array", "dst"), ct_last_error();
    if (dst_bytes < bytes)
        return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_tensor_to_array: the tensor has %zu bytes "
                        "(%lld x %s) but dst has room for %zu", bytes, (long long)ct_numel(t),
                        ct_dtype_name(t->dtype), dst_bytes);
    ct_status refused = ct_capture_refuse(t->storage->device, true, "ct_tensor_to_array (or ct_item)",
                                          "waits on the host for values the captured work has not computed");
    if (refused != CT_OK) return refused;
    ct_api_enter();
    ct_tensor *c = contiguous_as(t, t->dtype, false);
    ct_status status = c ? CT_OK : ct_last_error();
    if (c)
        status = ct_transfer_device_to_host(c->storage->device, dst, ct_tensor_handle(c),
                                            (size_t)c->offset * ct_dtype_size(c->dtype), bytes);
    ct_release(c);
    ct_api_return(NULL);
    return status;
}

/* Reads the one element of t into bytes; value is the caller's output (checked here, written by
 * the caller). */
static ct_status item_bytes(const ct_tensor *t, const char *function, const void *value, void *bytes)
{
    if (ct_tensor_unusable(function, "t", t)) return ct_last_error();
    if (!value) return ct_null_argument(function, "value"), ct_last_error();
    if (ct_numel(t) != 1) {
        char shape[256];
        return ct_error(CT_ERR_SHAPE, "%s: a tensor of shape %s has %lld elements; only a "
                        "one-element tensor converts to a number", function,
                        ct_shape_format(t->shape, t->ndim, shape, sizeof shape), (long long)ct_numel(t));
    }
    return ct_tensor_to_array(t, bytes, 8);
}

ct_status ct_item(const ct_tensor *t, double *value)
{
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t u8; uint16_t f16; } v;
    ct_status status = item_bytes(t, "ct_item", value, &v);
    if (status != CT_OK) return status;
    switch (t->dtype) {
    case CT_F32: *value = v.f32; break;
    case CT_F16: *value = ct_f16_to_float(v.f16); break;
    case CT_BF16: *value = ct_bf16_to_float(v.f16); break;
    case CT_F64: *value = v.f64; break;
    case CT_I32: *value = v.i32; break;
    case CT_I64: *value = (double)v.i64; break;
    default: *value = v.u8; break;
    }
    return CT_OK;
}

ct_status ct_item_int64(const ct_tensor *t, int64_t *value)
{
    union { float f32; double f64; int32_t i32; int64_t i64; uint8_t u8; uint16_t f16; } v;
    ct_status status = item_bytes(t, "ct_item_int64", value, &v);
    if (status != CT_OK) return status;
    switch (t->dtype) {
    case CT_F32:
    case CT_F64:
    case CT_F16:
    case CT_BF16: {
        /* Python's int(x) refuses NaN and infinities; int64 also ends at 2^63. */
        double x = t->dtype == CT_F32   ? (double)v.f32
                   : t->dtype == CT_F16 ? (double)ct_f16_to_float(v.f16)
                   : t->dtype == CT_BF16 ? (double)ct_bf16_to_float(v.f16)
                                        : v.f64;
        if (!ct_dtype_holds(CT_I64, x))
            return ct_error(CT_ERR_INVALID_ARGUMENT, "ct_item_int64: the %s value %g cannot be "
                            "converted to an int64 (%s); read it with ct_item", ct_dtype_name(t->dtype),
                            x, ct_dtype_range_text(CT_I64));
        *value = (int64_t)x;
        break;
    }
    case CT_I32: *value = v.i32; break;
    case CT_I64: *value = v.i64; break;
    default: *value = v.u8; break;
    }
    return CT_OK;
}
