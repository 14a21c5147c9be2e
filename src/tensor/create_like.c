/* The *_like constructors (torch.zeros_like and friends): a new tensor of t's shape, dtype and
 * device, contiguous, outside any graph. */
#include "tensor/tensor_internal.h"

static ct_tensor *like(const char *function, const ct_tensor *t, int kind, double value)
{
    if (!t) return ct_null_argument(function, "t");
    const int64_t *shape = t->shape;
    ct_device device = t->storage->device;
    switch (kind) {
    case 0: return ct_empty(shape, t->ndim, t->dtype, device);
    case 1: return ct_full(shape, t->ndim, value, t->dtype, device);
    case 2: return ct_rand(shape, t->ndim, t->dtype, device);
    default: return ct_randn(shape, t->ndim, t->dtype, device);
    }
}

ct_tensor *ct_empty_like(const ct_tensor *t)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_empty_like", t, 0, 0.0));
}

ct_tensor *ct_zeros_like(const ct_tensor *t)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_zeros_like", t, 1, 0.0));
}

ct_tensor *ct_ones_like(const ct_tensor *t)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_ones_like", t, 1, 1.0));
}

ct_tensor *ct_full_like(const ct_tensor *t, double value)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_full_like", t, 1, value));
}

ct_tensor *ct_rand_like(const ct_tensor *t)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_rand_like", t, 2, 0.0));
}

ct_tensor *ct_randn_like(const ct_tensor *t)
{
    CT_API_ENTER;
    return ct_api_return(like("ct_randn_like", t, 3, 0.0));
}
