/* Pinned CPU tensors: host memory the devices copy from and to at full speed, and the only
 * memory queued (non-blocking) copies use. */
#include "tensor/tensor_internal.h"

ct_tensor *ct_empty_pinned(const int64_t *shape, int ndim, ct_dtype dtype)
{
    CT_API_ENTER;
    return ct_api_return(ct_tensor_alloc_pinned("ct_empty_pinned", dtype, shape, ndim));
}

bool ct_is_pinned(const ct_tensor *t)
{
    if (ct_tensor_unusable("ct_is_pinned", "t", t)) return false;
    return t->storage->block && t->storage->block->pinned;
}

ct_tensor *ct_pin_memory(const ct_tensor *t)
{
    CT_API_ENTER;
    if (ct_tensor_unusable("ct_pin_memory", "t", t)) return ct_api_return(NULL);
    if (t->storage->device.type != CT_CPU) {
        char name[CT_DEVICE_STRING_MAX];
        return ct_api_return(ct_error_null(CT_ERR_DEVICE, "ct_pin_memory: the tensor is on %s; "
                                           "only CPU tensors can be pinned",
                                           ct_device_format(t->storage->device, name, sizeof name)));
    }
    if (ct_is_pinned(t)) return ct_api_return(ct_retain((ct_tensor *)t));
    ct_tensor *out = ct_tensor_alloc_pinned("ct_pin_memory", t->dtype, t->shape, t->ndim);
    if (out && ct_tensor_copy_into(out, t) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    return ct_api_return(out);
}
