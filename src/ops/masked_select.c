/* torch.masked_select: the mask is read back (the result's length depends on it, as PyTorch's
 * syncs), its true places become an int64 index, and the broadcast input, flattened, is
 * index_select'ed there: the gradient flows back through index_select, reshape and expand. */
#include <stdlib.h>

#include "ops/ops_internal.h"

static ct_tensor *masked_select(const char *function, const ct_tensor *a, const ct_tensor *mask)
{
    if (!a) return ct_null_argument(function, "a");
    if (!mask) return ct_null_argument(function, "mask");
    if (ct_check_same_device(function, a, mask) != CT_OK) return NULL;
    if (mask->dtype != CT_BOOL)
        return ct_error_null(CT_ERR_DTYPE, "%s: mask is %s; it must be bool (make one with a "
                             "comparison such as ct_gt_scalar)", function, ct_dtype_name(mask->dtype));
    const ct_tensor *both[2] = {a, mask};
    int64_t shape[CT_MAX_DIMS];
    int ndim = 0;
    if (ct_broadcast_shapes(function, both, 2, shape, &ndim) != CT_OK) return NULL;
    int64_t n = 1;
    for (int k = 0; k < ndim; k++) n *= shape[k];
    ct_tensor *m = ct_expand(mask, shape, ndim);
    ct_tensor *host_mask = m ? ct_contiguous(m) : NULL;
    unsigned char *bits = malloc(n > 0 ? (size_t)n : 1);
    int64_t *places = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
    ct_status status = host_mask ? CT_OK : ct_last_error();
    if (status == CT_OK && (!bits || !places))
        status = ct_error(CT_ERR_OUT_OF_MEMORY, "%s: no host memory for a mask of %lld elements",
                          function, (long long)n);
    if (status == CT_OK && n > 0) status = ct_tensor_to_array(host_mask, bits, (size_t)n);
    int64_t count = 0;
    for (int64_t i = 0; status == CT_OK && i < n; i++)
        if (bits[i]) places[count++] = i;
    ct_tensor *out = NULL;
    if (status == CT_OK) {
        ct_tensor *index_cpu = ct_tensor_from_data(places, CT_I64, &count, 1, CT_DEVICE_CPU);
        ct_tensor *index = index_cpu ? ct_to(index_cpu, a->storage->device) : NULL;
        ct_tensor *expanded = index ? ct_expand(a, shape, ndim) : NULL;
        ct_tensor *flat = expanded ? ct_reshape(expanded, &n, 1) : NULL;
        out = flat ? ct_index_select(flat, 0, index) : NULL;
        ct_release(flat);
        ct_release(expanded);
        ct_release(index);
        ct_release(index_cpu);
    }
    free(places);
    free(bits);
    ct_release(host_mask);
    ct_release(m);
    return out;
}

ct_tensor *ct_masked_select(const ct_tensor *a, const ct_tensor *mask)
{
    CT_API_ENTER;
    return ct_api_return(masked_select("ct_masked_select", a, mask));
}
