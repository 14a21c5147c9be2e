/* torch.Tensor.data_ptr() for tensors in host memory. */
#include "tensor/tensor_internal.h"

void *ct_data_ptr(const ct_tensor *t)
{
    char device[CT_DEVICE_STRING_MAX];
    if (ct_tensor_unusable("ct_data_ptr", "t", t)) return NULL;
    if (t->storage->device.type != CT_CPU)
        return ct_error_null(CT_ERR_DEVICE, "ct_data_ptr: the tensor is on %s, whose memory the host cannot "
                             "address; move it with ct_to(t, CT_DEVICE_CPU) first",
                             ct_device_format(t->storage->device, device, sizeof device));
    char *base = ct_tensor_handle(t); /* waits for a queued copy into the tensor */
    return base ? base + (size_t)t->offset * ct_dtype_size(t->dtype) : NULL;
}
