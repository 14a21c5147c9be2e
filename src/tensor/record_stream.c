/* ct_tensor_record_stream, PyTorch's Tensor.record_stream: the caching allocator's pools are per
 * stream, and this tells it of a stream besides the tensor's own that uses its memory. */
#include "tensor/tensor_internal.h"

ct_status ct_tensor_record_stream(const ct_tensor *t, ct_stream *stream)
{
    static const char *FN = "ct_tensor_record_stream";
    if (ct_tensor_unusable(FN, "t", t)) return ct_last_error();
    ct_device device = t->storage->device;
    if (stream && !ct_device_equal(ct_stream_device(stream), device)) {
        char tensor_device[CT_DEVICE_STRING_MAX], stream_device[CT_DEVICE_STRING_MAX];
        return ct_error(CT_ERR_DEVICE, "%s: the tensor is on %s and the stream belongs to %s; "
                        "a tensor's memory can only be used by the streams of its own device "
                        "(pass a stream of %s, or NULL for its default stream)", FN,
                        ct_device_format(device, tensor_device, sizeof tensor_device),
                        ct_device_format(ct_stream_device(stream), stream_device, sizeof stream_device),
                        tensor_device);
    }
    return ct_caching_allocator_record_stream(t->storage->block, stream);
}
