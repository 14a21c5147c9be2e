/* Operand checks and PyTorch's broadcasting rules. */
#include <string.h>

#include "ops/ops_internal.h"

ct_status ct_check_operands(const char *function, const ct_tensor *const *tensors,
                            const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (ct_tensor_unusable(function, names[i], tensors[i])) return ct_last_error();
    for (int i = 1; i < count; i++) {
        ct_status status = ct_check_same_device(function, tensors[0], tensors[i]);
        if (status != CT_OK) return status;
    }
    return CT_OK;
}

ct_status ct_broadcast_shapes(const char *function, const ct_tensor *const *tensors, int count,
                              int64_t *out_shape, int *out_ndim)
{
    int ndim = 0;
    for (int i = 0; i < count; i++)
        if (tensors[i]->ndim > ndim) ndim = tensors[i]->ndim;
    for (int d = 0; d < ndim; d++) out_shape[d] = 1;
    for (int i = 0; i < count; i++) {
        const ct_tensor *t = tensors[i];
        for (int d = 0; d < t->ndim; d++) {
            int od = ndim - t->ndim + d;
            int64_t size = t->shape[d];
            if (size == out_shape[od] || size == 1) continue;
            if (out_shape[od] == 1) {
                out_shape[od] = size;
                continue;
            }
            /* Name the two shapes that disagree. */
            for (int j = 0; j < i; j++) {
                const ct_tensor *u = tensors[j];
                int ud = u->ndim - ndim + od;
                if (ud < 0 || u->shape[ud] == 1 || u->shape[ud] == size) continue;
                char a[256], b[256];
                return ct_error(CT_ERR_SHAPE, "%s: shapes %s and %s cannot be broadcast together: "
                                "dim %d has sizes %lld and %lld (each must be equal, or 1)", function,
                                ct_shape_format(u->shape, u->ndim, a, sizeof a),
                                ct_shape_format(t->shape, t->ndim, b, sizeof b), od - ndim,
                                (long long)u->shape[ud], (long long)size);
            }
        }
    }
    *out_ndim = ndim;
    return CT_OK;
}

void ct_broadcast_strides(const ct_tensor *t, const int64_t *shape, int ndim, int64_t *strides)
{
    for (int d = 0; d < ndim; d++) {
        int td = t->ndim - ndim + d;
        strides[d] = (td < 0 || (t->shape[td] == 1 && shape[d] != 1)) ? 0 : t->strides[td];
    }
}

ct_tensor *ct_cast_if_needed(const ct_tensor *t, ct_dtype dtype)
{
    if (t->dtype == dtype) {
        atomic_fetch_add(&((ct_tensor *)t)->refcount, 1);
        return (ct_tensor *)t;
    }
    ct_tensor *out = ct_tensor_alloc("cast", t->storage->device, dtype, t->shape, t->ndim);
    if (out && ct_tensor_copy_into(out, t) != CT_OK) {
        ct_release(out);
        return NULL;
    }
    return out;
}
