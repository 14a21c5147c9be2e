/* Creating tensors directly on their device: from a C array, empty, zeros, ones, full. */
#include "tensor/tensor_internal.h"

ct_tensor *ct_empty(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(ct_tensor_alloc("ct_empty", device, dtype, shape, ndim));
}

static ct_tensor *filled(const char *function, const int64_t *shape, int ndim, double value,
                         ct_dtype dtype, ct_device device)
{
    ct_tensor *t = ct_tensor_alloc(function, device, dtype, shape, ndim);
    if (t && ct_tensor_fill(t, value) != CT_OK) {
        ct_release(t);
        return NULL;
    }
    return t;
}

ct_tensor *ct_zeros(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(filled("ct_zeros", shape, ndim, 0.0, dtype, device));
}

ct_tensor *ct_ones(const int64_t *shape, int ndim, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    return ct_api_return(filled("ct_ones", shape, ndim, 1.0, dtype, device));
}

ct_tensor *ct_full(const int64_t *shape, int ndim, double value, ct_dtype dtype, ct_device device)
{
    CT_API_ENTER;
    if (ct_dtype_is_valid(dtype) && ct_check_value_fits("ct_full", "value", value, dtype) != CT_OK)
        return ct_api_return(NULL);
    return ct_api_return(filled("ct_full", shape, ndim, value, dtype, device));
}

ct_tensor *ct_tensor_from_data(const void *data, ct_dtype dtype, const int64_t *shape, int ndim,
                               ct_device device)
{
    CT_API_ENTER;
    ct_tensor *t = ct_tensor_alloc("ct_tensor_from_data", device, dtype, shape, ndim);
    if (!t) return ct_api_return(NULL);
    size_t bytes = t->storage->nbytes;
    if (bytes > 0 && !data) {
        ct_release(t);
        return ct_api_return(ct_null_argument("ct_tensor_from_data", "data"));
    }
    if (bytes > 0) {
        if (ct_transfer_host_to_device(t->storage->device, ct_tensor_handle(t), 0, data, bytes) != CT_OK) {
            ct_release(t);
            return ct_api_return(NULL);
        }
    }
    return ct_api_return(t);
}
