/* cumsum along a dim, an item per row (kernels/rows.ct). Integer and bool inputs sum in int64,
 * as PyTorch's; floating ones keep their dtype (float16 and bfloat16 sum in float32). The
 * gradient is the reverse cumsum of the incoming gradient: the same kernel, walking back. */
#include "ops/ops_autograd.h"
#include "ops/row_space.h"

static ct_status launch_cumsum(ct_tensor *out, const ct_tensor *a, int d, bool reverse)
{
    static const ct_kernel_id kernels[CT_DTYPE_COUNT] = {
        [CT_F32] = CT_K_cumsum_f32, [CT_F64] = CT_K_cumsum_f64, [CT_I64] = CT_K_cumsum_i64,
        [CT_F16] = CT_K_cumsum_f16, [CT_BF16] = CT_K_cumsum_bf16};
    ct_kparams p = {0};
    const ct_tensor *operands[2] = {out, a};
    ct_row_space(&p, operands, 2, d);
    p.l[3] = reverse;
    void *buffers[CT_KERNEL_MAX_BUFFERS] = {ct_tensor_handle(out), ct_tensor_handle(a)};
    return ct_backend_launch(out->storage->device, kernels[out->dtype], buffers, &p, 2 * p.l[0]);
}

/* The running sums of a along d (untracked), from the end when reverse. */
static ct_tensor *run_cumsum(const char *function, const ct_tensor *a, int d, bool reverse)
{
    ct_dtype dtype = ct_dtype_is_floating(a->dtype) ? a->dtype : CT_I64;
    ct_tensor *in = ct_cast_if_needed(a, dtype);
    ct_tensor *out = in ? ct_tensor_alloc(function, a->storage->device, dtype, a->shape, a->ndim) : NULL;
    if (out && ct_numel(out) > 0 && launch_cumsum(out, in, d, reverse) != CT_OK) {
        ct_release(out);
        out = NULL;
    }
    ct_release(in);
    return out;
}

static ct_status cumsum_backward(ct_node *node, const ct_tensor *grad, ct_tensor **grads)
{
    grads[0] = run_cumsum("ct_cumsum", grad, (int)node->ints[0], true);
    return grads[0] ? CT_OK : ct_last_error();
}

ct_tensor *ct_cumsum(const ct_tensor *a, int dim)
{
    CT_API_ENTER;
    const char *function = "ct_cumsum";
    if (!a) return ct_api_return(ct_null_argument(function, "a"));
    int d = 0;
    if (ct_normalize_dim(function, dim, a->ndim > 0 ? a->ndim : 1, false, &d) != CT_OK)
        return ct_api_return(NULL);
    if (a->ndim == 0) d = 0;
    ct_tensor *out = run_cumsum(function, a, d, false);
    ct_node *node;
    out = ct_record(out, "CumsumBackward", cumsum_backward, &a, 1, &node);
    if (node) node->ints[0] = d;
    return ct_api_return(out);
}
